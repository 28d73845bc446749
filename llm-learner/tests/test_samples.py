import json
import os

import pytest

from trialrun_llm_learner.samples import TrainingSample, llm_training_samples

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "training-samples.json")
CASES = json.load(open(FIXTURE))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_python_rule_builds_the_fixture_samples_the_typescript_rule_builds(case):
    assert [s.to_wire() for s in llm_training_samples(case["steps"])] == case["samples"]


def test_a_sample_round_trips_through_its_wire_form():
    sample = llm_training_samples(CASES[0]["steps"])[0]
    assert TrainingSample.from_wire(sample.to_wire()) == sample
    assert set(sample.to_wire()) == {"sampleIndex", "promptIds", "completionIds", "completionMask", "completionLogprobs", "completionPolicyVersions", "turnPolicyVersions", "stepIndices", "truncated"}


def test_steps_without_an_llm_call_or_token_ids_make_no_sample():
    assert llm_training_samples([{"index": 0, "llm": None}, {"index": 1}]) == []
