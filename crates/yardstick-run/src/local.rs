//! The local engine: every step runs in this process, on this machine. It changes nothing of
//! what [`Placement`]'s defaults do.

use crate::placement::Placement;

/// This machine.
pub(crate) struct Local;

impl Placement for Local {}
