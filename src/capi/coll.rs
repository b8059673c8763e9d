//! Collective operations (MPI 4.1 §6): the C entry points over the
//! communicator's collectives.
//!
//! Data moves as bytes: a contiguous datatype goes straight from and to
//! the user's buffers; a noncontiguous one is packed into a staging
//! buffer first and unpacked after. Reductions with a predefined
//! operation on a builtin element type that Rust knows run the Rust
//! typed collectives (which use the shared-memory algorithms); the others
//! (user operations, `long double`, pair types with C padding,
//! noncontiguous layouts) gather the packed contributions and fold them
//! in rank order here, which is right for non-commutative operations too.
//!
//! Nonblocking collectives that the Rust layer has (barrier, bcast,
//! reduce, allreduce, gather, allgather, alltoall on contiguous data) are
//! truly nonblocking; the others run to completion when they start and
//! return a complete request (`docs/c-abi.md` says what that means for
//! programs).

use super::p2p::{give_request, nbytes, staging_buf, words_bytes, Fin, Ptr, Req, Unpack, Words};
use super::types::{committed, OpObj, Prim, Reduction, TypeObj};
use super::{
    array, bytes, bytes_mut, comm_obj, count, guard, h, CommObj, IN_PLACE, PROC_NULL, ROOT,
};
use super::{CountElem, DisplElem};
use crate::coll::op::Reducible;
use crate::coll::Op;
use crate::comm::Request;
use crate::datatype::ValueIndex;
use crate::error::{Error, ErrorClass, Result};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

pub(crate) fn in_place(p: *const c_void) -> bool {
    p == IN_PLACE
}

/// Refuses `MPI_IN_PLACE` as a buffer of `n` instances of `ty` where the
/// call does not take it, before anything is sent, so that a rank that
/// would find it only when it unpacks what it received (a derived type)
/// fails with the others instead of after them.
pub(crate) fn not_in_place(buf: *const c_void, n: usize, ty: &TypeObj) -> Result<()> {
    if in_place(buf) && n > 0 && ty.size > 0 {
        return Err(super::in_place_here());
    }
    Ok(())
}

/// A count argument that matters only when `used` (MPI ignores the send
/// arguments of an in-place call and the receive arguments away from the
/// root).
fn count_if<C: CountElem>(used: bool, n: C, what: &str) -> Result<usize> {
    if used {
        count(n, what)
    } else {
        Ok(0)
    }
}

/// The packed bytes of `n` instances of `ty` at `buf` (borrowed when
/// contiguous).
fn src<'a>(buf: *const c_void, n: usize, ty: &TypeObj) -> Result<std::borrow::Cow<'a, [u8]>> {
    match ty.contiguous(n) {
        Some(off) => Ok(std::borrow::Cow::Borrowed(bytes(
            (buf as *const u8).wrapping_offset(off).cast(),
            nbytes(n, ty)?,
        )?)),
        None => Ok(std::borrow::Cow::Owned(ty.pack(buf, n)?)),
    }
}

/// Where received bytes go: straight into the user's buffer, or into a
/// staging buffer unpacked by [`Dst::finish`].
enum Dst<'a> {
    Direct(&'a mut [u8]),
    Staged {
        staging: Vec<u8>,
        buf: *mut c_void,
        n: usize,
        ty: Arc<TypeObj>,
    },
}

impl<'a> Dst<'a> {
    fn new(buf: *mut c_void, n: usize, ty: &Arc<TypeObj>) -> Result<Dst<'a>> {
        match ty.contiguous(n) {
            Some(off) => Ok(Dst::Direct(bytes_mut(
                (buf as *mut u8).wrapping_offset(off).cast(),
                nbytes(n, ty)?,
            )?)),
            None => Ok(Dst::Staged {
                staging: staging_buf(nbytes(n, ty)?)?,
                buf,
                n,
                ty: ty.clone(),
            }),
        }
    }

    fn slice(&mut self) -> &mut [u8] {
        match self {
            Dst::Direct(b) => b,
            Dst::Staged { staging, .. } => staging,
        }
    }

    fn finish(self) -> Result<()> {
        if let Dst::Staged {
            staging,
            buf,
            n,
            ty,
            ..
        } = self
        {
            ty.unpack(&staging, buf, n)?;
        }
        Ok(())
    }
}

/// Unpacks block `i` (of `each` packed bytes) of `packed` into `n`
/// instances at `buf + disp * extent`.
pub(crate) fn unpack_at(
    packed: &[u8],
    buf: *mut c_void,
    disp: isize,
    n: usize,
    ty: &TypeObj,
) -> Result<()> {
    not_in_place(buf, n, ty)?;
    let at = (buf as *mut u8).wrapping_offset(disp_bytes(disp, ty)?);
    ty.unpack(packed, at.cast(), n).map(|_| ())
}

pub(crate) fn pack_at(buf: *const c_void, disp: isize, n: usize, ty: &TypeObj) -> Result<Vec<u8>> {
    not_in_place(buf, n, ty)?;
    let at = (buf as *const u8).wrapping_offset(disp_bytes(disp, ty)?);
    ty.pack(at.cast(), n)
}

/// A displacement of `disp` extents of `ty` in bytes; `Count` past what
/// an address may hold (large counts and displacements, the `_c` forms).
fn disp_bytes(disp: isize, ty: &TypeObj) -> Result<isize> {
    disp.checked_mul(ty.extent()).ok_or_else(|| {
        Error::new(
            ErrorClass::Count,
            format!(
                "a displacement of {disp} extents of {} bytes overflows",
                ty.extent()
            ),
        )
    })
}

/// The displacements (in elements) of `p` blocks of `n` one after the
/// other; `Count` when they pass what an address may hold.
pub(crate) fn even_displs(n: usize, p: usize) -> Result<Vec<isize>> {
    // The last is the largest: checked once, the vector made at its size.
    n.checked_mul(p.saturating_sub(1))
        .and_then(|d| isize::try_from(d).ok())
        .ok_or_else(counts_overflow)?;
    Ok((0..p).map(|i| (i * n) as isize).collect())
}

/// The sum of `counts`; `Count` when it overflows.
pub(crate) fn sum_counts(counts: &[usize]) -> Result<usize> {
    counts
        .iter()
        .try_fold(0usize, |a, &c| a.checked_add(c))
        .ok_or_else(counts_overflow)
}

/// `n` times `p`; `Count` when it overflows.
pub(crate) fn times(n: usize, p: usize) -> Result<usize> {
    n.checked_mul(p).ok_or_else(counts_overflow)
}

/// The packed blocks of `(count, type)` pairs laid end to end: their
/// byte counts, their offsets and the total; `Count` when a block or the
/// total passes what one object may hold (large counts, the `_c` forms).
fn byte_blocks<'a>(
    blocks: impl Iterator<Item = (usize, &'a TypeObj)>,
) -> Result<(Vec<usize>, Vec<usize>, usize)> {
    let cap = blocks.size_hint().0;
    let mut bc = Vec::with_capacity(cap);
    let mut bd = Vec::with_capacity(cap);
    let mut at = 0usize;
    for (n, ty) in blocks {
        let b = nbytes(n, ty)?;
        bd.push(at);
        bc.push(b);
        at = at
            .checked_add(b)
            .filter(|&t| isize::try_from(t).is_ok())
            .ok_or_else(counts_overflow)?;
    }
    Ok((bc, bd, at))
}

/// Blocks of one buffer, each `(count, byte displacement, type)`, seen
/// as one byte span where every block's instances are contiguous: the
/// collectives' direct path, which sends from the program's buffer and
/// receives into it instead of packing into and unpacking out of a copy
/// (a 2-rank `MPI_Alltoall` of 64 KiB took 74.6 µs through the copies,
/// against 8.4 for the same call from Rust; `docs/benchmarks.md`, "Issue
/// 6, forty-first pass").
pub(crate) struct Span {
    /// The span's first byte, from the buffer.
    pub(crate) from: isize,
    /// Its length: from the lowest block's first byte to the highest
    /// block's end.
    pub(crate) len: usize,
    /// Each block's bytes.
    pub(crate) counts: Vec<usize>,
    /// Each block's offset in the span (0 for an empty block).
    pub(crate) displs: Vec<usize>,
}

