"""gexec.Client: graphs, runs, futures, explain and stats over libgexec.

Threads: libgexec's gx_client is one ZeroMQ connection used by one thread at
a time, so a Client keeps a small pool of them. Every call borrows a
connection that no other call is using (opening one when all are busy), so
threads sharing a Client run in parallel and the pool grows to the number of
calls in flight at once. A Future stays on the connection that submitted it:
waiting, polling and cancelling take that connection's lock (granted in
arrival order) and a waiting thread gives it up every few milliseconds, so
cancel() and close() from other threads get through. Waiting calls (run,
load, explain, ...) take a connection without pending Futures, so waiting
for a Future never queues behind a long run.

Processes: after fork() the child's Clients forget the parent's connections
(without closing them: they belong to the parent) and open their own;
Futures submitted in the parent cannot be used in the child.
"""

import ctypes
import json
import os
import re
import threading
import time
import weakref

import numpy as np

from . import _lib
from ._lib import lib, GraphId
from .errors import Error, ConnectError, InvalidInputError, error
from .shm import SharedMemory

__all__ = ["Client", "Graph", "Future", "RunInfo", "default_endpoint", "modes",
           "dtypes"]

_P = ctypes.c_void_p
_ERRLEN = 1024
_SLICE_MS = 20  # how long a waiting Future holds its connection at a time


def _status(name):
    for code in range(0, -256, -1):
        if lib.gx_status_name(code) == name.encode():
            return code
    raise ImportError(f"gexec: libgexec has no status {name}")


_EINVAL = _status("GX_EINVAL")
_EDTYPE = _status("GX_EDTYPE")
_ENOMEM = _status("GX_ENOMEM")
_ETIMEDOUT = _status("GX_ETIMEDOUT")
_ECONNECT = _status("GX_ECONNECT")
_ENOTFOUND = _status("GX_ENOTFOUND")

# ---- dtypes: every gexec dtype numpy has, by the library's own names ----


def _dtype_tables():
    try:  # bfloat16 exists in numpy only through ml_dtypes, when installed
        import ml_dtypes
        extra = {"bfloat16": np.dtype(ml_dtypes.bfloat16)}
    except ImportError:
        extra = {}
    to_np, from_np = {}, {}
    for code in range(256):
        name = lib.gx_dtype_name(code)
        if name is None:
            break
        name = name.decode()
        try:
            npdt = extra.get(name) or np.dtype(name)
        except TypeError:
            continue
        if npdt.itemsize != lib.gx_dtype_size(code):
            continue
        to_np[code] = npdt
        from_np[npdt] = code
    return to_np, from_np


_TO_NP, _FROM_NP = _dtype_tables()
_STRING = next(c for c in range(256) if lib.gx_dtype_name(c) == b"string")
_DT_NAMES = {}
for _code in range(256):
    _name = lib.gx_dtype_name(_code)
    if _name is None:
        break
    _DT_NAMES[_code] = _name.decode()


def dtypes():
    """{gexec dtype name: numpy dtype} for every gexec dtype numpy can hold."""
    return {_DT_NAMES[c]: d for c, d in _TO_NP.items()}


def modes():
    """The execution mode names a run may request ("auto", "seq", ...)."""
    return [lib.gx_mode_name(m).decode() for m in range(_lib.MODE_COUNT)]


def default_endpoint():
    """The endpoint a Client with no endpoint uses: $GEXEC_SOCKET, else the
    daemon's default for this user (as gx_default_endpoint says)."""
    buf = ctypes.create_string_buffer(4096)
    if lib.gx_default_endpoint(buf, len(buf)) < 0:
        raise Error(_status("GX_ELIMIT"), "default endpoint too long")
    return buf.value.decode()


# ---- tensors ----


class _TensorOwner:
    """Owns one gx_tensor taken from a result; numpy arrays over its buffer
    keep this object (their base) alive, and it frees the tensor last."""

    __slots__ = ("_t", "__array_interface__", "__weakref__")

    def __init__(self, t, nbytes):
        self._t = _P(t)
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                    "data": (lib.gx_tensor_data(t), False)}

    def __del__(self, _destroy=lib.gx_tensor_destroy, _byref=ctypes.byref):
        if self._t:
            _destroy(_byref(self._t))


def _strings_of(t, shape):
    """A string tensor's elements as a numpy array (docs/strings.md): of
    numpy's str dtype when every element is UTF-8, else an object array of
    bytes. Takes over t (frees it)."""
    try:
        n = lib.gx_tensor_numel(t)
        ln = ctypes.c_size_t()
        raw = [ctypes.string_at(lib.gx_tensor_string(t, i, ctypes.byref(ln)), ln.value)
               for i in range(n)]
    finally:
        lib.gx_tensor_destroy(ctypes.byref(_P(t)))
    try:
        return np.array([b.decode("utf-8") for b in raw], dtype=str).reshape(shape)
    except UnicodeDecodeError:
        out = np.empty(len(raw), dtype=object)
        out[:] = raw
        return out.reshape(shape)


