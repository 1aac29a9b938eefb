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


#: built-in exceptions a module may still raise, and why: a protocol that needs exactly that class,
#: or an error that never reaches a caller (a built-in tool's error is its result for the model,
#: which reads the class name: ``error: FileNotFoundError: …``)
ALLOWED_BUILTIN_RAISES = {
    ("_lazy.py", "AttributeError"),  # module __getattr__ must raise AttributeError
    ("tools/builtin.py", "FileNotFoundError"),
    ("tools/builtin.py", "NotADirectoryError"),
    ("tools/builtin.py", "IsADirectoryError"),
    ("tools/builtin.py", "ValueError"),
}


def _builtin_raises() -> list[tuple[str, int, str]]:
    import ast
    import builtins
    from pathlib import Path

    root = Path(foldlog.__file__).parent
    builtin_errors = {
        name
        for name, value in vars(builtins).items()
        # SystemExit and KeyboardInterrupt are how a command ends, not errors to catch
        if isinstance(value, type) and issubclass(value, Exception)
    }
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # declarations for the type checker only never run
        unchecked = {
            id(inner)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
            for inner in ast.walk(block)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or node.exc is None or id(node) in unchecked:
                continue
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id in builtin_errors:
                if (rel, target.id) not in ALLOWED_BUILTIN_RAISES:
                    found.append((rel, node.lineno, target.id))
    return found


def test_no_module_raises_a_bare_builtin_exception() -> None:
    # every error a caller can catch is a FoldlogError (which also subclasses the built-in)
    assert _builtin_raises() == []
