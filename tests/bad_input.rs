//! Bad input and bad state: a clear error at the door,
//! nothing recorded, nothing forgotten, never a panic.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use common::{expect_error, parse_json_output, Env};

/// Run orange with raw (possibly non-UTF-8) arguments from the repository.
fn raw(env: &Env, args: &[&[u8]]) -> std::process::Output {
    let mut c: Command = env.cmd(&[]);
    for a in args {
        c.arg(std::ffi::OsStr::from_bytes(a));
    }
    c.output().unwrap()
}

#[test]
fn a_non_utf8_argument_is_an_error_not_a_panic() {
    let env = Env::new();
    env.add_project(&[]);
    for args in [
        vec![&b"task"[..], b"show", b"\xff"],
        vec![&b"task"[..], b"create", b"feat/\xfe", b"x"],
        vec![&b"project"[..], b"add", b"\xff\xfe"],
        vec![&b"--project"[..], b"\xff", b"task", b"list"],
    ] {
        let out = raw(&env, &args);
        assert_ne!(
            out.status.code(),
            Some(101),
            "panicked: {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("UTF-8") || stderr.contains("utf-8") || stderr.contains("invalid"),
            "{args:?}: {stderr}"
        );
        let mut with_json = args.clone();
        with_json.push(b"--json");
        let out = raw(&env, &with_json);
        assert_ne!(out.status.code(), Some(101), "{with_json:?}");
        let (ok, v) = parse_json_output(&["task"], &out);
        assert!(!ok);
        assert_eq!(v["error"]["code"], "invalid_argument", "{v}");
    }
    // Nothing was recorded.
    let v = env.ok(&["task", "list"]);
    assert_eq!(v.as_array().unwrap().len(), 0, "{v}");
}

