//! One long-lived `orange serve --stdio` per host, shared by every local command: a
//! broker process per host (started on demand, detached, listening on a unix socket beside
//! the host's ssh control socket, in the same private directory) holds the servers — `ssh …
//! orange serve --stdio`, sessions on the host's one shared connection — and passes each
//! command to one of them. A remote command then costs a request on a connection that is
//! already open, not a process and a login shell there.
//!
//! Why a broker: every local `orange` is a short process, and ssh's ControlMaster shares
//! the connection but not a session — each ssh still starts a login shell and a process on
//! the host (what made a remote command cost ~3× a local one behind a `.bashrc` that works).
//! Something here must outlive the command to hold the server's session: a process per
//! host, found by its socket, that no command waits for.
//!
//! The server's protocol (its stdin and stdout, one JSON value a line):
//!   server → `{"orange_serve":1,"version":"0.1.0"}` once, at start (checked here: the same
//!            protocol, the same major and minor version, as `host check` wants);
//!   → `{"id":N,"args":[…],"stdin":"…"}` (or `stdin_hex` for bytes that are not UTF-8);
//!   server → `{"id":N,"accepted":true}` once it has read the request, then
//!   server → `{"id":N,"status":S,"stdout":"…","stderr":"…"}`: what `orange ARGS…` would have
//!            exited with and printed.
//!
//! A server that dies before it accepted a request never ran it: the request goes to a new
//! server (restarted here). One that dies after is a dropped connection (`ssh` 255:
//! unreachable) or a failed command, never run twice. Each server takes one request at a
//! time; up to [`MAX_SERVERS`] per host run at once (a slow command never holds up the
//! monitor's fetch). An orange there without `serve` (or of another version) makes the
//! broker record why in `<socket>.noserve` and exit: commands then run one ssh each, as
//! before, and the first one says so once (the record is tried again after [`RETRY_NO_SERVE`]).
//!
//! The broker's socket protocol (one connection a request): → `Request` line, ← `Reply`
//! line. The broker exits after [`IDLE`] without a request, when its socket is removed or
//! replaced, or when asked (`host remove`).

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use super::served::{compatible, Accepted, Answer, Hello, Request, PROTOCOL};
use super::served::{Died, Server, StartError};
use super::ssh::Ssh;

/// Servers per host at once (sessions on its one ssh connection).
pub const MAX_SERVERS: usize = 4;
/// A broker with nothing to do exits after this (as the shared connection does).
pub const IDLE: Duration = Duration::from_secs(600);
/// How long a new broker may take to listen.
const START_WAIT: Duration = Duration::from_secs(5);
/// A host found without `serve` is asked again after this.
pub const RETRY_NO_SERVE: Duration = Duration::from_secs(600);

// --- the broker's answers -------------------------------------------------------------------

/// What a broker answers a command.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The command ran there.
    Done {
        status: i32,
        stdout: String,
        stderr: String,
    },
    /// ssh could not reach the host (or the connection dropped during the command).
    Unreachable { detail: String },
    /// ssh or the orange there is not installed.
    NotFound { detail: String },
    /// No `serve` there: run it the old way; `first`: this reason was not said before.
    Fallback { reason: String, first: bool },
    /// Anything else (the broker could not start, a protocol error).
    Failed { message: String },
}

// --- the client side --------------------------------------------------------------------------

/// How a local command reaches a host's broker.
pub struct Spec {
    /// The broker's socket.
    pub socket: PathBuf,
    /// The command that starts a broker (this binary's `serve --broker HOST`).
    pub start: Vec<String>,
    /// Its environment (added to this process's).
    pub env: Vec<(String, String)>,
}

/// `<socket>.noserve`: why the host has no usable `serve` (JSON), when it was found.
pub fn no_serve_path(socket: &Path) -> PathBuf {
    PathBuf::from(format!("{}.noserve", socket.display()))
}

fn lock_path(socket: &Path) -> PathBuf {
    PathBuf::from(format!("{}.lock", socket.display()))
}

