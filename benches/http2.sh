#!/usr/bin/env bash
# `throng run --http2` (HTTP's driver on throng-h2) against h2load, the C floor: one connection
# carrying USERS concurrent streams (`throng run URL --http2 -c USERS --streams USERS`, one
# worker thread for its one connection, against `h2load -c 1 -m USERS`), closed loop, h2c GET
# against the testbed (`throng serve http`, hyper's server), DURATION s x ROUNDS alternating.
# Prints requests/s and CPU-seconds (user + system) per million requests for each run, the
# medians and the ratio throng-run/h2load. benches/h2.sh does the work (TARGET=h2_target: its
# example server instead).
#
#   benches/http2.sh          # DURATION=5 USERS=50 ROUNDS=3 BIN=target/release/throng
#
# Needs h2load (apt-get install nghttp2-client) and a release build of throng (cargo build
# --release --locked --bin throng).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/throng} WHO="h2load throng-run" TARGET=${TARGET:-testbed} GRPC=0 \
  exec benches/h2.sh