#[test]
fn state_files_without_their_required_fields_are_corrupt_not_empty() {
    let env = Env::new();
    env.add_project(&["--pool-size", "2"]);
    env.ok(&["workspace", "acquire", "--task", "keep-me"]);
    for (file, args) in [
        ("workspaces/.pool.json", vec!["workspace", "list"]),
        ("projects.json", vec!["project", "list"]),
        ("lanes/registry.json", vec!["lane", "list"]),
    ] {
        let path = env.home.join(file);
        let before = std::fs::read(&path).ok();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // Wrong types parse as JSON but hold nothing orange can use.
        for wrong in [
            "[]",
            "\"x\"",
            "{\"workspaces\": [], \"projects\": 3, \"lanes\": []}",
        ] {
            std::fs::write(&path, wrong).unwrap();
            let msg = expect_error(&args, env.json(&args), "state_corrupt");
            assert!(msg.contains(path.to_str().unwrap()), "{wrong}: {msg}");
        }
        std::fs::write(&path, "{}").unwrap();
        let msg = expect_error(&args, env.json(&args), "state_corrupt");
        assert!(msg.contains(path.to_str().unwrap()), "{msg}");
        // Never rewritten: the next acquire must not forget the bound workspace.
        if file.ends_with(".pool.json") {
            expect_error(
                &["workspace", "acquire"],
                env.json(&["workspace", "acquire", "--task", "another"]),
                "state_corrupt",
            );
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
        match before {
            Some(b) => std::fs::write(&path, b).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
    }
    // Restored: the bound workspace is still bound.
    let list = env.ok(&["workspace", "list"]);
    assert!(list.to_string().contains("keep-me"), "{list}");
    // A task.json without its fields, or with a wrong type: state_corrupt with its path.
    // (A harness named: a task that is not started needs no agent CLI installed.)
    let t = env.ok(&[
        "task",
        "create",
        "sc/a",
        "x",
        "--harness",
        "claude",
        "--no-spawn",
    ]);
    let path = env
        .home
        .join(format!("tasks/app/{}/task.json", t["id"].as_str().unwrap()));
    let good = std::fs::read_to_string(&path).unwrap();
    for wrong in ["{}".to_string(), good.replace("\"pending\"", "7")] {
        std::fs::write(&path, &wrong).unwrap();
        let msg = expect_error(
            &["task", "list"],
            env.json(&["task", "list"]),
            "state_corrupt",
        );
        assert!(msg.contains(path.to_str().unwrap()), "{wrong}: {msg}");
    }
}

#[test]
fn overlong_branches_and_summaries_are_refused_at_the_door() {
    let env = Env::new();
    env.add_project(&[]);
    let long_branch = format!("feat/{}", "b".repeat(100 * 1024));
    let msg = expect_error(
        &["task", "create"],
        env.json(&[
            "task",
            "create",
            &long_branch,
            "x",
            "--harness",
            "claude",
            "--no-spawn",
        ]),
        "invalid_argument",
    );
    assert!(msg.contains("at most 200"), "{msg}");
    let long_summary = "s".repeat(100 * 1024);
    let msg = expect_error(
        &["task", "create"],
        env.json(&[
            "task",
            "create",
            "feat/ok",
            &long_summary,
            "--harness",
            "claude",
            "--no-spawn",
        ]),
        "invalid_argument",
    );
    assert!(msg.contains("at most 2000"), "{msg}");
    assert_eq!(env.ok(&["task", "list"]).as_array().unwrap().len(), 0);
    // The longest accepted ones work; a table shows them cut, --json whole. (A harness
    // named: a task that is not started needs no agent CLI installed.)
    let branch = format!("feat/{}", "b".repeat(195));
    env.ok(&[
        "task",
        "create",
        &branch,
        &"s".repeat(2000),
        "--harness",
        "claude",
        "--no-spawn",
    ]);
    let out = env.cmd(&["task", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest < 400, "a task list line is {widest} wide:\n{text}");
    assert!(text.contains('…'), "{text}");
    let json = env.ok(&["task", "list"]);
    assert_eq!(json[0]["summary"].as_str().unwrap().len(), 2000);
    assert_eq!(json[0]["branch"], branch.as_str());
}

#[test]
fn a_task_that_cannot_start_is_refused_before_anything_is_recorded() {
    let env = common::TaskEnv::new();
    env.add_project(&[]);
    let mut cfg = std::fs::read_to_string(env.home.join("config.toml")).unwrap();
    cfg.push_str("[harness.ghost]\ncommand = \"no-such-agent-xyz --yes {prompt}\"\n");
    std::fs::write(env.home.join("config.toml"), cfg).unwrap();
    // The agent's program is not installed (a user harness's first word).
    let msg = env.err(
        &[
            "task",
            "create",
            "feature/login",
            "Log in",
            "--harness",
            "ghost",
        ],
        "backend_not_found",
    );
    assert!(msg.contains("no-such-agent-xyz"), "{msg}");
    // An empty summary: no prompt to give the agent, and not "no summary" either.
    env.err(
        &[
            "task",
            "create",
            "feature/login",
            "",
            "--harness",
            "fake-wait",
        ],
        "invalid_argument",
    );
    assert_eq!(env.ok(&["task", "list"]).as_array().unwrap().len(), 0);
    // Nothing kept: the same branch is free for the retry.
    env.ok(&[
        "task",
        "create",
        "feature/login",
        "Log in",
        "--harness",
        "fake-wait",
    ]);
}

#[test]
fn a_repository_without_commits_is_refused_before_anything_is_recorded() {
    let env = common::TaskEnv::new();
    let empty = env.root().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    common::git(&empty, &["init", "-q", "-b", "main"]);
    let (ok, v) = env.json_in(&empty, &["project", "add", "--name", "empty"]);
    // Registering an empty repository is allowed (commits may come); starting a task in it
    // is not.
    assert!(ok, "{v}");
    let (ok, v) = env.json_in(
        &empty,
        &[
            "task",
            "create",
            "feat/x",
            "Do it",
            "--harness",
            "fake-wait",
        ],
    );
    assert!(!ok, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no commit"),
        "{v}"
    );
    let (_, list) = env.json_in(&empty, &["task", "list"]);
    assert_eq!(list.as_array().map(|a| a.len()), Some(0), "{list}");
}

#[test]
fn an_orange_home_that_cannot_be_read_is_an_io_error_naming_the_path() {
    let env = Env::new();
    let file = env.root().join("a-file");
    std::fs::write(&file, "").unwrap();
    let home = file.join("home");
    let args = ["task", "list", "--json"];
    let out = env.cmd(&args).env("ORANGE_HOME", &home).output().unwrap();
    let (ok, v) = parse_json_output(&args, &out);
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "io_error", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains(home.to_str().unwrap()), "{msg}");
}

#[test]
fn harness_templates_give_each_placeholder_as_one_argument() {
    let env = common::TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let out = env.root().join("args.txt");
    // Each argument ended by a NUL (the prompt has lines), then the agent waits.
    env.append_config(&format!(
        "[harness.args]\ncommand = \"printf '%s\\\\0' {{branch}} {{workspace}} {{task_id}} {{port}} {{project}} {{prompt}} > '{}'; sleep 600\"\n",
        out.display()
    ));
    let branch = "feat/$(touch${IFS}pwned);it's`id`";
    let t = env.create(&[branch, "do it; rm -rf $HOME", "--harness", "args"]);
    common::wait_for("the agent's arguments", 20, || {
        std::fs::read_to_string(&out).is_ok_and(|s| s.matches('\0').count() == 6)
    });
    let args = std::fs::read_to_string(&out).unwrap();
    let mut args: Vec<&str> = args.split_terminator('\0').collect();
    // The prompt: the summary, then what orange tells every agent.
    let prompt = args.pop().unwrap();
    assert!(
        prompt.starts_with("do it; rm -rf $HOME\n\n(orange task"),
        "{prompt}"
    );
    let name = t["workspace"].as_str().unwrap();
    let ws = env.ws_path(name);
    let slot: u16 = name.rsplit_once("--").unwrap().1.parse().unwrap();
    assert_eq!(
        args,
        [
            branch,
            ws.to_str().unwrap(),
            t["id"].as_str().unwrap(),
            &(3100 + slot).to_string(),
            "app",
        ]
    );
    assert!(!ws.join("pwned").exists() && !env.repo.join("pwned").exists());
}

#[test]
fn an_unknown_template_placeholder_is_a_config_error_naming_it() {
    let env = common::TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[harness.typo]\ncommand = \"agent --branch {brnch} {prompt}\"\n");
    let msg = env.err(
        &["task", "create", "feat/t", "x", "--harness", "typo"],
        "invalid_argument",
    );
    assert!(
        msg.contains("[harness.typo]") && msg.contains("{brnch}") && msg.contains("{branch}"),
        "{msg}"
    );
    assert_eq!(env.ok(&["task", "list"]).as_array().unwrap().len(), 0);
}

/// A group's record deleted behind orange's back while it is judged (its check command
/// removes it, in the middle of the judging): the judge says the group is gone and writes
/// no record for it — not a blank group under no project's name.
#[test]
fn a_group_removed_while_it_is_judged_is_an_error_not_a_blank_record() {
    let env = common::TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let groups = env.home.join("tasks/app/.groups");
    let check = format!("rm -f '{}'/*.json; true", groups.display());
    env.ok(&["project", "update", "--check-cmd", &check]);
    let v = env.ok(&[
        "task",
        "create",
        "gone",
        "do it",
        "--n",
        "2",
        "--harness",
        "fake-wait",
    ]);
    let gid = v["group"]["id"].as_str().unwrap().to_string();
    let e = env.err(&["group", "judge", &gid, "--now"], "invalid_argument");
    assert!(e.contains(&gid) && e.contains("gone"), "{e}");
    // (Before: a group with no id and no project, saved as tasks/.groups/.json.)
    let blank = env.home.join("tasks/.groups");
    assert!(!blank.exists(), "a record written for no group: {blank:?}");
    assert!(env.ok(&["group", "list"]).as_array().unwrap().is_empty());
    // Its members are ordinary tasks now, still there.
    assert_eq!(env.ok(&["task", "list"]).as_array().unwrap().len(), 2);
}