#[derive(Debug, Serialize, Deserialize)]
struct NoServe {
    reason: String,
    at_ms: u64,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Why the host's orange was found without a usable `serve` (while that is recorded).
pub fn no_serve_reason(socket: &Path) -> Option<String> {
    read_no_serve(socket).map(|n| n.reason)
}

fn read_no_serve(socket: &Path) -> Option<NoServe> {
    let text = std::fs::read(no_serve_path(socket)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Why a broker did not answer.
#[derive(Debug)]
pub enum CallError {
    /// Nothing was sent: no broker could be reached or started.
    NotSent(std::io::Error),
    /// The broker went away after it got the request: it may have run.
    Lost(std::io::Error),
}

/// Run `req` on the host through its broker (started when none listens). `timeout`: give
/// up waiting for the answer after it ([`Reply::Unreachable`]).
pub fn call(spec: &Spec, req: &Request, timeout: Option<Duration>) -> Result<Reply, CallError> {
    if let Some(n) = read_no_serve(&spec.socket) {
        if now_ms().saturating_sub(n.at_ms) < RETRY_NO_SERVE.as_millis() as u64 {
            return Ok(Reply::Fallback {
                reason: n.reason,
                first: false,
            });
        }
    }
    let stream = connect(spec).map_err(CallError::NotSent)?;
    let req = Request {
        version: Some(env!("CARGO_PKG_VERSION").to_string()),
        ..req.clone()
    };
    exchange(&stream, &req, timeout)
}

fn connect(spec: &Spec) -> std::io::Result<UnixStream> {
    if let Some(dir) = spec.socket.parent() {
        super::ssh::ensure_private_dir(dir)?;
    }
    match UnixStream::connect(&spec.socket) {
        Ok(s) => Ok(s),
        Err(_) => {
            start(spec)?;
            connect_within(&spec.socket, START_WAIT)
        }
    }
}

fn exchange(
    stream: &UnixStream,
    req: &Request,
    timeout: Option<Duration>,
) -> Result<Reply, CallError> {
    let mut line = serde_json::to_vec(req).map_err(|e| CallError::NotSent(e.into()))?;
    line.push(b'\n');
    // A broker reads nothing of a request before its newline: a write that failed sent
    // nothing it would run.
    let mut w = stream;
    w.write_all(&line).map_err(CallError::NotSent)?;
    stream
        .set_read_timeout(timeout)
        .map_err(CallError::NotSent)?;
    let mut answer = Vec::new();
    match BufReader::new(stream).read_until(b'\n', &mut answer) {
        Ok(0) => Err(CallError::Lost(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "it closed without an answer",
        ))),
        Ok(_) => serde_json::from_slice(&answer).map_err(|e| CallError::Lost(e.into())),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(Reply::Unreachable {
                detail: format!(
                    "no answer within {}s",
                    timeout.unwrap_or_default().as_secs()
                ),
            })
        }
        Err(e) => Err(CallError::Lost(e)),
    }
}

/// Ask the host's broker, if one runs, to stop (its servers end with it).
pub fn stop(socket: &Path) {
    if let Ok(stream) = UnixStream::connect(socket) {
        let req = Request {
            quit: true,
            ..Request::default()
        };
        if let Ok(mut line) = serde_json::to_vec(&req) {
            line.push(b'\n');
            let _ = (&stream).write_all(&line);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = Vec::new();
            let _ = BufReader::new(&stream).read_until(b'\n', &mut buf);
        }
    }
    let _ = std::fs::remove_file(no_serve_path(socket));
}

fn connect_within(socket: &Path, limit: Duration) -> std::io::Result<UnixStream> {
    let until = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        match UnixStream::connect(socket) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= until => return Err(e),
            Err(_) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
        }
    }
}

