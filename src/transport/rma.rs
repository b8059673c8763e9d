//! How a window reaches each member's memory (issue 9, `comm::win`).
//!
//! A member's part of a window is one of:
//! - a part of a shared window file (`win_allocate_shared`), mapped here;
//! - this process's own memory (`win_create`: the caller's buffer);
//! - memory in the member's shared pool (`win_create` over `alloc_mem`
//!   memory), mapped here read-write through a [`PoolView`];
//! - memory elsewhere in the member's process (`win_create` over ordinary
//!   memory), reached with `process_vm_readv` / `process_vm_writev`
//!   (CMA; the window's creation tests that the kernel allows it).
//!
//! [`Memory`] hides which: reads and writes of byte ranges, or of lists of
//! runs (a noncontiguous datatype at the target), each checked against
//! the part's length.

use super::cma;
use super::pool::{PoolView, SharedBuf};
use crate::datatype::Scalar;
use crate::error::{Error, ErrorClass, Result};
use crate::shm::window::WinSeg;
use std::sync::Arc;

/// Memory a process exposes in a window it creates (`win_create`): it
/// owns it (a `Vec` or a pool buffer, given back by dropping the window)
/// or the creator vouches for it ([`from_raw`](Self::from_raw), the C
/// layer).
pub struct Exposed {
    base: *mut u8,
    len: usize,
    _owner: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for Exposed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exposed")
            .field("base", &self.base)
            .field("len", &self.len)
            .finish()
    }
}

// SAFETY: an `Exposed` is a pointer to memory that it owns (a `Vec` or a
// pool buffer, whose heap memory does not move when they do) or that its
// creator promised stays valid while the window lives; it is only read
// and written through `Memory`'s copies, which MPI's epochs order.
unsafe impl Send for Exposed {}
// SAFETY: as for `Send`: shared references give no access but the
// copies, whose concurrent use MPI's synchronisation rules govern.
unsafe impl Sync for Exposed {}

impl Exposed {
    /// Exposes the elements of `v` (the window owns the vector).
    pub fn from_vec<T: Scalar>(mut v: Vec<T>) -> Exposed {
        let base = v.as_mut_ptr().cast::<u8>();
        let len = std::mem::size_of_val(v.as_slice());
        Exposed {
            base,
            len,
            _owner: Some(Box::new(v)),
        }
    }

    /// Exposes a buffer of this rank's shared pool (`alloc_mem`): peers
    /// reach it without a system call.
    pub fn from_shared(mut b: SharedBuf) -> Exposed {
        let base = b.as_mut_ptr();
        let len = b.len();
        Exposed {
            base,
            len,
            _owner: Some(Box::new(b)),
        }
    }

    /// Exposes `len` bytes at `base`, which the window does not own.
    ///
    /// # Safety
    /// `[base, base + len)` must be valid for reads and writes until the
    /// window is freed, and accessed meanwhile only as MPI's rules for
    /// window memory allow.
    pub unsafe fn from_raw(base: *mut u8, len: usize) -> Exposed {
        Exposed {
            base,
            len,
            _owner: None,
        }
    }

    /// The first byte.
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Bytes exposed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is exposed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[derive(Debug)]
enum Kind {
    /// Bytes from an offset of a shared window file.
    Seg(Arc<WinSeg>, usize),
    /// This process's own exposed memory.
    Own(Arc<Exposed>),
    /// A peer's pool, from an offset.
    Pool(Arc<PoolView>, usize),
    /// A peer's memory, by system call naming `task`, a thread of its
    /// process (`cma::target`).
    Cma { task: u32, addr: u64 },
}

/// One member's part of a window, as this process reaches it.
#[derive(Debug)]
pub struct Memory {
    kind: Kind,
    len: usize,
}

fn outside(off: usize, n: usize, len: usize) -> Error {
    Error::new(
        ErrorClass::RmaRange,
        format!("a window access of {n} bytes at {off} falls outside a part of {len} bytes"),
    )
}

impl Memory {
    /// Bytes `[off, off + len)` of a shared window file's data area.
    ///
    /// # Errors
    /// `Intern` when they are outside it.
    pub fn in_window(seg: Arc<WinSeg>, off: usize, len: usize) -> Result<Memory> {
        if off.checked_add(len).is_none_or(|e| e > seg.data_len()) {
            return Err(Error::new(
                ErrorClass::Intern,
                format!("a window part {off}..+{len} outside its file"),
            ));
        }
        Ok(Memory {
            kind: Kind::Seg(seg, off),
            len,
        })
    }

    /// This process's own exposed memory.
    pub fn own(e: Arc<Exposed>) -> Memory {
        Memory {
            len: e.len,
            kind: Kind::Own(e),
        }
    }

    /// `len` bytes at offset `off` of a peer's pool.
    ///
    /// # Errors
    /// `Intern` when they are outside the pool.
    pub fn in_pool(view: Arc<PoolView>, off: usize, len: usize) -> Result<Memory> {
        if view.at(off, len).is_none() {
            return Err(Error::new(
                ErrorClass::Intern,
                format!("a window part {off}..+{len} outside the peer's pool"),
            ));
        }
        Ok(Memory {
            kind: Kind::Pool(view, off),
            len,
        })
    }

    /// `len` bytes at `addr` in the process of task `task`, by system call.
    pub fn cma(task: u32, addr: u64, len: usize) -> Memory {
        Memory {
            kind: Kind::Cma { task, addr },
            len,
        }
    }

