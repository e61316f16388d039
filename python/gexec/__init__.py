"""gexec: the Python client of the gexec tensor graph runtime.

    import numpy as np, gexec
    with gexec.Client() as c:                 # $GEXEC_SOCKET or the default
        g = c.load("examples/mlp.yaml")         # or an .onnx file, or bytes
        y = c.run(g, {"x": np.ones((1, 4), np.float32)})["y"]
        f = c.submit(g, {"x": x}, deadline_ms=50)
        f.result(timeout=1.0)                   # or f.cancel()
        shm = gexec.SharedMemory(1 << 20)       # arrays the daemon reads and writes
        c.register(shm)                         # in place (local daemon, docs/shm.md)

A thin layer over libgexec (ctypes): the C library parses YAML and ONNX
files, speaks the protocol and does the waiting; see python/README.md.
"""

from ._lib import path as library_path
from .errors import (Error, ConnectError, DeadlineError, CancelledError, QueueFullError,
                     ShutdownError, PermissionDeniedError, InvalidInputError)
from .client import Client, Graph, Future, RunInfo, default_endpoint, modes, dtypes
from .shm import SharedMemory

__all__ = ["Client", "Graph", "Future", "RunInfo", "SharedMemory", "Error", "ConnectError", "DeadlineError",
           "CancelledError", "QueueFullError", "ShutdownError", "PermissionDeniedError",
           "InvalidInputError",
           "default_endpoint", "modes", "dtypes", "library_path"]
