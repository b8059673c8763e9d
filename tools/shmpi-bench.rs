//! `shmpi-bench`: OSU-style point-to-point benchmarks between two ranks of
//! this node.
//!
//! ```text
//! shmpi-bench latency|bw|bibw [--min-size N] [--max-size N]
//!             [--iterations N] [--warmup N] [--cpus A,B] [--format osu|csv|json]
//! shmpi-bench comm [--ranks 2,4,8] [--iterations N] [--warmup N]
//! ```
//!
//! `comm` times communicator construction: `dup`, `split` (colour rank % 2,
//! key rank) and `create` (the whole group), each followed by freeing the
//! result, averaged over the timed iterations at rank 0, for each rank
//! count of `--ranks` (one job each; ranks are pinned when they fit the
//! CPUs this process may use, else unpinned).
//!
//! Run on its own it launches itself with 2 ranks (through the library's
//! launcher, the code `shmpiexec` runs), pinned to two different cores (the first two this process may use, or
//! `--cpus`). Method (as the OSU micro-benchmarks): latency is half the
//! round trip of a ping-pong, averaged over the timed iterations after a
//! warm-up; bandwidth sends a window of 64 nonblocking messages, waits for
//! them all and for a 4-byte ack, and reports 10^6 bytes per second; bibw
//! does that in both directions at once. Before the first size both this
//! tool and the peers' harness run an untimed warm-up ping-pong.

use shmpi::comm::wait_all;
use shmpi::transport::SharedBuf;
use std::process::ExitCode;
use std::time::Instant;

const WINDOW: usize = 64;
const LARGE: usize = 8 << 10;

/// How the launching process tells its ranks the two CPUs it chose when
/// `--cpus` was not given (a rank bound to one sees only that one).
const CPUS_ENV: &str = "SHMPI_BENCH_CPUS";

/// How `comm` tells each of its jobs whether it is the first ("1"): in
/// JSON the others put a comma before their row.
const COMM_FIRST_ENV: &str = "SHMPI_BENCH_COMM_FIRST";

