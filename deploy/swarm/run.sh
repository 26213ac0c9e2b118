#!/usr/bin/env bash
# One throng plan as N shards on Docker Swarm: a replicated service of N tasks that are not
# restarted; each learns its slot from {{.Task.Slot}} (from 1) in THRONG_SHARD_SLOT, which
# `--shards N` reads.
# Every task starts its share at the same instant and prints its result as one JSON line; the
# logs are collected and merged.
#
#   deploy/swarm/run.sh IMAGE URL [N] [throng run flags...]
#   deploy/swarm/run.sh throng:latest http://10.0.0.5:8080/ 4 -c 200 -z 60s
#
# IMAGE holds the throng binary at /throng. Needs a swarm (docker swarm init) whose nodes can
# reach URL. Why not --mode replicated-job: measured on this project's Docker 20.10.24, a job of
# 3 replicas gave its tasks the slots 1, 2 and, for the third, the node's ID instead of 3; that
# task cannot know its shard (throng says so and exits 2) and the merge names the missing
# shard. A replicated service's slots count 1..N (measured the same day), and
# --restart-condition none makes its tasks run once, like a job's. tests/swarm.rs runs this.
set -euo pipefail
IMAGE=${1:?usage: deploy/swarm/run.sh IMAGE URL [N] [flags...]}
URL=${2:?usage: deploy/swarm/run.sh IMAGE URL [N] [flags...]}
N=${3:-4}
shift $(( $# < 3 ? $# : 3 ))
NAME=throng-shards-$$
START=$(date -u -d '+20 seconds' +%Y-%m-%dT%H:%M:%SZ)
docker service create --detach --name "$NAME" --mode replicated --replicas "$N" \
  --restart-condition none \
  --env 'THRONG_SHARD_SLOT={{.Task.Slot}}' --network host \
  "$IMAGE" run "$URL" --shards "$N" --start-at "$START" --no-tui --quiet --json - "$@" >/dev/null
trap 'docker service rm "$NAME" >/dev/null 2>&1 || true' EXIT
# Wait for every task to finish.
while [ "$(docker service ps "$NAME" --format '{{.CurrentState}}' | grep -c -E '^(Complete|Failed|Rejected)')" -lt "$N" ]; do
  sleep 1
done
docker service logs --raw "$NAME" > "$NAME.log" 2>&1
throng merge "$NAME.log"
