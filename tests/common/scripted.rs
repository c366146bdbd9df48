//! What every scripted model stand-in shares — the Anthropic Messages one
//! (tests/common/standin.rs, for claude) and the Chat Completions one
//! (tests/common/chat_standin.rs, for pi and opencode): a [`Server`] on 127.0.0.1:0 that
//! serves each connection on its own thread (tests/common/http_standin.rs), answers each
//! turn request with the next entry of a script (once the script is used up, with the
//! protocol's `done` reply), records every request, lets a test wait for requests and for a
//! reply's last bytes, and stops when dropped or after [`IDLE_LIMIT`] without a request.
//!
//! A [`Protocol`] says the rest: which requests are turns, how a script entry unrolls, and
//! how a request is answered on the wire.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io;
use std::marker::PhantomData;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::http_standin::{self as http, Request, POLL};

/// A stand-in stops by itself after this long without a request.
pub const IDLE_LIMIT: Duration = Duration::from_secs(600);

/// One model API's wire format, as a stand-in speaks it.
pub trait Protocol: Sized + Send + Sync + 'static {
    /// One scripted answer to a turn.
    type Reply: Clone + Send + 'static;
    /// Its threads' names start with this.
    const NAME: &'static str;
    /// What [`Server::base_url`] adds to `http://127.0.0.1:PORT`.
    const BASE_PATH: &'static str;
    /// A script entry as the plain replies it stands for (a `Repeat` unrolled).
    fn flatten(r: Self::Reply) -> Vec<Self::Reply>;
    /// Whether a request is a turn, which takes the script's next reply.
    fn is_turn(method: &str, path: &str, body: &Value) -> bool;
    /// The answer to a turn once the script is used up.
    fn done() -> Self::Reply;
    /// Answer `req` (its JSON `body`): `reply` is the turn's (`None` for a side request);
    /// `mark` is called right before a turn's reply's last bytes are written, so whoever
    /// holds the complete reply finds [`Server::sent_at`] set.
    fn respond(
        s: &mut TcpStream,
        core: &Core<Self>,
        req: &Request,
        body: &Value,
        reply: Option<Self::Reply>,
        mark: &dyn Fn(),
    ) -> io::Result<()>;
}

/// One request a stand-in received.
#[derive(Debug)]
pub struct Recorded<P> {
    pub method: String,
    /// Path including any query string, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Null` if empty; a `String` holding the raw text if not JSON).
    pub body: Value,
    /// When the request (headers and body) had been read.
    pub at: Instant,
    /// A turn request (answered from the script, or the `done` reply once it is used up).
    pub scripted: bool,
    /// Index of the script entry that answered it (`None` for side requests and after the
    /// script ran out).
    pub reply_index: Option<usize>,
    protocol: PhantomData<fn() -> P>,
}

impl<P> Clone for Recorded<P> {
    fn clone(&self) -> Self {
        Recorded {
            method: self.method.clone(),
            path: self.path.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            at: self.at,
            scripted: self.scripted,
            reply_index: self.reply_index,
            protocol: PhantomData,
        }
    }
}

impl<P> Recorded<P> {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        header_in(&self.headers, name)
    }
}

/// The value of header `name` (any case) among `headers`.
pub fn header_in<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The path of a request without its query string.
pub fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

struct State<P: Protocol> {
    script: VecDeque<P::Reply>,
    /// Number of script entries handed out so far (= index of the next one).
    next: usize,
    requests: Vec<Recorded<P>>,
    /// For each handed-out script entry, when its reply was completely sent.
    sent: Vec<Option<Instant>>,
    last_activity: Instant,
}

/// A stand-in's state, shared by its threads.
pub struct Core<P: Protocol> {
    state: Mutex<State<P>>,
    changed: Condvar,
    stop: AtomicBool,
    addr: SocketAddr,
    ids: AtomicU64,
}

impl<P: Protocol> Core<P> {
    fn lock(&self) -> MutexGuard<'_, State<P>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Dropped, stopped, or idle too long: a reply that waits gives up.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
    /// A number of its own for each answer (1, 2, …), for the ids in it.
    pub fn id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::SeqCst) + 1
    }
    fn wake_accept(&self) {
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
    }
    /// Record `req` and, for a turn, take the script's next entry, in one critical
    /// section: the reply and its index in the script (`None` once it is used up).
    fn record(&self, req: &Request, body: &Value, turn: bool) -> (Option<P::Reply>, Option<usize>) {
        let mut st = self.lock();
        st.last_activity = Instant::now();
        let (reply, index) = match turn.then(|| st.script.pop_front()) {
            None => (None, None),
            Some(Some(r)) => {
                let k = st.next;
                st.next += 1;
                st.sent.push(None);
                (Some(r), Some(k))
            }
            Some(None) => (Some(P::done()), None),
        };
        st.requests.push(Recorded {
            method: req.method.clone(),
            path: req.path.clone(),
            headers: req.headers.clone(),
            body: body.clone(),
            at: Instant::now(),
            scripted: turn,
            reply_index: index,
            protocol: PhantomData,
        });
        self.changed.notify_all();
        (reply, index)
    }
    /// Script entry `index`'s reply is (about to be) sent whole.
    fn mark_sent(&self, index: Option<usize>) {
        let Some(k) = index else { return };
        let mut st = self.lock();
        if let Some(slot) = st.sent.get_mut(k) {
            *slot = Some(Instant::now());
        }
        self.changed.notify_all();
    }
}

