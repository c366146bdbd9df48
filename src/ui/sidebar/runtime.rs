//! The sidebar at work: one frame (`--once`), or a loop that follows one task and redraws
//! its terminal until killed or closed (`q`, Ctrl+D; Ctrl+C exits 130); `Tab`, `Enter` and
//! `Esc` move the focus ([`super::pane`]).
//!
//! The loop checks the task's directory, `$ORANGE_HOME/run/poke` and the observer's
//! snapshot every 250 ms (a few `stat`s), the terminal's size too (an `ioctl`); git runs
//! every 10 s, on a poke and on a key press. The sidebar does not poll tmux: the agent's
//! session state comes from the snapshot the monitor writes; only when no monitor renews a
//! stale snapshot does the sidebar observe (one tmux call, at most once a second). Drawing
//! never clears the whole screen unless the size changed (no flicker). A remote task is
//! drawn from its host's last snapshot file, never over ssh.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use crate::adapters::store::Home;
use crate::adapters::terminal::{self, Term};
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::attention::session::SessionView;
use crate::orchestration::host;
use crate::orchestration::observe::snapshot;
use crate::orchestration::task::service::TaskService;
use crate::orchestration::task::{self, Task, TaskStore};
use crate::ui::output::{color_enabled, Out};
use crate::ui::sidebar::gather::{self, GitPart};
use crate::ui::sidebar::model::{self, Model};
use crate::ui::sidebar::pane::Pane;
use crate::ui::sidebar::render;
use crate::ui::sidebar::screen::{self, Keys, Screen, Wake};

/// How often the loop (one tick: [`crate::ui::sidebar::screen::TICK`]) asks tmux for the
/// pane's size and the agent's session.
const HEALTH_EVERY: Duration = Duration::from_secs(1);
/// How often it reads git again without being poked.
const GIT_EVERY: Duration = Duration::from_secs(10);
/// A snapshot this old while a monitor runs: the monitor is late, the sidebar looks itself.
const MONITOR_LATE: Duration = Duration::from_secs(10);
const DEFAULT_WIDTH: usize = 40;
const DEFAULT_HEIGHT: usize = 24;

// ---------------------------------------------------------------------------------------
// Which task, which size
// ---------------------------------------------------------------------------------------

/// The task the sidebar follows: `explicit` (`--task`), `$ORANGE_TASK_ID`, the task whose
/// tmux session holds this pane, the task bound to the workspace containing `cwd`.
pub fn find_task(
    home: &Home,
    project: Option<&str>,
    cwd: &Path,
    explicit: Option<&str>,
) -> Result<Task> {
    let tasks = TaskService::new(home);
    if let Some(id) = explicit {
        return tasks.get(id, project);
    }
    if let Some(id) = task::id_from_env() {
        return tasks.get(&id, project);
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
        if let Some(t) = task_of_pane(home, &pane_tmux(), &pane) {
            return Ok(t);
        }
    }
    tasks.infer(cwd).map_err(|_| {
        OrangeError::invalid(
            "which task? pass --task ID (or run the sidebar in a task's tmux session, with ORANGE_TASK_ID set, or inside a task's workspace)",
        )
    })
}

fn task_of_pane(home: &Home, tmux: &Tmux, pane: &str) -> Option<Task> {
    let v = tmux
        .pane_values(pane, &["session_id", "session_name"])
        .ok()??;
    crate::ui::plugin::task_of_session(home, tmux, &v[0], &v[1]).ok()?
}

