//! `shmpi-topo`: the node's topology as shmpi sees it (through hwloc), and
//! where a job's ranks would go.
//!
//! ```text
//! shmpi-topo [--topology DESC|FILE.xml] [-n N [--map-by LEVEL] [--bind-to LEVEL|none]
//!            [--cpu-list LIST] [--ring-size BYTES]]
//! ```
//!
//! Prints the machine as a compact tree (this machine, or the synthetic
//! description / XML file of `--topology` or `SHMPI_TOPOLOGY`). With `-n`
//! it also prints the placement table (rank, mapped PU, cpuset, NUMA
//! node), the distance class of every pair of ranks (`pu`, `core`, `l3`,
//! `numa`, `pkg`, `far`) with the copy each pair would use, and what the
//! job would allocate (the segment size by `docs/segment-layout.md`'s
//! formula). LEVEL is hwthread, core, l3, numa or package.

use shmpi::topology::placement::{cpu_list, distance, report, Distance};
use shmpi::topology::{place, Level, Machine, Policy, Source};
use std::process::ExitCode;

const USAGE: &str = "usage: shmpi-topo [--topology DESC|FILE.xml] [-n N [--map-by LEVEL] \
[--bind-to LEVEL|none] [--cpu-list LIST] [--ring-size BYTES]]";

struct Opts {
    source: Source,
    n: Option<usize>,
    policy: Policy,
    ring: Option<usize>,
}

fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    shmpi::job::env::parse_cpus(s).ok_or_else(|| {
        format!("--cpu-list: {s:?} is not a list of CPU numbers and ranges (like 0,2,4-7)")
    })
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        source: Source::from_env(),
        n: None,
        policy: Policy::default(),
        ring: None,
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.into());
        }
        let v = args
            .get(i + 1)
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let level = |v: &str| Level::parse(v).map_err(|e| format!("{flag}: {}", e.detail()));
        match flag {
            "--topology" => o.source = Source::parse(v),
            "-n" => {
                o.n = Some(
                    v.parse()
                        .map_err(|_| format!("-n: {v:?} is not a rank count"))?,
                )
            }
            "--map-by" => o.policy.map = Some(level(v)?),
            "--bind-to" => {
                o.policy.bind = Some(if v == "none" { None } else { Some(level(v)?) });
            }
            "--cpu-list" => o.policy.cpus = parse_list(v)?,
            "--ring-size" => o.ring = Some(v.parse().map_err(|_| format!("--ring-size: {v:?}"))?),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
        i += 2;
    }
    Ok(o)
}

/// The copy a pair of ranks would use at that distance. The transport
/// copies with `memcpy` everywhere today; across NUMA nodes non-temporal
/// stores are the candidate MPICH measured winning there (issue 5/6).
fn copy_for(d: Distance) -> &'static str {
    match d {
        Distance::SamePackage | Distance::Remote => "memcpy (non-temporal candidate)",
        _ => "memcpy",
    }
}

fn run(o: &Opts) -> Result<(), String> {
    let m = Machine::load(&o.source).map_err(|e| e.to_string())?;
    print!("{}", m.tree());
    match &m.numa_distances {
        Some(d) => {
            println!("numa distances (hwloc, 10 = local):");
            for (i, row) in d.iter().enumerate() {
                let cells: Vec<String> = row.iter().map(|v| format!("{v:>4}")).collect();
                println!("  {i:>3}:{}", cells.join(""));
            }
        }
        None => println!("numa distances: none from hwloc"),
    }
    let Some(n) = o.n else {
        return Ok(());
    };
    let (places, over) = place(&m, n, &o.policy).map_err(|e| e.to_string())?;
    println!();
    if over && o.policy.bind.is_none() && o.policy.cpus.is_empty() {
        println!(
            "note: {n} ranks on {} cores: oversubscribed, so ranks are not bound",
            m.cores()
        );
    }
    println!("{:<6}{:>6}  {:<24}{:>6}", "rank", "pu", "cpuset", "numa");
    for (r, p) in places.iter().enumerate() {
        println!(
            "{r:<6}{:>6}  {:<24}{:>6}",
            p.pu,
            cpu_list(&p.cpus),
            p.numa.map_or("-".into(), |x| x.to_string())
        );
    }
    println!();
    println!("distance class between ranks (by mapped PU): pu core l3 numa pkg far");
    print!("{:>6}", "");
    for r in 0..n {
        print!("{r:>5}");
    }
    println!();
    let mut classes = std::collections::BTreeMap::new();
    for a in 0..n {
        print!("{a:>6}");
        for b in 0..n {
            let d = distance(&m, places[a].pu, places[b].pu);
            if a != b {
                *classes.entry(d).or_insert(0usize) += 1;
            }
            print!("{:>5}", d.label());
        }
        println!();
    }
    println!();
    println!("copy per pair:");
    for (d, k) in classes {
        println!("  {:<5} {k:>6} ordered pairs: {}", d.label(), copy_for(d));
    }
    println!();
    for line in report(&m, &places) {
        println!("{line}");
    }
    let e = shmpi::coll::model::estimate(&m, &places, &Default::default());
    println!();
    println!(
        "small barrier/allreduce, cost model (coll::model, default latencies): flat {:.0} ns, \
         hierarchical by NUMA node {:.0} ns: {} wins",
        e.flat,
        e.hierarchical,
        if e.hierarchical < e.flat {
            "hierarchical"
        } else {
            "flat"
        }
    );
    let ring = o
        .ring
        .unwrap_or_else(|| shmpi::transport::default_ring_capacity(n));
    let layout = shmpi::transport::Layout::new(n, ring)?;
    println!();
    println!(
        "segment: {} bytes ({:.1} MiB) for {n} ranks with {ring}-byte rings",
        layout.size(),
        layout.size() as f64 / (1 << 20) as f64
    );
    Ok(())
}

fn main() -> ExitCode {
    shmpi::shm::os::default_sigpipe();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(m) => {
            eprintln!("shmpi-topo: {m}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shmpi-topo: {e}");
            ExitCode::from(1)
        }
    }
}
