#!/usr/bin/env bash
# Installs the system packages shmpi builds against, only when missing:
# hwloc (the topology library, through the hwlocality crate) with
# pkg-config to find it, and libudev (which hwloc's pkg-config file names).
# Idempotent: a second run installs nothing and prints nothing.
set -euo pipefail

pkgs=(libhwloc-dev pkg-config libudev-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
    echo "tools/deps.sh: missing ${missing[*]} and no apt-get here; install them with your package manager" >&2
    exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "tools/deps.sh: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
