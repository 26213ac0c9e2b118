#!/usr/bin/env bash
# What live metrics cost a run: benches/builds.sh with one binary as both builds, the "new" runs
# with --metrics-listen (scraped every second by a real Prometheus) or --metrics-push (to it,
# every second). builds.sh's "new/base" line is then the cost of the metrics: requests/s and CPU
# (user + system, the exporter's thread included) per request, with over without.
#
#   benches/metrics.sh [BINARY]        # BINARY defaults to target/release/throng
#   DURATION=8 CONNS=50 ROUNDS=3 benches/metrics.sh
#
# Needs what builds.sh needs (nginx-light, wrk) and prometheus (apt-get install prometheus).
# Load goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${1:-$PWD/target/release/throng}
PROM_PORT=${PROM_PORT:-18492}
METRICS_PORT=${METRICS_PORT:-18493}
command -v prometheus >/dev/null || { echo "install prometheus (apt-get install prometheus)"; exit 2; }

work=$(mktemp -d)
trap '[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null; rm -rf "$work"' EXIT
printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: throng\n    static_configs:\n      - targets: [127.0.0.1:%s]\n' \
  "$METRICS_PORT" > "$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address=127.0.0.1:$PROM_PORT --web.enable-remote-write-receiver --log.level=warn \
  > "$work/log" 2>&1 &
echo $! > "$work/pid"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null && break; sleep 0.2; done

echo "== --metrics-listen, scraped every second"
NEW_ARGS="--metrics-listen 127.0.0.1:$METRICS_PORT --metrics-linger 3s" benches/builds.sh "$BIN" "$BIN"
echo "== --metrics-push every second"
NEW_ARGS="--metrics-push http://127.0.0.1:$PROM_PORT/api/v1/write --metrics-interval 1s" benches/builds.sh "$BIN" "$BIN"
echo "Prometheus holds: $(curl -s "http://127.0.0.1:$PROM_PORT/api/v1/query?query=count(throng_requests_total)" | grep -o '"value":\[[^]]*\]' || echo nothing)"
