#!/usr/bin/env bash
#
# compare-comm.sh - communicator construction (dup, split, create, each
# followed by free) timed by shmpi-bench comm and by the same C loop
# (tools/peers/comm_bench.c) under Debian's MPICH and Open MPI, alternating
# in one run.
#
# Usage: tools/compare-comm.sh [--rounds R] [--ranks 2,4,8] [--iterations N]
#
# For each rank count and round: shmpi, MPICH, Open MPI, one after the
# other; then the median per (contender, ranks, op) and the ratios
# shmpi/peer (< 1: shmpi is faster). A peer whose compiler or launcher is
# missing is skipped. With more ranks than CPUs nobody is pinned (Open MPI
# gets --oversubscribe) and the iteration count drops to a tenth: MPICH's
# busy-polling progress slows to milliseconds per call when ranks share
# cores. Every run is bounded by `timeout` (RUN_TIMEOUT, default 120 s); a
# run that fails or times out is reported and left out.
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

ROUNDS=3
RANKS=2,4,8
ITERS=1000
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift ;;
        --ranks) RANKS=$2; shift ;;
        --iterations) ITERS=$2; shift ;;
        *) echo "usage: $0 [--rounds R] [--ranks 2,4,8] [--iterations N]" >&2; exit 2 ;;
    esac
    shift
done
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
SHMPI_BENCH=${SHMPI_BENCH:-target/release/shmpi-bench}
OUT=target/peers
mkdir -p "$OUT"
CPUS=$(nproc)

[ -x "$SHMPI_BENCH" ] || cargo build --release --bin shmpi-bench
HAVE_MPICH=0; HAVE_OMPI=0
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
    mpicc.mpich -O2 -o "$OUT/comm_bench.mpich" tools/peers/comm_bench.c && HAVE_MPICH=1
else echo "skip MPICH: mpicc.mpich or mpiexec.mpich not found"; fi
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
    mpicc.openmpi -O2 -o "$OUT/comm_bench.openmpi" tools/peers/comm_bench.c && HAVE_OMPI=1
else echo "skip Open MPI: mpicc.openmpi or mpirun.openmpi not found"; fi

DAT=$OUT/last-comm.dat
: >"$DAT"
echo "# date: $(date -u '+%F %T') UTC, $CPUS CPUs, rounds $ROUNDS, ranks $RANKS"
for n in ${RANKS//,/ }; do
    it=$ITERS
    if [ "$n" -gt "$CPUS" ]; then it=$((ITERS / 10 > 0 ? ITERS / 10 : 1)); fi
    for ((r = 1; r <= ROUNDS; r++)); do
        # name command...
        runs=("shmpi $SHMPI_BENCH comm --ranks $n --iterations $it --warmup $((it / 10))")
        if [ $HAVE_MPICH = 1 ]; then
            if [ "$n" -le "$CPUS" ]; then b="-bind-to core"; else b=""; fi
            runs+=("MPICH mpiexec.mpich -n $n $b $OUT/comm_bench.mpich --iterations $it --warmup $((it / 10))")
        fi
        if [ $HAVE_OMPI = 1 ]; then
            if [ "$n" -le "$CPUS" ]; then b="--bind-to core --map-by core"; else b="--oversubscribe --bind-to none"; fi
            runs+=("OpenMPI mpirun.openmpi --allow-run-as-root -np $n $b --mca pml ob1 --mca btl self,vader $OUT/comm_bench.openmpi --iterations $it --warmup $((it / 10))")
        fi
        for run in "${runs[@]}"; do
            name=${run%% *}; cmd=${run#* }
            if line=$(timeout "$RUN_TIMEOUT" $cmd 2>/dev/null | grep -E '^[0-9]' | tail -1) && [ -n "$line" ]; then
                echo "$name $line" >>"$DAT"
            else
                echo "  $name at $n ranks, round $r: failed or timed out after ${RUN_TIMEOUT}s" >&2
            fi
        done
    done
done

echo
echo "# us per call + free, median of $ROUNDS rounds; ratio < 1 means shmpi is faster"
awk '
    { k = $1 " " $2; n[k]++; d[k, n[k]] = $3; s[k, n[k]] = $4; c[k, n[k]] = $5; seen[$2] = 1; who[$1] = 1 }
    function med(k, a,   m, i, j, t, v) {
        m = n[k]; for (i = 1; i <= m; i++) v[i] = (a == 1 ? d[k, i] : a == 2 ? s[k, i] : c[k, i])
        for (i = 2; i <= m; i++) { t = v[i]; for (j = i - 1; j > 0 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
        return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
    }
    END {
        split("dup split create", ops, " ")
        printf "%-6s %-7s %10s %10s %10s %12s %12s\n", "# ranks", "op", "shmpi", "MPICH", "OpenMPI", "shmpi/MPICH", "shmpi/OpenMPI"
        for (r in seen) rs[++nr] = r + 0
        for (i = 2; i <= nr; i++) { t = rs[i]; for (j = i - 1; j > 0 && rs[j] > t; j--) rs[j + 1] = rs[j]; rs[j + 1] = t }
        for (i = 1; i <= nr; i++) for (o = 1; o <= 3; o++) {
            r = rs[i]
            a = ("shmpi " r in n) ? med("shmpi " r, o) : -1
            b = ("MPICH " r in n) ? med("MPICH " r, o) : -1
            c2 = ("OpenMPI " r in n) ? med("OpenMPI " r, o) : -1
            printf "%-7s %-7s %10s %10s %10s %12s %12s\n", r, ops[o],
                a < 0 ? "-" : sprintf("%.2f", a), b < 0 ? "-" : sprintf("%.2f", b), c2 < 0 ? "-" : sprintf("%.2f", c2),
                (a < 0 || b <= 0) ? "-" : sprintf("%.3f", a / b), (a < 0 || c2 <= 0) ? "-" : sprintf("%.3f", a / c2)
        }
    }' "$DAT"
echo "# raw rows (name ranks dup split create): $DAT"
