//! Datatypes (MPI 4.1 §5), reduction operations (§6.9) and their C
//! entry points.
//!
//! A datatype is kept as its byte runs (offset, length) in typemap order,
//! plus lower and upper bound, size, and the basic element it is made of
//! when it is made of one kind only (what reductions and
//! `MPI_Get_elements` need). Messages travel packed: a send of a
//! noncontiguous type packs into a staging buffer, a receive unpacks; a
//! contiguous one is sent straight from the user's buffer.

use super::CountElem;
use super::{
    array, bytes, count, guard, h, out, read, state, to_handle, Obj, Table, DATATYPE_NULL, OP_NULL,
};
use crate::error::{Error, ErrorClass, Result};
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, OnceLock};

/// The basic element kinds, as a reduction sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prim {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// x86-64 `long double` (80-bit extended in 16 bytes).
    F80,
    Bool,
    Byte,
    Packed,
    /// Pair types for MINLOC / MAXLOC, packed: value then int index.
    FloatInt,
    DoubleInt,
    LongInt,
    TwoInt,
    ShortInt,
    LongDoubleInt,
    /// Complex numbers (`float _Complex`, `double _Complex`,
    /// `long double _Complex`): real then imaginary part.
    C32,
    C64,
    C80,
}

impl Prim {
    /// Bytes of one element in packed form.
    pub(crate) fn size(self) -> usize {
        match self {
            Prim::I8 | Prim::U8 | Prim::Bool | Prim::Byte | Prim::Packed => 1,
            Prim::I16 | Prim::U16 => 2,
            Prim::I32 | Prim::U32 | Prim::F32 => 4,
            Prim::I64 | Prim::U64 | Prim::F64 => 8,
            Prim::F80 => 16,
            Prim::FloatInt | Prim::TwoInt => 8,
            Prim::DoubleInt | Prim::LongInt => 12,
            Prim::ShortInt => 6,
            Prim::LongDoubleInt => 20,
            Prim::C32 => 8,
            Prim::C64 => 16,
            Prim::C80 => 32,
        }
    }

    /// Basic elements in one (a pair counts two).
    fn elements(self) -> usize {
        match self {
            Prim::FloatInt
            | Prim::DoubleInt
            | Prim::LongInt
            | Prim::TwoInt
            | Prim::ShortInt
            | Prim::LongDoubleInt => 2,
            _ => 1,
        }
    }
}

/// A datatype.
#[derive(Clone, Debug)]
pub(crate) struct TypeObj {
    /// Bytes of data in one instance.
    pub(crate) size: usize,
    pub(crate) lb: isize,
    pub(crate) ub: isize,
    pub(crate) true_lb: isize,
    pub(crate) true_ub: isize,
    /// Byte runs (offset from the buffer address, length), typemap order,
    /// adjacent runs merged.
    pub(crate) blocks: Vec<(isize, usize)>,
    /// The one basic element kind and how many per instance, if the type
    /// is made of one kind only.
    pub(crate) sig: Option<(Prim, usize)>,
    /// Basic elements per instance.
    pub(crate) nelems: usize,
    /// Sizes of the basic elements of one instance in packed order, kept
    /// for types of mixed kinds only (`MPI_Get_elements` on a partial
    /// instance).
    elems: Option<Arc<[u32]>>,
    /// Strictest alignment of its basic elements (for a struct's extent).
    align: usize,
    /// Bounds set by `MPI_Type_create_resized` somewhere in the type: a
    /// struct then gets no alignment padding (MPI 4.1 §5.1.6).
    explicit: bool,
    pub(crate) committed: bool,
    pub(crate) predefined: bool,
    /// How it was made (`None`: predefined, `MPI_COMBINER_NAMED`).
    env: Option<Arc<Envelope>>,
    /// `MPI_Type_set_name`'s name.
    name: Option<Arc<str>>,
}

/// How a derived datatype was made, for `MPI_Type_get_envelope` and
/// `MPI_Type_get_contents` (MPI 4.1 §5.1.13): the constructor and its
/// arguments; the types it was made from are kept with their handles.
#[derive(Debug)]
pub(crate) struct Envelope {
    combiner: c_int,
    ints: Vec<c_int>,
    addrs: Vec<isize>,
    /// The large counts of a large-count (`_c`) constructor (MPI 4.1
    /// §5.1.13): its counts and displacements; `MPI_Type_get_envelope` /
    /// `get_contents` refuse a type that has any.
    large: Vec<i64>,
    types: Vec<(usize, Arc<TypeObj>)>,
}

/// The `MPI_COMBINER_*` values (MPI 5.0 ABI).
mod combiner {
    use std::ffi::c_int;
    pub const NAMED: c_int = 301;
    pub const DUP: c_int = 302;
    pub const CONTIGUOUS: c_int = 303;
    pub const VECTOR: c_int = 304;
    pub const HVECTOR: c_int = 305;
    pub const INDEXED: c_int = 306;
    pub const HINDEXED: c_int = 307;
    pub const INDEXED_BLOCK: c_int = 308;
    pub const HINDEXED_BLOCK: c_int = 309;
    pub const STRUCT: c_int = 310;
    pub const SUBARRAY: c_int = 311;
    pub const DARRAY: c_int = 312;
    pub const RESIZED: c_int = 316;
}

impl Envelope {
    /// Constructor `combiner` with these arguments, made from the types of
    /// handles `types` (already looked up as `objs`).
    fn new(
        combiner: c_int,
        ints: Vec<c_int>,
        addrs: Vec<isize>,
        types: &[(usize, &Obj<TypeObj>)],
    ) -> Envelope {
        Envelope {
            combiner,
            ints,
            addrs,
            large: Vec::new(),
            types: types.iter().map(|&(h, o)| (h, o.arc())).collect(),
        }
    }
}

// `MPI_Aint` and `MPI_Count` are both 64 bits here: the `h` and struct
// constructors read `MPI_Aint` arrays as `i64`s, and the `_c` forms
// take their byte displacements as `isize`s.
const _: () = assert!(std::mem::size_of::<isize>() == 8);

/// The arguments a constructor records for `MPI_Type_get_contents(_c)`:
/// its `int` form keeps counts as integers and byte displacements as
/// addresses, its large-count (`_c`) form both as large counts (MPI 4.1
/// §5.1.13); other integers (`ndims`, `order`, the distributions) stay
/// integers in both.
struct Args {
    large_form: bool,
    ints: Vec<c_int>,
    addrs: Vec<isize>,
    large: Vec<i64>,
}

impl Args {
    /// The arguments of the form whose counts are `C`s.
    fn of<C: CountElem>() -> Args {
        Args {
            large_form: C::LARGE,
            ints: Vec::new(),
            addrs: Vec::new(),
            large: Vec::new(),
        }
    }

    /// An integer in both forms.
    fn int(&mut self, v: c_int) {
        self.ints.push(v);
    }

    /// A count: an integer (it is a `c_int`) or a large count.
    fn count<C: CountElem>(&mut self, v: C) {
        if self.large_form {
            self.large.push(v.wide());
        } else {
            self.ints.push(v.wide() as c_int);
        }
    }

    fn counts<C: CountElem>(&mut self, v: &[C]) {
        for &x in v {
            self.count(x);
        }
    }

    /// A displacement in bytes: an address or a large count.
    fn addr(&mut self, v: isize) {
        if self.large_form {
            self.large.push(v as i64);
        } else {
            self.addrs.push(v);
        }
    }

    fn envelope(self, combiner: c_int, types: &[(usize, &Obj<TypeObj>)]) -> Envelope {
        let mut e = Envelope::new(combiner, self.ints, self.addrs, types);
        e.large = self.large;
        e
    }
}

impl TypeObj {
    fn prim(p: Prim, extent: usize, blocks: Vec<(isize, usize)>, align: usize) -> TypeObj {
        TypeObj {
            size: p.size(),
            lb: 0,
            ub: extent as isize,
            true_lb: 0,
            true_ub: blocks.last().map_or(0, |&(o, l)| o + l as isize),
            blocks,
            sig: Some((p, 1)),
            nelems: p.elements(),
            elems: None,
            align,
            explicit: false,
            committed: true,
            predefined: true,
            env: None,
            name: None,
        }
    }

    /// The sizes of the basic elements of one instance, in order.
    fn seq(&self) -> Vec<u32> {
        if let Some(e) = &self.elems {
            return e.to_vec();
        }
        let Some((p, n)) = self.sig else {
            return Vec::new();
        };
        let one = prim_parts(p);
        one.iter().copied().cycle().take(one.len() * n).collect()
    }

    pub(crate) fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// Whether one run covers the whole extent, so that instances end to
    /// end make one run (a builtin type, a contiguous one of such).
    fn is_dense(&self) -> bool {
        matches!(self.blocks[..], [(_, len)] if len > 0 && len as isize == self.extent())
    }

    /// Whether `n` instances are one run of `n * size` bytes; its offset.
    pub(crate) fn contiguous(&self, n: usize) -> Option<isize> {
        match self.blocks.as_slice() {
            [] => Some(0),
            [(off, len)]
                if *len == self.size && (n <= 1 || self.extent() == self.size as isize) =>
            {
                Some(*off)
            }
            _ => None,
        }
    }

