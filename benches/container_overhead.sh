#!/usr/bin/env bash
# Does watching containers cost throughput? Runs the same closed-loop load at a containerised
# testbed target, alternately without and with `--container` watching four containers (the
# target and three copies), and prints each run's requests/s and the ratio of the means.
#
# Usage: benches/container_overhead.sh [THRONG_BINARY] [DURATION] [ROUNDS]
# Needs a Docker engine; builds an image FROM scratch holding the binary and its shared
# libraries, and removes its containers and image on exit. Load goes to 127.0.0.1 only.
set -euo pipefail

BIN=${1:-target/release/throng}
DUR=${2:-10s}
ROUNDS=${3:-3}
TAG="throng-bench:$$"
NAMES=("throng-bench-$$-1" "throng-bench-$$-2" "throng-bench-$$-3" "throng-bench-$$-4")
CTX=$(mktemp -d)
OUT=$(mktemp -d)

cleanup() {
    docker rm -f "${NAMES[@]}" >/dev/null 2>&1 || true
    docker rmi -f "$TAG" >/dev/null 2>&1 || true
    rm -rf "$CTX" "$OUT"
}
trap cleanup EXIT

docker version --format '{{.Server.Version}}' >/dev/null || {
    echo "no Docker engine: start it, or set DOCKER_HOST=unix:///path/to/docker.sock" >&2
    exit 1
}

mkdir -p "$CTX/rootfs"
cp "$BIN" "$CTX/rootfs/throng"
for lib in $(ldd "$BIN" | grep -o '/[^ ]*'); do
    mkdir -p "$CTX/rootfs$(dirname "$lib")"
    cp -L "$lib" "$CTX/rootfs$lib"
done
cat >"$CTX/Dockerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
ENTRYPOINT ["/throng"]
CMD ["serve", "http", "--host", "0.0.0.0", "--port", "8080"]
EOF
docker build -q -t "$TAG" "$CTX" >/dev/null
for n in "${NAMES[@]}"; do
    docker run -d --name "$n" -p 127.0.0.1::8080 "$TAG" >/dev/null
done
PORT=$(docker port "${NAMES[0]}" 8080/tcp | head -1 | cut -d: -f2)
URL="http://127.0.0.1:$PORT/"
WATCH=()
for n in "${NAMES[@]}"; do WATCH+=(--container "$n"); done
sleep 1

rps() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"]["throughput"])' "$1"; }

echo "target $URL (container ${NAMES[0]}), -c 50 -z $DUR, $ROUNDS rounds"
printf '%-6s %14s %14s %10s\n' round without with ratio
without=()
with=()
for r in $(seq 1 "$ROUNDS"); do
    # ABBA order, so that a drift in the machine's load does not favour either side.
    if [ $((r % 2)) = 1 ]; then
        "$BIN" run "$URL" -c 50 -z "$DUR" --no-tui --quiet --json "$OUT/a.json" 2>/dev/null >/dev/null
        "$BIN" run "$URL" -c 50 -z "$DUR" --no-tui --quiet --json "$OUT/b.json" "${WATCH[@]}" 2>/dev/null >/dev/null
    else
        "$BIN" run "$URL" -c 50 -z "$DUR" --no-tui --quiet --json "$OUT/b.json" "${WATCH[@]}" 2>/dev/null >/dev/null
        "$BIN" run "$URL" -c 50 -z "$DUR" --no-tui --quiet --json "$OUT/a.json" 2>/dev/null >/dev/null
    fi
    a=$(rps "$OUT/a.json")
    b=$(rps "$OUT/b.json")
    containers=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["containers"]))' "$OUT/b.json")
    [ "$containers" = 4 ] || { echo "expected 4 watched containers, got $containers" >&2; exit 1; }
    without+=("$a")
    with+=("$b")
    printf '%-6s %14.1f %14.1f %10.3f\n' "$r" "$a" "$b" "$(python3 -c "print($b/$a)")"
done
python3 - "${without[*]}" "${with[*]}" <<'EOF'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
print(f"mean   {statistics.mean(a):14.1f} {statistics.mean(b):14.1f} {statistics.mean(b) / statistics.mean(a):10.3f}")
if len(a) > 1:
    print(f"stdev  {statistics.stdev(a):14.1f} {statistics.stdev(b):14.1f}")
EOF

# Throughput on a shared machine is noisy; CPU time at a fixed rate is not. Same open-loop load,
# CPU seconds of throng (user + sys) and of the engine's processes (dockerd, containerd, shims,
# docker-proxy) per run.
RATE=${RATE:-4000}
ticks() {
    local t=0 p
    for p in $(pgrep -x dockerd) $(pgrep -x containerd) $(pgrep -f containerd-shim) $(pgrep -x docker-proxy); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}
HZ=$(getconf CLK_TCK)
cpu_run() {
    local before after
    before=$(ticks)
    /usr/bin/time -f "%U %S" -o "$OUT/time" "$BIN" run "$URL" -q "$RATE" -z "$DUR" --no-tui --quiet \
        --json "$OUT/c.json" "$@" >/dev/null 2>&1
    after=$(ticks)
    python3 -c 'import sys; u, s = open(sys.argv[1]).read().split(); print(f"{float(u) + float(s):8.2f} {(int(sys.argv[3]) - int(sys.argv[2])) / int(sys.argv[4]):8.2f}")' \
        "$OUT/time" "$before" "$after" "$HZ"
}
echo
echo "CPU seconds at -q $RATE -z $DUR: throng, engine processes"
printf '%-6s %17s %17s\n' round without with
for r in $(seq 1 "$ROUNDS"); do
    printf '%-6s %17s %17s\n' "$r" "$(cpu_run)" "$(cpu_run "${WATCH[@]}")"
done
