#!/usr/bin/env bash
# The C lines a change touches are formatted as .clang-format says (Debian's clang-format-14;
# .clang-format files per part, see the root one). Lines nobody touched are left as they are.
#
#   bash scripts/check-format.sh [BASE]     exit 0 clean, 1 misformatted (the fix is shown as a
#                                           diff), 2 no clang-format-14 or no usable base
#   git clang-format-14 BASE                what fixes it (formats the changed lines in place)
#
# "Changed" means every difference between BASE and the working tree (commits and uncommitted
# edits to tracked files). BASE, unless given (or KDC_FORMAT_BASE): on a branch, where it left
# main (git merge-base HEAD origin/main, else main); on main itself (a clean clone in CI, where
# only main exists), the commit checked out: HEAD^..HEAD plus uncommitted edits; with no parent
# (a clone of depth 1), the uncommitted edits only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cf=${CLANG_FORMAT:-clang-format-14}
gcf=${GIT_CLANG_FORMAT:-git-clang-format-14}
for tool in "$cf" "$gcf"; do
  command -v "$tool" >/dev/null ||
    { echo "check-format: $tool not found (bash scripts/install-deps.sh)" >&2; exit 2; }
done
git rev-parse -q --verify HEAD >/dev/null ||
  { echo "check-format: $root is not a git checkout with a commit" >&2; exit 2; }

base=${1:-${KDC_FORMAT_BASE:-}}
if [ -z "$base" ]; then
  fork=
  for ref in origin/main main; do
    if git rev-parse -q --verify "$ref^{commit}" >/dev/null; then
      fork=$(git merge-base HEAD "$ref") && break
    fi
  done
  if [ -n "$fork" ] && [ "$fork" != "$(git rev-parse HEAD)" ]; then
    base=$fork
  elif git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null; then
    base=HEAD~1
  else
    base=HEAD
  fi
fi
git rev-parse -q --verify "$base^{commit}" >/dev/null ||
  { echo "check-format: base '$base' is not a commit here" >&2; exit 2; }
echo "check-format: C lines changed since $(git rev-parse --short "$base") ($base)"

set +e
out=$("$gcf" --binary "$(command -v "$cf")" --diff --extensions c,h "$base" 2>&1)
rc=$?
set -e
# git-clang-format 14 exits 0 whether or not it has a fix to show: read what it says.
if [ $rc -ne 0 ] && [ "${out#diff --git}" = "$out" ]; then
  printf '%s\n' "$out" >&2
  echo "check-format: $gcf failed ($rc)" >&2
  exit 2
fi
case $out in
  "no modified files to format" | "clang-format did not modify any files")
    echo "check-format: $out"
    exit 0 ;;
  "diff --git"*)
    printf '%s\n' "$out"
    echo "check-format: the lines above are not formatted as .clang-format says;" \
         "fix them with: git clang-format-14 $(git rev-parse --short "$base")" >&2
    exit 1 ;;
  *)
    printf '%s\n' "$out" >&2
    echo "check-format: $gcf said something unexpected" >&2
    exit 2 ;;
esac
