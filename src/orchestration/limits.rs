//! Usage limits across the fleet: which agent state a limit message makes ([`state_of`]),
//! when a limited agent's reset is ([`hold_of`]), and which harnesses are limited now
//! (`$ORANGE_HOME/run/limits.json`, written by the monitor only: [`record`], [`clear`];
//! read by every start: [`held`]). While a harness is limited no new agent of it starts;
//! its queued tasks wait, saying `held: limit until 15:00`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::adapters::store::{self, Home, LockGuard};
use crate::error::Result;
use crate::execution::harness::kind::AgentKind;
use crate::execution::harness::limit;
use crate::orchestration::agent::{LimitHold, State};

/// How long orange waits on a limit whose words name no reset time (`limit_wait`).
pub const DEFAULT_LIMIT_WAIT: Duration = Duration::from_secs(3600);
/// The largest random delay after a reset before one task is resumed.
pub const STAGGER: Duration = Duration::from_secs(60);
/// How long a resumed agent has to start a turn before it is tried again, then escalated.
pub const VERIFY: Duration = Duration::from_secs(60);

/// The clock limits are measured on: the real time, plus `ORANGE_CLOCK_SKEW` (a duration
/// such as `2m`) when set — the monitor's clock, so that a test passes a reset without
/// waiting for it.
pub fn clock() -> DateTime<Utc> {
    let now = Utc::now();
    std::env::var("ORANGE_CLOCK_SKEW")
        .ok()
        .and_then(|v| humantime::parse_duration(&v).ok())
        .and_then(|d| chrono::Duration::from_std(d).ok())
        .map_or(now, |d| now + d)
}

/// The state an agent is in when it says `state` with `detail`: an error whose words are
/// its program's usage limit ([`AgentKind::limit`]) is `limited`.
pub fn state_of(kind: &dyn AgentKind, state: State, detail: Option<&str>) -> State {
    match (state, detail) {
        (State::Error, Some(d)) if kind.limit(d) => State::Limited,
        _ => state,
    }
}

