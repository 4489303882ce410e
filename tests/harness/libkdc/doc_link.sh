#!/bin/sh
# The C program under docs/libkdc.md's "## Link libkdc" heading compiles
# (-Wall -Wextra -Werror) and links against this build's libkdc, shared and
# static, as a service would.
# Usage: doc_link.sh DOC INCLUDE_DIR LIBKDC_SO LIBKDC_A WORK_DIR CC
set -eu
doc=$1 include=$2 libso=$3 liba=$4 work=$5 cc=$6
cflags=${KDC_CONSUMER_CFLAGS:-} ldflags=${KDC_CONSUMER_LDFLAGS:-}

rm -rf "$work"
mkdir -p "$work"
awk '/^## Link libkdc$/ { section = 1; next }
     section && /^##? / { exit }
     section && !code && /^```c$/ { code = 1; next }
     code && /^```$/ { exit }
     code { print }' "$doc" >"$work/link-libkdc.c"
test -s "$work/link-libkdc.c" || { echo "no C block under '## Link libkdc' in $doc"; exit 1; }
grep -q 'kdc_dr_msg_cb' "$work/link-libkdc.c" || { echo "the example in $doc does not use libkdc"; exit 1; }

# shellcheck disable=SC2086 # flags are words by design
"$cc" $cflags -std=gnu11 -Wall -Wextra -Werror -I"$include" "$work/link-libkdc.c" \
        "$libso" -Wl,-rpath,"$(dirname "$libso")" $(pkg-config --libs rdkafka) $ldflags \
        -o "$work/link-libkdc"
# shellcheck disable=SC2086
"$cc" $cflags -std=gnu11 -Wall -Wextra -Werror -I"$include" "$work/link-libkdc.c" \
        "$liba" $(pkg-config --libs rdkafka libcrypto jansson) -pthread $ldflags \
        -o "$work/link-libkdc-static"
test -x "$work/link-libkdc" && test -x "$work/link-libkdc-static"
echo "docs/libkdc.md's Link libkdc example compiles and links ($(wc -l <"$work/link-libkdc.c") lines)"
