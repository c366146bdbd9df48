//! The terminal the sidebar draws on outside tmux's control: raw mode with `stty` (saved
//! and restored, also by a watchdog if orange is killed), the alternate screen, its size.

use std::io::{IsTerminal, Write};
use std::process::{Child, Command, Stdio};

/// The terminal in drawing mode: alternate screen, no cursor, no echo, keys one by one and
/// `-isig`, so Ctrl+C arrives as a byte and quits cleanly (std alone cannot catch SIGINT).
/// A watchdog (`sh`, waiting for EOF on a pipe only this process holds) restores the
/// terminal when this process dies by a signal anyway (SIGTERM, SIGKILL).
pub struct Term {
    saved_stty: Option<String>,
    watchdog: Option<Child>,
    _watchdog_pipe: Option<std::process::ChildStdin>,
}

const RESTORE: &str = "\x1b[0m\x1b[?25h\x1b[?1049l";

impl Term {
    pub fn enter() -> Term {
        let tty_in = std::io::stdin().is_terminal();
        let saved_stty = if tty_in {
            // `output()` would give stty an empty stdin: it must see the terminal.
            Command::new("stty")
                .arg("-g")
                .stdin(Stdio::inherit())
                .stderr(Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .filter(|s| !s.is_empty())
        } else {
            None
        };
        if saved_stty.is_some() {
            let _ = Command::new("stty")
                .args(["-echo", "-icanon", "-isig", "min", "1", "time", "0"])
                .stderr(Stdio::null())
                .status();
        }
        let script = format!(
            "trap '' INT TERM HUP QUIT; cat >/dev/null; \
             if [ -n \"$1\" ]; then stty \"$1\" </dev/tty 2>/dev/null; fi; printf '{}'",
            RESTORE.replace('\x1b', "\\033")
        );
        let mut watchdog = Command::new("sh")
            .args(["-c", &script, "orange-sidebar-watchdog"])
            .arg(saved_stty.clone().unwrap_or_default())
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        let pipe = watchdog.as_mut().and_then(|c| c.stdin.take());
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(b"\x1b[?1049h\x1b[?25l\x1b[2J\x1b[H");
        let _ = so.flush();
        Term {
            saved_stty,
            watchdog,
            _watchdog_pipe: pipe,
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        // We restore ourselves; the watchdog must not do it again later (its escape codes
        // would land after the shell's prompt).
        if let Some(mut c) = self.watchdog.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(s) = &self.saved_stty {
            let _ = Command::new("stty").arg(s).stderr(Stdio::null()).status();
        }
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(RESTORE.as_bytes());
        let _ = so.flush();
    }
}

/// `stty size` of the controlling terminal: (columns, rows).
/// The size (columns, rows) of the terminal on standard output, asked of the kernel
/// (`TIOCGWINSZ`): no process, so a sidebar can follow a resize every tick.
pub fn window_size() -> Option<(usize, usize)> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the pointer given, which outlives the
    // call; a descriptor that is not a terminal makes it fail, and nothing is written.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0 && ws.ws_row > 0).then_some((ws.ws_col as usize, ws.ws_row as usize))
}

pub fn tty_size() -> Option<(usize, usize)> {
    let tty = std::fs::File::open("/dev/tty").ok()?;
    let out = Command::new("stty")
        .arg("size")
        .stdin(tty)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().map(|n| n.parse::<usize>().ok());
    let (rows, cols) = (it.next()??, it.next()??);
    (rows > 0 && cols > 0).then_some((cols, rows))
}

/// Write `bytes` to a terminal device (an attached tmux client's, `#{client_tty}`): what
/// is written there reaches the person's terminal emulator directly. Only a character
/// device under `/dev/` is written; opened without becoming our controlling terminal and
/// without blocking (a terminal stopped by Ctrl+S must not stall the caller: what does not
/// fit is dropped).
pub fn write_tty(path: &str, bytes: &[u8]) -> std::io::Result<()> {
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
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(p)?;
    f.write_all(bytes)
}
