"""A LoRA adapter with a known, strong effect, for the weight-sync integration test (test/integration/weight-sync.test.ts).

Loads the GGUF the server serves through transformers (the same weights), puts a peft LoRA on the attention
and MLP projections, and takes AdamW steps toward a fixed completion of a fixed prompt (token ids as the
server tokenised them) until the completion's logprob passes --target-logprob. Writes the adapter as a
`lora-safetensors/v1` artifact as v1 (and a copy as v2 that names another base, which must be refused), and prints the
per-token logprobs of the completion under the base model and under base + adapter as JSON: what the server
must report before and after the sync.

    python tests/lora_fixture.py --base model.gguf --prompt-ids '[1,2]' --completion-ids '[3]' --out-dir DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from trialrun_llm_learner.gguf_lora import ARTIFACT_FORMAT, file_sha256  # noqa: E402


def completion_logprobs(model, prompt: list[int], completion: list[int]) -> torch.Tensor:
    ids = torch.tensor([prompt + completion])
    logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    return torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(completion).unsqueeze(1)).squeeze(1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the GGUF file the server loads")
    parser.add_argument("--prompt-ids", required=True, type=json.loads)
    parser.add_argument("--completion-ids", required=True, type=json.loads)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--target-logprob", type=float, default=-2.5, help="stop once the completion's summed logprob is above this")
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)

    base_sha256 = file_sha256(args.base)
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(os.path.abspath(args.base)), gguf_file=os.path.basename(args.base), torch_dtype=torch.float32)
    model.eval()
    with torch.no_grad():
        base_logprobs = completion_logprobs(model, args.prompt_ids, args.completion_ids)

    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    model = get_peft_model(model, config)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.learning_rate)
    steps = 0
    while steps < args.max_steps:
        logprobs = completion_logprobs(model, args.prompt_ids, args.completion_ids)
        if float(logprobs.detach().sum()) > args.target_logprob:
            break
        optimizer.zero_grad()
        (-logprobs.sum()).backward()
        optimizer.step()
        steps += 1
    with torch.no_grad():
        adapter_logprobs = completion_logprobs(model, args.prompt_ids, args.completion_ids)

    state = {name: tensor.detach().to(torch.float32).contiguous() for name, tensor in get_peft_model_state_dict(model).items()}
    peft_config = config.to_dict()
    peft_config["target_modules"] = sorted(peft_config["target_modules"])
    metadata = {
        "format": ARTIFACT_FORMAT,
        "peft_config": json.dumps(peft_config, default=str),
        "base_model": "smollm2-135m-instruct",
        "base_sha256": base_sha256,
        "policy_version": "1",
        "parent_version": "0",
    }
    os.makedirs(args.out_dir, exist_ok=True)
    artifact = os.path.join(args.out_dir, "adapter.safetensors")
    wrong_base = os.path.join(args.out_dir, "adapter-other-base.safetensors")
    save_file(state, artifact, metadata=metadata)
    # Published as the next version, v2, so that only its base is wrong.
    save_file(state, wrong_base, metadata={**metadata, "base_sha256": "0" * 64, "policy_version": "2", "parent_version": "1"})
    print(json.dumps({"artifact": artifact, "wrongBase": wrong_base, "steps": steps, "baseLogprobs": base_logprobs.tolist(), "adapterLogprobs": adapter_logprobs.tolist()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
