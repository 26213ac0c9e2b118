#!/usr/bin/env bash
# Many concurrent SSE streams on two cores (issue 37's goal): `throng serve llm` answers every
# request with an OpenAI-compatible stream of server-sent events (TTFT_MS, then a token every
# ITL_MS, TOKENS tokens), and two clients in turn hold STREAMS streams open at once, each user
# reading PER streams one after another: throng (`run --llm`, closed loop, -c STREAMS) and a
# plain Python asyncio client (aiohttp from PyPI, in a venv under /tmp; one task a stream, each
# SSE line parsed as JSON and its delta's content counted, as any OpenAI client does). For
# each: the streams and tokens read, the peak of streams at once, its CPU (user + system) per
# token, and its peak RSS; and the server's CPU over the same time, since both share the
# machine's cores. A token is one SSE event (`data: {...}` with one token's delta).
#
#   benches/sse.sh                                # BIN=target/release/throng STREAMS=10000
#   STREAMS=2000 benches/sse.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-$PWD/target/release/throng}
STREAMS=${STREAMS:-10000}
PER=${PER:-2}
TTFT_MS=${TTFT_MS:-200}
ITL_MS=${ITL_MS:-400}
TOKENS=${TOKENS:-10}
PORT=${PORT:-18562}
VENV=${VENV:-/tmp/throng-sse-venv}

if [ "$(ulimit -n)" -lt $((STREAMS + 100)) ]; then
  ulimit -n $((STREAMS + 100)) 2>/dev/null ||
    { echo "ulimit -n $(ulimit -n): too few descriptors for $STREAMS streams" >&2; exit 1; }
fi
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q aiohttp
fi

. benches/lib/llm-testbed.sh
start_testbed
url="http://127.0.0.1:$PORT"

# The most connections to the server established at once while `$1` runs (sampled every
# 0.2 s), into the file `$2`: the streams at once, whichever client holds them.
peak_connections() {
  local peak=0 n
  while kill -0 "$1" 2>/dev/null; do
    n=$(ss -Htn state established "( sport = :$PORT )" | wc -l)
    [ "$n" -gt "$peak" ] && peak=$n
    sleep 0.2
  done
  echo "$peak" > "$2"
}

cat > "$work/client.py" <<'PY'
"""A plain asyncio SSE client: STREAMS tasks, each reading PER chat completions in turn."""
import asyncio, json, sys, time
import aiohttp

url, streams, per, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
body = {"model": "m", "messages": [{"role": "user", "content": "one two three four five six seven eight"}],
        "stream": True, "max_tokens": tokens, "stream_options": {"include_usage": True}}
state = {"tokens": 0, "streams": 0, "errors": 0, "open": 0, "peak": 0}

async def user(session):
    for _ in range(per):
        state["open"] += 1
        state["peak"] = max(state["peak"], state["open"])
        try:
            async with session.post(url + "/v1/chat/completions", json=body) as r:
                async for line in r.content:
                    if not line.startswith(b"data: "):
                        continue
                    data = line[6:].strip()
                    if data == b"[DONE]":
                        break
                    chunk = json.loads(data)
                    choices = chunk.get("choices")
                    if choices and choices[0].get("delta", {}).get("content"):
                        state["tokens"] += 1
            state["streams"] += 1
        except Exception:
            state["errors"] += 1
        finally:
            state["open"] -= 1

async def main():
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as s:
        start = time.monotonic()
        await asyncio.gather(*(user(s) for _ in range(streams)))
        state["seconds"] = time.monotonic() - start
    print(json.dumps(state))

asyncio.run(main())
PY

echo "throng serve llm: TTFT ${TTFT_MS} ms, a token every ${ITL_MS} ms, ${TOKENS} tokens an answer"
echo "each client: ${STREAMS} streams at once, ${PER} in turn each ($((STREAMS * PER)) in all)"

# Runs client `$1` (the rest: its command) under /usr/bin/time, with the server's CPU and the
# peak of connections over the same time.
measure() {
  local name=$1 before after client sampler
  shift
  before=$(server_ticks)
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" > "$work/$name.out" 2>&1 &
  client=$!
  peak_connections "$client" "$work/$name.peak" &
  sampler=$!
  wait "$client"
  wait "$sampler"
  after=$(server_ticks)
  echo $((after - before)) > "$work/$name.server"
}

measure throng "$BIN" run "$url" --llm --model m --prompt-tokens 8 --max-tokens "$TOKENS" \
  -c "$STREAMS" -n $((STREAMS * PER)) --timeout 60s --no-tui --quiet --json "$work/throng.json"
sleep 1
measure python "$VENV/bin/python" "$work/client.py" "$url" "$STREAMS" "$PER" "$TOKENS"

python3 - "$work" "$(getconf CLK_TCK)" "$("$VENV/bin/python" -c 'import aiohttp, sys; print(f"aiohttp {aiohttp.__version__}, Python {sys.version.split()[0]}")')" <<'PY'
import json, sys
work, tck, python_name = sys.argv[1], float(sys.argv[2]), sys.argv[3]

def timing(name):
    wall, user, system, rss = open(f"{work}/{name}.time").read().split()[-4:]
    server = int(open(f"{work}/{name}.server").read()) / tck
    peak = int(open(f"{work}/{name}.peak").read())
    return float(wall), float(user) + float(system), int(rss) / 1024, server, peak

r = json.load(open(f"{work}/throng.json"))
row = r["labels"][0]
s = row["stream"]
t = dict(streams=s["requests"], errors=row["errors"], tokens=s["output_tokens"])
p = json.loads(open(f"{work}/python.out").read().splitlines()[-1])
sides = [("throng", t, timing("throng")), (python_name, p, timing("python"))]
print(f"{'client':34} {'streams':>8} {'errors':>6} {'at once':>8} {'tokens':>8} {'wall s':>7} "
      f"{'CPU s':>6} {'us/token':>9} {'RSS MB':>7} {'server CPU s':>12}")
per = []
for name, c, (wall, cpu, rss, server, peak) in sides:
    us = 1e6 * cpu / max(c["tokens"], 1)
    per.append(us)
    print(f"{name:34} {c['streams']:>8} {c['errors']:>6} {peak:>8} {c['tokens']:>8} "
          f"{wall:>7.1f} {cpu:>6.2f} {us:>9.2f} {rss:>7.0f} {server:>12.2f}")
print(f"CPU per token: the Python client {per[1] / per[0]:.1f}x throng's")
PY
