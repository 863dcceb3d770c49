#!/usr/bin/env bash
# Measures `make lab` from the command to the printed banner and to the
# dashboard showing data (docs/lab.md, "How fast it comes up"). Each line
# of make's output is stamped with the seconds since the start, so the
# phases show: the build (make echoes `go build`, then `./bin/lhcnp lab`
# once the binary is built), the lab's start (PostgreSQL, switches,
# collector, tuner), its banner, and the first queue sample the dashboard
# serves (/api/queues with a queue depth for n1's WAN queue).
#
#   scripts/lab-startup-time.sh cold   # empty Go build and module caches
#   scripts/lab-startup-time.sh warm   # the caches as they are
#   STATE=DIR scripts/lab-startup-time.sh warm   # reuse a state directory
#
# The lab is stopped (SIGINT) once the data is there; the temporary caches
# and state directory are removed. Prints the load average before and after,
# and the CPU time (user + system) of everything make ran: on a shared
# machine the wall clock depends on the others' load, the CPU time hardly.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-warm}
tmp=$(mktemp -d)
chmod 755 "$tmp" # run as root, PostgreSQL runs as the postgres user and must reach it
cleanup() {
  if [ -n "${lab_pid:-}" ] && kill -0 "$lab_pid" 2>/dev/null; then
    kill -INT -- "-$lab_pid" 2>/dev/null || true
    wait "$lab_pid" 2>/dev/null || true
  fi
  if [ "$mode" = cold ]; then
    GOMODCACHE="$tmp/mod" go clean -modcache 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ "$mode" = cold ]; then
  export GOCACHE="$tmp/build" GOMODCACHE="$tmp/mod"
  mkdir -p "$GOCACHE" "$GOMODCACHE"
fi
state=${STATE:-$tmp/state}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "mode $mode, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"

start=$(date +%s.%N)
stamp() {
  while IFS= read -r line; do
    printf '%6.1fs %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$line"
  done
}
# A process group of its own, so that SIGINT reaches the lab under make.
setsid make lab LAB_FLAGS="--state-dir $state --http 127.0.0.1:$port --listen 127.0.0.1:0" \
  > >(stamp | tee "$tmp/out" | grep -E 'go build|deps|bin/lhcnp lab|lhcnp lab:|dashboard  |Ctrl-C|rror') 2>&1 &
lab_pid=$!

deadline=$(( $(date +%s) + 600 ))
# The dashboard is asked only once the lab printed it: polling during the
# build would take CPU time from the build.
until grep -q 'dashboard  ' "$tmp/out" 2>/dev/null && curl -fs "http://127.0.0.1:$port/api/queues" 2>/dev/null \
    | python3 -c 'import json,sys; q=json.load(sys.stdin)["queues"]; sys.exit(0 if any(x["target"]=="n1" and x.get("queue_depth_bytes") is not None for x in q) else 1)' 2>/dev/null; do
  if ! kill -0 "$lab_pid" 2>/dev/null; then
    echo "make lab ended before the dashboard had data" >&2
    exit 1
  fi
  if [ "$(date +%s)" -gt "$deadline" ]; then
    echo "no data on the dashboard after 600 s" >&2
    exit 1
  fi
  sleep 0.2 # polling an outside process; not a test
done
printf '%6.1fs the dashboard has data (n1 queue depth)\n' "$(echo "$(date +%s.%N) - $start" | bc)"
kill -INT -- "-$lab_pid"
wait "$lab_pid" || true
lab_pid=
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# bash's times: this shell's CPU time, then its children's (make and all it
# ran, the build and the lab until stopped, and the polls).
times >"$tmp/times" # not in a pipe: a subshell has no children
sed -n 2p "$tmp/times" | sed 's/^/CPU time of make lab (user, system): /'
