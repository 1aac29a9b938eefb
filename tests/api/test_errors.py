"""Errors are API: every exception class the package defines derives from `foldlog.FoldlogError`
(and, where one describes it, a built-in: ``except ValueError`` keeps working)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

import foldlog
from foldlog.errors import ConfigError, FoldlogError

#: ``python -m foldlog`` runs the CLI when imported
SKIPPED = {"foldlog.__main__"}


def _modules() -> list[ModuleType]:
    found = []
    for info in pkgutil.walk_packages(foldlog.__path__, "foldlog."):
        if info.name in SKIPPED:
            continue
        found.append(importlib.import_module(info.name))  # an ImportError fails the test
    return found


def _exception_classes() -> dict[str, type[BaseException]]:
    classes: dict[str, type[BaseException]] = {}
    for module in _modules():
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__.startswith("foldlog")
                and not name.startswith("_")  # private control flow, never raised to a caller
            ):
                classes[f"{value.__module__}.{value.__qualname__}"] = value
    return classes


def test_the_walk_sees_the_classes_outside_foldlog_errors() -> None:
    names = set(_exception_classes())
    assert {
        "foldlog.errors.ConfigError",
        "foldlog.tools.builtin.WorkspaceError",
        "foldlog.tools.schema.SchemaError",
        "foldlog.cli.exits.UsageError",
        "foldlog.interchange.events.TranscriptError",
    } <= names


@pytest.mark.parametrize("name", sorted(_exception_classes()))
def test_every_exception_class_is_a_foldlog_error(name: str) -> None:
    cls = _exception_classes()[name]
    assert issubclass(cls, FoldlogError), f"{name} does not derive from FoldlogError: {cls.__mro__}"


@pytest.mark.parametrize(
    ("module", "name", "builtin"),
    [
        ("foldlog.errors", "ConfigError", ValueError),
        ("foldlog.cli.exits", "UsageError", ValueError),
        ("foldlog.tools.builtin", "WorkspaceError", ValueError),
        ("foldlog.tools.schema", "SchemaError", TypeError),
    ],
)
def test_the_four_that_were_not_foldlog_errors_keep_their_builtin(
    module: str, name: str, builtin: type[BaseException]
) -> None:
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, FoldlogError) and issubclass(cls, builtin)


def test_bad_settings_raise_config_error() -> None:
    from foldlog import Options
    from foldlog.cli.config import ConfigError as CliConfigError

    assert CliConfigError is ConfigError  # the CLI's file errors are the same class
    with pytest.raises(ConfigError, match="max_steps"):
        Options(max_steps=0)


def test_a_bad_session_id_is_one_error_whatever_the_store(tmp_path: object) -> None:
    from foldlog.errors import InvalidEventError
    from foldlog.stores.base import check_session_id
    from foldlog.stores.file import FileStore

    for bad in ("../escape", "", "a b", "x" * 201, ".hidden"):
        with pytest.raises(InvalidEventError, match="invalid session id"):
            check_session_id(bad)
        with pytest.raises(InvalidEventError, match="invalid session id"):
            FileStore(str(tmp_path)).path_for(bad)
