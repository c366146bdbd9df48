//! `orange sidebar [--task ID] [--once] [--width N]` and `orange sidebar toggle`.
//!
//! `--once` prints one frame (plain text unless stdout is a colour terminal; `--json`: the
//! model). Without it the sidebar redraws its terminal until killed: the task's directory,
//! `$ORANGE_HOME/run/poke` and the observer's snapshot are checked every 250 ms (a few
//! `stat`s), the terminal's size too (an `ioctl`); git runs every 10 s, on a poke and on a
//! key press. The sidebar does not poll tmux: the agent's session state comes from the
//! snapshot the monitor writes; only when no monitor renews a stale snapshot does the
//! sidebar observe (one tmux call, at most once a second). Drawing never clears the whole
//! screen unless the size changed (no flicker).

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use serde_json::json;
use unicode_width::UnicodeWidthStr;

use super::Ctx;
use crate::adapters::terminal::{self, Term};
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::host;
use crate::orchestration::lifecycle::{SessionView, Tasks};
use crate::orchestration::observer;
use crate::orchestration::task::{self, Task, TaskStore};
use crate::ui::output::{color_enabled, Out};
use crate::ui::sidebar::gather::{self, GitPart};
use crate::ui::sidebar::model::{self, Model};
use crate::ui::sidebar::render;

#[derive(Debug, Args)]
pub struct SidebarArgs {
    /// Task to show (default: $ORANGE_TASK_ID, else the task of the tmux session this pane
    /// is in, else the task bound to the workspace containing the current directory)
    #[arg(long, conflicts_with = "lane")]
    pub task: Option<String>,
    /// Show a lane instead of a task
    #[arg(long)]
    pub lane: Option<String>,
    /// Render one frame and exit (with --json: the model as JSON)
    #[arg(long)]
    pub once: bool,
    /// Width in columns (default: $COLUMNS, else the pane's width, else 40)
    #[arg(long)]
    pub width: Option<usize>,
    /// Height in lines (default: --once unlimited; the loop: the pane's height)
    #[arg(long)]
    pub height: Option<usize>,
    /// `toggle`: open or close the sidebar beside the current pane
    pub action: Option<String>,
}

/// How often the loop looks at the task's files and the poke file.
const TICK: Duration = Duration::from_millis(250);
/// How often it asks tmux for the pane's size and the agent's session.
const HEALTH_EVERY: Duration = Duration::from_secs(1);
/// How often it reads git again without being poked.
const GIT_EVERY: Duration = Duration::from_secs(10);
/// A snapshot this old while a monitor runs: the monitor is late, the sidebar looks itself.
const MONITOR_LATE: Duration = Duration::from_secs(10);
const DEFAULT_WIDTH: usize = 40;
const CTRL_C: u8 = 0x03;
const CTRL_D: u8 = 0x04;
const DEFAULT_HEIGHT: usize = 24;

pub fn run(ctx: &Ctx, args: SidebarArgs) -> Result<Out> {
    match args.action.as_deref() {
        None => {}
        Some("toggle") => return toggle(ctx),
        Some(other) => {
            return Err(OrangeError::invalid(format!(
                "unknown sidebar action {other:?}: the only one is `toggle`"
            )))
        }
    }
    for (name, v) in [("--width", args.width), ("--height", args.height)] {
        if v == Some(0) {
            return Err(OrangeError::invalid(format!("{name} must be at least 1")));
        }
    }
    // A remote task: drawn from its host's last snapshot, never over ssh.
    if let Some(id) = args.task.as_deref() {
        if let Some(link) = host::linked(&ctx.home, id) {
            return remote(ctx, id, &link.host, &args);
        }
    }
    let task = match &args.lane {
        Some(id) => gather::lane_task(&ctx.home, id)?,
        None => find_task(ctx, args.task.as_deref())?,
    };
    // This process only reads git.
    crate::adapters::git::fast_reads();
    if args.once {
        let width = args
            .width
            .or_else(|| env_usize("COLUMNS"))
            .or_else(|| pane_size(&pane_tmux()).map(|(w, _)| w))
            .unwrap_or(DEFAULT_WIDTH);
        let model = gather::model_for_task(&ctx.home, &task, chrono::Utc::now())?;
        // Every piece of the frame went through the sidebar's own safe-text step.
        let text = if color_enabled() {
            render::render_ansi(&model, width, args.height)
        } else {
            render::render(&model, width, args.height)
        };
        return Ok(Out::new(&model, text).styled());
    }
    if std::env::args_os().any(|a| a == "--json") {
        return Err(OrangeError::invalid(
            "--json needs --once (the sidebar loop draws a terminal)",
        ));
    }
    run_loop(ctx, task, args.lane.is_some(), args.width, args.height)
}

