#!/bin/bash
# Harbor's verifier contract in a trialrun grading sandbox. The task job puts this file, the task's tests/ and
# its [verifier].env under .harbor/ of the grading workspace; the script verification runs it from /workspace
# with TRIALRUN_REWARD_DIR set. test.sh finds its files in /tests and writes /logs/verifier/reward.txt (or
# reward.json): images built FROM trialrun/ops link both into /tmp/harbor, where this script prepares them
# (elsewhere TESTS_DIR and LOGS_DIR name them). A test.sh that writes no reward is judged by its exit status:
# 0 is reward 1, anything else 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
harbor=/tmp/harbor
rm -rf "$harbor"
mkdir -p "$harbor/logs/verifier" "$harbor/logs/agent"
cp -r "$here/tests" "$harbor/tests"
if [ -f "$here/verifier-env" ]; then
  while IFS= read -r assignment; do export "$assignment"; done < "$here/verifier-env"
fi
# The workspace is judged as the agent left it: none of this folder stays in it.
rm -rf "$here"
export TESTS_DIR="$harbor/tests" LOGS_DIR="$harbor/logs"
bash "$harbor/tests/test.sh"
status=$?
written=0
for name in reward.txt reward.json; do
  if [ -f "$harbor/logs/verifier/$name" ]; then
    cp "$harbor/logs/verifier/$name" "$TRIALRUN_REWARD_DIR/$name"
    written=1
  fi
done
if [ "$written" = 0 ]; then
  if [ "$status" = 0 ]; then echo 1; else echo 0; fi > "$TRIALRUN_REWARD_DIR/reward.txt"
fi
exit "$status"
