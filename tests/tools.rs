//! The tools as users run them: `shmpi-bench` launches itself and prints
//! its tables.

mod support;

use std::process::Command;
use std::time::Duration;

fn bench(args: &[&str]) -> String {
    let o = support::output_bounded(
        Command::new(env!("CARGO_BIN_EXE_shmpi-bench")).args(args),
        Duration::from_secs(120),
    );
    assert!(
        o.status.success(),
        "shmpi-bench {args:?}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Rows of numbers (lines not starting with '#').
fn rows(out: &str) -> Vec<Vec<f64>> {
    out.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect()
}

/// The sizes of `shmpi-bench args --min-size min --max-size max` with 20
/// timed iterations (2 warm-up) a size, once every row is seen to carry
/// one positive figure.
fn sized_run(args: &[&str], min: &str, max: &str) -> Vec<f64> {
    sized_output(args, min, max).1
}

/// [`sized_run`], with the whole output.
fn sized_output(args: &[&str], min: &str, max: &str) -> (String, Vec<f64>) {
    let mut all = args.to_vec();
    all.extend([
        "--min-size",
        min,
        "--max-size",
        max,
        "--iterations",
        "20",
        "--warmup",
        "2",
    ]);
    let out = bench(&all);
    let r = rows(&out);
    assert!(
        r.iter().all(|r| r.len() == 2 && r[1] > 0.0),
        "{all:?}: {out}"
    );
    let sizes = r.iter().map(|r| r[0]).collect();
    (out, sizes)
}

/// That `shmpi-bench args` is refused (not ignored) with a line on stderr
/// that contains `says`.
fn refused(args: &[&str], says: &str) {
    let o = support::output_bounded(
        Command::new(env!("CARGO_BIN_EXE_shmpi-bench")).args(args),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} ran: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

/// `shmpi-bench protocols --max-size max` under `env` (bounded): its
/// output, once it is seen to have run.
fn protocols(max: &str, env: &[(&str, &str)]) -> String {
    let o = support::output_bounded(
        Command::new(env!("CARGO_BIN_EXE_shmpi-bench"))
            .args(["protocols", "--max-size", max])
            .envs(env.iter().copied()),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn shmpi_bench_latency_prints_one_positive_row_per_size() {
    let out = bench(&[
        "latency",
        "--max-size",
        "64",
        "--iterations",
        "200",
        "--warmup",
        "20",
    ]);
    let r = rows(&out);
    let sizes: Vec<f64> = r.iter().map(|r| r[0]).collect();
    assert_eq!(sizes, [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0], "{out}");
    assert!(r.iter().all(|r| r.len() == 2 && r[1] > 0.0), "{out}");
}

/// `--across-jobs`: the second rank is a spawned job; the rows come over
/// the bridge, and nothing is left behind.
#[test]
fn shmpi_bench_latency_across_jobs_runs_over_a_bridge() {
    let out = bench(&[
        "latency",
        "--across-jobs",
        "--max-size",
        "65536",
        "--iterations",
        "100",
        "--warmup",
        "10",
    ]);
    assert!(out.contains("across two jobs"), "{out}");
    let r = rows(&out);
    assert_eq!(r.len(), 18, "sizes 0 to 64 KiB: {out}");
    assert!(r.iter().all(|r| r.len() == 2 && r[1] > 0.0), "{out}");
    support::assert_no_segments_left();
}

#[test]
fn shmpi_bench_comm_times_dup_split_and_create_for_each_rank_count() {
    let out = bench(&[
        "comm",
        "--ranks",
        "2,3",
        "--iterations",
        "50",
        "--warmup",
        "5",
    ]);
    let r = rows(&out);
    assert_eq!(r.len(), 2, "{out}");
    assert_eq!((r[0][0], r[1][0]), (2.0, 3.0), "{out}");
    assert!(
        r.iter()
            .all(|r| r.len() == 4 && r[1..].iter().all(|&v| v > 0.0)),
        "{out}"
    );
    assert!(out.contains("dup (us)"), "{out}");
}

#[test]
fn shmpi_bench_collectives_print_osu_rows() {
    let out = bench(&["barrier", "--iterations", "100"]);
    let r = rows(&out);
    assert_eq!(r.len(), 1, "{out}");
    assert_eq!(r[0][0], 0.0);
    assert!(r[0][1] > 0.0, "{out}");
    for coll in ["bcast", "reduce", "allreduce", "allgather", "alltoall"] {
        let out = bench(&[
            coll,
            "--ranks",
            "3",
            "--max-size",
            "4096",
            "--iterations",
            "20",
        ]);
        let r = rows(&out);
        assert!(
            !r.is_empty() && r.iter().all(|r| r.len() == 2 && r[1] > 0.0),
            "{coll}: {out}"
        );
        assert_eq!(r.last().unwrap()[0], 4096.0, "{coll}: {out}");
    }
}

/// The CSV rows of `out` under its header `keys` (panics on a row of
/// another width or a value that is not a positive number).
fn csv_rows(out: &str, keys: &str) -> Vec<Vec<f64>> {
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(keys), "{out}");
    lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            assert_eq!(v.len(), keys.split(',').count(), "{out}");
            assert!(v.iter().all(|&x| x >= 0.0), "{out}");
            v
        })
        .collect()
}

/// That `out` is one JSON object of `benchmark` whose results hold
/// `n` rows, each with `key` (a shallow check: no JSON parser here).
fn json_rows(out: &str, benchmark: &str, key: &str, n: usize) {
    let t: String = out.split_whitespace().collect();
    assert!(
        t.starts_with(&format!("{{\"benchmark\":\"{benchmark}\",\"results\":[{{"))
            && t.ends_with("}]}"),
        "{out}"
    );
    assert_eq!(t.matches(&format!("\"{key}\":")).count(), n, "{out}");
    assert_eq!(t.matches("},{").count(), n - 1, "{out}");
}

/// Every benchmark that prints rows prints them in `--format csv` and
/// `json` as well as OSU's columns; an option a benchmark does not take
/// is refused naming what it takes, not ignored.
#[test]
fn shmpi_bench_formats_every_benchmark_and_refuses_options_it_does_not_take() {
    let r = csv_rows(
        &bench(&[
            "allreduce",
            "--max-size",
            "64",
            "--iterations",
            "20",
            "--format",
            "csv",
        ]),
        "size,avg_latency_us",
    );
    assert_eq!(
        r.iter().map(|r| r[0]).collect::<Vec<_>>(),
        [4.0, 8.0, 16.0, 32.0, 64.0]
    );
    json_rows(
        &bench(&["barrier", "--iterations", "20", "--format", "json"]),
        "barrier",
        "avg_latency_us",
        1,
    );
    let r = csv_rows(
        &bench(&[
            "mbw_mr",
            "--max-size",
            "8",
            "--iterations",
            "5",
            "--format",
            "csv",
        ]),
        "size,mb_per_s,messages_per_s",
    );
    assert_eq!(r.len(), 4);
    json_rows(
        &bench(&[
            "put",
            "--max-size",
            "16",
            "--iterations",
            "20",
            "--format",
            "json",
        ]),
        "put",
        "latency_us",
        2,
    );
    // comm's rank counts are jobs of their own, one row each, inside
    // the one object the launching process opens and closes (a count
    // given twice too).
    for ranks in ["2,3", "2,2"] {
        json_rows(
            &bench(&[
                "comm",
                "--ranks",
                ranks,
                "--iterations",
                "5",
                "--format",
                "json",
            ]),
            "comm",
            "dup_us",
            2,
        );
    }
    let floor = bench(&["floor", "--iterations", "2000", "--format", "csv"]);
    assert!(floor.starts_with("cpus,cache_line_us,"), "{floor}");
    assert_eq!(floor.lines().count(), 2, "{floor}");
    // Refused: sizes where there is no data, a format where there are
    // no rows, a list of rank counts where one job runs, options of
    // other benchmarks.
    let cases: [(&[&str], &str); 7] = [
        (
            &["barrier", "--max-size", "8"],
            "--max-size is not an option of barrier; it takes --cpus --format --ranks",
        ),
        (
            &["protocols", "--format", "csv"],
            "--format is not an option of protocols",
        ),
        (
            &["idle", "--min-size", "8"],
            "--min-size is not an option of idle",
        ),
        (
            &["floor", "--warmup", "8"],
            "--warmup is not an option of floor",
        ),
        (
            &["comm", "--max-size", "8"],
            "--max-size is not an option of comm",
        ),
        (&["bw", "--ranks", "4"], "--ranks is not an option of bw"),
        (
            &["bcast", "--ranks", "2,4"],
            "--ranks takes one rank count for bcast (a list for comm)",
        ),
    ];
    for (args, says) in cases {
        refused(args, says);
    }
}

fn topo(args: &[&str]) -> std::process::Output {
    support::output_bounded(
        Command::new(env!("CARGO_BIN_EXE_shmpi-topo")).args(args),
        Duration::from_secs(60),
    )
}

#[test]
fn shmpi_topo_prints_the_tree_the_placement_and_the_pair_classes() {
    let o = topo(&[
        "--topology",
        "pack:2 numa:2 core:4 pu:2",
        "-n",
        "16",
        "--map-by",
        "numa",
        "--bind-to",
        "core",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.starts_with("machine: 2 packages, 4 NUMA nodes, 0 L3, 16 cores, 32 PUs"),
        "{out}"
    );
    // Round-robin over the NUMA nodes, one core each.
    for (rank, cpus, numa) in [
        (0, "0-1", 0),
        (1, "8-9", 1),
        (2, "16-17", 2),
        (3, "24-25", 3),
        (4, "2-3", 0),
    ] {
        let row = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&rank.to_string()) && l.contains(cpus))
            .unwrap_or_else(|| panic!("no row for rank {rank}: {out}"));
        assert!(row.trim_end().ends_with(&numa.to_string()), "{row}");
    }
    assert!(out.contains("copy per pair:"), "{out}");
    assert!(out.contains("segment:"), "{out}");
    // This machine, and a bad description.
    assert!(topo(&[]).status.success());
    let bad = topo(&["--topology", "bogus:3"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("synthetic topology"));
}

/// The blocking send's column of `shmpi-bench protocols`' row for `size`
/// (after the 10-wide size and two spaces); panics when there is no such
/// row.
fn blocking_column(out: &str, size: &str) -> String {
    let row = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(size))
        .unwrap_or_else(|| panic!("no row for {size}: {out}"));
    row[12..].to_string()
}

#[test]
fn shmpi_cpu_defaults_picks_another_cpus_row_of_thresholds() {
    // Each row's single-copy thresholds for a plain isend and a blocking
    // send, named whatever this CPU is; this CPU's own row named too.
    for (row, isend, blocking) in [
        ("intel", "8192 B", "8192 B"),
        ("amd-family-23", "262144 B", "65536 B"),
        ("amd-family-25", "262144 B", "never"),
        ("other", "262144 B", "never"),
    ] {
        let out = protocols("8", &[("SHMPI_CPU_DEFAULTS", row)]);
        assert!(
            out.contains(&format!(
                "single copy from {isend} for a plain isend, from {blocking} for a blocking send"
            )),
            "{row}: {out}"
        );
        let line = out
            .lines()
            .find(|l| l.starts_with("# defaults: "))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(
            line.starts_with(&format!("# defaults: the {row} row, ")),
            "{out}"
        );
        // This CPU's row is named as such; another as the variable's.
        let here = line.contains("this CPU's (SHMPI_CPU_DEFAULTS)");
        assert_eq!(here, !line.contains("named by SHMPI_CPU_DEFAULTS"), "{out}");
    }
    // A variable set still wins over the row it names.
    let out = protocols(
        "8",
        &[("SHMPI_CPU_DEFAULTS", "intel"), ("SHMPI_CMA_BLOCKING", "0")],
    );
    assert!(out.contains("from never for a blocking send"), "{out}");
    // Unset (or empty): this CPU's own row.
    let out = protocols("8", &[("SHMPI_CPU_DEFAULTS", "")]);
    assert!(
        out.contains("row, this CPU's (SHMPI_CPU_DEFAULTS)"),
        "{out}"
    );
}

#[test]
fn shmpi_bench_floor_and_protocols_print_their_tables() {
    if support::online_cpus() >= 2 {
        let out = bench(&["floor", "--iterations", "20000"]);
        let lat = out
            .lines()
            .find(|l| l.starts_with("cache-line one-way latency"))
            .unwrap();
        let v: f64 = lat.split_whitespace().last().unwrap().parse().unwrap();
        assert!(v > 0.0, "{out}");
        // The ring carrying 64 bytes, and its ratio to the 8-byte ring.
        let r = out
            .lines()
            .find(|l| l.starts_with("ring one-way latency, 64 B"))
            .unwrap();
        let w: Vec<&str> = r.split_whitespace().collect();
        let (us, x): (f64, f64) = (w[6].parse().unwrap(), w[7].parse().unwrap());
        assert!(us > 0.0 && x > 0.0, "{out}");
        // The transport alone, and its ratio to the ring.
        let t = out
            .lines()
            .find(|l| l.starts_with("transport one-way, 8 B"))
            .unwrap();
        let w: Vec<&str> = t.split_whitespace().collect();
        assert_eq!(w[w.len() - 3..][1..], ["the", "ring"], "{out}");
        let (us, x): (f64, f64) = (w[5].parse().unwrap(), w[6].parse().unwrap());
        assert!(us > 0.0 && x > 0.0, "{out}");
        assert!(out.contains("memcpy bandwidth"), "{out}");
    }
    // The thresholds set, since their defaults depend on the CPU: a
    // blocking send on the ring, a plain isend by single copy from
    // 256 KiB, shared with the sender from 512 KiB.
    let out = protocols(
        "1048576",
        &[
            ("SHMPI_CMA_BLOCKING", "0"),
            ("SHMPI_CMA_THRESHOLD", "262144"),
            ("SHMPI_CMA_SPLIT", "524288"),
            // Whatever the placement of the moment (below for the probe).
            ("SHMPI_DISTANT", "none"),
        ],
    );
    let row = |size: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(size))
            .unwrap()
            .to_string()
    };
    assert!(
        row("8").contains("eager") && row("8").contains("flag line"),
        "{out}"
    );
    assert!(row("65536").contains("eager"), "{out}");
    assert!(out.contains("# ring copies: "), "{out}");
    // Demotion where the CPU has CLDEMOTE: frames past one line, up to
    // 8 KiB by default (the table's 8 KiB sends go by rendezvous).
    // Where it claims the next frame's lines too (PREFETCHW), the hot
    // window is 32 KiB, else 4 KiB; SHMPI_PREFETCHW=0 turns the claims
    // off and the window back.
    let claims = out.contains("# claims (PREFETCHW): after a ring frame");
    if out.contains("# demotion (CLDEMOTE): ring frames") {
        assert!(row("4096").contains("one ring frame, demoted"), "{out}");
        assert!(!row("32").contains("demoted"), "one line: {out}");
        assert!(!row("16384").contains("demoted"), "{out}");
        let off = protocols("8", &[("SHMPI_DISTANT", "none"), ("SHMPI_PREFETCHW", "0")]);
        assert!(off.contains("# claims (PREFETCHW): off"), "{off}");
        assert!(off.contains("# hot window: 4096 B "), "{off}");
        // Claims without demotion, asked for: the larger window again.
        let only = protocols(
            "8",
            &[
                ("SHMPI_DISTANT", "none"),
                ("SHMPI_DEMOTE", "0"),
                ("SHMPI_PREFETCHW", "1"),
            ],
        );
        assert!(only.contains("# demotion (CLDEMOTE): off"), "{only}");
        // Up to SHMPI_DEMOTE's default, 8 KiB (and the last line's
        // spare bytes).
        let limit: usize = only
            .lines()
            .find_map(|l| {
                l.strip_prefix(
                    "# claims (PREFETCHW): after a ring frame of more than one cache line up to ",
                )
            })
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{only}"));
        assert!((8192..8192 + 64).contains(&limit), "{only}");
        assert!(only.contains("# hot window: 32768 B "), "{only}");
    } else {
        assert!(out.contains("# demotion (CLDEMOTE): off"), "{out}");
        assert!(!out.contains("demoted"), "{out}");
        assert!(!claims, "{out}");
    }
    let window = if claims { "32768" } else { "4096" };
    assert!(out.contains(&format!("# hot window: {window} B ")), "{out}");
    assert!(
        out.contains("# placement (SHMPI_DISTANT=none): rank 1 no probe: near"),
        "{out}"
    );
    assert!(row("131072").contains("pipelined"), "{out}");
    assert!(row("512").contains("messages"), "{out}");
    assert!(out.contains("from never for a blocking send"), "{out}");
    // A plain isend from the single-copy threshold: rendezvous when this
    // machine's self-test passed, else copied; shared from 512 KiB.
    let (mid, big) = (row("262144"), row("1048576"));
    if out.contains("single copy (process_vm_readv): usable") {
        assert!(mid.contains("rendezvous: single copy"), "{out}");
        assert!(big.contains("rendezvous: copy shared"), "{out}");
        assert!(
            big.contains("pipelined"),
            "blocking stays on the ring: {out}"
        );
    } else {
        assert!(big.contains("copied first"), "{out}");
    }
    // SHMPI_CMA_BLOCKING takes blocking sends to the rendezvous.
    let out = protocols(
        "16384",
        &[("SHMPI_CMA_BLOCKING", "8192"), ("SHMPI_CMA_SPLIT", "0")],
    );
    assert!(out.contains("from 8192 B for a blocking send"), "{out}");
    assert!(out.contains("shared with the sender from never"), "{out}");
    if out.contains("single copy (process_vm_readv): usable") {
        assert!(
            blocking_column(&out, "16384").starts_with("rendezvous: single copy"),
            "{out}"
        );
    }
    // No mark (Intel's row): the probe's hand-off printed, the peer near,
    // nothing followed; scoped isends by rendezvous from SHMPI_CMA_SCOPED.
    let out = protocols(
        "65536",
        &[("SHMPI_DISTANT_NS", "0"), ("SHMPI_CMA_SCOPED", "16384")],
    );
    if out.contains("cache-line hand-off") {
        assert!(
            out.contains("us: near (no hand-off makes a peer distant on this CPU"),
            "{out}"
        );
    }
    assert!(!out.contains("followed while the job runs"), "{out}");
    assert!(!blocking_column(&out, "4096").contains("streamed"), "{out}");
    assert_eq!(
        out.contains("# a scoped isend: from 16384 B by revocable rendezvous"),
        out.contains("single copy (process_vm_readv): usable"),
        "{out}"
    );
    // A distant peer: its frames streamed from 2 KiB, its blocking sends
    // by rendezvous from SHMPI_DISTANT_RENDEZVOUS (64 KiB); the probe's
    // own line under auto.
    for (mode, line) in [
        (
            "all",
            "# placement (SHMPI_DISTANT=all): rank 1 no probe: distant",
        ),
        ("auto", "# placement (SHMPI_DISTANT=auto): rank 1 "),
    ] {
        let out = protocols(
            "65536",
            &[
                ("SHMPI_CMA_BLOCKING", "0"),
                ("SHMPI_DISTANT", mode),
                ("SHMPI_DISTANT_WATCH", "32768"),
                // AMD's mark and scoped isends, whatever this CPU's row.
                ("SHMPI_DISTANT_NS", "150"),
                ("SHMPI_CMA_SCOPED", "0"),
            ],
        );
        assert!(out.contains(line), "{out}");
        // Followed (under auto, once the probe measured) from the watch
        // minimum that SHMPI_DISTANT_WATCH set.
        assert_eq!(
            out.contains(
                "followed while the job runs (the rate of its ring copies of 32768 B and more)"
            ),
            mode == "auto" && out.contains("cache-line hand-off"),
            "{out}"
        );
        let blocking = |size: &str| blocking_column(&out, size);
        let usable = out.contains("single copy (process_vm_readv): usable");
        let distant = out.contains(": distant,");
        assert_eq!(
            distant,
            mode == "all" || out.contains("us: distant"),
            "{out}"
        );
        assert_eq!(
            out.contains(
                "distant, its ring frames from 2048 B streamed, its blocking sends and isends \
                 (plain and scoped) by rendezvous from 65536 B"
            ),
            distant && usable,
            "{out}"
        );
        assert_eq!(
            out.contains("# a scoped isend: from 65536 B by revocable rendezvous"),
            distant && usable,
            "{out}"
        );
        assert!(
            blocking("1024").starts_with("eager: one ring frame"),
            "{out}"
        );
        assert!(!blocking("1024").contains("streamed"), "{out}");
        assert!(blocking("8192").starts_with("eager"), "{out}");
        assert_eq!(blocking("2048").contains("streamed"), distant, "{out}");
        assert_eq!(blocking("32768").contains("streamed"), distant, "{out}");
        // Above 8 KiB (placement::DEFAULT_DISTANT_FRAGMENT) a distant
        // peer's messages go in fragments of that size, a near one's whole.
        for size in ["16384", "32768"] {
            assert_eq!(
                blocking(size).starts_with("pipelined: 8192 B fragments, streamed"),
                distant,
                "{out}"
            );
            assert_eq!(blocking(size).starts_with("eager"), !distant, "{out}");
        }
        assert_eq!(
            blocking("65536").starts_with("rendezvous"),
            usable && distant,
            "{out}"
        );
    }
    // SHMPI_DISTANT_FRAGMENT sets a distant peer's fragment size (0: the
    // fragment size, so whole frames again).
    for (frag, at16, at32) in [
        (
            "16384",
            "eager: one ring frame, streamed",
            "pipelined: 16384 B fragments",
        ),
        (
            "0",
            "eager: one ring frame, streamed",
            "eager: one ring frame, streamed",
        ),
    ] {
        let out = protocols(
            "32768",
            &[
                ("SHMPI_DISTANT", "all"),
                // Blocking sends on the ring on every CPU (Intel's row
                // sends them by rendezvous from 8 KiB).
                ("SHMPI_CMA_BLOCKING", "0"),
                ("SHMPI_DISTANT_FRAGMENT", frag),
            ],
        );
        assert!(blocking_column(&out, "16384").starts_with(at16), "{out}");
        assert!(blocking_column(&out, "32768").starts_with(at32), "{out}");
    }
    // Pool buffers: by rendezvous from SHMPI_POOL_THRESHOLD, shared from
    // the shared copy's sizes where single copy is usable.
    let pool = protocols(
        "8",
        &[
            ("SHMPI_POOL_THRESHOLD", "32768"),
            ("SHMPI_CMA_SPLIT", "131072"),
            ("SHMPI_CMA_SPLIT_BLOCKING", "65536"),
        ],
    );
    assert!(
        pool.contains(
            "# a pool buffer (alloc_mem, MPI_Alloc_mem): from 32768 B by rendezvous, copied once \
             out of the pool by the receiver (SHMPI_POOL_THRESHOLD)"
        ),
        "{pool}"
    );
    assert_eq!(
        pool.contains(
            "the copy shared with the sender from 131072 B (a blocking send's from 65536 B)"
        ),
        pool.contains("single copy (process_vm_readv): usable"),
        "{pool}"
    );
    // C's MPI_Isend follows its own threshold where single copy is usable,
    // and its quiet one when that is set lower; set alone, the first
    // leaves no quiet size.
    let c = protocols("8", &[("SHMPI_CMA_C_ISEND", "16384")]);
    let quiet = |q| {
        protocols(
            "8",
            &[
                ("SHMPI_CMA_C_ISEND", "16384"),
                ("SHMPI_CMA_C_ISEND_QUIET", q),
                // The eager limit at 8 KiB whatever the CPU's row.
                ("SHMPI_CMA_THRESHOLD", "8192"),
            ],
        )
    };
    // Below the eager limit it would not apply: raised to it.
    let (q12, q4) = (quiet("12288"), quiet("4096"));
    if c.contains("single copy (process_vm_readv): usable") {
        assert!(
            c.contains("# C MPI_Isend: by rendezvous from 16384 B (SHMPI_CMA_C_ISEND), its copy"),
            "{c}"
        );
        for (out, from) in [(&q12, 12288), (&q4, 8192)] {
            assert!(
                out.contains(&format!(
                    "# C MPI_Isend: by rendezvous from 16384 B (SHMPI_CMA_C_ISEND), from {from} B \
                     while its receiver has taken every earlier message"
                )),
                "{out}"
            );
        }
    }
    // Blocking sends between the rendezvous and the shared copy have
    // their reads timed, and the line says from what mark; not with 0.
    let timed = [
        ("SHMPI_CMA_BLOCKING", "8192"),
        ("SHMPI_CMA_SPLIT_BLOCKING", "16384"),
    ];
    let t = protocols("8", &[timed[0], timed[1], ("SHMPI_CMA_SLOW_READ", "1500")]);
    if t.contains("single copy (process_vm_readv): usable") {
        assert!(
            t.contains(
                "# blocking sends from 8192 B, below 16384 B: the receiver times its single-copy read \
                 (slow above 1500 ns at 8 KiB, SHMPI_CMA_SLOW_READ)"
            ),
            "{t}"
        );
    }
    let t = protocols("8", &[timed[0], timed[1], ("SHMPI_CMA_SLOW_READ", "0")]);
    assert!(!t.contains("the receiver times"), "{t}");
    // Forced off, nothing is single copy: no rendezvous but a pool
    // buffer's (copied out of the pool's mapping), and that one not shared.
    let off = protocols("1048576", &[("SHMPI_CMA", "off")]);
    assert!(off.contains("refused or switched off"), "{off}");
    assert!(
        off.lines()
            .filter(|l| !l.starts_with("# a pool buffer"))
            .all(|l| !l.contains("rendezvous")),
        "{off}"
    );
    assert!(
        !off.contains("the copy shared with the sender from"),
        "{off}"
    );
}

