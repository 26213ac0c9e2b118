#!/usr/bin/env bash
# End-to-end benchmark: throng against wrk and oha on the same nginx, one after another, in one
# run. Prints requests/s and load-generator CPU seconds per million requests for each, and
# throng's ratios. Then: throng's open loop at 20,000 req/s (achieved rate, p99) and throng's
# RSS after 10 s and 60 s of steady load at 1,000 connections.
#
#   benches/e2e.sh            # needs: nginx-light, wrk (apt), oha (cargo install oha --locked)
#   DURATION=10 CONNS=50 benches/e2e.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18480}
LONG=${LONG:-60}

command -v nginx >/dev/null || { echo "install nginx-light (apt-get install nginx-light)"; exit 2; }
command -v wrk >/dev/null || { echo "install wrk (apt-get install wrk)"; exit 2; }
command -v oha >/dev/null || { echo "install oha (cargo install oha --locked)"; exit 2; }
cargo build --release -q
THRONG=$PWD/target/release/throng

work=$(mktemp -d)
trap 'nginx -p "$work" -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT
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
}
CONF
nginx -p "$work" -c "$work/nginx.conf"
sleep 0.5
URL=http://127.0.0.1:$PORT/

# Runs a command under /usr/bin/time; prints "requests cpu_seconds".
measure() {
  local out="$1"; shift
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" > "$out" 2>&1
  awk '{print $1 + $2}' "$work/time"
}

echo "== closed loop: $CONNS connections, ${DURATION}s each, target nginx at $URL"
cpu=$(measure "$work/wrk.out" wrk -t2 -c"$CONNS" -d"${DURATION}s" "$URL")
req=$(awk '/requests in/ {print $1}' "$work/wrk.out")
wrk_rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
wrk_cpu=$(echo "$cpu $req" | awk '{printf "%.2f", $1 / $2 * 1e6}')
echo "wrk     ${wrk_rps} req/s   ${wrk_cpu} CPU-s per million requests"

cpu=$(measure "$work/oha.out" oha --no-tui -c "$CONNS" -z "${DURATION}s" "$URL")
oha_rps=$(awk '/Requests\/sec/ {print $2}' "$work/oha.out")
req=$(echo "$oha_rps $DURATION" | awk '{print $1 * $2}')
oha_cpu=$(echo "$cpu $req" | awk '{printf "%.2f", $1 / $2 * 1e6}')
echo "oha     ${oha_rps} req/s   ${oha_cpu} CPU-s per million requests"

cpu=$(measure "$work/throng.out" "$THRONG" run "$URL" -c "$CONNS" -z "${DURATION}s" --quiet --no-tui --json "$work/t.json")
req=$(python3 -c "import json;print(json.load(open('$work/t.json'))['total']['samples'])")
thr_rps=$(python3 -c "import json;print(round(json.load(open('$work/t.json'))['total']['throughput'],1))")
thr_cpu=$(echo "$cpu $req" | awk '{printf "%.2f", $1 / $2 * 1e6}')
echo "throng  ${thr_rps} req/s   ${thr_cpu} CPU-s per million requests"
echo "ratios  throng/wrk req/s $(echo "$thr_rps $wrk_rps" | awk '{printf "%.3f", $1/$2}')   CPU/req $(echo "$thr_cpu $wrk_cpu" | awk '{printf "%.3f", $1/$2}')"
echo "        throng/oha req/s $(echo "$thr_rps $oha_rps" | awk '{printf "%.3f", $1/$2}')   CPU/req $(echo "$thr_cpu $oha_cpu" | awk '{printf "%.3f", $1/$2}')"

echo "== a one-step scenario against the same URL (the cost of a flow step)"
cat > "$work/one.yaml" <<YAML
# one step, the same request as throng run URL
targets: { web: http://127.0.0.1:$PORT }
steps:
  - label: GET /
    request: { path: / }
YAML
"$THRONG" run "$work/one.yaml" -c "$CONNS" -z "${DURATION}s" --quiet --no-tui --json "$work/s.json" > /dev/null
sc_rps=$(python3 -c "import json;print(round(json.load(open('$work/s.json'))['total']['throughput'],1))")
echo "scenario ${sc_rps} req/s   ratio scenario/url $(echo "$sc_rps $thr_rps" | awk '{printf "%.3f", $1/$2}')"

echo "== open loop: 20000 req/s for ${DURATION}s"
"$THRONG" run "$URL" -q 20000 -z "${DURATION}s" --max-in-flight 1000 --quiet --no-tui --json "$work/o.json" > /dev/null
python3 - "$work/o.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
o = r["open_loop"]; t = r["total"]
err = (o["achieved_rate"] - 20000) / 20000 * 100
print(f"achieved {o['achieved_rate']:.1f}/s ({err:+.3f}% of target)   completed {t['throughput']:.1f}/s   "
      f"p99 {t['latency']['p99']:.2f} ms   lag p99 {o['lag']['p99']:.2f} ms   late {o['late']}   dropped {o['dropped']}")
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
PY
