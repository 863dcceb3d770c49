#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 5s),
# FUZZJOBS targets at a time (default: the number of CPUs), each run with
# that share of the CPUs as its workers.
#
# `go test -fuzz` takes one target per run, so the targets are listed first:
# from the test files' `func FuzzX(f *testing.F)` lines, which costs nothing,
# where `go test -list` linked every package's test binary (a minute and a
# half on two cores). `fuzz.sh --list` prints them; TestFuzzListing
# (scripts/fuzzlist) checks it against every fuzz target Go's parser finds.
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
jobs=${FUZZJOBS:-$(getconf _NPROCESSORS_ONLN)}
[ "$jobs" -ge 1 ] 2>/dev/null || { echo "fuzz: FUZZJOBS=$jobs: want a positive number" >&2; exit 2; }
workers=$(( $(getconf _NPROCESSORS_ONLN) / jobs ))
[ "$workers" -ge 1 ] || workers=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# deadline_flake LOG: the run failed only by the coordinator's deadline race.
deadline_flake() {
  grep -q 'context deadline exceeded' "$1" &&
    ! grep -q -e 'Failing input written to' -e '^panic:' -e '_test.go:[0-9]*:' "$1"
}

# fuzz_one N PKG TARGET: runs one target (retrying a deadline race once),
# its output in $dir/N.log, its result in $dir/N.ok, .flake or .fail.
fuzz_one() {
  local n=$1 pkg=$2 t=$3 log="$dir/$1.log"
  for attempt in 1 2; do
    if go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" \
      -parallel "$workers" "$pkg" >"$log" 2>&1; then
      touch "$dir/$n.ok"
      return 0
    fi
    if [ "$attempt" = 1 ] && deadline_flake "$log"; then
      touch "$dir/$n.flake"
      continue
    fi
    touch "$dir/$n.fail"
    return 1
  done
}

# The targets: "./DIR TARGET", one per line, in a stable order.
targets=$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go' -not -path './.git/*')
list=$(for f in $targets; do
  sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)([A-Za-z0-9_]* \*testing\.F).*/\1/p' "$f" | while read -r t; do
    echo "./$(dirname "${f#./}") $t"
  done
done | sort -u)
if [ -z "$list" ]; then
  echo "fuzz: no targets found" >&2
  exit 1
fi
if [ "${1:-}" = --list ]; then
  echo "$list"
  exit 0
fi

n=0 running=0 failed=0
while read -r pkg t; do
  n=$((n+1))
  echo "fuzz: $pkg $t ($fuzztime)"
  fuzz_one "$n" "$pkg" "$t" &
  running=$((running+1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=1
    running=$((running-1))
  fi
  [ "$failed" = 0 ] || break
done <<<"$list"
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running-1))
done

flakes=$(find "$dir" -name '*.flake' | wc -l)
for f in "$dir"/*.fail; do
  [ -e "$f" ] || continue
  i=$(basename "$f" .fail)
  cat "$dir/$i.log"
  echo "fuzz: $(sed -n "${i}p" <<<"$list") failed"
done
if [ "$failed" != 0 ]; then
  exit 1
fi
echo "fuzz: $n targets passed ($flakes deadline races retried)"
