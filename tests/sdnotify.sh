#!/bin/sh
# make check's wrapper for tests/sdnotify.py (gexecd's sd_notify messages:
# READY/STATUS, WATCHDOG, RELOADING on SIGHUP, STOPPING); skips (77)
# without python3. Run from the top build directory.
command -v python3 >/dev/null 2>&1 || { echo "sdnotify: python3 not found; skipped"; exit 77; }
exec python3 "$(cd "$(dirname "$0")" && pwd)/sdnotify.py" "$PWD"
