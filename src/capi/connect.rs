//! Ports and the name service (MPI 4.1 §11.10.2-11.10.4) in C, over
//! `job::names`. Accept, connect, join and spawn are the next pieces of
//! issue 8 (`docs/connect.md`).

use super::{c_str, guard, lock, put_str, COMM_NULL};
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
