#!/usr/bin/env bash
# What the live dashboard costs, two ways, against the same local target, with the dashboard (in a
# tmux pseudo-terminal) and with --no-tui, alternating, N rounds:
#  1. throughput: the same closed-loop run (-c USERS -z DURATION); the ratio of mean req/s;
#  2. CPU: the same open-loop run at a fixed rate (-q RATE -z DURATION); throng's CPU seconds
#     (user + system) per run. A fixed rate does the same work with or without the UI, so the
#     difference is what the UI costs; this is much less noisy than throughput on a shared machine.
# Needs tmux, python3 and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-target/release/throng}
PORT=${PORT:-18081}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
USERS=${USERS:-50}
RATE=${RATE:-5000}
out=$(mktemp -d)
"$BIN" serve http --port "$PORT" >"$out/serve.log" 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null; tmux kill-session -t throng-overhead 2>/dev/null || true' EXIT
sleep 0.5
url="http://127.0.0.1:$PORT/"
rps() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"]["throughput"])' "$1"; }
for i in $(seq 1 "$ROUNDS"); do
  tmux new-session -d -s throng-overhead -x 120 -y 40 \
    "$BIN run $url -c $USERS -z $DURATION --json $out/tui-$i.json > $out/tui-$i.log 2>&1; tmux wait-for -S throng-overhead-done"
  tmux wait-for throng-overhead-done
  tmux kill-session -t throng-overhead 2>/dev/null || true
  "$BIN" run "$url" -c "$USERS" -z "$DURATION" --no-tui --quiet --json "$out/headless-$i.json" >/dev/null 2>&1
  echo "round $i: dashboard $(rps "$out/tui-$i.json") req/s, headless $(rps "$out/headless-$i.json") req/s"
done
# CPU seconds of a child process, written to a file (stdout stays the terminal or the null device).
cpu() { local file=$1; shift; python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"{r.ru_utime + r.ru_stime:.3f}\n")' "$file" "$@"; }
export -f cpu
for i in $(seq 1 "$ROUNDS"); do
  tmux new-session -d -s throng-overhead -x 120 -y 40 \
    "bash -c 'cpu $out/cpu-tui-$i $BIN run $url -q $RATE -z $DURATION --json $out/q-tui-$i.json' > $out/q-tui-$i.log 2>&1; tmux wait-for -S throng-overhead-done"
  tmux wait-for throng-overhead-done
  tmux kill-session -t throng-overhead 2>/dev/null || true
  cpu "$out/cpu-headless-$i" "$BIN" run "$url" -q "$RATE" -z "$DURATION" --no-tui --quiet --json "$out/q-headless-$i.json" >/dev/null 2>&1
  echo "round $i at $RATE req/s: dashboard $(cat "$out/cpu-tui-$i") CPU s, headless $(cat "$out/cpu-headless-$i") CPU s"
done
python3 - "$out" "$ROUNDS" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
t = [json.load(open(f"{d}/tui-{i}.json"))["total"]["throughput"] for i in range(1, n + 1)]
h = [json.load(open(f"{d}/headless-{i}.json"))["total"]["throughput"] for i in range(1, n + 1)]
mt, mh = sum(t) / n, sum(h) / n
print(f"throughput: dashboard {mt:.0f} req/s, headless {mh:.0f} req/s, ratio {mt / mh:.3f}")
ct = [float(open(f"{d}/cpu-tui-{i}").read()) for i in range(1, n + 1)]
ch = [float(open(f"{d}/cpu-headless-{i}").read()) for i in range(1, n + 1)]
ok = [json.load(open(f"{d}/q-{m}-{i}.json"))["total"]["samples"] for m in ("tui", "headless") for i in range(1, n + 1)]
mt, mh = sum(ct) / n, sum(ch) / n
print(f"CPU at a fixed rate: dashboard {mt:.2f} s, headless {mh:.2f} s per run, ratio {mt / mh:.3f} "
      f"(requests per run {min(ok)}..{max(ok)})")
PY
