//! OpenSSH: the only module that runs `ssh`. One multiplexed connection per host
//! (ControlMaster/ControlPersist, its socket in a private directory), reused by every call.
//! The user's ssh config, keys, agent and known_hosts are respected: host-key checking is
//! never turned off, and `BatchMode` makes a missing key or an unknown host key an error
//! instead of a prompt nobody sees.
//!
//! ssh joins its arguments into one line for the remote shell: every word is put in single
//! quotes here, so quotes, `$(…)`, backticks, `;`, newlines, a leading `-`, `=` or `~`
//! arrive as they were, in sh, bash and zsh alike.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the shared connection stays up after its last use.
const PERSIST: &str = "600";

#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("ssh is not installed (OpenSSH's client)")]
    NotFound,
    /// ssh's own failure (exit 255): no connection, refused key, unknown host key…
    #[error("{0}")]
    Unreachable(String),
    #[error("running ssh: {0}")]
    Io(std::io::Error),
}

/// What a remote command gave back.
#[derive(Debug)]
pub struct SshOutput {
    /// The remote command's exit status.
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// One host as ssh reaches it.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// `user@host`, an ssh config alias, or `ssh://user@host:port`.
    pub dest: String,
    /// `-o KEY=VALUE` for every call (HostName, Port, IdentityFile, UserKnownHostsFile…).
    pub options: Vec<String>,
    /// The control socket (`%C`-free: one path per host, kept short for the 104-byte limit).
    pub control_path: PathBuf,
}

impl Ssh {
    pub fn new(dest: &str, options: &[String], control_path: PathBuf) -> Ssh {
        Ssh {
            dest: dest.to_string(),
            options: options.to_vec(),
            control_path,
        }
    }

    /// Everything before the remote command line.
    fn args(&self, tty: bool) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        if tty {
            a.push("-t".into());
        }
        for o in [
            "BatchMode=yes".to_string(),
            "ControlMaster=auto".to_string(),
            format!("ControlPath={}", self.control_path_option()),
            format!("ControlPersist={PERSIST}"),
            "ConnectTimeout=10".to_string(),
            "ServerAliveInterval=5".to_string(),
            "ServerAliveCountMax=3".to_string(),
        ] {
            a.push("-o".into());
            a.push(o);
        }
        for o in &self.options {
            a.push("-o".into());
            a.push(o.clone());
        }
        // `--` ends ssh's options: a destination can never be read as one.
        a.push("--".into());
        a.push(self.dest.clone());
        a
    }

    /// The remote command line: `env K=V … argv…`, every word in single quotes (also the
    /// plain ones: zsh, a common login shell, expands a bare leading `=` or `~`). A value
    /// or word starting with `~/` means the remote home: it is written `"$HOME"/…`.
    pub fn command_line(env: &[(&str, &str)], argv: &[String]) -> String {
        let mut words: Vec<String> = Vec::new();
        if !env.is_empty() {
            words.push("env".into());
            for (k, v) in env {
                words.push(match v.strip_prefix("~/") {
                    Some(rest) => format!(
                        "{}\"$HOME\"/{}",
                        quote_all(&format!("{k}=")),
                        quote_all(rest)
                    ),
                    None => quote_all(&format!("{k}={v}")),
                });
            }
        }
        words.extend(argv.iter().map(|a| match a.strip_prefix("~/") {
            Some(rest) => format!("\"$HOME\"/{}", quote_all(rest)),
            None => quote_all(a),
        }));
        words.join(" ")
    }

    /// Run `argv` on the host (with `env` set) and collect its output; `stdin` is written
    /// to it when given. ssh's own failure (exit 255) is [`SshError::Unreachable`], and so
    /// is a call still running after `timeout` (it is killed).
    pub fn run(
        &self,
        env: &[(&str, &str)],
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Option<Duration>,
    ) -> Result<SshOutput, SshError> {
        if let Some(dir) = self.control_path.parent() {
            ensure_private_dir(dir).map_err(SshError::Io)?;
        }
        let mut c = Command::new("ssh");
        c.args(self.args(false))
            .arg(Self::command_line(env, argv))
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SshError::NotFound,
            _ => SshError::Io(e),
        })?;
        if let (Some(data), Some(mut w)) = (stdin, child.stdin.take()) {
            let _ = w.write_all(data);
        }
        let out = match timeout {
            None => child.wait_with_output().map_err(SshError::Io)?,
            Some(limit) => wait_within(child, limit)?,
        };
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        match out.status.code() {
            Some(255) | None => Err(SshError::Unreachable(last_line(&stderr))),
            Some(status) => Ok(SshOutput {
                status,
                stdout: out.stdout,
                stderr,
            }),
        }
    }

    /// Start `argv` on the host (with `env` set) and keep it running: its stdin, stdout and
    /// stderr are pipes here (`orange serve --stdio` behind a broker). Through the shared
    /// connection like every call: a new session on it, not a new connection.
    pub fn spawn_stdio(
        &self,
        env: &[(&str, &str)],
        argv: &[String],
    ) -> Result<std::process::Child, SshError> {
        if let Some(dir) = self.control_path.parent() {
            ensure_private_dir(dir).map_err(SshError::Io)?;
        }
        Command::new("ssh")
            .args(self.args(false))
            .arg(Self::command_line(env, argv))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => SshError::NotFound,
                _ => SshError::Io(e),
            })
    }

    /// The argv of an interactive ssh (a pseudo-terminal) running `argv` there: for a tmux
    /// window or `exec` (attach).
    pub fn interactive_argv(&self, env: &[(&str, &str)], argv: &[String]) -> Vec<String> {
        let mut a = vec!["ssh".to_string()];
        a.extend(self.args(true));
        a.push(Self::command_line(env, argv));
        a
    }

    /// Replace this process with `argv` (an [`Ssh::interactive_argv`]). Returns only when
    /// the exec failed.
    pub fn exec(&self, argv: &[String]) -> std::io::Error {
        use std::os::unix::process::CommandExt;
        Command::new(&argv[0]).args(&argv[1..]).exec()
    }

    /// The control path as `-o ControlPath=` reads it: `%` written `%%` (ssh expands
    /// `%`-tokens there). A path with whitespace is never given (see `Host::control_path`).
    fn control_path_option(&self) -> String {
        self.control_path.display().to_string().replace('%', "%%")
    }

    /// Close the shared connection (host removal, tests).
    pub fn disconnect(&self) {
        self.control(&["exit"]);
    }

    fn control(&self, op: &[&str]) -> bool {
        if !self.control_path.exists() {
            return false;
        }
        Command::new("ssh")
            .arg("-O")
            .args(op)
            .arg("-o")
            .arg(format!("ControlPath={}", self.control_path_option()))
            .args(self.options.iter().flat_map(|o| ["-o", o.as_str()]))
            .arg("--")
            .arg(&self.dest)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// The child's output, or an error once `limit` has passed (the child is killed).
fn wait_within(
    mut child: std::process::Child,
    limit: Duration,
) -> Result<std::process::Output, SshError> {
    use std::io::Read;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        if let Some(s) = out.as_mut() {
            let _ = s.read_to_end(&mut o);
        }
        o
    });
    let err_reader = std::thread::spawn(move || {
        let mut e = Vec::new();
        if let Some(s) = err.as_mut() {
            let _ = s.read_to_end(&mut e);
        }
        e
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().map_err(SshError::Io)? {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SshError::Unreachable(format!(
                "no answer within {}s",
                limit.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok(std::process::Output {
        status,
        stdout: reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    })
}

/// `'…'` around any word, each `'` written `'\\''`.
fn quote_all(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The last non-empty line of ssh's complaint (`ssh: connect to host … refused`).
pub(crate) fn last_line(stderr: &str) -> String {
    stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("ssh failed without a message")
        .to_string()
}

/// The control sockets' directory: only its owner may enter it. One that exists must be a
/// real directory (no symlink) owned by this user with no access for others: a socket
/// there that someone else planted would be handed every command.
pub(crate) fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::symlink_metadata(dir) {
        Ok(m) => {
            let uid = current_uid();
            if !m.file_type().is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "refusing the ssh control directory {}: it must be a directory of yours that only you can enter (mode 700)",
                        dir.display()
                    ),
                ));
            }
            Ok(())
        }
        Err(_) => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
    }
}

