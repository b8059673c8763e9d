//! MPI error classes and the crate's error type.
//!
//! Layer L0: imports nothing in the crate. Every fallible public call returns
//! [`Result`], whose error carries an [`ErrorClass`] (the MPI class without
//! the `MPI_ERR_` prefix) and a message that names the bad value.
#![forbid(unsafe_code)]

use std::fmt;

/// One variant per MPI error class (MPI 4.1, section 9.4, table 9.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// `MPI_ERR_BUFFER`: invalid buffer pointer.
    Buffer,
    /// `MPI_ERR_COUNT`: invalid count argument.
    Count,
    /// `MPI_ERR_TYPE`: invalid datatype.
    Type,
    /// `MPI_ERR_TAG`: invalid tag.
    Tag,
    /// `MPI_ERR_COMM`: invalid communicator.
    Comm,
    /// `MPI_ERR_RANK`: invalid rank.
    Rank,
    /// `MPI_ERR_REQUEST`: invalid request.
    Request,
    /// `MPI_ERR_ROOT`: invalid root.
    Root,
    /// `MPI_ERR_GROUP`: invalid group.
    Group,
    /// `MPI_ERR_OP`: invalid operation.
    Op,
    /// `MPI_ERR_ARG`: invalid argument of some other kind.
    Arg,
    /// `MPI_ERR_TRUNCATE`: message truncated on receive.
    Truncate,
    /// `MPI_ERR_INTERN`: internal error in the implementation.
    Intern,
    /// `MPI_ERR_IN_STATUS`: error code is in status.
    InStatus,
    /// `MPI_ERR_PENDING`: pending request.
    Pending,
    /// `MPI_ERR_NO_MEM`: out of memory.
    NoMem,
    /// `MPI_ERR_PORT`: invalid port name.
    Port,
    /// `MPI_ERR_PROC_ABORTED`: a peer process aborted or died.
    ProcAborted,
    /// `MPI_ERR_OTHER`: known error not in this list.
    Other,
    /// `MPI_ERR_UNKNOWN`: unknown error.
    Unknown,
    /// `MPI_ERR_KEYVAL`: invalid attribute key.
    Keyval,
    /// `MPI_ERR_INFO`: invalid info object.
    Info,
    /// `MPI_ERR_INFO_KEY`: an info key longer than `MPI_MAX_INFO_KEY`.
    InfoKey,
    /// `MPI_ERR_INFO_VALUE`: an info value longer than `MPI_MAX_INFO_VAL`.
    InfoValue,
    /// `MPI_ERR_INFO_NOKEY`: the key is not in the info object.
    InfoNoKey,
    /// `MPI_ERR_ERRHANDLER`: invalid error handler.
    Errhandler,
    /// `MPI_ERR_NOT_SAME`: the processes of a collective call disagree.
    NotSame,
    /// `MPI_ERR_UNSUPPORTED_OPERATION`: not supported by this library.
    Unsupported,
    /// `MPI_ERR_NAME`: a service name not published (or already).
    Name,
    /// `MPI_ERR_RMA_RANGE`: a window access outside the target's memory.
    RmaRange,
    /// `MPI_ERR_RMA_SYNC`: a window access outside an access epoch.
    RmaSync,
    /// `MPI_ERR_RMA_ATTACH`: memory that cannot be attached to (or is not
    /// attached to) a dynamic window.
    RmaAttach,
    /// `MPI_ERR_RMA_FLAVOR`: a call the window's flavor does not take.
    RmaFlavor,
    /// `MPI_ERR_WIN`: invalid window.
    Win,
    /// `MPI_ERR_ASSERT`: an assertion (`MPI_MODE_*`) a window
    /// synchronisation call does not take.
    Assert,
    /// `MPI_ERR_SESSION`: invalid session (MPI 4.1 §11.3).
    Session,
    /// `MPI_ERR_TOPOLOGY`: the communicator has no (or another kind of)
    /// virtual topology.
    Topology,
    /// `MPI_ERR_DIMS`: invalid dimensions of a Cartesian topology.
    Dims,
    /// `MPI_ERR_PROC_FAILED`: a process the operation involves has died
    /// (a member of a connected job, `docs/connect.md`).
    ProcFailed,
    /// `MPI_ERR_SPAWN`: the processes could not be started.
    Spawn,
}

