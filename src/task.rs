//! The task store as the pool sees it: `tasks/<project>/<id>/task.json`.
//! (The full task lifecycle builds on this file; the pool only asks who is alive.)

use std::path::PathBuf;

use serde::Deserialize;

use crate::pool::TaskLookup;
use crate::store::Home;

/// Statuses after which a task no longer holds its workspace.
pub const FINAL_STATUSES: &[&str] = &["done", "cancelled"];

#[derive(Debug, Deserialize)]
struct TaskHead {
    #[serde(default)]
    status: String,
    #[serde(default)]
    workspace: Option<String>,
}

pub struct TaskStore {
    root: PathBuf,
}

impl TaskStore {
    pub fn new(home: &Home) -> TaskStore {
        TaskStore {
            root: home.tasks_dir(),
        }
    }

    fn head(&self, project: &str, id: &str) -> Option<TaskHead> {
        // Labels are data: only a plain id can name a task directory.
        if id.is_empty() || id.contains(['/', '\\']) || id == "." || id == ".." {
            return None;
        }
        let text = std::fs::read(self.root.join(project).join(id).join("task.json")).ok()?;
        // An unreadable task file is treated as alive: gc must never free a workspace
        // because of a parse error.
        Some(serde_json::from_slice(&text).unwrap_or(TaskHead {
            status: "unknown".into(),
            workspace: None,
        }))
    }
}

impl TaskLookup for TaskStore {
    fn is_live(&self, project: &str, label: &str) -> bool {
        self.head(project, label)
            .is_some_and(|t| !FINAL_STATUSES.contains(&t.status.as_str()))
    }

    fn holder_of(&self, project: &str, workspace: &str) -> Option<String> {
        let dir = std::fs::read_dir(self.root.join(project)).ok()?;
        for entry in dir.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            if let Some(t) = self.head(project, &id) {
                if t.workspace.as_deref() == Some(workspace)
                    && !FINAL_STATUSES.contains(&t.status.as_str())
                {
                    return Some(id);
                }
            }
        }
        None
    }
}