impl<P: Protocol> http::Handler for Core<P> {
    fn stopped(&self) -> bool {
        Core::stopped(self)
    }
    fn handle(&self, s: &mut TcpStream, req: Request) -> io::Result<()> {
        let body = http::json_body(&req);
        let turn = P::is_turn(&req.method, &req.path, &body);
        let (reply, index) = self.record(&req, &body, turn);
        P::respond(s, self, &req, &body, reply, &|| self.mark_sent(index))
    }
}

/// A running stand-in. Dropping it stops the server (its port is closed when `drop`
/// returns); connections still open are closed within ~100 ms.
pub struct Server<P: Protocol> {
    core: Arc<Core<P>>,
    accept: Option<JoinHandle<()>>,
}

impl<P: Protocol> Server<P> {
    /// Serve on 127.0.0.1:0, answering turns from `script`.
    pub fn start(script: Vec<P::Reply>) -> Server<P> {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local_addr");
        let core = Arc::new(Core {
            state: Mutex::new(State {
                script: script.into_iter().flat_map(P::flatten).collect(),
                next: 0,
                requests: Vec::new(),
                sent: Vec::new(),
                last_activity: Instant::now(),
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            addr,
            ids: AtomicU64::new(0),
        });
        let acc = core.clone();
        let conn = format!("{}-conn", P::NAME);
        let accept = thread::Builder::new()
            .name(format!("{}-accept", P::NAME))
            .spawn(move || http::accept_loop(listener, acc, &conn))
            .expect("spawn accept thread");
        let wd = core.clone();
        thread::Builder::new()
            .name(format!("{}-idle", P::NAME))
            .spawn(move || loop {
                thread::sleep(POLL);
                if wd.stopped() {
                    return;
                }
                if wd.lock().last_activity.elapsed() > IDLE_LIMIT {
                    wd.stop.store(true, Ordering::SeqCst);
                    wd.changed.notify_all();
                    wd.wake_accept();
                    return;
                }
            })
            .expect("spawn idle thread");
        Server {
            core,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT` and the protocol's base path: what a client is pointed at.
    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.core.addr, P::BASE_PATH)
    }
    pub fn port(&self) -> u16 {
        self.core.addr.port()
    }
    /// Append replies to the script (a `Repeat` is unrolled).
    pub fn push(&self, r: P::Reply) {
        self.core.lock().script.extend(P::flatten(r));
    }
    /// Script entries not yet handed out.
    pub fn remaining(&self) -> usize {
        self.core.lock().script.len()
    }
    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded<P>> {
        self.core.lock().requests.clone()
    }
    /// Only the turn requests.
    pub fn turns(&self) -> Vec<Recorded<P>> {
        self.core
            .lock()
            .requests
            .iter()
            .filter(|r| r.scripted)
            .cloned()
            .collect()
    }
    pub fn count(&self, pred: impl Fn(&Recorded<P>) -> bool) -> usize {
        self.core.lock().requests.iter().filter(|r| pred(r)).count()
    }
    /// When the reply of script entry `k` (0-based) was completed: taken right before its
    /// last bytes are written (a streamed reply's end, a `Status`'s error body, a JSON
    /// reply), so whoever holds the complete reply finds it set. `None` while not yet
    /// sent, for `Hang`, and for `k` not handed out yet.
    pub fn sent_at(&self, k: usize) -> Option<Instant> {
        self.core.lock().sent.get(k).copied().flatten()
    }
    /// Wait until at least `n` turn (scripted) requests were received; false on timeout.
    pub fn wait_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |reqs| {
            reqs.iter().filter(|r| r.scripted).count() >= n
        })
    }
    /// Wait until the reply of script entry `k` was sent; returns when.
    pub fn wait_sent(&self, k: usize, timeout: Duration) -> Option<Instant> {
        self.wait_for(timeout, |st| st.sent.get(k).copied().flatten())
    }
    /// Wait until `pred(all requests)` holds; false on timeout.
    pub fn wait_until(&self, timeout: Duration, pred: impl Fn(&[Recorded<P>]) -> bool) -> bool {
        self.wait_for(timeout, |st| pred(&st.requests).then_some(()))
            .is_some()
    }
    /// Wait (on the state's condition variable) until `f(state)` gives a value.
    fn wait_for<T>(&self, timeout: Duration, f: impl Fn(&State<P>) -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut st = self.core.lock();
        loop {
            if let Some(v) = f(&st) {
                return Some(v);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            st = self
                .core
                .changed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
    /// Stop now (the same as dropping it).
    pub fn stop(&mut self) {
        self.core.stop.store(true, Ordering::SeqCst);
        self.core.changed.notify_all();
        if let Some(h) = self.accept.take() {
            self.core.wake_accept();
            let _ = h.join();
        }
    }
    /// True once stopped (dropped, `stop`, or idle limit).
    pub fn is_stopped(&self) -> bool {
        self.core.stopped()
    }
}

impl<P: Protocol> Drop for Server<P> {
    fn drop(&mut self) {
        self.stop();
    }
}
