//! Issue 15, a first hour that wins a newcomer: what a person types and reads at the
//! command line. Completions that a real bash uses, a task named the way a person names
//! it (a unique id prefix, its branch), and human output without glitches (`task show`
//! with TASK.md's text and history in words, `task cancel` of a task that never started,
//! `restore` with nothing to restore).

use crate::common::{self, TaskEnv};

fn text(env: &TaskEnv, args: &[&str]) -> String {
    let out = env.cmd_in(&env.repo, args).output().unwrap();
    assert!(
        out.status.success(),
        "orange {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn bash_completes_orange_from_the_generated_script() {
    let env = TaskEnv::new();
    let script = env.root().join("orange.bash");
    std::fs::write(&script, text(&env, &["completions", "bash"])).unwrap();
    // What bash offers after `orange ta<TAB>` and `orange task <TAB>`, in a real bash.
    let complete = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        let program = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; _orange orange '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
            words.len() - 1,
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &program])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let top = complete("orange ta");
    assert!(top.lines().any(|l| l == "task"), "{top}");
    let sub = complete("orange task ");
    for want in ["create", "list", "show", "cancel"] {
        assert!(sub.lines().any(|l| l == want), "{want} missing: {sub}");
    }
    for shell in ["zsh", "fish"] {
        let s = text(&env, &["completions", shell]);
        assert!(s.contains("orange") && s.len() > 1000, "{shell}: {s}");
    }
    let e = env.err(&["completions", "tcsh"], "invalid_argument");
    assert!(e.contains("tcsh"), "{e}");
}

#[test]
fn a_task_is_named_by_a_unique_id_prefix_or_its_branch() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.ok(&["task", "create", "fix-login", "Fix the login", "--no-spawn"]);
    let id = t["id"].as_str().unwrap().to_string();
    assert_eq!(env.ok(&["task", "show", &id[..4]])["id"], id.as_str());
    assert_eq!(env.ok(&["task", "show", "fix-login"])["id"], id.as_str());
    env.err(&["task", "show", "no-such-branch"], "task_not_found");
    // Wherever an id is taken: cancel by branch.
    let v = env.ok(&["task", "cancel", "fix-login", "--yes"]);
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["status"], "cancelled");
}

#[test]
fn task_show_cancel_and_restore_speak_in_words() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let summary = "Fix the \"login\" $(bug)\n\nThe form forgets the user.";
    let t = env.ok(&["task", "create", "words", summary, "--no-spawn"]);
    let id = t["id"].as_str().unwrap().to_string();
    // A task that never started made no branch: cancel says so instead of "kept".
    let cancelled = text(&env, &["task", "cancel", &id, "--yes"]);
    assert!(cancelled.contains("never started"), "{cancelled}");
    assert!(!cancelled.contains("kept"), "{cancelled}");
    assert!(!common::git(&env.repo, &["branch", "--list", "words"]).contains("words"));
    // task show: TASK.md's text (its help says it shows TASK.md), the history in words.
    let show = text(&env, &["task", "show", &id]);
    assert!(show.contains("The form forgets the user."), "{show}");
    assert!(show.contains("status pending → cancelled"), "{show}");
    assert!(show.contains("created on branch words"), "{show}");
    assert!(show.contains(" ago") || show.contains("now"), "{show}");
    // restore with nothing to restore: a sentence, not a dangling colon.
    let restore = text(&env, &["restore"]);
    assert!(restore.contains("nothing to restore"), "{restore}");
    assert!(!restore.trim_end().ends_with(':'), "{restore}");
}
