"""Finding libgexec and declaring the C functions the package calls.

The library is looked up, first match wins:

1. ``$GEXEC_LIBRARY``: the path of ``libgexec.so*`` (the test suite sets it
   to the build tree's copy);
2. a build tree around this source tree: ``libclient/.libs/`` of the
   source directory (an in-tree build) or of ``build/`` under it;
3. the ``libdir`` that ``make install`` wrote into ``_paths.py``;
4. the dynamic loader's own search (``ldconfig``, ``LD_LIBRARY_PATH``).

Every prototype is declared here, once, from include/gexec/*.h; nothing else
in the package touches ``ctypes.CDLL``. ctypes releases the GIL around each
call, so a thread waiting for the daemon does not stop the others.
"""

import ctypes
import ctypes.util
import os

_SONAME = "libgexec.so.0"

c_void_p = ctypes.c_void_p
c_char_p = ctypes.c_char_p
c_int = ctypes.c_int
c_size_t = ctypes.c_size_t
c_int64 = ctypes.c_int64
c_uint64 = ctypes.c_uint64


class GraphId(ctypes.Structure):
    """gx_graph_id: the hex SHA-256 of a graph's canonical encoding."""
    _fields_ = [("hex", ctypes.c_char * 65)]


def _mode_count(lib):
    n = 0
    while lib.gx_mode_name(n) != b"?":
        n += 1
    return n


def _candidates():
    env = os.environ.get("GEXEC_LIBRARY")
    if env:
        # An explicit choice: no fallback that could load another copy.
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(os.path.dirname(here))  # the source tree, if any
    paths = [os.path.join(top, "libclient", ".libs", _SONAME),
             os.path.join(top, "build", "libclient", ".libs", _SONAME)]
    try:
        from . import _paths  # written by make install (python/gexec/_paths.py.in)
        paths.append(os.path.join(_paths.LIBDIR, _SONAME))
    except ImportError:
        pass
    return [p for p in paths if os.path.exists(p)], False


def _open():
    paths, explicit = _candidates()
    tried = []
    for p in paths:
        try:
            return ctypes.CDLL(p), p
        except OSError as e:
            tried.append(str(e))
    if not explicit:
        for name in (_SONAME, ctypes.util.find_library("gexec")):
            if not name:
                continue
            try:
                return ctypes.CDLL(name), name
            except OSError as e:
                tried.append(str(e))
    raise ImportError("gexec: cannot load libgexec (set GEXEC_LIBRARY to the path of "
                      "libgexec.so.0): " + ("; ".join(tried) or "not found"))