#[test]
fn shmpi_bench_latency_runs_a_pair_inside_a_larger_idle_job() {
    let out = bench(&[
        "latency",
        "--ranks",
        "6",
        "--max-size",
        "8",
        "--iterations",
        "200",
        "--warmup",
        "20",
    ]);
    let r = rows(&out);
    assert_eq!(r.len(), 5, "sizes 0-8: {out}");
    assert!(r.iter().all(|r| r[1] > 0.0), "{out}");
}

#[test]
fn shmpi_bench_mbw_mr_sums_the_pairs() {
    let out = bench(&[
        "mbw_mr",
        "--ranks",
        "4",
        "--max-size",
        "64",
        "--iterations",
        "20",
        "--warmup",
        "2",
    ]);
    assert!(out.contains("2 pairs"), "{out}");
    let r = rows(&out);
    assert_eq!(r.len(), 7, "sizes 1-64: {out}");
    assert!(
        r.iter().all(|r| r.len() == 3 && r[1] > 0.0 && r[2] > 0.0),
        "{out}"
    );
}

#[test]
fn an_idle_rank_blocked_in_recv_uses_under_5_percent_of_a_core() {
    // CPU time, not speed: a waiter that spins instead of sleeping on the
    // doorbell shows here whatever the machine's load.
    let out = bench(&["idle", "--iterations", "300"]);
    let line = out
        .lines()
        .find(|l| l.starts_with("idle rank CPU"))
        .unwrap_or_else(|| panic!("no result line:\n{out}"));
    let pct: f64 = line.split_whitespace().last().unwrap().parse().unwrap();
    assert!(pct < 5.0, "an idle rank used {pct}% of a core:\n{out}");
}

