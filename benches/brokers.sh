#!/usr/bin/env bash
# throng against Go clients on the brokers' own libraries, request–reply: the same N requests
# at C at a time to nats-server and rabbitmq-server, each answered by the Go responders of the
# tests, by throng and by a Go client built offline from Debian's nats.go and amqp091-go
# (crates/nats/examples/requester.go, benches/brokers/amqp_client.go), taking turns for ROUNDS
# rounds, every request the same payload (requester.go's: hello). Prints each run's requests/s
# and the client's CPU seconds (user + system) per million request–replies, then the medians
# and the ratios throng/Go.
#
#   benches/brokers.sh                          # target/release/throng, N=100000, C=100, 3 rounds
#   N=200000 C=50 ROUNDS=5 benches/brokers.sh [THRONG_BINARY]
#   BROKERS=nats benches/brokers.sh             # one broker only (nats or amqp)
#
# Measured (release build, 2 cores shared with other engineers' builds at a load of 5 to 8, so
# indicative; nats-server 2.9.10, rabbitmq-server 3.10 and the Go responders on the same
# machine; N=100000, C=100, 3 alternating rounds, every run's N replies counted): NATS, throng
# 2.2 CPU-s per million request–replies (2.0, 2.2, 2.2) against nats.go's 6.5 (6.2, 7.0, 6.5),
# 0.34x, at 170,000 against 82,000 requests/s; RabbitMQ, throng 21.3 (23.5, 21.3, 20.0) against
# amqp091-go's 30.6 (30.6, 27.8, 32.6), 0.70x, both at the broker's pace (8,000-13,000
# requests/s), throng with publisher confirms on its RPC channel and the Go client without.
# An earlier run gave 0.33x and 0.80x.
#
# Needs nats-server, rabbitmq-server, golang-go, golang-github-nats-io-go-nats-dev and
# golang-github-rabbitmq-amqp091-go-dev (apt-get install ...). Load goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

THRONG=${1:-$PWD/target/release/throng}
N=${N:-100000}
C=${C:-100}
ROUNDS=${ROUNDS:-3}
BROKERS=${BROKERS:-nats amqp}
PAYLOAD=hello

for cmd in nats-server go /usr/lib/rabbitmq/bin/rabbitmq-server; do
  command -v "$cmd" >/dev/null || { echo "install $cmd (see the header of $0)"; exit 2; }
done
[ -x "$THRONG" ] || { echo "$THRONG: build it first (cargo build --release)"; exit 2; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # The RabbitMQ node's process group (beam, epmd's child, the shell wrapper).
  [ -n "${rabbit:-}" ] && kill -9 -- "-$rabbit" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 600); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "nothing listens on $1"; exit 1
}
go_build() {
  GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= go build -o "$work/$1" "$2"
}

go_build nats_responder crates/nats/tests/nats/responder.go
go_build amqp_responder crates/amqp/tests/amqp/responder.go
go_build nats_client crates/nats/examples/requester.go
go_build amqp_client benches/brokers/amqp_client.go

# A responder serves until its standard input closes: a FIFO this script holds open for
# writing, closed when it exits.
respond() {
  local fifo
  fifo=$work/hold.$RANDOM
  mkfifo "$fifo"
  "$@" < "$fifo" > "$fifo.log" 2>&1 &
  pids+=($!)
  exec {hold}> "$fifo"
}

declare -A url go_cmd
if [[ " $BROKERS " == *" nats "* ]]; then
  np=$(free_port)
  nats-server -a 127.0.0.1 -p "$np" > "$work/nats.log" 2>&1 &
  pids+=($!)
  wait_port "$np"
  respond "$work/nats_responder" -url "nats://127.0.0.1:$np" -subject greeter
  url[nats]="nats://127.0.0.1:$np/greeter"
  go_cmd[nats]="$work/nats_client -url nats://127.0.0.1:$np -subject greeter"
