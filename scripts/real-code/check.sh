#!/usr/bin/env bash
# Runs kdc-lint on the real-code suite's prepared trees (scripts/real-code/prepare.sh) and
# compares its findings with the triaged lists in docs/real-code/expected/PROJECT.txt: exits 1
# when a finding (or an incomplete translation unit) appears or disappears, printing the
# difference; 2 when a tree is not prepared or kdc-lint fails.
#
#   bash scripts/real-code/check.sh KDC_LINT [WORK_DIR] [options] [PROJECT...]
#     KDC_LINT   the kdc-lint executable (e.g. build/release/linter/kdc-lint)
#     WORK_DIR   where prepare.sh put the trees (default: build/real-code of this checkout)
#     --update   rewrite the expected lists from this run (keeps the verdict comments of the
#                findings that remain; new ones are marked `# untriaged`) and exit 0
#     --cache    keep kdc-lint's cache per project in WORK_DIR/cache (keyed by the kdc-lint
#                executable, the files and their flags: exact, and fast while kdc-lint is
#                unchanged; about 110 MB). Default: --no-cache, every unit parsed (what CI wants:
#                a new kdc-lint executable never hits the cache)
#     -j N       kdc-lint's parallel units (default: kdc-lint's own, the CPUs)
#     --allow-unprepared  skip (and name) projects whose tree is not prepared, instead of exit 2
# Default projects: all of scripts/real-code/projects.sh. Reports: WORK_DIR/reports/PROJECT.json
# and .stderr. Per project it prints units (analysed translation units), incomplete, findings,
# the kdc-lint run's seconds, and whether the findings match the list.
# A ctest entry is one line (the trees prepared beforehand, e.g. by a CI step):
#   add_test(NAME lint.real-code COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/real-code/check.sh
#            $<TARGET_FILE:kdc-lint> ${PROJECT_SOURCE_DIR}/build/real-code)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
expected_dir=$root/docs/real-code/expected

[ $# -ge 1 ] || { sed -n '2,23p' "$0" >&2; exit 2; }
lint=$(realpath "$1"); shift
[ -x "$lint" ] || { echo "check.sh: $lint is not an executable" >&2; exit 2; }
RC_WORK=$root/build/real-code
RC_REPO=$root
# shellcheck source=projects.sh
source "$here/projects.sh"
# WORK_DIR: a second argument that is neither an option nor a project name
if [ $# -ge 1 ] && [[ $1 != -* ]] && ! rc_project "$1" 2>/dev/null; then
  RC_WORK=$(realpath -m "$1"); shift
fi

update=0 cache=0 jobs=() allow_unprepared=0 projects=()
while [ $# -gt 0 ]; do
  case $1 in
    --update) update=1 ;;
    --cache) cache=1 ;;
    --no-cache) cache=0 ;;
    -j) jobs=(-j "$2"); shift ;;
    -j*) jobs=("$1") ;;
    --allow-unprepared) allow_unprepared=1 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    -*) echo "check.sh: unknown option $1" >&2; exit 2 ;;
    *) rc_project "$1" || exit 2; projects+=("$1") ;;
  esac
  shift
done
[ ${#projects[@]} -gt 0 ] || projects=("${RC_PROJECTS[@]}")

mkdir -p "$RC_WORK/reports"
status=0
rows=()
for p in "${projects[@]}"; do
  rc_project "$p"
  if [ "$TREE" = installed ] || [ "$TREE" = none ]; then ready=$([ -d "$ROOT" ] && echo 1 || echo 0)
  else ready=$([ -f "$(rc_stamp "$TREE")" ] && echo 1 || echo 0); fi
  if [ "$ready" = 0 ]; then
    echo "== $p: not prepared (bash scripts/real-code/prepare.sh $p)" >&2
    rows+=("$(printf '%-30s %s' "$p" "not prepared")")
    [ $allow_unprepared = 1 ] || status=2
    continue
  fi
  args=(--format=json --config="$here/kdc-lint.yaml" "${jobs[@]}")
  if [ $cache = 1 ]; then args+=(--cache-dir="$RC_WORK/cache/$p"); else args+=(--no-cache); fi
  [ -n "$DB" ] && args+=(-p "$DB")
  t0=$(date +%s.%N)
  rm -rf "$RC_WORK/reports/$p.json" "$RC_WORK/reports/$p.units"
  if [ "$MODE" = per-unit ]; then
    # one run per unit (each a program), the reports merged into one
    mkdir -p "$RC_WORK/reports/$p.units"
    mapfile -t unit_list < <(python3 "$here/findings.py" units "$ROOT" "${DB:--}" "${PATHS[@]}")
    rc=0 i=0 parts=()
    : > "$RC_WORK/reports/$p.stderr"
    for u in "${unit_list[@]}"; do
      i=$((i + 1))
      (cd "$ROOT" && "$lint" "${args[@]}" -o "$RC_WORK/reports/$p.units/$i.json" "$u" \
         2>> "$RC_WORK/reports/$p.stderr")
      r=$?; [ $r -le $rc ] || rc=$r
      parts+=("$RC_WORK/reports/$p.units/$i.json")
    done
    [ $rc -gt 1 ] || [ ${#parts[@]} -eq 0 ] ||
      python3 "$here/findings.py" merge "$RC_WORK/reports/$p.json" "${parts[@]}"
  else
    (cd "$ROOT" && "$lint" "${args[@]}" -o "$RC_WORK/reports/$p.json" "${PATHS[@]}" \
       2> "$RC_WORK/reports/$p.stderr")
    rc=$?
  fi
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  if [ $rc -gt 1 ] || [ ! -s "$RC_WORK/reports/$p.json" ]; then
    echo "== $p: kdc-lint exit $rc" >&2; sed 's/^/   /' "$RC_WORK/reports/$p.stderr" >&2
    rows+=("$(printf '%-30s kdc-lint exit %s' "$p" "$rc")"); status=2; continue
  fi
  IFS=$'\t' read -r units incomplete findings skipped < <(python3 "$here/findings.py" summary "$RC_WORK/reports/$p.json")
  echo "== $p: $units units, $incomplete incomplete, $findings findings ($skipped skipped by the prefilter; ${secs}s)"
  if [ $update = 1 ]; then
    python3 "$here/findings.py" update "$expected_dir/$p.txt" "$RC_WORK/reports/$p.json"
    verdict="updated"
  elif python3 "$here/findings.py" compare "$expected_dir/$p.txt" "$RC_WORK/reports/$p.json" "$p"; then
    verdict="as expected"
  else
    verdict="DIFFERS"; [ $status -ne 0 ] || status=1
  fi
  rows+=("$(printf '%-30s %5s %10s %8s %8s %7s  %s' "$p" "$units" "$incomplete" "$findings" "$skipped" "$secs" "$verdict")")
done
echo
printf '%-30s %5s %10s %8s %8s %7s  %s\n' project units incomplete findings skipped seconds "against docs/real-code/expected"
printf '%s\n' "${rows[@]}"
exit $status
