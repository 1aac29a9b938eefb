"""What the viewer's redaction replaces, and what it leaves alone (docs/viewer.md, "Redaction")."""

from __future__ import annotations

from typing import Any

import pytest

from foldlog.interchange.exports.view.redact import Redactor

SECRETS = [
    ("key sk-proj-abc123DEF456ghi789JKL012 end", "api-key"),
    ("sk-ant-api03-AbCdEf0123456789xyzXYZ-_q", "anthropic-key"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github-token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github-token"),
    ("xoxb-1234567890-abcdefABCDEF", "slack-token"),
    ("id AKIAIOSFODNN7EXAMPLE here", "aws-key"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "google-key"),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc'", "bearer-token"),
    ("secret=aB3xK9mQ2pL7vR4tW8yZ1cF6hJ0nD5sG", "high-entropy"),
]

NOT_SECRETS = [
    "disk-usage-monitor-service-name here",
    "sha 3f786850e387550fdab836ed7e6dc881de23001b",
    "uuid fa812bfe-b295-4cca-9c2f-fdf01028cb46",
    "/home/USER/projects/spotter-worktrees/spotter-a0y/lib/spotter_web/controllers",
    "test_session_hook_controller_registers_pane_ok",
    "HandleIncomingWebhookRequestsV2Handler",
    "the task-scheduler restarts",
]


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_a_secret_is_replaced_by_its_marker(text: str, kind: str) -> None:
    redactor = Redactor()
    out = redactor.text(text)
    assert f"[REDACTED {kind}]" in out
    assert redactor.found[kind] == 1 and redactor.total == 1


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_words_paths_digests_and_ids_stay(text: str) -> None:
    redactor = Redactor()
    assert redactor.text(text) == text and redactor.total == 0


def test_media_data_is_left_alone_and_the_rest_redacted() -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": "my key is sk-proj-abc123DEF456ghi789JKL012"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        {"type": "input_audio", "input_audio": {"data": png, "format": "wav"}},
    ]
    redactor = Redactor()
    out = redactor.data({"content": blocks})
    assert out["content"][0]["text"] == "my key is [REDACTED api-key]"
    assert out["content"][1:] == blocks[1:]
    assert blocks[0]["text"].endswith("JKL012")  # the input is not changed
