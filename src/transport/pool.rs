//! Memory the ranks share (`MPI_Alloc_mem`, issue 9): each rank's pool is
//! a file beside the job segment (`{segment}-pool-{rank}`), created at
//! the rank's first allocation, mapped read-write by its owner and
//! read-only by the ranks that receive from it. A message sent from a
//! pool buffer travels by rendezvous with the buffer's offset in the
//! pool ([`POOL_BIT`]), and the receiver copies it straight out of its
//! mapping of the sender's pool: one copy, no system call.
//!
//! Pages are committed per allocation (`posix_fallocate`), so a full
//! `/dev/shm` is a `NoMem` error at allocation, never a SIGBUS later. The
//! owner removes its pool file at finalize (every rendezvous from it has
//! been acked by then); the launcher removes what a killed job left, and
//! the launcher's reaper (`shm::os::Reaper`) what a killed launcher left.

use crate::error::{Error, ErrorClass, Result};
use memmap2::{Mmap, MmapRaw};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// An address with this bit is an offset into the sender's pool.
pub const POOL_BIT: u64 = 1 << 63;

/// Allocation granule (a cache line).
const ALIGN: usize = 64;

/// The default size of a rank's pool (`SHMPI_ALLOC_POOL`): address space
/// only until allocated.
pub const DEFAULT_POOL: usize = 1 << 30;

/// The pool file of `rank` of the job whose segment is `segment`.
pub fn pool_path(segment: &Path, rank: usize) -> PathBuf {
    let mut s = segment.as_os_str().to_owned();
    s.push(format!("-pool-{rank}"));
    PathBuf::from(s)
}

/// This rank's pool.
#[derive(Debug)]
pub struct Pool {
    map: MmapRaw,
    file: File,
    path: PathBuf,
    /// Free ranges: offset → length.
    free: Mutex<BTreeMap<usize, usize>>,
}

fn nomem(what: String) -> Error {
    Error::new(ErrorClass::NoMem, what)
}

