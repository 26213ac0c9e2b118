#!/usr/bin/env bash
# What the live dashboard costs: the same closed-loop run (-c USERS -z DURATION) against the same
# local target, with the dashboard (in a tmux pseudo-terminal) and with --no-tui, alternating,
# ROUNDS rounds. Prints per run:
#  - throughput (req/s), and the ratio of the means;
#  - CPU seconds of throng's main thread (the runtime that runs the aggregator, and the dashboard
#    when shown) and of the whole process, sampled from /proc. The main thread's extra CPU with
#    the dashboard, as a share of the process's CPU, is what the dashboard costs; unlike
#    throughput, it does not move with whatever else the machine is doing.
# Needs tmux, python3, Linux /proc and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-target/release/throng}
PORT=${PORT:-18081}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
USERS=${USERS:-50}
out=$(mktemp -d)
setsid "$BIN" serve http --port "$PORT" >"$out/serve.log" 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null; tmux kill-session -t throng-overhead 2>/dev/null || true' EXIT
sleep 0.5
url="http://127.0.0.1:$PORT/"

# Samples a process's threads until it exits; writes "main_cpu_s total_cpu_s" to $2.
sample() {
  python3 - "$1" "$2" <<'PY'
import os, sys, time
pid, dest = sys.argv[1], sys.argv[2]
hz = os.sysconf("SC_CLK_TCK")
last = {}
while os.path.exists(f"/proc/{pid}"):
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            last[tid] = (int(fields[11]) + int(fields[12])) / hz
    except OSError:
        pass
    time.sleep(0.2)
main = last.get(pid, 0.0)
open(dest, "w").write(f"{main:.2f} {sum(last.values()):.2f}\n")
PY
}

# Waits for the throng process whose command line holds $1 and prints its pid.
pid_of() {
  for _ in $(seq 1 100); do
    if p=$(pgrep -f -- "^$BIN run .*$1" | head -1) && [ -n "$p" ]; then echo "$p"; return; fi
    sleep 0.05
  done
  echo "no process for $1" >&2; exit 1
}

field() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["total"]["throughput"]))' "$1"; }

with_dashboard() {
  local i=$1
  tmux new-session -d -s throng-overhead -x 120 -y 40 \
    "$BIN run $url -c $USERS -z $DURATION --json $out/tui-$i.json 2> $out/tui-$i.log"
  # (stdout stays the pseudo-terminal: redirected, it would not be a terminal and the run
  # would be headless)
  sample "$(pid_of "$out/tui-$i.json")" "$out/cpu-tui-$i"
  while tmux has-session -t throng-overhead 2>/dev/null; do sleep 0.1; done
}

headless() {
  local i=$1
  # In a session of its own, as the tmux-started run is: with the kernel's autogroup scheduling
  # (sched_autogroup_enabled), a run in this script's session would share its CPU with the
  # target, and the dashboard would seem to make throng 17% faster.
  setsid "$BIN" run "$url" -c "$USERS" -z "$DURATION" --no-tui --quiet --json "$out/headless-$i.json" >/dev/null 2>&1 &
  run=$!
  sample "$run" "$out/cpu-headless-$i"
  wait "$run"
}

# Alternate which goes first, so that neither always runs on a warmer or quieter machine.
for i in $(seq 1 "$ROUNDS"); do
  if [ $((i % 2)) = 1 ]; then with_dashboard "$i"; headless "$i"; else headless "$i"; with_dashboard "$i"; fi
  read -r mt tt <"$out/cpu-tui-$i"
  read -r mh th <"$out/cpu-headless-$i"
  echo "round $i: dashboard $(field "$out/tui-$i.json") req/s, main thread $mt of $tt CPU s;" \
       "headless $(field "$out/headless-$i.json") req/s, main thread $mh of $th CPU s"
done
python3 - "$out" "$ROUNDS" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
rps = lambda m: [json.load(open(f"{d}/{m}-{i}.json"))["total"]["throughput"] for i in range(1, n + 1)]
cpu = lambda m: [tuple(map(float, open(f"{d}/cpu-{m}-{i}").read().split())) for i in range(1, n + 1)]
t, h = rps("tui"), rps("headless")
mt, mh = sum(t) / n, sum(h) / n
print(f"throughput: dashboard {mt:.0f} req/s, headless {mh:.0f} req/s, ratio {mt / mh:.3f}")
ct, ch = cpu("tui"), cpu("headless")
main_t, total_t = sum(c[0] for c in ct) / n, sum(c[1] for c in ct) / n
main_h = sum(c[0] for c in ch) / n
extra = main_t - main_h
print(f"main thread: dashboard {main_t:.2f} CPU s, headless {main_h:.2f} CPU s per run: "
      f"the dashboard costs {extra:.2f} CPU s, {extra / total_t * 100:.1f}% of the process's {total_t:.2f} CPU s")
PY
