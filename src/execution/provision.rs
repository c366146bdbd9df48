//! Worktree setup beyond git: copy or symlink the project's gitignored files (`.env*`,
//! `node_modules`…) from the main repository into a workspace, never overwriting.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{OrangeError, Result};

#[derive(Debug, Default, Serialize, PartialEq)]
pub struct Provisioned {
    pub copied: Vec<String>,
    pub linked: Vec<String>,
    /// Already present in the workspace: left as they are.
    pub kept: Vec<String>,
}

/// Does one path segment match a glob segment (`*`, `?`, literal)?
pub fn segment_matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // A leading `*` does not match dot-files unless the pattern starts with a dot.
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    go(&p, &n)
}

/// Paths under `root` matching `pattern` (segment-wise: only matching directories are
/// listed, so a pattern never walks the whole tree). Never leaves `root`.
pub fn validate_pattern(pattern: &str) -> Result<()> {
    let trimmed = pattern.trim_end_matches('/');
    if trimmed.is_empty()
        || trimmed.starts_with('/')
        || trimmed
            .split('/')
            .any(|s| s == ".." || s == "." || s.is_empty())
        || trimmed.chars().any(|c| c.is_control())
    {
        return Err(OrangeError::invalid(format!(
            "invalid pattern {pattern:?}: a path relative to the repository, without '..'"
        )));
    }
    Ok(())
}

pub fn glob(root: &Path, pattern: &str) -> Result<Vec<PathBuf>> {
    validate_pattern(pattern)?;
    let pattern = pattern.trim_end_matches('/');
    let mut current = vec![PathBuf::new()];
    for seg in pattern.split('/') {
        let mut next = vec![];
        for rel in &current {
            if !seg.contains(['*', '?']) {
                if root.join(rel).join(seg).symlink_metadata().is_ok() {
                    next.push(rel.join(seg));
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            for name in names {
                if name != ".git" && segment_matches(seg, &name) {
                    next.push(rel.join(name));
                }
            }
        }
        current = next;
    }
    Ok(current)
}

/// Copy (`copy` patterns) or symlink (`symlink` patterns) from `repo` into `workspace`.
/// Existing files in the workspace are never overwritten.
pub fn provision(
    repo: &Path,
    workspace: &Path,
    copy: &[String],
    symlink: &[String],
) -> Result<Provisioned> {
    let mut out = Provisioned::default();
    for (patterns, link) in [(copy, false), (symlink, true)] {
        for pattern in patterns {
            for rel in glob(repo, pattern)? {
                let src = repo.join(&rel);
                let dst = workspace.join(&rel);
                let shown = rel.to_string_lossy().into_owned();
                // A directory is merged into a directory (never through a symbolic link a
                // previous agent left there); anything else already there is kept.
                let dst_dir = dst.symlink_metadata().is_ok_and(|m| m.is_dir());
                if dst.symlink_metadata().is_ok() && !(src.is_dir() && !link && dst_dir) {
                    out.kept.push(shown);
                    continue;
                }
                if let Some(parent) = dst.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        OrangeError::io(format!("creating {}", parent.display()), e)
                    })?;
                }
                if link {
                    std::os::unix::fs::symlink(&src, &dst)
                        .map_err(|e| OrangeError::io(format!("linking {}", dst.display()), e))?;
                    out.linked.push(shown);
                } else {
                    copy_tree(&src, &dst)?;
                    out.copied.push(shown);
                }
            }
        }
    }
    Ok(out)
}

/// Copy a file or a directory tree; files already at the destination are kept.
fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    let meta = src
        .symlink_metadata()
        .map_err(|e| OrangeError::io(format!("reading {}", src.display()), e))?;
    if meta.file_type().is_symlink() {
        if dst.symlink_metadata().is_err() {
            let target = std::fs::read_link(src)
                .map_err(|e| OrangeError::io(format!("reading {}", src.display()), e))?;
            std::os::unix::fs::symlink(target, dst)
                .map_err(|e| OrangeError::io(format!("linking {}", dst.display()), e))?;
        }
    } else if meta.is_dir() {
        std::fs::create_dir_all(dst)
            .map_err(|e| OrangeError::io(format!("creating {}", dst.display()), e))?;
        for entry in std::fs::read_dir(src)
            .map_err(|e| OrangeError::io(format!("reading {}", src.display()), e))?
            .flatten()
        {
            copy_tree(&entry.path(), &dst.join(entry.file_name()))?;
        }
    } else if dst.symlink_metadata().is_err() {
        std::fs::copy(src, dst)
            .map_err(|e| OrangeError::io(format!("copying {}", src.display()), e))?;
    }
    Ok(())
}

/// Processes whose working directory is inside `dir` (Linux `/proc`): a worktree in use.
pub fn processes_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&dir))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_match_like_a_shell() {
        assert!(segment_matches(".env*", ".env"));
        assert!(segment_matches(".env*", ".env.local"));
        assert!(!segment_matches("*", ".hidden"));
        assert!(segment_matches("*.local", "config.local"));
        assert!(segment_matches("a?c", "abc"));
        assert!(!segment_matches("a?c", "ac"));
        assert!(segment_matches("node_modules", "node_modules"));
    }

    #[test]
    fn glob_refuses_escaping_patterns() {
        let d = tempfile::tempdir().unwrap();
        for bad in ["../x", "/etc/passwd", "a/../../b", "", "./x"] {
            assert!(glob(d.path(), bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn provision_copies_links_and_never_overwrites() {
        let d = tempfile::tempdir().unwrap();
        let (repo, ws) = (d.path().join("repo"), d.path().join("ws"));
        std::fs::create_dir_all(repo.join("node_modules/pkg")).unwrap();
        std::fs::create_dir_all(repo.join("config")).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(repo.join(".env"), "SECRET=1").unwrap();
        std::fs::write(repo.join(".env.local"), "LOCAL=1").unwrap();
        std::fs::write(repo.join("node_modules/pkg/index.js"), "x").unwrap();
        std::fs::write(repo.join("config/dev.local"), "dev").unwrap();
        std::fs::write(ws.join(".env.local"), "MINE").unwrap();
        let p = provision(
            &repo,
            &ws,
            &[".env*".into(), "config/*.local".into()],
            &["node_modules".into()],
        )
        .unwrap();
        assert_eq!(p.copied, [".env", "config/dev.local"]);
        assert_eq!(p.kept, [".env.local"]);
        assert_eq!(p.linked, ["node_modules"]);
        assert_eq!(
            std::fs::read_to_string(ws.join(".env.local")).unwrap(),
            "MINE"
        );
        assert_eq!(
            std::fs::read_link(ws.join("node_modules")).unwrap(),
            repo.join("node_modules")
        );
        let again = provision(&repo, &ws, &[".env*".into()], &["node_modules".into()]).unwrap();
        assert!(again.copied.is_empty() && again.linked.is_empty());
    }

    #[test]
    fn a_directory_is_never_merged_through_a_link_left_in_the_workspace() {
        let d = tempfile::tempdir().unwrap();
        let (repo, ws, outside) = (
            d.path().join("repo"),
            d.path().join("ws"),
            d.path().join("outside"),
        );
        std::fs::create_dir_all(repo.join("certs")).unwrap();
        std::fs::write(repo.join("certs/dev.pem"), "pem").unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        // What a (sandboxed) agent could leave in a pooled workspace.
        std::os::unix::fs::symlink(&outside, ws.join("certs")).unwrap();
        let p = provision(&repo, &ws, &["certs".into()], &[]).unwrap();
        assert_eq!(p.kept, ["certs"]);
        assert!(!outside.join("dev.pem").exists());
    }
}
