#!/usr/bin/env bash
#
# compare.sh - shmpi against MPICH and Open MPI on this machine, in one
# session: one table of latency and bandwidth per size with the ratios,
# and one PNG plot (latency and bandwidth against size, log axes, a curve
# per contender).
#
# Usage: tools/compare.sh [--rounds R] [--max-size N] [--placement P] [--plot FILE.png] [--again]
#
#   --rounds R     alternating rounds of each contender (default 5)
#   --max-size N   largest message (default 4 MiB)
#   --placement P  core | one | across: every run begins and ends in that
#                  placement of the two CPUs, by shmpi-bench floor
#                  (tools/compare-peers.sh --placement); any (default)
#   --plot FILE    where the PNG goes (default target/peers/compare.png)
#   --again        no new run: table and plot from the samples of the
#                  last compare.sh run (target/peers/compare-latency.dat,
#                  compare-bw.dat, copied from compare-peers.sh's
#                  last-*.dat when it ended, so a compare-peers.sh run of
#                  its own since does not replace them; its placement, not
#                  --placement's)
#
# What it does:
#   1. Builds shmpi-bench (cargo build --release).
#   2. Runs tools/compare-peers.sh all: our OSU-style C ping-pong and
#      window-bandwidth program (tools/peers/osu_pingpong.c) built with
#      mpicc.mpich and mpicc.openmpi, shmpi-bench, and the same C program
#      built with tools/shmpicc ("C": shmpi under the peers' own program),
#      alternating (A B C D A B C D ...), 2 ranks pinned to 2 cores. A peer
#      that is not installed is skipped (Debian: apt-get install mpich
#      libmpich-dev openmpi-bin libopenmpi-dev).
#   3. From the raw samples prints one table: per size the median of each
#      contender's rounds, and shmpi's ratio to the better peer (latency:
#      below 1 is shmpi faster; bandwidth: above 1 is shmpi faster), for
#      shmpi-bench and for the C program, then the same for each
#      contender's best round (these VMs are bimodal: the two vCPUs share
#      a die in most runs and not in some). Both shmpi columns receive a
#      bandwidth window into one buffer, as OSU does (shmpi-bench with
#      `Communicator::recv_many`, since 2026-12-03; before, into 64
#      buffers, which from 256 KiB made it a test of DRAM).
#   4. Plots the medians with gnuplot (apt-get install gnuplot-nox); without
#      gnuplot the table is still printed and the plot is skipped.
#
# The machine, the peers' versions, the commit and the command head the
# output and the plot, so a figure can be traced to its run.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

ROUNDS=5
MAX_SIZE=$((4 * 1024 * 1024))
PLOT=target/peers/compare.png
AGAIN=0
PLACEMENT=any
usage() {
    echo "usage: $0 [--rounds R] [--max-size N] [--placement any|core|one|across] [--plot FILE.png] [--again]" >&2
    exit 2
}
ARGS=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) [ $# -ge 2 ] || usage; ROUNDS=$2; shift ;;
        --max-size) [ $# -ge 2 ] || usage; MAX_SIZE=$2; shift ;;
        --plot) [ $# -ge 2 ] || usage; PLOT=$2; shift ;;
        --placement) [ $# -ge 2 ] || usage; PLACEMENT=$2; shift ;;
        --again) AGAIN=1 ;;
        -h | --help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
    shift
done

[ "$AGAIN" = 1 ] || cargo build --release --quiet --lib --bin shmpi-bench --bin shmpiexec

cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
ncpu=$(nproc)
mpich=$(command -v mpichversion >/dev/null 2>&1 && mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p' | head -1 || true)
ompi=$(command -v ompi_info >/dev/null 2>&1 && ompi_info --version 2>/dev/null | head -1 | sed 's/.*v//' || true)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
when=$(date -u '+%Y-%m-%d %H:%M UTC')
MACHINE="${cpu:-unknown CPU}, ${ncpu} CPUs, Linux $(uname -r)"
PEERS="MPICH ${mpich:-absent}, Open MPI ${ompi:-absent} (ob1+vader)"


mkdir -p target/peers
LOG=target/peers/compare-peers.log
# This script's own copies of its run's samples.
LAT=target/peers/compare-latency.dat
BW=target/peers/compare-bw.dat
if [ "$AGAIN" = 1 ]; then
    [ -s "$LAT" ] && [ -s "$BW" ] ||
        { echo "--again: no samples of an earlier compare.sh run in target/peers ($LAT, $BW)" >&2; exit 1; }
    ROUNDS=$(awk '$1 == "shmpi" && $2 == 8 { n++ } END { print n + 0 }' "$LAT")
    when=$(sed -n 's/^# date: *//p' "$LOG" 2>/dev/null | head -1)
    commit=$(cat target/peers/compare.commit 2>/dev/null || echo unknown)
    PLACEMENT=$(cat target/peers/compare.placement 2>/dev/null || echo any)
    echo "# --again: the samples of the last run ($ROUNDS rounds, ${when:-date unknown})"
else
    echo "# running tools/compare-peers.sh all --rounds $ROUNDS --max-size $MAX_SIZE --placement $PLACEMENT (log: $LOG)"
    tools/compare-peers.sh all --rounds "$ROUNDS" --max-size "$MAX_SIZE" --placement "$PLACEMENT" >"$LOG" 2>&1 || {
        echo "compare-peers.sh failed; see $LOG" >&2
        tail -20 "$LOG" >&2
        exit 1
    }
    for f in last-latency.dat last-bw.dat; do
        [ -s "target/peers/$f" ] ||
            { echo "compare-peers.sh left no target/peers/$f; see $LOG" >&2; tail -20 "$LOG" >&2; exit 1; }
    done
    cp target/peers/last-latency.dat "$LAT"
    cp target/peers/last-bw.dat "$BW"
    echo "$commit" >target/peers/compare.commit
    echo "$PLACEMENT" >target/peers/compare.placement
fi

echo "# tools/compare.sh ${ARGS[*]:-}"
echo "# machine: $MACHINE"
echo "# peers:   $PEERS"
echo "# shmpi:   commit $commit, $when"
[ "$PLACEMENT" = any ] || echo "# placement: $PLACEMENT only (every run begun and ended there, by shmpi-bench floor)"

# stats FILE KIND: "size shmpi mpich ompi" per size, KIND = median | best
# (best = lowest for latency files, highest for bandwidth); "?" where a
# contender has no sample.
stats() {
    local file=$1 kind=$2 dir=1
    case "$file" in *bw*) dir=-1 ;; esac
    sort -k1,1 -k2,2n -k3,3g "$file" | awk -v kind="$kind" -v dir="$dir" '
        function flush() {
            if (n == 0) return
            if (kind == "median") v = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            else v = (dir > 0) ? a[1] : a[n]
            print name, sz, v
        }
        { if ($1 != name || $2 != sz) { flush(); name = $1; sz = $2; n = 0 }
          a[++n] = $3 }
        END { flush() }' | awk '
        { v[$1 " " $2] = $3; s[$2] = 1 }
        function get(c, x) { return ((c " " x) in v) ? v[c " " x] : "?" }
        END { for (x in s) print x, get("shmpi", x), get("MPICH", x), get("OpenMPI", x), get("shmpi-C", x) }' |
        sort -n
}

