//! The C ABI as C programs see it: every program in `tests/c` is built
//! with `tools/shmpicc` against `include/mpi.h` and `libshmpi.so`, and run
//! under `shmpiexec` at each rank count its first line names
//! (`/* ranks: 1 2 4 */`); it must print `No Errors` and exit 0. The same
//! programs are also built and run with Debian's MPICH when it is
//! installed, which shows they are correct MPI, not shmpi dialect
//! (programs marked `shmpi-only` on their first line check behaviour MPI
//! leaves to the implementation, such as invalid handles, and are skipped
//! there).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Per run: generous, since CI has 2 cores and runs up to 8 ranks.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding a `libshmpi.so` of the current sources: the one
/// beside the `shmpiexec` cargo built for the tests if `cargo build` made
/// it after the last change to `src/` (cargo builds the shared library
/// for `cargo build`, not for `cargo test`), else one this test builds
/// with `cargo build --lib` in a target directory of its own (the test
/// run holds the lock of the main one).
fn libdir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let beside = support::shmpiexec()
            .parent()
            .expect("shmpiexec has a directory")
            .to_path_buf();
        let so = beside.join("libshmpi.so");
        let built = std::fs::metadata(&so).and_then(|m| m.modified()).ok();
        let newest = newest_source();
        if built.is_some_and(|b| b >= newest) {
            return beside;
        }
        let target = root().join("target/capi-lib");
        let o = support::output_bounded(
            Command::new(env!("CARGO"))
                .args(["build", "--lib", "--quiet"])
                .current_dir(root())
                .env("CARGO_TARGET_DIR", &target),
            Duration::from_secs(900),
        );
        assert!(
            o.status.success(),
            "cargo build --lib: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        target.join("debug")
    })
    .clone()
}

fn newest_source() -> std::time::SystemTime {
    fn walk(p: &Path, newest: &mut std::time::SystemTime) {
        if let Ok(m) = std::fs::metadata(p) {
            if m.is_dir() {
                for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                    walk(&e.path(), newest);
                }
            } else if let Ok(t) = m.modified() {
                *newest = (*newest).max(t);
            }
        }
    }
    let mut newest = std::time::UNIX_EPOCH;
    walk(&root().join("src"), &mut newest);
    walk(&root().join("Cargo.toml"), &mut newest);
    newest
}

struct Program {
    name: String,
    path: PathBuf,
    ranks: Vec<usize>,
    shmpi_only: bool,
}

