#!/usr/bin/env bash
# Fails when gen/ is not exactly what `go generate ./gen/...` produces from
# yang/ with the generators pinned in go.mod.
#
# It regenerates from scratch in a temporary copy of the module (go.mod,
# go.sum, yang/ and gen/ without its generated oc/ and client/ trees), so it neither touches
# the working tree nor depends on what git has committed, and catches stale,
# hand-edited, missing and extra files alike. It then checks that gen/ is
# gofmt-clean and builds.
#
# Usage: scripts/check-gen.sh   (exit 1 naming the differing files)
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cp go.mod go.sum "$tmp/"
cp -r yang "$tmp/yang"
cp -r gen "$tmp/gen"
rm -rf "$tmp/gen/oc" "$tmp/gen/client"

(cd "$tmp" && go generate ./gen/...)

fail=0
if ! diff -r -q "$root/gen" "$tmp/gen" >"$tmp/diff.txt"; then
  echo "check-gen.sh: gen/ differs from a fresh 'go generate ./gen/...':" >&2
  sed -e "s#$tmp/#<fresh>/#g" -e "s#$root/##g" "$tmp/diff.txt" >&2
  echo "check-gen.sh: run 'go generate ./gen/...' and commit the result" >&2
  fail=1
fi

unformatted=$(gofmt -l gen 2>&1 || true)
if [ -n "$unformatted" ]; then
  echo "check-gen.sh: not gofmt-clean:" >&2
  echo "$unformatted" >&2
  fail=1
fi

if ! go build ./gen/...; then
  echo "check-gen.sh: gen/ does not build" >&2
  fail=1
fi

exit $fail
