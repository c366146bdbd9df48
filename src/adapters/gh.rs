//! The GitHub CLI adapter: pull-request lookups through `gh`, when it is installed.

use std::path::Path;
use std::process::{Command, Stdio};

use serde::Serialize;

use crate::adapters::shell;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Pr {
    /// No pull request for the branch.
    None,
    Found {
        number: u64,
        pr_state: String,
        url: String,
    },
    /// `gh` is missing or could not answer (the reason).
    Unknown { reason: String },
}

impl Pr {
    pub fn is_merged(&self) -> bool {
        matches!(self, Pr::Found { pr_state, .. } if pr_state == "MERGED")
    }
}

/// The pull request whose head is `branch`, as `gh pr view` reports it.
pub fn pr_for_branch(repo: &Path, branch: &str) -> Pr {
    if !shell::on_path("gh") {
        return Pr::Unknown {
            reason: "gh is not installed: PR status unknown".into(),
        };
    }
    let out = Command::new("gh")
        .args(["pr", "view", branch, "--json", "number,state,url"])
        .current_dir(repo)
        .stdin(Stdio::null())
        .env("GH_PROMPT_DISABLED", "1")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            return Pr::Unknown {
                reason: format!("running gh: {e}"),
            }
        }
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("no pull requests found") {
            return Pr::None;
        }
        return Pr::Unknown {
            reason: format!("gh pr view failed: {}", err.trim()),
        };
    }
    let v: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(e) => {
            return Pr::Unknown {
                reason: format!("gh printed no JSON: {e}"),
            }
        }
    };
    Pr::Found {
        number: v["number"].as_u64().unwrap_or(0),
        pr_state: v["state"].as_str().unwrap_or("").to_string(),
        url: v["url"].as_str().unwrap_or("").to_string(),
    }
}
