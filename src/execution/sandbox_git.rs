//! The repository's git directory as a sandboxed agent sees it: git works in its
//! worktree (commit, branch, tag, stash, rebase, fetch, `gc --auto`) without a word about
//! a read-only file system, and nothing it does there reaches the repository outside but
//! its objects, refs and logs and its own worktree's git dir.
//!
//! Why not simply the real `.git`, writable: git writes at its top level (`packed-refs.lock`
//! at every commit, `gc.pid`), so that directory would have to be writable — and a file
//! the agent creates there is read by git outside: a `.git/commondir` points the main
//! checkout at a repository the agent made, whose config runs any command
//! (`core.fsmonitor`). A read-only bind over a file is no guard either: replaced by rename
//! outside (`git config` does so), the bind is undone.
//!
//! So the common git directory inside is a private tmpfs holding:
//! - `objects`, `refs`, `logs`: the real ones, writable (live);
//! - `worktrees`: the real one, read-only (live: other worktrees stay read-only, new ones
//!   too), with this worktree's own directory writable over it (but what says where the
//!   repository is: `sandbox::spec`);
//! - every other name (the entries there now, and a few git reads or must not create in
//!   private: [`KNOWN`]): a symbolic link into a read-only view of the real directory
//!   ([`VIEW`]), so that reads are live and a write is refused; a new file there (a
//!   `commondir` the agent plants, `gc.pid`) lands in the tmpfs, private and gone when the
//!   agent ends;
//! - `config`: a link to orange's file ([`config_file`]) that includes the real config
//!   (read-only) and turns off what `gc --auto` would do at the top level (pack refs,
//!   expire every worktree's reflogs, update `info/refs`);
//! - `packed-refs`: a chain of links through a private directory ([`PACKED`]) to the real
//!   file. Reading follows the whole chain (live); git takes its lock beside the fifth link
//!   (it resolves five levels), in that private directory, so the lock every commit or
//!   deletion takes succeeds; a rewrite of `packed-refs` (deleting a branch or tag git has
//!   packed, `git pack-refs`) must create `<link>.new`, which is a directory there: it
//!   fails cleanly, before anything is changed, and the real file is never replaced (an
//!   agent that removes those directories first only loses its own refs, which `refs/`
//!   being writable lets it do anyway).

use std::path::{Path, PathBuf};

use crate::adapters::bwrap::Mount;
use crate::adapters::store::{self, Home};
use crate::error::Result;

/// The real common git directory, read-only, inside the sandbox.
pub const VIEW: &str = "/run/orange-sandbox/git";

/// Where the links of `packed-refs` are (private to the sandbox).
pub const PACKED: &str = "/run/orange-sandbox/packed-refs-read-only";

/// Links in the `packed-refs` chain: more than git resolves (5) for its lock.
const CHAIN: usize = 8;

/// Names at the top of a git directory shown from the real directory even when they do
/// not exist yet (a link into the read-only view: reading finds nothing, creating one is
/// refused): what git outside would read of the main worktree's, and `shallow` and
/// `modules`, which a sandboxed git must not make in private (its objects and refs are
/// shared). Not `commondir`: git takes a dangling link there for a file it cannot read. A
/// name made inside that is not here lands in the tmpfs: private, and never read outside.
const KNOWN: &[&str] = &[
    "HEAD",
    "index",
    "hooks",
    "info",
    "config.worktree",
    "shallow",
    "modules",
];

/// What is not a link into the view (set up by [`mounts`] itself).
const OWN: &[&str] = &[
    "objects",
    "refs",
    "logs",
    "worktrees",
    "config",
    "packed-refs",
];

/// The config git reads inside: the repository's own (read-only, live), then what the
/// sandbox needs of `gc` (it cannot write the top level of the repository's git directory).
fn config_text() -> String {
    format!(
        "# Written by orange: the config git reads in a sandboxed agent's worktree.\n\
         [include]\n\tpath = {VIEW}/config\n\
         [gc]\n\tpackRefs = false\n\treflogExpire = never\n\treflogExpireUnreachable = never\n\
         [repack]\n\tupdateServerInfo = false\n"
    )
}

