//! The wire header at the front of every transport frame.
//!
//! A whole message in one frame (sole) has the short form, 24 bytes, so
//! that with the ring's 8-byte frame word a message of up to 32 bytes is
//! one cache line:
//!
//! ```text
//! byte 0       kind: 1 = sole
//! bytes 1..8   reserved, zero
//! bytes 8..24  the envelope: 16 opaque bytes chosen by the layer above
//!              (p2p puts context id, source, tag and flags there)
//! bytes 24..   the payload; its length is the frame's, less 24
//! ```
//!
//! Fragments of a longer message have the long form, 32 bytes:
//!
//! ```text
//! byte 0       kind: 2 = first fragment, 3 = further fragment
//! bytes 1..8   reserved, zero
//! bytes 8..24  the envelope
//! bytes 24..32 first: the message's total length in bytes;
//!              further: the byte offset of this fragment in the message
//! ```
//!
//! Fragments of one message follow each other on one ring with nothing in
//! between, so the receiver knows which message a further fragment belongs
//! to.

/// Bytes of the wire header of a fragment (the long form).
pub const WIRE_HEADER: usize = 32;
/// Bytes of the wire header of a sole frame (the short form).
pub const SOLE_HEADER: usize = 24;

/// 16 opaque bytes that travel with a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Envelope(pub [u8; 16]);

impl Envelope {
    /// The envelope whose bytes are `lo` then `hi`, little-endian.
    #[inline(always)]
    pub fn from_words(lo: u64, hi: u64) -> Envelope {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&lo.to_le_bytes());
        b[8..].copy_from_slice(&hi.to_le_bytes());
        Envelope(b)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Sole = 1,
    First = 2,
    More = 3,
}

/// The short header of a sole frame: [`sole_words`]' bytes.
#[inline]
pub(crate) fn encode_sole(env: &Envelope) -> [u8; SOLE_HEADER] {
    let mut h = [0u8; SOLE_HEADER];
    for (d, w) in h.chunks_exact_mut(8).zip(sole_words(env)) {
        d.copy_from_slice(&w.to_le_bytes());
    }
    h
}

/// The short header of a sole frame as three words, little-endian: the
/// kind, then the envelope. What `Producer::push_quick` stores, one word
/// at a time.
#[inline(always)]
pub(crate) fn sole_words(env: &Envelope) -> [u64; SOLE_HEADER / 8] {
    let [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p] = env.0;
    [
        Kind::Sole as u64,
        u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        u64::from_le_bytes([i, j, k, l, m, n, o, p]),
    ]
}

/// The header of a sole frame (a whole message) with a given envelope,
/// as `encode_sole` writes it: what a receiver that knows the envelope
/// it waits for compares a frame's start with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoleHead(pub(crate) [u8; SOLE_HEADER]);

/// The [`SoleHead`] of messages with envelope `env`.
#[inline]
pub fn sole_head(env: &Envelope) -> SoleHead {
    SoleHead(encode_sole(env))
}

/// The long header of a fragment (`kind` First or More) with its word.
pub(crate) fn encode(kind: Kind, word: u64, env: &Envelope) -> [u8; WIRE_HEADER] {
    debug_assert!(kind != Kind::Sole, "sole frames have the short header");
    let mut h = [0u8; WIRE_HEADER];
    h[0] = kind as u8;
    h[8..24].copy_from_slice(&env.0);
    h[24..32].copy_from_slice(&word.to_le_bytes());
    h
}

/// Reads a frame's wire header: its kind, word (for a sole frame, the
/// payload length), envelope and the payload that follows.
#[inline]
pub(crate) fn decode(h: &[u8]) -> Option<(Kind, u64, Envelope, &[u8])> {
    if h.len() < SOLE_HEADER {
        return None;
    }
    let env = Envelope(h[8..24].try_into().ok()?);
    match h[0] {
        1 => Some((
            Kind::Sole,
            (h.len() - SOLE_HEADER) as u64,
            env,
            &h[SOLE_HEADER..],
        )),
        k @ (2 | 3) if h.len() >= WIRE_HEADER => {
            let word = u64::from_le_bytes(h[24..32].try_into().ok()?);
            let kind = if k == 2 { Kind::First } else { Kind::More };
            Some((kind, word, env, &h[WIRE_HEADER..]))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sole_and_fragment_headers_read_back() {
        let env = Envelope(*b"0123456789abcdef");
        let mut sole = encode_sole(&env).to_vec();
        sole.extend_from_slice(b"payload");
        let (k, word, e, data) = decode(&sole).unwrap();
        assert_eq!((k, word, e, data), (Kind::Sole, 7, env, &b"payload"[..]));
        // An empty message is the header alone.
        let bare = encode_sole(&env);
        assert_eq!((bare[0], &bare[8..]), (Kind::Sole as u8, &env.0[..]));
        let (k, word, _, data) = decode(&bare).unwrap();
        assert_eq!((k, word, data.len()), (Kind::Sole, 0, 0));
        for kind in [Kind::First, Kind::More] {
            let mut frag = encode(kind, 1 << 40, &env).to_vec();
            frag.extend_from_slice(b"xy");
            let (k, word, e, data) = decode(&frag).unwrap();
            assert_eq!((k, word, e, data), (kind, 1 << 40, env, &b"xy"[..]));
        }
        // Too short, or an unknown kind: not a frame of this transport.
        assert!(decode(&[1; 23]).is_none());
        assert!(decode(&encode(Kind::First, 3, &env)[..31]).is_none());
        let mut bad = encode_sole(&env);
        bad[0] = 9;
        assert!(decode(&bad).is_none());
    }
}
