"""Retention (`foldlog.stores.retention`): which sessions a prune removes, on both real stores."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from foldlog.stores.base import SessionInfo
from foldlog.stores.retention import (
    FAMILY,
    KEEP_LAST,
    LOCKED,
    USED_NOW,
    WITH_PARENT,
    InvalidDurationError,
    parse_duration,
    plan_prune,
    prune,
)
from tests.stores.store_logdata import T0, line, step_batch

DAY_MS = 86_400_000
NOW_MS = 1_800_000_000_000


# --- durations -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30d", 30 * 86400),
        ("12h", 12 * 3600),
        ("90m", 90 * 60),
        ("45s", 45),
        ("2w", 14 * 86400),
        ("1d12h", 129600),
    ],
)
def test_durations_take_a_number_and_a_unit(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("bad", ["", "30", "d", "30x", "-1d", "1.5d", "0d", "30 days", "d30"])
def test_a_bad_duration_says_how_to_write_one(bad: str) -> None:
    with pytest.raises(InvalidDurationError, match="invalid duration") as err:
        parse_duration(bad)
    assert "30d" in str(err.value) or "longer than zero" in str(err.value)


# --- the plan ----------------------------------------------------------------------------------------


def info(
    sid: str, age_days: float, parent: str | None = None, kind: str | None = None, holder: str | None = None
) -> SessionInfo:
    updated = NOW_MS - int(age_days * DAY_MS)
    return SessionInfo(sid, updated, updated, 0, 100, 1, holder, None, parent=parent, parent_kind=kind)


def plan(infos: list[SessionInfo], keep_last: int = 0) -> tuple[list[str], dict[str, str]]:
    removed, kept = plan_prune(infos, NOW_MS - 30 * DAY_MS, keep_last)
    return [s.id for s in removed], {k.id: k.reason for k in kept}


def test_old_sessions_go_recent_ones_stay() -> None:
    assert plan([info("new", 1), info("old", 40)]) == (["old"], {})


def test_children_and_forks_go_with_their_parent_and_before_it() -> None:
    removed, kept = plan(
        [
            info("p", 40),
            info("sub", 45, "p", "subagent"),
            info("fork", 50, "p", "fork"),
            info("subsub", 60, "sub", "subagent"),
        ]
    )
    assert set(removed) == {"p", "sub", "fork", "subsub"} and kept == {}
    assert removed.index("subsub") < removed.index("sub") < removed.index("p")
    assert removed.index("fork") < removed.index("p")


def test_a_recent_fork_keeps_its_old_parent_and_ancestors() -> None:
    removed, kept = plan([info("root", 90), info("p", 40, "root", "fork"), info("f", 2, "p", "fork")])
    assert removed == []
    assert kept == {"root": FAMILY, "p": FAMILY}


def test_an_old_fork_of_a_kept_parent_goes_alone_but_a_sub_agent_stays() -> None:
    removed, kept = plan([info("p", 1), info("f", 40, "p", "fork"), info("sub", 40, "p", "subagent")])
    assert removed == ["f"]
    assert kept == {"sub": WITH_PARENT}


def test_a_recent_sub_agent_keeps_its_parent() -> None:
    assert plan([info("p", 40), info("sub", 1, "p", "subagent")]) == ([], {"p": FAMILY})


def test_a_locked_session_and_its_ancestors_are_never_removed() -> None:
    removed, kept = plan(
        [info("p", 40), info("f", 40, "p", "fork", holder="pid 1@h"), info("x", 40, holder="pid 2@h")]
    )
    assert removed == []
    assert kept == {"p": FAMILY, "f": LOCKED, "x": LOCKED}


def test_keep_last_keeps_whole_families_of_the_newest_top_level_sessions() -> None:
    infos = [info("a", 40), info("a-f", 35, "a", "fork"), info("b", 50), info("c", 60)]
    removed, kept = plan(infos, keep_last=1)
    assert sorted(removed) == ["b", "c"]
    assert kept == {"a": KEEP_LAST, "a-f": KEEP_LAST}


def test_a_loop_of_parent_links_is_kept_not_removed() -> None:
    removed, kept = plan([info("x", 40, "y", "fork"), info("y", 40, "x", "fork"), info("z", 40)])
    assert removed == ["z"]
    assert set(kept) == {"x", "y"}


# --- the real stores -----------------------------------------------------------------------------


def header_with_parent(sid: str, parent: str | None, kind: str | None) -> bytes:
    link = {"id": parent, "kind": kind, "atSeq": 0} if parent else None
    return line({"type": "session", "version": 1, "id": sid, "createdAt": T0, "parent": link, "meta": {}})[
        :-1
    ]


def write(store: Any, sid: str, parent: str | None = None, kind: str | None = None) -> bytes:
    batch, n = step_batch(0, 0, 2, sid)
    w = store.open_writer(sid, header_with_parent(sid, parent, kind))
    try:
        w.append(batch, 0, n)
    finally:
        w.close()
    return batch


def age(spec: dict[str, Any], store: Any, sid: str, days: float) -> None:
    when = time.time() - days * 86400
    if spec["kind"] == "file":
        os.utime(store.path_for(sid), (when, when))
    else:
        with psycopg.connect(spec["dsn"], autocommit=True) as conn:
            conn.execute("UPDATE foldlog.sessions SET updated = %s WHERE id = %s", (int(when * 1000), sid))


def stored_ids(store: Any) -> set[str]:
    return {s.id for s in store.list_sessions()}


def test_prune_removes_old_families_and_keeps_the_rest(store_spec: dict[str, Any], store: Any) -> None:
    layout = {
        "old": (None, None, 40),
        "old-sub": ("old", "subagent", 45),
        "old-fork": ("old", "fork", 41),
        "kept": (None, None, 60),
        "kept-fork": ("kept", "fork", 1),
        "new": (None, None, 0),
    }
    for sid, (parent, kind, _) in layout.items():
        write(store, sid, parent, kind)
    for sid, (_, _, days) in layout.items():
        age(store_spec, store, sid, days)
    before = {sid: store.read_log(sid) for sid in layout}

    dry = prune(store, parse_duration("30d"), dry_run=True)
    assert dry.dry_run and {s.id for s in dry.removed} == {"old", "old-sub", "old-fork"}
    assert {k.id: k.reason for k in dry.kept} == {"kept": FAMILY}
    assert {sid: store.read_log(sid) for sid in layout} == before, "a dry run changes nothing"

    done: list[tuple[int, int, str]] = []
    report = prune(store, timedelta(days=30), progress=lambda *a: done.append(a))
    assert [s.id for s in report.removed][-1] == "old", "the parent goes last"
    assert {s.id for s in report.removed} == {"old", "old-sub", "old-fork"}
    assert report.freed_bytes == sum(len(before[s]) for s in ("old", "old-sub", "old-fork"))
    assert [d[:2] for d in done] == [(1, 3), (2, 3), (3, 3)]
    assert stored_ids(store) == {"kept", "kept-fork", "new"}
    for sid in ("kept", "kept-fork", "new"):
        assert store.read_log(sid) == before[sid]
    # the removed bytes are gone from the store, not only from the listing
    if store_spec["kind"] == "file":
        assert sorted(p.name for p in Path(store_spec["root"]).iterdir() if p.name.startswith("old")) == []
    else:
        with psycopg.connect(store_spec["dsn"]) as conn:
            rows = conn.execute("SELECT count(*) FROM foldlog.events WHERE session_id LIKE 'old%'").fetchone()
        assert rows == (0,)


def test_a_session_with_a_live_writer_is_never_pruned(store_spec: dict[str, Any], store: Any) -> None:
    write(store, "busy")
    write(store, "idle")
    writer = store.open_writer("busy", header_with_parent("busy", None, None))
    try:
        age(store_spec, store, "busy", 90)
        age(store_spec, store, "idle", 90)
        report = prune(store, timedelta(days=30))
        assert [s.id for s in report.removed] == ["idle"]
        assert [(k.id, k.reason) for k in report.kept] == [("busy", LOCKED)]
        assert stored_ids(store) == {"busy"}
    finally:
        writer.close()


def test_a_session_used_during_the_prune_stays(store_spec: dict[str, Any], store: Any) -> None:
    for sid in ("a", "b"):
        write(store, sid)
        age(store_spec, store, sid, 40)

    def use_the_other(done: int, total: int, sid: str) -> None:
        if done == 1:  # the other one is used again after it was listed
            other = "b" if sid == "a" else "a"
            first = step_batch(0, 0, 2, other)[1]
            batch, n = step_batch(first, 1, 2, "again")
            w = store.open_writer(other, header_with_parent(other, None, None))
            try:
                w.append(batch, first, n)
            finally:
                w.close()

    report = prune(store, timedelta(days=30), progress=use_the_other)
    assert len(report.removed) == 1
    (kept,) = report.kept
    assert kept.reason == USED_NOW and stored_ids(store) == {kept.id}


def test_prune_refuses_a_store_it_does_not_know() -> None:
    class Other:
        def list_sessions(self) -> list[SessionInfo]:
            return []

    from foldlog.errors import StorageError

    with pytest.raises(StorageError, match="FileStore or a PostgresStore"):
        prune(Other(), timedelta(days=1))  # type: ignore[arg-type]


def test_a_file_session_goes_with_its_lock_and_sidecars_but_not_a_neighbour(tmp_path: Path) -> None:
    from foldlog.stores.file import FileStore

    store = FileStore(tmp_path)
    for sid in ("a", "a.jsonl.b"):  # the second's log is a.jsonl.b.jsonl: not a's sidecar
        write(store, sid)
    (tmp_path / "a.jsonl.ckpt").write_bytes(b"checkpoint")
    os.utime(store.path_for("a"), (time.time() - 86400 * 40,) * 2)
    report = prune(store, timedelta(days=30))
    assert [s.id for s in report.removed] == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl.b.jsonl", "a.jsonl.b.lock"]
    assert json.loads(store.read_log("a.jsonl.b").split(b"\n")[0])["id"] == "a.jsonl.b"


def write_with_media(store: Any, sid: str, sha: str, size: int) -> None:
    ref = f"data:image/png;base64,foldlog-media:sha256:{sha}"
    block = {
        "type": "image_url",
        "image_url": {"url": ref},
        "media": {"sha256": sha, "mediaType": "image/png", "size": size},
    }
    event = {
        "type": "user/message",
        "seq": 0,
        "time": T0,
        "data": {"role": "user", "content": [block]},
        "surfaceOp": "append",
    }
    w = store.open_writer(sid, header_with_parent(sid, None, None))
    try:
        w.append(line(event), 0, 1)
    finally:
        w.close()


def test_media_only_the_removed_sessions_referenced_goes_with_them(
    store_spec: dict[str, Any], store: Any
) -> None:
    from foldlog.stores.media import media_store_for

    media = media_store_for(store)
    assert media is not None
    if store_spec["kind"] == "postgres":  # the media table is shared by the tests of this database
        with psycopg.connect(store_spec["dsn"], autocommit=True) as conn:
            conn.execute("TRUNCATE foldlog.media")
    shared, alone, fresh = (media.put(f"png bytes {name}".encode()) for name in ("shared", "alone", "fresh"))
    write_with_media(store, "old-a", shared, 10)
    write_with_media(store, "old-b", alone, 10)
    write_with_media(store, "kept", shared, 10)
    for sid, days in (("old-a", 40), ("old-b", 40), ("kept", 1)):
        age(store_spec, store, sid, days)
    past = time.time() - 2 * 86400  # stored long ago: out of the media store's grace period
    for sha in (shared, alone):
        if store_spec["kind"] == "file":
            os.utime(Path(store_spec["root"]) / "media" / sha, (past, past))
        else:
            with psycopg.connect(store_spec["dsn"], autocommit=True) as conn:
                conn.execute(
                    "UPDATE foldlog.media SET touched = %s WHERE sha256 = %s", (int(past * 1000), sha)
                )

    dry = prune(store, timedelta(days=30), dry_run=True)
    assert dry.media_removed == 0 and media.hashes() == {shared, alone, fresh}
    report = prune(store, timedelta(days=30))
    assert sorted(s.id for s in report.removed) == ["old-a", "old-b"]
    assert report.media_removed == 1
    # still referenced by a kept session, or stored just now (a writer may be about to reference it)
    assert media.hashes() == {shared, fresh}


def test_the_command_prunes_a_postgres_store(pg_dsn: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    from foldlog.stores.postgres import PostgresStore
    from tests.stores.store_helpers import REPO

    spec = {"kind": "postgres", "dsn": pg_dsn}
    with PostgresStore(pg_dsn) as store:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("TRUNCATE foldlog.checkpoints, foldlog.events, foldlog.sessions")
        for sid, days in (("cli-old", 40), ("cli-new", 1)):
            write(store, sid)
            age(spec, store, sid, days)
        cmd = [sys.executable, "-m", "foldlog", "--home", str(tmp_path), "sessions", "prune"]
        args = ["--older-than", "30d", "--dsn", pg_dsn, "--json"]
        dry = subprocess.run(
            [*cmd, *args, "--dry-run"], capture_output=True, text=True, cwd=REPO, timeout=120
        )
        assert dry.returncode == 0, dry.stderr
        assert [r["id"] for r in json.loads(dry.stdout)["removed"]] == ["cli-old"]
        assert stored_ids(store) == {"cli-old", "cli-new"}
        done = subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["store"] == "the PostgreSQL store"
        assert stored_ids(store) == {"cli-new"}
