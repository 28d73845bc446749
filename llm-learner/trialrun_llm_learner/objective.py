"""The token-level clipped policy-gradient objective (GRPO / PPO-clip) with truncated importance weights.

On-policy tokens (sampled by the learner's current version) are the PPO case: the ratio is the trained policy
over the behaviour policy, whose logprobs the engine recorded. Off-policy tokens (sampled by an older version,
within the staleness bound) follow decoupled PPO: the ratio is taken against the proximal policy (the current
version before this update, detached), so the clip bounds the step from where the learner is, and the
proximal/behaviour mismatch becomes an importance weight, truncated at `max_importance_weight` so a token the
old policy found unlikely cannot dominate the batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class ObjectiveSums:
    """Sums over the tokens of one call; the caller adds them up over a batch and divides by `tokens`."""

    loss: torch.Tensor
    tokens: float
    clipped: float
    kl: float
    off_policy: float
    truncated_weights: float
    ratio: float


def clipped_policy_loss(
    logprobs: torch.Tensor,
    behaviour_logprobs: torch.Tensor,
    proximal_logprobs: torch.Tensor,
    off_policy: torch.Tensor,
    mask: torch.Tensor,
    advantages: torch.Tensor,
    *,
    clip_low: float,
    clip_high: float,
    max_importance_weight: float,
    reference_logprobs: Optional[torch.Tensor] = None,
    kl_coef: float = 0.0,
) -> ObjectiveSums:
    """
    Per token t with mask m_t (1 for a sampled token still trained on), advantage A_t:
      anchor_t = behaviour_t on-policy, proximal_t off-policy;   r_t = exp(logprob_t - anchor_t)
      w_t      = 1 on-policy, min(exp(proximal_t - behaviour_t), max_importance_weight) off-policy (no gradient)
      loss_t   = -w_t * min(r_t A_t, clip(r_t, 1 - clip_low, 1 + clip_high) A_t) + kl_coef * k3_t
    where k3_t = exp(ref_t - logprob_t) - (ref_t - logprob_t) - 1 (Schulman's unbiased, positive KL estimator).
    Returns the masked sum of loss_t and the counts behind the checkpoint's metrics.
    """
    mask = mask.to(logprobs.dtype)
    off = off_policy.to(torch.bool)
    proximal = proximal_logprobs.detach()
    anchor = torch.where(off, proximal, behaviour_logprobs)
    ratio = torch.exp(logprobs - anchor)
    raw_weight = torch.exp(proximal - behaviour_logprobs)
    weight = torch.where(off, torch.clamp(raw_weight, max=max_importance_weight), torch.ones_like(raw_weight)).detach()
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * advantages
    per_token = -weight * torch.minimum(unclipped, clipped)
    kl_sum = 0.0
    if reference_logprobs is not None and kl_coef > 0:
        delta = reference_logprobs.detach() - logprobs
        k3 = torch.exp(delta) - delta - 1
        per_token = per_token + kl_coef * k3
        kl_sum = float((k3 * mask).sum().detach())
    # The clip is active where it removes the gradient: above the range for a positive advantage, below for a negative one.
    clip_active = ((ratio > 1 + clip_high) & (advantages > 0)) | ((ratio < 1 - clip_low) & (advantages < 0))
    return ObjectiveSums(
        loss=(per_token * mask).sum(),
        tokens=float(mask.sum()),
        clipped=float((clip_active.to(mask.dtype) * mask).sum()),
        kl=kl_sum,
        off_policy=float((off.to(mask.dtype) * mask).sum()),
        truncated_weights=float(((raw_weight > max_importance_weight) & off).to(mask.dtype).mul(mask).sum()),
        ratio=float((ratio.detach() * mask).sum()),
    )


def token_logprobs(logits: torch.Tensor, ids: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """log p(ids[t] | ids[:t]) for t = 1..n-1, from logits of shape (n, vocab) over the same sequence."""
    return chosen_logprobs(logits[:-1], ids[1:], temperature)


def chosen_logprobs(logits: torch.Tensor, chosen: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """log p(chosen[k]) under logits[k] (shape (k, vocab)), the logits divided by `temperature` first."""
    return torch.log_softmax(logits.float() / temperature, dim=-1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
