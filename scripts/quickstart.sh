#!/usr/bin/env bash
# Quick start 1: install what is missing, build kdc-lint, and run it on real code:
# librdkafka's installed examples and this project's examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target kdc-lint >/dev/null
lint=build/release/linter/kdc-lint
echo "== kdc-lint $($lint --version | cut -d' ' -f2) on /usr/share/doc/librdkafka-dev/examples and examples/"
set +e
"$lint" /usr/share/doc/librdkafka-dev/examples examples
rc=$?
set -e
# 0: no findings, 1: findings (the analysis ran), 2: input or usage error.
[ "$rc" -le 1 ] || exit "$rc"