/// The sidebar's footer: its own keys while it has the focus, else the keys this tmux
/// server has bound for the agent's pane, from the observer's snapshot (it reads them in
/// its one call: the sidebar asks tmux nothing).
fn bound_footer(snap: Option<&snapshot::Snapshot>, focused: bool) -> String {
    if focused {
        return model::SIDEBAR_FOOTER.into();
    }
    let opt = |name: &str| snap.and_then(|s| s.option(name));
    let [side, zoom, key, bound] = snapshot::KEY_OPTIONS;
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

/// `stty size` of the controlling terminal (outside tmux).
fn stty_size() -> Option<(usize, usize)> {
    if own_pane().is_some() {
        return None;
    }
    terminal::tty_size()
}

// ---------------------------------------------------------------------------------------
// One frame
// ---------------------------------------------------------------------------------------

/// `--once`: one frame of `task`, `width` columns wide (default: `$COLUMNS`, else the
/// pane's width, else 40); plain text unless stdout is a colour terminal; the model for
/// `--json`.
pub fn once(home: &Home, task: &Task, width: Option<usize>, height: Option<usize>) -> Result<Out> {
    let width = width
        .or_else(|| env_usize("COLUMNS"))
        .or_else(|| pane_size(&pane_tmux()).map(|(w, _)| w))
        .unwrap_or(DEFAULT_WIDTH);
    let model = gather::model_for_task(home, task, chrono::Utc::now())?;
    // Every piece of the frame went through the sidebar's own safe-text step.
    let text = if color_enabled() {
        render::render_ansi(&model, width, height)
    } else {
        render::render(&model, width, height)
    };
    Ok(Out::new(&model, text).styled())
}

fn ended(id: &str, how: &str) -> Out {
    Out::new(json!({"task": id, "ended": how}), "")
}

/// A model's frame, plain and as shown (with colours when `color`).
fn frames(m: &Model, (w, h): (usize, usize), color: bool) -> (String, String) {
    let plain = render::render(m, w, Some(h));
    let shown = if color {
        render::render_ansi(m, w, Some(h))
    } else {
        plain.clone()
    };
    (plain, shown)
}

// ---------------------------------------------------------------------------------------
// Following a local task
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

/// The loop's view of the world between frames, and what decides the next one.
struct Follow<'a> {
    home: &'a Home,
    store: TaskStore,
    /// The server tasks run on, and the one this pane is on.
    tasks_tmux: Tmux,
    pane_tmux: Tmux,
    lane: bool,
    project: String,
    id: String,
    /// `None`: the task was deleted.
    task: Option<Task>,
    session: SessionView,
    git: GitPart,
    model: Option<Model>,
    paths: Vec<PathBuf>,
    stamps: Vec<Stamp>,
    poke: PathBuf,
    poke_stamp: Stamp,
    snap_path: PathBuf,
    snap_stamp: Stamp,
    snapshot: Option<snapshot::Snapshot>,
    /// `--width`, `--height`; else the terminal's.
    fixed: (Option<usize>, Option<usize>),
    size: (usize, usize),
    last_health: Option<Instant>,
    last_git: Option<Instant>,
    /// The snapshot changed: the session is to be looked up again.
    renew: bool,
    force_git: bool,
    /// The model is to be assembled again.
    reload: bool,
    /// Something was read or built since the last frame: memory was allocated and freed.
    churned: bool,
    /// Its own tmux pane: the focus, where its keys go.
    pane: Pane,
}

impl<'a> Follow<'a> {
    fn new(home: &'a Home, task: Task, lane: bool, fixed: (Option<usize>, Option<usize>)) -> Self {
        let store = TaskStore::new(home);
        let tasks_tmux = Tmux::from_env();
        let poke = home.root.join("run").join("poke");
        let paths = task_paths(&store, &task);
        let snap_path = snapshot::path(home, &tasks_tmux);
        Follow {
            home,
            stamps: paths.iter().map(|p| stamp(p)).collect(),
            poke_stamp: stamp(&poke),
            snap_stamp: stamp(&snap_path),
            snapshot: snapshot::read(home, &tasks_tmux),
            store,
            pane_tmux: pane_tmux(),
            tasks_tmux,
            lane,
            project: task.project.clone(),
            id: task.id.clone(),
            task: Some(task),
            session: SessionView::NONE,
            git: GitPart::default(),
            model: None,
            paths,
            poke,
            snap_path,
            size: (
                fixed.0.unwrap_or(DEFAULT_WIDTH),
                fixed.1.unwrap_or(DEFAULT_HEIGHT),
            ),
            fixed,
            last_health: None,
            last_git: None,
            renew: true,
            force_git: true,
            reload: true,
            churned: true,
            pane: Pane::find(pane_tmux(), own_pane()),
        }
    }