#[test]
fn shmpi_bench_floor_flag_adds_a_ratio_column_measured_in_the_same_run() {
    if support::online_cpus() < 2 {
        return;
    }
    let out = bench(&[
        "latency",
        "--floor",
        "--max-size",
        "8",
        "--iterations",
        "2000",
        "--format",
        "csv",
    ]);
    let mut lines = out.lines().filter(|l| !l.starts_with('#'));
    assert_eq!(lines.next(), Some("size,latency_us,x_floor"), "{out}");
    // Each row's ratio is the median over its bursts of latency / the
    // floor timed just before: positive, finite, and the floor it implies
    // is a plausible one-way time (not zero, not a scheduler's slice).
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 5, "sizes 0, 1, 2, 4, 8:\n{out}");
    for f in &rows {
        assert_eq!(f.len(), 3, "{out}");
        assert!(f[1] > 0.0 && f[2].is_finite() && f[2] > 0.0, "{out}");
        let floor = f[1] / f[2];
        assert!(
            floor > 0.001 && floor < 1000.0,
            "implied floor {floor} us:\n{out}"
        );
    }
    // The OSU form says how the floor was timed.
    let osu = bench(&[
        "latency",
        "--floor",
        "--max-size",
        "1",
        "--iterations",
        "1000",
    ]);
    assert!(
        osu.contains("bursts alternating with the ping-pong"),
        "{osu}"
    );
    assert!(osu.contains("x floor"), "{osu}");
}

