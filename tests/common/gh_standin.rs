//! A stand-in GitHub API for the real `gh` (2.23.0): HTTPS on 127.0.0.1 with a CA of its
//! own made per run (rcgen), served with rustls. It answers the GraphQL operations and
//! REST paths that `gh pr create|view|list|merge` and `gh api …/pulls/N/comments` use,
//! keeps the pull requests it was asked to make (with checks, review decision and review
//! comments a test sets) and records every request, so that a test asserts on what gh
//! was made to do.
//!
//! How gh is pointed at it ([`GhStandin::env`], [`GhStandin::add_remote`]): the host is
//! `github.orange.test` (`.test` never resolves), reached through `HTTPS_PROXY` =
//! the stand-in itself, which answers gh's `CONNECT github.orange.test:443` and then speaks
//! TLS with a certificate its CA signed for that name (`SSL_CERT_FILE`: Go's TLS reads it
//! on Linux). `GH_HOST` names it (gh 2.23: an enterprise host, its API at
//! `https://HOST/api/graphql` and `https://HOST/api/v3/`), `GH_ENTERPRISE_TOKEN` logs in
//! without `gh auth login`, `GH_CONFIG_DIR` is a temp dir (nothing reads or writes
//! ~/.config/gh). gh finds the repository from a git remote, as it does on a person's
//! machine: the test repository gets a second remote, `github`, at
//! `https://github.orange.test/acme/widget.git`; `origin` stays the local bare repository
//! that receives orange's pushes (gh only reads remote URLs; orange only pushes to
//! origin). Why not `GH_HOST=127.0.0.1:PORT`: gh 2.23 keeps a port in GH_HOST but drops
//! it from a remote's URL, so no remote matches ("none of the git remotes configured for
//! this repository correspond to the GH_HOST environment variable"), and `gh pr create`
//! ignores GH_REPO for that check (only `--repo` skips it).
#![allow(dead_code)]

use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{json, Value};

use super::http_standin::{json_body, serve_stream, write_json, Request};

/// One CI check on a pull request's last commit.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: String,
    /// QUEUED, IN_PROGRESS or COMPLETED.
    pub status: String,
    /// SUCCESS, FAILURE, … (empty while not completed).
    pub conclusion: String,
}

impl Check {
    pub fn passed(name: &str) -> Check {
        Check::new(name, "COMPLETED", "SUCCESS")
    }
    pub fn failed(name: &str) -> Check {
        Check::new(name, "COMPLETED", "FAILURE")
    }
    pub fn running(name: &str) -> Check {
        Check::new(name, "IN_PROGRESS", "")
    }
    fn new(name: &str, status: &str, conclusion: &str) -> Check {
        Check {
            name: name.into(),
            status: status.into(),
            conclusion: conclusion.into(),
        }
    }
}

/// A review comment on a line of a pull request's diff (REST shape).
#[derive(Debug, Clone)]
pub struct ReviewComment {
    pub path: String,
    pub line: u64,
    /// RIGHT (the new side) or LEFT.
    pub side: String,
    pub body: String,
    pub user: String,
}

#[derive(Debug, Clone)]
pub struct Pr {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub head: String,
    pub base: String,
    pub draft: bool,
    /// OPEN, CLOSED or MERGED.
    pub state: String,
    /// "", APPROVED, CHANGES_REQUESTED or REVIEW_REQUIRED.
    pub review_decision: String,
    pub checks: Vec<Check>,
    /// MERGEABLE, CONFLICTING or UNKNOWN.
    pub mergeable: String,
    pub comments: Vec<ReviewComment>,
    /// How it was merged (MERGE, SQUASH, REBASE), once it is.
    pub merge_method: Option<String>,
}

/// One request gh made.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// The GraphQL operation's name (`PullRequestCreate`), for POST /api/graphql.
    pub operation: Option<String>,
    /// The JSON body (a GraphQL request's `variables` are in it).
    pub body: Value,
    pub authorization: Option<String>,
}

pub struct World {
    pub owner: String,
    pub repo: String,
    pub default_branch: String,
    pub prs: Vec<Pr>,
    pub requests: Vec<Recorded>,
}

