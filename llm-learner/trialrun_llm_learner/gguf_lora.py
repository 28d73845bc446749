"""Converts a `lora-safetensors/v1` checkpoint artifact into a GGUF LoRA adapter that llama.cpp loads with --lora.

The artifact (docs/llm.md, the checkpoint contract) is one safetensors file: the peft state dict
(`base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight`, ...), float32, and `__metadata__` with the
LoraConfig as JSON (`peft_config`) and the sha256 of the GGUF the adapter was trained on (`base_sha256`).
What llama.cpp expects (its convert_lora_to_gguf.py and llama-adapter.cpp):
  - `general.type = adapter`, `adapter.type = lora`, `adapter.lora.alpha`, and the base's `general.architecture`;
  - per adapted matrix two tensors named after the base tensor, `blk.N.attn_q.weight.lora_a` ([r, in] in numpy
    order, as peft's lora_A) and `.lora_b` ([out, r], as lora_B);
  - the scale it applies is alpha / r, so rsLoRA's alpha / sqrt(r) is written as alpha * sqrt(r);
  - for llama the GGUF stores q and k with their rows permuted for its rope layout (convert_hf_to_gguf.py's
    LlamaModel.permute), so lora_B of q_proj and k_proj gets the same row permutation; lora_A is untouched.
The base GGUF is checked first: its sha256 must be the artifact's base_sha256, and every adapted matrix must
exist in it with matching shapes. Anything else is refused (exit status 2, one line naming what was wrong).

    python -m trialrun_llm_learner.gguf_lora --adapter v3.safetensors --base model.gguf --out v3.gguf
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass

import numpy as np

from .digest import file_sha256

ARTIFACT_FORMAT = "lora-safetensors/v1"
PEFT_PREFIX = "base_model.model."
# Architectures whose GGUF tensor layout this converter knows; llama permutes q and k rows.
PERMUTED_ARCHITECTURES = {"llama"}
SUPPORTED_ARCHITECTURES = PERMUTED_ARCHITECTURES | {"qwen2", "qwen3"}


class AdapterRefused(Exception):
    """The artifact cannot be applied to this base model; the message says why."""


@dataclass(frozen=True)
class BaseModel:
    architecture: str
    head_count: int
    head_count_kv: int
    block_count: int
    # GGUF tensor name -> shape in ggml order (ne[0] = input features, ne[1] = output features)
    shapes: dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class ConvertedAdapter:
    tensors: int
    rank: int
    alpha: float
    base_sha256: str
    policy_version: str | None


def read_base(path: str) -> BaseModel:
    import gguf

    reader = gguf.GGUFReader(path)

    def field(name: str):
        if name not in reader.fields:
            raise AdapterRefused(f"the base GGUF {path} has no {name}")
        return reader.fields[name].contents()

    architecture = str(field("general.architecture"))
    return BaseModel(
        architecture=architecture,
        head_count=int(field(f"{architecture}.attention.head_count")),
        head_count_kv=int(field(f"{architecture}.attention.head_count_kv")),
        block_count=int(field(f"{architecture}.block_count")),
        shapes={tensor.name: tuple(int(n) for n in tensor.shape) for tensor in reader.tensors},
    )


def read_adapter(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    from safetensors import safe_open

    try:
        with safe_open(path, framework="np") as handle:
            metadata = dict(handle.metadata() or {})
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
    except Exception as error:  # safetensors raises its own error types for a truncated or foreign file
        raise AdapterRefused(f"{path} is not a safetensors file: {error}") from error
    return tensors, metadata


def permute_rows(weights: np.ndarray, head_count: int, head_count_kv: int | None) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute on the output rows (the first numpy axis)."""
    if head_count_kv is not None and head_count != head_count_kv:
        head_count = head_count_kv
    rows = weights.shape[0]
    return weights.reshape(head_count, 2, rows // head_count // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def lora_config(metadata: dict[str, str]) -> tuple[int, float]:
    """The rank and the alpha llama.cpp needs (it scales by alpha / r)."""
    if "peft_config" not in metadata:
        raise AdapterRefused("the artifact's metadata has no peft_config")
    try:
        config = json.loads(metadata["peft_config"])
    except json.JSONDecodeError as error:
        raise AdapterRefused(f"the artifact's peft_config is not JSON: {error}") from error
    rank, alpha = config.get("r"), config.get("lora_alpha")
    if not isinstance(rank, int) or rank < 1 or not isinstance(alpha, (int, float)):
        raise AdapterRefused(f"peft_config needs a whole r >= 1 and a numeric lora_alpha, got r={rank!r}, lora_alpha={alpha!r}")
    if config.get("use_dora"):
        raise AdapterRefused("DoRA adapters (use_dora) have no llama.cpp form")
    if config.get("bias", "none") != "none" or config.get("modules_to_save"):
        raise AdapterRefused("adapters that train biases or whole modules (bias, modules_to_save) are not LoRA-only")
    if config.get("rank_pattern") or config.get("alpha_pattern"):
        raise AdapterRefused("per-module ranks or alphas (rank_pattern, alpha_pattern) are not supported")
    scaled_alpha = float(alpha) * math.sqrt(rank) if config.get("use_rslora") else float(alpha)
    return rank, scaled_alpha


def gguf_tensors(tensors: dict[str, np.ndarray], base: BaseModel) -> list[tuple[str, np.ndarray]]:
    """(name, float32 array) pairs in llama.cpp's naming, each checked against the base tensor it adapts."""
    import gguf

    if base.architecture not in SUPPORTED_ARCHITECTURES:
        raise AdapterRefused(f"base architecture {base.architecture!r} is not one this converter knows ({', '.join(sorted(SUPPORTED_ARCHITECTURES))})")
    arch = next(key for key, name in gguf.MODEL_ARCH_NAMES.items() if name == base.architecture)
    names = gguf.get_tensor_name_map(arch, base.block_count)
    pairs: dict[str, dict[str, np.ndarray]] = {}
    for name, value in tensors.items():
        for side, suffix in (("a", ".lora_A.weight"), ("b", ".lora_B.weight")):
            if name.startswith(PEFT_PREFIX) and name.endswith(suffix):
                pairs.setdefault(name[len(PEFT_PREFIX) : -len(suffix)], {})[side] = value
                break
        else:
            raise AdapterRefused(f"tensor {name!r} is not a peft LoRA matrix ({PEFT_PREFIX}<module>.lora_A.weight / .lora_B.weight)")
    if not pairs:
        raise AdapterRefused("the artifact holds no LoRA tensors")
    out: list[tuple[str, np.ndarray]] = []
    for module, sides in sorted(pairs.items()):
        if set(sides) != {"a", "b"}:
            raise AdapterRefused(f"{module} has lora_{'A' if 'a' not in sides else 'B'} missing")
        target = names.get_name(f"{module}.weight", try_suffixes=(".weight",))
        if target is None or target not in base.shapes:
            raise AdapterRefused(f"{module} adapts no tensor of the base model")
        a, b = (np.asarray(sides[s], dtype=np.float32) for s in ("a", "b"))
        in_features, out_features = base.shapes[target][0], base.shapes[target][1]
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1] or a.shape[1] != in_features or b.shape[0] != out_features:
            raise AdapterRefused(f"{module}: lora_A {a.shape} and lora_B {b.shape} do not fit {target} ({out_features} x {in_features})")
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise AdapterRefused(f"{module} holds a NaN or an infinity")
        if base.architecture in PERMUTED_ARCHITECTURES and target.endswith(".attn_q.weight"):
            b = permute_rows(b, base.head_count, base.head_count)
        elif base.architecture in PERMUTED_ARCHITECTURES and target.endswith(".attn_k.weight"):
            b = permute_rows(b, base.head_count, base.head_count_kv)
        out.append((f"{target}.lora_a", np.ascontiguousarray(a)))
        out.append((f"{target}.lora_b", np.ascontiguousarray(b)))
    return out


