#!/bin/bash
# vs-rocksdb.sh: txnlock's point locking against RocksDB's (TransactionDB,
# point lock manager) on sysbench's oltp_write_only shape, in interleaved
# pairs: for each thread count, ROUNDS rounds of one lockbench run and one
# RocksDB run of SECS seconds each, alternating which goes first. Prints
# one line per run ("threads round side qps"), then per thread count the
# median of the rounds' txnlock/RocksDB QPS ratios and every round's.
# KINDS lists lockbench's lock kinds to run in each round (default point);
# KINDS="point none" adds the control of no locking at all, the bound that
# no lock manager on Pebble can pass.
#
#   go build -o /tmp/lockbench ./cmd/lockbench
#   (the RocksDB ramp of BENCHMARKS.md §2 builds /tmp/oltp_bench)
#   tools/vs-rocksdb.sh                    # ROUNDS=4 SECS=3 THREADS="1 2 4 8 16 32 64 100"
#   KINDS="point none" THREADS=2 ROUNDS=8 tools/vs-rocksdb.sh
#
# lockbench runs each kind twice per round (one mirrored pair); both
# sides use a fresh 10,000-row table in memory, WAL on, commits not synced.
set -euo pipefail
ROUNDS=${ROUNDS:-4}
SECS=${SECS:-3}
THREADS=${THREADS:-"1 2 4 8 16 32 64 100"}
KINDS=${KINDS:-point}
LOCKBENCH=${LOCKBENCH:-/tmp/lockbench}
ROCKS=${ROCKS:-/tmp/oltp_bench}

runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for t in $THREADS; do
  for r in $(seq "$ROUNDS"); do
    order="$KINDS rocksdb"
    if [ $((r % 2)) = 0 ]; then order="rocksdb $KINDS"; fi
    for side in $order; do
      if [ "$side" != rocksdb ]; then
        q=$("$LOCKBENCH" run --lock "$side" --threads "$t" --pairs 1 --time "$SECS" --per-run none --driver-overhead 0 |
          awk -v t="$t" '$1 == t { print $2; exit }')
      else
        q=$("$ROCKS" --mode=point --cfs=1 --threads="$t" --time="$SECS" --table_size=10000 |
          awk '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "qps") print kv[2] } }')
      fi
      echo "$t $r $side $q" | tee -a "$runs"
    done
  done
done
echo "threads  kind   txnlock/RocksDB point QPS: median (rounds)"
awk -v kinds="$KINDS" '{ q[$1, $2, $3] = $4; if (!($1 in seen)) { seen[$1] = 1; ts[++n] = $1 } if ($2 > rounds) rounds = $2 }
  END {
    nk = split(kinds, ks, " ")
    for (i = 1; i <= n; i++) for (k = 1; k <= nk; k++) {
      t = ts[i]; m = 0; line = ""
      for (r = 1; r <= rounds; r++) { x[++m] = q[t, r, ks[k]] / q[t, r, "rocksdb"]; line = line sprintf(" %.2f", x[m]) }
      for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (x[b] < x[a]) { y = x[a]; x[a] = x[b]; x[b] = y }
      med = (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
      printf "%7s  %-5s  %.2f (%s )\n", t, ks[k], med, line
    }
  }' "$runs"
