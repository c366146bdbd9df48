//! Remote hosts: projects whose pool, worktrees, sessions and agents live on
//! another machine, where the same `orange` binary does the work through its `--json`
//! contract, driven over one multiplexed OpenSSH connection per host.
//!
//! Here: the registry (`hosts.json`, each host with its remote projects), running the
//! remote orange, the links from remote task ids to their host (`hosts/links/<id>`), and
//! the host snapshots the monitor fetches (`run/hosts/<name>.json`), which the status
//! widget and the sidebars read without ever running ssh.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapters::broker::{self, Reply};
use crate::adapters::ssh::{Ssh, SshError, SshOutput};
use crate::adapters::store::{self, Home, LockGuard};
use crate::error::{OrangeError, Result};
use crate::orchestration::attention::classify::{Bucket, ItemKind};
use crate::orchestration::attention::summary::{HostView, Summary};

/// A machine orange reaches over ssh.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Host {
    pub name: String,
    /// `user@host`, an ssh config alias, or `ssh://user@host:port`.
    pub dest: String,
    /// The orange binary there (default `orange`, found on the remote PATH).
    #[serde(default = "default_bin")]
    pub orange_bin: String,
    /// `KEY=VALUE`, passed as `-o KEY=VALUE` to every ssh call for this host.
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// `ORANGE_HOME` there (default: the remote environment's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_home: Option<String>,
    /// `ORANGE_TMUX_SOCKET` there (default: the remote environment's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_socket: Option<String>,
    /// The projects registered there through this host, as the remote orange reported
    /// them (its `project add --json`), by name.
    #[serde(default)]
    pub projects: BTreeMap<String, Value>,
    #[serde(default)]
    pub added_at: String,
}

fn default_bin() -> String {
    "orange".to_string()
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Registry {
    pub hosts: BTreeMap<String, Host>,
}

fn file(home: &Home) -> PathBuf {
    home.root.join("hosts.json")
}

fn lock(home: &Home) -> PathBuf {
    home.root.join(".hosts.lock")
}

pub fn load(home: &Home) -> Result<Registry> {
    store::read_json(&file(home))
}

/// Read-modify-write of the registry under its lock.
pub fn update<T>(home: &Home, f: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
    let _lock = LockGuard::acquire(&lock(home))?;
    let mut reg = load(home)?;
    let out = f(&mut reg)?;
    store::write_json_atomic(&file(home), &reg)?;
    Ok(out)
}

pub fn get(home: &Home, name: &str) -> Result<Host> {
    load(home)?.hosts.remove(name).ok_or_else(|| {
        OrangeError::invalid(format!("no host named {name:?} (see `orange host list`)"))
    })
}

/// The host that holds project `name`, if it is a remote one.
pub fn of_project(home: &Home, name: &str) -> Result<Option<Host>> {
    if !file(home).exists() {
        return Ok(None);
    }
    Ok(load(home)?
        .hosts
        .into_values()
        .find(|h| h.projects.contains_key(name)))
}

/// `KEY=VALUE` with a plain key: what `-o` takes.
pub fn validate_ssh_option(o: &str) -> Result<()> {
    let ok = o.split_once('=').is_some_and(|(k, v)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()) && !v.contains('\n')
    });
    if ok {
        Ok(())
    } else {
        Err(OrangeError::invalid(format!(
            "invalid --ssh-option {o:?}: use KEY=VALUE (e.g. Port=2222, IdentityFile=~/.ssh/id_ed25519)"
        )))
    }
}

/// A destination ssh can only take as one: not empty, no leading `-`, no whitespace.
pub fn validate_dest(dest: &str) -> Result<()> {
    if dest.is_empty() || dest.starts_with('-') || dest.chars().any(char::is_whitespace) {
        return Err(OrangeError::invalid(format!(
            "invalid destination {dest:?}: use user@host, an ssh config alias or ssh://user@host:port"
        )));
    }
    Ok(())
}