fn programs() -> Vec<Program> {
    let dir = root().join("tests/c");
    let mut v: Vec<Program> = std::fs::read_dir(&dir)
        .expect("tests/c")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read a C test");
            let first = text.lines().next().unwrap_or("");
            let spec = first
                .strip_prefix("/* ranks:")
                .and_then(|s| s.strip_suffix("*/"))
                .unwrap_or_else(|| {
                    panic!("{}: first line must be /* ranks: ... */", path.display())
                });
            let ranks = spec
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect::<Vec<usize>>();
            assert!(!ranks.is_empty(), "{}: no rank counts", path.display());
            Program {
                name: path.file_stem().unwrap().to_string_lossy().into_owned(),
                shmpi_only: spec.contains("shmpi-only"),
                path,
                ranks,
            }
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

fn out_dir(tag: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ctests-{tag}"));
    std::fs::create_dir_all(&d).expect("make the build directory");
    d
}

/// `shmpiexec` for the C programs: they load the `libshmpi.so` of
/// [`libdir`]. Cargo runs tests with its own library directories in
/// `LD_LIBRARY_PATH`, which wins over the programs' run path, so a stale
/// `target/debug/libshmpi.so` (from a `cargo build` before the last
/// change) was loaded instead.
fn shmpiexec() -> Command {
    let mut c = Command::new(support::shmpiexec());
    c.env("LD_LIBRARY_PATH", libdir());
    c
}

fn shmpicc() -> Command {
    let mut c = Command::new(root().join("tools/shmpicc"));
    c.env("SHMPI_LIBDIR", libdir());
    c
}

/// Builds `p` with `cc` (a command that takes mpicc's arguments) into
/// `dir`; the error text when it fails.
fn build(mut cc: Command, p: &Program, dir: &Path) -> Result<PathBuf, String> {
    let exe = dir.join(&p.name);
    let o = support::output_bounded(
        cc.args([
            "-std=c11", "-O1", "-pthread", "-Wall", "-Wextra", "-Werror", "-I",
        ])
        .arg(root().join("tests/c"))
        .arg("-o")
        .arg(&exe)
        .arg(&p.path),
        Duration::from_secs(120),
    );
    if o.status.success() {
        Ok(exe)
    } else {
        Err(format!(
            "{}: build failed:\n{}",
            p.name,
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// Runs `exe` with `launcher` at `n` ranks; an error text unless it
/// printed exactly `No Errors` and exited 0.
fn run(mut launcher: Command, n: usize, name: &str) -> Result<(), String> {
    let o = support::output_bounded(&mut launcher, RUN_TIMEOUT);
    let stdout = String::from_utf8_lossy(&o.stdout);
    if o.status.success() && stdout.trim() == "No Errors" {
        Ok(())
    } else {
        Err(format!(
            "{name} at {n} ranks: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

#[test]
fn c_programs_pass_under_shmpiexec() {
    let progs = programs();
    assert!(progs.len() >= 40, "only {} C programs", progs.len());
    let dir = out_dir("shmpi");
    let mut failures = Vec::new();
    let mut runs = 0;
    for p in &progs {
        let exe = match build(shmpicc(), p, &dir) {
            Ok(e) => e,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        for &n in &p.ranks {
            runs += 1;
            let mut cmd = shmpiexec();
            cmd.arg("-n").arg(n.to_string()).arg(&exe);
            if let Err(e) = run(cmd, n, &p.name) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    support::assert_no_segments_left();
}

#[test]
fn a_bad_connect_timeout_fails_mpi_init_naming_the_variable() {
    let p = programs()
        .into_iter()
        .find(|p| p.name == "comm_compare")
        .expect("tests/c/comm_compare.c");
    let exe = build(shmpicc(), &p, &out_dir("bad-env")).unwrap();
    let o = support::output_bounded(
        shmpiexec()
            .args(["-n", "2"])
            .arg(&exe)
            .env("SHMPI_CONNECT_TIMEOUT", "soon"),
        RUN_TIMEOUT,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "MPI_Init failed: MPI_ERR_ARG: SHMPI_CONNECT_TIMEOUT=soon: expected a time in seconds"
        ),
        "{err}"
    );
    // The initial error handler is fatal: the program goes no further.
    assert!(!o.status.success(), "the job went on: {err}");
    assert!(!err.contains("MPI is not initialized"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).trim().is_empty());
    support::assert_no_segments_left();
}

/// The peers' benchmark program (`tools/peers/osu_pingpong.c`, which
/// `tools/compare-peers.sh` builds for shmpi, MPICH and Open MPI) builds
/// with `shmpicc` as strictly as the C tests do, and each of its modes,
/// with buffers untouched or rewritten before each send (`--touch`),
/// prints one positive figure per size under shmpiexec.
#[test]
fn the_peers_benchmark_program_runs_every_mode() {
    let p = Program {
        name: "osu_pingpong".into(),
        path: root().join("tools/peers/osu_pingpong.c"),
        ranks: vec![2],
        shmpi_only: false,
    };
    let exe = build(shmpicc(), &p, &out_dir("peers")).unwrap();
    for mode in ["latency", "nblatency", "bw", "exchange", "partitioned"] {
        for touch in [None, Some("--touch")] {
            let mut cmd = shmpiexec();
            cmd.args(["-n", "2"]).arg(&exe).args([
                mode,
                "--min-size",
                "1024",
                "--max-size",
                "131072",
                "--iterations",
                "20",
                "--warmup",
                "2",
            ]);
            cmd.args(touch);
            let o = support::output_bounded(&mut cmd, RUN_TIMEOUT);
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success(),
                "{mode} {touch:?}: {out}\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            let rows: Vec<(u64, f64)> = out
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .map(|l| {
                    let mut w = l.split_whitespace();
                    let size = w.next().unwrap().parse().unwrap();
                    (size, w.next().unwrap().parse().unwrap())
                })
                .collect();
            let sizes: Vec<u64> = rows.iter().map(|r| r.0).collect();
            assert_eq!(
                sizes,
                [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072],
                "{mode} {touch:?}: {out}"
            );
            assert!(rows.iter().all(|r| r.1 > 0.0), "{mode} {touch:?}: {out}");
        }
    }
    support::assert_no_segments_left();
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn c_programs_are_plain_mpi_they_pass_under_mpich_too() {
    if !have("mpicc.mpich") || !have("mpiexec.mpich") {
        eprintln!("skipped: Debian's mpich (mpicc.mpich, mpiexec.mpich) is not installed");
        return;
    }
    let dir = out_dir("mpich");
    let mut failures = Vec::new();
    for p in programs().iter().filter(|p| !p.shmpi_only) {
        let mut cc = Command::new("mpicc.mpich");
        // MPICH defines MPI_STATUSES_IGNORE as (MPI_Status *)1, which gcc's
        // -Wstringop-overflow flags under -Werror.
        cc.arg("-Wno-stringop-overflow");
        let exe = match build(cc, p, &dir) {
            Ok(e) => e,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        for &n in &p.ranks {
            let mut cmd = Command::new("mpiexec.mpich");
            cmd.arg("-n").arg(n.to_string()).arg(&exe);
            if let Err(e) = run(cmd, n, &p.name) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn shmpicc_show_prints_the_compiler_command() {
    let o = support::output_bounded(
        shmpicc().args(["-show", "-o", "prog", "prog.c"]),
        Duration::from_secs(30),
    );
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    let inc = format!("-I{}", root().join("include").display());
    assert!(s.contains(&inc), "{s}");
    assert!(s.contains("-o prog prog.c"), "{s}");
    assert!(s.contains("-lshmpi"), "{s}");
    assert!(s.contains("-Wl,-rpath,"), "{s}");
}

#[test]
fn predefined_handles_are_compile_time_constants() {
    let dir = out_dir("consts");
    let src = dir.join("consts.c");
    std::fs::write(
        &src,
        "#include <mpi.h>\n\
         static MPI_Comm c = MPI_COMM_WORLD;\n\
         static MPI_Datatype t = MPI_DOUBLE_INT;\n\
         static MPI_Op o = MPI_MAXLOC;\n\
         static MPI_Request r = MPI_REQUEST_NULL;\n\
         static MPI_Errhandler e = MPI_ERRORS_RETURN;\n\
         _Static_assert(MPI_ERR_RANK == 6 && MPI_ANY_TAG == -31, \"MPI 5.0 ABI values\");\n\
         _Static_assert(sizeof(MPI_Status) == 8 * sizeof(int), \"ABI status size\");\n\
         int main(void) { return c == MPI_COMM_WORLD && t && o && r && e ? 0 : 1; }\n",
    )
    .unwrap();
    let exe = dir.join("consts");
    let o = support::output_bounded(
        shmpicc()
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&exe)
            .arg(&src),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let st = support::output_bounded(&mut Command::new(&exe), Duration::from_secs(30));
    assert!(st.status.success());
}
