//! An agent's own cgroup, in files only (no process started): where cgroup v1 lets orange
//! create one (the memory, cpu, cpuacct and pids hierarchies, each mounted on its own), the
//! shell step that moves the agent into it before it `exec`s the agent, and what the
//! kernel counts in it — memory in use, CPU time, OOM kills — read by the monitor's pass.
//! The cgroup v2 directory of `super::resource::cgroup_argv` is read the same way.

use std::path::{Path, PathBuf};

use super::resource::Caps;

/// The v1 controllers an agent's cgroup is made in: `memory` (required), `cpu` (its
/// quota), `cpuacct` (its CPU time, for the live usage), `pids`.
const V1: [&str; 4] = ["memory", "cpu", "cpuacct", "pids"];

/// The parent directory of every agent's cgroup, under orange's own cgroup in each
/// hierarchy.
pub const PARENT: &str = "orange";

/// One agent's cgroup: a directory per v1 hierarchy, or the one of v2.
#[derive(Debug, Clone, PartialEq)]
pub struct Dirs {
    pub v2: bool,
    /// `(controller, directory)`; v2: `("unified", directory)`.
    pub dirs: Vec<(String, PathBuf)>,
}

/// The cgroup v1 hierarchies this process may create cgroups in: each controller's own
/// cgroup of this process (`/proc/self/cgroup`) under its mount, when it is writable. The
/// memory hierarchy is required; the others are taken when they are there and writable.
pub fn writable_v1() -> Result<Vec<(String, PathBuf)>, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for c in V1 {
        let Some(rel) = own.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
            ctrls.split(',').any(|x| x == c).then_some(path)
        }) else {
            if c == "memory" {
                return Err("no cgroup v1 memory hierarchy in /proc/self/cgroup".into());
            }
            continue;
        };
        let mount = Path::new("/sys/fs/cgroup").join(c);
        let dir = mount.join(rel.trim_start_matches('/'));
        let ok = dir.join("cgroup.procs").exists() && super::resource::dir_writable(&dir);
        if !ok {
            if c == "memory" {
                return Err(format!(
                    "the cgroup v1 memory hierarchy's {} is not writable by orange",
                    dir.display()
                ));
            }
            continue;
        }
        // Co-mounted controllers (`cpu,cpuacct`) share one directory: made once.
        let real = dir.canonicalize().unwrap_or(dir);
        if !out.iter().any(|(_, d)| *d == real) {
            out.push((c.to_string(), real));
        }
    }
    Ok(out)
}

impl Dirs {
    /// The cgroup named `name` under orange's parent in each of `parents` (v1).
    pub fn v1(parents: &[(String, PathBuf)], name: &str) -> Dirs {
        Dirs {
            v2: false,
            dirs: parents
                .iter()
                .map(|(c, p)| (c.clone(), p.join(PARENT).join(name)))
                .collect(),
        }
    }

    /// The cgroup v2 directory `dir`.
    pub fn v2(dir: PathBuf) -> Dirs {
        Dirs {
            v2: true,
            dirs: vec![("unified".into(), dir)],
        }
    }

