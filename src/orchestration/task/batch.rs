//! The batch point of tasks started together (`fanout.rs`): each start prepares its agent
//! on its own thread, then hands what it made ready here; the last to arrive makes every
//! session at once (one launcher call: one tmux call for all of them) in the tasks' order,
//! whatever the speed of the threads, and each start gets its own answer back.

use std::panic::AssertUnwindSafe;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Where the starts of tasks started together meet: `n` seats, one per start, and what
/// makes the handed items all at once (`make`: one answer per item, in their order).
/// The items are made once, by the last start to arrive; a start that gives up (it failed
/// before it had anything to hand) is not waited for.
pub struct Batch<T, R, F> {
    state: Mutex<State<T, R>>,
    made: Condvar,
    make: F,
}

struct State<T, R> {
    /// Each seat's item, handed and not yet made.
    handed: Vec<Option<T>>,
    /// Which seats have arrived (handed, or given up).
    arrived: Vec<bool>,
    /// Each seat's answer once made, until its start takes it.
    answers: Vec<Option<R>>,
    /// The last to arrive is making the items.
    making: bool,
    /// The items were made (their making panicked: no answers).
    over: bool,
}

impl<T, R, F: Fn(Vec<T>) -> Vec<R>> Batch<T, R, F> {
    pub fn new(n: usize, make: F) -> Self {
        Batch {
            state: Mutex::new(State {
                handed: (0..n).map(|_| None).collect(),
                arrived: vec![false; n],
                answers: (0..n).map(|_| None).collect(),
                making: false,
                over: false,
            }),
            made: Condvar::new(),
            make,
        }
    }

    /// Hand seat `i`'s item and wait until every item is made: its answer (`None`: the
    /// making panicked).
    pub fn hand(&self, i: usize, item: T) -> Option<R> {
        let mut state = self.lock();
        assert!(!state.arrived[i], "seat {i} arrived twice");
        state.handed[i] = Some(item);
        state.arrived[i] = true;
        state = self.make_if_last(state);
        while !state.over {
            state = self.made.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.answers[i].take()
    }

    /// Seat `i` hands nothing (its start failed before): the others do not wait for it.
    /// Nothing when it has arrived already.
    pub fn give_up(&self, i: usize) {
        let mut state = self.lock();
        if !state.arrived[i] {
            state.arrived[i] = true;
            drop(self.make_if_last(state));
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T, R>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The last to arrive makes every item handed, in seat order (none handed: no making
    /// at all), outside the lock, and wakes the others.
    fn make_if_last<'a>(
        &'a self,
        mut state: MutexGuard<'a, State<T, R>>,
    ) -> MutexGuard<'a, State<T, R>> {
        if state.making || !state.arrived.iter().all(|a| *a) {
            return state;
        }
        state.making = true;
        let seats: Vec<usize> = (0..state.handed.len())
            .filter(|&i| state.handed[i].is_some())
            .collect();
        let items: Vec<T> = seats
            .iter()
            .filter_map(|&i| state.handed[i].take())
            .collect();
        drop(state);
        // A making that panics answers no one (each start tells it failed) and keeps no
        // one waiting.
        let answers = if items.is_empty() {
            vec![]
        } else {
            std::panic::catch_unwind(AssertUnwindSafe(|| (self.make)(items))).unwrap_or_default()
        };
        let mut state = self.lock();
        for (i, a) in seats.into_iter().zip(answers) {
            state.answers[i] = Some(a);
        }
        state.over = true;
        self.made.notify_all();
        state
    }
}

/// Gives seat `i` up when dropped unless it handed its item: a start that failed or
/// panicked before never keeps the others waiting.
pub(super) struct Seat<'a, T, R, F: Fn(Vec<T>) -> Vec<R>>(
    pub(super) &'a Batch<T, R, F>,
    pub(super) usize,
);

impl<T, R, F: Fn(Vec<T>) -> Vec<R>> Drop for Seat<'_, T, R, F> {
    fn drop(&mut self) {
        self.0.give_up(self.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_to_arrive_makes_all_at_once_in_seat_order_whatever_order_they_come_in() {
        let calls = Mutex::new(vec![]);
        let batch = Batch::new(4, |items: Vec<usize>| {
            calls.lock().unwrap().push(items.clone());
            items.into_iter().map(|i| i * 10).collect::<Vec<_>>()
        });
        let answers = Mutex::new(vec![]);
        std::thread::scope(|s| {
            for i in (0..4).rev() {
                let (batch, answers) = (&batch, &answers);
                s.spawn(move || {
                    let _seat = Seat(batch, i);
                    let a = batch.hand(i, i);
                    answers.lock().unwrap().push((i, a));
                });
            }
        });
        assert_eq!(*calls.lock().unwrap(), [vec![0, 1, 2, 3]]);
        let mut answers = answers.into_inner().unwrap();
        answers.sort();
        assert_eq!(
            answers,
            [(0, Some(0)), (1, Some(10)), (2, Some(20)), (3, Some(30))]
        );
    }

    #[test]
    fn a_start_that_gives_up_is_not_waited_for_and_not_made() {
        let calls = Mutex::new(vec![]);
        let batch = Batch::new(3, |items: Vec<&str>| {
            calls.lock().unwrap().push(items.clone());
            items
        });
        std::thread::scope(|s| {
            // The second ends without handing anything (its start failed early).
            s.spawn(|| drop(Seat(&batch, 1)));
            s.spawn(|| assert_eq!(batch.hand(0, "a"), Some("a")));
            s.spawn(|| assert_eq!(batch.hand(2, "c"), Some("c")));
        });
        assert_eq!(*calls.lock().unwrap(), [vec!["a", "c"]]);
    }

    #[test]
    fn members_all_giving_up_make_no_call() {
        let calls = Mutex::new(0);
        let batch = Batch::new(3, |items: Vec<()>| {
            *calls.lock().unwrap() += 1;
            items
        });
        std::thread::scope(|s| {
            for i in 0..3 {
                let batch = &batch;
                s.spawn(move || drop(Seat(batch, i)));
            }
        });
        assert_eq!(*calls.lock().unwrap(), 0);
    }

    #[test]
    fn a_making_that_panics_answers_none_and_keeps_no_one_waiting() {
        let batch = Batch::new(2, |_: Vec<u8>| -> Vec<u8> { panic!("the making failed") });
        std::thread::scope(|s| {
            let a = s.spawn(|| batch.hand(0, 1));
            assert_eq!(batch.hand(1, 2), None);
            assert_eq!(a.join().unwrap(), None);
        });
    }
}