def _declare(lib):
    P, S = c_void_p, c_size_t
    protos = {
        # status.h
        "gx_strerror": (c_char_p, [c_int]),
        "gx_status_name": (c_char_p, [c_int]),
        # tensor.h
        "gx_dtype_name": (c_char_p, [c_int]),
        "gx_dtype_size": (S, [c_int]),
        "gx_tensor_destroy": (None, [ctypes.POINTER(P)]),
        "gx_tensor_dtype": (c_int, [P]),
        "gx_tensor_ndim": (c_int, [P]),
        "gx_tensor_shape": (ctypes.POINTER(c_int64), [P]),
        "gx_tensor_nbytes": (S, [P]),
        "gx_tensor_data": (P, [P]),
        "gx_tensor_numel": (c_int64, [P]),
        "gx_tensor_new_strings": (P, [c_int, ctypes.POINTER(c_int64), ctypes.POINTER(c_char_p),
                                      ctypes.POINTER(S)]),
        "gx_tensor_string": (P, [P, c_int64, ctypes.POINTER(S)]),
        # graph.h, io.h
        "gx_graph_destroy": (None, [ctypes.POINTER(P)]),
        "gx_graph_input_count": (S, [P]),
        "gx_graph_output_count": (S, [P]),
        "gx_graph_input_name": (c_char_p, [P, S]),
        "gx_graph_output_name": (c_char_p, [P, S]),
        "gx_graph_load_yaml": (c_int, [c_char_p, ctypes.POINTER(P), ctypes.c_char_p, S]),
        "gx_graph_parse_yaml": (c_int, [c_char_p, S, c_char_p, c_char_p, ctypes.POINTER(P),
                                        ctypes.c_char_p, S]),
        "gx_graph_load_onnx": (c_int, [c_char_p, ctypes.POINTER(P), ctypes.c_char_p, S]),
        "gx_graph_parse_onnx": (c_int, [c_char_p, S, c_char_p, ctypes.POINTER(P),
                                        ctypes.c_char_p, S]),
        # client.h
        "gx_mode_name": (c_char_p, [c_int]),
        "gx_mode_parse": (c_int, [c_char_p, ctypes.POINTER(c_int)]),
        "gx_default_endpoint": (c_int, [ctypes.c_char_p, S]),
        "gx_client_new": (P, [c_char_p, ctypes.c_char_p, S]),
        "gx_client_new_curve": (P, [c_char_p, c_char_p, c_char_p, ctypes.c_char_p, S]),
        "gx_curve_keygen": (c_int, [c_char_p, ctypes.c_char_p, ctypes.c_char_p, S]),
        "gx_client_destroy": (None, [ctypes.POINTER(P)]),
        "gx_client_set_timeout": (None, [P, c_int]),
        "gx_client_last_error": (c_char_p, [P]),
        "gx_client_ping": (c_int, [P]),
        "gx_client_load": (c_int, [P, P, ctypes.POINTER(GraphId)]),
        "gx_client_stats": (c_int, [P, ctypes.POINTER(P)]),
        "gx_client_explain": (c_int, [P, P, ctypes.POINTER(P)]),
        "gx_request_new": (P, []),
        "gx_request_destroy": (None, [ctypes.POINTER(P)]),
        "gx_request_set_graph_id": (c_int, [P, ctypes.POINTER(GraphId)]),
        "gx_request_set_graph": (c_int, [P, P]),
        "gx_request_add_input": (c_int, [P, c_char_p, P]),
        "gx_request_add_input_data": (c_int, [P, c_char_p, c_int, c_int,
                                              ctypes.POINTER(c_int64), P, S]),
        "gx_request_add_output": (c_int, [P, c_char_p]),
        "gx_request_set_priority": (c_int, [P, c_int]),
        "gx_request_set_deadline_ms": (c_int, [P, c_int64]),
        "gx_request_set_mode": (c_int, [P, c_int]),
        "gx_client_submit": (c_int, [P, P, ctypes.POINTER(P)]),
        "gx_job_wait": (c_int, [P, c_int, ctypes.POINTER(P)]),
        "gx_job_cancel": (c_int, [P]),
        "gx_job_destroy": (None, [ctypes.POINTER(P)]),
        "gx_result_status": (c_int, [P]),
        "gx_result_message": (c_char_p, [P]),
        "gx_result_info": (P, [P]),
        "gx_result_output_count": (S, [P]),
        "gx_result_output_name": (c_char_p, [P, S]),
        "gx_result_take_output": (P, [P, S]),
        "gx_result_destroy": (None, [ctypes.POINTER(P)]),
        # client.h, shared memory (docs/shm.md)
        "gx_shm_new": (P, [S, ctypes.c_char_p, S]),
        "gx_shm_destroy": (None, [ctypes.POINTER(P)]),
        "gx_shm_data": (P, [P]),
        "gx_shm_size": (S, [P]),
        "gx_shm_name": (c_char_p, [P]),
        "gx_client_shm_register": (c_int, [P, P]),
        "gx_client_shm_unregister": (c_int, [P, P]),
        "gx_client_set_shm_threshold": (None, [P, S]),
        "gx_client_set_ring": (None, [P, ctypes.c_bool]),
        "gx_request_add_input_shm": (c_int, [P, c_char_p, c_int, c_int,
                                             ctypes.POINTER(c_int64), P, S]),
        "gx_request_set_output_shm": (c_int, [P, P, S, S]),
        "gx_result_output_shm": (ctypes.c_bool, [P, S, ctypes.POINTER(S), ctypes.POINTER(S)]),
        "gx_result_output_shm_shape": (ctypes.POINTER(c_int64), [P, S, ctypes.POINTER(c_int),
                                                                  ctypes.POINTER(c_int)]),
    }
    for name, (res, args) in protos.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise ImportError(f"gexec: {lib._name} has no {name}: a libgexec older than "
                              "this package (set GEXEC_LIBRARY to a newer one)") from None
        f.restype = res
        f.argtypes = args
    # libc's free() for the JSON strings gx_client_stats/explain return.
    libc = ctypes.CDLL(None)
    libc.free.restype = None
    libc.free.argtypes = [P]
    return libc.free


lib, path = _open()
free = _declare(lib)
MODE_COUNT = _mode_count(lib)


class RunInfoStruct(ctypes.Structure):
    """gx_run_info (client.h), est_us sized by the library's GX_MODE_COUNT."""
    _fields_ = [("mode", ctypes.c_char * 16),
                ("device", ctypes.c_char * 32),
                ("workers", c_int),
                ("queue_us", c_int64),
                ("compute_us", c_int64),
                ("compile_us", c_int64),
                ("reason", ctypes.c_char * 160),
                ("replicas", c_int),
                ("est_us", ctypes.c_double * MODE_COUNT),
                ("batched", c_int),
                ("endpoint", ctypes.c_char * 256),
                ("device_us", c_int64)]
