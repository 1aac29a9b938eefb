"""``foldlog log import``: a foreign transcript (and its sub-agents and branches) as foldlog logs.

Each converted conversation is one log. A child (a sub-agent run, a fork) is written beside
its parent as ``<parent stem>.<child name>.jsonl`` with the session id ``<parent id>.<child
name>`` and a header parent link naming the parent's id. The header's meta records the import:
``imported`` = the converter's meta (the source file's *name*, never its path) and
``importedAt`` (epoch ms).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.cli.exits import EXIT_OK, UsageError
from foldlog.errors import OutputExistsError, SessionNotFoundError

if TYPE_CHECKING:
    from foldlog.interchange.events import Conversation


def _plan(
    conv: Conversation, target: Path, session_id: str, parent: dict[str, Any] | None
) -> list[tuple[Conversation, Path, str, dict[str, Any] | None]]:
    """Where each conversation of the tree goes: (conversation, file, session id, parent link)."""
    from foldlog.cli.store import safe_id

    out = [(conv, target, session_id, parent)]
    for child in conv.children:
        name = safe_id(child.name or "child")
        link = {"id": session_id, **(child.link or {})}
        out.extend(
            _plan(child, target.with_name(f"{target.stem}.{name}.jsonl"), f"{session_id}.{name}", link)
        )
    return out


def cmd_import(args: argparse.Namespace) -> int:
    from foldlog.cli.common import config_from_args
    from foldlog.cli.store import safe_id
    from foldlog.interchange import convert
    from foldlog.interchange.writer import write_conversation
    from foldlog.log.session import Session, now_ms
    from foldlog.stores.file import private_folder

    cfg = config_from_args(args)
    src = Path(args.src)
    if not src.is_file():
        raise SessionNotFoundError(f"{src}: no such file")
    conversations = convert(args.source_format, src, branches=args.branches)
    if args.index is not None:
        if not 0 <= args.index < len(conversations):
            raise UsageError(f"--index {args.index}: {src} holds {len(conversations)} transcript(s)")
        conversations = [conversations[args.index]]
    if not conversations:
        raise UsageError(f"{src}: no transcript found")

    # one transcript -> a file (or into the sessions folder); several -> a folder
    if args.output is None:
        folder: Path | None = cfg.sessions_dir
    elif len(conversations) > 1 or Path(args.output).is_dir() or args.output.endswith(("/", "\\")):
        folder = Path(args.output)
    else:
        folder = None
    plan: list[tuple[Conversation, Path, str, dict[str, Any] | None]] = []
    for index, conv in enumerate(conversations):
        if folder is None:
            target = Path(args.output)
        else:
            target = folder / f"{safe_id(conv.id or f'{src.stem}-{index}')}.jsonl"
        plan.extend(_plan(conv, target, safe_id(conv.id or target.stem), None))
    targets = [t for _, t, _, _ in plan]
    if len(set(targets)) != len(targets):
        raise UsageError("two transcripts would be written to the same file")
    existing = [t for t in targets if t.exists()]
    if existing and not args.force:
        raise OutputExistsError(f"{existing[0]} exists (use --force to overwrite)")

    imported_at = now_ms()
    written = []
    for conv, target, session_id, parent in plan:
        private_folder(target.parent)
        session = Session(
            id=session_id, meta={"imported": conv.meta, "importedAt": imported_at}, parent=parent
        )
        write_conversation(conv, session)
        if target.exists():
            target.unlink()  # --force: save must not append to the old file
        session.save(target)
        # read it back: proves the file loads, and says whether the source left calls unanswered
        check = Session.load(target)
        written.append(
            {
                "path": str(target),
                "id": session.id,
                "parent": parent,
                "events": len(conv.events),
                **conv.counts.as_dict(),
                "needs_repair": check.normalized_dirty,
                "repair": {k: v for k, v in check.repair_report.items() if v and k != "events_added"},
                "warnings": list(conv.warnings),
                "left_out": list(conv.left_out),
            }
        )
    if args.json:
        print(json.dumps(written if len(written) > 1 else written[0], indent=2))
        return EXIT_OK
    for item in written:
        print(_line(item))
    return EXIT_OK


def _line(item: dict[str, Any]) -> str:
    from foldlog.cli.log_cmds import _repair_note as repair_note

    roles = ", ".join(f"{n} {r}" for r, n in sorted(item["messages"].items()))
    parent = item["parent"]
    link = ""
    if parent is not None:
        kind = parent.get("kind")
        if kind == "subagent":
            link = f"  (sub-agent of {parent['id']}, answers {parent.get('callId', 'no known call')})"
        elif kind == "fork":
            link = f"  (fork of {parent['id']} after event {parent.get('atSeq')})"
    return (
        f"{item['path']}: {item['events']} events, {item['turns']} turns, {roles}, "
        f"{item['tool_calls']} tool calls, {item['tool_results']} tool results, "
        f"{item['compactions']} compactions"
        + link
        + (repair_note(item["repair"]) if item["needs_repair"] else "")
        + "".join(f"\n  warning: {w}" for w in item["warnings"])
        + "".join(f"\n  left out: {w}" for w in item["left_out"])
    )
