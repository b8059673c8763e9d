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
