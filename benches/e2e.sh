#!/usr/bin/env bash
# End-to-end benchmark: throng against wrk and oha (HTTP/1.1) and h2load (HTTP/2) on the same
# nginx, taking turns, in one run. Prints requests/s and load-generator CPU seconds per million
# requests for each, and throng's ratios; a one-step scenario against the plain URL. Then the
# open loop at 20,000 req/s (throng and oha), throng's RSS after 10 s and 60 s at 1,000
# connections, and 10,000 connections held.
#
#   benches/e2e.sh            # needs: nginx-light, wrk, nghttp2-client (apt), oha (cargo install oha --locked)
#   DURATION=10 CONNS=50 ROUNDS=3 LONG=60 benches/e2e.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18480}
LONG=${LONG:-60}
ROUNDS=${ROUNDS:-3}

command -v nginx >/dev/null || { echo "install nginx-light (apt-get install nginx-light)"; exit 2; }
command -v wrk >/dev/null || { echo "install wrk (apt-get install wrk)"; exit 2; }
command -v oha >/dev/null || { echo "install oha (cargo install oha --locked)"; exit 2; }
command -v h2load >/dev/null || { echo "install h2load (apt-get install nghttp2-client)"; exit 2; }
cargo build --release -q
THRONG=$PWD/target/release/throng

work=$(mktemp -d)
trap 'nginx -p "$work" -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT
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
  server { listen 127.0.0.1:$PORT backlog=16384; root $work; location / { index index.html; } }
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

# The machine is shared and noisy: the four generators take turns, ROUNDS times, and each
# figure is the median of its rounds.
declare -A RPS CPU
echo "== closed loop: $CONNS connections, ${DURATION}s a run, $ROUNDS rounds, target nginx at $URL"
for round in $(seq "$ROUNDS"); do
  cpu=$(measure "$work/wrk.out" wrk -t2 -c"$CONNS" -d"${DURATION}s" "$URL")
  req=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  RPS[wrk]+=" $(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")"; CPU[wrk]+=" $(per_million "$cpu" "$req")"

  cpu=$(measure "$work/oha.json" oha --no-tui --output-format json -c "$CONNS" -z "${DURATION}s" "$URL")
  rps=$(json "$work/oha.json" "r['summary']['requestsPerSec']")
  req=$(echo "$rps $DURATION" | awk '{print $1 * $2}')
  RPS[oha]+=" $rps"; CPU[oha]+=" $(per_million "$cpu" "$req")"

  for kind in url scenario; do
    what=$URL; [ "$kind" = scenario ] && what=$work/one.yaml
    cpu=$(measure "$work/t.out" "$THRONG" run "$what" -c "$CONNS" -z "${DURATION}s" --quiet --no-tui --json "$work/t.json")
    req=$(json "$work/t.json" "r['total']['samples']")
    RPS[$kind]+=" $(json "$work/t.json" "round(r['total']['throughput'], 1)")"; CPU[$kind]+=" $(per_million "$cpu" "$req")"
  done
  echo "round $round: req/s wrk ${RPS[wrk]##* }  oha ${RPS[oha]##* }  throng ${RPS[url]##* }  scenario ${RPS[scenario]##* }"
done
declare -A MR MC
for g in wrk oha url scenario; do
  MR[$g]=$(echo "${RPS[$g]}" | median); MC[$g]=$(echo "${CPU[$g]}" | median)
  printf "%-16s %10s req/s   %6s CPU-s per million requests   (rounds: req/s%s)\n" \
    "$([ "$g" = url ] && echo throng || { [ "$g" = scenario ] && echo "throng scenario" || echo "$g"; })" \
    "${MR[$g]}" "${MC[$g]}" "${RPS[$g]}"
done
ratio() { echo "$1 $2" | awk '{printf "%.3f", $1 / $2}'; }
echo "ratios  throng/wrk req/s $(ratio "${MR[url]}" "${MR[wrk]}")   CPU/req $(ratio "${MC[url]}" "${MC[wrk]}")"
echo "        throng/oha req/s $(ratio "${MR[url]}" "${MR[oha]}")   CPU/req $(ratio "${MC[url]}" "${MC[oha]}")"
echo "        scenario/url req/s $(ratio "${MR[scenario]}" "${MR[url]}")   CPU/req $(ratio "${MC[scenario]}" "${MC[url]}")"

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

echo "== open loop: 20000 req/s for ${DURATION}s, throng and then oha (--latency-correction)"
"$THRONG" run "$URL" -q 20000 -z "${DURATION}s" --max-in-flight 1000 --quiet --no-tui --json "$work/o.json" > /dev/null
python3 - "$work/o.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
o = r["open_loop"]; t = r["total"]; l = t["latency"]
err = (o["achieved_rate"] - 20000) / 20000 * 100
print(f"throng  achieved {o['achieved_rate']:.1f}/s ({err:+.3f}% of target)   p50 {l['p50']:.2f} ms   "
      f"p99 {l['p99']:.2f} ms   lag p99 {o['lag']['p99']:.2f} ms   late {o['late']}   dropped {o['dropped']}")
PY
oha --no-tui --output-format json -q 20000 -z "${DURATION}s" -c 1000 --latency-correction "$URL" > "$work/oq.json"
python3 - "$work/oq.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]; p = r["latencyPercentiles"]
err = (s["requestsPerSec"] - 20000) / 20000 * 100
print(f"oha     achieved {s['requestsPerSec']:.1f}/s ({err:+.3f}% of target)   p50 {p['p50']*1e3:.2f} ms   "
      f"p99 {p['p99']*1e3:.2f} ms")
PY

echo "== memory: 1000 connections, RSS after 10 s and after ${LONG} s"
"$THRONG" run "$URL" -c 1000 -z "$((LONG + 2))s" --quiet --no-tui > /dev/null &
pid=$!
sleep 10; rss10=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
sleep $((LONG - 10)); rss60=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
peak=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
wait $pid
echo "RSS ${rss10} kB at 10 s, ${rss60} kB at ${LONG} s, peak ${peak} kB"

echo "== 10000 connections held for ${DURATION}s"
"$THRONG" run "$URL" -c 10000 -z "$((DURATION + 5))s" --quiet --no-tui --json "$work/k.json" > /dev/null &
pid=$!
sleep $((DURATION / 2 + 5))
held=$(ss -Htn state established "( dport = :$PORT )" | wc -l)
wait $pid
python3 - "$work/k.json" "$held" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["total"]
print(f"established {sys.argv[2]} connections mid-run   {t['samples']} requests   {t['throughput']:.1f}/s   "
      f"errors {t['errors']}   p99 {t['latency']['p99']:.2f} ms")
for e in r.get("errors", []):
    print("  error", e)
PY
