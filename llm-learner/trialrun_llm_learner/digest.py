"""sha256 of a file, read in 1 MiB blocks (GGUF bases and adapters are too large to read whole)."""

from __future__ import annotations

import hashlib


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
