#!/usr/bin/env bash
# The main job, small: a short chaos campaign against the built-in raft
# cluster (3 nodes in network namespaces; partitions, kills and pauses while
# 5 clients hammer a register), ending with the checkers' verdict. Faults
# are drawn from a shuffled bag, so seed 1's 30 s hold each named kind at
# least once (partition, kill and pause, twice each but one).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "demo: faultline needs root to create network namespaces; run 'sudo make demo'." >&2
    exit 254
fi
exec .venv/bin/faultline run --db raft --workload register \
    --nemesis partition,kill,pause --nodes 3 --concurrency 5 --rate 200 \
    --time-limit 30 --nemesis-interval 3 --seed "${SEED:-1}"
