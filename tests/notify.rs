//! Notifications (`@orange-notify`): a real client attached to the test server
//! (util-linux `script` gives it a terminal and records everything tmux and orange write
//! there), a recording `notify-send` first on the monitor's PATH, and agents that work and
//! stop when told (their state through agent hooks, as Claude Code's are).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::client::Client;
use std::time::Duration;

use common::{holds_for, wait_for, TaskEnv};

/// An agent that reads what to do from its terminal: `work` (a turn starts), `stop` (its
/// turn ends: waiting for input), `exit` (it exits with status 3). Each hook is followed by
/// a marker file, so a test knows when orange heard it.
const AGENT: &str = r#"echo "ctl agent $ORANGE_TASK_ID"
mark="$ORANGE_HOME/agent-log/$ORANGE_TASK_ID"
mkdir -p "$mark"
while IFS= read -r cmd; do
  case $cmd in
    work) orange hook agent UserPromptSubmit </dev/null; touch "$mark/worked" ;;
    stop) orange hook agent Stop </dev/null; touch "$mark/stopped" ;;
    exit) exit 3 ;;
  esac
done
"#;

struct Setup {
    env: TaskEnv,
    /// Where the recording notify-send writes its calls, one line each.
    calls: PathBuf,
    /// A directory holding the recording notify-send.
    rec_bin: PathBuf,
}

fn setup(pool: u32) -> Setup {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", &pool.to_string()]);
    let root = env.root();
    let agent = root.join("ctl-agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(env.home.join("config.toml"))
        .unwrap();
    use std::io::Write;
    writeln!(
        f,
        "[harness.ctl]\ncommand = \"sh {} {{prompt}}\"",
        agent.display()
    )
    .unwrap();
    let rec_bin = root.join("rec-bin");
    std::fs::create_dir_all(&rec_bin).unwrap();
    let calls = root.join("notify-send.calls");
    let script = rec_bin.join("notify-send");
    common::write_script(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n",
            calls.display()
        ),
    );
    Setup {
        env,
        calls,
        rec_bin,
    }
}

/// A background monitor with `path` as its PATH, killed on drop.
struct Monitor(Child);

