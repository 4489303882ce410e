#!/usr/bin/env bash
# Installs what kdc needs from Debian 12 packages, only if missing (idempotent).
# Run as root (or with sudo available).
set -euo pipefail

packages=(
  gcc g++ make cmake pkg-config
  libclang-dev llvm            # libclang (LLVM 14 on Debian 12; 15-19 also accepted) + llvm-config
  librdkafka-dev               # librdkafka 2.0.2 with rdkafka_mock.h
  libjansson-dev libxxhash-dev # JSON output/compile databases, hashing
  libyaml-dev                  # .kdc-lint.yaml configuration files
  libcmocka-dev                # unit tests
  libssl-dev                   # libkdc: SHA-256 DLQ event identity (OpenSSL EVP)
  libsqlite3-dev               # kdc-harness's sink scenarios and the reference service's writes
  libpq-dev postgresql         # the PostgreSQL sink: libpq, and initdb/postgres for its tests
  git pre-commit               # --changed-since; the pre-commit hook test (lint.precommit)
  jq                           # scripts/harness-matrix.sh (which scenarios judge a sink), scripts/report-snapshot.sh
  clang-format-14              # changed C lines as .clang-format says (ctest tree.format)
  help2man man-db              # the man pages, from --help (man/), and their test (docs.man)
  clang-14 libclang-rt-14-dev  # the libFuzzer targets (scripts/fuzz.sh): -fsanitize=fuzzer
  chromium                     # kdc-harness --report-html, rendered headless (testkit.report_html)
  python3-confluent-kafka      # examples/python/ under kdc-harness (ctest testkit.python.*)
  python3-psycopg2             # examples/python/reference-service.py's PostgreSQL sink (ctest testkit.python.*)
  python3-prometheus-client    # libkdc's OpenMetrics read by a real parser (ctest harness.stats.*)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm, for the tests' npm tools: Debian's, unless one is on PATH already (a nodejs from
# elsewhere that bundles npm conflicts with Debian's npm package).
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
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
fi

# The tests' npm tools (the SARIF Multitool that validates kdc-lint's SARIF), pinned in
# tests/linter/npm/package-lock.json and installed there (project-local, never global), again
# whenever the lock file changes.
npm_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/linter/npm"
if [ -x "$npm_dir/node_modules/.bin/sarif-multitool" ] &&
   cmp -s "$npm_dir/package-lock.json" "$npm_dir/node_modules/.kdc-installed-lock.json"; then
  echo "install-deps: npm tools present"
else
  echo "install-deps: npm ci in tests/linter/npm"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$npm_dir/package-lock.json" "$npm_dir/node_modules/.kdc-installed-lock.json"
fi
