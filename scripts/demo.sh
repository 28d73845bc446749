#!/usr/bin/env bash
# The main job: bring the stack up and run the whole loop over the bundled tasks. Extra arguments go to
# `trialrun demo` (see `node bin/trialrun.js demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node bin/trialrun.js demo "$@"