/// How `bw|bibw --floor` hands the floor to the ranks: one-core memcpy,
/// MB/s.
const FLOOR_ENV: &str = "SHMPI_BENCH_FLOOR";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Test {
    Latency,
    /// Both ranks at once post an `irecv`, `isend` and wait for both: a
    /// halo exchange between two neighbours (`osu_pingpong exchange`).
    Exchange,
    Bw,
    Bibw,
    Comm,
    /// The machine's floor: cache-line ping-pong and memcpy bandwidth.
    Floor,
    /// Multiple pairs' aggregate bandwidth and message rate (osu_mbw_mr).
    MbwMr,
    /// Which protocol each size takes.
    Protocols,
    /// The CPU an idle rank blocked in a receive uses.
    Idle,
    /// A collective (OSU's osu_barrier, osu_bcast, ...).
    Coll(CollKind),
    /// One-sided latency on a shared window (osu_put_latency,
    /// osu_get_latency, osu_acc_latency with lock_all + flush).
    Rma(RmaKind),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RmaKind {
    Put,
    Get,
    Acc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CollKind {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Allgather,
    Alltoall,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Osu,
    Csv,
    Json,
}

#[derive(Debug, Clone)]
struct Opts {
    test: Test,
    min: usize,
    max: usize,
    iters: Option<usize>,
    warmup: Option<usize>,
    cpus: Option<String>,
    format: Format,
    ranks: Vec<usize>,
    /// `--floor`: the machine's floor measured first, in the same run, and
    /// a column of ratios to it (latency / cache-line one-way latency,
    /// bandwidth / one-core memcpy bandwidth).
    floor: bool,
    /// `--plain-isend`: bandwidth windows of plain `isend`s (a large one
    /// is a rendezvous or copied) instead of a lending scope's.
    plain_isend: bool,
    /// `--many-buffers`: `bw` and `bibw` receive their windows into a
    /// buffer per receive (64), not into one buffer as OSU's tests do.
    many_buffers: bool,
    /// `--alloc-mem`: send and receive buffers of `alloc_mem` (the
    /// shared pool: the receiver copies once out of it), as the C
    /// program's `MPI_Alloc_mem` ones; a window's sends plain `isend`s.
    alloc_mem: bool,
    /// `--across-jobs`: the two ranks are two jobs, the second spawned by
    /// the first, talking over a bridge (`docs/connect.md`).
    across_jobs: bool,
    /// `--irecv`: `latency` receives by `irecv` posted before the rank's
    /// send, then `wait` (a halo exchange's pattern; `osu_pingpong
    /// nblatency` in C), not by `recv`.
    irecv: bool,
    /// `--touch`: before each send (`latency`) or window (`bw`, `bibw`)
    /// the sender writes one byte of every cache line of the message, as
    /// an application sends data it has just computed (`touch_lines`);
    /// the collectives' ranks so write their input before each call.
    touch: bool,
}

const USAGE: &str = "usage: shmpi-bench latency|exchange|bw|bibw [--min-size N] [--max-size N] \
[--iterations N] [--warmup N] [--cpus A,B] [--format osu|csv|json] [--floor] [--plain-isend] [--many-buffers] \
[--alloc-mem] [--across-jobs] [--irecv] [--touch]\n       \
  (--floor: latency, bw, bibw; --irecv: latency; --plain-isend, --many-buffers: bw, bibw)\n       \
shmpi-bench latency --ranks N ...  (ranks 0 and 1 ping-pong, the others idle)\n       \
shmpi-bench comm [--ranks 2,4,8] [--iterations N] [--warmup N] [--cpus LIST] [--format F]\n       \
shmpi-bench floor [--cpus A,B] [--iterations N] [--format F]\n       \
shmpi-bench mbw_mr [--ranks 2P] [--min-size N] [--max-size N] [--iterations N] [--warmup N] \
[--cpus LIST] [--format F] [--plain-isend]\n       \
shmpi-bench put|get|acc [--min-size N] [--max-size N] [--iterations N] [--warmup N] [--cpus A,B] [--format F]\n       \
shmpi-bench protocols [--max-size N] [--cpus A,B]\n       \
shmpi-bench idle [--iterations MS] [--cpus A,B]  (CPU of a rank blocked in recv, after 10 ms)\n       \
shmpi-bench bcast|reduce|allreduce|allgather|alltoall [--ranks N] [--min-size N] \
[--max-size N] [--iterations N] [--warmup N] [--cpus LIST] [--format F] [--touch]\n       \
shmpi-bench barrier [--ranks N] [--iterations N] [--warmup N] [--cpus LIST] [--format F]\n\
An option a benchmark does not take is refused.";

fn parse(args: &[String]) -> Result<Opts, String> {
    let test = match args.first().map(String::as_str) {
        Some("latency") => Test::Latency,
        Some("exchange") => Test::Exchange,
        Some("bw") => Test::Bw,
        Some("bibw") => Test::Bibw,
        Some("comm") => Test::Comm,
        Some("floor") => Test::Floor,
        Some("mbw_mr") => Test::MbwMr,
        Some("protocols") => Test::Protocols,
        Some("idle") => Test::Idle,
        Some("put") => Test::Rma(RmaKind::Put),
        Some("get") => Test::Rma(RmaKind::Get),
        Some("acc") => Test::Rma(RmaKind::Acc),
        Some("barrier") => Test::Coll(CollKind::Barrier),
        Some("bcast") => Test::Coll(CollKind::Bcast),
        Some("reduce") => Test::Coll(CollKind::Reduce),
        Some("allreduce") => Test::Coll(CollKind::Allreduce),
        Some("allgather") => Test::Coll(CollKind::Allgather),
        Some("alltoall") => Test::Coll(CollKind::Alltoall),
        Some(x) => return Err(format!("unknown benchmark {x:?}\n{USAGE}")),
        None => return Err(USAGE.to_string()),
    };
    let mut o = Opts {
        test,
        min: match test {
            Test::Latency | Test::Exchange => 0,
            Test::Rma(_) => 8,
            Test::Coll(CollKind::Reduce | CollKind::Allreduce) => 4,
            _ => 1,
        },
        max: if matches!(test, Test::Coll(_)) {
            1 << 20
        } else {
            4 << 20
        },
        iters: None,
        warmup: None,
        cpus: None,
        format: Format::Osu,
        floor: false,
        plain_isend: false,
        many_buffers: false,
        alloc_mem: false,
        across_jobs: false,
        irecv: false,
        touch: false,
        ranks: if matches!(test, Test::Coll(_)) {
            vec![2]
        } else {
            vec![2, 4, 8]
        },
    };
    let mut given: Vec<&str> = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let flag = args[i].as_str();
        given.push(flag);
        if matches!(
            flag,
            "--floor"
                | "--plain-isend"
                | "--many-buffers"
                | "--alloc-mem"
                | "--across-jobs"
                | "--irecv"
                | "--touch"
        ) {
            o.floor |= flag == "--floor";
            o.plain_isend |= flag == "--plain-isend";
            o.many_buffers |= flag == "--many-buffers";
            o.alloc_mem |= flag == "--alloc-mem";
            o.across_jobs |= flag == "--across-jobs";
            o.irecv |= flag == "--irecv";
            o.touch |= flag == "--touch";
            i += 1;
            continue;
        }
        let v = args
            .get(i + 1)
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let num = || {
            v.parse::<usize>()
                .map_err(|_| format!("{flag}: {v:?} is not a number"))
        };
        match flag {
            "--min-size" => o.min = num()?,
            "--max-size" => o.max = num()?,
            "--iterations" => o.iters = Some(num()?.max(1)),
            "--warmup" => o.warmup = Some(num()?),
            "--cpus" => o.cpus = Some(v.clone()),
            "--ranks" => {
                o.ranks = v
                    .split(',')
                    .map(|r| match r.trim().parse::<usize>() {
                        Ok(n) if n >= 1 => Ok(n),
                        _ => Err(format!("--ranks: {r:?} is not a rank count")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--format" => {
                o.format = match v.as_str() {
                    "osu" => Format::Osu,
                    "csv" => Format::Csv,
                    "json" => Format::Json,
                    _ => return Err(format!("--format: {v:?} is not osu, csv or json")),
                }
            }
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
        i += 2;
    }
    if o.min > o.max {
        return Err("--min-size is above --max-size".into());
    }
    if o.irecv && !matches!(o.test, Test::Latency) {
        return Err("--irecv is an option of latency (the ping-pong's receives)".into());
    }
    if o.floor && !matches!(o.test, Test::Latency | Test::Bw | Test::Bibw) {
        return Err(
            "--floor is an option of latency, bw and bibw (the floor subcommand stands alone)"
                .into(),
        );
    }
    if o.touch
        && !matches!(
            o.test,
            Test::Latency | Test::Exchange | Test::Bw | Test::Bibw | Test::Coll(_)
        )
    {
        return Err(
            "--touch is an option of latency, exchange, bw, bibw and the collectives \
             (what the sender sends)"
                .into(),
        );
    }
    // Every other option a benchmark does not take is refused too, not
    // ignored (the tailored lines above come first).
    let takes = options_of(o.test);
    if let Some(f) = given.iter().find(|f| !takes.contains(f)) {
        return Err(format!(
            "{f} is not an option of {}; it takes {}",
            args[0],
            takes.join(" ")
        ));
    }
    if given.contains(&"--ranks") && o.ranks.len() > 1 && o.test != Test::Comm {
        return Err(format!(
            "--ranks takes one rank count for {} (a list for comm)",
            args[0]
        ));
    }
    Ok(o)
}

/// The options benchmark `t` takes (as `USAGE` lists them); `parse`
/// refuses the others. Every benchmark takes `--cpus`; those that print
/// rows `--format`; those that run sizes the size and count options.
fn options_of(t: Test) -> Vec<&'static str> {
    const SIZED: [&str; 4] = ["--min-size", "--max-size", "--iterations", "--warmup"];
    let pair = ["--alloc-mem", "--across-jobs", "--touch"];
    let (sized, rows, extra): (bool, bool, &[&str]) = match t {
        Test::Latency => (true, true, &["--floor", "--irecv", "--ranks"]),
        Test::Exchange => (true, true, &[]),
        Test::Bw | Test::Bibw => (true, true, &["--floor", "--plain-isend", "--many-buffers"]),
        Test::Comm => (false, true, &["--ranks", "--iterations", "--warmup"]),
        Test::Floor => (false, true, &["--iterations"]),
        Test::MbwMr => (true, true, &["--ranks", "--plain-isend"]),
        Test::Protocols => (false, false, &["--max-size"]),
        Test::Idle => (false, false, &["--iterations"]),
        Test::Rma(_) => (true, true, &[]),
        Test::Coll(CollKind::Barrier) => (false, true, &["--ranks", "--iterations", "--warmup"]),
        Test::Coll(_) => (true, true, &["--ranks", "--touch"]),
    };
    let mut v = vec!["--cpus"];
    if sized {
        v.extend(SIZED);
    }
    if rows {
        v.push("--format");
    }
    if matches!(t, Test::Latency | Test::Exchange | Test::Bw | Test::Bibw) {
        v.extend(pair);
    }
    v.extend(extra);
    v
}

fn sizes(o: &Opts) -> Vec<usize> {
    let mut v = Vec::new();
    if o.min == 0 {
        v.push(0);
    }
    let mut s = 1;
    while s <= o.max {
        if s >= o.min {
            v.push(s);
        }
        s *= 2;
    }
    v
}

fn counts(o: &Opts, size: usize) -> (usize, usize) {
    let large = size > LARGE;
    let (i, w) = match (o.test, large) {
        (Test::Latency | Test::Exchange | Test::Rma(_), false) => (10_000, 1_000),
        (Test::Latency | Test::Exchange | Test::Rma(_), true) => (1_000, 100),
        (_, false) => (100, 10),
        (_, true) => (20, 2),
    };
    (o.iters.unwrap_or(i), o.warmup.unwrap_or(w))
}

/// A buffer of `size` bytes filled with `fill`, starting on a page
/// boundary, carved out of `store`: OSU's benchmarks (and the peers' C
/// program) align their buffers to the page, and the copies in and out of
/// the ring run at different speeds by the buffers' alignment.
fn page_aligned(store: &mut Vec<u8>, size: usize, fill: u8) -> &mut [u8] {
    *store = vec![fill; size + PAGE];
    let off = to_page(store);
    &mut store[off..off + size]
}

/// The page the benchmarks' buffers start on.
const PAGE: usize = 4096;

/// Bytes from the start of `store` to its first page boundary.
fn to_page(store: &[u8]) -> usize {
    (PAGE - store.as_ptr() as usize % PAGE) % PAGE
}

/// The send and receive buffers of a run: allocated once at the largest
/// size, filled (so every page is faulted in) and used for every size,
/// each from a page boundary, as OSU's benchmarks and the peers' C
/// program do. Fresh buffers per size ran 6-11% slower at 8-32 KiB by
/// rendezvous on the Xeon VM of 2026-12-06 (the peer's
/// `process_vm_readv` of pages faulted just before), which is not what
/// the peers' harness measures (`docs/benchmarks.md`, "thirtieth pass").
/// With `--alloc-mem` both come from the shared pool instead, as the C
/// program's `MPI_Alloc_mem` buffers do.
struct Buffers {
    send: Vec<u8>,
    recv: Vec<u8>,
    /// `--alloc-mem`: the send and receive buffers from `alloc_mem`.
    pooled: Option<(SharedBuf, SharedBuf)>,
}

impl Buffers {
    /// Buffers for messages of up to `max` bytes: from `pool`'s shared
    /// pool when given (`--alloc-mem`), else ordinary memory.
    fn new(max: usize, pool: Option<&shmpi::Universe>) -> Buffers {
        let mut b = Buffers {
            send: Vec::new(),
            recv: Vec::new(),
            pooled: None,
        };
        match pool {
            Some(u) => {
                let take = |fill| {
                    let mut m = u.alloc_mem(max.max(1)).expect("alloc_mem for a buffer");
                    m.fill(fill);
                    m
                };
                b.pooled = Some((take(b'a'), take(b'b')));
            }
            None => {
                page_aligned(&mut b.send, max, b'a');
                page_aligned(&mut b.recv, max, b'b');
            }
        }
        b
    }

    /// Whether the buffers are the shared pool's (`--alloc-mem`).
    fn pooled(&self) -> bool {
        self.pooled.is_some()
    }

    /// The first `size` bytes of each (of ordinary memory, from their
    /// page boundaries).
    fn both(&mut self, size: usize) -> (&mut [u8], &mut [u8]) {
        if let Some((s, r)) = self.pooled.as_mut() {
            return (&mut s[..size], &mut r[..size]);
        }
        let (s, r) = (to_page(&self.send), to_page(&self.recv));
        (&mut self.send[s..s + size], &mut self.recv[r..r + size])
    }
}

/// How a ping-pong runs (`latency`).
#[derive(Clone, Copy, Debug, Default)]
struct Ping {
    /// Each receive an `irecv` posted before the rank's send, then `wait`
    /// (`--irecv`).
    irecv: bool,
    /// The send buffer rewritten before each send (`--touch`).
    touch: bool,
}

/// With `touch`, writes one byte of every 64 of `buf` (the value `v`),
/// so that each of its cache lines is modified in this core's cache when
/// it is sent, as data computed just before: a single-copy receiver then
/// reads every line out of that cache (`docs/benchmarks.md`,
/// "thirty-second pass"); untouched, the lines are clean. The C program
/// of the peers' harness has the same option.
fn touch_lines(buf: &mut [u8], v: u8, touch: bool) {
    if touch {
        for b in buf.iter_mut().step_by(64) {
            *b = v;
        }
    }
}

/// Under `--touch`, that a received message carries its sender's rewrite
/// of round `v` (`touch_lines`) in its first and last lines: a run whose
/// sender did not rewrite its buffer stops here, the rank exiting at once
/// with one line (a panic would end the job too, `docs/errors.md`, but
/// after its unwinding's drops had waited for the peer a while).
fn check_touched(buf: &[u8], v: u8, touch: bool) {
    if touch && !buf.is_empty() {
        let last = (buf.len() - 1) / 64 * 64;
        if buf[0] != v || buf[last] != v {
            eprintln!(
                "shmpi-bench: --touch: a message of round {v} arrived without its sender's \
                 rewrite ({} and {})",
                buf[0], buf[last]
            );
            std::process::exit(1);
        }
    }
}

/// One-way latency (us) of a ping-pong of `size` bytes, run as `how`
/// says.
fn latency(
    w: &shmpi::Communicator,
    bufs: &mut Buffers,
    size: usize,
    iters: usize,
    warm: usize,
    how: Ping,
) -> f64 {
    let (sbuf, rbuf) = bufs.both(size);
    let me = w.rank();
    let secs = timed_rounds(w, iters, warm, |i| {
        let v = i as u8;
        if how.irecv {
            let r = w.irecv(&mut *rbuf, 1 - me, 1).unwrap();
            if me == 0 {
                touch_lines(sbuf, v, how.touch);
                w.send(sbuf, 1, 1).unwrap();
                r.wait().unwrap();
            } else {
                r.wait().unwrap();
                touch_lines(sbuf, v, how.touch);
                w.send(sbuf, 0, 1).unwrap();
            }
            check_touched(rbuf, v, how.touch);
        } else if me == 0 {
            touch_lines(sbuf, v, how.touch);
            w.send(sbuf, 1, 1).unwrap();
            w.recv(rbuf, 1, 1).unwrap();
            check_touched(rbuf, v, how.touch);
        } else {
            w.recv(rbuf, 0, 1).unwrap();
            check_touched(rbuf, v, how.touch);
            touch_lines(sbuf, v, how.touch);
            w.send(sbuf, 0, 1).unwrap();
        }
    });
    secs * 1e6 / (2.0 * iters as f64)
}

/// The seconds that rounds `warm..warm + iters` of `round(i)` took (the
/// first `warm` are the untimed warm-up), begun after a barrier.
fn timed_rounds(
    w: &shmpi::Communicator,
    iters: usize,
    warm: usize,
    mut round: impl FnMut(usize),
) -> f64 {
    w.barrier().unwrap();
    let mut t0 = Instant::now();
    for i in 0..warm + iters {
        if i == warm {
            t0 = Instant::now();
        }
        round(i);
    }
    t0.elapsed().as_secs_f64()
}

/// Time (us) per exchange of `size` bytes each way: both ranks post an
/// `irecv` from the other, rewrite their send buffer under `touch`, start
/// an `isend` to it and wait for both (a halo exchange between two
/// neighbours; `osu_pingpong exchange` in C). Timed on each rank; rank 0
/// prints its own.
fn exchange(
    w: &shmpi::Communicator,
    bufs: &mut Buffers,
    size: usize,
    iters: usize,
    warm: usize,
    touch: bool,
) -> f64 {
    let (sbuf, rbuf) = bufs.both(size);
    let peer = 1 - w.rank();
    let secs = timed_rounds(w, iters, warm, |i| {
        let v = i as u8;
        let r = w.irecv(&mut *rbuf, peer, 1).unwrap();
        touch_lines(sbuf, v, touch);
        let s = w.isend(&*sbuf, peer, 1).unwrap();
        wait_all(vec![r, s]).unwrap();
        check_touched(rbuf, v, touch);
    });
    secs * 1e6 / iters as f64
}

/// Bursts per row of `latency --floor`.
const FLOOR_BURSTS: usize = 5;
/// Timed round trips of each floor burst (after `FLOOR_WARM` untimed ones,
/// which also outlast the blocked rank's spinning and yielding, so the
/// floor's thread has its CPU to itself).
const FLOOR_ITERS: u64 = 20_000;
const FLOOR_WARM: u64 = 10_000;

/// One row of `latency --floor` at rank 0: each burst's one-way latency
/// and the floor's just before it (us).
struct FloorBursts(Vec<(f64, f64)>);

impl FloorBursts {
    /// The row's latency: the mean of equal bursts.
    fn latency(&self) -> f64 {
        self.0.iter().map(|b| b.0).sum::<f64>() / self.0.len().max(1) as f64
    }

    /// The median of the bursts' latency / floor.
    fn ratio(&self) -> f64 {
        median(self.0.iter().map(|(l, f)| l / f).collect())
    }
}

/// The median of `v` (the upper one of an even count; NaN when empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The CPUs `latency --floor` times the minimal ring on: `--cpus`, or the
/// first two.
fn floor_cpus(o: &Opts) -> Result<Vec<usize>, String> {
    let chosen = || std::env::var(CPUS_ENV).ok();
    let cpus: Vec<usize> = match o.cpus.clone().or_else(chosen).or_else(default_cpus) {
        Some(l) => l
            .split(',')
            .map(|c| c.trim().parse().map_err(|_| format!("--cpus: {c:?}")))
            .collect::<Result<_, _>>()?,
        None => return Err("the floor needs two CPUs (--cpus A,B)".into()),
    };
    if cpus.len() < 2 {
        return Err("the floor needs two CPUs (--cpus A,B)".into());
    }
    Ok(cpus)
}

/// `latency` in `FLOOR_BURSTS` bursts of `iters / FLOOR_BURSTS` round
/// trips, each after a burst of the minimal ring on `cpus`: rank 0 runs
/// it on two threads pinned there while rank 1 waits in a receive (its
/// CPU free), then releases rank 1. Rank 0 gets the pairs; rank 1 an
/// empty row.
fn latency_with_floor(
    w: &shmpi::Communicator,
    bufs: &mut Buffers,
    cpus: &[usize],
    size: usize,
    iters: usize,
    warm: usize,
    how: Ping,
) -> FloorBursts {
    let each = iters.div_ceil(FLOOR_BURSTS).max(1);
    let mut bursts = Vec::with_capacity(FLOOR_BURSTS);
    for b in 0..FLOOR_BURSTS {
        let mut go = [0u8];
        let floor = if w.rank() == 0 {
            let f = ring_floor_warm(cpus, FLOOR_ITERS, FLOOR_WARM) / 1000.0;
            w.send(&go, 1, 2).unwrap();
            f
        } else {
            w.recv(&mut go, 0, 2).unwrap();
            0.0
        };
        let warm = if b == 0 { warm } else { warm.min(100) };
        let lat = latency(w, bufs, size, each, warm, how);
        if w.rank() == 0 {
            bursts.push((lat, floor));
        }
    }
    FloorBursts(bursts)
}

/// How a bandwidth test runs (`bandwidth`).
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    /// Both ranks send and receive (`bibw`).
    bi: bool,
    /// Plain `isend`s, not a lending scope's (`--plain-isend`).
    plain: bool,
    /// A receive buffer per receive (`--many-buffers`).
    many: bool,
    /// The send buffer rewritten before each window (`--touch`).
    touch: bool,
}

fn bandwidth(
    w: &shmpi::Communicator,
    bufs: &mut Buffers,
    size: usize,
    iters: usize,
    warm: usize,
    how: Window,
) -> f64 {
    let Window {
        bi,
        plain,
        many,
        touch,
    } = how;
    // A pool buffer's sends go by plain `isend`, as C's `MPI_Isend`
    // (from the pool size on, by rendezvous: one copy, out of the pool).
    let plain = plain || bufs.pooled();
    let (sbuf, one) = bufs.both(size);
    // The receiver takes the window into one buffer, as OSU's C tests
    // do (one way `recv_many`; both ways `irecv_many`, posted before the
    // rank's own sends), or with `many` into a buffer per receive
    // (`irecv`).
    let per_recv = many;
    let rbuf = if per_recv { &mut one[..0] } else { one };
    let mut rstores: Vec<Vec<u8>> = (0..if per_recv { WINDOW } else { 0 })
        .map(|_| Vec::new())
        .collect();
    let mut rbufs: Vec<&mut [u8]> = rstores
        .iter_mut()
        .map(|st| page_aligned(st, size, b'b'))
        .collect();
    let me = w.rank();
    let peer = 1 - me;
    let mut ack = [0u8; 4];
    let t = timed_rounds(w, iters, warm, |i| {
        let sending = me == 0 || bi;
        let receiving = me == 1 || bi;
        if sending {
            touch_lines(sbuf, i as u8, touch);
        }
        let sbuf: &[u8] = sbuf;
        if receiving && !bi && !per_recv {
            w.recv_many(&mut *rbuf, WINDOW, peer, 100).unwrap();
        }
        // A lending scope: what does not fit the ring is pushed straight
        // from `sbuf` by later progress, not copied.
        shmpi::comm::scope(|s| {
            let mut reqs = Vec::with_capacity(2 * WINDOW);
            if receiving && bi && !per_recv {
                reqs.push(w.irecv_many(&mut *rbuf, WINDOW, peer, 100).unwrap());
            }
            if receiving && per_recv {
                for b in rbufs.iter_mut() {
                    reqs.push(w.irecv(b, peer, 100).unwrap());
                }
            }
            if sending {
                for _ in 0..WINDOW {
                    reqs.push(if plain {
                        w.isend(sbuf, peer, 100).unwrap()
                    } else {
                        s.isend(w, sbuf, peer, 100).unwrap()
                    });
                }
            }
            wait_all(reqs).unwrap();
        });
        if receiving {
            check_touched(rbuf, i as u8, touch);
            for b in &rbufs {
                check_touched(b, i as u8, touch);
            }
        }
        if me == 1 {
            w.send(&ack, 0, 101).unwrap();
        } else {
            w.recv(&mut ack, 1, 101).unwrap();
        }
    });
    let dirs = if bi { 2.0 } else { 1.0 };
    dirs * (size * WINDOW * iters) as f64 / t / 1e6
}

/// Average microseconds per `op` at rank 0 over `iters` timed
/// iterations after `warm` untimed ones; barriers fence the timed loop.
fn time_op(w: &shmpi::Communicator, iters: usize, warm: usize, op: impl Fn()) -> f64 {
    for _ in 0..warm {
        op();
    }
    w.barrier().expect("barrier");
    let t = Instant::now();
    for _ in 0..iters {
        op();
    }
    w.barrier().expect("barrier");
    t.elapsed().as_secs_f64() * 1e6 / iters as f64
}

fn run_comm(o: &Opts) -> Result<(), String> {
    let u = shmpi::init().map_err(|e| e.to_string())?;
    let w = u.world();
    let (iters, warm) = (o.iters.unwrap_or(1000), o.warmup.unwrap_or(100));
    let me = w.rank();
    let g = w.group();
    let dup = time_op(&w, iters, warm, || drop(w.dup().expect("dup")));
    let split = time_op(&w, iters, warm, || {
        drop(w.split(me % 2, me).expect("split"));
    });
    let create = time_op(&w, iters, warm, || {
        drop(w.create(&g).expect("create"));
    });
    if me == 0 {
        let n = w.size();
        match o.format {
            Format::Osu => println!("{n:<8}{dup:>14.2}{split:>14.2}{create:>14.2}"),
            Format::Csv => println!("{n},{dup:.3},{split:.3},{create:.3}"),
            // One element of the array the launching process opened
            // (`comm_header`); a comma before all but the first job's.
            Format::Json => println!(
                "{}{{\"ranks\":{n},\"dup_us\":{dup:.3},\"split_us\":{split:.3},\"create_us\":{create:.3}}}",
                if std::env::var(COMM_FIRST_ENV).as_deref() == Ok("1") { "" } else { "," }
            ),
        }
    }
    u.finalize().map_err(|e| e.to_string())
}

/// What the launching process of `comm` prints before its jobs (each
/// prints its row: `run_comm`) and after them, in `o`'s format: in
/// JSON, one object whose results array the jobs' rows fill.
fn comm_header(o: &Opts, after: bool) {
    match (o.format, after) {
        (Format::Osu, false) => {
            println!(
                "# shmpi communicator construction (shmpi-bench {}), us per call + free at rank 0",
                env!("CARGO_PKG_VERSION")
            );
            println!("# Ranks        dup (us)    split (us)   create (us)");
        }
        (Format::Csv, false) => println!("ranks,dup_us,split_us,create_us"),
        (Format::Json, false) => println!("{{\"benchmark\":\"comm\",\"results\":["),
        (Format::Json, true) => println!("]}}"),
        _ => {}
    }
}

/// One collective of `size` bytes (f32 sums for the reductions).
#[allow(clippy::too_many_arguments)]
fn coll_once(
    w: &shmpi::Communicator,
    k: CollKind,
    size: usize,
    a: &mut [u8],
    b: &mut [u8],
    fa: &mut [f32],
    fb: &mut [f32],
    touch: bool,
) {
    let n = w.size() as usize;
    if touch {
        // The input, as an application computes it just before the call.
        match k {
            CollKind::Barrier => {}
            CollKind::Reduce | CollKind::Allreduce => {
                for x in fa[..size / 4].iter_mut().step_by(16) {
                    *x += 1.0;
                }
            }
            CollKind::Bcast => {
                if w.rank() == 0 {
                    touch_lines(&mut a[..size], b[0].wrapping_add(1), true);
                }
            }
            CollKind::Allgather => touch_lines(&mut a[..size], b[0].wrapping_add(1), true),
            CollKind::Alltoall => touch_lines(&mut a[..n * size], b[0].wrapping_add(1), true),
        }
    }
    match k {
        CollKind::Barrier => w.barrier().expect("barrier"),
        CollKind::Bcast => w.bcast(&mut a[..size], 0).expect("bcast"),
        CollKind::Reduce => {
            let c = size / 4;
            w.reduce(&fa[..c], &mut fb[..c], &shmpi::Op::Sum, 0)
                .expect("reduce")
        }
        CollKind::Allreduce => {
            let c = size / 4;
            w.allreduce(&fa[..c], &mut fb[..c], &shmpi::Op::Sum)
                .expect("allreduce")
        }
        CollKind::Allgather => w
            .allgather(&a[..size], &mut b[..n * size])
            .expect("allgather"),
        CollKind::Alltoall => w
            .alltoall(&a[..n * size], &mut b[..n * size])
            .expect("alltoall"),
    }
}

/// The rows of a benchmark in `--format`'s form: OSU columns under `#`
/// header lines, CSV under a row of keys, or one JSON object at the end
/// (`{"benchmark": name, "results": [{key: value, ...}, ...]}`).
struct Table {
    format: Format,
    name: String,
    /// The first column's key ("size", "ranks"), then the values'.
    keys: Vec<&'static str>,
    rows: Vec<String>,
    /// Decimals of the OSU form's values (2, as OSU's tests print).
    osu_decimals: usize,
}

impl Table {
    /// Prints the header: `osu`'s lines (a title and the column names)
    /// in the OSU form, the keys in CSV, nothing in JSON.
    fn new(format: Format, name: &str, osu: &[String], keys: &[&'static str]) -> Table {
        match format {
            Format::Osu => osu.iter().for_each(|l| println!("{l}")),
            Format::Csv => println!("{}", keys.join(",")),
            Format::Json => {}
        }
        Table {
            format,
            name: name.to_string(),
            keys: keys.to_vec(),
            rows: Vec::new(),
            osu_decimals: 2,
        }
    }

    /// The OSU form with `d` decimals (for figures of a few ns).
    fn with_osu_decimals(self, d: usize) -> Table {
        Table {
            osu_decimals: d,
            ..self
        }
    }

    /// One row: the first column `first`, then `values` (OSU: 18 wide,
    /// `osu_decimals`; CSV and JSON: three decimals).
    fn row(&mut self, first: usize, values: &[f64]) {
        match self.format {
            Format::Osu => {
                let d = self.osu_decimals;
                let cols: String = values.iter().map(|v| format!("{v:>18.d$}")).collect();
                println!("{first:<10}{cols}");
            }
            Format::Csv => {
                let cols: String = values.iter().map(|v| format!(",{v:.3}")).collect();
                println!("{first}{cols}");
            }
            Format::Json => {
                let cols: String = self.keys[1..]
                    .iter()
                    .zip(values)
                    .map(|(k, v)| format!(",\"{k}\":{v:.3}"))
                    .collect();
                self.rows
                    .push(format!("{{\"{}\":{first}{cols}}}", self.keys[0]));
            }
        }
    }

    /// The JSON object, in that form.
    fn finish(self) {
        if self.format == Format::Json {
            println!(
                "{{\"benchmark\":\"{}\",\"results\":[{}]}}",
                self.name,
                self.rows.join(",")
            );
        }
    }
}

/// OSU's collective method: for each size, a warm-up, a barrier, the timed
/// loop; the reported latency is the average over ranks of each rank's
/// mean time per call.
fn run_coll(o: &Opts, k: CollKind) -> Result<(), String> {
    let u = shmpi::init().map_err(|e| e.to_string())?;
    let w = u.world();
    let n = w.size() as usize;
    let me = w.rank();
    let name = format!("{k:?}").to_lowercase();
    let sizes: Vec<usize> = if k == CollKind::Barrier {
        vec![0]
    } else {
        sizes(o).into_iter().filter(|&s| s > 0).collect()
    };
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut a = vec![1u8; n * max.max(1)];
    let mut b = vec![0u8; n * max.max(1)];
    let mut fa = vec![1f32; max / 4 + 1];
    let mut fb = vec![0f32; max / 4 + 1];
    let mut table = (me == 0).then(|| {
        let osu = [
            format!(
                "# OSU-style MPI {name} Latency Test (shmpi-bench {}), {n} ranks",
                env!("CARGO_PKG_VERSION")
            ),
            "# Size       Avg Latency(us)".to_string(),
        ];
        Table::new(o.format, &name, &osu, &["size", "avg_latency_us"])
    });
    latency_warm(&w);
    for size in sizes {
        let (iters, warm) = match (o.iters, o.warmup, size > LARGE) {
            (Some(i), wu, _) => (i, wu.unwrap_or(i / 10)),
            (None, wu, false) => (10_000, wu.unwrap_or(1_000)),
            (None, wu, true) => (1_000, wu.unwrap_or(100)),
        };
        for _ in 0..warm {
            coll_once(&w, k, size, &mut a, &mut b, &mut fa, &mut fb, o.touch);
        }
        w.barrier().map_err(|e| e.to_string())?;
        let t = Instant::now();
        for _ in 0..iters {
            coll_once(&w, k, size, &mut a, &mut b, &mut fa, &mut fb, o.touch);
        }
        let mine = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
        let mut sum = [0f64];
        w.reduce(&[mine], &mut sum, &shmpi::Op::Sum, 0)
            .map_err(|e| e.to_string())?;
        if let Some(t) = table.as_mut() {
            t.row(size, &[sum[0] / n as f64]);
        }
    }
    if let Some(t) = table {
        t.finish();
    }
    u.finalize().map_err(|e| e.to_string())
}

/// An untimed warm-up: 2,000 barriers, so the first row is not measured
/// on cold cores.
fn latency_warm(w: &shmpi::Communicator) {
    for _ in 0..2000 {
        w.barrier().expect("barrier");
    }
}

/// osu_mbw_mr: rank i of the first half streams windows to rank i + P of
/// the second; the row is the sum of the pairs' bandwidths (MB/s) and the
/// messages per second that makes.
fn run_mbw_mr(o: &Opts) -> Result<(), String> {
    let u = shmpi::init().map_err(|e| e.to_string())?;
    let w = u.world();
    let n = w.size();
    if n < 2 || n % 2 != 0 {
        return Err(format!("mbw_mr needs an even number of ranks, got {n}"));
    }
    let pairs = n / 2;
    let me = w.rank();
    // Pair k = {k, k + P}; the sender is rank 0 of the pair.
    let pair = w
        .split(me % pairs, me)
        .map_err(|e| e.to_string())?
        .ok_or("every rank has a pair")?;
    let mut table = (me == 0).then(|| {
        let osu = [
            format!(
                "# OSU-style MPI Multiple Bandwidth / Message Rate Test (shmpi-bench {}), {pairs} pairs",
                env!("CARGO_PKG_VERSION")
            ),
            "# Size                  MB/s        Messages/s".to_string(),
        ];
        Table::new(o.format, "mbw_mr", &osu, &["size", "mb_per_s", "messages_per_s"])
    });
    let mut bufs = Buffers::new(sizes(o).into_iter().max().unwrap_or(0), None);
    for size in sizes(o).into_iter().filter(|&s| s > 0) {
        let (iters, warm) = counts(o, size);
        w.barrier().map_err(|e| e.to_string())?;
        let how = Window {
            plain: o.plain_isend,
            ..Window::default()
        };
        let bw = bandwidth(&pair, &mut bufs, size, iters, warm, how);
        let mine = if pair.rank() == 0 { bw } else { 0.0 };
        let mut sum = [0f64];
        w.reduce(&[mine], &mut sum, &shmpi::Op::Sum, 0)
            .map_err(|e| e.to_string())?;
        if let Some(t) = table.as_mut() {
            t.row(size, &[sum[0], sum[0] * 1e6 / size as f64]);
        }
    }
    if let Some(t) = table {
        t.finish();
    }
    u.finalize().map_err(|e| e.to_string())
}

fn run_rank(o: &Opts) -> Result<(), String> {
    if o.test == Test::Comm {
        return run_comm(o);
    }
    if o.test == Test::MbwMr {
        return run_mbw_mr(o);
    }
    if let Test::Coll(k) = o.test {
        return run_coll(o, k);
    }
    let u = shmpi::init().map_err(|e| e.to_string())?;
    if o.test == Test::Protocols {
        if u.rank() == 0 {
            protocols(o, &u);
        }
        return u.finalize().map_err(|e| e.to_string());
    }
    if o.test == Test::Idle {
        idle(o, &u.world())?;
        return u.finalize().map_err(|e| e.to_string());
    }
    if let Test::Rma(k) = o.test {
        rma(o, &u.world(), k)?;
        return u.finalize().map_err(|e| e.to_string());
    }
    if o.across_jobs {
        return across_jobs(o, u);
    }
    let w = u.world();
    if w.size() != 2 && !(o.test == Test::Latency && w.size() > 2) {
        return Err(format!(
            "shmpi-bench {:?} needs exactly 2 ranks, got {}",
            o.test,
            w.size()
        ));
    }
    let me = w.rank();
    if w.size() > 2 {
        // latency --ranks N: ranks 0 and 1 ping-pong on a sub-communicator
        // while the others wait, asleep, in the final barrier.
        let pair = w
            .split(if me < 2 { 0 } else { shmpi::UNDEFINED }, me)
            .map_err(|e| e.to_string())?;
        if let Some(p) = pair {
            let mut one = Opts {
                ranks: vec![2],
                ..o.clone()
            };
            one.test = Test::Latency;
            run_pair(&one, &p, &u)?;
        }
        w.barrier().map_err(|e| e.to_string())?;
        return u.finalize().map_err(|e| e.to_string());
    }
    run_pair(o, &w, &u)?;
    u.finalize().map_err(|e| e.to_string())
}

/// `--across-jobs`: this one-rank job spawns a second one (the same
/// command), the two merge their intercommunicator and run the pair
/// benchmark over it: every message crosses the bridge between the jobs.
/// Each binds itself to its CPU of `--cpus` (default the first two).
fn across_jobs(o: &Opts, mut u: shmpi::Universe) -> Result<(), String> {
    let r = across_jobs_pair(o, &mut u);
    if let Err(m) = &r {
        // The other job waits for this one (connected processes finalize
        // together): end both rather than hang.
        eprintln!("shmpi-bench: {m}");
        u.abort(1);
    }
    u.finalize().map_err(|e| e.to_string())
}

fn across_jobs_pair(o: &Opts, u: &mut shmpi::Universe) -> Result<(), String> {
    let e = |e: shmpi::Error| e.to_string();
    let cpus: Vec<usize> = o
        .cpus
        .as_deref()
        .and_then(shmpi::job::env::parse_cpus)
        .unwrap_or_else(|| vec![0, 1]);
    let (inter, child) = match u.take_parent() {
        Some(p) => (p, true),
        None => {
            let cmd = shmpi::comm::SpawnCommand {
                program: std::env::current_exe()
                    .map_err(|e| e.to_string())?
                    .display()
                    .to_string(),
                args: std::env::args().skip(1).collect(),
                maxprocs: 1,
                soft: Vec::new(),
            };
            let opts = shmpi::comm::SpawnOptions::default();
            (u.self_comm().spawn(&cmd, &opts, 0).map_err(e)?, false)
        }
    };
    if let Some(&c) = cpus.get(usize::from(child)) {
        shmpi::job::bootstrap::bind_set(Some(&[c])).map_err(|x| format!("bind to CPU {c}: {x}"))?;
    }
    let pair = inter.intercomm_merge(child).map_err(e)?;
    if !child && o.format == Format::Osu {
        println!("# across two jobs: a spawned job, every message over the bridge between them");
    }
    run_pair(o, &pair, u)?;
    pair.disconnect().map_err(e)?;
    inter.disconnect().map_err(e)
}

/// The point-to-point benchmark between the two ranks of `w`.
fn run_pair(o: &Opts, w: &shmpi::Communicator, u: &shmpi::Universe) -> Result<(), String> {
    let me = w.rank();
    let pool = o.alloc_mem.then_some(u);
    let (title, col) = match o.test {
        Test::Latency if o.irecv => ("Latency Test, receives by irecv + wait", "Latency (us)"),
        Test::Latency => ("Latency Test", "Latency (us)"),
        Test::Exchange => (
            "Exchange Test: irecv + isend + wait on both ranks at once",
            "Per exchange (us)",
        ),
        Test::Bw => ("Bandwidth Test", "Bandwidth (MB/s)"),
        Test::Bibw => ("Bi-Directional Bandwidth Test", "Bandwidth (MB/s)"),
        Test::Comm
        | Test::Coll(_)
        | Test::Floor
        | Test::Protocols
        | Test::Idle
        | Test::MbwMr
        | Test::Rma(_) => {
            unreachable!("handled before")
        }
    };
    let key = match o.test {
        Test::Latency => "latency_us",
        Test::Exchange => "exchange_us",
        _ => "bandwidth_mb_s",
    };
    // `--floor`: for bandwidth, one-core memcpy (MB/s) measured by the
    // launching process just before; for latency, the minimal ring
    // between the two ranks' CPUs, measured by rank 0 in bursts between
    // the ping-pong's (each row's figure is its own, `FloorBursts`), since
    // on these VMs the cores' placement, and with it every latency,
    // changes from one second to the next.
    let floor_cpus = if o.floor && o.test == Test::Latency {
        Some(floor_cpus(o)?)
    } else {
        None
    };
    let memcpy_floor = std::env::var(FLOOR_ENV)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|_| matches!(o.test, Test::Bw | Test::Bibw));
    let with_floor = floor_cpus.is_some() || memcpy_floor.is_some();
    let mut rows = Vec::new();
    if me == 0 {
        match (o.format, with_floor) {
            (Format::Osu, _) => {
                println!(
                    "# OSU-style MPI {title} (shmpi-bench {})",
                    env!("CARGO_PKG_VERSION")
                );
                // Which protocols the larger sizes take depends on it.
                println!("{}", placement_line(u, &u.protocols()).0);
                match memcpy_floor {
                    None if with_floor => println!(
                        "# floor, same run: the minimal ring (8 B one-way; the lower of its polls paced by PAUSE and finely) between the ranks' CPUs, \
                         timed in {FLOOR_BURSTS} bursts alternating with the ping-pong's; \
                         x floor = the median of each burst pair's latency / floor"
                    ),
                    Some(f) => println!(
                        "# floor, same run: one-core memcpy {f:.0} MB/s; x floor = bandwidth / floor"
                    ),
                    None => {}
                }
                if with_floor {
                    println!("# Size      {col:>18}   x floor");
                } else {
                    println!("# Size      {col:>18}");
                }
            }
            (Format::Csv, true) => println!("size,{key},x_floor"),
            (Format::Csv, false) => println!("size,{key}"),
            (Format::Json, _) => {}
        }
    }
    // Untimed warm-up (50,000 round trips of 8 bytes, about 10 ms) so the
    // first row is not measured on a cold core; the peers' harness
    // (tools/peers/osu_pingpong.c) does the same.
    let mut bufs = Buffers::new(sizes(o).into_iter().max().unwrap_or(0).max(8), pool);
    latency(w, &mut bufs, 8, 1, 50_000, Ping::default());
    let ping = Ping {
        irecv: o.irecv,
        touch: o.touch,
    };
    let window = |bi| Window {
        bi,
        plain: o.plain_isend,
        many: o.many_buffers,
        touch: o.touch,
    };
    for size in sizes(o) {
        let (iters, warm) = counts(o, size);
        let mut ratio = None;
        let v = match o.test {
            Test::Latency => match &floor_cpus {
                Some(cpus) => {
                    let b = latency_with_floor(w, &mut bufs, cpus, size, iters, warm, ping);
                    ratio = Some(b.ratio());
                    b.latency()
                }
                None => latency(w, &mut bufs, size, iters, warm, ping),
            },
            Test::Exchange => exchange(w, &mut bufs, size, iters, warm, o.touch),
            Test::Bw => bandwidth(w, &mut bufs, size, iters, warm, window(false)),
            Test::Bibw => bandwidth(w, &mut bufs, size, iters, warm, window(true)),
            Test::Comm
            | Test::Coll(_)
            | Test::Floor
            | Test::Protocols
            | Test::Idle
            | Test::Rma(_)
            | Test::MbwMr => {
                unreachable!("handled before")
            }
        };
        if me == 0 {
            // Latency: this row's own ratio; bandwidth: to the one floor.
            let x = ratio.or(memcpy_floor.map(|f| v / f));
            match (o.format, x) {
                (Format::Osu, Some(x)) => println!("{size:<10}{v:>18.2}{x:>10.2}"),
                (Format::Osu, None) => println!("{size:<10}{v:>18.2}"),
                (Format::Csv, Some(x)) => println!("{size},{v:.3},{x:.3}"),
                (Format::Csv, None) => println!("{size},{v:.3}"),
                (Format::Json, Some(x)) => rows.push(format!(
                    "{{\"size\":{size},\"{key}\":{v:.3},\"x_floor\":{x:.3}}}"
                )),
                (Format::Json, None) => rows.push(format!("{{\"size\":{size},\"{key}\":{v:.3}}}")),
            }
        }
    }
    if me == 0 && o.format == Format::Json {
        let test = format!("{:?}", o.test).to_lowercase();
        println!(
            "{{\"benchmark\":\"{test}\",\"results\":[{}]}}",
            rows.join(",")
        );
    }
    Ok(())
}

/// The machine's floor, measured here and now: the one-way latency of a
/// cache line bounced between two threads pinned to two CPUs (a sequence
/// word each side waits for, as a C ring with a flag in the slot does),
/// and the bandwidth of memcpy on one core (64 MiB, out of cache).
fn floor(o: &Opts) -> Result<(), String> {
    let f = measure_floor(o, o.iters.unwrap_or(1_000_000) as u64)?;
    if o.format != Format::Osu {
        // One row of the same figures (us; the ratios as they are;
        // memcpy in MB/s).
        let best = |v: [f64; 2]| v[0].min(v[1]) / 1000.0;
        let cols: [(&str, f64); 11] = [
            ("cache_line_us", best(f.line_ns)),
            ("cache_line_pause_us", f.line_ns[0] / 1000.0),
            ("cache_line_fine_us", f.line_ns[1] / 1000.0),
            ("ring_8b_us", best(f.ring_ns)),
            ("ring_8b_pause_us", f.ring_ns[0] / 1000.0),
            ("ring_8b_fine_us", f.ring_ns[1] / 1000.0),
            ("ring_64b_us", best(f.ring64_ns)),
            ("ring_64b_x_8b", f.ring64_x),
            ("transport_8b_us", f.transport_ns / 1000.0),
            ("transport_x_ring", f.transport_x),
            ("memcpy_mb_s", f.memcpy_mbs),
        ];
        let cpus = format!("{},{}", f.cpus[0], f.cpus[1]);
        if o.format == Format::Csv {
            let keys: Vec<&str> = cols.iter().map(|c| c.0).collect();
            let vals: Vec<String> = cols.iter().map(|c| format!("{:.3}", c.1)).collect();
            println!("cpus,{}", keys.join(","));
            println!("\"{cpus}\",{}", vals.join(","));
        } else {
            let kv: Vec<String> = cols
                .iter()
                .map(|(k, v)| format!("\"{k}\":{v:.3}"))
                .collect();
            println!(
                "{{\"benchmark\":\"floor\",\"results\":[{{\"cpus\":[{cpus}],{}}}]}}",
                kv.join(",")
            );
        }
        return Ok(());
    }
    println!(
        "# shmpi-bench floor (shmpi-bench {}): CPUs {} and {}",
        env!("CARGO_PKG_VERSION"),
        f.cpus[0],
        f.cpus[1]
    );
    let us = |v: [f64; 2]| [v[0].min(v[1]) / 1000.0, v[0] / 1000.0, v[1] / 1000.0];
    let [best, pause, fine] = us(f.line_ns);
    println!("cache-line one-way latency (us)  {best:>10.3}");
    println!("  paced by PAUSE / finely (us)   {pause:>10.3} {fine:>10.3}");
    let [best, pause, fine] = us(f.ring_ns);
    println!("ring one-way latency, 8 B (us)   {best:>10.3}");
    println!("  paced by PAUSE / finely (us)   {pause:>10.3} {fine:>10.3}");
    let [best64, pause, fine] = us(f.ring64_ns);
    println!(
        "ring one-way latency, 64 B (us)  {best64:>10.3}   {:.2} x the 8 B ring (two lines a slot)",
        f.ring64_x
    );
    println!("  paced by PAUSE / finely (us)   {pause:>10.3} {fine:>10.3}");
    println!(
        "transport one-way, 8 B (us)      {:>10.3}   {:.2} x the ring",
        f.transport_ns / 1000.0,
        f.transport_x
    );
    println!("memcpy bandwidth, one core (MB/s) {:>10.0}", f.memcpy_mbs);
    Ok(())
}

/// The machine's floor (see [`measure_floor`]).
struct Floor {
    cpus: Vec<usize>,
    /// One cache line bounced between the two CPUs, one way, paced by
    /// PAUSE and finely ([`PACINGS`]).
    line_ns: [f64; 2],
    /// An 8-byte message through a minimal SPSC ring whose receiver spins
    /// on a sequence word in the slot (the C ring of MEASUREMENTS.md), one
    /// way, paced by PAUSE and finely (medians over the bursts).
    ring_ns: [f64; 2],
    /// The same ring carrying 64 bytes, its slots across two lines
    /// ([`RING64_WORDS`]): the floor of a message that needs two lines.
    ring64_ns: [f64; 2],
    /// The median of `ring64 / ring` over bursts of each in turn (both
    /// the lower of their pacings).
    ring64_x: f64,
    /// The same through shmpi's transport alone (no MPI layer), one way.
    transport_ns: f64,
    /// The median of `transport_ns / ring` over bursts of each in turn,
    /// `ring` the lower of the burst's two pacings.
    transport_x: f64,
    /// One-core memcpy, 64 MiB, out of cache.
    memcpy_mbs: f64,
}

/// A ping-pong of 8-byte messages through two minimal rings of 64
/// slots, each slot a sequence word and a payload word on its own line:
/// the floor any shared-memory message passing starts from. One way, ns,
/// after `warm` untimed round trips: the lower of the two pacings
/// ([`ring_floor_paced`]).
fn ring_floor_warm(cpus: &[usize], iters: u64, warm: u64) -> f64 {
    let (pause, fine) = ring_floor_paced::<2>(cpus, iters, warm);
    pause.min(fine)
}

/// How a floor's waiting side paces its polls: PAUSE (`spin_loop`), or
/// `shmpi::ring::poll_pause` (LFENCE on x86-64), which sees a store
/// sooner where PAUSE is long (about 28 ns on this project's Zen 4 VMs).
/// The floor is the lower of the two.
const PACINGS: [fn(); 2] = [std::hint::spin_loop, shmpi::ring::poll_pause];

/// The minimal ring's one-way time (ns) paced by PAUSE, then finely, its
/// slots of `W` words ([`ring_floor_with`]).
fn ring_floor_paced<const W: usize>(cpus: &[usize], iters: u64, warm: u64) -> (f64, f64) {
    let t = PACINGS.map(|pace| ring_floor_with::<W>(cpus, iters, warm, pace));
    (t[0], t[1])
}

/// Words of a minimal-ring slot that carries 64 bytes: the sequence word
/// and eight payload words, 72 bytes, so two cache lines, as every frame
/// of a 64-byte message with a header of any size is.
const RING64_WORDS: usize = 9;

/// [`ring_floor_warm`] with one pacing, each slot `W` words: the sequence
/// word, then `W - 1` payload words (`W` = 2: the 8-byte ring, one line
/// per slot; [`RING64_WORDS`]: 64 bytes, the slot across two lines).
fn ring_floor_with<const W: usize>(cpus: &[usize], iters: u64, warm: u64, pace: fn()) -> f64 {
    use shmpi::sync::{AtomicU64, CachePadded, Ordering};
    const SLOTS: usize = 64;
    type Ring<const W: usize> = Vec<CachePadded<[AtomicU64; W]>>;
    let ring = || -> Ring<W> {
        (0..SLOTS)
            .map(|_| CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0))))
            .collect()
    };
    let (ping, pong) = (ring(), ring());
    // Waits for message `i` in `r`, returns its payload (the first word
    // plus the others).
    let take = |r: &Ring<W>, i: u64| {
        let s = &r[i as usize % SLOTS];
        // Acquire: pairs with the Release of the sequence word in `put`.
        while s[0].load(Ordering::Acquire) != i {
            pace();
        }
        // Relaxed: ordered after the Acquire above.
        s[1..]
            .iter()
            .fold(0u64, |a, w| a.wrapping_add(w.load(Ordering::Relaxed)))
    };
    let put = |r: &Ring<W>, i: u64, v: u64| {
        let s = &r[i as usize % SLOTS];
        for w in &s[1..] {
            // Relaxed: published by the Release of the sequence word.
            w.store(v, Ordering::Relaxed);
        }
        s[0].store(i, Ordering::Release);
    };
    pinned_pair(
        cpus,
        iters,
        warm,
        |i| {
            let v = take(&ping, i);
            put(&pong, i, v + 1);
        },
        |i| {
            put(&ping, i, i);
            std::hint::black_box(take(&pong, i));
        },
    )
}

