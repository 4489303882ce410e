#!/usr/bin/env bash
# kdc-lint benchmarks: `bash bench/lint/run.sh` (as root on Debian 12, from a clone).
#
# Prepares three real trees from Debian source packages, each with the compilation database of
# its own build system, then runs bench/lint/bench.py on them (ratios measured side by side in
# one run; docs/performance.md explains and records the figures):
#   librdkafka 2.0.2  src, src-cpp, tests and examples: CMake's compile_commands.json
#   kcat 1.7.1        ./configure, then `bear -- make`
#   collectd 5.12.0   ./build.sh (autotools), ./configure (the plugins whose libraries are
#                     installed; write_kafka among them), then `bear -- make -k`
# Everything lands in build/bench-lint/ (kept between runs: each tree is prepared once).
# Environment: BENCH_ROUNDS (default 3), BENCH_TREES (default "librdkafka kcat collectd").
# Run it on an otherwise idle machine: the load average is recorded at the start and the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$root/build/bench-lint
trees_wanted=${BENCH_TREES:-librdkafka kcat collectd}
mkdir -p "$work/src"

need=()
for p in clang clang-tidy bear time python3 autoconf automake libtool flex bison pkg-config \
         make dpkg-dev librdkafka-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
bash scripts/install-deps.sh >/dev/null

# kdc-lint as users get it: the release preset
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target kdc-lint >/dev/null
lint=$root/build/release/linter/kdc-lint

# The source packages (orig tarballs) of the wanted trees, through a private apt configuration
# (the system's sources are untouched); build/real-code/src (scripts/real-code.sh) is reused
# when it has them.
cd "$work/src"
declare -A source_of=([librdkafka]=librdkafka [kcat]=kafkacat [collectd]=collectd)
fetch=()
for t in $trees_wanted; do
  s=${source_of[$t]:?"BENCH_TREES: unknown tree '$t' (librdkafka, kcat, collectd)"}
  ls "$root"/build/real-code/src/${s}_*.orig.tar.* >/dev/null 2>&1 &&
    cp -n "$root"/build/real-code/src/${s}_*.orig.tar.* . || true
  ls ${s}_*.orig.tar.* >/dev/null 2>&1 || fetch+=("$s")
done
if [ ${#fetch[@]} -gt 0 ]; then
  mkdir -p apt/lists/partial
  echo "deb-src http://deb.debian.org/debian bookworm main" > apt/sources.list
  cat > apt/apt.conf <<CONF
Dir::Etc::SourceList "$work/src/apt/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::State::Lists "$work/src/apt/lists";
CONF
  APT_CONFIG=$work/src/apt/apt.conf apt-get update -qq
  # only the orig tarballs are used: a missing Debian patch set (a mirror's 404) does not matter
  APT_CONFIG=$work/src/apt/apt.conf apt-get source --download-only "${fetch[@]}" || true
  for s in "${fetch[@]}"; do
    ls ${s}_*.orig.tar.* >/dev/null 2>&1 ||
      { echo "bench/lint/run.sh: could not download the $s source package" >&2; exit 1; }
  done
fi

trees=()
for t in $trees_wanted; do
  case $t in
    librdkafka)
      if [ ! -f librdkafka-build/compile_commands.json ]; then
        rm -rf librdkafka librdkafka-build && mkdir librdkafka
        tar xf librdkafka_*.orig.tar.* -C librdkafka --strip-components=1
        cmake -S librdkafka -B librdkafka-build -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
          -DRDKAFKA_BUILD_TESTS=ON -DRDKAFKA_BUILD_EXAMPLES=ON -DWITH_SSL=OFF -DWITH_SASL=OFF \
          -DWITH_ZSTD=OFF -DWITH_ZLIB=OFF -DENABLE_LZ4_EXT=OFF -DWITH_CURL=OFF >/dev/null
      fi
      trees+=("librdkafka=$work/src/librdkafka-build") ;;
    kcat)
      if [ ! -f kcat/compile_commands.json ]; then
        rm -rf kcat && mkdir kcat
        tar xf kafkacat_*.orig.tar.* -C kcat --strip-components=1
        # (its mklove configure takes any configure.* file here for a module: logs go above)
        (cd kcat && ./configure >../kcat-configure.log 2>&1 &&
           bear -- make -j"$(nproc)" kcat >../kcat-make.log 2>&1)
      fi
      trees+=("kcat=$work/src/kcat") ;;
    collectd)
      if [ ! -f collectd/compile_commands.json ]; then
        rm -rf collectd && mkdir collectd
        tar xf collectd_*.orig.tar.* -C collectd --strip-components=1
        # -k: a plugin that does not build here (python: Debian 12's Python 3.11 moved
        # longintrepr.h) still leaves its compile command in the database
        (cd collectd && ./build.sh >build.log 2>&1 && ./configure >configure.log 2>&1 &&
           { bear -- make -k -j"$(nproc)" >make.log 2>&1 || true; })
        grep -q write_kafka collectd/compile_commands.json
      fi
      echo "collectd plugins configured: $(grep -cE '^    [a-z_0-9]+ \. .* yes$' collectd/configure.log)" \
           "(write_kafka: $(grep -E '^    write_kafka ' collectd/configure.log | awk '{print $NF}'))" >&2
      trees+=("collectd=$work/src/collectd") ;;
  esac
done

python3 "$root/bench/lint/bench.py" --lint "$lint" --work "$work/run" \
  --rounds "${BENCH_ROUNDS:-3}" "${trees[@]}"
echo "(also in build/bench-lint/run/results.md and results.json)" >&2
