#!/bin/sh
# kdc-harness --report-html, opened in a real browser (Debian's chromium,
# headless): every plot's lines are drawn and end where the JSON report says
# (input events stored, committed, output and DLQ records written), one mark per
# lost event (as many as the JSON report counts), one shaded rectangle per fault
# window, and the page needs nothing from outside itself.
# With --sink, the runs are sink scenarios: each plot has a fourth line, the
# effects written (the sink's rows, sampled during the run), with its legend,
# and it ends at the rows the harness read back.
# Usage: report_html.sh KDC-HARNESS SERVICE
#        report_html.sh --sink KDC-HARNESS SERVICE SCENARIO[,SCENARIO...]
set -u
sink=0
[ "$1" = --sink ] && { sink=1; shift; }
h=$1 service=$2
fail=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
command -v chromium >/dev/null || { echo "FAIL: chromium is not installed (scripts/install-deps.sh installs it)"; exit 1; }

if [ $sink = 1 ]; then
        scenarios=$3
else
        # a scenario in which the service loses events, then one with fault windows
        scenarios=produce-topic-authorization-failed,broker-down
fi
"$h" run --events 400 --rate 200 --seed 1 --quiet --format json --scenario "$scenarios" \
        --report-html "$dir/report.html" -- "$service" >"$dir/report.json" 2>"$dir/err"
st=$?
[ "$st" = 0 ] || [ "$st" = 1 ] || { echo "FAIL: kdc-harness exit $st"; cat "$dir/err"; exit 1; }
[ -s "$dir/report.html" ] || { echo "FAIL: no HTML report written"; exit 1; }
plots=$(echo "$scenarios" | tr , '\n' | grep -c .)

# self-contained: no resource the page would fetch
if grep -Eqi '(src|href)=|url\(|@import' "$dir/report.html"; then
        echo "FAIL: the page refers to something outside itself:"
        grep -Eoi '(src|href)=[^ >]*|url\([^)]*\)|@import[^;]*' "$dir/report.html" | head -5
        fail=1
fi

# what the browser drew, as the page's own script measured it
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run \
        --user-data-dir="$dir/profile" --dump-dom "file://$dir/report.html" \
        >"$dir/dom.html" 2>"$dir/chromium.err"
grep -o '<svg class="timeline"[^>]*>' "$dir/dom.html" >"$dir/plots"
[ "$(grep -c . "$dir/plots")" = "$plots" ] || { echo "FAIL: the rendered page has $(grep -c . "$dir/plots") plots, expected $plots"; cat "$dir/chromium.err" | head -5; exit 1; }

attr() { # plot-number attribute
        sed -n "$1p" "$dir/plots" | sed -n "s/.* $2=\"\\([0-9]*\\)\".*/\\1/p"
}
json() { # plot-number expression of the run r
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][int(sys.argv[2])-1]; print(eval(sys.argv[3]))' \
                "$dir/report.json" "$1" "$2" 2>/dev/null
}
lines=3
[ $sink = 1 ] && lines=4
n=1
while [ $n -le "$plots" ]; do
        d=$(attr $n data-drawn)
        [ "$d" = $lines ] || { echo "FAIL: plot $n: $d of $lines lines drawn"; fail=1; }
        # where each drawn line ends, against the JSON report
        for series in 'stored r["events"]' 'committed r["committed"]' \
                      'written r["output_records"]+r["dlq_records"]'; do
                name=${series%% *} want=$(json $n "${series#* }")
                got=$(attr $n "data-$name-end")
                [ -n "$want" ] && [ "$got" = "$want" ] ||
                        { echo "FAIL: plot $n: the $name line ends at ${got:-nothing}, the JSON report says ${want:-nothing}"; fail=1; }
        done
        n=$((n + 1))
done
legend=$(grep -c 'class="k effects"' "$dir/dom.html")
if [ $sink = 0 ]; then
        [ "$legend" = 0 ] && ! grep -q '<polyline class="effects"' "$dir/dom.html" ||
                { echo "FAIL: a run without a sink has an effects line or legend"; fail=1; }
        lost=$(json 1 'r["lost"]')
        m=$(attr 1 data-marks-drawn)
        if [ -z "$lost" ] || [ "$lost" -le 0 ]; then
                echo "FAIL: the service lost no events in the first scenario (lost=$lost): nothing to mark"
                fail=1
        elif [ "$m" != "$lost" ]; then
                echo "FAIL: plot 1: $m lost events marked, the JSON report counts $lost"
                fail=1
        else
                echo "ok: plot 1 marks its $lost lost events"
        fi
        w=$(attr 2 data-windows) wd=$(attr 2 data-windows-drawn)
        if [ -z "$w" ] || [ "$w" -le 0 ] || [ "$wd" != "$w" ]; then
                echo "FAIL: plot 2: $wd of ${w:-no} fault windows drawn"
                fail=1
        else
                echo "ok: plot 2 shades its $w fault windows"
        fi
        [ $fail = 0 ] && echo "ok: both plots drawn in chromium, each line ending where the JSON report says"
        exit $fail
fi

# sink runs: the effects line, sampled during the run, ending at the rows read back
[ "$legend" = "$plots" ] || { echo "FAIL: $legend of $plots plots have the effects legend"; fail=1; }
grep -o '<polyline class="effects" points="[^"]*"' "$dir/report.html" >"$dir/effects"
n=1
while [ $n -le "$plots" ]; do
        valid=$(json $n 'r["valid"]') rows=$(json $n 'r["effect_rows"]') sinkname=$(json $n 'r["sink"]')
        got=$(attr $n data-effects-end)
        points=$(sed -n "${n}p" "$dir/effects" | sed 's/.*points="//; s/"$//' | wc -w)
        [ "$valid" = True ] || { echo "FAIL: plot $n: the run is not valid: $(json $n 'r["failure"]')"; fail=1; }
        if [ -z "$rows" ] || [ "$rows" -le 0 ] || [ "$got" != "$rows" ]; then
                echo "FAIL: plot $n: the effects line ends at ${got:-nothing}, the harness read back ${rows:-no} rows"
                fail=1
        elif [ "$points" -lt 10 ]; then
                echo "FAIL: plot $n: the effects line has $points points: the sink was not sampled during the run"
                fail=1
        else
                echo "ok: plot $n ($sinkname): the effects line, $points points, ends at the $rows rows read back"
        fi
        n=$((n + 1))
done
exit $fail