/// Round trips between two threads pinned to `cpus[0]` (running `ping`)
/// and `cpus[1]` (running `echo`), step `i` = 1, 2, ...: after `warm`
/// untimed ones, the one-way time of `iters` more, in ns. Both sides on
/// threads of their own, so the calling thread keeps its affinity (a
/// launcher pinned here would pin its ranks' masks).
fn pinned_pair(
    cpus: &[usize],
    iters: u64,
    warm: u64,
    mut echo: impl FnMut(u64) + Send,
    mut ping: impl FnMut(u64) + Send,
) -> f64 {
    let pin = |c: usize| {
        core_affinity::set_for_current(core_affinity::CoreId { id: c });
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(cpus[1]);
            (1..=iters + warm).for_each(&mut echo);
        });
        s.spawn(|| {
            pin(cpus[0]);
            let mut t = Instant::now();
            for i in 1..=iters + warm {
                if i == warm + 1 {
                    t = Instant::now();
                }
                ping(i);
            }
            t.elapsed().as_nanos() as f64 / iters as f64 / 2.0
        })
        .join()
        .expect("a floor thread")
    })
}

/// The floor's two figures on `--cpus` (or the first two CPUs): the CPUs,
/// the cache line's one-way latency in ns over `iters` round trips, and
/// one-core memcpy MB/s.
fn measure_floor(o: &Opts, iters: u64) -> Result<Floor, String> {
    use shmpi::sync::{AtomicU64, CachePadded, Ordering};
    let cpus = floor_cpus(o)?;
    let ping = CachePadded::new(AtomicU64::new(0));
    let pong = CachePadded::new(AtomicU64::new(0));
    let mut line = [0.0; 2];
    for (k, pace) in PACINGS.into_iter().enumerate() {
        // Acquire/Release: the two words carry the ping-pong; no other
        // data is published through them. Each pacing starts the count
        // from 0 again, after its words are reset.
        ping.store(0, Ordering::Relaxed);
        pong.store(0, Ordering::Relaxed);
        let wait = |w: &AtomicU64, i: u64| {
            while w.load(Ordering::Acquire) != i {
                pace();
            }
        };
        line[k] = pinned_pair(
            &cpus,
            iters,
            1000,
            |i| {
                wait(&ping, i);
                pong.store(i, Ordering::Release);
            },
            |i| {
                ping.store(i, Ordering::Release);
                wait(&pong, i);
            },
        );
    }
    let b = ring_and_transport(&cpus, iters)?;
    let len = 64 << 20;
    let src = vec![1u8; len];
    let mut dst = vec![0u8; len];
    dst.copy_from_slice(&src); // fault the pages in
    let rounds = 8;
    let t = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(&mut dst).copy_from_slice(std::hint::black_box(&src));
    }
    std::hint::black_box(&dst);
    let mbs = (rounds * len) as f64 / t.elapsed().as_secs_f64() / 1e6;
    Ok(Floor {
        cpus,
        line_ns: line,
        ring_ns: b.ring_ns,
        ring64_ns: b.ring64_ns,
        ring64_x: b.ring64_x,
        transport_ns: b.transport_ns,
        transport_x: b.transport_x,
        memcpy_mbs: mbs,
    })
}

