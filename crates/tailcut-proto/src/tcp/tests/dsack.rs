//! D-SACK at the receiver (RFC 2883), driven on the receiver directly: a duplicate segment is
//! acknowledged at once with the duplicate range as the ACK's first SACK block; with the key off no
//! D-SACK block is ever sent. The sender's use of it is in `undo.rs`.

use crate::engine::AppEvent;
use crate::seq::Seq;
use crate::tcp::receiver::{EcnEcho, Receiver};
use crate::time::Time;
use std::collections::VecDeque;

const ISN: Seq = Seq(0);

fn receiver(dsack: bool) -> Receiver {
    let mut r = Receiver::new(1 << 20, 10, None, EcnEcho::Off);
    r.set_dsack(dsack);
    r
}

fn data(r: &mut Receiver, start: u64) {
    let mut ev: VecDeque<AppEvent> = VecDeque::new();
    r.on_data(Time(0), start, 10, false, false, &mut ev);
}

fn blocks(r: &Receiver) -> Vec<(Seq, Seq)> {
    r.sack_blocks(ISN).iter().collect()
}

/// RFC 2883 Sec. 4 (example 4.1.1) / Linux `tcp_data_queue` -> `tcp_dsack_set`, `tcp_send_dupack`:
/// a segment wholly below `rcv_nxt` is ACKed at once, its range the first (only) SACK block, and
/// the block goes with that ACK only.
#[test]
fn duplicate_below_rcv_nxt_is_dsacked_once() {
    let mut r = receiver(true);
    data(&mut r, 0);
    data(&mut r, 10);
    r.on_ack_sent();
    data(&mut r, 0);
    assert!(r.ack_due(Time(0)));
    assert_eq!(blocks(&r), vec![(Seq(1), Seq(11))]);
    r.on_ack_sent();
    assert!(blocks(&r).is_empty());
}

/// RFC 2883 Sec. 4 (example 4.2.1) / Linux `tcp_data_queue_ofo` -> `tcp_dsack_set`: a duplicate of
/// data held out of order is D-SACKed as the first block, followed by the out-of-order block that
/// contains it (how the sender tells it from an ordinary SACK, RFC 2883 Sec. 4).
#[test]
fn duplicate_inside_ooo_block_is_dsacked_first() {
    let mut r = receiver(true);
    data(&mut r, 0);
    data(&mut r, 20);
    data(&mut r, 30);
    r.on_ack_sent();
    data(&mut r, 20);
    assert!(r.ack_due(Time(0)));
    assert_eq!(blocks(&r), vec![(Seq(21), Seq(31)), (Seq(21), Seq(41))]);
    r.on_ack_sent();
    assert_eq!(blocks(&r), vec![(Seq(21), Seq(41))]);
}

/// Linux `tcp_data_queue`: a segment partly below `rcv_nxt` D-SACKs the old part only.
#[test]
fn partial_duplicate_dsacks_the_old_part() {
    let mut r = receiver(true);
    data(&mut r, 0);
    r.on_ack_sent();
    let mut ev: VecDeque<AppEvent> = VecDeque::new();
    r.on_data(Time(0), 5, 10, false, false, &mut ev);
    assert_eq!(r.rcv_nxt, 15);
    assert_eq!(blocks(&r), vec![(Seq(6), Seq(11))]);
}

/// The key off (the `paper` host): the same duplicates are ACKed without any SACK block.
#[test]
fn dsack_off_sends_no_dsack_block() {
    let mut r = receiver(false);
    data(&mut r, 0);
    data(&mut r, 10);
    r.on_ack_sent();
    data(&mut r, 0);
    assert!(r.ack_due(Time(0)));
    assert!(blocks(&r).is_empty());
    data(&mut r, 40);
    data(&mut r, 40);
    assert_eq!(blocks(&r), vec![(Seq(41), Seq(51))]);
}

/// `HostProfile::apply`: D-SACK on under `linux`, off under `paper`, an explicit key wins.
#[test]
fn host_profile_sets_dsack() {
    use crate::tcp::{HostProfile, TcpConfig};
    let mut c = TcpConfig::default();
    HostProfile::Paper.apply(&mut c, |_| false);
    assert!(!c.dsack);
    HostProfile::Linux.apply(&mut c, |_| false);
    assert!(c.dsack);
    c.dsack = false;
    HostProfile::Linux.apply(&mut c, |k| k == "dsack");
    assert!(!c.dsack);
}
