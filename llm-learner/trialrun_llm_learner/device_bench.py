"""Update tokens per second of the learner's own step on each device, for the same batch.

`python -m trialrun_llm_learner.device_bench (--gguf FILE | --config config.json) [--devices cpu,cuda,cuda-tf32]
[--rows 8 --sequence-tokens 1024 --sampled-tokens 192 --rounds 3 --out result.json]`;
`... --gguf FILE --write-config config.json` writes the GGUF's architecture for `--config` elsewhere.

Each side is a `Trainer` (the learner's LoRA adapter, AdamW, clipped objective) on a copy of the same base model,
given the same rows; one `Trainer.update` per side per round, the sides' order rotated each round after one
uncounted warm-up round. `cuda-tf32` is `cuda` with float32 matrix products in TF32 (what `--device cuda` would
gain from `torch.set_float32_matmul_precision('high')`). Figures are trained (sampled) tokens per second, the
learner's `tokens`, and sequence tokens per second (every token the forward and backward passes see).

With `--config` (a machine without the GGUF, such as a GPU box that reaches no registry) the base model has the
served model's architecture with random weights: the arithmetic of an update does not depend on the values.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from typing import Callable

import torch

from .batch import BatchRows, Row
from .options import LearnerOptions
from .trainer import Trainer, load_base_model

SIDES = ("cpu", "cuda", "cuda-tf32")


def synthetic_rows(count: int, sequence_tokens: int, sampled_tokens: int, vocab: int, seed: int, shared_tokens: int = 0) -> BatchRows:
    """
    `count` sequences shaped like an episode's sample: a prompt, then `sampled_tokens` trained tokens at the end;
    the first `shared_tokens` are the same in every row, as a GRPO group's members share their first prompt.
    """
    if not 0 < sampled_tokens < sequence_tokens:
        raise ValueError(f"--sampled-tokens must be within 1..{sequence_tokens - 1}, got {sampled_tokens}")
    if not 0 <= shared_tokens <= sequence_tokens - sampled_tokens:
        raise ValueError(f"--shared-prompt-tokens must be within 0..{sequence_tokens - sampled_tokens} (the untrained part), got {shared_tokens}")
    generator = torch.Generator().manual_seed(seed)
    shared = torch.randint(0, vocab, (shared_tokens,), generator=generator).tolist()
    rows = []
    prompt = sequence_tokens - sampled_tokens
    for i in range(count):
        ids = shared + torch.randint(0, vocab, (sequence_tokens - shared_tokens,), generator=generator).tolist()
        mask = [0.0] * (prompt - 1) + [1.0] * sampled_tokens
        # A near-uniform model's logprob, so the ratios start near 1 as they do on-policy.
        behaviour = [(-torch.log(torch.tensor(float(vocab))).item() if m else 0.0) for m in mask]
        rows.append(Row(ids=ids, mask=mask, behaviour_logprobs=behaviour, off_policy=[False] * len(mask), advantage=1.0 if i % 2 == 0 else -1.0))
    return BatchRows(rows=rows, turns=count)


def write_config(gguf: str, path: str) -> None:
    """The GGUF's architecture as a transformers config.json (no weights): what `--config` builds on a machine without the GGUF."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(os.path.dirname(os.path.abspath(gguf)), gguf_file=os.path.basename(gguf)).to_dict()
    # The file describes float32 weights built from scratch, not the GGUF's quantization.
    config.pop("quantization_config", None)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(config, handle, indent=1)


def base_from(args: argparse.Namespace) -> tuple[torch.nn.Module, str]:
    if args.gguf:
        return load_base_model(args.gguf, torch.device("cpu")), f"the GGUF's weights ({os.path.basename(args.gguf)}), float32"
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(args.seed)
    config = AutoConfig.from_pretrained(os.path.dirname(os.path.abspath(args.config)))
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32), "random weights of the served architecture (throughput only)"


