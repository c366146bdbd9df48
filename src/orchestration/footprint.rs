//! What each agent's process tree uses now — memory and CPU — as the monitor's pass reads
//! it: from the agent's cgroup when it runs in one (what its limits are measured against),
//! else summed under its pane's process in ONE read of `/proc` for the whole pass. Kept in
//! its own small file (`agent/footprint.json`), never in `agent.json`: the CPU figure
//! changes at nearly every read, and the agent's record is rewritten only when what the
//! agent does changes. A running monitor reads it every [`EVERY`] (not at every pass);
//! `ORANGE_USAGE=0` turns the reading off (measurements).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::adapters::resource::ProcTable;
use crate::adapters::store;
use crate::execution::resources;

/// How often a running monitor reads what the agents use.
pub const EVERY: Duration = Duration::from_secs(10);

/// The memory and CPU of an agent's whole process tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Bytes: resident, summed over the tree (from /proc), or the cgroup's memory in use
    /// without the file cache it can drop at once.
    pub memory: u64,
    /// Percent of one core since the read before (150: one and a half cores).
    pub cpu: u32,
    /// The tree's CPU time (µs) and when it was read (Unix ms): the next read's baseline.
    pub cpu_us: u64,
    pub at_ms: u64,
    /// Read from the agent's cgroup (else from /proc).
    #[serde(default)]
    pub cgroup: bool,
}

impl Usage {
    /// `Mem: 312M · CPU 4%`.
    pub fn text(&self) -> String {
        format!("Mem: {} · CPU {}%", self.memory_text(), self.cpu)
    }

    /// `312M·4%`: `task list`'s agent cell.
    pub fn short(&self) -> String {
        format!("{}·{}%", self.memory_text(), self.cpu)
    }

    fn memory_text(&self) -> String {
        resources::human_bytes(self.memory)
    }

    /// The tree read now (`memory` bytes, `cpu_us`), its CPU from `before`'s time.
    pub fn measure(memory: u64, cpu_us: u64, at_ms: u64, before: Option<&Usage>) -> Usage {
        let cpu = before
            .filter(|b| at_ms > b.at_ms && cpu_us >= b.cpu_us)
            .map(|b| {
                let wall_us = (at_ms - b.at_ms) as f64 * 1000.0;
                ((cpu_us - b.cpu_us) as f64 / wall_us * 100.0).round() as u32
            })
            .unwrap_or(0);
        Usage {
            memory,
            cpu,
            cpu_us,
            at_ms,
            cgroup: false,
        }
    }
}

fn path(task_dir: &Path) -> PathBuf {
    crate::execution::sandbox::agent_dir(task_dir).join("footprint.json")
}

/// What the task's agent used at the monitor's last read (`None`: not running, or never
/// read).
pub fn load(task_dir: &Path) -> Option<Usage> {
    store::read_regular(&path(task_dir), 1 << 16)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// One agent to read: its task's directory, its cgroup's name when it runs under limits,
/// its pane's process when the pane is live (`None`: dead or gone).
pub struct Agent<'a> {
    pub id: &'a str,
    pub dir: PathBuf,
    pub cgroup: Option<String>,
    pub pane_pid: Option<u32>,
}

/// What a monitor keeps between its reads: per agent, the last read (the next one's CPU
/// baseline) and what its file shows.
#[derive(Default)]
pub struct Reader {
    read_at: Option<Instant>,
    last: HashMap<String, (Option<Usage>, Option<String>)>,
}

impl Reader {
    /// Read every agent of `agents` when a read is due (the first pass of a monitor, then
    /// every [`EVERY`]); the file of each is written only when what it shows changes, and
    /// removed when its agent no longer runs. `now_ms`: Unix ms. True when it read.
    pub fn read(&mut self, agents: &[Agent<'_>], now_ms: u64) -> bool {
        if std::env::var("ORANGE_USAGE").is_ok_and(|v| v == "0") {
            return false;
        }
        if self.read_at.is_some_and(|t| t.elapsed() < EVERY) {
            return false;
        }
        self.read_at = Some(Instant::now());
        // Read only when an agent without a cgroup needs it, once for them all.
        let mut procs: Option<ProcTable> = None;
        let hz = crate::adapters::resource::ticks_per_second();
        let mut last = HashMap::new();
        for a in agents {
            let (before, shown) = self.last.remove(a.id).unwrap_or_else(|| {
                let f = load(&a.dir);
                (f, f.map(|u| u.text()))
            });
            let now = a.pane_pid.and_then(|pid| {
                let from_cgroup = a
                    .cgroup
                    .as_deref()
                    .and_then(resources::agent_cgroup)
                    .and_then(|d| d.usage());
                if let Some((mem, cpu)) = from_cgroup {
                    let mut u = Usage::measure(mem, cpu.unwrap_or(0), now_ms, before.as_ref());
                    u.cgroup = true;
                    return Some(u);
                }
                let (rss, ticks) = procs.get_or_insert_with(ProcTable::read).tree(pid)?;
                let us = ticks.saturating_mul(1_000_000) / hz.max(1);
                Some(Usage::measure(rss, us, now_ms, before.as_ref()))
            });
            let text = now.map(|u| u.text());
            if text != shown {
                // A derived figure, read again in seconds: no fsync.
                let _ = match &now {
                    Some(u) => serde_json::to_vec(u)
                        .map_err(std::io::Error::other)
                        .and_then(|b| store::write_cache(&path(&a.dir), &b)),
                    None => std::fs::remove_file(path(&a.dir)).or(Ok(())),
                };
            }
            last.insert(a.id.to_string(), (now, text));
        }
        self.last = last;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_the_share_of_one_core_since_the_read_before() {
        let a = Usage::measure(1 << 20, 1_000_000, 10_000, None);
        assert_eq!(a.cpu, 0);
        // 0.5 s of CPU in 2 s of wall time: 25%.
        let b = Usage::measure(312 << 20, 1_500_000, 12_000, Some(&a));
        assert_eq!(b.cpu, 25);
        assert_eq!(b.text(), "Mem: 312M · CPU 25%");
        assert_eq!(b.short(), "312M·25%");
    }

    /// A monitor reads at most every [`EVERY`]; what it read is in the task's file while
    /// the agent runs, and the file goes when it no longer does.
    #[test]
    fn a_monitor_reads_every_few_seconds_and_keeps_a_file_while_the_agent_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let agent = |pid: Option<u32>| Agent {
            id: "t1",
            dir: tmp.path().to_path_buf(),
            cgroup: None,
            pane_pid: pid,
        };
        let mut r = Reader::default();
        assert!(r.read(&[agent(Some(me))], 1_000));
        let u = load(tmp.path()).expect("written");
        assert!(u.memory > 0 && !u.cgroup, "{u:?}");
        // Too soon: not read again.
        assert!(!r.read(&[agent(None)], 2_000));
        assert!(load(tmp.path()).is_some());
        // Another monitor (a `--once` pass): the agent is gone, so is its file.
        assert!(Reader::default().read(&[agent(None)], 3_000));
        assert!(load(tmp.path()).is_none());
    }
}
