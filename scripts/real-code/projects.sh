# The real-code suite's projects: sourced by prepare.sh and check.sh (not run on its own).
#
# A *tree* is what prepare.sh downloads and builds once (a Debian 12 source package, or a
# directory of the installed system); a *project* is one kdc-lint run on a prepared tree:
#   rc_project NAME  sets  TREE  ROOT (the directory kdc-lint runs in: file names in its report
#   and in docs/real-code/expected/NAME.txt are relative to it)  DB (the directory holding the
#   compile_commands.json, empty for kdc-lint's default flags)  PATHS (the units, below ROOT)
#   MODE (whole or per-unit, below)
# Every path is below $RC_WORK (build/real-code by default) except the installed examples and
# the checked-in reproductions (below $RC_REPO, the checkout).

# shellcheck shell=bash
RC_PROJECTS=(
  librdkafka-installed-examples
  librdkafka-examples
  librdkafka-tests
  librdkafka-tests-unbuilt
  librdkafka-src
  librdkafka-recall
  kcat
  collectd
  rsyslog
  syslog-ng
  proftpd-mod-kafka
  repro
)

# Debian 12 source packages: tree -> "source=version orig-tarball sha256". The version is the
# one whose upstream tarball the archive serves (rsyslog: +deb12u1; FACTS.md); the checksum
# pins the sources the expected findings were triaged on (a Debian revision that keeps the
# same upstream tarball keeps the same checksum).
declare -A RC_SOURCE=(
  [librdkafka]="librdkafka=2.0.2-1 librdkafka_2.0.2.orig.tar.gz f321bcb1e015a34114c83cf1aa7b99ee260236aab096b85c003170c90a47ca9d"
  [kcat]="kafkacat=1.7.1-2 kafkacat_1.7.1.orig.tar.gz 4b957b7ffc728a88e163bc4e581aa371e56c7e74c8b84b1fe0583d0302ef8d58"
  [collectd]="collectd=5.12.0-14 collectd_5.12.0.orig.tar.xz 9ccc5ebb9884a8fca1c4cdbd48d45c5875d683330a482d09da4fe2c571f3b536"
  [rsyslog]="rsyslog=8.2302.0-1+deb12u1 rsyslog_8.2302.0.orig.tar.gz 25415f85b662615ce3c83077d53758029e8743cb5929044bfd3564e3d626a3b9"
  [syslog-ng]="syslog-ng=3.38.1-5+deb12u1 syslog-ng_3.38.1.orig.tar.gz e834737c9a57ea60deab3c61176f728189b37ac9eddcb7c7e56b603eba3f394c"
  [proftpd-mod-kafka]="proftpd-mod-kafka=0.1-1 proftpd-mod-kafka_0.1.orig.tar.gz 5a6187a465689fac99bdf97da8a29b49aabe0d24830ee2d8f6b6d736363d6e97"
)

# Debian 12 source packages that use librdkafka (`apt-cache rdepends librdkafka1 librdkafka-dev`,
# and every Build-Depends on librdkafka-dev in bookworm's Sources) but are not in the suite, and
# why; `prepare.sh --probe` tries them again.
declare -A RC_UNAVAILABLE=(
  [clickhouse]="18.16.1+ds-7.3 (C++, its Kafka table engine): the archive answers 404 for clickhouse_18.16.1+ds.orig.tar.xz"
  [pmacct]="1.7.7-1 (C, its Kafka plugin): 404 for pmacct_1.7.7.orig.tar.gz"
  [python-confluent-kafka]="1.7.0-4 (a C extension): 404 for python-confluent-kafka_1.7.0.orig.tar.xz"
  [golang-github-confluentinc-confluent-kafka-go]="0.11.6-1: downloads, but it is Go; librdkafka is called from Go through cgo (no .c/.cpp unit for kdc-lint)"
)

rc_project() { # NAME -> TREE ROOT DB PATHS MODE
  # MODE whole: one kdc-lint run on PATHS (one program, or a plugin and the code it links);
  # MODE per-unit: one run per translation unit below PATHS (each unit is a program of its
  # own: kdc-lint's analysis is whole-program, and same-named functions of different programs,
  # main() first, must not meet in one run; docs/real-code.md, "One program per run").
  local s=$RC_WORK/src
  MODE=whole
  case $1 in
    librdkafka-installed-examples)
      TREE=installed ROOT=/usr/share/doc/librdkafka-dev/examples DB= PATHS=(.) MODE=per-unit ;;
    librdkafka-examples)
      TREE=librdkafka ROOT=$s/librdkafka DB=$RC_WORK/db/librdkafka PATHS=(examples) MODE=per-unit ;;
    librdkafka-tests) # CMake's test-runner (and the interceptor plugin it loads)
      TREE=librdkafka ROOT=$s/librdkafka DB=$s/librdkafka-build PATHS=(tests) ;;
    librdkafka-tests-unbuilt) # programs in tests/ that no build builds any more
      TREE=librdkafka ROOT=$s/librdkafka DB=$RC_WORK/db/librdkafka MODE=per-unit
      PATHS=(tests/1000-unktopic.c tests/xxxx-assign_partition.c tests/xxxx-metadata.cpp
             tests/fuzzers/fuzz_regex.c tests/plugin_test/plugin_test.c) ;;
    librdkafka-src) # the library itself (librdkafka and its C++ binding)
      TREE=librdkafka ROOT=$s/librdkafka DB=$s/librdkafka-build PATHS=(src src-cpp) ;;
    librdkafka-recall)
      TREE=librdkafka ROOT=$s/librdkafka-recall DB=$RC_WORK/db/librdkafka-recall PATHS=(.) MODE=per-unit ;;
    kcat)
      TREE=kcat ROOT=$s/kcat DB=$s/kcat PATHS=(.) ;;
    collectd) # the write_kafka plugin and the utility libraries it links
      TREE=collectd ROOT=$s/collectd DB=$s/collectd PATHS=(.) ;;
    rsyslog) # two modules, each loaded by rsyslogd on its own
      TREE=rsyslog ROOT=$s/rsyslog DB=$s/rsyslog PATHS=(plugins/omkafka plugins/imkafka) MODE=per-unit ;;
    syslog-ng) # the kafka module and its unit tests
      TREE=syslog-ng ROOT=$s/syslog-ng DB=$s/syslog-ng PATHS=(modules/kafka) ;;
    proftpd-mod-kafka)
      TREE=proftpd-mod-kafka ROOT=$s/proftpd-mod-kafka DB=$s/proftpd-mod-kafka PATHS=(.) ;;
    repro) # the reproductions of the false positives (docs/real-code.md), one program each
      TREE=none ROOT=$RC_REPO/docs/real-code/repro DB= PATHS=(.) MODE=per-unit ;;
    *) echo "real-code: unknown project '$1' (one of: ${RC_PROJECTS[*]})" >&2; return 2 ;;
  esac
}

# The stamp prepare.sh writes when a tree is ready; check.sh refuses a tree without it.
rc_stamp() { echo "$RC_WORK/stamps/$1.done"; }
