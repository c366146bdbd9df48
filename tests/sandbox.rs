//! Sandboxed agents: an agent under bubblewrap can commit in its worktree and
//! reach orange through its hooks and `orange task complete`, and nothing else it tries
//! to write gets written: the main checkout, another task's workspace, `~/.ssh`, orange's
//! state files of other tasks, the repository's config and hooks. The agent here is a
//! probe script committed in the repository (so it is inside the sandbox's view); it tries
//! each thing and writes what happened into its workspace. A missing `bwrap` and one that
//! cannot make namespaces are clear errors that leave nothing behind. A harness the
//! sandbox would hide is refused before anything is created, and an agent that does not
//! find its program inside (127) is explained, not counted as a crash. git in the
//! sandboxed worktree: sandbox_git.rs.
//!
//! The real Claude Code CLI under the sandbox is tested in real_claude/setups.rs.

use std::path::{Path, PathBuf};

use crate::common::{self, Env, TaskEnv};
use serde_json::Value;

pub fn bwrap_usable() -> bool {
    let found = common::find_program(&std::env::var("PATH").unwrap_or_default(), "bwrap").is_some()
        && std::process::Command::new("bwrap")
            .args(["--ro-bind", "/", "/", "--", "true"])
            .status()
            .is_ok_and(|s| s.success());
    common::require(
        "bwrap (apt-get install bubblewrap)",
        found,
        "the sandbox runs agents under bubblewrap",
    )
}

/// What the probe tries, one line each: `<name> ok` or `<name> refused`.
const PROBE: &str = r#"#!/bin/sh
# probe.sh MAIN OTHER_WS OTHER_TASK_DIR TMUX_SOCKET TMUX_PID: what may an agent in the
# sandbox do?
main=$1 other=$2 other_task=$3 sock=$4 tmux_pid=$5
own="$ORANGE_HOME/tasks/$ORANGE_PROJECT/$ORANGE_TASK_ID"
r="$PWD/probe.txt"
try() {
  name=$1; shift
  if ( "$@" ) >/dev/null 2>&1; then echo "$name ok"; else echo "$name refused"; fi >> "$r"
}
try commit sh -c 'echo work > work.txt && git add work.txt && git commit -qm "probe work"'
try main_checkout sh -c "echo x > '$main/escape.txt'"
try main_git_config git config --file "$main/.git/config" core.hooksPath /tmp
try main_git_hooks sh -c "echo x > '$main/.git/hooks/pre-commit'"
try worktree_git_file sh -c 'echo "gitdir: /tmp/fake" > .git'
try worktree_commondir sh -c 'echo /tmp/fake > "$(git rev-parse --git-dir)/commondir"'
try worktree_config sh -c 'printf "[core]\n\tfsmonitor = touch /tmp/pwned\n" > "$(git rev-parse --git-dir)/config.worktree"'
try other_workspace sh -c "echo x > '$other/escape.txt'"
try ssh sh -c 'echo x > "$HOME/.ssh/authorized_keys"'
try home_private sh -c 'echo x > "$HOME/.bashrc"'
try other_task sh -c "echo x >> '$other_task/task.json'"
try projects sh -c 'echo x >> "$ORANGE_HOME/projects.json"'
try audit sh -c 'echo x >> "$ORANGE_HOME/audit.jsonl"'
try tmux tmux -S "$sock" list-sessions
try own_task_json sh -c "echo x >> '$own/task.json'"
try own_history sh -c "echo x >> '$own/history.jsonl'"
try setup_mark sh -c "rm -f '$own/.agent.sandbox'; ln -s '$main/escape.txt' '$own/.agent.sandbox'"
try host_process kill -0 "$tmux_pid"
try remount mount -o remount,rw,bind /
try ssh_control_seen test -e "$ORANGE_HOME/run/ssh/box"
try private_tmp sh -c 'echo x > /tmp/orange-probe-$$ && cat /tmp/orange-probe-$$'
try own_task_md sh -c 'echo "probe notes" >> TASK.md'
try summary orange task update --summary "it's \$(done) from inside"
try report orange task complete
echo end >> "$r"
exec sleep 600
"#;

pub struct Rig {
    pub env: TaskEnv,
    pub home: PathBuf,
}

