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
# A usage error: exit status 2, nothing on stdout, one line on stderr that
# says what is wrong. Usage: usage DESCRIPTION EXPECTED-TEXT ARGS...
usage() {
        d=$1 want=$2
        shift 2
        out=$("$h" "$@" 2>/tmp/kdc-cli-err.$$)
        st=$?
        err=$(cat /tmp/kdc-cli-err.$$)
        rm -f /tmp/kdc-cli-err.$$
        check "$d" 2 $st
        [ -z "$out" ] || { echo "FAIL: $d: stdout: $out"; fail=1; }
        [ "$(printf '%s\n' "$err" | grep -c .)" = 1 ] || { echo "FAIL: $d: not one line: $err"; fail=1; }
        case $err in
        *"$want"*) ;;
        *) echo "FAIL: $d: '$err' does not say '$want'"; fail=1 ;;
        esac
}
dir=$(mktemp -d)
printf '#!/bin/sh\nexit 0\n' >"$dir/not-executable"
usage "a command that does not exist" "service command /nonexistent/service: No such file or directory" \
        run --scenario baseline --events 10 --quiet -- /nonexistent/service
usage "an HTML report that cannot be written, before any run" "$dir/none/r.html: No such file or directory" \
        run --scenario baseline --events 10 --report-html "$dir/none/r.html" -- /bin/true
usage "a command not in PATH" "service command no-such-kdc-service: not found in PATH" \
        run --scenario baseline -- no-such-kdc-service
usage "a command that is a directory" "service command $dir: is a directory" \
        run --scenario baseline -- "$dir"
usage "a command that is not executable" "service command $dir/not-executable: not executable" \
        run --scenario baseline -- "$dir/not-executable"
(cd "$dir" && usage "a command in the current directory, not in PATH" \
        "service command not-executable: not found in PATH (./not-executable names the one here)" \
        run --scenario baseline -- not-executable; exit $fail) || fail=1
rm -rf "$dir"
usage "an unknown option" "unknown option '--bogus'" run --bogus --scenario baseline -- true
usage "an option without its value" "option '--events' needs a value" run --scenario baseline --events
usage "a value for a flag" "option '--all=1' takes no value" run --all=1 -- true
usage "--events 0" "--events: '0' is not an integer in 1..10000000" run --scenario baseline --events 0 -- true
usage "negative --events" "--events: '-5'" run --scenario baseline --events -5 -- true
usage "huge --events" "--events: '99999999999999999999'" run --scenario baseline --events 99999999999999999999 -- true
usage "--seed garbage" "--seed: 'abc' is not an integer" run --scenario baseline --seed abc -- true
usage "--format yaml" "--format: 'yaml' is not text or json" run --scenario baseline --format yaml -- true
usage "list --format yaml" "--format: 'yaml' is not text or json" list --format yaml
usage "list with an extra argument" "list: unknown argument 'extra'" list extra
usage "an unknown command" "unknown command 'lsit'" lsit
usage "mock-cluster --brokers 0" "--brokers: '0' is not an integer in 1..32" mock-cluster --brokers 0
usage "mock-cluster with an unknown argument" "mock-cluster: unknown argument '--bogus'" mock-cluster --bogus
usage "mock-cluster --brokers without its value" "option '--brokers' needs a value" mock-cluster --brokers
usage "empty bootstrap servers" "the bootstrap servers are empty" run --scenario baseline --bootstrap-servers '' -- true
usage "a bad entry in a scenario list" "unknown scenario 'nope'" run --scenario baseline,nope -- true
usage "an empty entry in a scenario list" "--scenario: an empty name in 'baseline,'" run --scenario baseline, -- true
usage "an empty scenario list" "--scenario: an empty name in ''" run --scenario '' -- true
usage "an invalid topic name" "input topic 'a b' is not a topic name" run --scenario baseline --input-topic 'a b' -- true
usage "one topic for two roles" "the input and DLQ topics are both 'x'" run --scenario baseline --input-topic x --dlq-topic x -- true
usage "an empty group" "the consumer group is empty" run --scenario baseline --group '' -- true
# Interrupted mid-run (Ctrl-C, a CI job cancelled): the service, in a process
# group of its own, must not outlive kdc-harness. (SIGTERM: a background job
# of a script inherits SIGINT ignored.)
dir=$(mktemp -d)
printf '#!/bin/sh\necho $$ >"%s/pid"\nexec sleep 300\n' "$dir" >"$dir/service"
chmod +x "$dir/service"
"$h" run --scenario baseline --events 10 --quiet -- "$dir/service" >/dev/null 2>&1 &
harness=$!
i=0
while [ ! -s "$dir/pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $harness
wait $harness
check "SIGTERM ends kdc-harness" 143 $?
pid=$(cat "$dir/pid" 2>/dev/null)
alive() { [ -r /proc/$1/stat ] && ! grep -q ') Z ' /proc/$1/stat; }
i=0
while [ -n "$pid" ] && alive "$pid" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ -z "$pid" ] || alive "$pid"; then
        echo "FAIL: the service (pid ${pid:-never started}) outlived an interrupted kdc-harness"
        fail=1
        [ -n "$pid" ] && kill -KILL "$pid"
