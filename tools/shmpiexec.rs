//! `shmpiexec`: starts an shmpi job of N ranks on this node.
//!
//! ```text
//! shmpiexec -n N [--tag-output] [-x VAR[=VAL]]... [--cpu-list LIST]
//!           [--ring-size BYTES] [--shm-dir DIR] PROG [ARGS...]
//! ```

use shmpi::job::{self, JobSpec, SegmentShape};
use shmpi::transport::{default_ring_capacity, Layout};
use std::process::ExitCode;

const USAGE: &str = "usage: shmpiexec -n N [--tag-output] [-x VAR[=VAL]]... [--cpu-list LIST] \
[--ring-size BYTES] [--shm-dir DIR] PROG [ARGS...]";

fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let bad = || format!("--cpu-list: {part:?} is not a CPU number or range");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    if out.is_empty() {
        return Err("--cpu-list is empty".into());
    }
    Ok(out)
}

fn parse(args: &[String]) -> Result<(JobSpec, Option<usize>), String> {
    let mut n: Option<usize> = None;
    let mut spec = JobSpec {
        nranks: 0,
        program: String::new(),
        args: Vec::new(),
        tag_output: false,
        env: Vec::new(),
        cpus: Vec::new(),
        shm_dir: job::env::shm_dir(),
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
            "--cpu-list" => spec.cpus = parse_cpu_list(&value(&mut i, a)?)?,
            "--ring-size" => {
                let v = value(&mut i, a)?;
                ring = Some(
                    v.parse()
                        .map_err(|_| format!("--ring-size: {v:?} is not a number"))?,
                );
            }
            "--shm-dir" => spec.shm_dir = value(&mut i, a)?.into(),
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ if a.starts_with('-') && spec.program.is_empty() => {
                return Err(format!("unknown option {a}\n{USAGE}"))
            }
            _ => {
                spec.program = a.to_string();
                spec.args = args[i + 1..].to_vec();
                break;
            }
        }
        i += 1;
    }
    spec.nranks = n.ok_or_else(|| format!("-n N is required\n{USAGE}"))?;
    if spec.nranks == 0 {
        return Err("-n must be at least 1".into());
    }
    if spec.program.is_empty() {
        return Err(format!("no program given\n{USAGE}"));
    }
    Ok((spec, ring))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (spec, ring) = match parse(&args) {
        Ok(x) => x,
        Err(m) => {
            eprintln!("shmpiexec: {m}");
            return ExitCode::from(2);
        }
    };
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
    match job::run(&spec, shape) {
        Ok(outcome) => {
            if let Some(f) = &outcome.failure {
                eprintln!("shmpiexec: {f}; the job was ended");
            }
            ExitCode::from(outcome.code.clamp(0, 255) as u8)
        }
        Err(m) => {
            eprintln!("{m}");
            ExitCode::from(1)
        }
    }
}
