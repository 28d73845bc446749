"""The model side: the served GGUF loaded through transformers, a LoRA adapter (peft) on it, AdamW, one update per batch."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from typing import Any, Optional

import torch

from .batch import BatchRows, Row, shared_prefixes
from .objective import ObjectiveSums, chosen_logprobs, clipped_policy_loss
from .options import LearnerOptions


def resolve_device(choice: str) -> torch.device:
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device cuda: torch sees no CUDA device here (use --device cpu or auto)")
    return torch.device(choice)


def load_base_model(gguf: str, device: torch.device, cache_dir: str = "", gguf_sha256: str = "") -> torch.nn.Module:
    """
    The GGUF the server serves, dequantised to float32 by transformers, so the policy trained is the one sampled.
    Dequantising takes minutes on a busy CPU: with `cache_dir`, the float32 weights are also saved there once,
    under the GGUF's sha256, and loaded from there on later starts (the same weights, read in seconds).
    """
    from safetensors.torch import load_model, save_model
    from transformers import AutoConfig, AutoModelForCausalLM

    cached = os.path.join(cache_dir, gguf_sha256) if cache_dir and gguf_sha256 else ""
    if cached and os.path.isfile(os.path.join(cached, "model.safetensors")):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(cached), dtype=torch.float32)
        load_model(model, os.path.join(cached, "model.safetensors"))
        return model.to(device)
    folder, name = os.path.split(os.path.abspath(gguf))
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    if cached:
        # Written aside, then renamed: a learner killed meanwhile leaves no half-written copy to load. The
        # config loses its GGUF quantization entry: what is saved is the dequantised float32 weights.
        temp = f"{cached}.tmp-{os.getpid()}"
        os.makedirs(temp, exist_ok=True)
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        with open(os.path.join(temp, "config.json"), "w") as handle:
            json.dump(config, handle)
        save_model(model, os.path.join(temp, "model.safetensors"))
        try:
            os.rename(temp, cached)
        except OSError:
            shutil.rmtree(temp, ignore_errors=True)  # another learner saved it first
    return model.to(device)


def lora_config(options: LearnerOptions) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=options.lora_r,
        lora_alpha=options.lora_alpha,
        lora_dropout=options.lora_dropout,
        target_modules=list(options.lora_targets),
        bias="none",
        task_type="CAUSAL_LM",
    )


def peft_config_json(config: Any) -> str:
    """The LoraConfig as JSON (sets as sorted lists, enums as their values), for the artifact's metadata."""

    def plain(value: Any) -> Any:
        if isinstance(value, (set, frozenset)):
            return sorted(plain(v) for v in value)
        if hasattr(value, "value") and not isinstance(value, (str, int, float, bool)):
            return value.value
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return json.dumps(plain(config.to_dict()), sort_keys=True)


@dataclass
class UpdateResult:
    loss: float
    grad_norm: float
    tokens: int
    clip_fraction: float
    kl: float
    off_policy_tokens: int
    truncated_weights: int
    mean_ratio: float
    #: Optimizer steps skipped because the gradient was not finite.
    skipped_steps: int
    seconds: float


def forked(cache: Any) -> Any:
    """A cache holding `cache`'s keys and values, which a forward pass extends without touching `cache`."""
    from transformers import DynamicCache

    fork = DynamicCache()
    for index, layer in enumerate(cache.layers):
        fork.update(layer.keys, layer.values, index)
    return fork


def cache_tensors(cache: Any) -> list[torch.Tensor]:
    """A cache's keys and values, layer by layer."""
    return [tensor for layer in cache.layers for tensor in (layer.keys, layer.values)]