impl Host {
    /// The control socket of this host's shared connection: under `run/ssh/` when the path
    /// fits the 104-byte limit of a socket path (ssh adds 17 bytes while it sets the master
    /// up) and has no whitespace (ssh splits its options there), else in the private
    /// [`crate::adapters::ssh::fallback_dir`], named for this `ORANGE_HOME`.
    pub fn control_path(&self, home: &Home) -> PathBuf {
        let p = home.run_dir().join("ssh").join(&self.name);
        let text = p.to_string_lossy();
        if text.len() + 18 <= 100 && !text.chars().any(char::is_whitespace) {
            return p;
        }
        crate::adapters::ssh::fallback_dir().join(format!(
            "{:016x}-{}",
            fnv(home.root.as_os_str().as_encoded_bytes()),
            self.name
        ))
    }

    /// The socket of this host's local broker (beside the control socket, in the same
    /// private directory): see `adapters::broker`.
    pub fn serve_socket(&self, home: &Home) -> PathBuf {
        PathBuf::from(format!("{}.serve", self.control_path(home).display()))
    }

    pub fn ssh(&self, home: &Home) -> Ssh {
        Ssh::new(&self.dest, &self.ssh_options, self.control_path(home))
    }

    /// `ORANGE_HOME` and `ORANGE_TMUX_SOCKET` for the remote orange, when set.
    pub fn env(&self) -> Vec<(&str, &str)> {
        let mut env = Vec::new();
        if let Some(h) = &self.remote_home {
            env.push(("ORANGE_HOME", h.as_str()));
        }
        if let Some(s) = &self.remote_socket {
            env.push(("ORANGE_TMUX_SOCKET", s.as_str()));
        }
        env
    }

    /// `orange ARGS…` there, its output as it is. No time limit: a command there takes
    /// what it takes (a setup command, a merge); a dead connection ends it (ssh's
    /// ServerAlive), and the person can interrupt it.
    pub fn call(&self, home: &Home, args: &[String], stdin: Option<&[u8]>) -> Result<SshOutput> {
        self.call_within(home, args, stdin, None)
    }

    fn call_within(
        &self,
        home: &Home,
        args: &[String],
        stdin: Option<&[u8]>,
        timeout: Option<Duration>,
    ) -> Result<SshOutput> {
        let out = match self.call_served(home, args, stdin, timeout)? {
            Some(out) => out,
            None => {
                let mut argv = vec![self.orange_bin.clone()];
                argv.extend(args.iter().cloned());
                self.ssh(home)
                    .run(&self.env(), &argv, stdin, timeout)
                    .map_err(|e| self.ssh_error(e))?
            }
        };
        if out.status == 127 {
            return Err(OrangeError::BackendNotFound(format!(
                "orange is not installed on host {} ({} not found there; set it with `orange host add {} {} --orange-bin PATH`)",
                self.name, self.orange_bin, self.name, self.dest
            )));
        }
        Ok(out)
    }

