//! `orange hook EVENT [ARGS…]`: the entry point tmux hooks (installed by orange.tmux) and
//! agent hooks call, so a dead agent, a closed session or a focus change shows at once.
//!
//! | event | arguments | does |
//! |---|---|---|
//! | `pane-died` | `--pane %N --session NAME` | observe |
//! | `pane-exited` | `--pane %N --session NAME` | observe |
//! | `session-closed` | `--session NAME` | observe |
//! | `client-session-changed` | `--session NAME --client NAME` | observe |
//! | `refresh` | none | observe |
//! | `deliver` | `FILE` (in `run/outbox/`) | send a notification on `[notify]`'s channels (the monitor starts it, detached) |
//! | `agent` | `EVENT` (+ the agent's JSON on stdin) | the agent monitor's hook, then `status::changed` (poke; publish here if no monitor runs) |
//!
//! "Observe" pokes (`run/poke`): the monitor of this tmux server wakes, looks at every open
//! task in its one tmux call, records what died (only the monitor writes `agent.exited` and
//! `session.closed`), applies the policies, writes the snapshot the widgets and sidebars
//! read, and publishes. When no monitor runs, the hook runs that same pass itself. The
//! arguments are informational (logged on errors): a missed or out-of-order hook is caught
//! up by the next one.
//!
//! A tmux hook must never show the user anything: whatever happens (an unknown event, odd
//! arguments, an error, a panic) this prints nothing, exits 0 and writes one JSON line to
//! `$ORANGE_HOME/orange.log`. It takes no lock that others hold long (only
//! `run/monitor-pass.lock`, for at most 300 ms, between passes) and never waits for an agent. With `--json` (anywhere
//! on the line) it prints what it did as one JSON value.

use std::io::{IsTerminal, Read};
use std::time::Instant;

use serde_json::{json, Value};

use super::args::HookArgs;
use super::context::Ctx;
use crate::adapters::store;
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::monitor::Monitor;
use crate::orchestration::observe::snapshot;
use crate::ui::output::Out;
use crate::ui::status;

/// The arguments of an event: `--name value`, `--name=value`, or positional (`%N` is a
/// pane, `$N` a session id, anything else fills session then client).
#[derive(Debug, Default, PartialEq)]
struct HookFlags {
    pane: Option<String>,
    session: Option<String>,
    client: Option<String>,
    json: bool,
    positional: Vec<String>,
    unknown: Vec<String>,
}

fn parse(args: &[String]) -> HookFlags {
    let mut f = HookFlags::default();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let (name, inline) = match a.strip_prefix("--") {
            Some(rest) => match rest.split_once('=') {
                Some((n, v)) => (Some(n), Some(v.to_string())),
                None => (Some(rest), None),
            },
            None => (None, None),
        };
        match name {
            Some("json") => f.json = true,
            Some(n @ ("pane" | "session" | "client")) => {
                let v = inline.or_else(|| it.next().cloned());
                match n {
                    "pane" => f.pane = v,
                    "session" => f.session = v,
                    _ => f.client = v,
                }
            }
            Some(_) => f.unknown.push(a.clone()),
            None => f.positional.push(a.clone()),
        }
    }
    for p in std::mem::take(&mut f.positional) {
        if p.starts_with('%') && f.pane.is_none() {
            f.pane = Some(p);
        } else if f.session.is_none() {
            f.session = Some(p);
        } else if f.client.is_none() {
            f.client = Some(p);
        } else {
            f.positional.push(p);
        }
    }
    f
}

pub fn run(ctx: &Ctx, args: HookArgs) -> Result<Out> {
    let started = Instant::now();
    let (event, rest) = match args.event.split_first() {
        Some((e, rest)) => (e.clone(), rest.to_vec()),
        None => (String::new(), Vec::new()),
    };
    let flags = parse(&rest);
    // A panic must not reach tmux either: log it instead of printing it.
    let home = ctx.home.clone();
    std::panic::set_hook(Box::new(move |info| {
        status::log(
            &home,
            "error",
            "orange hook panicked",
            json!({"component": "hook", "panic": info.to_string()}),
        );
    }));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        handle(ctx, &event, &rest, &flags)
    }));
    let mut report = match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            status::log(
                &ctx.home,
                "error",
                "orange hook failed",
                json!({"component": "hook", "event": event, "args": rest, "error": e.to_string(), "code": e.code()}),
            );
            json!({"event": event, "error": {"code": e.code(), "message": e.to_string()}})
        }
        Err(_) => json!({"event": event, "error": {"code": "panic", "message": "see orange.log"}}),
    };
    report["ms"] = json!((started.elapsed().as_secs_f64() * 1e5).round() / 100.0);
    let text = if flags.json {
        format!("{}\n", crate::ui::output::json_text(&report))
    } else {
        String::new()
    };
    Ok(Out::new(report, text))
}

