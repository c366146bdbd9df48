//! An account's usage limit, as an agent tells it: the words of each program stay in its
//! own file ([`crate::execution::harness::kind::AgentKind::limit`]); this file reads the
//! reset time those words carry, in the forms the programs print it:
//!
//! - Claude Code 2.1: `You've hit your 5-hour limit · resets 4:16am (UTC)`, or with a date
//!   when it is not today, `resets Nov 29, 5:36am (UTC)` (the zone is the claude
//!   process's own: `(Europe/Paris)`);
//! - a time of day (`try again at 3:00 PM`, `15:00`), or a delay (`try again in 2 hours
//!   3 minutes`, `in 45m`), as codex and declared harnesses print them.
//!
//! A zone other than UTC is read as this machine's local zone (the agent runs here, with
//! the same `TZ`).

use chrono::{DateTime, Datelike, Duration, Local, NaiveDate, NaiveTime, TimeZone, Utc};
use regex::Regex;
use std::sync::OnceLock;

/// A usage limit an agent stopped on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// When it resets, when its words say (`None`: orange waits `limit_wait`).
    pub reset: Option<DateTime<Utc>>,
    /// The agent's own words.
    pub message: String,
}

fn re(p: &str) -> Regex {
    regex::RegexBuilder::new(p)
        .case_insensitive(true)
        .build()
        .expect("a valid pattern")
}

/// The reset time in `text`, the next such moment after `now`: a clock time (with a date
/// or not) or a delay. `None` when it names none.
pub fn reset_in(text: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    static DELAY: OnceLock<Regex> = OnceLock::new();
    static CLOCK: OnceLock<Regex> = OnceLock::new();
    let delay = DELAY.get_or_init(|| {
        re(r"\bin\s+((?:\d+\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,and]*)+)")
    });
    let clock = CLOCK.get_or_init(|| {
        re(r"(?:(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:\d{4},?\s+)?)?(?:at\s+)?\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?(?:\s*\((?P<tz>[^)]+)\))?")
    });
    if let Some(c) = delay.captures(text) {
        if let Ok(d) = humantime::parse_duration(&c[1].replace(',', " ").replace(" and ", " ")) {
            return Some(now + Duration::from_std(d).ok()?);
        }
    }
    // Only after the words that introduce it: the time is not any number in the text.
    let lower = text.to_ascii_lowercase();
    let start = [
        "resets",
        "reset at",
        "try again at",
        "until",
        "available again at",
    ]
    .iter()
    .filter_map(|k| lower.find(k).map(|i| i + k.len()))
    .min()?;
    let c = clock.captures(&text[start..])?;
    let h: u32 = c["h"].parse().ok()?;
    let m: u32 = c.name("m").map_or(Some(0), |m| m.as_str().parse().ok())?;
    // A bare number with neither minutes nor am/pm is no time ("resets in 5" is a delay).
    let ampm = c.name("ampm").map(|a| a.as_str().to_ascii_lowercase());
    if c.name("m").is_none() && ampm.is_none() {
        return None;
    }
    let h = match ampm.as_deref() {
        Some(a) if a.starts_with('p') && h < 12 => h + 12,
        Some(a) if a.starts_with('a') && h == 12 => 0,
        _ => h,
    };
    let time = NaiveTime::from_hms_opt(h, m, 0)?;
    let utc = c
        .name("tz")
        .is_some_and(|z| matches!(z.as_str().trim(), "UTC" | "GMT" | "Etc/UTC" | "Z"));
    let day = match (c.name("mon"), c.name("day")) {
        (Some(mon), Some(d)) => {
            let months = [
                "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
            ];
            let mon = mon.as_str().to_ascii_lowercase();
            let month = months.iter().position(|x| mon.starts_with(x))? as u32 + 1;
            let d: u32 = d.as_str().parse().ok()?;
            // The next such date: December's reset seen in January is last year's.
            let year = now.year();
            let date = NaiveDate::from_ymd_opt(year, month, d)?;
            Some(if date < now.date_naive() - Duration::days(180) {
                NaiveDate::from_ymd_opt(year + 1, month, d)?
            } else {
                date
            })
        }
        _ => None,
    };
    let at = |date: NaiveDate| -> Option<DateTime<Utc>> {
        let naive = date.and_time(time);
        if utc {
            Some(Utc.from_utc_datetime(&naive))
        } else {
            Local
                .from_local_datetime(&naive)
                .earliest()
                .map(|t| t.with_timezone(&Utc))
        }
    };
    match day {
        Some(d) => at(d),
        None => {
            // A time of day: today's, or tomorrow's when today's has passed (by more than
            // a minute: a reset just past is the one meant, and resumes at once).
            let today = if utc {
                now.date_naive()
            } else {
                now.with_timezone(&Local).date_naive()
            };
            let t = at(today)?;
            if t + Duration::minutes(1) < now {
                at(today.succ_opt()?)
            } else {
                Some(t)
            }
        }
    }
}

/// A reset time as the status line shows it: `15:00` local, with the date when it is not
/// today (`Nov 29 05:36`).
pub fn short(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let l = t.with_timezone(&Local);
    if l.date_naive() == now.with_timezone(&Local).date_naive() {
        l.format("%H:%M").to_string()
    } else {
        l.format("%b %-d %H:%M").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn claude_reset_times_are_read() {
        let now = at("2026-11-27T03:35:00Z");
        assert_eq!(
            reset_in("You've hit your 5-hour limit · resets 4:16am (UTC)", now),
            Some(at("2026-11-27T04:16:00Z"))
        );
        assert_eq!(
            reset_in("You've hit your 5-hour limit · resets 3am (UTC)", now),
            Some(at("2026-11-28T03:00:00Z")),
            "a time already past today is tomorrow's"
        );
        assert_eq!(
            reset_in(
                "You've hit your 5-hour limit · resets Nov 29, 5:36am (UTC)",
                now
            ),
            Some(at("2026-11-29T05:36:00Z"))
        );
        assert_eq!(
            reset_in("You've hit your weekly limit · resets 12pm (UTC)", now),
            Some(at("2026-11-27T12:00:00Z"))
        );
        assert_eq!(
            reset_in("Usage limit reached. Try again in 2 hours 3 minutes.", now),
            Some(at("2026-11-27T05:38:00Z"))
        );
        assert_eq!(
            reset_in(
                "You’ve hit your usage limit. Try again at Nov 28th, 2026 3:05 PM.",
                now
            ),
            Some(
                Local
                    .from_local_datetime(
                        &NaiveDate::from_ymd_opt(2026, 11, 28)
                            .unwrap()
                            .and_hms_opt(15, 5, 0)
                            .unwrap()
                    )
                    .earliest()
                    .unwrap()
                    .with_timezone(&Utc)
            )
        );
        assert_eq!(reset_in("You've hit your limit", now), None);
        assert_eq!(reset_in("resets soon, 5 of them", now), None);
    }
}
