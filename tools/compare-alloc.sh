#!/usr/bin/env bash
#
# compare-alloc.sh - bandwidth from MPI_Alloc_mem memory (issue 9): the
# OSU-style C bandwidth test (tools/peers/osu_pingpong.c bw --alloc-mem)
# built with shmpicc, mpicc.mpich and mpicc.openmpi, and shmpi with
# ordinary buffers, alternating in one session, 2 ranks bound to 2 cores.
# A peer that is not installed is skipped.
#
# Usage: tools/compare-alloc.sh [--rounds R] [--min-size N] [--max-size N]
#
# Prints each round's MB/s per size and contender, then per size the
# median of the rounds and shmpi's ratio to the better peer.
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ROUNDS=5
MIN=1048576
MAX=4194304
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --min-size) MIN=$2; shift 2 ;;
        --max-size) MAX=$2; shift 2 ;;
        *) echo "compare-alloc.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
cargo build --release --quiet
mkdir -p target/peers
SRC=tools/peers/osu_pingpong.c
SHMPI_LIBDIR="$ROOT/target/release" tools/shmpicc -O2 -o target/peers/osu.shmpi "$SRC"
names=(shmpi-alloc shmpi-heap)
cmds=("target/release/shmpiexec -n 2 --bind-to core target/peers/osu.shmpi bw --alloc-mem"
      "target/release/shmpiexec -n 2 --bind-to core target/peers/osu.shmpi bw")
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
    mpicc.mpich -O2 -o target/peers/osu.mpich "$SRC"
    names+=(mpich-alloc)
    cmds+=("mpiexec.mpich -n 2 -bind-to core target/peers/osu.mpich bw --alloc-mem")
fi
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
    mpicc.openmpi -O2 -o target/peers/osu.openmpi "$SRC"
    names+=(openmpi-alloc)
    cmds+=("mpirun.openmpi --allow-run-as-root -np 2 --bind-to core --map-by core --mca pml ob1 --mca btl self,vader target/peers/osu.openmpi bw --alloc-mem")
fi
echo "# compare-alloc.sh: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD), $(nproc) CPUs, $ROUNDS rounds"
: > target/peers/compare-alloc.dat
for r in $(seq 1 "$ROUNDS"); do
    for i in "${!names[@]}"; do
        # shellcheck disable=SC2086
        ${cmds[$i]} --min-size "$MIN" --max-size "$MAX" 2>/dev/null | grep -v '^#' |
            awk -v n="${names[$i]}" -v r="$r" '{ print r, n, $1, $2 }' >> target/peers/compare-alloc.dat
    done
done
awk '
{ v[$2, $3, ++c[$2, $3]] = $4; size[$3] = 1; who[$2] = 1 }
function med(n, s,   k, i, j, t, a) {
    k = c[n, s]
    for (i = 1; i <= k; i++) a[i] = v[n, s, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
END {
    printf "# %-10s", "size"
    for (n in who) printf " %14s", n
    printf " %12s\n", "x-better-peer"
    for (s in size) {
        printf "  %-10s", s
        best = 0
        for (n in who) { m = med(n, s); printf " %14.0f", m; if (n ~ /mpich|openmpi/ && m > best) best = m }
        printf " %12.2f\n", (best > 0 ? med("shmpi-alloc", s) / best : 0)
    }
}' target/peers/compare-alloc.dat | sort -n -k1
