import json

import pytest

from tiny import tiny_llama
from trialrun_llm_learner import device_bench


def test_it_times_the_learner_s_update_per_device_for_the_same_batch_and_writes_the_figures(tmp_path):
    tiny_llama().config.save_pretrained(tmp_path)
    out = tmp_path / "figures.json"
    assert device_bench.main(["--config", str(tmp_path / "config.json"), "--devices", "cpu", "--rows", "2", "--sequence-tokens", "16", "--sampled-tokens", "4", "--rounds", "3", "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["trainedTokens"] == 8 and figures["rows"] == 2 and figures["rounds"] == 3
    cpu = figures["sides"]["cpu"]
    assert 0 < cpu["trainedTokensPerSecond"]["min"] <= cpu["trainedTokensPerSecond"]["median"] <= cpu["trainedTokensPerSecond"]["max"]
    assert figures["weights"].startswith("random weights")


@pytest.mark.parametrize("flags, message", [(["--devices", "tpu"], "unknown side"), (["--devices", "cpu", "--rounds", "2"], "at least 3")])
def test_bad_flags_are_refused_before_anything_is_loaded(tmp_path, capsys, flags, message):
    tiny_llama().config.save_pretrained(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        device_bench.main(["--config", str(tmp_path / "config.json"), *flags])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_synthetic_rows_train_the_last_tokens_and_alternate_the_advantage():
    rows = device_bench.synthetic_rows(3, 10, 4, vocab=32, seed=0)
    assert [row.tokens for row in rows.rows] == [4, 4, 4]
    assert [row.advantage for row in rows.rows] == [1.0, -1.0, 1.0]
    assert all(len(row.ids) == 10 and len(row.mask) == 9 and row.mask[-4:] == [1.0] * 4 for row in rows.rows)


def test_write_config_needs_the_gguf(tmp_path, capsys):
    with pytest.raises(SystemExit):
        device_bench.main(["--config", str(tmp_path / "config.json"), "--write-config", str(tmp_path / "out.json")])
    assert "--write-config needs --gguf" in capsys.readouterr().err


def test_rows_can_share_their_first_prompt_as_a_group_s_members_do():
    rows = device_bench.synthetic_rows(3, 10, 2, vocab=32, seed=0, shared_tokens=6).rows
    assert rows[0].ids[:6] == rows[1].ids[:6] == rows[2].ids[:6]
    with pytest.raises(ValueError, match="shared-prompt-tokens"):
        device_bench.synthetic_rows(2, 10, 4, vocab=32, seed=0, shared_tokens=7)
