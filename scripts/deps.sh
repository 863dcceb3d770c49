#!/usr/bin/env bash
# Installs the external tools the tests use, when missing: tshark and scapy
# (independent packet oracles), yanglint (YANG validation), and PostgreSQL
# with pg_partman (the collector's database); with the argument `citus`, also
# Citus 13 for PostgreSQL 15 (the distributed mode, docs/scaling.md Step 3)
# from the prebuilt copy in ../shared/tools/citus-pg15 (CITUS_DIR overrides
# it; Debian 12 has no package). Debian only;
# needs root (CI runs as root). Prints what it does; changes nothing when all
# tools are present.
set -euo pipefail

missing=()
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
command -v yanglint >/dev/null 2>&1 || missing+=(libyang2-tools)
# The dashboard's browser test (headless chromium) and promtool, which checks
# deploy/prometheus.yml (Debian's prometheus package).
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# Debian's scapy lives in the system python; a pyenv python on PATH cannot see it.
if ! /usr/bin/python3 -c 'import scapy.contrib.roce' >/dev/null 2>&1; then
  missing+=(python3-scapy)
fi
# PostgreSQL server binaries (private clusters of tests and `lhcnp lab`) and
# pg_partman (daily partitions of samples; migrations fall back to plain SQL
# without it). Debian 12's server is 15.
if ! command -v postgres >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  missing+=(postgresql)
fi
if ! ls /usr/share/postgresql/*/extension/pg_partman.control >/dev/null 2>&1; then
  missing+=(postgresql-15-partman)
fi
citus=false
if [ "${1:-}" = citus ]; then
  citus=true
  if ls /usr/lib/postgresql/15/lib/citus.so /usr/share/postgresql/15/extension/citus.control >/dev/null 2>&1; then
    citus=false
  fi
fi
# `deps.sh lab` (make lab): only what the lab itself runs, PostgreSQL, so
# that it comes up fast on a fresh machine; the test tools come with make test.
if [ "${1:-}" = lab ]; then
  lab=()
  for p in "${missing[@]}"; do
    case $p in postgresql|postgresql-15-partman) lab+=("$p") ;; esac
  done
  missing=("${lab[@]}")
fi
[ ${#missing[@]} -eq 0 ] && [ $citus = false ] && exit 0

if [ "$(id -u)" != 0 ]; then
  [ ${#missing[@]} -eq 0 ] || echo "deps: missing ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
  [ $citus = false ] || echo "deps: missing Citus; run as root: scripts/deps.sh citus" >&2
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  if ! apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/lhcnp-apt.log 2>&1; then
    apt-get update >>/tmp/lhcnp-apt.log 2>&1
    apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/lhcnp-apt.log 2>&1 || {
      tail -20 /tmp/lhcnp-apt.log >&2; exit 1; }
  fi
fi
if [ $citus = true ]; then
  # After the apt step: Citus goes into the installed PostgreSQL 15.
  dir=${CITUS_DIR:-$(cd "$(dirname "$0")/.." && pwd)/../shared/tools/citus-pg15}
  if [ ! -x "$dir/install.sh" ]; then
    echo "deps: Citus: no $dir/install.sh (set CITUS_DIR to the prebuilt Citus 13 for PostgreSQL 15)" >&2
    exit 1
  fi
  echo "deps: installing Citus from $dir" >&2
  "$dir/install.sh" >&2
fi