impl Pool {
    /// Creates the pool file (`O_EXCL`, mode 0600) of `len` bytes and maps it.
    ///
    /// # Errors
    /// `NoMem` when the file cannot be made or mapped.
    pub fn create(path: &Path, len: usize) -> Result<Pool> {
        let file = crate::shm::os::create_private_file(path, len).map_err(nomem)?;
        let map = MmapRaw::map_raw(&file)
            .map_err(|e| nomem(format!("cannot map {}: {e}", path.display())))?;
        let mut free = BTreeMap::new();
        free.insert(0, len);
        Ok(Pool {
            map,
            file,
            path: path.to_path_buf(),
            free: Mutex::new(free),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, usize>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `len` bytes (rounded up to a cache line; at least one line)
    /// and commits their pages; the offset.
    fn take(&self, len: usize) -> Result<(usize, usize)> {
        let need = len.max(1).div_ceil(ALIGN) * ALIGN;
        let mut free = self.lock();
        let Some((&off, &have)) = free.iter().find(|(_, &l)| l >= need) else {
            return Err(nomem(format!(
                "the shared pool has no {need} free bytes in one piece (SHMPI_ALLOC_POOL sets its size)"
            )));
        };
        free.remove(&off);
        if have > need {
            free.insert(off + need, have - need);
        }
        drop(free);
        // SAFETY: posix_fallocate on this pool's open file descriptor, for
        // a range inside the file's size.
        let rc = unsafe {
            libc::posix_fallocate(
                self.file.as_raw_fd(),
                off as libc::off_t,
                need as libc::off_t,
            )
        };
        if rc != 0 {
            self.give(off, need);
            return Err(nomem(format!(
                "no memory in {} for {need} bytes: {}",
                self.path
                    .parent()
                    .map_or("/dev/shm".into(), |p| p.display().to_string()),
                std::io::Error::from_raw_os_error(rc)
            )));
        }
        Ok((off, need))
    }

    /// Gives back `[off, off + len)`, merging with free neighbours.
    fn give(&self, off: usize, len: usize) {
        let mut free = self.lock();
        let mut start = off;
        let mut size = len;
        if let Some((&p, &pl)) = free.range(..off).next_back() {
            if p + pl == off {
                free.remove(&p);
                start = p;
                size += pl;
            }
        }
        if let Some(&nl) = free.get(&(off + len)) {
            free.remove(&(off + len));
            size += nl;
        }
        free.insert(start, size);
    }

    fn base(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// The address in this process of the `len` bytes at offset `off` of
    /// this pool, if they lie inside.
    pub fn address_of(&self, off: u64, len: usize) -> Option<u64> {
        let end = usize::try_from(off).ok()?.checked_add(len)?;
        (end <= self.map.len()).then(|| self.base() as u64 + off)
    }

    /// The offset of `[p, p + len)` in this pool, if it lies inside.
    pub fn offset_of(&self, p: *const u8, len: usize) -> Option<u64> {
        let base = self.base() as usize;
        let a = p as usize;
        (a >= base && a.checked_add(len)? <= base + self.map.len()).then(|| (a - base) as u64)
    }

    /// Removes the pool's file name (mappings stay valid).
    pub fn unlink(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A buffer in this rank's pool (`MPI_Alloc_mem`): derefs to its bytes;
/// dropping it gives them back.
#[derive(Debug)]
pub struct SharedBuf {
    pool: Arc<Pool>,
    off: usize,
    len: usize,
    taken: usize,
}

// SAFETY: a `SharedBuf` owns its byte range of the pool exclusively (the
// allocator never hands it out twice), like a `Vec<u8>`; the pool itself
// is `Sync` (a mapping and a mutex).
unsafe impl Send for SharedBuf {}
// SAFETY: shared references only give `&[u8]`, as for `Vec<u8>`.
unsafe impl Sync for SharedBuf {}

impl SharedBuf {
    /// Allocates `len` bytes in `pool`.
    pub(crate) fn new(pool: &Arc<Pool>, len: usize) -> Result<SharedBuf> {
        let (off, taken) = pool.take(len)?;
        Ok(SharedBuf {
            pool: pool.clone(),
            off,
            len,
            taken,
        })
    }
}

impl std::ops::Deref for SharedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `[off, off + len)` lies in the mapping (the allocator's
        // ranges are inside the file), which lives as long as `pool`; this
        // buffer owns the range, and its pages are committed.
        unsafe { std::slice::from_raw_parts(self.pool.base().wrapping_add(self.off), self.len) }
    }
}

impl std::ops::DerefMut for SharedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive
        // in this process (receivers in other processes only read, and only
        // while a send borrows the buffer).
        unsafe { std::slice::from_raw_parts_mut(self.pool.base().wrapping_add(self.off), self.len) }
    }
}

impl Drop for SharedBuf {
    fn drop(&mut self) {
        self.pool.give(self.off, self.taken);
    }
}

/// A read-only view of a peer's pool.
#[derive(Debug)]
pub struct PeerPool {
    map: Mmap,
}

impl PeerPool {
    /// Maps the pool file at `path` read-only.
    ///
    /// # Errors
    /// `Other` when it cannot be opened or mapped.
    pub fn open(path: &Path) -> Result<PeerPool> {
        let file = File::open(path).map_err(|e| {
            Error::new(
                ErrorClass::Other,
                format!("cannot open the peer's pool {}: {e}", path.display()),
            )
        })?;
        // SAFETY: the file is a pool: its owner never truncates it, and
        // only its owner writes it (this view reads bytes the owner has
        // lent to a send, which it does not touch until the ack).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| {
            Error::new(
                ErrorClass::Other,
                format!("cannot map the peer's pool {}: {e}", path.display()),
            )
        })?;
        Ok(PeerPool { map })
    }

    /// Copies `dst.len()` bytes at offset `off` into `dst`, with
    /// non-temporal stores when `stream` (a destination too big to stay in
    /// the cache: `SHMPI_STREAM_THRESHOLD`).
    ///
    /// # Errors
    /// `Other` when the range is outside the pool.
    pub fn read(&self, off: u64, dst: &mut [u8], stream: bool) -> Result<()> {
        let off = off as usize;
        let src = off
            .checked_add(dst.len())
            .and_then(|end| self.map.get(off..end))
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Other,
                    format!(
                        "a pool rendezvous names bytes {off}..+{} outside the sender's pool of {}",
                        dst.len(),
                        self.map.len()
                    ),
                )
            })?;
        if stream {
            super::bytes::copy_streaming(dst, src);
        } else {
            dst.copy_from_slice(src);
        }
        Ok(())
    }
}

