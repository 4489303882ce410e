#!/usr/bin/env bash
# Prepares the real-code suite's trees (scripts/real-code/projects.sh): installs the -dev packages
# a tree's build needs (only those missing), downloads its Debian 12 source package through a
# private apt configuration (a deb-src entry in build/real-code/apt; the system's apt sources are
# not touched), extracts it and records its compile commands with the project's own build system
# (CMake's export, or configure + `bear -- make` of just the Kafka module). Nothing here runs
# kdc-lint: scripts/real-code/check.sh does, on the prepared trees.
#
#   bash scripts/real-code/prepare.sh [--force] [TREE|PROJECT...]   (as root; default: all)
#
# Idempotent: a prepared tree has a stamp (build/real-code/stamps/TREE.done) and is left alone;
# downloaded tarballs are kept in build/real-code/src and reused. --force prepares again (from
# the kept tarballs). RC_WORK overrides build/real-code. Per tree, the time of each step and the
# disk it takes are appended to build/real-code/prepare-times.tsv and printed at the end.
# --probe instead tries the Debian 12 source packages that use librdkafka but are not in the
# suite (RC_UNAVAILABLE in projects.sh) and says which of their tarballs the archive serves.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
RC_WORK=${RC_WORK:-$root/build/real-code}
RC_REPO=$root
# shellcheck source=projects.sh
source "$here/projects.sh"

force=0 probe=0
want=()
for a in "$@"; do
  case $a in
    --force) force=1 ;;
    --probe) probe=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) want+=("$a") ;;
  esac
