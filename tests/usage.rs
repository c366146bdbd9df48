//! Token use per task: the transcript reader on its own (files in a temp dir),
//! then through orange with a real tmux server, a `claude` task (tests/fixtures/bin's fake
//! claude: orange gives it a conversation id) whose transcript the test writes where Claude
//! Code would, and `orange monitor --once` passes.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::TaskEnv;
use orange::orchestration::usage::{short_count, FileState, Tokens};
use serde_json::{json, Value};

/// One assistant line as Claude Code 2.1 writes it (one per content block; the usage is
/// the whole message's).
fn assistant(id: &str, input: u64, output: u64, cache_creation: u64, cache_read: u64) -> String {
    json!({
        "parentUuid": null, "isSidechain": false, "type": "assistant",
        "message": {"id": id, "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "some text with \"usage\" in it"}],
            "stop_reason": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_creation,
                "cache_read_input_tokens": cache_read, "output_tokens": output,
                "service_tier": "standard"}},
        "uuid": "u", "timestamp": "2030-01-01T00:00:00.000Z"
    })
    .to_string()
}

fn user(text: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": text}, "timestamp": "2030-01-01T00:00:00.000Z"}).to_string()
}

fn t(input: u64, output: u64, cache_creation: u64, cache_read: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_creation,
        cache_read,
    }
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

// ---------------------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------------------

#[test]
fn a_message_id_repeated_on_several_lines_counts_once_with_its_last_usage() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.jsonl");
    let text = [
        user("go"),
        // One answer of three content blocks: its output grows from line to line.
        assistant("msg_a", 100, 1, 20, 300),
        assistant("msg_a", 100, 4, 20, 300),
        assistant("msg_a", 100, 9, 20, 300),
        user("tool result"),
        assistant("msg_b", 7, 2, 0, 400),
        assistant("msg_b", 7, 3, 0, 400),
    ]
    .map(|l| l + "\n")
    .concat();
    std::fs::write(&p, &text).unwrap();
    let mut s = FileState::default();
    assert!(s.read(&p).unwrap());
    assert_eq!(s.tokens(), t(107, 12, 20, 700));
    assert_eq!(s.offset, text.len() as u64);
    // The same lines appended one at a time, read after each, say the same.
    let p2 = p.with_extension("growing");
    let mut s2 = FileState::default();
    let mut grown = String::new();
    for line in text.split_inclusive('\n') {
        grown.push_str(line);
        std::fs::write(&p2, &grown).unwrap();
        s2.read(&p2).unwrap();
    }
    assert_eq!(s2.tokens(), t(107, 12, 20, 700));
    assert_eq!(s2.offset, text.len() as u64);
    // Many answers, each line written twice: all of them count (older ones are
    // committed, not forgotten).
    let p3 = p.with_extension("many");
    let mut many = FileState::default();
    let mut all = String::new();
    for i in 0..50 {
        let line = assistant(&format!("msg_{i}"), 1, 2, 3, 4) + "\n";
        all.push_str(&line);
        all.push_str(&line);
        std::fs::write(&p3, &all).unwrap();
        many.read(&p3).unwrap();
    }
    assert_eq!(many.tokens(), t(50, 100, 150, 200));
}

#[test]
fn a_line_still_being_written_is_read_once_it_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.jsonl");
    let first = assistant("msg_a", 10, 1, 0, 0) + "\n";
    let second = assistant("msg_b", 20, 2, 0, 0);
    let (head, tail) = second.split_at(second.len() / 2);
    std::fs::write(&p, format!("{first}{head}")).unwrap();
    let mut s = FileState::default();
    s.read(&p).unwrap();
    assert_eq!(
        s.offset,
        first.len() as u64,
        "the partial line is not consumed"
    );
    assert_eq!(s.tokens(), t(10, 1, 0, 0));
    // Nothing new since: nothing changes.
    assert!(!s.read(&p).unwrap());
    append(&p, &format!("{tail}\n"));
    assert!(s.read(&p).unwrap());
    assert_eq!(s.offset, len(&p));
    assert_eq!(s.tokens(), t(30, 3, 0, 0));
}

