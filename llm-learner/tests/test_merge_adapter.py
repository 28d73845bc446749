"""stack/llm/merge_adapter.py (SGLang's merged weights) on a tiny random llama: the merged model computes what
base + adapter computes. It lives here, not beside the script, because it needs this venv's torch and peft."""

import os
import sys

import peft
import pytest
import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "stack", "llm"))
import merge_adapter  # noqa: E402


def test_merged_weights_match_the_adapter_applied(tmp_path):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)
    base = transformers.LlamaForCausalLM(config)
    base.save_pretrained(tmp_path / "base")
    adapted = peft.get_peft_model(base, peft.LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "down_proj"], init_lora_weights=False))
    adapted.save_pretrained(tmp_path / "adapter")
    ids = torch.tensor([[1, 5, 9, 3]])
    with torch.no_grad():
        expected = adapted(input_ids=ids).logits

    merge_adapter.merge(str(tmp_path / "base"), str(tmp_path / "adapter"), str(tmp_path / "merged"))
    merged = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged")
    with torch.no_grad():
        assert torch.allclose(merged(input_ids=ids).logits, expected, atol=1e-5)
    assert not any(name.endswith("lora_A.weight") for name in merged.state_dict())


def test_missing_folders_are_named(tmp_path):
    with pytest.raises(SystemExit):
        merge_adapter.main(["--base", str(tmp_path / "none"), "--adapter", str(tmp_path), "--out", str(tmp_path / "o")])