done
trees=()
add_tree() { local t; [ "$1" != none ] || return 0; for t in "${trees[@]}"; do [ "$t" = "$1" ] && return; done; trees+=("$1"); }
if [ ${#want[@]} -eq 0 ]; then
  for p in "${RC_PROJECTS[@]}"; do rc_project "$p"; add_tree "$TREE"; done
else
  for w in "${want[@]}"; do
    if [ -n "${RC_SOURCE[$w]:-}" ] || [ "$w" = installed ]; then add_tree "$w"
    else rc_project "$w" || exit 2; add_tree "$TREE"; fi
  done
fi

mkdir -p "$RC_WORK/src" "$RC_WORK/stamps" "$RC_WORK/db" "$RC_WORK/logs"
times=$RC_WORK/prepare-times.tsv
[ -f "$times" ] || printf 'date\ttree\tstep\tseconds\n' > "$times"
now() { date +%s.%N; }
step_start=
step() { step_start=$(now); }
step_done() { # tree step
  local s; s=$(awk -v a="$step_start" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')
  printf '%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$1" "$2" "$s" >> "$times"
  printf '   %-10s %6ss\n' "$2" "$s"
}

# --- packages -------------------------------------------------------------------------------
declare -A RC_DEPS=(
  [installed]="librdkafka-dev"
  [librdkafka]="cmake make gcc g++ python3"
  [kcat]="make gcc pkg-config librdkafka-dev bear"
  [collectd]="autoconf automake libtool flex bison pkg-config make gcc librdkafka-dev bear"
  [rsyslog]="pkg-config make gcc libestr-dev libfastjson-dev zlib1g-dev uuid-dev librdkafka-dev bear"
  [syslog-ng]="autoconf automake autoconf-archive libtool flex bison pkg-config make gcc python3 libglib2.0-dev libivykis-dev libpcre3-dev libjson-c-dev libssl-dev libcriterion-dev librdkafka-dev bear"
  [proftpd-mod-kafka]="proftpd-dev make gcc libtool librdkafka-dev bear"
)
apt_updated=0
need_packages() { # tree
  local missing=() p
  for p in dpkg-dev ${RC_DEPS[$1]}; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "   installing: ${missing[*]}"
  if [ $apt_updated -eq 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >> "$RC_WORK/logs/apt-install.log"
}

# --- sources --------------------------------------------------------------------------------
private_apt() {
  mkdir -p "$RC_WORK/apt/lists/partial"
  echo "deb-src http://deb.debian.org/debian bookworm main" > "$RC_WORK/apt/sources.list"
  cat > "$RC_WORK/apt/apt.conf" <<CONF
Dir::Etc::SourceList "$RC_WORK/apt/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::State::Lists "$RC_WORK/apt/lists";
CONF
}
src_lists_fresh=0
fetch() { # tree: leaves the checked upstream tarball in $RC_WORK/src
  local spec pkg tarball sum
  read -r pkg tarball sum <<< "${RC_SOURCE[$1]}"
  cd "$RC_WORK/src"
  if [ ! -f "$tarball" ]; then
    private_apt
    export APT_CONFIG=$RC_WORK/apt/apt.conf
    if [ $src_lists_fresh -eq 0 ]; then apt-get update -qq; src_lists_fresh=1; fi
    # The *.debian.tar.xz part may 404 (exit status 100); the upstream tarball is what matters.
    # The pinned version first, then whatever version the archive has (same tarball or not:
    # the checksum below decides).
    apt-get source --download-only -q "$pkg" >> "$RC_WORK/logs/apt-source.log" 2>&1 ||
      [ -f "$tarball" ] ||
      apt-get source --download-only -q "${pkg%%=*}" >> "$RC_WORK/logs/apt-source.log" 2>&1 || true
    unset APT_CONFIG
    [ -f "$tarball" ] || { echo "real-code: $tarball could not be downloaded" \
      "(build/real-code/logs/apt-source.log)" >&2; return 1; }
  fi
  if [ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$sum" ]; then
    echo "real-code: $tarball is not the tarball the expected findings were triaged on" \
         "(sha256 $sum); update docs/real-code/expected/ after a new triage" >&2
    return 1
  fi
}
extract() { # tree dir
  local pkg tarball sum
  read -r pkg tarball sum <<< "${RC_SOURCE[$1]}"
  rm -rf "$RC_WORK/src/$2" && mkdir -p "$RC_WORK/src/$2"
  tar xf "$RC_WORK/src/$tarball" -C "$RC_WORK/src/$2" --strip-components=1
}

# --- builds ---------------------------------------------------------------------------------
jobs=$(( $(nproc) < 2 ? $(nproc) : 2 ))
build_librdkafka() {
  local s=$RC_WORK/src
  rm -rf "$s/librdkafka-build" "$s/librdkafka-recall" "$RC_WORK/db/librdkafka" "$RC_WORK/db/librdkafka-recall"
  # Configure only: CMake lists every example and test with its real flags (the one generated
  # header, generated/dummy/config.h, is written at configure time).
  cmake -S "$s/librdkafka" -B "$s/librdkafka-build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DRDKAFKA_BUILD_TESTS=ON -DRDKAFKA_BUILD_EXAMPLES=ON -DWITH_SSL=OFF -DWITH_SASL=OFF \
    -DWITH_ZSTD=OFF -DWITH_ZLIB=OFF -DENABLE_LZ4_EXT=OFF -DWITH_CURL=OFF > "$RC_WORK/logs/librdkafka-cmake.log"
  # Programs CMake does not build (Windows-only or retired examples, tests outside the
  # runner): the flags of their nearest sibling.
  python3 "$here/compdb.py" complete "$s/librdkafka-build/compile_commands.json" \
    "$RC_WORK/db/librdkafka/compile_commands.json" "$s/librdkafka" examples tests
  # Recall check: the producer examples with their delivery-report registration removed
  # (check.sh expects kdc-lint to report every one of them).
  mkdir -p "$s/librdkafka-recall"
  local f files=()
  for f in idempotent_producer.c producer.c rdkafka_example.c transactions.c \
           transactions-older-broker.c producer.cpp rdkafka_example.cpp; do
    sed -E 's/rd_kafka_conf_set_dr_msg_cb\(([^,]+), *[a-z_]+\)/(void)(\1)/;
            s/conf->set\("dr_cb", *&[a-z_]+, *errstr\)/0/' "$s/librdkafka/examples/$f" \
      > "$s/librdkafka-recall/$f"
    cmp -s "$s/librdkafka/examples/$f" "$s/librdkafka-recall/$f" &&
      { echo "real-code: the recall mutation left examples/$f unchanged" >&2; return 1; }
    files+=("$s/librdkafka-recall/$f")
  done
  python3 "$here/compdb.py" like "$s/librdkafka-build/compile_commands.json" \
    "$RC_WORK/db/librdkafka-recall/c.json" "$s/librdkafka/examples/producer.c" "${files[@]:0:5}"
  python3 "$here/compdb.py" like "$s/librdkafka-build/compile_commands.json" \
    "$RC_WORK/db/librdkafka-recall/cxx.json" "$s/librdkafka/examples/producer.cpp" "${files[@]:5}"
  python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))+json.load(open(sys.argv[2])),
    open(sys.argv[3],"w"), indent=1)' "$RC_WORK/db/librdkafka-recall/c.json" \
    "$RC_WORK/db/librdkafka-recall/cxx.json" "$RC_WORK/db/librdkafka-recall/compile_commands.json"
  rm -f "$RC_WORK/db/librdkafka-recall/c.json" "$RC_WORK/db/librdkafka-recall/cxx.json"
}
build_kcat() { # its mklove configure, then the real build under bear
  cd "$RC_WORK/src/kcat"
  ./configure > "$RC_WORK/logs/kcat-configure.log" 2>&1
  bear -- make -j"$jobs" kcat > "$RC_WORK/logs/kcat-make.log" 2>&1
}
build_collectd() { # autotools from the release tarball; only the write_kafka plugin is built
  cd "$RC_WORK/src/collectd"
  ./build.sh > "$RC_WORK/logs/collectd-build.sh.log" 2>&1
  ./configure --disable-all-plugins --enable-write_kafka > "$RC_WORK/logs/collectd-configure.log" 2>&1
  grep -qE '^ +write_kafka \. .* yes$' "$RC_WORK/logs/collectd-configure.log" ||
    { echo "real-code: collectd's configure disabled write_kafka" >&2; return 1; }
  bear -- make -j"$jobs" write_kafka.la > "$RC_WORK/logs/collectd-make.log" 2>&1
}
build_rsyslog() { # configure with the two Kafka modules; build only their directories
  cd "$RC_WORK/src/rsyslog"
  ./configure --enable-omkafka --enable-imkafka --disable-libgcrypt --disable-default-tests \
    --disable-libsystemd --disable-fmhttp > "$RC_WORK/logs/rsyslog-configure.log" 2>&1
  bear -- sh -c "make -j$jobs -C plugins/omkafka && make -j$jobs -C plugins/imkafka" \
    > "$RC_WORK/logs/rsyslog-make.log" 2>&1
}
build_syslog-ng() { # the Debian build's autotools (git tarball: autogen.sh); only modules/kafka
  cd "$RC_WORK/src/syslog-ng"
  skip_submodules=1 ./autogen.sh > "$RC_WORK/logs/syslog-ng-autogen.log" 2>&1
  ./configure --enable-kafka --with-ivykis=system --with-jsonc=system --disable-python \
    --disable-java --disable-java-modules --disable-sql --disable-mongodb --disable-amqp \
    --disable-smtp --disable-mqtt --disable-http --disable-redis --disable-riemann \
    --disable-geoip2 --disable-systemd --disable-afsnmp --disable-native \
    > "$RC_WORK/logs/syslog-ng-configure.log" 2>&1
  grep -qE 'Kafka support \(module\) *: yes' "$RC_WORK/logs/syslog-ng-configure.log" ||
    { echo "real-code: syslog-ng's configure disabled the kafka module" >&2; return 1; }
  # The generated parsers the module's objects include (lib's and its own), then the module's
  # and its unit tests' objects, without the rest of syslog-ng.
  local db gen objs
  db=$(make -pn 2>/dev/null)
  gen=$(sed -n 's/^BUILT_SOURCES = //p' <<< "$db" | head -1 | tr ' ' '\n' | grep -E '^(lib|modules/kafka)/' || true)
  objs=$(sed -n 's/^am_modules_kafka[a-z_]*_OBJECTS = //p' <<< "$db" | sort -u | sed 's/\$(OBJEXT)/o/g')
  # shellcheck disable=SC2086
  make -j"$jobs" $gen > "$RC_WORK/logs/syslog-ng-make-generated.log" 2>&1
  # shellcheck disable=SC2086
  bear -- make -j"$jobs" $objs > "$RC_WORK/logs/syslog-ng-make.log" 2>&1
}
build_proftpd-mod-kafka() {
  # ./configure writes mod_kafka.h; Debian builds proftpd modules with prxs (proftpd-dev),
  # which refuses a directory holding a configure script: set it aside for the compile.
  cd "$RC_WORK/src/proftpd-mod-kafka"
  ./configure > "$RC_WORK/logs/proftpd-mod-kafka-configure.log" 2>&1
  mv configure configure.ran
  bear -- prxs -c mod_kafka.c > "$RC_WORK/logs/proftpd-mod-kafka-make.log" 2>&1 || { mv configure.ran configure; return 1; }
  mv configure.ran configure
}

dir_of_tree() { case $1 in librdkafka) echo "librdkafka librdkafka-build librdkafka-recall" ;; *) echo "$1" ;; esac; }

