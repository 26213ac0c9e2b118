#!/usr/bin/env bash
# End-to-end benchmark: throng against wrk and oha (HTTP/1.1) and h2load (HTTP/2) on the same
# nginx, taking turns, in one run. Prints requests/s and load-generator CPU seconds per million
# requests for each, and throng's ratios; a one-step scenario against the plain URL. Then the
# open loop at 20,000 req/s (throng and oha), and peak RSS holding 1,000 and 10,000 connections
# beside wrk's, then throng's RSS over LONG seconds at 1,000.
#
#   benches/e2e.sh            # needs: nginx-light, wrk, nghttp2-client (apt), oha (cargo install oha --locked)
#   DURATION=10 CONNS=50 ROUNDS=3 LONG=120 benches/e2e.sh
#   PARTS="closed https" THRONG=/path/to/throng benches/e2e.sh   # some parts, a given build
#
# Parts: closed (HTTP/1.1 closed loop in two layouts, against wrk and oha, and a one-step
# scenario), https (HTTPS against oha on the testbed's TLS target), h2 (HTTP/2 against h2load),
# templates (a per-call template in -d against the one-step scenario with the same body, and the
# plain body, prepared once), open (the open loop at 20,000 req/s against oha, rounds
# alternating), memory (peak RSS of throng and wrk -t2 holding 1,000 and 10,000 connections,
# DURATION seconds each, side by side; then throng's RSS every 10 s over LONG seconds at 1,000).
#
#   PARTS=memory DURATION=10 LONG=60 benches/e2e.sh   # the memory figures alone
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18480}
LONG=${LONG:-120}
ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-closed templates https h2 open memory}
want() { [[ " $PARTS " == *" $1 "* ]]; }

command -v nginx >/dev/null || { echo "install nginx-light (apt-get install nginx-light)"; exit 2; }
if want closed || want memory; then
  command -v wrk >/dev/null || { echo "install wrk (apt-get install wrk)"; exit 2; }
fi
# 10,000 connections need as many descriptors, in throng and in wrk.
want memory && { ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"; }
if want https || want open; then
  command -v oha >/dev/null || { echo "install oha (cargo install oha --locked)"; exit 2; }
fi
HAVE_OHA=$(command -v oha >/dev/null && echo 2 || echo none)   # the layout oha runs in
want h2 && { command -v h2load >/dev/null || { echo "install h2load (apt-get install nghttp2-client)"; exit 2; }; }
if [ -z "${THRONG:-}" ]; then
  cargo build --release -q
  THRONG=$PWD/target/release/throng
fi

work=$(mktemp -d)
trap 'nginx -p "$work" -c "$work/nginx.conf" -s stop 2>/dev/null || true; [ -n "${tls_pid:-}" ] && kill "$tls_pid" 2>/dev/null; rm -rf "$work"' EXIT
chmod 755 "$work"   # nginx's workers run as another user and must read the page
mkdir -p "$work/logs"
echo -n "hello, world" > "$work/index.html"
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 20000;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 100000000;
  server { listen 127.0.0.1:$PORT backlog=16384; root $work; location / { index index.html; }
    location = /post { return 200 "ok"; } }   # a POST to a file is 405
  server { listen 127.0.0.1:$((PORT + 1)) http2; root $work; location / { index index.html; } }
}
CONF
nginx -p "$work" -c "$work/nginx.conf"
sleep 0.5
URL=http://127.0.0.1:$PORT/
# Every figure below is of 200 responses: stop here if nginx answers anything else.
"$THRONG" run "$URL" -n 10 --quiet --no-tui --threshold 'error_rate<0.01%' > /dev/null || {
  echo "nginx does not answer 200 at $URL"; exit 1; }