struct Shared {
    stop: AtomicBool,
    world: Mutex<World>,
    host: String,
    connects: Arc<Mutex<Vec<String>>>,
}

/// The only credentials the stand-in takes (`GH_ENTERPRISE_TOKEN=standin-token`).
const TOKEN_HEADER: &str = "token standin-token";

/// The stand-in's host name, as gh sees it (reached through the proxy).
pub const HOST: &str = "github.orange.test";

pub struct GhStandin {
    /// `127.0.0.1:PORT`: where it listens (the proxy gh goes through).
    pub addr: String,
    /// The `CONNECT` targets gh asked the proxy for (`github.orange.test:443`).
    pub connects: Arc<Mutex<Vec<String>>>,
    pub ca_file: PathBuf,
    pub config_dir: PathBuf,
    shared: Arc<Shared>,
    _dir: tempfile::TempDir,
}

impl GhStandin {
    /// Serve the repository `acme/widget` (default branch `main`), with no pull request.
    pub fn start() -> GhStandin {
        let dir = tempfile::tempdir().unwrap();
        let (ca_pem, cert_der, key_der) = certificates();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca_pem).unwrap();
        let config_dir = dir.path().join("gh-config");
        std::fs::create_dir_all(&config_dir).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert_der.into()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key_der.into()),
            )
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        let host = HOST.to_string();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            world: Mutex::new(World {
                owner: "acme".into(),
                repo: "widget".into(),
                default_branch: "main".into(),
                prs: vec![],
                requests: vec![],
            }),
            host,
            connects: Arc::new(Mutex::new(vec![])),
        });
        let sh = shared.clone();
        thread::Builder::new()
            .name("gh-standin".into())
            .spawn(move || accept(listener, config, sh))
            .unwrap();
        GhStandin {
            addr,
            connects: shared.connects.clone(),
            ca_file,
            config_dir,
            shared,
            _dir: dir,
        }
    }

    /// The environment that points the real gh at this stand-in, logged in.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GH_HOST".into(), HOST.into()),
            ("GH_ENTERPRISE_TOKEN".into(), "standin-token".into()),
            ("HTTPS_PROXY".into(), format!("http://{}", self.addr)),
            ("https_proxy".into(), format!("http://{}", self.addr)),
            ("NO_PROXY".into(), String::new()),
            ("no_proxy".into(), String::new()),
            ("SSL_CERT_FILE".into(), self.ca_file.display().to_string()),
            (
                "GH_CONFIG_DIR".into(),
                self.config_dir.display().to_string(),
            ),
            ("GH_NO_UPDATE_NOTIFIER".into(), "1".into()),
            ("GH_PROMPT_DISABLED".into(), "1".into()),
        ]
    }

    /// Give `repo` the remote `github` at the stand-in's repository (gh resolves the
    /// repository from it; orange pushes to `origin`, left as it is).
    pub fn add_remote(&self, repo: &std::path::Path) {
        let url = self.with(|w| format!("https://{HOST}/{}/{}.git", w.owner, w.repo));
        super::git(repo, &["remote", "add", "github", &url]);
    }

    /// The same, logged out: no token for the host.
    pub fn env_logged_out(&self) -> Vec<(String, String)> {
        self.env()
            .into_iter()
            .filter(|(k, _)| k != "GH_ENTERPRISE_TOKEN")
            .collect()
    }

    /// Look at or change what the stand-in holds.
    pub fn with<T>(&self, f: impl FnOnce(&mut World) -> T) -> T {
        f(&mut self.shared.world.lock().unwrap())
    }

    /// The pull request with this number (panics if none).
    pub fn pr(&self, number: u64) -> Pr {
        self.with(|w| w.prs.iter().find(|p| p.number == number).cloned())
            .unwrap_or_else(|| panic!("the stand-in has no PR #{number}"))
    }

    /// Change pull request `number` (panics if none).
    pub fn edit_pr(&self, number: u64, f: impl FnOnce(&mut Pr)) {
        self.with(|w| {
            let p = w.prs.iter_mut().find(|p| p.number == number).unwrap();
            f(p)
        })
    }

    /// Add an open pull request for `head` (made elsewhere: not through gh).
    pub fn add_pr(&self, head: &str, title: &str) -> u64 {
        self.with(|w| {
            let number = w.prs.len() as u64 + 1;
            w.prs.push(new_pr(number, title, "", head, "main", false));
            number
        })
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.with(|w| w.requests.clone())
    }

    /// The GraphQL operations (and `METHOD path` of REST calls) received, in order.
    pub fn calls(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| {
                r.operation
                    .clone()
                    .unwrap_or_else(|| format!("{} {}", r.method, r.path))
            })
            .collect()
    }

    /// How many requests were for this operation (or `METHOD path`).
    pub fn count(&self, call: &str) -> usize {
        self.calls().iter().filter(|c| *c == call).count()
    }
}

