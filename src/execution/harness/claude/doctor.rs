//! What `orange doctor` checks of Claude Code: claude as root without `IS_SANDBOX`, its
//! first-run setup, the API key confirmation, the folder-trust dialog — and, only when
//! asked, recording the repository's trust in its user file (nothing else there is
//! changed; a backup is kept; a file that does not parse is never rewritten).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::adapters::shell;
use crate::error::{OrangeError, Result};
use crate::execution::harness::claude::paths;
use crate::execution::harness::kind::{check, Check, Doctor, DoctorAsk};
use crate::execution::harness::state::Blocker;

/// Claude Code's user file (see [`paths::user_file`]).
pub fn claude_json_path() -> PathBuf {
    paths::user_file()
}

/// The user file: `Ok(None)` when absent; an error (with its path) when it does not
/// parse or is not an object.
fn read_claude_json(path: &Path) -> Result<Option<Value>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(OrangeError::io(format!("reading {}", path.display()), e)),
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if v.is_object() => Ok(Some(v)),
        Ok(_) => Err(OrangeError::StateCorrupt {
            path: path.to_path_buf(),
            detail: "not a JSON object; orange leaves it as it is".into(),
        }),
        Err(e) => Err(OrangeError::StateCorrupt {
            path: path.to_path_buf(),
            detail: format!("{e}; orange leaves it as it is"),
        }),
    }
}

/// The key under which Claude Code records a folder's trust: its canonical path.
fn trust_key(repo: &Path) -> String {
    crate::execution::harness::files::folder_key(repo)
}