    /// One tick's look at the world: files, snapshot, sizes, git; the model again when
    /// any of it changed.
    fn look(&mut self) {
        self.check_files();
        if self.reload {
            self.load_task();
        }
        self.check_snapshot();
        if self.last_health.is_none_or(|t| t.elapsed() >= HEALTH_EVERY) {
            self.last_health = Some(Instant::now());
            self.health();
        }
        if self.renew {
            self.renew = false;
            self.renew_session();
        }
        // The terminal's size: asked of the kernel every tick (no process).
        if let Some(size) = terminal::window_size() {
            self.resize(size);
        }
        // git: every 10 s, when poked, on a key, when the task moved.
        if self.force_git || self.last_git.is_none_or(|t| t.elapsed() >= GIT_EVERY) {
            if let Some(t) = &self.task {
                self.git = gather::git_part(self.home, t);
            }
            self.last_git = Some(Instant::now());
            self.force_git = false;
            self.reload = true;
            self.churned = true;
        }
    }

    /// The task's files (a few stats) and the poke file.
    fn check_files(&mut self) {
        let now_stamps: Vec<Stamp> = self.paths.iter().map(|p| stamp(p)).collect();
        if now_stamps != self.stamps {
            self.stamps = now_stamps;
            self.reload = true;
        }
        let p = stamp(&self.poke);
        if p != self.poke_stamp {
            self.poke_stamp = p;
            self.poked();
        }
    }

    /// Poked, or a key pressed: git and the health check at once.
    fn poked(&mut self) {
        self.force_git = true;
        self.last_health = None;
    }

    fn load_task(&mut self) {
        let loaded = if self.lane {
            gather::lane_task(self.home, &self.id)
        } else {
            self.store.load(&self.project, &self.id)
        };
        match loaded {
            Ok(t) => {
                let moved = self.task.as_ref().is_none_or(|old| {
                    old.workspace != t.workspace || old.branch != t.branch || old.status != t.status
                });
                self.force_git |= moved;
                self.task = Some(t);
            }
            Err(OrangeError::TaskNotFound(_) | OrangeError::LaneNotFound(_)) => {
                // Its line counts are of no use to anyone now.
                if let Some(old) = self.task.take() {
                    let _ = std::fs::remove_file(gather::line_cache_path(self.home, &old));
                }
            }
            // A half-written or unreadable task.json: keep the last good one.
            Err(_) => {}
        }
    }

    /// The session's state: from the observer's snapshot, re-read when it changes (one
    /// `stat` a tick).
    fn check_snapshot(&mut self) {
        let snap_now = stamp(&self.snap_path);
        if snap_now != self.snap_stamp {
            self.snap_stamp = snap_now;
            self.churned = true;
            if let Some(s) = snapshot::read(self.home, &self.tasks_tmux) {
                self.snapshot = Some(s);
                self.renew = true;
            }
        }
    }

    /// Once a second: a stale snapshot that no monitor renews (none runs, or it is late)
    /// is renewed here (one tmux call); without a terminal to ask, the size from tmux or
    /// stty.
    fn health(&mut self) {
        let (home, tmux) = (self.home, &self.tasks_tmux);
        let stale = self
            .snapshot
            .as_ref()
            .is_none_or(|s| !snapshot::is_fresh(home, tmux, s));
        let late = self.snapshot.as_ref().is_none_or(|s| {
            snapshot::now_ms().saturating_sub(s.taken_at_ms) > MONITOR_LATE.as_millis() as u64
        });
        if stale && (late || !snapshot::monitor_running(home, tmux)) {
            if let Ok(s) = snapshot::take(home, tmux) {
                snapshot::write(home, tmux, &s);
                self.snap_stamp = stamp(&self.snap_path);
                self.snapshot = Some(s);
                self.renew = true;
            }
        }
        // No terminal to ask (output redirected): tmux or stty, once a second.
        if terminal::window_size().is_none() {
            let measured = pane_size(&self.pane_tmux)
                .or_else(stty_size)
                .or_else(|| Some((env_usize("COLUMNS")?, env_usize("LINES")?)));
            if let Some(size) = measured {
                self.resize(size);
            }
        }
    }

