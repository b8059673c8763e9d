//! Attribute caching (MPI 4.1 §7.7): keyvals with copy and delete
//! callbacks, and the per-communicator cache.
//!
//! A value is a `usize` (in C, the `void *` the user stores). `dup` calls
//! every keyval's copy callback and keeps the attributes it says to keep;
//! freeing a communicator, deleting an attribute or replacing it calls the
//! delete callback; `create` and `split` start with an empty cache.

use crate::error::{Error, ErrorClass, Result};
use crate::sync::{AtomicU64, Ordering};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A copy callback: given the keyval and the old value, `Some(new)` to
/// give the duplicate the attribute, `None` to leave it out.
pub type CopyFn = Arc<dyn Fn(&Keyval, usize) -> Option<usize> + Send + Sync>;
/// A delete callback: given the keyval and the value going away.
pub type DeleteFn = Arc<dyn Fn(&Keyval, usize) + Send + Sync>;

static NEXT_KEYVAL: AtomicU64 = AtomicU64::new(1);

/// An attribute key (`MPI_Comm_create_keyval`). Cheap to clone; freeing
/// the handle does not remove attributes already set with it.
#[derive(Clone)]
pub struct Keyval {
    id: u64,
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
}

impl std::fmt::Debug for Keyval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keyval({})", self.id)
    }
}

impl PartialEq for Keyval {
    fn eq(&self, o: &Keyval) -> bool {
        self.id == o.id
    }
}

impl Keyval {
    /// A keyval with the given callbacks. `copy: None` is
    /// `MPI_COMM_NULL_COPY_FN` (dup leaves the attribute out), `delete:
    /// None` is `MPI_COMM_NULL_DELETE_FN`.
    pub fn new(copy: Option<CopyFn>, delete: Option<DeleteFn>) -> Keyval {
        Keyval {
            // Relaxed: a unique number, nothing published.
            id: NEXT_KEYVAL.fetch_add(1, Ordering::Relaxed),
            copy,
            delete,
        }
    }

    /// A keyval whose copy callback is `MPI_COMM_DUP_FN` (the duplicate
    /// gets the same value).
    pub fn dup_fn(delete: Option<DeleteFn>) -> Keyval {
        Keyval::new(Some(Arc::new(|_, v| Some(v))), delete)
    }

    /// The keyval's number (diagnostics).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `MPI_Comm_free_keyval`: the handle goes away; attributes set with
    /// it stay until deleted or their communicator is freed.
    pub fn free(self) {}
}

/// One communicator's attributes.
#[derive(Default)]
pub(crate) struct Cache {
    map: BTreeMap<u64, (Keyval, usize)>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cache({} attributes)", self.map.len())
    }
}

impl Cache {
    /// Sets `k` to `v`; an old value is deleted through the callback
    /// first.
    pub(crate) fn set(&mut self, k: &Keyval, v: usize) {
        if let Some((old_k, old)) = self.map.insert(k.id, (k.clone(), v)) {
            if let Some(d) = &old_k.delete {
                d(&old_k, old);
            }
        }
    }

    pub(crate) fn get(&self, k: &Keyval) -> Option<usize> {
        self.map.get(&k.id).map(|(_, v)| *v)
    }

    /// Deletes `k`'s attribute through its delete callback.
    ///
    /// # Errors
    /// `Arg` when the communicator has no attribute for `k`.
    pub(crate) fn delete(&mut self, k: &Keyval) -> Result<()> {
        let Some((k, v)) = self.map.remove(&k.id) else {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("the communicator has no attribute for keyval {}", k.id),
            ));
        };
        if let Some(d) = &k.delete {
            d(&k, v);
        }
        Ok(())
    }

    /// The attributes a duplicate gets, through the copy callbacks.
    pub(crate) fn copy(&self) -> Cache {
        let mut out = Cache::default();
        for (id, (k, v)) in &self.map {
            if let Some(c) = &k.copy {
                if let Some(nv) = c(k, *v) {
                    out.map.insert(*id, (k.clone(), nv));
                }
            }
        }
        out
    }

    /// Deletes every attribute (the communicator is being freed).
    pub(crate) fn clear(&mut self) {
        for (_, (k, v)) in std::mem::take(&mut self.map) {
            if let Some(d) = &k.delete {
                d(&k, v);
            }
        }
    }
}
