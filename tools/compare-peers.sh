#!/usr/bin/env bash
#
# compare-peers.sh - compare shmpi's point-to-point latency/bandwidth with
# MPICH and Open MPI on this machine, OSU style.
#
# Usage: tools/compare-peers.sh [MODE] [--rounds R] [--min-size N] [--max-size N] [--ranks N]
#                                [--placement any|core|one|across] [--wait S] [--touch]
#
#   MODE: latency | bw | all (both) | nblatency | exchange | barrier | bcast | reduce |
#         allreduce | allgather | alltoall | coll (all six collectives)
#         nblatency: the ping-pong with MPI_Irecv posted before the send and
#         MPI_Wait after it (osu_pingpong nblatency; shmpi-bench latency
#         --irecv), the halo exchange's pattern
#         exchange: both ranks at once MPI_Irecv, MPI_Isend, MPI_Waitall
#         (osu_pingpong exchange; shmpi-bench exchange: irecv, isend,
#         wait_all), a halo exchange between two neighbours; the time per
#         exchange
#   --touch: the sender writes one byte of every cache line of its buffer
#              before each send (each bw window), as an application sends
#              data it has just computed; single-copy protocols read such
#              lines out of the sender's cache (shmpi-bench --touch,
#              osu_pingpong --touch); for the collectives (not barrier)
#              every rank so rewrites its input before each call (bcast:
#              the root; osu_coll --touch)
#   --ranks N: ranks for the collectives (default 2; point-to-point is
#              always 2). With more ranks than CPUs nobody is pinned.
#   --placement core|one|across: run only in that placement of CPUs 0
#              and 1, as `shmpi-bench floor` finds it (its cache-line
#              one-way figure): before each run it waits (up to --wait S
#              seconds, default 600) until the floor says so, and after the
#              run it measures again; a run whose floor changed meanwhile is
#              dropped and run again. `core`: both floors below
#              FLOOR_CORE_US (default 0.03 us: one core's two threads);
#              `one`: both from FLOOR_CORE_US to below FLOOR_NEAR_US
#              (default 0.1: two cores of one CCD); `across`: both at least
#              FLOOR_FAR_US (default 0.15: two CCDs). The defaults fit the
#              2-vCPU Zen 4 VMs of docs/benchmarks.md, whose host moves the
#              vCPUs between those placements every few seconds; measure
#              your machine's floors first. `any` (default): no floor.
#
# What it does:
#   1. Builds tools/peers/osu_pingpong.c and tools/peers/osu_coll.c (our
#      own OSU-methodology benchmarks) with mpicc.mpich and mpicc.openmpi
#      into target/peers/.  A peer whose
#      compiler or launcher is missing is skipped with a message.
#   2. Runs the contenders - shmpi (target/release/shmpi-bench, or $SHMPI_BENCH),
#      shmpi-C (the same osu_pingpong.c and osu_coll.c built with
#      tools/shmpicc and run by shmpiexec, when target/release has
#      libshmpi.so: the C API's own cost shows), MPICH, Open MPI - each with
#      2 ranks pinned to 2 cores,
#      all printing the same OSU column format ("# ..." comments, then
#      "size value" rows). Every bw receives its window into one buffer,
#      as OSU does (shmpi-bench with `Communicator::recv_many`).
#   3. Prints, per size, the median over the rounds for every contender and
#      the ratios shmpi/MPICH and shmpi/OpenMPI; then the same table for the
#      best round of each (lowest latency, highest bandwidth).  On this VM
#      core-to-core latency is bimodal (the two vCPUs land on one die or on
#      two), so a median of mixed rounds can compare one contender's good
#      placement with another's bad one; the best-of table compares each at
#      its best placement.
#
# Why the contenders alternate (A B C A B C ..., not A A A B B B ...):
#   this is a 2-vCPU cloud VM.  Between runs the two vCPUs get rescheduled
#   onto different physical cores - sometimes the same CCD/die, sometimes
#   different ones - which changes core-to-core latency and bandwidth by a
#   large factor.  Running each contender's rounds back to back would let one
#   contender get all the "good" placements; interleaving spreads the luck,
#   and the median over rounds throws away the outliers.  Where a placement
#   lasts only seconds, interleaving is not enough (one contender's rounds
#   can still fall in another placement than the next's): --placement
#   compares only runs that began and ended in the one named.
#
# Every run is wrapped in `timeout 300` so a hung peer cannot hang the script;
# a failed or timed-out run is reported and its round is simply missing.
# Raw samples of the last run are kept in target/peers/last-<mode>.dat.
#
# Environment:
#   SHMPI_BENCH   shmpi benchmark binary (default target/release/shmpi-bench)
#   MPICH_CC, MPICH_RUN, OMPI_CC, OMPI_RUN   override the peer tools
#   RUN_TIMEOUT   seconds per run before it is killed (default 300)
#
set -euo pipefail
export LC_ALL=C # "." decimals for printf/sort/awk

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() {
    echo "usage: $0 [latency|bw|all|nblatency|exchange|barrier|bcast|reduce|allreduce|allgather|alltoall|coll] [--rounds R] [--min-size N] [--max-size N] [--ranks N] [--placement any|core|one|across] [--wait S] [--touch]" >&2
    exit 2
}

