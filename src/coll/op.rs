//! Reduction operations (MPI 4.1 §6.9): the predefined ones over the
//! builtin types, value-index pairs for `MINLOC` / `MAXLOC`, and user
//! operations from Rust closures.
//!
//! Every operation computes `inout[i] = in[i] op inout[i]`, as MPI's user
//! functions do, with `in` from the lower rank when the order matters.

use crate::datatype::{Scalar, ValueIndex};
use crate::error::{Error, ErrorClass, Result};
use std::any::Any;
use std::sync::Arc;

/// A reduction operation (`MPI_Op`).
#[derive(Clone)]
pub enum Op {
    /// `MPI_SUM`.
    Sum,
    /// `MPI_PROD`.
    Prod,
    /// `MPI_MIN`.
    Min,
    /// `MPI_MAX`.
    Max,
    /// `MPI_LAND` (integers: nonzero is true; the result is 0 or 1).
    Land,
    /// `MPI_LOR`.
    Lor,
    /// `MPI_LXOR`.
    Lxor,
    /// `MPI_BAND` (integers).
    Band,
    /// `MPI_BOR`.
    Bor,
    /// `MPI_BXOR`.
    Bxor,
    /// `MPI_MINLOC` ([`ValueIndex`] pairs: the smallest value, and the
    /// smallest index among equal values).
    MinLoc,
    /// `MPI_MAXLOC`.
    MaxLoc,
    /// A user operation (`MPI_Op_create`).
    User(UserOp),
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::User(u) => write!(f, "User(commute: {})", u.commute),
            o => f.write_str(o.name()),
        }
    }
}

/// A user operation over one element type.
#[derive(Clone)]
pub struct UserOp {
    f: Arc<dyn Any + Send + Sync>,
    commute: bool,
    type_name: &'static str,
}

impl std::fmt::Debug for UserOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UserOp({}, commute: {})", self.type_name, self.commute)
    }
}

type UserFn<T> = Arc<dyn Fn(&[T], &mut [T]) + Send + Sync>;

impl Op {
    /// A user operation on elements of type `T` (`MPI_Op_create`):
    /// `f(in, inout)` must set `inout[i] = in[i] op inout[i]`. A
    /// non-commutative one (`commute = false`) is applied in rank order
    /// (MPI 4.1 §6.9.5): `in` always holds the lower ranks' part.
    pub fn user<T: Scalar>(
        commute: bool,
        f: impl Fn(&[T], &mut [T]) + Send + Sync + 'static,
    ) -> Op {
        let f: UserFn<T> = Arc::new(f);
        Op::User(UserOp {
            f: Arc::new(f),
            commute,
            type_name: T::MPI_NAME,
        })
    }

    /// Whether the operation is commutative (every predefined one is).
    pub fn commutes(&self) -> bool {
        match self {
            Op::User(u) => u.commute,
            _ => true,
        }
    }

    /// The MPI name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Sum => "MPI_SUM",
            Op::Prod => "MPI_PROD",
            Op::Min => "MPI_MIN",
            Op::Max => "MPI_MAX",
            Op::Land => "MPI_LAND",
            Op::Lor => "MPI_LOR",
            Op::Lxor => "MPI_LXOR",
            Op::Band => "MPI_BAND",
            Op::Bor => "MPI_BOR",
            Op::Bxor => "MPI_BXOR",
            Op::MinLoc => "MPI_MINLOC",
            Op::MaxLoc => "MPI_MAXLOC",
            Op::User(_) => "a user operation",
        }
    }

    /// Checks that the operation applies to `T`.
    ///
    /// # Errors
    /// `Op` for a combination MPI does not define (bitwise or logical ops
    /// on floating point, `MINLOC` on a plain value, arithmetic on pairs)
    /// or a user operation made for another type.
    pub fn check<T: Reducible>(&self) -> Result<()> {
        if let Op::User(u) = self {
            if u.f.downcast_ref::<UserFn<T>>().is_none() {
                return Err(Error::new(
                    ErrorClass::Op,
                    format!(
                        "this user operation was created for {}, not {}",
                        u.type_name,
                        T::MPI_NAME
                    ),
                ));
            }
            return Ok(());
        }
        if T::supports(self) {
            Ok(())
        } else {
            Err(Error::new(
                ErrorClass::Op,
                format!("{} is not defined for {}", self.name(), T::MPI_NAME),
            ))
        }
    }

    /// `inout[i] = input[i] op inout[i]`, after [`check`](Self::check).
    pub fn apply<T: Reducible>(&self, input: &[T], inout: &mut [T]) {
        debug_assert_eq!(input.len(), inout.len());
        match self {
            Op::User(u) => {
                let f =
                    u.f.downcast_ref::<UserFn<T>>()
                        .expect("checked by Op::check");
                f(input, inout)
            }
            op => T::apply(op, input, inout),
        }
    }
}

/// A type the predefined operations apply to. Sealed through `Scalar`.
pub trait Reducible: Scalar {
    /// Whether predefined `op` is defined for this type.
    fn supports(op: &Op) -> bool;
    /// Applies predefined `op` (one that [`supports`](Self::supports)).
    fn apply(op: &Op, input: &[Self], inout: &mut [Self]);
}