impl Span {
    /// The span of `blocks`; `None` when a block's type is not contiguous
    /// for its count (the caller packs then).
    pub(crate) fn of<'a>(
        blocks: impl Iterator<Item = (usize, isize, &'a TypeObj)>,
    ) -> Result<Option<Span>> {
        let mut starts = Vec::new();
        let mut counts = Vec::new();
        for (n, d, ty) in blocks {
            let Some(off) = ty.contiguous(n) else {
                return Ok(None);
            };
            let b = nbytes(n, ty)?;
            starts.push(d.checked_add(off).ok_or_else(counts_overflow)?);
            counts.push(b);
        }
        let used = || starts.iter().zip(&counts).filter(|&(_, &b)| b > 0);
        let from = used().map(|(&s, _)| s).min().unwrap_or(0);
        // Each end fits an `isize` (a start plus at most `isize::MAX`
        // bytes, checked as `i128`).
        let mut end = from;
        for (&s, &b) in used() {
            let e = i128::from(s as i64) + b as i128;
            end = end.max(isize::try_from(e).map_err(|_| counts_overflow())?);
        }
        // From the lowest start to the highest end: `None` (the caller
        // packs) where that does not fit an `isize` (blocks far apart).
        let Some(len) = end.checked_sub(from).and_then(|l| usize::try_from(l).ok()) else {
            return Ok(None);
        };
        let displs = starts
            .iter()
            .zip(&counts)
            .map(|(&s, &b)| if b > 0 { (s - from) as usize } else { 0 })
            .collect();
        Ok(Some(Span {
            from,
            len,
            counts,
            displs,
        }))
    }

    /// Whether the blocks cover the span with no gap (they may overlap:
    /// blocks that are only read may share bytes). Only then is one view
    /// of the whole span a view of the program's buffer and nothing else
    /// (with `MPI_BOTTOM` and absolute displacements the blocks may lie
    /// in separate allocations).
    pub(crate) fn covered(&self) -> bool {
        let mut runs: Vec<(usize, usize)> = self
            .displs
            .iter()
            .zip(&self.counts)
            .filter(|&(_, &b)| b > 0)
            .map(|(&d, &b)| (d, d + b))
            .collect();
        runs.sort_unstable();
        let mut end = 0;
        for (start, stop) in runs {
            if start > end {
                return false;
            }
            end = end.max(stop);
        }
        end == self.len
    }

    /// The span of blocks of `counts[i]` instances of `ty` at `displs[i]`
    /// extents of it each ([`of`](Self::of)).
    pub(crate) fn of_displs(
        counts: &[usize],
        displs: &[isize],
        ty: &TypeObj,
    ) -> Result<Option<Span>> {
        let mut at = Vec::with_capacity(displs.len());
        for &d in displs {
            at.push(disp_bytes(d, ty)?);
        }
        Span::of(counts.iter().zip(&at).map(|(&n, &d)| (n, d, ty)))
    }

    /// Whether the blocks lie end to end in order, each right after the
    /// one before (empty ones anywhere): a receive into the span then
    /// writes nothing but the blocks, whatever the algorithm.
    pub(crate) fn tiles(&self) -> bool {
        let mut at = 0;
        for (&d, &b) in self.displs.iter().zip(&self.counts) {
            if b > 0 {
                if d != at {
                    return false;
                }
                at += b;
            }
        }
        at == self.len
    }

    /// The span's addresses in a buffer at `base`.
    pub(crate) fn range(&self, base: *const c_void) -> std::ops::Range<usize> {
        addrs((base as *const u8).wrapping_offset(self.from), self.len)
    }
}

/// The addresses of `len` bytes at `p` (saturated, not wrapped: a
/// wrapped range would look empty and apart from everything).
pub(crate) fn addrs(p: *const u8, len: usize) -> std::ops::Range<usize> {
    p as usize..(p as usize).saturating_add(len)
}

/// Whether two spans of bytes share one (empty ones share none).
pub(crate) fn overlap(a: &std::ops::Range<usize>, b: &std::ops::Range<usize>) -> bool {
    !a.is_empty() && !b.is_empty() && a.start < b.end && b.start < a.end
}

/// The blocks `(counts[i], displs[i])` of `rbuf` (displacements in
/// extents of `ty`) as one writable span, for a receive straight into
/// them: where each block is contiguous, they lie end to end, and the
/// span is apart from `sent` (the bytes sent from this rank). `None`
/// where not; the caller stages then.
fn direct_out<'a>(
    rbuf: *mut c_void,
    counts: &[usize],
    displs: &[isize],
    ty: &TypeObj,
    sent: &[u8],
) -> Result<Option<(&'a mut [u8], Span)>> {
    if in_place(rbuf) {
        // The general path says what is wrong with it.
        return Ok(None);
    }
    let Some(span) = Span::of_displs(counts, displs, ty)? else {
        return Ok(None);
    };
    if !span.tiles() || overlap(&addrs(sent.as_ptr(), sent.len()), &span.range(rbuf)) {
        return Ok(None);
    }
    let out = bytes_mut(
        (rbuf as *mut u8).wrapping_offset(span.from).cast(),
        span.len,
    )?;
    Ok(Some((out, span)))
}

fn counts_overflow() -> Error {
    Error::new(
        ErrorClass::Count,
        "the counts add up past what an address may hold",
    )
}

// ---- barrier and data movement ------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: *mut c_void) -> c_int {
    guard("MPI_Barrier", h(comm), || comm_obj(h(comm))?.comm.barrier())
}

