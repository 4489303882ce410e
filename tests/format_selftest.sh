#!/usr/bin/env bash
# scripts/check-format.sh can fail: in scratch repositories with kdc's .clang-format files it
# passes a well-formatted change and leaves untouched old lines alone, and fails on one
# misformatted changed line (on a branch, against where it left main; on a clean clone where
# only main exists, in the last commit; uncommitted), in the linter's 4-space style and in the
# harness's 8-space one.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "format_selftest: $*" >&2; exit 1; }

repo=$t/repo
mkdir -p "$repo/scripts" "$repo/linter" "$repo/harness/libkdc"
cp "$src/scripts/check-format.sh" "$repo/scripts/"
cp "$src/.clang-format" "$repo/"
cp "$src/harness/.clang-format" "$repo/harness/"
cp "$src/harness/libkdc/.clang-format" "$repo/harness/libkdc/"
cat >"$repo/linter/a.c" <<'EOF'
int old_line_nobody_touches(int  x) { return x+1; }

int add(int a, int b) {
    return a + b;
}
EOF
cat >"$repo/harness/libkdc/b.c" <<'EOF'
int twice(int a) {
        return 2 * a;
}
EOF
git -C "$repo" init -q -b main
git -C "$repo" -c user.name=t -c user.email=t@t add -A
git -C "$repo" -c user.name=t -c user.email=t@t commit -qm base
commit() { git -C "$1" -c user.name=t -c user.email=t@t commit -qam "$2"; }

expect() { # what, exit code wanted, repo
  set +e; bash "$3/scripts/check-format.sh" >"$t/out" 2>&1; local rc=$?; set -e
  [ $rc -eq "$2" ] || fail "$1: exit $rc, not $2: $(cat "$t/out")"
}

expect "main with no change (an old misformatted line)" 0 "$repo"

git -C "$repo" checkout -q -b topic
printf '\nint sub(int a, int b) {\n    return a - b;\n}\n' >>"$repo/linter/a.c"
commit "$repo" "a well-formatted function"
expect "a well-formatted change on a branch" 0 "$repo"

printf '\nint mul(int a,int b) {\n    return a*b;\n}\n' >>"$repo/linter/a.c"
expect "an uncommitted misformatted line" 1 "$repo"
grep -q '^+int mul(int a, int b) {$' "$t/out" || fail "the fix is not shown: $(cat "$t/out")"
commit "$repo" "a misformatted function"
expect "a committed misformatted line on a branch" 1 "$repo"
grep -q 'linter/a.c' "$t/out" || fail "the file is not named: $(cat "$t/out")"
grep -q 'old_line_nobody_touches' "$t/out" && fail "an untouched line is reported: $(cat "$t/out")"
git -C "$repo" reset -q --hard HEAD^

printf 'int half(int a) {\n    return a / 2;\n}\n' >>"$repo/harness/libkdc/b.c"
expect "a 4-space indent in libkdc (8 there)" 1 "$repo"
git -C "$repo" checkout -q -- harness/libkdc/b.c

# A clean clone where only main exists: what the last commit changed is checked.
git -C "$repo" checkout -q main
printf '\nint neg(int a) { return -a; }\n' >>"$repo/linter/a.c"
commit "$repo" "a one-line function on main"
git clone -q "$repo" "$t/clone"
git -C "$t/clone" remote remove origin
expect "main's last commit, misformatted, in a clone with only main" 1 "$t/clone"
git clone -q "file://$repo" "$t/origin-clone"
expect "the same with origin/main" 1 "$t/origin-clone"
git clone -q --depth 1 "file://$repo" "$t/shallow"
expect "a clone of depth 1, nothing uncommitted" 0 "$t/shallow"
echo "format_selftest: ok"
