//! One real agent CLI under test, whatever the agent: the rig that tests/real_claude/,
//! real_pi.rs, real_codex.rs and real_opencode.rs share. It holds the test's `TaskEnv` (a
//! repository, a private `ORANGE_HOME`, a private tmux server whose environment is the
//! agent's), the agent's stand-in model server, the agent's own HOME and a background
//! `orange monitor` (every 500 ms, as `orange.tmux` starts it), and reads what a person
//! and a script see at each moment: the status line (`@orange_status`), `task show`,
//! `task explain`, the pane's screen.
//!
//! What is the agent's own — its config files, its environment, what its first-run screens
//! need — stays in the agent's test file; this file knows no agent by name.
//!
//! Waits end at the event they wait for (bounded by the agent's patience, never a
//! measure). How long the status line took to show a moment goes to
//! `$ORANGE_LATENCY_LOG`, one JSON line each, for `scripts/bench-latency.sh`; nothing here
//! asserts a duration.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::chat_standin::ChatStandIn;
use super::responses_standin::ResponsesStandIn;
use super::standin::StandIn;
use super::{find_program, fixtures, poll, poll_every, require, strip_styles, Env, TaskEnv};

/// How often a wait for a moment looks again: often enough for the latency table.
const LOOK: Duration = Duration::from_millis(25);

/// Whatever the test process had that could reach a real account, another config or the
/// network: removed from the agents' tmux environment (unless the rig sets it itself).
pub const UNSET: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CODEX_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_OAUTH_TOKEN",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
    "OPENCODE_API_KEY",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_PURE",
    "PI_CODING_AGENT_DIR",
    "PI_CODING_AGENT_SESSION_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// Whether the real `program` is on PATH: see [`program`].
pub fn installed(program: &str) -> bool {
    self::program(program).is_some()
}

/// The real `program` on PATH (never a fixture of tests/fixtures/bin); None (the test
/// returns) when it is missing outside CI, a failure in CI (`common::require`).
pub fn program(program: &str) -> Option<PathBuf> {
    let found = find_program(&std::env::var("PATH").unwrap_or_default(), program);
    if let Some(p) = &found {
        assert!(
            !p.starts_with(fixtures().join("bin")),
            "{} is a test fixture, not the real {program}; install it with scripts/install-test-deps.sh",
            p.display()
        );
    }
    let why = format!("these tests drive the real {program} (npm)");
    require(program, found.is_some(), &why).then(|| found.unwrap())
}

/// The `TaskEnv` a real agent runs in: the real programs on PATH, `extra` (the agent's
/// HOME, its config, its model's address…) and loopback never proxied in the tmux server's
/// environment and every orange command's, [`UNSET`] removed from the server's (but what
/// `extra` sets), and the repository added as a project with `project` (`project add`'s
/// arguments).
pub fn agent_env(base: Env, extra: &[(&str, String)], project: &[&str]) -> TaskEnv {
    let mut all: Vec<(&str, String)> = extra.to_vec();
    for k in ["NO_PROXY", "no_proxy"] {
        if !all.iter().any(|(set, _)| *set == k) {
            all.push((k, "127.0.0.1,localhost".into()));
        }
    }
    let env = TaskEnv::real(base, &all);
    for k in UNSET
        .iter()
        .filter(|k| !all.iter().any(|(set, _)| set == *k))
    {
        let _ = env.tmux.tmux(&["set-environment", "-g", "-u", k]);
    }
    env.add_project(project);
    env
}

/// The stand-in model servers as the rig needs them: how many turns (scripted requests)
/// reached the model.
pub trait ModelStandIn {
    fn turns_seen(&self) -> usize;
    /// Wait until `n` turns reached it; false after `timeout`.
    fn wait_turns_seen(&self, n: usize, timeout: Duration) -> bool;
}

impl ModelStandIn for StandIn {
    fn turns_seen(&self) -> usize {
        self.turns().len()
    }
    fn wait_turns_seen(&self, n: usize, timeout: Duration) -> bool {
        self.wait_requests(n, timeout)
    }
}

impl ModelStandIn for ChatStandIn {
    fn turns_seen(&self) -> usize {
        self.turns().len()
    }
    fn wait_turns_seen(&self, n: usize, timeout: Duration) -> bool {
        self.wait_requests(n, timeout)
    }
}

impl ModelStandIn for ResponsesStandIn {
    fn turns_seen(&self) -> usize {
        self.turns().len()
    }
    fn wait_turns_seen(&self, n: usize, timeout: Duration) -> bool {
        self.wait_turns(n, timeout)
    }
}

