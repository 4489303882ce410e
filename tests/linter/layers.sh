#!/usr/bin/env bash
# kdc-lint's stages depend only on the stages below them (linter/CMakeLists.txt):
#
#   layers.sh STAGES-FILE
#
# STAGES-FILE is <build>/linter/stages.txt, one line per stage as kdc_lint_stage() declared it:
# "NAME DIR DEPENDS...". Checks that the declarations form no cycle, and that every
# #include "..." in a stage's files (DIR/*.[ch] and one level of subfolders, such as
# rules/common/) names a file of that stage or of a stage it depends on, directly or through
# the stages below (the compiler would find a header of another stage only by a relative path).
# Prints every violation as FILE:LINE: and exits 1 when there is one, 2 on bad input.
set -euo pipefail
stages_file=${1:?usage: layers.sh STAGES-FILE}
[ -r "$stages_file" ] || { echo "layers.sh: cannot read $stages_file" >&2; exit 2; }

declare -A dir_of deps_of
names=()
while read -r name dir deps; do
  [ -n "$name" ] || continue
  names+=("$name")
  dir_of[$name]=$(realpath "$dir")
  deps_of[$name]=$deps
done <"$stages_file"
[ ${#names[@]} -gt 0 ] || { echo "layers.sh: no stages in $stages_file" >&2; exit 2; }

# The declarations must be layers: taking away, again and again, the stages whose dependencies
# are all taken away ends with none left; what is left otherwise depends on itself in a cycle.
declare -A done_ below
left=("${names[@]}")
while [ ${#left[@]} -gt 0 ]; do
  next=()
  for n in "${left[@]}"; do
    ready=1
    for d in ${deps_of[$n]}; do
      [ -n "${dir_of[$d]:-}" ] || { echo "layers.sh: $n depends on unknown stage $d" >&2; exit 2; }
      [ -n "${done_[$d]:-}" ] || ready=0
    done
    if [ $ready -eq 1 ]; then
      b=""
      for d in ${deps_of[$n]}; do b="$b $d ${below[$d]}"; done
      below[$n]=$b # the stages below n: its dependencies and theirs
      done_[$n]=1
    else
      next+=("$n")
    fi
  done
  if [ ${#next[@]} -eq ${#left[@]} ]; then
    echo "layers.sh: these stages depend on each other in a cycle: ${next[*]}"
    exit 1
  fi
  left=("${next[@]}")
done

# The stage a file is in: the one whose folder holds it (the deepest such folder).
stage_of() {
  local f=$1 best="" len=0 n
  for n in "${names[@]}"; do
    case $f in "${dir_of[$n]}"/*)
      if [ ${#dir_of[$n]} -gt $len ]; then best=$n; len=${#dir_of[$n]}; fi ;;
    esac
  done
  echo "$best"
}

bad=0
for n in "${names[@]}"; do
  allowed=" $n ${below[$n]} "
  search=("${dir_of[$n]}")
  for d in ${below[$n]}; do search+=("${dir_of[$d]}"); done
  shopt -s nullglob
  for f in "${dir_of[$n]}"/*.[ch] "${dir_of[$n]}"/*/*.[ch]; do
    [ "$(stage_of "$f")" = "$n" ] || continue # a subfolder that is a stage of its own
    while IFS=: read -r line inc; do
      inc=${inc#*\"}; inc=${inc%%\"*}
      # as the compiler looks: next to the including file, then on the stage's include path
      target=""
      for d in "$(dirname "$f")" "${search[@]}"; do
        if [ -f "$d/$inc" ]; then target=$(realpath "$d/$inc"); break; fi
      done
      if [ -z "$target" ]; then
        for d in "${names[@]}"; do
          [ -f "${dir_of[$d]}/$inc" ] && target=$(realpath "${dir_of[$d]}/$inc") && break
        done
      fi
      [ -n "$target" ] || continue # not a header of any stage (a system or generated one)
      owner=$(stage_of "$target")
      [ -n "$owner" ] || continue
      case $allowed in *" $owner "*) ;; *)
        echo "$f:$line: #include \"$inc\": stage $n does not depend on stage $owner"
        bad=1 ;;
      esac
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
  done
done
[ $bad -eq 0 ] && echo "layers.sh: ${#names[@]} stages; every #include is of the stage itself or one below it"
exit $bad
