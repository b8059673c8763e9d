#!/usr/bin/env bash
#
# scale.sh - issue 6's item 6 in one command: ranks 0 and 1 ping-pong
# inside a job of N ranks whose others sleep in a receive, against the same
# ping-pong in a 2-rank job, alternating in one session; then the CPU an
# idle rank uses.
#
# Usage: tools/scale.sh [--ranks N] [--rounds R] [--max-size S]
#   --ranks N     the big job (default 64)
#   --rounds R    alternating runs of each (default 5)
#   --max-size S  the largest message (default 64)
#
# Prints, per size, the median one-way latency of each job and their
# ratio (the target: the big job no more than 1.2x the 2-rank one), then
# `shmpi-bench idle` (the target: under 5% of a core). Builds shmpi-bench
# first (cargo build --release).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
N=64 ROUNDS=5 MAX=64
while [ $# -gt 0 ]; do
    case "$1" in
        --ranks) N=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        --max-size) MAX=$2; shift ;;
        *) echo "usage: $0 [--ranks N] [--rounds R] [--max-size S]" >&2; exit 2 ;;
    esac
    shift
done
cargo build --release --quiet --bin shmpi-bench
B=target/release/shmpi-bench
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 1; r <= ROUNDS; r++)); do
    for n in 2 "$N"; do
        timeout 300 "$B" latency --ranks "$n" --max-size "$MAX" --format csv |
            awk -F, -v n="$n" 'NR > 1 { print n, $1, $2 }' >>"$out"
    done
done
echo "# tools/scale.sh: ranks 0 and 1 ping-pong in a job of 2 and of $N ranks (the others asleep in a receive)"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs, median of $ROUNDS alternating runs"
printf "%-8s %12s %12s %8s\n" size "2 ranks(us)" "$N ranks(us)" ratio
sort -k1,1n -k2,2n -k3,3g "$out" | awk -v big="$N" '
    function med(k,   m) { m = c[k]; return (m % 2) ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2 }
    { k = $1 " " $2; v[k, ++c[k]] = $3; s[$2] = 1 }
    END {
        for (x in s) sizes[++ns] = x + 0
        for (i = 2; i <= ns; i++) { x = sizes[i]; j = i - 1
            while (j > 0 && sizes[j] > x) { sizes[j + 1] = sizes[j]; j-- } sizes[j + 1] = x }
        for (i = 1; i <= ns; i++) {
            a = med("2 " sizes[i]); b = med(big " " sizes[i])
            printf "%-8s %12.3f %12.3f %8.2f\n", sizes[i], a, b, b / a
        }
    }'
"$B" idle | grep -v '^#'
