//! The thin pty layer orange can start around an agent (`[harness.NAME] status_reports =
//! true`): the `orange-pty` binary (src/bin/orange-pty.rs) runs [`main`]. It opens a
//! pseudo-terminal, starts the agent on it as a session leader with the outer terminal's
//! size (and follows SIGWINCH), puts its own terminal (the tmux pane) in raw mode and
//! relays both ways, byte for byte.
//!
//! Why: a program that reports its status as OSC 7501 (Claude Code) first asks the
//! terminal whether it reads them (`ESC ] 7501 ; ? BEL`, in one write with a DA1 as its
//! end marker). tmux drops the query and answers the DA1 at once, so the program settles
//! "no"; this layer sees the query before tmux does and answers it on the agent's input
//! at once ([`osc::PROBE_REPLY`]), before it forwards that write. The reports that follow
//! are found in the output as it streams by ([`osc::Scanner`], a report split across
//! reads included) and the newest of the program's own is written whole to the status
//! file ([`status`]), with the layer's and the agent's pids: the pane's process is the
//! layer, so lookups by the agent's pid (claude's `sessions/<pid>.json`) read it there.
//!
//! HUP, TERM, INT and QUIT sent to the layer go to the agent. The layer ends when the
//! agent does, with its exit status; an agent killed by a signal makes the layer die of
//! the same signal (tmux's `pane_dead_signal` stays true; 128+signal if it could not).
//!
//! Only libc and std: the layer stays small (one per agent; measured in
//! docs/performance.md).

pub mod osc;
pub mod status;

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use libc::c_int;

/// The layer's binary, beside orange's.
pub const BIN: &str = "orange-pty";

/// The signals the layer passes on to the agent.
const FORWARDED: [c_int; 4] = [libc::SIGHUP, libc::SIGTERM, libc::SIGINT, libc::SIGQUIT];
/// How much typed input may wait for an agent that does not read it before the layer
/// stops reading more.
const INPUT_HELD: usize = 64 * 1024;
const CHUNK: usize = 32 * 1024;

/// The argv that runs `argv` under the layer at `layer`, its status file at `status`.
pub fn wrap_argv(layer: &Path, status: &Path, argv: Vec<String>) -> Vec<String> {
    let mut out = vec![
        layer.display().to_string(),
        status.display().to_string(),
        "--".into(),
    ];
    out.extend(argv);
    out
}

/// The layer's binary beside the running orange; `None` when it is not there.
pub fn layer_path() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.join(BIN);
    p.is_file().then_some(p)
}

/// The write end of the self-pipe the signal handler writes each signal's number to.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    let b = sig as u8;
    // SAFETY: write(2) is async-signal-safe; the pipe is non-blocking (a full pipe drops
    // the byte: a signal of that kind is already waiting) and errno is restored.
    unsafe {
        let saved = *libc::__errno_location();
        libc::write(fd, (&b as *const u8).cast(), 1);
        *libc::__errno_location() = saved;
    }
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn fail(what: &str) -> i32 {
    eprintln!("orange-pty: {what}: {}", std::io::Error::last_os_error());
    125
}

/// The layer: `orange-pty STATUS_FILE -- PROGRAM [ARG…]`. Returns only with an exit code
/// of its own (bad arguments, no pty: 125, before the agent runs); otherwise it exits as
/// the agent did.
pub fn main(args: Vec<OsString>) -> i32 {
    let (status_path, argv) = match args.split_first() {
        Some((s, rest)) if rest.first().is_some_and(|a| a == "--") && rest.len() > 1 => {
            (PathBuf::from(s), &rest[1..])
        }
        _ => {
            eprintln!("usage: orange-pty STATUS_FILE -- PROGRAM [ARG...]");
            return 125;
        }
    };
    let Ok(cargs) = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
    else {
        eprintln!("orange-pty: an argument holds a NUL byte");
        return 125;
    };
    // SAFETY: plain libc calls on fds this function owns; see each.
    unsafe {
        let mut pipe = [0; 2];
        if libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
            return fail("pipe");
        }
        SIGNAL_PIPE.store(pipe[1], Ordering::Relaxed);
        for sig in FORWARDED.iter().chain(&[libc::SIGCHLD, libc::SIGWINCH]) {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(*sig, &sa, std::ptr::null_mut());
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if master < 0 || libc::grantpt(master) != 0 || libc::unlockpt(master) != 0 {
            return fail("opening a pseudo-terminal");
        }
        let mut name = [0 as libc::c_char; 128];
        if libc::ptsname_r(master, name.as_mut_ptr(), name.len()) != 0 {
            return fail("naming the pseudo-terminal");
        }
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        if slave < 0 {
            return fail("opening the pseudo-terminal");
        }
        // The agent's terminal starts as the pane's: its modes and its size.
        let outer = libc::isatty(0) == 1;
        let mut saved: libc::termios = std::mem::zeroed();
        let have_modes = outer && libc::tcgetattr(0, &mut saved) == 0;
        if have_modes {
            libc::tcsetattr(slave, libc::TCSANOW, &saved);
        }
        copy_size(slave);
        let child = libc::fork();
        if child < 0 {
            return fail("fork");
        }
        if child == 0 {
            exec_agent(slave, &cargs);
        }
        libc::close(slave);
        let mut relay = Relay {
            master,
            child,
            // Best effort: without it the agent runs on (orange then reads its screen).
            status: status::Writer::create(&status_path).ok(),
            signals: pipe[0],
            last: None,
            to_agent: Vec::new(),
            scanner: osc::Scanner::default(),
            terminal: true,
            stdin_open: true,
            master_open: true,
            exit: None,
        };
        relay.write_status(Vec::new());
        libc::fcntl(
            master,
            libc::F_SETFL,
            libc::fcntl(master, libc::F_GETFL) | libc::O_NONBLOCK,
        );
        if have_modes {
            let mut raw = saved;
            libc::cfmakeraw(&mut raw);
            libc::tcsetattr(0, libc::TCSANOW, &raw);
        }
        let how = relay.run();
        if have_modes {
            libc::tcsetattr(0, libc::TCSANOW, &saved);
        }
        end_as(how)
    }
}

