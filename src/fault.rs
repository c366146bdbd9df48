//! Fault injection for the crash tests: with `ORANGE_CRASH_AT=<point>` orange dies at that
//! point as a SIGKILL would leave it (no destructor runs, no file is cleaned up; the kernel
//! drops its locks). The points are named `<operation>.<step>`; see `tests/failures.rs`.

/// Die here if this is the point asked for.
pub fn point(name: &str) {
    if std::env::var_os("ORANGE_CRASH_AT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}
