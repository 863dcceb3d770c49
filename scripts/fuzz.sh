#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 5s).
# `go test -fuzz` takes one target per run, so targets are listed first.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime ends while a worker is mid-input (golang/go#75804,
# fixed in Go 1.27). A real finding always writes its input under
# testdata/fuzz and prints "Failing input written to"; a failure without one
# and with that message alone is retried once, anything else fails at once.
#
# Go minimizes every new interesting input for up to -fuzzminimizetime
# (60s by default), which for a slow target ate most of a short run (a
# 40 s run of FuzzSwitchFile made 7 executions; with 5 s, 7.7 k): so 5 s,
# or FUZZMINIMIZETIME.
set -euo pipefail
fuzztime=${FUZZTIME:-5s}
minimizetime=${FUZZMINIMIZETIME:-5s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# deadline_flake LOG: the run failed only by the coordinator's deadline race.
deadline_flake() {
  grep -q 'context deadline exceeded' "$1" &&
    ! grep -q -e 'Failing input written to' -e '^panic:' -e '_test.go:[0-9]*:' "$1"
}

n=0 flakes=0
for pkg in $(go list ./...); do
  targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
  for t in $targets; do
    for attempt in 1 2; do
      echo "fuzz: $pkg $t ($fuzztime)"
      if go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" "$pkg" >"$log" 2>&1; then
        break
      fi
      if [ "$attempt" = 1 ] && deadline_flake "$log"; then
        echo "fuzz: $t: coordinator deadline race (golang/go#75804), no failing input; running it again"
        flakes=$((flakes+1))
        continue
      fi
      cat "$log"
      echo "fuzz: $t failed"
      exit 1
    done
    n=$((n+1))
  done
done
echo "fuzz: $n targets passed ($flakes deadline races retried)"
