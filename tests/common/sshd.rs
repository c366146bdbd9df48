//! A real OpenSSH server on 127.0.0.1 for the remote-host tests: its own host
//! key, port, authorized key and config, run as the same user. It stands in for a remote
//! machine; `stop` kills it and every connection it serves (a dropped network, a dead
//! sshd), `start` brings it back on the same port with the same key. Its sessions get
//! `SHLVL=1`, so bash does not read this user's `~/.bashrc` for the commands they run: the
//! tests never depend on (or wait for) what that file does — a pyenv rehash killed by
//! `stop` left its lock behind, and every later shell waited a minute for it.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{poll, require};

pub struct Sshd {
    pub dir: PathBuf,
    pub port: u16,
    child: Option<Child>,
}

/// Where Debian puts sshd (not on a user's PATH).
fn sshd_program() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen runs");
    assert!(st.success(), "ssh-keygen failed");
}

impl Sshd {
    /// A server in `<root>/sshd`, or `None` (after [`require`]'s SKIP) without OpenSSH.
    pub fn start(root: &Path) -> Option<Sshd> {
        let found = sshd_program().is_some()
            && Command::new("ssh")
                .arg("-V")
                .output()
                .is_ok_and(|o| o.status.success());
        if !require(
            "sshd",
            found,
            "remote hosts are driven over a real OpenSSH server on 127.0.0.1 (apt-get install openssh-server)",
        ) {
            return None;
        }
        let dir = root.join("sshd");
        std::fs::create_dir_all(&dir).unwrap();
        keygen(&dir.join("host_key"));
        keygen(&dir.join("id"));
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
        // The privilege-separation directory sshd insists on when run as root.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
PidFile {d}/sshd.pid\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n\
PasswordAuthentication no\nKbdInteractiveAuthentication no\nMaxSessions 100\nMaxStartups 100\n\
SetEnv SHLVL=1\n",
            d = dir.display()
        );
        std::fs::write(dir.join("sshd_config"), conf).unwrap();
        let host_pub = std::fs::read_to_string(dir.join("host_key.pub")).unwrap();
        let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        std::fs::write(
            dir.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", key.join(" ")),
        )
        .unwrap();
        let mut s = Sshd {
            dir,
            port,
            child: None,
        };
        s.resume();
        Some(s)
    }

    /// Start (again) on the same port, with the same keys; returns once it accepts.
    pub fn resume(&mut self) {
        let child = Command::new(sshd_program().unwrap())
            .args(["-D", "-e", "-f"])
            .arg(self.dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.dir.join("sshd.log"))
                    .unwrap(),
            )
            .spawn()
            .expect("sshd starts");
        self.child = Some(child);
        let port = self.port;
        let up = poll(Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", port)).ok().map(|_| ())
        });
        assert!(
            up.is_some(),
            "sshd did not listen on {port}: {}",
            std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
        );
    }

    /// Kill sshd and every process it serves (the connections, the commands they run):
    /// what a machine that went away leaves the client with.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        for pid in descendants(child.id()) {
            kill_hard(pid);
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// `--ssh-option` values that reach this server (the user's ~/.ssh is not involved).
    pub fn options(&self) -> Vec<String> {
        vec![
            format!("Port={}", self.port),
            format!("IdentityFile={}", self.dir.join("id").display()),
            "IdentitiesOnly=yes".to_string(),
            format!(
                "UserKnownHostsFile={}",
                self.dir.join("known_hosts").display()
            ),
        ]
    }

    /// `host add NAME 127.0.0.1 …` arguments for this server.
    pub fn host_add_args(&self, name: &str) -> Vec<String> {
        let mut a = vec![
            "host".to_string(),
            "add".to_string(),
            name.to_string(),
            "127.0.0.1".to_string(),
        ];
        for o in self.options() {
            a.push("--ssh-option".into());
            a.push(o);
        }
        a
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Every process below `pid`, deepest first (from /proc).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the comm may hold spaces and parentheses.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|s| s.parse().ok()) {
            parent_of.push((p, ppid));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (c, pp) in &parent_of {
            if *pp == p {
                out.push(*c);
                frontier.push(*c);
            }
        }
    }
    out.reverse();
    out
}

fn kill_hard(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}
