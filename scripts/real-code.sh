#!/usr/bin/env bash
# The real-code suite: kdc-lint on every Debian 12 source package that uses librdkafka (and can
# be downloaded and built here), each with the compile flags of its own build system, against
# the triaged list of expected findings in docs/real-code/expected/ (triage: docs/real-code.md).
#
#   bash scripts/real-code.sh                 prepare what is not prepared, build kdc-lint, check
#   bash scripts/real-code.sh prepare [--force] [TREE|PROJECT...]
#                                             download + configure/bear only (as root: installs
#                                             the -dev packages a build needs when missing)
#   bash scripts/real-code.sh check [OPTIONS] [PROJECT...]
#                                             build kdc-lint (release preset) and run
#                                             scripts/real-code/check.sh with it (--update
#                                             rewrites the expected lists)
#   bash scripts/real-code.sh probe           try the source packages the suite lacks
#                                             (clickhouse, pmacct, python-confluent-kafka, ...)
#
# Trees, reports and timings land in build/real-code/ (kept between runs: each source package is
# downloaded and built once). The parts: scripts/real-code/{projects,prepare,check}.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cmd=${1:-all}
[ $# -eq 0 ] || shift

build_lint() {
  bash scripts/install-deps.sh >/dev/null
  cmake --preset release >/dev/null
  cmake --build --preset release -j"$(( $(nproc) < 2 ? $(nproc) : 2 ))" --target kdc-lint >/dev/null
}
case $cmd in
  prepare) exec bash scripts/real-code/prepare.sh "$@" ;;
  check)
    build_lint
    exec bash scripts/real-code/check.sh "$root/build/release/linter/kdc-lint" "$root/build/real-code" "$@" ;;
  probe) exec bash scripts/real-code/prepare.sh --probe ;;
  all)
    bash scripts/real-code/prepare.sh
    build_lint
    exec bash scripts/real-code/check.sh "$root/build/release/linter/kdc-lint" "$root/build/real-code" ;;
  -h|--help|help) sed -n '2,20p' "$0" ;;
  *) echo "real-code.sh: unknown command '$cmd' (prepare, check, probe; none: all)" >&2; exit 2 ;;
esac
