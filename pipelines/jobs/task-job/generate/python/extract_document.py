"""Takes the document out of a reply (`answer.txt` -> `document.json`), in the grading sandbox.

The reply may wrap the document in a Markdown fence; the host's checks then parse `document.json` field by field.
"""

from __future__ import annotations

import sys

from reply_code import unfenced


def main() -> int:
    with open("answer.txt", encoding="utf-8", errors="replace") as handle:
        reply = handle.read()
    with open("document.json", "w", encoding="utf-8") as handle:
        handle.write(unfenced(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main())
