//! The NFQUEUE backend: the agent's iptables rules plus the bound queue. Rules are installed when the
//! tap opens and removed when it is dropped; the queue-bypass flag keeps traffic flowing whenever no
//! agent holds the queue (not started yet, crashed, killed).

use crate::nfqueue::{NfQueue, Queued, HOOK_LOCAL_IN, HOOK_LOCAL_OUT};
use crate::rules::Rules;
use crate::tap::{PacketTap, TapDir, Tapped};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

pub struct NfqTap {
    queue: NfQueue,
    rules: Rules,
    batch: Vec<Queued>,
}

impl NfqTap {
    /// Binds the queue, then installs the rules (removing stale ones of a crashed run first). Binding
    /// first means no packet is bypassed unseen once the rules exist.
    pub fn open(rules: Rules, max_len: u32) -> io::Result<NfqTap> {
        let queue = NfQueue::bind(rules.queue, max_len)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot bind NFQUEUE {}: {e}", rules.queue)))?;
        rules.install()?;
        Ok(NfqTap {
            queue,
            rules,
            batch: Vec::new(),
        })
    }
}

impl Drop for NfqTap {
    fn drop(&mut self) {
        if let Err(e) = self.rules.remove() {
            eprintln!("tailcut-tracksd: removing the iptables rules failed: {e}");
        }
    }
}

impl AsFd for NfqTap {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.queue.as_fd()
    }
}

impl PacketTap for NfqTap {
    fn recv(&mut self, out: &mut Vec<Tapped>) -> io::Result<()> {
        self.batch.clear();
        self.queue.recv(&mut self.batch)?;
        for q in self.batch.drain(..) {
            // Only our two rules queue here; anything else is passed without a look.
            let Some(dir) = tap_dir(q.hook) else {
                self.queue.verdict(q.id, true)?;
                continue;
            };
            out.push(Tapped::new(q.id, dir, &q.bytes, None));
        }
        Ok(())
    }

    fn verdict(&mut self, id: u32, pass: bool) -> io::Result<()> {
        self.queue.verdict(id, pass)
    }

    /// Socket overflows (each one or more packets accepted by fail-open unseen).
    fn missed(&self) -> u64 {
        self.queue.overflows()
    }
}

/// The direction of a packet queued at netfilter hook `hook`: our OUTPUT rule queues the local
/// senders' data, our INPUT rule the peers' ACKs.
pub fn tap_dir(hook: u8) -> Option<TapDir> {
    match hook {
        HOOK_LOCAL_OUT => Some(TapDir::Egress),
        HOOK_LOCAL_IN => Some(TapDir::Ingress),
        _ => None,
    }
}