/// Start a broker, detached: its own session, no terminal, stdio on /dev/null (a caller's
/// pipes are never held open by it), in `/`. A thread reaps it should this process outlive it.
fn start(spec: &Spec) -> std::io::Result<()> {
    let mut c = Command::new(&spec.start[0]);
    c.args(&spec.start[1..])
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of this process.
    unsafe {
        c.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = c.spawn()?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

// --- the broker -----------------------------------------------------------------------------

/// One line of log: level, message, details.
pub type Log = Box<dyn Fn(&str, &str, serde_json::Value) + Send + Sync>;

/// What a broker needs: its socket, how to start a server, where to log.
pub struct Broker {
    pub socket: PathBuf,
    pub ssh: Ssh,
    pub env: Vec<(String, String)>,
    /// `orange serve --stdio` as the host runs it.
    pub argv: Vec<String>,
    pub idle: Duration,
    /// It exits when this is gone (the data root it serves).
    pub watch: PathBuf,
    /// One line of log (level, message, details).
    pub log: Log,
}

struct Shared {
    broker: Broker,
    /// Servers waiting for a request, and how many exist (busy ones included).
    pool: Mutex<(Vec<Server>, usize)>,
    freed: Condvar,
    active: AtomicUsize,
    last_used: Mutex<Instant>,
    quit: AtomicBool,
    /// Why the host has no usable `serve`, once found.
    no_serve: Mutex<Option<String>>,
    next_id: std::sync::atomic::AtomicU64,
    /// The socket's inode: the socket path is this broker's while it has it.
    ino: u64,
}

/// Run a broker until it is idle, removed or asked to stop. Returns at once when another
/// broker serves this socket.
pub fn run(broker: Broker) -> std::io::Result<()> {
    let socket = broker.socket.clone();
    if let Some(dir) = socket.parent() {
        super::ssh::ensure_private_dir(dir)?;
    }
    // One broker per socket: the lock is held for its whole life (the kernel frees it).
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path(&socket))?;
    if !lock_within(&lock, START_WAIT) || UnixStream::connect(&socket).is_ok() {
        return Ok(());
    }
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    }
    let ino = std::fs::metadata(&socket)?.ino();
    listener.set_nonblocking(true)?;
    let idle = broker.idle;
    let shared = Arc::new(Shared {
        broker,
        pool: Mutex::new((Vec::new(), 0)),
        freed: Condvar::new(),
        active: AtomicUsize::new(0),
        last_used: Mutex::new(Instant::now()),
        quit: AtomicBool::new(false),
        no_serve: Mutex::new(None),
        next_id: std::sync::atomic::AtomicU64::new(1),
        ino,
    });
    (shared.broker.log)(
        "info",
        "broker started",
        serde_json::json!({"socket": socket, "pid": std::process::id()}),
    );
    let ours = || std::fs::metadata(&socket).is_ok_and(|m| m.ino() == ino);
    loop {
        accept_all(&listener, &shared);
        let idle_for = shared
            .last_used
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default();
        let busy = shared.active.load(Ordering::SeqCst) > 0;
        if shared.quit.load(Ordering::SeqCst)
            || !ours()
            || !shared.broker.watch.exists()
            || (!busy && idle_for >= idle)
        {
            break;
        }
        shared.drop_dead();
        wait_readable(listener.as_raw_fd(), Duration::from_secs(1));
    }
    // Nobody new can connect once the socket is gone; those already queued are served.
    shared.unlisten();
    accept_all(&listener, &shared);
    while shared.active.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Ok(mut pool) = shared.pool.lock() {
        pool.0.clear();
    }
    // A data root removed under it gets nothing written into it any more.
    if shared.broker.watch.exists() {
        (shared.broker.log)(
            "info",
            "broker stopped",
            serde_json::json!({"socket": socket}),
        );
    }
    drop(lock);
    Ok(())
}

fn lock_within(f: &std::fs::File, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_readable(fd: i32, limit: Duration) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call.
    unsafe {
        libc::poll(&mut p, 1, limit.as_millis() as libc::c_int);
    }
}

