//! The standard streams of a process that serves requests over them (`orange serve
//! --stdio`): the protocol gets its own copies of stdin and stdout, and file descriptors 0,
//! 1 and 2 are pointed, for each request, at the request's input and at fresh capture files,
//! so whatever the command (or a program it runs) reads or writes there is the request's,
//! and nothing ever writes into the protocol. Between requests 0 and 1 are `/dev/null`.
//!
//! Requests run one at a time: the descriptors are the process's.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The protocol's streams, and what 0, 1 and 2 go back to between requests.
pub struct Streams {
    input: BufReader<File>,
    output: File,
    null: File,
    stderr: OwnedFd,
}

/// What one request printed.
pub struct Captured<T> {
    pub value: T,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

fn dup(fd: RawFd) -> std::io::Result<OwnedFd> {
    // SAFETY: dup has no memory preconditions; a valid result is a new descriptor we own.
    let n = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `n` is a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}

fn dup2(from: RawFd, to: RawFd) -> std::io::Result<()> {
    // SAFETY: dup2 only replaces descriptor `to` (0, 1 or 2 here).
    if unsafe { libc::dup2(from, to) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl Streams {
    /// Take stdin and stdout for the protocol; 0 and 1 become `/dev/null`.
    pub fn take() -> std::io::Result<Streams> {
        let _ = std::io::stdout().flush();
        let input = File::from(dup(0)?);
        let output = File::from(dup(1)?);
        let stderr = dup(2)?;
        let null = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")?;
        dup2(null.as_raw_fd(), 0)?;
        dup2(null.as_raw_fd(), 1)?;
        Ok(Streams {
            input: BufReader::new(input),
            output,
            null,
            stderr,
        })
    }

    /// The next line of the protocol, without its newline; `None` at its end.
    pub fn read_line(&mut self) -> std::io::Result<Option<String>> {
        let mut buf = Vec::new();
        if self.input.read_until(b'\n', &mut buf)? == 0 {
            return Ok(None);
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
    }

    /// One line of the protocol (a newline is added).
    pub fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        self.output.write_all(&buf)?;
        self.output.flush()
    }

    /// Run `f` with `input` on descriptor 0 and fresh files on 1 and 2; what it wrote
    /// there is returned with its value. A panic in `f` is returned as `Err` with its
    /// message (the descriptors are restored either way).
    pub fn captured<T>(
        &mut self,
        input: &[u8],
        f: impl FnOnce() -> T,
    ) -> std::io::Result<Captured<std::thread::Result<T>>> {
        let mut stdin = tempfile::tempfile()?;
        stdin.write_all(input)?;
        stdin.seek(SeekFrom::Start(0))?;
        let mut out = tempfile::tempfile()?;
        let mut err = tempfile::tempfile()?;
        dup2(stdin.as_raw_fd(), 0)?;
        dup2(out.as_raw_fd(), 1)?;
        dup2(err.as_raw_fd(), 2)?;
        let value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = std::io::stdout().flush();
        let restored = dup2(self.null.as_raw_fd(), 0)
            .and_then(|_| dup2(self.null.as_raw_fd(), 1))
            .and_then(|_| dup2(self.stderr.as_raw_fd(), 2));
        restored?;
        let mut stdout = Vec::new();
        out.seek(SeekFrom::Start(0))?;
        out.read_to_end(&mut stdout)?;
        let mut stderr = Vec::new();
        err.seek(SeekFrom::Start(0))?;
        err.read_to_end(&mut stderr)?;
        Ok(Captured {
            value,
            stdout,
            stderr,
        })
    }
}
