import math

import pytest
import torch

from trialrun_llm_learner.objective import clipped_policy_loss, token_logprobs

KW = dict(clip_low=0.2, clip_high=0.2, max_importance_weight=2.0)


def t(*values):
    return torch.tensor(values, dtype=torch.float64)


def test_on_policy_tokens_take_the_ratio_against_the_engine_logprobs_and_clip_in_the_direction_of_the_advantage():
    behaviour = t(math.log(0.5), math.log(0.5), math.log(0.5), math.log(0.5))
    # ratios 1.0, 1.5, 0.5, 1.1
    new = torch.log(t(0.5, 0.75, 0.25, 0.55)).requires_grad_()
    advantages = t(1.0, 1.0, -1.0, -1.0)
    sums = clipped_policy_loss(new, behaviour, new.detach(), torch.zeros(4, dtype=torch.bool), t(1, 1, 1, 1), advantages, **KW)
    # min(r A, clip(r) A): 1*1, min(1.5, 1.2)=1.2, min(-0.5, -0.8)=-0.8, min(-1.1, -1.1)=-1.1
    assert float(sums.loss.detach()) == pytest.approx(-(1.0 + 1.2 - 0.8 - 1.1))
    assert sums.tokens == 4 and sums.off_policy == 0
    assert sums.clipped == 2, "token 2 (r 1.5, A > 0) and token 3 (r 0.5, A < 0) are clipped"
    sums.loss.backward()
    # Clipped tokens get no gradient; the others d(-r A)/d logprob = -r A.
    assert new.grad.tolist() == pytest.approx([-1.0, 0.0, 0.0, 1.1])


def test_masked_tokens_count_for_nothing():
    behaviour = t(-1.0, -1.0)
    new = t(-0.5, -3.0).requires_grad_()
    sums = clipped_policy_loss(new, behaviour, new.detach(), torch.zeros(2, dtype=torch.bool), t(1, 0), t(1.0, 1.0), **KW)
    assert float(sums.loss.detach()) == pytest.approx(-min(math.exp(0.5), 1.2))
    assert sums.tokens == 1
    sums.loss.backward()
    assert new.grad[1] == 0


def test_off_policy_tokens_clip_against_the_proximal_policy_with_a_truncated_importance_weight():
    behaviour = t(math.log(0.1), math.log(0.4))
    proximal = t(math.log(0.5), math.log(0.5))  # weights 5 (truncated to 2) and 1.25
    new = torch.log(t(0.5, 0.5)).requires_grad_()
    sums = clipped_policy_loss(new, behaviour, proximal, torch.ones(2, dtype=torch.bool), t(1, 1), t(1.0, 1.0), **KW)
    # ratio to the proximal policy is 1: loss = -(2 * 1 + 1.25 * 1)
    assert float(sums.loss.detach()) == pytest.approx(-3.25)
    assert sums.off_policy == 2 and sums.truncated_weights == 1
    sums.loss.backward()
    assert new.grad.tolist() == pytest.approx([-2.0, -1.25])


def test_the_kl_term_is_the_k3_estimate_to_the_reference_and_zero_at_the_reference():
    behaviour = t(-1.0, -1.0)
    new = t(-1.0, -1.0).requires_grad_()
    reference = t(-1.0, -2.0)
    sums = clipped_policy_loss(new, behaviour, new.detach(), torch.zeros(2, dtype=torch.bool), t(1, 1), t(0.0, 0.0), reference_logprobs=reference, kl_coef=0.5, **KW)
    k3 = math.exp(-1.0) - (-1.0) - 1
    assert sums.kl == pytest.approx(k3)
    assert float(sums.loss.detach()) == pytest.approx(0.5 * k3)


def test_token_logprobs_are_the_log_softmax_of_the_previous_position():
    logits = torch.tensor([[0.0, math.log(3.0)], [math.log(3.0), 0.0], [0.0, 0.0]])
    ids = torch.tensor([0, 1, 0])
    assert token_logprobs(logits, ids).tolist() == pytest.approx([math.log(0.75), math.log(0.75)])
    assert token_logprobs(logits, ids, temperature=2.0)[0].item() == pytest.approx(math.log(math.sqrt(3) / (1 + math.sqrt(3))))
