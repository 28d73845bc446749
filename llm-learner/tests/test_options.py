import pytest

from trialrun_llm_learner.options import LearnerOptions, OptionsError, parse_args


@pytest.fixture
def gguf(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    return str(path)


def test_the_defaults_with_the_two_required_paths_are_valid(gguf, tmp_path):
    options = parse_args(["--gguf", gguf, "--checkpoints", str(tmp_path)])
    assert options.batch_size == LearnerOptions.batch_size and options.lora_targets == LearnerOptions.lora_targets
    assert options.consumer_group == "trialrun.llm-learner" and options.changelog("pending") == "trialrun.llm-learner.pending.changelog"


def test_flags_set_fields_and_lists_are_comma_separated(gguf, tmp_path):
    options = parse_args(["--gguf", gguf, "--checkpoints", str(tmp_path), "--batch-size", "2", "--lora-targets", "q_proj, v_proj", "--kl-coef", "0.1", "--topic-prefix", "exp1."])
    assert (options.batch_size, options.lora_targets, options.kl_coef) == (2, ("q_proj", "v_proj"), 0.1)
    assert options.topic("policy-checkpoints") == "exp1.policy-checkpoints"


def test_a_yes_no_option_is_a_flag_and_its_negation(gguf, tmp_path):
    base = ["--gguf", gguf, "--checkpoints", str(tmp_path)]
    assert parse_args(base).earlier_turns_failed is False
    assert parse_args(base + ["--earlier-turns-failed"]).earlier_turns_failed is True
    assert parse_args(base + ["--earlier-turns-failed", "--no-earlier-turns-failed"]).earlier_turns_failed is False


@pytest.mark.parametrize(
    "flags, message",
    [
        ([], r"gguf: the GGUF file the model server serves is required"),
        (["--gguf", "/nonexistent.gguf"], r"gguf: '/nonexistent.gguf' is not a file"),
        (["--batch-size", "0"], r"batch_size must be >= 1, got 0"),
        (["--clip-low", "1.5"], r"clip_low must be within \(0, 1\)"),
        (["--max-importance-weight", "0.5"], r"max_importance_weight must be >= 1"),
        (["--learning-rate", "0"], r"learning_rate must be > 0"),
        (["--device", "tpu"], r"device must be cpu, cuda or auto"),
        (["--topic-prefix", "bad prefix"], r"topic_prefix: 'bad prefix'"),
        (["--brokers", "nonsense"], r"brokers: 'nonsense' is not"),
        (["--session-timeout-ms", "1000"], r"session_timeout_ms must be >= 6000"),
        (["--epochs", "2", "--lora-dropout", "0.1"], r"epochs > 1 with lora_dropout > 0"),
    ],
)
def test_bad_options_and_combinations_are_one_clear_error(gguf, tmp_path, flags, message):
    base = ["--checkpoints", str(tmp_path)] + ([] if any(f == "--gguf" for f in flags) or not flags else ["--gguf", gguf])
    with pytest.raises(OptionsError, match=message):
        parse_args(base + flags)


def test_the_command_exits_2_with_the_reason(capsys):
    from trialrun_llm_learner.__main__ import main

    assert main(["--batch-size", "0"]) == 2
    assert "batch_size must be >= 1" in capsys.readouterr().err
