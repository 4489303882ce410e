#!/bin/sh
# The dynamic symbols libkdc exports must be exactly the functions its
# public headers declare with KDC_EXPORT: nothing hidden by mistake, nothing
# internal leaking (the library is built with -fvisibility=hidden).
# Usage: exported_symbols.sh LIBRARY INCLUDE_DIR
set -eu
lib=$1 include_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

perl -0777 -ne 'while (/KDC_EXPORT\b[^;{]*?\b(kdc_\w+)\s*\(/g) { print "$1\n" }' \
        "$include_dir"/kdc/*.h | sort -u >"$tmp/declared"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ { print $3 }' |
        sort -u >"$tmp/exported"

test -s "$tmp/declared" || { echo "no KDC_EXPORT declarations found"; exit 1; }
if ! diff -u "$tmp/declared" "$tmp/exported"; then
        echo "exported symbols differ from KDC_EXPORT declarations (- declared, + exported)"
        exit 1
fi
echo "$(wc -l <"$tmp/declared") symbols exported, all declared with KDC_EXPORT"
