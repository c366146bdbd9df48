//! Pull requests (issue 26 parts 3–5): the REAL `gh` (2.23.0) against the stand-in GitHub
//! API over TLS (tests/common/gh_standin.rs), a real bare origin receiving the pushes, and
//! what orange prints and stores. Assertions are on the requests gh made to the stand-in.

use std::process::Command;

use serde_json::Value;

use crate::common::gh_standin::GhStandin;
use crate::common::*;

/// gh is there (else the test is skipped, or fails in CI).
fn have_gh() -> bool {
    require(
        "gh",
        find_program(&std::env::var("PATH").unwrap_or_default(), "gh").is_some(),
        "the pull-request tests run the real GitHub CLI",
    )
}

/// The real gh in `dir` against the stand-in.
fn gh(sd: &GhStandin, dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new("gh");
    c.args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    for (k, v) in sd.env() {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn the_real_gh_talks_to_the_standin_over_tls() {
    if !have_gh() {
        return;
    }
    let env = Env::new();
    let sd = GhStandin::start();
    sd.add_remote(&env.repo);
    git(&env.repo, &["switch", "-qc", "feature"]);
    let out = gh(
        &sd,
        &env.repo,
        &[
            "pr", "create", "--head", "feature", "--title", "T", "--body", "B",
        ],
    );
    assert!(out.status.success(), "gh pr create: {out:?}");
    let url = String::from_utf8_lossy(&out.stdout);
    assert!(url.contains("/acme/widget/pull/1"), "{url}");
    assert_eq!(sd.pr(1).head, "feature");
    let out = gh(
        &sd,
        &env.repo,
        &[
            "pr",
            "list",
            "--json",
            "number,headRefName,state,isDraft,reviewDecision,statusCheckRollup,mergeable",
        ],
    );
    assert!(out.status.success(), "gh pr list: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["number"], 1, "{v}");
    assert_eq!(v[0]["headRefName"], "feature", "{v}");
    let calls = sd.calls();
    assert!(
        calls.contains(&"PullRequestCreate".to_string()),
        "{calls:?}"
    );
    assert!(calls.contains(&"PullRequestList".to_string()), "{calls:?}");
    assert_eq!(
        sd.connects.lock().unwrap()[0],
        "github.orange.test:443",
        "gh went through the stand-in as its proxy"
    );
    assert!(sd
        .requests()
        .iter()
        .all(|r| r.authorization.as_deref() == Some("token standin-token")));
}

/// A task env whose orange commands (and gh under them) talk to `sd`, with a project
/// registered and the repository's `github` remote pointing gh at the stand-in.
fn pr_env(sd: &GhStandin) -> TaskEnv {
    let mut env = TaskEnv::new();
    // The real gh: not tests/fixtures/bin's fake one (the fake agents need nothing there).
    env.path = format!(
        "{}:{}",
        crate::common::bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.extra.extend(sd.env());
    sd.add_remote(&env.repo);
    env.add_project(&[]);
    env
}

/// A task on `branch` with one commit in its workspace: its id.
fn task_with_commit(env: &TaskEnv, branch: &str) -> String {
    let id = env.create_id(branch, "fake-wait");
    let ws = env.ws_path(env.task(&id)["workspace"].as_str().unwrap());
    std::fs::write(ws.join("feature.txt"), "new\n").unwrap();
    git(&ws, &["add", "feature.txt"]);
    git(&ws, &["commit", "-qm", "feature"]);
    id
}

/// gh asked the stand-in to create exactly one pull request, and for `head`.
fn assert_created_once(sd: &GhStandin, head: &str) {
    assert_eq!(sd.count("PullRequestCreate"), 1, "{:?}", sd.calls());
    let create = sd
        .requests()
        .into_iter()
        .find(|r| r.operation.as_deref() == Some("PullRequestCreate"))
        .unwrap();
    assert_eq!(create.body["variables"]["input"]["headRefName"], head);
}

/// The commit `branch` is at in the bare origin, if it is there.
fn origin_has(env: &TaskEnv, branch: &str) -> Option<String> {
    let out = git_output(
        &env.origin,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ],
    );
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn task_pr_pushes_the_branch_and_opens_one_pull_request() {
    if !have_gh() {
        return;
    }
    let sd = GhStandin::start();
    let env = pr_env(&sd);
    let id = task_with_commit(&env, "fix-login");
    let marker = env.root().join("pwned");
    let title = format!(
        "Fix \"login\" $(touch {}) `id`\nsecond line",
        marker.display()
    );
    let v = env.ok(&["task", "pr", &id, "--title", &title, "--draft"]);
    assert_eq!(v["created"], true, "{v}");
    assert_eq!(v["pr"]["number"], 1, "{v}");
    // The branch reached the real bare origin, at the workspace's commit.
    let ws = env.ws_path(env.task(&id)["workspace"].as_str().unwrap());
    assert_eq!(
        origin_has(&env, "fix-login"),
        Some(git(&ws, &["rev-parse", "HEAD"]))
    );
    // gh made it with exactly that title (an argument, never a shell line).
    let pr = sd.pr(1);
    assert_eq!(pr.title, title);
    assert_eq!(
        (pr.head.as_str(), pr.base.as_str(), pr.draft),
        ("fix-login", "main", true)
    );
    assert!(!marker.exists(), "the title ran a command");
    assert_created_once(&sd, "fix-login");
    // Kept with the task, and in its history.
    let t = env.task(&id);
    assert_eq!(t["pr"]["number"], 1, "{t}");
    assert!(
        t["pr"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/acme/widget/pull/1"),
        "{t}"
    );
    assert_eq!(env.history_events(&id, "pr.created").len(), 1);
    let text = env
        .cmd_in(&env.repo, &["task", "show", &id])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(shown.contains("pr: #1 draft"), "{shown}");
    assert!(shown.contains("PR #1 created: https://"), "{shown}");

    // Again: the open one is linked, not made twice.
    let out = env
        .cmd_in(&env.repo, &["task", "pr", &id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("linked the open pull request #1"), "{said}");
    assert_eq!(sd.count("PullRequestCreate"), 1, "{:?}", sd.calls());
    assert_eq!(sd.with(|w| w.prs.len()), 1);
}

#[test]
fn task_pr_without_gh_or_logged_out_says_so_and_pushes_nothing() {
    if !have_gh() {
        return;
    }
    let sd = GhStandin::start();
    let mut env = pr_env(&sd);
    let id = task_with_commit(&env, "no-gh");
    // No gh on PATH: orange, git and tmux only.
    let saved = env.path.clone();
    env.path = crate::common::gh_standin::path_without_gh(&env.root(), &saved);
    let (ok, v) = env.json(&["task", "pr", &id]);
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "gh_not_installed", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert_eq!(msg.matches("gh is not installed").count(), 1, "{msg}");
    let out = env
        .cmd_in(&env.repo, &["task", "pr", &id])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("gh is not installed").count(), 1, "{err}");
    env.path = saved;
    // Logged out: what to do.
    env.extra = sd.env_logged_out();
    let msg = env.err(&["task", "pr", &id], "gh_not_logged_in");
    assert!(
        msg.contains("gh auth login") && msg.contains("GH_TOKEN"),
        "{msg}"
    );
    assert_eq!(origin_has(&env, "no-gh"), None, "nothing was pushed");
    assert!(
        sd.requests()
            .iter()
            .all(|r| r.authorization.as_deref() != Some("token standin-token")),
        "no request carried a token"
    );
    assert!(env.task(&id)["pr"].is_null());
}

#[test]
fn task_merge_merges_the_pr_with_gh_when_checks_pass_and_refuses_otherwise() {
    if !have_gh() {
        return;
    }
    use crate::common::gh_standin::Check;
    let sd = GhStandin::start();
    let env = pr_env(&sd);
    env.append_config("[pr]\nmerge = \"squash\"\n");
    let id = task_with_commit(&env, "ship-it");
    env.ok(&["task", "pr", &id]);
    sd.edit_pr(1, |p| {
        p.checks = vec![
            Check::passed("build"),
            Check::failed("test"),
            Check::running("lint"),
        ];
        p.review_decision = "CHANGES_REQUESTED".into();
    });
    let msg = env.err(&["task", "merge", &id], "pr_not_ready");
    assert!(
        msg.contains("1 of 3 checks failed")
            && msg.contains("changes are requested")
            && msg.contains("--force"),
        "{msg}"
    );
    assert_eq!(sd.pr(1).state, "OPEN");
    assert_eq!(sd.count("PullRequestMerge"), 0);
    assert_ne!(env.task(&id)["status"], "done");
    // Its PR known, gh gone: refused, never merged locally behind the PR's back.
    let out = env
        .cmd_in(&env.repo, &["task", "merge", &id, "--json"])
        .env(
            "PATH",
            crate::common::gh_standin::path_without_gh(&env.root(), &env.path),
        )
        .output()
        .unwrap();
    let (ok, v) = parse_json_output(&["task", "merge"], &out);
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "gh_not_installed", "{v}");
    assert_ne!(env.task(&id)["status"], "done");
    // Green and approved: merged on GitHub by the configured method, then the task ends.
    sd.edit_pr(1, |p| {
        p.checks = vec![Check::passed("build"), Check::passed("test")];
        p.review_decision = "APPROVED".into();
    });
    let v = env.ok(&["task", "merge", &id]);
    assert_eq!(v["merge"]["via"], "pr", "{v}");
    assert_eq!(sd.pr(1).state, "MERGED");
    assert_eq!(sd.pr(1).merge_method.as_deref(), Some("SQUASH"));
    let t = env.task(&id);
    assert_eq!(t["status"], "done", "{t}");
    assert!(t["workspace"].is_null(), "{t}");
    assert_eq!(t["pr"]["pr_state"], "MERGED", "{t}");
    assert_eq!(env.history_events(&id, "pr.merged").len(), 1);
}

#[test]
fn task_merge_force_merges_a_pr_whose_checks_fail() {
    if !have_gh() {
        return;
    }
    use crate::common::gh_standin::Check;
    let sd = GhStandin::start();
    let env = pr_env(&sd);
    let id = task_with_commit(&env, "forced");
    env.ok(&["task", "pr", &id]);
    sd.edit_pr(1, |p| p.checks = vec![Check::failed("test")]);
    env.err(&["task", "merge", &id], "pr_not_ready");
    let v = env.ok(&["task", "merge", &id, "--force"]);
    assert_eq!(v["merge"]["via"], "pr", "{v}");
    assert_eq!(sd.pr(1).merge_method.as_deref(), Some("MERGE"));
    assert_eq!(env.history_events(&id, "pr.merged")[0]["forced"], true);
}

/// `monitor --once` for `env`, its clock `skew` ahead (`ORANGE_CLOCK_SKEW`).
fn monitor_once(env: &TaskEnv, skew: &str) {
    env.monitor_at(skew);
}

/// The notifier's keys told so far (`run/notified-*.json`).
fn told(env: &TaskEnv) -> Vec<String> {
    std::fs::read_dir(env.home.join("run"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("notified-"))
        .filter_map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).ok()?).ok())
        .flat_map(|v| {
            v["told"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|k| k.as_str().map(String::from))
        })
        .collect()
}

#[test]
fn the_monitor_refreshes_prs_with_one_gh_call_per_project_at_most_once_a_minute() {
    if !have_gh() {
        return;
    }
    use crate::common::gh_standin::Check;
    let sd = GhStandin::start();
    let env = pr_env(&sd);
    let a = task_with_commit(&env, "red-ci");
    let b = task_with_commit(&env, "asked-changes");
    env.ok(&["task", "pr", &a]);
    env.ok(&["task", "pr", &b]);
    sd.edit_pr(1, |p| {
        p.checks = vec![Check::passed("build"), Check::failed("test")]
    });
    sd.edit_pr(2, |p| p.review_decision = "CHANGES_REQUESTED".into());
    monitor_once(&env, "0s");
    // ONE gh pr list for the project's two tasks.
    assert_eq!(sd.count("PullRequestList"), 1, "{:?}", sd.calls());
    assert_eq!(env.history_events(&a, "pr.checks_failed").len(), 1);
    assert_eq!(env.history_events(&b, "pr.changes_requested").len(), 1);
    // Shown: task show, task list's column, the sidebar.
    let t = env.task(&a);
    assert_eq!(t["pr"]["checks"]["failed"], 1, "{t}");
    let next = t["next_step"].to_string();
    assert!(next.contains("--from-pr"), "{t}");
    let list = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains("PR") && list.contains("#1 open · checks 1/2 ✗"),
        "{list}"
    );
    assert!(list.contains("#2 open · changes requested"), "{list}");
    let (ok, m) = env.json(&["sidebar", "--once", "--task", &b]);
    assert!(ok, "{m}");
    assert_eq!(m["pr"], "#2 open · changes requested", "{m}");
    let frame = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--once", "--task", &a, "--width", "60"],
        )
        .output()
        .unwrap();
    let frame = String::from_utf8_lossy(&frame.stdout);
    assert!(frame.contains("PR: #1 open · checks 1/2 ✗"), "{frame}");
    // The widgets and the picker (the snapshot's items): waiting for you, and why.
    let status = env.ok(&["status", "--format", "json"]);
    let item = |id: &str| {
        status["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(item(&a)["bucket"], "waiting", "{status}");
    assert_eq!(item(&a)["reason"], "PR #1: checks failed (1/2)", "{status}");
    assert_eq!(item(&b)["reason"], "PR #2: changes requested", "{status}");
    // Each needs you, told once per change.
    let keys = told(&env);
    assert!(
        keys.iter()
            .any(|k| k.contains(&a) && k.ends_with("#checks_failed"))
            && keys
                .iter()
                .any(|k| k.contains(&b) && k.ends_with("#changes_requested")),
        "{keys:?}"
    );
    // Within the minute: no gh call, whatever the stand-in says now.
    sd.edit_pr(1, |p| {
        p.checks = vec![Check::passed("build"), Check::passed("test")];
        p.review_decision = "APPROVED".into();
    });
    monitor_once(&env, "0s");
    assert_eq!(sd.count("PullRequestList"), 1, "{:?}", sd.calls());
    // A minute on (the monitor's clock ahead, no sleep): asked again, the change recorded.
    monitor_once(&env, "61s");
    assert_eq!(sd.count("PullRequestList"), 2, "{:?}", sd.calls());
    assert_eq!(env.history_events(&a, "pr.checks_passed").len(), 1);
    assert_eq!(env.history_events(&a, "pr.approved").len(), 1);
    assert_eq!(
        env.history_events(&a, "pr.checks_failed").len(),
        1,
        "not told twice"
    );
    assert_eq!(env.task(&a)["pr"]["review"], "APPROVED");
    // Merged on GitHub: recorded as such.
    sd.edit_pr(2, |p| p.state = "MERGED".into());
    monitor_once(&env, "122s");
    assert_eq!(env.history_events(&b, "pr.merged").len(), 1);
}

#[test]
fn review_from_pr_turns_the_prs_review_comments_into_a_round() {
    if !have_gh() {
        return;
    }
    use crate::common::gh_standin::ReviewComment;
    let sd = GhStandin::start();
    let env = pr_env(&sd);
    let id = task_with_commit(&env, "commented");
    // Before a PR: a clear error.
    let msg = env.err(&["task", "review", &id, "--from-pr"], "invalid_argument");
    assert!(msg.contains("task pr"), "{msg}");
    env.ok(&["task", "pr", &id]);
    sd.edit_pr(1, |p| {
        p.comments = vec![ReviewComment {
            path: "feature.txt".into(),
            line: 1,
            side: "RIGHT".into(),
            body: "say \"old\" here\u{1b}[31m".into(),
            user: "octo".into(),
        }]
    });
    let v = env.ok(&["task", "review", &id, "--from-pr"]);
    let c = &v["round"]["comments"][0];
    assert_eq!(c["path"], "feature.txt", "{v}");
    assert_eq!(c["line"], 1, "{v}");
    assert_eq!(c["code"], "new", "{v}");
    assert!(
        c["text"]
            .as_str()
            .unwrap()
            .starts_with("octo: say \"old\" here"),
        "{v}"
    );
    assert_eq!(v["round"]["by"], "pull_request", "{v}");
    assert_eq!(
        sd.count("GET /api/v3/repos/acme/widget/pulls/1/comments"),
        1,
        "{:?}",
        sd.calls()
    );
}

#[test]
fn the_popups_pull_request_action_runs_task_pr() {
    if !have_gh() {
        return;
    }
    let sd = GhStandin::start();
    let env = pr_env(&sd);
    let id = task_with_commit(&env, "from-popup");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tmux/popup.sh");
    let mut vars: Vec<(String, String)> = sd.env();
    vars.push(("PATH".into(), env.path.clone()));
    vars.push(("ORANGE_HOME".into(), env.home.display().to_string()));
    vars.push(("HOME".into(), env.user_home.display().to_string()));
    vars.push(("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()));
    let mut args: Vec<String> = ["new-window", "-d", "-n", "popup-pr", "-c"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(env.repo.display().to_string());
    for (k, v) in vars {
        args.push("-e".into());
        args.push(format!("{k}={v}"));
    }
    args.extend([
        "bash".to_string(),
        script.display().to_string(),
        crate::common::bin().display().to_string(),
        "pr".into(),
        id.clone(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.tmux.ok(&args);
    wait_for("the popup's PR", 20, || sd.count("PullRequestCreate") == 1);
    let mut screen = String::new();
    wait_for("the popup to say so", 20, || {
        screen = env.tmux.ok(&["capture-pane", "-p", "-t", ":popup-pr"]);
        screen.contains("opened pull request #1")
    });
    assert_eq!(env.task(&id)["pr"]["number"], 1);
    assert!(origin_has(&env, "from-popup").is_some(), "{screen}");
}

#[test]
fn group_pick_pr_opens_the_winners_pull_request_and_cancels_the_others() {
    if !have_gh() {
        return;
    }
    let sd = GhStandin::start();
    let env = pr_env(&sd);
    let v = env.ok(&[
        "task",
        "create",
        "fix-login",
        "do the thing",
        "--n",
        "2",
        "--harness",
        "fake-wait",
    ]);
    let gid = v["group"]["id"].as_str().unwrap().to_string();
    let ids: Vec<String> = v["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["task"]["id"]
                .as_str()
                .or(m["task"].as_str())
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.len(), 2, "{v}");
    let (winner, loser) = (&ids[1], &ids[0]);
    let ws = env.ws_path(env.task(winner)["workspace"].as_str().unwrap());
    std::fs::write(ws.join("feature.txt"), "new\n").unwrap();
    git(&ws, &["add", "feature.txt"]);
    git(&ws, &["commit", "-qm", "feature"]);

    // --merge and --pr are one or the other.
    let out = env
        .cmd_in(&env.repo, &["group", "pick", &gid, "2", "--merge", "--pr"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(sd.count("PullRequestCreate"), 0, "{:?}", sd.calls());

    let p = env.ok(&["group", "pick", &gid, "2", "--pr", "--yes"]);
    assert_eq!(p["group"]["picked"], "2", "{p}");
    assert_eq!(p["pr"]["created"], true, "{p}");
    // The pull request is the winner's branch, pushed to the real origin at its commit.
    assert_created_once(&sd, "fix-login/2");
    assert_eq!(sd.pr(1).head, "fix-login/2");
    assert_eq!(
        origin_has(&env, "fix-login/2"),
        Some(git(&ws, &["rev-parse", "HEAD"]))
    );
    assert_eq!(origin_has(&env, "fix-login/1"), None);
    // Kept with the winner as `task pr` keeps it; the winner goes on, the loser is cancelled.
    let w = env.task(winner);
    assert_eq!(w["pr"]["number"], 1, "{w}");
    assert_ne!(w["status"], "cancelled", "{w}");
    assert_eq!(env.history_events(winner, "pr.created").len(), 1);
    assert_eq!(env.history_events(winner, "group.picked").len(), 1);
    assert_eq!(env.task(loser)["status"], "cancelled");
    let lost = env.history_events(loser, "group.not_picked");
    assert_eq!(lost[0]["note"], "not picked: /2 won");
}
