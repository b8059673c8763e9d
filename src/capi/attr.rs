//! Attribute caching (MPI 4.1 §7.7): keyvals of the three kinds
//! (communicator, datatype, window) with their copy and delete callbacks,
//! and the attributes set with them. A communicator keeps its own list
//! (`CommObj::attrs`); datatypes and windows, whose objects are shared or
//! predefined, keep theirs here by handle. MPI 1's names of the
//! communicator calls (`MPI_Keyval_create`, `MPI_Attr_put`, ...) are the
//! same functions.

use super::env::predefined_attr;
use super::SUCCESS;
use super::{comm_obj, guard, h, lock, out, read, state, CommObj, COMM_NULL, KEYVAL_INVALID};
use crate::error::{Error, ErrorClass, Result};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// `MPI_Comm_copy_attr_function` (and the datatype and window ones: a
/// handle is pointer sized in every kind).
type CopyFn =
    unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` (and the other kinds').
type DeleteFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;

/// The kind of object a keyval is for: a key of one kind is
/// `MPI_ERR_KEYVAL` on another (as in MPICH).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Comm,
    Type,
    Win,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Comm => "a communicator",
            Kind::Type => "a datatype",
            Kind::Win => "a window",
        }
    }
}

/// A keyval: its callbacks (0 = the null function, 1 = the `*_DUP_FN`
/// for copy), extra state and kind.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyvalObj {
    copy: usize,
    delete: usize,
    extra: usize,
    freed: bool,
    kind: Kind,
}

/// The keyvals made by the `*_create_keyval` calls (kept after they are
/// freed, for the attributes that still use them).
#[derive(Debug)]
pub(crate) struct Keyvals {
    next: c_int,
    map: Vec<(c_int, KeyvalObj)>,
}

impl Keyvals {
    pub(crate) const fn new() -> Keyvals {
        Keyvals {
            // Clear of the predefined keys (10001.., 20001..).
            next: 1 << 20,
            map: Vec::new(),
        }
    }

    fn get(&self, k: c_int) -> Option<KeyvalObj> {
        self.map.iter().find(|(kk, _)| *kk == k).map(|x| x.1)
    }
}

/// An object's attributes: (key, value), in the order they were set.
type Attrs = Vec<(c_int, usize)>;

/// The attributes of datatypes and windows, by handle (the handle ranges
/// of the two kinds are apart). Its own lock, never held while a
/// callback runs or with the C layer's state locked.
static HELD: Mutex<BTreeMap<usize, Attrs>> = Mutex::new(BTreeMap::new());

/// The keyval `k`, which must be of `kind`.
fn keyval(k: c_int, kind: Kind) -> Result<KeyvalObj> {
    let kv = state().keyvals.get(k).ok_or_else(|| {
        Error::new(
            ErrorClass::Keyval,
            format!("{k} is not a valid attribute key"),
        )
    })?;
    if kv.kind != kind {
        return Err(Error::new(
            ErrorClass::Keyval,
            format!(
                "attribute key {k} was made for {}, not for {}",
                kv.kind.name(),
                kind.name()
            ),
        ));
    }
    Ok(kv)
}

/// Runs the delete callback of `kv` for the value `v` of key `k` on the
/// object `handle`.
fn call_delete(handle: usize, k: c_int, v: usize, kv: KeyvalObj) -> Result<()> {
    if kv.delete == 0 {
        return Ok(());
    }
    // SAFETY: a nonzero `delete` is the program's delete function of this
    // keyval's kind (from its *_create_keyval call), whose C signature is
    // `DeleteFn`.
    let f: DeleteFn = unsafe { std::mem::transmute::<usize, DeleteFn>(kv.delete) };
    // SAFETY: as above: the program's callback, called with the arguments
    // MPI specifies.
    let rc = unsafe { f(handle, k, v as *mut c_void, kv.extra as *mut c_void) };
    if rc != SUCCESS {
        return Err(Error::new(
            ErrorClass::Other,
            format!("the delete callback of attribute key {k} returned {rc}"),
        ));
    }
    Ok(())
}

/// Deletes `attrs` of the object `handle`, newest first: every delete
/// callback runs, also after one failed (an attribute never goes without
/// its callback); the first failure is the error.
fn delete_list(handle: usize, attrs: Attrs, kind: Kind) -> Result<()> {
    let mut first = Ok(());
    for &(k, v) in attrs.iter().rev() {
        if let Ok(kv) = keyval(k, kind) {
            let r = call_delete(handle, k, v, kv);
            if first.is_ok() {
                first = r;
            }
        }
    }
    first
}

/// The attributes a duplicate of the object `handle` gets from its
/// `attrs`, through the copy callbacks. When one fails, the values the
/// earlier ones made are deleted again (their delete callbacks run, with
/// `new`, the duplicate's handle, or the original's where the duplicate
/// has none yet) and the failure is the error.
fn copy_list(handle: usize, new: usize, attrs: Attrs, kind: Kind) -> Result<Attrs> {
    let mut outv = Vec::new();
    for (k, v) in attrs {
        let Ok(kv) = keyval(k, kind) else { continue };
        match kv.copy {
            0 => {}
            1 => outv.push((k, v)),
            f => {
                // SAFETY: a copy value above 1 is the program's copy
                // function of this kind, whose C signature is `CopyFn`.
                let f: CopyFn = unsafe { std::mem::transmute::<usize, CopyFn>(f) };
                let mut newv: usize = 0;
                let mut flag: c_int = 0;
                // SAFETY: the program's callback, with the arguments MPI
                // specifies (the out value and flag point at locals).
                let rc = unsafe {
                    f(
                        handle,
                        k,
                        kv.extra as *mut c_void,
                        v as *mut c_void,
                        (&mut newv as *mut usize).cast(),
                        &mut flag,
                    )
                };
                if rc != SUCCESS {
                    // The failure is the error; a delete callback's too is
                    // dropped.
                    let _ = delete_list(new, outv, kind);
                    return Err(Error::new(
                        ErrorClass::Other,
                        format!("the copy callback of attribute key {k} returned {rc}"),
                    ));
                }
                if flag != 0 {
                    outv.push((k, newv));
                }
            }
        }
    }
    Ok(outv)
}

// ---- communicators ----------------------------------------------------------------------

/// Deletes every attribute of `obj` (communicator free, finalize for
/// `SELF`), as [`delete_list`].
pub(crate) fn delete_all_attrs(obj: &CommObj) -> Result<()> {
    let attrs = std::mem::take(&mut *lock(&obj.attrs));
    delete_list(obj.handle, attrs, Kind::Comm)
}

/// The attributes a duplicate of `obj` gets, through the copy callbacks
/// (the duplicate has no handle yet: a failure's deletes get `obj`'s).
pub(crate) fn copy_attrs(obj: &CommObj) -> Result<Attrs> {
    let attrs = lock(&obj.attrs).clone();
    copy_list(obj.handle, obj.handle, attrs, Kind::Comm)
}

/// Where an object's attributes are: a communicator's own list, or the
/// datatype's / window's in [`HELD`].
enum Home<'a> {
    Comm(&'a CommObj),
    Held(usize),
}

impl Home<'_> {
    fn handle(&self) -> usize {
        match self {
            Home::Comm(c) => c.handle,
            Home::Held(hd) => *hd,
        }
    }

    /// Runs `f` on the list, under its lock.
    fn with<R>(&self, f: impl FnOnce(&mut Attrs) -> R) -> R {
        match self {
            Home::Comm(c) => f(&mut lock(&c.attrs)),
            Home::Held(hd) => {
                let mut all = lock(&HELD);
                let list = all.entry(*hd).or_default();
                let r = f(list);
                if list.is_empty() {
                    all.remove(hd);
                }
                r
            }
        }
    }
}

/// Sets attribute `k` (deleting the old value through its callback, with
/// no lock held). Two threads setting one key of one object at once race
/// as the program made them: both may delete the same old value.
fn set_on(home: Home<'_>, kind: Kind, k: c_int, value: usize) -> Result<()> {
    let kv = keyval(k, kind)?;
    if kv.freed {
        return Err(Error::new(
            ErrorClass::Keyval,
            format!("attribute key {k} was freed"),
        ));
    }
    let old = home.with(|a| a.iter().find(|(kk, _)| *kk == k).map(|x| x.1));
    if let Some(v) = old {
        call_delete(home.handle(), k, v, kv)?;
    }
    home.with(|a| match a.iter_mut().find(|(kk, _)| *kk == k) {
        Some(x) => x.1 = value,
        None => a.push((k, value)),
    });
    Ok(())
}

fn get_on(home: Home<'_>, kind: Kind, k: c_int) -> Result<Option<usize>> {
    keyval(k, kind)?;
    Ok(home.with(|a| a.iter().find(|(kk, _)| *kk == k).map(|x| x.1)))
}

fn delete_on(home: Home<'_>, kind: Kind, k: c_int) -> Result<()> {
    let kv = keyval(k, kind)?;
    let v = home.with(|a| a.iter().position(|(kk, _)| *kk == k).map(|i| a.remove(i).1));
    match v {
        Some(v) => call_delete(home.handle(), k, v, kv),
        None => Err(Error::new(
            ErrorClass::Keyval,
            format!("the object has no attribute with key {k}"),
        )),
    }
}

/// Writes an attribute value found (or the flag that there is none).
fn give_value(v: Option<usize>, value: *mut c_void, flag: *mut c_int) -> Result<()> {
    match v {
        Some(v) => {
            out(value.cast::<usize>(), v, "attribute_val")?;
            out(flag, 1, "flag")
        }
        None => out(flag, 0, "flag"),
    }
}

fn create_keyval(
    call: &str,
    kind: Kind,
    copy: usize,
    delete: usize,
    keyval_out: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    guard(call, COMM_NULL, || {
        if keyval_out.is_null() {
            return Err(super::arg("keyval"));
        }
        let mut st = state();
        let k = st.keyvals.next;
        st.keyvals.next += 1;
        st.keyvals.map.push((
            k,
            KeyvalObj {
                copy,
                delete,
                extra: extra as usize,
                freed: false,
                kind,
            },
        ));
        drop(st);
        out(keyval_out, k, "keyval")
    })
}

fn free_keyval(call: &str, kind: Kind, k: *mut c_int) -> c_int {
    guard(call, COMM_NULL, || {
        let key = read(k, "keyval")?;
        let mut st = state();
        let kv = st
            .keyvals
            .map
            .iter_mut()
            .find(|(kk, v)| *kk == key && v.kind == kind)
            .filter(|(_, v)| !v.freed)
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Keyval,
                    format!("{key} is not a live attribute key made for {}", kind.name()),
                )
            })?;
        kv.1.freed = true;
        drop(st);
        out(k, KEYVAL_INVALID, "keyval")
    })
}

/// The communicator calls under a name (MPI 2's, or MPI 1's).
fn comm_set(call: &str, comm: *mut c_void, k: c_int, value: *mut c_void) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        set_on(Home::Comm(&obj), Kind::Comm, k, value as usize)
    })
}

fn comm_get(
    call: &str,
    comm: *mut c_void,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if let Some(p) = predefined_attr(k) {
            out(value.cast::<*const c_int>(), p, "attribute_val")?;
            return out(flag, 1, "flag");
        }
        give_value(get_on(Home::Comm(&obj), Kind::Comm, k)?, value, flag)
    })
}

fn comm_delete(call: &str, comm: *mut c_void, k: c_int) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        delete_on(Home::Comm(&obj), Kind::Comm, k)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    copy: usize,
    delete: usize,
    keyval_out: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    create_keyval(
        "MPI_Comm_create_keyval",
        Kind::Comm,
        copy,
        delete,
        keyval_out,
        extra,
    )
}

/// `MPI_Keyval_create`: MPI 1's name of `MPI_Comm_create_keyval`
/// (deprecated since MPI 2.0, still in MPI 4.1 §19.1; the C callbacks'
/// signatures are the same).
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_create(
    copy: usize,
    delete: usize,
    keyval_out: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    create_keyval(
        "MPI_Keyval_create",
        Kind::Comm,
        copy,
        delete,
        keyval_out,
        extra,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free_keyval(k: *mut c_int) -> c_int {
    free_keyval("MPI_Comm_free_keyval", Kind::Comm, k)
}

/// `MPI_Keyval_free`: MPI 1's `MPI_Comm_free_keyval` (deprecated).
#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_free(k: *mut c_int) -> c_int {
    free_keyval("MPI_Keyval_free", Kind::Comm, k)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_attr(
    comm: *mut c_void,
    k: c_int,
    value: *mut c_void,
) -> c_int {
    comm_set("MPI_Comm_set_attr", comm, k, value)
}

/// `MPI_Attr_put`: MPI 1's `MPI_Comm_set_attr` (deprecated).
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_put(comm: *mut c_void, k: c_int, value: *mut c_void) -> c_int {
    comm_set("MPI_Attr_put", comm, k, value)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(
    comm: *mut c_void,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    comm_get("MPI_Comm_get_attr", comm, k, value, flag)
}

/// `MPI_Attr_get`: MPI 1's `MPI_Comm_get_attr` (deprecated).
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(
    comm: *mut c_void,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    comm_get("MPI_Attr_get", comm, k, value, flag)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_delete_attr(comm: *mut c_void, k: c_int) -> c_int {
    comm_delete("MPI_Comm_delete_attr", comm, k)
}

/// `MPI_Attr_delete`: MPI 1's `MPI_Comm_delete_attr` (deprecated).
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_delete(comm: *mut c_void, k: c_int) -> c_int {
    comm_delete("MPI_Attr_delete", comm, k)
}

// ---- datatypes (MPI 4.1 §7.7.5) ---------------------------------------------------------

/// Copies the attributes of datatype `from` to its duplicate `to`
/// (`MPI_Type_dup`), through the copy callbacks.
pub(crate) fn type_dup_attrs(from: usize, to: usize) -> Result<()> {
    let attrs = lock(&HELD).get(&from).cloned().unwrap_or_default();
    if attrs.is_empty() {
        return Ok(());
    }
    let copied = copy_list(from, to, attrs, Kind::Type)?;
    if !copied.is_empty() {
        lock(&HELD).insert(to, copied);
    }
    Ok(())
}

/// Deletes every attribute of the datatype or window `handle` (its free),
/// as [`delete_list`].
pub(crate) fn delete_held(handle: usize, kind: Kind) -> Result<()> {
    let attrs = lock(&HELD).remove(&handle).unwrap_or_default();
    delete_list(handle, attrs, kind)
}

/// Forgets whatever attributes the released handle `handle` still has
/// (one a delete callback set while its object was freed, or one set on
/// a handle the C layer held and let go), so that the next object given
/// the handle starts without any.
pub(crate) fn forget_held(handle: usize) {
    lock(&HELD).remove(&handle);
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_keyval(
    copy: usize,
    delete: usize,
    keyval_out: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    create_keyval(
        "MPI_Type_create_keyval",
        Kind::Type,
        copy,
        delete,
        keyval_out,
        extra,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free_keyval(k: *mut c_int) -> c_int {
    free_keyval("MPI_Type_free_keyval", Kind::Type, k)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_attr(t: *mut c_void, k: c_int, value: *mut c_void) -> c_int {
    guard("MPI_Type_set_attr", COMM_NULL, || {
        super::types::type_obj(h(t))?;
        set_on(Home::Held(h(t)), Kind::Type, k, value as usize)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_attr(
    t: *mut c_void,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_attr", COMM_NULL, || {
        super::types::type_obj(h(t))?;
        give_value(get_on(Home::Held(h(t)), Kind::Type, k)?, value, flag)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_delete_attr(t: *mut c_void, k: c_int) -> c_int {
    guard("MPI_Type_delete_attr", COMM_NULL, || {
        super::types::type_obj(h(t))?;
        delete_on(Home::Held(h(t)), Kind::Type, k)
    })
}

// ---- windows (MPI 4.1 §7.7.4; the predefined keys are `win.rs`'s) -------------------------

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    copy: usize,
    delete: usize,
    keyval_out: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    create_keyval(
        "MPI_Win_create_keyval",
        Kind::Win,
        copy,
        delete,
        keyval_out,
        extra,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free_keyval(k: *mut c_int) -> c_int {
    free_keyval("MPI_Win_free_keyval", Kind::Win, k)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_attr(win: *mut c_void, k: c_int, value: *mut c_void) -> c_int {
    super::win::on_win("MPI_Win_set_attr", win, |_| {
        if super::win::is_predefined_key(k) {
            return Err(Error::new(
                ErrorClass::Keyval,
                format!("attribute key {k} is a predefined window key, which is read only"),
            ));
        }
        set_on(Home::Held(h(win)), Kind::Win, k, value as usize)
    })
}

/// A window's attribute set by the program (`MPI_Win_get_attr` past the
/// predefined keys).
pub(crate) fn win_get_user(
    win: *mut c_void,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    give_value(get_on(Home::Held(h(win)), Kind::Win, k)?, value, flag)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_delete_attr(win: *mut c_void, k: c_int) -> c_int {
    super::win::on_win("MPI_Win_delete_attr", win, |_| {
        delete_on(Home::Held(h(win)), Kind::Win, k)
    })
}
