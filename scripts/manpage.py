#!/usr/bin/env python3
"""Writes a man page (section 1) for one playarea program from its own --help
and --version, so the pages cannot drift from the programs.

    scripts/manpage.py PROGRAM NAME "one-line summary" OUT.1
"""

import subprocess
import sys


def roff(text):
    """Plain text as roff lines: backslashes escaped, no line starting a request."""
    out = []
    for line in text.rstrip("\n").splitlines():
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip())
    prog, name, summary, out = sys.argv[1:]
    help_text = subprocess.run([prog, "--help"], capture_output=True, text=True, timeout=30,
                               check=True).stdout
    version = subprocess.run([prog, "--version"], capture_output=True, text=True, timeout=30,
                             check=True).stdout.split()[-1]
    page = "\n".join([
        '.TH %s 1 "" "playarea %s" "User Commands"' % (name.upper(), version),
        ".SH NAME",
        "%s \\- %s" % (name, summary),
        ".SH SYNOPSIS AND OPTIONS",
        "The output of \\fB%s \\-\\-help\\fR:" % name,
        ".PP",
        ".nf",
        roff(help_text),
        ".fi",
        ".SH VERSION",
        "\\fB%s \\-\\-version\\fR prints %s %s." % (name, name, version),
        ".SH SEE ALSO",
        "\\fBplayarea\\fR(1), \\fBpa-sim\\fR(1), \\fBpa-render\\fR(1), \\fBpa-netgw\\fR(1), "
        "\\fBpa-map\\fR(1), \\fBpa-shmctl\\fR(1); /usr/share/doc/playarea/ (README.md, docs/).",
        "",
    ])
    with open(out, "w") as f:
        f.write(page)


if __name__ == "__main__":
    main()
