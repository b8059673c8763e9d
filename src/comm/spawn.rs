//! Starting jobs from a running one (MPI 4.1 §11.8, issue 8,
//! `docs/connect.md`): `spawn` / `spawn_multiple` run a new `shmpiexec`
//! job whose ranks connect back to a port of the spawning root at their
//! `init` (`SHMPI_PARENT_PORT`); the parents accept, so both sides get the
//! intercommunicator that connect / accept gives, over a bridge. The
//! child job is its own failure domain: its own launcher, segment and
//! processes, detached from the parent's launcher.

use super::Communicator;
use crate::error::{Error, ErrorClass, Result};
use crate::job::env;
use crate::job::names::Port;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One program to start (`MPI_Comm_spawn`'s command, arguments and
/// `maxprocs`).
#[derive(Clone, Debug, Default)]
pub struct SpawnCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// How many ranks run it.
    pub maxprocs: usize,
    /// With `soft`, the counts MPI may choose from (info key `soft`):
    /// the largest that is at most `maxprocs` is taken. Empty: exactly
    /// `maxprocs`.
    pub soft: Vec<usize>,
}

/// How to start the children.
#[derive(Clone, Debug)]
pub struct SpawnOptions {
    /// Extra environment for every child.
    pub env: Vec<(String, String)>,
    /// How long the root waits for the children to connect.
    pub timeout: Duration,
}

impl Default for SpawnOptions {
    fn default() -> SpawnOptions {
        SpawnOptions {
            env: Vec::new(),
            timeout: Duration::from_secs(120),
        }
    }
}

/// The launcher to run: the one that started this job, else `shmpiexec`
/// beside this program or on the `PATH`.
fn launcher() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os(env::LAUNCHER) {
        return p.into();
    }
    if let Some(p) = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.join("shmpiexec")))
        .filter(|p| p.exists())
    {
        return p;
    }
    "shmpiexec".into()
}

fn spawn_err(m: String) -> Error {
    Error::new(ErrorClass::Spawn, m)
}

/// The number of ranks `c` gets (`maxprocs`, or the `soft` choice).
///
/// # Errors
/// `Spawn` when it allows none.
pub(crate) fn count_of(c: &SpawnCommand) -> Result<usize> {
    let n = if c.soft.is_empty() {
        c.maxprocs
    } else {
        c.soft
            .iter()
            .copied()
            .filter(|&s| s <= c.maxprocs)
            .max()
            .unwrap_or(0)
    };
    if n == 0 {
        return Err(spawn_err(format!(
            "{}: maxprocs {} (soft {:?}) leaves no process to start",
            c.program, c.maxprocs, c.soft
        )));
    }
    Ok(n)
}

/// Waits for the children to connect to `port`, while their launcher
/// lives.
fn accept_children(
    port: &Port,
    child: &mut Child,
    timeout: Duration,
) -> Result<std::os::unix::net::UnixStream> {
    let start = Instant::now();
    loop {
        match port.accept(Some(Duration::from_millis(100))) {
            Ok(s) => return Ok(s),
            Err(e) if e.class() != ErrorClass::Port => return Err(e),
            Err(_) => {}
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(spawn_err(format!(
                "the spawned job ended ({st}) before its ranks connected"
            )));
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            return Err(spawn_err(format!(
                "the spawned job did not connect within {timeout:?}"
            )));
        }
    }
}

impl Communicator {
    /// `MPI_Comm_spawn`: starts `cmd.maxprocs` ranks of `cmd.program` as a
    /// new job and gives the intercommunicator to them (their side is
    /// `Universe::parent`). Collective over this communicator; the
    /// arguments count at `root` only.
    ///
    /// # Errors
    /// `Spawn` when the job cannot be started or its ranks do not connect
    /// (every member gets it); as [`accept`](Self::accept).
    pub fn spawn(
        &self,
        cmd: &SpawnCommand,
        opts: &SpawnOptions,
        root: i32,
    ) -> Result<Communicator> {
        self.spawn_multiple(std::slice::from_ref(cmd), opts, root)
    }

    /// `MPI_Comm_spawn_multiple`: one job running every command, in
    /// order (ranks of command i have `MPI_APPNUM` i).
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub fn spawn_multiple(
        &self,
        cmds: &[SpawnCommand],
        opts: &SpawnOptions,
        root: i32,
    ) -> Result<Communicator> {
        let r = self.join_jobs(root, true, || {
            if cmds.is_empty() {
                return Err(spawn_err("no command to spawn".into()));
            }
            let port = Port::open()?;
            let mut c = Command::new(launcher());
            for (i, cmd) in cmds.iter().enumerate() {
                if i > 0 {
                    c.arg(":");
                }
                c.arg("-n").arg(count_of(cmd)?.to_string());
                c.arg(&cmd.program).args(&cmd.args);
            }
            c.env(env::PARENT_PORT, port.name());
            for (k, v) in &opts.env {
                c.env(k, v);
            }
            // The child job is not this job's: none of this job's
            // contract goes to it.
            for k in [
                env::JOB_ID,
                env::RANK,
                env::SIZE,
                env::SEGMENT,
                env::RING_SIZE,
                env::CPU,
                env::CPUSET,
                env::APPNUM,
            ] {
                c.env_remove(k);
            }
            c.stdin(Stdio::null());
            let mut child = c
                .spawn()
                .map_err(|e| spawn_err(format!("cannot start {}: {e}", launcher().display())))?;
            let s = accept_children(&port, &mut child, opts.timeout)?;
            // Reap the launcher whenever it ends (its job is independent).
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            Ok(s)
        });
        self.ret("MPI_Comm_spawn", r)
    }
}

/// At a spawned child's `init`: connects `world` to the parent's port.
///
/// # Errors
/// As `connect`.
pub(crate) fn connect_parent(world: &Communicator) -> Result<Option<Communicator>> {
    let Some(port) = std::env::var_os(env::PARENT_PORT) else {
        return Ok(None);
    };
    let port = port.to_string_lossy().into_owned();
    world.connect(&port, 0, Duration::from_secs(60)).map(Some)
}
