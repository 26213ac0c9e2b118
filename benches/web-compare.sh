#!/usr/bin/env bash
# The web-framework comparison of scenarios/web-compare.yaml, end to end on this machine: two
# images built FROM scratch holding throng's own testbed HTTP target (one answering after 1 ms,
# one after 3 ms: two "implementations" of one service), run as containers publishing on
# 127.0.0.1, compared by an A/B run with their docker stats; prints the comparison and writes
# web.json and web.html into OUT (default: a temporary directory).
#
#   benches/web-compare.sh                                   # 500 users, 20 s a run, 2 rounds
#   DURATION=60s ROUNDS=3 USERS=500 benches/web-compare.sh
#   RATE=3000 benches/web-compare.sh                         # the open-loop variant
#
# Needs a running Docker engine and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/target/release/throng}
DURATION=${DURATION:-20s}
ROUNDS=${ROUNDS:-2}
USERS=${USERS:-500}
RATE=${RATE:-}
OUT=${OUT:-$(mktemp -d)}
[ -x "$BIN" ] || { echo "build first: cargo build --release"; exit 2; }

work=$(mktemp -d)
cleanup() { docker rm -f web-fast web-slow >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/rootfs"
# Stripped, as a deployed binary would be (the image size is part of the comparison).
strip -o "$work/rootfs/throng" "$BIN"
# The binary's shared libraries, so FROM scratch runs it.
for lib in $(ldd "$BIN" | grep -o '/[^ ]*'); do
  mkdir -p "$work/rootfs$(dirname "$lib")"
  cp -L "$lib" "$work/rootfs$lib"
done
printf 'FROM scratch\nCOPY rootfs/ /\nENTRYPOINT ["/throng", "serve", "http", "--host", "0.0.0.0", "--port", "8080"]\n' > "$work/Dockerfile"
docker build -q -t throng-web-compare "$work" >/dev/null
docker rm -f web-fast web-slow >/dev/null 2>&1 || true
docker run -d --name web-fast -p 127.0.0.1:18081:8080 throng-web-compare --delay 1ms >/dev/null
docker run -d --name web-slow -p 127.0.0.1:18082:8080 throng-web-compare --delay 3ms >/dev/null
for port in 18081 18082; do
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
done
load=(-c "$USERS")
[ -n "$RATE" ] && load=(-q "$RATE" --max-in-flight "$USERS")
"$BIN" run scenarios/web-compare.yaml --no-tui --quiet \
  --target fast=http://127.0.0.1:18081 --target slow=http://127.0.0.1:18082 \
  --container fast=web-fast --container slow=web-slow --idle 3s \
  "${load[@]}" -z "$DURATION" --rounds "$ROUNDS" --cooldown 3s \
  --json "$OUT/web.json" --report "html:$OUT/web.html" --report "markdown:$OUT/web.md"
echo "results in $OUT"
