//! The MPI envelope: (context id, source, tag), the one match rule, and its
//! packing into the transport's 16 opaque bytes.
//!
//! ```text
//! bytes 0..4   context id (u32)
//! bytes 4..8   source: the sender's rank in the communicator (u32)
//! bytes 8..12  tag (i32); for an ack frame: the ssend token
//! bytes 12..16 flags: bits 0..8 kind (0 data, 1 synchronous data,
//!              2 ack of a synchronous send or of a rendezvous,
//!              3 rendezvous request); bits 8..32 the token
//! ```

use crate::transport::Envelope;

/// Wildcard source for receives and probes (`MPI_ANY_SOURCE`).
pub const ANY_SOURCE: i32 = -1;
/// Wildcard tag for receives and probes (`MPI_ANY_TAG`).
pub const ANY_TAG: i32 = -1;
/// The source word of an ack (kind `Ack`) that completes a plain
/// rendezvous send only if its sender wrote the back part of the
/// receiver's shared copy: the receiver read the front and will read
/// nothing more of the sender's unless it revokes the offer, in which
/// case a plain ack (source 0) follows its last read.
pub const ACK_IF_WROTE: u32 = 1;
/// The source word of a plain ack (kind `Ack`) of a blocking send's
/// rendezvous whose receiver timed its read and found it slow, as reads
/// of a buffer written just before its send are (`transport::fresh`):
/// the sender's next such sends take a detour for a while
/// (`Transport::detour`: the ring, or a shared copy).
pub const ACK_SLOW_READ: u32 = 2;
/// The same for a timed read that was not slow (a plain ack with source
/// word 0 carries no verdict: its read was not timed).
pub const ACK_FAST_READ: u32 = 4;
/// The null process: sends and receives to it complete at once
/// (`MPI_PROC_NULL`).
pub const PROC_NULL: i32 = -2;
const _: () = assert!(PROC_NULL == crate::group::PROC_NULL);
/// The largest valid tag (`MPI_TAG_UB`).
pub const TAG_UB: i32 = i32::MAX;

/// What a frame carries, from p2p's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A standard-mode message.
    Data,
    /// A synchronous-mode message: the receiver acks when it matches.
    Sync,
    /// The ack of a synchronous message, or the receiver's "done" of a
    /// rendezvous (it has copied the message out of the sender's memory).
    Ack,
    /// A rendezvous request: the payload says where the message lies in
    /// the sender's memory ([`Rts`]); the receiver copies it from there
    /// when it matches, then acks.
    Rts,
    /// The receiver's offer to share the copy of a matched rendezvous
    /// message ([`Cts`]): the sender may write the back part into the
    /// receiver's buffer while the receiver reads the front.
    Cts,
}

/// The payload of a rendezvous request: the message's address in the
/// sender's process and its length (16 bytes, little-endian; the length's
/// top bit, [`Rts::WAITS`], says the sender waits for this send, the next,
/// [`Rts::SHARE`], that it asks for a shared copy, the third,
/// [`Rts::TIMED`], that it heeds a verdict on the read), and, for a
/// revocable offer (a send lent from a scope), the entry of the sender's
/// offer table that the receiver claims before reading and whose address
/// then counts (`shm::offers`; 12 bytes more: index, generation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rts {
    /// Address of the first byte in the sender's process.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// The offer entry's index and generation, if revocable.
    pub offer: Option<(u32, u64)>,
    /// The sender waits for this send to complete (a blocking send), so
    /// it takes a shared-copy offer at once: the receiver may share
    /// smaller copies (`SHMPI_CMA_SPLIT_BLOCKING`).
    pub waits: bool,
    /// The sender asks for a shared copy below the shared copy's size:
    /// its recent buffers of this size were slow to read, most likely
    /// written just before their send (`transport::fresh`, `Detour`).
    pub share: bool,
    /// The sender judges this send (`Transport::judges`,
    /// `judges_posted`): the receiver times its read and says in the ack
    /// whether it was slow (`transport::fresh`). No other read is timed,
    /// and never a shared copy's (a request with [`share`](Self::share)
    /// has this false).
    pub timed: bool,
}