/// What [`AgentRig::start`] needs: the agent's set-up done (its `TaskEnv` from
/// [`agent_env`], its HOME written, its stand-in started).
pub struct Spec<A> {
    /// The test's name in failures and in the latency log.
    pub test: &'static str,
    /// The harness (`task create --harness`): claude, pi, codex, opencode.
    pub agent: &'static str,
    /// A bound on any one wait (a hang), never a measure.
    pub patience: Duration,
    /// Held for the whole test when the agent's tests run one at a time.
    pub slot: Option<MutexGuard<'static, ()>>,
    pub env: TaskEnv,
    pub api: A,
    /// The agent's HOME.
    pub home: PathBuf,
}

/// A real agent's test rig (see the file's header).
pub struct AgentRig<A> {
    pub env: TaskEnv,
    pub api: A,
    /// The agent's HOME.
    pub home: PathBuf,
    pub test: &'static str,
    pub agent: &'static str,
    pub patience: Duration,
    monitor: Option<Child>,
    // Last: released only once the monitor and the tmux server (so the agent) are gone.
    _slot: Option<MutexGuard<'static, ()>>,
}

impl<A> Drop for AgentRig<A> {
    fn drop(&mut self) {
        if let Some(mut m) = self.monitor.take() {
            let _ = m.kill();
            let _ = m.wait();
        }
        // The agent goes with its server, before the next test may take the slot.
        let _ = self.env.tmux.tmux(&["kill-server"]);
    }
}

