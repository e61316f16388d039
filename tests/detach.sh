#!/bin/sh
# make check's wrapper for tests/detach.py (a detached gexecd logs to
# log_file, not the terminal); skips (77) without python3. Run from the top
# build directory.
command -v python3 >/dev/null 2>&1 || { echo "detach: python3 not found; skipped"; exit 77; }
exec python3 "$(cd "$(dirname "$0")" && pwd)/detach.py" "$PWD"
