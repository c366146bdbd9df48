//! What the kernel offers to hold an agent's process tree to a memory, CPU and process
//! limit, and what the tree uses now: the argv of `systemd-run --user --scope` and of
//! `prlimit` (a cgroup orange makes itself is `super::cgroup`'s); the probes that say which can
//! work here; and the reading of `/proc` (no process started: the monitor reads every
//! agent in its one pass). `execution::resources` chooses among them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// `systemd-run` with a user manager to answer it: its bus socket is there.
pub fn user_systemd() -> Result<(), String> {
    if !super::shell::on_path("systemd-run") {
        return Err("systemd-run is not on PATH".into());
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{}", uid())));
    let private = runtime.join("systemd/private");
    if private.exists() || runtime.join("bus").exists() {
        Ok(())
    } else {
        Err(format!(
            "no user systemd answers (no {} nor {})",
            private.display(),
            runtime.join("bus").display()
        ))
    }
}

fn uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// A cgroup v2 directory this process may create children in, with the memory
/// controller given to them: this process's own cgroup on the unified hierarchy, as
/// [`v2_parent`] judges it.
pub fn writable_cgroup() -> Result<PathBuf, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mount = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(Path::new)
        .find(|m| m.join("cgroup.controllers").exists())
        .unwrap_or(Path::new("/sys/fs/cgroup"));
    v2_parent(&own, mount)
}

/// The cgroup v2 directory under `mount` (the unified hierarchy) that agents' cgroups can
/// be made in, for a process whose `/proc/self/cgroup` reads `own`. A child gets
/// `memory.max` (and `cpu.max`, `pids.max`) only when its parent's
/// `cgroup.subtree_control` enables the controller, and the kernel lets no cgroup but the
/// root enable one while it holds processes (the "no internal processes" rule; orange's
/// own process is in it). So: its own cgroup when its `cgroup.subtree_control` has
/// `memory` already (a delegated cgroup), or when it is the hierarchy's root (no
/// `cgroup.type` file: only the root lacks one), where `cgroup::Dirs::make` enables
/// what it needs first. A cgroup namespace's root is not the kernel's: a container's `/` holding
/// its processes cannot enable controllers (EBUSY), and is refused here.
pub fn v2_parent(own: &str, mount: &Path) -> Result<PathBuf, String> {
    let Some(rel) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
        return Err("no cgroup v2 hierarchy in /proc/self/cgroup".into());
    };
    if !mount.join("cgroup.controllers").exists() {
        return Err(format!(
            "no cgroup v2 mount ({} is cgroup v1)",
            mount.display()
        ));
    }
    let dir = mount.join(rel.trim_start_matches('/'));
    let words = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let has = |text: &str, c: &str| text.split_whitespace().any(|w| w == c);
    let controllers = words("cgroup.controllers");
    if !has(&controllers, "memory") {
        return Err(format!(
            "the cgroup v2 mount {} offers no memory controller (it has: {})",
            mount.display(),
            if controllers.trim().is_empty() {
                "none"
            } else {
                controllers.trim()
            }
        ));
    }
    let delegated = has(&words("cgroup.subtree_control"), "memory");
    let root = rel.trim() == "/" && !dir.join("cgroup.type").exists();
    if !delegated && !root {
        let what = if rel.trim() == "/" {
            "the root of this cgroup namespace (a container's), holding processes, cannot enable controllers for children"
        } else {
            "a cgroup holding processes (orange's own) cannot enable controllers for children"
        };
        return Err(format!(
            "the cgroup {} does not give memory to its children: {what}; needs a delegated cgroup with memory in cgroup.subtree_control",
            dir.display()
        ));
    }
    if !dir_writable(&dir) {
        return Err(format!(
            "the cgroup {} is not writable by orange",
            dir.display()
        ));
    }
    Ok(dir)
}

/// May this process create a directory in `dir` (`access(W_OK)`: its permissions, a
/// read-only mount)? Asked, not tried: creating and removing a cgroup to see costs about
/// 50 ms over four v1 hierarchies (measured here), in every `orange` process that probes.
pub(super) fn dir_writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

/// `prlimit` is on PATH.
pub fn prlimit() -> Result<(), String> {
    if super::shell::on_path("prlimit") {
        Ok(())
    } else {
        Err("prlimit is not on PATH (util-linux)".into())
    }
}

