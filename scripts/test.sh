#!/usr/bin/env bash
# Quick start 2: install what is missing, build, and run the whole test suite (ctest + cmocka).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev -j"$(nproc)"
ctest --preset dev
