#!/usr/bin/env bash
# Quick start 1: install what is missing, build kdc-lint, and run it on real code:
# librdkafka's installed examples and this project's examples/; then run the
# reference service under kdc-harness while faults are injected (a short run:
# nothing may be lost), and a broken variant (the harness names what it lost).
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

# kdc-harness: the other half of kdc, at run time, on librdkafka's mock cluster.
harness=build/release/harness/kdc-harness/kdc-harness
service_log=build/release/quickstart-services.log
: >"$service_log"
run() { # expected-exit-status args...
  local want=$1; shift
  echo; echo "== kdc-harness $*"
  set +e; "$harness" "$@"; local rc=$?; set -e
  if [ "$rc" -ne "$want" ]; then
    echo "quickstart: kdc-harness exited $rc, expected $want" >&2
    status=1
  fi
}
# The reference service is SIGKILLed three times mid-batch: nothing lost (exit 0).
run 0 run --scenario sigkill-restart --events 2000 --quiet --service-log "$service_log" \
  -- build/release/examples/reference-service
# A variant that commits when its output failed: the harness counts and names the
# events it lost (exit 1), and kdc-lint flagged the line above (commit-on-failure).
run 1 run --scenario produce-topic-authorization-failed --events 2000 --quiet \
  --service-log "$service_log" -- build/release/examples/broken/broken-commit-on-failure
exit $status
