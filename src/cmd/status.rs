//! `orange status`: The status widget (not built yet).

use clap::Args;

use super::Ctx;
use crate::error::{OrangeError, Result};
use crate::output::Out;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Output format
    #[arg(long, value_parser = ["tmux", "plain", "json"], default_value = "plain")]
    pub format: String,
}

pub fn run(_ctx: &Ctx, _args: StatusArgs) -> Result<Out> {
    Err(OrangeError::NotImplemented("status".into()))
}
