#!/usr/bin/env bash
# Two builds of throng against each other and wrk, on the same nginx, taking turns: did a change
# cost speed? Prints requests/s and CPU seconds (user + system) per million requests for each
# run, then the medians and the ratios new/base and new/wrk.
#
#   benches/builds.sh BASE_BINARY [NEW_BINARY]     # NEW defaults to target/release/throng
#   DURATION=8 CONNS=50 ROUNDS=3 benches/builds.sh /tmp/base/throng
#   MODE=scenario benches/builds.sh /tmp/base/throng   # both builds run a one-step scenario file
#                                                      # (the scenario path) instead of the URL
#   NEW_ARGS='--metrics-push URL' benches/builds.sh B B  # one build, the new runs with more flags
#                                                      # (benches/metrics.sh does this)
#
# Build the base with `git worktree add /tmp/base REV && (cd /tmp/base && cargo build --release)`.
# Needs nginx-light and wrk (apt-get install nginx-light wrk). Load goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${1:?usage: benches/builds.sh BASE_BINARY [NEW_BINARY]}
NEW=${2:-$PWD/target/release/throng}
DURATION=${DURATION:-8}
CONNS=${CONNS:-50}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18490}
MODE=${MODE:-url}
read -r -a NEW_ARGS <<< "${NEW_ARGS:-}"

command -v nginx >/dev/null || { echo "install nginx-light (apt-get install nginx-light)"; exit 2; }
command -v wrk >/dev/null || { echo "install wrk (apt-get install wrk)"; exit 2; }

work=$(mktemp -d)
trap 'nginx -p "$work" -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/logs"
echo -n "hello, world" > "$work/index.html"
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  server { listen 127.0.0.1:$PORT; root $work; location / { index index.html; } }
}
CONF
nginx -p "$work" -c "$work/nginx.conf"
sleep 0.5
URL="http://127.0.0.1:$PORT/"
TARGET=$URL
if [ "$MODE" = scenario ]; then
  TARGET="$work/one-step.yaml"
  printf 'targets:\n  nginx: %s\nsteps:\n  - label: GET /\n    request:\n      path: /\n' "$URL" > "$TARGET"
fi
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL" 2>/dev/null || echo 200)" = 200 ] || { echo "nginx does not answer 200"; exit 1; }

# Runs a command under /usr/bin/time; prints "requests cpu_seconds".
measure() {
  local out="$work/out" t="$work/time"
  /usr/bin/time -f "%U %S" -o "$t" "$@" > "$out" 2>&1 || true
  local cpu
  cpu=$(awk '{print $1 + $2}' "$t" | tail -1)
  local n
  case "$1" in
    wrk) n=$(awk '/requests in/ {print $1}' "$out") ;;
    *) n=$(awk '/requests in/ {print $1; exit}' "$out") ;;
  esac
  echo "${n:-0} $cpu"
}

declare -A rps cpu
for r in $(seq "$ROUNDS"); do
  for who in wrk base new; do
    case $who in
      wrk) res=$(measure wrk -t 2 -c "$CONNS" -d "${DURATION}s" "$URL") ;;
      base) res=$(measure "$BASE" run "$TARGET" -c "$CONNS" -z "${DURATION}s" --no-tui --quiet) ;;
      new) res=$(measure "$NEW" run "$TARGET" -c "$CONNS" -z "${DURATION}s" --no-tui --quiet ${NEW_ARGS[@]+"${NEW_ARGS[@]}"}) ;;
    esac
    read -r n c <<< "$res"
    r_s=$(awk -v n="$n" -v d="$DURATION" 'BEGIN {printf "%.0f", n / d}')
    c_m=$(awk -v n="$n" -v c="$c" 'BEGIN {printf "%.2f", (n > 0) ? c / n * 1e6 : 0}')
    printf 'round %d  %-5s %9s req/s  %6s CPU-s per million requests\n' "$r" "$who" "$r_s" "$c_m"
    rps[$who]+="$r_s "
    cpu[$who]+="$c_m "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
declare -A mr mc
for who in wrk base new; do
  mr[$who]=$(echo "${rps[$who]}" | median)
  mc[$who]=$(echo "${cpu[$who]}" | median)
  printf 'median %-5s %9s req/s  %6s CPU-s per million requests\n' "$who" "${mr[$who]}" "${mc[$who]}"
done
awk -v nr="${mr[new]}" -v br="${mr[base]}" -v wr="${mr[wrk]}" \
    -v nc="${mc[new]}" -v bc="${mc[base]}" -v wc="${mc[wrk]}" 'BEGIN {
  printf "new/base: requests/s %.3f, CPU per request %.3f\n", nr / br, nc / bc
  printf "new/wrk:  requests/s %.3f, CPU per request %.3f\n", nr / wr, nc / wc
}'
