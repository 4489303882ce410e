#!/usr/bin/env bash
# Quick start 1: install what is missing, build kdc-lint, and run it on real code:
# librdkafka's installed examples and this project's examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" >/dev/null
lint=build/release/linter/kdc-lint
# kdc-lint exits 0 (no findings) or 1 (findings): both mean the analysis ran.
status=0
step() {
  echo; echo "== kdc-lint $*"
  set +e; "$lint" "$@"; local rc=$?; set -e
  [ "$rc" -le 1 ] || status=$rc
}
# librdkafka's installed examples, with kdc-lint's default flags.
step /usr/share/doc/librdkafka-dev/examples
# This project's example services, with the exact flags of this build (compile_commands.json).
step -p build/release examples
exit $status