/// In the child: the pty as its controlling terminal and standard streams, then the
/// agent. Never returns (127 when the program is not found, 126 when it cannot run).
unsafe fn exec_agent(slave: c_int, args: &[CString]) -> ! {
    libc::setsid();
    libc::ioctl(slave, libc::TIOCSCTTY, 0);
    for fd in 0..3 {
        libc::dup2(slave, fd);
    }
    if slave > 2 {
        libc::close(slave);
    }
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    libc::execvp(ptrs[0], ptrs.as_ptr());
    let code = if errno() == libc::ENOENT { 127 } else { 126 };
    let msg = format!(
        "orange-pty: cannot run {}: {}\n",
        args[0].to_string_lossy(),
        std::io::Error::last_os_error()
    );
    libc::write(2, msg.as_ptr().cast(), msg.len());
    libc::_exit(code)
}

/// The pane's size onto the agent's terminal `fd` (the kernel tells its foreground
/// process group, SIGWINCH).
fn copy_size(fd: c_int) {
    // SAFETY: TIOCGWINSZ/TIOCSWINSZ read and write one winsize, which `ws` is.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(0, libc::TIOCGWINSZ, &mut ws) == 0
            || libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) == 0
        {
            libc::ioctl(fd, libc::TIOCSWINSZ, &ws);
        }
    }
}

