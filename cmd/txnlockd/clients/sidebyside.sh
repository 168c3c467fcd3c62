#!/usr/bin/env bash
# sysbench oltp_write_only against txnlockd (--lock point and --lock range)
# and MariaDB 10.11 (InnoDB and MyRocks, through ../shared/anchors/mariadb/run.sh),
# in interleaved rounds: each round runs every system once at every thread
# count, so that the machine's drift over the hour falls on all of them
# alike. Also per round: lockbench run in process, the same transactions
# without the protocol. At the end: txnlockd's RSS after each of three
# 1,000-connection mysqlslap runs.
#
#   bash cmd/txnlockd/clients/sidebyside.sh                 # 5 rounds, 1 8 64 threads, 5 s runs
#   ROUNDS=3 THREADS="1 8" TIME=10 bash cmd/txnlockd/clients/sidebyside.sh
#
# txnlockd keeps its Pebble store in a directory in /dev/shm, WAL written
# and not synced (as MariaDB's datadir there with flush_log_at_trx_commit=2);
# sysbench gets the options the MariaDB runner gives it. Output: RESULT
# lines (as the MariaDB runner's) in $OUT, then a summary: the median QPS of
# each system, txnlockd point against InnoDB and MyRocks, range/point as the
# median of the rounds' pair ratios with their range, and txnlockd's QPS as
# a share of lockbench's.
set -euo pipefail
cd "$(dirname "$0")/../../.."
repo=$PWD
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-"1 8 64"}
TIME=${TIME:-5}
TABLE_SIZE=${TABLE_SIZE:-10000}
PORT=${PORT:-3417}
ENGINES=${ENGINES:-"innodb rocksdb"}
MARIADB_RUNNER=${MARIADB_RUNNER:-$repo/../shared/anchors/mariadb/run.sh}
OUT=${OUT:-${TMPDIR:-/tmp}/txnlockd-sidebyside-$(date +%Y-%m-%d).txt}

work=$(mktemp -d)
store=/dev/shm/txnlockd-sidebyside.$$
pid=
stop() { if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; rm -rf "$store"; }
trap 'stop; rm -rf "$work"' EXIT
(cd cmd/txnlockd && go build -o "$work/txnlockd" .)
go build -o "$work/lockbench" ./cmd/lockbench
ulimit -n 65536 2>/dev/null || true

sql() { mariadb -h127.0.0.1 -P"$PORT" -uroot -N -B -A "$@"; }
start() { # lock kind
  stop
  mkdir -p "$store"
  "$work/txnlockd" --addr "127.0.0.1:$PORT" --allow-empty-root --lock "$1" --dir "$store" >"$work/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do sql -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
  sql -e 'CREATE DATABASE sbtest'
}
sb() { # threads command
  sysbench oltp_write_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=root \
    --mysql-db=sbtest --tables=1 --table-size="$TABLE_SIZE" --threads="$1" \
    --time="$TIME" --report-interval=0 --mysql-ignore-errors=1213,1205 "$2"
}

{
echo "# $(date -Is) $(uname -srm) nproc=$(nproc) sysbench=$(sysbench --version) txnlockd=$(git -C "$repo" rev-parse --short HEAD)"
echo "# ROUNDS=$ROUNDS TIME=$TIME TABLE_SIZE=$TABLE_SIZE txnlockd: --dir /dev/shm, WAL not synced"
for r in $(seq "$ROUNDS"); do
  for lock in point range; do
    start "$lock"
    sb 4 prepare >/dev/null
    for t in $THREADS; do
      res=$(sb "$t" run)
      tps=$(echo "$res" | awk '/transactions:/ { gsub(/[(]/, "", $3); print $3 }')
      qps=$(echo "$res" | awk '/queries:/ && /per sec/ { gsub(/[(]/, "", $3); print $3 }')
      ign=$(echo "$res" | awk '/ignored errors:/ { print $3 }')
      echo "RESULT engine=txnlockd-$lock workload=oltp_write_only threads=$t run=$r tps=$tps qps=$qps ignored=$ign"
    done
    stop
  done
  for e in $ENGINES; do
    ENGINES=$e RUNS=1 TIME=$TIME THREADS="$THREADS" TABLE_SIZE=$TABLE_SIZE OUT="$work/mariadb.txt" \
      bash "$MARIADB_RUNNER" >/dev/null 2>&1
    grep '^RESULT' "$work/mariadb.txt" | sed "s/run=1/run=$r/"
  done
  "$work/lockbench" run --lock point,range --threads "$(echo "$THREADS" | tr ' ' ,)" --time "$TIME" --pairs 1 \
    --table-size "$TABLE_SIZE" --format csv 2>/dev/null |
    awk -F, -v r="$r" 'NR > 1 { printf "RESULT engine=lockbench-%s workload=%s threads=%s run=%s tps=%s qps=%s ignored=%d\n", $2, $1, $3, r, $5, $6, $10 + $11 }'
done

# Memory: three 1,000-connection mysqlslap runs against one server.
start point
for i in 1 2 3; do
  mysqlslap -h127.0.0.1 -P"$PORT" -uroot -a --auto-generate-sql-add-autoincrement \
    --auto-generate-sql-load-type=mixed -x2 -y3 -i1 -c1000 >/dev/null 2>"$work/slap.err"
  echo "RSS run=$i kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status") slap_errors=$(grep -c -e 'Cannot run' -e 'Error when' "$work/slap.err" || true)"
done
stop
} | tee "$OUT"

echo
echo "median QPS over $ROUNDS rounds (min-max)"
awk '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
       k = v["engine"] " " v["threads"]; if (!(k in n)) o[++m] = k; q[k, ++n[k]] = v["qps"]; qr[v["engine"], v["threads"], v["run"]] = v["qps"]
       e[v["engine"]] = 1; th[v["threads"]] = 1; runs[v["run"]] = 1 }
  function med(a, c,   i, j, t) { for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
  function ratio(num, den, t,   r, c, a, lo, hi) { c = 0; lo = 1e9; hi = 0
       for (r in runs) if ((num, t, r) in qr && (den, t, r) in qr && qr[den, t, r] > 0) { a[++c] = 100 * qr[num, t, r] / qr[den, t, r]; lo = a[c] < lo ? a[c] : lo; hi = a[c] > hi ? a[c] : hi }
       return c ? sprintf("%.1f (%.1f-%.1f)", med(a, c), lo, hi) : "-" }
  END {
    for (i = 1; i <= m; i++) { split(o[i], p, " "); c = n[o[i]]; delete a; lo = 1e12; hi = 0
      for (j = 1; j <= c; j++) { a[j] = q[o[i], j] + 0; lo = a[j] < lo ? a[j] : lo; hi = a[j] > hi ? a[j] : hi }
      printf "  %-16s %3s threads  %9.0f  (%.0f-%.0f)\n", p[1], p[2], med(a, c), lo, hi }
    print "per-round ratios, % (median, min-max):"
    for (t in th) {
      printf "  %3s threads  point/innodb %s  point/rocksdb %s  range/point %s  point/lockbench %s  range/lockbench-range %s\n", t,
        ratio("txnlockd-point", "innodb", t), ratio("txnlockd-point", "rocksdb", t), ratio("txnlockd-range", "txnlockd-point", t),
        ratio("txnlockd-point", "lockbench-point", t), ratio("txnlockd-range", "lockbench-range", t) }
  }' "$OUT"
grep '^RSS' "$OUT"