fn bcast(obj: &CommObj, buf: *mut c_void, n: usize, ty: &Arc<TypeObj>, root: c_int) -> Result<()> {
    let c = &obj.comm;
    let sender = if c.is_inter() {
        root == ROOT
    } else {
        root == c.rank()
    };
    if c.is_inter() && root == PROC_NULL {
        return c.bcast(&mut [0u8; 0][..], root);
    }
    not_in_place(buf, n, ty)?;
    match ty.contiguous(n) {
        Some(_) => {
            let mut d = Dst::new(buf, n, ty)?;
            c.bcast(d.slice(), root)
        }
        None => {
            let mut staging = if sender {
                ty.pack(buf, n)?
            } else {
                vec![0; nbytes(n, ty)?]
            };
            c.bcast(&mut staging[..], root)?;
            if !sender {
                ty.unpack(&staging, buf, n)?;
            }
            Ok(())
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    bcast_call::<c_int>("MPI_Bcast", buf, n, t, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    bcast_call::<i64>("MPI_Bcast_c", buf, n, t, root, comm)
}

/// `MPI_Bcast(_c)` (`call`), generic over the count type of the two forms.
fn bcast_call<C: CountElem>(
    call: &str,
    buf: *mut c_void,
    n: C,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        bcast(&obj, buf, count(n, "count")?, &*committed(h(t))?, root)
    })
}

#[allow(clippy::too_many_arguments)]
fn gatherv(
    obj: &CommObj,
    sbuf: *const c_void,
    sn: usize,
    sty: Option<Arc<TypeObj>>,
    rbuf: *mut c_void,
    counts: &[usize],
    displs: &[isize],
    rty: Option<Arc<TypeObj>>,
    root: c_int,
) -> Result<()> {
    let c = &obj.comm;
    let me = c.rank();
    let p = c.size() as usize;
    let is_root = me == root;
    let data = if is_root && in_place(sbuf) {
        let rty = rty.as_ref().expect("root has a receive type");
        std::borrow::Cow::Owned(pack_at(
            rbuf,
            displs[me as usize],
            counts[me as usize],
            rty,
        )?)
    } else {
        let sty = sty.as_ref().expect("a send type");
        src(sbuf, sn, sty)?
    };
    if !is_root {
        let mut none: [u8; 0] = [];
        return c.gatherv(&data[..], &mut none[..], &vec![0; p], &vec![0; p], root);
    }
    let rty = rty.expect("root has a receive type");
    if let Some((out, span)) = direct_out(rbuf, counts, displs, &rty, &data)? {
        return c.gatherv(&data[..], out, &span.counts, &span.displs, root);
    }
    let (bc, bd, at) = byte_blocks(counts.iter().map(|&n| (n, &*rty)))?;
    let mut staging = vec![0u8; at];
    c.gatherv(&data[..], &mut staging[..], &bc, &bd, root)?;
    for i in 0..p {
        if i == me as usize && in_place(sbuf) {
            continue;
        }
        unpack_at(
            &staging[bd[i]..bd[i] + bc[i]],
            rbuf,
            displs[i],
            counts[i],
            &rty,
        )?;
    }
    Ok(())
}

fn root_type(obj: &CommObj, root: c_int, t: *mut c_void) -> Result<Option<Arc<TypeObj>>> {
    if obj.comm.rank() == root {
        Ok(Some(committed(h(t))?.arc()))
    } else {
        Ok(None)
    }
}

fn send_type(sbuf: *const c_void, t: *mut c_void) -> Result<Option<Arc<TypeObj>>> {
    if in_place(sbuf) {
        Ok(None)
    } else {
        Ok(Some(committed(h(t))?.arc()))
    }
}

pub(crate) fn check_root(obj: &CommObj, root: c_int) -> Result<()> {
    if obj.comm.is_inter() {
        return Err(Error::new(
            ErrorClass::Comm,
            "this collective is supported on intracommunicators only",
        ));
    }
    if root < 0 || root >= obj.comm.size() {
        return Err(Error::new(
            ErrorClass::Root,
            format!(
                "root {root} is out of range for a communicator of size {}",
                obj.comm.size()
            ),
        ));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gather(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    gather_call::<c_int>("MPI_Gather", sbuf, sn, st, rbuf, rn, rt, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gather_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    gather_call::<i64>("MPI_Gather_c", sbuf, sn, st, rbuf, rn, rt, root, comm)
}

/// `MPI_Gather(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn gather_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            let obj = obj.arc();
            return super::nbc::blocking(|req| {
                super::nbc::start_gather(&obj, sbuf, sn, st, rbuf, rn, rt, root, req)
            });
        }
        check_root(&obj, root)?;
        let p = obj.comm.size() as usize;
        let rn = count_if(obj.comm.rank() == root, rn, "recvcount")?;
        let displs = even_displs(rn, p)?;
        gatherv(
            &obj,
            sbuf,
            count_if(!in_place(sbuf), sn, "sendcount")?,
            send_type(sbuf, st)?,
            rbuf,
            &vec![rn; p],
            &displs,
            root_type(&obj, root, rt)?,
            root,
        )
    })
}

pub(crate) fn v_args<C: CountElem, D: DisplElem>(
    counts: *const C,
    displs: *const D,
    p: usize,
) -> Result<(Vec<usize>, Vec<isize>)> {
    let c = array(counts, p, "counts")?
        .iter()
        .map(|&n| count(n, "a count"))
        .collect::<Result<Vec<_>>>()?;
    let d = array(displs, p, "displs")?
        .iter()
        .map(|&d| d.aint())
        .collect();
    Ok((c, d))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    gatherv_call::<c_int, c_int>(
        "MPI_Gatherv",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        root,
        comm,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    displs: *const isize,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    gatherv_call::<i64, isize>(
        "MPI_Gatherv_c",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        root,
        comm,
    )
}

/// `MPI_Gatherv(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn gatherv_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            let obj = obj.arc();
            return super::nbc::blocking(|req| {
                super::nbc::start_gatherv(&obj, sbuf, sn, st, rbuf, rcounts, displs, rt, root, req)
            });
        }
        check_root(&obj, root)?;
        let p = obj.comm.size() as usize;
        let (c, d) = if obj.comm.rank() == root {
            v_args(rcounts, displs, p)?
        } else {
            (vec![0; p], vec![0; p])
        };
        gatherv(
            &obj,
            sbuf,
            count_if(!in_place(sbuf), sn, "sendcount")?,
            send_type(sbuf, st)?,
            rbuf,
            &c,
            &d,
            root_type(&obj, root, rt)?,
            root,
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn scatterv(
    obj: &CommObj,
    sbuf: *const c_void,
    counts: &[usize],
    displs: &[isize],
    sty: Option<Arc<TypeObj>>,
    rbuf: *mut c_void,
    rn: usize,
    rty: Option<Arc<TypeObj>>,
    root: c_int,
) -> Result<()> {
    let c = &obj.comm;
    let me = c.rank();
    let p = c.size() as usize;
    let is_root = me == root;
    if is_root
        && !in_place(rbuf)
        && scatter_direct(c, sbuf, counts, displs, &sty, rbuf, rn, &rty, root)?
    {
        return Ok(());
    }
    let mut packed = Vec::new();
    let mut bc = vec![0; p];
    let mut bd = vec![0; p];
    if is_root {
        let sty = sty.as_ref().expect("root has a send type");
        for i in 0..p {
            bd[i] = packed.len();
            if i == me as usize && in_place(rbuf) {
                continue;
            }
            let block = pack_at(sbuf, displs[i], counts[i], sty)?;
            bc[i] = block.len();
            packed.extend_from_slice(&block);
        }
    }
    if is_root && in_place(rbuf) {
        let mut none: [u8; 0] = [];
        return c.scatterv(&packed[..], &bc, &bd, &mut none[..], root);
    }
    let rty = rty.expect("a receive type");
    let mut d = Dst::new(rbuf, rn, &rty)?;
    c.scatterv(&packed[..], &bc, &bd, d.slice(), root)?;
    d.finish()
}

/// [`scatterv`]'s direct path at the root (not in place): where each
/// send block is contiguous and the blocks' span is apart from the
/// receive buffer, the blocks go from `sbuf` with no packed copy. False,
/// with nothing done, where not.
#[allow(clippy::too_many_arguments)]
fn scatter_direct(
    c: &crate::comm::Communicator,
    sbuf: *const c_void,
    counts: &[usize],
    displs: &[isize],
    sty: &Option<Arc<TypeObj>>,
    rbuf: *mut c_void,
    rn: usize,
    rty: &Option<Arc<TypeObj>>,
    root: c_int,
) -> Result<bool> {
    let (Some(sty), Some(rty)) = (sty, rty) else {
        return Ok(false);
    };
    // One view of the send blocks' span must see only their bytes.
    let Some(span) = Span::of_displs(counts, displs, sty)?.filter(Span::covered) else {
        return Ok(false);
    };
    let mut d = Dst::new(rbuf, rn, rty)?;
    let out = d.slice();
    if overlap(&span.range(sbuf), &addrs(out.as_ptr(), out.len())) {
        return Ok(false);
    }
    let data = bytes(
        (sbuf as *const u8).wrapping_offset(span.from).cast(),
        span.len,
    )?;
    c.scatterv(data, &span.counts, &span.displs, out, root)?;
    d.finish()?;
    Ok(true)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    scatter_call::<c_int>("MPI_Scatter", sbuf, sn, st, rbuf, rn, rt, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    scatter_call::<i64>("MPI_Scatter_c", sbuf, sn, st, rbuf, rn, rt, root, comm)
}

/// `MPI_Scatter(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn scatter_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            let obj = obj.arc();
            return super::nbc::blocking(|req| {
                super::nbc::start_scatter(&obj, sbuf, sn, st, rbuf, rn, rt, root, req)
            });
        }
        check_root(&obj, root)?;
        let p = obj.comm.size() as usize;
        let sn = count_if(obj.comm.rank() == root, sn, "sendcount")?;
        let displs = even_displs(sn, p)?;
        let rty = if in_place(rbuf) {
            None
        } else {
            Some(committed(h(rt))?.arc())
        };
        scatterv(
            &obj,
            sbuf,
            &vec![sn; p],
            &displs,
            root_type(&obj, root, st)?,
            rbuf,
            count_if(!in_place(rbuf), rn, "recvcount")?,
            rty,
            root,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    sbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    scatterv_call::<c_int, c_int>(
        "MPI_Scatterv",
        sbuf,
        scounts,
        displs,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv_c(
    sbuf: *const c_void,
    scounts: *const i64,
    displs: *const isize,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    scatterv_call::<i64, isize>(
        "MPI_Scatterv_c",
        sbuf,
        scounts,
        displs,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
    )
}

/// `MPI_Scatterv(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn scatterv_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    scounts: *const C,
    displs: *const D,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            let obj = obj.arc();
            return super::nbc::blocking(|req| {
                super::nbc::start_scatterv(&obj, sbuf, scounts, displs, st, rbuf, rn, rt, root, req)
            });
        }
        check_root(&obj, root)?;
        let p = obj.comm.size() as usize;
        let (c, d) = if obj.comm.rank() == root {
            v_args(scounts, displs, p)?
        } else {
            (vec![0; p], vec![0; p])
        };
        let rty = if in_place(rbuf) {
            None
        } else {
            Some(committed(h(rt))?.arc())
        };
        scatterv(
            &obj,
            sbuf,
            &c,
            &d,
            root_type(&obj, root, st)?,
            rbuf,
            count_if(!in_place(rbuf), rn, "recvcount")?,
            rty,
            root,
        )
    })
}