# ---------------------------------------------------------------- arguments
MODE=all
ROUNDS=3
MAX_SIZE=$((4 * 1024 * 1024))
MIN_SIZE=
NRANKS=2
PLACEMENT=any
WAIT=600
TOUCH=
while [ $# -gt 0 ]; do
    case "$1" in
        latency | bw | all | nblatency | exchange | barrier | bcast | reduce | allreduce | allgather | alltoall | coll) MODE=$1 ;;
        --ranks) [ $# -ge 2 ] || usage; NRANKS=$2; shift ;;
        --rounds) [ $# -ge 2 ] || usage; ROUNDS=$2; shift ;;
        --min-size) [ $# -ge 2 ] || usage; MIN_SIZE=$2; shift ;;
        --max-size) [ $# -ge 2 ] || usage; MAX_SIZE=$2; shift ;;
        --placement) [ $# -ge 2 ] || usage; PLACEMENT=$2; shift ;;
        --wait) [ $# -ge 2 ] || usage; WAIT=$2; shift ;;
        --touch) TOUCH=--touch ;;
        -h | --help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
    shift
done
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds must be a positive integer" >&2; exit 2; }
[[ "$MAX_SIZE" =~ ^[0-9]+$ ]] || { echo "--max-size must be a non-negative integer" >&2; exit 2; }
[ -z "$MIN_SIZE" ] || [[ "$MIN_SIZE" =~ ^[0-9]+$ ]] || { echo "--min-size must be a non-negative integer" >&2; exit 2; }
case "$PLACEMENT" in any | core | one | across) ;; *) echo "--placement must be any, core, one or across" >&2; exit 2 ;; esac
[[ "$WAIT" =~ ^[0-9]+$ ]] || { echo "--wait must be a non-negative integer" >&2; exit 2; }
FLOOR_CORE_US=${FLOOR_CORE_US:-0.03}
FLOOR_NEAR_US=${FLOOR_NEAR_US:-0.1}
FLOOR_FAR_US=${FLOOR_FAR_US:-0.15}
case "$MODE" in barrier) [ -z "$TOUCH" ] || { echo "--touch is for the modes that send data (not barrier)" >&2; exit 2; } ;; esac
case "$MODE" in
    all) MODES="latency bw" ;;
    coll) MODES="barrier bcast reduce allreduce allgather alltoall" ;;
    *) MODES=$MODE ;;
esac

SHMPI_BENCH=${SHMPI_BENCH:-target/release/shmpi-bench}
MPICH_CC=${MPICH_CC:-mpicc.mpich}
MPICH_RUN=${MPICH_RUN:-mpiexec.mpich}
OMPI_CC=${OMPI_CC:-mpicc.openmpi}
OMPI_RUN=${OMPI_RUN:-mpirun.openmpi}
SRC=tools/peers/osu_pingpong.c
COLL_SRC=tools/peers/osu_coll.c
OUTDIR=target/peers
RUN_TIMEOUT=${RUN_TIMEOUT:-300}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/compare-peers.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# ---------------------------------------------------------------- contenders
# Parallel arrays: display name, command prefix (the benchmark mode and size
# options are appended).
NAMES=()
CMDS=()

