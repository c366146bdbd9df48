//! The command line from arguments to exit status: what `main` runs, and what `orange serve
//! --stdio` runs for each request (the same parsing, the same JSON contract and error codes,
//! the same output on stdout and stderr).

use std::ffi::OsString;
use std::io::Write;

use clap::Parser;

use super::args::Cli;
use super::context::Ctx;
use crate::error::OrangeError;

/// Run one command line (`args[0]` is the program) and return its exit status. Output goes
/// to this process's stdout and stderr, as `orange ARGS…` prints it. `serving`: a request of
/// `orange serve --stdio` (no terminal: the commands that need one are refused).
pub fn run(args: Vec<OsString>, serving: bool) -> i32 {
    let code = run_inner(args, serving);
    let _ = std::io::stdout().flush();
    code
}

fn run_inner(args: Vec<OsString>, serving: bool) -> i32 {
    // args_os: an argument that is not UTF-8 must not panic here (clap reports it).
    let wants_json = args.iter().skip(1).any(|a| a == "--json");
    // Names, branches, summaries and paths are kept as UTF-8 (JSON state, tmux names):
    // an argument that is not is refused here, for every command, before anything runs.
    if let Some((i, bad)) = args
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, a)| a.to_str().is_none())
    {
        let e = OrangeError::invalid(format!(
            "argument {i} ({:?}) is not valid UTF-8; orange keeps names, branches, summaries and paths as UTF-8",
            bad.to_string_lossy()
        ));
        report(&e, wants_json);
        return 2;
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if wants_json
                && !matches!(
                    e.kind(),
                    DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
                )
            {
                let msg = e.to_string();
                let body = msg.split("\nUsage:").next().unwrap_or("");
                let body = body.trim_start_matches("error: ");
                let message = body.split_whitespace().collect::<Vec<_>>().join(" ");
                print_json(
                    &serde_json::json!({"error": {"code": "invalid_argument", "message": message}}),
                );
                return 2;
            }
            let _ = e.print();
            return e.exit_code();
        }
    };
    let json = cli.json;
    if serving {
        if let Some(what) = cli.command.does().not_served {
            let why = format!("{what} cannot run through `orange serve`");
            report(&OrangeError::invalid(why), json);
            return 1;
        }
    }
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let result = Ctx::new(cli.project, run).and_then(|mut ctx| {
        ctx.json = json;
        ctx.args = words;
        super::dispatch(&ctx, cli.command)
    });
    match result {
        Ok(out) => {
            if json {
                print_json(&out.json);
            } else {
                let mut so = std::io::stdout().lock();
                let _ = so.write_all(out.printed().as_bytes());
            }
            0
        }
        Err(e) => {
            report(&e, json);
            1
        }
    }
}

fn report(e: &OrangeError, json: bool) {
    if json {
        print_json(&serde_json::json!({"error": {"code": e.code(), "message": e.to_string()}}));
    } else {
        // An error may quote what was typed or what a workspace holds: one safe line.
        eprintln!(
            "orange: {} [{}]",
            crate::text::safe_line(&e.to_string()),
            e.code()
        );
    }
}

fn print_json(v: &serde_json::Value) {
    let mut so = std::io::stdout().lock();
    let _ = so.write_all(crate::ui::output::json_text(v).as_bytes());
    let _ = so.write_all(b"\n");
}
