//! What every library error tells a person, in one shape: whether their input is at fault (the
//! command line exits 2) or something failed (exit 1), and what to do about it. The binary maps
//! any error with this trait the same way (`exit::lib_error` in `crates/yardstick`).
#![deny(missing_docs)]

/// An error as a person meets it.
pub trait UserFacing: std::error::Error {
    /// True when the user's input is at fault (a bad spec, flag, file or request: exit 2) rather
    /// than a runtime failure (exit 1).
    fn is_invalid_input(&self) -> bool;

    /// What to do about it, when there is more to say than the message.
    fn hint(&self) -> Option<String> {
        None
    }
}
