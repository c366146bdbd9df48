//! git in a sandboxed worktree: commit, branch, tag, stash, rebase, fetch from a local
//! origin and `gc --auto` work without a word on stderr, and what they make is the
//! repository's; the main checkout, its git directory's top level (HEAD, index, config,
//! hooks, info, packed-refs) and the other worktrees stay read-only — seen from inside (the
//! probe's refusals) and from outside (nothing changed, nothing planted, `git fsck` clean).

use std::path::{Path, PathBuf};

use crate::common;
use crate::sandbox::{bwrap_usable, rig, toml_string};

/// What a sandboxed agent does with git, one op a line: `<name> ok` or `<name> refused`,
/// then what the op printed on stderr (indented). The first group must work without a
/// word on stderr; the second must be refused (the repository outside its worktree).
const GIT_PROBE: &str = r#"#!/bin/sh
# gitprobe.sh MAIN OTHER_WS: git in a sandboxed worktree.
main=$1 other=$2
r="$PWD/gitprobe.txt"
# The test pushes to the origin once the agent runs, then says go.
while [ ! -e .go ]; do sleep 0.1; done
rm .go
common=$(git rev-parse --path-format=absolute --git-common-dir)
other_gitdir=$(git -C "$other" rev-parse --path-format=absolute --git-dir 2>/dev/null)
try() {
  name=$1; shift
  if ( "$@" ) >/dev/null 2>"$PWD/.probe-err"; then echo "$name ok"; else echo "$name refused"; fi >> "$r"
  sed 's/^/  | /' "$PWD/.probe-err" >> "$r"
}
echo one > one.txt && git add one.txt
try commit git commit -qm "probe one"
try branch git branch probe-side
try branch_delete git branch -D probe-side
try tag git tag probe-tag
try annotated_tag git tag -a -m "a tag" probe-annotated
echo change >> one.txt
try stash git stash -q
try stash_pop git stash pop -q
try commit_again git commit -qam "probe two"
try rebase git rebase -q main
try fetch git fetch -q origin
try repack git repack -q
try commit_three git commit -q --allow-empty -m "probe three"
try repack_again git repack -q
try gc_auto git -c gc.autoPackLimit=1 -c gc.autoDetach=false gc --auto --quiet
try status git status --short
try packed_tag_delete git tag -d packed-tag
try main_head sh -c "echo 0000000000000000000000000000000000000000 > '$common/HEAD'"
try main_index sh -c "echo x > '$common/index'"
try main_commondir sh -c "echo /tmp/evil > '$common/commondir'"
try main_config_worktree sh -c "echo x > '$common/config.worktree'"
try main_hook sh -c "echo x > '$common/hooks/post-checkout'"
try main_info sh -c "echo x >> '$common/info/exclude'"
try main_packed_refs sh -c "echo x >> '$common/packed-refs'"
try main_worktree sh -c "echo x > '$main/escape.txt'"
try other_worktree sh -c "echo x > '$other/escape.txt'"
try other_gitdir sh -c "echo 0000000000000000000000000000000000000000 > '$other_gitdir/HEAD'"
try new_worktree git worktree add -q ../probe-wt
echo end >> "$r"
exec sleep 600
"#;