/// `MPI_Allgather(v)` on an intracommunicator (an intercommunicator's
/// is a schedule, `nbc::start_allgather(v)`).
#[allow(clippy::too_many_arguments)]
fn allgatherv(
    obj: &CommObj,
    sbuf: *const c_void,
    sn: usize,
    st: *mut c_void,
    rbuf: *mut c_void,
    counts: &[usize],
    displs: &[isize],
    rty: &Arc<TypeObj>,
) -> Result<()> {
    let c = &obj.comm;
    let me = c.rank().max(0) as usize;
    let data = if in_place(sbuf) {
        std::borrow::Cow::Owned(pack_at(rbuf, displs[me], counts[me], rty)?)
    } else {
        src(sbuf, sn, &*committed(h(st))?)?
    };
    // Straight into the program's buffer where its blocks lie end to end
    // (as `MPI_Allgather`'s always do) and apart from the send buffer.
    if let Some((out, span)) = direct_out(rbuf, counts, displs, rty, &data)? {
        return c.allgatherv(&data[..], out, &span.counts, &span.displs);
    }
    let (bc, bd, at) = byte_blocks(counts.iter().map(|&n| (n, &**rty)))?;
    let mut staging = vec![0u8; at];
    c.allgatherv(&data[..], &mut staging[..], &bc, &bd)?;
    for i in 0..bc.len() {
        unpack_at(
            &staging[bd[i]..bd[i] + bc[i]],
            rbuf,
            displs[i],
            counts[i],
            rty,
        )?;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    allgather_call::<c_int>("MPI_Allgather", sbuf, sn, st, rbuf, rn, rt, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    allgather_call::<i64>("MPI_Allgather_c", sbuf, sn, st, rbuf, rn, rt, comm)
}

/// `MPI_Allgather(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn allgather_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            let obj = obj.arc();
            return super::nbc::blocking(|req| {
                super::nbc::start_allgather(&obj, sbuf, sn, st, rbuf, rn, rt, req)
            });
        }
        let p = obj.comm.size() as usize;
        let rn = count(rn, "recvcount")?;
        if !in_place(sbuf) {
            let sn = count(sn, "sendcount")?;
            if let Some((s, r)) = whole(sbuf, sn, st, rbuf, times(rn, p)?, rt, p)? {
                return obj.comm.allgather(s, r);
            }
        }
        let displs = even_displs(rn, p)?;
        allgatherv(
            &obj,
            sbuf,
            count_if(!in_place(sbuf), sn, "sendcount")?,
            st,
            rbuf,
            &vec![rn; p],
            &displs,
            &*committed(h(rt))?,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    allgatherv_call::<c_int, c_int>(
        "MPI_Allgatherv",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        comm,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    displs: *const isize,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    allgatherv_call::<i64, isize>(
        "MPI_Allgatherv_c",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        comm,
    )
}

/// `MPI_Allgatherv(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn allgatherv_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            let obj = obj.arc();
            return super::nbc::blocking(|req| {
                super::nbc::start_allgatherv(&obj, sbuf, sn, st, rbuf, rcounts, displs, rt, req)
            });
        }
        let p = obj.comm.size() as usize;
        let (c, d) = v_args(rcounts, displs, p)?;
        allgatherv(
            &obj,
            sbuf,
            count_if(!in_place(sbuf), sn, "sendcount")?,
            st,
            rbuf,
            &c,
            &d,
            &*committed(h(rt))?,
        )
    })
}

/// One rank's block of an all-to-all: count, displacement in bytes from
/// the buffer, datatype.
pub(crate) type Block = (usize, isize, Arc<TypeObj>);

/// The blocks of an `alltoallw` side: per rank a count, a byte
/// displacement and a committed datatype (MPI 4.1 §6.8).
pub(crate) fn w_blocks<C: CountElem, D: DisplElem>(
    counts: *const C,
    displs: *const D,
    types: *const *mut c_void,
    p: usize,
    what: &str,
) -> Result<Vec<Block>> {
    let d = array(displs, p, "displs")?.iter().map(|&d| d.aint());
    w_blocks_at(counts, d, types, p, what)
}

/// [`w_blocks`] with the byte displacements given (`MPI_Aint`s of the
/// neighbourhood `w` forms).
pub(crate) fn w_blocks_at<C: CountElem>(
    counts: *const C,
    displs: impl Iterator<Item = isize>,
    types: *const *mut c_void,
    p: usize,
    what: &str,
) -> Result<Vec<Block>> {
    let n = array(counts, p, "counts")?;
    let t = array(types, p, what)?;
    n.iter()
        .zip(displs)
        .zip(t)
        .map(|((&n, d), &t)| {
            let n = count(n, "a count")?;
            // A block of no elements may name no type (MPICH takes
            // MPI_DATATYPE_NULL there).
            let ty = if n == 0 && h(t) == super::DATATYPE_NULL {
                super::types::type_obj(0x247)?.arc()
            } else {
                committed(h(t))?.arc()
            };
            Ok((n, d, ty))
        })
        .collect()
}

/// `MPI_Alltoallv` with the displacements in units of the type's extent.
#[allow(clippy::too_many_arguments)]
fn alltoallv(
    obj: &CommObj,
    sbuf: *const c_void,
    scounts: &[usize],
    sdispls: &[isize],
    sty: Option<Arc<TypeObj>>,
    rbuf: *mut c_void,
    rcounts: &[usize],
    rdispls: &[isize],
    rty: &Arc<TypeObj>,
) -> Result<()> {
    let blocks = |counts: &[usize], displs: &[isize], ty: &Arc<TypeObj>| -> Vec<Block> {
        let ext = ty.extent();
        counts
            .iter()
            .zip(displs)
            .map(|(&n, &d)| (n, d.wrapping_mul(ext), ty.clone()))
            .collect()
    };
    let sends = sty.map(|t| blocks(scounts, sdispls, &t));
    alltoallw(
        obj,
        sbuf,
        sends,
        rbuf,
        &blocks(rcounts, rdispls, rty),
        "MPI_Alltoall(v)",
    )
}

