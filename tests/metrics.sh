#!/bin/sh
# make check's wrapper for tests/metrics_http.py (the Prometheus endpoint
# scraped with urllib); skips (77) without python3. Run from the top build
# directory.
command -v python3 >/dev/null 2>&1 || { echo "metrics: python3 not found; skipped"; exit 77; }
src=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$src/tests/metrics_http.py" "$PWD" "$src"
