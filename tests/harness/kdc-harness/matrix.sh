#!/bin/sh
# kdc-harness-matrix-table and scripts/harness-matrix.sh on bad input: one
# precise message, exit 2, the good rows still written, never "(null)"; and a
# row judged on fewer scenarios (a variant without a database runs none with a
# sink) says how many it ran.
# Usage: matrix.sh KDC_HARNESS_MATRIX_TABLE BUILD_DIR
table=$1
build=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)
fail=0
check() { # what expected actual
        if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1 (expected $2, got $3)"; fail=1; fi
}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo '{"findings":[{"rule":"bare-commit","line":3}]}' >"$dir/reference.lint.json"
echo '{"runs":[{"scenario":"baseline","lost":0,"events":10}]}' >"$dir/reference.json"
echo '{"runs":[{"scenario":"baseline","lost":0,"events":10,"sink":null},{"scenario":"sink-full","lost":0,"events":10,"sink":"sqlite"}]}' >"$dir/all.json"
cp "$dir/reference.lint.json" "$dir/all.lint.json"
echo '{"runs":[{"scenario":"baseline","lost":4,"events":10,"sink":null},{"scenario":"y","lost":0,"events":10,"sink":null}]}' >"$dir/subset.json"
cp "$dir/reference.lint.json" "$dir/subset.lint.json"
echo '{"runs":[{"scenario":"baseline","lost":0,"events":10,"sink":null}]}' >"$dir/subset-none.json"
cp "$dir/reference.lint.json" "$dir/subset-none.lint.json"
cp "$dir/reference.lint.json" "$dir/bad-sink.lint.json"
echo '{"runs":[{"scenario":"sink-full","lost":7,"events":10,"sink":"sqlite"}]}' >"$dir/only-sink.json"
cp "$dir/reference.lint.json" "$dir/only-sink.lint.json"
echo '{"runs":[{"scenario":"b","lost":0,"events":10,"sink":1}]}' >"$dir/bad-sink.json"
echo '{"findings":[{"line":3}]}' >"$dir/no-rule.lint.json"
cp "$dir/reference.json" "$dir/no-rule.json"
cp "$dir/reference.lint.json" "$dir/bad-count.lint.json"
echo '{"runs":[{"scenario":"b","lost":"many","events":10}]}' >"$dir/bad-count.json"
cp "$dir/reference.lint.json" "$dir/huge.lint.json"
echo '{"runs":[{"scenario":"x","lost":9223372036854775807,"events":10}]}' >"$dir/huge.json"
"$table" "$dir" no-rule bad-count huge missing >"$dir/out" 2>"$dir/err"
check "a malformed or missing report: exit 2" 2 $?
grep -q '(null)' "$dir/out"; check "no (null) cell" 1 $?
grep -q 'no-rule.lint.json: findings\[0\]: Object item not found: rule' "$dir/err"; check "a finding without a rule is named" 0 $?
grep -q 'bad-count.json: runs\[0\]: Expected integer, got string' "$dir/err"; check "a count that is not a number is named" 0 $?
grep -q 'missing.json: unable to open' "$dir/err"; check "a missing report is named" 0 $?
grep -q '^| \[`examples/reference-service.c`\].* | 1, none with a sink | none of 1 | 0 |$' "$dir/out"; check "the reference row is written" 0 $?
grep -q '^| \[`examples/broken/huge.c`\].* | `x` | 9223372036854775807 of 10 |$' "$dir/out"; check "the largest count is written as it is" 0 $?
[ "$(grep -c '^| \[' "$dir/out")" = 2 ]; check "only the good rows" 0 $?

"$table" "$dir" all subset subset-none only-sink bad-sink >"$dir/out" 2>"$dir/err"
check "a run whose sink is not a name or null: exit 2" 2 $?
grep -q 'bad-sink.json: runs\[0\]: "sink" is not a string or null' "$dir/err"; check "a sink that is not a name is named" 0 $?
grep -q '^| variant | kdc-lint finding | scenarios run | scenario that loses data | events lost |$' "$dir/out"; check "the header has a scenarios-run column" 0 $?
grep -q '^| \[`examples/broken/all.c`\].* | 2 (1 with a sink) | none of 2 | 0 |$' "$dir/out"; check "a row with sink scenarios counts them" 0 $?
grep -q '^| \[`examples/broken/subset.c`\].* | 2, none with a sink | `baseline` | 4 of 10 |$' "$dir/out"; check "a losing row without sink scenarios says how many it ran" 0 $?
grep -q '^| \[`examples/broken/subset-none.c`\].* | 1, none with a sink | none of 1 | 0 |$' "$dir/out"; check "a row that lost nothing in a subset says so of that subset" 0 $?
grep -q '^| \[`examples/broken/only-sink.c`\].* | 1, all with a sink | `sink-full` | 7 of 10 |$' "$dir/out"; check "a row judged only in sink scenarios says so" 0 $?

bash "$root/scripts/harness-matrix.sh" "$build" abc >"$dir/out" 2>"$dir/err"
check "harness-matrix.sh with EVENTS abc: exit 2" 2 $?
grep -q "EVENTS 'abc' is not an integer" "$dir/err"; check "it says EVENTS is wrong" 0 $?
grep -q 'lost' "$dir/out" "$dir/err"; check "it does not speak of lost events" 1 $?
bash "$root/scripts/harness-matrix.sh" "$dir/nowhere" >"$dir/out" 2>"$dir/err"
check "harness-matrix.sh with a missing build directory: exit 2" 2 $?
exit $fail