    /// The byte runs `(offset, length)` of `n` instances at offset
    /// `base` (which keeps every offset non-negative: callers check the
    /// type's lower bound), in pack order, adjacent runs merged, cut
    /// after `limit` bytes.
    pub(crate) fn runs(&self, n: usize, base: usize, limit: usize) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        let mut left = n.saturating_mul(self.size).min(limit);
        let ext = self.extent();
        'all: for i in 0..n {
            for &(off, len) in &self.blocks {
                if left == 0 {
                    break 'all;
                }
                let at = (base as isize + i as isize * ext + off) as usize;
                let take = len.min(left);
                left -= take;
                match out.last_mut() {
                    Some(last) if last.0 + last.1 == at => last.1 += take,
                    _ => out.push((at, take)),
                }
            }
        }
        out
    }

    /// Packs `n` instances at `base` into `dst` (appended).
    pub(crate) fn pack_into(&self, base: *const c_void, n: usize, dst: &mut Vec<u8>) -> Result<()> {
        let total = n.checked_mul(self.size).ok_or_else(too_big)?;
        if total == 0 {
            return Ok(());
        }
        if base == super::IN_PLACE {
            return Err(super::in_place_here());
        }
        // A null `base` is MPI_BOTTOM: the displacements are addresses.
        dst.try_reserve(total).map_err(|_| {
            Error::new(
                ErrorClass::NoMem,
                format!("no memory to pack {total} bytes"),
            )
        })?;
        if let Some(off) = self.contiguous(n) {
            let src = (base as isize).wrapping_add(off) as *const u8;
            // SAFETY: `n` instances of a contiguous type are one run of
            // `total` bytes from `base + off`, readable by the caller's
            // contract; `dst` has room reserved.
            dst.extend_from_slice(unsafe { std::slice::from_raw_parts(src, total) });
            return Ok(());
        }
        let ext = self.extent();
        for i in 0..n {
            let inst = (base as isize).wrapping_add(i as isize * ext);
            for &(off, len) in &self.blocks {
                let src = inst.wrapping_add(off) as *const u8;
                // SAFETY: MPI requires the buffer to hold `n` instances of
                // the datatype at `base`, so each run of each instance is
                // readable; `dst` has `total` bytes reserved.
                dst.extend_from_slice(unsafe { std::slice::from_raw_parts(src, len) });
            }
        }
        Ok(())
    }

    /// Packs `n` instances at `base`.
    pub(crate) fn pack(&self, base: *const c_void, n: usize) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        self.pack_into(base, n, &mut v)?;
        Ok(v)
    }

    /// Unpacks `src` (packed instances, possibly fewer bytes than `n`
    /// whole ones) into `n` instances at `base`; returns the bytes used.
    pub(crate) fn unpack(&self, src: &[u8], base: *mut c_void, n: usize) -> Result<usize> {
        let total = n.saturating_mul(self.size).min(src.len());
        if total == 0 {
            return Ok(0);
        }
        if base.cast_const() == super::IN_PLACE {
            return Err(super::in_place_here());
        }
        if let Some(off) = self.contiguous(n) {
            let dst = (base as isize).wrapping_add(off) as *mut u8;
            // SAFETY: `n` instances of a contiguous type are one writable
            // run from `base + off` by the caller's contract; `src` has
            // `total` bytes and is not the destination.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, total) };
            return Ok(total);
        }
        let ext = self.extent();
        let mut at = 0;
        'outer: for i in 0..n {
            let inst = (base as isize).wrapping_add(i as isize * ext);
            for &(off, len) in &self.blocks {
                if at >= total {
                    break 'outer;
                }
                let take = len.min(total - at);
                let dst = inst.wrapping_add(off) as *mut u8;
                // SAFETY: MPI requires the receive buffer to hold `n`
                // instances at `base`, each run writable; `src[at..]` has
                // `take` bytes (bounded by `total`); the two do not
                // overlap (a receive buffer is not the staging buffer).
                unsafe { std::ptr::copy_nonoverlapping(src[at..].as_ptr(), dst, take) };
                at += take;
            }
        }
        Ok(at)
    }

    /// The bytes of `n` basic elements of this type in packed form, whole
    /// instances first (the inverse of [`elements_in`](Self::elements_in);
    /// `MPI_Status_set_elements`). `None` past `usize`.
    pub(crate) fn bytes_of_elements(&self, n: usize) -> Option<usize> {
        if self.nelems == 0 {
            return (n == 0).then_some(0);
        }
        let whole = (n / self.nelems).checked_mul(self.size)?;
        let part: usize = self
            .seq()
            .iter()
            .take(n % self.nelems)
            .map(|&e| e as usize)
            .sum();
        whole.checked_add(part)
    }

    /// Basic elements in `bytes` bytes of packed data of this type
    /// (`MPI_Get_elements`); `None` when a basic element is cut.
    pub(crate) fn elements_in(&self, bytes: usize) -> Option<usize> {
        if self.size == 0 {
            return Some(0);
        }
        let whole = bytes / self.size;
        let rest = bytes % self.size;
        let part = match self.sig {
            Some((p, _)) => {
                // Whole elements of `p`, then the basic parts of a pair
                // type's element (a double of an MPI_DOUBLE_INT: MPI 4.1
                // §5.1.11 counts basic elements).
                let mut left = rest % p.size();
                let mut k = rest / p.size() * p.elements();
                for &e in prim_parts(p) {
                    if left < e as usize {
                        break;
                    }
                    left -= e as usize;
                    k += 1;
                }
                if left != 0 {
                    return None;
                }
                k
            }
            None if rest == 0 => 0,
            None => {
                let mut left = rest;
                let mut k = 0;
                for &e in self.elems.as_deref().unwrap_or(&[]) {
                    if left < e as usize {
                        break;
                    }
                    left -= e as usize;
                    k += 1;
                }
                if left != 0 {
                    return None;
                }
                k
            }
        };
        Some(whole * self.nelems + part)
    }
}

/// The sizes of the basic elements of one element of kind `p`, in packed
/// order: two for the pair types of `MINLOC` / `MAXLOC`, else its own.
fn prim_parts(p: Prim) -> &'static [u32] {
    match p {
        Prim::FloatInt | Prim::TwoInt => &[4, 4],
        Prim::DoubleInt | Prim::LongInt => &[8, 4],
        Prim::ShortInt => &[2, 4],
        Prim::LongDoubleInt => &[16, 4],
        _ => match p.size() {
            1 => &[1],
            2 => &[2],
            4 => &[4],
            8 => &[8],
            16 => &[16],
            32 => &[32],
            _ => &[],
        },
    }
}

/// The most byte runs one datatype may have (16 bytes each).
const MAX_RUNS: usize = 1 << 26;

/// A datatype of `runs` separate pieces, more than [`MAX_RUNS`].
fn too_many(runs: usize) -> Error {
    Error::new(
        ErrorClass::NoMem,
        format!("a datatype of {runs} separate pieces is more than shmpi keeps ({MAX_RUNS})"),
    )
}

fn too_big() -> Error {
    Error::new(
        ErrorClass::Count,
        "the count times the datatype size overflows the address space",
    )
}

/// Builtin datatype handles (MPI 5.0 ABI values) and their types.
fn builtins() -> &'static [(usize, &'static str, TypeObj)] {
    static B: OnceLock<Vec<(usize, &'static str, TypeObj)>> = OnceLock::new();
    B.get_or_init(|| {
        let simple = |h: usize, name: &'static str, p: Prim| {
            let s = p.size();
            (h, name, TypeObj::prim(p, s, vec![(0, s)], s))
        };
        // Aligned as their parts.
        let complex = |h: usize, name: &'static str, p: Prim| {
            let s = p.size();
            (h, name, TypeObj::prim(p, s, vec![(0, s)], s / 2))
        };
        let pair =
            |h: usize, name: &'static str, p: Prim, vsize: usize, ioff: usize, ext: usize| {
                let blocks = if ioff == vsize {
                    vec![(0, vsize + 4)]
                } else {
                    vec![(0, vsize), (ioff as isize, 4)]
                };
                (h, name, TypeObj::prim(p, ext, blocks, vsize.max(4)))
            };
        vec![
            simple(0x201, "MPI_AINT", Prim::I64),
            simple(0x202, "MPI_COUNT", Prim::I64),
            simple(0x203, "MPI_OFFSET", Prim::I64),
            simple(0x207, "MPI_PACKED", Prim::Packed),
            simple(0x208, "MPI_SHORT", Prim::I16),
            simple(0x209, "MPI_INT", Prim::I32),
            simple(0x20a, "MPI_LONG", Prim::I64),
            simple(0x20b, "MPI_LONG_LONG", Prim::I64),
            simple(0x20c, "MPI_UNSIGNED_SHORT", Prim::U16),
            simple(0x20d, "MPI_UNSIGNED", Prim::U32),
            simple(0x20e, "MPI_UNSIGNED_LONG", Prim::U64),
            simple(0x20f, "MPI_UNSIGNED_LONG_LONG", Prim::U64),
            simple(0x210, "MPI_FLOAT", Prim::F32),
            simple(0x214, "MPI_DOUBLE", Prim::F64),
            simple(0x220, "MPI_LONG_DOUBLE", Prim::F80),
            pair(0x228, "MPI_FLOAT_INT", Prim::FloatInt, 4, 4, 8),
            pair(0x229, "MPI_DOUBLE_INT", Prim::DoubleInt, 8, 8, 16),
            pair(0x22a, "MPI_LONG_INT", Prim::LongInt, 8, 8, 16),
            pair(0x22b, "MPI_2INT", Prim::TwoInt, 4, 4, 8),
            pair(0x22c, "MPI_SHORT_INT", Prim::ShortInt, 2, 4, 8),
            pair(
                0x22d,
                "MPI_LONG_DOUBLE_INT",
                Prim::LongDoubleInt,
                16,
                16,
                32,
            ),
            complex(0x212, "MPI_C_FLOAT_COMPLEX", Prim::C32),
            complex(0x213, "MPI_CXX_FLOAT_COMPLEX", Prim::C32),
            complex(0x216, "MPI_C_DOUBLE_COMPLEX", Prim::C64),
            complex(0x217, "MPI_CXX_DOUBLE_COMPLEX", Prim::C64),
            complex(0x224, "MPI_C_LONG_DOUBLE_COMPLEX", Prim::C80),
            complex(0x225, "MPI_CXX_LONG_DOUBLE_COMPLEX", Prim::C80),
            simple(0x238, "MPI_C_BOOL", Prim::Bool),
            simple(0x239, "MPI_CXX_BOOL", Prim::Bool),
            simple(0x23c, "MPI_WCHAR", Prim::I32),
            simple(0x240, "MPI_INT8_T", Prim::I8),
            simple(0x241, "MPI_UINT8_T", Prim::U8),
            simple(0x243, "MPI_CHAR", Prim::I8),
            simple(0x244, "MPI_SIGNED_CHAR", Prim::I8),
            simple(0x245, "MPI_UNSIGNED_CHAR", Prim::U8),
            simple(0x247, "MPI_BYTE", Prim::Byte),
            simple(0x248, "MPI_INT16_T", Prim::I16),
            simple(0x249, "MPI_UINT16_T", Prim::U16),
            simple(0x250, "MPI_INT32_T", Prim::I32),
            simple(0x251, "MPI_UINT32_T", Prim::U32),
            simple(0x258, "MPI_INT64_T", Prim::I64),
            simple(0x259, "MPI_UINT64_T", Prim::U64),
        ]
    })
}

/// The size of a builtin datatype that is one contiguous run (every
/// builtin but the padded pair types), without the type table.
#[inline]
pub(crate) fn simple_size(t: usize) -> Option<usize> {
    // One bounds check and one byte load: the `match` of `simple_of`
    // compiled to a jump table, an indirect branch on every
    // `MPI_Send` and `MPI_Recv` (`docs/benchmarks.md`, "Issue 6,
    // twenty-ninth pass").
    let s = *SIMPLE.get(t.wrapping_sub(SIMPLE_FIRST))?;
    (s != 0).then_some(s as usize)
}

/// The first handle of [`SIMPLE`].
const SIMPLE_FIRST: usize = 0x200;

/// [`simple_of`] for the handles from [`SIMPLE_FIRST`] (0: none).
const SIMPLE: [u8; 0x60] = {
    let mut t = [0u8; 0x60];
    let mut i = 0;
    while i < t.len() {
        t[i] = simple_of(SIMPLE_FIRST + i);
        i += 1;
    }
    t
};

/// The size of the builtin datatype `t` if it is one contiguous run,
/// else 0.
const fn simple_of(t: usize) -> u8 {
    match t {
        0x207 | 0x238 | 0x239 | 0x240 | 0x241 | 0x243 | 0x244 | 0x245 | 0x247 => 1,
        0x208 | 0x20c | 0x248 | 0x249 => 2,
        0x209 | 0x20d | 0x210 | 0x23c | 0x250 | 0x251 => 4,
        0x201..=0x203
        | 0x20a
        | 0x20b
        | 0x20e
        | 0x20f
        | 0x212
        | 0x213
        | 0x214
        | 0x258
        | 0x259
        | 0x228
        | 0x22b => 8,
        0x216 | 0x217 | 0x220 => 16,
        0x224 | 0x225 => 32,
        _ => 0,
    }
}

// Every builtin handle (0x200..0x300) that `simple_of` knows is inside
// the table.
const _: () = {
    let mut t = SIMPLE_FIRST + SIMPLE.len();
    while t < 0x300 {
        assert!(simple_of(t) == 0, "a simple type past the table");
        t += 1;
    }
};

/// The datatype behind handle `t`.
///
/// # Errors
/// `Type` for `MPI_DATATYPE_NULL`, a freed or unknown handle.
pub(crate) fn type_obj(t: usize) -> Result<Obj<TypeObj>> {
    static BUILTIN: OnceLock<Vec<Option<Arc<TypeObj>>>> = OnceLock::new();
    if (0x200..0x300).contains(&t) {
        let table = BUILTIN.get_or_init(|| {
            let mut v = vec![None; 0x100];
            for (h, _, ty) in builtins() {
                v[h - 0x200] = Some(Arc::new(ty.clone()));
            }
            v
        });
        return table[t - 0x200]
            .as_ref()
            .map(Obj::Static)
            .ok_or_else(|| bad_type(t));
    }
    state()
        .types
        .get(t)
        .cloned()
        .map(Obj::Owned)
        .ok_or_else(|| bad_type(t))
}

/// As [`type_obj`], and it must be committed (for communication).
pub(crate) fn committed(t: usize) -> Result<Obj<TypeObj>> {
    let ty = type_obj(t)?;
    if !ty.committed {
        return Err(Error::new(
            ErrorClass::Type,
            "the datatype is not committed (MPI_Type_commit it before communicating with it)",
        ));
    }
    Ok(ty)
}

