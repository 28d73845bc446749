from trialrun_llm_learner.batch import Row, build_rows, failure_advantage, last_turn_start, shared_prefixes
from trialrun_llm_learner.samples import TrainingSample


def sample(versions, turn_versions):
    return TrainingSample(
        sample_index=0,
        prompt_ids=[1, 2],
        completion_ids=[10, 11, 3, 12],
        completion_mask=[1, 1, 0, 1],
        completion_logprobs=[-0.1, -0.2, 0.0, -0.3],
        completion_policy_versions=versions,
        turn_policy_versions=turn_versions,
        step_indices=[0, 1],
    )


def test_rows_align_every_list_to_the_token_it_predicts():
    rows = build_rows([sample([5, 5, -1, 5], [5, 5])], 0.5, fallback_version=0, current_version=5, max_staleness=1, max_sequence_tokens=64)
    [row] = rows.rows
    assert row.ids == [1, 2, 10, 11, 3, 12]
    assert row.mask == [0, 1, 1, 0, 1]
    assert row.behaviour_logprobs == [0, -0.1, -0.2, 0.0, -0.3]
    assert row.off_policy == [False] * 5
    assert row.advantage == 0.5 and rows.turns == 2 and rows.stale_turns == 0


def test_a_turn_past_the_staleness_bound_is_dropped_and_counted_and_a_lagging_one_is_off_policy():
    rows = build_rows([sample([2, 2, -1, 4], [2, 4])], 1.0, fallback_version=0, current_version=5, max_staleness=2, max_sequence_tokens=64)
    [row] = rows.rows
    assert row.mask == [0, 0, 0, 0, 1]
    assert row.off_policy == [False, False, False, False, True]
    assert rows.stale_turns == 1


def test_a_sample_with_every_turn_stale_makes_no_row():
    rows = build_rows([sample([0, 0, -1, 0], [0, 0])], 1.0, fallback_version=0, current_version=9, max_staleness=2, max_sequence_tokens=64)
    assert rows.rows == [] and rows.stale_turns == 2


def test_turns_without_a_version_take_the_trajectory_s_and_long_samples_are_cut():
    rows = build_rows([sample([-1, -1, -1, -1], [None, None])], 1.0, fallback_version=3, current_version=3, max_staleness=0, max_sequence_tokens=4)
    [row] = rows.rows
    assert row.ids == [1, 2, 10, 11] and row.mask == [0, 1, 1]
    assert rows.cut_tokens == 1 and rows.stale_turns == 0


def test_a_token_without_a_finite_engine_logprob_is_not_trained_on():
    s = sample([5, 5, -1, 5], [5, 5])
    s.completion_logprobs = [float("-inf"), -0.2, 0.0, float("nan")]
    [row] = build_rows([s], 1.0, fallback_version=0, current_version=5, max_staleness=1, max_sequence_tokens=64).rows
    assert row.mask == [0, 0, 1, 0, 0] and row.behaviour_logprobs == [0, 0, -0.2, 0, 0]


def two_turns(mask=(1, 1, 0, 1)):
    s = sample([5, 5, -1, 5], [5, 5])
    s.completion_mask = list(mask)
    return s


def test_the_last_turn_starts_at_the_last_run_of_sampled_tokens():
    assert last_turn_start([1, 1, 0, 0, 1, 1, 0]) == 4
    assert last_turn_start([1, 1]) == 0
    assert last_turn_start([0, 0]) == 2


def test_without_earlier_credit_every_entry_earns_the_outcome():
    [row] = build_rows([two_turns()], 0.5, fallback_version=0, current_version=5, max_staleness=1, max_sequence_tokens=64).rows
    assert row.advantages() == [0.5] * 5


def test_earlier_turns_earn_the_failure_s_advantage_and_the_last_turn_the_outcome_s():
    # ids [1, 2 | 10, 11, 3, 12]: entries 1-2 are the first turn's tokens, entry 4 the last turn's.
    [row] = build_rows([two_turns()], 0.8, fallback_version=0, current_version=5, max_staleness=1, max_sequence_tokens=64, earlier_advantage=-0.4).rows
    assert row.last_turn_from == 4
    assert row.advantages() == [-0.4, -0.4, -0.4, -0.4, 0.8]
    assert row.mask == [0, 1, 1, 0, 1], "the mask is unchanged: only what each trained token earns differs"


def test_a_sample_before_the_trajectory_s_last_holds_earlier_turns_only():
    first, last = two_turns(), two_turns()
    rows = build_rows([first, last], 1.0, fallback_version=0, current_version=5, max_staleness=1, max_sequence_tokens=64, earlier_advantage=-1.0).rows
    assert rows[0].advantages() == [-1.0] * 5
    assert rows[1].advantages() == [-1.0] * 4 + [1.0]


def test_a_failure_s_advantage_is_recovered_from_a_reward_s_own_as_the_reward_stage_computes_it():
    # Group rewards [1, 0, 0, 1]: mean 0.5, std 0.5; advantages (r - 0.5) / 0.5 = +1 and -1.
    assert failure_advantage(1.0, 1.0, 0.5) == -1.0
    assert failure_advantage(0.0, -1.0, 0.5) == -1.0
    assert failure_advantage(0.5, 0.0, 0.5) == 0.0


def row(ids, trained_from):
    mask = [0.0] * (trained_from) + [1.0] * (len(ids) - 1 - trained_from)
    return Row(ids=ids, mask=mask, behaviour_logprobs=[0.0] * len(mask), off_policy=[False] * len(mask), advantage=1.0)


def test_rows_that_share_their_start_are_grouped_with_the_tokens_they_share_and_train_on_none_of():
    prompt = list(range(100))
    rows = [row(prompt + [7, 8, 9], 100), row([5] + prompt, 50), row(prompt + [7, 6, 5, 4], 100), row(prompt + [1, 2], 90)]
    # Rows 0, 2 and 3 share 100 tokens; row 3 trains from entry 90 on (the hidden state of token 90), so 90 run once.
    assert shared_prefixes(rows, min_tokens=64) == [(90, [0, 2, 3]), (0, [1])]
    assert shared_prefixes(rows[:2], min_tokens=64) == [(0, [0]), (0, [1])]
    assert shared_prefixes([row(prompt[:70] + [1], 65), row(prompt[:70] + [2], 65)], min_tokens=64) == [(65, [0, 1])]
    assert shared_prefixes([row(prompt[:70] + [1], 30), row(prompt[:70] + [2], 30)], min_tokens=64) == [(0, [0]), (0, [1])], "too little to share"