/// `$ORANGE_HOME/sandbox/gitconfig`, written when missing or different.
pub fn config_file(home: &Home) -> Result<PathBuf> {
    let path = home.root.join("sandbox").join("gitconfig");
    let text = config_text();
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        store::write_bytes_atomic(&path, text.as_bytes())?;
    }
    Ok(path.canonicalize().unwrap_or(path))
}

/// The mounts that make `common` (the repository's git directory) what the module
/// documentation says, `own` (this worktree's git dir) writable in it. Directories git
/// writes in are created here when missing.
pub fn mounts(home: &Home, own: &Path, common: &Path) -> Result<Vec<Mount>> {
    let mut m = vec![
        Mount::ReadOnlyAt {
            from: common.to_path_buf(),
            to: VIEW.into(),
        },
        Mount::Tmpfs(common.to_path_buf()),
    ];
    let mut names: Vec<String> = std::fs::read_dir(common)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .chain(KNOWN.iter().map(|s| s.to_string()))
        .filter(|n| !OWN.contains(&n.as_str()))
        .collect();
    names.sort();
    names.dedup();
    for n in names {
        m.push(Mount::Symlink {
            target: Path::new(VIEW).join(&n),
            at: common.join(&n),
        });
    }
    m.push(Mount::Symlink {
        target: config_file(home)?,
        at: common.join("config"),
    });
    let link = |i: usize| Path::new(PACKED).join(i.to_string());
    m.push(Mount::Symlink {
        target: link(1),
        at: common.join("packed-refs"),
    });
    for i in 1..=CHAIN {
        let target = if i == CHAIN {
            Path::new(VIEW).join("packed-refs")
        } else {
            link(i + 1)
        };
        m.push(Mount::Symlink {
            target,
            at: link(i),
        });
        m.push(Mount::Dir(Path::new(PACKED).join(format!("{i}.new"))));
    }
    for sub in ["objects", "refs", "logs"] {
        let p = common.join(sub);
        store::ensure_dir(&p)?;
        m.push(Mount::Writable(p));
    }
    m.push(Mount::ReadOnly(common.join("worktrees")));
    m.push(Mount::Writable(own.to_path_buf()));
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_is_longer_than_git_resolves_and_every_link_refuses_a_rewrite() {
        let d = tempfile::tempdir().unwrap();
        let home = Home {
            root: d.path().join("home"),
        };
        let common = d.path().join("repo/.git");
        std::fs::create_dir_all(common.join("worktrees/ws")).unwrap();
        std::fs::write(common.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(common.join("orange-worktrees.lock"), "").unwrap();
        let m = mounts(&home, &common.join("worktrees/ws"), &common).unwrap();
        let links: Vec<&Mount> = m
            .iter()
            .filter(|x| matches!(x, Mount::Symlink { at, .. } if at.starts_with(PACKED)))
            .collect();
        assert!(links.len() > 5);
        for i in 1..=CHAIN {
            assert!(m.contains(&Mount::Dir(Path::new(PACKED).join(format!("{i}.new")))));
        }
        // Every name present and known is a link into the view; objects, refs and logs are
        // writable; the worktrees read-only, then the own one writable.
        for n in ["HEAD", "orange-worktrees.lock", "config.worktree", "hooks"] {
            assert!(m.contains(&Mount::Symlink {
                target: Path::new(VIEW).join(n),
                at: common.join(n),
            }));
        }
        let at = |x: &Mount| m.iter().position(|y| y == x).unwrap();
        assert!(
            at(&Mount::ReadOnly(common.join("worktrees")))
                < at(&Mount::Writable(common.join("worktrees/ws")))
        );
        assert!(m.contains(&Mount::Writable(common.join("refs"))));
        let cfg = std::fs::read_to_string(config_file(&home).unwrap()).unwrap();
        assert!(cfg.contains(&format!("path = {VIEW}/config")), "{cfg}");
    }
}
