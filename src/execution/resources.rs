//! Resource limits of an agent's whole process tree — `memory = "4G"`, `cpu = 1.5`
//! (cores), `pids = 512` — and the ONE place that chooses how they are enforced here:
//!
//! 1. a transient `systemd-run --user --scope` where a user systemd answers (memory,
//!    CPU and tasks, the tree in its own cgroup);
//! 2. else a cgroup v2 directory orange creates under its own cgroup when it may write
//!    there and its children can be given the memory controller (it is delegated one in
//!    its `cgroup.subtree_control`, or it is the hierarchy's root:
//!    `resource::v2_parent`) (the same three);
//! 3. else cgroup v1: a cgroup per agent under `orange/` in this process's own cgroup of
//!    each of the memory, cpu, cpuacct and pids hierarchies, when the memory one is
//!    writable (root on a v1-only machine);
//! 4. else `prlimit --data` for memory alone, with a warning (RLIMIT_DATA applies to each
//!    process, not the tree; CPU and process limits are not enforced).
//!
//! An agent's cgroup is named after its task and orange's data root ([`cgroup_name`]), so
//! the monitor finds it again to read what the tree uses and whether the kernel killed it
//! at its memory limit, and removes it once its task ended ([`sweep`]).
//!
//! The task records its limits at creation (`--memory/--cpu/--pids`, over the project's
//! `[project.NAME]`, over the harness's `[harness.NAME]`), once [`check`] has proved them
//! (under a cgroup: a probe made with them, or `cgroup_failed` before anything is
//! recorded); the launcher wraps the agent's argv with [`wrap`], which makes the agent's
//! cgroup before the agent's shell step joins it.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::adapters::cgroup::{self, Dirs};
use crate::adapters::resource::{self, Caps};
use crate::error::{OrangeError, Result};

/// The limits as config.toml and the flags spell them.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct LimitConfig {
    /// `"4G"`, `"512M"`, `"1.5G"` (binary units), or bytes.
    #[serde(default)]
    pub memory: Option<String>,
    /// Cores: `1.5` is 150% of one.
    #[serde(default)]
    pub cpu: Option<f64>,
    /// Processes and threads of the tree.
    #[serde(default)]
    pub pids: Option<u32>,
}

/// The limits a task's agent runs under (recorded on the task, kept by respawn).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u32>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }

    /// Each field of `self`, else `other`'s.
    pub fn or(self, other: Limits) -> Limits {
        Limits {
            memory: self.memory.or(other.memory),
            cpu: self.cpu.or(other.cpu),
            pids: self.pids.or(other.pids),
        }
    }

    /// `4G`-style memory limit, for messages.
    pub fn memory_text(&self) -> Option<String> {
        self.memory.map(human_bytes)
    }
}

impl LimitConfig {
    /// Checked and in bytes; `what` names where it was written.
    pub fn parse(&self, what: &str) -> Result<Limits> {
        let memory = self
            .memory
            .as_deref()
            .map(|m| {
                parse_memory(m)
                    .map_err(|e| OrangeError::invalid(format!("{what} memory {m:?}: {e}")))
            })
            .transpose()?;
        if let Some(c) = self.cpu {
            if !(c.is_finite() && c >= 0.01) {
                return Err(OrangeError::invalid(format!(
                    "{what} cpu {c}: a number of cores above 0, like 1.5"
                )));
            }
        }
        if let Some(p) = self.pids {
            if p < 8 {
                return Err(OrangeError::invalid(format!(
                    "{what} pids {p}: at least 8 (an agent runs a shell, its program and its tools)"
                )));
            }
        }
        Ok(Limits {
            memory,
            cpu: self.cpu,
            pids: self.pids,
        })
    }
}

/// `4G`, `512M`, `1.5G`, `4GiB`, `1024K`, or bytes; at least 16M.
pub fn parse_memory(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: f64 = num
        .parse()
        .map_err(|_| "a size like \"4G\", \"512M\" or a number of bytes".to_string())?;
    let unit = unit.trim().to_ascii_uppercase();
    let mult: u64 = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return Err(format!("unknown unit {unit:?}: K, M, G or T")),
    };
    let bytes = n * mult as f64;
    if !bytes.is_finite() || bytes < (16u64 << 20) as f64 {
        return Err("at least 16M (an agent's program needs more)".into());
    }
    Ok(bytes as u64)
}

