#!/usr/bin/env bash
# Real clients against txnlockd: Debian's sysbench 1.0.20 and mysqlslap and
# the mariadb shell (package mariadb-client), unmodified, for --lock point
# and --lock range. Each check prints "ok: ..." or stops the script with
# "FAIL: ...".
#
#   bash cmd/txnlockd/clients/run.sh            # both lock kinds
#   LOCKS=range SB_TIME=5 bash cmd/txnlockd/clients/run.sh
#
# Environment: LOCKS (default "point range"), PORT (default 3407),
# SB_TIME (seconds per sysbench run, default 20), SB_EVENTS (transactions
# of the one-thread lock-request count, default 10000), SLAP_C (mysqlslap
# client counts of the ramp, default 50,200,500,1000).
set -euo pipefail
cd "$(dirname "$0")/.."

LOCKS=${LOCKS:-point range}
PORT=${PORT:-3407}
SB_TIME=${SB_TIME:-20}
SB_EVENTS=${SB_EVENTS:-10000}
SLAP_C=${SLAP_C:-50,200,500,1000}
for tool in sysbench mysqlslap mariadb; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed (apt-get install sysbench mariadb-client)"; exit 1; }
done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  for p in $(jobs -p); do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
echo "== build txnlockd"
go build -o "$work/txnlockd" .

fail() { echo "FAIL: $*"; [[ -f $work/server.log ]] && tail -20 "$work/server.log"; exit 1; }
ok() { echo "ok: $*"; }
sql() { mariadb -h127.0.0.1 -P"$PORT" -uroot -N -B -A "$@"; }
counter() { sql -e "SHOW STATUS LIKE '$1'" | cut -f2; }

# start_server ARGS...: a fresh in-memory server; waits (bounded) until it
# accepts connections.
start_server() {
  stop_server
  "$work/txnlockd" --addr "127.0.0.1:$PORT" --allow-empty-root "$@" >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    if sql -e "SELECT 1" >/dev/null 2>&1; then return; fi
    kill -0 "$server_pid" 2>/dev/null || fail "txnlockd exited: $(cat "$work/server.log")"
    sleep 0.1
  done
  fail "txnlockd did not start listening"
}
stop_server() {
  if [[ -n $server_pid ]]; then kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=; fi
}

# check_tables N [any]: every sbtest table has N rows (any: any number),
# ids 1..N unless the second argument is "any", and its index agrees with
# its rows; no lock held, no transaction open.
check_tables() {
  local n=$1 ids=${2:-exact}
  while IFS=$'\t' read -r db table rows index entries missing extra; do
    [[ $n == any || $rows == "$n" ]] || fail "$table has $rows rows, want $n"
    [[ $entries == "$rows" && $missing == 0 && $extra == 0 ]] || fail "$table index $index: $entries entries for $rows rows, $missing missing, $extra extra"
  done < <(sql -e "SELECT * FROM txnlock.table_check WHERE TABLE_SCHEMA='sbtest'")
  if [[ $ids == exact ]]; then
    for t in sbtest1 sbtest2; do
      [[ $(sql sbtest -e "SELECT MIN(id), MAX(id) FROM $t") == "1"$'\t'"$n" ]] || fail "$t ids are not 1..$n"
    done
  fi
  [[ $(counter Txnlock_current_locks) == 0 ]] || fail "locks held after the run: $(sql -e 'SELECT * FROM performance_schema.data_locks' | head)"
  [[ $(counter Txnlock_open_transactions) == 0 ]] || fail "transactions open after the run"
}

