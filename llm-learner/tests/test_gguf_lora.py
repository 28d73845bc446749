"""The adapter -> GGUF converter on a tiny synthetic llama GGUF: names, metadata, the q/k permutation, refusals."""

from __future__ import annotations

import json
import math

import gguf
import numpy as np
import pytest
from safetensors.numpy import save_file

from trialrun_llm_learner import gguf_lora

HIDDEN, HEADS, KV_HEADS, KV_DIM, FFN = 8, 2, 1, 4, 12
BASE_SHAPES = {  # numpy order [out, in]
    "blk.0.attn_q.weight": (HIDDEN, HIDDEN),
    "blk.0.attn_k.weight": (KV_DIM, HIDDEN),
    "blk.0.attn_v.weight": (KV_DIM, HIDDEN),
    "blk.0.ffn_down.weight": (HIDDEN, FFN),
}
MODULES = {
    "model.layers.0.self_attn.q_proj": (HIDDEN, HIDDEN),
    "model.layers.0.self_attn.k_proj": (KV_DIM, HIDDEN),
    "model.layers.0.self_attn.v_proj": (KV_DIM, HIDDEN),
    "model.layers.0.mlp.down_proj": (HIDDEN, FFN),
}
RANK, ALPHA = 2, 4


@pytest.fixture()
def base(tmp_path):
    path = str(tmp_path / "base.gguf")
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(1)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    for name, shape in BASE_SHAPES.items():
        writer.add_tensor(name, np.zeros(shape, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def adapter_tensors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tensors = {}
    for module, (out_features, in_features) in MODULES.items():
        tensors[f"base_model.model.{module}.lora_A.weight"] = rng.standard_normal((RANK, in_features)).astype(np.float32)
        tensors[f"base_model.model.{module}.lora_B.weight"] = rng.standard_normal((out_features, RANK)).astype(np.float32)
    return tensors


def write_adapter(path, base_path, tensors=None, **overrides) -> str:
    metadata = {
        "format": "lora-safetensors/v1",
        "peft_config": json.dumps({"r": RANK, "lora_alpha": ALPHA, "lora_dropout": 0.0, "target_modules": ["q_proj", "k_proj", "v_proj", "down_proj"]}),
        "base_model": "tiny",
        "base_sha256": gguf_lora.file_sha256(base_path),
        "policy_version": "3",
        "parent_version": "2",
    }
    metadata.update(overrides)
    save_file(adapter_tensors() if tensors is None else tensors, str(path), metadata=metadata)
    return str(path)


def read_gguf(path):
    reader = gguf.GGUFReader(path)
    fields = {name: reader.fields[name].contents() for name in ("general.type", "general.architecture", "adapter.type", "adapter.lora.alpha")}
    tensors = {t.name: np.array(t.data).reshape([int(n) for n in reversed(t.shape)]) for t in reader.tensors}
    return fields, tensors


def test_writes_the_names_metadata_and_shapes_llama_cpp_expects(tmp_path, base):
    adapter = write_adapter(tmp_path / "v3.safetensors", base)
    result = gguf_lora.convert(adapter, base, str(tmp_path / "v3.gguf"))
    fields, tensors = read_gguf(str(tmp_path / "v3.gguf"))
    assert fields == {"general.type": "adapter", "general.architecture": "llama", "adapter.type": "lora", "adapter.lora.alpha": pytest.approx(ALPHA)}
    assert sorted(tensors) == sorted(f"{name}.{side}" for name in BASE_SHAPES for side in ("lora_a", "lora_b"))
    assert tensors["blk.0.ffn_down.weight.lora_a"].shape == (RANK, FFN)
    assert tensors["blk.0.ffn_down.weight.lora_b"].shape == (HIDDEN, RANK)
    assert (result.tensors, result.rank, result.policy_version) == (8, RANK, "3")


def test_permutes_the_rows_of_q_and_k_as_the_base_conversion_did(tmp_path, base):
    source = adapter_tensors()
    gguf_lora.convert(write_adapter(tmp_path / "a.safetensors", base), base, str(tmp_path / "a.gguf"))
    _, tensors = read_gguf(str(tmp_path / "a.gguf"))
    for module, target, kv in (("q_proj", "attn_q", HEADS), ("k_proj", "attn_k", KV_HEADS)):
        a = source[f"base_model.model.model.layers.0.self_attn.{module}.lora_A.weight"]
        b = source[f"base_model.model.model.layers.0.self_attn.{module}.lora_B.weight"]
        # The delta the server adds (B' A) is the HF delta (B A) with the rows the base GGUF's q/k rows got.
        expected = gguf_lora.permute_rows(b @ a, HEADS, kv)
        np.testing.assert_allclose(tensors[f"blk.0.{target}.weight.lora_b"] @ tensors[f"blk.0.{target}.weight.lora_a"], expected, rtol=1e-5)
        assert not np.allclose(expected, b @ a)  # the permutation is not the identity at these sizes
    v_b = source["base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight"]
    np.testing.assert_array_equal(tensors["blk.0.attn_v.weight.lora_b"], v_b)


def test_rslora_alpha_is_rescaled_to_llama_cpp_alpha_over_r(tmp_path, base):
    config = json.dumps({"r": RANK, "lora_alpha": ALPHA, "use_rslora": True})
    gguf_lora.convert(write_adapter(tmp_path / "r.safetensors", base, peft_config=config), base, str(tmp_path / "r.gguf"))
    fields, _ = read_gguf(str(tmp_path / "r.gguf"))
    # llama.cpp scales by alpha / r; rsLoRA by lora_alpha / sqrt(r).
    assert fields["adapter.lora.alpha"] / RANK == pytest.approx(ALPHA / math.sqrt(RANK))


@pytest.mark.parametrize(
    ("overrides", "tensors", "reason"),
    [
        ({"base_sha256": "0" * 64}, None, r"trained on base sha256 0{64}, but .* is [0-9a-f]{64}"),
        ({"format": "merged/v1"}, None, r"format is 'merged/v1'"),
        ({"peft_config": "{not json"}, None, r"peft_config is not JSON"),
        ({"peft_config": json.dumps({"r": RANK, "lora_alpha": ALPHA, "use_dora": True})}, None, r"DoRA"),
        ({"peft_config": json.dumps({"r": 3, "lora_alpha": ALPHA})}, None, r"r=3 but the tensors have rank \[2\]"),
        ({}, {k: v for k, v in adapter_tensors().items() if "q_proj.lora_B" not in k}, r"q_proj has lora_B missing"),
        ({}, {**adapter_tensors(), "base_model.model.model.layers.0.self_attn.q_proj.weight": np.zeros((HIDDEN, HIDDEN), np.float32)}, r"not a peft LoRA matrix"),
        ({}, {"base_model.model.model.layers.7.self_attn.q_proj.lora_A.weight": np.zeros((RANK, HIDDEN), np.float32), "base_model.model.model.layers.7.self_attn.q_proj.lora_B.weight": np.zeros((HIDDEN, RANK), np.float32)}, r"adapts no tensor"),
        ({}, {**adapter_tensors(), "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight": np.zeros((RANK, HIDDEN), np.float32)}, r"do not fit blk.0.ffn_down.weight"),
        ({}, {**adapter_tensors(), "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight": np.full((RANK, FFN), np.nan, np.float32)}, r"NaN"),
    ],
)
def test_refuses_what_it_cannot_apply_and_writes_nothing(tmp_path, base, overrides, tensors, reason):
    adapter = write_adapter(tmp_path / "bad.safetensors", base, tensors=tensors, **overrides)
    with pytest.raises(gguf_lora.AdapterRefused, match=reason):
        gguf_lora.convert(adapter, base, str(tmp_path / "bad.gguf"))
    assert not (tmp_path / "bad.gguf").exists()


def test_a_file_that_is_not_safetensors_is_refused_by_the_command(tmp_path, base, capsys):
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 64)
    status = gguf_lora.main(["--adapter", str(tmp_path / "junk.safetensors"), "--base", base, "--out", str(tmp_path / "j.gguf")])
    assert status == 2
    assert capsys.readouterr().err.startswith("refused: ")