else
        echo "ok: the service does not outlive an interrupted kdc-harness"
fi
# ... nor the temporary database of a sink scenario.
sink_dir=$(mktemp -d)
printf '#!/bin/sh\necho "$KDC_HARNESS_SINK" >"%s/sink"\nexec sleep 300\n' "$sink_dir" >"$sink_dir/service"
chmod +x "$sink_dir/service"
TMPDIR=$sink_dir "$h" run --scenario sink-outage --events 10 --quiet -- "$sink_dir/service" >/dev/null 2>&1 &
harness=$!
i=0
while [ ! -s "$sink_dir/sink" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $harness
wait $harness
check "SIGTERM ends kdc-harness in a sink scenario" 143 $?
sink=$(cat "$sink_dir/sink" 2>/dev/null)
case $sink in
sqlite:"$sink_dir"/kdc-harness-sink-*/effects.db)
        if [ -e "${sink#sqlite:}" ] || [ -e "$(dirname "${sink#sqlite:}")" ]; then
                echo "FAIL: an interrupted kdc-harness left its sink behind: $sink"
                fail=1
        else
                echo "ok: an interrupted kdc-harness leaves no sink database behind"
        fi ;;
*)
        echo "FAIL: the service was given KDC_HARNESS_SINK='$sink'"
        fail=1 ;;
esac
rm -rf "$sink_dir"

# A service whose worker ignores SIGTERM while the main process exits on it:
# the worker, in the service's process group, must not outlive the run.
printf '#!/bin/sh\nsh -c '"'"'trap "" TERM; echo $$ >"%s/worker"; exec sleep 300'"'"' &\ntrap "exit 0" TERM\nwhile :; do sleep 0.1; done\n' "$dir" >"$dir/service"
rm -f "$dir/worker"
"$h" run --scenario baseline --events 10 --timeout 2 --quiet -- "$dir/service" >/dev/null 2>&1
worker=$(cat "$dir/worker" 2>/dev/null)
i=0
while [ -n "$worker" ] && alive "$worker" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ -z "$worker" ] || alive "$worker"; then
        echo "FAIL: the service's worker (pid ${worker:-never started}) outlived the run"
        fail=1
        [ -n "$worker" ] && kill -KILL "$worker"
else
        echo "ok: what is left of a stopped service's process group is killed"
fi

