#!/usr/bin/env bash
# Soak: throng's open loop at a constant rate for a long time against the testbed target, with
# throng's resident memory (RSS) and open file descriptors sampled over time. Both must stay flat:
# a leak per request or per connection shows as a slope. Prints one row per sample, then the
# first and last fifth's means and their ratio, and exits 1 if either grew by more than 10%.
#
#   benches/soak.sh                                # 30 minutes at 2,000 req/s
#   DURATION=1800 RATE=2000 EVERY=30 FAULTY=1 benches/soak.sh
#
# FAULTY=1 soaks the error paths instead: every answer is a 503, after a random 1-20 ms delay. The load goes to 127.0.0.1 only, and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-1800}
RATE=${RATE:-2000}
EVERY=${EVERY:-30}
PORT=${PORT:-18590}
FAULTY=${FAULTY:-0}

cargo build --release -q
THRONG=$PWD/target/release/throng
work=$(mktemp -d)
cleanup() {
  [ -n "${target_pid:-}" ] && kill "$target_pid" 2>/dev/null || true
  [ -n "${run_pid:-}" ] && kill "$run_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if [ "$FAULTY" = 1 ]; then
  "$THRONG" serve http --port "$PORT" --delay 1ms --delay-max 20ms > "$work/target.log" 2>&1 &
else
  "$THRONG" serve http --port "$PORT" --delay 1ms > "$work/target.log" 2>&1 &
fi
target_pid=$!
for _ in $(seq 50); do grep -q serving "$work/target.log" && break; sleep 0.1; done
url="http://127.0.0.1:$PORT/"
[ "$FAULTY" = 1 ] && url="http://127.0.0.1:$PORT/status/503"

"$THRONG" run "$url" -q "$RATE" -z "${DURATION}s" --max-in-flight 200 --no-tui --quiet \
  --json "$work/result.json" > "$work/summary.txt" 2> "$work/run.log" &
run_pid=$!

printf '%8s %10s %6s\n' "t (s)" "RSS (KiB)" "fds"
samples=()
start=$(date +%s)
while kill -0 "$run_pid" 2>/dev/null; do
  sleep "$EVERY"
  kill -0 "$run_pid" 2>/dev/null || break
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$run_pid/status" 2>/dev/null || echo 0)
  fds=$(ls "/proc/$run_pid/fd" 2>/dev/null | wc -l)
  t=$(( $(date +%s) - start ))
  printf '%8d %10d %6d\n' "$t" "$rss" "$fds"
  samples+=("$rss $fds")
done
wait "$run_pid" || true
grep -E "requests in|TOTAL|Arrivals" "$work/summary.txt" || cat "$work/run.log"

n=${#samples[@]}
if [ "$n" -lt 5 ]; then
  echo "too few samples ($n) to judge a trend: run longer or sample more often (EVERY)"
  exit 0
fi
# Judged on the second fifth against the last: the first is warm-up. The open loop opens slots
# (one connection each) as the target or the machine slows down, up to --max-in-flight 200, and
# keeps them: descriptors may step up to about 200 plus the process's own, which is not a leak;
# past that bound, or RSS still climbing on the plateau, is.
fifth=$(( n / 5 ))
printf '%s\n' "${samples[@]}" | awk -v f="$fifth" -v n="$n" '
  NR > f && NR <= 2 * f { r1 += $1; d1 += $2 }
  NR > n - f { r2 += $1; d2 += $2 }
  { if ($2 > dmax) dmax = $2 }
  END {
    r1 /= f; r2 /= f; d1 /= f; d2 /= f
    printf "RSS second fifth %.0f KiB, last fifth %.0f KiB: ratio %.3f\n", r1, r2, r2 / r1
    printf "fds second fifth %.1f, last fifth %.1f (most %d; bound about 200 + 30)\n", d1, d2, dmax
    if (r2 > 1.10 * r1 || dmax > 260) { print "NOT FLAT"; exit 1 }
    print "flat"
  }'