impl ErrorClass {
    /// The `MPI_ERR_*` name of this class.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Buffer => "MPI_ERR_BUFFER",
            ErrorClass::Count => "MPI_ERR_COUNT",
            ErrorClass::Type => "MPI_ERR_TYPE",
            ErrorClass::Tag => "MPI_ERR_TAG",
            ErrorClass::Comm => "MPI_ERR_COMM",
            ErrorClass::Rank => "MPI_ERR_RANK",
            ErrorClass::Request => "MPI_ERR_REQUEST",
            ErrorClass::Root => "MPI_ERR_ROOT",
            ErrorClass::Group => "MPI_ERR_GROUP",
            ErrorClass::Op => "MPI_ERR_OP",
            ErrorClass::Arg => "MPI_ERR_ARG",
            ErrorClass::Truncate => "MPI_ERR_TRUNCATE",
            ErrorClass::Intern => "MPI_ERR_INTERN",
            ErrorClass::InStatus => "MPI_ERR_IN_STATUS",
            ErrorClass::Pending => "MPI_ERR_PENDING",
            ErrorClass::NoMem => "MPI_ERR_NO_MEM",
            ErrorClass::Port => "MPI_ERR_PORT",
            ErrorClass::ProcAborted => "MPI_ERR_PROC_ABORTED",
            ErrorClass::Other => "MPI_ERR_OTHER",
            ErrorClass::Unknown => "MPI_ERR_UNKNOWN",
            ErrorClass::Keyval => "MPI_ERR_KEYVAL",
            ErrorClass::Info => "MPI_ERR_INFO",
            ErrorClass::InfoKey => "MPI_ERR_INFO_KEY",
            ErrorClass::InfoValue => "MPI_ERR_INFO_VALUE",
            ErrorClass::InfoNoKey => "MPI_ERR_INFO_NOKEY",
            ErrorClass::Errhandler => "MPI_ERR_ERRHANDLER",
            ErrorClass::NotSame => "MPI_ERR_NOT_SAME",
            ErrorClass::Unsupported => "MPI_ERR_UNSUPPORTED_OPERATION",
            ErrorClass::Name => "MPI_ERR_NAME",
            ErrorClass::RmaRange => "MPI_ERR_RMA_RANGE",
            ErrorClass::RmaSync => "MPI_ERR_RMA_SYNC",
            ErrorClass::RmaAttach => "MPI_ERR_RMA_ATTACH",
            ErrorClass::RmaFlavor => "MPI_ERR_RMA_FLAVOR",
            ErrorClass::Win => "MPI_ERR_WIN",
            ErrorClass::Assert => "MPI_ERR_ASSERT",
            ErrorClass::Session => "MPI_ERR_SESSION",
            ErrorClass::Topology => "MPI_ERR_TOPOLOGY",
            ErrorClass::Dims => "MPI_ERR_DIMS",
            ErrorClass::ProcFailed => "MPI_ERR_PROC_FAILED",
            ErrorClass::Spawn => "MPI_ERR_SPAWN",
        }
    }

    /// The C value of this class: the numbering of the MPI 5.0 standard
    /// ABI, which `include/mpi.h` uses (table in `docs/c-abi.md`).
    pub fn code(self) -> i32 {
        match self {
            ErrorClass::Buffer => 1,
            ErrorClass::Count => 2,
            ErrorClass::Type => 3,
            ErrorClass::Tag => 4,
            ErrorClass::Comm => 5,
            ErrorClass::Rank => 6,
            ErrorClass::Request => 7,
            ErrorClass::Root => 8,
            ErrorClass::Group => 9,
            ErrorClass::Op => 10,
            ErrorClass::Arg => 13,
            ErrorClass::Unknown => 14,
            ErrorClass::Truncate => 15,
            ErrorClass::Other => 16,
            ErrorClass::Intern => 17,
            ErrorClass::Pending => 18,
            ErrorClass::InStatus => 19,
            ErrorClass::InfoKey => 31,
            ErrorClass::InfoNoKey => 32,
            ErrorClass::InfoValue => 33,
            ErrorClass::Info => 34,
            ErrorClass::Keyval => 36,
            ErrorClass::NoMem => 39,
            ErrorClass::NotSame => 40,
            ErrorClass::Port => 43,
            ErrorClass::ProcAborted => 44,
            ErrorClass::Name => 38,
            ErrorClass::RmaRange => 49,
            ErrorClass::RmaSync => 51,
            ErrorClass::RmaAttach => 47,
            ErrorClass::RmaFlavor => 52,
            ErrorClass::Win => 60,
            ErrorClass::Assert => 22,
            ErrorClass::Session => 54,
            ErrorClass::Topology => 11,
            ErrorClass::Dims => 12,
            ErrorClass::Unsupported => 58,
            ErrorClass::Errhandler => 61,
            ErrorClass::ProcFailed => 62,
            ErrorClass::Spawn => 56,
        }
    }

    /// The class whose C value is `code`, if it is one of these.
    pub fn from_code(code: i32) -> Option<ErrorClass> {
        ALL.iter().copied().find(|c| c.code() == code)
    }
}

