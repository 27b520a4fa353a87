#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/fuzz/fuzz-proto.sh: build and run the libFuzzer target of the job
# channel decoder (common/fuzz_proto.c) on the HOST with clang, because the
# testbed root has no clang. The decoder is plain C with no library needs
# beyond libc, so the host's clang (Debian 12: apt-get install clang) builds it.
#
# usage: tests/fuzz/fuzz-proto.sh [SECONDS (default 60)] [extra libFuzzer args]
# Writes the binary and corpus under ${FUZZ_DIR:-build-fuzz/} (gitignored as
# build-*/); exits non-zero when libFuzzer finds a crash, leak or abort.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
out=${FUZZ_DIR:-$top/build-fuzz}
cc=${CLANG:-$(command -v clang || command -v clang-14 || true)}
[ -n "$cc" ] || { echo "fuzz-proto: clang not found (apt-get install clang)" >&2; exit 77; }
mkdir -p "$out/corpus"
# config.h of the real build is not needed by proto.c; give it an empty one.
: >"$out/config.h"
"$cc" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$out" -I"$top/common" \
	"$top/common/fuzz_proto.c" "$top/common/proto.c" "$top/common/conf.c" "$top/common/contract.c" \
	-o "$out/fuzz_proto"
# Seeds: one valid payload of each kind and one frame header.
printf 'type=hello\njob=42\nhost=node1\ngpus=4\nstep=12\nrate=10.5\n' >"$out/corpus/hello"
printf 'type=ack\njob=1\norder=5\nresult=refused\ngrant=12\nreason=not now\n' >"$out/corpus/ack"
printf 'type=jobinfo\njob=3\nuser=alice\nmin=1\nmax=8\ntarget=5\ngpus=3\nstate=growing\nresized=17\nconnected=1\ngrants=2\nnodes=node[1-2]\n' >"$out/corpus/jobinfo"
printf 'type=release\njob=7\norder=1\ngrant=9\ndeadline=1795000000123\n' >"$out/corpus/release"
printf 'type=status\njob=5\ngpus=3\nstep=40\nrate=2.5\nreforms=1,0,2,0,1\ninplace=1,1,0\nrecovery=0,1,0,2,0,0,0,0,0,1\nrecovery_ms=75312\n' >"$out/corpus/status"
printf 'elastic:min=2,max=8,grace=60,sizes=2/4/8,weight=3' >"$out/corpus/tag"
printf '8,2,4' >"$out/corpus/sizes"
printf 'ELJC\001\006\000\000\000\000\000\020MUNGE:abcdefghi:' >"$out/corpus/frame"
exec "$out/fuzz_proto" -max_total_time="$secs" -max_len=2048 -print_final_stats=1 "$@" "$out/corpus"
