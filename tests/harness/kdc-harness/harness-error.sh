#!/bin/sh
# When the harness fails before every scenario ran (here: the service command
# is gone when the second scenario starts), kdc-harness exits 2 and its JSON
# document says so ("valid": false, "error"), even though the runs done
# passed. Usage: harness-error.sh KDC-HARNESS HOSTILE-SERVICE
set -u
h=$1 service=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# A service that works (outputs-only: nothing lost) and removes its own
# command when it is stopped at the end of the first run.
cat >"$dir/service" <<SCRIPT
#!/bin/sh
"$service" outputs-only &
child=\$!
trap 'kill -TERM \$child 2>/dev/null; wait \$child; rm -f "\$0"; exit 0' TERM
wait \$child
SCRIPT
chmod +x "$dir/service"
"$h" run --scenario baseline,baseline --events 100 --rate 1000 --idle 1 --quiet --format json \
        -- "$dir/service" >"$dir/report.json" 2>"$dir/stderr"
status=$?
fail=0
cat "$dir/stderr"
[ $status = 2 ] || { echo "FAIL: exit $status, expected 2"; fail=1; }
grep -q '^   "valid": true' "$dir/report.json" || { echo "FAIL: the first run did not pass"; fail=1; }
grep -q '^ "valid": false' "$dir/report.json" || { echo "FAIL: the document does not say valid false"; fail=1; }
grep -q '^ "error": "scenario baseline: the service command could not be started"' "$dir/report.json" ||
        { echo "FAIL: the document has no error"; fail=1; }
[ $fail = 0 ] || cat "$dir/report.json"
[ $fail = 0 ] && echo "ok: exit 2, the report says valid false and why"
exit $fail
