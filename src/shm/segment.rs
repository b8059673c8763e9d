//! Creating, attaching, reserving and unlinking the segment file.

use super::{control_end, CONTROL_OFFSET};
use super::{ControlBlock, SegmentAttachError, SegmentCreateError, SegmentHeader, SegmentSpec};
use crate::sync::{AtomicU32, Ordering};
use memmap2::{MmapOptions, MmapRaw};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

/// The file name of a job's segment: `{dir}/shmpi-{uid}-{job_id:016x}`.
pub fn segment_path(dir: &Path, job_id: u64) -> PathBuf {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    dir.join(format!("shmpi-{uid}-{job_id:016x}"))
}

/// A mapped job segment.
#[derive(Debug)]
pub struct Segment {
    map: MmapRaw,
    file: File,
    path: PathBuf,
    spec: SegmentSpec,
    /// Whether this handle still has to remove the file (creator only).
    linked: AtomicU32,
}

/// The system's page size.
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("segment paths contain no NUL")
}

/// Free bytes for an unprivileged user in the file system holding `dir`.
fn available(dir: &Path) -> Option<u64> {
    let c = cpath(dir);
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// The header and control blocks must fit: `header()` and `control()`
/// rely on it.
fn check_shape(spec: &SegmentSpec) -> Result<(), String> {
    let n = spec.nranks as usize;
    if n == 0 || n > super::MAX_RANKS {
        return Err(format!(
            "{n} ranks: a segment serves 1 to {} ranks",
            super::MAX_RANKS
        ));
    }
    if (spec.size as usize) < control_end(n) {
        return Err(format!(
            "{} bytes cannot hold the header and {n} control blocks ({} bytes)",
            spec.size,
            control_end(n)
        ));
    }
    Ok(())
}

impl Segment {
    /// Creates the segment file (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode
    /// 0600), sizes it, reserves the header and control blocks, maps it and
    /// writes the header. The rest is reserved by the ranks that own it
    /// ([`Segment::reserve`]) so that its pages are first touched on their
    /// NUMA node.
    ///
    /// # Errors
    /// [`SegmentCreateError::NoSpace`] when the file system has less free
    /// space than `spec.size`, `AlreadyExists`, `TooLarge` (RLIMIT_FSIZE),
    /// or `Os`.
    pub fn create(path: &Path, spec: SegmentSpec) -> Result<Segment, SegmentCreateError> {
        check_shape(&spec).map_err(SegmentCreateError::BadShape)?;
        let dir = path.parent().unwrap_or(Path::new("/"));
        if let Some(avail) = available(dir) {
            if avail < spec.size {
                return Err(SegmentCreateError::NoSpace {
                    need: spec.size,
                    avail,
                    dir: dir.display().to_string(),
                });
            }
        }
        let c = cpath(path);
        let flags =
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `c` is NUL-terminated; the mode argument is passed as the
        // variadic third argument open(2) expects with O_CREAT.
        let fd = unsafe { libc::open(c.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            let e = errno();
            return Err(if e == libc::EEXIST {
                SegmentCreateError::AlreadyExists(path.display().to_string())
            } else {
                SegmentCreateError::Os {
                    what: "open",
                    errno: e,
                }
            });
        }
        // SAFETY: `fd` was just opened by us and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        let fail = |what: &'static str, e: i32| {
            // SAFETY: `c` is a NUL-terminated path we created above.
            unsafe { libc::unlink(c.as_ptr()) };
            match e {
                libc::EFBIG => SegmentCreateError::TooLarge(spec.size),
                libc::ENOSPC => SegmentCreateError::NoSpace {
                    need: spec.size,
                    avail: available(dir).unwrap_or(0),
                    dir: dir.display().to_string(),
                },
                _ => SegmentCreateError::Os { what, errno: e },
            }
        };
        // SAFETY: plain syscall on our fd.
        if unsafe { libc::ftruncate(fd, spec.size as libc::off_t) } != 0 {
            return Err(fail("ftruncate", errno()));
        }
        let head = control_end(spec.nranks as usize) as libc::off_t;
        // SAFETY: plain syscall on our fd; returns an errno, not -1.
        let rc = unsafe { libc::posix_fallocate(fd, 0, head) };
        if rc != 0 {
            return Err(fail("posix_fallocate", rc));
        }
        let map = match MmapOptions::new().len(spec.size as usize).map_raw(&file) {
            Ok(m) => m,
            Err(e) => return Err(fail("mmap", e.raw_os_error().unwrap_or(0))),
        };
        let seg = Segment {
            map,
            file,
            path: path.to_owned(),
            spec,
            linked: AtomicU32::new(1),
        };
        seg.header().write(&spec);
        Ok(seg)
    }

    /// Maps an existing segment and checks its header against `spec`.
    ///
    /// # Errors
    /// A named [`SegmentAttachError`] for a missing file, one not private to
    /// this user, or any header field that differs.
    pub fn attach(path: &Path, spec: SegmentSpec) -> Result<Segment, SegmentAttachError> {
        Segment::attach_with(path, spec, libc::O_NOFOLLOW)
    }

    /// Maps the segment that process `pid` holds open as descriptor `fd`
    /// (`/proc/<pid>/fd/<fd>`: a job segment's name is gone once its ranks
    /// have attached, so another job of the same user reaches it this
    /// way), and checks it as [`attach`](Self::attach) does.
    ///
    /// # Errors
    /// As [`attach`](Self::attach).
    pub fn attach_held(
        pid: u32,
        fd: i32,
        spec: SegmentSpec,
    ) -> Result<Segment, SegmentAttachError> {
        let path = PathBuf::from(format!("/proc/{pid}/fd/{fd}"));
        let mut seg = Segment::attach_with(&path, spec, 0)?;
        seg.path = path;
        Ok(seg)
    }

    /// This process's descriptor of the segment file (see
    /// [`attach_held`](Self::attach_held)).
    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }

    fn attach_with(
        path: &Path,
        spec: SegmentSpec,
        extra: libc::c_int,
    ) -> Result<Segment, SegmentAttachError> {
        check_shape(&spec).map_err(SegmentAttachError::BadShape)?;
        let c = cpath(path);
        let flags = libc::O_RDWR | extra | libc::O_CLOEXEC;
        // SAFETY: `c` is NUL-terminated.
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            let e = errno();
            return Err(if e == libc::ENOENT {
                SegmentAttachError::NotFound(path.display().to_string())
            } else {
                SegmentAttachError::Os {
                    what: "open",
                    errno: e,
                }
            });
        }
        // SAFETY: `fd` was just opened by us and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        let meta = file.metadata().map_err(|e| SegmentAttachError::Os {
            what: "fstat",
            errno: e.raw_os_error().unwrap_or(0),
        })?;
        use std::os::unix::fs::MetadataExt;
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        if meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(SegmentAttachError::NotPrivate(path.display().to_string()));
        }
        if meta.len() != spec.size {
            return Err(SegmentAttachError::SizeMismatch {
                found: meta.len(),
                expected: spec.size,
            });
        }
        let map = MmapOptions::new()
            .len(spec.size as usize)
            .map_raw(&file)
            .map_err(|e| SegmentAttachError::Os {
                what: "mmap",
                errno: e.raw_os_error().unwrap_or(0),
            })?;
        let seg = Segment {
            map,
            file,
            path: path.to_owned(),
            spec,
            linked: AtomicU32::new(0),
        };
        seg.header().validate(&spec)?;
        Ok(seg)
    }

    /// Reserves (allocates) `len` bytes at `offset` from this process, so
    /// their pages come from this process's NUMA node and a full /dev/shm
    /// shows up here, not as a SIGBUS on first use.
    ///
    /// # Errors
    /// [`SegmentAttachError::NoSpace`] or `Os`.
    pub fn reserve(&self, offset: usize, len: usize) -> Result<(), SegmentAttachError> {
        assert!(offset + len <= self.len(), "reserve past the segment");
        // SAFETY: plain syscall on our own fd; returns an errno.
        let rc = unsafe {
            libc::posix_fallocate(
                self.file.as_raw_fd(),
                offset as libc::off_t,
                len as libc::off_t,
            )
        };
        match rc {
            0 => Ok(()),
            libc::ENOSPC | libc::EFBIG => Err(SegmentAttachError::NoSpace { need: len as u64 }),
            e => Err(SegmentAttachError::Os {
                what: "posix_fallocate",
                errno: e,
            }),
        }
    }

    /// Maps the pages of `offset..offset + len` (widened to whole pages)
    /// into this process now, writable, so the first pass of a ring
    /// through them does not take a page fault for every 4 KiB: on the
    /// AMD EPYC VM the first lap of an 8 B ping-pong round a 2 MiB ring
    /// (32,768 round trips) ran at 100-200 ns one-way against 65-80 after
    /// it (`docs/benchmarks.md`, "Issue 6, twenty-seventh pass"). Pages
    /// not yet allocated are allocated from this process, as a first
    /// touch would. Returns whether the kernel did it
    /// (`MADV_POPULATE_WRITE`, Linux 5.14); otherwise the pages fault in
    /// on first use as before, so a refusal is not an error.
    pub fn populate(&self, offset: usize, len: usize) -> bool {
        assert!(
            offset.checked_add(len).is_some_and(|e| e <= self.len()),
            "populate past the segment"
        );
        if len == 0 {
            return true;
        }
        let page = page_size();
        let start = offset / page * page;
        let end = (offset + len).div_ceil(page) * page;
        // MADV_POPULATE_WRITE faults the pages in (allocating holes as a
        // write would) without changing any byte: only this process's
        // page tables change. It reports a failure (EINVAL on old kernels,
        // EFAULT where a SIGBUS would have come, as on a full /dev/shm,
        // ENOMEM, EINTR) instead of raising it.
        // SAFETY: `start..end` lies within this handle's mapping: whole
        // pages from a page-aligned base, `end` rounded up within the page
        // that holds the segment's last byte, which the file covers.
        let rc = unsafe {
            libc::madvise(
                self.base().as_ptr().wrapping_add(start).cast(),
                end - start,
                libc::MADV_POPULATE_WRITE,
            )
        };
        rc == 0
    }

    /// Removes the file name; the mapping stays valid. Idempotent.
    pub fn unlink(&self) {
        // Relaxed: the flag only makes unlink idempotent in this process.
        if self.linked.swap(0, Ordering::Relaxed) != 0 {
            let c = cpath(&self.path);
            // SAFETY: `c` is NUL-terminated.
            unsafe { libc::unlink(c.as_ptr()) };
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the segment was created or attached with.
    pub fn spec(&self) -> &SegmentSpec {
        &self.spec
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the segment is empty (never, for a valid one).
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// The base address of the mapping.
    pub fn base(&self) -> NonNull<u8> {
        NonNull::new(self.map.as_mut_ptr()).expect("mmap never returns null")
    }

    /// The header.
    pub fn header(&self) -> &SegmentHeader {
        // SAFETY: the mapping is at least `control_end(nranks)` bytes (the
        // layout puts the rings above it), page-aligned, and the header is
        // all atomics, valid for any bit pattern including zero.
        unsafe { &*self.map.as_ptr().cast::<SegmentHeader>() }
    }

    /// Rank `rank`'s control block.
    ///
    /// # Panics
    /// If `rank` is not below the segment's rank count.
    #[inline]
    pub fn control(&self, rank: usize) -> &ControlBlock {
        assert!(rank < self.spec.nranks as usize, "rank {rank} out of range");
        let off = CONTROL_OFFSET + rank * core::mem::size_of::<ControlBlock>();
        // SAFETY: `off` lies within the reserved control area below
        // `control_end(nranks)`, aligned to the cache line (the header and
        // the blocks are CachePadded); control blocks are all atomics.
        unsafe { &*self.map.as_ptr().wrapping_add(off).cast::<ControlBlock>() }
    }

    /// Rank `rank`'s context-id map.
    ///
    /// # Panics
    /// If `rank` is not below the segment's rank count.
    pub fn id_map(&self, rank: usize) -> &super::ids::IdMap {
        assert!(rank < self.spec.nranks as usize, "rank {rank} out of range");
        let off =
            super::id_maps_offset(self.spec.nranks as usize) + rank * super::ids::ID_MAP_BYTES;
        // SAFETY: `off` lies within the reserved area below
        // `control_end(nranks)`, page-aligned plus a multiple of the map
        // size (itself a multiple of the cache line); maps are all atomics,
        // valid for any bit pattern including the file's zeros.
        unsafe {
            &*self
                .map
                .as_ptr()
                .wrapping_add(off)
                .cast::<super::ids::IdMap>()
        }
    }
}

impl Segment {
    /// Rank `rank`'s offer table (see [`super::offers`]).
    ///
    /// # Panics
    /// If `rank` is not below the segment's rank count.
    pub fn offers(&self, rank: usize) -> &super::offers::OfferTable {
        assert!(rank < self.spec.nranks as usize, "rank {rank} out of range");
        let off = super::offers_offset(self.spec.nranks as usize)
            + rank * super::offers::OFFER_TABLE_BYTES;
        // SAFETY: `off` lies within the reserved area below
        // `control_end(nranks)`, page-aligned (the pool's end) plus a
        // multiple of the table size (itself a multiple of the cache
        // line); tables are all atomics, valid for any bit pattern
        // including the file's zeros (every entry free).
        unsafe {
            &*self
                .map
                .as_ptr()
                .wrapping_add(off)
                .cast::<super::offers::OfferTable>()
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        self.unlink();
    }
}

// SAFETY: the mapping is shared memory accessed only through atomics or
// under the ring protocol; the handle has no thread affinity.
unsafe impl Send for Segment {}
// SAFETY: as above; `&Segment` hands out only atomic views.
unsafe impl Sync for Segment {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minor page faults this thread has taken so far.
    fn minor_faults() -> i64 {
        // SAFETY: an all-zero rusage is a valid value of this plain C
        // struct; getrusage fills it for the calling thread.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a writable rusage.
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) }, 0);
        ru.ru_minflt
    }

    /// Reads one byte of every page of `off..off + len` through `seg`'s
    /// mapping.
    fn touch(seg: &Segment, off: usize, len: usize) {
        assert!(off + len <= seg.len());
        for at in (off..off + len).step_by(page_size()) {
            // SAFETY: `at` is inside the mapping (asserted above); nothing
            // writes the segment while the test reads it.
            unsafe { seg.base().as_ptr().wrapping_add(at).read_volatile() };
        }
    }

    #[test]
    fn populate_maps_the_pages_so_a_first_pass_takes_no_faults_and_keeps_the_bytes() {
        const LEN: usize = 1 << 20;
        let job = 0x7e5a_0000_0000 | u64::from(std::process::id());
        let path = segment_path(Path::new("/dev/shm"), job);
        let head = control_end(2);
        let spec = SegmentSpec {
            size: (head + 2 * LEN) as u64,
            layout_digest: 7,
            nranks: 2,
            job_id: job,
        };
        let made = Segment::create(&path, spec).unwrap();
        // Bytes written through the creator's mapping, in the part to be
        // populated (an unaligned range) and past it.
        let a = head + 100;
        made.reserve(head, 2 * LEN).unwrap();
        for (i, at) in [a, a + LEN / 2, a + LEN - 1, head + LEN + 5]
            .into_iter()
            .enumerate()
        {
            // SAFETY: in the mapping; no other handle reads or writes yet.
            unsafe {
                made.base()
                    .as_ptr()
                    .wrapping_add(at)
                    .write_volatile(i as u8 + 1)
            };
        }
        let seg = Segment::attach(&path, spec).unwrap();
        made.unlink();
        let pages = (LEN / page_size()) as i64;
        // A range of this mapping that is not populated faults about page
        // by page (read fault-around maps the pages already in use in
        // one go), so the fault counts below mean something; where it
        // does not (huge pages in /dev/shm, no per-thread counts), they
        // are not checked.
        let cold = minor_faults();
        touch(&seg, head + LEN + page_size(), LEN / 2);
        let counted = minor_faults() - cold >= pages / 2 / 8;
        let before = minor_faults();
        let populated = seg.populate(a, LEN);
        let after_populate = minor_faults();
        touch(&seg, head + page_size(), LEN - 2 * page_size());
        let after_touch = minor_faults();
        match (populated, counted) {
            (true, true) => {
                // The kernel counts the pages it mapped as faults of this
                // thread (one each at most, the range widened to whole
                // pages), taken without the trap; on first use the pages
                // take none (a few stray ones allowed).
                let mapped = after_populate - before;
                assert!(mapped <= pages + 8, "{mapped} faults for {pages} pages");
                let first_use = after_touch - after_populate;
                assert!(first_use < 8, "{first_use} faults on first use");
            }
            (false, _) => eprintln!("MADV_POPULATE_WRITE refused (kernel before 5.14?)"),
            (true, false) => eprintln!("faults not counted page by page here: not checked"),
        }
        // The bytes stay, inside the range and past it.
        let at = |off: usize| {
            // SAFETY: in the mapping; nothing writes it now.
            unsafe { seg.base().as_ptr().wrapping_add(off).read_volatile() }
        };
        assert_eq!(
            [at(a), at(a + LEN / 2), at(a + LEN - 1), at(head + LEN + 5)],
            [1, 2, 3, 4]
        );
        // Nothing to do for an empty range.
        assert!(seg.populate(head, 0));
    }

    #[test]
    #[should_panic(expected = "populate past the segment")]
    fn populate_refuses_a_range_past_the_segment() {
        let job = 0x7e5b_0000_0000 | u64::from(std::process::id());
        let path = segment_path(Path::new("/dev/shm"), job);
        let spec = SegmentSpec {
            size: (control_end(2) + 4096) as u64,
            layout_digest: 7,
            nranks: 2,
            job_id: job,
        };
        let seg = Segment::create(&path, spec).unwrap();
        seg.populate(control_end(2), 8192);
    }
}
