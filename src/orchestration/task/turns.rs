//! Turns: the order in which the sessions of tasks started together (`fanout.rs`) are
//! made, whatever the speed of the threads that start them.

use std::sync::{Condvar, Mutex};

/// The order the sessions of tasks started together are made in: each after the ones
/// before it, whatever the threads' speed (the picker lists sessions in the order they
/// were made; a group's members stay in order under their group).
pub struct Turns {
    over: Mutex<Vec<bool>>,
    moved: Condvar,
}

impl Turns {
    pub fn new(n: usize) -> Turns {
        Turns {
            over: Mutex::new(vec![false; n]),
            moved: Condvar::new(),
        }
    }

    /// Wait until the start of every task before the `i`th is over.
    pub fn wait(&self, i: usize) {
        let mut over = self.over.lock().unwrap_or_else(|e| e.into_inner());
        while !over[..i].iter().all(|o| *o) {
            over = self.moved.wait(over).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The `i`th task's start is over (its session made, or not to be).
    pub fn over(&self, i: usize) {
        self.over.lock().unwrap_or_else(|e| e.into_inner())[i] = true;
        self.moved.notify_all();
    }
}

/// Passes a start's turn on when dropped (a start that failed or panicked included).
pub(super) struct Over<'a>(pub(super) &'a Turns, pub(super) usize);

impl Drop for Over<'_> {
    fn drop(&mut self) {
        self.0.over(self.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_goes_after_the_ones_before_it_whatever_order_the_threads_run_in() {
        let turns = Turns::new(4);
        let order = Mutex::new(vec![]);
        std::thread::scope(|s| {
            for i in (0..4).rev() {
                let (turns, order) = (&turns, &order);
                s.spawn(move || {
                    let _over = Over(turns, i);
                    turns.wait(i);
                    order.lock().unwrap().push(i);
                });
            }
        });
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
    }

    #[test]
    fn a_start_that_fails_before_its_turn_passes_it_on() {
        let turns = Turns::new(2);
        std::thread::scope(|s| {
            // The first ends without ever waiting for its turn (its start failed early).
            s.spawn(|| drop(Over(&turns, 0)));
            s.spawn(|| turns.wait(1));
        });
    }
}
