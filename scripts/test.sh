#!/usr/bin/env bash
# Quick start 2: install what is missing, build (compiler warnings are errors), and run the whole
# test suite (ctest + cmocka), the real-code suite included: its source packages are fetched and configured first (about
# three minutes the first time, kept in build/real-code/ after that). Then the sanitizer steps
# CI runs too: every libFuzzer target for 30 s (scripts/fuzz.sh), and the whole suite again
# under the asan preset (ASan + UBSan; any report fails the test that met it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset dev -DKDC_WERROR=ON # CI's build: a compiler warning fails it
cmake --build --preset dev -j"$(nproc)"
bash scripts/real-code.sh prepare
ctest --preset dev
bash scripts/fuzz.sh
cmake --preset asan -DKDC_WERROR=ON
cmake --build --preset asan -j"$(nproc)"
ctest --preset asan
