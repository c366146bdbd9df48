//! `orange sidebar`: The sidebar renderer (not built yet).

use clap::Args;

use super::Ctx;
use crate::error::{OrangeError, Result};
use crate::output::Out;

#[derive(Debug, Args)]
pub struct SidebarArgs {
    /// Task to show (default: the task of the pane beside it)
    #[arg(long)]
    pub task: Option<String>,
    /// Render one frame and exit
    #[arg(long)]
    pub once: bool,
    /// Width in columns (default: the pane width)
    #[arg(long)]
    pub width: Option<usize>,
    /// `toggle`: open or close the sidebar beside the current pane
    pub action: Option<String>,
}

pub fn run(_ctx: &Ctx, _args: SidebarArgs) -> Result<Out> {
    Err(OrangeError::NotImplemented("sidebar".into()))
}
