"""Where the CLI keeps sessions and which defaults it uses.

Precedence, highest first: command-line flags > ``FOLDLOG_HOME`` (for the home folder only) >
``foldlog.toml`` of the project (the current folder or the nearest parent that has one) >
``foldlog.toml`` in the user config folder > built-in defaults.

Keys read from ``foldlog.toml`` (all optional)::

    home = "~/foldlog"          # sessions go to <home>/sessions
    sessions_dir = "..."        # or name the sessions folder directly
    provider = "deepseek"       # local | deepseek | openai | anthropic | openai-compatible
    model = "deepseek-v4-flash"
    base_url = "http://127.0.0.1:8080/v1"
    max_steps = 50
    context_window = 131072
    workspace = "."
    show_reasoning = false

    [mcp.servers.time]          # MCP servers as tools (needs `foldlog[mcp]`; docs/mcp.md)
    command = "mcp-server-time"
    args = ["--local-timezone", "UTC"]

Relative paths in a file are relative to that file's folder.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foldlog.errors import ConfigError as ConfigError  # the CLI's file errors (re-exported)

CONFIG_NAME = "foldlog.toml"
_PATH_KEYS = {"home", "sessions_dir", "workspace"}
#: the settings a command-line flag of the same name gives (``--max-steps`` → ``max_steps``)
FLAG_KEYS = (
    "provider",
    "model",
    "base_url",
    "max_steps",
    "context_window",
    "workspace",
    "cost_limit",
    "token_budget",
)
_KNOWN = {"home", "sessions_dir", "show_reasoning", "mcp", *FLAG_KEYS}
#: the numeric keys and their smallest value (``cost_limit`` a number, the others whole numbers)
_NUMBERS: dict[str, int] = {"max_steps": 1, "context_window": 1, "token_budget": 0, "cost_limit": 0}


def _platform_dir(kind: str) -> Path:
    """The user's state or config folder for foldlog (XDG on Linux, the native ones elsewhere)."""
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") if kind == "state" else os.environ.get("APPDATA")
        return Path(base or home / "AppData" / "Local") / "foldlog"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "foldlog"
    if kind == "state":
        return Path(os.environ.get("XDG_STATE_HOME") or home / ".local" / "state") / "foldlog"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "foldlog"


def user_config_path() -> Path:
    return _platform_dir("config") / CONFIG_NAME


def project_config_path(start: Path | None = None) -> Path | None:
    """The nearest ``foldlog.toml`` from ``start`` (default: the current folder) upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def read_config_file(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    # a [foldlog] table is accepted too, so the keys can live in a shared file
    table = raw.get("foldlog", raw)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [foldlog] must be a table")
    unknown = sorted(set(table) - _KNOWN - {"foldlog"})
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KNOWN))})")
    values = {k: v for k, v in table.items() if k in _KNOWN}
    for key in sorted(_NUMBERS.keys() & values.keys()):
        _check_number(path, key, values[key])
    for key in sorted({"provider", "model", "base_url"} & values.keys()):
        if not isinstance(values[key], str):
            raise ConfigError(f"{path}: {key} must be a string, got {values[key]!r}")
    if not isinstance(values.get("show_reasoning", False), bool):
        raise ConfigError(f"{path}: show_reasoning must be true or false, got {values['show_reasoning']!r}")
    if "mcp" in values:
        mcp = values["mcp"]
        if (
            not isinstance(mcp, dict)
            or set(mcp) - {"servers"}
            or not isinstance(mcp.get("servers", {}), dict)
        ):
            raise ConfigError(f"{path}: [mcp] takes only [mcp.servers.NAME] tables")
        # the servers stay raw here (foldlog.mcp reads them when an agent is made), with the file
        # they came from: relative `cwd` values are relative to its folder
        values["mcp"] = {"servers": mcp.get("servers", {}), "file": str(path)}
    for key in _PATH_KEYS & set(values):
        if not isinstance(values[key], str):
            raise ConfigError(f"{path}: {key} must be a string path")
        values[key] = str((path.parent / Path(values[key]).expanduser()).resolve())
    return values


def _check_number(path: Path, key: str, value: Any) -> None:
    """A numeric key of ``foldlog.toml``: a bad value is refused when the file is read, naming
    the file and the key (never a traceback later)."""
    import math

    whole = key != "cost_limit"
    kind = int if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind):
        what = "a whole number" if whole else "a number"
        raise ConfigError(f"{path}: {key} must be {what}, got {value!r}")
    if not math.isfinite(value) or value < _NUMBERS[key]:
        raise ConfigError(f"{path}: {key} must be >= {_NUMBERS[key]}, got {value!r}")


@dataclass(slots=True)
class Config:
    """Settled configuration; ``sources`` says where each value came from."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @property
    def home(self) -> Path:
        return Path(self.values["home"])

    @property
    def sessions_dir(self) -> Path:
        return Path(self.values["sessions_dir"])


_LEVELS = {"default": 0, "user": 1, "project": 2, "FOLDLOG_HOME": 3, "flag": 4}


def load_config(flags: dict[str, Any] | None = None, *, cwd: Path | None = None) -> Config:
    """Merge defaults, the user file, the project file, ``FOLDLOG_HOME`` and ``flags`` (non-None)."""
    cfg = Config()
    level: dict[str, int] = {}

    def put(values: dict[str, Any], source: str, rank: str) -> None:
        for key, value in values.items():
            if value is not None:
                cfg.values[key] = value
                cfg.sources[key] = source
                level[key] = _LEVELS[rank]

    put({"home": str(_platform_dir("state")), "provider": "local"}, "default", "default")
    user = user_config_path()
    if user.is_file():
        put(read_config_file(user), str(user), "user")
    project = project_config_path(cwd)
    if project is not None and project != user:
        put(read_config_file(project), str(project), "project")
    env_home = os.environ.get("FOLDLOG_HOME")
    if env_home:
        put({"home": str(Path(env_home).expanduser().resolve())}, "FOLDLOG_HOME", "FOLDLOG_HOME")
    put(flags or {}, "flag", "flag")
    # sessions_dir follows home unless it was set at least as specifically as home
    if level.get("sessions_dir", -1) < level["home"]:
        cfg.values["sessions_dir"] = str(Path(cfg.values["home"]) / "sessions")
        cfg.sources["sessions_dir"] = cfg.sources["home"]
    return cfg
