#!/usr/bin/env bash
# The web-framework comparison of scenarios/web-compare.yaml, end to end on this machine: two
# images built FROM scratch holding throng's own testbed HTTP target (one answering after 1 ms,
# one after 3 ms: two "implementations" of one service), run as containers publishing on
# 127.0.0.1, compared by an A/B run with their docker stats; prints the comparison and writes
# web.json and web.html into OUT (default: a temporary directory).
#
#   benches/web-compare.sh                                   # 500 users, 20 s a run, 2 rounds
#   DURATION=60s ROUNDS=3 USERS=500 benches/web-compare.sh
#   RATE=3000 benches/web-compare.sh                         # the open-loop variant
#
# Needs a running Docker engine and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/target/release/throng}
DURATION=${DURATION:-20s}
ROUNDS=${ROUNDS:-2}
USERS=${USERS:-500}
RATE=${RATE:-}
OUT=${OUT:-$(mktemp -d)}
[ -x "$BIN" ] || { echo "build first: cargo build --release"; exit 2; }

work=$(mktemp -d)
# Names of this run's own making (never another's containers), ports the engine picks.
fast=web-fast-$$ slow=web-slow-$$ image=throng-web-compare:$$
cleanup() { docker rm -f "$fast" "$slow" >/dev/null 2>&1 || true; docker rmi "$image" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
. benches/scratch-image.sh
scratch_image "$BIN" "$work" "$image" serve http --host 0.0.0.0 --port 8080
docker run -d --name "$fast" -p 127.0.0.1::8080 "$image" --delay 1ms >/dev/null
docker run -d --name "$slow" -p 127.0.0.1::8080 "$image" --delay 3ms >/dev/null
port() { docker port "$1" 8080/tcp | head -1 | sed 's/.*://'; }
pf=$(port "$fast") ps=$(port "$slow")
for p in "$pf" "$ps"; do
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$p/" && break; sleep 0.1; done
done
load=(-c "$USERS")
[ -n "$RATE" ] && load=(-q "$RATE" --max-in-flight "$USERS")
"$BIN" run scenarios/web-compare.yaml --no-tui --quiet \
  --target "fast=http://127.0.0.1:$pf" --target "slow=http://127.0.0.1:$ps" \
  --container "fast=$fast" --container "slow=$slow" --idle 3s \
  "${load[@]}" -z "$DURATION" --rounds "$ROUNDS" --cooldown 3s \
  --json "$OUT/web.json" --report "html:$OUT/web.html" --report "markdown:$OUT/web.md"
echo "results in $OUT"