# Runs a command under /usr/bin/time; prints its user + system CPU seconds.
measure() {
  local out="$1"; shift
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" > "$out" 2>&1
  awk '{print $1 + $2}' "$work/time"
}
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
per_million() { echo "$1 $2" | awk '{printf "%.2f", $1 / $2 * 1e6}'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

cat > "$work/one.yaml" <<YAML
# one step, the same request as throng run URL
targets: { web: http://127.0.0.1:$PORT }
steps:
  - label: GET /
    request: { path: / }
YAML

# The machine is shared and noisy: the generators take turns, ROUNDS times, and each figure is
# the median of its rounds. Two layouts: one thread each (wrk -t1, throng --threads 1), and the
# defaults (two threads each: wrk -t2, throng's one worker per core). oha runs in the second.
declare -A RPS CPU MR MC P99
ratio() { echo "$1 $2" | awk '{printf "%.3f", $1 / $2}'; }
want closed && for threads in 1 2; do
  echo "== closed loop, $threads thread(s) each: $CONNS connections, ${DURATION}s a run, $ROUNDS rounds, target nginx at $URL"
  gens="wrk url scenario"; [ "$threads" = "$HAVE_OHA" ] && gens="wrk oha url scenario"
  for round in $(seq "$ROUNDS"); do
    cpu=$(measure "$work/wrk.out" wrk -t"$threads" -c"$CONNS" -d"${DURATION}s" "$URL")
    req=$(awk '/requests in/ {print $1}' "$work/wrk.out")
    RPS[wrk$threads]+=" $(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")"; CPU[wrk$threads]+=" $(per_million "$cpu" "$req")"

    if [ "$threads" = "$HAVE_OHA" ]; then
      cpu=$(measure "$work/oha.json" oha --no-tui --output-format json -c "$CONNS" -z "${DURATION}s" "$URL")
      rps=$(json "$work/oha.json" "r['summary']['requestsPerSec']")
      req=$(echo "$rps $DURATION" | awk '{print $1 * $2}')
      RPS[oha$threads]+=" $rps"; CPU[oha$threads]+=" $(per_million "$cpu" "$req")"
    fi

    for kind in url scenario; do
      what=$URL; [ "$kind" = scenario ] && what=$work/one.yaml
      cpu=$(measure "$work/t.out" "$THRONG" run "$what" -c "$CONNS" --threads "$threads" -z "${DURATION}s" --quiet --no-tui --json "$work/t.json")
      req=$(json "$work/t.json" "r['total']['samples']")
      RPS[$kind$threads]+=" $(json "$work/t.json" "round(r['total']['throughput'], 1)")"; CPU[$kind$threads]+=" $(per_million "$cpu" "$req")"
    done
    echo "round $round: req/s wrk ${RPS[wrk$threads]##* }  throng ${RPS[url$threads]##* }  scenario ${RPS[scenario$threads]##* }$([ "$threads" = "$HAVE_OHA" ] && echo "  oha ${RPS[oha2]##* }")"
  done
  for g in $gens; do
    MR[$g$threads]=$(echo "${RPS[$g$threads]}" | median); MC[$g$threads]=$(echo "${CPU[$g$threads]}" | median)
    printf "%-16s %10s req/s   %6s CPU-s per million requests   (rounds: req/s%s; CPU%s)\n" \
      "$([ "$g" = url ] && echo throng || { [ "$g" = scenario ] && echo "throng scenario" || echo "$g"; })" \
      "${MR[$g$threads]}" "${MC[$g$threads]}" "${RPS[$g$threads]}" "${CPU[$g$threads]}"
  done
  echo "ratios  throng/wrk req/s $(ratio "${MR[url$threads]}" "${MR[wrk$threads]}")   CPU/req $(ratio "${MC[url$threads]}" "${MC[wrk$threads]}")"
  [ "$threads" = "$HAVE_OHA" ] && echo "        throng/oha req/s $(ratio "${MR[url2]}" "${MR[oha2]}")   CPU/req $(ratio "${MC[url2]}" "${MC[oha2]}")"
  echo "        scenario/url req/s $(ratio "${MR[scenario$threads]}" "${MR[url$threads]}")   CPU/req $(ratio "${MC[scenario$threads]}" "${MC[url$threads]}")"
done

if want templates; then
  BODY='{"id": {{ seq() }}, "n": {{ rand_int(1, 1000) }}}'
  cat > "$work/post.yaml" <<YAML
# one step, the same request as throng run URL/post -m POST -d BODY
targets: { web: http://127.0.0.1:$PORT }
steps:
  - label: POST /post
    request: { method: POST, path: /post, body: '$BODY' }
YAML
  echo "== per-call templates: $CONNS connections, --threads 1, ${DURATION}s a run, $ROUNDS rounds, a templated -d against the scenario step with the same body"
  for round in $(seq "$ROUNDS"); do
    for kind in plain url scenario; do
      case $kind in
        plain) args=("${URL}post" -m POST -d '{"id": 1, "n": 2}') ;;
        url) args=("${URL}post" -m POST -d "$BODY") ;;
        scenario) args=("$work/post.yaml") ;;
      esac
      cpu=$(measure "$work/t.out" "$THRONG" run "${args[@]}" -c "$CONNS" --threads 1 -z "${DURATION}s" --quiet --no-tui --json "$work/t.json")
      [ "$(json "$work/t.json" "r['total']['errors']")" = 0 ] || { echo "$kind: errors"; cat "$work/t.out"; exit 1; }
      req=$(json "$work/t.json" "r['total']['samples']")
      RPS[t$kind]+=" $(json "$work/t.json" "round(r['total']['throughput'], 1)")"; CPU[t$kind]+=" $(per_million "$cpu" "$req")"
    done
    echo "round $round: req/s plain ${RPS[tplain]##* }  templated ${RPS[turl]##* }  scenario ${RPS[tscenario]##* }"
  done
  for k in plain url scenario; do
    MR[t$k]=$(echo "${RPS[t$k]}" | median); MC[t$k]=$(echo "${CPU[t$k]}" | median)
    printf "%-16s %10s req/s   %6s CPU-s per million requests   (CPU%s)\n" "$k" "${MR[t$k]}" "${MC[t$k]}" "${CPU[t$k]}"
  done
  echo "ratios  templated url/scenario CPU/req $(ratio "${MC[turl]}" "${MC[tscenario]}")   templated/plain url CPU/req $(ratio "${MC[turl]}" "${MC[tplain]}")"