# session NAME: a mariadb shell reading statements from a FIFO (fd kept
# open), its output in $work/NAME.out. say NAME SQL sends statements; sync
# NAME waits (bounded) until they have run, by a marker it echoes.
declare -A fds
session() {
  rm -f "$work/$1.in"
  mkfifo "$work/$1.in"
  mariadb -h127.0.0.1 -P"$PORT" -uroot -A -N -B --force --unbuffered sbtest <"$work/$1.in" >"$work/$1.out" 2>&1 &
  eval "exec {fd}>\"$work/$1.in\""
  fds[$1]=$fd
  eval "${1}_pid=$!"
}
say() { echo "$2" >&"${fds[$1]}"; }
marker=0
sync_session() {
  marker=$((marker + 1))
  say "$1" "SELECT 'marker-$marker';"
  for _ in $(seq 200); do grep -q "marker-$marker" "$work/$1.out" && return; sleep 0.05; done
  fail "session $1 did not reach marker $marker: $(cat "$work/$1.out")"
}
end_session() { eval "exec ${fds[$1]}>&-"; }
# waiting N: bounded wait until N lock requests wait.
waiting() {
  for _ in $(seq 200); do [[ $(counter Txnlock_waiting) == "$1" ]] && return; sleep 0.05; done
  fail "want $1 waiting lock requests, have $(counter Txnlock_waiting)"
}

O="--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest"

