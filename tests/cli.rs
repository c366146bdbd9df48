//! The command-line contract: help, JSON envelopes, exit codes, unbuilt commands.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::Env;

#[test]
fn help_explains_every_family() {
    let env = Env::new();
    let out = env.cmd(&["--help"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for family in [
        "project",
        "workspace",
        "task",
        "lane",
        "sidebar",
        "status",
        "monitor",
        "hook",
        "demo",
        "ORANGE_HOME",
    ] {
        assert!(text.contains(family), "--help lacks {family}: {text}");
    }
    let out = env
        .cmd(&["workspace", "acquire", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--wait") && text.contains("DURATION"),
        "{text}"
    );
}

#[test]
fn usage_errors_are_json_with_json_and_one_line_without() {
    let env = Env::new();
    let (ok, v) = env.json(&["workspace", "acquire"]);
    assert!(!ok);
    assert_eq!(v["error"]["code"], "invalid_argument");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("--task"),
        "{v}"
    );
    let out = env.cmd(&["workspace", "frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("frobnicate"));
}

#[test]
fn errors_without_json_go_to_stderr_as_one_line() {
    let env = Env::new();
    let out = env
        .cmd(&["workspace", "list", "--project", "ghost"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("project not found: ghost") && stderr.contains("[project_not_found]"),
        "{stderr}"
    );
}

#[test]
fn human_listing_is_a_table() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["workspace", "init"]);
    let out = env.cmd(&["workspace", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("STATUS"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("app--1") && lines[1].contains("available"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no colour when stdout is not a terminal"
    );
}