#[test]
fn a_truncated_or_replaced_transcript_is_read_again_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.jsonl");
    let two = [
        assistant("msg_a", 10, 1, 0, 0),
        assistant("msg_b", 20, 2, 0, 0),
    ]
    .map(|l| l + "\n")
    .concat();
    std::fs::write(&p, &two).unwrap();
    let mut s = FileState::default();
    s.read(&p).unwrap();
    assert_eq!(s.tokens(), t(30, 3, 0, 0));
    // Truncated (shorter than what was read): read again, only what it holds now counts.
    std::fs::write(&p, assistant("msg_c", 5, 5, 5, 5) + "\n").unwrap();
    assert!(s.read(&p).unwrap());
    assert_eq!(s.tokens(), t(5, 5, 5, 5));
    // Replaced by another file at least as long (a new inode): read again too.
    let other = dir.path().join("new.jsonl");
    let longer = [
        assistant("msg_d", 1, 1, 1, 1),
        assistant("msg_e", 2, 2, 2, 2),
    ]
    .map(|l| l + "\n")
    .concat();
    std::fs::write(&other, &longer).unwrap();
    std::fs::rename(&other, &p).unwrap();
    assert!(s.read(&p).unwrap());
    assert_eq!(s.tokens(), t(3, 3, 3, 3));
    assert_eq!(s.offset, longer.len() as u64);
}

#[test]
fn lines_that_do_not_parse_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.jsonl");
    let mut bytes = Vec::new();
    bytes.extend((assistant("msg_a", 10, 1, 2, 3) + "\n").as_bytes());
    bytes.extend(b"{\"type\":\"assistant\",\"message\":{\"usage\": {\"input_tokens\": \n");
    bytes.extend(b"not json at all, but it says \"usage\"\n");
    bytes.extend(b"\xff\xfe\"usage\" invalid utf-8\n");
    bytes.extend(b"{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":\"many\"}}}\n");
    bytes.extend(b"\n");
    bytes.extend((assistant("msg_b", 20, 2, 0, 0) + "\n").as_bytes());
    std::fs::write(&p, &bytes).unwrap();
    let mut s = FileState::default();
    s.read(&p).unwrap();
    assert_eq!(s.tokens(), t(30, 3, 2, 3));
    assert_eq!(s.skipped, 4);
    assert_eq!(s.offset, bytes.len() as u64);
}

#[test]
fn counts_are_short() {
    let cases = [
        (0, "0"),
        (999, "999"),
        (1000, "1k"),
        (1234, "1.2k"),
        (9_949, "9.9k"),
        (9_960, "10k"),
        (35_000, "35k"),
        (999_499, "999k"),
        (999_999, "1M"),
        (1_200_000, "1.2M"),
        (12_345_678, "12M"),
        (3_400_000_000, "3.4G"),
    ];
    for (n, want) in cases {
        assert_eq!(short_count(n), want, "{n}");
    }
}

// ---------------------------------------------------------------------------------------
// Through orange
// ---------------------------------------------------------------------------------------

/// A TaskEnv whose orange commands find Claude Code's files under `<root>/claude-config`.
fn env_with_claude_config() -> (TaskEnv, PathBuf) {
    let mut env = TaskEnv::new();
    let cfg = env.root().join("claude-config");
    env.extra
        .push(("CLAUDE_CONFIG_DIR".into(), cfg.display().to_string()));
    env.add_project(&[]);
    (env, cfg)
}

/// A claude task (the fake claude waits) and where Claude Code would write its transcript.
fn claude_task(env: &TaskEnv, cfg: &Path, branch: &str) -> (String, PathBuf) {
    let v = env.ok(&["task", "create", branch, "do it", "--harness", "claude"]);
    let id = v["id"].as_str().unwrap().to_string();
    let task = env.task(&id);
    let conv = task["agent_session_id"].as_str().unwrap();
    let ws = env.ws_path(task["workspace"].as_str().unwrap());
    let path = orange::orchestration::agent::claude_log_path_in(cfg, &ws, conv);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    (id, path)
}

fn usage_json(env: &TaskEnv, id: &str) -> (Value, PathBuf) {
    let p = env.home.join("tasks/app").join(id).join("usage.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    (v, p)
}

fn tokens_of_list(env: &TaskEnv, id: &str) -> Value {
    let list = env.ok(&["task", "list"]);
    list.as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == id)
        .map(|x| x["tokens"].clone())
        .unwrap_or_else(|| panic!("{id} not listed: {list}"))
}

fn tj(input: u64, output: u64, cache_creation: u64, cache_read: u64) -> Value {
    json!({"input": input, "output": output, "cache_creation": cache_creation, "cache_read": cache_read})
}

