#!/bin/sh
# kdc-harness outside its embedded mock: `kdc-harness mock-cluster --brokers 3`
# in a process of its own stands for a remote cluster, and `kdc-harness run
# --bootstrap-servers` runs on it: the reference service passes sigkill-restart
# (nothing lost), a service that drops events fails with the same count as on
# the embedded mock (the counting works remotely), the scenarios that need
# control of the brokers are refused, the run's topics and group are unique to
# it and deleted (or, where the cluster cannot delete them, as librdkafka
# 2.0.2's mock, kdc-harness says so and names them), also by a run interrupted
# with SIGTERM, and the mock cluster exits 0 on SIGTERM.
# Usage: remote.sh KDC-HARNESS HARNESS-CHECK CLUSTER-TOPICS REFERENCE-SERVICE HOSTILE-SERVICE
set -u
h=$1 check=$2 topics=$3 reference=$4 hostile=$5
dir=$(mktemp -d)
mock=
cleanup() {
        [ -n "$mock" ] && kill -KILL "$mock" 2>/dev/null
        rm -rf "$dir"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$h" mock-cluster --brokers 3 >"$dir/bootstrap" 2>"$dir/mock.err" &
mock=$!
i=0
while [ ! -s "$dir/bootstrap" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
read -r bootstrap <"$dir/bootstrap"
case $bootstrap in
*:*,*:*,*:*) echo "ok: mock-cluster --brokers 3 printed $bootstrap" ;;
*) bad "mock-cluster printed '$bootstrap', not three HOST:PORT"; exit 1 ;;
esac
"$topics" "$bootstrap" >"$dir/before" || bad "cluster-topics could not list the topics"

# No cluster there (nothing listens on port 1): exit 2 at once, and why.
"$h" run --bootstrap-servers 127.0.0.1:1 --scenario baseline --events 10 --quiet --format json \
        -- "$reference" >/dev/null 2>"$dir/err"
st=$?
[ $st = 2 ] || bad "no cluster at --bootstrap-servers: exit $st, expected 2"
grep -q '^kdc-harness: scenario baseline: the cluster did not answer' "$dir/err" ||
        bad "no cluster at --bootstrap-servers: $(cat "$dir/err")"
[ $fail = 0 ] && echo "ok: no cluster at --bootstrap-servers: exit 2, said"

# Every selected scenario needs the brokers: one line each, exit 2, no report.
"$h" run --bootstrap-servers "$bootstrap" --scenario broker-down,commit-unknown-member-id \
        --events 100 --format json -- "$reference" >"$dir/out" 2>"$dir/err"
st=$?
[ $st = 2 ] || bad "broker-fault scenarios only: exit $st, expected 2"
[ -s "$dir/out" ] && bad "broker-fault scenarios only: a report on stdout: $(cat "$dir/out")"
[ "$(grep -c . "$dir/err")" = 2 ] || bad "not one line per refused scenario: $(cat "$dir/err")"
grep -q '^kdc-harness: scenario broker-down needs control of the brokers (the embedded mock cluster): not run on --bootstrap-servers$' "$dir/err" ||
        bad "no refusal line for broker-down: $(cat "$dir/err")"
grep -q '^kdc-harness: scenario commit-unknown-member-id needs control' "$dir/err" ||
        bad "no refusal line for commit-unknown-member-id"
[ $fail = 0 ] && echo "ok: broker-fault scenarios are refused, one line each, exit 2"

# The reference service, killed three times: nothing lost; leader-change is
# refused and the run goes on.
"$check" expect 0 valid=true lost=0 unprocessed=0 events=300 committed=300 service.kills=3 \
        -- "$h" run --bootstrap-servers "$bootstrap" --scenario leader-change,sigkill-restart \
        --events 300 --rate 200 --seed 1 --format json -- "$reference" 2>"$dir/err" ||
        { bad "the reference service on the remote cluster"; sed 's/^/    /' "$dir/err"; }
grep -q '^kdc-harness: scenario leader-change needs control' "$dir/err" ||
        bad "no refusal line for leader-change"