/// `4294967296` → `4G`; `1610612736` → `1.5G`.
pub fn human_bytes(b: u64) -> String {
    let units = [
        ("T", 1u64 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    for (u, m) in units {
        if b >= m {
            let v = b as f64 / m as f64;
            return if (v - v.round()).abs() < 0.05 || v >= 100.0 {
                format!("{}{u}", v.round() as u64)
            } else {
                format!("{v:.1}{u}")
            };
        }
    }
    format!("{b}B")
}

/// The limits of a new task: each of the flags', else the project's
/// (`[project.NAME]`), else the harness's (`[harness.NAME]`).
pub fn choose(
    flags: &LimitConfig,
    project: (&str, Option<&LimitConfig>),
    harness: (&str, Option<&LimitConfig>),
) -> Result<Limits> {
    let flag = flags.parse("--")?;
    let of = |what: &str, name: &str, l: Option<&LimitConfig>| {
        l.map(|l| l.parse(&format!("[{what}.{name}]")))
            .transpose()
            .map(Option::unwrap_or_default)
    };
    let project = of("project", project.0, project.1)?;
    let harness = of("harness", harness.0, harness.1)?;
    Ok(flag.or(project).or(harness))
}

/// How limits are enforced on this machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "cgroup")]
pub enum Mechanism {
    /// `systemd-run --user --scope`.
    Systemd,
    /// A cgroup v2 directory orange creates under this one.
    Cgroup(std::path::PathBuf),
    /// A cgroup orange creates in each cgroup v1 hierarchy (controller, this process's
    /// own cgroup in it), under `orange/`.
    CgroupV1(Vec<(String, std::path::PathBuf)>),
    /// `prlimit --data`: memory only, per process.
    Prlimit,
    /// None of them: limits are refused.
    Unavailable,
}

/// The mechanism in force here and why (the reasons the better ones were passed over),
/// probed once per process (no process started: files only).
pub fn mechanism() -> &'static (Mechanism, String) {
    static M: std::sync::OnceLock<(Mechanism, String)> = std::sync::OnceLock::new();
    M.get_or_init(detect)
}

fn detect() -> (Mechanism, String) {
    let systemd = match resource::user_systemd() {
        Ok(()) => return (Mechanism::Systemd, "a user systemd answers: each agent runs in a transient scope (MemoryMax, CPUQuota, TasksMax)".into()),
        Err(e) => e,
    };
    let cgroup = match resource::writable_cgroup() {
        Ok(dir) => {
            return (
                Mechanism::Cgroup(dir.clone()),
                format!("{systemd}; each agent runs in a cgroup orange creates under {} (memory.max, cpu.max, pids.max)", dir.display()),
            )
        }
        Err(e) => e,
    };
    let v1 = match cgroup::writable_v1() {
        Ok(parents) => {
            let names: Vec<&str> = parents.iter().map(|(c, _)| c.as_str()).collect();
            let mem = parents
                .iter()
                .find(|(c, _)| c == "memory")
                .map(|(_, d)| d.join(cgroup::PARENT))
                .unwrap_or_default();
            let why = format!(
                "{systemd}; {cgroup}; each agent runs in a cgroup v1 orange creates under {} and its like in the {} hierarchies (memory.limit_in_bytes, cpu.cfs_quota_us, pids.max)",
                mem.display(),
                names.join(", ")
            );
            return (Mechanism::CgroupV1(parents), why);
        }
        Err(e) => e,
    };
    match resource::prlimit() {
        Ok(()) => (Mechanism::Prlimit, format!("{systemd}; {cgroup}; {v1}: prlimit --data limits each process's memory (not the tree; cpu and pids are not enforced, and a kill at the limit cannot be told from a crash)")),
        Err(e) => (Mechanism::Unavailable, format!("{systemd}; {cgroup}; {v1}; {e}")),
    }
}

impl Mechanism {
    pub fn name(&self) -> &'static str {
        match self {
            Mechanism::Systemd => "systemd",
            Mechanism::Cgroup(_) => "cgroup",
            Mechanism::CgroupV1(_) => "cgroup-v1",
            Mechanism::Prlimit => "prlimit",
            Mechanism::Unavailable => "none",
        }
    }
}

