"""An episode's model turns as training samples: the Python twin of `llmTrainingSamples` (schemas/trajectory.ts).

The rule is kept identical on both sides, and tests/fixtures/training-samples.json holds steps with the samples
both implementations must build from them (schemas/trajectory.test.ts reads the same file).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Optional


@dataclass
class TrainingSample:
    """Field for field `LlmTrainingSample`, in snake_case; `to_wire` gives the camelCase object."""

    sample_index: int
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    completion_mask: list[int] = field(default_factory=list)
    completion_logprobs: list[float] = field(default_factory=list)
    completion_policy_versions: list[int] = field(default_factory=list)
    turn_policy_versions: list[Optional[int]] = field(default_factory=list)
    step_indices: list[int] = field(default_factory=list)
    truncated: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in asdict(self).items()}

    @staticmethod
    def from_wire(value: Mapping[str, Any]) -> "TrainingSample":
        return TrainingSample(**{_snake(k): v for k, v in value.items()})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def llm_training_samples(steps: Iterable[Mapping[str, Any]]) -> list[TrainingSample]:
    """
    The prefix rule: one sample while each turn's prompt is the previous prompt + completion + what the turn
    appended (`extendsPrevious`, and the lengths agree), a new sample where a prompt does not. Steps without
    token ids are skipped; a turn claiming to extend a sequence whose start is not recorded starts no sample,
    and the turns after it join none until a whole prompt comes again. `steps` are Step records as JSON.
    """
    samples: list[TrainingSample] = []
    current: Optional[TrainingSample] = None
    length = 0  # tokens in the current sample's sequence so far: prompt and completion
    for step in steps:
        llm = step.get("llm")
        tokens = llm.get("tokens") if llm else None
        if not llm or not tokens:
            continue
        version = llm.get("policyVersion")
        appended = list(tokens["appendedPromptIds"])
        extends_current = current is not None and bool(tokens["extendsPrevious"]) and length + len(appended) == tokens["promptLength"]
        if not extends_current:
            if len(appended) != tokens["promptLength"]:
                current = None
                continue
            current = TrainingSample(sample_index=len(samples), prompt_ids=appended)
            samples.append(current)
            length = tokens["promptLength"]
        else:
            assert current is not None
            current.completion_ids.extend(appended)
            current.completion_mask.extend(0 for _ in appended)
            current.completion_logprobs.extend(0 for _ in appended)
            current.completion_policy_versions.extend(-1 for _ in appended)
        sample = current
        completion = list(tokens["completionIds"])
        logprobs = llm.get("logprobs") or []
        sample.completion_ids.extend(completion)
        sample.completion_mask.extend(1 for _ in completion)
        sample.completion_logprobs.extend(logprobs[i] if i < len(logprobs) else 0 for i in range(len(completion)))
        sample.completion_policy_versions.extend((version if version is not None else -1) for _ in completion)
        sample.turn_policy_versions.append(version)
        sample.step_indices.append(step["index"])
        sample.truncated = llm.get("finishReason") == "length"
        length = tokens["promptLength"] + len(completion)
    return samples