/// End as the agent ended: its exit status, or its signal (raised on the layer itself,
/// without a core dump; 128+signal if that did not end it).
fn end_as(status: c_int) -> ! {
    // SAFETY: plain libc calls on this process.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(sig);
            libc::_exit(128 + sig)
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

struct Relay {
    master: c_int,
    child: libc::pid_t,
    status: Option<status::Writer>,
    signals: c_int,
    /// The newest report written (the program repeats itself; the file is written only
    /// when it changes).
    last: Option<Vec<u8>>,
    /// Input for the agent not yet written (it reads slower than it is typed).
    to_agent: Vec<u8>,
    scanner: osc::Scanner,
    /// The pane takes output (false once it is gone: output is then dropped).
    terminal: bool,
    stdin_open: bool,
    master_open: bool,
    /// The agent's wait status once it ended.
    exit: Option<c_int>,
}

impl Relay {
    /// Relay until the agent ends; its wait status.
    fn run(&mut self) -> c_int {
        let mut buf = vec![0u8; CHUNK];
        loop {
            if let Some(status) = self.exit {
                // What it wrote last, then its end.
                while self.master_open && self.read_agent(&mut buf) {}
                return status;
            }
            if !self.master_open {
                // Its terminal closed (nothing holds it open): wait for its end.
                return self.wait(0).unwrap_or(0);
            }
            let mut fds = [
                pollfd(self.signals, libc::POLLIN),
                pollfd(
                    if self.stdin_open && self.to_agent.len() < INPUT_HELD {
                        0
                    } else {
                        -1
                    },
                    libc::POLLIN,
                ),
                pollfd(
                    self.master,
                    libc::POLLIN
                        | if self.to_agent.is_empty() {
                            0
                        } else {
                            libc::POLLOUT
                        },
                ),
            ];
            // SAFETY: `fds` is an array of three pollfd.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) };
            if n < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                return self.wait(0).unwrap_or(0);
            }
            if fds[0].revents != 0 {
                self.on_signals();
            }
            if fds[1].revents != 0 {
                self.read_terminal(&mut buf);
            }
            if fds[2].revents & libc::POLLOUT != 0 {
                self.flush_input();
            }
            if fds[2].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                self.read_agent(&mut buf);
            }
        }
    }

    /// `waitpid` the agent with `flags`; its status once it ended.
    fn wait(&mut self, flags: c_int) -> Option<c_int> {
        let mut status = 0;
        loop {
            // SAFETY: waitpid on our own child, its status into `status`.
            let r = unsafe { libc::waitpid(self.child, &mut status, flags) };
            if r == self.child {
                self.exit = Some(status);
                return Some(status);
            }
            if r < 0 && errno() == libc::EINTR {
                continue;
            }
            return None;
        }
    }

    fn on_signals(&mut self) {
        let mut sigs = [0u8; 64];
        // SAFETY: read into `sigs` from our non-blocking pipe.
        let n = unsafe { libc::read(self.signals, sigs.as_mut_ptr().cast(), sigs.len()) };
        for &s in &sigs[..n.max(0) as usize] {
            let sig = c_int::from(s);
            match sig {
                libc::SIGCHLD => {
                    self.wait(libc::WNOHANG);
                }
                libc::SIGWINCH => copy_size(self.master),
                // SAFETY: kill(2) on our child.
                _ => unsafe {
                    libc::kill(self.child, sig);
                },
            }
        }
    }

    /// Typed input (tmux's keys, replies to the agent's queries) for the agent.
    fn read_terminal(&mut self, buf: &mut [u8]) {
        // SAFETY: read into `buf`, at most its length.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            self.to_agent.extend_from_slice(&buf[..n as usize]);
            self.flush_input();
        } else if n == 0 || !matches!(errno(), libc::EINTR | libc::EAGAIN) {
            self.stdin_open = false;
        }
    }

    /// Write what waits for the agent, as much as its terminal takes now.
    fn flush_input(&mut self) {
        while !self.to_agent.is_empty() {
            // SAFETY: write from `to_agent`, at most its length.
            let n = unsafe {
                libc::write(
                    self.master,
                    self.to_agent.as_ptr().cast(),
                    self.to_agent.len(),
                )
            };
            if n > 0 {
                self.to_agent.drain(..n as usize);
            } else if n < 0 && errno() == libc::EINTR {
                continue;
            } else {
                if n < 0 && errno() != libc::EAGAIN {
                    // Its terminal is gone: so is what it would have read.
                    self.to_agent.clear();
                }
                return;
            }
        }
    }

    /// One read of the agent's output: answer a probe in it first, pass it to the pane,
    /// then keep its newest report. False when there was nothing to read.
    fn read_agent(&mut self, buf: &mut [u8]) -> bool {
        // SAFETY: read into `buf`, at most its length.
        let n = unsafe { libc::read(self.master, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            if n == 0 || !matches!(errno(), libc::EINTR | libc::EAGAIN) {
                // EIO: no process holds its terminal any more.
                self.master_open = false;
            }
            return false;
        }
        let chunk = &buf[..n as usize];
        let mut probe = false;
        let mut newest = None;
        self.scanner.feed(chunk, &mut |f| match f {
            osc::Found::Probe => probe = true,
            osc::Found::Report(p) if osc::is_root(&p) => newest = Some(p),
            osc::Found::Report(_) => {}
        });
        if probe {
            self.to_agent.extend_from_slice(osc::PROBE_REPLY);
            self.flush_input();
        }
        if self.terminal && !write_all(1, chunk) {
            self.terminal = false;
        }
        if let Some(p) = newest {
            if self.last.as_ref() != Some(&p) {
                self.write_status(p);
            }
        }
        true
    }

    fn write_status(&mut self, payload: Vec<u8>) {
        let s = status::Status {
            layer_pid: std::process::id(),
            agent_pid: self.child as u32,
            at_ms: status::now_ms(),
            payload,
        };
        if let Some(w) = &mut self.status {
            // Best effort, as above.
            let _ = w.write(&s);
        }
        self.last = Some(s.payload);
    }
}

fn pollfd(fd: c_int, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// Write all of `bytes` to `fd` (blocking); false when the fd takes no more.
fn write_all(fd: c_int, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: write from `bytes`, at most its length.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n > 0 {
            bytes = &bytes[n as usize..];
        } else if n < 0 && errno() == libc::EINTR {
            continue;
        } else {
            return false;
        }
    }
    true
}
