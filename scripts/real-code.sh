#!/usr/bin/env bash
# Runs kdc-lint on real code nobody here wrote, with real compile flags:
#   1. librdkafka's installed examples (/usr/share/doc/librdkafka-dev/examples)
#   2. the example programs of the librdkafka Debian source package
#      (flags from librdkafka's own CMake configure: compile_commands.json)
#   3. kcat, from its Debian source package (flags recorded by bear during a real build)
#   4. collectd's write_kafka plugin, from its Debian source package (flags by hand: its
#      autotools build needs a git checkout; the defines replace its generated config.h)
# Source packages come through a private apt configuration with a deb-src entry;
# the system's apt sources are not touched. Reports land in build/real-code/.
# Triage of every finding: docs/real-code.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bash scripts/install-deps.sh
for p in bear dpkg-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p"
done
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target kdc-lint >/dev/null
lint=$root/build/release/linter/kdc-lint

work=$root/build/real-code
mkdir -p "$work/apt/lists/partial" "$work/src"
cat > "$work/apt/sources.list" <<SRC
deb-src http://deb.debian.org/debian bookworm main
SRC
cat > "$work/apt/apt.conf" <<CONF
Dir::Etc::SourceList "$work/apt/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::State::Lists "$work/apt/lists";
CONF
export APT_CONFIG=$work/apt/apt.conf
cd "$work/src"
if ! ls librdkafka_*.orig.tar.* kafkacat_*.orig.tar.* collectd_*.orig.tar.* >/dev/null 2>&1; then
  apt-get update -qq
  # The *.debian.tar.xz part may 404; the upstream tarball is what matters.
  apt-get source --download-only librdkafka kcat collectd || true
fi
ls librdkafka_*.orig.tar.* kafkacat_*.orig.tar.* collectd_*.orig.tar.* >/dev/null
rm -rf librdkafka kcat collectd && mkdir librdkafka kcat collectd
tar xf librdkafka_*.orig.tar.* -C librdkafka --strip-components=1
tar xf kafkacat_*.orig.tar.* -C kcat --strip-components=1
tar xf collectd_*.orig.tar.* -C collectd --strip-components=1
unset APT_CONFIG

# librdkafka: configure only; its CMake build lists the examples with their real flags.
cmake -S librdkafka -B librdkafka-build -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DRDKAFKA_BUILD_TESTS=OFF -DRDKAFKA_BUILD_EXAMPLES=ON -DWITH_SSL=OFF -DWITH_SASL=OFF \
  -DWITH_ZSTD=OFF -DWITH_ZLIB=OFF -DENABLE_LZ4_EXT=OFF -DWITH_CURL=OFF >/dev/null
# kcat: a real build, compile commands recorded by bear.
(cd kcat && ./configure >/dev/null && bear -- make -j"$(nproc)" kcat >/dev/null 2>&1)

status=0
run() { # name, kdc-lint args...
  local name=$1; shift
  echo "== $name: kdc-lint $*"
  set +e
  "$lint" --format=json -o "$work/$name.json" "$@" 2>/dev/null
  local rc=$?
  "$lint" "$@" 2>&1 | grep -v '^kdc-lint: [0-9]* finding' || true
  set -e
  echo "   exit $rc; report: build/real-code/$name.json"
  [ "$rc" -le 1 ] || status=2
}
run installed-examples /usr/share/doc/librdkafka-dev/examples
run librdkafka-examples -p librdkafka-build librdkafka/examples
# Examples librdkafka's CMake does not build: the same flags by hand.
extra=()
for f in librdkafka/examples/*.c librdkafka/examples/*.cpp; do
  grep -q "\"$PWD/$f\"" librdkafka-build/compile_commands.json || extra+=("$f")
done
# win_ssl_cert_store.cpp is Windows-only (needs wincrypt.h); it is analysed but incomplete.
run librdkafka-examples-unbuilt "${extra[@]}" -- -I"$PWD/librdkafka/src" -I"$PWD/librdkafka/src-cpp" \
  -I"$PWD/librdkafka-build/generated/dummy"
run kcat -p kcat kcat
run collectd collectd/src/write_kafka.c -- -I"$PWD/collectd/src" -I"$PWD/collectd/src/daemon" \
  -DFP_LAYOUT_NEED_NOTHING=1 -DHAVE_LIBRDKAFKA_LOG_CB=1 -DHAVE_LIBRDKAFKA_LOGGER=1

# Recall check: the same producer examples with their delivery-report registration removed
# must each be reported (a clean run above must not mean "nothing was analysed").
mkdir -p mutated && rm -f mutated/*
for f in idempotent_producer.c producer.c rdkafka_example.c transactions.c \
         transactions-older-broker.c producer.cpp rdkafka_example.cpp; do
  sed -E 's/rd_kafka_conf_set_dr_msg_cb\(([^,]+), *[a-z_]+\)/(void)(\1)/;
          s/conf->set\("dr_cb", *&[a-z_]+, *errstr\)/0/' "librdkafka/examples/$f" > "mutated/$f"
done
set +e
"$lint" --format=json -o "$work/mutated.json" mutated -- -I"$PWD/librdkafka/src" \
  -I"$PWD/librdkafka/src-cpp" 2>/dev/null
set -e
reported=$(grep -o '"file": "mutated/[^"]*"' "$work/mutated.json" | sort -u | wc -l)
echo "== recall check: $reported of 7 producer examples without a delivery-report callback reported"
[ "$reported" -eq 7 ] || status=2
exit $status