/// `bw` and `bibw` into one buffer (the default, as OSU's tests) and
/// `--many-buffers` (a buffer per receive) print a positive bandwidth per
/// size.
#[test]
fn shmpi_bench_bw_windows_into_one_buffer_or_a_buffer_per_receive() {
    for (test, extra) in [
        ("bw", None),
        ("bw", Some("--many-buffers")),
        ("bibw", None),
        ("bibw", Some("--many-buffers")),
    ] {
        let mut args = vec![test];
        args.extend(extra);
        assert_eq!(
            sized_run(&args, "1024", "131072"),
            [1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 65536.0, 131072.0],
            "{test} {extra:?}"
        );
    }
}

/// `--alloc-mem`: latency, exchange, bw and bibw between buffers of the
/// shared pool (as the C program's `MPI_Alloc_mem` ones), through the
/// ring below `SHMPI_POOL_THRESHOLD` and one copy out of the pool from
/// it; under `--touch` every message is checked to carry its sender's
/// rewrite. The window options of other tests are refused, not ignored.
#[test]
fn shmpi_bench_alloc_mem_runs_every_pair_test_from_the_pool() {
    for test in ["latency", "exchange", "bw", "bibw"] {
        assert_eq!(
            sized_run(&[test, "--alloc-mem", "--touch"], "4096", "65536"),
            [4096.0, 8192.0, 16384.0, 32768.0, 65536.0],
            "{test}"
        );
    }
    refused(
        &["latency", "--plain-isend"],
        "--plain-isend is not an option of latency",
    );
    refused(
        &["exchange", "--many-buffers"],
        "--many-buffers is not an option of exchange",
    );
    refused(
        &["mbw_mr", "--many-buffers"],
        "--many-buffers is not an option of mbw_mr",
    );
    refused(
        &["allreduce", "--alloc-mem"],
        "--alloc-mem is not an option of allreduce",
    );
    refused(
        &["mbw_mr", "--across-jobs"],
        "--across-jobs is not an option of mbw_mr",
    );
}

