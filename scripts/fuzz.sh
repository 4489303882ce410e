#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, configure preset `fuzz`: clang 14, ASan + UBSan) and
# runs each for a bounded time on a copy of its seed corpus (fuzz/corpus/TARGET/; the copy is
# in a temporary directory: the repository's corpus is never written). Fails when a target
# finds a crash, a leak, a sanitizer report, an input slower than the timeout or one that
# takes more memory than the limit; the input is kept in build/fuzz/artifacts/.
#
#   scripts/fuzz.sh [TARGET...]        (default: every target)
#
# FUZZ_SECONDS (30) is the time per target, FUZZ_TIMEOUT (10) the seconds one input may
# take, FUZZ_RSS_MB (2048) the memory a target may use.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
timeout_s=${FUZZ_TIMEOUT:-10}
rss_mb=${FUZZ_RSS_MB:-2048}
for v in "$seconds" "$timeout_s" "$rss_mb"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: '$v' is not a positive integer" >&2; exit 2; }
done

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
for t in "${targets[@]}"; do
  [ -f "fuzz/fuzz_$t.c" ] && [ -d "fuzz/corpus/$t" ] ||
    { echo "fuzz.sh: no target '$t' (fuzz/fuzz_$t.c and fuzz/corpus/$t/)" >&2; exit 2; }
done

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)"

work=$(mktemp -d "${TMPDIR:-/tmp}/kdc-fuzz-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts=build/fuzz/artifacts
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for t in "${targets[@]}"; do
  cp -r "fuzz/corpus/$t" "$work/$t"
  log="$work/$t.log"
  dict=()
  case $t in
    baseline | merge | compdb) dict=(-dict=fuzz/dict/json.dict) ;;
    config) dict=(-dict=fuzz/dict/yaml.dict) ;;
  esac
  echo "fuzz.sh: fuzz-$t for ${seconds}s on a copy of fuzz/corpus/$t ($(ls "fuzz/corpus/$t" | wc -l) seeds)"
  # -close_fd_mask=3: the targets' own messages (kdc-lint's errors about the inputs) are not
  # shown; libFuzzer and the sanitizers still report on a copy of stderr
  if TMPDIR="$work" "build/fuzz/fuzz/fuzz-$t" -max_total_time="$seconds" -timeout="$timeout_s" \
       -rss_limit_mb="$rss_mb" -close_fd_mask=3 -print_final_stats=1 "${dict[@]}" \
       -artifact_prefix="$artifacts/$t-" "$work/$t" >"$log" 2>&1; then
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units)' "$log" | sed "s/^/  $t: /"
  else
    echo "fuzz.sh: fuzz-$t FAILED:" >&2
    grep -vE '^(#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED|RELOAD)|INFO:)' "$log" | tail -60 >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}; inputs in $artifacts/" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s), ${seconds}s each: no crash, leak or sanitizer report"
