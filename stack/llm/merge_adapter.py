"""Merges a peft LoRA adapter folder into its base model and saves the result as a whole HF model folder.

For servers that replace their weights in place instead of applying adapters (SGLang's
/update_weights_from_disk, see connectors/llm/weights.ts): weight sync writes the checkpoint's adapter as a
peft folder, this merges it (W + scale * B A per adapted matrix, peft's merge_and_unload) and writes the
model with its tokenizer and config beside it, to a temp folder renamed into place. Runs in the LLM
learner's virtualenv (torch, transformers, peft).

    python merge_adapter.py --base /models/base --adapter /sync/v3 --out /sync/merged-v3
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys


def merge(base: str, adapter: str, out: str) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    temp = f"{out}.tmp-{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    merged.save_pretrained(temp, safe_serialization=True)
    try:
        AutoTokenizer.from_pretrained(base).save_pretrained(temp)
    except (OSError, ValueError):
        pass  # a base folder without a tokenizer: the server keeps its own
    shutil.rmtree(out, ignore_errors=True)
    os.replace(temp, out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the base model's HF folder")
    parser.add_argument("--adapter", required=True, help="a peft adapter folder (adapter_config.json, adapter_model.safetensors)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    for name in ("base", "adapter"):
        if not os.path.isdir(getattr(args, name)):
            parser.error(f"--{name} {getattr(args, name)} is not a folder")
    merge(args.base, args.adapter, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
