"""Exceptions: one class for every gexec status, subclasses for the ones a
caller handles differently.

Every exception carries ``status`` (the negative code, e.g. -13),
``name`` (``"GX_EQUEUEFULL"``) and ``message`` (what the daemon or the
library said, meant for a person). The names and codes come from the
library (``gx_status_name``), so a status added to status.h needs no change
here.
"""

from ._lib import lib


class Error(Exception):
    """A gexec failure: ``status`` (int < 0), ``name`` and ``message``;
    ``info`` (a RunInfo) when the daemon ran or queued the job, else None."""

    def __init__(self, status, message=""):
        self.status = status
        self.info = None
        self.name = lib.gx_status_name(status).decode()
        self.message = message or lib.gx_strerror(status).decode()
        super().__init__(f"{self.name}: {self.message}")


class ConnectError(Error, ConnectionError):
    """GX_ECONNECT: no reply from the daemon within the client's timeout
    (it is not running, or its socket is not open to this user)."""


class DeadlineError(Error):
    """GX_ETIMEDOUT: the job's deadline (``deadline_ms``) expired, in the
    queue or while it ran."""


class CancelledError(Error):
    """GX_ECANCELLED: the job was cancelled (``Future.cancel``)."""


class QueueFullError(Error):
    """GX_EQUEUEFULL: the daemon's job queue is full; try again later."""


class ShutdownError(Error):
    """GX_ESHUTDOWN: the daemon is stopping and did not run the job."""


class PermissionDeniedError(Error, PermissionError):
    """GX_EPERM: the daemon does not allow this client what it asked (for
    instance a priority above limits.max_client_priority)."""


class InvalidInputError(Error, ValueError):
    """The request or graph was refused as wrong: GX_EINVAL, GX_EGRAPH,
    GX_EOP, GX_EATTR, GX_ESHAPE, GX_EDTYPE, GX_ELIMIT, GX_ENOTFOUND or
    GX_EFORMAT. The daemon keeps serving."""


def _code(name):
    for code in range(0, -256, -1):
        if lib.gx_status_name(code).decode() == name:
            return code
    return None


_CLASSES = {"GX_ECONNECT": ConnectError, "GX_ETIMEDOUT": DeadlineError,
            "GX_ECANCELLED": CancelledError, "GX_EQUEUEFULL": QueueFullError,
            "GX_ESHUTDOWN": ShutdownError, "GX_EPERM": PermissionDeniedError}
for _n in ("GX_EINVAL", "GX_EGRAPH", "GX_EOP", "GX_EATTR", "GX_ESHAPE", "GX_EDTYPE",
           "GX_ELIMIT", "GX_ENOTFOUND", "GX_EFORMAT"):
    _CLASSES[_n] = InvalidInputError
_BY_CODE = {_code(n): cls for n, cls in _CLASSES.items() if _code(n) is not None}


def error(status, message=""):
    """The exception for a negative status (not raised)."""
    return _BY_CODE.get(status, Error)(status, message)