for lock in $LOCKS; do
  echo "== --lock $lock: sysbench"
  start_server --lock "$lock"
  sql -e "CREATE DATABASE sbtest"
  sysbench oltp_write_only $O --tables=2 --table-size=10000 prepare >"$work/sb.out" 2>&1 || fail "prepare: $(cat "$work/sb.out")"
  check_tables 10000
  ok "prepare: 2 tables of ids 1..10000, index k_1 agrees"

  for script in oltp_write_only oltp_update_non_index oltp_read_write oltp_point_select; do
    for ps in auto disable; do
      sysbench "$script" $O --tables=2 --table-size=10000 --threads=16 --time="$SB_TIME" --db-ps-mode="$ps" run >"$work/sb.out" 2>&1 ||
        fail "$script --db-ps-mode=$ps: $(tail -20 "$work/sb.out")"
      check_tables 10000 any
      ok "$script --db-ps-mode=$ps: $(grep -o 'transactions: *[0-9]* *([0-9.]* per sec.)' "$work/sb.out" | tr -s ' '); tables check, no locks, no open transaction"
    done
  done

  # The other bundled scripts, briefly: they must run without errors.
  for script in oltp_read_only oltp_delete oltp_insert select_random_points select_random_ranges; do
    sysbench "$script" $O --tables=2 --table-size=10000 --threads=4 --time=3 run >"$work/sb.out" 2>&1 ||
      fail "$script: $(tail -20 "$work/sb.out")"
    grep -q 'ignored errors: *0 ' "$work/sb.out" || fail "$script: errors: $(grep 'ignored errors' "$work/sb.out")"
    check_tables any any
    ok "$script: $(grep -o 'transactions: *[0-9]* *([0-9.]* per sec.)' "$work/sb.out" | tr -s ' ')"
  done
  sysbench oltp_write_only $O --tables=2 cleanup >/dev/null
  sysbench oltp_write_only $O --tables=2 --table-size=10000 prepare >/dev/null

  echo "== --lock $lock: lock requests per transaction at one thread"
  before_r=$(counter Txnlock_explicit_commit_lock_requests)
  before_c=$(counter Txnlock_explicit_commits)
  sysbench oltp_write_only $O --tables=2 --table-size=10000 --threads=1 --time=0 --events="$SB_EVENTS" run >"$work/sb.out" 2>&1 || fail "one thread: $(tail "$work/sb.out")"
  reqs=$(($(counter Txnlock_explicit_commit_lock_requests) - before_r))
  txns=$(($(counter Txnlock_explicit_commits) - before_c))
  want=3; [[ $lock == range ]] && want=7
  per=$(awk -v r="$reqs" -v t="$txns" 'BEGIN { printf "%.4f", r / t }')
  awk -v p="$per" -v w="$want" 'BEGIN { exit !(p >= w * 0.99 && p <= w * 1.01) }' || fail "$per lock requests per transaction, want $want ±1%"
  ok "$txns transactions, $per lock requests each (lockbench: $want)"

  echo "== --lock $lock: contention"
  sysbench oltp_write_only $O --tables=2 cleanup >/dev/null
  sysbench oltp_write_only $O --tables=2 --table-size=100 prepare >/dev/null
  before=$(($(counter Txnlock_deadlock_errors) + $(counter Txnlock_lock_wait_timeout_errors)))
  sysbench oltp_write_only $O --tables=2 --table-size=100 --threads=32 --time="$SB_TIME" run >"$work/sb.out" 2>&1 || fail "contention: $(tail "$work/sb.out")"
  ignored=$(grep -o 'ignored errors: *[0-9]*' "$work/sb.out" | grep -o '[0-9]*$')
  server=$(($(counter Txnlock_deadlock_errors) + $(counter Txnlock_lock_wait_timeout_errors) - before))
  [[ $ignored -gt 0 ]] || fail "no ignored errors under contention"
  [[ $ignored == "$server" ]] || fail "sysbench ignored $ignored errors, the server returned $server 1213/1205"
  check_tables 100 any
  ok "--table-size=100 --threads=32: $ignored ignored errors = the server's 1213+1205 count"

  echo "== --lock $lock: mariadb shell sessions"
  session a; session b
  say a "BEGIN; UPDATE sbtest1 SET c='a' WHERE id=1;"; sync_session a
  say b "BEGIN; UPDATE sbtest1 SET c='b' WHERE id=2;"; sync_session b
  say a "UPDATE sbtest1 SET c='a' WHERE id=2;"; waiting 1
  say b "UPDATE sbtest1 SET c='b' WHERE id=1;"; sync_session b
  grep -q "ERROR 1213 (40001)" "$work/b.out" || fail "no 1213: $(cat "$work/b.out")"
  sync_session a; say a "COMMIT;"; sync_session a
  [[ $(sql sbtest -e "SELECT COUNT(*) FROM sbtest1 WHERE id IN (1,2) AND c='a'") == 2 ]] || fail "the loser's update was not rolled back"
  ok "2-cycle: ERROR 1213 (40001), the loser's changes rolled back"

  say a "BEGIN; UPDATE sbtest1 SET c='a' WHERE id=3;"; sync_session a
  say b "SET SESSION innodb_lock_wait_timeout=1; BEGIN; UPDATE sbtest1 SET c='b' WHERE id=4; UPDATE sbtest1 SET c='b' WHERE id=3;"; sync_session b
  grep -q "ERROR 1205 (HY000)" "$work/b.out" || fail "no 1205: $(cat "$work/b.out")"
  say b "SET SESSION innodb_lock_wait_timeout=50;"
  say a "COMMIT;"; sync_session a
  [[ $(sql sbtest -e "SELECT c FROM sbtest1 WHERE id=4") != b ]] || fail "the timed-out transaction was not rolled back"
  ok "ERROR 1205 (HY000) after innodb_lock_wait_timeout=1, rolled back"

  sql sbtest -e "DELETE FROM sbtest1 WHERE id=15"
  say a "BEGIN; SELECT COUNT(*) FROM sbtest1 WHERE id BETWEEN 10 AND 20 FOR UPDATE;"; sync_session a
  say b "INSERT INTO sbtest1 (id, k, c, pad) VALUES (15, 15, 'gap', '');"
  if [[ $lock == range ]]; then
    waiting 1
    say a "COMMIT;"; sync_session a; sync_session b
    ok "INSERT into the gap of BETWEEN … FOR UPDATE waited until the commit"
  else
    sync_session b
    [[ $(counter Txnlock_waiting) == 0 ]] || fail "the INSERT waits under point locking"
    say a "COMMIT;"; sync_session a
    ok "INSERT into the gap of BETWEEN … FOR UPDATE did not wait (point locking)"
  fi
  end_session a; end_session b; wait "$a_pid" "$b_pid" || true

  echo "== --lock $lock: clients killed while waiting and while idle in a transaction"
  session h; session w; session i
  say h "BEGIN; UPDATE sbtest1 SET c='h' WHERE id=21;"; sync_session h
  say w "SELECT CONCAT('thread-', CONNECTION_ID()); BEGIN; UPDATE sbtest1 SET c='w' WHERE id=22;"; sync_session w
  say i "SELECT CONCAT('thread-', CONNECTION_ID()); BEGIN; UPDATE sbtest1 SET c='i' WHERE id=23;"; sync_session i
  say w "UPDATE sbtest1 SET c='w' WHERE id=21;"; waiting 1
  wt=$(grep -o 'thread-[0-9]*' "$work/w.out" | cut -d- -f2); it=$(grep -o 'thread-[0-9]*' "$work/i.out" | cut -d- -f2)
  kill -9 "$w_pid" "$i_pid"
  { wait "$w_pid" "$i_pid"; } 2>/dev/null || true
  gone=
  for _ in $(seq 20); do
    n=$(sql -e "SELECT COUNT(*) FROM performance_schema.data_locks WHERE THREAD_ID IN ($wt, $it)")
    if [[ $n == 0 && $(counter Txnlock_waiting) == 0 ]]; then gone=1; break; fi
    sleep 0.05
  done
  [[ -n $gone ]] || fail "1 s after SIGKILL the killed clients still lock or wait"
  say h "COMMIT;"; sync_session h; end_session h; end_session w; end_session i; wait "$h_pid" 2>/dev/null || true
  ok "SIGKILLed clients (waiting, idle in a transaction): nothing of theirs locked or waiting within 1 s"

  echo "== --lock $lock: mysqlslap"
  k0=$(sql sbtest -e "SELECT k FROM sbtest1 WHERE id=1")
  mysqlslap -h127.0.0.1 -P"$PORT" -uroot --create-schema=sbtest --query="UPDATE sbtest1 SET k=k+1 WHERE id=1" -c8 --number-of-queries=8000 >"$work/slap.out" 2>&1 || fail "mysqlslap: $(cat "$work/slap.out")"
  k1=$(sql sbtest -e "SELECT k FROM sbtest1 WHERE id=1")
  [[ $((k1 - k0)) == 8000 ]] || fail "k rose by $((k1 - k0)), want 8000"
  ok "mysqlslap -c8 --number-of-queries=8000: k rose by exactly 8000"

  for mode in 0 1 2; do
    start_server --lock "$lock" --autoinc-mode "$mode"
    mysqlslap -h127.0.0.1 -P"$PORT" -uroot -a --auto-generate-sql-add-autoincrement --auto-generate-sql-load-type=mixed -x2 -y3 -i3 -c"$SLAP_C" >"$work/slap.out" 2>"$work/slap.err" || fail "mysqlslap ramp: $(cat "$work/slap.err")"
    ! grep -q -e "Cannot run query" -e "Error when connecting" "$work/slap.err" || fail "mysqlslap ramp, autoinc $mode: $(head -5 "$work/slap.err")"
    blocks=$(grep -c "^Benchmark" "$work/slap.out")
    [[ $blocks == $(echo "$SLAP_C" | tr , '\n' | wc -l) ]] || fail "$blocks Benchmark blocks for -c$SLAP_C"
    [[ $(counter Txnlock_deadlock_errors) == 0 ]] || fail "1213 returned in the mysqlslap ramp"
    mysqlslap -h127.0.0.1 -P"$PORT" -uroot -a --auto-generate-sql-add-autoincrement --auto-generate-sql-load-type=mixed -x2 -y3 -i1 -c200 --no-drop >"$work/slap.out" 2>"$work/slap.err" || fail "mysqlslap --no-drop: $(cat "$work/slap.err")"
    read -r rows distinct < <(sql -e "SELECT COUNT(*), COUNT(DISTINCT id) FROM mysqlslap.t1")
    [[ $rows -gt 0 && $rows == "$distinct" ]] || fail "mysqlslap --no-drop left $rows rows with $distinct distinct ids"
    ok "mysqlslap ramp -c$SLAP_C, autoinc mode $mode: $blocks Benchmark blocks, no errors, no 1213; --no-drop: $rows rows, unique ids"
  done
  stop_server
done
echo "== all real-client checks passed"