def _array_of(t, name):
    """A numpy array that takes over the gx_tensor t (no copy; strings are
    copied)."""
    code = lib.gx_tensor_dtype(t)
    if code == _STRING:
        ndim = lib.gx_tensor_ndim(t)
        shp = lib.gx_tensor_shape(t)
        return _strings_of(t, tuple(shp[i] for i in range(ndim)))
    npdt = _TO_NP.get(code)
    if npdt is None:
        lib.gx_tensor_destroy(ctypes.byref(_P(t)))
        raise Error(_EDTYPE, f"output '{name}' is {_DT_NAMES.get(code, code)}, which numpy "
                    "lacks (for bfloat16 install ml_dtypes)")
    ndim = lib.gx_tensor_ndim(t)
    shp = lib.gx_tensor_shape(t)
    shape = tuple(shp[i] for i in range(ndim))
    nbytes = lib.gx_tensor_nbytes(t)
    if nbytes == 0:
        lib.gx_tensor_destroy(ctypes.byref(_P(t)))
        return np.empty(shape, npdt)
    raw = np.asarray(_TensorOwner(t, nbytes))  # base: the owner
    return raw.view(npdt).reshape(shape)


def _string_input(name, a):
    """A new gx_tensor of strings from a numpy array of str ('U'), bytes
    ('S') or objects that are each str or bytes; str is sent as UTF-8.
    The caller destroys it."""
    if a.ndim > 8:
        raise InvalidInputError(_EINVAL, f"input '{name}': {a.ndim} dimensions (gexec takes "
                                "at most 8)")
    items = []
    for x in a.reshape(-1):
        if isinstance(x, str):
            x = x.encode("utf-8")
        elif not isinstance(x, bytes):
            raise InvalidInputError(_EDTYPE, f"input '{name}': an element of type "
                                    f"{type(x).__name__}; a string tensor takes str or bytes")
        items.append(x)
    n = len(items)
    strs = (ctypes.c_char_p * max(n, 1))(*items)
    lens = (ctypes.c_size_t * max(n, 1))(*(len(x) for x in items))
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    t = lib.gx_tensor_new_strings(a.ndim, shape, strs, lens)
    if not t:
        raise Error(_ENOMEM, f"input '{name}': out of memory")
    return _P(t)