    /// `orange ARGS…` as a request to the host's `orange serve` (through its local
    /// broker, started when none runs), or `None` to run it the old way, one ssh each: with
    /// `ORANGE_SERVE=0`, when the orange there has no usable `serve` (said once), or when no
    /// broker could take it (nothing was sent).
    fn call_served(
        &self,
        home: &Home,
        args: &[String],
        stdin: Option<&[u8]>,
        timeout: Option<Duration>,
    ) -> Result<Option<SshOutput>> {
        if std::env::var_os("ORANGE_SERVE").is_some_and(|v| v == "0") {
            return Ok(None);
        }
        let exe = match std::env::current_exe() {
            Ok(p) => p.display().to_string(),
            Err(_) => return Ok(None),
        };
        let root = std::path::absolute(&home.root).unwrap_or_else(|_| home.root.clone());
        let spec = broker::Spec {
            socket: self.serve_socket(home),
            start: vec![exe, "serve".into(), "--broker".into(), self.name.clone()],
            env: vec![("ORANGE_HOME".into(), root.display().to_string())],
        };
        let reply = broker::call(&spec, &broker::Request::new(args, stdin), timeout);
        match reply {
            Ok(Reply::Done {
                status,
                stdout,
                stderr,
            }) => Ok(Some(SshOutput {
                status,
                stdout: stdout.into_bytes(),
                stderr,
            })),
            Ok(Reply::Unreachable { detail }) => Err(OrangeError::HostUnreachable {
                host: self.name.clone(),
                detail,
            }),
            Ok(Reply::NotFound { detail }) => Ok(Some(SshOutput {
                status: 127,
                stdout: vec![],
                stderr: detail,
            })),
            Ok(Reply::Fallback { reason, first }) => {
                if first {
                    // The reason quotes the host (its ssh's or orange's words): one safe line.
                    eprintln!(
                        "orange: host {}: {}; without `orange serve` there, each command runs its own ssh session (slower); install the same orange on both",
                        self.name,
                        crate::text::safe_line(&reason)
                    );
                }
                Ok(None)
            }
            Ok(Reply::Failed { message }) => {
                store::log(
                    home,
                    "warn",
                    "the host's broker could not take a command; one ssh instead",
                    serde_json::json!({"host": self.name, "error": message}),
                );
                Ok(None)
            }
            Err(broker::CallError::NotSent(e)) => {
                store::log(
                    home,
                    "warn",
                    "no broker for the host; one ssh instead",
                    serde_json::json!({"host": self.name, "error": e.to_string()}),
                );
                Ok(None)
            }
            Err(broker::CallError::Lost(e)) => Err(OrangeError::HostUnreachable {
                host: self.name.clone(),
                detail: format!("the host's broker went away during the command ({e})"),
            }),
        }
    }

    /// `orange ARGS… --json` there: its JSON value, or its error with its own code.
    pub fn call_json(&self, home: &Home, args: &[String], stdin: Option<&[u8]>) -> Result<Value> {
        self.call_json_within(home, args, stdin, None)
    }

    /// [`Host::call_json`], given up (host unreachable) after `timeout`.
    pub fn call_json_within(
        &self,
        home: &Home,
        args: &[String],
        stdin: Option<&[u8]>,
        timeout: Option<Duration>,
    ) -> Result<Value> {
        let mut args = args.to_vec();
        if !args.iter().any(|a| a == "--json") {
            args.push("--json".into());
        }
        let out = self.call_within(home, &args, stdin, timeout)?;
        self.json_of(&out)
    }

    /// The JSON value a remote `--json` call printed, or its error.
    pub fn json_of(&self, out: &SshOutput) -> Result<Value> {
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(text.trim()).map_err(|_| {
            OrangeError::BackendCommandFailed(format!(
                "orange on host {} (exit {}) printed no JSON: {}",
                self.name,
                out.status,
                last_words(&out.stderr, &text)
            ))
        })?;
        if out.status != 0 {
            let e = v.get("error").cloned().unwrap_or_default();
            return Err(OrangeError::Remote {
                host: self.name.clone(),
                code: OrangeError::canonical(e["code"].as_str().unwrap_or("")),
                message: e["message"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        format!("exit {}: {}", out.status, last_words(&out.stderr, &text))
                    }),
            });
        }
        Ok(v)
    }

    fn ssh_error(&self, e: SshError) -> OrangeError {
        match e {
            SshError::NotFound => OrangeError::BackendNotFound(e.to_string()),
            SshError::Unreachable(detail) => OrangeError::HostUnreachable {
                host: self.name.clone(),
                detail,
            },
            SshError::Io(err) => OrangeError::io(format!("running ssh to {}", self.name), err),
        }
    }
}

fn last_words(stderr: &str, stdout: &str) -> String {
    let s = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(nothing)")
        .trim()
        .to_string()
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

// --- links: which host a remote task id lives on ------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Link {
    pub host: String,
    pub project: String,
}

