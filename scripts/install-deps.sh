#!/usr/bin/env bash
# Installs what kdc needs from Debian 12 packages, only if missing (idempotent).
# Run as root (or with sudo available).
set -euo pipefail

packages=(
  gcc g++ make cmake pkg-config
  libclang-dev llvm            # libclang (LLVM 14 on Debian 12; 15-19 also accepted) + llvm-config
  librdkafka-dev               # librdkafka 2.0.2 with rdkafka_mock.h
  libjansson-dev libxxhash-dev # JSON output/compile databases, hashing
  libcmocka-dev                # unit tests
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 2; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Package lists can be stale or empty on a new machine.
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