/// The all-to-all of every form: rank i's block `sends[i]` of `sbuf`
/// goes to rank i, whose `recvs[this rank]` of `rbuf` takes it; with
/// `sends` `None` (`MPI_IN_PLACE`) the blocks sent are `recvs`' own, read
/// before any is written.
fn alltoallw(
    obj: &CommObj,
    sbuf: *const c_void,
    sends: Option<Vec<Block>>,
    rbuf: *mut c_void,
    recvs: &[Block],
    call: &str,
) -> Result<()> {
    let c = &obj.comm;
    if c.is_inter() {
        return Err(Error::new(
            ErrorClass::Comm,
            format!("{call} is supported on intracommunicators only"),
        ));
    }
    let p = recvs.len();
    // Before anything is sent (the receive buffer is written only after).
    for (n, _, ty) in recvs {
        not_in_place(rbuf, *n, ty)?;
    }
    if let Some(sends) = &sends {
        if alltoall_direct(c, sbuf, sends, rbuf, recvs)? {
            return Ok(());
        }
    }
    let mut packed = Vec::new();
    let mut sbc = vec![0; p];
    let mut sbd = vec![0; p];
    for i in 0..p {
        sbd[i] = packed.len();
        let (buf, (n, d, ty)) = match &sends {
            Some(sends) => (sbuf, &sends[i]),
            None => (rbuf.cast_const(), &recvs[i]),
        };
        not_in_place(buf, *n, ty)?;
        let block = ty.pack((buf as *const u8).wrapping_offset(*d).cast(), *n)?;
        sbc[i] = block.len();
        packed.extend_from_slice(&block);
    }
    let (rbc, rbd, at) = byte_blocks(recvs.iter().map(|(n, _, ty)| (*n, &**ty)))?;
    let mut staging = vec![0u8; at];
    c.alltoallv(&packed[..], &sbc, &sbd, &mut staging[..], &rbc, &rbd)?;
    for (i, (n, d, ty)) in recvs.iter().enumerate() {
        let dst = (rbuf as *mut u8).wrapping_offset(*d);
        ty.unpack(&staging[rbd[i]..rbd[i] + rbc[i]], dst.cast(), *n)?;
    }
    Ok(())
}

/// The send buffer (`sn` instances of `st`) and the receive buffer (`rn`
/// of `rt`) as byte slices, for `MPI_Allgather` and `MPI_Alltoall` with
/// nothing to pack: both runs contiguous, the receive `times` the send in
/// bytes (as matching type signatures make it), the two apart. `None`
/// where not (the general path then also finds any mismatch).
#[allow(clippy::too_many_arguments)]
fn whole<'a>(
    sbuf: *const c_void,
    sn: usize,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: usize,
    rt: *mut c_void,
    times: usize,
) -> Result<Option<(&'a [u8], &'a mut [u8])>> {
    if in_place(sbuf) || in_place(rbuf) {
        return Ok(None);
    }
    let (sty, rty) = (committed(h(st))?, committed(h(rt))?);
    let (Some(so), Some(ro)) = (sty.contiguous(sn), rty.contiguous(rn)) else {
        return Ok(None);
    };
    let (sb, rb) = (nbytes(sn, &sty)?, nbytes(rn, &rty)?);
    let s = (sbuf as *const u8).wrapping_offset(so);
    let r = (rbuf as *mut u8).wrapping_offset(ro);
    if sb.checked_mul(times) != Some(rb) || overlap(&addrs(s, sb), &addrs(r, rb)) {
        return Ok(None);
    }
    Ok(Some((bytes(s.cast(), sb)?, bytes_mut(r.cast(), rb)?)))
}

/// [`alltoallw`]'s direct path: where every block's type is contiguous
/// for its count, the receive blocks lie end to end and the two buffers'
/// spans are apart, the blocks go from `sbuf` and land in `rbuf` with no
/// copy on either side. False, with nothing done, where they do not.
fn alltoall_direct(
    c: &crate::comm::Communicator,
    sbuf: *const c_void,
    sends: &[Block],
    rbuf: *mut c_void,
    recvs: &[Block],
) -> Result<bool> {
    let blocks = |b: &[Block]| Span::of(b.iter().map(|(n, d, ty)| (*n, *d, &**ty)));
    // One view of the send blocks' span must see only their bytes.
    let Some(s) = blocks(sends)?.filter(Span::covered) else {
        return Ok(false);
    };
    let Some(r) = blocks(recvs)?.filter(Span::tiles) else {
        return Ok(false);
    };
    if in_place(rbuf) || overlap(&s.range(sbuf), &r.range(rbuf)) {
        return Ok(false);
    }
    let data = bytes((sbuf as *const u8).wrapping_offset(s.from).cast(), s.len)?;
    let out = bytes_mut((rbuf as *mut u8).wrapping_offset(r.from).cast(), r.len)?;
    c.alltoallv(data, &s.counts, &s.displs, out, &r.counts, &r.displs)?;
    Ok(true)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_Alltoallw(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
) -> c_int {
    alltoallw_call::<c_int, c_int>(
        "MPI_Alltoallw",
        sbuf,
        scounts,
        sdispls,
        stypes,
        rbuf,
        rcounts,
        rdispls,
        rtypes,
        comm,
    )
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_Alltoallw_c(
    sbuf: *const c_void,
    scounts: *const i64,
    sdispls: *const isize,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    rdispls: *const isize,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
) -> c_int {
    alltoallw_call::<i64, isize>(
        "MPI_Alltoallw_c",
        sbuf,
        scounts,
        sdispls,
        stypes,
        rbuf,
        rcounts,
        rdispls,
        rtypes,
        comm,
    )
}

/// `MPI_Alltoallw(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn alltoallw_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let p = obj.comm.size() as usize;
        let recvs = w_blocks(rcounts, rdispls, rtypes, p, "recvtypes")?;
        let sends = if in_place(sbuf) {
            None
        } else {
            Some(w_blocks(scounts, sdispls, stypes, p, "sendtypes")?)
        };
        alltoallw(&obj, sbuf, sends, rbuf, &recvs, call)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    alltoall_call::<c_int>("MPI_Alltoall", sbuf, sn, st, rbuf, rn, rt, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    alltoall_call::<i64>("MPI_Alltoall_c", sbuf, sn, st, rbuf, rn, rt, comm)
}

/// `MPI_Alltoall(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn alltoall_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            let obj = obj.arc();
            return super::nbc::blocking(|req| {
                super::nbc::start_alltoall(&obj, sbuf, sn, st, rbuf, rn, rt, req)
            });
        }
        let p = obj.comm.size() as usize;
        let sn = count_if(!in_place(sbuf), sn, "sendcount")?;
        let rn = count(rn, "recvcount")?;
        if !in_place(sbuf) {
            let (sn, rn) = (times(sn, p)?, times(rn, p)?);
            if let Some((s, r)) = whole(sbuf, sn, st, rbuf, rn, rt, 1)? {
                return obj.comm.alltoall(s, r);
            }
        }
        let sd = even_displs(sn, p)?;
        let rd = even_displs(rn, p)?;
        alltoallv(
            &obj,
            sbuf,
            &vec![sn; p],
            &sd,
            send_type(sbuf, st)?,
            rbuf,
            &vec![rn; p],
            &rd,
            &*committed(h(rt))?,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    alltoallv_call::<c_int, c_int>(
        "MPI_Alltoallv",
        sbuf,
        scounts,
        sdispls,
        st,
        rbuf,
        rcounts,
        rdispls,
        rt,
        comm,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv_c(
    sbuf: *const c_void,
    scounts: *const i64,
    sdispls: *const isize,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    rdispls: *const isize,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    alltoallv_call::<i64, isize>(
        "MPI_Alltoallv_c",
        sbuf,
        scounts,
        sdispls,
        st,
        rbuf,
        rcounts,
        rdispls,
        rt,
        comm,
    )
}

/// `MPI_Alltoallv(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn alltoallv_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rt: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            let obj = obj.arc();
            return super::nbc::blocking(|req| {
                super::nbc::start_alltoallv(
                    &obj, sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, req,
                )
            });
        }
        let p = obj.comm.size() as usize;
        let (rc, rd) = v_args(rcounts, rdispls, p)?;
        let (sc, sd) = if in_place(sbuf) {
            (rc.clone(), rd.clone())
        } else {
            v_args(scounts, sdispls, p)?
        };
        alltoallv(
            &obj,
            sbuf,
            &sc,
            &sd,
            send_type(sbuf, st)?,
            rbuf,
            &rc,
            &rd,
            &*committed(h(rt))?,
        )
    })
}