build_peer() { # build_peer NAME CC RUN OUT
    local name=$1 cc=$2 run=$3 out=$4
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "skip $name: $cc not found"
        return 1
    fi
    if ! command -v "$run" >/dev/null 2>&1; then
        echo "skip $name: $run not found"
        return 1
    fi
    mkdir -p "$OUTDIR"
    if [ ! -x "$out" ] || [ "$SRC" -nt "$out" ]; then
        echo "build $out ($cc)"
        if ! "$cc" -O2 -Wall -o "$out" "$SRC"; then
            echo "skip $name: $cc failed to build $SRC"
            return 1
        fi
    fi
    local cout=${out/osu_pingpong/osu_coll}
    if [ ! -x "$cout" ] || [ "$COLL_SRC" -nt "$cout" ]; then
        echo "build $cout ($cc)"
        if ! "$cc" -O2 -Wall -o "$cout" "$COLL_SRC"; then
            echo "skip $name: $cc failed to build $COLL_SRC"
            return 1
        fi
    fi
    return 0
}

HAVE_SHMPI=0
if [ -x "$SHMPI_BENCH" ]; then
    HAVE_SHMPI=1
    NAMES+=(shmpi)
    CMDS+=("$SHMPI_BENCH")
else
    echo "note: $SHMPI_BENCH not found - build it with cargo build --release;" \
        "continuing with the peers only"
fi

