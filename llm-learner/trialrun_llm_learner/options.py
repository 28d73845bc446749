"""The learner's options: one dataclass, every field with its default, checked once at start."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Sequence

#: The projections LoRA adapts by default: every attention and MLP projection of a Llama-style block.
DEFAULT_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class OptionsError(ValueError):
    """A bad option or a bad combination of options: the learner stops before touching Kafka or the model."""


@dataclass(frozen=True)
class LearnerOptions:
    """Everything the learner is told. Defaults are the values a plain `trialrun run llm-learner` uses."""

    # Where things are.
    #: The GGUF file the model server serves (the weights trained are the weights sampled). Required.
    gguf: str = ""
    #: The checkpoint store (cli/paths.ts checkpointsLocation): a local folder the learner writes, or, with
    #: checkpoint_channel_fd, the launcher's store (s3://...), which the learner reaches only through it. Required.
    checkpoints: str = ""
    #: The descriptor of the launcher's checkpoint channel (store_channel.py); 0: none, the learner writes `checkpoints` itself.
    checkpoint_channel_fd: int = 0
    #: Kafka bootstrap servers, comma-separated.
    brokers: str = "localhost:9092"
    #: The schema registry's Confluent-compatible API (the stack's Apicurio).
    registry_url: str = "http://localhost:8081/apis/ccompat/v7"
    #: Prepended to every topic name (TRIALRUN_TOPIC_PREFIX).
    topic_prefix: str = "trialrun."
    #: Where the GGUF's dequantised float32 weights are kept after the first load (by its sha256); "" never caches.
    model_cache: str = os.path.join(os.path.expanduser("~"), ".cache", "trialrun", "llm-learner-models")
    #: The model name the server answers to, written into each artifact's metadata.
    base_model: str = "smollm2-135m-instruct"
    #: The policy trained: only its trajectories are learned from; the checkpoint record's key.
    policy_id: str = "llm"
    #: Stamped on checkpoint lineage.
    run_id: str = "llm-learner"

    # The update.
    #: Trajectories (joined with their reward) per update.
    batch_size: int = 4
    #: A model turn whose policy version lags the learner's by more than this is dropped (counted in staleDropped).
    max_staleness: int = 4
    #: AdamW step size (LoRA wants roughly ten times a full fine-tune's).
    learning_rate: float = 1e-4
    #: AdamW decoupled weight decay.
    weight_decay: float = 0.0
    #: PPO-clip range below 1: the ratio is clipped to [1 - clip_low, 1 + clip_high].
    clip_low: float = 0.2
    #: PPO-clip range above 1 (DAPO's "clip higher" sets it above clip_low).
    clip_high: float = 0.2
    #: Cap of the importance weight of off-policy tokens (truncated importance sampling).
    max_importance_weight: float = 2.0
    #: Coefficient of the KL penalty to the base model (the adapter disabled); 0 skips the reference pass.
    kl_coef: float = 0.0
    #: Gradient-norm clipping threshold.
    max_grad_norm: float = 1.0
    #: Optimizer steps per batch (PPO epochs); after the first, the clip keeps the update near the behaviour policy.
    epochs: int = 1
    #: Each model turn before a trajectory's last was a choice that failed and was undone (the repair script's edit
    #: choices): it earns the advantage a failure had in its group, not the outcome's, which only the last earned.
    earlier_turns_failed: bool = False
    #: Logits are divided by this before the logprobs: the temperature the engine recorded its logprobs at (the loop passes
    #: the policy's sampling temperature; llama.cpp records each token's probability under logits / temperature).
    temperature: float = 1.0
    #: Tokens of one sample (prompt + completion) kept; the rest of a longer sample is not trained on.
    max_sequence_tokens: int = 1024
    #: LoRA rank.
    lora_r: int = 8
    #: LoRA scale numerator (the adapter is scaled by lora_alpha / lora_r).
    lora_alpha: float = 16.0
    #: Dropout on the LoRA input.
    lora_dropout: float = 0.0
    #: Module names LoRA adapts.
    lora_targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    #: Seeds the adapter's initialisation and dropout.
    seed: int = 0
    #: 'cpu', 'cuda' or 'auto' (cuda when available).
    device: str = "cpu"
    #: torch's intra-op threads; 0 keeps torch's own choice.
    threads: int = 0

    # Kafka.
    #: How long the group waits for a silent (killed) learner before its partitions move on.
    session_timeout_ms: int = 45_000
    #: Records consumed per transaction when no update is due.
    max_records_per_transaction: int = 50
    #: Exit once this many checkpoints were published by this process (0: run until SIGTERM/SIGINT).
    max_updates: int = 0

    def validate(self) -> "LearnerOptions":
        """Returns self, or raises OptionsError naming the first bad option."""
        problems: list[str] = []

        def need(ok: bool, message: str) -> None:
            if not ok:
                problems.append(message)

        need(self.gguf != "", "gguf: the GGUF file the model server serves is required")
        need(self.gguf == "" or os.path.isfile(self.gguf), f"gguf: {self.gguf!r} is not a file")
        need(self.checkpoints != "", "checkpoints: the checkpoint store's root folder is required")
        need(self.checkpoint_channel_fd == 0 or self.checkpoint_channel_fd >= 3, f"checkpoint_channel_fd must be 0 (none) or a descriptor >= 3, got {self.checkpoint_channel_fd}")
        need(
            self.checkpoint_channel_fd != 0 or re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", self.checkpoints) is None,
            f"checkpoints: {self.checkpoints!r} is not a local folder; the learner publishes there only through its launcher (trialrun run llm-learner), which passes --checkpoint-channel-fd",
        )
        need(re.fullmatch(r"[A-Za-z0-9._-]+", self.topic_prefix) is not None, f"topic_prefix: {self.topic_prefix!r} may only hold letters, digits, '.', '_' and '-' (and not be empty)")
        need(re.fullmatch(r"[a-z0-9][a-z0-9._-]*", self.policy_id) is not None, f"policy_id: {self.policy_id!r} is not usable as a checkpoint folder name")
        need(self.run_id != "", "run_id must not be empty")
        need(re.match(r"https?://", self.registry_url) is not None, f"registry_url: {self.registry_url!r} is not an http(s) URL")
        need(all(re.fullmatch(r"[^\s,:]+:\d{1,5}", b.strip()) for b in self.brokers.split(",")), f"brokers: {self.brokers!r} is not a comma-separated list of host:port")
        need(self.batch_size >= 1, f"batch_size must be >= 1, got {self.batch_size}")
        need(self.max_staleness >= 0, f"max_staleness must be >= 0, got {self.max_staleness}")
        need(self.learning_rate > 0, f"learning_rate must be > 0, got {self.learning_rate}")
        need(self.weight_decay >= 0, f"weight_decay must be >= 0, got {self.weight_decay}")
        need(0 < self.clip_low < 1, f"clip_low must be within (0, 1), got {self.clip_low}")
        need(self.clip_high > 0, f"clip_high must be > 0, got {self.clip_high}")
        need(self.max_importance_weight >= 1, f"max_importance_weight must be >= 1 (a cap below 1 would down-weight on-policy tokens too), got {self.max_importance_weight}")
        need(self.kl_coef >= 0, f"kl_coef must be >= 0, got {self.kl_coef}")
        need(self.max_grad_norm > 0, f"max_grad_norm must be > 0, got {self.max_grad_norm}")
        need(self.epochs >= 1, f"epochs must be >= 1, got {self.epochs}")
        need(self.temperature > 0, f"temperature must be > 0, got {self.temperature}")
        need(self.max_sequence_tokens >= 2, f"max_sequence_tokens must be >= 2, got {self.max_sequence_tokens}")
        need(self.lora_r >= 1, f"lora_r must be >= 1, got {self.lora_r}")
        need(self.lora_alpha > 0, f"lora_alpha must be > 0, got {self.lora_alpha}")
        need(0 <= self.lora_dropout < 1, f"lora_dropout must be within [0, 1), got {self.lora_dropout}")
        need(len(self.lora_targets) > 0 and all(t for t in self.lora_targets), "lora_targets must name at least one module")
        need(self.device in ("cpu", "cuda", "auto"), f"device must be cpu, cuda or auto, got {self.device!r}")
        need(self.threads >= 0, f"threads must be >= 0, got {self.threads}")
        need(self.session_timeout_ms >= 6000, f"session_timeout_ms must be >= 6000 (the broker's group.min.session.timeout.ms), got {self.session_timeout_ms}")
        need(self.max_records_per_transaction >= 1, f"max_records_per_transaction must be >= 1, got {self.max_records_per_transaction}")
        need(self.max_updates >= 0, f"max_updates must be >= 0, got {self.max_updates}")
        # Combinations.
        need(not (self.epochs > 1 and self.lora_dropout > 0), "epochs > 1 with lora_dropout > 0: the ratio of later epochs would compare two different dropout masks, not two policies")
        if problems:
            raise OptionsError("; ".join(problems))
        return self

    @property
    def consumer_group(self) -> str:
        return f"{self.topic_prefix}llm-learner"

    @property
    def transactional_id(self) -> str:
        # One learner per prefix (its stores are not split by partition): a second one started fences the first.
        return f"{self.consumer_group}-0"

    def topic(self, logical: str) -> str:
        """The physical name of a catalog topic (schemas/topics.ts TOPICS[...].name)."""
        return f"{self.topic_prefix}{logical}"

    def changelog(self, store: str) -> str:
        """A state store's changelog topic, named as the TypeScript processors name theirs."""
        return f"{self.topic_prefix}llm-learner.{store}.changelog"


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse_args(argv: Sequence[str]) -> LearnerOptions:
    """Command-line flags, one per field (`--batch-size 4`, `--lora-targets q_proj,v_proj`), validated."""
    parser = argparse.ArgumentParser(prog="python -m trialrun_llm_learner", description="trialrun's LLM learner (see llm-learner/README.md)")
    defaults = LearnerOptions()
    for f in dataclasses.fields(LearnerOptions):
        default = getattr(defaults, f.name)
        if isinstance(default, bool):
            parser.add_argument(_flag(f.name), dest=f.name, action=argparse.BooleanOptionalAction, default=default, help=f"(default {default!r})")
        elif isinstance(default, tuple):
            parser.add_argument(_flag(f.name), dest=f.name, default=",".join(default), help=f"comma-separated (default {','.join(default)})")
        else:
            parser.add_argument(_flag(f.name), dest=f.name, type=type(default), default=default, help=f"(default {default!r})")
    args = parser.parse_args(list(argv))
    values = vars(args)
    values["lora_targets"] = tuple(t.strip() for t in values["lora_targets"].split(",") if t.strip())
    return LearnerOptions(**values).validate()