    fn of(&self, controller: &str) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(c, _)| c == controller || (self.v2 && c == "unified"))
            .map(|(_, d)| d.as_path())
    }

    /// `argv` moved, by the shell that starts it, into these v1 cgroups (each made, its
    /// limit written) before it `exec`s the agent; exit status 125 when one cannot be.
    pub fn v1_argv(&self, caps: Caps, argv: &[String]) -> Vec<String> {
        let mut script = String::new();
        for (c, d) in &self.dirs {
            let d = super::shell::quote(&d.display().to_string());
            script.push_str(&format!("d={d}; mkdir -p \"$d\" || exit 125; "));
            match c.as_str() {
                "memory" => {
                    if let Some(m) = caps.memory {
                        // memsw (memory + swap) exists with swap accounting only; it must
                        // not be below the memory limit, so it is written after it.
                        script.push_str(&format!(
                            "echo {m} > \"$d/memory.limit_in_bytes\" || exit 125; \
                             echo {m} > \"$d/memory.memsw.limit_in_bytes\" 2>/dev/null; "
                        ));
                    }
                }
                "cpu" => {
                    if let Some(p) = caps.cpu_percent {
                        script.push_str(&format!(
                            "echo 100000 > \"$d/cpu.cfs_period_us\" && echo {} > \"$d/cpu.cfs_quota_us\" || exit 125; ",
                            u64::from(p) * 1000
                        ));
                    }
                }
                "pids" => {
                    if let Some(p) = caps.pids {
                        script.push_str(&format!("echo {p} > \"$d/pids.max\" || exit 125; "));
                    }
                }
                _ => {}
            }
            script.push_str("echo $$ > \"$d/cgroup.procs\" || exit 125; ");
        }
        script.push_str("exec \"$@\"");
        let mut out = vec![
            "sh".to_string(),
            "-c".into(),
            script,
            "orange-cgroup".into(),
        ];
        out.extend(argv.iter().cloned());
        out
    }

    /// Does the cgroup exist (its memory directory)?
    pub fn exists(&self) -> bool {
        self.of("memory").is_some_and(Path::exists)
    }

    /// What the tree uses now, as the kernel counts it: memory in bytes (without the
    /// inactive file cache it can drop at once, as `docker stats` counts) and CPU time in
    /// microseconds (`None` where it is not counted). `None`: no such cgroup.
    pub fn usage(&self) -> Option<(u64, Option<u64>)> {
        let mem = self.of("memory")?;
        let (current, stat, inactive) = if self.v2 {
            ("memory.current", "memory.stat", "inactive_file ")
        } else {
            (
                "memory.usage_in_bytes",
                "memory.stat",
                "total_inactive_file ",
            )
        };
        let used: u64 = read_trim(&mem.join(current))?.parse().ok()?;
        let cache = std::fs::read_to_string(mem.join(stat))
            .ok()
            .and_then(|s| field(&s, inactive))
            .unwrap_or(0);
        let cpu = if self.v2 {
            std::fs::read_to_string(mem.join("cpu.stat"))
                .ok()
                .and_then(|s| field(&s, "usage_usec "))
        } else {
            self.of("cpuacct")
                .and_then(|d| read_trim(&d.join("cpuacct.usage")))
                .and_then(|s| s.parse::<u64>().ok())
                .map(|ns| ns / 1000)
        };
        Some((used.saturating_sub(cache), cpu))
    }

    /// How many processes the kernel's OOM killer killed in it at its memory limit: v1's
    /// `memory.oom_control` and v2's `memory.events` count them (`oom_kill N`).
    pub fn oom_kills(&self) -> u64 {
        let Some(mem) = self.of("memory") else {
            return 0;
        };
        let file = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        std::fs::read_to_string(mem.join(file))
            .ok()
            .and_then(|s| field(&s, "oom_kill "))
            .unwrap_or(0)
    }

    /// Remove it (each directory once no process is left in it). True when none is left.
    pub fn remove(&self) -> bool {
        let mut gone = true;
        for (_, d) in &self.dirs {
            match std::fs::remove_dir(d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => gone = false,
            }
        }
        gone
    }
}

/// The agents' cgroups under orange's parent in the memory hierarchy of `parents` (v1):
/// their names.
pub fn v1_children(parents: &[(String, PathBuf)]) -> Vec<String> {
    let Some((_, mem)) = parents.iter().find(|(c, _)| c == "memory") else {
        return vec![];
    };
    std::fs::read_dir(mem.join(PARENT))
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().to_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The agents' cgroups orange made in the cgroup v2 directory `dir` (`orange-NAME`):
/// their names.
pub fn v2_children(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("orange-"))
                        .map(String::from)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The number after `key` (with its space) at the start of a line of `text`.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v1_step_writes_each_limit_then_its_own_pid() {
        let d = Dirs::v1(
            &[
                ("memory".into(), PathBuf::from("/cg/memory/me")),
                ("cpu".into(), PathBuf::from("/cg/cpu")),
                ("pids".into(), PathBuf::from("/cg/pids")),
            ],
            "t1-ab",
        );
        let caps = Caps {
            memory: Some(64 << 20),
            cpu_percent: Some(150),
            pids: Some(64),
        };
        let argv = d.v1_argv(caps, &["agent".into(), "a b".into()]);
        let s = &argv[2];
        assert!(s.contains("d=/cg/memory/me/orange/t1-ab;"), "{s}");
        assert!(
            s.contains("echo 67108864 > \"$d/memory.limit_in_bytes\""),
            "{s}"
        );
        assert!(s.contains("echo 150000 > \"$d/cpu.cfs_quota_us\""), "{s}");
        assert!(s.contains("echo 64 > \"$d/pids.max\""), "{s}");
        assert_eq!(s.matches("echo $$ > \"$d/cgroup.procs\"").count(), 3, "{s}");
        assert!(s.ends_with("exec \"$@\""), "{s}");
        assert_eq!(&argv[3..], ["orange-cgroup", "agent", "a b"]);
    }

    #[test]
    fn counters_are_read_from_their_lines() {
        let oom = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(field(oom, "oom_kill "), Some(2));
        assert_eq!(field("low 0\noom 1\noom_kill 1\n", "oom_kill "), Some(1));
        assert_eq!(
            field("usage_usec 1234\nuser_usec 1\n", "usage_usec "),
            Some(1234)
        );
    }
}