/// `latency --irecv` (receives by `irecv` + `wait`) prints a positive
/// latency per size under its own title, across the sizes of the direct
/// wait (one frame) and of the pipelined path.
#[test]
fn shmpi_bench_latency_with_irecv_prints_every_size() {
    let (out, sizes) = sized_output(&["latency", "--irecv"], "1", "131072");
    assert!(out.contains("receives by irecv + wait"), "{out}");
    assert_eq!(sizes.len(), 18, "sizes 1 .. 128 KiB: {out}");
    // Not an option of the bandwidth tests: refused, not ignored.
    refused(&["bw", "--irecv"], "--irecv is an option of latency");
}

/// `exchange` (both ranks `irecv`, `isend`, `wait_all` at once) prints a
/// positive time per exchange for every size, through the eager, the
/// pipelined and the rendezvous sizes, in each format; `--floor` is
/// refused, not ignored.
#[test]
fn shmpi_bench_exchange_times_both_ranks_sending_at_once() {
    let (out, sizes) = sized_output(&["exchange"], "0", "131072");
    assert!(out.contains("Exchange Test"), "{out}");
    assert_eq!(sizes.len(), 19, "sizes 0 .. 128 KiB: {out}");
    let json = bench(&[
        "exchange",
        "--min-size",
        "4096",
        "--max-size",
        "8192",
        "--iterations",
        "20",
        "--format",
        "json",
    ]);
    assert!(
        json.contains("\"benchmark\":\"exchange\"")
            && json.matches("\"exchange_us\":").count() == 2,
        "{json}"
    );
    refused(
        &["exchange", "--floor"],
        "--floor is an option of latency, bw and bibw",
    );
}