    /// `t`: tmux's command-prompt asks the person looking at this sidebar for a message
    /// for the task's agent (`ui::plugin::send_prompt`). A lane's agent takes none; a
    /// failure is said on the status line.
    /// This sidebar's pane, and the client looking at its session (the first one).
    fn own_client(&self) -> Option<(String, Option<String>)> {
        let pane = own_pane()?;
        let client = self
            .pane_tmux
            .pane_values(&pane, &["session_id"])
            .ok()
            .flatten()
            .and_then(|v| self.pane_tmux.clients_of(&v[0]).ok())
            .and_then(|c| c.into_iter().next());
        Some((pane, client))
    }

    fn prompt_send(&self) {
        if self.lane {
            return;
        }
        let Some((pane, client)) = self.own_client() else {
            return;
        };
        if let Err(e) = crate::ui::plugin::send_prompt(&self.pane_tmux, &self.id, client.as_deref())
        {
            let msg = format!("orange: {e}");
            let _ = self
                .pane_tmux
                .display_message_to(client.as_deref(), Some(&pane), &msg);
        }
    }

    /// `v`: the task's review in a popup on the client looking at this sidebar.
    fn review(&self) {
        if self.lane {
            return;
        }
        let Some((pane, client)) = self.own_client() else {
            return;
        };
        if let Err(e) =
            crate::ui::plugin::review_popup(&self.pane_tmux, &self.id, client.as_deref())
        {
            let msg = format!("orange: {e}");
            let _ = self
                .pane_tmux
                .display_message_to(client.as_deref(), Some(&pane), &msg);
        }
    }

    fn resize(&mut self, (w, h): (usize, usize)) {
        self.size = (self.fixed.0.unwrap_or(w), self.fixed.1.unwrap_or(h));
    }

    fn renew_session(&mut self) {
        if let (Some(t), Some(s)) = (&self.task, &self.snapshot) {
            let session = SessionView::of(t, &s.panes);
            if session != self.session {
                self.session = session;
                self.reload = true;
            }
        }
    }

    /// The frame for now, plain and as shown; the model assembled again first when
    /// something changed.
    fn frame(&mut self, color: bool) -> (String, String) {
        let now = chrono::Utc::now();
        if self.reload {
            let (snap, pane) = (self.snapshot.as_ref(), &self.pane);
            self.model = self.task.as_ref().map(|t| {
                let mut m = gather::assemble(self.home, t, &self.session, &self.git, now);
                // The menu's key acts on the session it is pressed in: named when this
                // pane is in the task's.
                let keys = snap
                    .map(|s| s.step_keys())
                    .filter(|_| pane.session_id.is_some() && pane.session_id == t.tmux_session_id);
                m.next_step = m.next_step.map(|s| s.keyed(&t.id, keys.as_ref()));
                m
            });
            self.reload = false;
            self.churned = true;
        }
        let (w, h) = self.size;
        match &mut self.model {
            Some(m) => {
                m.now = now.timestamp();
                // The keys of the pane in focus, as this server really has them bound (a
                // person may remap or turn off `@orange-sidebar-key` and `@orange-zoom-key`).
                m.footer = bound_footer(self.snapshot.as_ref(), self.pane.focused);
                frames(m, self.size, color)
            }
            None => {
                let plain = render::render_gone(&self.id, w, Some(h));
                (plain.clone(), plain)
            }
        }
    }
}

/// Hand the allocator's free pages back to the system. glibc keeps a freed peak resident:
/// a sidebar that re-reads the monitor's snapshot (tens of KB with many sessions) every
/// pass would keep its high-water mark for good.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() {
    // SAFETY: malloc_trim takes no pointer and only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}

