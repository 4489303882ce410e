#!/usr/bin/env bash
# The full kdc-harness matrix (docs/kdc-harness.md): every scenario at 10,000
# events with examples/reference-service.c, which must lose nothing (and leave
# nothing unprocessed), then each variant in examples/broken/, each of which
# must lose events in at least one scenario it ran. A variant runs the
# scenarios it can be judged in: one whose source never reads KDC_HARNESS_SINK
# has no database, and the scenarios that judge one (a "sink" in `kdc-harness
# list --format json`) would count its every event lost, so it runs only the
# others; one that reads it writes rows for the sink bug it shows, and runs
# only the sink scenarios of the kinds its source names ("sqlite:",
# "postgresql:"; the two in examples/broken/ exit 2 without an SQLite sink).
# Writes every JSON report, the kdc-lint findings and the README's table
# (table.md) to BUILD_DIR/harness-matrix/. Exit status 0 only when all of
# that holds.
# Usage: scripts/harness-matrix.sh [BUILD_DIR] [EVENTS] [SEED]
# (cmake --build BUILD_DIR --target harness-matrix runs it.)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v jq >/dev/null || { echo "harness-matrix: needs jq (apt-get install jq)" >&2; exit 2; }
usage() { echo "harness-matrix: $*; usage: scripts/harness-matrix.sh [BUILD_DIR] [EVENTS] [SEED]" >&2; exit 2; }
[ -d "${1:-build/release}" ] || usage "build directory '${1:-build/release}' does not exist"
build=$(cd "${1:-build/release}" && pwd)
events=${2:-10000}
seed=${3:-1}
[[ $events =~ ^[1-9][0-9]{0,7}$ ]] || usage "EVENTS '$events' is not an integer in 1..10000000"
[[ $seed =~ ^[0-9]{1,19}$ ]] || usage "SEED '$seed' is not a non-negative integer"
out=$build/harness-matrix
harness=$build/harness/kdc-harness/kdc-harness
lint=$build/linter/kdc-lint
table=$build/harness/kdc-harness/kdc-harness-matrix-table
variants=()
for f in examples/broken/*.c; do variants+=("$(basename "$f" .c)"); done
scenarios=$("$harness" list --format json)
# The names of the scenarios whose sink is one of $1 (JSON: null for none), as --scenario's list.
with_sink() { jq -r --argjson k "$1" '[.[] | select(.sink as $s | $k | index([$s])) | .name] | join(",")' <<<"$scenarios"; }
no_sink=$(with_sink '[null]')
[ -n "$no_sink" ] || { echo "harness-matrix: kdc-harness list names no scenario without a sink" >&2; exit 2; }
sink_kinds=$(jq -r '[.[].sink | select(.)] | unique[]' <<<"$scenarios")
mkdir -p "$out"
status=0
started=$(date +%s)

echo "== reference-service: every scenario, $events events (seed $seed)"
set +e
"$harness" run --all --events "$events" --seed "$seed" --format json --require-complete \
  --service-log "$out/reference.log" -- "$build/examples/reference-service" \
  >"$out/reference.json" 2>"$out/reference.progress"
rc=$?
set -e
if [ "$rc" -eq 2 ]; then
  echo "harness-matrix: kdc-harness refused to run (exit 2): $(tail -n 1 "$out/reference.progress")" >&2
  exit 2
fi
"$lint" --format=json -p "$build" examples/reference-service.c >"$out/reference.lint.json" || true
if [ "$rc" -ne 0 ]; then
  echo "FAIL: reference-service lost or left events (kdc-harness exit $rc; $out/reference.json)"
  status=1
fi

for v in "${variants[@]}"; do
  if grep -q KDC_HARNESS_SINK "examples/broken/$v.c"; then
    kinds=()
    for k in $sink_kinds; do
      if grep -q "\"$k:" "examples/broken/$v.c"; then kinds+=("\"$k\""); fi
    done
    if [ ${#kinds[@]} -eq 0 ]; then
      echo "FAIL: broken/$v reads KDC_HARNESS_SINK but names no sink kind (${sink_kinds//$'\n'/, })"
      status=1
      continue
    fi
    which=$(with_sink "[$(IFS=,; echo "${kinds[*]}")]")
    echo "== broken/$v: its sink's scenarios (${kinds[*]}), $events events"
  else
    which=$no_sink
    echo "== broken/$v: the scenarios without a sink (it has no database), $events events"
  fi
  set +e
  "$harness" run --scenario "$which" --events "$events" --seed "$seed" --format json \
    --service-log "$out/$v.log" -- "$build/examples/broken/broken-$v" \
    >"$out/$v.json" 2>"$out/$v.progress"
  rc=$?
  "$lint" --format=json -p "$build" "examples/broken/$v.c" >"$out/$v.lint.json"
  lrc=$?
  set -e
  if [ "$rc" -ne 1 ]; then
    echo "FAIL: broken/$v lost no event in any scenario it ran (kdc-harness exit $rc)"
    status=1
  fi
  if [ "$lrc" -ne 1 ]; then
    echo "FAIL: kdc-lint reported nothing on examples/broken/$v.c"
    status=1
  fi
done

"$table" "$out" "${variants[@]}" | tee "$out/table.md" || status=1
echo "harness-matrix: $(( ($(date +%s) - started) / 60 )) min; reports in $out"
exit $status
