#!/bin/sh
# kdc-harness-matrix-table and scripts/harness-matrix.sh on bad input: one
# precise message, exit 2, the good rows still written, never "(null)".
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
grep -q '^| \[`examples/reference-service.c`\].* | none of 1 | 0 |$' "$dir/out"; check "the reference row is written" 0 $?
grep -q '^| \[`examples/broken/huge.c`\].* | `x` | 9223372036854775807 of 10 |$' "$dir/out"; check "the largest count is written as it is" 0 $?
[ "$(grep -c '^| \[' "$dir/out")" = 2 ]; check "only the good rows" 0 $?

bash "$root/scripts/harness-matrix.sh" "$build" abc >"$dir/out" 2>"$dir/err"
check "harness-matrix.sh with EVENTS abc: exit 2" 2 $?
grep -q "EVENTS 'abc' is not an integer" "$dir/err"; check "it says EVENTS is wrong" 0 $?
grep -q 'lost' "$dir/out" "$dir/err"; check "it does not speak of lost events" 1 $?
bash "$root/scripts/harness-matrix.sh" "$dir/nowhere" >"$dir/out" 2>"$dir/err"
check "harness-matrix.sh with a missing build directory: exit 2" 2 $?
exit $fail
