//! The `orange` binary: the command line (see `orange::cli::entry`).

fn main() {
    let code = orange::cli::entry::run(std::env::args_os().collect(), false);
    if code != 0 {
        std::process::exit(code);
    }
}