/// A repository holding the probe, a HOME with `~/.ssh`, a plain task holding a
/// workspace (the "other" one), and config.toml with the probe harness.
pub fn rig() -> Rig {
    let env = Env::new();
    let home = env.root().join("user-home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/authorized_keys"), "ssh-ed25519 AAAA mine\n").unwrap();
    std::fs::write(env.repo.join("probe.sh"), PROBE).unwrap();
    common::git(&env.repo, &["add", "probe.sh"]);
    common::git(&env.repo, &["commit", "-qm", "probe"]);
    common::git(&env.repo, &["push", "-q", "origin", "HEAD"]);
    let env = TaskEnv::real(env, &[("HOME", home.display().to_string())]);
    env.add_project(&["--pool-size", "3"]);
    std::fs::write(
        env.home.join("config.toml"),
        "[harness.sleeper]\ncommand = \"sleep 600\"\n",
    )
    .unwrap();
    Rig { env, home }
}

impl Rig {
    fn probe_config(&self, other_ws: &Path, other_task: &Path) {
        let tmux_pid = self.env.tmux.ok(&["display", "-p", "#{pid}"]);
        let cmd = format!(
            "sh ./probe.sh '{}' '{}' '{}' '{}' '{}'",
            self.env.repo.display(),
            other_ws.display(),
            other_task.display(),
            self.env.tmux.socket_path,
            tmux_pid
        );
        std::fs::write(
            self.env.home.join("config.toml"),
            format!(
                "[harness.sleeper]\ncommand = \"sleep 600\"\n[harness.probe]\ncommand = {}\n",
                toml_string(&cmd)
            ),
        )
        .unwrap();
    }

    fn task_dir(&self, id: &str) -> PathBuf {
        self.env.home.join("tasks/app").join(id)
    }
}

