#!/usr/bin/env bash
# SQL benchmark: throng against pgbench and sysbench on the same throwaway databases, taking
# turns, in one run. Prints transactions/s and load-generator CPU seconds per million
# transactions for each (with its user and system parts), and throng's ratios (of the medians,
# and the median of each round's own):
#   - PostgreSQL: `pgbench -S -c C -j 2 -T D` against `throng run URL --workload oltp_point_select -c C`,
#     in the clear (part pgbench) and over TLS (part pgbench-tls: sslmode=require on both sides;
#     the server has `ssl = on`, so every other part asks for the clear: PGSSLMODE=disable)
#   - PostgreSQL and MariaDB: `sysbench oltp_read_only|oltp_write_only` against the same workloads.
#
#   benches/sql.sh            # needs: postgresql (initdb, pg_ctl, pgbench), mariadb-server, sysbench (apt)
#   DURATION=10 CONNS=10 ROUNDS=3 SIZE=100000 benches/sql.sh
#   PARTS="pg" WORKLOADS=oltp_read_only benches/sql.sh   # parts: pgbench pgbench-tls pg mariadb
#   PGBENCH_MODE=prepared benches/sql.sh   # pgbench's -M: simple (its default), extended, prepared
#   THRONG=path/to/throng benches/sql.sh   # a throng already built (no cargo build)
#   BEFORE=path/to/old/throng benches/sql.sh   # the pgbench parts also run this build, in turn
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
CONNS=${CONNS:-10}
ROUNDS=${ROUNDS:-3}
SIZE=${SIZE:-100000}
PGPORT=${PGPORT:-18532}
MYPORT=${MYPORT:-18533}
SYSBENCH=${SYSBENCH:-1}
# Which parts: pgbench (point select), sysbench's workloads on pg and on mariadb.
PARTS=${PARTS:-pgbench pgbench-tls pg mariadb}
PGBENCH_MODE=${PGBENCH_MODE:-simple}
WORKLOADS=${WORKLOADS:-oltp_read_only oltp_write_only}
has() { [[ " $PARTS " == *" $1 "* ]]; }

pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "install postgresql (apt-get install postgresql)"; exit 2; }
command -v pgbench >/dev/null || { echo "install pgbench (apt-get install postgresql-contrib)"; exit 2; }
[ -x /usr/sbin/mariadbd ] || { echo "install mariadb-server (apt-get install mariadb-server)"; exit 2; }
# sysbench only for the parts that run it.
if [ "$SYSBENCH" = 1 ] && { has pg || has mariadb; }; then
  command -v sysbench >/dev/null || { echo "install sysbench (apt-get install sysbench), or SYSBENCH=0"; exit 2; }
fi
command -v openssl >/dev/null || { echo "install openssl (apt-get install openssl)"; exit 2; }
if [ -z "${THRONG:-}" ]; then
  cargo build --release -q --bin throng
  THRONG=${CARGO_TARGET_DIR:-$PWD/target}/release/throng
fi
BEFORE=${BEFORE:-}

work=$(mktemp -d)
chmod 755 "$work"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  as_pg "$pgbin/pg_ctl" -D "$work/pg" stop -m immediate >/dev/null 2>&1 || true
  [ -f "$work/my.pid" ] && kill -9 "$(cat "$work/my.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# PostgreSQL: trust on loopback (no password to pass to pgbench), fsync off: the client is measured.
echo "bench" > "$work/pw"
[ "$(id -u)" = 0 ] && chown postgres "$work"
# TLS as Debian ships it (`ssl = on`), with a certificate made here.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
  -keyout "$work/server.key" -out "$work/server.crt" 2>/dev/null
chmod 600 "$work/server.key"
[ "$(id -u)" = 0 ] && chown postgres "$work/server.key" "$work/server.crt"
as_pg "$pgbin/initdb" -D "$work/pg" -U bench --auth=trust -E UTF8 --no-sync >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200 -c ssl=on -c ssl_cert_file=$work/server.crt -c ssl_key_file=$work/server.key" start >/dev/null
# libpq's clients (pgbench, sysbench, createdb) in the clear unless a part says otherwise.
export PGSSLMODE=disable
as_pg "$pgbin/createdb" -h 127.0.0.1 -p "$PGPORT" -U bench bench
PG="postgres://bench@127.0.0.1:$PGPORT/bench?sslmode=disable"
PG_TLS="postgres://bench@127.0.0.1:$PGPORT/bench?sslmode=require"

# MariaDB.
/usr/bin/mariadb-install-db --no-defaults --datadir="$work/my" --auth-root-authentication-method=normal \
  --skip-test-db --user=root >/dev/null 2>&1
