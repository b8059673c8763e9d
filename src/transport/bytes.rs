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