pub fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn results(ws: &Path) -> Vec<String> {
    let p = ws.join("probe.txt");
    common::wait_for("the probe to finish", 60, || {
        std::fs::read_to_string(&p).is_ok_and(|t| t.contains("end"))
    });
    std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_sandboxed_agent_commits_in_its_worktree_and_writes_nothing_else() {
    if !bwrap_usable() {
        return;
    }
    let rig = rig();
    let env = &rig.env;
    let other = env.ok(&[
        "task",
        "create",
        "other",
        "hold a workspace",
        "--harness",
        "sleeper",
    ]);
    let other_id = other["id"].as_str().unwrap();
    let other_ws = env.ws_path(other["workspace"].as_str().unwrap());
    let other_task = rig.task_dir(other_id);
    rig.probe_config(&other_ws, &other_task);
    let before = |p: &Path| std::fs::read(p).unwrap_or_default();
    let other_json = before(&other_task.join("task.json"));
    let projects = before(&env.home.join("projects.json"));
    let keys = before(&rig.home.join(".ssh/authorized_keys"));
    let git_config = before(&env.repo.join(".git/config"));

    // Where orange keeps its shared ssh connections to remote hosts (a file stands in for
    // a host's control socket): hidden inside.
    std::fs::create_dir_all(env.home.join("run/ssh")).unwrap();
    std::fs::write(env.home.join("run/ssh/box"), "").unwrap();
    let t = env.ok(&[
        "task",
        "create",
        "probe",
        "try everything",
        "--harness",
        "probe",
        "--sandbox",
        "bwrap",
    ]);
    assert_eq!(t["sandbox"], "bwrap", "{t}");
    let id = t["id"].as_str().unwrap().to_string();
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    let got = results(&ws);
    let says = |name: &str| {
        got.iter()
            .find(|l| l.split(' ').next() == Some(name))
            .cloned()
            .unwrap_or_else(|| panic!("the probe said nothing of {name}: {got:?}"))
    };
    // A new file at the top of $HOME lands in the sandbox's private copy (checked below:
    // the real one has none).
    for allowed in [
        "commit",
        "private_tmp",
        "home_private",
        "own_task_md",
        "report",
    ] {
        assert_eq!(says(allowed), format!("{allowed} ok"), "{got:?}");
    }
    for refused in [
        "main_checkout",
        "main_git_config",
        "main_git_hooks",
        "worktree_git_file",
        "worktree_commondir",
        "worktree_config",
        "other_workspace",
        "ssh",
        "other_task",
        "projects",
        "audit",
        "tmux",
        "own_task_json",
        "own_history",
        "setup_mark",
        "host_process",
        "remount",
        "ssh_control_seen",
    ] {
        assert_eq!(says(refused), format!("{refused} refused"), "{got:?}");
    }
    // What is true outside: the commit is on the task's branch in the repository; nothing
    // else changed.
    let log = common::git(&env.repo, &["log", "--format=%s", "probe"]);
    assert!(log.lines().next() == Some("probe work"), "{log}");
    assert!(!env.repo.join("escape.txt").exists());
    assert!(!env.repo.join(".git/hooks/pre-commit").exists());
    assert!(!other_ws.join("escape.txt").exists());
    assert!(!rig.home.join(".bashrc").exists());
    assert_eq!(before(&other_task.join("task.json")), other_json);
    assert_eq!(before(&env.home.join("projects.json")), projects);
    assert_eq!(before(&rig.home.join(".ssh/authorized_keys")), keys);
    assert_eq!(before(&env.repo.join(".git/config")), git_config);
    let md = std::fs::read_to_string(rig.task_dir(&id).join("TASK.md")).unwrap();
    assert!(md.contains("probe notes"), "{md}");
    // `orange task complete` from inside was queued; the monitor outside carries it out.
    let reply = env.ok(&["monitor", "--once"]);
    let t = env.wait_status(&id, "reviewing");
    let via: Vec<&Value> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "status.changed" && e["via"] == "sandbox")
        .collect();
    assert_eq!(via.len(), 1, "{reply}\n{t}");
    assert_eq!(t["summary"], "it's $(done) from inside", "{t}");
    // The agent runs under bwrap (behind orange's set-up step), and a respawn keeps it
    // there.
    let under_bwrap =
        |env: &TaskEnv, id: &str| common::rig::under_bwrap(&common::cmdline(&env.pane_pid(id)));
    assert!(under_bwrap(env, &id));
    let session = env.task(&id)["tmux_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux.ok(&["kill-session", "-t", &session]);
    env.ok(&["task", "update", &id, "--status", "working"]);
    env.ok(&["task", "respawn", &id]);
    common::wait_for("the respawned agent", 20, || under_bwrap(env, &id));
}

#[test]
fn the_sandbox_of_a_task_comes_from_its_project_or_config_and_none_turns_it_off() {
    if !bwrap_usable() {
        return;
    }
    let rig = rig();
    let env = &rig.env;
    let sandbox_of = |args: &[&str]| {
        let mut a = vec!["task", "create"];
        a.extend_from_slice(args);
        a.extend(["--harness", "sleeper", "--no-spawn"]);
        env.ok(&a)["sandbox"].as_str().unwrap().to_string()
    };
    assert_eq!(sandbox_of(&["a", "x"]), "none");
    env.ok(&["project", "update", "--sandbox", "bwrap"]);
    assert_eq!(sandbox_of(&["b", "x"]), "bwrap");
    assert_eq!(sandbox_of(&["c", "x", "--sandbox", "none"]), "none");
    env.ok(&["project", "update", "--sandbox", "none"]);
    std::fs::write(
        env.home.join("config.toml"),
        "sandbox = \"bwrap\"\n[harness.sleeper]\ncommand = \"sleep 600\"\n",
    )
    .unwrap();
    // The project's explicit "none" wins over config.toml's global setting.
    assert_eq!(sandbox_of(&["d", "x"]), "none");
    let e = env.err(
        &[
            "task",
            "create",
            "e",
            "x",
            "--harness",
            "sleeper",
            "--sandbox",
            "docker",
        ],
        "invalid_argument",
    );
    assert!(e.contains("bwrap"), "{e}");
}

/// A PATH with only git, tmux and sh: no bwrap.
fn path_without_bwrap(dir: &Path) -> String {
    let bin = dir.join("no-bwrap-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    for p in ["git", "tmux", "sh", "sleep"] {
        let real = common::find_program(&path, p).unwrap();
        std::os::unix::fs::symlink(real, bin.join(p)).unwrap();
    }
    bin.display().to_string()
}

/// Nothing of a task that could not be created: no task, no workspace, no session.
fn nothing_created(env: &TaskEnv) {
    let tasks = env.ok(&["task", "list"]);
    assert_eq!(tasks.as_array().unwrap().len(), 0, "{tasks}");
    if env.home.join("workspaces/.pool.json").exists() {
        let pool = env.pool_json();
        assert!(
            pool["workspaces"].as_object().is_none_or(|w| w.is_empty()),
            "{pool}"
        );
    }
    let sessions = env.tmux.sessions();
    assert!(
        !sessions.iter().any(|s| s.starts_with("app/")),
        "{sessions:?}"
    );
}

#[test]
fn a_missing_or_unusable_bwrap_is_a_clear_error_before_anything_is_created() {
    let rig = rig();
    let env = &rig.env;
    // Missing.
    let path = path_without_bwrap(&env.root());
    let out = env
        .cmd(&[
            "task",
            "create",
            "s1",
            "x",
            "--harness",
            "sleeper",
            "--sandbox",
            "bwrap",
            "--json",
        ])
        .env("PATH", &path)
        .output()
        .unwrap();
    let (ok, v) = common::parse_json_output(&["task", "create"], &out);
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "backend_not_found", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("bubblewrap") && msg.contains("--sandbox none"),
        "{msg}"
    );
    nothing_created(env);
    // Present, but this machine will not let it make namespaces (a fault injected: a bwrap
    // that fails as bwrap does there).
    let fake = env.root().join("failing-bwrap");
    std::fs::create_dir_all(&fake).unwrap();
    common::write_script(&fake.join("bwrap"), "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n");
    let out = env
        .cmd(&[
            "task",
            "create",
            "s2",
            "x",
            "--harness",
            "sleeper",
            "--sandbox",
            "bwrap",
            "--json",
        ])
        .env("PATH", format!("{}:{path}", fake.display()))
        .output()
        .unwrap();
    let (ok, v) = common::parse_json_output(&["task", "create"], &out);
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "backend_command_failed", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("non-privileged user namespaces"), "{msg}");
    assert!(msg.contains("user namespaces may be disabled"), "{msg}");
    nothing_created(env);
    // The same check guards `project update --sandbox`.
    let out = env
        .cmd(&["project", "update", "--sandbox", "bwrap", "--json"])
        .env("PATH", &path)
        .output()
        .unwrap();
    let (ok, v) = common::parse_json_output(&["project", "update"], &out);
    assert!(!ok && v["error"]["code"] == "backend_not_found", "{v}");
    let p = env.ok(&["project", "list"]);
    assert!(p[0].get("sandbox").is_none(), "{p}");
}

