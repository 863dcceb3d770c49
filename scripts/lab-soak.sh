#!/usr/bin/env bash
# Runs `lhcnp lab` for a while and writes its disk, memory and CPU over time
# to a file, one line every LAB_SOAK_INTERVAL seconds (docs/lab.md, "Disk"):
#
#   make lab-soak                                   # 30 minutes, lab-soak.tsv
#   LAB_SOAK_MINUTES=5 LAB_FLAGS="--speed 0.1" scripts/lab-soak.sh
#
# Columns: seconds since the banner; bytes of the state directory, of its
# WAL (postgres/pg_wal) and of the database (pg_database_size); the lab's
# and PostgreSQL's memory (proportional set size, kB: PostgreSQL's shared
# buffers counted once); the CPU each used since the last line (percent of
# one core); the largest engine-lag the switches published since the last
# line (ns of simulated time, 0 when the engine keeps up) and the samples
# stored since the last line.
#
# LAB_SOAK_STATE: the state directory (default a fresh temporary one,
# removed at the end); LAB_SOAK_OUT: the file (default lab-soak.tsv);
# LAB_FLAGS: more flags for lhcnp lab. Every address is a free port, so the
# soak runs beside a lab on the default ones. Needs bin/lhcnp (make build)
# and psql.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${LAB_SOAK_MINUTES:-30}
interval=${LAB_SOAK_INTERVAL:-30}
out=${LAB_SOAK_OUT:-lab-soak.tsv}
state=${LAB_SOAK_STATE:-}
tmp=$(mktemp -d)
chmod 755 "$tmp" # as root PostgreSQL runs as the postgres user and must reach the state directory
if [ -z "$state" ]; then state=$tmp/state; fi

lab_pid=
cleanup() {
  if [ -n "$lab_pid" ] && kill -0 "$lab_pid" 2>/dev/null; then
    kill -INT "$lab_pid" 2>/dev/null || true
    wait "$lab_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck disable=SC2086 # LAB_FLAGS is a list of flags
./bin/lhcnp lab --state-dir "$state" --http 127.0.0.1:0 --listen 127.0.0.1:0 --postgres-port 0 \
  --metrics 127.0.0.1:0 ${LAB_FLAGS:-} >"$tmp/lab.out" 2>&1 &
lab_pid=$!
for _ in $(seq 600); do
  grep -q '^-----' "$tmp/lab.out" && break
  kill -0 "$lab_pid" 2>/dev/null || { cat "$tmp/lab.out"; exit 1; }
  sleep 0.2
done
grep -q '^-----' "$tmp/lab.out" || { echo "lab-soak: no banner within 120 s" >&2; cat "$tmp/lab.out"; exit 1; }
dsn=$(awk '$1 == "postgresql" {print $2}' "$tmp/lab.out")
pg_pid=$(head -1 "$state/postgres/postmaster.pid")

# CPU ticks (user + system, with the waited-for children's) of a process.
ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# Proportional set size of a process, kB.
pss() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }
pg_pids() { echo "$pg_pid"; ps -o pid= --ppid "$pg_pid"; }
pg_ticks() { local s=0 p; for p in $(pg_pids); do s=$((s + $(ticks "$p"))); done; echo "$s"; }
pg_pss() { local s=0 p; for p in $(pg_pids); do s=$((s + $(pss "$p"))); done; echo "$s"; }
hz=$(getconf CLK_TCK)
q() { psql "$dsn" -Atqc "$1" 2>/dev/null || echo NA; }

printf 'seconds\tstate_bytes\twal_bytes\tdb_bytes\tlab_pss_kb\tpg_pss_kb\tlab_cpu_pct\tpg_cpu_pct\tengine_lag_max_ns\tsamples\n' | tee "$out"
start=$(date +%s)
last_lab=$(ticks "$lab_pid") last_pg=$(pg_ticks) last_t=$start
end=$((start + $(awk -v m="$minutes" 'BEGIN { print int(m * 60) }')))
while :; do
  now=$(date +%s)
  [ "$now" -ge "$end" ] && break
  sleep $((interval < end - now ? interval : end - now))
  kill -0 "$lab_pid" 2>/dev/null || { echo "lab-soak: the lab ended" >&2; tail "$tmp/lab.out" >&2; exit 1; }
  now=$(date +%s)
  lab_t=$(ticks "$lab_pid") pg_t=$(pg_ticks)
  dt=$((now - last_t > 0 ? now - last_t : 1))
  since="now() - interval '$dt seconds'"
  printf '%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n' $((now - start)) \
    "$(du -sb "$state" | cut -f1)" "$(du -sb "$state/postgres/pg_wal" | cut -f1)" \
    "$(q "SELECT pg_database_size(current_database())")" "$(pss "$lab_pid")" "$(pg_pss)" \
    $(((lab_t - last_lab) * 100 / hz / dt)) $(((pg_t - last_pg) * 100 / hz / dt)) \
    "$(q "SELECT COALESCE(max(s.v_int), 0) FROM samples s JOIN series se ON se.id = s.series_id WHERE se.schema_path = '/lhcnp/global/state/engine-lag' AND s.ts > $since")" \
    "$(q "SELECT count(*) FROM samples WHERE ts > $since")" | tee -a "$out"
  last_lab=$lab_t last_pg=$pg_t last_t=$now
done
echo "lab-soak: $minutes minutes, written to $out (load average $(cut -d' ' -f1-3 /proc/loadavg))"
