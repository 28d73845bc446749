from trialrun_llm_learner.batch import build_rows
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
