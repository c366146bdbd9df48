//! The terminal the sidebar draws on outside tmux's control: raw mode through termios
//! (saved and restored, also by a watchdog process if orange is killed), the alternate
//! screen, its size; and writing to an attached client's terminal. No program is run.

use std::io::{IsTerminal, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// What puts a terminal back after drawing: colours reset, cursor shown, no focus reports,
/// main screen.
const RESTORE: &[u8] = b"\x1b[0m\x1b[?25h\x1b[?1004l\x1b[?1049l";

/// The terminal in drawing mode: alternate screen, no cursor, no echo, keys one by one and
/// no signals from keys (`-isig`), so Ctrl+C arrives as a byte and quits cleanly (std alone
/// cannot catch SIGINT). The settings are those of standard input, as `stty -echo -icanon
/// -isig min 1 time 0` would make them, and are restored on drop.
///
/// A process killed by a signal (SIGTERM, SIGKILL) runs no drop: a watchdog does it. It is a
/// fork of this process that keeps only the terminal (standard input and output) and the
/// read end of a pipe whose write end only this process holds; when this process dies the
/// kernel closes that end, the watchdog reads end-of-file, restores the saved settings and
/// the screen, and exits. It ignores the signals a terminal sends its foreground group
/// (INT, QUIT, HUP, TERM), so a key or a closing terminal that ends orange does not end it
/// before it has restored. A normal drop kills it first (its escape codes would otherwise
/// land after the shell's prompt).
pub struct Term {
    saved: Option<libc::termios>,
    watchdog: Option<Watchdog>,
}

impl Term {
    pub fn enter() -> Term {
        let saved = if std::io::stdin().is_terminal() {
            get_termios(libc::STDIN_FILENO)
        } else {
            None
        };
        if let Some(t) = &saved {
            set_termios(libc::STDIN_FILENO, &raw_mode(t));
        }
        let watchdog = Watchdog::start(saved);
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(b"\x1b[?1049h\x1b[?25l\x1b[2J\x1b[H");
        let _ = so.flush();
        Term { saved, watchdog }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        if let Some(w) = self.watchdog.take() {
            w.stop();
        }
        if let Some(t) = &self.saved {
            set_termios(libc::STDIN_FILENO, t);
        }
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(RESTORE);
        let _ = so.flush();
    }
}

/// `t` as `stty -echo -icanon -isig min 1 time 0` changes it (nothing else).
fn raw_mode(t: &libc::termios) -> libc::termios {
    let mut raw = *t;
    raw.c_lflag &= !(libc::ECHO | libc::ICANON | libc::ISIG);
    raw.c_cc[libc::VMIN] = 1;
    raw.c_cc[libc::VTIME] = 0;
    raw
}

fn get_termios(fd: libc::c_int) -> Option<libc::termios> {
    // SAFETY: an all-zero termios is a valid value of the plain C struct, and tcgetattr
    // writes one into the pointer given, which outlives the call.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    (unsafe { libc::tcgetattr(fd, &mut t) } == 0).then_some(t)
}

/// Best effort, like `stty` with its errors ignored: a terminal gone is nothing to restore.
fn set_termios(fd: libc::c_int, t: &libc::termios) {
    // SAFETY: tcsetattr reads one termios from a reference valid for the call.
    unsafe {
        libc::tcsetattr(fd, libc::TCSANOW, t);
    }
}

/// The watchdog process of a [`Term`] (see there).
struct Watchdog {
    pid: libc::pid_t,
    /// The write end of its pipe: closed (by drop or by the kernel at death), the watchdog
    /// restores the terminal.
    _pipe: OwnedFd,
}

impl Watchdog {
    /// Fork the watchdog; `None` when the system refuses (no pipe, no process).
    fn start(saved: Option<libc::termios>) -> Option<Watchdog> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the array given. O_CLOEXEC: no program
        // orange runs later holds the write end (it would delay the end-of-file).
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: both descriptors were just made, and are owned here only.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // Asked before the fork: the child may only make async-signal-safe calls.
        // SAFETY: sysconf has no memory effects.
        let open_max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(256, 65536) as i32;
        // SAFETY: the child runs only `watch`, which makes async-signal-safe calls (no
        // allocation, no lock) and never returns; so a fork of a process with threads is safe.
        match unsafe { libc::fork() } {
            -1 => None,
            0 => unsafe { watch(read.as_raw_fd(), saved.as_ref(), open_max) },
            pid => Some(Watchdog { pid, _pipe: write }),
        }
    }

    /// End it without letting it restore (the caller does), and collect its exit.
    fn stop(self) {
        // SAFETY: kill(2) and waitpid(2) on our own child; no memory is shared.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// The watchdog's whole life, in the forked child: wait for end-of-file on `read`, then
/// restore `saved` on standard input and the screen on standard output, and exit.
///
/// # Safety
/// Call only in the child of a fork, with `read` the read end of the watchdog's pipe.
unsafe fn watch(read: libc::c_int, saved: Option<&libc::termios>, open_max: i32) -> ! {
    for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
        libc::signal(sig, libc::SIG_IGN);
    }
    #[cfg(target_os = "linux")]
    libc::prctl(libc::PR_SET_NAME, c"orange-watchdog".as_ptr());
    // Keep only the terminal (0, 1, 2) and the pipe, at 3: a lock, a socket or another
    // pipe of orange's must not stay open for as long as orange runs.
    if read != 3 {
        libc::dup2(read, 3);
    }
    close_from(4, open_max);
    let mut buf = [0u8; 64];
    loop {
        let n = libc::read(3, buf.as_mut_ptr().cast(), buf.len());
        let interrupted =
            n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR);
        if n == 0 || (n < 0 && !interrupted) {
            break;
        }
    }
    if let Some(t) = saved {
        libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t);
    }
    libc::write(libc::STDOUT_FILENO, RESTORE.as_ptr().cast(), RESTORE.len());
    libc::_exit(0)
}