fn bad_type(t: usize) -> Error {
    if t == DATATYPE_NULL {
        Error::new(ErrorClass::Type, "MPI_DATATYPE_NULL is not a datatype")
    } else {
        Error::new(
            ErrorClass::Type,
            format!("{t:#x} is not a valid datatype handle (freed, or not a datatype)"),
        )
    }
}

/// A new type made of `parts`: (displacement in bytes, block length,
/// type) entries, each `blocklen` consecutive instances of its type.
fn compose(parts: &[(isize, usize, &TypeObj)], is_struct: bool) -> Result<TypeObj> {
    // Bound the work and memory before building the runs: a block of
    // instances of a dense type is one run however long; the element
    // sizes of a type of mixed kinds are kept one by one.
    let mut runs: usize = 0;
    let mut elems: usize = 0;
    let mut kinds = None;
    let mut mixed = false;
    // The total size, and each part's reach (its displacement plus or
    // minus its blocks' extents), fit an `isize`: the second pass below
    // then adds and multiplies without overflow (counts may be 64 bits,
    // the `_c` constructors).
    let mut total: isize = 0;
    // The lowest and highest address the parts reach: their spread (the
    // new type's extent, at most) fits an `isize` too.
    let mut reach = (isize::MAX, isize::MIN);
    for &(disp, bl, ty) in parts {
        let per = if ty.is_dense() {
            1
        } else {
            bl.checked_mul(ty.blocks.len().max(1)).ok_or_else(too_big)?
        };
        runs = runs.checked_add(per).ok_or_else(too_big)?;
        let bytes = bl
            .checked_mul(ty.size)
            .and_then(|b| isize::try_from(b).ok())
            .ok_or_else(too_big)?;
        total = total.checked_add(bytes).ok_or_else(too_big)?;
        if bl > 0 {
            let span = isize::try_from(bl - 1)
                .ok()
                .and_then(|k| k.checked_mul(ty.extent()))
                .ok_or_else(too_big)?;
            for edge in [ty.lb, ty.ub, ty.true_lb, ty.true_ub] {
                let near = disp.checked_add(edge).ok_or_else(too_big)?;
                let far = near.checked_add(span).ok_or_else(too_big)?;
                reach = (reach.0.min(near).min(far), reach.1.max(near).max(far));
            }
        }
        if bl > 0 {
            let kind = ty.sig.map(|(p, _)| p);
            mixed |= kind.is_none() || kinds.is_some_and(|k| Some(k) != kind);
            kinds = kind;
            elems = bl
                .checked_mul(ty.nelems)
                .and_then(|e| e.checked_add(elems))
                .ok_or_else(too_big)?;
        }
    }
    if reach.0 <= reach.1 {
        reach.1.checked_sub(reach.0).ok_or_else(too_big)?;
    }
    if runs > MAX_RUNS {
        return Err(too_many(runs));
    }
    if mixed && elems > MAX_RUNS {
        return Err(Error::new(
            ErrorClass::NoMem,
            format!(
                "a datatype of mixed kinds with {elems} basic elements is more than shmpi keeps \
                 ({MAX_RUNS})"
            ),
        ));
    }
    let mut lb = isize::MAX;
    let mut ub = isize::MIN;
    let mut blocks: Vec<(isize, usize)> = Vec::new();
    let mut size = 0;
    let mut nelems = 0;
    let mut align = 1;
    let mut explicit = false;
    let mut sig: Option<Option<Prim>> = None;
    let mut sig_n = 0;
    // Bounds set by a resize are sticky (MPI 4.1 §5.1.7): where any part
    // carries them, only such parts bound the new type; the others' data
    // lies inside or outside its extent as it falls.
    let sticky = parts.iter().any(|&(_, bl, ty)| bl > 0 && ty.explicit);
    for &(disp, bl, ty) in parts {
        if bl == 0 {
            continue;
        }
        let ext = ty.extent();
        if ty.explicit || !sticky {
            lb = lb.min(disp + ty.lb + if ext < 0 { (bl as isize - 1) * ext } else { 0 });
            ub = ub.max(disp + ty.ub + if ext > 0 { (bl as isize - 1) * ext } else { 0 });
        }
        size += bl * ty.size;
        nelems += bl * ty.nelems;
        align = align.max(ty.align);
        explicit |= ty.explicit;
        sig = Some(match (sig, ty.sig) {
            (None, Some((p, _))) => Some(p),
            (Some(Some(a)), Some((p, _))) if a == p => Some(a),
            _ => None,
        });
        if let Some((_, n)) = ty.sig {
            sig_n += bl * n;
        }

        if ty.is_dense() {
            // `bl` instances end to end: one run.
            let (off, len) = ty.blocks[0];
            let o = disp + off;
            match blocks.last_mut() {
                Some((po, pl)) if *po + *pl as isize == o => *pl += bl * len,
                _ => blocks.push((o, bl * len)),
            }
            continue;
        }
        for k in 0..bl {
            let at = disp + k as isize * ext;
            for &(off, len) in &ty.blocks {
                let o = at + off;
                match blocks.last_mut() {
                    Some((po, pl)) if *po + *pl as isize == o => *pl += len,
                    _ => blocks.push((o, len)),
                }
            }
        }
    }
    if lb == isize::MAX {
        lb = 0;
        ub = 0;
    }
    if is_struct && !explicit {
        let ext = ub - lb;
        let a = align as isize;
        if ext % a != 0 {
            ub += a - ext.rem_euclid(a);
        }
    }
    let true_lb = blocks.iter().map(|b| b.0).min().unwrap_or(0);
    let true_ub = blocks.iter().map(|b| b.0 + b.1 as isize).max().unwrap_or(0);
    Ok(TypeObj {
        size,
        lb,
        ub,
        true_lb,
        true_ub,
        blocks,
        sig: sig.flatten().map(|p| (p, sig_n)),
        elems: match sig.flatten() {
            Some(_) => None,
            None => {
                let mut seq: Vec<u32> = Vec::new();
                for &(_, bl, ty) in parts {
                    let one = ty.seq();
                    for _ in 0..bl {
                        seq.extend_from_slice(&one);
                    }
                }
                Some(seq.into())
            }
        },
        nelems,
        align,
        explicit,
        committed: false,
        predefined: false,
        env: None,
        name: None,
    })
}

/// Registers `ty`, made as `env` says, and writes its handle.
fn new_type(mut ty: TypeObj, env: Envelope, newtype: *mut *mut c_void) -> Result<()> {
    if newtype.is_null() {
        return Err(super::arg("newtype"));
    }
    ty.env = Some(Arc::new(env));
    let handle = state().types.insert(Arc::new(ty));
    out(newtype, to_handle(handle), "newtype")
}

fn bl<C: CountElem>(n: C, what: &str) -> Result<usize> {
    count(n, what)
}

/// `n` extents (or bytes) of `unit` as a byte offset; `Count` when it
/// passes what an address may hold (large counts, the `_c` forms).
fn offset(n: i64, unit: isize) -> Result<isize> {
    isize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Count,
                format!("a displacement of {n} times {unit} bytes overflows"),
            )
        })
}

