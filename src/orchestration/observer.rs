//! Old path of [`super::observe::snapshot`] (`observer::observe` is now
//! `snapshot::take`): re-exports only, kept until the branches that use this path are
//! merged. Remove it then.

pub use super::observe::snapshot::take as observe;
pub use super::observe::snapshot::*;
