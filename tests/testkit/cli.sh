#!/bin/sh
# kdc-harness's command line: list, usage errors and exit codes.
# Usage: cli.sh KDC-HARNESS
set -u
h=$1
fail=0
check() { # description expected-status actual-status
        if [ "$2" != "$3" ]; then echo "FAIL: $1: exit $3, expected $2"; fail=1; else echo "ok: $1"; fi
}

out=$("$h" list); check "list" 0 $?
n=$(printf '%s\n' "$out" | grep -c .)
[ "$n" -ge 10 ] || { echo "FAIL: list names $n scenarios, expected at least 10"; fail=1; }
printf '%s\n' "$out" | grep -q '^sigkill-restart ' || { echo "FAIL: list lacks sigkill-restart"; fail=1; }
"$h" list --verbose | grep -q '^    mock:' ; check "list --verbose shows the mock's limits" 0 $?
"$h" list --format json | grep -q '"needs_process": true'; check "list --format json" 0 $?
"$h" >/dev/null 2>&1; check "no arguments" 2 $?
"$h" run --scenario baseline >/dev/null 2>&1; check "run without a command" 2 $?
"$h" run -- true >/dev/null 2>&1; check "run without --scenario or --all" 2 $?
"$h" run --scenario baseline --all -- true >/dev/null 2>&1; check "--scenario and --all" 2 $?
"$h" run --scenario no-such-scenario -- true >/dev/null 2>&1; check "unknown scenario" 2 $?
"$h" run --scenario baseline --events 0 -- true >/dev/null 2>&1; check "--events 0" 2 $?
"$h" run --scenario baseline --format yaml -- true >/dev/null 2>&1; check "unknown format" 2 $?
"$h" run --scenario baseline --input-topic 'a b' --events 10 --quiet -- true >/dev/null 2>&1
check "invalid topic name" 2 $?
err=$("$h" run --scenario baseline --events 10 --quiet -- /nonexistent/service 2>&1 >/dev/null)
check "a command that cannot start" 2 $?
printf '%s\n' "$err" | grep -q 'could not be started' || { echo "FAIL: no message for a command that cannot start: $err"; fail=1; }
"$h" --version | grep -q '^kdc-harness [0-9]'; check "--version" 0 $?
exit $fail
