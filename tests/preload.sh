#!/bin/sh
# make check's wrapper for tests/preload.py (graphs.preload: compiled and
# warmed before READY=1, listed and runnable by name; a failed preload
# exits 2); skips (77) without python3. Run from the top build directory.
command -v python3 >/dev/null 2>&1 || { echo "preload: python3 not found; skipped"; exit 77; }
src=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$src/tests/preload.py" "$PWD" "$src"
