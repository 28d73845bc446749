#!/usr/bin/env python3
"""Search file contents of a workspace: the workspace environment's `search` tool inside the sandbox.

    trialrun_search.py <pattern> [<path glob>]

`pattern` is a Python regular expression, matched line by line; `path glob` filters files by their path
relative to the current folder (`**` crosses folders: `src/**/*.py`, `tests/*.py`, `*.md`). Prints
`path:line:text` per matching line, lines cut to MAX_LINE_CHARS, at most MAX_MATCHES lines, then a line
saying how many were left out. Files that are not UTF-8 text, symlinks and `.git`/`__pycache__` are skipped.

Exit status, as grep's: 0 when something matched, 1 when nothing did, 2 with a message on stderr when the
pattern or the glob is not valid.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import PurePosixPath

MAX_MATCHES = 200
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 4 * 1024 * 1024
SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache"})


def glob_regex(glob: str) -> re.Pattern[str]:
    """A path glob as a regex over relative POSIX paths: `**/` any folders (or none), `*` and `?` within one name."""
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def files_under(root: str) -> list[str]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append(os.path.relpath(path, root))
    return found


def search(pattern: re.Pattern[str], path_filter: re.Pattern[str] | None, root: str = ".") -> tuple[list[str], int]:
    """The matching lines as `path:line:text`, up to MAX_MATCHES, and how many matched in all."""
    lines: list[str] = []
    total = 0
    for relative in files_under(root):
        posix = PurePosixPath(relative).as_posix()
        if path_filter is not None and not path_filter.match(posix):
            continue
        try:
            if os.path.getsize(os.path.join(root, relative)) > MAX_FILE_BYTES:
                continue
            with open(os.path.join(root, relative), encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if pattern.search(line):
                total += 1
                if len(lines) < MAX_MATCHES:
                    shown = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "..."
                    lines.append(f"{posix}:{number}:{shown}")
    return lines, total


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: trialrun_search.py <pattern> [<path glob>]", file=sys.stderr)
        return 2
    try:
        pattern = re.compile(argv[0])
    except re.error as error:
        print(f"the pattern is not a valid regular expression: {error}", file=sys.stderr)
        return 2
    path_filter = glob_regex(argv[1]) if len(argv) == 2 else None
    lines, total = search(pattern, path_filter)
    for line in lines:
        print(line)
    if total > len(lines):
        print(f"... {total - len(lines)} more matching lines not shown; narrow the pattern or the path glob")
    return 0 if total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
