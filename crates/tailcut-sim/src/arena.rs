//! Packets live in an arena for their whole life in the network; queues and events hold 32-bit ids.
//! Freed slots are reused, so after warm-up the simulator allocates nothing per packet.

use tailcut_proto::Packet;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PktId(pub u32);

#[derive(Default)]
pub struct PacketArena {
    slots: Vec<Packet>,
    free: Vec<u32>,
    live: usize,
    /// The port whose link each packet is on (valid while it travels).
    link_of: Vec<u32>,
    /// Payload bytes for packets that carry them (QUIC and other byte-level engines); empty otherwise.
    payloads: Vec<Vec<u8>>,
    /// The engine whose TCP-small-queues budget a packet counts against while it waits in its host's
    /// NIC queue; [`NO_OWNER`] otherwise.
    owner: Vec<u32>,
}

/// A packet no engine's host-queue budget tracks.
pub const NO_OWNER: u32 = u32::MAX;

impl PacketArena {
    /// Inlined into the host's send path: the packet is written into its slot without a copy on the
    /// way (5 instructions per packet-hop on benchmark (a)).
    #[inline(always)]
    pub fn insert(&mut self, pkt: Packet) -> PktId {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = pkt;
                PktId(i)
            }
            None => {
                self.slots.push(pkt);
                self.payloads.push(Vec::new());
                self.link_of.push(u32::MAX);
                self.owner.push(NO_OWNER);
                PktId((self.slots.len() - 1) as u32)
            }
        }
    }

    /// Stores payload bytes for a packet, reusing the slot's buffer.
    pub fn set_payload(&mut self, id: PktId, bytes: &[u8]) {
        let buf = &mut self.payloads[id.0 as usize];
        buf.clear();
        buf.extend_from_slice(bytes);
    }

    /// A trimming port cut the packet's payload bytes.
    pub fn cut_payload(&mut self, id: PktId) {
        self.payloads[id.0 as usize].clear();
    }

    pub fn payload(&self, id: PktId) -> &[u8] {
        &self.payloads[id.0 as usize]
    }

    pub fn remove(&mut self, id: PktId) -> Packet {
        self.live -= 1;
        self.payloads[id.0 as usize].clear();
        self.free.push(id.0);
        self.slots[id.0 as usize]
    }

    pub fn set_link(&mut self, id: PktId, port: u32) {
        self.link_of[id.0 as usize] = port;
    }

    pub fn set_owner(&mut self, id: PktId, engine: u32) {
        self.owner[id.0 as usize] = engine;
    }

    /// The packet's owner, if any, clearing it: a packet leaves its host's NIC queue once.
    pub fn take_owner(&mut self, id: PktId) -> u32 {
        std::mem::replace(&mut self.owner[id.0 as usize], NO_OWNER)
    }

    pub fn link(&self, id: PktId) -> u32 {
        self.link_of[id.0 as usize]
    }

    pub fn get(&self, id: PktId) -> &Packet {
        &self.slots[id.0 as usize]
    }

    pub fn get_mut(&mut self, id: PktId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
    }

    /// Packets currently in the network (queued or on a wire).
    pub fn live(&self) -> usize {
        self.live
    }
}
