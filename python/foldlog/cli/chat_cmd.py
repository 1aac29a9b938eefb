"""``foldlog chat``: an interactive session with slash commands.

Input comes from prompt_toolkit (line editing, history file) or readline when stdin is a
terminal, else from plain lines on stdin — so ``printf 'hi\\n/status\\n' | foldlog chat`` works.
Ctrl-C while the model works cancels the turn (the log stays valid); SIGTERM then does the same and
ends the chat (exit 143); Ctrl-D or ``/quit`` leaves.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from foldlog.cli.common import add_agent_options, config_from_args, console, human_size, surface_tokens
from foldlog.cli.config import Config
from foldlog.cli.exits import EXIT_APPROVAL, EXIT_OK, EXIT_TERMINATED
from foldlog.cli.live import LiveSink
from foldlog.cli.log_view import chat_context
from foldlog.log.grammar import kinds

HELP = [
    ("/compact [focus]", "fold older history into a summary now (optionally saying what to keep)"),
    ("/status", "session, model and how full the context is"),
    ("/new", "start a new session"),
    (
        "/resume [ID]",
        "continue this session's unfinished turn (cut off, or paused for approval); with ID, or "
        "when there is none, switch to a session (default: the most recent other one) and "
        "continue its unfinished turn",
    ),
    ("/approve CALL_ID", "approve a call the paused turn waits for (then /resume)"),
    ("/deny CALL_ID REASON", "deny a call the paused turn waits for, saying why (then /resume)"),
    ("/sessions", "list recent sessions"),
    ("/model NAME", "use another model from the next request on"),
    ("/tools", "list the tools, with the MCP server of each"),
    ("/tokens", "token usage and cost so far"),
    ("/cost", "what the session cost: by kind of token, per turn, per sub-agent"),
    ("/context", "what fills the context window, by category (system, tools, digests, tail, …)"),
    ("/export PATH", "write the conversation as an OpenAI messages JSON file"),
    ("/help", "this list"),
    ("/quit", "leave (also /exit or Ctrl-D)"),
]

# said when chat starts on the offline default: a newcomer without a key meets this model first,
# and its wrong answers should not read as foldlog's (docs/local-model.md)
OFFLINE_NOTICE = (
    "offline model: Gemma 3 270M, a small pretrained (not instruction-tuned) model run on this machine. "
    "It is a demo of tool use on simple tasks (read a file, list a folder, find a word) and is often wrong. "
    "For real work set DEEPSEEK_API_KEY and start chat with --provider deepseek "
    "(or openai, anthropic with their keys)."
)


def gauge(used: int, window: int | None, width: int = 20) -> str:
    """``[██████░░░░] 31% 40.1k/128k`` — how full the context window is."""
    if not window:
        return f"{_k(used)} tokens (window unknown)"
    ratio = min(used / window, 1.0)
    filled = round(ratio * width)
    return f"[{'█' * filled}{'░' * (width - filled)}] {ratio:.0%} {_k(used)}/{_k(window)}"


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


class _Reader:
    """One line of input at a time; ``None`` at end of input.

    On a terminal: prompt_toolkit when installed (``pip install 'foldlog[chat]'``), else
    ``input()`` with readline history; both keep the history in ``history``. Piped: plain lines.
    """

    def __init__(self, history: Path | None) -> None:
        self._session: Any = None
        self._readline: Any = None
        self._history = history
        if not sys.stdin.isatty():
            return
        if history is not None:
            from foldlog.stores.file import private_folder

            # prompts are as private as the sessions: the history file is 0600 in a 0700 folder
            private_folder(history.parent)
            os.close(os.open(history, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        try:
            from prompt_toolkit import PromptSession  # type: ignore[import-not-found,unused-ignore]
            from prompt_toolkit.history import (  # type: ignore[import-not-found,unused-ignore]
                FileHistory,
                InMemoryHistory,
            )

            hist: Any = FileHistory(str(history)) if history is not None else InMemoryHistory()
            self._session = PromptSession(history=hist)
        except ImportError:
            try:
                import readline

                self._readline = readline
                if history is not None and history.exists():
                    readline.read_history_file(str(history))
            except (ImportError, OSError):
                self._readline = None

    async def read(self, prompt: str) -> str | None:
        loop = asyncio.get_running_loop()
        if self._session is not None:
            while True:
                try:
                    text: str = await self._session.prompt_async(prompt)
                    return text
                except KeyboardInterrupt:
                    continue  # Ctrl-C at the prompt clears the line
                except EOFError:
                    return None
        if sys.stdin.isatty():
            try:
                line = await loop.run_in_executor(None, input, prompt)
            except EOFError:
                return None
            if self._readline is not None and self._history is not None:
                try:
                    self._readline.write_history_file(str(self._history))
                except OSError:
                    pass
            return line
        raw = await loop.run_in_executor(None, sys.stdin.readline)
        return None if raw == "" else raw.rstrip("\n")


class Chat:
    def __init__(self, args: argparse.Namespace, cfg: Config) -> None:
        from foldlog.providers.base import declared

        self.args = args
        self.cfg = cfg
        self.out = console(markup=False)  # paths, previews and help text hold brackets
        self.provider: Any = None
        #: the model the chat talks to (``/model`` changes it; every session attached uses it)
        self.model: str | None = None
        self.sink = LiveSink(
            show_reasoning=bool(cfg.get("show_reasoning")),
            requests_sent=lambda: declared(self.provider).requests_sent,
        )
        self.session: Any = None
        self.agent: Any = None
        self.turn_running = False
        self.mcp_servers: list[Any] = []  # made once, shared by the agent of every session

    # --- session lifecycle -------------------------------------------------------------------

    def _attach(self, session: Any) -> None:
        from foldlog.agent import Agent
        from foldlog.cli.agent_setup import make_options, make_tools, workspace_of

        if self.session is not None:
            self.session.close()
        self.session = session
        workspace = workspace_of(self.cfg)
        options = make_options(self.cfg)
        options.model = self.model
        tools = make_tools(workspace, bash=self.args.bash, mcp_servers=self.mcp_servers)
        self.agent = Agent(self.provider, tools, session, options, self.sink)
        turns = session.events.types().count(kinds.TURN_START)
        self.out.print(f"session {session.id} · {turns} turn(s) · {session.path}", style="dim")

    def _open(self, ref: str | None, continue_latest: bool) -> None:
        from foldlog.cli.agent_setup import open_session, workspace_of

        self._attach(open_session(self.cfg, ref, continue_latest, workspace_of(self.cfg)))

    def window(self) -> int | None:
        window: int | None = self.agent.window if self.agent is not None else self.provider.context_window
        return window

    # --- commands ----------------------------------------------------------------------------

    async def command(self, line: str) -> bool:
        """Run a slash command; False means leave."""
        name, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        table: dict[str, Callable[[str], Awaitable[bool | None]]] = {
            "/help": self.c_help,
            "/quit": self.c_quit,
            "/exit": self.c_quit,
            "/status": self.c_status,
            "/tokens": self.c_tokens,
            "/cost": self.c_cost,
            "/new": self.c_new,
            "/resume": self.c_resume,
            "/approve": self.c_approve,
            "/deny": self.c_deny,
            "/sessions": self.c_sessions,
            "/model": self.c_model,
            "/tools": self.c_tools,
            "/compact": self.c_compact,
            "/export": self.c_export,
            "/context": lambda rest: chat_context(self, rest),
        }
        handler = table.get(name)
        if handler is None:
            self.out.print(f"unknown command {name} — /help lists them", style="red")
            return True
        return (await handler(rest)) is not False

    async def c_help(self, _: str) -> None:
        for cmd, text in HELP:
            self.out.print(f"  {cmd:<18} {text}")

    async def c_tools(self, _: str) -> None:
        registry = self.agent.registry
        try:
            await registry.prepare()  # the MCP servers' tools (listed when the first turn runs)
        except Exception as e:
            self.out.print(f"{type(e).__name__}: {e}", style="yellow")
        for t in registry:
            owner = registry.owner(t.name)
            where = f"MCP {owner}" if owner else "built-in"
            flag = " (read-only)" if t.read_only else ""
            self.out.print(f"  {t.name:<28} {where}{flag}")

    async def c_quit(self, _: str) -> bool:
        return False

    async def c_status(self, _: str) -> None:
        s = self.session
        turns = s.events.types().count(kinds.TURN_START)
        surface = s.derive_messages()
        self.out.print(f"session  {s.id}  ({s.path})")
        self.out.print(f"model    {self.model or '?'} via {self.cfg.get('provider')}")
        self.out.print(
            f"log      {len(s.events)} events, {turns} turn(s), {len(surface)} messages on the surface"
        )
        self.out.print(f"context  {gauge(self.sink.totals.last_prompt_tokens, self.window())}")

    async def c_tokens(self, _: str) -> None:
        from foldlog.cli.run_cmd import currency_of

        self.out.print(self.sink.usage_line(currency_of(self.agent)))
        last = self.sink.totals.last_prompt_tokens
        count, how = surface_tokens(self.session.derive_messages(), self.model)
        self.out.print(f"last request: {last} prompt tokens; the surface now: {count} tokens ({how})")

    async def c_cost(self, _: str) -> None:
        from foldlog.cli.cost_view import cost_lines, ledger_of

        for line in cost_lines(ledger_of(self.session)):
            self.out.print(line)

    async def c_new(self, _: str) -> None:
        self._open(None, False)

    async def c_resume(self, ref: str) -> None:
        from foldlog.cli.store import list_sessions
        from foldlog.log.unfinished import unfinished_turn

        if not ref and unfinished_turn(self.session) is not None:
            await self.turn(None)  # this session's unfinished turn goes on
            return
        if not ref:
            others = [i for i in list_sessions(self.cfg.sessions_dir) if i.id != self.session.id]
            if not others:
                self.out.print("no other session to resume")
                return
            ref = others[0].path or others[0].id
        try:
            self._open(ref, False)
        except FileNotFoundError as exc:
            self.out.print(str(exc), style="red")
            return
        if unfinished_turn(self.session) is not None:
            await self.turn(None)

    async def c_approve(self, call_id: str) -> None:
        await self._answer(call_id.strip(), None)

    async def c_deny(self, rest: str) -> None:
        call_id, _, reason = rest.strip().partition(" ")
        if not reason.strip():
            self.out.print("usage: /deny CALL_ID REASON")
            return
        await self._answer(call_id, reason.strip())

    async def _answer(self, call_id: str, denial: str | None) -> None:
        """Record the answer to a waiting call (this chat holds the session's lock, so the answer
        is given here rather than with `foldlog approve`)."""
        from foldlog.errors import ApprovalStateError

        if not call_id:
            self.out.print("usage: /approve CALL_ID  or  /deny CALL_ID REASON")
            return
        try:
            if denial is None:
                self.session.approve(call_id)
            else:
                self.session.deny(call_id, denial)
        except ApprovalStateError as exc:
            self.out.print(str(exc), style="red")
            return
        self.out.print(
            f"{'denied' if denial is not None else 'approved'} {call_id} — /resume continues the turn"
        )

    async def c_sessions(self, _: str) -> None:
        from foldlog.cli.store import list_sessions

        for info in list_sessions(self.cfg.sessions_dir)[:10]:
            mark = "*" if info.id == self.session.id else " "
            self.out.print(
                f"{mark} {info.id}  {info.turns} turn(s)  {human_size(info.size)}  {info.preview or ''}",
                markup=False,
            )

    async def c_model(self, name: str) -> None:
        if not name:
            self.out.print(f"model: {self.model or '?'}")
            return
        self.model = name
        self.provider.model = name  # its prices follow the model
        self.agent.model = name  # the requests, and the session's token counts
        self.out.print(f"model set to {name}")

    async def c_compact(self, focus: str) -> None:
        before = len(self.session.derive_messages())
        await self.agent.compact(focus or None)
        after = len(self.session.derive_messages())
        self.out.print(f"compacted: {before} → {after} messages on the surface")

    async def c_export(self, path: str) -> None:
        if not path:
            self.out.print("usage: /export PATH")
            return
        messages = [dict(m) for m in self.session.derive_messages()]
        Path(path).expanduser().write_text(json.dumps(messages, indent=2, ensure_ascii=False) + "\n")
        self.out.print(f"wrote {len(messages)} messages to {path}")

    # --- turns -------------------------------------------------------------------------------

    async def turn(self, text: str | None) -> int:
        """One turn (``None``: the session's unfinished turn goes on); its exit code
        (`EXIT_TERMINATED` after a SIGTERM: the chat then ends)."""
        from foldlog.cli.run_cmd import drive

        self.turn_running = True
        try:
            _, code, error = await drive(self.agent, text, resume=text is None)
        finally:
            self.turn_running = False
        self.sink.finish()
        self.session.flush()
        if error:
            self.out.print(error, style="yellow")
        if code == EXIT_APPROVAL:  # this chat holds the session: the answers are given here
            self.out.print("here: /approve CALL_ID or /deny CALL_ID REASON, then /resume", style="yellow")
        self.out.print(gauge(self.sink.totals.last_prompt_tokens, self.window()), style="dim")
        return code

    def _idle_sigint(self) -> None:
        """Outside a turn Ctrl-C only says how to leave (inside one, ``drive`` cancels the turn)."""
        try:
            asyncio.get_running_loop().add_signal_handler(
                signal.SIGINT, lambda: self.out.print("\n(/quit or Ctrl-D to leave)")
            )
        except (NotImplementedError, RuntimeError):  # Windows, or not the main thread
            pass

    async def main(self) -> int:
        from foldlog.cli.agent_setup import make_mcp_servers, make_provider

        self.mcp_servers = make_mcp_servers(self.cfg, self.args.mcp)
        self.provider = make_provider(self.cfg)
        self.model = self.cfg.get("model") or self.provider.model
        try:
            self._open(self.args.session, self.args.continue_latest)
            if _is_offline_model(self.provider):
                self.out.print(OFFLINE_NOTICE, style="yellow")
            self.out.print("/help for commands, Ctrl-C cancels a turn, Ctrl-D leaves", style="dim")
            reader = _Reader(self.cfg.home / "chat_history")
            while True:
                self._idle_sigint()
                line = await reader.read("you› ")
                if line is None:
                    break
                if not line.strip():
                    continue
                if line.startswith("/"):
                    if not await self.command(line):
                        break
                    continue
                if await self.turn(line) == EXIT_TERMINATED:
                    return EXIT_TERMINATED  # SIGTERM in a turn: cancelled as by Ctrl-C, then stop
        finally:
            if self.session is not None:
                self.session.close()
            for server in self.mcp_servers:
                await server.aclose()
            await self.provider.aclose()
        return EXIT_OK


def _is_offline_model(provider: Any) -> bool:
    from foldlog.providers.local.provider import LocalLlama

    return isinstance(provider, LocalLlama)


def add_parser(verbs: Any) -> None:
    chat = verbs.add_parser("chat", help="interactive chat with slash commands (/help)")
    add_agent_options(chat)
    chat.set_defaults(func=cmd_chat)


def cmd_chat(args: argparse.Namespace) -> int:
    return asyncio.run(Chat(args, config_from_args(args)).main())