fn toggle(ctx: &Ctx) -> Result<Out> {
    let tmux = Tmux::from_env();
    let v = crate::ui::plugin::toggle_sidebar(&ctx.home, &tmux)?;
    let text = match v["action"].as_str() {
        Some("opened") => format!("sidebar opened ({})\n", v["pane"].as_str().unwrap_or("?")),
        Some("closed") => "sidebar closed\n".to_string(),
        _ => String::new(),
    };
    Ok(Out::new(v, text))
}

/// The sidebar's footer for the keys this tmux server has bound, from the observer's
/// snapshot (it reads them in its one call: the sidebar asks tmux nothing).
fn bound_footer(snap: Option<&observer::Snapshot>) -> String {
    let opt = |name: &str| snap.and_then(|s| s.option(name));
    let [side, zoom, key, bound] = observer::KEY_OPTIONS;
    model::footer_for_keys(opt(side), opt(zoom), opt(key), opt(bound))
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
}

/// The tmux server this very pane is on (`$TMUX`), which may differ from the one tasks
/// run on when `ORANGE_TMUX_SOCKET` names another.
fn pane_tmux() -> Tmux {
    Tmux::new(Tmux::server_from(
        None,
        std::env::var("TMUX").ok().as_deref(),
    ))
}

/// `$TMUX_PANE`, when this process runs in a tmux pane (`$TMUX` set too).
fn own_pane() -> Option<String> {
    std::env::var_os("TMUX").filter(|v| !v.is_empty())?;
    std::env::var("TMUX_PANE")
        .ok()
        .filter(|p| p.starts_with('%'))
}

/// The size of this pane, asked of tmux (one call).
fn pane_size(tmux: &Tmux) -> Option<(usize, usize)> {
    let pane = own_pane()?;
    let v = tmux
        .pane_values(&pane, &["pane_width", "pane_height"])
        .ok()??;
    Some((v[0].parse().ok()?, v[1].parse().ok()?))
}

/// The task the sidebar follows: `--task`, `$ORANGE_TASK_ID`, the task whose tmux session
/// holds this pane, the task bound to the workspace containing the current directory.
fn find_task(ctx: &Ctx, explicit: Option<&str>) -> Result<Task> {
    let tasks = Tasks::new(&ctx.home);
    if let Some(id) = explicit {
        return tasks.get(id, ctx.project.as_deref());
    }
    if let Some(id) = task::id_from_env() {
        return tasks.get(&id, ctx.project.as_deref());
    }
    // Only inside tmux: `$TMUX` names the server the pane ids belong to.
    let panes = own_pane()
        .map(|p| {
            vec![
                Some(p),
                std::env::var(crate::ui::plugin::ENV_AGENT_PANE).ok(),
            ]
        })
        .unwrap_or_default();
    for pane in panes.into_iter().flatten() {
        if let Some(t) = task_of_pane(&ctx.home, &pane_tmux(), &pane) {
            return Ok(t);
        }
    }
    tasks.infer(&ctx.cwd).map_err(|_| {
        OrangeError::invalid(
            "which task? pass --task ID (or run the sidebar in a task's tmux session, with ORANGE_TASK_ID set, or inside a task's workspace)",
        )
    })
}

fn task_of_pane(home: &crate::adapters::store::Home, tmux: &Tmux, pane: &str) -> Option<Task> {
    let v = tmux
        .pane_values(pane, &["session_id", "session_name"])
        .ok()??;
    crate::ui::plugin::task_of_session(home, tmux, &v[0], &v[1]).ok()?
}

// ---------------------------------------------------------------------------------------
// The loop
// ---------------------------------------------------------------------------------------

