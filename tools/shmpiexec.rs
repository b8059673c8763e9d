//! `shmpiexec`: starts an shmpi job of N ranks on this node.
//!
//! ```text
//! shmpiexec -n N [--tag-output] [-x VAR[=VAL]]... [--cpu-list LIST]
//!           [--map-by LEVEL] [--bind-to LEVEL|none] [--report-bindings]
//!           [--ring-size BYTES] [--shm-dir DIR] [--timeout SECONDS]
//!           PROG [ARGS...]
//! ```
//!
//! Placement (`docs/placement.md`): LEVEL is hwthread, core, l3, numa or
//! package; the defaults are Open MPI's (map by core, bind to core while
//! the ranks fit the cores, bind to nothing when they do not, with a note).
//! With `SHMPI_TOPOLOGY` set to a synthetic or XML topology the placement
//! is computed (and reported) on it but not applied.
//!
//! `--timeout SECONDS` (else `MPIEXEC_TIMEOUT`, as MPICH and Open MPI
//! read it) ends a job that runs longer; the launcher then exits 124.
//!
//! Standard input goes to rank 0 only. SIGINT, SIGTERM and SIGHUP are
//! passed on to the ranks, and a second one ends them; if `shmpiexec`
//! is killed outright, the kernel sends its ranks SIGKILL
//! (`PR_SET_PDEATHSIG`, set by `job::run`) and the reaper `job::run`
//! forked first removes the job's files (`shm::os::Reaper`).

use shmpi::job::{self, JobSpec, SegmentShape};
use shmpi::topology::placement::report;
use shmpi::topology::{place, Level, Machine, Policy, Source, TOPOLOGY_VAR};
use shmpi::transport::{default_ring_capacity, Layout};
use std::process::ExitCode;

const USAGE: &str = "usage: shmpiexec -n N [--tag-output] [-x VAR[=VAL]]... [--cpu-list LIST] \
[--map-by LEVEL] [--bind-to LEVEL|none] [--report-bindings] [--ring-size BYTES] [--shm-dir DIR] \
[--timeout SECONDS] PROG [ARGS...] [: -n N PROG2 [ARGS...]]...";

/// What the command line asks of placement.
#[derive(Default)]
struct Placing {
    policy: Policy,
    report: bool,
}

fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    shmpi::job::env::parse_cpus(s).ok_or_else(|| {
        format!("--cpu-list: {s:?} is not a list of CPU numbers and ranges (like 0,2,4-7)")
    })
}

/// One application after a `:`: `-n N program args...`.
fn parse_app(p: &[String]) -> Result<job::spawn::App, String> {
    match p {
        [flag, n, program, args @ ..] if matches!(flag.as_str(), "-n" | "-np" | "--np") => {
            let count = n
                .parse()
                .ok()
                .filter(|&c: &usize| c > 0)
                .ok_or_else(|| format!("{flag}: {n:?} is not a positive number"))?;
            Ok(job::spawn::App {
                count,
                program: program.clone(),
                args: args.to_vec(),
            })
        }
        _ => Err(format!(
            "after ':' give -n N and a program (MPMD: prog1 args : -n N prog2 args)\n{USAGE}"
        )),
    }
}

/// The variable MPICH's and Open MPI's launchers read for a job's time
/// limit in seconds, read here too when `--timeout` is not given (empty
/// or 0: no limit).
const TIMEOUT_VAR: &str = "MPIEXEC_TIMEOUT";

/// A time limit in seconds (a positive number, fractions allowed).
fn parse_timeout(what: &str, v: &str) -> Result<std::time::Duration, String> {
    match v.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s.is_finite() && s < 1e9 => Ok(std::time::Duration::from_secs_f64(s)),
        _ => Err(format!("{what}: {v:?} is not a positive number of seconds")),
    }
}

