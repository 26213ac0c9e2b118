#!/usr/bin/env bash
# The phases against a known truth: a target (Python, a thread per connection) that waits WAIT ms
# before the answer's head and trickles its body in PIECES pieces GAP ms apart, timing with
# perf_counter what it actually did; throng's wait and receive beside the target's own. Then the
# same target with --no-keepalive: a connect phase per request, none reused (the target starts a
# thread per connection before it reads the request and starts its clock, so there the client's
# wait is longer than the target's by that start). An accuracy check, not a speed claim.
#
#   benches/phases.sh                         # BIN=target/release/throng USERS=10 DURATION=5
#   WAIT=50 GAP=5 PIECES=20 benches/phases.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-$PWD/target/release/throng}
USERS=${USERS:-10}
DURATION=${DURATION:-5}
WAIT=${WAIT:-30}
GAP=${GAP:-10}
PIECES=${PIECES:-4}
PORT=${PORT:-18555}

work=$(mktemp -d)
cat > "$work/trickle.py" <<'PY'
import json, socket, sys, threading, time
wait, gap, pieces, port, out = float(sys.argv[1]) / 1e3, float(sys.argv[2]) / 1e3, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
times = {"wait": [], "receive": []}
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(4096)
            if not d:
                return
            buf += d
        buf = buf[buf.index(b"\r\n\r\n") + 4:]
        t0 = time.perf_counter()
        time.sleep(wait)
        c.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % (2 * pieces))
        t1 = time.perf_counter()
        for _ in range(pieces):
            time.sleep(gap)
            c.sendall(b"ab")
        times["wait"].append(t1 - t0)
        times["receive"].append(time.perf_counter() - t1)
def dump():
    while True:
        time.sleep(0.5)
        if times["wait"]:
            f = {k: sorted(v) for k, v in times.items()}
            json.dump({k: {"p50": v[len(v) // 2] * 1e3, "mean": sum(v) / len(v) * 1e3} for k, v in f.items()}, open(out + ".tmp", "w"))
            import os; os.replace(out + ".tmp", out)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(256)
threading.Thread(target=dump, daemon=True).start()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$work/trickle.py" "$WAIT" "$GAP" "$PIECES" "$PORT" "$work/truth.json" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 0.5

for keep in on off; do
  flags=()
  [ "$keep" = off ] && flags=(--no-keepalive)
  rm -f "$work/truth.json"
  "$BIN" run "http://127.0.0.1:$PORT/" -c "$USERS" -z "${DURATION}s" --no-tui --quiet \
    --json "$work/result.json" ${flags[@]+"${flags[@]}"} > /dev/null
  sleep 1
  python3 - "$work/result.json" "$work/truth.json" "$keep" <<'PY'
import json, sys
phases = json.load(open(sys.argv[1]))["total"]["phases"]
truth = json.load(open(sys.argv[2]))
print(f"keep-alive {sys.argv[3]}: {phases['wait']['stats']['count']} requests, "
      f"{phases['connect']['stats']['count']} connect phases, reused share {phases['reused_share']:.3f}")
for k in ("wait", "receive"):
    for q in ("p50", "mean"):
        got, want = phases[k]["stats"][q], truth[k][q]
        print(f"  {k:<8} {q:<4} throng {got:8.3f} ms   target {want:8.3f} ms   {100 * (got / want - 1):+.2f}%")
PY
done
