//! `orange hook`: The hook entry point (not built yet).

use clap::Args;

use super::Ctx;
use crate::error::{OrangeError, Result};
use crate::output::Out;

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The event and its arguments
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub event: Vec<String>,
}

pub fn run(_ctx: &Ctx, _args: HookArgs) -> Result<Out> {
    Err(OrangeError::NotImplemented("hook".into()))
}
