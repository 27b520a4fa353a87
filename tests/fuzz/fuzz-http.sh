#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/fuzz/fuzz-http.sh: build and run the libFuzzer target of elasticd's
# metrics endpoint request check (plugin/elasticd/fuzz_http.c) on the HOST
# with clang, as tests/fuzz/fuzz-proto.sh does for the job channel.
#
# usage: tests/fuzz/fuzz-http.sh [SECONDS (default 60)] [extra libFuzzer args]
# Writes the binary and corpus under ${FUZZ_DIR:-build-fuzz/}; exits non-zero
# when libFuzzer finds a crash, leak or abort.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
out=${FUZZ_DIR:-$top/build-fuzz}
cc=${CLANG:-$(command -v clang || command -v clang-14 || true)}
[ -n "$cc" ] || { echo "fuzz-http: clang not found (apt-get install clang)" >&2; exit 77; }
mkdir -p "$out/corpus-http"
: >"$out/config.h"
"$cc" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$out" -I"$top/plugin/elasticd" \
	"$top/plugin/elasticd/fuzz_http.c" "$top/plugin/elasticd/http.c" \
	-o "$out/fuzz_http"
printf 'GET /metrics HTTP/1.1\r\nHost: node0:9120\r\nAccept: application/openmetrics-text\r\n\r\n' >"$out/corpus-http/get"
printf 'GET /metrics?x=1 HTTP/1.0\n\n' >"$out/corpus-http/lf"
printf 'POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc' >"$out/corpus-http/post"
printf 'GET / HTTP/1.1\r\n\r\n' >"$out/corpus-http/root"
exec "$out/fuzz_http" -max_total_time="$secs" -max_len=5000 -print_final_stats=1 "$@" "$out/corpus-http"