def detached_cache(cache: Any) -> tuple[list[torch.Tensor], list[torch.Tensor], Any]:
    """
    `cache`'s tensors; detached copies of them, leaves that collect the gradients of what runs on them; and a cache
    holding those copies (which may store them as tensors derived from the leaves: the gradients still reach them).
    """
    from transformers import DynamicCache

    computed = cache_tensors(cache)
    leaves = [tensor.detach().requires_grad_() for tensor in computed]
    copy = DynamicCache()
    for index in range(len(computed) // 2):
        copy.update(leaves[2 * index], leaves[2 * index + 1], index)
    return computed, leaves, copy


def finite(value: float) -> float:
    """Figures go into JSON records, which have no NaN or infinity: a non-finite one is reported as 0."""
    return value if math.isfinite(value) else 0.0


class Trainer:
    """A LoRA adapter on the base model, its AdamW state, and the update. Version 0 is the base (adapter B = 0)."""

    def __init__(self, options: LearnerOptions, base: Optional[torch.nn.Module] = None, gguf_sha256: str = ""):
        from peft import get_peft_model

        self.options = options
        if options.threads > 0:
            torch.set_num_threads(options.threads)
        self.device = resolve_device(options.device)
        torch.manual_seed(options.seed)
        self.config = lora_config(options)
        base_model = base if base is not None else load_base_model(options.gguf, self.device, options.model_cache, gguf_sha256)
        self.model = get_peft_model(base_model, self.config)
        self.parameters = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.parameters, lr=options.learning_rate, weight_decay=options.weight_decay)
        # The freshly initialised adapter: what version 0 (no checkpoint yet) restores to.
        self._initial = {k: v.detach().clone() for k, v in self.adapter_state().items()}

    @property
    def trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters)

    def adapter_state(self) -> dict[str, torch.Tensor]:
        from peft import get_peft_model_state_dict

        return {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in get_peft_model_state_dict(self.model, save_embedding_layers=False).items()}

    def load(self, adapter: Optional[dict[str, torch.Tensor]], optimizer_bytes: Optional[bytes]) -> None:
        """Back to a committed state: an adapter and optimizer state, or (None, None) for version 0."""
        from peft import set_peft_model_state_dict

        result = set_peft_model_state_dict(self.model, adapter if adapter is not None else self._initial)
        unexpected = getattr(result, "unexpected_keys", [])
        if unexpected:
            raise ValueError(f"the adapter has tensors this LoRA config lacks: {unexpected[:3]}")
        self.optimizer = torch.optim.AdamW(self.parameters, lr=self.options.learning_rate, weight_decay=self.options.weight_decay)
        if optimizer_bytes is not None:
            self.optimizer.load_state_dict(torch.load(io.BytesIO(optimizer_bytes), weights_only=True, map_location=self.device))

    def optimizer_bytes(self) -> bytes:
        buffer = io.BytesIO()
        torch.save(self.optimizer.state_dict(), buffer)
        return buffer.getvalue()

    def _logprobs(self, row: Row, entries: torch.Tensor, prefix: int = 0, cache: Any = None) -> torch.Tensor:
        """
        The logprob of the token each of `entries` is about (entry j: ids[j + 1]). The vocabulary projection runs
        at those positions only (`logits_to_keep`): a sample's trained tokens are a few dozen of its thousand,
        and projecting every position onto 49k words was a fifth of the update's arithmetic. With `cache`, the
        keys and values of the row's first `prefix` tokens (shared with other rows), only the rest is run.
        """
        ids = torch.tensor(row.ids, device=self.device)
        if cache is None:
            logits = self.model(input_ids=ids.unsqueeze(0), logits_to_keep=entries).logits[0]
        else:
            logits = self.model(input_ids=ids[prefix:].unsqueeze(0), cache=forked(cache), logits_to_keep=entries - prefix).logits[0]
        return chosen_logprobs(logits, ids[entries + 1], self.options.temperature)

    def update(self, batch: BatchRows) -> UpdateResult:
        """`epochs` AdamW steps on the token-mean objective over every trained token of the batch."""
        started = time.perf_counter()
        options = self.options
        total_tokens = sum(row.tokens for row in batch.rows)
        if total_tokens == 0:
            raise ValueError("a batch with no trainable tokens")
        self.model.train()
        proximal: list[Optional[torch.Tensor]] = [None] * len(batch.rows)
        reference: list[Optional[torch.Tensor]] = [None] * len(batch.rows)
        # Only trained entries reach the objective: every other one has mask 0, so the sums are the same.
        entries = [torch.tensor(row.trained_entries(), device=self.device) for row in batch.rows]
        if options.kl_coef > 0:
            with torch.no_grad(), self.model.disable_adapter():
                reference = [self._logprobs(row, entries[i]) for i, row in enumerate(batch.rows)]
        last: dict[str, float] = {}
        grad_norm = 0.0
        skipped = 0
        # A group's members share their first prompt: its forward and backward passes run once per group.
        groups = shared_prefixes(batch.rows)
        for _ in range(options.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            sums = {"loss": 0.0, "clipped": 0.0, "kl": 0.0, "off": 0.0, "truncated": 0.0, "ratio": 0.0}
            for prefix, members in groups:
                # Token-level mean over the whole batch (each row's share of it), its gradient accumulated row by row:
                # memory holds one row's activations and the group's prefix, not the group's (eight rows of 2000
                # tokens in one backward pass took 17.6 GB, and the learner was killed). Each row's backward pass
                # stops at the prefix's keys and values, whose gradients add up over the rows; one backward pass
                # through the prefix then carries their sum (the chain rule, exactly).
                computed, leaves, cache = self._shared_prefix(batch.rows[members[0]], prefix)
                for i in members:
                    self._row_loss(batch.rows, i, entries, proximal, reference, prefix, cache, total_tokens, sums).backward()
                reached = [(tensor, leaf.grad) for tensor, leaf in zip(computed, leaves) if leaf.grad is not None]
                if reached:
                    torch.autograd.backward([tensor for tensor, _ in reached], [grad for _, grad in reached])
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.parameters, options.max_grad_norm))
            last = sums
            if not math.isfinite(grad_norm):
                # One bad batch must not turn the adapter into NaNs: this step is skipped, and said so.
                self.optimizer.zero_grad(set_to_none=True)
                skipped += 1
                grad_norm = 0.0
                continue
            self.optimizer.step()
        self.model.eval()
        return UpdateResult(
            loss=finite(last["loss"] / total_tokens),
            grad_norm=grad_norm,
            tokens=total_tokens,
            clip_fraction=last["clipped"] / total_tokens,
            kl=finite(last["kl"] / total_tokens),
            off_policy_tokens=int(last["off"]),
            truncated_weights=int(last["truncated"]),
            mean_ratio=finite(last["ratio"] / total_tokens),
            skipped_steps=skipped,
            seconds=time.perf_counter() - started,
        )

    def _shared_prefix(self, row: Row, prefix: int) -> tuple[list[torch.Tensor], list[torch.Tensor], Any]:
        """The keys and values of `row`'s first `prefix` tokens (see detached_cache); nothing where no prefix is shared."""
        if prefix == 0:
            return [], [], None
        start = torch.tensor(row.ids[:prefix], device=self.device)
        return detached_cache(self.model(input_ids=start.unsqueeze(0), use_cache=True, logits_to_keep=1).past_key_values)

    def _row_loss(
        self,
        rows: list[Row],
        i: int,
        entries: list[torch.Tensor],
        proximal: list[Optional[torch.Tensor]],
        reference: list[Optional[torch.Tensor]],
        prefix: int,
        cache: Any,
        total_tokens: int,
        sums: dict[str, float],
    ) -> torch.Tensor:
        """Row `i`'s share of the objective (its first `prefix` tokens' keys and values are `cache`), its figures added to `sums`."""
        options = self.options
        row = rows[i]
        logprobs = self._logprobs(row, entries[i], prefix, cache)
        if proximal[i] is None:
            # The first epoch runs the current version: its logprobs are the proximal policy's.
            proximal[i] = logprobs.detach()
        at = lambda values: torch.tensor(values, device=self.device)[entries[i]]  # noqa: E731
        part: ObjectiveSums = clipped_policy_loss(
            logprobs,
            at(row.behaviour_logprobs),
            proximal[i],
            at(row.off_policy),
            at(row.mask),
            at(row.advantages()).to(logprobs.dtype),
            clip_low=options.clip_low,
            clip_high=options.clip_high,
            max_importance_weight=options.max_importance_weight,
            reference_logprobs=reference[i],
            kl_coef=options.kl_coef,
        )
        sums["loss"] += float(part.loss.detach())
        sums["clipped"] += part.clipped
        sums["kl"] += part.kl
        sums["off"] += part.off_policy
        sums["truncated"] += part.truncated_weights
        sums["ratio"] += part.ratio
        return part.loss / total_tokens