impl Drop for GhStandin {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(&self.addr);
    }
}

/// A CA, and a certificate it signed for [`HOST`] and 127.0.0.1: (CA PEM, cert DER, key
/// PKCS#8 DER).
fn certificates() -> (String, Vec<u8>, Vec<u8>) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "orange test stand-in CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec![HOST.to_string(), "127.0.0.1".to_string()]).unwrap();
    leaf.distinguished_name.push(DnType::CommonName, HOST);
    let leaf = leaf.signed_by(&key, &ca, &ca_key).unwrap();
    (ca.pem(), leaf.der().to_vec(), key.serialize_der())
}

fn accept(listener: TcpListener, config: Arc<rustls::ServerConfig>, sh: Arc<Shared>) {
    for conn in listener.incoming() {
        if sh.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(mut tcp) = conn else { continue };
        let (config, sh) = (config.clone(), sh.clone());
        let _ = thread::Builder::new()
            .name("gh-standin-conn".into())
            .spawn(move || {
                match proxy_connect(&mut tcp) {
                    Ok(Some(target)) => sh.connects.lock().unwrap().push(target),
                    Ok(None) => {}
                    Err(_) => return,
                }
                let Ok(tls) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let stream = rustls::StreamOwned::new(tls, tcp);
                let stopped = || sh.stop.load(Ordering::SeqCst);
                let _ = serve_stream(stream, &stopped, &mut |s, req| answer(&sh, s, req));
            });
    }
}

/// A proxy's `CONNECT host:port` at the start of the connection: answered (200), its
/// target returned; TLS follows on the same connection. None when it starts with TLS.
fn proxy_connect(tcp: &mut TcpStream) -> io::Result<Option<String>> {
    use std::io::Read;
    let mut first = [0u8; 1];
    if tcp.peek(&mut first)? == 0 || first[0] != b'C' {
        return Ok(None);
    }
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if tcp.read(&mut b)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
    tcp.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    Ok(Some(target))
}

