"""From joined samples (training samples + their reward's advantage) to the per-token rows the objective takes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .samples import TrainingSample


@dataclass
class Row:
    """One sequence to score. Every list but `ids` has len(ids) - 1 entries: entry j is about token ids[j + 1]."""

    ids: list[int]
    mask: list[float]
    behaviour_logprobs: list[float]
    off_policy: list[bool]
    advantage: float

    @property
    def tokens(self) -> int:
        return int(sum(self.mask))


@dataclass
class BatchRows:
    rows: list[Row] = field(default_factory=list)
    #: Model turns in the batch.
    turns: int = 0
    #: Turns dropped because their version lagged the learner by more than the bound.
    stale_turns: int = 0
    #: Sampled tokens past max_sequence_tokens, not trained on.
    cut_tokens: int = 0


def build_rows(
    samples: Sequence[TrainingSample],
    advantage: float,
    *,
    fallback_version: int,
    current_version: int,
    max_staleness: int,
    max_sequence_tokens: int,
    into: Optional[BatchRows] = None,
) -> BatchRows:
    """
    Adds a trajectory's samples to `into`. A token's version is its turn's (`completionPolicyVersions`), or the
    trajectory's where the turn recorded none (-1). A turn lagging the learner by more than `max_staleness` is
    dropped: its tokens get mask 0. One lagging by less is off-policy (truncated importance weight).
    """
    out = into if into is not None else BatchRows()
    for sample in samples:
        turn_lags = [current_version - (v if v is not None else fallback_version) for v in sample.turn_policy_versions]
        out.turns += len(turn_lags)
        out.stale_turns += sum(1 for lag in turn_lags if lag > max_staleness)
        ids = sample.prompt_ids + sample.completion_ids
        prompt = len(sample.prompt_ids)
        if prompt == 0 or len(ids) < 2:
            continue
        mask: list[float] = [0.0] * (prompt - 1)
        off: list[bool] = [False] * (prompt - 1)
        behaviour: list[float] = [0.0] * (prompt - 1)
        for sampled, logprob, version in zip(sample.completion_mask, sample.completion_logprobs, sample.completion_policy_versions):
            lag = current_version - (version if version >= 0 else fallback_version)
            # A token the engine gave no finite logprob for has no ratio to take: it is not trained on.
            trained = sampled == 1 and lag <= max_staleness and math.isfinite(logprob)
            mask.append(1.0 if trained else 0.0)
            off.append(trained and lag != 0)
            behaviour.append(float(logprob) if trained else 0.0)
        if len(ids) > max_sequence_tokens:
            out.cut_tokens += int(sum(mask[max_sequence_tokens - 1 :]))
            ids = ids[:max_sequence_tokens]
            mask, off, behaviour = mask[: max_sequence_tokens - 1], off[: max_sequence_tokens - 1], behaviour[: max_sequence_tokens - 1]
        if sum(mask) == 0:
            continue
        out.rows.append(Row(ids=ids, mask=mask, behaviour_logprobs=behaviour, off_policy=off, advantage=advantage))
    return out
