import json
from pathlib import Path

import pytest
import torch

from tiny import tiny_llama
from trialrun_llm_learner.batch import BatchRows, build_rows, shared_prefixes
from trialrun_llm_learner.checkpoint import LORA_FORMAT, ArtifactIntegrityError, adapter_bytes, adapter_metadata, read_adapter, read_verified
from trialrun_llm_learner.objective import token_logprobs
from trialrun_llm_learner.options import LearnerOptions
from trialrun_llm_learner.samples import TrainingSample
from trialrun_llm_learner.store_channel import FolderCheckpoints
from trialrun_llm_learner.trainer import Trainer, peft_config_json


@pytest.fixture
def trainer():
    return Trainer(LearnerOptions(gguf="unused", checkpoints="unused", learning_rate=0.05), base=tiny_llama())


def rows(advantage, current_version=0):
    sample = TrainingSample(sample_index=0, prompt_ids=[1, 2, 3], completion_ids=[4, 5, 6], completion_mask=[1, 1, 1], completion_logprobs=[-3.0, -3.0, -3.0], completion_policy_versions=[0, 0, 0], turn_policy_versions=[0], step_indices=[0])
    return build_rows([sample], advantage, fallback_version=0, current_version=current_version, max_staleness=4, max_sequence_tokens=64)


def test_the_artifact_is_the_whole_adapter_under_peft_s_names_in_float32_with_the_contract_s_metadata(trainer, tmp_path):
    state = trainer.adapter_state()
    assert all(".lora_A.weight" in k or ".lora_B.weight" in k for k in state)
    assert "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" in state
    assert {k.split(".")[-3] for k in state} == set(LearnerOptions.lora_targets)
    metadata = adapter_metadata(peft_config=peft_config_json(trainer.config), base_model="smollm2-135m-instruct", base_sha256="ab" * 32, version=3, parent_version=2)
    artifact = FolderCheckpoints(str(tmp_path)).put("llm", 3, adapter_bytes(state, metadata), LORA_FORMAT)
    path = Path(artifact["uri"].removeprefix("file://"))
    assert path.parent == tmp_path / "llm" and path.name == f"v3-{artifact['sha256']}.bin"
    assert artifact["bytes"] == path.stat().st_size and artifact["format"] == LORA_FORMAT
    assert not list(path.parent.glob("*.tmp-*")), "written to a temp file, then renamed"
    tensors, read_metadata = read_adapter(read_verified(artifact["uri"], artifact["sha256"]))
    assert read_metadata == metadata and read_metadata["policy_version"] == "3" and read_metadata["parent_version"] == "2"
    config = json.loads(read_metadata["peft_config"])
    assert config["r"] == 8 and config["lora_alpha"] == 16 and sorted(config["target_modules"]) == sorted(LearnerOptions.lora_targets)
    assert all(t.dtype == torch.float32 for t in tensors.values()) and tensors.keys() == state.keys()


def test_bytes_that_do_not_match_their_digest_are_never_loaded(tmp_path):
    artifact = FolderCheckpoints(str(tmp_path)).put("llm", 1, b"adapter", LORA_FORMAT)
    Path(artifact["uri"].removeprefix("file://")).write_bytes(b"tampered")
    with pytest.raises(ArtifactIntegrityError, match="fails its sha256 check"):
        read_verified(artifact["uri"], artifact["sha256"])
    with pytest.raises(ValueError, match="not a lora-safetensors/v1 artifact"):
        read_adapter(adapter_bytes({"w": torch.zeros(1)}, {"format": "other"}))


def test_version_0_is_the_base_model_and_an_update_moves_the_adapter_the_way_the_advantage_says(trainer):
    ids = torch.tensor(rows(1.0).rows[0].ids)
    with torch.no_grad():
        base = trainer.model(input_ids=ids.unsqueeze(0)).logits
        with trainer.model.disable_adapter():
            assert torch.allclose(trainer.model(input_ids=ids.unsqueeze(0)).logits, base), "LoRA B starts at 0"
    row = rows(1.0).rows[0]
    entries = torch.tensor(row.trained_entries())
    before = trainer._logprobs(row, entries).detach().sum()
    result = trainer.update(rows(1.0))
    assert result.tokens == 3 and result.grad_norm > 0 and result.clip_fraction == 0
    after = trainer._logprobs(row, entries).detach().sum()
    assert after > before, "a positive advantage makes the sampled tokens likelier"


