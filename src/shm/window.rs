//! The memory of a shared window (MPI 4.1 §12.2.3, issue 9): one file in
//! /dev/shm that every member of the window maps read-write. It starts
//! with a header of lock words (one reader-writer lock per member for
//! passive-target epochs, and one word that makes accumulates atomic),
//! then each member's part, 64-byte aligned, in rank order (contiguous,
//! as `MPI_Win_allocate_shared` gives by default).
//!
//! Everything here works on byte offsets into the data area; the MPI
//! rules (epochs, displacement units, ranges) are `comm::win`'s.

use crate::error::{Error, ErrorClass, Result};
use crate::sync::{AtomicU32, Ordering};
use memmap2::MmapRaw;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The exclusive bit of a member's lock word (the rest counts shared
/// holders).
const EXCLUSIVE: u32 = 1 << 31;

/// The mapped memory of a window.
#[derive(Debug)]
pub struct WinSeg {
    map: MmapRaw,
    _file: File,
    path: PathBuf,
    members: usize,
    data: usize,
}

fn nomem(what: String) -> Error {
    Error::new(ErrorClass::NoMem, what)
}

/// Bytes of the lock header for `members` (a cache line per word),
/// rounded up to a page so that the data area starts on one (a part
/// placed on a page boundary, `alloc_shared_noncontig`, is then one).
fn header_len(members: usize) -> usize {
    ((members + 1) * 64).div_ceil(4096) * 4096
}

impl WinSeg {
    /// Creates the window file of `data` bytes for `members` members
    /// (`O_EXCL`, mode 0600), commits its pages and maps it.
    ///
    /// # Errors
    /// `NoMem` when it cannot be made (a full /dev/shm included).
    pub fn create(path: &Path, members: usize, data: usize) -> Result<WinSeg> {
        let len = header_len(members) + data.max(1);
        // Empty, then its pages committed below (so a full /dev/shm is an
        // error here, not a SIGBUS later).
        let file = super::os::create_private_file(path, 0).map_err(nomem)?;
        // SAFETY: posix_fallocate on the open file, from 0 to its length.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
        if rc != 0 {
            let _ = std::fs::remove_file(path);
            return Err(nomem(format!(
                "no memory for a {len}-byte window: {}",
                std::io::Error::from_raw_os_error(rc)
            )));
        }
        WinSeg::map(file, path, members, data)
    }

    /// Maps the window file that a member created.
    ///
    /// # Errors
    /// `Other` when it cannot be opened, or is not the expected size.
    pub fn attach(path: &Path, members: usize, data: usize) -> Result<WinSeg> {
        let len = header_len(members) + data.max(1);
        let file = super::os::open_sized_file(path, len)
            .map_err(|e| Error::new(ErrorClass::Other, format!("the window: {e}")))?;
        WinSeg::map(file, path, members, data)
    }

    fn map(file: File, path: &Path, members: usize, data: usize) -> Result<WinSeg> {
        let map = MmapRaw::map_raw(&file)
            .map_err(|e| nomem(format!("cannot map {}: {e}", path.display())))?;
        Ok(WinSeg {
            map,
            _file: file,
            path: path.to_path_buf(),
            members,
            data,
        })
    }