fn is_trusted(cfg: &Value, repo: &Path) -> bool {
    cfg.get("projects")
        .and_then(|p| p.get(trust_key(repo)))
        .and_then(|p| p.get("hasTrustDialogAccepted"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// Record `repo` as trusted in Claude Code's user file (worktrees of a trusted repository
/// are not asked again). Changes only `projects.<repo>.hasTrustDialogAccepted`; keeps a
/// backup of the file as it was (`.claude.json.orange-backup`); refuses a file that does
/// not parse. Returns whether the file changed.
pub fn record_trust(path: &Path, repo: &Path) -> Result<bool> {
    let existing = read_claude_json(path)?;
    let mut cfg = existing.clone().unwrap_or_else(|| serde_json::json!({}));
    if is_trusted(&cfg, repo) {
        return Ok(false);
    }
    let projects = cfg
        .as_object_mut()
        .expect("checked: an object")
        .entry("projects")
        .or_insert_with(|| serde_json::json!({}));
    if !projects.is_object() {
        return Err(OrangeError::StateCorrupt {
            path: path.to_path_buf(),
            detail: "its \"projects\" is not an object; orange leaves it as it is".into(),
        });
    }
    let entry = projects
        .as_object_mut()
        .expect("checked: an object")
        .entry(trust_key(repo))
        .or_insert_with(|| serde_json::json!({}));
    if !entry.is_object() {
        *entry = serde_json::json!({});
    }
    entry["hasTrustDialogAccepted"] = Value::Bool(true);
    if existing.is_some() {
        let backup = path.with_file_name(".claude.json.orange-backup");
        std::fs::copy(path, &backup)
            .map_err(|e| OrangeError::io(format!("backing up to {}", backup.display()), e))?;
    }
    let mut text = serde_json::to_vec_pretty(&cfg).expect("JSON serializes");
    text.push(b'\n');
    crate::adapters::store::write_bytes_atomic(path, &text)?;
    Ok(true)
}

/// Claude's checks: root, then (trust recorded first when asked) its user file, the
/// first-run setup, the API key and the repository's trust.
pub fn checks(ask: &DoctorAsk) -> Result<Doctor> {
    let mut out = Doctor::default();
    out.checks.push(root(ask.bypass));
    let path = claude_json_path();
    if ask.trust {
        if let Some(repo) = ask.repo {
            if record_trust(&path, repo)? {
                out.trust_recorded = Some(path.clone());
            }
        }
    }
    let cfg = match read_claude_json(&path) {
        Ok(c) => c,
        Err(e) => {
            out.checks.push(check(
                "config",
                false,
                e.to_string(),
                Some(format!("repair or remove {}", path.display())),
            ));
            return Ok(out);
        }
    };
    out.checks.push(onboarding(cfg.as_ref(), &path));
    if let Ok(key) = std::env::var("ANTHROPIC_API_KEY") {
        out.checks.push(api_key(cfg.as_ref(), &key));
    }
    out.checks.push(trusted(cfg.as_ref(), ask.repo));
    Ok(out)
}

/// claude refuses `--dangerously-skip-permissions` as root, unless told it runs in a
/// sandbox (`IS_SANDBOX=1`).
fn root(bypass: bool) -> Check {
    let sandboxed = std::env::var("IS_SANDBOX").is_ok_and(|v| v == "1");
    let root = shell::is_root();
    check(
        "root",
        !(root && bypass && !sandboxed),
        match (root, sandboxed) {
            (false, _) => "not running as root".to_string(),
            (true, true) => "root, with IS_SANDBOX=1 (you say this is a sandbox)".into(),
            (true, false) => {
                "running as root: claude refuses --dangerously-skip-permissions and exits".into()
            }
        },
        Some(Blocker::RootRefusal.advice("<id>")),
    )
}

fn onboarding(cfg: Option<&Value>, path: &Path) -> Check {
    let onboarded = cfg
        .and_then(|c| c.get("hasCompletedOnboarding"))
        .and_then(Value::as_bool)
        == Some(true);
    check(
        "onboarding",
        onboarded,
        if onboarded {
            format!("first-run setup done ({})", path.display())
        } else {
            format!(
                "Claude Code's first-run setup is not done for this user ({})",
                path.display()
            )
        },
        Some(
            "run `claude` once in a terminal and finish its setup (theme, login or API key)".into(),
        ),
    )
}

/// Claude Code asks once per key whether to use `ANTHROPIC_API_KEY`, and records the
/// answer by the key's last 20 characters.
fn api_key(cfg: Option<&Value>, key: &str) -> Check {
    let tail: String = key
        .chars()
        .rev()
        .take(20)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let approved = cfg
        .and_then(|c| c.pointer("/customApiKeyResponses/approved"))
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|k| k.as_str() == Some(tail.as_str())));
    check(
        "api_key",
        approved,
        if approved {
            "ANTHROPIC_API_KEY is approved".to_string()
        } else {
            "ANTHROPIC_API_KEY is set but not yet approved: claude will ask \"Use this API key?\" (default No)".to_string()
        },
        Some("run `claude` once in a terminal and answer Yes to \"Use this API key?\"".into()),
    )
}

fn trusted(cfg: Option<&Value>, repo: Option<&Path>) -> Check {
    let Some(repo) = repo else {
        return check(
            "trust",
            true,
            "no project here: run it in a registered repository (or pass --project) to check its trust",
            None,
        );
    };
    let trusted = cfg.is_some_and(|c| is_trusted(c, repo));
    check(
        "trust",
        trusted,
        if trusted {
            format!("{} is trusted", repo.display())
        } else {
            format!(
                "{} is not trusted yet: claude will ask \"Do you trust the files in this folder?\"",
                repo.display()
            )
        },
        Some("`orange doctor --trust` records it (only that key changes; a backup is kept)".into()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_changes_one_key_keeps_a_backup_and_refuses_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude.json");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let before = serde_json::json!({"theme": "dark", "numStartups": 3, "projects": {"/other": {"allowedTools": ["x"]}}});
        std::fs::write(&path, serde_json::to_vec(&before).unwrap()).unwrap();
        assert!(record_trust(&path, &repo).unwrap());
        let after: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(after["theme"], "dark");
        assert_eq!(after["numStartups"], 3);
        assert_eq!(after["projects"]["/other"], before["projects"]["/other"]);
        let key = trust_key(&repo);
        assert_eq!(after["projects"][&key]["hasTrustDialogAccepted"], true);
        let backup: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(".claude.json.orange-backup")).unwrap(),
        )
        .unwrap();
        assert_eq!(backup, before);
        assert!(
            !record_trust(&path, &repo).unwrap(),
            "twice changes nothing"
        );
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(
            record_trust(&path, &repo).unwrap_err().code(),
            "state_corrupt"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
    }
}
