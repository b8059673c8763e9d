//! Node-local names for the jobs of one user (`docs/connect.md`): the
//! per-user runtime directory, ports (listening Unix sockets that a job
//! on this node connects to) and the name service (`publish_name`,
//! `lookup_name`, `unpublish_name`, MPI 4.1 §11.10.2).
//!
//! Layer `job` (imports L0 and `shm` for its OS helpers). Knows nothing of
//! MPI communicators: what travels over a port's stream is the caller's.
#![forbid(unsafe_code)]

use crate::error::{Error, ErrorClass, Result};
use crate::shm::os;
use crate::sync::{AtomicU32, Ordering};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The prefix of every port name.
const PORT_PREFIX: &str = "shmpi-port:";

/// The per-user runtime directory: `$SHMPI_RUNTIME_DIR`, else
/// `$XDG_RUNTIME_DIR/shmpi`, else `/tmp/shmpi-<uid>`; created mode 0700.
///
/// # Errors
/// `Other` when it cannot be made, or is not a directory of this user
/// that only this user can write.
pub fn runtime_dir() -> Result<PathBuf> {
    let dir = if let Some(d) = std::env::var_os("SHMPI_RUNTIME_DIR") {
        PathBuf::from(d)
    } else if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|x| !x.is_empty()) {
        PathBuf::from(x).join("shmpi")
    } else {
        PathBuf::from(format!("/tmp/shmpi-{}", os::uid()))
    };
    ensure_private_dir(&dir)?;
    Ok(dir)
}

fn other(what: String) -> Error {
    Error::new(ErrorClass::Other, what)
}

/// Makes `dir` (mode 0700) if needed and checks that it is ours and
/// private.
fn ensure_private_dir(dir: &Path) -> Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) => return Err(other(format!("cannot make {}: {e}", dir.display()))),
    }
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| other(format!("cannot read {}: {e}", dir.display())))?;
    if !m.is_dir() || m.uid() != os::uid() || m.permissions().mode() & 0o022 != 0 {
        return Err(other(format!(
            "{} is not a private directory of this user (owner {}, mode {:o})",
            dir.display(),
            m.uid(),
            m.permissions().mode() & 0o777
        )));
    }
    Ok(())
}

fn sub(dir: &Path, name: &str) -> Result<PathBuf> {
    let d = dir.join(name);
    ensure_private_dir(&d)?;
    Ok(d)
}

/// An open port (`MPI_Open_port`): a listening socket in the runtime
/// directory. Dropping it closes the port and removes the socket.
#[derive(Debug)]
pub struct Port {
    name: String,
    path: PathBuf,
    listener: UnixListener,
}

static NEXT_PORT: AtomicU32 = AtomicU32::new(0);

impl Port {
    /// Opens a port in the runtime directory.
    ///
    /// # Errors
    /// `Other` when the directory or the socket cannot be made.
    pub fn open() -> Result<Port> {
        Port::open_in(&runtime_dir()?)
    }

