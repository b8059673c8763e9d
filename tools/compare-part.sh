#!/usr/bin/env bash
#
# compare-part.sh - partitioned communication (MPI 4.1 §4.2) side by side:
# the partitioned ping-pong of tools/peers/osu_pingpong.c (`partitioned`
# mode: P partitions a message, all readied by one MPI_Pready_range)
# built with tools/shmpicc and with Debian's mpicc.mpich, run alternately
# in one session, 2 ranks bound to 2 cores.
#
# Usage: tools/compare-part.sh [--rounds R] [--partitions P] [--max-size N]
#
# Prints per size the median one-way latency of each over the rounds and
# the ratio shmpi / MPICH (< 1: shmpi faster). Open MPI 4.1 has no
# partitioned communication (MPI_VERSION 3) and is left out; so is MPICH
# when mpicc.mpich or mpiexec.mpich is missing. Builds the release
# library first.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ROUNDS=5
PARTS=8
MAX=1048576
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --partitions) PARTS=$2; shift 2 ;;
        --max-size) MAX=$2; shift 2 ;;
        *) echo "compare-part.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

cargo build --release --quiet
OUT=target/peers
mkdir -p "$OUT"
SHMPI_LIBDIR="$ROOT/target/release" tools/shmpicc -O2 -o "$OUT/osu_pingpong.shmpi" \
    tools/peers/osu_pingpong.c
have_mpich=0
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
    mpicc.mpich -O2 -o "$OUT/osu_pingpong.mpich" tools/peers/osu_pingpong.c
    have_mpich=1
else
    echo "# MPICH skipped: mpicc.mpich or mpiexec.mpich is missing" >&2
fi
echo "# Open MPI left out: 4.1 has no partitioned communication (MPI_VERSION 3)" >&2

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
args=(partitioned --partitions "$PARTS" --max-size "$MAX")
for r in $(seq 1 "$ROUNDS"); do
    target/release/shmpiexec -n 2 --bind-to core "$OUT/osu_pingpong.shmpi" "${args[@]}" \
        | awk '!/^#/ { print "shmpi", $1, $2 }' >>"$WORK/all.dat"
    if [ "$have_mpich" = 1 ]; then
        mpiexec.mpich -n 2 -bind-to core "$OUT/osu_pingpong.mpich" "${args[@]}" \
            | awk '!/^#/ { print "mpich", $1, $2 }' >>"$WORK/all.dat"
    fi
done

echo "# partitioned ping-pong, $PARTS partitions readied at once; one-way latency, us,"
echo "# median of $ROUNDS alternating rounds; ratio = shmpi / MPICH (< 1: shmpi faster)"
printf '%-10s %10s %10s %8s\n' size shmpi MPICH ratio
sort -k1,1 -k2,2n -k3,3g "$WORK/all.dat" | awk '
    { v[$1 " " $2] = v[$1 " " $2] " " $3; sizes[$2] = 1 }
    function median(s,   a, n) {
        n = split(s, a, " ")
        if (n == 0) return ""
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        for (s in sizes) order[++k] = s + 0
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
            if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
        for (i = 1; i <= k; i++) {
            s = order[i]; a = median(v["shmpi " s]); b = median(v["mpich " s])
            ratio = (a != "" && b != "" && b > 0) ? sprintf("%.2f", a / b) : "-"
            printf "%-10s %10s %10s %8s\n", s, (a == "" ? "?" : sprintf("%.3f", a)),
                (b == "" ? "?" : sprintf("%.3f", b)), ratio
        }
    }'
