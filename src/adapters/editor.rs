//! The person's editor: `$VISUAL`, else `$EDITOR`, else `vi`, run on a file with this
//! terminal, waited for. The variable may hold arguments (`code --wait`): it is run by
//! `sh` with the file as a separate argument, never pasted into the line.

use std::path::Path;
use std::process::Command;

use crate::error::{OrangeError, Result};

/// The editor's command line, as the environment names it.
pub fn command() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// Open `file` in the editor and wait; an editor that fails (or is not found) is an error
/// naming it and its exit status.
pub fn edit(file: &Path) -> Result<()> {
    let editor = command();
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(file)
        .status()
        .map_err(|e| OrangeError::io("starting the editor", e))?;
    if status.success() {
        return Ok(());
    }
    let how = match status.code() {
        Some(127) => "was not found (exit status 127)".to_string(),
        Some(c) => format!("exited with status {c}"),
        None => "was killed by a signal".to_string(),
    };
    Err(OrangeError::BackendCommandFailed(format!(
        "the editor ({editor}) {how}"
    )))
}
