#!/usr/bin/env bash
# The generated man pages (man/CMakeLists.txt) as man(1) shows them: each renders without a
# warning, has NAME, SYNOPSIS (the usage lines of --help), DESCRIPTION and SEE ALSO, the exit
# status (the "Exit status:" of --help), and names every long option its --help names.
# Usage: check.sh PAGES_DIR KDC_LINT KDC_HARNESS
set -euo pipefail
dir=$1
declare -A prog=([kdc-lint]=$2 [kdc-harness]=$3)
status=0
for name in kdc-lint kdc-harness; do
  page=$dir/$name.1
  [ -s "$page" ] || { echo "check.sh: no $page"; exit 1; }
  text=$(MANWIDTH=100 man --warnings -l "$page" 2>"$dir/$name.warnings" | col -b)
  if [ -s "$dir/$name.warnings" ]; then
    echo "$name(1): man warns:"; cat "$dir/$name.warnings"; status=1
  fi
  for section in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
    grep -q "^$section\$" <<<"$text" || { echo "$name(1): no $section section"; status=1; }
  done
  grep -qE '^ +Exit +status: +0 ' <<<"$text" || { echo "$name(1): no exit status"; status=1; }
  grep -A2 '^SYNOPSIS$' <<<"$text" | grep -q "$name" ||
    { echo "$name(1): the SYNOPSIS does not name $name"; status=1; }
  for opt in $("${prog[$name]}" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    grep -qF -- "$opt" <<<"$text" || { echo "$name(1): $opt of --help is missing"; status=1; }
  done
done
[ $status = 0 ] && echo "check.sh: kdc-lint(1) and kdc-harness(1) are complete"
exit $status