/// What the limits become here: a refusal when nothing can enforce them, a warning when
/// only part of them is (prlimit). Checked before anything is recorded: under a cgroup
/// (v2 or v1) they are proved — a probe cgroup `probe-<pid>-<home hash>` made with them,
/// then removed — and a cgroup the kernel will not make with them is `cgroup_failed`.
/// (systemd's scope and prlimit take them when the agent starts: not proved here.)
pub fn check(home: &Path, limits: &Limits) -> Result<Option<String>> {
    if limits.is_empty() {
        return Ok(None);
    }
    let (m, why) = mechanism();
    match m {
        Mechanism::Systemd => Ok(None),
        Mechanism::Cgroup(_) | Mechanism::CgroupV1(_) => {
            prove(home, limits)?;
            Ok(None)
        }
        Mechanism::Unavailable => Err(OrangeError::invalid(format!(
            "resource limits cannot be enforced here: {why}"
        ))),
        Mechanism::Prlimit => {
            let mut w = "resource limits through prlimit (no user systemd, no writable cgroup): memory per process (RLIMIT_DATA), not for the whole tree".to_string();
            if limits.cpu.is_some() || limits.pids.is_some() {
                w.push_str("; cpu and pids are NOT enforced");
            }
            Ok(Some(w))
        }
    }
}

/// Make a probe cgroup with `limits` and remove it (fault point `cgroup.proved`: a kill
/// there leaves the probe, which the monitor's [`sweep`] removes once its process died).
fn prove(home: &Path, limits: &Limits) -> Result<()> {
    let Some(probe) = agent_cgroup(&probe_name(home, std::process::id())) else {
        return Ok(());
    };
    probe
        .make(caps(limits))
        .map_err(OrangeError::CgroupFailed)?;
    crate::adapters::fault::point("cgroup.proved");
    probe.remove();
    Ok(())
}

/// The probe cgroup of process `pid` of the orange at `home`.
fn probe_name(home: &Path, pid: u32) -> String {
    cgroup_name(home, &format!("{PROBE}{pid}"))
}

/// A probe's name starts so (never a task's id).
const PROBE: &str = "probe-";

/// The limits a cgroup v2 or v1 here would refuse whatever their size (a controller it
/// lacks), each with why: what `orange doctor` names. Empty under systemd, prlimit or none.
pub fn refused_here() -> Vec<String> {
    let one = |caps: Caps| match &mechanism().0 {
        Mechanism::CgroupV1(parents) => {
            let have: Vec<&str> = parents.iter().map(|(c, _)| c.as_str()).collect();
            cgroup::v1_controllers(&have, caps).err()
        }
        Mechanism::Cgroup(dir) => {
            let words = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            cgroup::v2_controllers(
                &words("cgroup.controllers"),
                &words("cgroup.subtree_control"),
                caps,
            )
            .err()
        }
        _ => None,
    };
    let cpu = Caps {
        cpu_percent: Some(100),
        ..Caps::default()
    };
    let pids = Caps {
        pids: Some(512),
        ..Caps::default()
    };
    [("cpu", cpu), ("pids", pids)]
        .into_iter()
        .filter_map(|(what, c)| one(c).map(|why| format!("{what} limits are refused ({why})")))
        .collect()
}

/// The name of the agent cgroup of task `id` of the orange whose data is at `home`: the
/// id, then a hash of the data root (two orange homes on one machine never share one).
pub fn cgroup_name(home: &std::path::Path, id: &str) -> String {
    let h = home
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
        });
    format!("{id}-{:08x}", h as u32)
}

/// The cgroup of the agent named `name` ([`cgroup_name`]) under this machine's mechanism
/// (`None`: it has none: systemd's scopes are systemd's, prlimit makes none).
pub fn agent_cgroup(name: &str) -> Option<Dirs> {
    match &mechanism().0 {
        Mechanism::Cgroup(dir) => Some(Dirs::v2(dir.join(format!("orange-{name}")))),
        Mechanism::CgroupV1(parents) => Some(Dirs::v1(parents, name)),
        _ => None,
    }
}

/// The limits as the kernel takes them.
fn caps(limits: &Limits) -> Caps {
    Caps {
        memory: limits.memory,
        cpu_percent: limits.cpu.map(|c| (c * 100.0).round().max(1.0) as u32),
        pids: limits.pids,
    }
}