/// Close every descriptor from `first` on: `close_range(2)` where the kernel has it
/// (Linux 5.9), else one by one up to `open_max`. Async-signal-safe.
unsafe fn close_from(first: i32, open_max: i32) {
    #[cfg(target_os = "linux")]
    if libc::syscall(
        libc::SYS_close_range,
        first as libc::c_uint,
        libc::c_uint::MAX,
        0,
    ) == 0
    {
        return;
    }
    for fd in first..open_max {
        libc::close(fd);
    }
}

/// The size (columns, rows) of the terminal on standard output, asked of the kernel
/// (`TIOCGWINSZ`): no process, so a sidebar can follow a resize every tick.
pub fn window_size() -> Option<(usize, usize)> {
    size_of(libc::STDOUT_FILENO)
}

/// The size (columns, rows) of the controlling terminal (`/dev/tty`), whatever standard
/// output is.
pub fn tty_size() -> Option<(usize, usize)> {
    let tty = std::fs::File::open("/dev/tty").ok()?;
    size_of(tty.as_raw_fd())
}

fn size_of(fd: libc::c_int) -> Option<(usize, usize)> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the pointer given, which outlives the
    // call; a descriptor that is not a terminal makes it fail, and nothing is written.
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0 && ws.ws_row > 0).then_some((ws.ws_col as usize, ws.ws_row as usize))
}

/// Open a terminal device for writing (an attached tmux client's, `#{client_tty}`: what
/// is written there reaches the person's terminal emulator directly). Only a character device under `/dev/` is opened;
/// without becoming our controlling terminal and without blocking (a terminal stopped by
/// Ctrl+S must not stall the caller: what does not fit is dropped).
///
/// A terminal's name is reused: once its last holder closes `/dev/pts/7`, the next
/// terminal opened anywhere on the machine may be `/dev/pts/7`. A caller that learned the
/// name earlier (from tmux) must check, AFTER opening, that its owner still holds it
/// (see `Tmux::write_to_clients`, `Tmux::ring_bell`), or it writes into a stranger's.
pub fn open_tty(path: &str) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let p = std::path::Path::new(path);
    let is_tty_device = p.starts_with("/dev/")
        && std::fs::metadata(p).is_ok_and(|m| m.file_type().is_char_device());
    if !is_tty_device {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{path} is not a terminal device"),
        ));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(p)
}
