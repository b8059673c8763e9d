//! Everything of `shm` but the doorbell (none of it is built under loom).

#[path = "collregion.rs"]
pub mod collregion;
#[path = "control.rs"]
pub mod control;
#[path = "header.rs"]
mod header;
#[path = "ids.rs"]
pub mod ids;
#[path = "lines.rs"]
pub mod lines;
#[path = "offers.rs"]
pub mod offers;
#[path = "os.rs"]
pub mod os;
#[path = "segment.rs"]
mod segment;
#[path = "window.rs"]
pub mod window;

pub use control::{ControlBlock, RankState, SingleCopy, Split, MAX_RANKS, PANIC_CODE};
pub use header::{SegmentHeader, SegmentSpec, MAGIC, VERSION};
pub use segment::{segment_path, Segment};

use crate::error::{Error, ErrorClass};
use std::fmt;

/// Offset of the first control block.
pub const CONTROL_OFFSET: usize = core::mem::size_of::<SegmentHeader>();

/// Offset of rank 0's context-id map (the maps follow the control blocks,
/// page-aligned, one [`ids::IdMap`] per rank).
pub const fn id_maps_offset(nranks: usize) -> usize {
    let end = CONTROL_OFFSET + nranks * core::mem::size_of::<ControlBlock>();
    (end + 4095) & !4095
}

/// Bytes of what `shm` owns: the header, `nranks` control blocks,
/// `nranks` context-id maps, the collective-region pool and `nranks`
/// offer tables. The launcher reserves all of it; the layout above it
/// starts at the next page.
pub const fn control_end(nranks: usize) -> usize {
    offers_offset(nranks) + nranks * offers::OFFER_TABLE_BYTES
}

/// Offset of rank 0's offer table (after the collective-region pool, one
/// [`offers::OfferTable`] per rank).
pub const fn offers_offset(nranks: usize) -> usize {
    coll_pool_offset(nranks) + collregion::pool_bytes(nranks)
}

/// Offset of the collective-region pool (after the id maps, page-aligned).
pub const fn coll_pool_offset(nranks: usize) -> usize {
    let end = id_maps_offset(nranks) + nranks * ids::ID_MAP_BYTES;
    (end + 4095) & !4095
}

/// Why a segment could not be created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SegmentCreateError {
    /// A file of that name exists (another job, or a stale one).
    AlreadyExists(String),
    /// The file system lacks the space; bytes needed and available.
    NoSpace {
        /// Bytes the segment needs.
        need: u64,
        /// Bytes the file system has free.
        avail: u64,
        /// The directory.
        dir: String,
    },
    /// The size exceeds a process limit (RLIMIT_FSIZE) or the file system's
    /// maximum file size.
    TooLarge(u64),
    /// Some other system call failed.
    Os {
        /// What was being done.
        what: &'static str,
        /// The errno.
        errno: i32,
    },
    /// The spec cannot describe a segment (no ranks, too many, too small).
    BadShape(String),
}

impl fmt::Display for SegmentCreateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SegmentCreateError::AlreadyExists(p) => {
                write!(f, "shared-memory segment {p} already exists")
            }
            SegmentCreateError::NoSpace { need, avail, dir } => write!(
                f,
                "not enough space in {dir} for the job segment: need {need} bytes, {avail} available \
                 (raise the tmpfs size, or lower SHMPI_RING_SIZE)"
            ),
            SegmentCreateError::TooLarge(n) => write!(
                f,
                "the job segment of {n} bytes exceeds the file-size limit (ulimit -f)"
            ),
            SegmentCreateError::Os { what, errno } => write!(
                f,
                "{what} failed: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            SegmentCreateError::BadShape(m) => write!(f, "bad segment shape: {m}"),
        }
    }
}

impl std::error::Error for SegmentCreateError {}

impl From<SegmentCreateError> for Error {
    fn from(e: SegmentCreateError) -> Self {
        let class = match e {
            SegmentCreateError::NoSpace { .. } | SegmentCreateError::TooLarge(_) => {
                ErrorClass::NoMem
            }
            _ => ErrorClass::Other,
        };
        Error::new(class, e.to_string())
    }
}

/// Why a segment could not be attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SegmentAttachError {
    /// No such segment.
    NotFound(String),
    /// The file is not owned by this user or its mode is not 0600.
    NotPrivate(String),
    /// The first word is not [`MAGIC`].
    BadMagic(u64),
    /// Made by another version of shmpi.
    VersionMismatch {
        /// Version in the segment.
        found: u32,
        /// Version of this library.
        expected: u32,
    },
    /// Made for another cache-line size.
    CacheLineMismatch {
        /// In the segment.
        found: u32,
        /// In this library.
        expected: u32,
    },
    /// The size differs from what the job contract says.
    SizeMismatch {
        /// In the segment (or of the file).
        found: u64,
        /// Expected.
        expected: u64,
    },
    /// The layout digest (or rank count) differs.
    LayoutMismatch {
        /// In the segment.
        found: u64,
        /// Expected.
        expected: u64,
    },
    /// The segment belongs to another job.
    JobMismatch {
        /// In the segment.
        found: u64,
        /// Expected.
        expected: u64,
    },
    /// Reserving this rank's part failed (no space).
    NoSpace {
        /// Bytes needed.
        need: u64,
    },
    /// Some other system call failed.
    Os {
        /// What was being done.
        what: &'static str,
        /// The errno.
        errno: i32,
    },
    /// The spec cannot describe a segment (no ranks, too many, too small).
    BadShape(String),
}

impl fmt::Display for SegmentAttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SegmentAttachError as E;
        match self {
            E::NotFound(p) => write!(f, "job segment {p} does not exist"),
            E::NotPrivate(p) => {
                write!(f, "job segment {p} is not private to this user (mode 0600)")
            }
            E::BadMagic(m) => write!(f, "not a shmpi segment (magic {m:#018x})"),
            E::VersionMismatch { found, expected } => write!(
                f,
                "segment version {found} does not match this library's version {expected}"
            ),
            E::CacheLineMismatch { found, expected } => write!(
                f,
                "segment laid out for {found}-byte cache lines, this library uses {expected}"
            ),
            E::SizeMismatch { found, expected } => {
                write!(
                    f,
                    "segment is {found} bytes, the job contract says {expected}"
                )
            }
            E::LayoutMismatch { found, expected } => write!(
                f,
                "segment layout digest {found:#018x} does not match {expected:#018x}"
            ),
            E::JobMismatch { found, expected } => {
                write!(f, "segment belongs to job {found:#x}, not {expected:#x}")
            }
            E::NoSpace { need } => write!(
                f,
                "not enough space in /dev/shm to reserve this rank's {need} bytes of rings"
            ),
            E::Os { what, errno } => write!(
                f,
                "{what} failed: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            E::BadShape(m) => write!(f, "bad segment shape: {m}"),
        }
    }
}

impl std::error::Error for SegmentAttachError {}

impl From<SegmentAttachError> for Error {
    fn from(e: SegmentAttachError) -> Self {
        let class = match e {
            SegmentAttachError::NoSpace { .. } => ErrorClass::NoMem,
            _ => ErrorClass::Other,
        };
        Error::new(class, e.to_string())
    }
}
