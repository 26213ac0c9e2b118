#!/usr/bin/env bash
# throng-h2's client (crates/h2, under `throng run --http2` and gRPC) against h2load, the C floor: one
# connection carrying USERS concurrent streams, closed loop, h2c GET and gRPC unary, taking
# turns round by round. Prints requests/s and generator CPU-seconds (user + system) per million
# requests for each run, the medians and the ratio throng-h2/h2load. A cost comparison, not a
# test.
#
#   benches/h2.sh                          # DURATION=5 USERS=50 ROUNDS=3
#   BIN=target/release/throng benches/h2.sh  # adds `throng run --http2` (HTTP's driver) beside
#   benches/http2.sh                       # `throng run --http2` and h2load alone, against the
#                                          # testbed (`throng serve http`): WHO, TARGET, GRPC below
#
# The load drivers and the target are crates/h2's examples: `load` (the bare client on one
# thread, as one engine worker; h2load runs one thread too), `engine_load` (the client as a
# driver under throng's engine, one worker thread: its loop, timing and histograms included) and
# `h2_target` (hyper's HTTP/2 server on one thread, GET -> "hello", gRPC POST -> a message and
# grpc-status 0 in trailers), built here in release. Needs
# h2load (apt-get install nghttp2-client). Load goes to 127.0.0.1 only; the target's CPU is not
# counted, and on a 2-core machine it shares the cores with the generator, as for every peer.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-5}
USERS=${USERS:-50}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18661}
BIN=${BIN:-}
# Which generators run (default: h2load, the bare client, the engine, and throng run with BIN),
# against which target (`h2_target`, or `testbed`: BIN's `throng serve http`), gRPC too or not.
WHO=${WHO:-}
TARGET=${TARGET:-h2_target}
GRPC=${GRPC:-1}

command -v h2load >/dev/null || { echo "install h2load (apt-get install nghttp2-client)"; exit 2; }
LOAD=target/release/examples/load
ENGINE=target/release/examples/engine_load
SERVE=target/release/examples/h2_target

work=$(mktemp -d)
if [ "$TARGET" = testbed ]; then
  [ -x "$BIN" ] || { echo "TARGET=testbed runs BIN's throng serve http: set BIN"; exit 2; }
  "$BIN" serve http --port "$PORT" > "$work/serve.log" 2>&1 &
  GET_PATH=/
else
  cargo build --release -q -p throng-h2 --example load --example engine_load --example h2_target
  "$SERVE" "$PORT" > "$work/serve.log" 2>&1 &
  GET_PATH=/hello
fi
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 1
# HelloRequest{name: "throng"} behind gRPC's 5-byte prefix.
printf '\x00\x00\x00\x00\x08\x0a\x06throng' > "$work/frame.bin"

# measure CMD...: runs it under /usr/bin/time; prints "succeeded cpu_seconds".
measure() {
  local out="$work/out" t="$work/time"
  rm -f "$work/r.json"
  /usr/bin/time -f "%U %S" -o "$t" "$@" > "$out" 2>&1 || true
  local cpu n
  cpu=$(awk '{print $1 + $2}' "$t" | tail -1)
  if grep -q '^requests:' "$out"; then
    n=$(awk '/^requests:/ {print $8}' "$out")
  else
    n=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["total"]["samples"] - r["total"]["errors"])' "$work/r.json" 2>/dev/null || echo 0)
  fi
  echo "${n:-0} $cpu"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# bench NAME PATH GRPC(0|1)
bench() {
  local name=$1 path=$2 grpc=$3
  local url="http://127.0.0.1:$PORT$path"
  local who_all="h2load throng-h2 engine"
  [ -n "$BIN" ] && [ "$grpc" = 0 ] && who_all="$who_all throng-run"
  [ -n "$WHO" ] && who_all=$WHO
  declare -A rps cpu
  echo "== $name: $USERS streams on 1 connection, ${DURATION}s x $ROUNDS rounds"
  for r in $(seq "$ROUNDS"); do
    for who in $who_all; do
      case $who in
        h2load)
          if [ "$grpc" = 1 ]; then
            res=$(measure h2load -c 1 -m "$USERS" -D "$DURATION" -H 'content-type: application/grpc' \
              -H 'te: trailers' -d "$work/frame.bin" "$url")
          else
            res=$(measure h2load -c 1 -m "$USERS" -D "$DURATION" "$url")
          fi ;;
        throng-h2)
          if [ "$grpc" = 1 ]; then
            res=$(measure "$LOAD" "$url" -c "$USERS" -z "$DURATION" --grpc "$work/frame.bin")
          else
            res=$(measure "$LOAD" "$url" -c "$USERS" -z "$DURATION")
          fi ;;
        engine)
          if [ "$grpc" = 1 ]; then
            res=$(measure "$ENGINE" "$url" -c "$USERS" -z "$DURATION" --grpc "$work/frame.bin")
          else
            res=$(measure "$ENGINE" "$url" -c "$USERS" -z "$DURATION")
          fi ;;
        throng-run)
          res=$(measure "$BIN" run "$url" --http2 -c "$USERS" --streams "$USERS" -z "${DURATION}s" \
            --no-tui --quiet --json "$work/r.json") ;;
      esac
      read -r n c <<< "$res"
      r_s=$(awk -v n="$n" -v d="$DURATION" 'BEGIN {printf "%.0f", n / d}')
      c_m=$(awk -v n="$n" -v c="$c" 'BEGIN {printf "%.2f", (n > 0) ? c / n * 1e6 : 0}')
      printf 'round %d  %-10s %9s req/s  %6s CPU-s per million requests\n' "$r" "$who" "$r_s" "$c_m"
      rps[$who]+="$r_s "
      cpu[$who]+="$c_m "
    done
  done
  declare -A mr mc
  for who in $who_all; do
    mr[$who]=$(echo "${rps[$who]}" | median)
    mc[$who]=$(echo "${cpu[$who]}" | median)
    printf 'median %-10s %9s req/s  %6s CPU-s per million requests\n' "$who" "${mr[$who]}" "${mc[$who]}"
  done
  for who in $who_all; do
    [ "$who" = h2load ] && continue
    awk -v w="$who" -v tr="${mr[$who]}" -v hr="${mr[h2load]}" -v tc="${mc[$who]}" -v hc="${mc[h2load]}" 'BEGIN {
      printf "%s/h2load: req/s %.3f, CPU per request %.3f\n", w, tr / hr, tc / hc
    }'
  done
}

bench "h2c GET" "$GET_PATH" 0
if [ "$GRPC" = 1 ]; then
  bench "gRPC unary" /helloworld.Greeter/SayHello 1
fi
