//! `orange demo`: The demo sandbox (not built yet).

use clap::Args;

use super::Ctx;
use crate::error::{OrangeError, Result};
use crate::output::Out;

#[derive(Debug, Args)]
pub struct DemoArgs {}

pub fn run(_ctx: &Ctx, _args: DemoArgs) -> Result<Out> {
    Err(OrangeError::NotImplemented("demo".into()))
}