fn link_path(home: &Home, id: &str) -> Option<PathBuf> {
    // Task ids are short and safe; anything else is never a file name here.
    let safe = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    safe.then(|| home.root.join("hosts").join("links").join(id))
}

/// Remember that task `id` lives on `host` (written after a remote create, and for every
/// task a host snapshot lists).
pub fn link(home: &Home, id: &str, host: &str, project: &str) {
    let Some(p) = link_path(home, id) else { return };
    // A host never takes an id that is a task here.
    if crate::orchestration::task::TaskStore::new(home)
        .find_exact(id, None)
        .is_ok()
    {
        return;
    }
    let l = Link {
        host: host.to_string(),
        project: project.to_string(),
    };
    if store::read_json::<Option<Link>>(&p).ok().flatten().as_ref() == Some(&l) {
        return;
    }
    let _ = store::write_json_atomic(&p, &l);
}

/// The host of a remote task id, if orange has seen it.
pub fn linked(home: &Home, id: &str) -> Option<Link> {
    let p = link_path(home, id)?;
    if !p.exists() {
        return None;
    }
    store::read_json::<Option<Link>>(&p).ok().flatten()
}

// --- snapshots: what the monitor fetched from each host -------------------------------------

/// One host's view, as the local monitor last fetched it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Seen {
    pub name: String,
    pub reachable: bool,
    /// The last attempt (ms since the epoch).
    pub tried_at_ms: u64,
    /// The last successful fetch; `None` when never.
    #[serde(default)]
    pub fetched_at_ms: Option<u64>,
    #[serde(default)]
    pub error: Option<String>,
    /// The remote orange's version.
    #[serde(default)]
    pub version: Option<String>,
    /// The last summary the host gave (kept while it cannot be reached).
    #[serde(default)]
    pub summary: Summary,
    /// Since when it cannot be reached (the first failed attempt after the last success).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable_since_ms: Option<u64>,
}

impl Seen {
    pub fn view(&self, now_ms: u64) -> HostView {
        HostView {
            name: self.name.clone(),
            reachable: self.reachable,
            age_s: self.fetched_at_ms.map(|t| now_ms.saturating_sub(t) / 1000),
            error: self.error.clone(),
        }
    }
}

