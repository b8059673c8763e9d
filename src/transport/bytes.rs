//! Byte views of typed message buffers, argued sound once here so that the
//! layers above stay free of `unsafe`.

use crate::datatype::Scalar;

/// The bytes of a slice of scalars.
#[inline]
pub fn as_bytes<T: Scalar>(s: &[T]) -> &[u8] {
    // SAFETY: `Scalar` is sealed and implemented only for primitive
    // integers and floats: no padding, so every byte is initialised; the
    // length in bytes is exactly `size_of_val(s)` and u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// The bytes of a mutable slice of scalars, to be filled from a message.
#[inline]
pub fn as_bytes_mut<T: Scalar>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; in addition every bit pattern is a valid
    // value of each `Scalar` type, so any bytes written leave valid `T`s.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// `n` elements of `T` over a reusable `u64` buffer (grown as needed, its
/// contents unspecified but valid): scratch space that keeps large
/// collectives from allocating, and so page-faulting, on every call.
pub fn scratch<T: Scalar>(buf: &mut Vec<u64>, n: usize) -> &mut [T] {
    const { assert!(core::mem::align_of::<T>() <= core::mem::align_of::<u64>()) };
    let words = (n * core::mem::size_of::<T>()).div_ceil(8);
    if buf.len() < words {
        buf.resize(words, 0);
    }
    // SAFETY: the buffer holds at least `n * size_of::<T>()` initialised
    // bytes, aligned to 8 (`u64`), which is at least `T`'s alignment
    // (checked at compile time); `Scalar` types have no padding and every
    // bit pattern is a valid value; the slice borrows `buf` mutably.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<T>(), n) }
}
