#!/usr/bin/env bash
# Reports of one kdc-lint binary on everything kdc-lint is measured on, for comparing two builds
# before and after a change that must not change behaviour (a move, a refactoring):
#
#   bash scripts/report-snapshot.sh OLD-KDC-LINT /tmp/before
#   bash scripts/report-snapshot.sh NEW-KDC-LINT /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
#
# Inputs: examples/, harness/, every fixtures/<rule>/, ../shared/cases, and the real trees that
# scripts/real-code.sh prepares in build/real-code/src (when it ran; REAL_CODE_SRC overrides the
# place), librdkafka's tests/ too when a compilation database configured with tests is there
# (librdkafka-full-build/); examples/ and harness/ also with -p BUILD_DIR when that is set.
# Each in JSON under both profiles, examples also as text and SARIF.
# Timing fields ("seconds") and SARIF's %SRCROOT% (the checkout's own path) are removed; nothing
# else is. Uses jq.
set -euo pipefail
lint=$(realpath "$1")
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
src=${REAL_CODE_SRC:-$root/build/real-code/src}
command -v jq >/dev/null || { echo "report-snapshot: needs jq (apt-get install jq)" >&2; exit 2; }
mkdir -p "$out"
out=$(realpath "$out")

snap() { # name, kdc-lint args...
  local name=$1; shift
  for profile in default strict; do
    set +e
    "$lint" --no-cache -j2 --format=json --profile=$profile "$@" 2>"$out/$name.$profile.stderr" |
      jq -S 'del(.stats.seconds)' >"$out/$name.$profile.json"
    echo "exit ${PIPESTATUS[0]}" >>"$out/$name.$profile.stderr"
    set -e
  done
}

cd "$root"
snap examples examples
set +e
"$lint" --no-cache -j2 --color=never examples >"$out/examples.txt" 2>&1
"$lint" --no-cache -j2 --format=sarif examples 2>/dev/null | jq -S 'del(.runs[].invocations, .runs[].originalUriBaseIds)' >"$out/examples.sarif"
set -e
snap harness harness
# with the exact flags of a build (BUILD_DIR: its compile_commands.json), when given
if [ -n "${BUILD_DIR:-}" ]; then
  snap examples-p -p "$BUILD_DIR" examples
  snap harness-p -p "$BUILD_DIR" harness
fi
for d in fixtures/*/; do
  snap "fixture-$(basename "$d")" "$d"
done
[ -d ../shared/cases ] && snap cases ../shared/cases

if [ -d "$src/librdkafka" ]; then
  cd "$src"
  snap installed-examples /usr/share/doc/librdkafka-dev/examples
  snap librdkafka-examples -p librdkafka-build librdkafka/examples
  snap kcat -p kcat kcat
  snap collectd collectd/src/write_kafka.c -- -I"$PWD/collectd/src" -I"$PWD/collectd/src/daemon" \
    -DFP_LAYOUT_NEED_NOTHING=1 -DHAVE_LIBRDKAFKA_LOG_CB=1 -DHAVE_LIBRDKAFKA_LOGGER=1
  [ -f librdkafka-full-build/compile_commands.json ] &&
    snap librdkafka-all -p librdkafka-full-build librdkafka
fi
echo "report-snapshot: $(ls "$out" | wc -l) files in $out"