# The names it used: unique (suffixed), said on stderr.
line=$(grep '^kdc-harness: cluster: .*created for this run$' "$dir/err")
made=$(printf '%s\n' "$line" | grep -oE 'kdc\.(input|output|dlq)-[0-9]+-[0-9]+-[0-9a-f]+')
group=$(printf '%s\n' "$line" | grep -oE 'kdc-service-[0-9]+-[0-9]+-[0-9a-f]+')
[ "$(printf '%s\n' "$made" | grep -c .)" = 3 ] && [ -n "$group" ] ||
        bad "no unique input, output and DLQ topics and group in '$line'"
"$topics" "$bootstrap" >"$dir/after" || bad "cluster-topics could not list the topics"
for t in $made; do
        grep -qx "$t" "$dir/before" && bad "$t was on the cluster before the run"
        if grep -q "^kdc-harness: cluster: the cluster does not support DeleteTopics .*: topics .*$t" "$dir/err"; then
                # The 2.0.2 mock has no DeleteTopics: the line must be true.
                grep -qx "$t" "$dir/after" || bad "$t is said left on the cluster but is not there"
        else
                grep -qx "$t" "$dir/after" && bad "$t is still on the cluster after the run"
        fi
done
# The group: deleted (no line), or the 2.0.2 mock's line naming it.
if grep -q 'DeleteGroups' "$dir/err" &&
        ! grep -q "does not support DeleteGroups .*: group $group is left on it\$" "$dir/err"; then
        bad "the group $group: $(grep 'DeleteGroups' "$dir/err")"
fi
[ $fail = 0 ] && echo "ok: the run's topics and group were its own, and deleted or said left"

# A service that drops the events at odd offsets (and forges DLQ envelopes):
# 48 of 100 lost, the same count as on the embedded mock
# (testkit.hostile.forged-dlq-envelopes-hide-no-loss).
"$check" expect 1 valid=false "failure=events lost" lost=48 lost_events=48 events=100 \
        -- "$h" run --bootstrap-servers "$bootstrap" --scenario baseline --events 100 --rate 1000 \
        --seed 1 --idle 5 --quiet --format json -- "$hostile" forged-dlq ||
        bad "a service that loses events, on the remote cluster"

# Interrupted (SIGTERM) mid-run: the service is ended, and the run still
# cleans up its topics and group before kdc-harness ends by the signal.
printf '#!/bin/sh\necho $$ >"%s/pid"\nexec sleep 300\n' "$dir" >"$dir/service"
chmod +x "$dir/service"
"$h" run --bootstrap-servers "$bootstrap" --scenario baseline --events 100 -- "$dir/service" \
        >/dev/null 2>"$dir/err" &
harness=$!
i=0
while ! grep -q 'created for this run$' "$dir/err" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
while [ ! -s "$dir/pid" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $harness
wait $harness
st=$?
[ $st = 143 ] || bad "an interrupted run on the remote cluster: exit $st, expected 143"
made=$(grep 'created for this run$' "$dir/err" | grep -oE 'kdc\.input-[0-9]+-[0-9]+-[0-9a-f]+')
[ -n "$made" ] && grep -q "^kdc-harness: cluster: the cluster does not support DeleteTopics .*: topics $made, " "$dir/err" ||
        { bad "an interrupted run did not delete its topics"; sed 's/^/    /' "$dir/err"; }
pid=$(cat "$dir/pid" 2>/dev/null)
i=0
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null || bad "the service (pid ${pid:-never started}) outlived the interrupted run"
[ $fail = 0 ] && echo "ok: an interrupted run ends its service and deletes its topics first"

kill -TERM "$mock"
wait "$mock"
st=$?
mock=
[ $st = 0 ] && echo "ok: mock-cluster exits 0 on SIGTERM" || bad "mock-cluster exited $st on SIGTERM"
[ -s "$dir/mock.err" ] && echo "mock-cluster's stderr:" && sed 's/^/    /' "$dir/mock.err"
exit $fail
