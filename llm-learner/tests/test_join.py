import json
import os

from trialrun_llm_learner.kafka_io import ChangelogStore
from trialrun_llm_learner.learner import Join, LlmLearner, Output
from trialrun_llm_learner.options import LearnerOptions

STEPS = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "training-samples.json")))["cases"][0]["steps"]
OPTIONS = LearnerOptions(batch_size=2, max_staleness=1)


def join():
    return Join(OPTIONS, ChangelogStore("pending", "p"), ChangelogStore("trainer", "t"))


def trajectory(i, policy="llm", version=0):
    return {"trajectoryId": f"t{i}", "policyId": policy, "steps": STEPS, "lineage": {"policyVersion": version}}


def reward(i, advantage=1.0, **extra):
    return {"trajectoryId": f"t{i}", "reward": 1.0, "advantage": advantage, "groupMean": 0.5, **extra}


def test_a_sample_is_ready_once_both_sides_arrive_in_either_order_and_a_batch_takes_the_oldest():
    j = join()
    j.add("rewards", reward(1))
    j.add("trajectories", trajectory(0))
    assert j.take_batch() is None
    j.add("trajectories", trajectory(1))
    j.add("rewards", reward(0, advantage=-1.0))
    j.add("trajectories", trajectory(2))
    entries, rows, counts = j.take_batch()
    assert [e["advantage"] for e in entries] == [1.0, -1.0] and counts == {"trained": 2, "staleTrajectories": 0, "empty": 0}
    assert len(rows.rows) == 2 and [k for k, _ in j.pending.items()] == ["t2"]


def test_other_policies_rewards_without_signal_and_rescores_never_train_and_leave_nothing_behind():
    j = join()
    j.add("trajectories", trajectory(0, policy="linear-repair"))
    j.add("rewards", reward(0))
    j.add("rewards", reward(1, disposition="no-signal"))
    j.add("trajectories", trajectory(1))
    j.add("rewards", reward(2, rescoreId="r1"))
    assert j.pending.items() == []


def test_a_trajectory_whose_every_turn_is_stale_is_counted_not_trained():
    j = join()
    j.trainer.put("llm", {"version": 5, "adapter": None, "optimizer": None, "staleDropped": 0, "staleTrajectories": 0})
    for i in range(2):
        j.add("trajectories", trajectory(i))
        j.add("rewards", reward(i))
    _, rows, counts = j.take_batch()
    assert counts["staleTrajectories"] == 2 and rows.rows == [] and rows.stale_turns == 4


def test_the_store_stages_writes_until_commit_and_its_changelog_deletes_with_null():
    store = ChangelogStore("s", "topic")
    store.put("a", {"x": 1})
    store.delete("b")
    assert dict(store.changelog()) == {"a": b'{"x":1}', "b": None}
    store.commit()
    store.put("a", {"x": 2})
    store.discard()
    assert store.get("a") == {"x": 1} and list(store.changelog()) == []


def test_with_earlier_turns_failed_a_batch_credits_earlier_turns_as_the_group_s_failures():
    j = Join(LearnerOptions(batch_size=1, max_staleness=1, earlier_turns_failed=True), ChangelogStore("pending", "p"), ChangelogStore("trainer", "t"))
    j.add("trajectories", trajectory(0))
    j.add("rewards", reward(0))
    _, rows, _ = j.take_batch()
    # reward 1 in a group of mean 0.5 with advantage 1: a failure there had -1.
    assert {row.earlier_advantage for row in rows.rows} == {-1.0}
    assert OPTIONS.earlier_turns_failed is False


def learner_over(j, **options):
    """A learner's batching alone (no Kafka, no model): `_update` records each batch it is handed."""
    learner = LlmLearner.__new__(LlmLearner)
    learner.options = LearnerOptions(batch_size=2, max_staleness=1, **options)
    learner.join = j
    learner.published = 0
    learner.batches = []

    def update(entries, rows, counts):
        learner.batches.append(len(entries))
        return [Output("policyCheckpoints", "llm", {"version": len(learner.batches)})]

    learner._update = update
    return learner


def test_every_full_batch_is_trained_before_the_offsets_that_brought_it_are_committed():
    # Five samples consumed at once: both full batches become versions in this transaction, the fifth waits.
    j = join()
    for i in range(5):
        j.add("trajectories", trajectory(i))
        j.add("rewards", reward(i))
    learner = learner_over(j)
    outputs = learner._update_ready()
    assert learner.batches == [2, 2] and [o.value["version"] for o in outputs] == [1, 2]
    assert [k for k, _ in j.pending.items()] == ["t4"]
    assert learner._update_ready() == []


def test_max_updates_bounds_the_versions_one_transaction_makes():
    j = join()
    for i in range(6):
        j.add("trajectories", trajectory(i))
        j.add("rewards", reward(i))
    learner = learner_over(j, max_updates=1)
    assert len(learner._update_ready()) == 1 and learner.batches == [2]