    /// Opens a port in runtime directory `dir`.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_in(dir: &Path) -> Result<Port> {
        let ports = sub(dir, "ports")?;
        let pid = std::process::id();
        loop {
            // Relaxed: a counter for unique names, nothing published.
            let n = NEXT_PORT.fetch_add(1, Ordering::Relaxed);
            let path = ports.join(format!("{pid}-{n}.sock"));
            match UnixListener::bind(&path) {
                Ok(listener) => {
                    listener
                        .set_nonblocking(true)
                        .map_err(|e| other(format!("port socket: {e}")))?;
                    let name = format!("{PORT_PREFIX}{}:{pid}:{n}", os::uid());
                    return Ok(Port {
                        name,
                        path,
                        listener,
                    });
                }
                // A socket of an earlier process with our pid: take it.
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    if UnixStream::connect(&path).is_err() {
                        let _ = std::fs::remove_file(&path);
                    }
                }
                Err(e) => {
                    return Err(other(format!(
                        "cannot open a port at {}: {e}",
                        path.display()
                    )))
                }
            }
        }
    }

    /// The port name to give to the connecting job (`MPI_MAX_PORT_NAME`
    /// is far above its length).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits up to `timeout` (`None`: for ever) for a job to connect;
    /// the stream to it.
    ///
    /// # Errors
    /// `Port` on timeout or a socket error.
    pub fn accept(&self, timeout: Option<Duration>) -> Result<UnixStream> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(50);
        loop {
            match self.listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false)
                        .map_err(|e| Error::new(ErrorClass::Port, format!("accept: {e}")))?;
                    return Ok(s);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(Error::new(ErrorClass::Port, format!("accept: {e}"))),
            }
            if timeout.is_some_and(|t| start.elapsed() >= t) {
                return Err(Error::new(
                    ErrorClass::Port,
                    format!("no job connected to {} within {timeout:?}", self.name),
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Closes the port (`MPI_Close_port`).
    pub fn close(self) {}
}

impl Drop for Port {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The socket path of port `name` under runtime directory `dir`.
fn port_path(dir: &Path, name: &str) -> Result<PathBuf> {
    let bad = || {
        Error::new(
            ErrorClass::Port,
            format!("{name:?} is not a shmpi port name (shmpi-port:UID:PID:N)"),
        )
    };
    let rest = name.strip_prefix(PORT_PREFIX).ok_or_else(bad)?;
    let f: Vec<&str> = rest.split(':').collect();
    let [uid, pid, n] = f.as_slice() else {
        return Err(bad());
    };
    let (uid, pid, n): (u32, u32, u32) = (
        uid.parse().map_err(|_| bad())?,
        pid.parse().map_err(|_| bad())?,
        n.parse().map_err(|_| bad())?,
    );
    if uid != os::uid() {
        return Err(Error::new(
            ErrorClass::Port,
            format!("port {name} belongs to user {uid}: jobs connect within one user"),
        ));
    }
    Ok(dir.join("ports").join(format!("{pid}-{n}.sock")))
}

/// Connects to port `name` (`MPI_Comm_connect`'s first step), retrying
/// until `timeout` while the port does not exist yet.
///
/// # Errors
/// `Port` for a malformed name, another user's port, or no listener
/// within `timeout`.
pub fn connect(name: &str, timeout: Duration) -> Result<UnixStream> {
    connect_in(&runtime_dir()?, name, timeout)
}

/// As [`connect`], in runtime directory `dir`.
///
/// # Errors
/// As [`connect`].
pub fn connect_in(dir: &Path, name: &str, timeout: Duration) -> Result<UnixStream> {
    let path = port_path(dir, name)?;
    let start = Instant::now();
    loop {
        match UnixStream::connect(&path) {
            Ok(s) => return Ok(s),
            Err(e) if start.elapsed() >= timeout => {
                return Err(Error::new(
                    ErrorClass::Port,
                    format!("cannot connect to port {name} within {timeout:?}: {e}"),
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// The file of service `service` (hex, so any name is a file name).
fn name_file(dir: &Path, service: &str) -> Result<PathBuf> {
    if service.is_empty() {
        return Err(Error::new(
            ErrorClass::Name,
            "a service name must not be empty",
        ));
    }
    let hex: String = service.bytes().map(|b| format!("{b:02x}")).collect();
    Ok(sub(dir, "names")?.join(hex))
}

/// What a name file says: the port, and whether its publisher lives.
fn read_name(path: &Path) -> Option<(String, bool)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let port = lines.next()?.to_string();
    let pid: u32 = lines.next()?.parse().ok()?;
    Some((port, os::process_alive(pid)))
}

/// Removes what the processes `pids` left in the runtime directory: their
/// port sockets and the names they published (the launcher calls it when
/// its job ends, so a killed rank leaves nothing behind). Errors are
/// ignored: this is cleanup.
pub fn forget_processes(pids: &[u32]) {
    let Ok(dir) = runtime_dir() else { return };
    forget_processes_in(&dir, pids);
}

/// As [`forget_processes`], in runtime directory `dir`.
pub fn forget_processes_in(dir: &Path, pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let entries = |sub: &str| {
        std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect::<Vec<_>>()
    };
    for p in entries("ports") {
        let owner = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if owner.is_some_and(|o| pids.contains(&o)) {
            let _ = std::fs::remove_file(&p);
        }
    }
    for p in entries("names") {
        let owner = std::fs::read_to_string(&p)
            .ok()
            .and_then(|t| t.lines().nth(1).and_then(|l| l.parse::<u32>().ok()));
        if owner.is_some_and(|o| pids.contains(&o)) {
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// Publishes `port` under `service` (`MPI_Publish_name`), node-local.
///
/// # Errors
/// `Name` if a live process already published `service`; `Other` when
/// the file cannot be written.
pub fn publish_name(service: &str, port: &str) -> Result<()> {
    publish_name_in(&runtime_dir()?, service, port)
}

/// As [`publish_name`], in runtime directory `dir`.
///
/// # Errors
/// As [`publish_name`].
pub fn publish_name_in(dir: &Path, service: &str, port: &str) -> Result<()> {
    let path = name_file(dir, service)?;
    if let Some((_, true)) = read_name(&path) {
        return Err(Error::new(
            ErrorClass::Name,
            format!("the service name {service:?} is already published"),
        ));
    }
    // Write a private temporary, then rename it into place: a reader sees
    // the whole file or none.
    // Relaxed: a counter for unique names.
    let n = NEXT_PORT.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp-{}-{n}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| other(format!("cannot write {}: {e}", tmp.display())))?;
    f.write_all(format!("{port}\n{}\n", std::process::id()).as_bytes())
        .map_err(|e| other(format!("cannot write {}: {e}", tmp.display())))?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        other(format!("cannot publish {}: {e}", path.display()))
    })
}

/// The port published under `service` (`MPI_Lookup_name`).
///
/// # Errors
/// `Name` when nothing live is published under it.
pub fn lookup_name(service: &str) -> Result<String> {
    lookup_name_in(&runtime_dir()?, service)
}

/// As [`lookup_name`], in runtime directory `dir`.
///
/// # Errors
/// As [`lookup_name`].
pub fn lookup_name_in(dir: &Path, service: &str) -> Result<String> {
    let path = name_file(dir, service)?;
    match read_name(&path) {
        Some((port, true)) => Ok(port),
        Some((_, false)) => {
            // Its publisher is gone: the name is free again.
            let _ = std::fs::remove_file(&path);
            Err(not_published(service))
        }
        None => Err(not_published(service)),
    }
}

fn not_published(service: &str) -> Error {
    Error::new(
        ErrorClass::Name,
        format!("no port is published under the service name {service:?}"),
    )
}

/// Withdraws `service` (`MPI_Unpublish_name`).
///
/// # Errors
/// `Name` when it is not published, or was published for another port.
pub fn unpublish_name(service: &str, port: &str) -> Result<()> {
    unpublish_name_in(&runtime_dir()?, service, port)
}

/// As [`unpublish_name`], in runtime directory `dir`.
///
/// # Errors
/// As [`unpublish_name`].
pub fn unpublish_name_in(dir: &Path, service: &str, port: &str) -> Result<()> {
    let path = name_file(dir, service)?;
    match read_name(&path) {
        Some((p, _)) if p == port => std::fs::remove_file(&path)
            .map_err(|e| other(format!("cannot remove {}: {e}", path.display()))),
        Some((p, _)) => Err(Error::new(
            ErrorClass::Name,
            format!("{service:?} is published for port {p}, not {port}"),
        )),
        None => Err(not_published(service)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("shmpi-names-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_port_accepts_a_connection_and_carries_bytes_then_goes_away() {
        let dir = tmpdir("port");
        let port = Port::open_in(&dir).unwrap();
        let name = port.name().to_string();
        assert!(
            name.starts_with("shmpi-port:") && name.len() < 1024,
            "{name}"
        );
        let d2 = dir.clone();
        let n2 = name.clone();
        let t = std::thread::spawn(move || {
            let mut s = connect_in(&d2, &n2, Duration::from_secs(10)).unwrap();
            s.write_all(b"hello").unwrap();
            let mut back = [0u8; 2];
            s.read_exact(&mut back).unwrap();
            back
        });
        let mut s = port.accept(Some(Duration::from_secs(10))).unwrap();
        let mut got = [0u8; 5];
        s.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello");
        s.write_all(b"ok").unwrap();
        assert_eq!(&t.join().unwrap(), b"ok");
        let sock = port.path.clone();
        assert!(sock.exists());
        port.close();
        assert!(!sock.exists(), "close removes the socket");
        let e = connect_in(&dir, &name, Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Port);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn accept_times_out_and_bad_port_names_are_port_errors() {
        let dir = tmpdir("timeout");
        let port = Port::open_in(&dir).unwrap();
        let e = port.accept(Some(Duration::from_millis(30))).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Port);
        for bad in ["", "tcp://x", "shmpi-port:1:2", "shmpi-port:a:b:c"] {
            let e = connect_in(&dir, bad, Duration::from_millis(10)).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Port, "{bad}");
        }
        let other_user = format!("shmpi-port:{}:1:1", os::uid() + 1);
        let e = connect_in(&dir, &other_user, Duration::from_millis(10)).unwrap_err();
        assert!(e.detail().contains("belongs to user"), "{e}");
        drop(port);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_publish_lookup_unpublish_and_refuse_duplicates() {
        let dir = tmpdir("names");
        let e = lookup_name_in(&dir, "ocean").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Name);
        publish_name_in(&dir, "ocean", "shmpi-port:0:1:2").unwrap();
        assert_eq!(lookup_name_in(&dir, "ocean").unwrap(), "shmpi-port:0:1:2");
        let e = publish_name_in(&dir, "ocean", "shmpi-port:0:1:3").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Name);
        // Any bytes make a name.
        publish_name_in(&dir, "a/b c:..", "p").unwrap();
        assert_eq!(lookup_name_in(&dir, "a/b c:..").unwrap(), "p");
        let e = unpublish_name_in(&dir, "ocean", "shmpi-port:0:1:9").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Name);
        unpublish_name_in(&dir, "ocean", "shmpi-port:0:1:2").unwrap();
        assert_eq!(
            lookup_name_in(&dir, "ocean").unwrap_err().class(),
            ErrorClass::Name
        );
        let e = unpublish_name_in(&dir, "ocean", "x").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Name);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_name_whose_publisher_died_is_free_again() {
        let dir = tmpdir("dead");
        let path = name_file(&dir, "gone").unwrap();
        // A pid that cannot be alive (above pid_max's ceiling).
        std::fs::write(&path, "shmpi-port:0:1:1\n4194305\n").unwrap();
        assert_eq!(
            lookup_name_in(&dir, "gone").unwrap_err().class(),
            ErrorClass::Name
        );
        assert!(!path.exists(), "the stale file is removed");
        std::fs::write(&path, "p\n4194305\n").unwrap();
        publish_name_in(&dir, "gone", "q").unwrap();
        assert_eq!(lookup_name_in(&dir, "gone").unwrap(), "q");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_runtime_directory_must_be_private() {
        let dir = tmpdir("private");
        ensure_private_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = ensure_private_dir(&dir).unwrap_err();
        assert!(e.detail().contains("not a private directory"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