/// `--touch` (the send buffer rewritten before each send or window, a
/// collective's input before each call) runs the ping-pong, both ways of
/// receiving, the windows and the collectives through every protocol
/// (eager, rendezvous, the shared copy), with a positive figure per size;
/// the point-to-point tests' receivers check that every message carries
/// its round's rewrite (a run whose sender skips it fails); the tests that
/// send nothing of their own refuse it.
#[test]
fn shmpi_bench_touch_rewrites_the_send_buffer_in_latency_and_bandwidth() {
    for extra in [
        &["latency"][..],
        &["latency", "--irecv"],
        &["exchange"],
        &["bw"],
        &["bibw"],
    ] {
        let mut args = extra.to_vec();
        args.push("--touch");
        let sizes = sized_run(&args, "1024", "131072");
        assert_eq!(sizes.len(), 8, "{args:?}: sizes 1 .. 128 KiB");
    }
    // The collectives rewrite their input before each call.
    for test in ["bcast", "reduce", "allreduce", "allgather", "alltoall"] {
        let sizes = sized_run(&[test, "--touch"], "4096", "65536");
        assert_eq!(sizes.len(), 5, "{test}: sizes 4 .. 64 KiB");
    }
    refused(
        &["comm", "--touch"],
        "--touch is an option of latency, exchange, bw, bibw and the collectives",
    );
}

