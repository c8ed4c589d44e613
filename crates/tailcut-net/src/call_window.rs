//! At-most-once delivery of a client's calls: a sliding window over call numbers, as IPsec's
//! anti-replay window (RFC 4303, Sec. 3.4.3), so a request decoded twice (late packets that outlived
//! the engine's memory of the message, a duplicated datagram) reaches the handler once whatever the
//! timing. A client numbers its calls in increasing order; the window remembers which of the last
//! [`WINDOW`] numbers were delivered and refuses everything older.
//!
//! Refusing an old number is what keeps the rule: a number below the window may never have been
//! delivered, but the client gave that call up long ago (it has at most 256 calls in flight, and
//! its id quarantine outlasts a call, so fewer than 256 newer calls start while one is live), so
//! refusing it costs nothing and delivering it could run a handler twice.

/// Numbers remembered behind the highest one seen.
pub const WINDOW: u64 = 1024;
const WORDS: usize = (WINDOW / 64) as usize;

#[derive(Clone, Debug)]
pub struct CallWindow {
    /// Every number below `base` is refused; bit `n - base` says whether `n` was delivered.
    base: u64,
    bits: [u64; WORDS],
}

impl CallWindow {
    /// A window that refuses every number below `base`.
    pub fn new(base: u64) -> CallWindow {
        CallWindow {
            base,
            bits: [0; WORDS],
        }
    }

    /// True the first time `n` is offered and `n` is not below the window; marks it delivered.
    pub fn accept(&mut self, n: u64) -> bool {
        if n < self.base {
            return false;
        }
        if n - self.base >= WINDOW {
            self.slide_to(n - (WINDOW - 1));
        }
        let off = n - self.base;
        let (w, b) = ((off / 64) as usize, off % 64);
        let fresh = self.bits[w] & (1 << b) == 0;
        self.bits[w] |= 1 << b;
        fresh
    }

    /// One past the highest number delivered (or the base, if none was): what a reopened window
    /// must start from.
    pub fn next_base(&self) -> u64 {
        let top = (0..WINDOW).rev().find(|&off| {
            let (w, b) = ((off / 64) as usize, off % 64);
            self.bits[w] & (1 << b) != 0
        });
        top.map_or(self.base, |off| self.base + off + 1)
    }

    /// Moves the window up so that it starts at `base`, forgetting the numbers that fall out.
    fn slide_to(&mut self, base: u64) {
        let by = base - self.base;
        if by >= WINDOW {
            self.bits = [0; WORDS];
        } else {
            for _ in 0..by {
                // One bit at a time keeps this obviously right; a slide is rare (at most once per
                // call) and the window small.
                let mut carry = 0;
                for w in self.bits.iter_mut().rev() {
                    let out = *w & 1;
                    *w = (*w >> 1) | (carry << 63);
                    carry = out;
                }
            }
        }
        self.base = base;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_number_is_accepted_once() {
        let mut w = CallWindow::new(0);
        assert!(w.accept(5));
        assert!(!w.accept(5));
        assert!(w.accept(3));
        assert!(!w.accept(3));
        assert_eq!(w.next_base(), 6);
    }

    #[test]
    fn numbers_below_the_window_are_refused() {
        let mut w = CallWindow::new(0);
        assert!(w.accept(WINDOW + 10));
        // 10 fell out of the window when it slid: refused although never delivered.
        assert!(!w.accept(10));
        assert!(w.accept(11));
        assert!(!w.accept(11));
        let mut r = CallWindow::new(w.next_base());
        assert!(!r.accept(WINDOW + 10));
        assert!(r.accept(WINDOW + 11));
    }

    proptest! {
        /// Against a model that remembers every number: never accepts a number twice, and accepts
        /// every first offer within the window of the highest number seen.
        #[test]
        fn at_most_once_against_a_model(offers in prop::collection::vec(0u64..3 * WINDOW, 1..400)) {
            let mut w = CallWindow::new(0);
            let mut seen = std::collections::BTreeSet::new();
            let mut high = 0u64;
            for n in offers {
                let first = seen.insert(n);
                let within = n + WINDOW > high.max(n);
                let accepted = w.accept(n);
                prop_assert!(!accepted || first, "{n} accepted twice");
                if first && within {
                    prop_assert!(accepted, "{n} refused (highest {high})");
                }
                high = high.max(n);
            }
        }
    }
}