/// The hold of a limit just seen (`words`: the agent's message): its reset as the words
/// say, else `wait` from now; and this task's moment to act, the reset plus a random
/// stagger (a reset already past: at once, staggered).
pub fn hold_of(words: &str, wait: Duration, now: DateTime<Utc>) -> LimitHold {
    let read = limit::reset_in(words, now);
    let until = read.unwrap_or_else(|| now + chrono::Duration::from_std(wait).unwrap_or_default());
    let stagger = chrono::Duration::milliseconds(random_below(STAGGER.as_millis() as u64) as i64);
    let resume_at = until.max(now) + stagger;
    LimitHold {
        until: stamp(until),
        read: read.is_some(),
        resume_at: stamp(resume_at),
        resumed: 0,
        resumed_at: None,
    }
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A random number below `n` (std's randomly keyed hasher: no crate for one number).
fn random_below(n: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Utc::now().timestamp_nanos_opt().unwrap_or_default() as u128);
    h.finish() % n.max(1)
}

/// When `t` (RFC 3339) is, if it parses.
pub fn parse(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `limited until 15:00` (the time local, with its date when not today).
pub fn label(hold: Option<&LimitHold>, now: DateTime<Utc>) -> String {
    match hold.and_then(|h| parse(&h.until)) {
        Some(t) => format!("limited until {}", limit::short(t, now)),
        None => "limited".into(),
    }
}

/// One limited harness: until when, and the task that told it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Limited {
    pub until: String,
    pub task: String,
}

fn file(home: &Home) -> PathBuf {
    home.run_dir().join("limits.json")
}

fn lock(home: &Home) -> Result<LockGuard> {
    LockGuard::acquire(&home.run_dir().join("limits.lock"))
}

/// Every harness limited at `now` (a reset passed is over).
pub fn all(home: &Home, now: DateTime<Utc>) -> BTreeMap<String, Limited> {
    let mut m: BTreeMap<String, Limited> = store::read_json(&file(home)).unwrap_or_default();
    m.retain(|_, l| parse(&l.until).is_some_and(|t| t > now));
    m
}

/// Whether `harness` is limited at `now`, and until when.
pub fn held(home: &Home, harness: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    all(home, now).get(harness).and_then(|l| parse(&l.until))
}

/// The monitor saw `task`'s agent of `harness` limited until `until`: the harness is held
/// until then (the latest reset any of its agents told).
pub fn record(home: &Home, harness: &str, task: &str, until: &str) -> Result<()> {
    let _lock = lock(home)?;
    let mut m: BTreeMap<String, Limited> = store::read_json(&file(home)).unwrap_or_default();
    let later = m
        .get(harness)
        .and_then(|l| parse(&l.until))
        .is_none_or(|t| parse(until).is_some_and(|u| u > t));
    if later {
        m.insert(
            harness.to_string(),
            Limited {
                until: until.to_string(),
                task: task.to_string(),
            },
        );
        store::write_json_atomic(&file(home), &m)?;
    }
    Ok(())
}

/// The harnesses whose reset has passed at `now`, taken out of the record: their queued
/// tasks may start, in every project (a project whose queue waits only on the limit has
/// no limited task of its own to resume and start it). Read without the lock first: a
/// pass with nothing passed costs one read.
pub fn released(home: &Home, now: DateTime<Utc>) -> Result<Vec<String>> {
    let path = file(home);
    let over = |m: &BTreeMap<String, Limited>| -> Vec<String> {
        m.iter()
            .filter(|(_, l)| parse(&l.until).is_none_or(|t| t <= now))
            .map(|(h, _)| h.clone())
            .collect()
    };
    let m: BTreeMap<String, Limited> = store::read_json(&path).unwrap_or_default();
    if over(&m).is_empty() {
        return Ok(vec![]);
    }
    let _lock = lock(home)?;
    let mut m: BTreeMap<String, Limited> = store::read_json(&path).unwrap_or_default();
    let gone = over(&m);
    if !gone.is_empty() {
        m.retain(|h, _| !gone.contains(h));
        store::write_json_atomic(&path, &m)?;
    }
    Ok(gone)
}

/// An agent of `harness` started a turn after its limit: the account is usable again, the
/// harness is no longer held.
pub fn clear(home: &Home, harness: &str) -> Result<()> {
    let path = file(home);
    if !path.exists() {
        return Ok(());
    }
    let _lock = lock(home)?;
    let mut m: BTreeMap<String, Limited> = store::read_json(&path).unwrap_or_default();
    if m.remove(harness).is_some() {
        store::write_json_atomic(&path, &m)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_passed_is_released_once_and_the_others_stay_held() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home {
            root: tmp.path().to_path_buf(),
        };
        std::fs::create_dir_all(home.run_dir()).unwrap();
        record(&home, "claude", "t1", "2026-11-27T04:00:00Z").unwrap();
        record(&home, "pi", "t2", "2026-11-27T06:00:00Z").unwrap();
        let now = parse("2026-11-27T05:00:00Z").unwrap();
        assert_eq!(released(&home, now).unwrap(), ["claude"]);
        assert!(released(&home, now).unwrap().is_empty());
        assert!(held(&home, "pi", now).is_some());
        let later = parse("2026-11-27T06:00:01Z").unwrap();
        assert_eq!(released(&home, later).unwrap(), ["pi"]);
    }

    #[test]
    fn a_hold_without_a_time_waits_and_one_past_acts_at_once() {
        let now = parse("2026-11-27T03:00:00Z").unwrap();
        let h = hold_of("You've hit your limit", Duration::from_secs(3600), now);
        assert!(!h.read);
        assert_eq!(h.until, "2026-11-27T04:00:00Z");
        let at = parse(&h.resume_at).unwrap();
        assert!(
            at >= parse(&h.until).unwrap()
                && at < parse(&h.until).unwrap() + chrono::Duration::seconds(60)
        );
        let past = hold_of("resets Nov 26, 5am (UTC)", Duration::from_secs(3600), now);
        assert!(past.read);
        let at = parse(&past.resume_at).unwrap();
        assert!(
            at >= now && at < now + chrono::Duration::seconds(60),
            "{past:?}"
        );
    }
}