/// Every class, for lookups by C value.
const ALL: [ErrorClass; 40] = [
    ErrorClass::Buffer,
    ErrorClass::Count,
    ErrorClass::Type,
    ErrorClass::Tag,
    ErrorClass::Comm,
    ErrorClass::Rank,
    ErrorClass::Request,
    ErrorClass::Root,
    ErrorClass::Group,
    ErrorClass::Op,
    ErrorClass::Arg,
    ErrorClass::Unknown,
    ErrorClass::Truncate,
    ErrorClass::Other,
    ErrorClass::Intern,
    ErrorClass::Pending,
    ErrorClass::InStatus,
    ErrorClass::InfoKey,
    ErrorClass::InfoNoKey,
    ErrorClass::InfoValue,
    ErrorClass::Info,
    ErrorClass::Keyval,
    ErrorClass::NoMem,
    ErrorClass::NotSame,
    ErrorClass::Port,
    ErrorClass::ProcAborted,
    ErrorClass::Unsupported,
    ErrorClass::Errhandler,
    ErrorClass::Name,
    ErrorClass::RmaRange,
    ErrorClass::RmaSync,
    ErrorClass::RmaAttach,
    ErrorClass::RmaFlavor,
    ErrorClass::Win,
    ErrorClass::Assert,
    ErrorClass::Session,
    ErrorClass::Topology,
    ErrorClass::Dims,
    ErrorClass::ProcFailed,
    ErrorClass::Spawn,
];

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The envelope of the message an error is about (for `Truncate`: the
/// message was consumed; this says whose it was and how long it was).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorStatus {
    /// Sender's rank in the communicator.
    pub source: i32,
    /// The message's tag.
    pub tag: i32,
    /// The message's full length in bytes.
    pub bytes: usize,
}

/// An error: its MPI class and a message that names the bad value.
///
/// One pointer wide: the class, message and status live behind a box, so
/// that `Result<(), Error>` is a register and `Result<Status, Error>`
/// stays small on the message path, where the error is the rare case.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<Inner>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Inner {
    class: ErrorClass,
    detail: String,
    status: Option<ErrorStatus>,
}

impl Error {
    /// Makes an error of `class` with a human-readable `detail`.
    pub fn new(class: ErrorClass, detail: impl Into<String>) -> Self {
        Error(Box::new(Inner {
            class,
            detail: detail.into(),
            status: None,
        }))
    }

    /// Attaches the envelope of the message the error is about.
    pub fn with_status(mut self, status: ErrorStatus) -> Self {
        self.0.status = Some(status);
        self
    }

    /// The envelope of the message the error is about, if any (a
    /// truncated receive has one).
    pub fn status(&self) -> Option<ErrorStatus> {
        self.0.status
    }

    /// The MPI error class.
    pub fn class(&self) -> ErrorClass {
        self.0.class
    }

    /// The message, without the class name.
    pub fn detail(&self) -> &str {
        &self.0.detail
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("class", &self.0.class)
            .field("detail", &self.0.detail)
            .field("status", &self.0.status)
            .finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.class, self.0.detail)
    }
}

impl std::error::Error for Error {}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Writes one line to stderr in one `write` call, so that the lines of
/// ranks sharing a pipe do not interleave (`eprintln!` writes its pieces
/// separately).
pub fn say(line: std::fmt::Arguments<'_>) {
    let mut s = line.to_string();
    s.push('\n');
    let _ = std::io::Write::write_all(&mut std::io::stderr(), s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_class_and_detail() {
        let e = Error::new(
            ErrorClass::Rank,
            "rank 9 is out of range for a communicator of size 4",
        );
        assert_eq!(
            e.to_string(),
            "MPI_ERR_RANK: rank 9 is out of range for a communicator of size 4"
        );
        assert_eq!(e.class().code(), 6);
        assert_eq!(std::mem::size_of::<Result<()>>(), 8, "one pointer");
    }
}