# shmpi under the peers' own C programs (built with tools/shmpicc against
# target/release/libshmpi.so): the same sources for all three libraries.
SHMPI_C=$OUTDIR/osu_pingpong.shmpi
SHMPI_COLL_C=$OUTDIR/osu_coll.shmpi
if [ -x target/release/shmpiexec ] && [ -e target/release/libshmpi.so ]; then
    mkdir -p "$OUTDIR"
    for pair in "$SRC:$SHMPI_C" "$COLL_SRC:$SHMPI_COLL_C"; do
        c_src=${pair%%:*} c_bin=${pair#*:}
        if [ ! -x "$c_bin" ] || [ "$c_src" -nt "$c_bin" ] || [ target/release/libshmpi.so -nt "$c_bin" ]; then
            echo "build $c_bin (tools/shmpicc)"
            SHMPI_LIBDIR="$ROOT/target/release" tools/shmpicc -O2 -Wall -o "$c_bin" "$c_src" || rm -f "$c_bin"
        fi
    done
    if [ -x "$SHMPI_C" ] && [ -x "$SHMPI_COLL_C" ]; then
        NAMES+=(shmpi-C)
        CMDS+=("target/release/shmpiexec -n @N@ @SHMPI_BIND@ $OUTDIR/@BIN@.shmpi")
    fi
else
    echo "note: target/release/shmpiexec or libshmpi.so missing - no shmpi-C contender" \
        "(cargo build --release)"
fi

NPEERS=0
if build_peer MPICH "$MPICH_CC" "$MPICH_RUN" "$OUTDIR/osu_pingpong.mpich"; then
    NAMES+=(MPICH)
    CMDS+=("$MPICH_RUN -n @N@ @MPICH_BIND@ $OUTDIR/@BIN@.mpich")
    NPEERS=$((NPEERS + 1))
fi
if build_peer OpenMPI "$OMPI_CC" "$OMPI_RUN" "$OUTDIR/osu_pingpong.openmpi"; then
    NAMES+=(OpenMPI)
    CMDS+=("$OMPI_RUN --allow-run-as-root -np @N@ @OMPI_BIND@ --mca pml ob1 --mca btl self,vader $OUTDIR/@BIN@.openmpi")
    NPEERS=$((NPEERS + 1))
fi
if [ ${#NAMES[@]} -eq 0 ]; then
    echo "nothing to run: no shmpi build (cargo build --release) and neither MPICH nor Open MPI" >&2
    exit 1
fi
if [ "$NPEERS" -eq 0 ]; then
    echo "note: neither MPICH nor Open MPI is installed (apt-get install mpich openmpi-bin" \
        "libmpich-dev libopenmpi-dev) - shmpi alone, no ratios"
fi

# ---------------------------------------------------------------- machine
echo
echo "# date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
# KVM often masks the model name (e.g. just "AMD EPYC"); family/model/stepping
# still identify the generation.
CPU=$(awk -F': *' '
    /^model name/ && !n { n = $2 } /^cpu family/ && !f { f = $2 }
    /^model[ \t]*:/ && !m { m = $2 } /^stepping/ && !s { s = $2 }
    END { if (n == "") n = "unknown"; printf "%s (family %s, model %s, stepping %s)", n, f, m, s }
' /proc/cpuinfo 2>/dev/null || echo unknown)
echo "# cpu:      $CPU, $(nproc) online CPUs"
echo "# kernel:   $(uname -r)"
# Two 2-rank benchmarks need both vCPUs; anything else running (a cargo
# build, say) ruins the numbers, so measure how busy the CPUs are right now.
cpu_busy_pct() { # percent of non-idle CPU time over ~0.5 s, from /proc/stat
    local a b
    a=$(awk '/^cpu / { print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6 }' /proc/stat)
    sleep 0.5
    b=$(awk '/^cpu / { print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6 }' /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ")
        t = y[1] - x[1]; i = y[2] - x[2]; printf "%d", (t > 0 ? 100 * (t - i) / t : 0) }'
}
BUSY=$(cpu_busy_pct 2>/dev/null || echo 0)
echo "# load:     $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), CPUs ${BUSY}% busy before start"
if [ "$BUSY" -ge 15 ]; then
    echo "# WARNING:  the machine is busy (${BUSY}% CPU) - results will be noisy; rerun when idle"
fi
echo "# rounds:   $ROUNDS, ${MIN_SIZE:+min size $MIN_SIZE, }max size $MAX_SIZE, placement $PLACEMENT, contenders: ${NAMES[*]}"

# ---------------------------------------------------------------- /dev/shm
# Open MPI's vader BTL keeps its segments as /dev/shm/vader_segment.* files
# (MPICH/UCX uses SysV segments already marked for removal).  A clean exit,
# or even a TERM from timeout, removes them, but a KILLed launcher can leave
# them behind.  After a failed run we remove only the vader files that
# appeared during that run, so nothing anybody else has there is touched.
shm_snapshot() {
    find /dev/shm -maxdepth 1 -name 'vader_segment.*' -user "$(id -u)" 2>/dev/null | sort || true
}
shm_cleanup() { # shm_cleanup SNAPSHOT_FILE
    local f
    shm_snapshot | comm -13 "$1" - | while read -r f; do
        echo "    removing leftover $f" >&2
        rm -f -- "$f"
    done
}

# ---------------------------------------------------------------- placement
# floor_us: the cache-line one-way latency between CPUs 0 and 1 now, the
# minimal ring's 8 B one-way (the floor the latency target is stated
# against) and its 64 B one-way (a slot of two lines; 0 from a
# shmpi-bench that does not print it, and the 64 B row is then not
# reported), in us, from shmpi-bench floor (about a second); empty if it
# failed.
floor_us() {
    timeout -k 5 60 "$FLOOR_BENCH" floor --cpus 0,1 --iterations 200000 2>/dev/null |
        awk '/^cache-line one-way/ { c = $NF } /^ring one-way latency, 8 B/ { r = $NF }
             /^ring one-way latency, 64 B/ { r64 = $7 }
             END { if (c != "" && r != "") print c, r, (r64 != "" ? r64 : 0) }'
}
# in_placement "CL RING RING64" (floor_us's line): whether the cache-line
# floor CL says the placement asked for.
in_placement() {
    set -- $1
    [ -n "${1:-}" ] || return 1
    case "$PLACEMENT" in
        core) awk -v f="$1" -v t="$FLOOR_CORE_US" 'BEGIN { exit !(f < t) }' ;;
        one) awk -v f="$1" -v c="$FLOOR_CORE_US" -v t="$FLOOR_NEAR_US" 'BEGIN { exit !(f >= c && f < t) }' ;;
        across) awk -v f="$1" -v t="$FLOOR_FAR_US" 'BEGIN { exit !(f >= t) }' ;;
        *) return 0 ;;
    esac
}
FLOOR_BENCH=${SHMPI_BENCH%% *}
DROPPED=0
if [ "$PLACEMENT" != any ]; then
    if [ ! -x "$FLOOR_BENCH" ]; then
        echo "--placement needs shmpi-bench (its floor subcommand): build it with cargo build --release" >&2
        exit 1
    fi
    echo "# placement: $PLACEMENT (runs begun and ended with shmpi-bench floor's cache-line one-way" \
        "$(case "$PLACEMENT" in core) echo "below $FLOOR_CORE_US" ;; one) echo "from $FLOOR_CORE_US to below $FLOOR_NEAR_US" ;; *) echo "at least $FLOOR_FAR_US" ;; esac) us;" \
        "up to $WAIT s of waiting a run)"
fi

