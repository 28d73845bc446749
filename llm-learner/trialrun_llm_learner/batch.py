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
    #: The outcome's advantage: what the sample's last model turn earns.
    advantage: float
    #: The entry from which the trajectory's last model turn runs (len(mask) when it is in a later sample).
    last_turn_from: int = 0
    #: What the tokens of earlier turns earn where each was a choice that failed and was undone; None: `advantage`.
    earlier_advantage: Optional[float] = None

    @property
    def tokens(self) -> int:
        return int(sum(self.mask))

    def trained_entries(self) -> list[int]:
        """The entries whose token is trained (mask > 0): the only ones whose logprob the objective reads."""
        return [j for j, m in enumerate(self.mask) if m > 0]

    def advantages(self) -> list[float]:
        """The advantage of each entry: earlier turns' entries get `earlier_advantage` where it is set."""
        if self.earlier_advantage is None:
            return [self.advantage] * len(self.mask)
        earlier = min(self.last_turn_from, len(self.mask))
        return [self.earlier_advantage] * earlier + [self.advantage] * (len(self.mask) - earlier)


@dataclass
class BatchRows:
    rows: list[Row] = field(default_factory=list)
    #: Model turns in the batch.
    turns: int = 0
    #: Turns dropped because their version lagged the learner by more than the bound.
    stale_turns: int = 0
    #: Sampled tokens past max_sequence_tokens, not trained on.
    cut_tokens: int = 0


def failure_advantage(reward: float, advantage: float, group_mean: float) -> float:
    """
    The advantage reward 0 had in a reward's group, from the reward's own (the twin of `failureAdvantage` in
    pipelines/reward/advantages.ts): advantages are (r - mean) / (std + eps), so a failure's is the reward's
    scaled by (0 - mean) / (r - mean). A reward equal to its group's mean has no signal.
    """
    if reward == 0:
        return advantage
    if reward == group_mean:
        return 0.0
    return advantage * (0 - group_mean) / (reward - group_mean)


def last_turn_start(completion_mask: Sequence[int]) -> int:
    """Where the last model turn's tokens begin in a sample's completion: the start of its last run of sampled tokens."""
    start = len(completion_mask)
    for j in range(len(completion_mask) - 1, -1, -1):
        if completion_mask[j] == 1:
            start = j
        elif start < len(completion_mask):
            break
    return start


def build_rows(
    samples: Sequence[TrainingSample],
    advantage: float,
    *,
    fallback_version: int,
    current_version: int,
    max_staleness: int,
    max_sequence_tokens: int,
    earlier_advantage: Optional[float] = None,
    into: Optional[BatchRows] = None,
) -> BatchRows:
    """
    Adds a trajectory's samples to `into`. A token's version is its turn's (`completionPolicyVersions`), or the
    trajectory's where the turn recorded none (-1). A turn lagging the learner by more than `max_staleness` is
    dropped: its tokens get mask 0. One lagging by less is off-policy (truncated importance weight). With
    `earlier_advantage`, every model turn but the trajectory's last earns it instead of `advantage`.
    """
    out = into if into is not None else BatchRows()
    for index, sample in enumerate(samples):
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
        # Entry prompt - 1 + j is about completion token j; a sample before the trajectory's last holds earlier turns only.
        last_from = prompt - 1 + last_turn_start(sample.completion_mask) if index == len(samples) - 1 else len(mask)
        out.rows.append(Row(ids=ids, mask=mask, behaviour_logprobs=behaviour, off_policy=off, advantage=advantage, last_turn_from=last_from, earlier_advantage=earlier_advantage))
    return out


def shared_prefixes(rows: Sequence[Row], min_tokens: int = 64) -> list[tuple[int, list[int]]]:
    """
    The rows as groups that share their start, each with the number of leading tokens all its rows share and no
    row trains on (a group's members share their first prompt): a forward pass can run those once for the group.
    Rows that share fewer than `min_tokens` with any other stand alone, with 0. Every row is in one group, in order.
    """
    by_start: dict[tuple[int, ...], list[int]] = {}
    for i, row in enumerate(rows):
        by_start.setdefault(tuple(row.ids[:min_tokens]), []).append(i)
    groups: list[tuple[int, list[int]]] = []
    for members in by_start.values():
        shared = 0
        if len(members) > 1 and len(rows[members[0]].ids) >= min_tokens:
            first = rows[members[0]].ids
            shared = min(len(rows[i].ids) for i in members)
            for i in members[1:]:
                ids = rows[i].ids
                shared = next((k for k in range(min(shared, len(ids))) if ids[k] != first[k]), min(shared, len(ids)))
            # Entry j is about token j + 1 from the hidden state of token j: every trained entry stays outside the prefix.
            shared = min([shared] + [min(rows[i].trained_entries(), default=len(rows[i].ids)) for i in members])
        if shared >= min_tokens:
            groups.append((shared, members))
        else:
            groups.extend((0, [i]) for i in members)
    return sorted(groups, key=lambda group: group[1][0])

