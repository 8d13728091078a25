#!/usr/bin/env bash
# The main job, small: a short chaos run against the built-in raft cluster,
# ending with the checkers' verdict.
set -euo pipefail
cd "$(dirname "$0")/.."
f=.venv/bin/faultline
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Until `faultline run` lands: validate and show a converted external history.
$f history convert ../shared/corpus/porcupine/jepsen/etcd_002.log "$tmp/h.msgpack" 2>/dev/null \
  || $f history convert "$(ls -d ../shared/corpus/porcupine/jepsen 2>/dev/null | head -1)/etcd_002.log" "$tmp/h.msgpack"
$f history validate "$tmp/h.msgpack"
$f ls