/// Bursts of `ring_and_transport`.
const TRANSPORT_BURSTS: u64 = 7;

/// What [`ring_and_transport`] measured: medians over its bursts (ns,
/// one way) and of the bursts' ratios.
struct Bursts {
    ring_ns: [f64; 2],
    ring64_ns: [f64; 2],
    ring64_x: f64,
    transport_ns: f64,
    transport_x: f64,
}

/// The ring floor, in both pacings ([`ring_floor_paced`]), the same ring
/// carrying 64 bytes ([`RING64_WORDS`]), and the 8-byte ping-pong through
/// shmpi's own transport without the MPI layer (what an embedder of
/// `shmpi::transport` gets: two `Transport`s on a segment of their own,
/// one per pinned thread, 8-byte sole frames sent with `try_send_eager`
/// and received with `wait_exact`, its polls paced by
/// `shmpi::ring::poll_pause`), in alternating bursts of
/// `iters / TRANSPORT_BURSTS` round trips, so that each set shares the
/// machine's state of the moment: the medians of each and of the bursts'
/// ratios (64-byte ring / ring, transport / ring, each against the lower
/// pacing).
fn ring_and_transport(cpus: &[usize], iters: u64) -> Result<Bursts, String> {
    use shmpi::shm::{segment_path, Segment};
    use shmpi::transport::{sole_head, Envelope, Exact, Layout, Transport};
    let layout = Layout::new(2, shmpi::transport::layout::SMALL_JOB_RING)?;
    let job = 0xf1_0000_0000 | u64::from(std::process::id());
    let path = segment_path(&shmpi::job::env::shm_dir(), job);
    let seg =
        Segment::create(&path, layout.spec(job)).map_err(|e| format!("{}: {e}", path.display()))?;
    seg.unlink();
    let seg = std::sync::Arc::new(seg);
    let mut a = Transport::new(seg.clone(), layout, 0).map_err(|e| e.to_string())?;
    let mut b = Transport::new(seg, layout, 1).map_err(|e| e.to_string())?;
    let env = Envelope([1; 16]);
    let head = sole_head(&env);
    let (mut abuf, mut bbuf) = ([0u8; 8], [0u8; 8]);
    let send = |t: &mut Transport, to: usize, v: u64| {
        while !t.try_send_eager(to, &env, &v.to_le_bytes()) {
            std::hint::spin_loop();
        }
    };
    let take = |t: &mut Transport, from: usize, buf: &mut [u8; 8]| {
        let got = t.wait_exact(from, &head, buf, || {
            shmpi::ring::poll_pause();
            true
        });
        assert_eq!(got, Exact::Taken(8), "the transport floor's message");
        u64::from_le_bytes(*buf)
    };
    let each = (iters / TRANSPORT_BURSTS).max(1);
    let (mut rings, mut rings64, mut transports) = (vec![], vec![], vec![]);
    let (mut ring64_x, mut transport_x) = (vec![], vec![]);
    for _ in 0..TRANSPORT_BURSTS {
        let (pause, fine) = ring_floor_paced::<2>(cpus, each, 1000);
        let r = pause.min(fine);
        let (pause64, fine64) = ring_floor_paced::<RING64_WORDS>(cpus, each, 1000);
        let t = pinned_pair(
            cpus,
            each,
            1000,
            |i| {
                let v = take(&mut b, 0, &mut bbuf);
                send(&mut b, 0, v + i);
            },
            |i| {
                send(&mut a, 1, i);
                std::hint::black_box(take(&mut a, 1, &mut abuf));
            },
        );
        rings.push([pause, fine]);
        rings64.push([pause64, fine64]);
        ring64_x.push(pause64.min(fine64) / r);
        transports.push(t);
        transport_x.push(t / r);
    }
    let each_pacing =
        |v: &[[f64; 2]]| [0, 1].map(|k| median(v.iter().map(|r: &[f64; 2]| r[k]).collect()));
    Ok(Bursts {
        ring_ns: each_pacing(&rings),
        ring64_ns: each_pacing(&rings64),
        ring64_x: median(ring64_x),
        transport_ns: median(transports),
        transport_x: median(transport_x),
    })
}