/// The limits as the kernel takes them: bytes, CPU in percent of one core, tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Caps {
    pub memory: Option<u64>,
    pub cpu_percent: Option<u32>,
    pub pids: Option<u32>,
}

/// `argv` in a transient systemd scope of its own.
pub fn systemd_argv(caps: Caps, unit: &str, argv: &[String]) -> Vec<String> {
    let mut out: Vec<String> = ["systemd-run", "--user", "--scope", "--quiet", "--collect"]
        .map(String::from)
        .into();
    out.push(format!("--unit={unit}"));
    let mut prop = |p: String| out.extend(["-p".to_string(), p]);
    if let Some(m) = caps.memory {
        prop(format!("MemoryMax={m}"));
        prop("MemorySwapMax=0".into());
    }
    if let Some(c) = caps.cpu_percent {
        prop(format!("CPUQuota={c}%"));
    }
    if let Some(p) = caps.pids {
        prop(format!("TasksMax={p}"));
    }
    out.push("--".into());
    out.extend(argv.iter().cloned());
    out
}

/// `argv` with its data segment (the heap: what `malloc` and V8's heap take) limited to
/// `memory` bytes. RLIMIT_DATA, not RLIMIT_AS: node reserves far more address space than
/// it ever uses, and an address-space limit would stop it at start.
pub fn prlimit_argv(memory: u64, argv: &[String]) -> Vec<String> {
    let mut out = vec![
        "prlimit".to_string(),
        format!("--data={memory}"),
        "--".into(),
    ];
    out.extend(argv.iter().cloned());
    out
}

/// One process as `/proc/PID/stat` tells it: its parent, its CPU ticks (user + system)
/// and its resident pages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proc {
    pub ppid: u32,
    pub ticks: u64,
    pub rss_pages: u64,
}

/// Every process of this machine (one read of each `/proc/PID/stat`): what the monitor's
/// pass reads once for all its agents.
pub fn processes() -> HashMap<u32, Proc> {
    let mut all = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return all;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(p) = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| parse_stat(&s))
        {
            all.insert(pid, p);
        }
    }
    all
}

/// Every process of this machine with its children, read once per monitor pass.
#[derive(Debug, Default)]
pub struct ProcTable {
    procs: HashMap<u32, Proc>,
    children: HashMap<u32, Vec<u32>>,
    page: u64,
}

impl ProcTable {
    pub fn read() -> ProcTable {
        let procs = processes();
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for (pid, p) in &procs {
            children.entry(p.ppid).or_default().push(*pid);
        }
        ProcTable {
            procs,
            children,
            page: page_size(),
        }
    }

    /// The resident bytes and CPU ticks of `root` and every process under it (`None`:
    /// no such process).
    pub fn tree(&self, root: u32) -> Option<(u64, u64)> {
        self.procs.get(&root)?;
        let (mut rss, mut ticks) = (0, 0);
        let mut todo = vec![root];
        let mut seen = 0usize;
        while let Some(pid) = todo.pop() {
            seen += 1;
            if seen > self.procs.len() {
                break;
            }
            if let Some(p) = self.procs.get(&pid) {
                rss += p.rss_pages * self.page;
                ticks += p.ticks;
            }
            if let Some(c) = self.children.get(&pid) {
                todo.extend(c.iter().copied());
            }
        }
        Some((rss, ticks))
    }
}

/// `/proc/PID/stat`: the fields after the command's closing parenthesis (the command
/// may hold spaces and parentheses).
pub fn parse_stat(s: &str) -> Option<Proc> {
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state): ppid is 4, utime 14, stime 15, rss 24.
    let n = |i: usize| f.get(i - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Proc {
        ppid: u32::try_from(n(4)?).ok()?,
        ticks: n(14)? + n(15)?,
        rss_pages: n(24)?,
    })
}

/// The page size and clock ticks per second this kernel counts in (`/proc` speaks in
/// both): Linux's usual 4096 and 100, read once from the auxiliary vector when it says.
pub fn page_size() -> u64 {
    aux(6).unwrap_or(4096)
}

pub fn ticks_per_second() -> u64 {
    aux(17).unwrap_or(100)
}