# One statement a line: that is how mariadbd reads an init file.
printf '%s\n' "CREATE DATABASE IF NOT EXISTS bench;" "CREATE USER IF NOT EXISTS 'bench'@'%' IDENTIFIED BY 'bench';" \
  "GRANT ALL ON *.* TO 'bench'@'%';" > "$work/init.sql"
/usr/sbin/mariadbd --no-defaults --datadir="$work/my" --socket="$work/my.sock" --pid-file="$work/my.pid" \
  --port=$MYPORT --bind-address=127.0.0.1 --user=root --init-file="$work/init.sql" \
  --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-size=256M --max-connections=200 \
  --skip-log-bin >"$work/my.log" 2>&1 &
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$MYPORT) 2>/dev/null && break; sleep 0.2; done
sleep 1
MY=mysql://bench:bench@127.0.0.1:$MYPORT/bench

# Data: pgbench's accounts (scale 1 = 100,000 rows) and sysbench's sbtest1 of SIZE rows in both.
pgbench -i -q -s $((SIZE / 100000 > 0 ? SIZE / 100000 : 1)) -h 127.0.0.1 -p "$PGPORT" -U bench bench >/dev/null 2>&1
for url in "$PG" "$MY"; do
  "$THRONG" sql prepare "$url" --tables 1 --table-size "$SIZE" 2>"$work/prepare.log" || { cat "$work/prepare.log"; exit 1; }
done

