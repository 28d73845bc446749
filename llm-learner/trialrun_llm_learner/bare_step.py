"""The bare PyTorch step, for `npm run bench:llm-learner`: the learner's update with no Kafka around it.

`python -m trialrun_llm_learner.bare_step --gguf FILE --batch FILE.json [learner flags]` loads the model once,
builds the rows of the batch (a JSON list of {trajectory, reward} records, joined as the learner joins them),
prints `ready`, then for every `step` line on stdin takes one update and prints {"tokens": n, "seconds": s}.
"""

from __future__ import annotations

import json
import sys
import time

from .kafka_io import ChangelogStore
from .learner import Join
from .options import parse_args
from .trainer import Trainer


def main(argv: list[str]) -> int:
    batch_index = argv.index("--batch")
    batch_file = argv[batch_index + 1]
    learner_args = argv[:batch_index] + argv[batch_index + 2 :]
    pairs = json.load(open(batch_file))
    options = parse_args(learner_args + ["--checkpoints", "unused", "--batch-size", str(len(pairs))])
    trainer = Trainer(options)
    join = Join(options, ChangelogStore("pending", "unused"), ChangelogStore("trainer", "unused"))
    for pair in pairs:
        join.add("trajectories", pair["trajectory"])
        join.add("rewards", pair["reward"])
    taken = join.take_batch()
    if taken is None:
        raise SystemExit(f"{batch_file}: fewer than {len(pairs)} joined samples")
    _, rows, _ = taken
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "step":
            continue
        started = time.perf_counter()
        result = trainer.update(rows)
        print(json.dumps({"tokens": result.tokens, "seconds": time.perf_counter() - started}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
