//! The file in which the pty layer leaves what orange needs of the agent it runs: the
//! layer's pid (the pane's) and the agent's, and the newest status report the agent sent,
//! with when it came:
//!
//! ```text
//! orange-pty <length of the rest> <its FNV-1a hash, hex>
//! <layer pid> <agent pid>
//! <unix ms of the report, or of the start>
//! <the report's payload, raw; empty before the first>
//! ```
//!
//! Rewritten in place (one `pwrite` at the start, then the file cut to its length): a
//! rename over the old file costs ~0.4 ms on ext4, which flushes the new file's data on
//! such a rename. A reader that catches a write half done sees a length or hash that does
//! not match, and takes the file as unreadable this once ([`read`] tries again).
//!
//! The payload is the agent's bytes: whoever reads it treats it as data
//! (`execution::harness::osc` parses it, `crate::text` makes its words safe).

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The name of the file in the agent's directory.
pub const FILE: &str = "pty-status";

/// The most of the file a reader reads.
const MAX_FILE: u64 = 16 * 1024;
const MAGIC: &str = "orange-pty";

/// What the file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The layer's pid: the pane's process.
    pub layer_pid: u32,
    /// The agent the layer started (its child).
    pub agent_pid: u32,
    /// When the report came (Unix ms), or when the layer started the agent.
    pub at_ms: u64,
    /// The newest report's payload (empty: none yet).
    pub payload: Vec<u8>,
}

/// The layer's open status file.
pub struct Writer {
    file: File,
}

impl Writer {
    /// Make (or empty) the file at `path`.
    pub fn create(path: &Path) -> std::io::Result<Writer> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        Ok(Writer { file })
    }

    /// Put `status` in the file, in place of what it held.
    pub fn write(&mut self, status: &Status) -> std::io::Result<()> {
        let bytes = encode(status);
        self.file.write_all_at(&bytes, 0)?;
        self.file.set_len(bytes.len() as u64)
    }
}

fn encode(s: &Status) -> Vec<u8> {
    let mut body = format!("{} {}\n{}\n", s.layer_pid, s.agent_pid, s.at_ms).into_bytes();
    body.extend_from_slice(&s.payload);
    let mut out = format!("{MAGIC} {} {:016x}\n", body.len(), fnv1a(&body)).into_bytes();
    out.extend_from_slice(&body);
    out
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Read the file at `path`; `None` when it is missing, not a regular file or not of this
/// shape (a write caught half done is read again, a few times).
pub fn read(path: &Path) -> Option<Status> {
    (0..3).find_map(|_| read_once(path)).flatten()
}

/// One read: `Some(None)` for a file that is not there or not this file's shape at all;
/// `None` for a write caught half done.
fn read_once(path: &Path) -> Option<Option<Status>> {
    use std::io::Read;
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return Some(None);
    }
    let mut bytes = vec![];
    let read = std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE).read_to_end(&mut bytes))
        .is_ok();
    if !read {
        return Some(None);
    }
    let nl = bytes.iter().position(|b| *b == b'\n')?;
    let head = std::str::from_utf8(&bytes[..nl]).ok()?;
    let mut words = head.split(' ');
    if words.next() != Some(MAGIC) {
        return Some(None);
    }
    let len: usize = words.next()?.parse().ok()?;
    let hash = u64::from_str_radix(words.next()?, 16).ok()?;
    let body = bytes.get(nl + 1..nl + 1 + len)?;
    if fnv1a(body) != hash {
        return None;
    }
    Some(decode(body))
}

fn decode(body: &[u8]) -> Option<Status> {
    let mut parts = body.splitn(3, |b| *b == b'\n');
    let pids = std::str::from_utf8(parts.next()?).ok()?;
    let (layer, agent) = pids.split_once(' ')?;
    let at = std::str::from_utf8(parts.next()?).ok()?;
    Some(Status {
        layer_pid: layer.parse().ok()?,
        agent_pid: agent.parse().ok()?,
        at_ms: at.parse().ok()?,
        payload: parts.next().unwrap_or_default().to_vec(),
    })
}

/// Now, in Unix ms.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_is_read_back_whole_and_odd_files_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        assert_eq!(read(&p), None);
        let mut w = Writer::create(&p).unwrap();
        let s = Status {
            layer_pid: 10,
            agent_pid: 11,
            at_ms: 1_700_000_000_123,
            payload: b"state=idle:msg=\n\x1b]0;x\x07".repeat(20),
        };
        w.write(&s).unwrap();
        assert_eq!(read(&p), Some(s.clone()));
        // A shorter one after it: the longer one's tail is gone.
        let empty = Status {
            payload: vec![],
            ..s.clone()
        };
        w.write(&empty).unwrap();
        assert_eq!(read(&p), Some(empty));
        // A write caught half done (a new head, the old tail): not taken.
        let mut torn = encode(&s);
        let new = encode(&Status {
            at_ms: 1_700_000_000_999,
            payload: b"state=idle:msg=\n\x1b]0;y\x07".repeat(20),
            ..s
        });
        assert_eq!(new.len(), torn.len());
        torn[..new.len() / 2].copy_from_slice(&new[..new.len() / 2]);
        std::fs::write(&p, &torn).unwrap();
        assert_eq!(read(&p), None);
        std::fs::write(&p, "garbage").unwrap();
        assert_eq!(read(&p), None);
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        assert_eq!(read(&p), None);
    }
}
