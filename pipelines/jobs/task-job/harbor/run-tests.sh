#!/bin/bash
# Harbor's verifier contract in a trialrun grading sandbox. The task job puts this file, the task's tests/ and
# its [verifier].env under .harbor/ of the grading workspace; the script verification runs it from /workspace
# with TRIALRUN_REWARD_DIR set. As under Harbor, test.sh runs from /tests and writes /logs/verifier/reward.txt
# (or reward.json); both folders are volumes of the ops image, which a trialrun sandbox mounts as sized tmpfs.
# The reward comes from that file only: a test.sh that writes none yields none (the verification says so),
# unless the job file asked for the exit status (exitStatusReward, trialrun's own field: 0 is reward 1).
set -u
here=$(cd "$(dirname "$0")" && pwd)
for dir in /tests /logs; do
  if [ ! -w "$dir" ]; then
    echo "run-tests.sh: $dir is not a writable folder in this image; a Harbor task's image is built FROM trialrun/ops, whose volumes provide it" >&2
    exit 97
  fi
done
mkdir -p /logs/verifier /logs/agent "$TRIALRUN_REWARD_DIR"
cp -r "$here/tests/." /tests/
if [ -f "$here/verifier-env" ]; then
  while IFS= read -r assignment; do export "$assignment"; done < "$here/verifier-env"
fi
exit_status_reward=0
[ -f "$here/reward-from-exit-status" ] && exit_status_reward=1
# The workspace is judged as the agent left it: none of this folder stays in it.
rm -rf "$here"
bash /tests/test.sh
status=$?
written=0
for name in reward.txt reward.json; do
  if [ -f "/logs/verifier/$name" ]; then
    cp "/logs/verifier/$name" "$TRIALRUN_REWARD_DIR/$name"
    written=1
  fi
done
if [ "$written" = 0 ] && [ "$exit_status_reward" = 1 ]; then
  if [ "$status" = 0 ]; then echo 1; else echo 0; fi > "$TRIALRUN_REWARD_DIR/reward.txt"
fi
exit "$status"