impl Monitor {
    fn start(env: &TaskEnv, path: &str) -> Monitor {
        let child = env
            .cmd_in(&env.repo, &["monitor", "--interval", "1s"])
            .env("PATH", path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Monitor(child)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn create(env: &TaskEnv, branch: &str) -> String {
    let id = env.create_id(branch, "ctl");
    wait_for("the agent to start", 20, || {
        env.home.join("agent-log").join(&id).exists()
    });
    id
}

/// Type a command to a task's agent, and wait until its hook was heard.
fn tell(env: &TaskEnv, id: &str, branch: &str, cmd: &str) {
    let mark =
        env.home
            .join("agent-log")
            .join(id)
            .join(if cmd == "work" { "worked" } else { "stopped" });
    let _ = std::fs::remove_file(&mark);
    env.tmux
        .ok(&["send-keys", "-t", &format!("=app/{branch}:"), cmd, "Enter"]);
    if cmd != "exit" {
        wait_for(&format!("{id} to hear {cmd}"), 20, || mark.exists());
    }
}

/// The notifier's record (`run/notified-*.json`).
fn notified(env: &TaskEnv) -> serde_json::Value {
    std::fs::read_dir(env.home.join("run"))
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .find(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("notified-") && n.ends_with(".json")
        })
        .and_then(|e| std::fs::read(e.path()).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Wait until the notifier has seen the task working (its next stop rings).
fn wait_worked(env: &TaskEnv, id: &str) {
    wait_for(&format!("the monitor to see {id} working"), 30, || {
        notified(env)["worked"].as_array().is_some_and(|w| {
            w.iter()
                .any(|k| k.as_str().is_some_and(|k| k.ends_with(&format!("|{id}"))))
        })
    });
}

/// Wait until the monitor's snapshot shows the task needing you (`need`), and so until
/// the pass that saw it has notified (it does so before it lets the next pass start).
fn wait_told(env: &TaskEnv, id: &str, need: &str) {
    wait_for(&format!("the monitor to record {id} as {need}"), 30, || {
        notified(env)["told"].as_array().is_some_and(|w| {
            w.iter()
                .any(|k| k.as_str() == Some(&format!("|task|app|{id}#{need}")))
        })
    });
}

fn calls(s: &Setup) -> Vec<String> {
    std::fs::read_to_string(&s.calls)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn path_with_recorder(s: &Setup) -> String {
    format!("{}:{}", s.rec_bin.display(), s.env.path)
}

fn have_script() -> bool {
    common::require(
        "script",
        Command::new("script").arg("--version").output().is_ok(),
        "util-linux script gives the attached client a terminal",
    )
}

#[test]
fn a_task_that_stops_rings_once_and_again_after_it_works_and_stops_again() {
    if !have_script() {
        return;
    }
    let s = setup(2);
    let env = &s.env;
    env.tmux
        .ok(&["set", "-g", "@orange-notify", "bell,message,desktop,osc"]);
    let client = Client::attach(env, "keepalive", &env.root().join("client.log"));
    let _monitor = Monitor::start(env, &path_with_recorder(&s));
    let id = create(env, "notify-a");
    wait_worked(env, &id);
    assert_eq!(client.bells(), 0, "no bell while it works");
    tell(env, &id, "notify-a", "stop");
    wait_for("notify-send to be called", 30, || !calls(&s).is_empty());
    // With its next step (issue 24), in the words of every other surface.
    let want = format!(
        "orange: app/notify-a needs you (waiting for input) — next: answer: orange task attach {id}"
    );
    let want = want.as_str();
    wait_for(
        "the bell, the OSCs and the message on the client",
        10,
        || {
            client.bells() == 1
                && client
                    .oscs()
                    .iter()
                    .filter(|o| o.contains("notify-a"))
                    .count()
                    == 2
                // The status line shows what its width holds.
                && client.text().contains("orange: app/notify-a needs you (waiting for input)")
        },
    );
    let oscs: Vec<String> = client
        .oscs()
        .into_iter()
        .filter(|o| o.contains("notify-a"))
        .collect();
    assert_eq!(
        oscs,
        [format!("9;{want}"), format!("777;notify;orange;{want}")]
    );
    assert_eq!(
        calls(&s),
        [format!(
            "--app-name=orange orange {}",
            want.trim_start_matches("orange: ")
        )]
    );
    // Once per change: the next passes (1 s apart) say nothing more.
    holds_for(
        "one notification per change",
        Duration::from_secs(4),
        || client.bells() == 1 && calls(&s).len() == 1,
    );
    // It works again and stops again: told again.
    tell(env, &id, "notify-a", "work");
    wait_worked(env, &id);
    tell(env, &id, "notify-a", "stop");
    wait_for("the second notification", 30, || calls(&s).len() == 2);
    wait_for("the second bell", 10, || client.bells() == 2);
    // Its death is a change too.
    tell(env, &id, "notify-a", "exit");
    wait_for("the death to be told", 30, || calls(&s).len() == 3);
    assert!(
        calls(&s)[2].ends_with(&format!(
            "app/notify-a needs you (exited 3) — next: respawn: orange task respawn {id}"
        )),
        "{:?}",
        calls(&s)
    );
    wait_for("the third bell", 10, || client.bells() == 3);
    holds_for("the death told once", Duration::from_secs(5), || {
        client.bells() == 3 && calls(&s).len() == 3
    });
}

#[test]
fn the_client_looking_at_the_task_gets_nothing_and_it_stays_seen() {
    if !have_script() {
        return;
    }
    let s = setup(2);
    let env = &s.env;
    env.tmux
        .ok(&["set", "-g", "@orange-notify", "bell,message,desktop"]);
    let id = create(env, "notify-c");
    let client = Client::attach(env, "app/notify-c", &env.root().join("client.log"));
    let _monitor = Monitor::start(env, &path_with_recorder(&s));
    wait_worked(env, &id);
    tell(env, &id, "notify-c", "stop");
    wait_told(env, &id, "waiting");
    holds_for(
        "nothing for the task looked at",
        Duration::from_secs(3),
        || {
            let quiet =
                client.bells() == 0 && calls(&s).is_empty() && !client.text().contains("needs you");
            if !quiet {
                eprintln!(
                    "bells {} calls {:?} text {:?}\nnotified {}\nlog {}",
                    client.bells(),
                    calls(&s),
                    client.text(),
                    notified(env),
                    std::fs::read_to_string(env.home.join("orange.log")).unwrap_or_default()
                );
            }
            quiet
        },
    );
    // Seen: looking away later does not bring it up.
    client.switch_to(env, "keepalive");
    holds_for(
        "nothing once looked away either",
        Duration::from_secs(3),
        || client.bells() == 0 && calls(&s).is_empty(),
    );
}

#[test]
fn ten_tasks_stopping_together_are_one_summary() {
    if !have_script() {
        return;
    }
    let s = setup(10);
    let env = &s.env;
    env.tmux
        .ok(&["set", "-g", "@orange-notify", "bell,message,desktop"]);
    let client = Client::attach(env, "keepalive", &env.root().join("client.log"));
    let branches: Vec<String> = (0..10).map(|i| format!("many-{i}")).collect();
    let ids: Vec<String> = branches.iter().map(|b| create(env, b)).collect();
    let pass = || {
        let out = env
            .cmd_in(&env.repo, &["monitor", "--once", "--json"])
            .env("PATH", path_with_recorder(&s))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // One pass sees them all working; then all stop; the next pass sees them all waiting.
    pass();
    for id in &ids {
        wait_worked(env, id);
    }
    for (id, b) in ids.iter().zip(&branches) {
        tell(env, id, b, "stop");
    }
    pass();
    // The monitor starts notify-send and never waits on it (a pass is not held by a
    // desktop program): wait for its record, then check there is only the one.
    wait_for("notify-send to be called", 30, || !calls(&s).is_empty());
    assert_eq!(calls(&s).len(), 1, "{:?}", calls(&s));
    let call = &calls(&s)[0];
    assert!(
        call.starts_with("--app-name=orange orange 10 tasks need you: app/many-"),
        "{call}"
    );
    assert!(call.ends_with(" and 6 more"), "{call}");
    let told = common::poll(Duration::from_secs(10), || {
        (client.bells() == 1 && client.text().contains("orange: 10 tasks need you")).then_some(())
    });
    assert!(
        told.is_some(),
        "the one bell and the summary: bells {} text {:?}\nlog {}",
        client.bells(),
        client.text(),
        std::fs::read_to_string(env.home.join("orange.log")).unwrap_or_default()
    );
    pass();
    pass();
    holds_for("still one", Duration::from_millis(500), || {
        client.bells() == 1 && calls(&s).len() == 1
    });
}

#[test]
fn off_tells_nothing() {
    if !have_script() {
        return;
    }
    let s = setup(2);
    let env = &s.env;
    env.tmux.ok(&["set", "-g", "@orange-notify", "off"]);
    let client = Client::attach(env, "keepalive", &env.root().join("client.log"));
    let _monitor = Monitor::start(env, &path_with_recorder(&s));
    let id = create(env, "notify-e");
    wait_worked(env, &id);
    tell(env, &id, "notify-e", "stop");
    wait_told(env, &id, "waiting");
    holds_for(
        "silence with @orange-notify off",
        Duration::from_secs(3),
        || {
            let silent =
                client.bells() == 0 && calls(&s).is_empty() && !client.text().contains("needs you");
            if !silent {
                // Which one broke the silence, for the failure message.
                eprintln!(
                    "bells {}, notify-send calls {:?}, the terminal received:\n{:?}",
                    client.bells(),
                    calls(&s),
                    String::from_utf8_lossy(&client.output())
                );
            }
            silent
        },
    );
}

#[test]
fn desktop_without_notify_send_is_no_error_and_the_rest_still_works() {
    if !have_script() {
        return;
    }
    let s = setup(2);
    let env = &s.env;
    env.tmux
        .ok(&["set", "-g", "@orange-notify", "desktop,bell,message"]);
    // PATH without any notify-send.
    let path: Vec<String> = env
        .path
        .split(':')
        .filter(|d| !Path::new(d).join("notify-send").exists())
        .map(str::to_string)
        .collect();
    let client = Client::attach(env, "keepalive", &env.root().join("client.log"));
    let monitor = Monitor::start(env, &path.join(":"));
    let id = create(env, "notify-f");
    wait_worked(env, &id);
    tell(env, &id, "notify-f", "stop");
    wait_for("the bell and the message", 30, || {
        client.bells() == 1 && client.text().contains("orange: app/notify-f needs you")
    });
    assert!(calls(&s).is_empty());
    let mut monitor = monitor;
    assert!(
        monitor.0.try_wait().unwrap().is_none(),
        "the monitor still runs"
    );
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap_or_default();
    assert!(
        !log.lines()
            .any(|l| l.contains("\"error\"") && l.contains("notif")),
        "{log}"
    );
}