def timed_update(trainer: Trainer, rows: BatchRows, tf32: bool) -> float:
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    trainer.update(rows)
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m trialrun_llm_learner.device_bench", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--gguf", help="the served GGUF: its config and weights")
    source.add_argument("--config", help="a transformers config.json of the served model (random weights)")
    parser.add_argument("--devices", default=",".join(SIDES), help=f"comma-separated sides among {', '.join(SIDES)}")
    parser.add_argument("--rows", type=int, default=8, help="sequences in the batch (the learner's batch of samples)")
    parser.add_argument("--sequence-tokens", type=int, default=1024, help="tokens per sequence (the learner's --max-sequence-tokens default)")
    parser.add_argument("--sampled-tokens", type=int, default=192, help="trained tokens per sequence")
    parser.add_argument("--shared-prompt-tokens", type=int, default=0, help="leading tokens every row shares (a GRPO group's first prompt)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's choice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="", help="also write the figures here as JSON")
    parser.add_argument("--write-config", default="", help="with --gguf: write its transformers config.json here (for --config on another machine) and exit")
    args = parser.parse_args(argv)
    if args.write_config:
        if not args.gguf:
            parser.error("--write-config needs --gguf: the config is read from the GGUF's metadata")
        write_config(args.gguf, args.write_config)
        return 0
    sides = [s.strip() for s in args.devices.split(",") if s.strip()]
    unknown = [s for s in sides if s not in SIDES]
    if unknown or not sides:
        parser.error(f"--devices: unknown side(s) {unknown}; choose among {', '.join(SIDES)}")
    if any(s.startswith("cuda") for s in sides) and not torch.cuda.is_available():
        parser.error("--devices names cuda, but torch sees no CUDA device here")
    if args.rounds < 3:
        parser.error(f"--rounds must be at least 3, got {args.rounds}")
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    base, weights = base_from(args)
    rows = synthetic_rows(args.rows, args.sequence_tokens, args.sampled_tokens, base.config.vocab_size, args.seed, args.shared_prompt_tokens)
    trained = sum(row.tokens for row in rows.rows)
    sequence = sum(len(row.ids) for row in rows.rows)
    options = LearnerOptions(gguf="unused", checkpoints="unused", seed=args.seed)
    trainers: dict[str, Trainer] = {}
    for side in sides:
        device = "cpu" if side == "cpu" else "cuda"
        trainers[side] = Trainer(dataclasses.replace(options, device=device), base=copy.deepcopy(base).to(device))
    run: dict[str, Callable[[], float]] = {side: (lambda side=side: timed_update(trainers[side], rows, side == "cuda-tf32")) for side in sides}

    environment = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpuThreads": torch.get_num_threads(),
        "cpuCount": os.cpu_count(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "loadAverage": os.getloadavg()[0],
    }
    print(f"# {weights}; {base.config.num_hidden_layers} layers, hidden {base.config.hidden_size}, vocab {base.config.vocab_size}; LoRA r={options.lora_r} on {','.join(options.lora_targets)}", flush=True)
    print(f"# batch: {args.rows} rows x {args.sequence_tokens} tokens ({args.shared_prompt_tokens} shared), {trained} trained tokens; {json.dumps(environment)}", flush=True)
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    for round_index in range(args.rounds + 1):
        shift = round_index % len(sides)
        order = sides[shift:] + sides[:shift]
        for side in order:
            elapsed = run[side]()
            if round_index > 0:
                seconds[side].append(elapsed)
            print(f"# round {round_index}{' (warm-up)' if round_index == 0 else ''} {side}: {elapsed:.3f} s, {trained / elapsed:.0f} trained tokens/s", flush=True)

    figures = {}
    for side in sides:
        rates = [trained / s for s in seconds[side]]
        figures[side] = {
            "secondsPerUpdate": {"min": min(seconds[side]), "median": statistics.median(seconds[side]), "max": max(seconds[side])},
            "trainedTokensPerSecond": {"min": min(rates), "median": statistics.median(rates), "max": max(rates)},
            "sequenceTokensPerSecond": statistics.median(sequence / s for s in seconds[side]),
        }
    print("side        s/update (median)   trained tok/s min / median / max     sequence tok/s   x cpu")
    cpu_median = figures["cpu"]["trainedTokensPerSecond"]["median"] if "cpu" in figures else None
    for side, f in figures.items():
        rate = f["trainedTokensPerSecond"]
        ratio = f"{rate['median'] / cpu_median:.1f}x" if cpu_median else "-"
        print(f"{side:<11} {f['secondsPerUpdate']['median']:>10.3f}        {rate['min']:>9.0f} / {rate['median']:>9.0f} / {rate['max']:>9.0f}   {f['sequenceTokensPerSecond']:>12.0f}   {ratio}")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"weights": weights, "rows": args.rows, "sequenceTokens": args.sequence_tokens, "sharedPromptTokens": args.shared_prompt_tokens, "trainedTokens": trained, "rounds": args.rounds, "environment": environment, "sides": figures}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
