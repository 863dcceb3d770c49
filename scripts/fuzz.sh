#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 5s).
# `go test -fuzz` takes one target per run, so targets are listed first.
set -euo pipefail
fuzztime=${FUZZTIME:-5s}
n=0
for pkg in $(go list ./...); do
  targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
  for t in $targets; do
    echo "fuzz: $pkg $t ($fuzztime)"
    go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/lhcnp-fuzz.log 2>&1 || {
      cat /tmp/lhcnp-fuzz.log; echo "fuzz: $t failed"; exit 1; }
    n=$((n+1))
  done
done
echo "fuzz: $n targets passed"