fn zip<T: Copy>(a: &[T], b: &mut [T], f: impl Fn(T, T) -> T) {
    for (x, y) in a.iter().zip(b.iter_mut()) {
        *y = f(*x, *y);
    }
}

macro_rules! int_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn supports(op: &Op) -> bool {
                !matches!(op, Op::MinLoc | Op::MaxLoc)
            }
            fn apply(op: &Op, a: &[Self], b: &mut [Self]) {
                match op {
                    Op::Sum => zip(a, b, |x, y| x.wrapping_add(y)),
                    Op::Prod => zip(a, b, |x, y| x.wrapping_mul(y)),
                    Op::Min => zip(a, b, |x, y| x.min(y)),
                    Op::Max => zip(a, b, |x, y| x.max(y)),
                    Op::Land => zip(a, b, |x, y| Self::from(x != 0 && y != 0)),
                    Op::Lor => zip(a, b, |x, y| Self::from(x != 0 || y != 0)),
                    Op::Lxor => zip(a, b, |x, y| Self::from((x != 0) != (y != 0))),
                    Op::Band => zip(a, b, |x, y| x & y),
                    Op::Bor => zip(a, b, |x, y| x | y),
                    Op::Bxor => zip(a, b, |x, y| x ^ y),
                    _ => unreachable!("checked by Op::check"),
                }
            }
        }
    )*};
}

int_reducible!(u8, i8, u16, i16, u32, i32, u64, i64, usize, isize);

macro_rules! float_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn supports(op: &Op) -> bool {
                matches!(op, Op::Sum | Op::Prod | Op::Min | Op::Max)
            }
            fn apply(op: &Op, a: &[Self], b: &mut [Self]) {
                match op {
                    Op::Sum => zip(a, b, |x, y| x + y),
                    Op::Prod => zip(a, b, |x, y| x * y),
                    Op::Min => zip(a, b, |x, y| x.min(y)),
                    Op::Max => zip(a, b, |x, y| x.max(y)),
                    _ => unreachable!("checked by Op::check"),
                }
            }
        }
    )*};
}

float_reducible!(f32, f64);

macro_rules! pair_reducible {
    ($($v:ty, $i:ty);*) => {$(
        impl Reducible for ValueIndex<$v, $i> {
            fn supports(op: &Op) -> bool {
                matches!(op, Op::MinLoc | Op::MaxLoc)
            }
            fn apply(op: &Op, a: &[Self], b: &mut [Self]) {
                let min = matches!(op, Op::MinLoc);
                zip(a, b, |x, y| {
                    if x.value == y.value {
                        ValueIndex { value: x.value, index: x.index.min(y.index) }
                    } else if (x.value < y.value) == min {
                        x
                    } else {
                        y
                    }
                })
            }
        }
    )*};
}

pair_reducible!(f32, i32; i32, i32; f64, i64; i64, i64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_ops_compute_as_mpi_says() {
        let mut b = [5i32, 0, -3, 6];
        Op::Sum.apply(&[1, 2, 3, 4], &mut b);
        assert_eq!(b, [6, 2, 0, 10]);
        let mut b = [1u8, 0, 1, 0];
        Op::Lxor.apply(&[1, 1, 0, 0], &mut b);
        assert_eq!(b, [0, 1, 1, 0]);
        let mut b = [0b1100u16];
        Op::Band.apply(&[0b1010], &mut b);
        assert_eq!(b, [0b1000]);
        let mut b = [2.5f64, -1.0];
        Op::Max.apply(&[1.0, 3.0], &mut b);
        assert_eq!(b, [2.5, 3.0]);
        let p = |value, index| ValueIndex::<f64, i64> { value, index };
        let mut b = [p(1.0, 4), p(2.0, 1), p(3.0, 0)];
        Op::MinLoc.apply(&[p(1.0, 2), p(5.0, 0), p(0.5, 9)], &mut b);
        assert_eq!(b, [p(1.0, 2), p(2.0, 1), p(0.5, 9)]);
        Op::MaxLoc.apply(&[p(1.0, 7), p(5.0, 3), p(0.5, 9)], &mut b);
        assert_eq!(b, [p(1.0, 2), p(5.0, 3), p(0.5, 9)]);
    }

    #[test]
    fn undefined_combinations_are_op_errors() {
        assert_eq!(Op::Band.check::<f64>().unwrap_err().class(), ErrorClass::Op);
        assert_eq!(Op::Land.check::<f32>().unwrap_err().class(), ErrorClass::Op);
        assert_eq!(
            Op::MinLoc.check::<i32>().unwrap_err().class(),
            ErrorClass::Op
        );
        assert_eq!(
            Op::Sum.check::<ValueIndex<f32, i32>>().unwrap_err().class(),
            ErrorClass::Op
        );
        let u = Op::user::<f64>(true, |a, b| zip(a, b, |x, y| x + y));
        assert!(u.check::<f64>().is_ok());
        assert_eq!(u.check::<i32>().unwrap_err().class(), ErrorClass::Op);
        assert!(
            Op::Sum.check::<u64>().is_ok() && Op::MaxLoc.check::<ValueIndex<i32, i32>>().is_ok()
        );
    }
}