impl<A: ModelStandIn> AgentRig<A> {
    /// The rig, its monitor running.
    pub fn start(s: Spec<A>) -> AgentRig<A> {
        let monitor = s
            .env
            .cmd_in(&s.env.repo, &["monitor", "--interval", "500ms"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        AgentRig {
            env: s.env,
            api: s.api,
            home: s.home,
            test: s.test,
            agent: s.agent,
            patience: s.patience,
            monitor: Some(monitor),
            _slot: s.slot,
        }
    }

    /// Stop the background monitor (as a reboot would); the hooks alone tell from then on.
    pub fn stop_monitor(&mut self) {
        if let Some(mut m) = self.monitor.take() {
            let _ = m.kill();
            let _ = m.wait();
        }
    }

    /// A task on `branch` for this agent (an empty `summary`: none): its id.
    pub fn create(&self, branch: &str, summary: &str) -> String {
        self.create_with(branch, summary, &[])
    }

    /// [`AgentRig::create`] with more of `task create`'s arguments.
    pub fn create_with(&self, branch: &str, summary: &str, more: &[&str]) -> String {
        let mut args = vec!["task", "create", branch];
        if !summary.is_empty() {
            args.push(summary);
        }
        args.extend(["--harness", self.agent]);
        args.extend(more);
        let v = self.env.ok(&args);
        v["id"].as_str().unwrap().to_string()
    }

    /// `task show --json`.
    pub fn task(&self, id: &str) -> Value {
        self.env.task(id)
    }

    pub fn pane(&self, id: &str) -> String {
        self.task(id)["tmux_pane_id"].as_str().unwrap().to_string()
    }

    pub fn session(&self, id: &str) -> String {
        self.task(id)["tmux_session_id"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// The agent's conversation id as orange recorded it (`agent_session_id`).
    pub fn conversation(&self, id: &str) -> String {
        self.task(id)["agent_session_id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// What the status line shows for the task's session (`@orange_status`), unstyled.
    pub fn status_line(&self, id: &str) -> String {
        let out = self.env.tmux.tmux(&[
            "show-options",
            "-qv",
            "-t",
            &self.session(id),
            "@orange_status",
        ]);
        strip_styles(&String::from_utf8_lossy(&out.stdout))
    }

    pub fn screen(&self, id: &str) -> String {
        self.env
            .tmux
            .ok(&["capture-pane", "-p", "-J", "-t", &self.pane(id)])
    }

    /// `orange ARGS` as a person reads it (text, stdout then stderr).
    pub fn text(&self, args: &[&str]) -> String {
        let out = self
            .env
            .cmd_in(&self.env.repo, args)
            .env_remove("ORANGE_JSON")
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// `orange task explain ID` as a person reads it.
    pub fn explain(&self, id: &str) -> String {
        self.text(&["task", "explain", id])
    }

    /// The agent's state as `task show` has it, and the signal that told it.
    pub fn agent_state(&self, id: &str) -> (String, String) {
        let t = self.task(id);
        let s = |k: &str| t["agent"][k].as_str().unwrap_or("").to_string();
        (s("state"), s("signal"))
    }

    /// tmux `send-keys` to the agent's pane.
    pub fn keys(&self, id: &str, keys: &[&str]) {
        let pane = self.pane(id);
        let mut args = vec!["send-keys", "-t", pane.as_str()];
        args.extend(keys);
        self.env.tmux.ok(&args);
    }

    /// Type `text` into the agent's pane, wait until its screen shows it, submit it.
    pub fn type_line(&self, id: &str, text: &str) {
        self.keys(id, &["-l", text]);
        self.screen_shows(id, text);
        self.keys(id, &["Enter"]);
    }

    /// `orange task send ID TEXT`.
    pub fn send(&self, id: &str, text: &str) {
        self.env.ok(&["task", "send", id, text]);
    }

    pub fn workspace(&self, id: &str) -> PathBuf {
        self.env
            .ws_path(self.task(id)["workspace"].as_str().unwrap())
    }

    /// The task's history events named `event`, oldest first.
    pub fn history(&self, id: &str, event: &str) -> Vec<Value> {
        self.env.history_events(id, event)
    }

    /// The pane's process id (the agent, or its launcher).
    pub fn pane_pid(&self, id: &str) -> String {
        self.env.pane_pid(id)
    }

    /// The command tmux started the agent's pane with.
    pub fn start_command(&self, id: &str) -> String {
        self.env.tmux.ok(&[
            "display",
            "-p",
            "-t",
            &self.pane(id),
            "#{pane_start_command}",
        ])
    }

    /// The agent's process id: the pane's, or under orange's pty layer (`status_reports`)
    /// the layer's child, as the layer's status file names it.
    pub fn agent_pid(&self, id: &str) -> String {
        let pane = self.pane_pid(id);
        let t = self.task(id);
        let file = self.env.home.join(format!(
            "tasks/{}/{id}/agent/{}",
            t["project"].as_str().unwrap_or_default(),
            orange::adapters::pty::status::FILE
        ));
        orange::adapters::pty::status::read(&file)
            .filter(|s| s.layer_pid.to_string() == pane)
            .map_or(pane, |s| s.agent_pid.to_string())
    }

    /// Whether task `id`'s agent runs under bwrap (see [`under_bwrap`]).
    pub fn agent_under_bwrap(&self, id: &str) -> bool {
        under_bwrap(&self.agent_argv(id))
    }

    /// The agent's command line.
    pub fn agent_argv(&self, id: &str) -> Vec<String> {
        super::cmdline(&self.agent_pid(id))
    }

    /// `orange doctor --harness AGENT --json`: its `channel` check.
    pub fn doctor_channel(&self) -> Value {
        let out = self
            .env
            .cmd_in(
                &self.env.repo,
                &["doctor", "--harness", self.agent, "--json"],
            )
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "doctor --json: {e}: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        v["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "channel").cloned())
            .unwrap_or_else(|| panic!("no channel check: {v}"))
    }

    /// Give up on `what`: the task, the screen and orange's log say why.
    pub fn fail(&self, id: &str, what: &str, last: &str) -> ! {
        let log = std::fs::read_to_string(self.env.home.join("orange.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        panic!(
            "[{}] {}: timed out waiting for {what} (last: {last}); task: {}\nscreen:\n{}\norange.log (tail):\n{}",
            self.test,
            self.agent,
            self.task(id),
            self.screen(id),
            tail.join("\n")
        )
    }

    /// SIGKILL process `pid` (task `id`'s agent): the status line says `killed (signal 9)`
    /// (`moment` names the step in a failure), and the monitor handles the death — the
    /// agent dead, escalated, its detail the signal. The task as then seen.
    pub fn kill_9(&self, moment: &str, id: &str, pid: &str) -> Value {
        let killed = Instant::now();
        std::process::Command::new("kill")
            .args(["-9", pid])
            .status()
            .unwrap();
        self.status_since(moment, id, "killed (signal 9)", killed);
        let t = self.wait_task("the death to be handled", id, |t| {
            t["agent"]["escalated"].is_object()
        });
        assert_eq!(t["agent"]["state"], "dead", "{t}");
        let detail = t["agent"]["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("killed by signal 9"), "{t}");
        t
    }

    /// Wait until `pred(task show)` holds; the task as then seen.
    pub fn wait_task(&self, what: &str, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut t = Value::Null;
        poll(self.patience, || {
            t = self.task(id);
            pred(&t).then(|| t.clone())
        })
        .unwrap_or_else(|| self.fail(id, what, &t.to_string()))
    }

    /// Wait until the status line shows `needle` and `task show` agrees (`pred`). With
    /// `since` (when it became true), how long the status line took to show it goes to the
    /// latency log under `moment`. The status line and the task as then seen.
    fn moment(
        &self,
        moment: &str,
        id: &str,
        needle: &str,
        since: Option<Instant>,
        pred: impl Fn(&Value) -> bool,
    ) -> (String, Value) {
        let start = Instant::now();
        let mut shown: Option<Instant> = None;
        loop {
            let line = self.status_line(id);
            if line.contains(needle) {
                shown.get_or_insert_with(Instant::now);
                let t = self.task(id);
                if pred(&t) {
                    if let (Some(since), Some(shown)) = (since, shown) {
                        let took = shown.saturating_duration_since(since);
                        let signal = t["agent"]["signal"].as_str();
                        record(self.agent, self.test, moment, &line, took, signal);
                    }
                    return (line, t);
                }
            }
            if start.elapsed() >= self.patience {
                let what = format!("{moment}: the status line to show {needle:?}");
                self.fail(id, &what, &line);
            }
            std::thread::sleep(LOOK);
        }
    }

    /// Wait until the status line shows `needle`; the line.
    pub fn status_shows(&self, moment: &str, id: &str, needle: &str) -> String {
        self.moment(moment, id, needle, None, |_| true).0
    }

    /// [`AgentRig::status_shows`], and how long after `since` (when it became true) the
    /// line showed it goes to the latency log under `moment`.
    pub fn status_since(&self, moment: &str, id: &str, needle: &str, since: Instant) -> String {
        self.moment(moment, id, needle, Some(since), |_| true).0
    }

    /// Wait until the status line shows `needle` and `task show` agrees (`pred`); the task.
    pub fn wait_moment(
        &self,
        moment: &str,
        id: &str,
        needle: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.moment(moment, id, needle, None, pred).1
    }

    /// [`AgentRig::wait_moment`], the latency from `since` logged as in
    /// [`AgentRig::status_since`].
    pub fn wait_moment_since(
        &self,
        moment: &str,
        id: &str,
        needle: &str,
        since: Instant,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.moment(moment, id, needle, Some(since), pred).1
    }

    /// When the agent's screen first shows `needle`: the moment a dialog or a message
    /// became true for a person looking at it.
    pub fn screen_shows(&self, id: &str, needle: &str) -> Instant {
        let mut screen = String::new();
        let found = poll_every(LOOK, self.patience, || {
            screen = self.screen(id);
            screen.contains(needle).then(Instant::now)
        });
        found.unwrap_or_else(|| self.fail(id, &format!("the screen to show {needle:?}"), ""))
    }

    /// When tmux first says the agent's pane is dead.
    pub fn pane_dies(&self, id: &str) -> Instant {
        let pane = self.pane(id);
        poll_every(LOOK, self.patience, || {
            let dead = self
                .env
                .tmux
                .ok(&["display", "-p", "-t", &pane, "#{pane_dead}"]);
            (dead == "1").then(Instant::now)
        })
        .unwrap_or_else(|| self.fail(id, "the agent to exit", ""))
    }

    /// Wait until the agent sent `n` turns to its model.
    pub fn wait_turns(&self, id: &str, n: usize) {
        if !self.api.wait_turns_seen(n, self.patience) {
            let seen = format!("{} turn(s)", self.api.turns_seen());
            self.fail(id, &format!("{} to send {n} turn(s)", self.agent), &seen);
        }
    }

    /// One moment of the "how soon the status line knows" table: appended to
    /// `$ORANGE_LATENCY_LOG` when it is set (`scripts/bench-latency.sh`).
    pub fn record(&self, moment: &str, reported: &str, latency: Duration) {
        record(self.agent, self.test, moment, reported, latency, None);
    }

    /// [`AgentRig::record`] of what task `id` shows now: its status line, and the signal
    /// that told its state.
    pub fn record_now(&self, id: &str, moment: &str, latency: Duration) {
        let line = self.status_line(id);
        let t = self.task(id);
        let signal = t["agent"]["signal"].as_str();
        record(self.agent, self.test, moment, &line, latency, signal);
    }
}

/// One line of the latency log (see [`AgentRig::record`]), with the signal that told the
/// state (`hook`, `screen`, `pane`) when the test knows it.
fn record(
    agent: &str,
    test: &str,
    moment: &str,
    reported: &str,
    latency: Duration,
    signal: Option<&str>,
) {
    let Some(path) = std::env::var_os("ORANGE_LATENCY_LOG") else {
        return;
    };
    let seconds = (latency.as_secs_f64() * 1000.0).round() / 1000.0;
    let line = serde_json::json!({"agent": agent, "test": test, "moment": moment,
        "reported": reported, "seconds": seconds, "signal": signal});
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(Path::new(&path))
    {
        let _ = std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes());
    }
}

/// Whether a pane's process (`argv`, from /proc) is orange's sandbox step around bwrap:
/// `sh -c <step> orange-sandbox <its mark> bwrap …`.
pub fn under_bwrap(argv: &[String]) -> bool {
    let at = |i: usize| argv.get(i).map(String::as_str);
    at(3) == Some("orange-sandbox") && at(5) == Some("bwrap")
}
