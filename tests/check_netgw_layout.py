#!/usr/bin/python3
"""check_netgw_layout.py BUILD_DIR - pa-netgw is a core and front-ends:

- no include from one front-end folder into another, and none from the core
  into a front-end (the core's own headers and the mcap format are shared);
- no call or data reference from one front-end into another, and none from
  the core into a front-end except the table's rows (core/frontends.c),
  read from the compiled objects' symbols (nm);
- no C file of netgw/ over 800 lines, no function over 120 lines.

Exit 0 when all hold, else 1 with each violation on a line of its own."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETGW = os.path.join(ROOT, "netgw")
SHARED = {"core", "mcap"}  # folders every front-end may use
FILE_MAX, FUNC_MAX = 800, 120


def folders():
    return sorted(d for d in os.listdir(NETGW)
                  if os.path.isdir(os.path.join(NETGW, d)) and
                  any(f.endswith((".c", ".h")) for f in
                      os.listdir(os.path.join(NETGW, d))))


def sources(kinds=(".c", ".h")):
    for d in folders():
        for f in sorted(os.listdir(os.path.join(NETGW, d))):
            if f.endswith(kinds):
                yield d, f


def header_home():
    home = {}
    for d, f in sources((".h",)):
        home[f] = d
    return home


def check_includes(out):
    home = header_home()
    for d, f in sources():
        with open(os.path.join(NETGW, d, f), encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m or m.group(1) not in home:
                    continue
                to = home[m.group(1)]
                if to == d or (to in SHARED and (d != "core" or to == "core")):
                    continue
                out.append("netgw/%s/%s:%d: includes %s from netgw/%s/" %
                           (d, f, n, m.group(1), to))


def nm(obj):
    r = subprocess.run(["nm", obj], capture_output=True, text=True,
                       check=True)
    defined, undefined = set(), set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRC":
            defined.add(parts[2])
    return defined, undefined


def check_symbols(build, out):
    objdir = os.path.join(build, "netgw", "CMakeFiles", "pa_netgw.dir")
    objs = {}
    for d, f in sources((".c",)):
        o = os.path.join(objdir, d, f + ".o")
        if os.path.exists(o):
            objs[(d, f)] = nm(o)
    if not objs:
        out.append("no objects under %s: build pa_netgw first" % objdir)
        return
    owner = {}
    for (d, f), (defined, _) in objs.items():
        for s in defined:
            owner[s] = (d, f)
    for (d, f), (_, undefined) in objs.items():
        for s in sorted(undefined):
            if s not in owner:
                continue
            od, of = owner[s]
            if od == d or od in SHARED and (d != "core" or od == "core"):
                continue
            if d == "core" and f == "frontends.c" and s.startswith("pa_fe_"):
                continue  # the table's rows
            out.append("netgw/%s/%s uses %s of netgw/%s/%s" % (d, f, s, od, of))


FUNC_START = re.compile(r"^[A-Za-z_][\w \*]*\b(\w+)\([^;]*$")


def check_sizes(out):
    for d, f in sources((".c",)):
        path = os.path.join(NETGW, d, f)
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        if len(lines) - 1 > FILE_MAX:
            out.append("netgw/%s/%s: %d lines (at most %d)" %
                       (d, f, len(lines) - 1, FILE_MAX))
        start, name = None, None
        for i, line in enumerate(lines):
            m = FUNC_START.match(line)
            if start is None and m and not line.startswith(("typedef", "static const", "const ")):
                name, start = m.group(1), i
            if start is not None and line.startswith("}"):
                if "{" in "\n".join(lines[start:i]):
                    n = i - start + 1
                    if n > FUNC_MAX:
                        out.append("netgw/%s/%s:%d: %s() is %d lines (at most "
                                   "%d)" % (d, f, start + 1, name, n, FUNC_MAX))
                start = None


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = []
    check_includes(out)
    check_symbols(sys.argv[1], out)
    check_sizes(out)
    for o in out:
        print(o)
    print("check_netgw_layout: %d violation(s) in %d folders" %
          (len(out), len(folders())))
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