fi

if want https; then
  TLS_PORT=$((PORT + 2))
  "$THRONG" serve http --tls --port "$TLS_PORT" > "$work/tls.out" 2>&1 &
  tls_pid=$!
  sleep 1
  TLS_URL=https://127.0.0.1:$TLS_PORT/
  echo "== HTTPS (the testbed's TLS target, its own self-signed certificate): $CONNS connections, ${DURATION}s a run, $ROUNDS rounds, throng against oha"
  for round in $(seq "$ROUNDS"); do
    cpu=$(measure "$work/oha.json" oha --no-tui --output-format json --insecure -c "$CONNS" -z "${DURATION}s" "$TLS_URL")
    rps=$(json "$work/oha.json" "r['summary']['requestsPerSec']")
    req=$(echo "$rps $DURATION" | awk '{print $1 * $2}')
    RPS[ohatls]+=" $rps"; CPU[ohatls]+=" $(per_million "$cpu" "$req")"
    cpu=$(measure "$work/t.out" "$THRONG" run "$TLS_URL" --insecure -c "$CONNS" -z "${DURATION}s" --quiet --no-tui --json "$work/t.json")
    req=$(json "$work/t.json" "r['total']['samples']")
    RPS[tls]+=" $(json "$work/t.json" "round(r['total']['throughput'], 1)")"; CPU[tls]+=" $(per_million "$cpu" "$req")"
    echo "round $round: req/s oha ${RPS[ohatls]##* }  throng ${RPS[tls]##* }"
  done
  for g in ohatls tls; do
    MR[$g]=$(echo "${RPS[$g]}" | median); MC[$g]=$(echo "${CPU[$g]}" | median)
    printf "%-16s %10s req/s   %6s CPU-s per million requests\n" "$([ "$g" = tls ] && echo "throng" || echo "oha")" "${MR[$g]}" "${MC[$g]}"
  done
  echo "ratios  throng/oha req/s $(ratio "${MR[tls]}" "${MR[ohatls]}")   CPU/req $(ratio "${MC[tls]}" "${MC[ohatls]}")   (the target shares the machine)"
  kill "$tls_pid"; wait "$tls_pid" 2>/dev/null || true; tls_pid=
