#!/usr/bin/env bash
# throng against Go clients on the brokers' own libraries: the same N calls at C at a time to
# nats-server and rabbitmq-server, by throng and by a Go client built offline from Debian's
# nats.go and amqp091-go (crates/nats/examples/requester.go, benches/brokers/amqp_client.go),
# taking turns for ROUNDS rounds, every message the same payload (hello), in two kinds:
#
# - rr, request–reply: each request answered by the Go responders of the tests.
# - pc, publish–consume: each message published and awaited by the client's own consumer (a
#   subscriber or a queue consumer on a connection of its own), on a subject or queue of each
#   client's own: throng's --subject-mode publish and --amqp-mode publish (RabbitMQ: no
#   publisher confirms, consumer acks, prefetch 100, mandatory publishes), requester.go's and
#   amqp_client.go's -publish, the same settings. Each side's CPU is its publishing and its
#   consuming.
#
# Every run must count its N: throng's result its N samples (and, publish–consume, N
# delivered in its protocol_counts), the Go clients no error. Prints each run's calls/s and
# the client's CPU seconds (user + system) per million calls, then the medians and the
# ratios throng/Go.
#
#   benches/brokers.sh                          # target/release/throng, N=100000, C=100, 3 rounds
#   N=200000 C=50 ROUNDS=5 benches/brokers.sh [THRONG_BINARY]
#   BROKERS=nats benches/brokers.sh             # one broker only (nats or amqp)
#   KINDS=pc benches/brokers.sh                 # one kind only (rr or pc)
#
# Measured (release build, 2 cores shared with other engineers' work, so indicative;
# nats-server 2.9.10, rabbitmq-server 3.10.8 and the Go responders on the same machine;
# N=100000, C=100, 3 alternating rounds, every run's N counted), CPU-s per million, throng
# against Go (rounds), medians' ratio:
#   NATS request–reply       2.5 (2.2, 2.5, 2.5) against  8.3 (8.3, 8.1, 9.0): 0.30x
#   NATS publish–consume     3.8 (3.8, 3.8, 5.2) against 11.3 (11.1, 11.3, 11.7): 0.34x
#   RabbitMQ RPC            24.4 (24.4, 24.4, 24.0) against 36.8 (36.8, 29.2, 37.7): 0.66x
#   RabbitMQ publish–consume 13.9 (13.9, 13.3, 15.8) against 40.4 (43.3, 38.3, 40.4): 0.34x
# (that row from a later KINDS=pc BROKERS=amqp run, load average 3.5-5.2, after throng's
# consumer took to acking the deliveries at hand at once: it was 57.0 against 26.3, 2.17x).
# NATS at 180,000 calls/s against nats.go's 82,000-85,000; RabbitMQ RPC at the broker's pace
# (11,000-14,000/s, throng with publisher confirms on its RPC channel, the Go client without);
# RabbitMQ publish–consume throng 35,800-44,200 messages/s against 11,300-15,400. Under perf,
# over half of throng's RabbitMQ publish–consume samples are now in lapin's I/O thread per
# connection. The request–reply run before this one gave 0.34x and 0.70x.
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
KINDS=${KINDS:-rr pc}
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

declare -A url go_cmd flags what
what[rr]=request–replies
what[pc]="published messages"
if [[ " $BROKERS " == *" nats "* ]]; then
  np=$(free_port)
  nats-server -a 127.0.0.1 -p "$np" > "$work/nats.log" 2>&1 &
  pids+=($!)
  wait_port "$np"
  respond "$work/nats_responder" -url "nats://127.0.0.1:$np" -subject greeter
  url[nats.rr]="nats://127.0.0.1:$np/greeter"
  go_cmd[nats.rr]="$work/nats_client -url nats://127.0.0.1:$np -subject greeter"
  # Publish–consume on subjects no responder listens on, one for each client.
  url[nats.pc]="nats://127.0.0.1:$np/bench.throng"
  flags[nats.pc]="--subject-mode publish"
  go_cmd[nats.pc]="$work/nats_client -url nats://127.0.0.1:$np -subject bench.go -publish"
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
  url[amqp.rr]="amqp://guest:guest@127.0.0.1:$ap/%2f?routing_key=greeter"
  go_cmd[amqp.rr]="$work/amqp_client -url amqp://guest:guest@127.0.0.1:$ap/ -key greeter -d $PAYLOAD"
  # Publish–consume on queues of their own (each client declares its, auto-delete): no
  # confirms, consumer acks, prefetch 100 on both sides.
  url[amqp.pc]="amqp://guest:guest@127.0.0.1:$ap/%2f?routing_key=bench_throng"
  flags[amqp.pc]="--amqp-mode publish"
  go_cmd[amqp.pc]="$work/amqp_client -url amqp://guest:guest@127.0.0.1:$ap/ -key bench_go -d $PAYLOAD -publish"
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
    # throng's result: its errors, or how many requests fell short of N (publish–consume:
    # how many of the N messages its consumers were not delivered).
    *) errs=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); t = r["total"]
n = int(sys.argv[2]); d = [v for k, v in r.get("protocol_counts", {}).items() if k.endswith("_delivered")]
got = d[0] if d else t["samples"]
print(t["errors"] if got == n and t["samples"] == n else str(n - min(got, t["samples"])) + " missing,")' \
              "$work/r.json" "$N" 2>/dev/null || echo '?') ;;
  esac
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}') $(awk '{print $1 + $2}' "$t" | tail -1) ${errs:-?}"
}

declare -A rps cpu
for b in $BROKERS; do
  for k in $KINDS; do
    for r in $(seq "$ROUNDS"); do
      for who in throng go; do
        case $who in
          # shellcheck disable=SC2086 # the flags, split on purpose
          throng) rm -f "$work/r.json"
                  res=$(measure "$THRONG" run "${url[$b.$k]}" ${flags[$b.$k]:-} -d "$PAYLOAD" -c "$C" -n "$N" --no-tui --quiet --json "$work/r.json") ;;
          # shellcheck disable=SC2086 # the command and its flags, split on purpose
          go) res=$(measure ${go_cmd[$b.$k]} -c "$C" -n "$N") ;;
        esac
        read -r secs c errs <<< "$res"
        r_s=$(awk -v n="$N" -v s="$secs" 'BEGIN {printf "%.0f", n / s}')
        c_m=$(awk -v n="$N" -v c="$c" 'BEGIN {printf "%.2f", c / n * 1e6}')
        printf '%-4s %-2s round %d  %-6s %8s /s  %6s CPU-s per million %s  (%s errors)\n' \
          "$b" "$k" "$r" "$who" "$r_s" "$c_m" "${what[$k]}" "$errs"
        rps[$b.$k.$who]+="$r_s "
        cpu[$b.$k.$who]+="$c_m "
      done
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for b in $BROKERS; do
  for k in $KINDS; do
    declare -A mr mc
    for who in throng go; do
      mr[$who]=$(echo "${rps[$b.$k.$who]}" | median)
      mc[$who]=$(echo "${cpu[$b.$k.$who]}" | median)
      printf '%-4s %-2s median %-6s %8s /s  %6s CPU-s per million %s\n' "$b" "$k" "$who" "${mr[$who]}" "${mc[$who]}" "${what[$k]}"
    done
    awk -v b="$b" -v k="$k" -v w="${what[$k]}" -v tr="${mr[throng]}" -v gr="${mr[go]}" -v tc="${mc[throng]}" -v gc="${mc[go]}" 'BEGIN {
      printf "%-4s %-2s throng/go: rate %.2f, CPU per %s %.2f\n", b, k, tr / gr, w, tc / gc
    }'
  done
done