/// The protocol each message size takes on this build and environment.
fn protocols(o: &Opts, u: &shmpi::Universe) {
    let p = u.protocols();
    let shm_max = shmpi::transport::shmcoll::MAX_PAYLOAD;
    let single = match u.single_copy() {
        shmpi::shm::SingleCopy::Usable => "usable (the self-test read a peer's memory)",
        shmpi::shm::SingleCopy::Refused => {
            "refused or switched off: every message through the ring"
        }
        shmpi::shm::SingleCopy::Unknown => "not tested",
    };
    let size = |v: Option<usize>| v.map_or("never".to_string(), |n| format!("{n} B"));
    println!(
        "# shmpi-bench protocols: 2 ranks on this machine, ring {} B, eager limit {} B, \
         single copy from {} B for a plain isend, from {} for a blocking send, \
         shared with the sender from {} (a blocking send's from {}) (SHMPI_CMA={})",
        p.ring,
        p.eager_limit,
        p.cma_threshold,
        size(p.cma_blocking),
        size(p.cma_split),
        size(p.cma_split_blocking),
        p.cma_mode
    );
    println!("# single copy (process_vm_readv): {single}");
    if p.cpu_row == p.cpu_row_here {
        println!(
            "# defaults: the {} row, this CPU's (SHMPI_CPU_DEFAULTS)",
            p.cpu_row
        );
    } else {
        println!(
            "# defaults: the {} row, named by SHMPI_CPU_DEFAULTS (this CPU's: {})",
            p.cpu_row, p.cpu_row_here
        );
    }
    match shmpi::ring::vector_copy_from() {
        usize::MAX => println!("# ring copies: memcpy (SHMPI_VECTOR_COPY)"),
        n => println!("# ring copies: an AVX2 loop from {n} B, memcpy below (SHMPI_VECTOR_COPY)"),
    }
    match p.demote {
        Some(d) => println!(
            "# demotion (CLDEMOTE): ring frames of more than one cache line up to {d} B, \
             after a pause (SHMPI_DEMOTE)"
        ),
        None => println!("# demotion (CLDEMOTE): off (not on this CPU, or SHMPI_DEMOTE=0)"),
    }
    match p.claims {
        Some(d) => println!(
            "# claims (PREFETCHW): after a ring frame of more than one cache line up to {d} B \
             that follows a pause, the next frame's lines, when the rank next finds nothing \
             to receive (SHMPI_PREFETCHW)"
        ),
        None => println!(
            "# claims (PREFETCHW): off (no demotion and no SHMPI_PREFETCHW=1, not on this CPU, \
             or SHMPI_PREFETCHW=0)"
        ),
    }
    match p.hot_window {
        0 => println!("# hot window: off (SHMPI_HOT_WINDOW=0)"),
        w => println!(
            "# hot window: {w} B (a strict ping-pong's small frames end their lap there; \
             SHMPI_HOT_WINDOW)"
        ),
    }
    let (placement, distant) = placement_line(u, &p);
    println!("{placement}");
    let usable = u.single_copy() == shmpi::shm::SingleCopy::Usable;
    let distant_from = if distant { p.distant_from } else { None };
    // Where a scoped isend leaves the ring (`Transport::offer_to`).
    let offers_from = match p.cma_mode {
        _ if !usable => None,
        "always" => Some(p.cma_threshold),
        "auto" => match (p.cma_scoped, distant_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        },
        _ => None,
    };
    match offers_from {
        Some(t) => println!(
            "# a scoped isend: from {t} B by revocable rendezvous (read or shared as a plain isend's; \
             through the ring while {} of this rank's offers are unread), below as a blocking send on the ring",
            shmpi::shm::offers::OFFERS
        ),
        None if usable && p.cma_mode == "auto" => println!(
            "# a scoped isend: one ring frame up to the eager limit, pipelined above \
             (by revocable rendezvous only to a distant peer)"
        ),
        None => println!("# a scoped isend: one ring frame up to the eager limit, pipelined above"),
    }
    if usable && p.cma_mode == "auto" {
        let quiet = match p.cma_c_isend_quiet {
            Some(q) => format!(
                ", from {q} B while its receiver has taken every earlier message of this rank \
                 (SHMPI_CMA_C_ISEND_QUIET: an exchange's send, not a stream's)"
            ),
            None => String::new(),
        };
        println!(
            "# C MPI_Isend: by rendezvous from {} (SHMPI_CMA_C_ISEND){quiet}, its copy shared from {} \
             (its caller may be busy elsewhere); below, through the ring",
            size(p.cma_c_isend),
            size(p.cma_split)
        );
    } else if usable && p.cma_mode == "always" {
        println!(
            "# C MPI_Isend: as a blocking send, its copy shared from {}",
            size(p.cma_split)
        );
    }
    // Buffers of the shared pool: their receiver reads them out of its
    // mapping, with or without single copy.
    let shared = if usable {
        format!(
            ", the copy shared with the sender from {} (a blocking send's from {})",
            size(p.cma_split),
            size(p.cma_split_blocking)
        )
    } else {
        String::new()
    };
    println!(
        "# a pool buffer (alloc_mem, MPI_Alloc_mem): from {} B by rendezvous, copied once out of \
         the pool by the receiver (SHMPI_POOL_THRESHOLD){shared}",
        p.pool_threshold
    );
    if let (true, Some((from, below, ns))) = (usable, p.slow_read) {
        println!(
            "# blocking sends from {from} B, below {below} B: the receiver times its single-copy read \
             (slow above {ns} ns at 8 KiB, SHMPI_CMA_SLOW_READ); after {} slow reads in a row \
             (a buffer written just before its send) the sender's next {}-{} such sends take {}",
            shmpi::transport::fresh::STREAK,
            shmpi::transport::fresh::DETOUR_FIRST,
            shmpi::transport::fresh::DETOUR_MAX,
            match p.detour_shared_from {
                Some(s) if below > s => format!("the ring below {s} B, a shared copy from it"),
                _ => "the ring".to_string(),
            }
        );
    }
    if let (true, Some((c, plain, below))) = (usable, p.slow_read_posted) {
        let from = |f: usize| {
            if f < below {
                format!("from {f} B")
            } else {
                "none".to_string()
            }
        };
        println!(
            "# sends that do not wait, below {below} B (C MPI_Isend: {}; a plain isend: {}): \
             timed the same, their detour the ring",
            from(c),
            from(plain)
        );
    }
    let on = p.cma_mode == "auto" || p.cma_mode == "always";
    let tuning = shmpi::coll::tuning::tuning();
    println!(
        "# bcast and reduce by messages: their sends synchronous from {} (SHMPI_COLL_LARGE){}",
        size(Some(tuning.large)),
        if usable && on {
            format!(
                ", and from {} (SHMPI_COLL_SYNC) where a blocking send's is a rendezvous, \
                 which they then take",
                size(Some(tuning.sync))
            )
        } else {
            String::new()
        }
    );
    println!("# Size      blocking send                          plain isend (buffer kept by the request)      small collectives (per member)");
    let rdv_from = |s: usize, split: Option<usize>| {
        if split.is_some_and(|t| s >= t) {
            "rendezvous: copy shared, 2 cores"
        } else {
            "rendezvous: single copy"
        }
    };
    // A frame longer than its header line: the message and its wire
    // header past one cache line.
    // Frames to a distant peer stream from STREAM_MIN.
    let streams = |s: usize| distant && s >= shmpi::transport::placement::STREAM_MIN;
    let one_frame = |s: usize| {
        let multi_line =
            shmpi::ring::FRAME_HEADER + s + shmpi::transport::SOLE_HEADER > shmpi::ring::LINE;
        if streams(s) {
            "eager: one ring frame, streamed"
        } else if multi_line && p.demote.is_some_and(|d| s <= d) {
            "eager: one ring frame, demoted"
        } else {
            "eager: one ring frame"
        }
    };
    let distant_pieces = format!("pipelined: {} B fragments, streamed", p.distant_fragment);
    // One sole frame: up to the eager limit, and to a distant peer (whose
    // long frames stream) up to its fragment size.
    let whole = |s: usize| s <= p.eager_limit && !(streams(s) && s > p.distant_fragment);
    let mut s = 0usize;
    while s <= o.max {
        let blocking_from = if p.cma_mode == "always" {
            Some(p.cma_threshold)
        } else {
            p.cma_blocking
        };
        let blocking_from = blocking_from.into_iter().chain(distant_from).min();
        let blocking = if usable && on && blocking_from.is_some_and(|t| s >= t) {
            rdv_from(s, p.cma_split_blocking)
        } else if whole(s) {
            one_frame(s)
        } else if streams(s) {
            distant_pieces.as_str()
        } else {
            "pipelined: ring fragments, 2 copies"
        };
        let nonblocking =
            if usable && on && (s >= p.cma_threshold || distant_from.is_some_and(|t| s >= t)) {
                rdv_from(s, p.cma_split)
            } else if whole(s) {
                one_frame(s)
            } else {
                "ring fragments, the rest copied first"
            };
        let coll = if s <= 48 {
            "collective region, in the flag line"
        } else if s <= shm_max {
            "collective region, payload buffer"
        } else {
            "messages (tree / ring algorithms)"
        };
        println!("{s:<10}  {blocking:<38} {nonblocking:<44}  {coll}");
        s = if s == 0 { 1 } else { s * 2 };
    }
}