fi

want h2 && {
echo "== HTTP/2 (h2c): 10 connections x 10 streams, ${DURATION}s a run, $ROUNDS rounds, throng against h2load"
H2URL=http://127.0.0.1:$((PORT + 1))/
for round in $(seq "$ROUNDS"); do
  cpu=$(measure "$work/h2load.out" h2load -c 10 -m 10 -t 2 -D "$DURATION" "$H2URL")
  req=$(awk '/^requests:/ {print $8}' "$work/h2load.out")
  RPS[h2load]+=" $(awk '/^finished in/ {print $4}' "$work/h2load.out")"; CPU[h2load]+=" $(per_million "$cpu" "$req")"
  # 100 users, 10 streams to a connection: 10 connections, as h2load's.
  cpu=$(measure "$work/t.out" "$THRONG" run "$H2URL" --http2 -c 100 --streams 10 -z "${DURATION}s" --quiet --no-tui --json "$work/h.json")
  req=$(json "$work/h.json" "r['total']['samples']")
  RPS[h2]+=" $(json "$work/h.json" "round(r['total']['throughput'], 1)")"; CPU[h2]+=" $(per_million "$cpu" "$req")"
  echo "round $round: req/s h2load ${RPS[h2load]##* }  throng ${RPS[h2]##* }"
done
for g in h2load h2; do
  MR[$g]=$(echo "${RPS[$g]}" | median); MC[$g]=$(echo "${CPU[$g]}" | median)
  printf "%-16s %10s req/s   %6s CPU-s per million requests\n" "$([ "$g" = h2 ] && echo "throng --http2" || echo "$g")" "${MR[$g]}" "${MC[$g]}"
done
echo "ratios  throng/h2load req/s $(ratio "${MR[h2]}" "${MR[h2load]}")   CPU/req $(ratio "${MC[h2]}" "${MC[h2load]}")"
}

if want open; then
  echo "== open loop: 20000 req/s for ${DURATION}s, $ROUNDS rounds alternating throng and oha (--latency-correction), 1000 in flight at most"
  for round in $(seq "$ROUNDS"); do
    cpu=$(measure "$work/t.out" "$THRONG" run "$URL" -q 20000 -z "${DURATION}s" --max-in-flight 1000 --quiet --no-tui --json "$work/o.json")
    read -r rate p99 n <<< "$(json "$work/o.json" "'%f %f %d' % (r['open_loop']['achieved_rate'], r['total']['latency']['p99'], r['total']['samples'])")"
    RPS[openT]+=" $rate"; CPU[openT]+=" $(per_million "$cpu" "$n")"; P99[openT]+=" $p99"
    cpu=$(measure "$work/oq.json" oha --no-tui --output-format json -q 20000 -z "${DURATION}s" -c 1000 --latency-correction "$URL")
    read -r rate p99 <<< "$(json "$work/oq.json" "'%f %f' % (r['summary']['requestsPerSec'], r['latencyPercentiles']['p99'] * 1e3)")"
    n=$(echo "$rate $DURATION" | awk '{print $1 * $2}')
    RPS[openO]+=" $rate"; CPU[openO]+=" $(per_million "$cpu" "$n")"; P99[openO]+=" $p99"
    echo "round $round: achieved throng ${RPS[openT]##* }/s p99 ${P99[openT]##* } ms   oha ${RPS[openO]##* }/s p99 ${P99[openO]##* } ms"
  done
  for g in openT openO; do
    MR[$g]=$(echo "${RPS[$g]}" | median); MC[$g]=$(echo "${CPU[$g]}" | median); MP=$(echo "${P99[$g]}" | median)
    printf "%-8s achieved %10s/s (%+.3f%% of target)   %6s CPU-s per million requests   median p99 %s ms\n" \
      "$([ "$g" = openT ] && echo throng || echo oha)" "${MR[$g]}" "$(echo "${MR[$g]}" | awk '{print ($1 - 20000) / 200}')" "${MC[$g]}" "$MP"
  done
  echo "ratios  throng/oha CPU/req $(ratio "${MC[openT]}" "${MC[openO]}")"
