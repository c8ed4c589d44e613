//! The receiver's side of multi-block messages: which blocks of each message have decoded, and
//! (with `carry_bytes`) their bytes until the last one arrives.
//!
//! Blocks are STOPped as they decode, so the sender learns nothing of what happens here; what the
//! receiver holds is bounded all the same: at most one assembly per wire id (256), a bit per block,
//! and the decoded bytes within the byte limit the caller passes. Beyond it the least recently
//! active assemblies are dropped, and the message is lost to the application (counted by the
//! endpoint), which is the price of a bound a peer cannot push past.

use super::CbHeader;
use crate::time::{Dur, Time};
use std::collections::BTreeMap;

struct Assembly {
    last_block: u16,
    /// One bit per block.
    decoded: Vec<u64>,
    missing: u32,
    /// Decoded blocks' bytes (`carry_bytes`), in arrival order.
    parts: Vec<(u16, Vec<u8>)>,
    bytes: u64,
    last: Time,
}

/// What one decoded block did to its message.
#[derive(Debug, PartialEq, Eq)]
pub enum Assembled {
    /// Blocks still missing; `dropped` assemblies were dropped to stay within the byte limit.
    Pending { dropped: u32 },
    /// Every block is in: the message's bytes when carried.
    Complete(Option<Vec<u8>>),
}

#[derive(Default)]
pub struct Assemblies {
    by_id: BTreeMap<u8, Assembly>,
    held: u64,
}

impl Assemblies {
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Bytes of decoded blocks held.
    pub fn held_bytes(&self) -> u64 {
        self.held
    }

    /// Adds the decoded block `h` names (its bytes when carried), keeping the bytes held within
    /// `limit`. A block seen before changes nothing; a different last block under the same wire id
    /// is a new message, which replaces the old one.
    pub fn add(&mut self, now: Time, h: &CbHeader, data: Option<Vec<u8>>, limit: u64) -> Assembled {
        let id = h.msg_id;
        if self.by_id.get(&id).is_some_and(|a| a.last_block != h.block.last) {
            self.remove(id);
        }
        let a = self.by_id.entry(id).or_insert_with(|| Assembly {
            last_block: h.block.last,
            decoded: vec![0; (h.block.last as usize + 1).div_ceil(64)],
            missing: h.block.last as u32 + 1,
            parts: Vec::new(),
            bytes: 0,
            last: now,
        });
        a.last = now;
        let (word, bit) = (h.block.index as usize / 64, 1u64 << (h.block.index % 64));
        if a.decoded[word] & bit != 0 {
            return Assembled::Pending { dropped: 0 };
        }
        a.decoded[word] |= bit;
        a.missing -= 1;
        if let Some(d) = data {
            a.bytes += d.len() as u64;
            self.held += d.len() as u64;
            a.parts.push((h.block.index, d));
        }
        if a.missing == 0 {
            let a = self.remove(id).expect("present");
            if a.parts.is_empty() {
                return Assembled::Complete(None);
            }
            let mut parts = a.parts;
            parts.sort_unstable_by_key(|p| p.0);
            // One copy per block: collecting a byte iterator was ~10% of a 100 KB call's CPU.
            let mut out = Vec::with_capacity(a.bytes as usize);
            for (_, p) in &parts {
                out.extend_from_slice(p);
            }
            return Assembled::Complete(Some(out));
        }
        let mut dropped = 0;
        while self.held > limit {
            // The least recently active goes first; this message last, when it alone is too big.
            let victim = self
                .by_id
                .iter()
                .filter(|(i, _)| **i != id)
                .min_by_key(|(i, a)| (a.last, **i))
                .map(|(i, _)| *i)
                .unwrap_or(id);
            self.remove(victim);
            dropped += 1;
        }
        Assembled::Pending { dropped }
    }

    /// A packet of the message `h` names arrived: its assembly (if any) is active now.
    pub fn touch(&mut self, now: Time, h: &CbHeader) {
        if let Some(a) = self.by_id.get_mut(&h.msg_id) {
            if a.last_block == h.block.last {
                a.last = now;
            }
        }
    }

    /// When a packet of the message under `id` last arrived, if it is being assembled.
    pub fn last_heard(&self, id: u8) -> Option<Time> {
        self.by_id.get(&id).map(|a| a.last)
    }

    /// Forgets the message under `id` (its wire id is reused).
    pub fn forget(&mut self, id: u8) {
        self.remove(id);
    }

    /// Drops assemblies idle for `t`; returns how many.
    pub fn expire(&mut self, now: Time, t: Dur) -> usize {
        let idle: Vec<u8> = self
            .by_id
            .iter()
            .filter(|(_, a)| a.last + t <= now)
            .map(|(i, _)| *i)
            .collect();
        for &i in &idle {
            self.remove(i);
        }
        idle.len()
    }

    /// When the next assembly would expire.
    pub fn next_expiry(&self, t: Dur) -> Option<Time> {
        self.by_id.values().map(|a| a.last + t).min()
    }

    fn remove(&mut self, id: u8) -> Option<Assembly> {
        let a = self.by_id.remove(&id)?;
        self.held -= a.bytes;
        Some(a)
    }
}
