//! A timer heap over keyed deadlines (one per association): setting a key's deadline pushes an entry
//! and stale entries are skipped when they surface, so a deadline change costs O(log n) and no search.
//! The heap is rebuilt when stale entries outnumber live ones, which bounds its size.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use tailcut_proto::Time;

#[derive(Debug, Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(Time, u64)>>,
    current: BTreeMap<u64, Time>,
}

impl Timers {
    /// Sets (or with `None` clears) the deadline of `key`.
    pub fn set(&mut self, key: u64, at: Option<Time>) {
        match at {
            Some(t) => {
                if self.current.insert(key, t) != Some(t) {
                    self.heap.push(Reverse((t, key)));
                }
            }
            None => {
                self.current.remove(&key);
            }
        }
        if self.heap.len() > 2 * self.current.len() + 64 {
            // Rebuilt in place, reusing the heap's allocation.
            self.heap.clear();
            self.heap
                .extend(self.current.iter().map(|(k, t)| Reverse((*t, *k))));
        }
    }

    /// The earliest live deadline.
    pub fn earliest(&mut self) -> Option<Time> {
        while let Some(Reverse((t, k))) = self.heap.peek().copied() {
            if self.current.get(&k) == Some(&t) {
                return Some(t);
            }
            self.heap.pop();
        }
        None
    }

    /// Removes and returns a key whose deadline is at or before `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<u64> {
        let t = self.earliest()?;
        if t > now {
            return None;
        }
        let Reverse((_, k)) = self.heap.pop()?;
        self.current.remove(&k);
        Some(k)
    }

    pub fn heap_len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_deadline_wins_and_the_heap_stays_bounded() {
        let mut t = Timers::default();
        for i in 0..10_000u64 {
            t.set(1, Some(Time(i)));
        }
        t.set(2, Some(Time(5)));
        assert!(t.heap_len() <= 2 * 2 + 64 + 1);
        assert_eq!(t.pop_due(Time(100)), Some(2));
        assert_eq!(t.pop_due(Time(100)), None);
        assert_eq!(t.earliest(), Some(Time(9_999)));
        t.set(1, None);
        assert_eq!(t.earliest(), None);
    }
}
