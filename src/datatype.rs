//! Predefined datatypes: the Rust scalar types that messages carry.
//!
//! Layer L0. [`Scalar`] is sealed: it is implemented only for the builtin
//! integer and floating-point types, which have no padding and for which
//! every bit pattern is a valid value, so a buffer of them may be viewed
//! as bytes and filled from bytes (`transport::bytes` relies on this).
#![forbid(unsafe_code)]

mod sealed {
    pub trait Sealed {}
}

/// A builtin numeric type that can travel in a message (`MPI_INT`,
/// `MPI_DOUBLE`, ...). Sealed.
pub trait Scalar: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The MPI name of the matching predefined datatype.
    const MPI_NAME: &'static str;
}

macro_rules! scalar {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const MPI_NAME: &'static str = $name;
        }
    )*};
}

scalar! {
    u8 => "MPI_UINT8_T", i8 => "MPI_INT8_T",
    u16 => "MPI_UINT16_T", i16 => "MPI_INT16_T",
    u32 => "MPI_UINT32_T", i32 => "MPI_INT32_T",
    u64 => "MPI_UINT64_T", i64 => "MPI_INT64_T",
    usize => "MPI_AINT", isize => "MPI_AINT",
    f32 => "MPI_FLOAT", f64 => "MPI_DOUBLE",
}

/// A value and an index, for `MINLOC` / `MAXLOC` (`MPI_FLOAT_INT`,
/// `MPI_2INT`, ...). `#[repr(C)]` with an index as wide as the value, so
/// there is no padding and every bit pattern is valid (MPI's
/// `MPI_DOUBLE_INT` has padding in C; the C ABI converts).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ValueIndex<V, I> {
    /// The value compared.
    pub value: V,
    /// The index carried along (usually a rank).
    pub index: I,
}

macro_rules! value_index {
    ($($v:ty, $i:ty => $name:literal),* $(,)?) => {$(
        impl sealed::Sealed for ValueIndex<$v, $i> {}
        impl Scalar for ValueIndex<$v, $i> {
            const MPI_NAME: &'static str = $name;
        }
    )*};
}

value_index! {
    f32, i32 => "MPI_FLOAT_INT",
    i32, i32 => "MPI_2INT",
    f64, i64 => "MPI_DOUBLE_INT (64-bit index)",
    i64, i64 => "MPI_LONG_INT (64-bit index)",
}

const _: () = {
    assert!(core::mem::size_of::<ValueIndex<f32, i32>>() == 8);
    assert!(core::mem::size_of::<ValueIndex<f64, i64>>() == 16);
};
