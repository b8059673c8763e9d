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
/// (`SHMPI_CONNECT_TIMEOUT` seconds, default 60).
fn connect_timeout() -> std::time::Duration {
    let s = std::env::var("SHMPI_CONNECT_TIMEOUT")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(60.0);
    std::time::Duration::from_secs_f64(s)
}

#[allow(clippy::too_many_arguments)]
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
            c_str(port_name, "port_name")?
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
