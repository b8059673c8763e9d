//! Error handlers (MPI 4.1 §9.3): what a communicator does with an error
//! of a call on it.

use crate::error::Error;
use std::sync::Arc;

/// A user error handler: called with the failing call's name and the
/// error.
pub type UserHandler = Arc<dyn Fn(&str, &Error) + Send + Sync>;

/// A communicator's error handler.
#[derive(Clone, Default)]
pub enum ErrHandler {
    /// `MPI_ERRORS_ARE_FATAL` (the default): the job is aborted with a
    /// message that names the call and the error class.
    #[default]
    Fatal,
    /// `MPI_ERRORS_RETURN`: the call returns the error.
    Return,
    /// `MPI_ERRORS_ABORT` (MPI 4.0): like `Fatal` (this process's job is
    /// aborted; shmpi jobs have one world).
    Abort,
    /// A user handler (`MPI_Comm_create_errhandler`): called with the name
    /// of the failing call and the error, then the call returns the error.
    User(UserHandler),
}

impl std::fmt::Debug for ErrHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ErrHandler::Fatal => "ErrorsAreFatal",
            ErrHandler::Return => "ErrorsReturn",
            ErrHandler::Abort => "ErrorsAbort",
            ErrHandler::User(_) => "User(..)",
        })
    }
}

impl ErrHandler {
    /// Whether errors end the job.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ErrHandler::Fatal | ErrHandler::Abort)
    }
}
