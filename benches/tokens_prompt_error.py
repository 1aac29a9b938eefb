"""How close foldlog's request token counts come to the `prompt_tokens` DeepSeek reported.

Prints, per recorded DeepSeek chat-completions request of the shared corpus: reported prompt
tokens, our count, the difference (the rows are the test helper `tests.tokens.prompt_error`'s,
which the test suite checks). Used for the figures in docs/tokens.md:
``python benches/tokens_prompt_error.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repo root

from tests.tokens.prompt_error import rows


def main() -> None:
    table = rows()
    print(f"{'request':60} {'model':18} msgs tools reported counted  diff")
    for r in table:
        d = r.counted - r.reported
        print(f"{r.name[:60]:60} {r.model:18} {r.messages:4} {r.tools:5} {r.reported:8} {r.counted:7} {d:+5}")
    errs = [abs(r.counted - r.reported) / r.reported for r in table]
    print(
        f"{len(table)} requests; mean |error| {100 * sum(errs) / len(errs):.1f}%, max {100 * max(errs):.1f}%"
    )


if __name__ == "__main__":
    main()
