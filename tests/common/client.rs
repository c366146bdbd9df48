//! A real client attached to a session of a test server: util-linux `script` gives it a
//! terminal and records everything tmux and orange write there (what a person's terminal
//! receives: bells, OSC sequences, the status line's messages).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::TaskEnv;

/// A client attached to a session of the test server, on a terminal `script` records.
pub struct Client {
    child: Child,
    /// Its input, held open: `script` passes an end of input on to the terminal (a
    /// Ctrl+D typed into the session). What is written there is typed on the terminal.
    input: std::process::ChildStdin,
    log: PathBuf,
    pub tty: String,
}

impl Client {
    pub fn attach(env: &TaskEnv, session: &str, log: &Path) -> Client {
        let before: Vec<String> = clients(env);
        let cmd = format!("tmux -L {} attach -t ={session}", env.tmux.socket);
        let mut child = Command::new("script")
            .args(["-qfc", &cmd])
            .arg(log)
            .env_remove("TMUX")
            .env("TERM", "xterm-256color")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("script runs");
        let input = child.stdin.take().unwrap();
        let tty = super::poll(Duration::from_secs(20), || {
            clients(env).into_iter().find(|c| !before.contains(c))
        })
        .unwrap_or_else(|| {
            panic!(
                "the client did not attach: {:?}",
                String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default())
            )
        });
        Client {
            child,
            input,
            log: log.to_path_buf(),
            tty,
        }
    }

    /// Type `bytes` on the client's terminal, as a person's keyboard would (`\x1c`:
    /// Ctrl+\\, `\t`: Tab, `\r`: Enter, `\x1b`: Escape, which tmux takes for the key after
    /// its `escape-time`).
    pub fn type_bytes(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.input.write_all(bytes).unwrap();
        self.input.flush().unwrap();
    }

    pub fn output(&self) -> Vec<u8> {
        std::fs::read(&self.log).unwrap_or_default()
    }

    /// BELs that ring: those outside escape sequences (an OSC ends with one too).
    pub fn bells(&self) -> usize {
        split_output(&self.output()).0
    }

    /// The OSC sequences written to the terminal (their text).
    pub fn oscs(&self) -> Vec<String> {
        split_output(&self.output()).1
    }

    /// What it shows, outside the OSC sequences (the status line's message is there).
    pub fn text(&self) -> String {
        split_output(&self.output()).2
    }

    pub fn switch_to(&self, env: &TaskEnv, session: &str) {
        env.tmux.ok(&[
            "switch-client",
            "-c",
            &self.tty,
            "-t",
            &format!("={session}"),
        ]);
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn clients(env: &TaskEnv) -> Vec<String> {
    let out = env.tmux.tmux(&["list-clients", "-F", "#{client_tty}"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// (BELs outside escape sequences, the OSC sequences' text, the rest).
fn split_output(out: &[u8]) -> (usize, Vec<String>, String) {
    let mut bells = 0;
    let mut oscs = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < out.len() {
        match out[i] {
            0x07 => bells += 1,
            0x1b if out.get(i + 1) == Some(&b']') => {
                let start = i + 2;
                let mut j = start;
                while j < out.len()
                    && out[j] != 0x07
                    && !(out[j] == 0x1b && out.get(j + 1) == Some(&b'\\'))
                {
                    j += 1;
                }
                oscs.push(String::from_utf8_lossy(&out[start..j.min(out.len())]).into_owned());
                i = if out.get(j) == Some(&0x1b) {
                    j + 2
                } else {
                    j + 1
                };
                continue;
            }
            b => rest.push(b),
        }
        i += 1;
    }
    (bells, oscs, String::from_utf8_lossy(&rest).into_owned())
}
