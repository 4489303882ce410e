#!/bin/sh
# An interrupted kdc-harness (SIGTERM mid-run, as a cancelled CI job) leaves
# no PostgreSQL server and no sink directory behind.
# Usage: interrupt-postgresql.sh KDC-HARNESS
set -u
h=$1
dir=$(mktemp -d)
chmod 755 "$dir"
printf '#!/bin/sh\necho "$KDC_HARNESS_SINK" >"%s/sink"\nexec sleep 300\n' "$dir" >"$dir/service"
chmod +x "$dir/service"
TMPDIR=$dir "$h" run --scenario sink-postgresql-down --events 10 --quiet -- "$dir/service" >/dev/null 2>&1 &
harness=$!
i=0
while [ ! -s "$dir/sink" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sink=$(cat "$dir/sink" 2>/dev/null)
server=$(ls -d "$dir"/kdc-harness-sink-*/data 2>/dev/null)
pid=$(head -n 1 "$server/postmaster.pid" 2>/dev/null)
kill -TERM $harness
wait $harness
status=$?
fail=0
[ "$status" = 143 ] || { echo "FAIL: kdc-harness exited $status after SIGTERM, expected 143"; fail=1; }
case $sink in
postgresql:host="$dir"/kdc-harness-sink-*) ;;
*) echo "FAIL: the service was given KDC_HARNESS_SINK='$sink'"; fail=1 ;;
esac
[ -n "$pid" ] || { echo "FAIL: no postmaster.pid in $server"; fail=1; }
i=0
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        echo "FAIL: the PostgreSQL server (pid $pid) outlived an interrupted kdc-harness"
        kill -KILL "$pid"
        fail=1
fi
i=0
while ls -d "$dir"/kdc-harness-sink-* >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if ls -d "$dir"/kdc-harness-sink-* >/dev/null 2>&1; then
        echo "FAIL: an interrupted kdc-harness left its sink directory behind"
        fail=1
fi
[ $fail = 0 ] && echo "ok: an interrupted kdc-harness leaves no PostgreSQL server and no sink directory"
rm -rf "$dir"
exit $fail
