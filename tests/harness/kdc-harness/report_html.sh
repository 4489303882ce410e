#!/bin/sh
# kdc-harness --report-html, opened in a real browser (Debian's chromium,
# headless): every plot's three lines are drawn, one mark per lost event (as many
# as the JSON report counts), one shaded rectangle per fault window, and the page
# needs nothing from outside itself.
# Usage: report_html.sh KDC-HARNESS SERVICE
set -u
h=$1 service=$2
fail=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
command -v chromium >/dev/null || { echo "FAIL: chromium is not installed (scripts/install-deps.sh installs it)"; exit 1; }

# a scenario in which the service loses events, then one with fault windows
"$h" run --events 400 --rate 200 --seed 1 --quiet --format json \
        --scenario produce-topic-authorization-failed,broker-down \
        --report-html "$dir/report.html" -- "$service" >"$dir/report.json" 2>"$dir/err"
st=$?
[ "$st" = 0 ] || [ "$st" = 1 ] || { echo "FAIL: kdc-harness exit $st"; cat "$dir/err"; exit 1; }
[ -s "$dir/report.html" ] || { echo "FAIL: no HTML report written"; exit 1; }

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
[ "$(grep -c . "$dir/plots")" = 2 ] || { echo "FAIL: the rendered page has $(grep -c . "$dir/plots") plots, expected 2"; cat "$dir/chromium.err" | head -5; exit 1; }

attr() { # plot-number attribute
        sed -n "$1p" "$dir/plots" | sed -n "s/.* $2=\"\\([0-9]*\\)\".*/\\1/p"
}
lost=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["runs"][0]["lost"])' "$dir/report.json" 2>/dev/null)
for n in 1 2; do
        d=$(attr $n data-drawn)
        [ "$d" = 3 ] || { echo "FAIL: plot $n: $d of 3 lines drawn"; fail=1; }
done
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
[ $fail = 0 ] && echo "ok: both plots drawn in chromium"
exit $fail
