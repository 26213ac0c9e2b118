#!/usr/bin/env bash
# What the live dashboard costs: the same closed-loop run against the same local target, with the
# dashboard (in a tmux pseudo-terminal) and with --no-tui, alternating, N rounds. Prints each
# run's throughput and the ratio of the means. Needs tmux and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-target/release/throng}
PORT=${PORT:-18081}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
USERS=${USERS:-50}
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
python3 - "$out" "$ROUNDS" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
t = [json.load(open(f"{d}/tui-{i}.json"))["total"]["throughput"] for i in range(1, n + 1)]
h = [json.load(open(f"{d}/headless-{i}.json"))["total"]["throughput"] for i in range(1, n + 1)]
mt, mh = sum(t) / n, sum(h) / n
print(f"mean: dashboard {mt:.0f} req/s, headless {mh:.0f} req/s, ratio {mt / mh:.3f} ({(1 - mt / mh) * 100:+.1f}% cost)")
PY