/// The agent may write its task's `agent/` directory (its hooks' agent.json) and its
/// workspace: a symbolic link it plants there must never make orange, outside, write
/// elsewhere — `agent/.agent.lock` (opened by the monitor) and the workspace's
/// `.orange-outcome` (written when orange carries out the agent's `task complete`), each
/// pointing into `~/.ssh`; `history.jsonl` it cannot replace at all.
#[test]
fn a_symlink_planted_by_the_agent_never_redirects_orange() {
    if !bwrap_usable() {
        return;
    }
    let rig = rig();
    let env = &rig.env;
    let plant = [
        ": {prompt}; sleep 1; d=$ORANGE_HOME/tasks/$ORANGE_PROJECT/$ORANGE_TASK_ID",
        "ln -sf \\\"$HOME/.ssh/authorized_keys\\\" \\\"$d/history.jsonl\\\" 2>/dev/null",
        "ln -sf \\\"$HOME/.ssh/planted\\\" \\\"$d/agent/.agent.lock\\\"",
        "ln -sf \\\"$HOME/.ssh/authorized_keys\\\" .orange-outcome",
        "orange task complete",
        "echo planted > planted.txt",
        "exec sleep 600",
    ]
    .join("; ");
    std::fs::write(
        env.home.join("config.toml"),
        format!("[harness.planter]\ncommand = \"{plant}\"\n"),
    )
    .unwrap();
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let keys = read(&rig.home.join(".ssh/authorized_keys"));
    let t = env.ok(&[
        "task",
        "create",
        "plant",
        "x",
        "--harness",
        "planter",
        "--sandbox",
        "bwrap",
    ]);
    let id = t["id"].as_str().unwrap().to_string();
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    common::wait_for("the agent to plant its links", 20, || {
        ws.join("planted.txt").exists()
    });
    let dir = rig.task_dir(&id);
    assert!(
        !dir.join("history.jsonl").is_symlink(),
        "the agent replaced its history"
    );
    assert!(dir.join("agent/.agent.lock").is_symlink());
    assert!(ws.join(".orange-outcome").is_symlink());
    // The monitor carries out the request (status, history, outcome) and looks at the
    // agent (its lock): nothing of that may land in ~/.ssh.
    let _ = env.json(&["monitor", "--once"]);
    env.wait_status(&id, "reviewing");
    let _ = env.json(&["monitor", "--once"]);
    assert_eq!(
        read(&rig.home.join(".ssh/authorized_keys")),
        keys,
        "orange wrote through the agent's symlink"
    );
    assert!(!rig.home.join(".ssh/planted").exists());
}

