#!/usr/bin/env bash
# layers.sh can fail: on scratch trees it passes a clean layering, and names the file and line
# of a lower stage that includes a higher stage's header, also through a relative path; of a
# part that includes another part's private header; and a cycle in the declarations.
set -euo pipefail
layers=$(dirname "$(realpath "$0")")/layers.sh
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/low" "$t/high/sub" "$t/lib/include/lib" "$t/app"
printf '#include "low.h"\n' >"$t/low/low.c"
printf '/* low */\n' >"$t/low/low.h"
printf '#include "high.h"\n#include "low.h"\n' >"$t/high/high.c"
printf '/* high */\n' >"$t/high/high.h"
printf '#include "../high.h"\n' >"$t/high/sub/helper.c"
printf '#include "internal.h"\n#include "lib/api.h"\n' >"$t/lib/lib.c"
printf '/* private */\n' >"$t/lib/internal.h"
printf '/* public */\n' >"$t/lib/include/lib/api.h"
printf '#include "lib/api.h"\n' >"$t/app/app.c"
printf 'low %s\nhigh %s low\nlib %s\napp %s lib/include\n' "$t/low" "$t/high" "$t/lib" "$t/app" \
  >"$t/layers.txt"

fail() { echo "layers_selftest: $*" >&2; exit 1; }
bash "$layers" "$t/layers.txt" >"$t/out" || fail "a clean layering fails: $(cat "$t/out")"

expect_violation() { # what, pattern
  set +e; bash "$layers" "$t/layers.txt" >"$t/out" 2>&1; local rc=$?; set -e
  [ $rc -eq 1 ] || fail "$1 exits $rc, not 1: $(cat "$t/out")"
  grep -q -- "$2" "$t/out" || fail "$1 is not named: $(cat "$t/out")"
}

printf '/* low */\n#include "high.h"\n' >"$t/low/low.h"
expect_violation "an upward include" "^$t/low/low.h:2: #include \"high.h\": low does not depend on high.h of high$"
printf '/* low */\n#include "../high/high.h"\n' >"$t/low/low.h"
expect_violation "an upward include by a relative path" "^$t/low/low.h:2: .*of high$"
printf '/* low */\n' >"$t/low/low.h"

printf '#include "lib/api.h"\n#include "../lib/internal.h"\n' >"$t/app/app.c"
expect_violation "a part's private header" "^$t/app/app.c:2: .*app does not depend on internal.h of lib$"
printf '#include "lib/api.h"\n' >"$t/app/app.c"

printf 'low %s high\nhigh %s low\n' "$t/low" "$t/high" >"$t/layers.txt"
expect_violation "a cycle" "cycle: low high"
echo "layers_selftest: a clean layering passes; upward includes, private headers and cycles fail"
