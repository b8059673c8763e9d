//! Ports, the name service, accept / connect / join (MPI 4.1
//! §11.10.2-11.10.5) in C, over `job::names` and `comm::connect`
//! (`docs/connect.md`). Spawn is the next piece of issue 8.

use super::{c_str, comm_obj, guard, h, lock, out, put_str, register_comm, to_handle, COMM_NULL};
use crate::error::{Error, ErrorClass, Result};
use crate::job::names::{self, Port};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;

/// The ports this process opened and has not closed.
static PORTS: Mutex<Vec<Port>> = Mutex::new(Vec::new());

/// `MPI_MAX_PORT_NAME`.
const MAX_PORT_NAME: usize = 1024;

#[no_mangle]
pub unsafe extern "C" fn MPI_Open_port(_info: *mut c_void, port_name: *mut c_char) -> c_int {
    guard("MPI_Open_port", COMM_NULL, || {
        if port_name.is_null() {
            return Err(super::arg("port_name"));
        }
        let p = Port::open()?;
        put_str(port_name, MAX_PORT_NAME, p.name(), "port_name")?;
        lock(&PORTS).push(p);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Close_port(port_name: *const c_char) -> c_int {
    guard("MPI_Close_port", COMM_NULL, || {
        let name = c_str(port_name, "port_name")?;
        let mut ports = lock(&PORTS);
        let i = ports.iter().position(|p| p.name() == name).ok_or_else(|| {
            Error::new(
                ErrorClass::Port,
                format!("{name:?} is not a port this process opened"),
            )
        })?;
        ports.remove(i).close();
        Ok(())
    })
}

fn service_args(service: *const c_char, port: *const c_char) -> Result<(String, String)> {
    Ok((c_str(service, "service_name")?, c_str(port, "port_name")?))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Publish_name(
    service: *const c_char,
    _info: *mut c_void,
    port_name: *const c_char,
) -> c_int {
    guard("MPI_Publish_name", COMM_NULL, || {
        let (s, p) = service_args(service, port_name)?;
        names::publish_name(&s, &p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpublish_name(
    service: *const c_char,
    _info: *mut c_void,
    port_name: *const c_char,
) -> c_int {
    guard("MPI_Unpublish_name", COMM_NULL, || {
        let (s, p) = service_args(service, port_name)?;
        names::unpublish_name(&s, &p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Lookup_name(
    service: *const c_char,
    _info: *mut c_void,
    port_name: *mut c_char,
) -> c_int {
    guard("MPI_Lookup_name", COMM_NULL, || {
        let s = c_str(service, "service_name")?;
        let p = names::lookup_name(&s)?;
        put_str(port_name, MAX_PORT_NAME, &p, "port_name").map(|_| ())
    })
}

/// How long `MPI_Comm_connect` waits for the port to exist
/// (`SHMPI_CONNECT_TIMEOUT` seconds, default 60; `MPI_Init` refused a
/// bad value, [`check_connect_timeout`]).
fn connect_timeout() -> std::time::Duration {
    parse_connect_timeout().unwrap_or(std::time::Duration::from_secs(60))
}

/// `SHMPI_CONNECT_TIMEOUT`, checked by `MPI_Init` so that a bad value
/// fails the start with `MPI_ERR_ARG`, as every other variable's does,
/// rather than a connect later.
///
/// # Errors
/// `Arg` naming the variable.
pub(super) fn check_connect_timeout() -> Result<()> {
    parse_connect_timeout().map(|_| ())
}

fn parse_connect_timeout() -> Result<std::time::Duration> {
    let Ok(v) = std::env::var("SHMPI_CONNECT_TIMEOUT") else {
        return Ok(std::time::Duration::from_secs(60));
    };
    match v.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Ok(std::time::Duration::from_secs_f64(s)),
        _ => Err(Error::new(
            ErrorClass::Arg,
            format!("SHMPI_CONNECT_TIMEOUT={v}: expected a time in seconds"),
        )),
    }
}

fn accept_or_connect(
    call: &str,
    port_name: *const c_char,
    root: c_int,
    comm: *mut c_void,
    newcomm: *mut *mut c_void,
    accepting: bool,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if newcomm.is_null() {
            return Err(super::arg("newcomm"));
        }
        let at_root = obj.comm.rank() == root;
        let name = if at_root {
            match c_str(port_name, "port_name") {
                Ok(n) => n,
                Err(e) => {
                    // The others still take part, and fail too.
                    let _ = if accepting {
                        obj.comm.accept(None, root)
                    } else {
                        obj.comm.connect("", root, std::time::Duration::ZERO)
                    };
                    return Err(e);
                }
            }
        } else {
            String::new()
        };
        let c = if accepting {
            // The port leaves the list for the wait (other threads may
            // open and close ports meanwhile) and comes back after.
            let port = if at_root {
                let mut ports = lock(&PORTS);
                let i = ports.iter().position(|p| p.name() == name).ok_or_else(|| {
                    Error::new(
                        ErrorClass::Port,
                        format!("{name:?} is not a port this process opened"),
                    )
                });
                match i {
                    Ok(i) => Some(ports.remove(i)),
                    Err(e) => {
                        drop(ports);
                        // The others still take part, and fail too.
                        let _ = obj.comm.accept(None, root);
                        return Err(e);
                    }
                }
            } else {
                None
            };
            let r = obj.comm.accept(port.as_ref(), root);
            if let Some(p) = port {
                lock(&PORTS).push(p);
            }
            r?
        } else {
            obj.comm.connect(&name, root, connect_timeout())?
        };
        let handle = register_comm(c, obj.errh(), Vec::new());
        out(newcomm, to_handle(handle), "newcomm")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_accept(
    port_name: *const c_char,
    _info: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    newcomm: *mut *mut c_void,
) -> c_int {
    accept_or_connect("MPI_Comm_accept", port_name, root, comm, newcomm, true)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_connect(
    port_name: *const c_char,
    _info: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    newcomm: *mut *mut c_void,
) -> c_int {
    accept_or_connect("MPI_Comm_connect", port_name, root, comm, newcomm, false)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_join(fd: c_int, intercomm: *mut *mut c_void) -> c_int {
    guard("MPI_Comm_join", super::COMM_SELF, || {
        let obj = comm_obj(super::COMM_SELF)?;
        if intercomm.is_null() {
            return Err(super::arg("intercomm"));
        }
        // SAFETY: dup of a descriptor the caller owns: the copy is ours to
        // close, theirs stays open, as MPI_Comm_join leaves it.
        let own = unsafe { libc::dup(fd) };
        if own < 0 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("MPI_Comm_join: {fd} is not an open descriptor"),
            ));
        }
        // SAFETY: `own` is a fresh descriptor that nothing else owns.
        let stream =
            unsafe { <std::os::unix::net::UnixStream as std::os::fd::FromRawFd>::from_raw_fd(own) };
        let c = obj.comm.join(stream)?;
        let handle = register_comm(c, obj.errh(), Vec::new());
        out(intercomm, to_handle(handle), "intercomm")
    })
}

/// The strings of a NULL-terminated C `argv` (`MPI_ARGV_NULL`: none).
fn argv_of(argv: *const *const c_char) -> Result<Vec<String>> {
    let mut v = Vec::new();
    if argv.is_null() {
        return Ok(v);
    }
    for i in 0.. {
        // SAFETY: MPI makes `argv` a NULL-terminated array of strings; we
        // stop at the NULL.
        let p = unsafe { *argv.wrapping_add(i) };
        if p.is_null() {
            break;
        }
        v.push(c_str(p, "argv")?);
        if i > 4096 {
            return Err(super::arg("argv (no terminating NULL in 4096 entries)"));
        }
    }
    Ok(v)
}

/// The largest count at most `max` that an info `soft` value allows
/// (MPI 4.1 §11.8.4: a comma separated list of `a`, `a:b` or `a:b:c`
/// ranges); `None` when it allows none.
fn soft_best(v: &str, max: usize) -> Result<Option<usize>> {
    let bad = || {
        Error::new(
            ErrorClass::InfoValue,
            format!("soft = {v:?}: expected a list of a, a:b or a:b:c"),
        )
    };
    let mut best: Option<usize> = None;
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let nums: Vec<usize> = item
            .split(':')
            .map(|x| x.trim().parse().map_err(|_| bad()))
            .collect::<Result<_>>()?;
        let (a, b, c) = match nums[..] {
            [a] => (a, a, 1),
            [a, b] => (a, b, 1),
            [a, b, c] if c > 0 => (a, b, c),
            _ => return Err(bad()),
        };
        if a > max || a > b {
            continue;
        }
        // The last value of a, a + c, ... that is at most min(b, max).
        let top = a + (b.min(max) - a) / c * c;
        best = best.max(Some(top));
    }
    Ok(best)
}

/// One command of a spawn from its C arguments (significant at the root).
fn command_of(
    program: *const c_char,
    argv: *const *const c_char,
    maxprocs: c_int,
    info: *mut c_void,
) -> Result<crate::comm::SpawnCommand> {
    let pairs = super::env::info_pairs(h(info))?;
    let max = usize::try_from(maxprocs)
        .map_err(|_| Error::new(ErrorClass::Arg, format!("maxprocs {maxprocs} < 0")))?;
    let soft = match pairs.iter().find(|(k, _)| k == "soft") {
        // No allowed count: zero, which spawn refuses with MPI_ERR_SPAWN.
        Some((_, v)) => vec![soft_best(v, max)?.unwrap_or(0)],
        None => Vec::new(),
    };
    Ok(crate::comm::SpawnCommand {
        program: c_str(program, "command")?,
        args: argv_of(argv)?,
        maxprocs: max,
        soft,
    })
}

/// Fills `errcodes` (if given): per command, `(requested, started)`, in
/// command order, its first `started` entries succeeded and the rest got
/// `MPI_ERR_SPAWN`.
fn fill_errcodes(errcodes: *mut c_int, per_command: &[(usize, usize)]) -> Result<()> {
    let n: usize = per_command.iter().map(|p| p.0).sum();
    if errcodes.is_null() || n == 0 {
        return Ok(());
    }
    let codes = super::array_mut(errcodes, n, "array_of_errcodes")?;
    let mut at = 0;
    for &(requested, started) in per_command {
        for (i, c) in codes[at..at + requested].iter_mut().enumerate() {
            *c = if i < started {
                super::SUCCESS
            } else {
                ErrorClass::Spawn.code()
            };
        }
        at += requested;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn spawn_c(
    call: &str,
    cmds: impl FnOnce() -> Result<Vec<crate::comm::SpawnCommand>>,
    requested: usize,
    root: c_int,
    comm: *mut c_void,
    intercomm: *mut *mut c_void,
    errcodes: *mut c_int,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if intercomm.is_null() {
            return Err(super::arg("intercomm"));
        }
        // The commands count at the root only; elsewhere they may be
        // anything.
        let opts = crate::comm::SpawnOptions::default();
        let list = if obj.comm.rank() == root {
            match cmds() {
                Ok(l) => l,
                Err(e) => {
                    // The others still take part (an empty list fails at
                    // the root, and they get its error).
                    let _ = obj.comm.spawn_multiple(&[], &opts, root);
                    return Err(e);
                }
            }
        } else {
            Vec::new()
        };
        let c = obj.comm.spawn_multiple(&list, &opts, root)?;
        // The root knows each command's count; the others (whose
        // arguments MPI ignores) see the total the job started.
        let per_command: Vec<(usize, usize)> = if list.is_empty() {
            vec![(requested, c.remote_size()? as usize)]
        } else {
            list.iter()
                .map(|cmd| {
                    let started = crate::comm::started_count(cmd).unwrap_or(0);
                    (cmd.maxprocs, started)
                })
                .collect()
        };
        fill_errcodes(errcodes, &per_command)?;
        let handle = register_comm(c, obj.errh(), Vec::new());
        out(intercomm, to_handle(handle), "intercomm")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *const *const c_char,
    maxprocs: c_int,
    info: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    intercomm: *mut *mut c_void,
    errcodes: *mut c_int,
) -> c_int {
    spawn_c(
        "MPI_Comm_spawn",
        || Ok(vec![command_of(command, argv, maxprocs, info)?]),
        usize::try_from(maxprocs).unwrap_or(0),
        root,
        comm,
        intercomm,
        errcodes,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn_multiple(
    count: c_int,
    commands: *const *const c_char,
    argvs: *const *const *const c_char,
    maxprocs: *const c_int,
    infos: *const *mut c_void,
    root: c_int,
    comm: *mut c_void,
    intercomm: *mut *mut c_void,
    errcodes: *mut c_int,
) -> c_int {
    let n = usize::try_from(count).unwrap_or(0);
    let requested = super::array(maxprocs, n, "array_of_maxprocs")
        .map(|m| m.iter().map(|&x| usize::try_from(x).unwrap_or(0)).sum())
        .unwrap_or(0);
    spawn_c(
        "MPI_Comm_spawn_multiple",
        || {
            let cmds = super::array(commands, n, "array_of_commands")?;
            let counts = super::array(maxprocs, n, "array_of_maxprocs")?;
            let infos = super::array(infos, n, "array_of_info")?;
            // MPI_ARGVS_NULL: no arguments for any command.
            let argv = if argvs.is_null() {
                vec![std::ptr::null(); n]
            } else {
                super::array(argvs, n, "array_of_argv")?.to_vec()
            };
            (0..n)
                .map(|i| command_of(cmds[i], argv[i], counts[i], infos[i]))
                .collect()
        },
        requested,
        root,
        comm,
        intercomm,
        errcodes,
    )
}