/// What a file looked like at the last check: any change (an edit in place, an append, a
/// replacement by rename, a removal) changes it.
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(p: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

/// The paths whose stamps decide a refresh: the task directory itself (editors and
/// atomic writers replace files by rename, which changes the directory) and its files
/// (appends and in-place edits change only the file).
fn task_paths(store: &TaskStore, task: &Task) -> Vec<PathBuf> {
    let dir = store.dir(&task.project, &task.id);
    let mut v = vec![dir.clone(), crate::orchestration::agent::agent_dir(&dir)];
    for f in ["task.json", "TASK.md", "history.jsonl", "agent/agent.json"] {
        v.push(dir.join(f));
    }
    v
}

enum Input {
    Key(u8),
}

/// Read keys (one by one: the terminal is in `-icanon`) on a thread; `q` quits, any other
/// key refreshes at once.
fn keys() -> (mpsc::Sender<Input>, mpsc::Receiver<Input>) {
    let (tx, rx) = mpsc::channel();
    if std::io::stdin().is_terminal() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0u8; 64];
            while let Ok(n) = stdin.read(&mut buf) {
                if n == 0 {
                    break;
                }
                for b in &buf[..n] {
                    if tx.send(Input::Key(*b)).is_err() {
                        return;
                    }
                }
            }
        });
    }
    (tx, rx)
}

/// The loop's view of the world between frames.
struct Follow {
    task: Option<Task>,
    id: String,
    session: SessionView,
    git: GitPart,
    model: Option<Model>,
}

