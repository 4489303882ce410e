#!/usr/bin/env bash
# Each part of kdc, and each stage of kdc-lint, includes only what it declares it depends on:
#
#   layers.sh LAYERS-FILE
#
# LAYERS-FILE is <build>/layers.txt, one line per stage or part as CMake declared it
# (kdc_lint_stage() in linter/CMakeLists.txt, harness/CMakeLists.txt): "NAME DIR DEPENDS...".
# A dependency NAME allows every header of that stage; NAME/SUB only the headers below its
# folder SUB (a part's public headers: libkdc/include). Checks that the declarations form no
# cycle, and that every #include "..." in the files below DIR (but those of another stage
# declared inside it) names a file of that stage or of one it depends on, directly or through
# the stages below. A header of another stage is found as the compiler finds it (next to the
# including file, then on the include path the declarations give), or else by its name below
# any stage's folder or its include/ folder: what a relative path or a stray -I would reach.
# Prints every violation as FILE:LINE: and exits 1 when there is one, 2 on bad input.
set -euo pipefail
layers_file=${1:?usage: layers.sh LAYERS-FILE}
[ -r "$layers_file" ] || { echo "layers.sh: cannot read $layers_file" >&2; exit 2; }

declare -A dir_of deps_of
names=()
while read -r name dir deps; do
  [ -n "$name" ] || continue
  [ -d "$dir" ] || { echo "layers.sh: $name: no folder $dir" >&2; exit 2; }
  names+=("$name")
  dir_of[$name]=$(realpath "$dir")
  deps_of[$name]=$deps
done <"$layers_file"
[ ${#names[@]} -gt 0 ] || { echo "layers.sh: nothing declared in $layers_file" >&2; exit 2; }

# The declarations must be layers: taking away, again and again, the stages whose dependencies
# are all taken away ends with none left; what is left otherwise depends on itself in a cycle.
# below[n]: what n may include, "NAME" (all of it) or "NAME/SUB", its own dependencies and
# theirs.
declare -A done_ below
left=("${names[@]}")
while [ ${#left[@]} -gt 0 ]; do
  next=()
  for n in "${left[@]}"; do
    ready=1
    for d in ${deps_of[$n]}; do
      [ -n "${dir_of[${d%%/*}]:-}" ] || { echo "layers.sh: $n depends on unknown ${d%%/*}" >&2; exit 2; }
      [ -n "${done_[${d%%/*}]:-}" ] || ready=0
    done
    if [ $ready -eq 1 ]; then
      b=""
      for d in ${deps_of[$n]}; do b="$b $d ${below[${d%%/*}]}"; done
      below[$n]=$b
      done_[$n]=1
    else
      next+=("$n")
    fi
  done
  if [ ${#next[@]} -eq ${#left[@]} ]; then
    echo "layers.sh: these depend on each other in a cycle: ${next[*]}"
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

# May stage n include `target` (a file of stage `owner`)?
allowed() { # n owner target
  local d
  [ "$2" = "$1" ] && return 0
  for d in ${below[$1]}; do
    [ "$d" = "$2" ] && return 0
    case $d in "$2"/*)
      case $3 in "${dir_of[$2]}/${d#*/}"/*) return 0 ;; esac ;;
    esac
  done
  return 1
}

bad=0
nfiles=0
for n in "${names[@]}"; do
  search=("${dir_of[$n]}")
  for d in ${below[$n]}; do
    if [ "$d" = "${d%%/*}" ]; then search+=("${dir_of[$d]}"); else search+=("${dir_of[${d%%/*}]}/${d#*/}"); fi
  done
  while IFS= read -r -d '' f; do
    [ "$(stage_of "$f")" = "$n" ] || continue # in a stage declared inside this one
    nfiles=$((nfiles + 1))
    while IFS=: read -r line inc; do
      inc=${inc#*\"}; inc=${inc%%\"*}
      target=""
      for d in "$(dirname "$f")" "${search[@]}"; do
        if [ -f "$d/$inc" ]; then target=$(realpath "$d/$inc"); break; fi
      done
      if [ -z "$target" ]; then
        for d in "${names[@]}"; do
          for p in "${dir_of[$d]}/$inc" "${dir_of[$d]}/include/$inc"; do
            [ -z "$target" ] && [ -f "$p" ] && target=$(realpath "$p")
          done
        done
      fi
      [ -n "$target" ] || continue # not a header of any stage (a system or generated one)
      owner=$(stage_of "$target")
      [ -n "$owner" ] || continue
      if ! allowed "$n" "$owner" "$target"; then
        echo "$f:$line: #include \"$inc\": $n does not depend on ${target#"${dir_of[$owner]}"/} of $owner"
        bad=1
      fi
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
  done < <(find "${dir_of[$n]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print0)
done
[ $bad -eq 0 ] &&
  echo "layers.sh: ${#names[@]} stages and parts, $nfiles files; every #include is of its own or one it depends on"
exit $bad
