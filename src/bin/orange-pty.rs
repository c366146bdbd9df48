//! `orange-pty`: the thin pty layer orange starts around an agent whose harness says
//! `status_reports = true` (see `orange::adapters::pty`). A binary of its own, with only
//! libc and std behind it: one runs beside every such agent, and it stays small.

fn main() {
    let code = orange::adapters::pty::main(std::env::args_os().skip(1).collect());
    std::process::exit(code);
}