// ---- reductions ----------------------------------------------------------------------

/// Which reduction (blocking here, or a schedule in `nbc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Red {
    Reduce(c_int),
    Allreduce,
    Scan,
    Exscan,
    /// Reduce_scatter with these counts (instances per rank).
    Scatter,
}

fn rust_op(o: usize) -> Option<Op> {
    use super::types::*;
    Some(match o {
        SUM => Op::Sum,
        PROD => Op::Prod,
        MIN => Op::Min,
        MAX => Op::Max,
        LAND => Op::Land,
        LOR => Op::Lor,
        LXOR => Op::Lxor,
        BAND => Op::Band,
        BOR => Op::Bor,
        BXOR => Op::Bxor,
        MINLOC => Op::MinLoc,
        MAXLOC => Op::MaxLoc,
        _ => return None,
    })
}

fn cast<T>(b: &[u8]) -> Option<&[T]> {
    if b.is_empty() {
        // Wherever it points (a non-root's empty output lies anywhere on
        // the stack; refused, it sent the input through aligned copies).
        return Some(&[]);
    }
    let sz = std::mem::size_of::<T>();
    if b.len() % sz != 0 || (b.as_ptr() as usize) % std::mem::align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: length and alignment checked; `T` is one of the plain
    // numeric (or `#[repr(C)]` pair of numeric) types, for which every
    // bit pattern is valid.
    Some(unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<T>(), b.len() / sz) })
}

fn cast_mut<T>(b: &mut [u8]) -> Option<&mut [T]> {
    if b.is_empty() {
        // As in `cast`.
        return Some(&mut []);
    }
    let sz = std::mem::size_of::<T>();
    if b.len() % sz != 0 || (b.as_ptr() as usize) % std::mem::align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: as in `cast`, and the borrow is exclusive.
    Some(unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<T>(), b.len() / sz) })
}

/// Runs reduction `red` with the Rust typed collectives, if `T` views of
/// the buffers are possible; `None` when they are not (misaligned).
fn typed<T: Reducible>(
    obj: &CommObj,
    red: Red,
    data: &[u8],
    out: &mut [u8],
    op: &Op,
    counts: &[usize],
) -> Option<Result<()>> {
    let d: &[T] = cast(data)?;
    let o: &mut [T] = cast_mut(out)?;
    let c = &obj.comm;
    Some(match red {
        // The input and the output apart (`reduction`): no copy of the
        // input into the output first.
        Red::Reduce(root) => {
            if c.rank() == root {
                c.reduce(d, o, op, root)
            } else {
                let mut none: [T; 0] = [];
                c.reduce(d, &mut none[..], op, root)
            }
        }
        Red::Allreduce => c.allreduce(d, o, op),
        Red::Scan => c.scan(d, o, op),
        Red::Exscan => c.exscan(d, o, op),
        Red::Scatter => c.reduce_scatter(d, o, counts, op),
    })
}

/// Whether [`dispatch!`] has a Rust type for element kind `p`.
fn typed_kind(p: Prim) -> bool {
    use Prim::*;
    matches!(
        p,
        I8 | U8 | Byte | Bool | I16 | U16 | I32 | U32 | I64 | U64 | F32 | F64 | TwoInt | FloatInt
    )
}

/// The Rust type for element kind `p`, if the typed path can take it
/// (exactly the kinds of [`typed_kind`]).
macro_rules! dispatch {
    ($p:expr, $f:ident, $($a:expr),*) => {
        match $p {
            Prim::I8 => $f::<i8>($($a),*),
            Prim::U8 | Prim::Byte | Prim::Bool => $f::<u8>($($a),*),
            Prim::I16 => $f::<i16>($($a),*),
            Prim::U16 => $f::<u16>($($a),*),
            Prim::I32 => $f::<i32>($($a),*),
            Prim::U32 => $f::<u32>($($a),*),
            Prim::I64 => $f::<i64>($($a),*),
            Prim::U64 => $f::<u64>($($a),*),
            Prim::F32 => $f::<f32>($($a),*),
            Prim::F64 => $f::<f64>($($a),*),
            Prim::TwoInt => $f::<ValueIndex<i32, i32>>($($a),*),
            Prim::FloatInt => $f::<ValueIndex<f32, i32>>($($a),*),
            _ => None,
        }
    };
}

/// Runs a reduction: `data` is this rank's packed contribution; the
/// result (packed) goes to `out` (all of it, or this rank's part for
/// `Scatter`, whose `counts` are packed bytes per rank).
fn reduce_bytes(
    obj: &CommObj,
    red: Red,
    r: &Reduction,
    data: &[u8],
    out: &mut [u8],
    counts: &[usize],
) -> Result<()> {
    if let OpObj::Builtin(o) = r.op {
        if let (Some(op), Some((p, _))) = (rust_op(o), r.ty.sig) {
            // Bool logical ops on u8 give 0/1, as C's _Bool needs; Byte
            // takes only the bitwise ops (checked in `Reduction::new`).
            let esize = p.size();
            let ecounts: Vec<usize> = counts.iter().map(|&b| b / esize).collect();
            if let Some(res) = dispatch!(p, typed, obj, red, data, out, &op, &ecounts) {
                return res;
            }
            if let Some(res) = typed_copy(obj, red, r, p, data, out, &op, &ecounts) {
                return res;
            }
        }
    }
    fold_here(obj, red, r, data, out, counts)
}

/// The typed path through aligned copies (the user's buffers were not
/// aligned for the element type).
#[allow(clippy::too_many_arguments)]
fn typed_copy(
    obj: &CommObj,
    red: Red,
    _r: &Reduction,
    p: Prim,
    data: &[u8],
    out: &mut [u8],
    op: &Op,
    ecounts: &[usize],
) -> Option<Result<()>> {
    let mut d = vec![0u64; data.len().div_ceil(8) + 1];
    let mut o = vec![0u64; out.len().div_ceil(8) + 1];
    let db = &mut words_bytes(&mut d)[..data.len()];
    db.copy_from_slice(data);
    let ob = &mut words_bytes(&mut o)[..out.len()];
    ob.copy_from_slice(out);
    let res = dispatch!(p, typed, obj, red, db, ob, op, ecounts)?;
    out.copy_from_slice(ob);
    Some(res)
}