fn handle(ctx: &Ctx, event: &str, rest: &[String], flags: &HookFlags) -> Result<Value> {
    let tmux = Tmux::from_env();
    let via = format!("hook:{event}");
    match event {
        "pane-died" | "pane-exited" | "session-closed" | "refresh" | "client-session-changed" => {
            let mut report = observe_now(ctx, &tmux, &via)?;
            report["event"] = event.into();
            report["pane"] = json!(flags.pane);
            report["session"] = json!(flags.session);
            report["client"] = json!(flags.client);
            Ok(report)
        }
        // Agent hooks (Claude Code's settings call `orange hook agent EVENT`): the monitor's
        // routing and state, then the widgets follow at once.
        "agent" => {
            let agent_event = rest.first().cloned().unwrap_or_default();
            if crate::adapters::fault::dropped("hook.agent") {
                return Ok(json!({"event": event, "dropped": agent_event}));
            }
            let mut payload = String::new();
            let stdin = std::io::stdin();
            if !stdin.is_terminal() {
                let _ = stdin.lock().take(1 << 20).read_to_string(&mut payload);
            }
            let result = crate::orchestration::monitor::agent_hook(
                &ctx.home,
                &agent_event,
                &payload,
                &ctx.cwd,
            )?;
            // The agent told its own state: nothing died, no policy is due from here.
            // The widgets follow (the monitor's, or here the same observation); what
            // changed was poked with its task.
            status::follow(&ctx.home, &tmux);
            Ok(json!({"event": event, "agent": result, "published": true}))
        }
        // The detached sender of a notification (`monitor::phone`): its channels, in
        // the background of the pass that told it.
        "deliver" => {
            let file = rest
                .first()
                .map(std::path::PathBuf::from)
                .ok_or_else(|| OrangeError::invalid("hook deliver needs the outbox file"))?;
            crate::orchestration::monitor::phone::deliver_file(&ctx.home, &file)
        }
        _ => {
            status::log(
                &ctx.home,
                "warn",
                "unknown hook event (ignored)",
                json!({"component": "hook", "event": event, "unknown_flags": flags.unknown, "positional": flags.positional}),
            );
            store::poke_other(&ctx.home);
            Ok(json!({"event": event, "ignored": "unknown event"}))
        }
    }
}

/// Something happened in tmux or to an agent: poke. The monitor of this server, if one
/// runs, wakes at once, observes, records and publishes. Without one, the hook runs one
/// monitor pass itself (the same code: only the monitor records deaths), waiting at most
/// [`PASS_WAIT`] for a pass already under way (which then catches it, or the next does).
fn observe_now(ctx: &Ctx, tmux: &Tmux, via: &str) -> Result<Value> {
    store::poke_other(&ctx.home);
    if snapshot::monitor_running(&ctx.home, tmux) {
        return Ok(json!({"monitor": "poked", "published": true}));
    }
    let mut m = Monitor::new(&ctx.home, tmux.clone())?.via(via);
    let mut r = match m.pass_within(PASS_WAIT) {
        Ok(r) => r,
        Err(OrangeError::LockTimeout { .. }) => {
            return Ok(json!({"monitor": "busy", "published": false}))
        }
        Err(e) => return Err(e),
    };
    let snap = r.snapshot.take().unwrap_or_default();
    super::monitor::publish_and_notify(&ctx.home, tmux, &snap);
    Ok(json!({
        "monitor": "pass",
        "actions": r.actions,
        "published": snap.server_id.is_some(),
    }))
}

/// How long a hook waits for another pass (another hook's) to end.
const PASS_WAIT: std::time::Duration = std::time::Duration::from_millis(300);

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_and_positionals() {
        let f = parse(&v(&[
            "--pane",
            "%3",
            "--session=app/x",
            "--client",
            "/dev/pts/1",
        ]));
        assert_eq!(f.pane.as_deref(), Some("%3"));
        assert_eq!(f.session.as_deref(), Some("app/x"));
        assert_eq!(f.client.as_deref(), Some("/dev/pts/1"));
        let f = parse(&v(&["%7", "$2", "--json", "--what", "extra", "more"]));
        assert_eq!(f.pane.as_deref(), Some("%7"));
        assert_eq!(f.session.as_deref(), Some("$2"));
        assert_eq!(f.client.as_deref(), Some("extra"));
        assert!(f.json);
        assert_eq!(f.unknown, v(&["--what"]));
        assert_eq!(f.positional, v(&["more"]));
        // A flag without its value at the end is just absent.
        assert_eq!(parse(&v(&["--session"])).session, None);
    }
}