    /// Bytes of the part.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the part is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The part's first byte in this process's address space, when it is
    /// mapped here (loads and stores reach it: `shared_query`).
    pub fn mapped(&self) -> Option<*mut u8> {
        match &self.kind {
            Kind::Seg(seg, off) => Some(seg.data_ptr(*off)),
            Kind::Own(e) => Some(e.base),
            Kind::Pool(v, off) => v.at(*off, self.len),
            Kind::Cma { .. } => None,
        }
    }

    /// Checks that every run lies in the part; the bytes they hold.
    fn check(&self, runs: &[(usize, usize)]) -> Result<usize> {
        let mut total = 0usize;
        for &(off, n) in runs {
            if off.checked_add(n).is_none_or(|e| e > self.len) {
                return Err(outside(off, n, self.len));
            }
            total += n;
        }
        Ok(total)
    }

    fn transfer(
        &self,
        runs: &[(usize, usize)],
        buf: *mut u8,
        buf_len: usize,
        write: bool,
    ) -> Result<()> {
        if self.check(runs)? != buf_len {
            return Err(Error::new(
                ErrorClass::Intern,
                "window runs and buffer differ in length",
            ));
        }
        match (&self.kind, self.mapped()) {
            (Kind::Cma { task, addr }, _) => {
                let remote: Vec<(u64, usize)> =
                    runs.iter().map(|&(o, n)| (addr + o as u64, n)).collect();
                cma::transfer_runs(*task, &remote, buf, buf_len, write).map_err(|e| {
                    Error::new(
                        // No memory there in the target (a dynamic
                        // window's address that nothing maps).
                        if e.raw_os_error() == Some(libc::EFAULT) {
                            ErrorClass::RmaRange
                        } else {
                            ErrorClass::Other
                        },
                        format!(
                            "{} of {buf_len} bytes of window memory in task {task} failed: {e}",
                            if write {
                                "process_vm_writev"
                            } else {
                                "process_vm_readv"
                            }
                        ),
                    )
                })
            }
            (_, Some(base)) => {
                let mut at = 0usize;
                for &(off, n) in runs {
                    let part = base.wrapping_add(off);
                    let mine = buf.wrapping_add(at);
                    let (src, dst) = if write {
                        (mine.cast_const(), part)
                    } else {
                        (part.cast_const(), mine)
                    };
                    // SAFETY: the run lies in the part (checked), which the
                    // `Memory` keeps mapped (its `Arc`) or its creator
                    // vouched for (`Exposed`); `buf` has `buf_len` bytes
                    // and the runs add up to it. MPI makes conflicting
                    // concurrent accesses erroneous, and `copy_between`
                    // allows an overlap of origin and target.
                    unsafe { crate::ring::copy_between(src, dst, n) };
                    at += n;
                }
                Ok(())
            }
            (_, None) => Err(Error::new(
                ErrorClass::Intern,
                "a window part is not mapped",
            )),
        }
    }

    /// Copies `dst.len()` bytes from offset `off` of the part.
    ///
    /// # Errors
    /// `RmaRange` outside the part; `Other` when the kernel refuses.
    pub fn read(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        self.transfer(&[(off, dst.len())], dst.as_mut_ptr(), dst.len(), false)
    }

    /// Copies `src` to offset `off` of the part.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn write(&self, off: usize, src: &[u8]) -> Result<()> {
        // The copy only reads `src` (write direction).
        self.transfer(
            &[(off, src.len())],
            src.as_ptr().cast_mut(),
            src.len(),
            true,
        )
    }

    /// Copies the runs `(offset, length)` of the part, in order, into
    /// `dst` (their lengths add up to `dst.len()`).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn read_runs(&self, runs: &[(usize, usize)], dst: &mut [u8]) -> Result<()> {
        self.transfer(runs, dst.as_mut_ptr(), dst.len(), false)
    }

    /// Copies `src` into the runs `(offset, length)` of the part, in
    /// order.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn write_runs(&self, runs: &[(usize, usize)], src: &[u8]) -> Result<()> {
        self.transfer(runs, src.as_ptr().cast_mut(), src.len(), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_and_cma_parts_read_and_write_the_same_bytes() {
        let own = Arc::new(Exposed::from_vec(vec![0u32; 100]));
        let m = Memory::own(own.clone());
        let c = Memory::cma(std::process::id(), own.base() as u64, own.len());
        assert_eq!(m.len(), 400);
        m.write(8, &[1, 2, 3, 4]).unwrap();
        let mut got = [0u8; 4];
        c.read(8, &mut got).unwrap();
        assert_eq!(got, [1, 2, 3, 4]);
        c.write_runs(&[(0, 2), (398, 2)], &[9, 9, 7, 7]).unwrap();
        let mut all = [0u8; 4];
        m.read_runs(&[(0, 2), (398, 2)], &mut all).unwrap();
        assert_eq!(all, [9, 9, 7, 7]);
        assert_eq!(
            m.read(399, &mut got).unwrap_err().class(),
            ErrorClass::RmaRange
        );
        assert_eq!(
            c.write(usize::MAX, &got).unwrap_err().class(),
            ErrorClass::RmaRange
        );
        assert!(m.mapped().is_some() && c.mapped().is_none());
    }
}
