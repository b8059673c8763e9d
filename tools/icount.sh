#!/usr/bin/env bash
#
# icount.sh - instructions per message on shmpi's small-message path,
# counted by callgrind (deterministic, unlike timings on shared machines).
#
# Usage: tools/icount.sh [SIZE ...]     (default: 8)
#   TDIR=DIR        count the binaries in DIR (default target/release),
#                   e.g. another build profile's
#   ICOUNT_NOBUILD=1  count what is built, build nothing
#
# For each size, runs examples/msgpath.rs under `shmpiexec -n 2` with
# every rank under `valgrind --tool=callgrind`, in four modes (blocking
# send/recv; a window of 64 isend/irecv with wait_all; the same sends
# into one recv_many, as shmpi-bench bw receives; blocking sends each
# received by irecv + wait), and prints the
# inclusive instruction count of `send_batch` and `recv_batch` divided by
# the number of messages. The receiver's batch waits in the ring before it
# is received, so no spinning is counted. Needs valgrind (Debian:
# apt-get install valgrind); exits 0 with a note when it is missing.
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
    echo "tools/icount.sh: valgrind is not installed (apt-get install valgrind); nothing counted"
    exit 0
fi
[ -n "${ICOUNT_NOBUILD:-}" ] || cargo build --release --quiet --bin shmpiexec --example msgpath
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(8)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# instructions per message (callgrind), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-8s %-9s %10s %10s\n' size mode send recv
for s in "${sizes[@]}"; do
    for mode in blocking window many irecv; do
        rm -f "$out"/cg.*
        S=$s MODE=$mode timeout 600 valgrind --tool=callgrind --trace-children=yes \
            --callgrind-out-file="$out/cg.%p" \
            ${TDIR:-target/release}/shmpiexec -n 2 ${TDIR:-target/release}/examples/msgpath > "$out/log" 2>&1
        n=$(grep -o 'msgpath: [0-9]*' "$out/log" | awk '{print $2}')
        [ -n "$n" ] || { echo "tools/icount.sh: the run failed:"; tail -5 "$out/log"; exit 1; }
        send=0 recv=0
        for f in "$out"/cg.*; do
            callgrind_annotate --inclusive=yes "$f" > "$out/ann" 2>/dev/null || true
            a=$(awk '/msgpath::send_batch \[/ && !x {gsub(",","",$1); print $1; x=1}' "$out/ann")
            b=$(awk '/msgpath::recv_batch \[/ && !x {gsub(",","",$1); print $1; x=1}' "$out/ann")
            if [ -n "$a" ]; then send=$a; fi
            if [ -n "$b" ]; then recv=$b; fi
        done
        printf '%-8s %-9s %10.1f %10.1f\n' "$s" "$mode" "$(echo "$send / $n" | bc -l)" "$(echo "$recv / $n" | bc -l)"
    done
done