fn parse(args: &[String]) -> Result<(JobSpec, Option<usize>, Placing), String> {
    let mut n: Option<usize> = None;
    let mut placing = Placing::default();
    let mut spec = JobSpec {
        cpusets: Vec::new(),
        nranks: 0,
        program: String::new(),
        args: Vec::new(),
        tag_output: false,
        env: Vec::new(),
        cpus: Vec::new(),
        shm_dir: job::env::shm_dir(),
        more: Vec::new(),
        timeout: None,
    };
    let mut ring = None;
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
    };
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-n" | "-np" | "--np" => {
                let v = value(&mut i, a)?;
                n = Some(
                    v.parse()
                        .map_err(|_| format!("{a}: {v:?} is not a number"))?,
                );
            }
            "--tag-output" => spec.tag_output = true,
            "-x" => {
                let v = value(&mut i, a)?;
                match v.split_once('=') {
                    Some((k, val)) => spec.env.push((k.to_string(), Some(val.to_string()))),
                    None => spec.env.push((v, None)),
                }
            }
            "--cpu-list" => placing.policy.cpus = parse_cpu_list(&value(&mut i, a)?)?,
            "--map-by" => {
                let v = value(&mut i, a)?;
                placing.policy.map =
                    Some(Level::parse(&v).map_err(|e| format!("--map-by: {}", e.detail()))?);
            }
            "--bind-to" => {
                let v = value(&mut i, a)?;
                placing.policy.bind = Some(if v == "none" {
                    None
                } else {
                    Some(Level::parse(&v).map_err(|e| format!("--bind-to: {}", e.detail()))?)
                });
            }
            "--report-bindings" => placing.report = true,
            "--ring-size" => {
                let v = value(&mut i, a)?;
                ring = Some(
                    v.parse()
                        .map_err(|_| format!("--ring-size: {v:?} is not a number"))?,
                );
            }
            "--shm-dir" => spec.shm_dir = value(&mut i, a)?.into(),
            "--timeout" => spec.timeout = Some(parse_timeout(a, &value(&mut i, a)?)?),
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ if a.starts_with('-') && spec.program.is_empty() => {
                return Err(format!("unknown option {a}\n{USAGE}"))
            }
            _ => {
                // `prog args : -n N prog2 args2 : ...` (MPMD).
                let mut parts = args[i..].split(|x| x == ":");
                let first = parts.next().unwrap_or_default();
                spec.program = a.to_string();
                spec.args = first[1..].to_vec();
                for p in parts {
                    spec.more.push(parse_app(p)?);
                }
                break;
            }
        }
        i += 1;
    }
    if spec.timeout.is_none() {
        // Empty or 0 means no limit, as for MPICH's launcher.
        let set = std::env::var(TIMEOUT_VAR).ok().filter(|v| {
            let v = v.trim();
            !v.is_empty() && v.parse::<f64>().ok() != Some(0.0)
        });
        if let Some(v) = set {
            spec.timeout = Some(parse_timeout(TIMEOUT_VAR, &v)?);
        }
    }
    spec.nranks = n.ok_or_else(|| format!("-n N is required\n{USAGE}"))?;
    if spec.nranks == 0 {
        return Err("-n must be at least 1".into());
    }
    spec.nranks += spec.more.iter().map(|a| a.count).sum::<usize>();
    if spec.program.is_empty() {
        return Err(format!("no program given\n{USAGE}"));
    }
    Ok((spec, ring, placing))
}

/// Computes the placement and puts the cpusets into `spec` (when the
/// topology is this machine's and a rank is not free to run anywhere).
fn apply_placement(spec: &mut JobSpec, p: &Placing) -> Result<(), String> {
    let source = Source::from_env();
    let machine = Machine::load(&source).map_err(|e| e.to_string())?;
    let (places, over) = place(&machine, spec.nranks, &p.policy).map_err(|e| e.to_string())?;
    if over && p.policy.bind.is_none() && p.policy.cpus.is_empty() {
        eprintln!(
            "shmpiexec: note: {} ranks on {} cores: oversubscribed, so ranks are not bound \
             (--bind-to to bind anyway)",
            spec.nranks,
            machine.cores()
        );
    }
    if p.report {
        for line in report(&machine, &places) {
            eprintln!("shmpiexec: {line}");
        }
    }
    if source != Source::This {
        eprintln!("shmpiexec: note: placement computed on {TOPOLOGY_VAR}'s topology, not applied");
        return Ok(());
    }
    let all = machine.pus.len();
    if places.iter().any(|pl| pl.cpus.len() < all) {
        spec.cpusets = places.into_iter().map(|pl| pl.cpus).collect();
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Asked for (before a program: after it they are the program's), the
    // usage and version go to standard output and the exit status is 0.
    let own = args
        .iter()
        .take_while(|a| a.starts_with('-') || a.parse::<usize>().is_ok());
    for a in own {
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "-V" | "--version" => {
                println!("shmpiexec (shmpi) {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            _ => {}
        }
    }
    let (mut spec, ring, placing) = match parse(&args) {
        Ok(x) => x,
        Err(m) => {
            eprintln!("shmpiexec: {m}");
            return ExitCode::from(2);
        }
    };
    // What the ranks' `comm_spawn` runs: this launcher.
    if let Ok(me) = std::env::current_exe() {
        spec.env.push((
            job::env::LAUNCHER.to_string(),
            Some(me.display().to_string()),
        ));
    }
    if let Err(m) = apply_placement(&mut spec, &placing) {
        eprintln!("shmpiexec: {m}");
        return ExitCode::from(2);
    }
    let ring = ring
        .or_else(|| {
            std::env::var(job::env::RING_SIZE)
                .ok()
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or_else(|| default_ring_capacity(spec.nranks));
    let layout = match Layout::new(spec.nranks, ring) {
        Ok(l) => l,
        Err(m) => {
            eprintln!("shmpiexec: {m}");
            return ExitCode::from(2);
        }
    };
    let shape = SegmentShape {
        size: layout.size() as u64,
        layout_digest: layout.digest(),
        ring_size: ring,
    };
    // What the ranks leave orphaned is adopted here, so ending the job
    // ends it too (this process's only children are the job's).
    job::adopt_orphans();
    match job::run(&spec, shape) {
        Ok(outcome) => {
            if let Some(f) = &outcome.failure {
                eprintln!("shmpiexec: {f}; the job was ended");
            }
            ExitCode::from(outcome.code.clamp(0, 255) as u8)
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.status)
        }
    }
}
