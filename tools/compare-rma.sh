#!/usr/bin/env bash
#
# compare-rma.sh - one-sided latency (issue 9): tools/peers/osu_rma.c (put
# and get with lock_all + flush, passive target) built with shmpicc,
# mpicc.mpich and mpicc.openmpi, plus shmpi-bench put|get (the Rust API),
# alternating in one session, 2 ranks bound to 2 cores. A peer that is not
# installed is skipped.
#
# Usage: tools/compare-rma.sh [--rounds R] [--max-size N]
#
# Prints per operation and size the median latency (us) of each
# contender over the rounds.
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ROUNDS=5
MAX=4096
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --max-size) MAX=$2; shift 2 ;;
        *) echo "compare-rma.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
cargo build --release --quiet
mkdir -p target/peers
SRC=tools/peers/osu_rma.c
SHMPI_LIBDIR="$ROOT/target/release" tools/shmpicc -O2 -o target/peers/rma.shmpi "$SRC"
names=(shmpi-c shmpi-rust)
cmds=("target/release/shmpiexec -n 2 --bind-to core target/peers/rma.shmpi"
      "target/release/shmpi-bench")
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
    mpicc.mpich -O2 -o target/peers/rma.mpich "$SRC"
    names+=(mpich); cmds+=("mpiexec.mpich -n 2 -bind-to core target/peers/rma.mpich")
fi
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
    mpicc.openmpi -O2 -o target/peers/rma.openmpi "$SRC"
    names+=(openmpi)
    cmds+=("mpirun.openmpi --allow-run-as-root -np 2 --bind-to core --map-by core --mca pml ob1 --mca btl self,vader target/peers/rma.openmpi")
fi
echo "# compare-rma.sh: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD), $(nproc) CPUs, $ROUNDS rounds"
: > target/peers/compare-rma.dat
for r in $(seq 1 "$ROUNDS"); do
    for op in put get; do
        for i in "${!names[@]}"; do
            # shellcheck disable=SC2086
            ${cmds[$i]} "$op" --min-size 8 --max-size "$MAX" 2>/dev/null | grep -v '^#' |
                awk -v n="${names[$i]}" -v op="$op" '{ print op, n, $1, $2 }' >> target/peers/compare-rma.dat
        done
    done
done
printf "# %-4s %-8s" op size
printf " %11s" "${names[@]}"
printf "\n"
awk -v order="${names[*]}" '
{ k = $1 " " $3; v[k, $2, ++c[k, $2]] = $4; keys[k] = 1 }
function med(k, n,   m, i, j, t, a) {
    m = c[k, n]
    for (i = 1; i <= m; i++) a[i] = v[k, n, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
    nn = split(order, who, " ")
    for (k in keys) {
        split(k, p, " ")
        printf "  %-4s %-8s", p[1], p[2]
        for (i = 1; i <= nn; i++) printf " %11.3f", med(k, who[i])
        printf "\n"
    }
}' target/peers/compare-rma.dat | sort -k1,1 -k2,2n
