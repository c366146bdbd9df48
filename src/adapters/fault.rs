//! Fault injection for the crash and race tests. With `ORANGE_CRASH_AT=<point>` orange dies
//! at that point as a SIGKILL would leave it (no destructor runs, no file is cleaned up; the
//! kernel drops its locks). With `ORANGE_PAUSE_AT=<point>` and `ORANGE_PAUSE_DIR=<dir>` it
//! writes `<dir>/<point>.paused` there and waits (at most a minute) for `<dir>/<point>.go`:
//! a test runs another command in between. `ORANGE_PAUSE_AT_FILE=<file>` names the point in
//! a file read at each point instead (a long-lived `orange serve` runs many commands). The
//! points are named `<operation>.<step>`; see `tests/failures/killed.rs`. `ORANGE_DROP_AT_FILE=<file>`
//! makes orange drop what it would do at the point named in that file (read each time): an
//! agent's event channel that breaks mid-turn (`hook.agent`).

/// Die here if this is the point asked for (or wait here, as [`pause`] does).
pub fn point(name: &str) {
    pause(name);
    if std::env::var_os("ORANGE_CRASH_AT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}

/// Wait here, if this is the point asked for, until the test says go.
pub fn pause(name: &str) {
    let asked = match std::env::var_os("ORANGE_PAUSE_AT") {
        Some(v) => v == name,
        None => std::env::var_os("ORANGE_PAUSE_AT_FILE")
            .and_then(|f| std::fs::read_to_string(f).ok())
            .is_some_and(|v| v.trim() == name),
    };
    if !asked {
        return;
    }
    let Some(dir) = std::env::var_os("ORANGE_PAUSE_DIR").map(std::path::PathBuf::from) else {
        return;
    };
    let _ = std::fs::write(dir.join(format!("{name}.paused")), "");
    let go = dir.join(format!("{name}.go"));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !go.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether to drop what happens at this point (the point named in `ORANGE_DROP_AT_FILE`'s
/// file, read each time: a test breaks a channel while the agent runs).
pub fn dropped(name: &str) -> bool {
    std::env::var_os("ORANGE_DROP_AT_FILE")
        .and_then(|f| std::fs::read_to_string(f).ok())
        .is_some_and(|v| v.trim() == name)
}