    /// Removes the file name (the mappings stay).
    pub fn unlink(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// Bytes of the data area.
    pub fn data_len(&self) -> usize {
        self.data
    }

    /// The address of byte `off` of the data area (for loads and stores
    /// by the application, `MPI_Win_shared_query`).
    pub fn data_ptr(&self, off: usize) -> *mut u8 {
        assert!(off <= self.data);
        self.map
            .as_mut_ptr()
            .wrapping_add(header_len(self.members) + off)
    }

    fn check(&self, off: usize, n: usize) -> Result<()> {
        if off.checked_add(n).is_none_or(|e| e > self.data) {
            return Err(Error::new(
                ErrorClass::Intern,
                format!("window access {off}..+{n} outside {} bytes", self.data),
            ));
        }
        Ok(())
    }

    /// Copies `src` to byte `off` of the data area.
    ///
    /// # Errors
    /// `Intern` when the range is outside (callers check first).
    pub fn write(&self, off: usize, src: &[u8]) -> Result<()> {
        self.check(off, src.len())?;
        // SAFETY: the range is inside the mapping (checked); MPI makes
        // conflicting concurrent accesses to it erroneous, so this copy
        // races with nothing a correct program does.
        unsafe { std::ptr::copy(src.as_ptr(), self.data_ptr(off), src.len()) };
        Ok(())
    }

    /// Copies byte `off` of the data area into `dst`.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn read(&self, off: usize, dst: &mut [u8]) -> Result<()> {
        self.check(off, dst.len())?;
        // SAFETY: as in `write`.
        unsafe { std::ptr::copy(self.data_ptr(off), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// The lock word of member `r` (`members` for the accumulate lock).
    fn word(&self, r: usize) -> &AtomicU32 {
        assert!(r <= self.members);
        let p = self.map.as_mut_ptr().wrapping_add(r * 64).cast::<u32>();
        // SAFETY: the header holds `members + 1` cache-line-aligned u32
        // words inside the mapping, which lives as long as `self`; all
        // access to them is atomic.
        unsafe { AtomicU32::from_ptr(p) }
    }

    /// The 4-byte word at offset `off` of the data area (4-aligned), for
    /// atomic use only (a lock a window keeps in its data: the attached
    /// regions of a dynamic window).
    pub fn data_word(&self, off: usize) -> &AtomicU32 {
        assert!(
            off % 4 == 0 && off + 4 <= self.data,
            "a data word outside the window"
        );
        let p = self.data_ptr(off).cast::<u32>();
        // SAFETY: `off` is 4-aligned and inside the data area (asserted),
        // which starts on a page of the mapping that lives as long as
        // `self`; callers reach this word only atomically.
        unsafe { AtomicU32::from_ptr(p) }
    }

    /// Takes member `r`'s lock, exclusive or shared, spinning then
    /// yielding then sleeping briefly (a passive-target epoch).
    pub fn lock(&self, r: usize, exclusive: bool) {
        Self::lock_word(self.word(r), exclusive);
    }

    /// Takes lock word `w` (a member's, or a [`data_word`](Self::data_word)),
    /// exclusive or shared.
    pub fn lock_word(w: &AtomicU32, exclusive: bool) {
        let mut round = 0u32;
        loop {
            // Relaxed: a first look; the CAS below is the acquire.
            let cur = w.load(Ordering::Relaxed);
            let next = if exclusive {
                (cur == 0).then_some(EXCLUSIVE)
            } else {
                (cur & EXCLUSIVE == 0).then_some(cur + 1)
            };
            // SYNC(win.lock): Acquire on success pairs with the Release of
            // the holder's `unlock`: what it wrote in the window is seen.
            if let Some(n) = next {
                if w.compare_exchange_weak(cur, n, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
            }
            round += 1;
            if round < 100 {
                std::hint::spin_loop();
            } else if round < 1000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
    }

    /// Releases member `r`'s lock.
    pub fn unlock(&self, r: usize, exclusive: bool) {
        Self::unlock_word(self.word(r), exclusive);
    }

    /// Releases lock word `w` taken with [`lock_word`](Self::lock_word).
    pub fn unlock_word(w: &AtomicU32, exclusive: bool) {
        // SYNC(win.lock): Release, pairs with the next holder's Acquire.
        if exclusive {
            w.store(0, Ordering::Release);
        } else {
            w.fetch_sub(1, Ordering::Release);
        }
    }

    /// Runs `f` holding the window's accumulate lock (accumulates of any
    /// kind are atomic with respect to each other, as MPI requires).
    pub fn atomically<R>(&self, f: impl FnOnce() -> R) -> R {
        let m = self.members;
        self.lock(m, true);
        let r = f();
        self.unlock(m, true);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mappings_see_each_others_writes_and_locks() {
        let path = std::env::temp_dir().join(format!("shmpi-win-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let a = WinSeg::create(&path, 2, 1000).unwrap();
        let b = WinSeg::attach(&path, 2, 1000).unwrap();
        a.unlink();
        a.write(10, b"abc").unwrap();
        let mut got = [0u8; 3];
        b.read(10, &mut got).unwrap();
        assert_eq!(&got, b"abc");
        assert!(b.write(999, b"xy").is_err());
        a.lock(1, false);
        b.lock(1, false);
        a.unlock(1, false);
        b.unlock(1, false);
        b.lock(0, true);
        b.unlock(0, true);
        assert_eq!(a.atomically(|| 7), 7);
        assert!(WinSeg::attach(&path, 2, 1000).is_err(), "unlinked");
    }
}