fn seen_path(home: &Home, name: &str) -> PathBuf {
    home.run_dir().join("hosts").join(format!("{name}.json"))
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What the remote side of a fetch prints (`orange host snapshot`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RemoteSnapshot {
    pub version: String,
    pub taken_at_ms: u64,
    pub summary: Summary,
}

/// How long a fetch may take before the host counts as unreachable this time.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(15);

/// Fetch one host's snapshot: ONE ssh call. Unreachable keeps the last summary.
pub fn fetch(home: &Home, host: &Host) -> Seen {
    let mut seen = read_seen(home, &host.name).unwrap_or_else(|| Seen {
        name: host.name.clone(),
        ..Seen::default()
    });
    seen.tried_at_ms = now_ms();
    let got = host
        .call_json_within(
            home,
            &["host".into(), "snapshot".into()],
            None,
            Some(FETCH_TIMEOUT),
        )
        .and_then(|v| {
            serde_json::from_value::<RemoteSnapshot>(v).map_err(|e| {
                OrangeError::BackendCommandFailed(format!(
                    "host {}: an unexpected snapshot ({e})",
                    host.name
                ))
            })
        });
    match got {
        Ok(snap) => {
            for item in &snap.summary.items {
                if item.kind == ItemKind::Task {
                    link(home, &item.id, &host.name, &item.project);
                }
            }
            seen.reachable = true;
            seen.fetched_at_ms = Some(seen.tried_at_ms);
            seen.unreachable_since_ms = None;
            seen.error = None;
            seen.version = Some(snap.version);
            seen.summary = snap.summary;
        }
        Err(e) => {
            if seen.reachable || seen.unreachable_since_ms.is_none() {
                seen.unreachable_since_ms = Some(seen.tried_at_ms);
            }
            seen.reachable = false;
            seen.error = Some(e.to_string());
        }
    }
    let _ = store::write_json_atomic(&seen_path(home, &host.name), &seen);
    seen
}

/// A command found the host unreachable: its view says so at once (the status line too),
/// keeping what was last seen of it. Returns that view.
pub fn note_unreachable(home: &Home, name: &str, error: &OrangeError) -> Seen {
    let mut seen = read_seen(home, name).unwrap_or_else(|| Seen {
        name: name.to_string(),
        ..Seen::default()
    });
    let now = now_ms();
    if seen.reachable || seen.unreachable_since_ms.is_none() {
        seen.unreachable_since_ms = Some(now);
    }
    seen.reachable = false;
    seen.tried_at_ms = now;
    seen.error = Some(error.to_string());
    let _ = store::write_json_atomic(&seen_path(home, name), &seen);
    seen
}

// --- last known tasks: what each host's listings showed -------------------------------------

/// A host's tasks as its last successful listing gave them (`task list --json` rows).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Listed {
    pub listed_at_ms: u64,
    pub tasks: Vec<Value>,
}

fn listed_path(home: &Home, name: &str) -> PathBuf {
    home.run_dir()
        .join("hosts")
        .join(format!("{name}.tasks.json"))
}

fn read_listed(home: &Home, name: &str) -> Option<Listed> {
    let p = listed_path(home, name);
    if !p.exists() {
        return None;
    }
    store::read_json::<Option<Listed>>(&p).ok().flatten()
}

/// Remember the rows a listing of host `name` just gave: all its tasks (`project`
/// `None`), or one project's (the others are kept). Written atomically; best effort.
pub fn remember_tasks(home: &Home, name: &str, project: Option<&str>, rows: &[Value]) {
    let mut l = read_listed(home, name).unwrap_or_default();
    match project {
        None => l.tasks = rows.to_vec(),
        Some(p) => {
            l.tasks.retain(|t| t["project"].as_str() != Some(p));
            l.tasks.extend(rows.iter().cloned());
        }
    }
    l.listed_at_ms = now_ms();
    let _ = store::write_json_atomic(&listed_path(home, name), &l);
}

/// The last known tasks of host `name` (as `task list --json` rows with `host`), each
/// carrying `host_state` (`reachable`, `since`, `last_seen`, `error`): its last listing,
/// brought up to date by the monitor's last snapshot where that is newer (tasks opened since,
/// and the status and session of the open ones). Never a task dropped for want of a
/// connection, nor made dead by it.
pub fn last_known_tasks(home: &Home, name: &str, seen: &Seen) -> Vec<Value> {
    let listed = read_listed(home, name).unwrap_or_default();
    let mut rows = listed.tasks;
    let snapshot_at = seen.fetched_at_ms.unwrap_or(0);
    if snapshot_at > listed.listed_at_ms {
        for item in seen
            .summary
            .items
            .iter()
            .filter(|i| i.kind == ItemKind::Task)
        {
            let session = match (item.bucket, item.session.is_some()) {
                (Bucket::Dead, _) => "dead",
                (_, true) => "live",
                _ => "none",
            };
            let row = match rows.iter_mut().find(|r| r["id"].as_str() == Some(&item.id)) {
                Some(r) => r,
                None => {
                    rows.push(serde_json::json!({
                        "id": item.id,
                        "project": item.project,
                        "branch": item.branch,
                        "harness": item.harness,
                        "created_at": item.created_at,
                        "summary": "",
                        "agent": {"state": null},
                    }));
                    rows.last_mut().expect("just pushed")
                }
            };
            row["status"] = Value::from(item.status.clone());
            row["session"] = serde_json::json!({"state": session});
            if let Some(c) = item.exit_status {
                row["session"]["exit_status"] = c.into();
            }
            if let Some(sig) = item.exit_signal {
                row["session"]["exit_signal"] = sig.into();
            }
        }
    }
    let last_seen = seen
        .fetched_at_ms
        .max(Some(listed.listed_at_ms).filter(|t| *t > 0));
    let state = serde_json::json!({
        "reachable": seen.reachable,
        "since": seen.unreachable_since_ms.map(rfc3339),
        "last_seen": last_seen.map(rfc3339),
        "error": seen.error,
    });
    for r in &mut rows {
        r["host"] = Value::from(name);
        r["host_state"] = state.clone();
    }
    rows
}

/// Milliseconds since the epoch as RFC 3339 (UTC, seconds).
pub fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Every host with projects, fetched at once (one thread and one ssh call each).
pub fn fetch_all(home: &Home) -> Vec<Seen> {
    let Ok(reg) = load(home) else { return vec![] };
    let hosts: Vec<Host> = reg
        .hosts
        .into_values()
        .filter(|h| !h.projects.is_empty())
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| s.spawn(move || fetch(home, h)))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// `run/hosts/poke`: a command changed something on a host; the monitor fetches at once.
pub fn poke_path(home: &Home) -> PathBuf {
    home.run_dir().join("hosts").join("poke")
}

pub fn read_seen(home: &Home, name: &str) -> Option<Seen> {
    let p = seen_path(home, name);
    if !p.exists() {
        return None;
    }
    store::read_json::<Option<Seen>>(&p).ok().flatten()
}

/// The last fetched view of every host with projects (files only: no ssh). A host never
/// fetched shows as not reachable yet, without an age.
pub fn seen_all(home: &Home) -> Result<Vec<Seen>> {
    if !file(home).exists() {
        return Ok(vec![]);
    }
    let reg = load(home)?;
    Ok(reg
        .hosts
        .into_values()
        .filter(|h| !h.projects.is_empty())
        .map(|h| {
            read_seen(home, &h.name).unwrap_or(Seen {
                name: h.name.clone(),
                error: Some("not fetched yet (the monitor fetches it)".into()),
                ..Seen::default()
            })
        })
        .collect())
}

/// `summary` with every host's last view merged in (see [`Summary::add_host`]). A
/// `hosts.json` that does not parse counts as one unreadable file (the widgets show it).
pub fn merge(home: &Home, summary: &mut Summary) {
    let now = now_ms();
    match seen_all(home) {
        Ok(all) => {
            for seen in all {
                let view = seen.view(now);
                summary.add_host(view, seen.summary);
            }
        }
        Err(_) => summary.unreadable += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_destinations() {
        assert!(validate_ssh_option("Port=2222").is_ok());
        assert!(validate_ssh_option("UserKnownHostsFile=/tmp/k h").is_ok());
        assert!(validate_ssh_option("=x").is_err());
        assert!(validate_ssh_option("Port").is_err());
        assert!(validate_ssh_option("Pro xy=1").is_err());
        assert!(validate_dest("me@box").is_ok());
        assert!(validate_dest("ssh://me@box:2222").is_ok());
        assert!(validate_dest("-oProxyCommand=sh").is_err());
        assert!(validate_dest("a b").is_err());
        assert!(validate_dest("").is_err());
    }

    #[test]
    fn a_long_home_puts_the_control_socket_under_tmp() {
        let h = Host {
            name: "gpu".into(),
            ..Host::default()
        };
        let short = Home {
            root: "/tmp/o".into(),
        };
        assert_eq!(h.control_path(&short), PathBuf::from("/tmp/o/run/ssh/gpu"));
        let long = Home {
            root: PathBuf::from("/tmp").join("x".repeat(120)),
        };
        let p = h.control_path(&long);
        assert!(p.as_os_str().len() < 60, "{}", p.display());
        assert!(p.ends_with(p.file_name().unwrap()));
    }

    #[test]
    fn link_ids_are_never_paths() {
        let home = Home {
            root: "/tmp/o".into(),
        };
        assert!(link_path(&home, "../x").is_none());
        assert!(link_path(&home, "a/b").is_none());
        assert!(link_path(&home, "").is_none());
        assert!(link_path(&home, "0jk8pw").is_some());
    }
}