/// A read-write view of a peer's pool: a window member's memory that lies
/// in its pool (`win_create` over `alloc_mem` memory) is reached by
/// copies through it, no system call.
#[derive(Debug)]
pub struct PoolView {
    map: MmapRaw,
}

impl PoolView {
    /// Maps the pool file at `path` read-write.
    ///
    /// # Errors
    /// `Other` when it cannot be opened or mapped.
    pub fn open(path: &Path) -> Result<PoolView> {
        let err = |e: std::io::Error| {
            Error::new(
                ErrorClass::Other,
                format!("cannot map the peer's pool {}: {e}", path.display()),
            )
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(err)?;
        let map = MmapRaw::map_raw(&file).map_err(err)?;
        Ok(PoolView { map })
    }

    /// The address of byte `off` of the pool in this process, if
    /// `[off, off + len)` lies inside it.
    pub fn at(&self, off: usize, len: usize) -> Option<*mut u8> {
        (off.checked_add(len)? <= self.map.len()).then(|| self.map.as_mut_ptr().wrapping_add(off))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("shmpi-pool-{tag}-{}", std::process::id()))
    }

    #[test]
    fn allocations_are_disjoint_aligned_and_coalesce_when_freed() {
        let path = tmp("alloc");
        let _ = std::fs::remove_file(&path);
        let pool = Arc::new(Pool::create(&path, 1 << 20).unwrap());
        let mut a = SharedBuf::new(&pool, 100).unwrap();
        let mut b = SharedBuf::new(&pool, 5000).unwrap();
        assert_eq!(a.as_ptr() as usize % 64, 0);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        a.fill(1);
        b.fill(2);
        assert!(a.iter().all(|&x| x == 1) && b.iter().all(|&x| x == 2));
        assert!(pool.offset_of(b[10..].as_ptr(), 100).is_some());
        let outside = [0u8; 8];
        assert_eq!(pool.offset_of(outside.as_ptr(), 8), None);
        // Partly inside is not inside.
        assert_eq!(pool.offset_of(b.as_ptr(), 2 << 20), None);
        drop(a);
        drop(b);
        assert_eq!(*pool.lock(), BTreeMap::from([(0, 1 << 20)]));
        let e = SharedBuf::new(&pool, 2 << 20).unwrap_err();
        assert_eq!(e.class(), ErrorClass::NoMem);
        pool.unlink();
        assert!(!path.exists());
    }

    #[test]
    fn a_peer_reads_what_the_owner_wrote_and_not_past_the_end() {
        let path = tmp("peer");
        let _ = std::fs::remove_file(&path);
        let pool = Arc::new(Pool::create(&path, 1 << 16).unwrap());
        let mut a = SharedBuf::new(&pool, 300).unwrap();
        for (i, x) in a.iter_mut().enumerate() {
            *x = i as u8;
        }
        let off = pool.offset_of(a[7..].as_ptr(), 200).unwrap();
        let peer = PeerPool::open(&path).unwrap();
        let mut got = vec![0u8; 200];
        peer.read(off, &mut got, false).unwrap();
        assert!(got.iter().enumerate().all(|(i, &x)| x == (i + 7) as u8));
        assert!(peer.read((1 << 16) - 10, &mut got, true).is_err());
        pool.unlink();
    }
}
