"""gexec.SharedMemory: a region of POSIX shared memory (libgexec's gx_shm)
that numpy arrays live in and a local gexecd reads and writes in place
(docs/shm.md).

    shm = gexec.SharedMemory(64 << 20)
    c.register(shm)                       # the daemon maps it for this client
    x = shm.array((1024, 1024), np.float32)
    x[...] = data                         # the input, written in place
    y = c.run(g, {"x": x}, output_shm=(shm, x.nbytes))["y"]  # y lies in shm
    ...
    c.unregister(shm); shm.close()

Lifetime: the mapping lives while anything uses it: the SharedMemory,
every array over it (an array's base keeps it) and every Client it is
registered with. close() ends it early and refuses (BufferError) while
arrays over it are alive, as mmap does.
"""

import ctypes
import weakref

import numpy as np

from ._lib import lib
from .errors import Error, InvalidInputError, _code

__all__ = ["SharedMemory"]

_P = ctypes.c_void_p
_ERRLEN = 1024


_EINVAL = _code("GX_EINVAL")
_EIO = _code("GX_EIO")


class _Span:
    """bytes of a region from offset on, as numpy sees them; arrays over it
    keep it (their base) and it keeps the region."""

    __slots__ = ("shm", "__array_interface__", "__weakref__")

    def __init__(self, shm, offset, nbytes):
        self.shm = shm
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                    "data": (shm.address + offset, False)}


class SharedMemory:
    """A new zero-filled region of nbytes (/dev/shm/<name>, mode 0600, made
    by this process). Register it with a Client (Client.register) to hand
    the daemon arrays that lie in it without copying them, and to have
    outputs written into it (run's output_shm).

    The file's name stays in /dev/shm until close() (or the object is
    collected), so that each of a Client's connections can register it."""

    def __init__(self, nbytes):
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise InvalidInputError(_EINVAL, f"a shared-memory region of {nbytes} bytes")
        err = ctypes.create_string_buffer(_ERRLEN)
        p = lib.gx_shm_new(nbytes, err, _ERRLEN)
        if not p:
            raise Error(_EIO, err.value.decode(errors="replace"))
        self._p = _P(p)
        self.name = lib.gx_shm_name(p).decode()
        self.size = lib.gx_shm_size(p)
        self.address = lib.gx_shm_data(p)
        self._spans = weakref.WeakSet()   # live _Span objects: arrays over the region
        self._clients = weakref.WeakSet()  # Clients it is registered with

    @property
    def closed(self):
        return not self._p

    def _check(self):
        if not self._p:
            raise InvalidInputError(_EINVAL, f"shared-memory region '{self.name}' is closed")

    def array(self, shape, dtype, offset=0):
        """A numpy array of shape and dtype over the region's bytes at offset
        (C order; not initialised here). It keeps the region mapped."""
        self._check()
        dt = np.dtype(dtype)
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
        nbytes = dt.itemsize * int(np.prod(shape, dtype=np.int64))
        offset = int(offset)
        if min(shape, default=0) < 0 or offset < 0 or offset > self.size or \
                nbytes > self.size - offset:
            raise InvalidInputError(_EINVAL, f"an array of {shape} {dt} at offset {offset} "
                                    f"does not fit in region '{self.name}' ({self.size} bytes)")
        span = _Span(self, offset, nbytes)
        self._spans.add(span)
        return np.asarray(span).view(dt).reshape(shape)

    def offset_of(self, a):
        """The offset of a C-contiguous array a in this region, or None when
        a does not lie wholly inside it."""
        if not self._p or not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
            return None
        at = a.ctypes.data - self.address
        return at if 0 <= at and a.nbytes <= self.size - at else None

    def close(self):
        """Unregister the region from the Clients that have it, unmap it and
        remove its file now. BufferError while arrays over it are alive
        (delete them, or copy what you keep). Idempotent."""
        if not self._p:
            return
        if len(self._spans):
            raise BufferError(f"shared-memory region '{self.name}': {len(self._spans)} arrays "
                              "over it are still alive")
        for c in list(self._clients):
            c.unregister(self)
        lib.gx_shm_destroy(ctypes.byref(self._p))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self, _destroy=lib.gx_shm_destroy, _byref=ctypes.byref):
        p = getattr(self, "_p", None)
        if p:
            _destroy(_byref(p))

    def __repr__(self):
        return f"gexec.SharedMemory({self.name!r}, {self.size} bytes" + \
            (", closed)" if not self._p else ")")
