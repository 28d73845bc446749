"""datatrove's MinHash deduplication over bench:dedup's generated repair rows (bench/dedup.ts runs this).

Its four stages, each through a LocalPipelineExecutor, as datatrove's own minhash example runs them:
signatures (one task per input shard), buckets (one task per LSH band), clusters (one task), filter (one task
per shard). A row's text is what trialrun's dedup compares: the description, then the buggy module, the
visible and the hidden tests. datatrove normalises it (lower case, no punctuation, numbers as 0) and splits
it with its English word tokenizer (spaCy's blank English), as it does any text.

Prints one JSON line: the seconds of each stage and in all, the rows read and removed; writes the ids of
the removed rows, one a line, to <work>/removed-ids.txt.
"""

import argparse
import json
import os
import time

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.hashing import HashConfig


def row_as_document(_reader, data: dict, path: str, id_in_file) -> dict:
    """The row's compared content as one text, its id as the document's id."""
    text = "\n".join([data["description"], data["buggy_source"], data["visible_tests"], data["hidden_tests"]])
    return {"text": text, "id": data["id"], "metadata": {}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="folder of JSON Lines shards")
    parser.add_argument("--work", required=True, help="folder for signatures, buckets, clusters and logs (made empty by the caller)")
    parser.add_argument("--shards", type=int, required=True, help="number of files in --input: one task each")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--n-grams", type=int, default=5)
    parser.add_argument("--buckets", type=int, default=9)
    parser.add_argument("--hashes-per-bucket", type=int, default=14)
    parser.add_argument("--precision", type=int, choices=[32, 64], default=64)
    args = parser.parse_args()

    config = MinhashConfig(
        n_grams=args.n_grams,
        num_buckets=args.buckets,
        hashes_per_bucket=args.hashes_per_bucket,
        hash_config=HashConfig(precision=args.precision),
    )
    work = args.work
    reader = lambda: JsonlReader(args.input, adapter=row_as_document, compression=None, glob_pattern="*.jsonl")  # noqa: E731
    stages = {
        "signatures": LocalPipelineExecutor(
            pipeline=[reader(), MinhashDedupSignature(output_folder=f"{work}/signatures", config=config)],
            tasks=args.shards,
            workers=min(args.workers, args.shards),
            logging_dir=f"{work}/logs/signatures",
            skip_completed=False,
        ),
        "buckets": LocalPipelineExecutor(
            pipeline=[MinhashDedupBuckets(input_folder=f"{work}/signatures", output_folder=f"{work}/buckets", config=config)],
            tasks=config.num_buckets,
            workers=args.workers,
            logging_dir=f"{work}/logs/buckets",
            skip_completed=False,
        ),
        "clusters": LocalPipelineExecutor(
            pipeline=[MinhashDedupCluster(input_folder=f"{work}/buckets", output_folder=f"{work}/remove_ids", config=config)],
            tasks=1,
            logging_dir=f"{work}/logs/clusters",
            skip_completed=False,
        ),
        # The kept rows flow out of the pipeline's end (what a writer would take); the removed ones are written.
        "filter": LocalPipelineExecutor(
            pipeline=[
                reader(),
                MinhashDedupFilter(
                    input_folder=f"{work}/remove_ids",
                    exclusion_writer=JsonlWriter(f"{work}/removed", compression=None),
                ),
            ],
            tasks=args.shards,
            workers=min(args.workers, args.shards),
            logging_dir=f"{work}/logs/filter",
            skip_completed=False,
        ),
    }
    seconds = {}
    started = time.perf_counter()
    for name, executor in stages.items():
        stage_started = time.perf_counter()
        executor.run()
        seconds[name] = time.perf_counter() - stage_started
    total = time.perf_counter() - started

    removed = []
    removed_dir = f"{work}/removed"
    for name in sorted(os.listdir(removed_dir)) if os.path.isdir(removed_dir) else []:
        with open(os.path.join(removed_dir, name)) as lines:
            removed.extend(json.loads(line)["id"] for line in lines if line.strip())
    with open(f"{work}/removed-ids.txt", "w") as out:
        out.write("".join(f"{row_id}\n" for row_id in removed))
    print(json.dumps({"seconds": total, "stages": seconds, "removed": len(removed)}), flush=True)


if __name__ == "__main__":
    main()