/// A harness program the sandbox does not show (here under /tmp, private inside): refused
/// before anything is recorded, naming the path and `sandbox_readable`; with the path in
/// `sandbox_readable` the same task starts and its agent runs.
#[test]
fn a_harness_outside_the_sandbox_is_refused_before_anything_is_created() {
    if !bwrap_usable() {
        return;
    }
    let rig = rig();
    let env = &rig.env;
    // Under /tmp, which is private inside the sandbox (wherever TMPDIR points).
    let tmp = tempfile::Builder::new()
        .prefix("orange-outside-")
        .tempdir_in("/tmp")
        .unwrap();
    let outside = tmp.path().canonicalize().unwrap();
    let agent = outside.join("agent.sh");
    common::write_script(
        &agent,
        "#!/bin/sh\necho started > started.txt\nexec sleep 600\n",
    );
    let config = |extra: &str| {
        std::fs::write(
            env.home.join("config.toml"),
            format!(
                "{extra}[harness.hidden]\ncommand = {}\n",
                toml_string(&format!("{} {{prompt}}", agent.display()))
            ),
        )
        .unwrap();
    };
    config("");
    let create = || {
        env.json(&[
            "task",
            "create",
            "hidden",
            "run it",
            "--harness",
            "hidden",
            "--sandbox",
            "bwrap",
        ])
    };
    let msg = common::expect_error(&["task", "create"], create(), "invalid_argument");
    assert!(msg.contains(&agent.display().to_string()), "{msg}");
    assert!(msg.contains("sandbox_readable"), "{msg}");
    nothing_created(env);
    // Without a sandbox the same harness is fine (the check is the sandbox's).
    // With its directory readable, the task starts and the agent runs inside.
    config(&format!(
        "sandbox_readable = [{}]\n",
        toml_string(&outside.display().to_string())
    ));
    let (ok, t) = create();
    assert!(ok, "{t}");
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    common::wait_for("the agent to start in the sandbox", 20, || {
        ws.join("started.txt").exists()
    });
}

/// An agent whose program is found when the task starts but not inside the sandbox (a
/// script that runs a tool from /tmp) exits 127: `task explain` and the sidebar say the
/// program was not found inside the sandbox and what to do; it is not counted as a crash.
#[test]
fn an_agent_that_exits_127_in_the_sandbox_is_explained_not_a_crash() {
    if !bwrap_usable() {
        return;
    }
    let rig = rig();
    let env = &rig.env;
    let tmp = tempfile::Builder::new()
        .prefix("orange-outside-")
        .tempdir_in("/tmp")
        .unwrap();
    let outside = tmp.path().canonicalize().unwrap();
    let tool = outside.join("tool");
    common::write_script(&tool, "#!/bin/sh\nexit 0\n");
    std::fs::write(
        env.repo.join("run.sh"),
        format!("#!/bin/sh\nexec {} \"$@\"\n", tool.display()),
    )
    .unwrap();
    common::git(&env.repo, &["add", "run.sh"]);
    common::git(&env.repo, &["commit", "-qm", "runner"]);
    common::git(&env.repo, &["push", "-q", "origin", "HEAD"]);
    std::fs::write(
        env.home.join("config.toml"),
        "[harness.runner]\ncommand = \"sh ./run.sh\"\n",
    )
    .unwrap();
    let t = env.ok(&[
        "task",
        "create",
        "runner",
        "run the tool",
        "--harness",
        "runner",
        "--sandbox",
        "bwrap",
    ]);
    let id = t["id"].as_str().unwrap().to_string();
    env.wait_session(&id, "dead");
    env.ok(&["monitor", "--once"]);
    let explain = env.cmd(&["task", "explain", &id]).output().unwrap();
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(explain.status.success(), "{text}");
    assert!(text.contains("not found inside the sandbox"), "{text}");
    assert!(text.contains("sandbox_readable"), "{text}");
    let task = env.task(&id);
    assert_eq!(task["crash_count"], 0, "{task}");
    assert!(
        !task["history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "agent.crashed"),
        "{task}"
    );
    let out = env
        .cmd(&["sidebar", "--once", "--task", &id, "--width", "200"])
        .output()
        .unwrap();
    let sidebar = String::from_utf8_lossy(&out.stdout);
    assert!(
        sidebar.contains("not found inside the sandbox"),
        "{sidebar}"
    );
}