/// The general path: gather the packed contributions, fold them in rank
/// order (`in` from the lower rank, as MPI's user functions expect).
fn fold_here(
    obj: &CommObj,
    red: Red,
    r: &Reduction,
    data: &[u8],
    out: &mut [u8],
    counts: &[usize],
) -> Result<()> {
    let c = &obj.comm;
    if c.is_inter() {
        return Err(Error::new(
            ErrorClass::Unsupported,
            "this reduction (user operation or this element type) is not supported on \
             intercommunicators",
        ));
    }
    let p = c.size() as usize;
    let me = c.rank() as usize;
    let n = data.len();
    let mut all = vec![0u8; n * p];
    let fold = |all: &[u8], hi: usize| r.fold_ranks(|k| &all[k * n..(k + 1) * n], hi);
    match red {
        Red::Reduce(root) => {
            let root_u = root as usize;
            if me == root_u {
                c.gather(data, &mut all[..], root)?;
                let acc = fold(&all, p - 1)?;
                out.copy_from_slice(&acc);
            } else {
                let mut none: [u8; 0] = [];
                c.gather(data, &mut none[..], root)?;
            }
            Ok(())
        }
        Red::Allreduce | Red::Scatter => {
            c.allgather(data, &mut all[..])?;
            let acc = fold(&all, p - 1)?;
            if red == Red::Allreduce {
                out.copy_from_slice(&acc);
            } else {
                let start: usize = counts[..me].iter().sum();
                out.copy_from_slice(&acc[start..start + counts[me]]);
            }
            Ok(())
        }
        Red::Scan => {
            c.allgather(data, &mut all[..])?;
            out.copy_from_slice(&fold(&all, me)?);
            Ok(())
        }
        Red::Exscan => {
            c.allgather(data, &mut all[..])?;
            if me > 0 {
                out.copy_from_slice(&fold(&all, me - 1)?);
            }
            Ok(())
        }
    }
}

/// A reduction from C arguments: `n` instances per rank (for `Scatter`,
/// `counts` per rank).
#[allow(clippy::too_many_arguments)]
fn reduction(
    obj: &CommObj,
    red: Red,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: usize,
    t: *mut c_void,
    o: *mut c_void,
    counts: &[usize],
    pre: Option<Vec<u8>>,
) -> Result<()> {
    let r = Reduction::for_collective(h(o), h(t), n)?;
    let ty = r.ty.clone();
    let c = &obj.comm;
    if c.is_inter() {
        let obj = comm_obj(obj.handle)?.arc();
        return super::nbc::inter_reduction(&obj, red, sbuf, rbuf, n, r, counts.to_vec(), None);
    }
    let receives = match red {
        Red::Reduce(root) => {
            check_root(obj, root)?;
            c.rank() == root
        }
        _ => true,
    };
    let mut data = match pre {
        Some(d) => std::borrow::Cow::Owned(d),
        None if in_place(sbuf) => std::borrow::Cow::Owned(ty.pack(rbuf, n)?),
        // Borrowed where contiguous: read where it lies (a copy of a 64
        // KiB input cost a 2-rank `MPI_Reduce` about as much as the
        // reduction; `docs/benchmarks.md`, "Issue 6, forty-first pass").
        None => src(sbuf, n, &ty)?,
    };
    let bcounts: Vec<usize> = counts.iter().map(|&k| k * ty.size).collect();
    let out_n = match red {
        Red::Scatter => counts[c.rank() as usize],
        _ => n,
    };
    if !receives {
        let mut none: [u8; 0] = [];
        return reduce_bytes(obj, red, &r, &data, &mut none[..], &bcounts);
    }
    // MPI forbids an input that overlaps the output; one that does anyway
    // is copied first, before any view of the output exists, so that no
    // two views alias.
    if let Some(off) = ty.contiguous(out_n) {
        let out = addrs(
            (rbuf as *const u8).wrapping_offset(off),
            nbytes(out_n, &ty)?,
        );
        if overlap(&addrs(data.as_ptr(), data.len()), &out) {
            data = std::borrow::Cow::Owned(data.into_owned());
        }
    }
    let mut d = Dst::new(rbuf, out_n, &ty)?;
    if red == Red::Exscan {
        // Rank 0's result is undefined in MPI; keep its buffer as it was.
        if let Dst::Staged { staging, .. } = &mut d {
            *staging = ty.pack(rbuf, out_n)?;
        }
    }
    reduce_bytes(obj, red, &r, &data, d.slice(), &bcounts)?;
    d.finish()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    o: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    reduce_call::<c_int>("MPI_Reduce", sbuf, rbuf, n, t, o, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    t: *mut c_void,
    o: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    reduce_call::<i64>("MPI_Reduce_c", sbuf, rbuf, n, t, o, root, comm)
}

/// `MPI_Reduce(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn reduce_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: C,
    t: *mut c_void,
    o: *mut c_void,
    root: c_int,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        reduction(
            &obj,
            Red::Reduce(root),
            sbuf,
            rbuf,
            count(n, "count")?,
            t,
            o,
            &[],
            None,
        )
    })
}

/// `MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan` and their `_c` forms
/// (`$count`: `c_int` or `i64`): one signature, one body.
macro_rules! reduction_fn {
    ($name:ident, $call:literal, $count:ty, $red:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            rbuf: *mut c_void,
            n: $count,
            t: *mut c_void,
            o: *mut c_void,
            comm: *mut c_void,
        ) -> c_int {
            guard($call, h(comm), || {
                let obj = comm_obj(h(comm))?;
                let n = count(n, "count")?;
                reduction(&obj, $red, sbuf, rbuf, n, t, o, &[], None)
            })
        }
    };
}

reduction_fn!(MPI_Allreduce, "MPI_Allreduce", c_int, Red::Allreduce);
reduction_fn!(MPI_Scan, "MPI_Scan", c_int, Red::Scan);
reduction_fn!(MPI_Exscan, "MPI_Exscan", c_int, Red::Exscan);
reduction_fn!(MPI_Allreduce_c, "MPI_Allreduce_c", i64, Red::Allreduce);
reduction_fn!(MPI_Scan_c, "MPI_Scan_c", i64, Red::Scan);
reduction_fn!(MPI_Exscan_c, "MPI_Exscan_c", i64, Red::Exscan);

fn reduce_scatter(
    obj: &CommObj,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: Vec<usize>,
    t: *mut c_void,
    o: *mut c_void,
) -> Result<()> {
    let total = sum_counts(&counts)?;
    // In place, the whole input is in rbuf and the result goes to its start.
    let pre = if in_place(sbuf) {
        Some(committed(h(t))?.pack(rbuf, total)?)
    } else {
        None
    };
    reduction(obj, Red::Scatter, sbuf, rbuf, total, t, o, &counts, pre)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    reduce_scatter_call::<c_int>("MPI_Reduce_scatter", sbuf, rbuf, rcounts, t, o, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    reduce_scatter_call::<i64>("MPI_Reduce_scatter_c", sbuf, rbuf, rcounts, t, o, comm)
}

/// `MPI_Reduce_scatter(_c)` (`call`), generic over the count type of the two forms.
fn reduce_scatter_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let p = obj.comm.size() as usize;
        let counts = array(rcounts, p, "recvcounts")?
            .iter()
            .map(|&n| count(n, "a count"))
            .collect::<Result<Vec<_>>>()?;
        reduce_scatter(&obj, sbuf, rbuf, counts, t, o)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rn: c_int,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    reduce_scatter_block_call::<c_int>("MPI_Reduce_scatter_block", sbuf, rbuf, rn, t, o, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rn: i64,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    reduce_scatter_block_call::<i64>("MPI_Reduce_scatter_block_c", sbuf, rbuf, rn, t, o, comm)
}

/// `MPI_Reduce_scatter_block(_c)` (`call`), generic over the count type of the two forms.
fn reduce_scatter_block_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rn: C,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let p = obj.comm.size() as usize;
        reduce_scatter(&obj, sbuf, rbuf, vec![count(rn, "recvcount")?; p], t, o)
    })
}