measure() {
  local out="$1"; shift
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" > "$out" 2>&1
  awk '{print $1 + $2}' "$work/time"
}
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
per_million() { echo "$1 $2 $3" | awk '{printf "%.2f", $1 / ($2 * $3) * 1e6}'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The transaction row of a result: the workload's group row, or its only row.
tps() { json "$1" "next((l['ok_per_s'] for l in r['labels'] if l['group']), r['labels'][0]['ok_per_s'])"; }
errs() { json "$1" "r['total']['errors']"; }

declare -A TPS CPU USR SYS
# A run's TPS and CPU per million transactions, and the user and system parts of that CPU (the
# last measurement's, from measure's file): the kernel's share is most of a point select's.
add() {
  TPS[$1]="${TPS[$1]:-} $2"; CPU[$1]="${CPU[$1]:-} $3"
  local u s
  read -r u s < <(tail -1 "$work/time")
  USR[$1]="${USR[$1]:-} $(per_million "$u" "$2" "$DURATION")"
  SYS[$1]="${SYS[$1]:-} $(per_million "$s" "$2" "$DURATION")"
}

throng_round() { # name url workload [binary]
  local cpu t
  # Uniform ids on both sides, as pgbench draws them (sysbench's default `special` sends most
  # writes to a few hot rows: a lock benchmark, not a client one).
  cpu=$(measure "$work/out" "${4:-$THRONG}" run "$2" --workload "$3" --table-size "$SIZE" -c "$CONNS" \
    --rand-type uniform -z "${DURATION}s" --no-tui --quiet --json "$work/r.json")
  t=$(tps "$work/r.json")
  [ "$(errs "$work/r.json")" = 0 ] || echo "  ($1: $(errs "$work/r.json") errors)"
  add "$1" "$t" "$(per_million "$cpu" "$t" "$DURATION")"
}
sysbench_round() { # name driver-args workload
  local cpu t
  # shellcheck disable=SC2086
  cpu=$(measure "$work/out" sysbench "$3" $2 --tables=1 --table-size="$SIZE" --threads="$CONNS" \
    --time="$DURATION" --rand-type=uniform --report-interval=0 run)
  t=$(awk '/transactions:/ {gsub(/\(/, "", $3); print $3}' "$work/out")
  add "$1" "$t" "$(per_million "$cpu" "$t" "$DURATION")"
}
SB_PG="--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$PGPORT --pgsql-user=bench --pgsql-db=bench"
SB_MY="--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$MYPORT --mysql-user=bench --mysql-password=bench --mysql-db=bench"

for round in $(seq "$ROUNDS"); do
  echo "round $round of $ROUNDS"
  if has pgbench; then
    cpu=$(measure "$work/out" pgbench -S -M "$PGBENCH_MODE" -c "$CONNS" -j 2 -T "$DURATION" -h 127.0.0.1 -p "$PGPORT" -U bench bench)
    t=$(awk '/^tps = / {print $3; exit}' "$work/out")
    add "pgbench -S (pg)" "$t" "$(per_million "$cpu" "$t" "$DURATION")"
    throng_round "throng oltp_point_select (pg)" "$PG" oltp_point_select
    [ -z "$BEFORE" ] || throng_round "before oltp_point_select (pg)" "$PG" oltp_point_select "$BEFORE"
  fi
  if has pgbench-tls; then
    cpu=$(PGSSLMODE=require measure "$work/out" pgbench -S -M "$PGBENCH_MODE" -c "$CONNS" -j 2 -T "$DURATION" -h 127.0.0.1 -p "$PGPORT" -U bench bench)
    t=$(awk '/^tps = / {print $3; exit}' "$work/out")
    add "pgbench -S (pg, TLS)" "$t" "$(per_million "$cpu" "$t" "$DURATION")"
    throng_round "throng oltp_point_select (pg, TLS)" "$PG_TLS" oltp_point_select
    [ -z "$BEFORE" ] || throng_round "before oltp_point_select (pg, TLS)" "$PG_TLS" oltp_point_select "$BEFORE"
  fi
  if [ "$SYSBENCH" = 1 ]; then
    for w in $WORKLOADS; do
      # Who goes first alternates: a database still busy after the last workload (PostgreSQL's
      # autovacuum after writes) slows whichever runs first.
      for db in pg mariadb; do
        has $db || continue
        url=$PG sb=$SB_PG
        [ $db = mariadb ] && url=$MY sb=$SB_MY
        if (( round % 2 )); then
          sysbench_round "sysbench $w ($db)" "$sb" "$w"
          throng_round "throng $w ($db)" "$url" "$w"
        else
          throng_round "throng $w ($db)" "$url" "$w"
          sysbench_round "sysbench $w ($db)" "$sb" "$w"
        fi
      done
    done
  fi
done

echo
echo "medians of $ROUNDS rounds, $CONNS connections, ${DURATION}s each, $SIZE rows; CPU = client user+system seconds per million transactions (each part's median apart)"
printf '%-34s %12s %14s %8s %8s\n' "" "TPS" "CPU s/M trx" "user" "system"
for k in "pgbench -S (pg)" "throng oltp_point_select (pg)" "before oltp_point_select (pg)" \
         "pgbench -S (pg, TLS)" "throng oltp_point_select (pg, TLS)" "before oltp_point_select (pg, TLS)" \
         "sysbench oltp_read_only (pg)" "throng oltp_read_only (pg)" \
         "sysbench oltp_write_only (pg)" "throng oltp_write_only (pg)" \
         "sysbench oltp_read_only (mariadb)" "throng oltp_read_only (mariadb)" \
         "sysbench oltp_write_only (mariadb)" "throng oltp_write_only (mariadb)"; do
  [ -n "${TPS[$k]:-}" ] || continue
  printf '%-34s %12.0f %14s %8s %8s\n' "$k" "$(echo "${TPS[$k]}" | median)" "$(echo "${CPU[$k]}" | median)" \
    "$(echo "${USR[$k]}" | median)" "$(echo "${SYS[$k]}" | median)"
done
# The median of the rounds' own ratios: each round's two runs are back to back, so a machine that
# drifts between rounds (a shared one does) moves both sides of a ratio together.
paired() { # throng-values peer-values
  python3 -c "import sys,statistics as s; a=sys.argv[1].split(); b=sys.argv[2].split(); print('%.2f' % s.median(float(x)/float(y) for x,y in zip(a,b)))" "$1" "$2"
}
ratio() { # throng-key peer-key
  [ -n "${TPS[$1]:-}" ] || return 0
  local tt pt tc pc
  tt=$(echo "${TPS[$1]}" | median); pt=$(echo "${TPS[$2]}" | median)
  tc=$(echo "${CPU[$1]}" | median); pc=$(echo "${CPU[$2]}" | median)
  echo "$1 / $2: TPS x$(echo "$tt $pt" | awk '{printf "%.2f", $1/$2}') (rounds' own: x$(paired "${TPS[$1]}" "${TPS[$2]}")), CPU per transaction x$(echo "$tc $pc" | awk '{printf "%.2f", $1/$2}') (x$(paired "${CPU[$1]}" "${CPU[$2]}"))"
}
echo
ratio "throng oltp_point_select (pg)" "pgbench -S (pg)"
ratio "throng oltp_point_select (pg, TLS)" "pgbench -S (pg, TLS)"
ratio "throng oltp_point_select (pg)" "before oltp_point_select (pg)"
ratio "throng oltp_point_select (pg, TLS)" "before oltp_point_select (pg, TLS)"
for db in pg mariadb; do
  for w in oltp_read_only oltp_write_only; do
    ratio "throng $w ($db)" "sysbench $w ($db)"
  done
done