fn run_loop(
    ctx: &Ctx,
    task: Task,
    lane: bool,
    fixed_width: Option<usize>,
    fixed_height: Option<usize>,
) -> Result<Out> {
    let store = TaskStore::new(&ctx.home);
    let tasks_tmux = Tmux::from_env();
    let pane_tmux = pane_tmux();
    let poke = ctx.home.root.join("run").join("poke");
    let paths = task_paths(&store, &task);
    let project = task.project.clone();

    let term = Term::enter();
    let (_tx, rx) = keys();
    let color = color_enabled();

    let mut st = Follow {
        id: task.id.clone(),
        task: Some(task),
        session: SessionView::NONE,
        git: GitPart::default(),
        model: None,
    };
    let mut stamps: Vec<Stamp> = paths.iter().map(|p| stamp(p)).collect();
    let mut poke_stamp = stamp(&poke);
    let mut size = (
        fixed_width.unwrap_or(DEFAULT_WIDTH),
        fixed_height.unwrap_or(DEFAULT_HEIGHT),
    );
    let mut last_health: Option<Instant> = None;
    let snap_path = observer::path(&ctx.home, &tasks_tmux);
    let mut snap_stamp = stamp(&snap_path);
    let mut snapshot: Option<observer::Snapshot> = observer::read(&ctx.home, &tasks_tmux);
    let mut renew = true;
    let mut last_git: Option<Instant> = None;
    let mut last_frame = String::new();
    let mut last_size = (0, 0);
    let mut force_git = true;
    let mut reload = true;
    loop {
        // Files: a few stats.
        let now_stamps: Vec<Stamp> = paths.iter().map(|p| stamp(p)).collect();
        if now_stamps != stamps {
            stamps = now_stamps;
            reload = true;
        }
        let p = stamp(&poke);
        if p != poke_stamp {
            poke_stamp = p;
            force_git = true;
            last_health = None;
        }
        if reload {
            let loaded = if lane {
                gather::lane_task(&ctx.home, &st.id)
            } else {
                store.load(&project, &st.id)
            };
            match loaded {
                Ok(t) => {
                    let moved = st.task.as_ref().is_none_or(|old| {
                        old.workspace != t.workspace
                            || old.branch != t.branch
                            || old.status != t.status
                    });
                    force_git |= moved;
                    st.task = Some(t);
                }
                Err(OrangeError::TaskNotFound(_) | OrangeError::LaneNotFound(_)) => {
                    // Its line counts are of no use to anyone now.
                    if let Some(old) = st.task.take() {
                        let _ = std::fs::remove_file(gather::line_cache_path(&ctx.home, &old));
                    }
                }
                // A half-written or unreadable task.json: keep the last good one.
                Err(_) => {}
            }
        }
        // The session's state: from the observer's snapshot, re-read when it changes (one
        // `stat` a tick). Once a second, a stale snapshot that no monitor renews (none runs,
        // or it is late) is renewed here: one tmux call.
        let snap_now = stamp(&snap_path);
        if snap_now != snap_stamp {
            snap_stamp = snap_now;
            if let Some(s) = observer::read(&ctx.home, &tasks_tmux) {
                snapshot = Some(s);
                renew = true;
            }
        }
        if last_health.is_none_or(|t| t.elapsed() >= HEALTH_EVERY) {
            last_health = Some(Instant::now());
            let stale = snapshot
                .as_ref()
                .is_none_or(|s| !observer::is_fresh(&ctx.home, &tasks_tmux, s));
            let late = snapshot.as_ref().is_none_or(|s| {
                observer::now_ms().saturating_sub(s.taken_at_ms) > MONITOR_LATE.as_millis() as u64
            });
            if stale && (late || !observer::monitor_running(&ctx.home, &tasks_tmux)) {
                if let Ok(s) = observer::observe(&ctx.home, &tasks_tmux) {
                    observer::write(&ctx.home, &tasks_tmux, &s);
                    snap_stamp = stamp(&snap_path);
                    snapshot = Some(s);
                    renew = true;
                }
            }
            // No terminal to ask (output redirected): tmux or stty, once a second.
            if terminal::window_size().is_none() {
                let measured = pane_size(&pane_tmux)
                    .or_else(stty_size)
                    .or_else(|| Some((env_usize("COLUMNS")?, env_usize("LINES")?)));
                if let Some((w, h)) = measured {
                    size = (fixed_width.unwrap_or(w), fixed_height.unwrap_or(h));
                }
            }
        }
        if renew {
            renew = false;
            if let (Some(t), Some(s)) = (&st.task, &snapshot) {
                let session = SessionView::of(t, &s.panes);
                if session != st.session {
                    st.session = session;
                    reload = true;
                }
            }
        }
        // The terminal's size: asked of the kernel every tick (no process).
        if let Some((w, h)) = terminal::window_size() {
            size = (fixed_width.unwrap_or(w), fixed_height.unwrap_or(h));
        }
        // git: every 10 s, when poked, on a key, when the task moved.
        if force_git || last_git.is_none_or(|t| t.elapsed() >= GIT_EVERY) {
            if let Some(t) = &st.task {
                st.git = gather::git_part(&ctx.home, t);
            }
            last_git = Some(Instant::now());
            force_git = false;
            reload = true;
        }
        let now = chrono::Utc::now();
        if reload {
            // The keys this server really has bound (a person may remap or turn off
            // `@orange-sidebar-key` and `@orange-zoom-key`).
            let footer = bound_footer(snapshot.as_ref());
            st.model = st.task.as_ref().map(|t| {
                let mut m = gather::assemble(&ctx.home, t, &st.session, &st.git, now);
                m.footer = footer;
                m
            });
            reload = false;
        }
        let (w, h) = size;
        let (plain, shown) = match &mut st.model {
            Some(m) => {
                m.now = now.timestamp();
                let plain = render::render(m, w, Some(h));
                let shown = if color {
                    render::render_ansi(m, w, Some(h))
                } else {
                    plain.clone()
                };
                (plain, shown)
            }
            None => {
                let plain = render::render_gone(&st.id, w, Some(h));
                (plain.clone(), plain)
            }
        };
        if shown != last_frame || size != last_size {
            if draw(&plain, &shown, w, h, size != last_size).is_err() {
                // The terminal is gone (the pane was closed): nothing left to draw on.
                return Ok(Out::new(
                    json!({"task": st.id, "ended": "terminal closed"}),
                    "",
                ));
            }
            last_frame = shown;
            last_size = size;
        }
        match rx.recv_timeout(TICK) {
            Ok(Input::Key(b'q' | b'Q' | CTRL_D)) => {
                return Ok(Out::new(json!({"task": st.id, "ended": "quit"}), ""));
            }
            Ok(Input::Key(CTRL_C)) => {
                drop(term);
                // What a shell expects of a program stopped by Ctrl+C.
                std::process::exit(130);
            }
            Ok(Input::Key(_)) => {
                force_git = true;
                last_health = None;
                while rx.try_recv().is_ok() {}
            }
            Err(_) => {}
        }
    }
}

