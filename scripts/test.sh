#!/usr/bin/env bash
# The whole test suite against the real stack: lint, Python checks, unit tests beside the code, integration
# tests in test/integration. Brings up whatever the tests need first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --s3
npm run --silent lint

# Python: pytest over the in-sandbox tools and helpers, then the bundled tasks' own consistency check.
python_status=0
python3 -m pytest -q -p no:cacheprovider sandbox-images pipelines stack tasks test/fixtures || python_status=$?
python3 tasks/check_bundle.py tasks/repair-bundle.jsonl || python_status=$?
# The LLM learner's own tests, in its virtualenv (installed once, cached; `stack python` prints its python).
llm_learner_python=$(node bin/trialrun.js stack python llm-learner)
(cd llm-learner && "$llm_learner_python" -m pytest -q -p no:cacheprovider tests) || python_status=$?
# harbor's ATIF models (its package without the runner's dependencies, seconds to install, cached) judge
# `export atif` in test/integration/atif.test.ts.
node bin/trialrun.js stack python harbor-models >/dev/null

# test/k8s is left to `npm run test:k8s`: its cluster is built from source once, which takes tens of minutes.

# The test files are the compiled *.test.ts sources, named one by one: given a folder, node's runner would
# also run every helper module under test/ as if it were a test.
mapfile -t tests < <(find schemas connectors envs policies pipelines stack dashboard cli test bench -path test/k8s -prune -o -name '*.test.ts' -print | sed 's#^#dist/#; s#\.ts$#.js#' | sort)
node_status=0
# One file at a time: integration tests share two cores, a broker and a Docker engine.
node --test --test-concurrency=1 "${tests[@]}" || node_status=$?
# Node's summary stays the last thing printed; a Python failure still fails the run.
exit $((node_status != 0 ? node_status : python_status))
