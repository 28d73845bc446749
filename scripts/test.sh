#!/usr/bin/env bash
# The whole test suite against the real stack: lint, unit tests beside the code, integration tests in
# test/integration. Brings up whatever the tests need first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm run --silent lint
# One file at a time: integration tests share two cores, a broker and a Docker engine.
exec node --test --test-concurrency=1 dist/