# ---------------------------------------------------------------- running
# settle: lets the previous contender's processes (a launcher's daemons
# and their teardown) finish before the next run starts: waits up to 3 s
# until the CPUs are under 10% busy (each look takes 0.5 s). Without it
# the first row of the run after Open MPI's (shmpi's 0 B) ran about 0.04
# us slower than the same row run alone.
settle() {
    local end=$((SECONDS + 3))
    while [ "$(cpu_busy_pct 2>/dev/null || echo 0)" -ge 10 ] && [ "$SECONDS" -lt "$end" ]; do
        :
    done
}

# run_one MODE INDEX ROUND: runs contender INDEX once and appends
# "name size value" lines to $WORK/MODE.dat.
run_one() {
    local mode=$1 i=$2 round=$3 rc=0
    local name=${NAMES[$i]} out="$WORK/run.out" err="$WORK/run.err"
    local -a cmd extra=()
    local n=2 bin=osu_pingpong line
    local arg=$mode
    case "$mode" in latency | bw | nblatency | exchange) ;; *) n=$NRANKS; bin=osu_coll ;; esac
    if [ "$name" = shmpi ]; then
        cmd=("$SHMPI_BENCH") # may contain spaces
        # CSV for point to point: three decimals, as the C program
        # prints (the OSU columns have two, which at 0.1 us rounds
        # shmpi's figure by up to 4% against the peers' exact one).
        if [ "$bin" = osu_coll ]; then extra=(--ranks "$n"); else extra=(--format csv); fi
        if [ "$mode" = nblatency ]; then arg=latency; extra+=(--irecv); fi
    else
        line=${CMDS[$i]//@BIN@/$bin}
        line=${line//@N@/$n}
        if [ "$n" -le "$(nproc)" ]; then
            line=${line//@MPICH_BIND@/-bind-to core}
            line=${line//@OMPI_BIND@/--bind-to core --map-by core}
            line=${line//@SHMPI_BIND@/--bind-to core}
        else
            line=${line//@SHMPI_BIND@/}
            line=${line//@MPICH_BIND@/}
            line=${line//@OMPI_BIND@/--oversubscribe --bind-to none}
        fi
        read -r -a cmd <<<"$line"
    fi
    local -a sizes=(--max-size "$MAX_SIZE")
    [ -z "$MIN_SIZE" ] || sizes=(--min-size "$MIN_SIZE" "${sizes[@]}")
    if [ "$mode" = barrier ]; then
        sizes=() # no data: shmpi-bench refuses sizes and --touch there
    else
        [ -z "$TOUCH" ] || extra+=("$TOUCH")
    fi
    local f1= f2= deadline=$((SECONDS + WAIT))
    while :; do
        settle
        if [ "$PLACEMENT" != any ]; then
            f1=$(floor_us)
            while ! in_placement "$f1"; do
                if [ "$SECONDS" -ge "$deadline" ]; then
                    echo "    no $PLACEMENT placement within $WAIT s (floor ${f1:-?} us); round dropped" >&2
                    return 0
                fi
                sleep 1
                f1=$(floor_us)
            done
        fi
        echo "  round $round/$ROUNDS  $name $mode${f1:+  (floors $f1 us)}"
        shm_snapshot >"$WORK/shm.before"
        rc=0
        # -k: if TERM is ignored, KILL 10 s later.
        timeout -k 10 "$RUN_TIMEOUT" "${cmd[@]}" "$arg" "${sizes[@]}" "${extra[@]}" >"$out" 2>"$err" || rc=$?
        [ "$PLACEMENT" != any ] && [ "$rc" -eq 0 ] || break
        f2=$(floor_us)
        in_placement "$f2" && break
        DROPPED=$((DROPPED + 1))
        echo "    the placement changed during the run (floors ${f2:-?} us after); run again" >&2
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "    no whole run in the $PLACEMENT placement within $WAIT s; round dropped" >&2
            return 0
        fi
    done
    if [ "$rc" -ne 0 ]; then
        shm_cleanup "$WORK/shm.before"
        if [ "$rc" -eq 124 ]; then
            echo "    $name timed out after $RUN_TIMEOUT s; round dropped" >&2
        else
            echo "    $name failed (exit $rc); round dropped. stderr tail:" >&2
        fi
        tail -n 5 "$err" | sed 's/^/      /' >&2
        return 0
    fi
    # Rows are "size value" (or "size,value": shmpi-bench CSV); skip
    # comments, blank and malformed lines.
    # In a placement, a fourth and a fifth column: the run's ring floors
    # (the means of the minimal ring's 8 B and 64 B one-way before and
    # after it).
    local ring=
    [ -z "$f1" ] || [ -z "$f2" ] || ring=$(echo "$f1 $f2" | awk '{ printf "%.4f %.4f", ($2 + $5) / 2, ($3 + $6) / 2 }')
    awk -v n="$name" -v ring="$ring" '
        /^[[:space:]]*#/ { next }
        /^[0-9]+,/ { gsub(",", " ") }
        $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9.eE+-]+$/ { if (ring != "") print n, $1, $2, ring; else print n, $1, $2 }
    ' "$out" >"$WORK/run.rows"
    if [ ! -s "$WORK/run.rows" ]; then
        echo "    $name printed no result rows (expected '# ...' comments, then 'size value'); round dropped" >&2
        return 0
    fi
    cat "$WORK/run.rows" >>"$WORK/$mode.dat"
}

# ---------------------------------------------------------------- reporting
# report MODE: median per (contender, size), then one table row per size.
report() {
    local mode=$1 dat="$WORK/$1.dat" unit better
    # The contender the ratios are of: shmpi-bench.
    local base=shmpi names="${NAMES[*]}"
    if [ "$mode" = exchange ]; then
        unit="time per exchange, us, median"; better="lower is better; ratio < 1 means shmpi wins"
    elif [ "$mode" != bw ]; then
        unit="latency, us, median"; better="lower is better; ratio < 1 means shmpi wins"
    else
        unit="bandwidth, MB/s, median"; better="higher is better; ratio > 1 means shmpi wins"
    fi
    echo
    echo "# $mode ($unit of $ROUNDS rounds; $better)"
    [ -z "$TOUCH" ] || echo "# --touch: every send buffer (a collective's input) rewritten, one element a line, before it is sent"
    [ "$PLACEMENT" = any ] || echo "# placement: $PLACEMENT only (runs begun and ended there; $DROPPED runs redone in all)"
    if [ ! -s "$dat" ]; then
        echo "# no results"
        return 0
    fi
    # Sort by contender, size, value; the median of each group is then its
    # middle element (mean of the two middle ones for an even count).
    sort -k1,1 -k2,2n -k3,3g "$dat" | awk -v mode="$mode" '
        function flush() {
            if (cnt == 0) return
            m = (cnt % 2) ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
            # best of the rounds: lowest latency, highest bandwidth
            b = (mode != "bw") ? v[1] : v[cnt]
            print key, m, b, cnt
        }
        { k = $1 " " $2
          if (k != key) { flush(); key = k; cnt = 0 }
          v[++cnt] = $3 }
        END { flush() }
    ' >"$WORK/$mode.med"

    for col in 3 4; do
    if [ $col = 4 ]; then
        echo
        echo "# $mode, best of $ROUNDS rounds (${unit%%, median}; $better)"
    fi
    awk -v names="$names" -v have_shmpi="$HAVE_SHMPI" -v rounds="$ROUNDS" -v col=$col -v base="$base" '
        BEGIN { nc = split(names, nm, " ") }
        { med[$1, $2] = $col; cnt[$1, $2] = $5; if (!($2 in seen)) { seen[$2] = 1; sizes[++ns] = $2 } }
        function cell(n, s) { return ((n, s) in med) ? sprintf("%.2f", med[n, s]) : "-" }
        function ratio(a, b, s) {
            if (!((a, s) in med) || !((b, s) in med) || med[b, s] == 0) return "-"
            return sprintf("%.2f", med[a, s] / med[b, s])
        }
        END {
            # sizes were collected in input order (sorted per contender);
            # sort them numerically.
            for (i = 2; i <= ns; i++) {
                x = sizes[i]; j = i - 1
                while (j > 0 && sizes[j] + 0 > x + 0) { sizes[j + 1] = sizes[j]; j-- }
                sizes[j + 1] = x
            }
            hdr = sprintf("%-10s", "# Size")
            for (c = 1; c <= nc; c++) hdr = hdr sprintf("%14s", nm[c])
            if (have_shmpi) {
                for (c = 1; c <= nc; c++) if (nm[c] != "shmpi" && nm[c] != "shmpi-C") hdr = hdr sprintf("%16s", base "/" nm[c])
            }
            print hdr
            short = 0
            for (i = 1; i <= ns; i++) {
                s = sizes[i]
                row = sprintf("%-10s", s)
                for (c = 1; c <= nc; c++) {
                    row = row sprintf("%14s", cell(nm[c], s))
                    if (((nm[c], s) in cnt) && cnt[nm[c], s] < rounds) short = 1
                }
                if (have_shmpi)
                    for (c = 1; c <= nc; c++) if (nm[c] != "shmpi" && nm[c] != "shmpi-C") row = row sprintf("%16s", ratio(base, nm[c], s))
                print row
            }
            if (short) print "# note: some cells have fewer than " rounds " samples (failed runs)"
        }
    ' "$WORK/$mode.med"
    done
    if [ "$PLACEMENT" != any ] && [ "$mode" != bw ] && awk 'NF >= 4 && $4 > 0 { f = 1 } END { exit !f }' "$dat"; then
        # Latency over the same run's ring floor, per run, then the median
        # per contender and size: the form of the target "<= 1.3x the
        # floor ring figure".
        echo
        echo "# $mode over the same run's ring floor (shmpi-bench floor, 8 B minimal ring, mean of before and after), median of the runs"
        awk 'NF >= 4 && $4 > 0 { print $1, $2, $3 / $4 }' "$dat" | sort -k1,1 -k2,2n -k3,3g | awk -v names="${NAMES[*]}" '
            BEGIN { nc = split(names, nm, " ") }
            function flush() {
                if (cnt == 0) return
                med[key] = (cnt % 2) ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
                split(key, kk, " "); if (!(kk[2] in seen)) { seen[kk[2]] = 1; sizes[++ns] = kk[2] }
            }
            { k = $1 " " $2; if (k != key) { flush(); key = k; cnt = 0 } v[++cnt] = $3 }
            END {
                flush()
                for (i = 2; i <= ns; i++) { x = sizes[i]; j = i - 1
                    while (j > 0 && sizes[j] + 0 > x + 0) { sizes[j + 1] = sizes[j]; j-- } sizes[j + 1] = x }
                hdr = sprintf("%-10s", "# Size"); for (c = 1; c <= nc; c++) hdr = hdr sprintf("%14s", nm[c]); print hdr
                for (i = 1; i <= ns; i++) { row = sprintf("%-10s", sizes[i])
                    for (c = 1; c <= nc; c++) { k = nm[c] " " sizes[i]; row = row sprintf("%14s", (k in med) ? sprintf("%.2f", med[k]) : "-") }
                    print row }
            }'
        if awk 'NF >= 5 && $5 > 0 && $2 == 64 { f = 1 } END { exit !f }' "$dat"; then
            # The 64 B row over the minimal ring that carries 64 bytes:
            # its slot (a sequence word and the payload) takes two lines,
            # as does any frame of a 64-byte message with its flag.
            echo "# $mode at 64 B over the same run's 64 B minimal ring (two lines a slot), median of the runs"
            awk 'NF >= 5 && $5 > 0 && $2 == 64 { print $1, $3 / $5 }' "$dat" | sort -k1,1 -k2,2g | awk -v names="${NAMES[*]}" '
                { v[$1, ++n[$1]] = $2 }
                END {
                    nc = split(names, nm, " "); hdr = sprintf("%-10s", "# Size"); row = sprintf("%-10s", 64)
                    for (c = 1; c <= nc; c++) { m = n[nm[c]]; hdr = hdr sprintf("%14s", nm[c])
                        row = row sprintf("%14s", m ? sprintf("%.2f", (m % 2) ? v[nm[c], (m + 1) / 2] : (v[nm[c], m / 2] + v[nm[c], m / 2 + 1]) / 2) : "-") }
                    print hdr; print row
                }'
        fi
    fi
    # keep the raw samples for later inspection
    cp "$dat" "$OUTDIR/last-$mode.dat"
}

# The samples of an earlier run must not pass for this one's.
for mode in $MODES; do
    rm -f "$OUTDIR/last-$mode.dat"
done
for mode in $MODES; do
    echo
    echo "== $mode: ${#NAMES[@]} contenders x $ROUNDS rounds, alternating"
    : >"$WORK/$mode.dat"
    for ((r = 1; r <= ROUNDS; r++)); do
        for i in "${!NAMES[@]}"; do
            run_one "$mode" "$i" "$r"
        done
    done
done

for mode in $MODES; do
    report "$mode"
done
echo
echo "# raw samples (name size value, and with --placement the run's 8 B and 64 B ring floors): $OUTDIR/last-<mode>.dat"