table() { # table KIND
    local kind=$1
    stats "$LAT" "$kind" >"target/peers/lat-$kind.dat"
    stats "$BW" "$kind" >"target/peers/bw-$kind.dat"
    echo
    echo "# $kind of $ROUNDS rounds; lat in us (ratio < 1: shmpi faster), bw in MB/s (ratio > 1: shmpi faster); ratio = shmpi / the better peer;"
    echo "# shmpi = shmpi-bench (Rust); C = the peers' own C program on shmpi (tools/shmpicc), C/p = C / the better peer"
    printf "%-8s %8s %8s %8s %6s %8s %6s   %9s %9s %9s %6s %9s %6s\n" size lat:shmpi MPICH OpenMPI ratio C C/p bw:shmpi MPICH OpenMPI ratio C C/p
    join -a1 -e '?' -o 0,1.2,1.3,1.4,1.5,2.2,2.3,2.4,2.5 \
        <(sort -k1,1 "target/peers/lat-$kind.dat") <(sort -k1,1 "target/peers/bw-$kind.dat") |
        sort -n | awk '
        function best(a, b, lower) {
            if (a == "?") return b
            if (b == "?") return a
            return lower ? (a < b ? a : b) : (a > b ? a : b)
        }
        function ratio(x, p) { return (x == "?" || p == "?" || p == 0) ? "-" : sprintf("%.2f", x / p) }
        { lb = best($3, $4, 1); bb = best($7, $8, 0)
          printf "%-8s %8s %8s %8s %6s %8s %6s   %9s %9s %9s %6s %9s %6s\n", $1, $2, $3, $4, ratio($2, lb), $5, ratio($5, lb), $6, $7, $8, ratio($6, bb), $9, ratio($9, bb) }'
}
table median
table best

if ! command -v gnuplot >/dev/null 2>&1; then
    echo
    echo "# no plot: gnuplot not found (apt-get install gnuplot-nox)"
    exit 0
fi
mkdir -p "$(dirname "$PLOT")"
gnuplot <<EOF
set terminal pngcairo size 1500,620 font "Sans,10"
set output "$PLOT"
set datafile missing "?"
set multiplot layout 1,2 title "shmpi vs MPICH vs Open MPI, 2 ranks pinned to 2 cores, median of $ROUNDS alternating rounds$( [ "$PLACEMENT" = any ] || echo ", placement $PLACEMENT only")\n$MACHINE; $PEERS; shmpi $commit, $when" font "Sans,11"
set logscale x 2
set logscale y 10
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key top left
set xlabel "message size (bytes; ki = 1024, Mi = 1024^2)"
set format x "%.0b%B"
set ylabel "one-way latency (us), lower is better"
set title "osu latency (ping-pong)"
plot "target/peers/lat-median.dat" using (\$1 > 0 ? \$1 : 1/0):2 with linespoints lw 2 pt 7 title "shmpi", \
     "" using (\$1 > 0 ? \$1 : 1/0):3 with linespoints lw 2 pt 5 title "MPICH", \
     "" using (\$1 > 0 ? \$1 : 1/0):4 with linespoints lw 2 pt 9 title "Open MPI", \
     "" using (\$1 > 0 ? \$1 : 1/0):5 with linespoints lw 1 dt 2 pt 6 title "shmpi, the peers' C program"
set ylabel "bandwidth (MB/s), higher is better"
set title "osu bw (window of 64 nonblocking sends)"
set key top left
plot "target/peers/bw-median.dat" using (\$1 > 0 ? \$1 : 1/0):2 with linespoints lw 2 pt 7 title "shmpi", \
     "" using (\$1 > 0 ? \$1 : 1/0):3 with linespoints lw 2 pt 5 title "MPICH", \
     "" using (\$1 > 0 ? \$1 : 1/0):4 with linespoints lw 2 pt 9 title "Open MPI", \
     "" using (\$1 > 0 ? \$1 : 1/0):5 with linespoints lw 1 dt 2 pt 6 title "shmpi, the peers' C program"
unset multiplot
EOF
echo
echo "# plot: $PLOT"
