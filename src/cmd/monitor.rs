//! `orange monitor`: The agent monitor (not built yet).

use clap::Args;

use super::Ctx;
use crate::error::{OrangeError, Result};
use crate::output::Out;

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Run one pass and exit
    #[arg(long)]
    pub once: bool,
}

pub fn run(_ctx: &Ctx, _args: MonitorArgs) -> Result<Out> {
    Err(OrangeError::NotImplemented("monitor".into()))
}
