"""foldlog session → OpenAI chat ``messages`` (a JSON array): the derived messages, or with
``wire=True`` what a request would carry now (after the strict send normalizer)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from foldlog.log.frozen import thaw

if TYPE_CHECKING:
    from foldlog.log.session import Session

FORMAT = "openai"


def export(session: Session, *, wire: bool = False) -> str:
    """The messages as indented JSON text."""
    messages = session.wire_messages() if wire else list(session.derive_messages())
    return json.dumps(thaw(messages), indent=2, ensure_ascii=False) + "\n"