fi
if [[ " $BROKERS " == *" amqp "* ]]; then
  ap=$(free_port) dp=$(free_port)
  mkdir -p "$work/rabbit/mnesia" "$work/rabbit/log"
  printf 'listeners.tcp.default = 127.0.0.1:%s\n' "$ap" > "$work/rabbit/rabbitmq.conf"
  echo '[].' > "$work/rabbit/enabled_plugins"
  d=$work/rabbit
  HOME=$d RABBITMQ_NODENAME="bench-$ap@localhost" RABBITMQ_NODE_PORT=$ap RABBITMQ_DIST_PORT=$dp \
    RABBITMQ_MNESIA_BASE=$d/mnesia RABBITMQ_LOG_BASE=$d/log RABBITMQ_CONFIG_FILE=$d/rabbitmq.conf \
    RABBITMQ_ENABLED_PLUGINS_FILE=$d/enabled_plugins RABBITMQ_FEATURE_FLAGS_FILE=$d/mnesia/ff \
    RABBITMQ_PID_FILE=$d/pid RABBITMQ_CONF_ENV_FILE=$d/no-env \
    setsid /usr/lib/rabbitmq/bin/rabbitmq-server > "$d/out.log" 2>&1 &
  rabbit=$!
  wait_port "$ap"
  respond "$work/amqp_responder" -url "amqp://guest:guest@127.0.0.1:$ap/" -queue greeter
  sleep 1
  url[amqp]="amqp://guest:guest@127.0.0.1:$ap/%2f?routing_key=greeter"
  go_cmd[amqp]="$work/amqp_client -url amqp://guest:guest@127.0.0.1:$ap/ -key greeter -d $PAYLOAD"
fi

# Runs a client under /usr/bin/time; prints "seconds cpu_seconds errors".
measure() {
  local out="$work/out" t="$work/time"
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$t" "$@" > "$out" 2>&1 || true
  end=$(date +%s.%N)
  local errs
  case "$1" in
    */nats_client) errs=$(awk '/^requests:/ {print substr($6, 2)}' "$out") ;;
    */amqp_client) errs=$(awk '/^done/ {print $4}' "$out") ;;
    # throng's result: its errors, or how many requests fell short of N.
    *) errs=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["total"]
n = int(sys.argv[2]); print(t["errors"] if t["samples"] == n else str(n - t["samples"]) + " missing,")' \
              "$work/r.json" "$N" 2>/dev/null || echo '?') ;;
  esac
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}') $(awk '{print $1 + $2}' "$t" | tail -1) ${errs:-?}"
}

declare -A rps cpu
for b in $BROKERS; do
  for r in $(seq "$ROUNDS"); do
    for who in throng go; do
      case $who in
        throng) rm -f "$work/r.json"
                res=$(measure "$THRONG" run "${url[$b]}" -d "$PAYLOAD" -c "$C" -n "$N" --no-tui --quiet --json "$work/r.json") ;;
        # shellcheck disable=SC2086 # the command and its flags, split on purpose
        go) res=$(measure ${go_cmd[$b]} -c "$C" -n "$N") ;;
      esac
      read -r secs c errs <<< "$res"
      r_s=$(awk -v n="$N" -v s="$secs" 'BEGIN {printf "%.0f", n / s}')
      c_m=$(awk -v n="$N" -v c="$c" 'BEGIN {printf "%.2f", c / n * 1e6}')
      printf '%-4s round %d  %-6s %8s req/s  %6s CPU-s per million request–replies  (%s errors)\n' \
        "$b" "$r" "$who" "$r_s" "$c_m" "$errs"
      rps[$b.$who]+="$r_s "
      cpu[$b.$who]+="$c_m "
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for b in $BROKERS; do
  declare -A mr mc
  for who in throng go; do
    mr[$who]=$(echo "${rps[$b.$who]}" | median)
    mc[$who]=$(echo "${cpu[$b.$who]}" | median)
    printf '%-4s median %-6s %8s req/s  %6s CPU-s per million request–replies\n' "$b" "$who" "${mr[$who]}" "${mc[$who]}"
  done
  awk -v b="$b" -v tr="${mr[throng]}" -v gr="${mr[go]}" -v tc="${mc[throng]}" -v gc="${mc[go]}" 'BEGIN {
    printf "%-4s throng/go: requests/s %.2f, CPU per request–reply %.2f\n", b, tr / gr, tc / gc
  }'
done
