#!/usr/bin/env python3
"""Python's own tokenizer, as the reference pytokens.ts is checked against (pytokens.test.ts).

Reads JSON Lines on stdin, {"key": ..., "source": "..."}, and writes one JSON line per request:
{"key": ..., "tokens": [[kind, text], ...]} with pytokens.ts's kinds (0 name, 1 number, 2 string, 3 op,
4 comment without trailing blanks, 5 newline, 6 indent, 7 dedent; the last three with empty text), and the
layout-only tokens (NL, ENCODING, ENDMARKER) left out; or {"key": ..., "error": "..."} for a source
Python's tokenizer refuses.
"""

from __future__ import annotations

import io
import json
import sys
import tokenize

KINDS = {
    tokenize.NAME: 0,
    tokenize.NUMBER: 1,
    tokenize.STRING: 2,
    tokenize.OP: 3,
    tokenize.ERRORTOKEN: 3,
    tokenize.COMMENT: 4,
    tokenize.NEWLINE: 5,
    tokenize.INDENT: 6,
    tokenize.DEDENT: 7,
}


def tokens(source: str) -> list[list[object]]:
    out: list[list[object]] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        kind = KINDS.get(token.type)
        if kind is None or (token.type == tokenize.ERRORTOKEN and not token.string.strip()):
            continue
        text = token.string.rstrip(" \t") if kind == 4 else "" if kind >= 5 else token.string
        out.append([kind, text])
    return out


def main() -> int:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = {"key": request["key"], "tokens": tokens(request["source"])}
        except (tokenize.TokenError, SyntaxError) as exc:
            answer = {"key": request["key"], "error": repr(exc)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
