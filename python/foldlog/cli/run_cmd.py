"""``foldlog run "prompt"``: one headless turn; the answer on stdout, activity on stderr."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from typing import Any

from foldlog.cli.common import add_agent_options, config_from_args, session_path
from foldlog.cli.exits import (
    EXIT_APPROVAL,
    EXIT_CANCELLED,
    EXIT_ERROR,
    EXIT_MAX_STEPS,
    EXIT_OK,
    EXIT_TERMINATED,
    UsageError,
)
from foldlog.cli.live import LiveSink


def add_parser(verbs: Any) -> None:
    run = verbs.add_parser("run", help="run one prompt headless and print the answer")
    run.add_argument("prompt", nargs="?", help="the prompt ('-' reads it from stdin)")
    run.add_argument(
        "--resume",
        metavar="SESSION",
        help="continue SESSION's unfinished turn (cut off by a crash, or paused for approval) "
        "instead of running a prompt (docs/durable-runs.md)",
    )
    add_agent_options(run)
    run.add_argument("--json", action="store_true", help="print one JSON object per event, then a result")
    run.add_argument(
        "--output-schema",
        metavar="FILE.json",
        help="the answer must be JSON valid for this JSON schema; prints the validated JSON",
    )
    run.set_defaults(func=cmd_run)


async def drive(
    agent: Any, prompt: str | None, output_type: Any = None, *, resume: bool = False
) -> tuple[Any, int, str | None]:
    """Run one prompt (``resume``: continue the session's unfinished turn instead); Ctrl-C cancels
    the turn, and so does SIGTERM (a service manager, ``kill``, a container stopping): the turn
    ends ``aborted`` with its partial text logged, the exit code is then 143. A turn that pauses
    for approval exits 4 naming the calls. Returns (answer, exit code, error text); with
    ``output_type`` the answer is the validated value."""
    from foldlog.errors import ApprovalRequired, FoldlogError, MaxStepsExceeded, RunCancelled

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    terminated = False

    def on_sigterm() -> None:
        nonlocal terminated
        terminated = True
        if not agent.cancel() and not agent.running and task is not None:
            task.cancel()  # the turn has not started yet (or is over): stop waiting for it

    handled: list[signal.Signals] = []
    for sig, handler in ((signal.SIGINT, agent.cancel), (signal.SIGTERM, on_sigterm)):
        try:
            loop.add_signal_handler(sig, handler)
            handled.append(sig)
        except (NotImplementedError, RuntimeError):  # not the main thread, or Windows
            pass
    try:
        if resume:
            return await agent.resume(), EXIT_OK, None
        if output_type is not None:
            return await agent.run(prompt, output_type=output_type), EXIT_OK, None
        return await agent.run(prompt), EXIT_OK, None
    except ApprovalRequired as exc:
        return "", EXIT_APPROVAL, approval_text(exc, agent.session.id)
    except MaxStepsExceeded as exc:
        return "", EXIT_MAX_STEPS, str(exc) or "max steps reached"
    except RunCancelled:
        return "", *_cancelled(terminated)
    except asyncio.CancelledError:
        if terminated and task is not None:
            task.uncancel()  # our own cancellation (SIGTERM before the turn started): handled
        return "", *_cancelled(terminated)
    except FoldlogError as exc:
        return "", EXIT_ERROR, f"{type(exc).__name__}: {exc}"
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)


def approval_text(exc: Any, session_id: str) -> str:
    """What a paused turn waits for, and the commands that go on."""
    lines = [f"the turn paused for approval of {len(exc.calls)} call(s):"]
    for c in exc.calls:
        lines.append(f"  {c['id']}  {c['name']} {c['arguments']}")
    lines.append(
        f"answer each: foldlog approve {session_id} CALL_ID [--deny REASON]; "
        f"then: foldlog run --resume {session_id}"
    )
    return "\n".join(lines)


def _cancelled(terminated: bool) -> tuple[int, str]:
    if terminated:
        return EXIT_TERMINATED, "terminated (SIGTERM): the turn was cancelled"
    return EXIT_CANCELLED, "cancelled"


def currency_of(agent: Any) -> str | None:
    """The currency of the agent's session costs (`foldlog.cost`), when it has priced any."""
    meter = getattr(agent, "meter", None)
    currency = getattr(meter, "currency", None)
    return currency if isinstance(currency, str) else None


def force_first_tool(agent: Any, name: str | None) -> None:
    """Make the first step of each turn call tool ``name`` (OpenAI ``tool_choice``), through the
    agent's ``request`` hook: later steps choose freely, so the model can answer with the result."""
    if not name:
        return
    known = agent.registry.names
    if name not in known:
        raise SystemExit(f"foldlog run: --force-tool {name!r}: no such tool (have: {', '.join(known)})")

    async def first_step_calls(ctx: Any, next: Any) -> Any:
        if ctx.step == 1:
            ctx.params["tool_choice"] = {"type": "function", "function": {"name": name}}
        return await next()

    agent.hooks.request(first_step_calls)


async def _main(args: argparse.Namespace, prompt: str | None) -> int:
    from foldlog.agent import Agent
    from foldlog.cli.agent_setup import (
        make_mcp_servers,
        make_options,
        make_provider,
        make_tools,
        open_session,
        workspace_of,
    )
    from foldlog.providers.base import declared

    cfg = config_from_args(args)
    workspace = workspace_of(cfg)
    options = make_options(cfg)
    schema = read_schema(args.output_schema) if args.output_schema else None
    servers = make_mcp_servers(cfg, args.mcp)
    provider = make_provider(cfg)
    sink = LiveSink(
        json_mode=args.json,
        # with --output-schema stdout gets the validated JSON only (streamed text goes to stderr)
        out=sys.stderr if schema is not None and not args.json else None,
        show_reasoning=bool(cfg.get("show_reasoning")),
        requests_sent=lambda: declared(provider).requests_sent,
    )
    try:
        session = open_session(cfg, args.session, args.continue_latest, workspace)
        try:
            tools = make_tools(workspace, bash=args.bash, mcp_servers=servers)
            agent = Agent(provider, tools, session, options, sink)
            force_first_tool(agent, args.force_tool)
            answer, code, error = await drive(agent, prompt, schema, resume=args.resume is not None)
            session.flush()
        finally:
            session.close()
    finally:
        for server in servers:
            await server.aclose()
        await provider.aclose()
    if schema is not None and code == EXIT_OK:
        answer = json.dumps(answer, ensure_ascii=False)
    sink.finish()
    if args.json:
        result = {
            "event": "Result",
            "exit_code": code,
            "answer": answer,
            "error": error,
            "turn_reason": sink.turn_reason,
            "session": session.id,
            "path": str(session.path) if session.path else None,
            "usage": sink.final_totals().as_dict(),
        }
        print(json.dumps(result, ensure_ascii=False))
    else:
        if schema is not None and code == EXIT_OK:
            print(answer)
        if error:
            what = {EXIT_MAX_STEPS: "stopped", EXIT_APPROVAL: "paused"}.get(code, "error")
            sink.note(f"foldlog: {what}: {error}")
        sink.note(sink.usage_line(currency_of(agent)))
        sink.note(f"session: {session.id} ({session.path})")
    return code


def read_schema(path: str) -> dict[str, Any]:
    """The JSON schema of ``--output-schema`` (a JSON object)."""
    try:
        with open(path, encoding="utf-8") as fh:
            schema = json.load(fh)
    except OSError as e:
        raise UsageError(f"--output-schema {path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise UsageError(f"--output-schema {path}: not valid JSON: {e}") from None
    if not isinstance(schema, dict):
        raise UsageError(f"--output-schema {path}: a JSON schema is a JSON object")
    return schema


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        if args.prompt is not None or args.session or args.continue_latest:
            raise UsageError("--resume SESSION takes no prompt, --session or --continue")
        session_path(args.resume, config_from_args(args))  # an existing session: never a new one
        args.session = args.resume
        return asyncio.run(_main(args, None))
    if args.prompt is None:
        raise UsageError("a prompt is needed (or --resume SESSION)")
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    return asyncio.run(_main(args, prompt))
