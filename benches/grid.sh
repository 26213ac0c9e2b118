#!/usr/bin/env bash
# The grids people publish, each one command of throng's, on this machine (the README's tables):
#
# 1. bank: throng's demo bank (`throng serve bank`) as two sides, on SQLite and on PostgreSQL,
#    the two-account transfer flow across user levels: users x (throughput, latency, error %)
#    with each side's container CPU and memory under load.
# 2. ladder: an RPS ladder against a service of known capacity (the testbed target serving 64
#    requests at a time, 20 ms each: 3,200 requests/s at most), with its container's stats and
#    the capacity at p99<100ms.
#
# Both targets run as containers built FROM scratch from a release build, on the host's network
# (the bank reaches a throwaway PostgreSQL on 127.0.0.1); names and ports are this run's own.
#
#   benches/grid.sh                          # both grids, 10 s a level after a 3 s warm-up
#   PARTS=ladder DURATION=20s benches/grid.sh
#
# Needs a running Docker engine, PostgreSQL's server (apt-get install postgresql) and a release
# build (cargo build --release). Writes OUT/bank.{json,md,html} and OUT/ladder.{json,md,html}.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/throng}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-3s}
PARTS=${PARTS:-bank ladder}
USERS=${USERS:-5,10,20,40,80}
RATES=${RATES:-1000,2000,3000,4000,5000}
OUT=${OUT:-$(mktemp -d)}
has() { [[ " $PARTS " == *" $1 "* ]]; }
[ -x "$BIN" ] || { echo "build first: cargo build --release"; exit 2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

work=$(mktemp -d)
chmod 755 "$work"
tag=$$
image=throng-grid:$tag
names=()
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  [ ${#names[@]} -gt 0 ] && docker rm -f "${names[@]}" >/dev/null 2>&1 || true
  docker rmi "$image" >/dev/null 2>&1 || true
  [ -d "$work/pg" ] && as_pg "$pgbin/pg_ctl" -D "$work/pg" stop -m immediate >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

. benches/scratch-image.sh
scratch_image "$BIN" "$work" "$image" serve

# Starts a container of the image on the host's network: NAME PORT ARGS...
serve() {
  local name=$1 port=$2
  shift 2
  names+=("$name")
  docker run -d --name "$name" --network host "$image" "$@" --host 127.0.0.1 --port "$port" >/dev/null
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && return; sleep 0.1; done
  echo "$name did not start:"; docker logs "$name"; exit 1
}

if has bank; then
  [ -x "$pgbin/initdb" ] || { echo "install postgresql (apt-get install postgresql)"; exit 2; }
  pgport=$(free_port)
  [ "$(id -u)" = 0 ] && chown postgres "$work"
  as_pg "$pgbin/initdb" -D "$work/pg" -U bench --auth=trust -E UTF8 --no-sync >/dev/null
  as_pg "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
    -o "-p $pgport -k $work -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
  as_pg "$pgbin/createdb" -h 127.0.0.1 -p "$pgport" -U bench bench
  p1=$(free_port) p2=$(free_port)
  serve "bank-sqlite-$tag" "$p1" bank
  serve "bank-pg-$tag" "$p2" bank --db "postgres://bench@127.0.0.1:$pgport/bench"
  "$BIN" run scenarios/bank-transfer.yaml --no-tui --quiet \
    --target "sqlite=http://127.0.0.1:$p1" --target "pg=http://127.0.0.1:$p2" \
    --container "sqlite=bank-sqlite-$tag" --container "pg=bank-pg-$tag" \
    --sweep "users=$USERS" -z "$DURATION" --warmup "$WARMUP" --cooldown 2s \
    --json "$OUT/bank.json" --report "markdown:$OUT/bank.md" --report "html:$OUT/bank.html" || true
fi

if has ladder; then
  p=$(free_port)
  serve "ladder-$tag" "$p" http --delay 20ms --capacity 64
  "$BIN" run "http://127.0.0.1:$p/" --no-tui --quiet -c 400 \
    --container "ladder-$tag" \
    --sweep "rate=$RATES" -z "$DURATION" --warmup "$WARMUP" --cooldown 2s \
    --threshold 'p99<100ms' --until 'error_rate>5%' \
    --json "$OUT/ladder.json" --report "markdown:$OUT/ladder.md" --report "html:$OUT/ladder.html" || true
fi
echo "results in $OUT"
