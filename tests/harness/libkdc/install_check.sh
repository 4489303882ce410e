#!/bin/sh
# Install libkdc (component libkdc) into a scratch prefix that differs from
# the configured CMAKE_INSTALL_PREFIX, then build and run applications
# against it with find_package(kdc) (C and C++) and with pkg-config.
# Usage: install_check.sh BUILD_DIR CONSUMER_SRC WORK_DIR CMAKE CC CXX VERSION
set -eu
build_dir=$1 consumer_src=$2 work=$3 cmake=$4 cc=$5 cxx=$6 version=$7
# The build's own compile/link flags (sanitizer presets): consumers of an
# instrumented libkdc must be instrumented the same way.
cflags=${KDC_CONSUMER_CFLAGS:-} cxxflags=${KDC_CONSUMER_CXXFLAGS:-} ldflags=${KDC_CONSUMER_LDFLAGS:-}

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

echo "== cmake --install (components libkdc and harness) into $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" --component libkdc
"$cmake" --install "$build_dir" --prefix "$prefix" --component harness

for f in include/kdc/kdc.h include/kdc/tracker.h include/kdc/export.h \
        include/kdc/dlq.h include/kdc/watermark.h include/kdc/assignment.h \
        include/kdc/classify.h include/kdc/retry.h include/kdc/testkit.h; do
        test -f "$prefix/$f" || { echo "missing $f"; exit 1; }
done
test -n "$(find "$prefix" -name libkdc.a)" || { echo "libkdc.a missing"; exit 1; }
# kdc/testkit.h is installed, so its library and targets must be too
test -n "$(find "$prefix" -name libkdc-testkit.a)" || { echo "libkdc-testkit.a missing"; exit 1; }
config=$(find "$prefix" -name kdcConfig.cmake)
pc=$(find "$prefix" -name kdc.pc)
test -n "$config" && test -f "$(dirname "$config")/kdcConfigVersion.cmake" &&
        test -f "$(dirname "$config")/kdcTargets.cmake" &&
        test -f "$(dirname "$config")/kdcTestkitTargets.cmake" ||
        { echo "CMake package files missing"; exit 1; }
test -n "$pc" || { echo "kdc.pc missing"; exit 1; }
test ! -e "$prefix/include/kdc/internal.h" || { echo "internal header installed"; exit 1; }
# kdc-harness(1), generated from its --help (man/), goes with it
test -s "$prefix/share/man/man1/kdc-harness.1" || { echo "kdc-harness(1) not installed"; exit 1; }
MANWIDTH=80 man -l "$prefix/share/man/man1/kdc-harness.1" | grep -q "^SYNOPSIS" ||
        { echo "kdc-harness(1) does not render"; exit 1; }

echo "== find_package(kdc $version) consumer"
"$cmake" -S "$consumer_src" -B "$work/cmake-consumer" \
        -DCMAKE_PREFIX_PATH="$prefix" -DKDC_EXPECTED_VERSION="$version" \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
        -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags"
"$cmake" --build "$work/cmake-consumer"
"$work/cmake-consumer/kdc_consumer_c"
"$work/cmake-consumer/kdc_consumer_cxx"
"$work/cmake-consumer/kdc_consumer_static"
"$work/cmake-consumer/kdc_consumer_testkit" >"$work/testkit.out"
grep -q '"runs": \[\]' "$work/testkit.out" ||
        { echo "kdc_consumer_testkit printed no empty JSON report"; cat "$work/testkit.out"; exit 1; }
tail -n 1 "$work/testkit.out"
# Static means static: no libkdc.so needed at run time.
if readelf -d "$work/cmake-consumer/kdc_consumer_static" | grep -q 'NEEDED.*libkdc'; then
        echo "kdc_consumer_static needs libkdc.so"; exit 1
fi
readelf -d "$work/cmake-consumer/kdc_consumer_c" | grep -q 'NEEDED.*libkdc\.so' ||
        { echo "kdc_consumer_c does not use libkdc.so"; exit 1; }

echo "== pkg-config consumer"
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
test "$(pkg-config --modversion kdc)" = "$version" ||
        { echo "kdc.pc version is not $version"; exit 1; }
flags=$(pkg-config --cflags --libs kdc)
echo "pkg-config --cflags --libs kdc: $flags"
case " $flags " in
*" -lkdc "*) ;;
*) echo "no -lkdc"; exit 1 ;;
esac
case " $flags " in
*" -lrdkafka "*) ;;
*) echo "no -lrdkafka (Requires: rdkafka)"; exit 1 ;;
esac
# shellcheck disable=SC2086 # flags are words by design
# As the README says for a prefix the dynamic linker does not search: the
# run path of libkdc's directory. Run with an empty environment.
"$cc" $cflags "$consumer_src/main.c" $flags -Wl,-rpath,"$(pkg-config --variable=libdir kdc)" \
        $ldflags -o "$work/pc-consumer"
env -i "$work/pc-consumer"

echo "== the installed kdc-harness runs with an empty environment"
env -i "$prefix/bin/kdc-harness" --version | grep -q "^kdc-harness $version\$" ||
        { echo "installed kdc-harness does not run"; env -i "$prefix/bin/kdc-harness" --version; exit 1; }
env -i "$prefix/bin/kdc-harness" list | grep -q '^baseline' ||
        { echo "installed kdc-harness list failed"; exit 1; }

echo "== pkg-config --static consumer (libkdc.a)"
static_flags=$(pkg-config --static --libs kdc)
echo "pkg-config --static --libs kdc: $static_flags"
case " $static_flags " in
*" -lcrypto "*) ;;
*) echo "no -lcrypto (Requires.private: libcrypto)"; exit 1 ;;
esac
case " $static_flags " in
*" -ljansson "*) ;;
*) echo "no -ljansson (Requires.private: jansson)"; exit 1 ;;
esac
# libkdc.a by name (-lkdc would pick libkdc.so), librdkafka stays shared:
# --static would also ask for librdkafka's own private libraries.
# shellcheck disable=SC2086
"$cc" $cflags "$consumer_src/main.c" $(pkg-config --cflags kdc) \
        "$(pkg-config --variable=libdir kdc)/libkdc.a" \
        $(pkg-config --libs rdkafka libcrypto jansson) -pthread $ldflags -o "$work/pc-static-consumer"
"$work/pc-static-consumer"
echo "install check passed"