if [ $probe = 1 ]; then
  private_apt
  export APT_CONFIG=$RC_WORK/apt/apt.conf
  apt-get update -qq
  mkdir -p "$RC_WORK/probe" && cd "$RC_WORK/probe"
  for pkg in "${!RC_UNAVAILABLE[@]}"; do
    apt-get source --download-only -q "$pkg" > "$RC_WORK/logs/probe-$pkg.log" 2>&1 || true
    got=$(ls "${pkg}"_*.orig.tar.* 2>/dev/null || true)
    printf '%-48s %s\n' "$pkg" "${got:-no upstream tarball ($(grep -m1 -o '[0-9]\{3\}  *Not Found' "$RC_WORK/logs/probe-$pkg.log" || echo 'see logs'))}"
    printf '   %s\n' "${RC_UNAVAILABLE[$pkg]}"
  done
  exit 0
fi

echo "real-code: preparing ${trees[*]} in $RC_WORK"
summary=()
for t in "${trees[@]}"; do
  stamp=$(rc_stamp "$t")
  if [ $force -eq 0 ] && [ -f "$stamp" ]; then echo "== $t: prepared ($stamp)"; continue; fi
  rm -f "$stamp"
  echo "== $t"
  t0=$(now)
  step; need_packages "$t"; step_done "$t" packages
  if [ "$t" != installed ]; then
    step; fetch "$t"; step_done "$t" download
    step; extract "$t" "$t"; step_done "$t" extract
    step; "build_$t"; step_done "$t" build
  fi
  cd "$RC_WORK/src"
  disk=0
  if [ "$t" != installed ]; then
    read -r _ tarball _ <<< "${RC_SOURCE[$t]}"
    paths=("$tarball")
    for d in $(dir_of_tree "$t") "$RC_WORK/db/$t" "$RC_WORK/db/$t-recall"; do
      [ -e "$d" ] && paths+=("$d")
    done
    disk=$(du -sbc "${paths[@]}" | tail -1 | cut -f1)
  fi
  total=$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')
  printf '%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" total "$total" >> "$times"
  printf '%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" disk-bytes "$disk" >> "$times"
  summary+=("$(printf '%-18s %7ss %6s MB' "$t" "$total" "$((disk / 1000000))")")
  date -u +%FT%TZ > "$stamp"
done
if [ ${#summary[@]} -gt 0 ]; then
  echo "real-code: prepared (time, disk: tarball + tree + database):"
  printf '  %s\n' "${summary[@]}"
fi
