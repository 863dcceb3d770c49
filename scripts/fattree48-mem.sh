#!/usr/bin/env bash
# Runs scenarios/fabric/fat-tree-k48.yaml (the largest fabric a scenario
# may generate: 27 648 hosts, 2 881 switches) under `ulimit -v 4G` and
# prints the run's peak resident set and CPU time: the memory check of
# docs/scaling.md, "The simulator: route tables of a large fabric". One
# run at a time (it takes a core and a few GB); not part of make test.
#
# Usage: scripts/fattree48-mem.sh [LHCNP_BINARY]   (default: go build ./cmd/lhcnp)
set -euo pipefail

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bin=${1:-}
if [ -z "$bin" ]; then
	bin=$tmp/lhcnp
	go build -o "$bin" ./cmd/lhcnp
fi
ulimit -v $((4 << 20)) # KiB: 4 GiB of address space
/usr/bin/time -f 'peak RSS %M KB, %U s user, %S s system, %e s wall' \
	"$bin" sim run scenarios/fabric/fat-tree-k48.yaml --no-plots --out "$tmp/out"
