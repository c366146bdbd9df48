//! `orange serve --stdio`: commands as requests, one JSON value a line on stdin, each
//! answered on stdout (the protocol is in `adapters::broker`). Each request runs exactly
//! what `orange ARGS…` runs (`entry::run`: the same parsing, JSON contract, error codes
//! and output), in this process: a host's local broker keeps one such server running over
//! the shared ssh connection, so a remote command costs no process and no login shell
//! there. Commands that need a terminal or run until stopped are refused.
//!
//! `orange serve --broker HOST` (hidden) is that local broker: started by orange itself.

use std::ffi::OsString;

use serde_json::Value;

use super::args::ServeArgs;
use super::context::{Ctx, RunLine};
use crate::adapters::broker::{self, Accepted, Answer, Hello, Request};
use crate::adapters::stdio::Streams;
use crate::adapters::store;
use crate::error::{OrangeError, Result};
use crate::orchestration::host;
use crate::ui::output::Out;

pub fn run(ctx: &Ctx, a: ServeArgs) -> Result<Out> {
    if let Some(name) = a.broker {
        return run_broker(ctx, &name);
    }
    if !a.stdio {
        return Err(OrangeError::invalid(
            "`orange serve` needs --stdio (one JSON request a line on standard input)",
        ));
    }
    stdio(ctx.run_line).map_err(|e| OrangeError::io("serving on standard input and output", e))?;
    Ok(Out::new(Value::Null, ""))
}

fn line_of<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The server: hello, then each request accepted, run (by `run_line`: `entry::run`) and
/// answered, until stdin ends.
fn stdio(run_line: RunLine) -> std::io::Result<()> {
    let mut io = Streams::take()?;
    io.write_line(&line_of(&Hello {
        orange_serve: broker::PROTOCOL,
        version: env!("CARGO_PKG_VERSION").to_string(),
    }))?;
    while let Some(line) = io.read_line()? {
        if line.trim().is_empty() {
            continue;
        }
        let req = serde_json::from_str::<Request>(&line);
        let id = req.as_ref().ok().and_then(|r| r.id).unwrap_or(0);
        io.write_line(&line_of(&Accepted { id, accepted: true }))?;
        let req = match req {
            Ok(r) => r,
            Err(e) => {
                io.write_line(&line_of(&Answer {
                    id,
                    status: 2,
                    stdout: String::new(),
                    stderr: format!(
                        "orange: a request that does not parse: {e} [invalid_argument]\n"
                    ),
                }))?;
                continue;
            }
        };
        let mut argv = vec![OsString::from("orange")];
        argv.extend(req.args.iter().map(OsString::from));
        let c = io.captured(&req.input(), || run_line(argv, true))?;
        let (status, panicked) = match c.value {
            Ok(code) => (code, false),
            Err(_) => (101, true),
        };
        io.write_line(&line_of(&Answer {
            id,
            status,
            stdout: String::from_utf8_lossy(&c.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&c.stderr).into_owned(),
        }))?;
        // After a panic nothing here is trusted: the broker starts a fresh server.
        if panicked {
            break;
        }
    }
    Ok(())
}

/// The local broker of host `name` (see `adapters::broker`).
fn run_broker(ctx: &Ctx, name: &str) -> Result<Out> {
    let h = host::get(&ctx.home, name)?;
    let home = ctx.home.clone();
    let b = broker::Broker {
        socket: h.serve_socket(&ctx.home),
        ssh: h.ssh(&ctx.home),
        env: h
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        argv: vec![h.orange_bin.clone(), "serve".into(), "--stdio".into()],
        idle: broker::IDLE,
        watch: ctx.home.root.clone(),
        log: Box::new(move |level, msg, extra| {
            let mut extra = extra;
            extra["host"] = Value::from(h.name.clone());
            store::log(&home, level, msg, extra)
        }),
    };
    broker::run(b).map_err(|e| OrangeError::io(format!("running the broker of host {name}"), e))?;
    Ok(Out::new(Value::Null, ""))
}
