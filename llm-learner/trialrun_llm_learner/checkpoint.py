"""Checkpoint artifacts, laid out as connectors/checkpoints/store.ts lays them out, and the adapter's file format.

`<root>/<policyId>/v<N>-<sha256>.bin`, written to a temp file then renamed, so a reader never sees a partial
artifact and a crash leaves only a temp file. The learner's optimizer state (not an artifact: nothing but the
learner reads it) goes the same way under `<root>/llm-learner-state/`. With a checkpoint store that is not a local
folder (s3://), the same files are the learner's scratch copies, which its launcher publishes (store_channel.py).

torch is imported only where tensors are handled, so the store functions (and store_channel.py) load without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Mapping
from urllib.parse import unquote, urlparse

from .digest import file_sha256

if TYPE_CHECKING:
    import torch

#: CheckpointArtifact.format of a LoRA adapter (schemas/policy-checkpoint.ts).
LORA_FORMAT = "lora-safetensors/v1"
STATE_FOLDER = "llm-learner-state"


class ArtifactIntegrityError(RuntimeError):
    """Stored bytes that do not match their digest: never loaded."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put_bytes(root: str, folder: str, version: int, data: bytes, suffix: str = ".bin") -> tuple[Path, str]:
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", folder):
        raise ValueError(f'"{folder}" is not usable as a folder name')
    sha256 = sha256_hex(data)
    directory = Path(root).resolve() / folder
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"v{version}-{sha256}{suffix}"
    temp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    return path, sha256


def read_verified(uri: str, sha256: str) -> bytes:
    """The bytes at a file: URI, checked against their sha256."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ArtifactIntegrityError(f"the local checkpoint store cannot read {uri}")
    try:
        data = Path(unquote(parsed.path)).read_bytes()
    except OSError as error:
        raise ArtifactIntegrityError(f"checkpoint artifact {uri} cannot be read: {error}") from error
    actual = sha256_hex(data)
    if actual != sha256:
        raise ArtifactIntegrityError(f"checkpoint artifact {uri} fails its sha256 check ({actual} != {sha256})")
    return data


def adapter_metadata(*, peft_config: str, base_model: str, base_sha256: str, version: int, parent_version: int) -> dict[str, str]:
    return {
        "format": LORA_FORMAT,
        "peft_config": peft_config,
        "base_model": base_model,
        "base_sha256": base_sha256,
        "policy_version": str(version),
        "parent_version": str(parent_version),
    }


def adapter_bytes(state: Mapping[str, torch.Tensor], metadata: Mapping[str, str]) -> bytes:
    """One safetensors file: the whole adapter (peft's tensor names), float32, with the contract's metadata."""
    import torch
    from safetensors.torch import save

    return save({k: v.detach().to("cpu", torch.float32).contiguous() for k, v in state.items()}, metadata=dict(metadata))


def read_adapter(data: bytes) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The tensors and metadata of an adapter artifact; ValueError when it is not `lora-safetensors/v1`."""
    from safetensors.torch import load

    header_length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + header_length])
    metadata = header.get("__metadata__", {})
    if metadata.get("format") != LORA_FORMAT:
        raise ValueError(f"not a {LORA_FORMAT} artifact (format {metadata.get('format')!r})")
    return load(data), metadata