/// Follow `task` (a lane's, with `lane`), redrawing the terminal until the user quits or
/// the terminal goes; `width`/`height` fix the frame's size (default: the terminal's).
pub fn follow(
    home: &Home,
    task: Task,
    lane: bool,
    width: Option<usize>,
    height: Option<usize>,
) -> Result<Out> {
    let term = Term::enter();
    let keys = Keys::start();
    let color = color_enabled();
    screen::report_focus();
    let mut f = Follow::new(home, task, lane, (width, height));
    let mut screen = Screen::default();
    loop {
        f.look();
        let (plain, shown) = f.frame(color);
        if screen.show(&plain, shown, f.size).is_err() {
            // The terminal is gone (the pane was closed): nothing left to draw on.
            return Ok(ended(&f.id, "terminal closed"));
        }
        if std::mem::take(&mut f.churned) {
            release_free_memory();
        }
        match keys.wait() {
            Wake::Quit => {
                drop(term);
                f.pane.close();
                return Ok(ended(&f.id, "quit"));
            }
            Wake::Interrupt => Screen::interrupted(term),
            Wake::Refresh => {
                f.poked();
                f.pane.key(Wake::Refresh);
                keys.drain();
            }
            Wake::Send => {
                f.pane.key(Wake::Send);
                f.prompt_send();
            }
            Wake::Review => {
                f.pane.key(Wake::Review);
                f.review();
            }
            Wake::Tick => {}
            // The focus keys (Tab, Enter, Esc) and the focus's reports.
            w @ (Wake::Agent | Wake::Back | Wake::Focus(_)) => f.pane.key(w),
        }
    }
}

// ---------------------------------------------------------------------------------------
// A remote task
// ---------------------------------------------------------------------------------------

/// The sidebar of a remote task: its host's snapshot file (`run/hosts/<host>.json`, which
/// the monitor here fetches), re-read when it changes; one `stat` a tick, no ssh.
pub fn remote(
    home: &Home,
    id: &str,
    host_name: &str,
    once: bool,
    width: Option<usize>,
    height: Option<usize>,
) -> Result<Out> {
    let seen_path = home
        .run_dir()
        .join("hosts")
        .join(format!("{host_name}.json"));
    let model = |now: chrono::DateTime<chrono::Utc>| {
        let seen = host::read_seen(home, host_name).unwrap_or(host::Seen {
            name: host_name.to_string(),
            ..host::Seen::default()
        });
        let view = seen.view(host::now_ms());
        let item = seen.summary.items.iter().find(|i| i.id == id);
        model::remote_model(id, item, &view, now.timestamp())
    };
    if once {
        let width = width
            .or_else(|| env_usize("COLUMNS"))
            .unwrap_or(DEFAULT_WIDTH);
        let m = model(chrono::Utc::now());
        let text = render::render(&m, width, height);
        return Ok(Out::new(&m, text));
    }
    // The keys this server really has bound, from the last local snapshot (a file).
    let snap = snapshot::read(home, &pane_tmux());
    let mut pane = Pane::find(pane_tmux(), own_pane());
    let term = Term::enter();
    let keys = Keys::start();
    let color = color_enabled();
    screen::report_focus();
    let mut size = (
        width.unwrap_or(DEFAULT_WIDTH),
        height.unwrap_or(DEFAULT_HEIGHT),
    );
    let mut stamp_was = None;
    let mut m = model(chrono::Utc::now());
    let mut screen = Screen::default();
    let mut ticks = 0u32;
    loop {
        let st = stamp(&seen_path);
        // Re-read when the file changes, and once a second for the age.
        if st != stamp_was || ticks.is_multiple_of(4) {
            stamp_was = st;
            m = model(chrono::Utc::now());
        }
        m.footer = bound_footer(snap.as_ref(), pane.focused);
        ticks = ticks.wrapping_add(1);
        if let Some((w, h)) = terminal::window_size() {
            size = (width.unwrap_or(w), height.unwrap_or(h));
        }
        let (plain, shown) = frames(&m, size, color);
        if screen.show(&plain, shown, size).is_err() {
            return Ok(ended(id, "terminal closed"));
        }
        match keys.wait() {
            Wake::Quit => {
                drop(term);
                pane.close();
                return Ok(ended(id, "quit"));
            }
            Wake::Interrupt => Screen::interrupted(term),
            Wake::Tick => {}
            // (A remote task's agent is sent text with `orange task send`.)
            Wake::Send | Wake::Review => {}
            // Any other key, the focus keys (Tab, Enter, Esc) and the focus's reports.
            w @ (Wake::Refresh | Wake::Agent | Wake::Back | Wake::Focus(_)) => pane.key(w),
        }
    }
}