/// The sidebar of a remote task: its host's snapshot file (`run/hosts/<host>.json`, which
/// the monitor here fetches), re-read when it changes; one `stat` a tick, no ssh.
fn remote(ctx: &Ctx, id: &str, host_name: &str, args: &SidebarArgs) -> Result<Out> {
    let seen_path = ctx
        .home
        .run_dir()
        .join("hosts")
        .join(format!("{host_name}.json"));
    let model = |now: chrono::DateTime<chrono::Utc>| {
        let seen = host::read_seen(&ctx.home, host_name).unwrap_or(host::Seen {
            name: host_name.to_string(),
            ..host::Seen::default()
        });
        let view = seen.view(host::now_ms());
        let item = seen.summary.items.iter().find(|i| i.id == id);
        model::remote_model(id, item, &view, now.timestamp())
    };
    if args.once {
        let width = args
            .width
            .or_else(|| env_usize("COLUMNS"))
            .unwrap_or(DEFAULT_WIDTH);
        let m = model(chrono::Utc::now());
        let text = render::render(&m, width, args.height);
        return Ok(Out::new(&m, text));
    }
    // The keys this server really has bound, from the last local snapshot (a file).
    let footer = bound_footer(observer::read(&ctx.home, &pane_tmux()).as_ref());
    let term = Term::enter();
    let (_tx, rx) = keys();
    let color = color_enabled();
    let mut size = (
        args.width.unwrap_or(DEFAULT_WIDTH),
        args.height.unwrap_or(DEFAULT_HEIGHT),
    );
    let mut stamp_was = None;
    let mut m = model(chrono::Utc::now());
    m.footer = footer.clone();
    let mut last = (String::new(), (0, 0));
    let mut ticks = 0u32;
    loop {
        let st = stamp(&seen_path);
        // Re-read when the file changes, and once a second for the age.
        if st != stamp_was || ticks.is_multiple_of(4) {
            stamp_was = st;
            m = model(chrono::Utc::now());
            m.footer = footer.clone();
        }
        ticks = ticks.wrapping_add(1);
        if let Some((w, h)) = terminal::window_size() {
            size = (args.width.unwrap_or(w), args.height.unwrap_or(h));
        }
        let (w, h) = size;
        let plain = render::render(&m, w, Some(h));
        let shown = if color {
            render::render_ansi(&m, w, Some(h))
        } else {
            plain.clone()
        };
        if (shown.clone(), size) != last {
            if draw(&plain, &shown, w, h, size != last.1).is_err() {
                return Ok(Out::new(
                    json!({"task": id, "ended": "terminal closed"}),
                    "",
                ));
            }
            last = (shown, size);
        }
        match rx.recv_timeout(TICK) {
            Ok(Input::Key(b'q' | b'Q' | CTRL_D)) => {
                return Ok(Out::new(json!({"task": id, "ended": "quit"}), ""));
            }
            Ok(Input::Key(CTRL_C)) => {
                drop(term);
                std::process::exit(130);
            }
            _ => {}
        }
    }
}

/// `stty size` of the controlling terminal (outside tmux).
fn stty_size() -> Option<(usize, usize)> {
    if own_pane().is_some() {
        return None;
    }
    terminal::tty_size()
}

/// Draw a frame from the top left: each line cleared after its text (not before: no
/// flicker), the rest of the screen cleared when the frame is shorter than the screen.
fn draw(plain: &str, shown: &str, cols: usize, rows: usize, clear: bool) -> std::io::Result<()> {
    let mut buf = String::from(if clear { "\x1b[H\x1b[2J" } else { "\x1b[H" });
    let widths: Vec<usize> = plain.lines().map(|l| l.width()).collect();
    let lines: Vec<&str> = shown.lines().take(rows).collect();
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            buf.push_str("\r\n");
        }
        buf.push_str(l);
        // At the last column the terminal waits to wrap: an erase there would eat the
        // last character, and nothing is left to erase anyway.
        if widths.get(i).copied().unwrap_or(0) < cols {
            buf.push_str("\x1b[K");
        }
    }
    if lines.is_empty() {
        buf.push_str("\x1b[J");
    } else if lines.len() < rows {
        buf.push_str("\r\n\x1b[J");
    }
    let mut so = std::io::stdout().lock();
    so.write_all(buf.as_bytes())?;
    so.flush()
}