fn aux(key: u64) -> Option<u64> {
    let b = std::fs::read("/proc/self/auxv").ok()?;
    b.chunks_exact(16).find_map(|c| {
        let k = u64::from_ne_bytes(c[..8].try_into().ok()?);
        (k == key).then(|| u64::from_ne_bytes(c[8..].try_into().unwrap_or_default()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_parentheses_in_its_command_parses() {
        let s = "42 (a (b) c) S 7 42 42 0 -1 4194304 100 0 0 0 30 12 0 0 20 0 1 0 100 1000 250 18446744073709551615";
        let p = parse_stat(s).unwrap();
        assert_eq!(p.ppid, 7);
        assert_eq!(p.ticks, 42);
        assert_eq!(p.rss_pages, 250);
    }

    /// A fake unified hierarchy: `cgroup.controllers` at its root, and the cgroup `rel`
    /// with these controllers and `subtree_control` (and `cgroup.type`, as every cgroup
    /// but the root has).
    fn fake_v2(rel: &str, controllers: &str, subtree: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        let dir = root.path().join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cgroup.controllers"), format!("{controllers}\n")).unwrap();
        std::fs::write(dir.join("cgroup.subtree_control"), format!("{subtree}\n")).unwrap();
        if rel != "/" {
            std::fs::write(dir.join("cgroup.type"), "domain\n").unwrap();
        }
        root
    }

    #[test]
    fn without_cgroup_v2_there_is_no_v2_parent() {
        let root = fake_v2("/", "cpu memory pids", "");
        let v1 = "12:memory:/user.slice\n3:pids:/user.slice\n";
        let e = v2_parent(v1, root.path()).unwrap_err();
        assert!(e.contains("no cgroup v2 hierarchy"), "{e}");
        // A v2 line, but no v2 mount (this machine: /sys/fs/cgroup is v1).
        let bare = tempfile::tempdir().unwrap();
        let e = v2_parent("0::/\n", bare.path()).unwrap_err();
        assert!(e.contains("no cgroup v2 mount"), "{e}");
    }

    #[test]
    fn a_v2_cgroup_without_memory_is_refused() {
        let root = fake_v2("/a.slice/me", "cpu pids", "");
        let e = v2_parent("0::/a.slice/me\n", root.path()).unwrap_err();
        assert!(e.contains("no memory controller (it has: cpu pids)"), "{e}");
    }

    #[test]
    fn memory_not_given_to_children_of_a_non_root_cgroup_is_refused() {
        let root = fake_v2("/a.slice/me", "cpu memory pids", "");
        let e = v2_parent("0::/a.slice/me\n", root.path()).unwrap_err();
        assert!(
            e.contains("needs a delegated cgroup with memory in cgroup.subtree_control"),
            "{e}"
        );
        // Only cpu given: still no memory.max for a child.
        let root = fake_v2("/a.slice/me", "cpu memory pids", "cpu");
        assert!(v2_parent("0::/a.slice/me\n", root.path()).is_err());
    }

    #[test]
    fn a_cgroup_that_gives_memory_to_its_children_is_taken() {
        let root = fake_v2("/a.slice/me", "cpu memory pids", "cpu memory pids");
        let dir = v2_parent("1:name=x:/\n0::/a.slice/me\n", root.path()).unwrap();
        assert_eq!(dir, root.path().join("a.slice/me"));
    }

    #[test]
    fn the_root_is_taken_and_a_namespace_root_refused() {
        // The hierarchy's root (no cgroup.type): exempt from the rule; orange
        // enables the controllers.
        let root = fake_v2("/", "cpu memory pids", "");
        assert_eq!(v2_parent("0::/\n", root.path()).unwrap(), root.path());
        // A container's `/` (cgroup.type: it is not the kernel's root) holds processes.
        std::fs::write(root.path().join("cgroup.type"), "domain\n").unwrap();
        let e = v2_parent("0::/\n", root.path()).unwrap_err();
        assert!(e.contains("cgroup namespace"), "{e}");
        // Unless it gives memory to its children already.
        std::fs::write(root.path().join("cgroup.subtree_control"), "memory\n").unwrap();
        assert!(v2_parent("0::/\n", root.path()).is_ok());
    }

    #[test]
    fn prlimit_limits_the_data_segment_not_the_address_space() {
        let argv = prlimit_argv(1 << 30, &["node".into()]);
        assert_eq!(argv, ["prlimit", "--data=1073741824", "--", "node"]);
    }
}
