#!/usr/bin/env bash
# Installs the external tools the tests use, when missing: tshark and scapy
# (independent packet oracles) and yanglint (YANG validation). Debian only;
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
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "deps: missing ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
if ! apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/lhcnp-apt.log 2>&1; then
  apt-get update >>/tmp/lhcnp-apt.log 2>&1
  apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/lhcnp-apt.log 2>&1 || {
    tail -20 /tmp/lhcnp-apt.log >&2; exit 1; }
fi