impl Rts {
    /// The length's bit that carries [`waits`](Self::waits) on the wire.
    pub const WAITS: u64 = 1 << 63;
    /// The length's bit that carries [`share`](Self::share) on the wire.
    pub const SHARE: u64 = 1 << 62;
    /// The length's bit that carries [`timed`](Self::timed) on the wire.
    pub const TIMED: u64 = 1 << 61;
    /// The length's bits that carry flags.
    const FLAGS: u64 = Self::WAITS | Self::SHARE | Self::TIMED;
    /// Bytes on the wire without an offer.
    pub const BYTES: usize = 16;
    /// Bytes on the wire with one.
    pub const OFFER_BYTES: usize = 28;

    /// Encodes: the buffer and how much of it is used.
    pub fn encode(&self) -> ([u8; Self::OFFER_BYTES], usize) {
        let mut b = [0u8; Self::OFFER_BYTES];
        b[..8].copy_from_slice(&self.addr.to_le_bytes());
        let len = self.len
            | if self.waits { Self::WAITS } else { 0 }
            | if self.share { Self::SHARE } else { 0 }
            | if self.timed { Self::TIMED } else { 0 };
        b[8..16].copy_from_slice(&len.to_le_bytes());
        match self.offer {
            None => (b, Self::BYTES),
            Some((idx, gen)) => {
                b[16..20].copy_from_slice(&idx.to_le_bytes());
                b[20..28].copy_from_slice(&gen.to_le_bytes());
                (b, Self::OFFER_BYTES)
            }
        }
    }

    /// Which kind of shared copy the receiver may offer for this request
    /// (`Transport::split_ok`).
    pub fn split_kind(&self) -> crate::transport::SplitKind {
        crate::transport::SplitKind::of(self.waits, self.share)
    }

    /// Decodes; `None` when `b` is neither 16 nor 28 bytes.
    pub fn decode(b: &[u8]) -> Option<Rts> {
        if b.len() != Self::BYTES && b.len() != Self::OFFER_BYTES {
            return None;
        }
        let offer = if b.len() == Self::OFFER_BYTES {
            Some((
                u32::from_le_bytes(b[16..20].try_into().ok()?),
                u64::from_le_bytes(b[20..28].try_into().ok()?),
            ))
        } else {
            None
        };
        let len = u64::from_le_bytes(b[8..16].try_into().ok()?);
        Some(Rts {
            addr: u64::from_le_bytes(b[..8].try_into().ok()?),
            len: len & !Self::FLAGS,
            offer,
            waits: len & Self::WAITS != 0,
            share: len & Self::SHARE != 0,
            timed: len & Self::TIMED != 0,
        })
    }
}

/// The payload of a shared-copy offer (a [`FrameKind::Cts`] frame, whose
/// tag is the rendezvous token): the receiver's offer generation, the
/// back part's offset and length in the message, and where it goes in the
/// receiver's process (32 bytes, little-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cts {
    /// The generation of the receiver's claim word (`shm::Split`).
    pub gen: u64,
    /// Offset of the back part in the message.
    pub off: u64,
    /// Its length.
    pub len: u64,
    /// Its address in the receiver's process.
    pub dst: u64,
}

impl Cts {
    /// Bytes on the wire.
    pub const BYTES: usize = 32;

    /// Encodes.
    pub fn encode(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for (i, w) in [self.gen, self.off, self.len, self.dst].iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Decodes; `None` when `b` is not 32 bytes.
    pub fn decode(b: &[u8]) -> Option<Cts> {
        if b.len() != Self::BYTES {
            return None;
        }
        let w = |i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().ok()?))
        };
        Some(Cts {
            gen: w(0)?,
            off: w(1)?,
            len: w(2)?,
            dst: w(3)?,
        })
    }
}

/// A decoded envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Context id.
    pub ctx: u32,
    /// Sender's rank in the communicator.
    pub src: u32,
    /// Tag.
    pub tag: i32,
    /// Kind.
    pub kind: FrameKind,
    /// Token of a synchronous send or rendezvous (Sync, Rts and Ack).
    pub token: u32,
}

