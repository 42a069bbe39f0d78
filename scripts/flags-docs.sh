#!/usr/bin/env bash
# Regenerates the flag tables in docs/flags.md and docs/CONTRACT.md from the
# flag tables themselves and the action table in docs/actions.md from
# pa-netgw's (test_flags_docs fails until this is run), and the
# property table in docs/protocol-notes.md from maps/pa_props.h (test_netgw's
# props_doc_matches_schema fails until this is run).
#
#   scripts/flags-docs.sh [BUILD_DIR]    default: build
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$root/build}/bin/playarea
[[ -x $bin ]] || { echo "flags-docs: $bin not built (scripts/setup.sh)" >&2; exit 1; }
/usr/bin/python3 - "$bin" "$root" <<'PY'
import subprocess, sys
bin, root = sys.argv[1], sys.argv[2]
for path, arg in (("docs/flags.md", "--help-markdown"),
                  ("docs/CONTRACT.md", "--help-markdown=contract")):
    out = subprocess.run([bin, arg], capture_output=True, text=True,
                         check=True).stdout
    p = f"{root}/{path}"
    s = open(p).read()
    a = s.index("<!-- flags:begin")
    a = s.index("\n", a) + 1
    b = s.index("<!-- flags:end -->")
    open(p, "w").write(s[:a] + out + s[b:])
    print(f"flags-docs: {path} regenerated")
PY
# The JSON action reference from the action table (test_flags_docs).
netgw=${1:-$root/build}/bin/pa-netgw
[[ -x $netgw ]] || { echo "flags-docs: $netgw not built" >&2; exit 1; }
/usr/bin/python3 - "$netgw" "$root/docs/actions.md" <<'PY'
import subprocess, sys
out = subprocess.run([sys.argv[1], "--help-actions"], capture_output=True,
                     text=True, check=True).stdout
p = sys.argv[2]
s = open(p).read()
a = s.index("\n", s.index("<!-- actions:begin")) + 1
b = s.index("<!-- actions:end -->")
open(p, "w").write(s[:a] + out + s[b:])
print("flags-docs: docs/actions.md regenerated")
PY
props=${1:-$root/build}/bin/test_netgw
[[ -x $props ]] || { echo "flags-docs: $props not built" >&2; exit 1; }
PA_PROPS_DOCS_WRITE=1 "$props" >/dev/null 2>&1 || true
grep -q 'props:begin' "$root/docs/protocol-notes.md"
echo "flags-docs: docs/protocol-notes.md property table regenerated"