// ---- nonblocking collectives ---------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibarrier(comm: *mut c_void, request: *mut *mut c_void) -> c_int {
    guard("MPI_Ibarrier", h(comm), || {
        let obj = comm_obj(h(comm))?;
        if request.is_null() {
            return Err(super::arg("request"));
        }
        if obj.comm.is_inter() {
            return super::nbc::inter_ibarrier(&obj.arc(), request);
        }
        let r = obj.comm.ibarrier()?;
        give_request(Req::live(&obj, r, Fin::None, Vec::new()), request)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ibcast_call::<c_int>("MPI_Ibcast", buf, n, t, root, comm, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ibcast_call::<i64>("MPI_Ibcast_c", buf, n, t, root, comm, request)
}

/// `MPI_Ibcast(_c)` (`call`), generic over the count type of the two forms.
fn ibcast_call<C: CountElem>(
    call: &str,
    buf: *mut c_void,
    n: C,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if request.is_null() {
            return Err(super::arg("request"));
        }
        let n = count(n, "count")?;
        let ty = committed(h(t))?;
        not_in_place(buf, n, &ty)?;
        if obj.comm.is_inter() {
            return super::nbc::inter_ibcast(&obj.arc(), buf, n, &ty.arc(), root, request);
        }
        let r = match ty.contiguous(n) {
            Some(off) => {
                let b = bytes_mut(
                    (buf as *mut u8).wrapping_offset(off).cast(),
                    nbytes(n, &ty)?,
                )?;
                Req::live(&obj, obj.comm.ibcast(b, root)?, Fin::None, Vec::new())
            }
            None => {
                let mut staging = if obj.comm.rank() == root {
                    ty.pack(buf, n)?
                } else {
                    vec![0; nbytes(n, &ty)?]
                };
                // SAFETY: lifetime erasure of a borrow of `staging`'s heap
                // buffer, which moves into the request's `fin` and is
                // dropped after the request.
                let view =
                    unsafe { std::slice::from_raw_parts_mut(staging.as_mut_ptr(), staging.len()) };
                let req = obj.comm.ibcast(view, root)?;
                Req::live(
                    &obj,
                    req,
                    Fin::Unpack(Box::new(Unpack {
                        staging,
                        dst: Ptr(buf),
                        count: n,
                        ty: ty.arc(),
                        whole: true,
                    })),
                    Vec::new(),
                )
            }
        };
        give_request(r, request)
    })
}

/// Iallreduce / Ireduce through the Rust nonblocking collectives: `data`
/// is this rank's packed contribution (copied at the start), the result
/// lands in `out` (8-byte aligned, as long as the request).
fn ireduce_typed<T: Reducible>(
    obj: &Arc<CommObj>,
    root: Option<c_int>,
    data: &[u8],
    out: &mut [u8],
    op: &Op,
) -> Option<Result<Request<'static>>> {
    let d: &[T] = cast(data)?;
    let o: &mut [T] = cast_mut(out)?;
    // SAFETY: lifetime erasure of the borrow of `out`: a staging buffer
    // that moves into the same `Req` as the request (its `fin`) and is
    // dropped after it, or the program's receive buffer, which MPI keeps
    // the operation's until the request completes; `obj` (the process
    // state) is kept alive by that `Req` too.
    let o: &'static mut [T] = unsafe { std::slice::from_raw_parts_mut(o.as_mut_ptr(), o.len()) };
    // SAFETY: as above: the communicator lives in the `Arc` the `Req`
    // holds.
    let c: &'static crate::comm::Communicator = unsafe { &*(&obj.comm as *const _) };
    let r = match root {
        Some(root) => c.ireduce(d, o, op, root),
        None => c.iallreduce(d, o, op),
    };
    Some(r)
}

/// Ireduce / Iallreduce. They take the nonblocking Rust path whenever
/// the operation is predefined and the element type is one Rust reduces:
/// a choice that depends only on the type signature and op, so every rank
/// makes the same one. Otherwise (user ops, `long double`, ...) the
/// collective runs to completion at the start.
#[allow(clippy::too_many_arguments)]
fn ireduce<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: C,
    t: *mut c_void,
    o: *mut c_void,
    root: Option<c_int>,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    let mut go_eager = false;
    let rc = guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        if request.is_null() {
            return Err(super::arg("request"));
        }
        let n = count(n, "count")?;
        let r = Reduction::for_collective(h(o), h(t), n)?;
        let fast = match (r.op, r.ty.sig) {
            (OpObj::Builtin(ob), Some((p, _))) => rust_op(ob).map(|op| (op, p)),
            _ => None,
        };
        let Some((op, p)) = fast.filter(|&(_, p)| !obj.comm.is_inter() && typed_kind(p)) else {
            go_eager = true;
            return Ok(());
        };
        if let Some(rt) = root {
            check_root(&obj, rt)?;
        }
        let receives = root.is_none_or(|rt| obj.comm.rank() == rt);
        let packed = if in_place(sbuf) {
            std::borrow::Cow::Owned(r.ty.pack(rbuf, n)?)
        } else {
            src(sbuf, n, &r.ty)?
        };
        let len = if receives { n * r.ty.size } else { 0 };
        // The input read where it lies, and the result written straight
        // into the program's buffer, where each is aligned for any element
        // type (and the output contiguous and apart from the input); else
        // aligned words, the result unpacked when the request completes.
        // Each copy was a fresh buffer: a 2-rank `MPI_Iallreduce` of 64
        // KiB took 60-70 µs in a loop, its frees making glibc trim and
        // regrow its heap, and 18-20 without them (MPICH 4.0: 20).
        let aligned = |p: *const u8| p as usize % 8 == 0;
        let mut words: Vec<u64>;
        let data: &[u8] = if aligned(packed.as_ptr()) {
            &packed
        } else {
            words = vec![0u64; packed.len().div_ceil(8)];
            words_bytes(&mut words)[..packed.len()].copy_from_slice(&packed);
            &words_bytes(&mut words)[..packed.len()]
        };
        let direct = match r.ty.contiguous(n) {
            Some(off) if len > 0 => {
                let at = (rbuf as *mut u8).wrapping_offset(off);
                let apart = !overlap(&addrs(packed.as_ptr(), packed.len()), &addrs(at, len));
                (aligned(at) && apart).then_some(at)
            }
            _ => None,
        };
        let mut staging = vec![0u64; if direct.is_some() { 0 } else { len.div_ceil(8) }];
        let req = {
            let ob = match direct {
                Some(at) => bytes_mut(at.cast(), len)?,
                None => &mut words_bytes(&mut staging)[..len],
            };
            dispatch!(p, ireduce_typed, &obj, root, data, ob, &op)
        };
        let req =
            req.ok_or_else(|| Error::new(ErrorClass::Intern, "typed reduction refused"))??;
        let fin = if receives && direct.is_none() {
            Fin::Words(Box::new(Words {
                staging,
                len,
                dst: Ptr(rbuf),
                count: n,
                ty: r.ty.clone(),
            }))
        } else {
            Fin::None
        };
        give_request(Req::live(&obj, req, fin, Vec::new()), request)
    });
    if rc != super::SUCCESS || !go_eager {
        return rc;
    }
    // The general path: a schedule of messages folded here (`nbc`).
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        let n = count(n, "count")?;
        let red = Reduction::for_collective(h(o), h(t), n)?;
        if obj.comm.is_inter() {
            let kind = root.map_or(Red::Allreduce, Red::Reduce);
            return super::nbc::inter_reduction(
                &obj,
                kind,
                sbuf,
                rbuf,
                n,
                red,
                Vec::new(),
                Some(request),
            );
        }
        let kind = match root {
            Some(rt) => {
                check_root(&obj, rt)?;
                Red::Reduce(rt)
            }
            None => Red::Allreduce,
        };
        super::nbc::ireduction(&obj, kind, sbuf, rbuf, n, red, Vec::new(), request)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    o: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ireduce(
        "MPI_Ireduce",
        sbuf,
        rbuf,
        n,
        t,
        o,
        Some(root),
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    t: *mut c_void,
    o: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ireduce(
        "MPI_Ireduce_c",
        sbuf,
        rbuf,
        n,
        t,
        o,
        Some(root),
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallreduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ireduce("MPI_Iallreduce", sbuf, rbuf, n, t, o, None, comm, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallreduce_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ireduce("MPI_Iallreduce_c", sbuf, rbuf, n, t, o, None, comm, request)
}