def convert(adapter_path: str, base_path: str, out_path: str) -> ConvertedAdapter:
    """Checks the artifact against the base GGUF, then writes the GGUF adapter (to a temp file, then renamed)."""
    import gguf

    tensors, metadata = read_adapter(adapter_path)
    if metadata.get("format") != ARTIFACT_FORMAT:
        raise AdapterRefused(f"the artifact's format is {metadata.get('format')!r}, not {ARTIFACT_FORMAT!r}")
    expected = metadata.get("base_sha256", "")
    actual = file_sha256(base_path)
    if expected != actual:
        raise AdapterRefused(f"the adapter was trained on base sha256 {expected or '(none)'}, but {base_path} is {actual}")
    rank, alpha = lora_config(metadata)
    base = read_base(base_path)
    converted = gguf_tensors(tensors, base)
    ranks = {array.shape[0] for name, array in converted if name.endswith(".lora_a")}
    if ranks != {rank}:
        raise AdapterRefused(f"peft_config says r={rank} but the tensors have rank {sorted(ranks)}")

    temp = f"{out_path}.tmp-{os.getpid()}"
    writer = gguf.GGUFWriter(temp, base.architecture)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    for name, array in converted:
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(temp, out_path)
    return ConvertedAdapter(tensors=len(converted), rank=rank, alpha=alpha, base_sha256=actual, policy_version=metadata.get("policy_version"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", required=True, help="the lora-safetensors/v1 artifact")
    parser.add_argument("--base", required=True, help="the GGUF the server loads")
    parser.add_argument("--out", required=True, help="where the GGUF adapter goes")
    args = parser.parse_args(argv)
    try:
        result = convert(args.adapter, args.base, args.out)
    except AdapterRefused as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        return 2
    print(json.dumps({"tensors": result.tensors, "rank": result.rank, "alpha": result.alpha, "baseSha256": result.base_sha256, "policyVersion": result.policy_version}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
