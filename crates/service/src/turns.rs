//! Requests take their turns on the store one at a time, in arrival order.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Instant;

/// Requests take turns in arrival order: a ticket queue (a plain mutex lets a late arrival jump
/// ahead of one that has waited longer).
#[derive(Default)]
pub(super) struct Turns {
    tickets: Mutex<Tickets>,
    turn_changed: std::sync::Condvar,
}

#[derive(Default)]
struct Tickets {
    /// The next ticket to hand out.
    next: u64,
    /// The ticket being served.
    serving: u64,
    /// Tickets whose holders stopped waiting (a hook's budget ran out): skipped when reached.
    given_up: BTreeSet<u64>,
}

pub(super) struct Turn<'a>(&'a Turns);

impl Turns {
    pub(super) fn wait(&self) -> Turn<'_> {
        self.wait_until(None).expect("no deadline")
    }

    /// A turn, or `None` once `deadline` passes first (the ticket is then skipped).
    pub(super) fn wait_until(&self, deadline: Option<Instant>) -> Option<Turn<'_>> {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        let mine = t.next;
        t.next += 1;
        while t.serving != mine {
            t = match deadline {
                None => self.turn_changed.wait(t).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        t.given_up.insert(mine);
                        return None;
                    }
                    self.turn_changed
                        .wait_timeout(t, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        Some(Turn(self))
    }

    /// Nobody is being served or waiting.
    pub(super) fn idle(&self) -> bool {
        let t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        t.next == t.serving
    }

    /// A turn now, if nobody is being served or waiting.
    pub(super) fn try_now(&self) -> Option<Turn<'_>> {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        (t.next == t.serving).then(|| {
            t.next += 1;
            Turn(self)
        })
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut t = self.0.tickets.lock().unwrap_or_else(|e| e.into_inner());
        t.serving += 1;
        loop {
            let serving = t.serving;
            if !t.given_up.remove(&serving) {
                break;
            }
            t.serving += 1;
        }
        drop(t);
        self.0.turn_changed.notify_all();
    }
}