/// This process's user id.
fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Where control sockets go when the data root's own path is too long for a socket (or
/// holds whitespace): `$XDG_RUNTIME_DIR/orange-ssh`, else `/tmp/orange-ssh-<uid>`; in
/// both, [`ensure_private_dir`] checks the directory before any use.
pub fn fallback_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() && d.is_dir() => d.join("orange-ssh"),
        _ => PathBuf::from(format!("/tmp/orange-ssh-{}", current_uid())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_quotes_every_word() {
        let line = Ssh::command_line(
            &[("ORANGE_HOME", "/h o")],
            &[
                "orange".into(),
                "task".into(),
                "it's $(x) `y`; z\nw".into(),
                "-x".into(),
            ],
        );
        assert_eq!(
            line,
            "env 'ORANGE_HOME=/h o' 'orange' 'task' 'it'\\''s $(x) `y`; z\nw' '-x'"
        );
        // zsh would expand a bare `=x` or `~x`; a leading `~/` is the remote home.
        let line = Ssh::command_line(
            &[("ORANGE_HOME", "~/orange")],
            &["~/bin/orange".into(), "=s".into(), "~x".into()],
        );
        assert_eq!(
            line,
            "env 'ORANGE_HOME='\"$HOME\"/'orange' \"$HOME\"/'bin/orange' '=s' '~x'"
        );
    }

    #[test]
    fn options_then_double_dash_then_destination() {
        let s = Ssh::new("-oProxyCommand=x", &["Port=22".into()], "/tmp/c".into());
        let a = s.args(false);
        let dd = a.iter().position(|w| w == "--").unwrap();
        assert_eq!(a[dd + 1], "-oProxyCommand=x");
        assert!(a.contains(&"BatchMode=yes".to_string()));
        assert!(!a.iter().any(|w| w.contains("StrictHostKeyChecking")));
    }
}

#[cfg(test)]
mod dir_tests {
    use super::*;

    #[test]
    fn a_control_directory_of_someone_else_or_open_to_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(ensure_private_dir(&open).is_err());
        let link = tmp.path().join("link");
        let mine = tmp.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        assert!(ensure_private_dir(&link).is_err());
        assert!(ensure_private_dir(&mine).is_ok());
        let new = tmp.path().join("a/b");
        ensure_private_dir(&new).unwrap();
        let mode = std::fs::metadata(&new).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
