# Sourced by benches/sse.sh and benches/llm.sh: starts `throng serve llm` for a bench.
#
#   start_testbed [WRAPPER...]   # e.g. start_testbed taskset -c 0
#
# runs WRAPPER... $SERVE (default "$BIN serve llm") on $PORT with TTFT_MS, ITL_MS and TOKENS,
# its output in a new directory $work (serve.out), and waits until it serves. It sets $work and
# $server; on exit the server stops (Ctrl-C, so it prints its own lateness into serve.out) and
# $work goes. server_ticks prints the server's CPU so far (user + system, clock ticks).

start_testbed() {
  work=$(mktemp -d)
  "$@" ${SERVE:-"$BIN" serve llm} --port "$PORT" --ttft "${TTFT_MS}ms" --itl "${ITL_MS}ms" \
    --output-tokens "$TOKENS" > "$work/serve.out" 2>&1 &
  server=$!
  trap 'kill -INT $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
  for _ in $(seq 50); do
    grep -q "serving on" "$work/serve.out" && return 0
    sleep 0.1
  done
  echo "throng serve llm did not start:" >&2
  cat "$work/serve.out" >&2
  exit 1
}

server_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
