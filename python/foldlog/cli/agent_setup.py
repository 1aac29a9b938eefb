"""Building what ``run``, ``chat`` and ``compact`` need: provider, session, tools, agent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.cli.config import Config
from foldlog.cli.exits import UsageError

if TYPE_CHECKING:
    from foldlog.agent.options import Options
    from foldlog.log.session import Session
    from foldlog.providers.base import Provider

DEFAULT_MODELS = {"deepseek": "deepseek-v4-flash", "openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}

SYSTEM_PROMPT = (
    "You are a careful software assistant working in the folder {workspace}. "
    "Use the tools to look at files before you change them, keep changes small, "
    "and answer briefly when you are done."
)


def _cls(module: str, name: str) -> Any:
    """A provider class, imported on use (each pulls in httpx; the local one, llama.cpp glue)."""
    import importlib

    return getattr(importlib.import_module(f"foldlog.providers.{module}"), name)


def make_provider(cfg: Config, *, on_retry: Any = None) -> Provider:
    """The provider ``cfg`` names, with the model, base URL and window it sets."""
    name = cfg.get("provider") or "local"
    model = cfg.get("model")
    base_url = cfg.get("base_url")
    window = cfg.get("context_window")
    common: dict[str, Any] = {}
    if window:
        common["context_window"] = int(window)
    if on_retry is not None:
        common["on_retry"] = on_retry
    if name == "deepseek":
        if base_url:
            common["base_url"] = base_url
        deepseek = _cls("http.deepseek", "DeepSeek")
        provider: Provider = deepseek(model=model or DEFAULT_MODELS["deepseek"], **common)
    elif name == "openai":
        if base_url:
            common["base_url"] = base_url
        provider = _cls("http.openai", "OpenAI")(model=model or DEFAULT_MODELS["openai"], **common)
    elif name == "anthropic":
        if base_url:
            common["base_url"] = base_url
        anthropic = _cls("anthropic.provider", "Anthropic")
        provider = anthropic(model=model or DEFAULT_MODELS["anthropic"], **common)
    elif name == "openai-compatible":
        if not base_url:
            raise UsageError("--provider openai-compatible needs --base-url (or base_url in foldlog.toml)")
        if not model:
            raise UsageError("--provider openai-compatible needs --model (or model in foldlog.toml)")
        key = os.environ.get("FOLDLOG_API_KEY") or os.environ.get("OPENAI_API_KEY")
        provider = _cls("http.openai_compat", "OpenAICompatible")(base_url, key, model, **common)
    elif name == "local":
        n_ctx = int(window) if window else 8192
        extra = {"on_retry": on_retry} if on_retry is not None else {}
        provider = _cls("local.provider", "LocalLlama")(n_ctx=n_ctx, **extra)
    else:
        raise UsageError(f"unknown provider {name!r}")
    return provider


def workspace_of(cfg: Config) -> Path:
    folder = Path(cfg.get("workspace") or ".").expanduser().resolve()
    if not folder.is_dir():
        raise UsageError(f"--workspace {folder}: not a folder")
    return folder


def open_session(cfg: Config, ref: str | None, continue_latest: bool, workspace: Path) -> Session:
    """The session to work in: ``--session`` (path or id), ``--continue`` (latest) or a new one."""
    from foldlog.cli.store import latest, resolve, safe_id
    from foldlog.log.session import Session
    from foldlog.stores.file import private_folder

    folder = cfg.sessions_dir
    system = SYSTEM_PROMPT.format(workspace=workspace)
    if ref and continue_latest:
        raise UsageError("--session and --continue exclude each other")
    if continue_latest:
        path = latest(folder)
        if path is None:
            raise UsageError(f"--continue: no sessions yet in {folder}")
        return Session.open(path)
    if ref:
        try:
            return Session.open(resolve(ref, folder))
        except FileNotFoundError:
            if os.sep in ref or ref.endswith(".jsonl"):  # a path that does not exist yet: create it
                private_folder(Path(ref).parent)
                return Session.open(Path(ref), system=system)
            private_folder(folder)
            return Session.open(folder, safe_id(ref), system=system)
    private_folder(folder)
    return Session.open(folder, system=system)


def make_tools(
    workspace: Path, *, bash: bool, write: bool = True, mcp_servers: list[Any] | None = None
) -> list[Any]:
    """The built-in tools, and the MCP servers (each stands for its tools)."""
    from foldlog.tools.builtin import builtin_tools

    tools: list[Any] = builtin_tools(workspace, write=write, bash=bash)
    return tools + list(mcp_servers or ())


def make_mcp_servers(cfg: Config, mcp_file: str | None) -> list[Any]:
    """The MCP servers of ``foldlog.toml`` (``[mcp.servers.NAME]``) and of ``--mcp FILE``
    (which wins for a name both give)."""
    servers: dict[str, Any] = {}
    table = cfg.get("mcp")
    if table and table.get("servers"):
        from foldlog.mcp.config import servers_from_mapping

        config_file = Path(table["file"])
        for s in servers_from_mapping(table["servers"], str(config_file), config_file.parent):
            servers[s.name] = s
    if mcp_file:
        from foldlog.mcp.config import load_mcp_file

        for s in load_mcp_file(mcp_file):
            servers[s.name] = s
    return [servers[n] for n in sorted(servers)]


def make_options(cfg: Config) -> Options:
    from foldlog.agent.options import Options

    kwargs: dict[str, Any] = {}
    if cfg.get("max_steps") is not None:
        steps = int(cfg.get("max_steps"))
        if steps < 1:
            raise UsageError("--max-steps must be at least 1")
        kwargs["max_steps"] = steps
    if cfg.get("context_window") is not None:
        kwargs["context_window"] = int(cfg.get("context_window"))
    if cfg.get("model"):
        kwargs["model"] = cfg.get("model")
    if cfg.get("cost_limit") is not None:
        kwargs["cost_limit"] = float(cfg.get("cost_limit"))
    if cfg.get("token_budget") is not None:
        kwargs["token_budget"] = int(cfg.get("token_budget"))
    return Options(**kwargs)
