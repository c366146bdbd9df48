//! A registered repository as the execution layer uses it: where it is and how its
//! workspaces are made (the pool reads it). The registry of them, `projects.json`, and
//! finding the project of a directory are orchestration's `project`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Project {
    pub name: String,
    pub path: PathBuf,
    pub default_branch: String,
    pub pool_size: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_cmd: Option<String>,
    /// Gitignored files copied from the main repo into a workspace (`.env`…).
    #[serde(default)]
    pub copy: Vec<String>,
    /// Gitignored files symlinked from the main repo into a workspace (`node_modules`…).
    #[serde(default)]
    pub symlink: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_base: Option<u16>,
    /// The sandbox its agents run in (`project add/update --sandbox`), over config.toml's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// At most this many of its agents run at once (`project update --max-running N`);
    /// more tasks wait in its queue. Apart from the pool size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running: Option<usize>,
    #[serde(default)]
    pub created_at: String,
    /// The project's check (`project update --check-cmd`): run by `group judge` in each
    /// member's workspace; exit 0 passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_cmd: Option<String>,
    /// How long the check may run before it is killed and counts as failed ("5m").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_timeout: Option<String>,
}