impl Header {
    /// Packs into the transport envelope.
    pub fn pack(&self) -> Envelope {
        let kind = match self.kind {
            FrameKind::Data => 0u32,
            FrameKind::Sync => 1,
            FrameKind::Ack => 2,
            FrameKind::Rts => 3,
            FrameKind::Cts => 4,
        };
        // As two words made in registers: built byte by byte, the
        // envelope went through the stack in 4-byte stores that the
        // header's 8- and 16-byte loads could not forward from (a stall
        // on the eager send's way to its header store).
        Envelope::from_words(
            u64::from(self.ctx) | u64::from(self.src) << 32,
            u64::from(self.tag as u32) | u64::from(kind | (self.token << 8)) << 32,
        )
    }

    /// Unpacks a transport envelope.
    pub fn unpack(e: &Envelope) -> Header {
        let w = |i: usize| u32::from_le_bytes(e.0[i..i + 4].try_into().expect("4 bytes"));
        let flags = w(12);
        Header {
            ctx: w(0),
            src: w(4),
            tag: w(8) as i32,
            kind: match flags & 0xff {
                1 => FrameKind::Sync,
                2 => FrameKind::Ack,
                3 => FrameKind::Rts,
                4 => FrameKind::Cts,
                _ => FrameKind::Data,
            },
            token: flags >> 8,
        }
    }

    /// Whether a receive for (`ctx`, `src`, `tag`), wildcards allowed,
    /// takes this message: the one match rule of MPI 4.1 §3.5.
    #[inline]
    pub fn matches(&self, ctx: u32, src: i32, tag: i32) -> bool {
        self.ctx == ctx
            && (src == ANY_SOURCE || src as u32 == self.src)
            && (tag == ANY_TAG || tag == self.tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendezvous_request_round_trips_with_and_without_its_offer() {
        for offer in [None, Some((63, u64::MAX >> 3))] {
            for (waits, share, timed) in [
                (false, false, false),
                (true, false, false),
                (true, true, false),
                (false, false, true),
                (true, false, true),
            ] {
                let r = Rts {
                    addr: 0x7fff_1234_5678,
                    len: (16 << 20) + 3,
                    offer,
                    waits,
                    share,
                    timed,
                };
                let (b, n) = r.encode();
                assert_eq!(n, if offer.is_some() { 28 } else { 16 });
                assert_eq!(Rts::decode(&b[..n]), Some(r));
                // The flags ride in the length's top three bits only.
                assert_eq!(b[15] & 0x80 != 0, waits);
                assert_eq!(b[15] & 0x40 != 0, share);
                assert_eq!(b[15] & 0x20 != 0, timed);
                assert_eq!(b[15] & 0x1f, 0);
            }
        }
        assert_eq!(Rts::decode(&[0; 20]), None);
    }

    #[test]
    fn header_round_trips_and_wildcards_match() {
        let h = Header {
            ctx: 7,
            src: 3,
            tag: 99,
            kind: FrameKind::Sync,
            token: 0x00ab_cdef,
        };
        assert_eq!(Header::unpack(&h.pack()), h);
        assert!(h.matches(7, 3, 99));
        assert!(h.matches(7, ANY_SOURCE, 99));
        assert!(h.matches(7, 3, ANY_TAG));
        assert!(!h.matches(8, 3, 99));
        assert!(!h.matches(7, 2, 99));
        assert!(!h.matches(7, 3, 98));
        let c = Header {
            kind: FrameKind::Cts,
            ..h
        };
        assert_eq!(Header::unpack(&c.pack()), c);
    }

    #[test]
    fn cts_round_trips() {
        let c = Cts {
            gen: 5,
            off: 36 << 10,
            len: 28 << 10,
            dst: 0x7fff_0000_1234,
        };
        assert_eq!(Cts::decode(&c.encode()), Some(c));
        assert_eq!(Cts::decode(&[0; 16]), None);
    }
}