/// Rank 1 blocks in a receive; rank 0 waits 10 ms, then reads the CPU
/// time rank 1's thread accumulates over the next `--iterations`
/// milliseconds (default 1000) from /proc (schedstat: nanoseconds on a
/// CPU), and releases it.
/// osu_put_latency / osu_get_latency / osu_acc_latency, passive target:
/// rank 0 holds `lock_all` on a shared window and times one operation of
/// each size on rank 1's memory followed by a flush; rank 1 only waits.
fn rma(o: &Opts, w: &shmpi::Communicator, k: RmaKind) -> Result<(), String> {
    let e = |e: shmpi::Error| e.to_string();
    if w.size() != 2 {
        return Err(format!("shmpi-bench {k:?} needs exactly 2 ranks"));
    }
    let max = o.max;
    let win = w
        .win_allocate_shared(if w.rank() == 1 { max } else { 0 }, 1)
        .map_err(e)?;
    let mut table = (w.rank() == 0).then(|| {
        let (what, op) = match k {
            RmaKind::Put => ("Put", "MPI_Put"),
            RmaKind::Get => ("Get", "MPI_Get"),
            RmaKind::Acc => ("Accumulate", "MPI_Accumulate (MPI_SUM of MPI_INT)"),
        };
        let osu = [
            format!(
                "# OSU-style MPI_{what} Latency Test (shmpi-bench {}), {op}, lock_all + flush",
                env!("CARGO_PKG_VERSION")
            ),
            "# Size          Latency (us)".to_string(),
        ];
        let name = format!("{k:?}").to_lowercase();
        Table::new(o.format, &name, &osu, &["size", "latency_us"]).with_osu_decimals(3)
    });
    let mut buf = vec![1i32; max.div_ceil(4)];
    for size in sizes(o).into_iter().filter(|&s| s > 0) {
        let (iters, warm) = counts(o, size);
        w.barrier().map_err(e)?;
        if w.rank() == 0 {
            let acc_src = vec![1i32; size.div_ceil(4)];
            let bytes = shmpi::transport::bytes::as_bytes_mut(&mut buf[..]);
            win.lock_all().map_err(e)?;
            let mut t0 = Instant::now();
            for i in 0..warm + iters {
                if i == warm {
                    t0 = Instant::now();
                }
                match k {
                    RmaKind::Put => win.put(&bytes[..size], 1, 0).map_err(e)?,
                    RmaKind::Get => win.get(&mut bytes[..size], 1, 0).map_err(e)?,
                    RmaKind::Acc => win.accumulate(&acc_src, 1, 0, &shmpi::Op::Sum).map_err(e)?,
                }
                win.flush().map_err(e)?;
            }
            let t = t0.elapsed().as_secs_f64() * 1e6 / iters as f64;
            win.unlock_all().map_err(e)?;
            if let Some(table) = table.as_mut() {
                table.row(size, &[t]);
            }
        }
        w.barrier().map_err(e)?;
    }
    if let Some(t) = table {
        t.finish();
    }
    win.free().map_err(e)
}