def _input_of(name, value):
    """(dtype code, C-contiguous native-order array) of an input; the array
    is value itself when it already is one, else one copy of it. Strings:
    (_STRING, a gx_tensor the caller destroys)."""
    a = np.asarray(value)
    if a.dtype.kind in "USO":
        return _STRING, _string_input(name, a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    code = _FROM_NP.get(a.dtype)
    if code is None:
        raise InvalidInputError(_EDTYPE, f"input '{name}': numpy dtype {a.dtype} has no gexec "
                                f"dtype (gexec has {', '.join(sorted(dtypes()))})")
    if a.ndim > 8:
        raise InvalidInputError(_EINVAL, f"input '{name}': {a.ndim} dimensions (gexec takes "
                                "at most 8)")
    if not a.flags.c_contiguous:
        a = a.copy(order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    return code, a


# ---- graphs ----


def _is_onnx_bytes(data):
    # A ModelProto starts with field 1 (ir_version, varint): tag 0x08; YAML
    # text never starts with a backspace. Anything not UTF-8 is not YAML.
    if data[:1] == b"\x08":
        return True
    try:
        data.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


def _parse_graph(src, fmt=None, base_dir=None):
    """A new gx_graph (caller destroys) from a path or bytes; fmt is "yaml",
    "onnx" or None (by the file's extension, or the bytes' content)."""
    if fmt not in (None, "yaml", "onnx"):
        raise InvalidInputError(_EINVAL, f"format must be 'yaml' or 'onnx', not {fmt!r}")
    g = _P()
    err = ctypes.create_string_buffer(_ERRLEN)
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
        if fmt is None:
            fmt = "onnx" if _is_onnx_bytes(data) else "yaml"
        bd = os.fsencode(base_dir) if base_dir is not None else None
        if fmt == "onnx":
            rc = lib.gx_graph_parse_onnx(data, len(data), bd, ctypes.byref(g), err, _ERRLEN)
        else:
            rc = lib.gx_graph_parse_yaml(data, len(data), bd, b"<bytes>", ctypes.byref(g),
                                         err, _ERRLEN)
    elif isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        if fmt is None:
            fmt = "onnx" if path.lower().endswith(".onnx") else "yaml"
        loader = lib.gx_graph_load_onnx if fmt == "onnx" else lib.gx_graph_load_yaml
        rc = loader(os.fsencode(path), ctypes.byref(g), err, _ERRLEN)
    else:
        raise TypeError(f"a graph is a path, bytes or a gexec.Graph, not {type(src).__name__}")
    if rc < 0:
        raise error(rc, err.value.decode(errors="replace"))
    return g


def _names(g, count, get):
    return [get(g, i).decode() for i in range(count(g))]


class Graph:
    """A graph the daemon has loaded (returned by Client.load): its id (the
    hex SHA-256 the daemon answered), input and output names, and where it
    came from. Runs name the graph by id, so nothing is sent again; a Graph
    may be used with any Client of the same daemon. It keeps the parsed
    graph (weights included): when the daemon has dropped it (graphs.max
    evicts idle graphs; a restart forgets them all), the run, submit or
    explain that gets GX_ENOTFOUND loads it again and retries once."""

    __slots__ = ("id", "inputs", "outputs", "source", "_g")

    def __init__(self, gid, inputs, outputs, source, g):
        self.id = gid
        self.inputs = inputs
        self.outputs = outputs
        self.source = source
        self._g = g  # the gx_graph, owned; only read (by LOAD) once made

    def _reload(self, conn):
        """LOAD the graph again on conn (held by the caller); its status."""
        gid = GraphId()
        rc = lib.gx_client_load(conn.ptr, self._g, ctypes.byref(gid))
        if rc == 0 and gid.hex.decode() != self.id:
            return _EINVAL  # cannot happen: the id is the graph's hash
        return rc

    def __del__(self, _destroy=lib.gx_graph_destroy, _byref=ctypes.byref):
        g = getattr(self, "_g", None)
        if g:
            _destroy(_byref(g))

    def __repr__(self):
        return f"gexec.Graph({self.id[:12]}…, inputs={self.inputs}, outputs={self.outputs})"


# ---- results ----


class RunInfo:
    """How a job ran, as the daemon reported it (gx_run_info)."""

    __slots__ = ("mode", "device", "workers", "replicas", "batched", "queue_us", "compute_us",
                 "compile_us", "device_us", "reason", "estimates", "endpoint")

    def __init__(self, ri):
        self.mode = ri.mode.decode()
        self.device = ri.device.decode()
        self.workers = ri.workers
        self.replicas = ri.replicas
        self.batched = ri.batched
        self.queue_us = ri.queue_us
        self.compute_us = ri.compute_us
        self.compile_us = ri.compile_us
        self.device_us = ri.device_us  # of compute_us, on a GPU (0: none measured)
        self.reason = ri.reason.decode(errors="replace")
        self.estimates = {lib.gx_mode_name(m).decode(): ri.est_us[m]
                          for m in range(_lib.MODE_COUNT) if ri.est_us[m] >= 0}
        self.endpoint = ri.endpoint.decode(errors="replace")  # the daemon that ran it

    def __repr__(self):
        return (f"RunInfo(mode={self.mode!r}, device={self.device!r}, workers={self.workers}, "
                f"queue_us={self.queue_us}, compute_us={self.compute_us})")


def _conn_error(rc, conn):
    """The exception for status rc with conn's last message (libgexec may
    have put the status name in front of it already)."""
    msg = lib.gx_client_last_error(conn.ptr).decode(errors="replace")
    prefix = lib.gx_status_name(rc).decode() + ": "
    return error(rc, msg[len(prefix):] if msg.startswith(prefix) else msg)


def _shm_output(r, i, name, shm):
    """Output i of r, which the daemon wrote to the request's output area
    in shm: an array over the region (no copy), or None when it is not
    there."""
    at, nbytes = ctypes.c_size_t(), ctypes.c_size_t()
    if shm is None or not lib.gx_result_output_shm(r, i, ctypes.byref(at), ctypes.byref(nbytes)):
        return None
    code, ndim = ctypes.c_int(), ctypes.c_int()
    shp = lib.gx_result_output_shm_shape(r, i, ctypes.byref(code), ctypes.byref(ndim))
    npdt = _TO_NP.get(code.value)
    if npdt is None:
        raise Error(_EDTYPE, f"output '{name}' is {_DT_NAMES.get(code.value, code.value)}, "
                    "which numpy lacks (for bfloat16 install ml_dtypes)")
    return shm.array(tuple(shp[k] for k in range(ndim.value)), npdt, at.value)


def _outputs(r, out_shm=None):
    """{name: ndarray} of a successful result r (its tensors are taken);
    those written to the output area in out_shm lie there."""
    out = {}
    for i in range(lib.gx_result_output_count(r)):
        name = lib.gx_result_output_name(r, i).decode()
        a = _shm_output(r, i, name, out_shm)
        out[name] = a if a is not None else _array_of(lib.gx_result_take_output(r, i), name)
    return out


def _finish(rc, r, conn, out_shm=None):
    """(outputs, info) of a reply r with status rc, or raises its error
    (with info when the daemon answered); frees r. out_shm: the region of
    the request's output area, if it had one."""
    try:
        if not r:
            raise _conn_error(rc, conn)
        info = RunInfo(ctypes.cast(lib.gx_result_info(r),
                                   ctypes.POINTER(_lib.RunInfoStruct)).contents)
        if rc < 0:
            e = error(rc, lib.gx_result_message(r).decode(errors="replace"))
            e.info = info
            raise e
        return _outputs(r, out_shm), info
    finally:
        if r:
            lib.gx_result_destroy(ctypes.byref(r))


# ---- connections ----


class _TicketLock:
    """A lock granted in the order it was asked for, so a thread that waits
    in slices on a connection cannot starve the others."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._next = 0
        self._serving = 0

    def acquire(self):
        with self._cond:
            ticket = self._next
            self._next += 1
            while ticket != self._serving:
                self._cond.wait()

    def release(self):
        with self._cond:
            self._serving += 1
            self._cond.notify_all()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()


class _Conn:
    """One gx_client. ptr and the jobs on it are used under lock; busy (under
    the Client's lock) marks it taken by a call; futures counts the pending
    Futures on it (changed under lock); orphans are jobs of Futures
    that were dropped, destroyed by the next holder of lock."""

    def __init__(self, ptr, pid):
        self.ptr = _P(ptr)
        self.lock = _TicketLock()
        self.busy = False
        self.futures = 0
        self.orphans = []
        self.pid = pid
        self.regions = {}  # name: SharedMemory registered on this connection (under lock)

    def reap(self):
        """Destroy the orphaned jobs; under lock."""
        while self.orphans:
            job = self.orphans.pop()
            self.futures -= 1
            lib.gx_job_destroy(ctypes.byref(job))


_clients = weakref.WeakSet()


def _after_fork_in_child():
    for c in list(_clients):
        c._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---- the client ----


class Client:
    """A connection to gexecd.

    endpoint: a ZeroMQ endpoint ("ipc:///path/gexecd.sock", "tcp://host:port"),
    or several comma-separated: jobs then spread over those daemons and fail
    over when one goes away (docs/cluster.md; RunInfo.endpoint says where);
    None picks it as libgexec does ($GEXEC_SOCKET, else the default for this
    user, see default_endpoint()). timeout_ms: how long a call waits for the
    daemon's reply before it raises ConnectError (None: forever); it bounds
    every call, so an absent or stopped daemon never hangs the caller.
    Raises InvalidInputError for a malformed endpoint; an absent daemon is
    only noticed by the first call (ZeroMQ connects lazily).

    server_key, client_secret: CURVE keys for a tcp endpoint (docs/security.md),
    each a key (40 Z85 characters) or the path of its file (gexec-submit
    keygen); None takes $GEXEC_SERVER_KEY and $GEXEC_CLIENT_SECRET as
    libgexec does. A daemon that refuses this client's key raises
    PermissionDeniedError on the first call.

    shm_threshold: on a local daemon, inputs of at least that many bytes go
    through libgexec's own shared-memory region (False: never; None: the
    library's default, $GEXEC_SHM_THRESHOLD or 65536). Arrays in a region
    of your own go in place: see register() and run()'s output_shm.

    ring: small runs through libgexec's shared-memory ring (docs/shm.md,
    "Ring") rather than the socket (None: the library's default, on for a
    local ipc:// daemon unless $GEXEC_RING is "0").

    Use it from any number of threads (see the module's notes); close() it,
    or use it as a context manager, to close its connections.
    """

    def __init__(self, endpoint=None, timeout_ms=60000, server_key=None, client_secret=None,
                 shm_threshold=None, ring=None):
        self.endpoint = endpoint if endpoint is not None else default_endpoint()
        self.shm_threshold = shm_threshold
        self.ring = ring
        self._regions = {}  # name: SharedMemory registered with this client (under _lock)
        self._keys = tuple(None if k is None else os.fsencode(k)
                           for k in (server_key, client_secret))
        self.timeout_ms = -1 if timeout_ms is None else int(timeout_ms)
        self._lock = threading.Lock()
        self._conns = []
        self._closed = False
        self._pid = os.getpid()
        _clients.add(self)
        conn = self._checkout()  # a malformed endpoint fails here
        self._checkin(conn)

    # -- the pool --

    def _forked(self):
        self._lock = threading.Lock()
        self._conns = []  # the parent's: not ours to close
        self._pid = os.getpid()

    def _checkout(self, for_submit=False):
        """A connection no other call is using, locked for the caller; one
        without pending Futures unless for_submit."""
        with self._lock:
            if self._closed:
                raise Error(_EINVAL, "the client is closed")
            conn = next((c for c in self._conns
                         if not c.busy and (for_submit or c.futures == 0)), None)
            if conn is None:
                err = ctypes.create_string_buffer(_ERRLEN)
                ptr = lib.gx_client_new_curve(self.endpoint.encode(), *self._keys, err, _ERRLEN)
                if not ptr:
                    raise InvalidInputError(_EINVAL, err.value.decode(errors="replace"))
                lib.gx_client_set_timeout(ptr, self.timeout_ms)
                if self.shm_threshold is not None:
                    lib.gx_client_set_shm_threshold(
                        ptr, 2**64 - 1 if self.shm_threshold is False else
                        max(0, int(self.shm_threshold)))
                if self.ring is not None:
                    lib.gx_client_set_ring(ptr, bool(self.ring))
                conn = _Conn(ptr, self._pid)
                self._conns.append(conn)
            conn.busy = True
        conn.lock.acquire()
        conn.reap()
        return conn

    def _checkin(self, conn):
        conn.lock.release()
        with self._lock:
            conn.busy = False

    def close(self):
        """Close every connection. Futures not yet done then raise Error;
        calls in flight in other threads finish first. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conns, self._conns = self._conns, []
        if os.getpid() != self._pid:
            return
        for c in conns:
            with c.lock:
                c.reap()
                lib.gx_client_destroy(ctypes.byref(c.ptr))  # the daemon drops its regions
                c.ptr = _P()
                c.regions.clear()
        with self._lock:
            regions, self._regions = self._regions, {}
        for shm in regions.values():
            shm._clients.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _call(self, fn, *args):
        """fn(gx_client, *args) on a borrowed connection; raises on < 0."""
        conn = self._checkout()
        try:
            rc = fn(conn.ptr, *args)
            if rc < 0:
                raise _conn_error(rc, conn)
            return rc
        finally:
            self._checkin(conn)

    def _json_call(self, fn, *args):
        out = _P()
        self._call(fn, *args, ctypes.byref(out))
        try:
            return json.loads(ctypes.string_at(out).decode())
        finally:
            _lib.free(out)

    # -- shared memory (docs/shm.md) --

    def register(self, shm):
        """Register the SharedMemory shm with the daemon (SHM_REGISTER): from
        now on an input array that lies in it is read by the daemon where it
        is (no copy; do not change it until the job is done), and runs may
        name it as output_shm. Raises PermissionDeniedError when the daemon
        cannot map it (tcp, another user's daemon), InvalidInputError or
        Error(GX_ELIMIT) beyond the daemon's limits. Each of the client's
        connections registers it in turn, when it first needs it."""
        if not isinstance(shm, SharedMemory):
            raise TypeError(f"register takes a gexec.SharedMemory, not {type(shm).__name__}")
        shm._check()
        with self._lock:
            self._regions[shm.name] = shm
        shm._clients.add(self)
        conn = self._checkout()
        try:
            self._attach(conn, [shm])
        except BaseException:
            with self._lock:
                self._regions.pop(shm.name, None)
            shm._clients.discard(self)
            raise
        finally:
            self._checkin(conn)

    def unregister(self, shm):
        """SHM_UNREGISTER shm on every connection that registered it (the
        daemon unmaps it once the jobs using it are done). Futures whose
        output area lies in it must be done first."""
        with self._lock:
            if self._regions.pop(shm.name, None) is None:
                raise InvalidInputError(_ENOTFOUND, f"region '{shm.name}' is not registered "
                                        "with this client")
            conns = list(self._conns)
        shm._clients.discard(self)
        if os.getpid() != self._pid:
            return
        for c in conns:
            with c.lock:
                if c.regions.pop(shm.name, None) is not None and c.ptr:
                    lib.gx_client_shm_unregister(c.ptr, shm._p)

    def _attach(self, conn, regions):
        """Register each of regions on conn (held) that it lacks."""
        for shm in regions:
            if shm.name in conn.regions:
                continue
            shm._check()
            rc = lib.gx_client_shm_register(conn.ptr, shm._p)
            if rc < 0:
                raise _conn_error(rc, conn)
            conn.regions[shm.name] = shm

    def _region_of(self, a):
        """(SharedMemory, offset) of a registered region that the numpy
        array a lies in, or None."""
        if not self._regions:
            return None
        with self._lock:
            regions = list(self._regions.values())
        for shm in regions:
            at = shm.offset_of(a)
            if at is not None:
                return shm, at
        return None

    # -- requests --

    def ping(self):
        """Round trip to the daemon; raises ConnectError if it does not answer."""
        self._call(lib.gx_client_ping)

    def load(self, src, format=None, base_dir=None):
        """Send a graph to the daemon, which verifies and compiles it; returns
        a Graph to run by id. src: a path (YAML, or ONNX when it ends in
        .onnx), or the bytes of a YAML graph or an ONNX model (told apart by
        content unless format is "yaml" or "onnx"). base_dir resolves a YAML
        graph's relative .npy files and an ONNX model's external data when
        src is bytes. Errors in the file name it (YAML: line and column)."""
        g = _parse_graph(src, format, base_dir)
        try:
            gid = GraphId()
            self._call(lib.gx_client_load, g, ctypes.byref(gid))
        except BaseException:
            lib.gx_graph_destroy(ctypes.byref(g))
            raise
        return Graph(gid.hex.decode(),
                     _names(g, lib.gx_graph_input_count, lib.gx_graph_input_name),
                     _names(g, lib.gx_graph_output_count, lib.gx_graph_output_name),
                     os.fspath(src) if isinstance(src, (str, os.PathLike)) else "<bytes>", g)

    def _output_area(self, output_shm):
        """(SharedMemory, offset, bytes) of run's output_shm argument."""
        spec = output_shm if isinstance(output_shm, tuple) else (output_shm,)
        if not 1 <= len(spec) <= 3 or not isinstance(spec[0], SharedMemory):
            raise InvalidInputError(_EINVAL, "output_shm is a SharedMemory or a tuple "
                                    "(SharedMemory, offset[, bytes])")
        shm = spec[0]
        off = int(spec[1]) if len(spec) > 1 else 0
        nbytes = int(spec[2]) if len(spec) > 2 else shm.size - off
        if self._regions.get(shm.name) is not shm:
            raise InvalidInputError(_EINVAL, f"output_shm: region '{shm.name}' is not "
                                    "registered with this client (Client.register it first)")
        if off < 0 or nbytes < 0 or off > shm.size or nbytes > shm.size - off:
            raise InvalidInputError(_EINVAL, f"output_shm: {nbytes} bytes at {off} lie outside "
                                    f"region '{shm.name}' ({shm.size} bytes)")
        return shm, off, nbytes

    def _request(self, graph, inputs, outputs=None, mode=None, priority=None,
                 deadline_ms=None, output_shm=None, regions=None):
        """(gx_request, [what to free or keep alive until it is sent]); the
        regions the request names are appended to regions."""
        keep = []  # (destroy function, pointer) to free once sent, (None, array) to keep
        rq = _P(lib.gx_request_new())
        if not rq:
            raise Error(_ENOMEM)
        keep.append((lib.gx_request_destroy, rq))
        try:
            if isinstance(graph, Graph):
                gid = GraphId(graph.id.encode())
                rc = lib.gx_request_set_graph_id(rq, ctypes.byref(gid))
            else:
                g = _parse_graph(graph)
                keep.append((lib.gx_graph_destroy, g))
                rc = lib.gx_request_set_graph(rq, g)
            if rc < 0:
                raise error(rc, "cannot set the request's graph")
            for name, value in (inputs or {}).items():
                code, a = _input_of(name, value)
                if code == _STRING:  # a gx_tensor, borrowed until it is sent
                    keep.append((lib.gx_tensor_destroy, a))
                    if lib.gx_request_add_input(rq, name.encode(), a) < 0:
                        raise InvalidInputError(_EINVAL, f"bad input name {name!r}")
                    continue
                keep.append((None, a))  # borrowed by the request until it is sent
                shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
                place = self._region_of(a) if a.nbytes and regions is not None else None
                if place:  # read by the daemon where it lies
                    regions.append(place[0])
                    rc = lib.gx_request_add_input_shm(rq, name.encode(), code, a.ndim, shape,
                                                      place[0]._p, place[1])
                else:
                    rc = lib.gx_request_add_input_data(rq, name.encode(), code, a.ndim, shape,
                                                       a.ctypes.data, a.nbytes)
                if rc < 0:
                    raise InvalidInputError(_EINVAL, f"bad input name {name!r}")
            for name in outputs or ():
                if lib.gx_request_add_output(rq, name.encode()) < 0:
                    raise InvalidInputError(_EINVAL, f"bad output name {name!r}")
            if mode is not None:
                m = ctypes.c_int()
                if lib.gx_mode_parse(str(mode).encode(), ctypes.byref(m)) < 0:
                    raise InvalidInputError(_EINVAL, f"unknown mode {mode!r} (one of "
                                            f"{', '.join(modes())})")
                lib.gx_request_set_mode(rq, m.value)
            if priority is not None and lib.gx_request_set_priority(rq, int(priority)) < 0:
                raise InvalidInputError(_EINVAL, f"priority {priority} is outside [-100, 100]")
            if deadline_ms is not None and \
                    lib.gx_request_set_deadline_ms(rq, int(deadline_ms)) < 0:
                raise InvalidInputError(_EINVAL, f"deadline_ms {deadline_ms} is outside "
                                                 "[0, 86400000] (at most a day)")
            if output_shm is not None:
                shm, off, nbytes = self._output_area(output_shm)
                regions.append(shm)
                keep.append((None, shm))
                if lib.gx_request_set_output_shm(rq, shm._p, off, nbytes) < 0:
                    raise InvalidInputError(_EINVAL, "output_shm: refused by libgexec")
            return rq, keep
        except BaseException:
            _free(keep)
            raise

    def run(self, graph, inputs=None, mode=None, priority=None, deadline_ms=None,
            outputs=None, output_shm=None):
        """Run graph on inputs and wait; returns {output name: ndarray}.

        graph: a Graph from load() (runs by id), or a path or bytes as for
        load() (sent inline with this run; load() once to run it often).
        inputs: {name: array-like}; each array's dtype must be the graph's
        (it is not converted). mode: one of modes() (default: the daemon
        chooses); priority in [-100, 100] (the daemon may limit it);
        deadline_ms: the job fails with DeadlineError if not finished that
        long after the daemon received it (0 or None: no deadline).
        outputs: which of the graph's outputs to return (default: all).
        output_shm: a SharedMemory registered with this client, or
        (SharedMemory, offset[, bytes]): the daemon writes the outputs
        there, one after the other as far as they fit, and those come back
        as arrays over the region (no copy; they keep it mapped). They stay
        valid until something writes that part of the region again, such
        as the next run with the same output area: copy what you keep.
        An input array that lies in a registered SharedMemory is read by
        the daemon in place; others go through libgexec (its own region
        for large ones on a local daemon, see shm_threshold).
        Raises an Error subclass on any failure.
        """
        return self._send(True, graph, inputs, mode, priority, deadline_ms, outputs,
                          output_shm)

    def submit(self, graph, inputs=None, mode=None, priority=None, deadline_ms=None,
               outputs=None, output_shm=None):
        """Like run() without waiting: returns a Future. Inputs in a region
        must not change, nor its output area be reused, until it is done."""
        return self._send(False, graph, inputs, mode, priority, deadline_ms, outputs,
                          output_shm)

    def _send(self, wait, graph, inputs, mode, priority, deadline_ms, outputs, output_shm=None):
        regions = []
        rq, keep = self._request(graph, inputs, outputs, mode, priority, deadline_ms,
                                 output_shm, regions)
        out_shm = regions[-1] if output_shm is not None else None
        retry = graph if isinstance(graph, Graph) else None
        try:
            conn = self._checkout(for_submit=not wait)
            try:
                self._attach(conn, regions)
                if wait:
                    r = _P()
                    rc = lib.gx_client_run(conn.ptr, rq, ctypes.byref(r))
                    if rc == _ENOTFOUND and r and retry and retry._reload(conn) == 0:
                        lib.gx_result_destroy(ctypes.byref(r))
                        rc = lib.gx_client_run(conn.ptr, rq, ctypes.byref(r))
                    return _finish(rc, r, conn, out_shm)[0]
                job = _P()
                rc = lib.gx_client_submit(conn.ptr, rq, ctypes.byref(job))
                if rc < 0:
                    raise _conn_error(rc, conn)
                conn.futures += 1
                f = Future(self, conn, job)
                f._out_shm = out_shm
                if retry:  # the Future keeps the request to send it again
                    f._retry, keep = (retry, rq, keep), []
                return f
            finally:
                self._checkin(conn)
        finally:
            _free(keep)

    def explain(self, graph, inputs=None):
        """The plan the daemon compiles (or has cached) for graph and these
        inputs, as a dict (docs/protocol.md, EXPLAIN); nothing runs. An
        input left out takes its declared shape."""
        rq, keep = self._request(graph, inputs)
        out = _P()
        try:
            conn = self._checkout()
            try:
                rc = lib.gx_client_explain(conn.ptr, rq, ctypes.byref(out))
                if rc == _ENOTFOUND and isinstance(graph, Graph) and graph._reload(conn) == 0:
                    rc = lib.gx_client_explain(conn.ptr, rq, ctypes.byref(out))
                if rc < 0:
                    raise _conn_error(rc, conn)
            finally:
                self._checkin(conn)
            return json.loads(ctypes.string_at(out).decode())
        finally:
            if out:
                _lib.free(out)
            _free(keep)

    def stats(self):
        """The daemon's statistics (STATS) as a dict."""
        return self._json_call(lib.gx_client_stats)


def _free(keep):
    for destroy, p in reversed(keep):
        if destroy:
            destroy(ctypes.byref(p))


class Future:
    """A submitted job (Client.submit). result() waits for it; done() polls;
    cancel() asks the daemon to drop it. Usable from any thread; info holds
    how the job ran once a reply came."""

    def __init__(self, client, conn, job):
        self._client = client  # keeps the connections open
        self._conn = conn
        self._job = job        # None once the reply is in (or given up)
        self._outputs = None
        self._exc = None
        self._retry = None     # (Graph, gx_request, keep) of a run by id not yet retried
        self._out_shm = None   # the SharedMemory of the request's output area
        self.info = None

    def _resend(self):
        """After GX_ENOTFOUND for the graph's id: LOAD it again and submit
        the request again, once; under the lock. True if the new job is
        pending."""
        graph, rq, keep = self._retry
        self._retry = None
        try:
            if graph._reload(self._conn) < 0:
                return False
            job = _P()
            if lib.gx_client_submit(self._conn.ptr, rq, ctypes.byref(job)) < 0:
                return False
            lib.gx_job_destroy(ctypes.byref(self._job))
            self._job = job
            return True
        finally:
            _free(keep)

    def _settle(self, rc, r):
        """Record the reply; under the connection's lock."""
        if self._retry:
            if rc == _ENOTFOUND and r and self._conn.ptr and self._resend():
                lib.gx_result_destroy(ctypes.byref(r))
                return False
            _free(self._retry[2])
            self._retry = None
        try:
            self._outputs, self.info = _finish(rc, r, self._conn, self._out_shm)
        except Error as e:
            self._exc = e
            self.info = e.info
        lib.gx_job_destroy(ctypes.byref(self._job))
        self._job = None
        self._conn.futures -= 1
        return True

    def _poll(self, wait_ms):
        """One wait of at most wait_ms for the reply; under the lock. Returns
        the C status when nothing came, else None (settled)."""
        conn = self._conn
        r = _P()
        if not conn.ptr:  # closed: a reply received before is still in the job
            rc = lib.gx_job_wait(self._job, 0, ctypes.byref(r))
            if r and self._settle(rc, r):
                return None
            lib.gx_job_destroy(ctypes.byref(self._job))
            self._job = None
            conn.futures -= 1
            if self._retry:
                _free(self._retry[2])
                self._retry = None
            self._exc = Error(_EINVAL, "the client was closed before the job's reply came")
            return None
        rc = lib.gx_job_wait(self._job, wait_ms, ctypes.byref(r))
        if (r or rc != _ETIMEDOUT) and self._settle(rc, r):
            return None
        return _ETIMEDOUT  # nothing yet (or sent again)

    def _check_process(self):
        """Refuse a pending Future inherited through fork(): its connection
        (and that connection's lock) belong to the parent."""
        if self._job is not None and self._conn.pid != os.getpid():
            raise Error(_EINVAL, "this Future belongs to the process that submitted it")

    def done(self):
        """True once the reply has come (result() then returns at once)."""
        self._check_process()
        with self._conn.lock:
            if self._job is not None:
                self._poll(0)
            return self._job is None

    def result(self, timeout=None):
        """The outputs {name: ndarray}, waiting for them if needed.

        timeout (seconds): raise the builtin TimeoutError if no reply came
        by then; the job stays valid and result() may be called again.
        With None, wait up to the client's timeout_ms, then raise
        ConnectError (the daemon is not answering). Raises the job's error
        (DeadlineError, CancelledError, ...) if it failed."""
        self._check_process()
        client_ms = self._client.timeout_ms
        limit = timeout if timeout is not None else (None if client_ms < 0 else client_ms / 1e3)
        end = None if limit is None else time.monotonic() + limit
        last = ""
        while True:
            with self._conn.lock:
                if self._job is None:
                    break
                left = _SLICE_MS if end is None else \
                    max(0, min(_SLICE_MS, int((end - time.monotonic()) * 1000)))
                if self._poll(left) is None:
                    break
                last = lib.gx_client_last_error(self._conn.ptr).decode(errors="replace")
            if end is not None and time.monotonic() >= end:
                if timeout is not None:
                    raise TimeoutError(f"gexec job not finished within {timeout} s")
                raise ConnectError(_ECONNECT, re.sub(r"within \d+ ms",
                                                     f"within {client_ms} ms", last))
        if self._exc is not None:
            raise self._exc
        return self._outputs

    def exception(self, timeout=None):
        """The job's Error, or None if it succeeded (waits as result())."""
        try:
            self.result(timeout)
        except Error as e:
            if e is self._exc:
                return e
            raise
        return None

    def cancel(self):
        """Ask the daemon to cancel the job. True if it took the request
        (the job was queued or running: result() then raises CancelledError,
        unless a running job was already past its last step); False if the
        job had already finished or its reply is in."""
        self._check_process()
        with self._conn.lock:
            if self._job is None or not self._conn.ptr:
                return False
            self._poll(0)
            if self._job is None:
                return False
            rc = lib.gx_job_cancel(self._job)
            if rc == _ENOTFOUND:
                return False
            if rc < 0:
                raise _conn_error(rc, self._conn)
            return True

    def __del__(self):
        retry = getattr(self, "_retry", None)
        if retry:
            _free(retry[2])  # the request: the client's lock is not needed
        job = getattr(self, "_job", None)
        if job is None or self._conn.pid != os.getpid():
            return
        if self._conn.ptr:
            self._conn.orphans.append(job)  # freed by the connection's next holder
        else:  # the client is closed: the job is detached, freeing it is safe
            lib.gx_job_destroy(ctypes.byref(job))
