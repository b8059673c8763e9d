//! The segment header: what an attaching process checks before it trusts
//! the rest of the mapping.

use crate::sync::{AtomicU32, AtomicU64, CachePadded, Ordering, CACHE_LINE};

/// `"SHMPISEG"` as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"SHMPISEG");
/// Bumped whenever the meaning of any byte in the segment changes.
/// 3: a rendezvous request's `Rts::TIMED` bit (2026-12-07).
pub const VERSION: u32 = 3;

/// What the creator and every attacher agree on; attach refuses a segment
/// whose header differs from the attacher's expectation in any field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentSpec {
    /// Total bytes of the segment.
    pub size: u64,
    /// Digest of the layout above the control blocks, computed by the
    /// layer that owns that layout (`transport::Layout`).
    pub layout_digest: u64,
    /// Ranks in the job.
    pub nranks: u32,
    /// The job id the segment is named after.
    pub job_id: u64,
}

/// The first bytes of every segment, `#[repr(C)]`, fixed-width fields.
#[repr(C)]
#[derive(Debug)]
pub struct SegmentHeader {
    /// Identity and shape, written by the creator before any other process
    /// maps the segment.
    pub(crate) ident: CachePadded<Ident>,
    /// Start barrier: ranks that have attached and prepared their rings.
    pub(crate) attached: CachePadded<AtomicU32>,
    /// Ranks that have passed `finalize`'s barrier (diagnostics).
    pub(crate) finalized: CachePadded<AtomicU32>,
}

/// The identity part of the header.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Ident {
    pub(crate) magic: AtomicU64,
    pub(crate) version: AtomicU32,
    pub(crate) cache_line: AtomicU32,
    pub(crate) size: AtomicU64,
    pub(crate) layout_digest: AtomicU64,
    pub(crate) job_id: AtomicU64,
    pub(crate) nranks: AtomicU32,
    pub(crate) _reserved: [AtomicU32; 7],
}

const _: () = assert!(core::mem::size_of::<Ident>() == 72);
const _: () = assert!(core::mem::size_of::<SegmentHeader>() == 3 * CACHE_LINE);

impl SegmentHeader {
    /// Writes the identity of a fresh (zeroed) segment; the magic goes last.
    pub(crate) fn write(&self, spec: &SegmentSpec) {
        let id = &self.ident;
        // Relaxed: no other process has the segment yet; they get it through
        // process creation (fork/exec), which orders everything before it.
        id.version.store(VERSION, Ordering::Relaxed);
        id.cache_line.store(CACHE_LINE as u32, Ordering::Relaxed);
        id.size.store(spec.size, Ordering::Relaxed);
        id.layout_digest
            .store(spec.layout_digest, Ordering::Relaxed);
        id.job_id.store(spec.job_id, Ordering::Relaxed);
        id.nranks.store(spec.nranks, Ordering::Relaxed);
        // SYNC(segment.magic): Release; pairs with the Acquire in
        // `validate`, for an attacher that races with creation.
        id.magic.store(MAGIC, Ordering::Release);
    }

    /// Checks the identity against what the attacher expects.
    pub(crate) fn validate(&self, want: &SegmentSpec) -> Result<(), super::SegmentAttachError> {
        use super::SegmentAttachError as E;
        let id = &self.ident;
        // SYNC(segment.magic): Acquire; pairs with the Release in `write`.
        let magic = id.magic.load(Ordering::Acquire);
        if magic != MAGIC {
            return Err(E::BadMagic(magic));
        }
        // Relaxed below: ordered after the magic by the Acquire above.
        let version = id.version.load(Ordering::Relaxed);
        if version != VERSION {
            return Err(E::VersionMismatch {
                found: version,
                expected: VERSION,
            });
        }
        let cl = id.cache_line.load(Ordering::Relaxed);
        if cl as usize != CACHE_LINE {
            return Err(E::CacheLineMismatch {
                found: cl,
                expected: CACHE_LINE as u32,
            });
        }
        let size = id.size.load(Ordering::Relaxed);
        if size != want.size {
            return Err(E::SizeMismatch {
                found: size,
                expected: want.size,
            });
        }
        let digest = id.layout_digest.load(Ordering::Relaxed);
        let nranks = id.nranks.load(Ordering::Relaxed);
        if digest != want.layout_digest || nranks != want.nranks {
            return Err(E::LayoutMismatch {
                found: digest,
                expected: want.layout_digest,
            });
        }
        let job = id.job_id.load(Ordering::Relaxed);
        if job != want.job_id {
            return Err(E::JobMismatch {
                found: job,
                expected: want.job_id,
            });
        }
        Ok(())
    }

    /// Ranks in the job.
    pub fn nranks(&self) -> u32 {
        // Relaxed: written once before the segment was shared.
        self.ident.nranks.load(Ordering::Relaxed)
    }

    /// The start-barrier counter.
    pub fn attached(&self) -> &AtomicU32 {
        &self.attached
    }

    /// The finalize counter.
    pub fn finalized(&self) -> &AtomicU32 {
        &self.finalized
    }
}