fn idle(o: &Opts, w: &shmpi::Communicator) -> Result<(), String> {
    let window = o.iters.unwrap_or(1000) as u64;
    if w.rank() == 1 {
        w.send(&[std::process::id()], 0, 1)
            .map_err(|e| e.to_string())?;
        let mut go = [0u8; 1];
        w.recv(&mut go, 0, 2).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let mut pid = [0u32];
    w.recv(&mut pid, 1, 1).map_err(|e| e.to_string())?;
    // Every thread of the rank's process (the one blocked in recv, and
    // any the library started, as the single-copy target's), summed.
    let on_cpu = || -> Result<u64, String> {
        let dir = format!("/proc/{}/task", pid[0]);
        let tasks = std::fs::read_dir(&dir).map_err(|e| format!("{dir}: {e}"))?;
        let mut ns = 0;
        for t in tasks {
            let path = t
                .map_err(|e| format!("{dir}: {e}"))?
                .path()
                .join("schedstat");
            // A thread that ended since the listing counts nothing more.
            let Ok(s) = std::fs::read_to_string(&path) else {
                continue;
            };
            ns += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("{}: unexpected {s:?}", path.display()))?;
        }
        Ok(ns)
    };
    std::thread::sleep(std::time::Duration::from_millis(10));
    let (t0, c0) = (Instant::now(), on_cpu()?);
    std::thread::sleep(std::time::Duration::from_millis(window));
    let (t1, c1) = (Instant::now(), on_cpu()?);
    w.send(&[1u8], 1, 2).map_err(|e| e.to_string())?;
    // (A thread that ended between the two samples takes its time away.)
    let pct = c1.saturating_sub(c0) as f64 / (t1 - t0).as_nanos() as f64 * 100.0;
    println!(
        "# shmpi-bench idle: a rank blocked in recv, measured from 10 ms after it blocked \
         (all its process's threads)"
    );
    println!(
        "idle rank CPU (% of a core over {} ms)  {pct:.3}",
        (t1 - t0).as_millis()
    );
    Ok(())
}