/// The file in an agent's own directory where the step that joins its cgroup leaves why
/// it could not (the agent then never started; the step exits 125).
pub const JOIN_FAILED: &str = "cgroup-join-failed";

/// `argv` run under `limits` by this machine's mechanism; `name` names its scope or
/// cgroup ([`cgroup_name`]). A cgroup is made here, its limits written, before the agent
/// starts (a cgroup left by the agent before it, a respawn's, is removed first: the new
/// agent's counters, its OOM kills, start at zero); the agent's shell step only joins it,
/// leaving why it could not in `agent_dir`'s [`JOIN_FAILED`].
pub fn wrap(
    limits: &Limits,
    name: &str,
    agent_dir: &Path,
    argv: Vec<String>,
) -> Result<Vec<String>> {
    if limits.is_empty() {
        return Ok(argv);
    }
    let caps = caps(limits);
    if let Some(d) = agent_cgroup(name) {
        d.remove();
        d.make(caps).map_err(OrangeError::CgroupFailed)?;
        // Where the step can leave why it could not join.
        crate::adapters::store::ensure_dir(agent_dir)?;
        crate::adapters::fault::point("launch.cgroup_made");
        return Ok(d.join_argv(&agent_dir.join(JOIN_FAILED), &argv));
    }
    Ok(match &mechanism().0 {
        Mechanism::Systemd => resource::systemd_argv(
            caps,
            &format!("orange-{name}-{}.scope", std::process::id()),
            &argv,
        ),
        Mechanism::Prlimit => match limits.memory {
            Some(m) => resource::prlimit_argv(m, &argv),
            None => argv,
        },
        _ => argv,
    })
}

/// Remove the agent cgroups of the orange at `home` whose task is not in `live` (ended,
/// or its agent gone for good); one that still holds a process is left for a later
/// sweep. A task not in `live` may have been recorded since it was read (its agent about
/// to join the cgroup made for it): `open_now` asks the store again, once, before any is
/// removed (`None`: it could not say, and nothing is). A probe ([`check`]) is left while
/// its process lives. The names removed.
pub fn sweep(
    home: &Path,
    live: &HashSet<&str>,
    open_now: &dyn Fn() -> Option<HashSet<String>>,
) -> Vec<String> {
    let suffix = cgroup_name(home, "");
    let names = match &mechanism().0 {
        Mechanism::CgroupV1(parents) => cgroup::v1_children(parents),
        Mechanism::Cgroup(dir) => cgroup::v2_children(dir),
        _ => return vec![],
    };
    let unknown: Vec<(String, &str)> = names
        .iter()
        .filter_map(|n| {
            let id = n.strip_suffix(suffix.as_str())?;
            (!id.is_empty() && !live.contains(id)).then(|| (n.clone(), id))
        })
        .filter(|(_, id)| match id.strip_prefix(PROBE) {
            Some(pid) => !pid
                .parse::<u32>()
                .is_ok_and(crate::adapters::process::alive),
            None => true,
        })
        .collect();
    if unknown.is_empty() {
        return vec![];
    }
    let Some(open) = open_now() else {
        return vec![];
    };
    unknown
        .into_iter()
        .filter(|(_, id)| !open.contains(*id))
        .filter(|(n, _)| agent_cgroup(n).is_some_and(|d| d.remove()))
        .map(|(n, _)| n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_parse_in_binary_units() {
        assert_eq!(parse_memory("4G"), Ok(4 << 30));
        assert_eq!(parse_memory("512M"), Ok(512 << 20));
        assert_eq!(parse_memory("1.5GiB"), Ok(3 << 29));
        assert!(parse_memory("4X").is_err());
        assert!(parse_memory("1M").is_err());
        assert!(parse_memory("").is_err());
        assert_eq!(human_bytes(4 << 30), "4G");
        assert_eq!(human_bytes(3 << 29), "1.5G");
        assert_eq!(human_bytes(312 << 20), "312M");
    }

    #[test]
    fn flags_win_over_the_project_over_the_harness() {
        let a = Limits {
            memory: Some(1 << 30),
            ..Limits::default()
        };
        let b = Limits {
            memory: Some(2 << 30),
            pids: Some(64),
            cpu: None,
        };
        assert_eq!(
            a.or(b),
            Limits {
                memory: Some(1 << 30),
                pids: Some(64),
                cpu: None
            }
        );
    }
}