// ---- datatype entry points ---------------------------------------------------
//
// Each constructor has an `int` form and a large-count (`_c`) form (MPI
// 4.1 §19.2), which share a body generic over the count type `C`
// (`CountElem`); what the body records for `MPI_Type_get_contents(_c)`
// follows the form ([`Args`]).

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous(
    n: c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    contiguous("MPI_Type_contiguous", n, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous_c(
    n: i64,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    contiguous("MPI_Type_contiguous_c", n, old, newtype)
}

fn contiguous<C: CountElem>(
    call: &str,
    n: C,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard(call, super::COMM_NULL, || {
        let mut a = Args::of::<C>();
        a.count(n);
        let n = bl(n, "count")?;
        let (oh, old) = (h(old), type_obj(h(old))?);
        let env = a.envelope(combiner::CONTIGUOUS, &[(oh, &old)]);
        new_type(compose(&[(0, n, &old)], false)?, env, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector(
    n: c_int,
    blocklen: c_int,
    stride: c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    vector("MPI_Type_vector", n, blocklen, stride, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector_c(
    n: i64,
    blocklen: i64,
    stride: i64,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    vector("MPI_Type_vector_c", n, blocklen, stride, old, newtype)
}

fn vector<C: CountElem>(
    call: &str,
    n: C,
    blocklen: C,
    stride: C,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard(call, super::COMM_NULL, || {
        let mut a = Args::of::<C>();
        a.counts(&[n, blocklen, stride]);
        let n = bl(n, "count")?;
        let b = bl(blocklen, "blocklength")?;
        if n > MAX_RUNS {
            return Err(too_many(n));
        }
        let (oh, old) = (h(old), type_obj(h(old))?);
        // (One block uses no step: a huge stride is then no error.)
        let step = if n > 1 {
            offset(stride.wide(), old.extent())?
        } else {
            0
        };
        let parts = (0..n)
            .map(|i| Ok((offset(i as i64, step)?, b, &**old)))
            .collect::<Result<Vec<_>>>()?;
        let env = a.envelope(combiner::VECTOR, &[(oh, &old)]);
        new_type(compose(&parts, false)?, env, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    n: c_int,
    blocklen: c_int,
    stride: isize,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    hvector("MPI_Type_create_hvector", n, blocklen, stride, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector_c(
    n: i64,
    blocklen: i64,
    stride: i64,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    hvector(
        "MPI_Type_create_hvector_c",
        n,
        blocklen,
        stride as isize,
        old,
        newtype,
    )
}

fn hvector<C: CountElem>(
    call: &str,
    n: C,
    blocklen: C,
    stride: isize,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard(call, super::COMM_NULL, || {
        let mut a = Args::of::<C>();
        a.counts(&[n, blocklen]);
        a.addr(stride);
        let n = bl(n, "count")?;
        let b = bl(blocklen, "blocklength")?;
        if n > MAX_RUNS {
            return Err(too_many(n));
        }
        let (oh, old) = (h(old), type_obj(h(old))?);
        let parts = (0..n)
            .map(|i| Ok((offset(i as i64, stride)?, b, &**old)))
            .collect::<Result<Vec<_>>>()?;
        let env = a.envelope(combiner::HVECTOR, &[(oh, &old)]);
        new_type(compose(&parts, false)?, env, newtype)
    })
}

/// The block lengths of an indexed constructor: one per block, or one
/// for all (the `_block` forms).
enum Lens<C> {
    Each(*const C),
    All(C),
}

/// The four indexed constructors: `n` blocks of `old` at displacements
/// `displs`, in units of `old`'s extent or, for the `h` forms
/// (`bytes`), in bytes. Counts are `C`s; displacements `D`s (`int`,
/// `MPI_Aint` or, in the `_c` forms, `MPI_Count`).
fn indexed<C: CountElem, D: Copy + Into<i64>>(
    n: C,
    blocklens: Lens<C>,
    displs: *const D,
    old: *mut c_void,
    bytes: bool,
    newtype: *mut *mut c_void,
) -> Result<()> {
    // The constructor's arguments: the count, the block lengths (or the
    // one), then the displacements (integers, or addresses in bytes; all
    // large counts in the `_c` forms).
    let mut a = Args::of::<C>();
    a.count(n);
    let n = bl(n, "count")?;
    let ds = array(displs, n, "array_of_displacements")?;
    let (oh, old) = (h(old), type_obj(h(old))?);
    let unit = if bytes { 1 } else { old.extent() };
    let lens: Vec<usize> = match blocklens {
        Lens::Each(p) => {
            let given = array(p, n, "array_of_blocklengths")?;
            a.counts(given);
            given
                .iter()
                .map(|&b| bl(b, "a block length"))
                .collect::<Result<_>>()?
        }
        Lens::All(one) => {
            a.count(one);
            vec![bl(one, "blocklength")?; n]
        }
    };
    for &d in ds {
        let d: i64 = d.into();
        if bytes {
            a.addr(d as isize);
        } else if a.large_form {
            a.large.push(d);
        } else {
            a.int(d as c_int);
        }
    }
    let kind = match (&blocklens, bytes) {
        (Lens::Each(_), false) => combiner::INDEXED,
        (Lens::Each(_), true) => combiner::HINDEXED,
        (Lens::All(_), false) => combiner::INDEXED_BLOCK,
        (Lens::All(_), true) => combiner::HINDEXED_BLOCK,
    };
    let parts = ds
        .iter()
        .zip(lens)
        .map(|(&d, b)| Ok((offset(d.into(), unit)?, b, &**old)))
        .collect::<Result<Vec<_>>>()?;
    let env = a.envelope(kind, &[(oh, &old)]);
    new_type(compose(&parts, false)?, env, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed(
    n: c_int,
    blocklens: *const c_int,
    displs: *const c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_indexed", super::COMM_NULL, || {
        indexed(n, Lens::Each(blocklens), displs, old, false, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed_c(
    n: i64,
    blocklens: *const i64,
    displs: *const i64,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_indexed_c", super::COMM_NULL, || {
        indexed(n, Lens::Each(blocklens), displs, old, false, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block(
    n: c_int,
    blocklen: c_int,
    displs: *const c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_create_indexed_block", super::COMM_NULL, || {
        indexed(n, Lens::All(blocklen), displs, old, false, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block_c(
    n: i64,
    blocklen: i64,
    displs: *const i64,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_create_indexed_block_c", super::COMM_NULL, || {
        indexed(n, Lens::All(blocklen), displs, old, false, newtype)
    })
}

/// Displacements in bytes (MPI 4.1 §5.1.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    n: c_int,
    blocklens: *const c_int,
    displs: *const isize,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_create_hindexed", super::COMM_NULL, || {
        indexed(
            n,
            Lens::Each(blocklens),
            displs.cast::<i64>(),
            old,
            true,
            newtype,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_c(
    n: i64,
    blocklens: *const i64,
    displs: *const i64,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_create_hindexed_c", super::COMM_NULL, || {
        indexed(n, Lens::Each(blocklens), displs, old, true, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block(
    n: c_int,
    blocklen: c_int,
    displs: *const isize,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_create_hindexed_block", super::COMM_NULL, || {
        indexed(
            n,
            Lens::All(blocklen),
            displs.cast::<i64>(),
            old,
            true,
            newtype,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block_c(
    n: i64,
    blocklen: i64,
    displs: *const i64,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_create_hindexed_block_c", super::COMM_NULL, || {
        indexed(n, Lens::All(blocklen), displs, old, true, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct(
    n: c_int,
    blocklens: *const c_int,
    displs: *const isize,
    types: *const *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    create_struct(
        "MPI_Type_create_struct",
        n,
        blocklens,
        displs.cast::<i64>(),
        types,
        newtype,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct_c(
    n: i64,
    blocklens: *const i64,
    displs: *const i64,
    types: *const *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    create_struct(
        "MPI_Type_create_struct_c",
        n,
        blocklens,
        displs,
        types,
        newtype,
    )
}

/// `MPI_Type_create_struct(_c)` (`call`): byte displacements (`MPI_Aint`
/// or `MPI_Count`, both 64 bits here).
fn create_struct<C: CountElem>(
    call: &str,
    n: C,
    blocklens: *const C,
    displs: *const i64,
    types: *const *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard(call, super::COMM_NULL, || {
        let mut a = Args::of::<C>();
        a.count(n);
        let n = bl(n, "count")?;
        let bls = array(blocklens, n, "array_of_blocklengths")?;
        let ds = array(displs, n, "array_of_displacements")?;
        let ts = array(types, n, "array_of_types")?;
        let objs = ts
            .iter()
            .map(|&t| type_obj(h(t)))
            .collect::<Result<Vec<_>>>()?;
        let mut parts = Vec::with_capacity(n);
        for i in 0..n {
            parts.push((ds[i] as isize, bl(bls[i], "a block length")?, &**objs[i]));
        }
        a.counts(bls);
        for &d in ds {
            a.addr(d as isize);
        }
        let from: Vec<_> = ts.iter().map(|&t| h(t)).zip(objs.iter()).collect();
        let env = a.envelope(combiner::STRUCT, &from);
        new_type(compose(&parts, true)?, env, newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized(
    old: *mut c_void,
    lb: isize,
    extent: isize,
    newtype: *mut *mut c_void,
) -> c_int {
    resized::<c_int>("MPI_Type_create_resized", old, lb, extent, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized_c(
    old: *mut c_void,
    lb: i64,
    extent: i64,
    newtype: *mut *mut c_void,
) -> c_int {
    resized::<i64>(
        "MPI_Type_create_resized_c",
        old,
        lb as isize,
        extent as isize,
        newtype,
    )
}

/// `MPI_Type_create_resized(_c)` (`call`; `C` says which form records
/// it).
fn resized<C: CountElem>(
    call: &str,
    old: *mut c_void,
    lb: isize,
    extent: isize,
    newtype: *mut *mut c_void,
) -> c_int {
    guard(call, super::COMM_NULL, || {
        let (oh, old) = (h(old), type_obj(h(old))?);
        let ub = lb.checked_add(extent).ok_or_else(too_big)?;
        let mut ty = (**old).clone();
        ty.lb = lb;
        ty.ub = ub;
        ty.explicit = true;
        ty.committed = false;
        ty.predefined = false;
        let mut a = Args::of::<C>();
        a.addr(lb);
        a.addr(extent);
        let env = a.envelope(combiner::RESIZED, &[(oh, &old)]);
        new_type(ty, env, newtype)
    })
}

/// A datatype a persistent collective keeps for its starts: the
/// program's handle if predefined, else a handle of its own to the same
/// object, given back when the request is freed (the program may free
/// its handle after the init, MPI 4.1 §6.13).
#[derive(Debug)]
pub(crate) struct HeldType(usize);

impl HeldType {
    /// Holds committed type `t`.
    ///
    /// # Errors
    /// `Type` for a type that is not committed, or no type.
    pub(crate) fn hold(t: *mut c_void) -> Result<HeldType> {
        let handle = h(t);
        let ty = committed(handle)?;
        if (0x200..0x300).contains(&handle) {
            return Ok(HeldType(handle));
        }
        Ok(HeldType(state().types.insert(ty.arc())))
    }

    /// The handle to pass on.
    pub(crate) fn handle(&self) -> *mut c_void {
        to_handle(self.0)
    }
}

impl Drop for HeldType {
    fn drop(&mut self) {
        if !(0x200..0x300).contains(&self.0) {
            state().types.release(self.0);
            // A user function may have set attributes on the handle.
            super::attr::forget_held(self.0);
        }
    }
}

/// `MPI_ORDER_C` / `MPI_ORDER_FORTRAN` and the `MPI_DISTRIBUTE_*` values
/// (MPI 5.0 ABI draft), but `MPI_DISTRIBUTE_DFLT_DARG`: the draft's 19 is
/// also a valid block size, which could then not be asked for, so it is
/// -1 here, as in Open MPI (MPICH uses another negative value).
const ORDER_C: c_int = 12;
const ORDER_FORTRAN: c_int = 15;
const DISTRIBUTE_NONE: c_int = 16;
const DISTRIBUTE_BLOCK: c_int = 17;
const DISTRIBUTE_CYCLIC: c_int = 18;
const DISTRIBUTE_DFLT_DARG: c_int = -1;

/// The type of an array of `old` with dimensions `gsizes` (in `order`),
/// of which this process has, in each dimension, the index ranges
/// `ranges[d]` ((first, length) pairs): built a dimension at a time from
/// the fastest-varying, each level resized to its whole row so the next
/// one strides by it; the result spans the whole array, from 0 (the
/// extent `MPI_Type_create_subarray` and `darray` give, MPI 4.1 §5.1.3).
fn array_type(
    old: &TypeObj,
    gsizes: &[usize],
    ranges: &[Vec<(usize, usize)>],
    order: c_int,
) -> Result<TypeObj> {
    let dims: Vec<usize> = if order == ORDER_C {
        (0..gsizes.len()).rev().collect()
    } else {
        (0..gsizes.len()).collect()
    };
    let mut t = old.clone();
    let mut stride = old.extent();
    for d in dims {
        if ranges[d].len() > MAX_RUNS {
            return Err(too_many(ranges[d].len()));
        }
        let row = isize::try_from(gsizes[d])
            .ok()
            .and_then(|g| g.checked_mul(stride))
            .ok_or_else(too_big)?;
        // Each first index is below its dimension's size: no overflow
        // once the row fits.
        let parts: Vec<_> = ranges[d]
            .iter()
            .map(|&(first, len)| (first as isize * stride, len, &t))
            .collect();
        let mut level = compose(&parts, false)?;
        level.lb = 0;
        level.ub = row;
        level.explicit = true;
        t = level;
        stride = row;
    }
    Ok(t)
}

/// The sizes of an array constructor, each positive.
fn positive<C: CountElem>(v: &[C], what: &str) -> Result<Vec<usize>> {
    v.iter()
        .map(|&x| {
            usize::try_from(x.wide())
                .ok()
                .filter(|&x| x > 0)
                .ok_or_else(|| {
                    Error::new(
                        ErrorClass::Arg,
                        format!("{what} has {x}: each must be positive"),
                    )
                })
        })
        .collect()
}

fn check_order(order: c_int) -> Result<()> {
    if order != ORDER_C && order != ORDER_FORTRAN {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("order {order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
        ));
    }
    Ok(())
}

/// `MPI_Type_create_subarray`: the block `starts[d] .. starts[d] +
/// subsizes[d]` of each dimension of an array of `sizes`, in C or
/// Fortran order; its extent is the whole array's.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    order: c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    subarray(
        "MPI_Type_create_subarray",
        ndims,
        sizes,
        subsizes,
        starts,
        order,
        old,
        newtype,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray_c(
    ndims: c_int,
    sizes: *const i64,
    subsizes: *const i64,
    starts: *const i64,
    order: c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    subarray(
        "MPI_Type_create_subarray_c",
        ndims,
        sizes,
        subsizes,
        starts,
        order,
        old,
        newtype,
    )
}

/// `MPI_Type_create_subarray(_c)` (`call`), generic over the count type.
#[allow(clippy::too_many_arguments)]
fn subarray<C: CountElem>(
    call: &str,
    ndims: c_int,
    sizes: *const C,
    subsizes: *const C,
    starts: *const C,
    order: c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard(call, super::COMM_NULL, || {
        let nd = count(ndims, "ndims")?;
        if nd == 0 {
            return Err(Error::new(ErrorClass::Arg, "ndims must be positive"));
        }
        let (sz, sub, st) = (
            array(sizes, nd, "array_of_sizes")?,
            array(subsizes, nd, "array_of_subsizes")?,
            array(starts, nd, "array_of_starts")?,
        );
        check_order(order)?;
        let gsizes = positive(sz, "array_of_sizes")?;
        let subs = positive(sub, "array_of_subsizes")?;
        let mut ranges = Vec::with_capacity(nd);
        for d in 0..nd {
            let first = usize::try_from(st[d].wide())
                .ok()
                .filter(|&f| f.checked_add(subs[d]).is_some_and(|end| end <= gsizes[d]));
            let Some(first) = first else {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!(
                        "dimension {d}: {} elements from {} do not fit in {}",
                        subs[d], st[d], gsizes[d]
                    ),
                ));
            };
            ranges.push(vec![(first, subs[d])]);
        }
        let (oh, obj) = (h(old), type_obj(h(old))?);
        let ty = array_type(&obj, &gsizes, &ranges, order)?;
        // The int form: ndims, the sizes, subsizes and starts, order; the
        // `_c` form: ndims and order, the arrays as large counts.
        let mut a = Args::of::<C>();
        a.int(ndims);
        a.counts(sz);
        a.counts(sub);
        a.counts(st);
        a.int(order);
        let env = a.envelope(combiner::SUBARRAY, &[(oh, &obj)]);
        new_type(ty, env, newtype)
    })
}

/// `MPI_Type_create_darray`: the part of a `gsizes` array that process
/// `rank` of `size` (on a row-major `psizes` grid) holds under the
/// distributions `distribs` (block, cyclic with `dargs`, or none), in C
/// or Fortran order (MPI 4.1 §5.1.4); its extent is the whole array's.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const c_int,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    darray(
        "MPI_Type_create_darray",
        size,
        rank,
        ndims,
        gsizes,
        distribs,
        dargs,
        psizes,
        order,
        old,
        newtype,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const i64,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    darray(
        "MPI_Type_create_darray_c",
        size,
        rank,
        ndims,
        gsizes,
        distribs,
        dargs,
        psizes,
        order,
        old,
        newtype,
    )
}

/// `MPI_Type_create_darray(_c)` (`call`): the global sizes `C`s.
#[allow(clippy::too_many_arguments)]
fn darray<C: CountElem>(
    call: &str,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const C,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    guard(call, super::COMM_NULL, || {
        let nd = count(ndims, "ndims")?;
        if nd == 0 || size <= 0 || rank < 0 || rank >= size {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "ndims {ndims}, size {size}, rank {rank}: need ndims > 0 and 0 <= rank < size"
                ),
            ));
        }
        let (gs, ds, da, ps) = (
            array(gsizes, nd, "array_of_gsizes")?,
            array(distribs, nd, "array_of_distribs")?,
            array(dargs, nd, "array_of_dargs")?,
            array(psizes, nd, "array_of_psizes")?,
        );
        check_order(order)?;
        let g = positive(gs, "array_of_gsizes")?;
        let p = positive(ps, "array_of_psizes")?;
        if p.iter().try_fold(1usize, |a, &x| a.checked_mul(x)) != Some(size as usize) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("array_of_psizes {ps:?} does not multiply to size {size}"),
            ));
        }
        // This process's coordinates on the grid: row-major whatever the
        // array's order.
        let mut coords = vec![0; nd];
        let mut r = rank as usize;
        for d in (0..nd).rev() {
            coords[d] = r % p[d];
            r /= p[d];
        }
        let mut ranges = Vec::with_capacity(nd);
        for d in 0..nd {
            let bad = |why: String| Error::new(ErrorClass::Arg, format!("dimension {d}: {why}"));
            let darg = da[d];
            let mut mine = Vec::new();
            match ds[d] {
                DISTRIBUTE_NONE => {
                    if p[d] != 1 {
                        return Err(bad(format!("MPI_DISTRIBUTE_NONE on {} processes", p[d])));
                    }
                    mine.push((0, g[d]));
                }
                DISTRIBUTE_BLOCK => {
                    let blk = match darg {
                        DISTRIBUTE_DFLT_DARG => g[d].div_ceil(p[d]),
                        b if b > 0 && (b as usize).saturating_mul(p[d]) >= g[d] => b as usize,
                        b => {
                            return Err(bad(format!(
                                "a block of {b} on {} processes does not cover {}",
                                p[d], g[d]
                            )))
                        }
                    };
                    let first = coords[d] * blk;
                    if first < g[d] {
                        mine.push((first, blk.min(g[d] - first)));
                    }
                }
                DISTRIBUTE_CYCLIC => {
                    let blk = match darg {
                        DISTRIBUTE_DFLT_DARG => 1,
                        b if b > 0 => b as usize,
                        b => return Err(bad(format!("cyclic block {b} is not positive"))),
                    };
                    let mut first = coords[d] * blk;
                    while first < g[d] {
                        if mine.len() >= MAX_RUNS {
                            return Err(too_many(mine.len() + 1));
                        }
                        mine.push((first, blk.min(g[d] - first)));
                        first += p[d] * blk;
                    }
                }
                other => return Err(bad(format!("{other} is not an MPI_DISTRIBUTE_* value"))),
            }
            ranges.push(mine);
        }
        let (oh, obj) = (h(old), type_obj(h(old))?);
        let ty = array_type(&obj, &g, &ranges, order)?;
        // The int form: size, rank, ndims, gsizes, distribs, dargs,
        // psizes, order; the `_c` form keeps gsizes as large counts.
        let mut a = Args::of::<C>();
        for v in [size, rank, ndims] {
            a.int(v);
        }
        a.counts(gs);
        for v in [ds, da, ps] {
            a.ints.extend_from_slice(v);
        }
        a.int(order);
        let env = a.envelope(combiner::DARRAY, &[(oh, &obj)]);
        new_type(ty, env, newtype)
    })
}

/// `MPI_Type_get_envelope`: how many integers, addresses and datatypes
/// `MPI_Type_get_contents` gives, and the constructor. A type made by a
/// large-count constructor has large counts, which only the `_c` forms
/// give: `MPI_ERR_TYPE` here (MPI 4.1 §5.1.13).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope(
    t: *mut c_void,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    comb: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_envelope", super::COMM_NULL, || {
        let (ni, na, nl, nd, c) = envelope_of(h(t))?;
        if nl > 0 {
            return Err(large_made("MPI_Type_get_envelope"));
        }
        out(num_integers, ni as c_int, "num_integers")?;
        out(num_addresses, na as c_int, "num_addresses")?;
        out(num_datatypes, nd as c_int, "num_datatypes")?;
        out(comb, c, "combiner")
    })
}

/// `MPI_Type_get_envelope_c`: as [`MPI_Type_get_envelope`], with the
/// number of large counts, for a type of either kind of constructor.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope_c(
    t: *mut c_void,
    num_integers: *mut i64,
    num_addresses: *mut i64,
    num_large_counts: *mut i64,
    num_datatypes: *mut i64,
    comb: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_envelope_c", super::COMM_NULL, || {
        let (ni, na, nl, nd, c) = envelope_of(h(t))?;
        out(num_integers, ni as i64, "num_integers")?;
        out(num_addresses, na as i64, "num_addresses")?;
        out(num_large_counts, nl as i64, "num_large_counts")?;
        out(num_datatypes, nd as i64, "num_datatypes")?;
        out(comb, c, "combiner")
    })
}

/// A type's envelope: (integers, addresses, large counts, datatypes,
/// combiner).
fn envelope_of(t: usize) -> Result<(usize, usize, usize, usize, c_int)> {
    let ty = type_obj(t)?;
    Ok(match &ty.env {
        None => (0, 0, 0, 0, combiner::NAMED),
        Some(e) => (
            e.ints.len(),
            e.addrs.len(),
            e.large.len(),
            e.types.len(),
            e.combiner,
        ),
    })
}

/// The error of an `int` envelope query on a type with large counts.
fn large_made(call: &str) -> Error {
    Error::new(
        ErrorClass::Type,
        format!(
            "{call}: the datatype was made by a large-count constructor; its arguments \
             include large counts, which {call}_c gives"
        ),
    )
}

/// `MPI_Type_get_contents`: the arguments of the constructor that made a
/// derived type. A derived type among them comes back as a new handle
/// the program frees (MPI 4.1 §5.1.13); a predefined one as itself.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents(
    t: *mut c_void,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    integers: *mut c_int,
    addresses: *mut isize,
    datatypes: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_get_contents", super::COMM_NULL, || {
        contents::<c_int>(
            "MPI_Type_get_contents",
            h(t),
            [
                max_integers.into(),
                max_addresses.into(),
                0,
                max_datatypes.into(),
            ],
            integers,
            addresses,
            std::ptr::null_mut(),
            datatypes,
        )
    })
}

/// `MPI_Type_get_contents_c`: as [`MPI_Type_get_contents`], with the
/// large counts, for a type of either kind of constructor.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_Type_get_contents_c(
    t: *mut c_void,
    max_integers: i64,
    max_addresses: i64,
    max_large_counts: i64,
    max_datatypes: i64,
    integers: *mut c_int,
    addresses: *mut isize,
    large_counts: *mut i64,
    datatypes: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_get_contents_c", super::COMM_NULL, || {
        contents::<i64>(
            "MPI_Type_get_contents_c",
            h(t),
            [max_integers, max_addresses, max_large_counts, max_datatypes],
            integers,
            addresses,
            large_counts,
            datatypes,
        )
    })
}

/// The body of both (`C` says which form): `max` the room of the
/// integers, addresses, large counts and datatypes arrays (the `int`
/// form has no large counts, and refuses a type that has some).
fn contents<C: CountElem>(
    call: &str,
    t: usize,
    max: [i64; 4],
    integers: *mut c_int,
    addresses: *mut isize,
    large_counts: *mut i64,
    datatypes: *mut *mut c_void,
) -> Result<()> {
    let ty = type_obj(t)?;
    let Some(e) = ty.env.clone() else {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{call} of a predefined datatype (MPI_COMBINER_NAMED)"),
        ));
    };
    if !C::LARGE && !e.large.is_empty() {
        return Err(large_made(call));
    }
    let room = |max: i64, need: usize, what: &str| {
        if (max.max(0) as usize) < need {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{what} is {max}, the datatype has {need}"),
            ));
        }
        Ok(())
    };
    room(max[0], e.ints.len(), "max_integers")?;
    room(max[1], e.addrs.len(), "max_addresses")?;
    room(max[2], e.large.len(), "max_large_counts")?;
    room(max[3], e.types.len(), "max_datatypes")?;
    super::array_mut(integers, e.ints.len(), "array_of_integers")?.copy_from_slice(&e.ints);
    super::array_mut(addresses, e.addrs.len(), "array_of_addresses")?.copy_from_slice(&e.addrs);
    super::array_mut(large_counts, e.large.len(), "array_of_large_counts")?
        .copy_from_slice(&e.large);
    let outs = super::array_mut(datatypes, e.types.len(), "array_of_datatypes")?;
    for (slot, (handle, obj)) in outs.iter_mut().zip(&e.types) {
        let hd = if obj.predefined {
            *handle
        } else {
            state().types.insert(obj.clone())
        };
        *slot = to_handle(hd);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_dup(old: *mut c_void, newtype: *mut *mut c_void) -> c_int {
    guard("MPI_Type_dup", super::COMM_NULL, || {
        let (oh, old) = (h(old), type_obj(h(old))?);
        let mut ty = (**old).clone();
        ty.predefined = false;
        let env = Envelope::new(combiner::DUP, vec![], vec![], &[(oh, &old)]);
        new_type(ty, env, newtype)?;
        // The attributes follow through their copy callbacks (MPI 4.1
        // §5.1.10); a failed one fails the call, the new type freed.
        let nh = h(read(newtype, "newtype")?);
        super::attr::type_dup_attrs(oh, nh).or_else(|e| {
            state().types.release(nh);
            super::attr::forget_held(nh);
            out(newtype, to_handle(DATATYPE_NULL), "newtype")?;
            Err(e)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_commit(t: *mut *mut c_void) -> c_int {
    guard("MPI_Type_commit", super::COMM_NULL, || {
        let handle = h(read(t, "datatype")?);
        if (0x200..0x300).contains(&handle) {
            type_obj(handle)?;
            return Ok(());
        }
        let mut st = state();
        let ty = st.types.get_mut(handle).ok_or_else(|| bad_type(handle))?;
        Arc::make_mut(ty).committed = true;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(t: *mut *mut c_void) -> c_int {
    guard("MPI_Type_free", super::COMM_NULL, || {
        let handle = h(read(t, "datatype")?);
        if (0x200..0x300).contains(&handle) {
            return Err(Error::new(
                ErrorClass::Type,
                "a predefined datatype cannot be freed",
            ));
        }
        type_obj(handle)?;
        // Its attributes' delete callbacks run while the handle is valid
        // (MPI 4.1 §7.7.5); a failed one is the call's error, the type
        // freed all the same.
        let deleted = super::attr::delete_held(handle, super::attr::Kind::Type);
        // Operations in flight hold their own reference (an `Arc`).
        state()
            .types
            .release(handle)
            .ok_or_else(|| bad_type(handle))?;
        super::attr::forget_held(handle);
        out(t, to_handle(DATATYPE_NULL), "datatype")?;
        deleted
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size(t: *mut c_void, size: *mut c_int) -> c_int {
    guard("MPI_Type_size", super::COMM_NULL, || {
        let ty = type_obj(h(t))?;
        let v = c_int::try_from(ty.size).unwrap_or(super::UNDEFINED);
        out(size, v, "size")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent(
    t: *mut c_void,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    guard("MPI_Type_get_extent", super::COMM_NULL, || {
        let ty = type_obj(h(t))?;
        out(lb, ty.lb, "lb")?;
        out(extent, ty.extent(), "extent")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent(
    t: *mut c_void,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    guard("MPI_Type_get_true_extent", super::COMM_NULL, || {
        let ty = type_obj(h(t))?;
        out(lb, ty.true_lb, "true_lb")?;
        out(extent, ty.true_ub - ty.true_lb, "true_extent")
    })
}

/// Names `MPI_Type_set_name` gave predefined types.
static PREDEFINED_NAMES: std::sync::Mutex<Vec<(usize, String)>> = std::sync::Mutex::new(Vec::new());

/// `MPI_Type_set_name`: a type's name (truncated to
/// `MPI_MAX_OBJECT_NAME` - 1 bytes), a predefined type's too.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_name(t: *mut c_void, name: *const c_char) -> c_int {
    guard("MPI_Type_set_name", super::COMM_NULL, || {
        let handle = h(t);
        let mut n = super::c_str(name, "type_name")?;
        while n.len() > 127 {
            n.pop();
        }
        if (0x200..0x300).contains(&handle) {
            // A predefined type may be renamed too (MPICH and Open MPI
            // allow it); its object is shared, so the name is kept aside.
            type_obj(handle)?;
            let mut names = super::lock(&PREDEFINED_NAMES);
            names.retain(|(h, _)| *h != handle);
            names.push((handle, n));
            return Ok(());
        }
        let mut st = state();
        let ty = st.types.get_mut(handle).ok_or_else(|| bad_type(handle))?;
        Arc::make_mut(ty).name = Some(Arc::from(n.as_str()));
        Ok(())
    })
}

/// `MPI_Type_get_name`: the name set, else a predefined type's own
/// (`MPI_INT`), else the empty string.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_name(
    t: *mut c_void,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_name", super::COMM_NULL, || {
        let handle = h(t);
        let ty = type_obj(handle)?;
        let set = super::lock(&PREDEFINED_NAMES)
            .iter()
            .find(|(h, _)| *h == handle)
            .map(|(_, n)| n.clone());
        let own = builtins()
            .iter()
            .find(|(bh, _, _)| *bh == handle)
            .map(|(_, n, _)| n.to_string());
        let text = set
            .or(own)
            .or_else(|| ty.name.as_deref().map(str::to_string))
            .unwrap_or_default();
        let n = super::put_str(name, 128, &text, "type_name")?;
        out(len, n, "resultlen")
    })
}

/// `MPI_Type_match_size`: the predefined type of `typeclass`
/// (`MPI_TYPECLASS_INTEGER`, `REAL`, `COMPLEX`) whose size is `size`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_match_size(
    typeclass: c_int,
    size: c_int,
    t: *mut *mut c_void,
) -> c_int {
    guard("MPI_Type_match_size", super::COMM_NULL, || {
        let handle = match (typeclass, size) {
            (TYPECLASS_INTEGER, 1) => 0x240,
            (TYPECLASS_INTEGER, 2) => 0x248,
            (TYPECLASS_INTEGER, 4) => 0x250,
            (TYPECLASS_INTEGER, 8) => 0x258,
            (TYPECLASS_REAL, 4) => 0x210,
            (TYPECLASS_REAL, 8) => 0x214,
            (TYPECLASS_REAL, 16) => 0x220,
            (TYPECLASS_COMPLEX, 8) => 0x212,
            (TYPECLASS_COMPLEX, 16) => 0x216,
            (TYPECLASS_COMPLEX, 32) => 0x224,
            _ => {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("no predefined type of class {typeclass} has {size} bytes"),
                ))
            }
        };
        out(t, to_handle(handle), "datatype")
    })
}

/// `MPI_TYPECLASS_*` (the MPI 5.0 ABI draft's values).
const TYPECLASS_REAL: c_int = 801;
const TYPECLASS_COMPLEX: c_int = 802;
const TYPECLASS_INTEGER: c_int = 803;

fn size_x(call: &str, t: *mut c_void, size: *mut i64) -> c_int {
    guard(call, super::COMM_NULL, || {
        out(size, type_obj(h(t))?.size as i64, "size")
    })
}

/// A datatype's (lower bound, extent), or its true ones, as `MPI_Count`s.
fn extent_x(call: &str, t: *mut c_void, lb: *mut i64, extent: *mut i64, truly: bool) -> c_int {
    guard(call, super::COMM_NULL, || {
        let ty = type_obj(h(t))?;
        let (l, e) = if truly {
            (ty.true_lb, ty.true_ub - ty.true_lb)
        } else {
            (ty.lb, ty.extent())
        };
        out(lb, l as i64, "lb")?;
        out(extent, e as i64, "extent")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_x(t: *mut c_void, size: *mut i64) -> c_int {
    size_x("MPI_Type_size_x", t, size)
}

/// `MPI_Type_size_c` (MPI 4.1 §19.2): as `MPI_Type_size_x`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_c(t: *mut c_void, size: *mut i64) -> c_int {
    size_x("MPI_Type_size_c", t, size)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_x(
    t: *mut c_void,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    extent_x("MPI_Type_get_extent_x", t, lb, extent, false)
}

/// `MPI_Type_get_extent_c`: as `MPI_Type_get_extent_x`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_c(
    t: *mut c_void,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    extent_x("MPI_Type_get_extent_c", t, lb, extent, false)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_x(
    t: *mut c_void,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    extent_x("MPI_Type_get_true_extent_x", t, lb, extent, true)
}

/// `MPI_Type_get_true_extent_c`: as `MPI_Type_get_true_extent_x`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_c(
    t: *mut c_void,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    extent_x("MPI_Type_get_true_extent_c", t, lb, extent, true)
}

/// `MPI_Aint_add`: `base + disp` as addresses (MPI 4.1 §5.1.5).
#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: isize, disp: isize) -> isize {
    base.wrapping_add(disp)
}

/// `MPI_Aint_diff`: `addr1 - addr2` as addresses.
#[no_mangle]
pub extern "C" fn MPI_Aint_diff(addr1: isize, addr2: isize) -> isize {
    addr1.wrapping_sub(addr2)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_address(location: *const c_void, address: *mut isize) -> c_int {
    guard("MPI_Get_address", super::COMM_NULL, || {
        out(address, location as isize, "address")
    })
}

/// A position or size argument's type: `int`, or `MPI_Count` in the `_c`
/// forms; a value that does not fit it is `MPI_ERR_COUNT`.
fn narrow<C: TryFrom<usize>>(v: usize, what: &str) -> Result<C> {
    C::try_from(v).map_err(|_| {
        Error::new(
            ErrorClass::Count,
            format!("{what} would be {v}, which does not fit its type"),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    t: *mut c_void,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    comm: *mut c_void,
) -> c_int {
    pack(
        "MPI_Pack", inbuf, incount, t, outbuf, outsize, position, comm,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_c(
    inbuf: *const c_void,
    incount: i64,
    t: *mut c_void,
    outbuf: *mut c_void,
    outsize: i64,
    position: *mut i64,
    comm: *mut c_void,
) -> c_int {
    pack(
        "MPI_Pack_c",
        inbuf,
        incount,
        t,
        outbuf,
        outsize,
        position,
        comm,
    )
}

/// `MPI_Pack(_c)` (`call`), generic over the count type.
#[allow(clippy::too_many_arguments)]
fn pack<C: CountElem + TryFrom<usize>>(
    call: &str,
    inbuf: *const c_void,
    incount: C,
    t: *mut c_void,
    outbuf: *mut c_void,
    outsize: C,
    position: *mut C,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        super::comm_obj(h(comm))?;
        let n = count(incount, "incount")?;
        let ty = committed(h(t))?;
        let pos = count(read(position, "position")?, "position")?;
        let cap = count(outsize, "outsize")?;
        // Checked before packing: a count too large for the buffer is a
        // truncation, not an allocation.
        let need = super::p2p::nbytes(n, &ty)?;
        if pos.checked_add(need).is_none_or(|end| end > cap) {
            return Err(Error::new(
                ErrorClass::Truncate,
                format!("{call} needs {need} bytes from position {pos}, but outsize is {cap}"),
            ));
        }
        let data = ty.pack(inbuf, n)?;
        let dst = super::bytes_mut(outbuf, cap)?;
        dst[pos..pos + data.len()].copy_from_slice(&data);
        out(position, narrow(pos + data.len(), "position")?, "position")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    t: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    unpack(
        "MPI_Unpack",
        inbuf,
        insize,
        position,
        outbuf,
        outcount,
        t,
        comm,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_c(
    inbuf: *const c_void,
    insize: i64,
    position: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    t: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    unpack(
        "MPI_Unpack_c",
        inbuf,
        insize,
        position,
        outbuf,
        outcount,
        t,
        comm,
    )
}

/// `MPI_Unpack(_c)` (`call`), generic over the count type.
#[allow(clippy::too_many_arguments)]
fn unpack<C: CountElem + TryFrom<usize>>(
    call: &str,
    inbuf: *const c_void,
    insize: C,
    position: *mut C,
    outbuf: *mut c_void,
    outcount: C,
    t: *mut c_void,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        super::comm_obj(h(comm))?;
        let n = count(outcount, "outcount")?;
        let ty = committed(h(t))?;
        let pos = count(read(position, "position")?, "position")?;
        let size = count(insize, "insize")?;
        let need = super::p2p::nbytes(n, &ty)?;
        if pos.checked_add(need).is_none_or(|end| end > size) {
            return Err(Error::new(
                ErrorClass::Truncate,
                format!("{call} needs {need} bytes from position {pos}, but insize is {size}"),
            ));
        }
        let src = bytes(inbuf, size)?;
        ty.unpack(&src[pos..pos + need], outbuf, n)?;
        out(position, narrow(pos + need, "position")?, "position")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size(
    incount: c_int,
    t: *mut c_void,
    comm: *mut c_void,
    size: *mut c_int,
) -> c_int {
    pack_size("MPI_Pack_size", incount, t, comm, size)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size_c(
    incount: i64,
    t: *mut c_void,
    comm: *mut c_void,
    size: *mut i64,
) -> c_int {
    pack_size("MPI_Pack_size_c", incount, t, comm, size)
}

/// `MPI_Pack_size(_c)` (`call`), generic over the count type: a size
/// past what it holds is `MPI_ERR_COUNT` ([`too_big`]).
fn pack_size<C: CountElem + TryFrom<usize>>(
    call: &str,
    incount: C,
    t: *mut c_void,
    comm: *mut c_void,
    size: *mut C,
) -> c_int {
    guard(call, h(comm), || {
        super::comm_obj(h(comm))?;
        let n = count(incount, "incount")?;
        let ty = type_obj(h(t))?;
        let v = narrow(super::p2p::nbytes(n, &ty)?, "size")?;
        out(size, v, "size")
    })
}

// ---- reduction operations ----------------------------------------------------

/// `MPI_User_function`.
pub(crate) type UserFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut *mut c_void);

/// `MPI_User_function_c` (`MPI_Op_create_c`): the length an `MPI_Count`.
pub(crate) type UserFnC =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut *mut c_void);

/// A user operation's function, of either form.
#[derive(Clone, Copy, Debug)]
pub(crate) enum UserFnOf {
    /// `MPI_Op_create`'s: an `int` length.
    Int(UserFn),
    /// `MPI_Op_create_c`'s: an `MPI_Count` length.
    Large(UserFnC),
}

/// An operation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum OpObj {
    /// A predefined one, by its handle value.
    Builtin(usize),
    /// `MPI_Op_create`. Contributions are always folded in rank order,
    /// which is right whether or not the operation commutes; the flag is
    /// kept for `MPI_Op_commutative`.
    User { f: UserFnOf, commute: bool },
}

pub(crate) const SUM: usize = 0x21;
pub(crate) const MIN: usize = 0x22;
pub(crate) const MAX: usize = 0x23;
pub(crate) const PROD: usize = 0x24;
pub(crate) const BAND: usize = 0x28;
pub(crate) const BOR: usize = 0x29;
pub(crate) const BXOR: usize = 0x2a;
pub(crate) const LAND: usize = 0x30;
pub(crate) const LOR: usize = 0x31;
pub(crate) const LXOR: usize = 0x32;
pub(crate) const MINLOC: usize = 0x38;
pub(crate) const MAXLOC: usize = 0x39;
pub(crate) const REPLACE: usize = 0x3c;
pub(crate) const NO_OP: usize = 0x3d;

/// The operation behind handle `o`.
pub(crate) fn op_obj(o: usize) -> Result<OpObj> {
    match o {
        SUM | MIN | MAX | PROD | BAND | BOR | BXOR | LAND | LOR | LXOR | MINLOC | MAXLOC
        | REPLACE | NO_OP => Ok(OpObj::Builtin(o)),
        _ => state().ops.get(o).map(|a| **a).ok_or_else(|| {
            Error::new(
                ErrorClass::Op,
                if o == OP_NULL {
                    "MPI_OP_NULL is not an operation".to_string()
                } else {
                    format!("{o:#x} is not a valid operation handle")
                },
            )
        }),
    }
}

fn op_name(o: usize) -> &'static str {
    match o {
        SUM => "MPI_SUM",
        MIN => "MPI_MIN",
        MAX => "MPI_MAX",
        PROD => "MPI_PROD",
        BAND => "MPI_BAND",
        BOR => "MPI_BOR",
        BXOR => "MPI_BXOR",
        LAND => "MPI_LAND",
        LOR => "MPI_LOR",
        LXOR => "MPI_LXOR",
        MINLOC => "MPI_MINLOC",
        MAXLOC => "MPI_MAXLOC",
        REPLACE => "MPI_REPLACE",
        _ => "MPI_NO_OP",
    }
}

/// Checks that predefined op `o` applies to elements of kind `p`.
pub(crate) fn check_op(o: usize, p: Prim) -> Result<()> {
    use Prim::*;
    let int = matches!(p, I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64);
    let float = matches!(p, F32 | F64 | F80);
    let complex = matches!(p, C32 | C64 | C80);
    let pair = matches!(
        p,
        FloatInt | DoubleInt | LongInt | TwoInt | ShortInt | LongDoubleInt
    );
    let ok = match o {
        SUM | PROD => int || float || complex,
        MIN | MAX => int || float,
        LAND | LOR | LXOR => int || p == Bool,
        BAND | BOR | BXOR => int || p == Byte,
        MINLOC | MAXLOC => pair,
        REPLACE | NO_OP => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorClass::Op,
            format!("{} is not defined for elements of kind {p:?}", op_name(o)),
        ))
    }
}

macro_rules! fold_num {
    ($t:ty, $o:expr, $a:expr, $b:expr) => {{
        let n = std::mem::size_of::<$t>();
        for (x, y) in $a.chunks_exact(n).zip($b.chunks_exact_mut(n)) {
            let i = <$t>::from_ne_bytes(x.try_into().expect("chunk size"));
            let io = <$t>::from_ne_bytes((&*y).try_into().expect("chunk size"));
            let r: $t = fold_one!($t, $o, i, io);
            y.copy_from_slice(&r.to_ne_bytes());
        }
    }};
}

macro_rules! fold_one {
    ($t:ty, $o:expr, $i:expr, $io:expr) => {
        match $o {
            SUM => Arith::add($i, $io),
            PROD => Arith::mul($i, $io),
            MIN => {
                if $i < $io {
                    $i
                } else {
                    $io
                }
            }
            MAX => {
                if $i > $io {
                    $i
                } else {
                    $io
                }
            }
            REPLACE => $i,
            _ => $io,
        }
    };
}

/// Wrapping arithmetic for integers, plain for floats (C's behaviour
/// for unsigned types; signed overflow is undefined in C, so any result
/// is allowed there).
trait Arith: Copy {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

macro_rules! arith_int {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
    )*};
}
arith_int!(i8, u8, i16, u16, i32, u32, i64, u64);

impl Arith for f32 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
}

impl Arith for f64 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
}

macro_rules! fold_int {
    ($t:ty, $o:expr, $a:expr, $b:expr) => {{
        match $o {
            LAND | LOR | LXOR | BAND | BOR | BXOR => {
                let n = std::mem::size_of::<$t>();
                for (x, y) in $a.chunks_exact(n).zip($b.chunks_exact_mut(n)) {
                    let i = <$t>::from_ne_bytes(x.try_into().expect("chunk size"));
                    let io = <$t>::from_ne_bytes((&*y).try_into().expect("chunk size"));
                    let r: $t = match $o {
                        LAND => ((i != 0) && (io != 0)) as $t,
                        LOR => ((i != 0) || (io != 0)) as $t,
                        LXOR => ((i != 0) != (io != 0)) as $t,
                        BAND => i & io,
                        BOR => i | io,
                        _ => i ^ io,
                    };
                    y.copy_from_slice(&r.to_ne_bytes());
                }
            }
            _ => fold_num!($t, $o, $a, $b),
        }
    }};
}

/// x87 80-bit extended (in 16 bytes) to f64.
fn f80_to_f64(b: &[u8]) -> f64 {
    let mant = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
    let se = u16::from_le_bytes(b[8..10].try_into().expect("2 bytes"));
    let sign = if se & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (se & 0x7fff) as i32;
    if exp == 0 && mant == 0 {
        return sign * 0.0;
    }
    if exp == 0x7fff {
        return if mant << 1 == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    sign * (mant as f64 / 9_223_372_036_854_775_808.0) * pow2(exp - 16383)
}

/// 2^e as an f64 (exact for every representable power, subnormals too).
fn pow2(e: i32) -> f64 {
    if e > 1023 {
        f64::INFINITY
    } else if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else if e >= -1074 {
        f64::from_bits(1u64 << (e + 1074))
    } else {
        0.0
    }
}

/// f64 to x87 80-bit extended (16 bytes, the padding zeroed).
fn f64_to_f80(v: f64, b: &mut [u8]) {
    let bits = v.to_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let e = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let (exp, mant) = if e == 0 && frac == 0 {
        (0u16, 0u64)
    } else if e == 0x7ff {
        (0x7fff, (1 << 63) | (frac << 11))
    } else if e == 0 {
        // Subnormal f64: normalise.
        let shift = frac.leading_zeros() - 11;
        let m = frac << (shift + 11);
        ((1 - 1023 - shift as i32 + 16383) as u16, m)
    } else {
        ((e - 1023 + 16383) as u16, (1 << 63) | (frac << 11))
    };
    b[0..8].copy_from_slice(&mant.to_le_bytes());
    b[8..10].copy_from_slice(&(sign | exp).to_le_bytes());
    for x in &mut b[10..16] {
        *x = 0;
    }
}

/// MINLOC / MAXLOC over packed pairs whose value is read by `val`.
fn fold_pairs<V: PartialOrd>(
    o: usize,
    p: Prim,
    vsize: usize,
    a: &[u8],
    b: &mut [u8],
    val: fn(&[u8]) -> V,
) {
    let n = p.size();
    for (x, y) in a.chunks_exact(n).zip(b.chunks_exact_mut(n)) {
        let (xv, yv) = (val(&x[..vsize]), val(&y[..vsize]));
        let xi = i32::from_ne_bytes(x[vsize..vsize + 4].try_into().expect("4 bytes"));
        let yi = i32::from_ne_bytes(y[vsize..vsize + 4].try_into().expect("4 bytes"));
        let take_x = if xv == yv {
            xi < yi
        } else if o == MINLOC {
            xv < yv
        } else {
            xv > yv
        };
        if take_x {
            y.copy_from_slice(x);
        }
    }
}

/// `inout[i] = in[i] op inout[i]` over packed elements of kind `p`
/// (predefined op `o`, already checked).
pub(crate) fn fold(o: usize, p: Prim, a: &[u8], b: &mut [u8]) {
    if o == NO_OP {
        return;
    }
    if o == REPLACE {
        b.copy_from_slice(a);
        return;
    }
    match p {
        Prim::I8 => fold_int!(i8, o, a, b),
        Prim::U8 | Prim::Byte | Prim::Packed => fold_int!(u8, o, a, b),
        Prim::Bool => fold_int!(u8, o, a, b),
        Prim::I16 => fold_int!(i16, o, a, b),
        Prim::U16 => fold_int!(u16, o, a, b),
        Prim::I32 => fold_int!(i32, o, a, b),
        Prim::U32 => fold_int!(u32, o, a, b),
        Prim::I64 => fold_int!(i64, o, a, b),
        Prim::U64 => fold_int!(u64, o, a, b),
        Prim::F32 => fold_num!(f32, o, a, b),
        Prim::F64 => fold_num!(f64, o, a, b),
        Prim::F80 => {
            for (x, y) in a.chunks_exact(16).zip(b.chunks_exact_mut(16)) {
                let (i, io) = (f80_to_f64(x), f80_to_f64(y));
                let r = fold_one!(f64, o, i, io);
                f64_to_f80(r, y);
            }
        }
        Prim::FloatInt => fold_pairs(o, p, 4, a, b, |v| {
            f32::from_ne_bytes(v.try_into().expect("4 bytes")) as f64
        }),
        Prim::DoubleInt => fold_pairs(o, p, 8, a, b, |v| {
            f64::from_ne_bytes(v.try_into().expect("8 bytes"))
        }),
        Prim::LongInt => fold_pairs(o, p, 8, a, b, |v| {
            i64::from_ne_bytes(v.try_into().expect("8 bytes"))
        }),
        Prim::TwoInt => fold_pairs(o, p, 4, a, b, |v| {
            i32::from_ne_bytes(v.try_into().expect("4 bytes"))
        }),
        Prim::ShortInt => fold_pairs(o, p, 2, a, b, |v| {
            i16::from_ne_bytes(v.try_into().expect("2 bytes"))
        }),
        Prim::LongDoubleInt => fold_pairs(o, p, 16, a, b, f80_to_f64),
        Prim::C32 => fold_complex(
            o,
            4,
            a,
            b,
            |v| f32::from_ne_bytes(v.try_into().expect("4 bytes")) as f64,
            |x, v| v.copy_from_slice(&(x as f32).to_ne_bytes()),
        ),
        Prim::C64 => fold_complex(
            o,
            8,
            a,
            b,
            |v| f64::from_ne_bytes(v.try_into().expect("8 bytes")),
            |x, v| v.copy_from_slice(&x.to_ne_bytes()),
        ),
        Prim::C80 => fold_complex(o, 16, a, b, f80_to_f64, f64_to_f80),
    }
}

/// `b = a op b` for complex elements (`SUM` or `PROD`, the operations
/// `check_op` lets through) whose parts are `part` bytes, read and
/// written through `get` / `put`. The arithmetic is in `f64`, as the
/// real `long double` reductions' is.
fn fold_complex(
    o: usize,
    part: usize,
    a: &[u8],
    b: &mut [u8],
    get: impl Fn(&[u8]) -> f64,
    put: impl Fn(f64, &mut [u8]),
) {
    for (x, y) in a.chunks_exact(2 * part).zip(b.chunks_exact_mut(2 * part)) {
        let (ar, ai) = (get(&x[..part]), get(&x[part..]));
        let (br, bi) = (get(&y[..part]), get(&y[part..]));
        let (r, i) = if o == PROD {
            (ar * br - ai * bi, ar * bi + ai * br)
        } else {
            (ar + br, ai + bi)
        };
        put(r, &mut y[..part]);
        put(i, &mut y[part..]);
    }
}

/// What a reduction needs to know: the op, the datatype (handle and
/// object) and the element count per call of the user function.
#[derive(Clone)]
pub(crate) struct Reduction {
    pub(crate) op: OpObj,
    pub(crate) ty: Arc<TypeObj>,
    pub(crate) ty_handle: usize,
    pub(crate) count: usize,
}

impl Reduction {
    /// Checks the op against the datatype.
    pub(crate) fn new(op_h: usize, ty_h: usize, count: usize) -> Result<Reduction> {
        let op = op_obj(op_h)?;
        let ty = committed(ty_h)?;
        if let OpObj::Builtin(o) = op {
            match ty.sig {
                Some((p, _)) => check_op(o, p)?,
                None => {
                    return Err(Error::new(
                        ErrorClass::Op,
                        format!(
                            "{} needs a datatype made of one kind of basic element",
                            op_name(o)
                        ),
                    ))
                }
            }
        }
        Ok(Reduction {
            op,
            ty: ty.arc(),
            ty_handle: ty_h,
            count,
        })
    }

    /// [`new`](Self::new) for a collective reduction: `MPI_REPLACE` and
    /// `MPI_NO_OP` are for one-sided accumulates only (MPI 4.1 §6.9.2).
    pub(crate) fn for_collective(op_h: usize, ty_h: usize, count: usize) -> Result<Reduction> {
        if let o @ (REPLACE | NO_OP) = op_h {
            return Err(Error::new(
                ErrorClass::Op,
                format!(
                    "{} is an operation of one-sided accumulates only, not of collectives",
                    op_name(o)
                ),
            ));
        }
        Reduction::new(op_h, ty_h, count)
    }

    /// Folds the packed contributions of ranks `0..=hi` in rank order:
    /// `c_0 op (c_1 op (... op c_hi))`, `in` always from the lower rank
    /// (right for non-commutative operations).
    pub(crate) fn fold_ranks<'a>(
        &self,
        part: impl Fn(usize) -> &'a [u8],
        hi: usize,
    ) -> Result<Vec<u8>> {
        let mut acc = part(hi).to_vec();
        for k in (0..hi).rev() {
            self.apply(part(k), &mut acc)?;
        }
        Ok(acc)
    }

    /// `inout = in op inout` over `count` packed instances.
    pub(crate) fn apply(&self, input: &[u8], inout: &mut [u8]) -> Result<()> {
        match self.op {
            OpObj::Builtin(o) => {
                let (p, _) = self.ty.sig.expect("checked in new");
                fold(o, p, input, inout);
                Ok(())
            }
            OpObj::User { f, .. } => {
                let n = self.count;
                let ext = self.ty.extent();
                // The user function sees the datatype's own layout: unpack
                // both sides into scratch buffers covering every byte the
                // `n` instances touch ([lo, hi) from the buffer address,
                // whatever the signs of lb and extent), 16-byte aligned as
                // the C function may read doubles or long doubles there.
                // The scratch spans fit an `isize`: a large count (the
                // `_c` collectives) is checked, not wrapped.
                let span = || {
                    let last = isize::try_from(n.max(1) - 1).ok()?.checked_mul(ext)?;
                    let lo = self.ty.true_lb.min(self.ty.true_lb.checked_add(last)?);
                    let hi = self.ty.true_ub.max(self.ty.true_ub.checked_add(last)?);
                    Some((lo, hi.checked_sub(lo)?))
                };
                let (lo, len) = span().ok_or_else(too_big)?;
                let words = (len.max(1) as usize).div_ceil(16) * 2 + 2;
                let mut a = vec![0u64; words];
                let mut b = vec![0u64; words];
                let abase = a
                    .as_mut_ptr()
                    .cast::<u8>()
                    .wrapping_offset(-lo)
                    .cast::<c_void>();
                let bbase = b
                    .as_mut_ptr()
                    .cast::<u8>()
                    .wrapping_offset(-lo)
                    .cast::<c_void>();
                self.ty.unpack(input, abase, n)?;
                self.ty.unpack(inout, bbase, n)?;
                let mut t = to_handle::<c_void>(self.ty_handle);
                // An `int` length: a large count (the `_c` collectives)
                // goes in runs of at most INT_MAX instances. An
                // `MPI_Count` one takes them all at once.
                let most = match f {
                    UserFnOf::Int(_) => c_int::MAX as usize,
                    UserFnOf::Large(_) => usize::MAX,
                };
                let mut at = 0usize;
                loop {
                    let run = (n - at).min(most);
                    let off = at as isize * ext;
                    let (a, b) = (
                        abase.wrapping_byte_offset(off),
                        bbase.wrapping_byte_offset(off),
                    );
                    match f {
                        UserFnOf::Int(f) => {
                            let mut len = run as c_int;
                            // SAFETY: `f` is the program's MPI_User_function;
                            // both buffers hold `n` instances of the datatype
                            // in its own layout (unpacked above), and this
                            // run's `run` instances start `off` bytes past
                            // their bases, as MPI promises a user function.
                            unsafe { f(a, b, &mut len, &mut t) };
                        }
                        UserFnOf::Large(f) => {
                            let mut len = run as i64;
                            // SAFETY: as above, for MPI_User_function_c.
                            unsafe { f(a, b, &mut len, &mut t) };
                        }
                    }
                    at += run;
                    if at >= n {
                        break;
                    }
                }
                let packed = self.ty.pack(bbase, n)?;
                inout.copy_from_slice(&packed);
                Ok(())
            }
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create(
    f: Option<UserFn>,
    commute: c_int,
    op: *mut *mut c_void,
) -> c_int {
    guard("MPI_Op_create", super::COMM_NULL, || {
        let f = f.ok_or_else(|| super::arg("user_fn"))?;
        if op.is_null() {
            return Err(super::arg("op"));
        }
        let handle = state().ops.insert(Arc::new(OpObj::User {
            f: UserFnOf::Int(f),
            commute: commute != 0,
        }));
        out(op, to_handle(handle), "op")
    })
}

/// `MPI_Op_create_c` (MPI 4.1 §19.2): a user operation whose function
/// takes an `MPI_Count` length (`MPI_User_function_c`).
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create_c(
    f: Option<UserFnC>,
    commute: c_int,
    op: *mut *mut c_void,
) -> c_int {
    guard("MPI_Op_create_c", super::COMM_NULL, || {
        let f = f.ok_or_else(|| super::arg("user_fn"))?;
        if op.is_null() {
            return Err(super::arg("op"));
        }
        let handle = state().ops.insert(Arc::new(OpObj::User {
            f: UserFnOf::Large(f),
            commute: commute != 0,
        }));
        out(op, to_handle(handle), "op")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_commutative(op: *mut c_void, commute: *mut c_int) -> c_int {
    guard("MPI_Op_commutative", super::COMM_NULL, || {
        let c = match op_obj(h(op))? {
            // Every predefined operation commutes (MPI 4.1 §6.9.2).
            OpObj::Builtin(_) => true,
            OpObj::User { commute, .. } => commute,
        };
        out(commute, c as c_int, "commute")
    })
}

/// `MPI_Reduce_local`: `inoutbuf = inbuf op inoutbuf`, element by
/// element, in this process (MPI 4.1 §6.9.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    op: *mut c_void,
) -> c_int {
    reduce_local_call::<c_int>("MPI_Reduce_local", inbuf, inoutbuf, n, t, op)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local_c(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    n: i64,
    t: *mut c_void,
    op: *mut c_void,
) -> c_int {
    reduce_local_call::<i64>("MPI_Reduce_local_c", inbuf, inoutbuf, n, t, op)
}

/// `MPI_Reduce_local(_c)` (`call`), generic over the count type of the two forms.
fn reduce_local_call<C: CountElem>(
    call: &'static str,
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    n: C,
    t: *mut c_void,
    op: *mut c_void,
) -> c_int {
    guard(call, super::COMM_NULL, || {
        let n = count(n, "count")?;
        let red = Reduction::for_collective(h(op), h(t), n)?;
        if n == 0 || red.ty.size == 0 {
            return Ok(());
        }
        if inbuf.is_null() || inoutbuf.is_null() {
            return Err(super::arg(if inbuf.is_null() {
                "inbuf"
            } else {
                "inoutbuf"
            }));
        }
        let input = red.ty.pack(inbuf, n)?;
        let mut io = red.ty.pack(inoutbuf, n)?;
        red.apply(&input, &mut io)?;
        red.ty.unpack(&io, inoutbuf, n).map(|_| ())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut *mut c_void) -> c_int {
    guard("MPI_Op_free", super::COMM_NULL, || {
        let o = h(read(op, "op")?);
        let mut st = state();
        let ops: &mut Table<Arc<OpObj>> = &mut st.ops;
        ops.release(o).ok_or_else(|| {
            Error::new(
                ErrorClass::Op,
                format!("{o:#x} is not an operation made by MPI_Op_create"),
            )
        })?;
        drop(st);
        out(op, to_handle(OP_NULL), "op")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_sizes_agree_with_the_type_table() {
        for (h, name, ty) in builtins() {
            let simple = ty.blocks.len() == 1 && ty.extent() == ty.size as isize;
            assert_eq!(simple_size(*h), simple.then_some(ty.size), "{name}");
        }
    }

    #[test]
    fn long_double_round_trips_through_f64() {
        for v in [0.0, 1.0, -2.5, 1e300, 3.25e-310, 123456789.0] {
            let mut b = [0u8; 16];
            f64_to_f80(v, &mut b);
            assert_eq!(f80_to_f64(&b), v, "{v}");
        }
    }

    #[test]
    fn vector_type_has_the_standard_extent_and_runs() {
        let int = type_obj(0x209).unwrap();
        let parts: Vec<_> = (0..3).map(|i| (i * 3 * 4, 2, &**int)).collect();
        let t = compose(&parts, false).unwrap();
        assert_eq!(t.size, 24);
        assert_eq!((t.lb, t.ub), (0, 32));
        assert_eq!(t.blocks, vec![(0, 8), (12, 8), (24, 8)]);
        assert_eq!(t.sig, Some((Prim::I32, 6)));
    }

    #[test]
    fn a_dense_type_repeated_past_the_piece_limit_is_one_run() {
        // 2^26 + 1 ints: one run (it was refused as 2^26 + 1 pieces), and
        // built without a loop per instance.
        let int = type_obj(0x209).unwrap();
        let n = MAX_RUNS + 1;
        let t = compose(&[(0, n, &**int)], false).unwrap();
        assert_eq!(t.blocks, vec![(0, 4 * n)]);
        assert_eq!(
            (t.size, t.extent(), t.sig),
            (4 * n, 4 * n as isize, Some((Prim::I32, n)))
        );
        // Of that: still one run, across parts that meet.
        let twice = compose(&[(0, 2, &t)], false).unwrap();
        assert_eq!(twice.blocks, vec![(0, 8 * n)]);
        // Gaps between the instances: one piece each, bounded.
        let spaced = compose(&[(0, 1, &**int), (8, 1, &**int)], false).unwrap();
        assert_eq!(spaced.blocks.len(), 2);
        let e = compose(&[(0, MAX_RUNS / 2 + 1, &spaced)], false).unwrap_err();
        assert_eq!(e.class(), ErrorClass::NoMem, "{e}");
        // Mixed kinds keep an element size each: bounded too.
        let d = type_obj(0x214).unwrap();
        let mixed = compose(&[(0, 1, &**int), (4, 1, &**d)], true).unwrap();
        let e = compose(&[(0, MAX_RUNS / 2 + 1, &mixed)], false).unwrap_err();
        assert_eq!(e.class(), ErrorClass::NoMem, "{e}");
    }

    #[test]
    fn struct_extent_is_rounded_to_the_alignment() {
        let d = type_obj(0x214).unwrap();
        let c = type_obj(0x243).unwrap();
        let t = compose(&[(0, 1, &**d), (8, 1, &**c)], true).unwrap();
        assert_eq!((t.size, t.extent()), (9, 16));
        assert_eq!(t.sig, None);
    }

    #[test]
    fn minloc_keeps_the_lower_index_on_ties() {
        let mut a = Vec::new();
        a.extend_from_slice(&5i32.to_ne_bytes());
        a.extend_from_slice(&1i32.to_ne_bytes());
        let mut b = Vec::new();
        b.extend_from_slice(&5i32.to_ne_bytes());
        b.extend_from_slice(&3i32.to_ne_bytes());
        fold(MINLOC, Prim::TwoInt, &a, &mut b);
        assert_eq!(b, a);
    }
}
