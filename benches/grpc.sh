#!/usr/bin/env bash
# throng's gRPC driver against h2load, the raw HTTP/2 floor, on the testbed's greeter: closed
# loop, unary SayHello, taking turns. h2load sends the same prebuilt gRPC frame (5-byte prefix
# and HelloRequest{name:"throng"}) over the same connections with the same concurrent streams.
# Prints calls/s and generator CPU-seconds (user + system) per million calls for each run, the
# medians and the ratio throng/h2load; then throng's RSS at 1,000 concurrent calls.
#
#   benches/grpc.sh                       # DURATION=10 USERS=50 STREAMS=25 ROUNDS=3
#   BIN=/tmp/base/throng benches/grpc.sh  # another build
#
# Needs h2load (apt-get install nghttp2-client) and a release build (cargo build --release).
# Load goes to 127.0.0.1 only. The greeter runs in its own throng process (its CPU is not
# counted); on a 2-core machine it shares the cores with the generator, as in every peer's run.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-$PWD/target/release/throng}
DURATION=${DURATION:-10}
USERS=${USERS:-50}
STREAMS=${STREAMS:-25}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18591}

command -v h2load >/dev/null || { echo "install h2load (apt-get install nghttp2-client)"; exit 2; }
[ -x "$BIN" ] || { echo "build throng first: cargo build --release"; exit 2; }

work=$(mktemp -d)
"$BIN" serve grpc --port "$PORT" > "$work/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 1
URL="grpc://127.0.0.1:$PORT"
CALL=helloworld.Greeter/SayHello
# HelloRequest{name: "throng"}: field 1, length 6; behind gRPC's prefix (uncompressed, length 8).
printf '\x00\x00\x00\x00\x08\x0a\x06throng' > "$work/frame.bin"
CONNS=$(( (USERS + STREAMS - 1) / STREAMS ))

# Runs a command under /usr/bin/time; prints "calls cpu_seconds".
measure() {
  local out="$work/out" t="$work/time"
  /usr/bin/time -f "%U %S" -o "$t" "$@" > "$out" 2>&1 || true
  local cpu n
  cpu=$(awk '{print $1 + $2}' "$t" | tail -1)
  case "$1" in
    h2load) n=$(awk '/^requests:/ {print $8}' "$out") ;;   # "N succeeded"
    *) n=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["total"]["samples"] - r["total"]["errors"])' "$work/r.json") ;;
  esac
  echo "${n:-0} $cpu"
}

# bench NAME URL CALL JSON FRAME PROTO...: ROUNDS of h2load and throng, then medians and ratios.
bench() {
  local name=$1 url=$2 call=$3 json=$4 frame=$5
  shift 5
  local port=${url##*:}
  declare -A rps cpu
  echo "== $name: $call, $USERS users on $CONNS connections ($STREAMS streams each), ${DURATION}s"
  for r in $(seq "$ROUNDS"); do
    for who in h2load throng; do
      case $who in
        h2load) res=$(measure h2load -c "$CONNS" -m "$STREAMS" -D "$DURATION" \
          -H 'content-type: application/grpc' -H 'te: trailers' -d "$frame" \
          "http://127.0.0.1:$port/$call") ;;
        throng) res=$(measure "$BIN" run "$url" --call "$call" "$@" -d "$json" -c "$USERS" \
          --streams "$STREAMS" -z "${DURATION}s" --no-tui --quiet --json "$work/r.json") ;;
      esac
      read -r n c <<< "$res"
      r_s=$(awk -v n="$n" -v d="$DURATION" 'BEGIN {printf "%.0f", n / d}')
      c_m=$(awk -v n="$n" -v c="$c" 'BEGIN {printf "%.2f", (n > 0) ? c / n * 1e6 : 0}')
      printf 'round %d  %-6s %9s calls/s  %6s CPU-s per million calls\n' "$r" "$who" "$r_s" "$c_m"
      rps[$who]+="$r_s "
      cpu[$who]+="$c_m "
    done
  done
  declare -A mr mc
  for who in h2load throng; do
    mr[$who]=$(echo "${rps[$who]}" | median)
    mc[$who]=$(echo "${cpu[$who]}" | median)
    printf 'median %-6s %9s calls/s  %6s CPU-s per million calls\n' "$who" "${mr[$who]}" "${mc[$who]}"
  done
  awk -v tr="${mr[throng]}" -v hr="${mr[h2load]}" -v tc="${mc[throng]}" -v hc="${mc[h2load]}" 'BEGIN {
    printf "throng/h2load: calls/s %.3f, CPU per call %.3f\n", tr / hr, tc / hc
  }'
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

bench "the testbed greeter" "$URL" "$CALL" '{"name":"throng"}' "$work/frame.bin" \
  --proto crates/testbed/proto/greeter.proto

# grpc-go's health Check (HealthCheckRequest{}: an empty message, a 5-byte frame), when the
# test command has built the server (scripts/test) or Go is here to build it.
GO_SERVER=${GO_SERVER:-target/grpc-go-server}
if [ ! -x "$GO_SERVER" ] && command -v go >/dev/null; then
  GO111MODULE=off GOPATH=/usr/share/gocode go build -o "$GO_SERVER" testdata/grpc/server.go
fi
if [ -x "$GO_SERVER" ]; then
  "$GO_SERVER" -addr "127.0.0.1:$((PORT + 2))" > "$work/go.log" 2>&1 &
  go_server=$!
  sleep 1
  printf '\x00\x00\x00\x00\x00' > "$work/empty.bin"
  bench "grpc-go (Debian's 1.33)" "grpc://127.0.0.1:$((PORT + 2))" grpc.health.v1.Health/Check '{}' \
    "$work/empty.bin"
  kill "$go_server"
else
  echo "== grpc-go: skipped (no $GO_SERVER and no Go: apt-get install golang-go golang-google-grpc-dev)"
fi

# Memory at 1,000 concurrent unary calls (a 50 ms delay keeps them in flight).
"$BIN" serve grpc --port $((PORT + 1)) --delay 50ms > "$work/serve2.log" 2>&1 &
slow=$!
trap 'kill "$server" "$slow" 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 1
/usr/bin/time -f "%M" -o "$work/rss" "$BIN" run "grpc://127.0.0.1:$((PORT + 1))" --call "$CALL" \
  --proto crates/testbed/proto/greeter.proto -c 1000 -z 5s --no-tui --quiet > /dev/null 2>&1 || true
echo "RSS at 1000 concurrent calls: $(awk '{printf "%.1f MB", $1 / 1024}' "$work/rss")"
