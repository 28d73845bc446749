"""Reads an exported training-samples Parquet file with a stock pyarrow and prints what a trainer would see.

Run by test/integration/llm-samples.test.ts in a cached virtualenv that holds pyarrow; prints one JSON object:
the schema (column name -> Arrow type) and every row as plain Python values.
"""
import json
import sys

import pyarrow.parquet as pq


def main(path: str) -> None:
    table = pq.read_table(path)
    print(json.dumps({
        "schema": {field.name: str(field.type) for field in table.schema},
        "rows": table.to_pylist(),
    }))


if __name__ == "__main__":
    main(sys.argv[1])
