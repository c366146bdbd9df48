use std::io::Write;

use clap::Parser;
use orange::cli::{self, Cli, Ctx};
use orange::error::OrangeError;

fn main() {
    // args_os: an argument that is not UTF-8 must not panic here (clap reports it).
    let wants_json = std::env::args_os().any(|a| a == "--json");
    // Names, branches, summaries and paths are kept as UTF-8 (JSON state, tmux names):
    // an argument that is not is refused here, for every command, before anything runs.
    if let Some((i, bad)) = std::env::args_os()
        .enumerate()
        .skip(1)
        .find(|(_, a)| a.to_str().is_none())
    {
        let e = OrangeError::invalid(format!(
            "argument {i} ({:?}) is not valid UTF-8; orange keeps names, branches, summaries and paths as UTF-8",
            bad.to_string_lossy()
        ));
        report(&e, wants_json);
        std::process::exit(2);
    }
    let cli = match Cli::try_parse() {
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
                std::process::exit(2);
            }
            e.exit();
        }
    };
    let json = cli.json;
    let result = Ctx::new(cli.project).and_then(|mut ctx| {
        ctx.json = json;
        cli::dispatch(&ctx, cli.command)
    });
    match result {
        Ok(out) => {
            if json {
                print_json(&out.json);
            } else {
                let mut so = std::io::stdout().lock();
                let _ = so.write_all(out.printed().as_bytes());
            }
        }
        Err(e) => {
            report(&e, json);
            std::process::exit(1);
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
            orange::text::safe_line(&e.to_string()),
            e.code()
        );
    }
}

fn print_json(v: &serde_json::Value) {
    let mut so = std::io::stdout().lock();
    let _ = so.write_all(orange::ui::output::json_text(v).as_bytes());
    let _ = so.write_all(b"\n");
}