# A service that starts a daemon of its own in a new session (setsid: outside
# the service's process group): the daemon must not outlive the run.
printf '#!/bin/sh\nsetsid sh -c '"'"'echo $$ >"%s/daemon"; exec sleep 300'"'"' &\ntrap "exit 0" TERM\nwhile :; do sleep 0.1; done\n' "$dir" >"$dir/service"
rm -f "$dir/daemon"
"$h" run --scenario baseline --events 10 --timeout 2 --quiet -- "$dir/service" >/dev/null 2>&1
daemon=$(cat "$dir/daemon" 2>/dev/null)
i=0
while [ -n "$daemon" ] && alive "$daemon" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ -z "$daemon" ] || alive "$daemon"; then
        echo "FAIL: the daemon a service started with setsid (pid ${daemon:-never started}) outlived the run"
        fail=1
        [ -n "$daemon" ] && kill -KILL "$daemon"
else
        echo "ok: a daemon a service started with setsid is killed with it"
fi

# kdc-harness killed with SIGKILL (no handler runs): its service dies with it.
printf '#!/bin/sh\necho $$ >"%s/pid"\nexec sleep 300\n' "$dir" >"$dir/service"
rm -f "$dir/pid"
"$h" run --scenario baseline --events 10 --quiet -- "$dir/service" >/dev/null 2>&1 &
harness=$!
i=0
while [ ! -s "$dir/pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -KILL $harness
wait $harness 2>/dev/null
pid=$(cat "$dir/pid" 2>/dev/null)
i=0
while [ -n "$pid" ] && alive "$pid" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ -z "$pid" ] || alive "$pid"; then
        echo "FAIL: the service (pid ${pid:-never started}) outlived a SIGKILLed kdc-harness"
        fail=1
        [ -n "$pid" ] && kill -KILL "$pid"
else
        echo "ok: the service dies with a SIGKILLed kdc-harness"
fi
# ... and a daemon that service started with setsid (outside its process group
# and, once the service is gone, handed to init): the services' cgroup and its
# guard end it. As root (CI) the cgroup must be there; otherwise kdc-harness
# must say that it runs without one.
printf '#!/bin/sh\nsetsid sh -c '"'"'echo $$ >"%s/daemon"; exec sleep 300'"'"' &\necho $$ >"%s/pid"\nexec sleep 300\n' "$dir" "$dir" >"$dir/service"
rm -f "$dir/pid" "$dir/daemon"
"$h" run --scenario baseline --events 10 -- "$dir/service" >/dev/null 2>"$dir/err" &
harness=$!
i=0
while [ ! -s "$dir/daemon" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
group=$(ls -d /sys/fs/cgroup/unified/kdc-harness-$harness /sys/fs/cgroup/kdc-harness-$harness 2>/dev/null | head -n 1)
kill -KILL $harness
wait $harness 2>/dev/null
daemon=$(cat "$dir/daemon" 2>/dev/null)
i=0
while [ -n "$daemon" ] && alive "$daemon" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
while [ -n "$group" ] && [ -e "$group" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ "$(id -u)" != 0 ] && grep -q 'run without a cgroup of their own' "$dir/err"; then
        echo "ok: not root: kdc-harness says a daemon may outlive it when it is SIGKILLed"
        [ -n "$daemon" ] && kill -KILL "$daemon" 2>/dev/null
elif [ -z "$daemon" ] || alive "$daemon"; then
        echo "FAIL: the daemon a service started with setsid (pid ${daemon:-never started}) outlived a SIGKILLed kdc-harness"
        sed 's/^/    /' "$dir/err"
        fail=1
        [ -n "$daemon" ] && kill -KILL "$daemon"
elif [ -z "$group" ] || [ -e "$group" ]; then
        echo "FAIL: the services' cgroup (${group:-not found while the service ran}) is not removed"
        fail=1
else
        echo "ok: a daemon a service started with setsid dies with a SIGKILLed kdc-harness, its cgroup removed"
fi
rm -rf "$dir"
"$h" --version | grep -q '^kdc-harness [0-9]'; check "--version" 0 $?
exit $fail