/// `examples/layers.rs`, the layer-by-layer latency of one job: runs
/// under the launcher and prints the three medians.
#[test]
fn the_layers_example_prints_its_ratios() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_shmpiexec"));
    let example = exe.parent().unwrap().join("examples").join("layers");
    if !example.exists() {
        // Built by `cargo test` with the other examples; absent only when
        // the tests were built alone.
        eprintln!("{} not built: skipped", example.display());
        return;
    }
    let o = support::output_bounded(
        Command::new(exe)
            .args(["-n", "2"])
            .arg(&example)
            .env("N", "2000")
            .env("B", "3"),
        Duration::from_secs(120),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("size 8:"))
        .expect("the summary");
    let nums: Vec<f64> = line
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|x| x.parse().ok())
        .collect();
    // size, ring ns (the floor, paced by PAUSE, finely), three ratios,
    // bursts.
    assert_eq!(nums.len(), 8, "{line}");
    assert!(nums[1..7].iter().all(|&x| x > 0.0), "{line}");
    assert!(nums[1] <= nums[2].min(nums[3]) + 1e-9, "{line}");
}

#[test]
fn bad_tuning_values_are_refused_naming_the_variable_and_what_it_wants() {
    for (var, value, what) in [
        ("SHMPI_DISTANT_NS", "abc", "a time in nanoseconds"),
        ("SHMPI_DISTANT_SLOW", "fast", "a rate in MB/s"),
        ("SHMPI_CMA_SPLIT_BLOCKING", "-5", "a size in bytes"),
        ("SHMPI_CMA_SCOPED", "1x", "a size in bytes"),
        ("SHMPI_CMA_C_ISEND_QUIET", "8k", "a size in bytes"),
        ("SHMPI_CMA_SLOW_READ", "1.3us", "a time in nanoseconds"),
        ("SHMPI_COLL_SYNC", "32k", "a size in bytes"),
        ("SHMPI_SPIN_US", "1ms", "a time in microseconds"),
        ("SHMPI_COLL_SHM", "yes", "0 or 1"),
        ("SHMPI_PREFETCHW", "2", "0 or 1"),
        ("SHMPI_MANY_DIRECT", "lots", "a size in bytes"),
        ("SHMPI_WINDOW_PACE", "-1", "a time in nanoseconds"),
        (
            "SHMPI_CPU_DEFAULTS",
            "zen9",
            "one of intel, amd-family-23, amd-family-25, other",
        ),
        (
            "SHMPI_COLL_BCAST",
            "tree",
            "one of auto, binomial, scatter_allgather",
        ),
    ] {
        let o = support::output_bounded(
            Command::new(env!("CARGO_BIN_EXE_shmpi-bench"))
                .args(["latency", "--max-size", "8"])
                .env(var, value),
            Duration::from_secs(60),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{var}={value} was taken");
        assert!(
            err.contains(&format!("MPI_ERR_ARG: {var}={value}: expected {what}")),
            "{err}"
        );
    }
    support::assert_no_segments_left();
}

/// How a message went, as `shmpi-bench protocols` names it and as the
/// receiver's counters show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// Through the ring (one frame, or fragments).
    Ring,
    /// By rendezvous, read by the receiver alone.
    Read,
    /// By rendezvous, the copy shared with the sender.
    Shared,
}

/// The path a column of `shmpi-bench protocols`' table names.
fn path_named(column: &str) -> Path {
    if column.starts_with("rendezvous: copy shared") {
        Path::Shared
    } else if column.starts_with("rendezvous: single copy") {
        Path::Read
    } else {
        assert!(
            column.starts_with("eager") || column.contains("fragments"),
            "a path the test does not know: {column:?}"
        );
        Path::Ring
    }
}