def test_projecting_only_the_trained_positions_gives_the_full_forward_s_logprobs_and_gradient(trainer):
    # A row whose mask leaves holes: the prompt, a trained token, an appended one, two trained tokens.
    sample = TrainingSample(sample_index=0, prompt_ids=[1, 2, 3], completion_ids=[4, 7, 5, 6], completion_mask=[1, 0, 1, 1], completion_logprobs=[-3.0, 0.0, -3.0, -3.0], completion_policy_versions=[0, -1, 0, 0], turn_policy_versions=[0, 0], step_indices=[0, 1])
    [row] = build_rows([sample], 1.0, fallback_version=0, current_version=0, max_staleness=4, max_sequence_tokens=64).rows
    entries = torch.tensor(row.trained_entries())
    assert entries.tolist() == [2, 4, 5]
    ids = torch.tensor(row.ids)
    selected = trainer._logprobs(row, entries)
    full = token_logprobs(trainer.model(input_ids=ids.unsqueeze(0)).logits[0], ids)
    assert torch.allclose(selected, full[entries], atol=1e-6)
    grads = []
    for logprobs in (selected, full[entries]):
        trainer.optimizer.zero_grad()
        (logprobs * torch.tensor([1.0, -2.0, 0.5])).sum().backward(retain_graph=True)
        grads.append([p.grad.clone() for p in trainer.parameters if p.grad is not None])
    assert grads[0] and all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*grads))


def test_the_trainer_state_round_trips_and_version_0_restores_the_initial_adapter(trainer):
    initial = trainer.adapter_state()
    trainer.update(rows(1.0))
    trained, optimizer = trainer.adapter_state(), trainer.optimizer_bytes()
    trainer.update(rows(-1.0))
    trainer.load(trained, optimizer)
    assert all(torch.equal(trained[k], v) for k, v in trainer.adapter_state().items())
    assert trainer.optimizer.state_dict()["state"], "AdamW moments restored"
    trainer.load(None, None)
    assert all(torch.equal(initial[k], v) for k, v in trainer.adapter_state().items())


def test_a_prompt_the_batch_s_rows_share_runs_once_and_the_update_is_the_one_of_rows_run_alone(monkeypatch):
    from trialrun_llm_learner import trainer as trainer_module

    prompt = [int(t) for t in torch.randint(0, 32, (70,), generator=torch.Generator().manual_seed(1))]
    samples = [
        TrainingSample(sample_index=0, prompt_ids=prompt, completion_ids=completion, completion_mask=[1] * len(completion), completion_logprobs=[-3.0] * len(completion), completion_policy_versions=[0] * len(completion), turn_policy_versions=[0], step_indices=[0])
        for completion in ([4, 5, 6], [4, 7], [9, 9, 9, 9])
    ]
    batch = BatchRows()
    for sample, advantage in zip(samples, (1.0, -0.5, 0.25)):
        build_rows([sample], advantage, fallback_version=0, current_version=0, max_staleness=4, max_sequence_tokens=128, into=batch)
    assert shared_prefixes(batch.rows) == [(69, [0, 1, 2])]
    adapters, losses = [], []
    for shared in (True, False):
        if not shared:
            monkeypatch.setattr(trainer_module, "shared_prefixes", lambda rows: [(0, [i]) for i in range(len(rows))])
        trainer = Trainer(LearnerOptions(gguf="unused", checkpoints="unused", learning_rate=0.05, epochs=2), base=tiny_llama())
        losses.append(trainer.update(batch).loss)
        adapters.append(trainer.adapter_state())
    assert losses[0] == pytest.approx(losses[1], abs=1e-5)
    # The gradients are summed in another order (row by row into the prefix's keys and values, then through the
    # prefix): float32 rounding, which AdamW's normalised step can lift to about 1e-5 on a near-zero gradient.
    assert all(torch.allclose(adapters[0][k], adapters[1][k], rtol=1e-4, atol=1e-5) for k in adapters[0])
