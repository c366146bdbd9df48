//! The sidebar's terminal (adapters/terminal.rs) seen from outside, on the pty of a real
//! tmux pane, with `stty` (a program of its own, not the code under test): raw mode while
//! the sidebar draws; after `q` the terminal exactly as it was; after orange is killed by
//! SIGKILL (which runs no code of orange's) the same, restored by the watchdog, and no
//! process of orange's left behind.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::common::{self, sshd::descendants, wait_until, TaskEnv};

const WAIT: Duration = Duration::from_secs(10);

/// A sidebar running in session `sb` of the test server: `stty -a` of the pane's terminal
/// is written to `before` just before orange starts.
struct Sidebar {
    tty: String,
    orange: u32,
    before: PathBuf,
}

fn start_sidebar(env: &TaskEnv) -> Sidebar {
    env.add_project(&["--pool-size", "1"]);
    let t = env.ok(&[
        "task",
        "create",
        "term",
        "Terminal",
        "--harness",
        "fake-wait",
    ]);
    let id = common::id(&t);
    let before = env.root().join("stty-before");
    env.sidebar_session(
        "sb",
        &id,
        (40, 20),
        &format!("stty -a > '{}'; ", before.display()),
    );
    let tty = env.tmux.ok(&["display", "-p", "-t", "=sb:", "#{pane_tty}"]);
    let shell: u32 = env
        .tmux
        .ok(&["display", "-p", "-t", "=sb:", "#{pane_pid}"])
        .parse()
        .unwrap();
    // The sidebar is the shell's own child: its children (the watchdog, or one forked to
    // run tmux, named "orange" until it execs) are not it.
    let mut orange = None;
    wait_until("orange to run in the pane", WAIT, || {
        orange = descendants(shell)
            .into_iter()
            .find(|p| comm(*p) == "orange" && parent(*p) == Some(shell));
        orange.is_some()
    });
    wait_until("the first frame", WAIT, || screen(env).contains("app/term"));
    Sidebar {
        tty,
        orange: orange.unwrap(),
        before,
    }
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

/// The parent of a process (`None`: gone).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Gone, or a zombie nobody reaped yet: no longer running.
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn screen(env: &TaskEnv) -> String {
    env.tmux.ok(&["capture-pane", "-p", "-t", "=sb:"])
}

/// `stty -a` of a terminal device.
fn stty_of(tty: &str) -> String {
    let out = Command::new("stty")
        .args(["-F", tty, "-a"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stty -F {tty}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn has_word(stty: &str, word: &str) -> bool {
    stty.split([' ', ';', '\n']).any(|w| w == word)
}

fn cursor_and_screen(env: &TaskEnv) -> String {
    env.tmux.ok(&[
        "display",
        "-p",
        "-t",
        "=sb:",
        "#{cursor_flag} #{alternate_on}",
    ])
}

/// While the sidebar draws: no echo, no line editing, no signals from keys, one key at a
/// time; the alternate screen without cursor.
fn assert_drawing_mode(env: &TaskEnv, sb: &Sidebar) {
    let now = stty_of(&sb.tty);
    for w in ["-echo", "-icanon", "-isig"] {
        assert!(has_word(&now, w), "{w} while drawing:\n{now}");
    }
    assert!(now.contains("min = 1") && now.contains("time = 0"), "{now}");
    assert_eq!(cursor_and_screen(env), "0 1");
    let before = std::fs::read_to_string(&sb.before).unwrap();
    for w in ["echo", "icanon", "isig"] {
        assert!(has_word(&before, w), "{w} before the sidebar:\n{before}");
    }
}

#[test]
fn q_gives_back_the_terminal_as_it_was() {
    let env = TaskEnv::new();
    let sb = start_sidebar(&env);
    assert_drawing_mode(&env, &sb);
    let helpers = descendants(sb.orange);
    env.tmux.ok(&["send-keys", "-t", "=sb:", "q"]);
    wait_until("the shell after q", WAIT, || {
        screen(&env).contains("exited 0")
    });
    let before = std::fs::read_to_string(&sb.before).unwrap();
    assert_eq!(stty_of(&sb.tty), before);
    assert_eq!(cursor_and_screen(&env), "1 0");
    for p in helpers {
        assert!(ended(p), "process {p} ({}) outlived the sidebar", comm(p));
    }
}

#[test]
fn a_sidebar_killed_by_sigkill_leaves_a_sane_terminal() {
    let env = TaskEnv::new();
    let sb = start_sidebar(&env);
    assert_drawing_mode(&env, &sb);
    let helpers = descendants(sb.orange);
    let status = Command::new("kill")
        .args(["-KILL", &sb.orange.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let before = std::fs::read_to_string(&sb.before).unwrap();
    let mut now = String::new();
    wait_until("the terminal settings to come back", WAIT, || {
        now = stty_of(&sb.tty);
        now == before
    });
    wait_until("the cursor and the main screen to come back", WAIT, || {
        cursor_and_screen(&env) == "1 0"
    });
    for p in helpers {
        wait_until(&format!("process {p} to end"), WAIT, || ended(p));
    }
}