fi

# Samples a process's RSS (kB) every 10 s until it ends; prints them.
rss_series() {
  local pid=$1 out=""
  while sleep 10; do
    r=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null) || break
    [ -n "$r" ] || break
    out+=" $r"
  done
  echo "$out"
}

if want memory; then
  # Peak RSS (VmHWM, /usr/bin/time's %M) of a whole run holding N connections, throng and wrk
  # -t2 in turns against the same nginx: the figure compared with wrk's.
  echo "== memory: peak RSS holding 1,000 and 10,000 connections, ${DURATION}s a run, throng then wrk -t2"
  # throng's binary in the page cache as an installed one is (read in by its own faults), not
  # as the linker or a copy has just written it: written pages sit in larger folios, each
  # fault maps more of them, and the same binary read 3 MB more file-backed RSS (ARCHITECTURE,
  # "Memory per connection"). Dropped once here; the first run reads it back.
  dd if="$THRONG" iflag=nocache count=0 status=none 2>/dev/null || true
  printf '%12s %12s %12s %12s   %s\n' connections "throng MB" "wrk MB" throng/wrk \
    "throng: requests, errors, established and RSS anonymous + file-backed MB mid-run"
  for n in 1000 10000; do
    /usr/bin/time -f "%M" -o "$work/rss" "$THRONG" run "$URL" -c "$n" -z "${DURATION}s" --quiet --no-tui --json "$work/k.json" > /dev/null &
    pid=$!
    sleep $((DURATION - 2))
    held=$(ss -Htn state established "( dport = :$PORT )" | wc -l)
    split=$(awk '/^Rss:/ {r = $2} /^Anonymous:/ {a = $2} END {printf "%.1f + %.1f", a / 1024, (r - a) / 1024}' \
      "/proc/$(pgrep -P "$pid" | head -1)/smaps_rollup" 2>/dev/null || echo "?")
    wait $pid
    t=$(awk '{print $1 / 1024}' "$work/rss")
    /usr/bin/time -f "%M" -o "$work/rss" wrk -t2 -c"$n" -d"${DURATION}s" "$URL" > /dev/null
    w=$(awk '{print $1 / 1024}' "$work/rss")
    printf '%12s %12.1f %12.1f %12s   %s, %s, %s, %s\n' "$n" "$t" "$w" "$(ratio "$t" "$w")" \
      "$(json "$work/k.json" "r['total']['samples']")" "$(json "$work/k.json" "r['total']['errors']")" "$held" "$split"
  done

  echo "== memory over time: 1000 connections for ${LONG}s, RSS every 10 s (throng, then wrk -t2 for 30 s for scale)"
  "$THRONG" run "$URL" -c 1000 -z "${LONG}s" --quiet --no-tui --json "$work/m.json" > /dev/null &
  series=$(rss_series $!)
  echo "throng RSS kB:$series   (requests $(json "$work/m.json" "r['total']['samples']"), errors $(json "$work/m.json" "r['total']['errors']"))"
  wrk -t2 -c1000 -d30s "$URL" > /dev/null &
  echo "wrk    RSS kB:$(rss_series $!)"
fi
