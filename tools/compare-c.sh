#!/usr/bin/env bash
#
# compare-c.sh - what the C ABI costs: the OSU-style C ping-pong
# (tools/peers/osu_pingpong.c) built with tools/shmpicc and run under
# shmpiexec, against shmpi-bench (the Rust API), alternating in one
# session, 2 ranks bound to 2 cores.
#
# Usage: tools/compare-c.sh [--rounds R] [--size N] [--iterations N]
#
# Prints each round's one-way latency of the three (Rust API, C through
# libshmpi.so, C linked with libshmpi.a), then per contender the median
# and the best round and their ratios to the Rust API. These VMs are
# bimodal (the two vCPUs share a die in some seconds and not in others),
# so single rounds are noise: read the medians and best rounds. Builds
# the release library and tools first.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ROUNDS=9
SIZE=8
ITERS=200000
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --size) SIZE=$2; shift 2 ;;
        --iterations) ITERS=$2; shift 2 ;;
        *) echo "compare-c.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

cargo build --release --quiet
mkdir -p target/peers
SHMPI_LIBDIR="$ROOT/target/release" tools/shmpicc -O2 -o target/peers/osu_pingpong.shmpi \
    tools/peers/osu_pingpong.c
SHMPI_LIBDIR="$ROOT/target/release" tools/shmpicc -shmpi-static -O2 \
    -o target/peers/osu_pingpong.shmpi-static tools/peers/osu_pingpong.c
WARM=$((ITERS / 10))

echo "# compare-c.sh: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD), $(nproc) CPUs"
echo "# one-way latency of $SIZE B, $ITERS iterations, $ROUNDS alternating rounds (us)"
printf "%-6s %10s %10s %10s\n" round rust-api c-so c-static
: > target/peers/compare-c.dat
c_run() {
    target/release/shmpiexec -n 2 --bind-to core "$1" latency --min-size "$SIZE" \
        --max-size "$SIZE" --iterations "$ITERS" --warmup "$WARM" 2>/dev/null |
        grep -v '^#' | awk '{print $2}'
}
for r in $(seq 1 "$ROUNDS"); do
    a=$(target/release/shmpi-bench latency --min-size "$SIZE" --max-size "$SIZE" \
        --iterations "$ITERS" --warmup "$WARM" --format csv 2>/dev/null | tail -1 | cut -d, -f2)
    b=$(c_run target/peers/osu_pingpong.shmpi)
    c=$(c_run target/peers/osu_pingpong.shmpi-static)
    printf "%-6s %10s %10s %10s\n" "$r" "$a" "$b" "$c"
    echo "$a $b $c" >> target/peers/compare-c.dat
done
awk '
function med(col,   n, i, j, t, v) {
    n = 0
    for (i = 1; i <= NR; i++) v[++n] = x[i, col]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function best(col,   i, m) { m = x[1, col]; for (i = 2; i <= NR; i++) if (x[i, col] < m) m = x[i, col]; return m }
{ for (c = 1; c <= 3; c++) x[NR, c] = $c }
END {
    printf "# median    rust %.3f  c-so %.3f (%.3fx)  c-static %.3f (%.3fx)\n", med(1), med(2), med(2) / med(1), med(3), med(3) / med(1)
    printf "# best      rust %.3f  c-so %.3f (%.3fx)  c-static %.3f (%.3fx)\n", best(1), best(2), best(2) / best(1), best(3), best(3) / best(1)
}' target/peers/compare-c.dat