/// The rank side of `shmpi_bench_protocols_table_is_what_the_sends_do`:
/// rank 0 sends every size of the table by a blocking send, then by a
/// plain isend; rank 1 receives each and prints the path its counters
/// show ("path SIZE BLOCKING ISEND").
const PATHS_CASE: &str = "protocol_paths_as_the_sends_take_them";

#[test]
fn protocol_paths_as_the_sends_take_them() {
    if !support::is_rank_of(PATHS_CASE) {
        return;
    }
    let u = shmpi::init().expect("init");
    let w = u.world();
    let max: usize = std::env::var("SHMPI_TEST_MAX").unwrap().parse().unwrap();
    let mut buf = vec![0u8; max + 1];
    let mut sizes = vec![0];
    while *sizes.last().unwrap() < max {
        sizes.push((sizes.last().unwrap() * 2).max(1));
    }
    for &n in &sizes {
        if w.rank() == 0 {
            let d = support::pattern(n as u64, n + 1);
            // An odd start, as applications' buffers may have.
            w.send(&d[1..], 1, 1).unwrap();
            w.isend(&d[1..], 1, 2).unwrap().wait().unwrap();
        } else {
            let mut took = [Path::Ring; 2];
            for (tag, path) in [1, 2].into_iter().zip(&mut took) {
                let (before, offered) = (u.rendezvous_counts().1, u.split_counts().offered);
                w.recv(&mut buf[1..=n], 0, tag).unwrap();
                assert!(
                    buf[1..=n] == support::pattern(n as u64, n + 1)[1..],
                    "{n} B, tag {tag}: corrupted"
                );
                *path = match (
                    u.rendezvous_counts().1 - before,
                    u.split_counts().offered - offered,
                ) {
                    (0, 0) => Path::Ring,
                    (1, 0) => Path::Read,
                    (1, 1) => Path::Shared,
                    other => panic!("{n} B, tag {tag}: counters moved by {other:?}"),
                };
            }
            println!("path {n} {:?} {:?}", took[0], took[1]);
        }
    }
    u.finalize().expect("finalize");
}

#[test]
fn shmpi_bench_protocols_table_is_what_the_sends_do() {
    if support::is_rank_of(PATHS_CASE) {
        return;
    }
    // Each CPU row's defaults, and two settings of the variables, on any
    // machine. No peer is distant (the probe's placement of the moment
    // would decide it), and reads are not timed (a slow one, on a loaded
    // machine, would send the next messages a detour the table names only
    // in a line).
    let max = "2097152";
    let fixed = [("SHMPI_DISTANT", "none"), ("SHMPI_CMA_SLOW_READ", "0")];
    let settings: [&[(&str, &str)]; 6] = [
        &[("SHMPI_CPU_DEFAULTS", "intel")],
        &[("SHMPI_CPU_DEFAULTS", "amd-family-25")],
        &[("SHMPI_CPU_DEFAULTS", "amd-family-23")],
        &[("SHMPI_CPU_DEFAULTS", "other")],
        &[
            ("SHMPI_CMA", "always"),
            ("SHMPI_CMA_THRESHOLD", "1024"),
            ("SHMPI_CMA_SPLIT", "65536"),
        ],
        &[
            ("SHMPI_CMA_BLOCKING", "0"),
            ("SHMPI_CMA_THRESHOLD", "16384"),
            ("SHMPI_CMA_SPLIT", "262144"),
            ("SHMPI_EAGER_LIMIT", "4096"),
        ],
    ];
    for setting in settings {
        let env: Vec<(&str, &str)> = fixed.iter().chain(setting.iter()).copied().collect();
        let table = protocols(max, &env);
        let expected: Vec<(usize, Path, Path)> = table
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let size = l.split_whitespace().next().unwrap().parse().unwrap();
                // Size (10 wide), two spaces, the blocking send's column
                // (38 wide), a space, the plain isend's (44 wide).
                let (blocking, isend) = (l[12..50].trim(), l[51..95].trim());
                (size, path_named(blocking), path_named(isend))
            })
            .collect();
        let mut job_env = env.clone();
        job_env.push(("SHMPI_TEST_MAX", max));
        let o = support::launch(2, PATHS_CASE, &[], &job_env, support::TIMEOUT);
        assert_eq!(o.code, Some(0), "{setting:?}: {}\n{}", o.stdout, o.stderr);
        let took: Vec<(usize, Path, Path)> = o
            .stdout
            .lines()
            // (The test harness's "test ... " may start the first line.)
            .filter_map(|l| l.split_once("path ").map(|(_, l)| l))
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let path = |s: &str| match s {
                    "Ring" => Path::Ring,
                    "Read" => Path::Read,
                    "Shared" => Path::Shared,
                    _ => panic!("{l}"),
                };
                (w[0].parse().unwrap(), path(w[1]), path(w[2]))
            })
            .collect();
        // Where single copy is refused (a sandbox), both say the ring.
        assert_eq!(
            took, expected,
            "{setting:?}: the sends took (left) other paths than the table names (right)\n{table}"
        );
        if table.contains("single copy (process_vm_readv): usable") {
            assert!(
                took.iter().any(|t| (t.1, t.2) != (Path::Ring, Path::Ring)),
                "{setting:?}: nothing by rendezvous\n{table}"
            );
        }
    }
    support::assert_no_segments_left();
}