#[test]
fn a_monitor_pass_reads_only_what_the_transcript_gained() {
    let (env, cfg) = env_with_claude_config();
    let (id, transcript) = claude_task(&env, &cfg, "tok/inc");
    let first = [
        user("go"),
        assistant("msg_a", 100, 1, 20, 300),
        assistant("msg_a", 100, 9, 20, 300),
    ]
    .map(|l| l + "\n")
    .concat();
    std::fs::write(&transcript, &first).unwrap();
    env.ok(&["monitor", "--once"]);
    // Readers read usage.json only: `task list` shows what the pass counted.
    assert_eq!(tokens_of_list(&env, &id), tj(100, 9, 20, 300));
    let (u, usage_path) = usage_json(&env, &id);
    let files = u["conversations"].as_object().unwrap();
    assert_eq!(files.len(), 1, "{u}");
    let state = files.values().next().unwrap().as_object().unwrap();
    let main = state.values().next().unwrap();
    assert_eq!(main["offset"], len(&transcript), "{u}");

    // A pass with nothing new does not rewrite usage.json (an atomic write is a new inode).
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(&usage_path).unwrap().ino();
    env.ok(&["monitor", "--once"]);
    assert_eq!(std::fs::metadata(&usage_path).unwrap().ino(), inode);

    // The bytes already read are changed in place (same length, same file): a reader that
    // read the whole transcript again would count them; an incremental one never sees them.
    let changed = first.replace("\"input_tokens\":100", "\"input_tokens\":999");
    assert_eq!(changed.len(), first.len());
    assert_ne!(changed, first);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&transcript)
        .unwrap();
    f.write_all(changed.as_bytes()).unwrap();
    drop(f);
    // Then new lines come: the next answer, and half of the one after it.
    let next = assistant("msg_b", 5, 6, 7, 8) + "\n";
    let partial = assistant("msg_c", 1000, 1000, 1000, 1000);
    append(&transcript, &format!("{next}{}", &partial[..40]));
    env.ok(&["monitor", "--once"]);
    assert_eq!(tokens_of_list(&env, &id), tj(105, 15, 27, 308));
    let (u, _) = usage_json(&env, &id);
    let main = u["conversations"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    let main = main.as_object().unwrap().values().next().unwrap();
    assert_eq!(
        main["offset"],
        (first.len() + next.len()) as u64,
        "the partial line is not consumed: {u}"
    );
    // The line completed: counted on the next pass, by `task show` as well (on demand).
    append(&transcript, &format!("{}\n", &partial[40..]));
    let shown = env.task(&id);
    assert_eq!(shown["tokens"], tj(1105, 1015, 1027, 1308), "{shown}");
    let text = env
        .cmd_in(&env.repo, &["task", "show", &id])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("tokens: 3.4k in (1.3k cached) · 1k out"),
        "{text}"
    );
}

#[test]
fn other_harnesses_are_unknown_and_the_status_sums_the_known_ones() {
    let (env, cfg) = env_with_claude_config();
    let (claude, transcript) = claude_task(&env, &cfg, "tok/claude");
    let other = env.ok(&["task", "create", "tok/other", "x", "--harness", "fake-wait"]);
    let other = other["id"].as_str().unwrap().to_string();
    std::fs::write(
        &transcript,
        [
            assistant("msg_a", 1, 2, 3, 4),
            assistant("msg_b", 10, 20, 30, 40),
        ]
        .map(|l| l + "\n")
        .concat(),
    )
    .unwrap();
    env.ok(&["monitor", "--once"]);
    let shown = env.task(&other);
    assert!(shown["tokens"].is_null(), "{shown}");
    assert!(tokens_of_list(&env, &other).is_null());
    let text = env
        .cmd_in(&env.repo, &["task", "show", &other])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("tokens: unknown (fake-wait does not report them)"),
        "{text}"
    );
    assert_eq!(tokens_of_list(&env, &claude), tj(11, 22, 33, 44));
    let status = env.ok(&["status", "--format", "json"]);
    assert_eq!(
        status["tokens"],
        json!({"input": 11, "output": 22, "cache_creation": 33, "cache_read": 44, "tasks": 1, "unknown": 1}),
        "{status}"
    );
    // The sidebar's detail: "in" is everything that went in.
    let side = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--once", "--task", &claude, "--width", "60"],
        )
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let side = String::from_utf8_lossy(&side.stdout);
    assert!(side.contains("Tokens: 88 in · 22 out"), "{side}");
    let side = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--once", "--task", &other, "--width", "60"],
        )
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let side = String::from_utf8_lossy(&side.stdout);
    assert!(side.contains("Tokens: unknown"), "{side}");
}
