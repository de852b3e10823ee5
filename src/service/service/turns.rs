//! Requests take their turns on the store one at a time, in arrival order.

use std::sync::Mutex;

/// Requests take turns in arrival order: a ticket queue (a plain mutex lets a late arrival jump
/// ahead of one that has waited longer).
#[derive(Default)]
pub(super) struct Turns {
    /// (next ticket to hand out, ticket being served)
    tickets: Mutex<(u64, u64)>,
    turn_changed: std::sync::Condvar,
}

pub(super) struct Turn<'a>(&'a Turns);

impl Turns {
    pub(super) fn wait(&self) -> Turn<'_> {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        let mine = t.0;
        t.0 += 1;
        while t.1 != mine {
            t = self.turn_changed.wait(t).unwrap_or_else(|e| e.into_inner());
        }
        Turn(self)
    }

    /// Nobody is being served or waiting.
    pub(super) fn idle(&self) -> bool {
        let t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        t.0 == t.1
    }

    /// A turn now, if nobody is being served or waiting.
    pub(super) fn try_now(&self) -> Option<Turn<'_>> {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        (t.0 == t.1).then(|| {
            t.0 += 1;
            Turn(self)
        })
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.tickets.lock().unwrap_or_else(|e| e.into_inner()).1 += 1;
        self.0.turn_changed.notify_all();
    }
}
