//! An agent's own cgroup, in files only (no process started here): made with its limits
//! written by orange itself ([`Dirs::make`]: cgroup v1, where orange may create one in the
//! memory, cpu, cpuacct and pids hierarchies, each mounted on its own; cgroup v2, its
//! controllers enabled in the parent first), the shell step that only moves the agent into
//! it before it `exec`s the agent ([`Dirs::join_argv`]), and what the kernel counts in it —
//! memory in use, CPU time, OOM kills — read by the monitor's pass.

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

    /// Make the cgroup and write its limits, from this process (no process started): v1
    /// a directory in each hierarchy; v2 first the controllers its limits need enabled in
    /// the parent's `cgroup.subtree_control`. Every limit asked for is written, or it
    /// fails: never a cgroup without a limit it was given. On a failure what it made is
    /// removed, and the error says what was written where and what the kernel answered.
    pub fn make(&self, caps: Caps) -> Result<(), String> {
        let mut made = vec![];
        let res = if self.v2 {
            self.make_v2(caps, &mut made)
        } else {
            self.make_v1(caps, &mut made)
        };
        if res.is_err() {
            for d in made.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
        }
        res
    }

    fn make_v1(&self, caps: Caps, made: &mut Vec<PathBuf>) -> Result<(), String> {
        let have: Vec<&str> = self.dirs.iter().map(|(c, _)| c.as_str()).collect();
        v1_controllers(&have, caps)?;
        for (c, d) in &self.dirs {
            mkdir(d, made)?;
            match c.as_str() {
                "memory" => {
                    if let Some(m) = caps.memory {
                        // memsw (memory + swap) exists with swap accounting only; it is
                        // never below the memory limit: lifted first (a cgroup left with a
                        // lower one), set to the limit after it (no swap).
                        let memsw = d.join("memory.memsw.limit_in_bytes").exists();
                        if memsw {
                            write(d, "memory.memsw.limit_in_bytes", "-1")?;
                        }
                        write(d, "memory.limit_in_bytes", &m.to_string())?;
                        if memsw {
                            write(d, "memory.memsw.limit_in_bytes", &m.to_string())?;
                        }
                    }
                }
                "cpu" => {
                    if let Some(p) = caps.cpu_percent {
                        write(d, "cpu.cfs_period_us", "100000")?;
                        write(d, "cpu.cfs_quota_us", &(u64::from(p) * 1000).to_string())?;
                    }
                }
                "pids" => {
                    if let Some(p) = caps.pids {
                        write(d, "pids.max", &p.to_string())?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn make_v2(&self, caps: Caps, made: &mut Vec<PathBuf>) -> Result<(), String> {
        let Some((_, d)) = self.dirs.first() else {
            return Ok(());
        };
        let parent = d.parent().unwrap_or(Path::new("/"));
        let words = |f: &str| std::fs::read_to_string(parent.join(f)).unwrap_or_default();
        let enable = v2_controllers(
            &words("cgroup.controllers"),
            &words("cgroup.subtree_control"),
            caps,
        )
        .map_err(|e| format!("{e} in {}", parent.display()))?;
        for c in enable {
            write(parent, "cgroup.subtree_control", &format!("+{c}"))?;
        }
        mkdir(d, made)?;
        if let Some(m) = caps.memory {
            write(d, "memory.max", &m.to_string())?;
            // Without swap accounting there is no memory.swap.max: memory.max holds.
            let _ = std::fs::write(d.join("memory.swap.max"), "0");
        }
        if let Some(c) = caps.cpu_percent {
            write(d, "cpu.max", &format!("{} 100000", u64::from(c) * 1000))?;
        }
        if let Some(p) = caps.pids {
            write(d, "pids.max", &p.to_string())?;
        }
        Ok(())
    }

    /// `argv` started in this cgroup, made before ([`Dirs::make`]): the shell that starts
    /// it writes its own pid into each `cgroup.procs`, then `exec`s it. A write that fails
    /// leaves its words in `marker` (and on the pane) and exits 125 before the agent
    /// starts. A marker left by an earlier start is removed first: an agent that exits
    /// 125 itself is never taken for a failed join.
    pub fn join_argv(&self, marker: &Path, argv: &[String]) -> Vec<String> {
        let q = |p: &Path| super::shell::quote(&p.display().to_string());
        let mut script = format!(
            "m={}; [ ! -e \"$m\" ] || rm -f \"$m\" || exit 125; \
             f() {{ r=\"writing its pid to $1: ${{2##*: }}\"; printf '%s\\n' \"$r\" > \"$m\"; \
             printf 'orange: the agent never started: joining its cgroup failed (%s)\\n' \"$r\" >&2; exit 125; }}; ",
            q(marker)
        );
        for (_, d) in &self.dirs {
            script.push_str(&format!(
                "p={}; e=$( {{ echo $$ > \"$p\"; }} 2>&1 ) || f \"$p\" \"$e\"; ",
                q(&d.join("cgroup.procs"))
            ));
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

/// Can a cgroup v1 with the hierarchies `have` hold these limits? A cpu limit needs the
/// cpu hierarchy and a pids limit the pids one (`writable_v1` takes them only where orange
/// may write them): a limit no hierarchy holds is refused, never dropped.
pub fn v1_controllers(have: &[&str], caps: Caps) -> Result<(), String> {
    let needs = [
        ("memory", caps.memory.is_some()),
        ("cpu", caps.cpu_percent.is_some()),
        ("pids", caps.pids.is_some()),
    ];
    let missing: Vec<&str> = needs
        .iter()
        .filter(|(c, asked)| *asked && !have.contains(c))
        .map(|(c, _)| *c)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "no writable cgroup v1 {} hierarchy here for its {} limit",
        missing.join(" nor "),
        missing.join(" and ")
    ))
}

/// The cgroup v2 controllers to enable in a parent whose `cgroup.controllers` reads
/// `available` and `cgroup.subtree_control` reads `enabled`, for a child with these
/// limits: memory always (its counters are what the monitor reads), cpu and pids when
/// limited. A controller the parent does not have cannot be enabled: refused.
pub fn v2_controllers(
    available: &str,
    enabled: &str,
    caps: Caps,
) -> Result<Vec<&'static str>, String> {
    let has = |text: &str, c: &str| text.split_whitespace().any(|w| w == c);
    let needs = [
        ("memory", true),
        ("cpu", caps.cpu_percent.is_some()),
        ("pids", caps.pids.is_some()),
    ];
    let mut enable = vec![];
    for (c, asked) in needs {
        if !asked || has(enabled, c) {
            continue;
        }
        if !has(available, c) {
            return Err(format!(
                "the cgroup v2 {c} controller is not available (the parent has: {})",
                if available.trim().is_empty() {
                    "none"
                } else {
                    available.trim()
                }
            ));
        }
        enable.push(c);
    }
    Ok(enable)
}

/// Make the directory `d` (an existing one is taken as it is); the ones made go in `made`.
/// Orange's shared parent (`orange/` in each v1 hierarchy) is made when missing and left.
fn mkdir(d: &Path, made: &mut Vec<PathBuf>) -> Result<(), String> {
    if let Some(parent) = d.parent() {
        match std::fs::create_dir(parent) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("making {}: {e}", parent.display())),
        }
    }
    match std::fs::create_dir(d) {
        Ok(()) => {
            made.push(d.to_path_buf());
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("making {}: {e}", d.display())),
    }
}

/// Write `value` into the control file `file` of `d`: the error says what, where, and
/// what the kernel answered.
fn write(d: &Path, file: &str, value: &str) -> Result<(), String> {
    let path = d.join(file);
    std::fs::write(&path, value).map_err(|e| format!("writing {value} to {}: {e}", path.display()))
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

    fn all_caps() -> Caps {
        Caps {
            memory: Some(64 << 20),
            cpu_percent: Some(150),
            pids: Some(64),
        }
    }

    /// A fake v1 layout: a directory per hierarchy standing for orange's own cgroup in it.
    fn fake_v1(root: &Path, controllers: &[&str]) -> Vec<(String, PathBuf)> {
        controllers
            .iter()
            .map(|c| {
                let d = root.join(c).join("me");
                std::fs::create_dir_all(&d).unwrap();
                (c.to_string(), d)
            })
            .collect()
    }

    fn read(d: &Path, f: &str) -> String {
        std::fs::read_to_string(d.join(f))
            .unwrap()
            .trim()
            .to_string()
    }

    #[test]
    fn a_v1_cgroup_is_made_in_each_hierarchy_with_each_limit() {
        let root = tempfile::tempdir().unwrap();
        let d = Dirs::v1(&fake_v1(root.path(), &["memory", "cpu", "pids"]), "t1-ab");
        d.make(all_caps()).unwrap();
        let at = |c: &str| root.path().join(c).join("me/orange/t1-ab");
        assert_eq!(read(&at("memory"), "memory.limit_in_bytes"), "67108864");
        assert_eq!(read(&at("cpu"), "cpu.cfs_period_us"), "100000");
        assert_eq!(read(&at("cpu"), "cpu.cfs_quota_us"), "150000");
        assert_eq!(read(&at("pids"), "pids.max"), "64");
        // Made again (a respawn's cgroup not yet gone): taken as it is, written again.
        d.make(all_caps()).unwrap();
    }

    #[test]
    fn a_v1_cgroup_that_cannot_be_made_leaves_nothing_and_says_why() {
        let root = tempfile::tempdir().unwrap();
        let parents = fake_v1(root.path(), &["memory", "cpu", "pids"]);
        // The pids hierarchy's `orange/` is a file: its cgroup cannot be made there.
        std::fs::write(root.path().join("pids/me/orange"), "").unwrap();
        let d = Dirs::v1(&parents, "t1-ab");
        let caps = Caps {
            pids: Some(64),
            ..Caps::default()
        };
        let e = d.make(caps).unwrap_err();
        assert!(
            e.starts_with("making ") && e.contains("pids/me/orange/t1-ab"),
            "{e}"
        );
        for c in ["memory", "cpu"] {
            let made = root.path().join(c).join("me/orange/t1-ab");
            assert!(!made.exists(), "{} left", made.display());
        }
        // A limit the kernel will not take (a directory in its place): what, where, why.
        let root = tempfile::tempdir().unwrap();
        let parents = fake_v1(root.path(), &["memory", "pids"]);
        std::fs::create_dir_all(root.path().join("pids/me/orange/t2/pids.max")).unwrap();
        let e = Dirs::v1(&parents, "t2").make(caps).unwrap_err();
        assert!(e.starts_with("writing 64 to "), "{e}");
        assert!(e.contains("pids/me/orange/t2/pids.max: "), "{e}");
        assert!(!root.path().join("memory/me/orange/t2").exists());
    }

    #[test]
    fn a_v1_limit_without_its_hierarchy_is_refused() {
        let caps = all_caps();
        assert!(v1_controllers(&["memory", "cpu", "cpuacct", "pids"], caps).is_ok());
        let e = v1_controllers(&["memory", "cpuacct"], caps).unwrap_err();
        assert!(e.contains("cpu nor pids hierarchy"), "{e}");
        let memory_only = Caps {
            memory: Some(1 << 30),
            ..Caps::default()
        };
        assert!(v1_controllers(&["memory"], memory_only).is_ok());
        // Made nowhere when refused.
        let root = tempfile::tempdir().unwrap();
        let d = Dirs::v1(&fake_v1(root.path(), &["memory"]), "t3");
        assert!(d.make(caps).is_err());
        assert!(!root.path().join("memory/me/orange/t3").exists());
    }

    /// A fake v2 parent: its controllers and those it gives its children.
    fn fake_v2(available: &str, enabled: &str) -> tempfile::TempDir {
        let p = tempfile::tempdir().unwrap();
        std::fs::write(p.path().join("cgroup.controllers"), available).unwrap();
        std::fs::write(p.path().join("cgroup.subtree_control"), enabled).unwrap();
        p
    }

    #[test]
    fn a_v2_cgroup_enables_its_controllers_then_writes_each_limit() {
        let p = fake_v2("cpuset cpu io memory pids\n", "memory\n");
        let d = Dirs::v2(p.path().join("orange-t1"));
        d.make(all_caps()).unwrap();
        let dir = p.path().join("orange-t1");
        assert_eq!(read(&dir, "memory.max"), "67108864");
        assert_eq!(read(&dir, "cpu.max"), "150000 100000");
        assert_eq!(read(&dir, "pids.max"), "64");
        // memory was on already; cpu then pids were enabled (the file keeps the last).
        assert_eq!(read(p.path(), "cgroup.subtree_control"), "+pids");
    }

    #[test]
    fn a_v2_controller_the_parent_lacks_is_refused_before_anything_is_made() {
        let caps = all_caps();
        assert_eq!(
            v2_controllers("cpu memory pids", "", caps).unwrap(),
            ["memory", "cpu", "pids"]
        );
        assert!(v2_controllers("memory", "memory cpu pids", caps)
            .unwrap()
            .is_empty());
        let e = v2_controllers("memory pids", "memory", caps).unwrap_err();
        assert!(
            e.contains("v2 cpu controller is not available (the parent has: memory pids)"),
            "{e}"
        );
        // Memory alone needs nothing more.
        let memory_only = Caps {
            memory: Some(1 << 30),
            ..Caps::default()
        };
        assert!(v2_controllers("memory", "memory", memory_only)
            .unwrap()
            .is_empty());
        let p = fake_v2("memory pids\n", "memory\n");
        let e = Dirs::v2(p.path().join("orange-t1")).make(caps).unwrap_err();
        assert!(e.contains("cpu controller is not available"), "{e}");
        assert!(!p.path().join("orange-t1").exists());
        assert_eq!(read(p.path(), "cgroup.subtree_control"), "memory");
        // A controller the kernel will not enable: what it wrote, where.
        let p = fake_v2("cpu memory pids\n", "memory\n");
        std::fs::remove_file(p.path().join("cgroup.subtree_control")).unwrap();
        std::fs::create_dir(p.path().join("cgroup.subtree_control")).unwrap();
        let e = Dirs::v2(p.path().join("orange-t1")).make(caps).unwrap_err();
        assert!(e.starts_with("writing +memory to "), "{e}");
    }

    /// Run the join step for real with `sh`, the agent `sh -c 'exit CODE'`: its exit
    /// status.
    fn join(d: &Dirs, marker: &Path, code: i32) -> i32 {
        let argv = d.join_argv(marker, &["sh".into(), "-c".into(), format!("exit {code}")]);
        std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .code()
            .unwrap_or(-1)
    }

    /// The cgroup `t1` made with every limit in a fake v1 layout under `root`.
    fn made_v1(root: &Path) -> Dirs {
        let d = Dirs::v1(&fake_v1(root, &["memory", "cpu", "pids"]), "t1");
        d.make(all_caps()).unwrap();
        d
    }

    #[test]
    fn the_join_step_writes_its_pid_into_each_cgroup_then_runs_the_agent() {
        let root = tempfile::tempdir().unwrap();
        let d = made_v1(root.path());
        let marker = root.path().join("cgroup-join-failed");
        // One left by an earlier start: gone, never taken for this one.
        std::fs::write(&marker, "old").unwrap();
        assert_eq!(join(&d, &marker, 7), 7, "the agent ran: its own status");
        assert!(!marker.exists());
        let pids: Vec<String> = d
            .dirs
            .iter()
            .map(|(_, dir)| read(dir, "cgroup.procs"))
            .collect();
        assert!(pids[0].parse::<u32>().is_ok(), "{pids:?}");
        assert!(
            pids.iter().all(|p| *p == pids[0]),
            "the same process joins each"
        );
        // An agent that exits 125 itself leaves no marker.
        assert_eq!(join(&d, &marker, 125), 125);
        assert!(!marker.exists());
    }

    #[test]
    fn a_failed_join_leaves_its_words_and_never_starts_the_agent() {
        let root = tempfile::tempdir().unwrap();
        let d = made_v1(root.path());
        // The pids cgroup removed from under it (a sweep, a person).
        let gone = root.path().join("pids/me/orange/t1");
        std::fs::remove_dir_all(&gone).unwrap();
        let marker = root.path().join("cgroup-join-failed");
        assert_eq!(join(&d, &marker, 7), 125, "the agent never ran");
        let words = std::fs::read_to_string(&marker).unwrap();
        let want = format!("writing its pid to {}/cgroup.procs: ", gone.display());
        assert!(words.starts_with(&want), "{words}");
        let why = words.trim_end()[want.len()..].to_string();
        assert!(!why.is_empty() && !why.contains("sh:"), "{words}");
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