fn accept_all(listener: &UnixListener, shared: &Arc<Shared>) {
    while let Ok((stream, _)) = listener.accept() {
        let _ = stream.set_nonblocking(false);
        shared.active.fetch_add(1, Ordering::SeqCst);
        let shared = Arc::clone(shared);
        std::thread::spawn(move || {
            handle(&shared, stream);
            if let Ok(mut t) = shared.last_used.lock() {
                *t = Instant::now();
            }
            shared.active.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

fn handle(shared: &Shared, stream: UnixStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut line = Vec::new();
    // Only a whole line is a request (a client that failed mid-way sent nothing).
    let _ = BufReader::new(&stream).read_until(b'\n', &mut line);
    if line.last() != Some(&b'\n') {
        return;
    }
    let reply = match serde_json::from_slice::<Request>(&line) {
        Ok(r) if r.quit => {
            shared.quit.store(true, Ordering::SeqCst);
            Reply::Failed {
                message: "stopping".into(),
            }
        }
        // Started by another orange binary (an update): the caller runs the command its
        // own way this once, and its next command starts a broker of its own version.
        Ok(r) if r.version.as_deref() != Some(env!("CARGO_PKG_VERSION")) => {
            shared.quit.store(true, Ordering::SeqCst);
            shared.unlisten();
            Reply::Failed {
                message: format!(
                    "a broker of orange {} asked by orange {}",
                    env!("CARGO_PKG_VERSION"),
                    r.version.as_deref().unwrap_or("?")
                ),
            }
        }
        Ok(r) => shared.run(r),
        Err(e) => Reply::Failed {
            message: format!("a request that does not parse: {e}"),
        },
    };
    if let Ok(mut out) = serde_json::to_vec(&reply) {
        out.push(b'\n');
        let _ = (&stream).write_all(&out);
    }
}

impl Shared {
    fn run(&self, mut req: Request) -> Reply {
        if let Some(reason) = self.no_serve.lock().ok().and_then(|g| g.clone()) {
            let first = self.record_no_serve(&reason);
            return Reply::Fallback { reason, first };
        }
        req.id = Some(self.next_id.fetch_add(1, Ordering::SeqCst));
        // A server that died idle is replaced: each of them may have (a host restarted).
        for _ in 0..=MAX_SERVERS {
            let mut server = match self.checkout() {
                Some(s) => s,
                None => {
                    match Server::start(&self.broker.ssh, &self.broker.env, &self.broker.argv) {
                        Ok(s) => s,
                        Err(e) => {
                            self.release();
                            return self.start_failed(e);
                        }
                    }
                }
            };
            match server.request(&req) {
                Ok(a) => {
                    self.checkin(server);
                    return Reply::Done {
                        status: a.status,
                        stdout: a.stdout,
                        stderr: a.stderr,
                    };
                }
                Err(Died::Before) => {
                    drop(server);
                    self.release();
                    (self.broker.log)(
                        "info",
                        "a server had died; starting a new one",
                        serde_json::json!({}),
                    );
                }
                Err(Died::After(status, words)) => {
                    drop(server);
                    self.release();
                    return match status {
                        Some(255) | None => Reply::Unreachable { detail: words },
                        Some(s) => Reply::Done {
                            status: s,
                            stdout: String::new(),
                            stderr: words,
                        },
                    };
                }
            }
        }
        Reply::Failed {
            message: "the server there kept dying before it took the command".into(),
        }
    }

    fn start_failed(&self, e: StartError) -> Reply {
        match e {
            StartError::Unreachable(detail) => Reply::Unreachable { detail },
            StartError::NotFound(detail) => Reply::NotFound { detail },
            StartError::Failed(message) => Reply::Failed { message },
            StartError::NoServe(reason) => {
                let first = self.record_no_serve(&reason);
                if first {
                    (self.broker.log)(
                        "warn",
                        "the orange on the host has no usable `serve`: one ssh per command",
                        serde_json::json!({"reason": reason}),
                    );
                }
                if let Ok(mut g) = self.no_serve.lock() {
                    *g = Some(reason.clone());
                }
                // Nothing more to do here: later commands read the record (none reaches
                // this broker any more).
                self.quit.store(true, Ordering::SeqCst);
                self.unlisten();
                Reply::Fallback { reason, first }
            }
        }
    }

    /// Remove the socket, if it is still this broker's.
    fn unlisten(&self) {
        let socket = &self.broker.socket;
        if std::fs::metadata(socket).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(socket);
        }
    }

    /// Record why the host has no usable `serve` (`<socket>.noserve`, atomically); true
    /// when that reason was not the one recorded (it is to be said).
    fn record_no_serve(&self, reason: &str) -> bool {
        let first = read_no_serve(&self.broker.socket).is_none_or(|b| b.reason != reason);
        let rec = NoServe {
            reason: reason.to_string(),
            at_ms: now_ms(),
        };
        if let Ok(text) = serde_json::to_vec(&rec) {
            let path = no_serve_path(&self.broker.socket);
            let tmp = PathBuf::from(format!("{}.tmp", path.display()));
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
        first
    }

    /// An idle server, or `None` when a new one may be started (counted already); waits
    /// while [`MAX_SERVERS`] are busy.
    fn checkout(&self) -> Option<Server> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(s) = pool.0.pop() {
                return Some(s);
            }
            if pool.1 < MAX_SERVERS {
                pool.1 += 1;
                return None;
            }
            pool = self.freed.wait(pool).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn checkin(&self, s: Server) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.0.push(s);
        self.freed.notify_one();
    }

    /// Idle servers whose ssh ended are let go (reaped; the next request starts another).
    fn drop_dead(&self) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        let before = pool.0.len();
        pool.0.retain_mut(Server::running);
        let gone = before - pool.0.len();
        pool.1 = pool.1.saturating_sub(gone);
        if gone > 0 {
            self.freed.notify_all();
        }
    }

    /// A server slot freed (its server died or never started).
    fn release(&self) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.1 = pool.1.saturating_sub(1);
        self.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_no_serve_record_sits_beside_the_socket() {
        let s = Path::new("/tmp/o/run/ssh/box.serve");
        assert_eq!(
            no_serve_path(s),
            Path::new("/tmp/o/run/ssh/box.serve.noserve")
        );
        assert_eq!(lock_path(s), Path::new("/tmp/o/run/ssh/box.serve.lock"));
    }
}
