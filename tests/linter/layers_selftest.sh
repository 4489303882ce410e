#!/usr/bin/env bash
# layers.sh can fail: on scratch trees it passes a clean layering, and names the file and line
# of a lower stage that includes a higher stage's header, also through a relative path, and a
# cycle in the declarations.
set -euo pipefail
layers=$(dirname "$(realpath "$0")")/layers.sh
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/low" "$t/high/sub"
printf '#include "low.h"\n' >"$t/low/low.c"
printf '/* low */\n' >"$t/low/low.h"
printf '#include "high.h"\n#include "low.h"\n' >"$t/high/high.c"
printf '/* high */\n' >"$t/high/high.h"
printf '#include "../high.h"\n' >"$t/high/sub/helper.c"
printf 'low %s\nhigh %s low\n' "$t/low" "$t/high" >"$t/stages.txt"

fail() { echo "layers_selftest: $*" >&2; exit 1; }
bash "$layers" "$t/stages.txt" >"$t/out" || fail "a clean layering fails: $(cat "$t/out")"

printf '/* low */\n#include "high.h"\n' >"$t/low/low.h"
set +e; bash "$layers" "$t/stages.txt" >"$t/out"; rc=$?; set -e
[ $rc -eq 1 ] || fail "an upward include exits $rc, not 1"
grep -q "^$t/low/low.h:2: #include \"high.h\": stage low does not depend on stage high$" "$t/out" ||
  fail "the upward include is not named: $(cat "$t/out")"

printf '/* low */\n#include "../high/high.h"\n' >"$t/low/low.h"
set +e; bash "$layers" "$t/stages.txt" >"$t/out"; rc=$?; set -e
[ $rc -eq 1 ] && grep -q "low.h:2: .*stage high" "$t/out" ||
  fail "an upward include by a relative path is not found (exit $rc): $(cat "$t/out")"

printf '/* low */\n' >"$t/low/low.h"
printf 'low %s high\nhigh %s low\n' "$t/low" "$t/high" >"$t/stages.txt"
set +e; bash "$layers" "$t/stages.txt" >"$t/out" 2>&1; rc=$?; set -e
[ $rc -eq 1 ] && grep -q "cycle" "$t/out" || fail "a cycle exits $rc: $(cat "$t/out")"
echo "layers_selftest: clean layering passes; upward includes and cycles fail"
