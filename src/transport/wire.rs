//! The wire header at the front of every transport frame.
//!
//! ```text
//! byte 0      kind: 1 = sole (a whole message), 2 = first fragment,
//!             3 = further fragment
//! bytes 1..8  reserved, zero
//! bytes 8..16 sole / first: the message's total length in bytes;
//!             further: the byte offset of this fragment in the message
//! bytes 16..32 the envelope: 16 opaque bytes chosen by the layer above
//!             (p2p puts context id, source, tag and flags there)
//! ```
//!
//! Fragments of one message follow each other on one ring with nothing in
//! between, so the receiver knows which message a further fragment belongs
//! to.

/// Bytes of the wire header.
pub const WIRE_HEADER: usize = 32;

/// 16 opaque bytes that travel with a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Envelope(pub [u8; 16]);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Sole = 1,
    First = 2,
    More = 3,
}

pub(crate) fn encode(kind: Kind, word: u64, env: &Envelope) -> [u8; WIRE_HEADER] {
    let mut h = [0u8; WIRE_HEADER];
    h[0] = kind as u8;
    h[8..16].copy_from_slice(&word.to_le_bytes());
    h[16..32].copy_from_slice(&env.0);
    h
}

pub(crate) fn decode(h: &[u8]) -> Option<(Kind, u64, Envelope)> {
    if h.len() < WIRE_HEADER {
        return None;
    }
    let kind = match h[0] {
        1 => Kind::Sole,
        2 => Kind::First,
        3 => Kind::More,
        _ => return None,
    };
    let word = u64::from_le_bytes(h[8..16].try_into().ok()?);
    let mut env = [0u8; 16];
    env.copy_from_slice(&h[16..32]);
    Some((kind, word, Envelope(env)))
}
