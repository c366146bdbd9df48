//! The command-line contract: help, JSON envelopes, exit codes, unbuilt commands, and the
//! table of what each verb does.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use clap::{CommandFactory, Parser};
use orange::cli::args::{Cli, Does, Runs, Widgets};

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

// The table of what each verb does (`Command::does`): read for every verb there is.

fn does(line: &str) -> Does {
    let argv = std::iter::once("orange").chain(line.split_whitespace());
    match Cli::try_parse_from(argv) {
        Ok(cli) => cli.command.does(),
        Err(e) => panic!("{line}: {e}"),
    }
}

/// Every verb's shortest command line, read from the definition (a value for each
/// required argument): the table is checked for each one there is.
fn every_verb() -> Vec<String> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        let subs: Vec<_> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if !subs.is_empty() {
            for s in subs {
                walk(s, &format!("{path} {}", s.get_name()), out);
            }
            return;
        }
        let mut line = path.trim().to_string();
        for a in cmd.get_arguments().filter(|a| a.is_required_set()) {
            let value = a
                .get_possible_values()
                .first()
                .map(|v| v.get_name().to_string())
                .unwrap_or_else(|| "x".into());
            match a.get_long() {
                Some(long) => line.push_str(&format!(" --{long} {value}")),
                None => line.push_str(&format!(" {value}")),
            }
        }
        out.push(line);
    }
    let mut out = vec![];
    walk(&Cli::command(), "", &mut out);
    out
}

#[test]
fn the_table_holds_together_for_every_verb() {
    let verbs = every_verb();
    assert!(verbs.len() > 40, "{verbs:?}");
    for line in &verbs {
        let d = does(line);
        // An agent starts, the widgets follow and a question is asked only for a change.
        assert!(!d.starts || d.mutates, "{line}: starts but changes nothing");
        assert!(d.widgets == Widgets::Never || d.mutates, "{line}");
        assert!(d.asks.is_none() || d.mutates, "{line}");
        // Only what names a workspace or a project by itself runs where it names.
        let family = line.split(' ').next().unwrap_or("");
        match d.runs {
            Runs::Here => {}
            Runs::Task => assert_eq!(family, "task", "{line}"),
            Runs::Workspace => assert!(d.id.is_some(), "{line}"),
            Runs::Project | Runs::NamedProject => {
                assert!(
                    ["task", "workspace", "project", "group"].contains(&family),
                    "{line}"
                )
            }
        }
        // Progress is shown for the commands a person runs and waits on.
        let waits = ["task", "workspace", "project", "restore", "group"].contains(&family);
        assert_eq!(d.progress, waits, "{line}");
        let repairs = ["task", "workspace", "lane", "restore", "group"].contains(&family);
        assert_eq!(d.repairs, repairs, "{line}");
    }
}

#[test]
fn rows_of_the_table() {
    // The lists the table replaced disagreed on `task attach`: it reads only.
    let d = does("task attach abc");
    assert_eq!((d.mutates, d.starts), (false, false));
    assert_eq!((d.runs, d.id.as_deref()), (Runs::Task, Some("abc")));
    assert!(d.not_served.is_some());
    for verb in ["create", "spawn x", "respawn x"] {
        let d = does(&format!("task {verb}"));
        assert!(d.starts && d.widgets == Widgets::Always, "{verb}");
    }
    assert_eq!(does("task list").runs, Runs::Project);
    assert_eq!(does("task list --all").runs, Runs::Here);
    assert_eq!(does("task complete").id, None);
    assert_eq!(does("task cancel x").asks, Some("Cancel"));
    assert_eq!(does("task delete x").asks, Some("Delete"));
    assert_eq!(does("task cancel x --yes").asks, None);
    // A forced respawn stops a running agent: asked first (issue 24).
    assert_eq!(does("task respawn x").asks, None);
    assert!(does("task respawn x --force").asks.is_some());
    assert_eq!(does("task respawn x --force --yes").asks, None);
    let d = does("task send x hello");
    assert_eq!((d.mutates, d.starts, d.runs), (true, false, Runs::Task));
    let d = does("workspace release p--1");
    assert_eq!((d.runs, d.widgets), (Runs::Workspace, Widgets::OnSuccess));
    let d = does("workspace gc --dry-run");
    assert_eq!((d.mutates, d.widgets), (false, Widgets::Never));
    assert_eq!(does("workspace gc").widgets, Widgets::OnSuccess);
    let d = does("project update app");
    assert_eq!((d.runs, d.id.as_deref()), (Runs::NamedProject, Some("app")));
    assert!(does("monitor").not_served.is_some());
    assert!(does("monitor --once").not_served.is_none());
    assert_eq!(does("restore").widgets, Widgets::Never);
    assert_eq!(does("restore --yes").widgets, Widgets::OnSuccess);
}