/// The name of the GraphQL operation in `query` (`query RepositoryInfo(…` → RepositoryInfo).
fn operation_name(query: &str) -> Option<String> {
    let at = ["query ", "mutation "]
        .iter()
        .filter_map(|k| query.find(k).map(|i| i + k.len()))
        .min()?;
    let name: String = query[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

fn answer(sh: &Shared, s: &mut impl Write, req: Request) -> io::Result<()> {
    let body = json_body(&req);
    let path = req.path.split('?').next().unwrap_or("").to_string();
    let operation = (path == "/api/graphql")
        .then(|| body["query"].as_str().and_then(operation_name))
        .flatten();
    let authorization = req
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    let mut w = sh.world.lock().unwrap();
    w.requests.push(Recorded {
        method: req.method.clone(),
        path: path.clone(),
        operation: operation.clone(),
        body: body.clone(),
        authorization: authorization.clone(),
    });
    // gh 2.23 with GH_HOST set and no token still asks (GH_HOST counts as a known host),
    // with an empty `token `: GitHub answers 401, and so does the stand-in.
    if authorization.as_deref() != Some(TOKEN_HEADER) {
        let v = json!({"message": "Bad credentials"});
        return write_json(s, 401, &v, false, "x-github-request-id");
    }
    let (status, v) = match (req.method.as_str(), path.as_str()) {
        ("POST", "/api/graphql") => (
            200,
            graphql(&mut w, &sh.host, operation.as_deref(), &body["variables"]),
        ),
        ("GET", p) => rest_get(&w, p),
        _ => (404, json!({"message": "Not Found (stand-in)"})),
    };
    drop(w);
    write_json(s, status, &v, false, "x-github-request-id")
}

fn new_pr(number: u64, title: &str, body: &str, head: &str, base: &str, draft: bool) -> Pr {
    Pr {
        number,
        title: title.into(),
        body: body.into(),
        head: head.into(),
        base: base.into(),
        draft,
        state: "OPEN".into(),
        review_decision: String::new(),
        checks: vec![],
        mergeable: "MERGEABLE".into(),
        comments: vec![],
        merge_method: None,
    }
}

/// A pull request as GraphQL returns it, with every field gh may ask for (gh ignores
/// those it did not ask for).
fn pr_node(w: &World, host: &str, p: &Pr) -> Value {
    let contexts: Vec<Value> = p
        .checks
        .iter()
        .map(|c| {
            json!({
                "__typename": "CheckRun",
                "name": c.name,
                "status": c.status,
                "conclusion": c.conclusion,
                "checkSuite": {"workflowRun": {"workflow": {"name": "ci"}}},
                "startedAt": "2026-01-01T00:00:00Z",
                "completedAt": "2026-01-01T00:01:00Z",
                "detailsUrl": format!("https://{host}/{}/{}/actions/runs/1", w.owner, w.repo),
            })
        })
        .collect();
    json!({
        "id": format!("PR_{}", p.number),
        "number": p.number,
        "title": p.title,
        "body": p.body,
        "url": format!("https://{host}/{}/{}/pull/{}", w.owner, w.repo, p.number),
        "state": p.state,
        "closed": p.state != "OPEN",
        "isDraft": p.draft,
        "headRefName": p.head,
        "baseRefName": p.base,
        "headRefOid": "0000000000000000000000000000000000000000",
        "isCrossRepository": false,
        "headRepositoryOwner": {"id": "U_1", "login": w.owner},
        "headRepository": {"id": "R_1", "name": w.repo},
        "author": {"login": "orange-test"},
        "reviewDecision": p.review_decision,
        "mergeable": p.mergeable,
        "mergeStateStatus": if p.mergeable == "CONFLICTING" { "DIRTY" } else { "CLEAN" },
        "isInMergeQueue": false,
        "isMergeQueueEnabled": false,
        "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-01T00:00:00Z",
        "commits": {"totalCount": 1, "nodes": [{"commit": {"oid": "0000000000000000000000000000000000000000"}}]},
        "statusCheckRollup": {"nodes": [{"commit": {"statusCheckRollup": {"contexts": {
            "nodes": contexts,
            "pageInfo": {"hasNextPage": false, "endCursor": ""}
        }}}}]},
    })
}

fn graphql(w: &mut World, host: &str, op: Option<&str>, vars: &Value) -> Value {
    let repo_info = json!({
        "id": "R_1",
        "name": w.repo,
        "owner": {"login": w.owner},
        "defaultBranchRef": {"name": w.default_branch},
        "viewerPermission": "ADMIN",
        "hasIssuesEnabled": true,
        "hasWikiEnabled": false,
        "description": "",
        "mergeCommitAllowed": true,
        "rebaseMergeAllowed": true,
        "squashMergeAllowed": true,
    });
    let states: Vec<String> = vars["states"]
        .as_array()
        .or_else(|| vars["state"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let matches = |p: &Pr, head: Option<&str>| {
        (states.is_empty() || states.contains(&p.state)) && head.is_none_or(|h| p.head == h)
    };
    match op {
        Some("RepositoryInfo") => json!({"data": {"repository": repo_info}}),
        Some("PullRequest_fields") => json!({"data": {"PullRequest": {"fields": [
            {"name": "number"}, {"name": "reviewDecision"}, {"name": "statusCheckRollup"}
        ]}}}),
        Some("PullRequestForBranch") | Some("PullRequestList") => {
            let head = vars["headRefName"]
                .as_str()
                .or_else(|| vars["headBranch"].as_str());
            let mut nodes: Vec<Value> = w
                .prs
                .iter()
                .rev()
                .filter(|p| matches(p, head))
                .map(|p| pr_node(w, host, p))
                .collect();
            if let Some(limit) = vars["limit"].as_u64() {
                nodes.truncate(limit as usize);
            }
            json!({"data": {"repository": {
                "pullRequests": {
                    "totalCount": nodes.len(),
                    "nodes": nodes,
                    "pageInfo": {"hasNextPage": false, "endCursor": ""}
                },
                "defaultBranchRef": {"name": w.default_branch}
            }}})
        }
        Some("PullRequestByNumber") => {
            let n = vars["pr_number"].as_u64().unwrap_or(0);
            match w.prs.iter().find(|p| p.number == n) {
                Some(p) => json!({"data": {"repository": {"pullRequest": pr_node(w, host, p)}}}),
                None => not_found(&format!(
                    "Could not resolve to a PullRequest with the number of {n}."
                )),
            }
        }
        Some("PullRequestCreate") => {
            let i = &vars["input"];
            let number = w.prs.len() as u64 + 1;
            let s = |k: &str| i[k].as_str().unwrap_or("").to_string();
            let base = if s("baseRefName").is_empty() {
                w.default_branch.clone()
            } else {
                s("baseRefName")
            };
            let p = new_pr(
                number,
                &s("title"),
                &s("body"),
                &s("headRefName"),
                &base,
                i["draft"].as_bool().unwrap_or(false),
            );
            let node = pr_node(w, host, &p);
            w.prs.push(p);
            json!({"data": {"createPullRequest": {"pullRequest": node}}})
        }
        Some("PullRequestMerge") => {
            let i = &vars["input"];
            let id = i["pullRequestId"].as_str().unwrap_or("");
            match w.prs.iter_mut().find(|p| format!("PR_{}", p.number) == id) {
                Some(p) => {
                    p.state = "MERGED".into();
                    p.merge_method = i["mergeMethod"].as_str().map(String::from);
                    json!({"data": {"mergePullRequest": {"clientMutationId": ""}}})
                }
                None => not_found("Could not resolve to a node"),
            }
        }
        other => json!({"errors": [{
            "type": "NOT_IMPLEMENTED",
            "message": format!("the stand-in does not answer {other:?}")
        }]}),
    }
}

fn not_found(message: &str) -> Value {
    json!({"data": null, "errors": [{"type": "NOT_FOUND", "message": message}]})
}

/// REST: `GET /api/v3/repos/OWNER/REPO/pulls/N/comments` (the review comments).
fn rest_get(w: &World, path: &str) -> (u16, Value) {
    let prefix = format!("/api/v3/repos/{}/{}/pulls/", w.owner, w.repo);
    if let Some(rest) = path.strip_prefix(&prefix) {
        if let Some(n) = rest.strip_suffix("/comments") {
            if let Some(p) = w.prs.iter().find(|p| n.parse() == Ok(p.number)) {
                let v: Vec<Value> = p
                    .comments
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        json!({
                            "id": i + 1,
                            "path": c.path,
                            "line": c.line,
                            "original_line": c.line,
                            "side": c.side,
                            "body": c.body,
                            "user": {"login": c.user},
                            "diff_hunk": "",
                        })
                    })
                    .collect();
                return (200, Value::Array(v));
            }
        }
    }
    (404, json!({"message": "Not Found (stand-in)"}))
}

/// A `PATH` without gh: orange's directory and `dir/bin-without-gh`, which holds links to
/// the programs orange runs besides it (git, tmux, a shell) found on `path`.
pub fn path_without_gh(dir: &std::path::Path, path: &str) -> String {
    let bin = dir.join("bin-without-gh");
    std::fs::create_dir_all(&bin).unwrap();
    for p in ["git", "tmux", "sh", "bash"] {
        if let Some(real) = super::find_program(path, p) {
            let _ = std::os::unix::fs::symlink(real, bin.join(p));
        }
    }
    format!(
        "{}:{}",
        super::bin().parent().unwrap().display(),
        bin.display()
    )
}
