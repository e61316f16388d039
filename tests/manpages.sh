#!/bin/sh
# make check: lint the man pages with mandoc -Tlint (Debian's mandoc;
# skipped, 77, without it) and check that gexecd.yaml(5) names every key
# gexecd --print-config prints, and no other. Run from the top build
# directory.
src=$(cd "$(dirname "$0")/.." && pwd)
command -v mandoc >/dev/null 2>&1 || { echo "manpages: mandoc not found (apt install mandoc); skipped"; exit 77; }
rc=0
for page in gexecd.8 gexec-submit.1 gexecd.yaml.5 libgexec.3; do
    mandoc -Tlint -W warning "$src/man/$page" || { echo "manpages: $page: mandoc -Tlint complains"; rc=1; }
done
gexecd=daemon/gexecd
[ -x "$gexecd" ] || { echo "manpages: $gexecd not built"; exit 1; }
keys=$("$gexecd" --print-config | awk '
    /^ *#/ { next }
    /^[^ ]/ { k = $0; sub(/:.*/, "", k); v = $0; sub(/^[^:]*:/, "", v)
              if (v ~ /^ *$/) { sec = k } else { sec = ""; print k }; next }
    /^  [^ ]/ { k = $0; sub(/^ +/, "", k); sub(/:.*/, "", k); print sec "." k }') || exit 1
[ -n "$keys" ] || { echo "manpages: no keys from gexecd --print-config"; exit 1; }
documented=$(sed -n 's/^\.It Cm \([^ ]*\) Pq default.*/\1/p' "$src/man/gexecd.yaml.5")
for k in $keys; do
    printf '%s\n' "$documented" | grep -qx "$k" ||
        { echo "manpages: gexecd.yaml.5 lacks key $k (run man/gexecd.yaml.5.py daemon/gexecd > man/gexecd.yaml.5)"; rc=1; }
done
for k in $documented; do
    printf '%s\n' "$keys" | grep -qx "$k" ||
        { echo "manpages: gexecd.yaml.5 documents $k, which gexecd does not know"; rc=1; }
done
[ $rc -eq 0 ] && echo "manpages: ok ($(printf '%s\n' "$keys" | wc -l) keys)"
exit $rc
