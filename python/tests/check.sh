#!/bin/sh
# make check's wrapper for the Python client's tests: starts a real gexecd
# from this build on a private ipc socket in a temporary directory, runs
# pytest on python/tests against it with the build tree's libgexec, stops
# the daemon (which must then exit 0) and removes the directory.
#
# Python: $PYTHON (configure's AM_PATH_PYTHON), else python3, else
# /usr/bin/python3 (Debian's python3-numpy and python3-pytest install into
# the system interpreter, which need not be the first python3 on PATH): the
# first that imports numpy and pytest. None: skipped (77). In a sanitizer
# build libasan is preloaded into Python (leak checks off: CPython's own
# allocations are not leaks); under ThreadSanitizer the tests are skipped.
#
# Run from the top build directory (make check does); pytest runs in
# python/tests of the source tree and gets the arguments:
#   make check TESTS=python/tests/check.sh
#   ../python/tests/check.sh -k cancel -v
#   ../python/tests/check.sh test_errors.py
top_srcdir=$(cd "${srcdir:-$(dirname "$0")/../..}" && pwd)
top_builddir=$(pwd)
lib=$top_builddir/libclient/.libs/libgexec.so.0
gexecd=$top_builddir/daemon/gexecd
submit=$top_builddir/libclient/gexec-submit
for f in "$lib" "$gexecd" "$submit"; do
    [ -e "$f" ] || { echo "check.sh: $f not built (run from the top build directory)"; exit 1; }
done

py=
for p in "${PYTHON:-}" python3 /usr/bin/python3; do
    case $p in ""|:) continue ;; esac
    if "$p" -c 'import numpy, pytest' >/dev/null 2>&1; then py=$p; break; fi
done
if [ -z "$py" ]; then
    echo "check.sh: no Python with numpy and pytest (install python3-numpy python3-pytest); skipped"
    exit 77
fi

if ldd "$lib" | grep -q libtsan; then
    echo "check.sh: libgexec is built with ThreadSanitizer; the Python tests are skipped"
    exit 77
fi
# what Python runs with (gexecd keeps the caller's environment)
py_env="env"
asan=$(ldd "$lib" | sed -n 's/^[[:space:]]*libasan[^ ]* => \([^ ]*\) .*/\1/p')
if [ -n "$asan" ]; then
    # the last detect_leaks wins
    py_env="env LD_PRELOAD=$asan${LD_PRELOAD:+:$LD_PRELOAD} ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/gexec-pytest-XXXXXX") || exit 1
endpoint=ipc://$dir/gexecd.sock
pid=
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

"$gexecd" --foreground --socket "$endpoint" --profile-dir "$dir/profiles" \
    --log-level "${GXT_LOG_LEVEL:-warn}" &
pid=$!
i=0
until "$submit" --socket "$endpoint" --timeout 200 ping >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "check.sh: gexecd exited during start"; pid=; exit 1; }
    i=$((i + 1))
    [ $i -lt 150 ] || { echo "check.sh: gexecd did not answer PING"; exit 1; }
done

(cd "$top_srcdir/python/tests" &&
    GEXEC_LIBRARY=$lib GEXEC_SOCKET=$endpoint GEXECD=$gexecd GEXEC_TEST_TMP=$dir \
    GEXEC_SRCDIR=$top_srcdir PYTHONPATH=$top_srcdir/python${PYTHONPATH:+:$PYTHONPATH} \
    PYTHONDONTWRITEBYTECODE=1 $py_env "$py" -m pytest -p no:cacheprovider -q -rfEs "$@")
rc=$?

kill -TERM "$pid"
wait "$pid"
st=$?
pid=
if [ "$st" -ne 0 ]; then
    echo "check.sh: gexecd exited with status $st after SIGTERM (expected 0)"
    [ $rc -ne 0 ] || rc=1
fi
exit $rc
