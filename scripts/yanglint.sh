#!/usr/bin/env bash
# Validates the lhcnp YANG modules with libyang's yanglint, strictly: any
# message on stderr (a warning included) fails the run. Also validates the
# JSON_IETF fixtures of yang/modeltest against the modules and checks that
# docs/yang-tree.txt is the tree yanglint prints now.
#
# Usage: scripts/yanglint.sh        check (exit 1 on any problem)
#        scripts/yanglint.sh -u     also rewrite docs/yang-tree.txt
#
# Installs Debian's libyang2-tools when yanglint is missing (needs root).
set -euo pipefail

cd "$(dirname "$0")/.."

update=false
case "${1:-}" in
  -u|--update) update=true ;;
  "") ;;
  *) echo "usage: $0 [-u]" >&2; exit 2 ;;
esac

if ! command -v yanglint >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "yanglint.sh: yanglint is missing; install libyang2-tools (needs root)" >&2
    exit 1
  fi
  echo "yanglint.sh: installing libyang2-tools" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends libyang2-tools >/dev/null 2>&1; then
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends libyang2-tools >/dev/null
  fi
fi

modules=(yang/lhcnp.yang yang/lhcnp-types.yang)
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME CMD...: runs CMD, failing on a non-zero exit or any stderr output.
run() {
  local name=$1
  shift
  if ! "$@" >"$tmp/out" 2>"$tmp/err" || [ -s "$tmp/err" ]; then
    echo "yanglint.sh: $name failed:" >&2
    cat "$tmp/err" >&2
    fail=1
    return 1
  fi
}

# -D: search only the directories given with -p, so nothing outside yang/
# can satisfy an import.
run "module validation" yanglint -D -p yang "${modules[@]}" || true
if [ -s "$tmp/out" ]; then
  echo "yanglint.sh: unexpected output from module validation:" >&2
  cat "$tmp/out" >&2
  fail=1
fi

run "config fixture" yanglint -D -p yang -t config yang/lhcnp.yang yang/modeltest/testdata/config.json || true
run "state fixture" yanglint -D -p yang -t data yang/lhcnp.yang yang/modeltest/testdata/state.json || true

if run "tree" yanglint -D -p yang -f tree yang/lhcnp.yang; then
  if $update; then
    cp "$tmp/out" docs/yang-tree.txt
    echo "yanglint.sh: wrote docs/yang-tree.txt" >&2
  elif ! cmp -s "$tmp/out" docs/yang-tree.txt; then
    echo "yanglint.sh: docs/yang-tree.txt is stale; run scripts/yanglint.sh -u" >&2
    diff -u docs/yang-tree.txt "$tmp/out" >&2 || true
    fail=1
  fi
fi

exit $fail