#[test]
fn git_in_a_sandboxed_worktree_works_and_the_rest_of_the_repository_stays_read_only() {
    if !bwrap_usable() {
        return;
    }
    let rig = rig();
    let env = &rig.env;
    // A packed ref (as a clone or `git gc` leaves them), and a hook, as a real repository has.
    common::git(&env.repo, &["tag", "packed-tag"]);
    common::git(&env.repo, &["pack-refs", "--all"]);
    let other = env.ok(&["task", "create", "other", "hold", "--harness", "sleeper"]);
    let other_ws = env.ws_path(other["workspace"].as_str().unwrap());
    std::fs::write(env.repo.join("gitprobe.sh"), GIT_PROBE).unwrap();
    common::git(&env.repo, &["add", "gitprobe.sh"]);
    common::git(&env.repo, &["commit", "-qm", "git probe"]);
    common::git(&env.repo, &["push", "-q", "origin", "HEAD"]);
    let cmd = format!(
        "sh ./gitprobe.sh '{}' '{}'",
        env.repo.display(),
        other_ws.display()
    );
    std::fs::write(
        env.home.join("config.toml"),
        format!(
            "[harness.sleeper]\ncommand = \"sleep 600\"\n[harness.gitprobe]\ncommand = {}\n",
            toml_string(&cmd)
        ),
    )
    .unwrap();
    let git_dir = env.repo.join(".git");
    let read = |p: &Path| std::fs::read(p).unwrap_or_default();
    let other_gitdir = PathBuf::from(
        common::git(
            &other_ws,
            &["rev-parse", "--path-format=absolute", "--git-dir"],
        )
        .trim(),
    );
    let before: Vec<(PathBuf, Vec<u8>)> = [
        git_dir.join("HEAD"),
        git_dir.join("index"),
        git_dir.join("config"),
        git_dir.join("info/exclude"),
        git_dir.join("packed-refs"),
        other_gitdir.join("HEAD"),
    ]
    .into_iter()
    .map(|p| {
        let b = read(&p);
        (p, b)
    })
    .collect();

    let t = env.ok(&[
        "task",
        "create",
        "gitprobe",
        "use git",
        "--harness",
        "gitprobe",
        "--sandbox",
        "bwrap",
    ]);
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    // Something new on the origin for the agent to fetch, once it runs.
    let pusher = env.root().join("pusher");
    common::git(
        &env.root(),
        &["clone", "-q", env.origin.to_str().unwrap(), "pusher"],
    );
    std::fs::write(pusher.join("upstream.txt"), "new\n").unwrap();
    common::git(&pusher, &["add", "upstream.txt"]);
    common::git(&pusher, &["commit", "-qm", "upstream work"]);
    common::git(&pusher, &["push", "-q", "origin", "HEAD:upstream-work"]);
    let upstream = common::git(&pusher, &["rev-parse", "HEAD"]);
    std::fs::write(ws.join(".go"), "").unwrap();
    let p = ws.join("gitprobe.txt");
    common::wait_for("the git probe to finish", 120, || {
        std::fs::read_to_string(&p).is_ok_and(|t| t.lines().any(|l| l == "end"))
    });
    let text = std::fs::read_to_string(&p).unwrap();
    // Each op with what it printed on stderr.
    let mut ops: Vec<(String, String, Vec<String>)> = vec![];
    for l in text.lines() {
        if let Some(said) = l.strip_prefix("  | ") {
            ops.last_mut().unwrap().2.push(said.to_string());
        } else if let Some((name, how)) = l.split_once(' ') {
            ops.push((name.to_string(), how.to_string(), vec![]));
        }
    }
    let op = |name: &str| {
        ops.iter()
            .find(|o| o.0 == name)
            .unwrap_or_else(|| panic!("the probe said nothing of {name}:\n{text}"))
    };
    for name in [
        "commit",
        "branch",
        "branch_delete",
        "tag",
        "annotated_tag",
        "stash",
        "stash_pop",
        "commit_again",
        "rebase",
        "fetch",
        "repack",
        "commit_three",
        "repack_again",
        "gc_auto",
        "status",
    ] {
        let (_, how, said) = op(name);
        assert_eq!(how, "ok", "{name}:\n{text}");
        // `git branch -D` rewrites the config's `branch.<name>` section, and the config is
        // read-only here: that one complaint is about the config, and the branch is gone.
        let said: Vec<&String> = said
            .iter()
            .filter(|l| {
                !(name == "branch_delete"
                    && (l.starts_with("error: could not lock config file")
                        || l.starts_with("warning: update of config-file failed")))
            })
            .collect();
        assert!(said.is_empty(), "{name} printed {said:?}:\n{text}");
    }
    for name in [
        "main_head",
        "main_index",
        "main_config_worktree",
        "main_hook",
        "main_info",
        "main_packed_refs",
        "main_worktree",
        "other_worktree",
        "other_gitdir",
        "new_worktree",
        // A ref git has packed cannot be deleted inside (packed-refs is rewritten whole);
        // it fails before anything changes, and the tag is still there outside.
        "packed_tag_delete",
    ] {
        assert_eq!(op(name).1, "refused", "{name}:\n{text}");
    }
    // Outside: the agent's commits, branch, tags and fetch are in the repository…
    let log = common::git(&env.repo, &["log", "--format=%s", "gitprobe"]);
    assert_eq!(
        log.lines().take(3).collect::<Vec<_>>(),
        ["probe three", "probe two", "probe one"],
        "{log}"
    );
    let refs = common::git(&env.repo, &["for-each-ref", "--format=%(refname)"]);
    for r in [
        "refs/tags/probe-tag",
        "refs/tags/probe-annotated",
        "refs/tags/packed-tag",
    ] {
        assert!(refs.lines().any(|l| l == r), "{r} missing:\n{refs}");
    }
    assert!(!refs.contains("probe-side"), "{refs}");
    assert_eq!(
        common::git(
            &env.repo,
            &["rev-parse", "refs/remotes/origin/upstream-work"]
        )
        .trim(),
        upstream.trim()
    );
    let fsck = common::git_output(&env.repo, &["fsck", "--no-dangling"]);
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    // …and nothing else of it changed.
    for (path, was) in &before {
        assert_eq!(&read(path), was, "{} changed", path.display());
    }
    for planted in [
        git_dir.join("commondir"),
        git_dir.join("config.worktree"),
        git_dir.join("hooks/post-checkout"),
        env.repo.join("escape.txt"),
        other_ws.join("escape.txt"),
        env.root().join("probe-wt"),
    ] {
        assert!(!planted.exists(), "{} was written", planted.display());
    }
    let status = common::git(&env.repo, &["status", "--porcelain"]);
    assert!(status.trim().is_empty(), "{status}");
}
