"""llama.cpp's own log lines go to Python `logging` (logger ``foldlog.llama_cpp``), never straight
to stderr.

llama-cpp-python installs a log callback that prints llama.cpp's lines to stderr; with
``verbose=False`` it still prints its warnings (``llama_kv_cache_iswa: using full-size SWA cache …``
on every load of Gemma 3), because its table of levels predates ggml's current numbering and takes
a warning (3) for an error. The callback set here replaces it for the whole process: each line
becomes a record of the ``foldlog.llama_cpp`` logger, so the application's logging configuration
decides what is shown. llama.cpp's notices and warnings are about its own set-up, not about the
caller's request: they are logged at DEBUG and INFO; its errors at ERROR.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

logger = logging.getLogger("foldlog.llama_cpp")

# ggml_log_level (ggml.h): NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5 (continues a line)
_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.DEBUG, 3: logging.INFO, 4: logging.ERROR}
_CONT = 5

_installed: list[Any] = []  # the ctypes callback, kept alive while llama.cpp may call it
_last_level = [logging.DEBUG]


def _log(level: int, text: bytes | None, _user_data: Any) -> None:
    py_level = _last_level[0] if level == _CONT else _LEVELS.get(level, logging.DEBUG)
    _last_level[0] = py_level
    line = (text or b"").decode("utf-8", "replace").rstrip("\n")
    if line and logger.isEnabledFor(py_level):
        logger.log(py_level, "%s", line)


def route_llama_logs(llama_cpp: Any) -> None:
    """Send llama.cpp's log lines to the ``foldlog.llama_cpp`` logger (once per process)."""
    if _installed:
        return
    callback = llama_cpp.llama_log_callback(_log)
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))
    _installed.append(callback)


__all__ = ["logger", "route_llama_logs"]
