//! RaptorQ (RFC 6330) through the `raptorq` crate: our step beyond the paper (Sec. VI "Using other
//! rateless codes" names Raptor codes as the better alternative). Codec only: the engine still uses
//! the LT code, because RaptorQ packets are named by a 32-bit encoding symbol id (RFC 6330 Sec. 3.2)
//! rather than the Fig. 4 bitset, which needs a different header.
//!
//! One message is one source block (K <= 64 symbols is far below RFC 6330's 56 403 limit). Encoding
//! symbol ids 0..K are the source symbols (RaptorQ is systematic), K.. the repair symbols.

use raptorq::{EncodingPacket, ObjectTransmissionInformation, PayloadId};
use raptorq::{SourceBlockDecoder, SourceBlockEncoder};

fn config(symbol_bytes: u16, padded_len: u64) -> ObjectTransmissionInformation {
    ObjectTransmissionInformation::new(padded_len, symbol_bytes, 1, 1, 1)
}

/// Encodes one message.
pub struct RaptorqEncoder {
    enc: SourceBlockEncoder,
    /// The source symbols, built once (the crate's `source_packets` copies them all per call).
    sources: Vec<EncodingPacket>,
    k: u32,
}

impl RaptorqEncoder {
    /// `symbol_bytes` > 0; the message is zero padded to whole symbols (an empty message is one).
    pub fn new(msg: &[u8], symbol_bytes: u16) -> RaptorqEncoder {
        assert!(symbol_bytes > 0, "symbol_bytes must be > 0");
        let sym = symbol_bytes as usize;
        let k = msg.len().div_ceil(sym).max(1);
        let mut data = msg.to_vec();
        data.resize(k * sym, 0);
        let enc = SourceBlockEncoder::new2(0, &config(symbol_bytes, data.len() as u64), &data);
        let sources = enc.source_packets();
        RaptorqEncoder {
            enc,
            sources,
            k: k as u32,
        }
    }

    pub fn source_packets(&self) -> u32 {
        self.k
    }

    /// The `index`-th packet to send: its encoding symbol id (to carry on the wire) and its bytes.
    /// Packets 0..K are the source symbols; the ids of repair symbols start after RFC 6330's padded
    /// K' (Sec. 5.3.1), so the id is not `index` beyond K.
    pub fn symbol(&self, index: u32) -> (u32, Vec<u8>) {
        if let Some(p) = self.sources.get(index as usize) {
            return (p.payload_id().encoding_symbol_id(), p.data().to_vec());
        }
        let p = {
            self.enc
                .repair_packets(index - self.k, 1)
                .pop()
                .expect("one repair packet")
        };
        (p.payload_id().encoding_symbol_id(), p.data().to_vec())
    }
}

impl RaptorqEncoder {
    /// Appends the `index`-th packet's bytes to `out` and returns its encoding symbol id (as
    /// [`RaptorqEncoder::symbol`], without allocating for source symbols).
    pub fn symbol_into(&self, index: u32, out: &mut Vec<u8>) -> u32 {
        if let Some(p) = self.sources.get(index as usize) {
            out.extend_from_slice(p.data());
            return p.payload_id().encoding_symbol_id();
        }
        let p = self
            .enc
            .repair_packets(index - self.k, 1)
            .pop()
            .expect("one repair packet");
        out.extend_from_slice(p.data());
        p.payload_id().encoding_symbol_id()
    }
}

/// Decodes one message of `len_bytes` bytes.
pub struct RaptorqDecoder {
    dec: SourceBlockDecoder,
    len_bytes: usize,
    result: Option<Vec<u8>>,
}

impl RaptorqDecoder {
    pub fn new(len_bytes: usize, symbol_bytes: u16) -> RaptorqDecoder {
        let sym = symbol_bytes.max(1) as u64;
        let padded = (len_bytes as u64).div_ceil(sym).max(1) * sym;
        RaptorqDecoder {
            dec: SourceBlockDecoder::new2(0, &config(symbol_bytes, padded), padded),
            len_bytes,
            result: None,
        }
    }

    /// Offers symbol `esi` (of `symbol_bytes` bytes: the caller checks); returns the message once
    /// decodable.
    pub fn add(&mut self, esi: u32, data: Vec<u8>) -> Option<&[u8]> {
        if self.result.is_none() {
            let pkt = EncodingPacket::new(PayloadId::new(0, esi), data);
            if let Some(mut m) = self.dec.decode(std::iter::once(pkt)) {
                m.truncate(self.len_bytes);
                self.result = Some(m);
            }
        }
        self.result.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;
    use rand::{Rng as _, SeedableRng};

    /// Received symbols needed to decode, and the message, losing the packets `drop` says.
    fn needed(msg: &[u8], sym: u16, drop: &mut impl FnMut() -> bool) -> (usize, Vec<u8>) {
        let enc = RaptorqEncoder::new(msg, sym);
        let mut dec = RaptorqDecoder::new(msg.len(), sym);
        let mut got = 0;
        for esi in 0..10_000u32 {
            if drop() {
                continue;
            }
            got += 1;
            let (id, data) = enc.symbol(esi);
            if let Some(m) = dec.add(id, data) {
                return (got, m.to_vec());
            }
        }
        panic!("does not decode");
    }

    #[test]
    fn decodes_from_k_plus_2_almost_always() {
        // RFC 6330 Sec. 3.1 (and Annex B's analysis): failure probability about 1e-6 at K + 2.
        let mut r = Rng::seed_from_u64(1);
        let mut ok = 0;
        let runs = 100;
        for run in 0..runs {
            let k = 1 + run % 64;
            let msg: Vec<u8> = (0..k * 64).map(|_| r.random()).collect();
            let (n, out) = needed(&msg, 64, &mut || r.random::<f64>() < 0.3);
            assert_eq!(out, msg);
            ok += (n <= k + 2) as usize;
        }
        assert!(ok >= runs - 2, "{ok}/{runs} decoded from K + 2");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
        #[test]
        fn byte_exact_round_trip(len in 1usize..=64 * 48, seed: u64, loss in 0.0f64..0.5) {
            let mut r = Rng::seed_from_u64(seed);
            let msg: Vec<u8> = (0..len).map(|_| r.random()).collect();
            let (_, out) = needed(&msg, 48, &mut || r.random::<f64>() < loss);
            prop_assert_eq!(out, msg);
        }
    }
}