/// The first two CPUs this process may run on, as "a,b".
fn default_cpus() -> Option<String> {
    let ids = core_affinity::get_core_ids()?;
    (ids.len() >= 2).then(|| format!("{},{}", ids[0].id, ids[1].id))
}

/// Runs this binary as a 2-rank job through the library's launcher (the
/// same code as `shmpiexec`), pinned to two CPUs.
fn launch_self(o: &Opts, args: &[String], nranks: usize) -> Result<i32, String> {
    launch_self_with(o, args, nranks, Vec::new())
}

/// [`launch_self`] with `env` set in the ranks too.
fn launch_self_with(
    o: &Opts,
    args: &[String],
    nranks: usize,
    env: Vec<(String, Option<String>)>,
) -> Result<i32, String> {
    use shmpi::job::{self, JobSpec, SegmentShape};
    use shmpi::transport::{default_ring_capacity, Layout};
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let cpus = match o.cpus.clone().or_else(default_cpus) {
        Some(list) => list
            .split(',')
            .map(|c| {
                c.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("--cpus: {c:?} is not a CPU number"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let cpus = if o.cpus.is_none() && matches!(o.test, Test::Comm | Test::Coll(_) | Test::MbwMr) {
        // Jobs of more than a pair: each rank on a CPU of its own, the
        // first `nranks` this process may use (mbw_mr's pair k, ranks k
        // and k + P, on two of them), or, where there are not that many,
        // unpinned. `--cpus` wins: rank i on its (i mod length)th CPU.
        let all: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .iter()
            .map(|c| c.id)
            .collect();
        if all.len() >= nranks {
            all[..nranks].to_vec()
        } else {
            Vec::new()
        }
    } else {
        cpus
    };
    let ring = std::env::var(job::env::RING_SIZE)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| default_ring_capacity(nranks));
    let layout = Layout::new(nranks, ring)?;
    let spec = JobSpec {
        cpusets: Vec::new(),
        nranks,
        program: me.display().to_string(),
        args: args.to_vec(),
        tag_output: false,
        env,
        cpus,
        shm_dir: job::env::shm_dir(),
        more: Vec::new(),
        timeout: None,
    };
    let shape = SegmentShape {
        size: layout.size() as u64,
        layout_digest: layout.digest(),
        ring_size: ring,
    };
    let outcome = job::run(&spec, shape)?;
    if let Some(f) = &outcome.failure {
        eprintln!("shmpi-bench: {f}");
    }
    Ok(outcome.code)
}

fn main() -> ExitCode {
    if std::env::var_os(shmpi::job::env::JOB_ID).is_some() {
        // A rank writing into a closed pipe ends by SIGPIPE, which its
        // launcher reports and cleans up after, instead of panicking.
        // The launcher itself keeps ignoring SIGPIPE so that it outlives
        // its ranks and tears the job down.
        shmpi::shm::os::default_sigpipe();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(m) => {
            eprintln!("shmpi-bench: {m}");
            return ExitCode::from(2);
        }
    };
    if o.test == Test::Floor {
        return match floor(&o) {
            Ok(()) => ExitCode::SUCCESS,
            Err(m) => {
                eprintln!("shmpi-bench: {m}");
                ExitCode::from(1)
            }
        };
    }
    if o.cpus.is_none() && std::env::var_os(shmpi::job::env::JOB_ID).is_none() {
        if let Some(c) = default_cpus() {
            // Set before any thread or rank starts; the ranks inherit it.
            std::env::set_var(CPUS_ENV, c);
        }
    }
    // Latency's floor is measured by the ranks themselves, in bursts
    // between the ping-pong's (`latency_with_floor`).
    if o.floor
        && matches!(o.test, Test::Bw | Test::Bibw)
        && std::env::var_os(shmpi::job::env::JOB_ID).is_none()
    {
        match measure_floor(&o, 200_000) {
            // Set before any thread or rank starts; the ranks inherit it.
            Ok(f) => std::env::set_var(FLOOR_ENV, f.memcpy_mbs.to_string()),
            Err(m) => {
                eprintln!("shmpi-bench: --floor: {m}");
                return ExitCode::from(1);
            }
        }
    }
    let r = if std::env::var_os(shmpi::job::env::JOB_ID).is_some() {
        run_rank(&o).map(|_| 0)
    } else if o.test == Test::Comm {
        comm_header(&o, false);
        // Each job is told whether it comes first (JSON: no comma before
        // its row).
        let r = o.ranks.iter().enumerate().try_fold(0, |code, (i, &n)| {
            let first = vec![(
                COMM_FIRST_ENV.to_string(),
                Some(u8::from(i == 0).to_string()),
            )];
            launch_self_with(&o, &args, n, first).map(|c| if code != 0 { code } else { c })
        });
        comm_header(&o, true);
        r
    } else if let Test::Coll(_) = o.test {
        launch_self(&o, &args, o.ranks[0])
    } else if o.test == Test::MbwMr {
        let n = if args.iter().any(|a| a == "--ranks") {
            o.ranks[0]
        } else {
            2
        };
        launch_self(&o, &args, n)
    } else if o.across_jobs {
        // One rank here; it spawns the other job.
        launch_self(&o, &args, 1)
    } else if o.test == Test::Latency && args.iter().any(|a| a == "--ranks") {
        // A ping-pong between ranks 0 and 1 inside a larger, idle job.
        launch_self(&o, &args, o.ranks[0].max(2))
    } else {
        launch_self(&o, &args, 2)
    };
    match r {
        Ok(c) => ExitCode::from(c.clamp(0, 255) as u8),
        Err(m) => {
            eprintln!("shmpi-bench: {m}");
            ExitCode::from(1)
        }
    }
}

/// The start-up placement probe's line for the other rank of the pair
/// (`# placement ...`), and whether it found that rank distant.
fn placement_line(u: &shmpi::Universe, p: &shmpi::Protocols) -> (String, bool) {
    // The peer of this table: the other rank of the pair.
    let peer = 1 - u.world().rank().min(1) as usize;
    let (hand_off, distant) = p.peers.get(peer).copied().unwrap_or((None, false));
    let measured = match hand_off {
        Some(ns) => format!(
            "one-way cache-line hand-off {:.3} us",
            f64::from(ns) / 1000.0
        ),
        None if p.distant_mode == "auto" => {
            "not measured (more ranks than CPUs, or a missed deadline)".into()
        }
        None => "no probe".into(),
    };
    let stream = shmpi::transport::placement::STREAM_MIN;
    let line = format!(
        "# placement (SHMPI_DISTANT={}): rank {peer} {measured}: {}",
        p.distant_mode,
        match (distant, p.distant_from) {
            (true, _) if u.single_copy() != shmpi::shm::SingleCopy::Usable => {
                format!("distant, its ring frames from {stream} B streamed; without single copy all its messages go through the ring")
            }
            (true, Some(d)) => format!(
                "distant, its ring frames from {stream} B streamed, its blocking sends and isends (plain and scoped) by rendezvous from {d} B (SHMPI_DISTANT_RENDEZVOUS)"
            ),
            (true, None) => format!(
                "distant, its ring frames from {stream} B streamed, but SHMPI_DISTANT_RENDEZVOUS=0"
            ),
            (false, _) => match p.distant_ns {
                Some(ns) if hand_off.is_some() => format!("near (distant above {ns} ns, SHMPI_DISTANT_NS)"),
                None if hand_off.is_some() => {
                    "near (no hand-off makes a peer distant on this CPU; SHMPI_DISTANT_NS sets one)".into()
                }
                _ => "near".into(),
            },
        },
    ) + &if p.distant_mode == "auto" && hand_off.is_some() && p.distant_ns.is_some() {
        format!(
            "; followed while the job runs (the rate of its ring copies of {} B and more)",
            p.watch_min
        )
    } else {
        String::new()
    };
    (line, distant)
}
