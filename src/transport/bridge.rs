//! Bridges between jobs (issue 8, `docs/connect.md`).
//!
//! Two jobs that connect get a *bridge*: one segment that both map, laid
//! out like a job segment over the members of both sides (`Layout` over
//! `a + b` ranks; only the rings between a rank of one side and a rank of
//! the other are used). Each side also maps the other job's segment, for
//! its ranks' control blocks (doorbells, pids, state) and context-id maps.
//!
//! In a [`Transport`], the other job's ranks become peers with indices
//! after this job's own (`size()`, `size() + 1`, ...): everything that
//! takes a peer index (send, poll, the direct receive, queues) works on
//! them unchanged. Their incoming rings are polled on every pass (the
//! receiver's pending bitmap is indexed by its own job's ranks, so a
//! remote sender sets no bit; its rings are marked watched, so it does
//! not try) and the sleeper watches their tails. A remote sender rings
//! the receiver's doorbell in the receiver's own segment, so the doorbell
//! protocol (`docs/memory-model.md`) is the same as within a job.
//!
//! Processes are named across jobs by a [`Gpid`]: the job id and the rank
//! in the job, ordered so that within a job the order is the world-rank
//! order.

use super::{ring_data, ring_header, HeaderPtr, Layout, Rx, Transport};
use crate::error::{Error, ErrorClass, Result};
use crate::ring;
use crate::shm::Segment;
use crate::sync::Ordering;
use std::ops::Range;
use std::sync::Arc;

/// How often a waiting process looks at its far peers for life: a dead
/// one is noticed within this (plus the wait's longest sleep, 100 ms).
pub const FAR_CHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// A process's name across jobs: job id in the high 64 bits, rank in the
/// job in the low ones.
pub type Gpid = u128;

/// The [`Gpid`] of `rank` of job `job`.
pub fn gpid(job: u64, rank: usize) -> Gpid {
    (u128::from(job) << 64) | rank as u128
}

/// One bridge of a transport.
#[derive(Debug)]
pub(super) struct Bridge {
    pub(super) seg: Arc<Segment>,
    pub(super) layout: Layout,
    /// This process's index in the bridge's layout.
    pub(super) me: usize,
    /// The other job's segment.
    pub(super) remote: Arc<Segment>,
    /// The peer indices of the other job's members.
    pub(super) peers: Range<usize>,
}

/// A peer reached through a bridge.
#[derive(Debug)]
pub(super) struct Far {
    pub(super) bridge: usize,
    /// Its index in the bridge's layout.
    pub(super) at: usize,
    /// Its rank in its own job.
    pub(super) rank: usize,
    /// Found dead (`check_far`).
    pub(super) dead: bool,
}

/// A bridge ring a sleeper watches: a new frame moves its `tail`
/// (incoming), room moves its `head` (outgoing, when blocked).
#[derive(Debug)]
pub(super) struct FarWatch {
    pub(super) seg: Arc<Segment>,
    pub(super) header: usize,
    pub(super) seen: u64,
    pub(super) head: bool,
}

impl FarWatch {
    pub(super) fn moved(&self) -> bool {
        // SAFETY: `header` came from the bridge's layout and lies in the
        // mapping that `seg` keeps alive; ring headers are all atomics.
        let h = unsafe { ring_header(&self.seg, self.header).as_ref() };
        if self.head {
            h.head_for_sleep() != self.seen
        } else {
            h.tail_for_sleep() != self.seen
        }
    }
}

/// What a transport needs to join a bridge.
#[derive(Debug, Clone)]
pub struct BridgeSpec {
    /// The bridge segment, mapped.
    pub seg: Arc<Segment>,
    /// Its layout (over the members of both sides).
    pub layout: Layout,
    /// This process's index in it.
    pub me: usize,
    /// The other job's segment, mapped.
    pub remote: Arc<Segment>,
    /// The other job's members: (index in the bridge layout, rank in
    /// their job), in the order their peer indices are to be given.
    pub members: Vec<(usize, usize)>,
}

impl Transport {
    /// Joins a bridge: prepares this process's incoming rings from the
    /// other side's members (reserves their pages here, initialises their
    /// headers) and gives those members peer indices, returned in the
    /// order of `spec.members`. The other side may send once every member
    /// of both sides has joined (the connection's handshake says so).
    ///
    /// # Errors
    /// `Intern` when the layout does not fit the segment or an index is
    /// out of range; `NoMem` when the rings' pages cannot be reserved.
    pub fn add_bridge(&mut self, spec: BridgeSpec) -> Result<Range<usize>> {
        let BridgeSpec {
            seg,
            layout,
            me,
            remote,
            members,
        } = spec;
        let intern = |m: String| Error::new(ErrorClass::Intern, m);
        if seg.len() != layout.size()
            || me >= layout.nranks()
            || members.iter().any(|&(at, r)| {
                at >= layout.nranks() || at == me || r >= remote.header().nranks() as usize
            })
        {
            return Err(intern(format!(
                "a bridge of {} ranks ({} bytes) does not fit this process at {me} and members {members:?}",
                layout.nranks(),
                seg.len()
            )));
        }
        let (roff, rlen) = layout.receiver_region(me);
        seg.reserve(roff, rlen)
            .map_err(|e| Error::new(ErrorClass::NoMem, format!("bridge rings: {e}")))?;
        // Mapped now, not by faults during the first lap (`Segment::populate`).
        seg.populate(roff, rlen);
        let cap = layout.ring_capacity();
        let id = self.bridges.len();
        let first = self.size() + self.far.len();
        for &(at, rank) in &members {
            let (h, d) = layout.ring(at, me);
            let hp = ring_header(&seg, h);
            // SAFETY: `hp` points into this process's region of the bridge,
            // just reserved; its producer (the remote member) opens it only
            // after the handshake that follows this call.
            unsafe { hp.as_ref() }.init(cap as u64);
            // A bridge ring is always polled: its producer never needs the
            // pending bitmap. Relaxed: published by the handshake.
            // SAFETY: as above; headers are all atomics.
            unsafe { hp.as_ref() }.watched().store(1, Ordering::Relaxed);
            let owner: ring::Owner = seg.clone();
            // SAFETY: header initialised above with `cap`, the data is `cap`
            // bytes in the reserved region, both live while `owner` does;
            // this process is the ring's only consumer.
            let c = unsafe { ring::consumer_at(hp, ring_data(&seg, d, cap), owner) }
                .map_err(|e| intern(e.to_string()))?;
            self.rx.push(Some(Rx {
                cons: c,
                hdr: HeaderPtr(hp),
                data_off: d,
            }));
            self.tx.push(None);
            self.rx_total.push(0);
            self.owed.push(0);
            self.peer_pools.push(std::sync::OnceLock::new());
            self.far.push(Some(Far {
                bridge: id,
                at,
                rank,
                dead: false,
            }));
        }
        let peers = first..first + members.len();
        self.bridges.push(Some(Bridge {
            seg,
            layout,
            me,
            remote,
            peers: peers.clone(),
        }));
        Ok(peers)
    }

    /// Leaves the bridge whose peers are `peers` (after every exchange on
    /// it is over: disconnect waits for that): its rings are dropped and
    /// its segments unmapped when nothing else holds them. The peer
    /// indices are not given out again.
    pub fn remove_bridge(&mut self, peers: Range<usize>) {
        let n = self.size();
        let Some(id) = self
            .bridges
            .iter()
            .position(|b| b.as_ref().is_some_and(|b| b.peers == peers))
        else {
            return;
        };
        for p in peers {
            self.drop_sends_to(p);
            self.rx[p] = None;
            self.tx[p] = None;
            self.far[p - n] = None;
            self.owed[p] = 0;
            self.rx_total[p] = 0;
            self.direct.retain(|&d| d != p);
        }
        self.bridges[id] = None;
    }

    /// Whether any peer of another job is reachable (waits then check
    /// them for life: [`check_far`](Self::check_far)).
    #[inline]
    pub fn has_far_peers(&self) -> bool {
        // Every live far peer keeps its bridge in the list; one load when
        // there is none (the hot path of every progress call).
        !self.bridges.is_empty() && self.bridges.iter().any(Option::is_some)
    }

    /// The far peers found dead since the last call: a peer whose process
    /// is gone, or whose control block says it aborted. Looks at most
    /// every [`FAR_CHECK`] (a `kill(pid, 0)` per peer); sends queued to a
    /// dead peer are dropped (their owners fail them).
    pub fn check_far(&mut self) -> Vec<usize> {
        let now = std::time::Instant::now();
        if self.far_checked.is_some_and(|t| now - t < FAR_CHECK) {
            return Vec::new();
        }
        self.far_checked = Some(now);
        let n = self.size();
        let mut dead = Vec::new();
        for i in 0..self.far.len() {
            let Some(f) = self.far[i].as_ref() else {
                continue;
            };
            let Some(b) = self.bridges[f.bridge].as_ref() else {
                continue;
            };
            if f.dead {
                continue;
            }
            let cb = b.remote.control(f.rank);
            let gone = cb.state() == crate::shm::RankState::Aborted
                || !crate::shm::os::process_alive(cb.pid());
            if gone {
                if let Some(f) = self.far[i].as_mut() {
                    f.dead = true;
                }
                dead.push(n + i);
            }
        }
        for &p in &dead {
            self.drop_sends_to(p);
        }
        dead
    }

    /// This process's and `peer`'s positions in their bridge's layout, and
    /// a tag both ends derive from the bridge (its id), for a peer of
    /// another job.
    pub fn bridge_position(&self, peer: usize) -> Option<(usize, usize, i32)> {
        let f = self.far.get(peer.checked_sub(self.size())?)?.as_ref()?;
        let b = self.bridges[f.bridge].as_ref()?;
        Some((b.me, f.at, (b.seg.spec().job_id & 0x3fff_ffff) as i32))
    }

    /// Whether `peer` was found dead.
    pub fn is_dead(&self, peer: usize) -> bool {
        peer >= self.size()
            && self
                .far
                .get(peer - self.size())
                .and_then(Option::as_ref)
                .is_some_and(|f| f.dead)
    }

    /// Forgets everything queued or open towards `peer` (dead, or its
    /// bridge gone): its ring will never drain.
    pub fn drop_sends_to(&mut self, peer: usize) {
        if let Some(tx) = self.tx[peer].as_mut() {
            let dropped = tx.queue.len();
            tx.queue.clear();
            tx.open = None;
            tx.stalled = false;
            tx.done_seq = tx.next_seq;
            self.queued -= dropped;
        }
        self.owed[peer] = 0;
    }

    /// All peer indices given out so far (this job's ranks, then every
    /// bridge's, live or not).
    pub fn peers(&self) -> usize {
        self.size() + self.far.len()
    }

    /// Whether `peer` is reachable now (this job's rank, or a member of a
    /// live bridge).
    pub fn is_peer(&self, peer: usize) -> bool {
        peer < self.size()
            || self
                .far
                .get(peer - self.size())
                .is_some_and(Option::is_some)
    }

    /// The job segment of `peer` and its rank there (where its control
    /// block and context-id map are).
    ///
    /// # Panics
    /// If `peer` is not reachable.
    pub fn home_of(&self, peer: usize) -> (Arc<Segment>, usize) {
        match peer.checked_sub(self.size()) {
            None => (self.seg.clone(), peer),
            Some(i) => {
                let f = self.far[i].as_ref().expect("a peer of a removed bridge");
                let b = self.bridges[f.bridge]
                    .as_ref()
                    .expect("bridge of a live peer");
                (b.remote.clone(), f.rank)
            }
        }
    }

    /// The job ids of the other ends of this process's live bridges.
    pub fn bridged_jobs(&self) -> Vec<u64> {
        self.bridges
            .iter()
            .flatten()
            .map(|b| b.remote.spec().job_id)
            .collect()
    }

    /// The peers of the live bridge to job `job`, if there is one.
    pub fn peer_range_of(&self, job: u64) -> Option<Range<usize>> {
        self.bridges
            .iter()
            .flatten()
            .find(|b| b.remote.spec().job_id == job)
            .map(|b| b.peers.clone())
    }

    /// The [`Gpid`] of `peer`.
    ///
    /// # Panics
    /// If `peer` is not reachable.
    pub fn gpid(&self, peer: usize) -> Gpid {
        let (seg, rank) = self.home_of(peer);
        gpid(seg.spec().job_id, rank)
    }

    /// The peer index of the process named `g`, if it is reachable.
    pub fn peer_of(&self, g: Gpid) -> Option<usize> {
        let job = (g >> 64) as u64;
        let rank = (g & u128::from(u64::MAX)) as usize;
        if job == self.seg.spec().job_id {
            return (rank < self.size()).then_some(rank);
        }
        self.far.iter().enumerate().find_map(|(i, f)| {
            let f = f.as_ref()?;
            let b = self.bridges[f.bridge].as_ref()?;
            (f.rank == rank && b.remote.spec().job_id == job).then_some(self.size() + i)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::segment_path;
    use crate::transport::{Envelope, Sent};
    use std::time::{Duration, Instant};

    const RING: usize = 16 << 10;

    fn job(tag: u64, n: usize) -> (Arc<Segment>, Layout) {
        let layout = Layout::new(n, RING).unwrap();
        let id = (u64::from(std::process::id()) << 16) | tag;
        let path = segment_path(std::path::Path::new("/dev/shm"), id);
        let _ = std::fs::remove_file(&path);
        let seg = Arc::new(Segment::create(&path, layout.spec(id)).unwrap());
        seg.unlink();
        (seg, layout)
    }

    fn message(seq: u64) -> Vec<u8> {
        let len = match seq % 7 {
            0 => 3 * RING + (seq as usize % 1000),
            _ => (seq as usize * 37) % 500,
        };
        (0..len).map(|i| (i as u64 ^ seq) as u8).collect()
    }

    /// Two one-rank "jobs" with their own segments and a bridge: messages
    /// both ways, fragmented ones included, arrive whole and in order; a
    /// receiver asleep on its doorbell is woken by the other job.
    #[test]
    fn two_jobs_talk_over_a_bridge() {
        let (a_seg, a_lay) = job(0xa1, 1);
        let (b_seg, b_lay) = job(0xb2, 1);
        let (br, br_lay) = job(0xc3, 2);
        let mut a = Transport::new(a_seg.clone(), a_lay, 0).unwrap();
        let mut b = Transport::new(b_seg.clone(), b_lay, 0).unwrap();
        let pa = a
            .add_bridge(BridgeSpec {
                seg: br.clone(),
                layout: br_lay,
                me: 0,
                remote: b_seg.clone(),
                members: vec![(1, 0)],
            })
            .unwrap();
        let pb = b
            .add_bridge(BridgeSpec {
                seg: br.clone(),
                layout: br_lay,
                me: 1,
                remote: a_seg.clone(),
                members: vec![(0, 0)],
            })
            .unwrap();
        assert_eq!((pa.clone(), pb.clone()), (1..2, 1..2));
        assert_eq!(a.gpid(1), b.gpid(0));
        assert_eq!(a.peer_of(b.gpid(0)), Some(1));
        assert_eq!(b.peer_of(a.gpid(0)), Some(1));
        const COUNT: u64 = 400;
        let deadline = Instant::now() + Duration::from_secs(60);
        let sender = std::thread::spawn(move || {
            for seq in 0..COUNT {
                let data = message(seq);
                let env = Envelope([seq as u8; 16]);
                if let Sent::Partial(mut out) = a.send(1, &env, &data) {
                    while !a.resume(&mut out, &data) {
                        assert!(Instant::now() < deadline, "send stalled");
                        a.poll(16, &mut |_| {});
                        std::thread::yield_now();
                    }
                }
                if seq == COUNT / 2 {
                    // Let the receiver fall asleep on its doorbell.
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            // The reply, the other way.
            let mut got = None;
            while got.is_none() {
                assert!(Instant::now() < deadline, "no reply");
                a.poll(16, &mut |m| got = Some((m.peer, m.data.to_vec())));
            }
            assert_eq!(got, Some((1, b"done".to_vec())));
            a.remove_bridge(pa);
            assert!(!a.is_peer(1));
        });
        let mut next = 0u64;
        let mut buf = Vec::new();
        while next < COUNT {
            assert!(Instant::now() < deadline, "receiver stalled at {next}");
            let n = b.poll(64, &mut |m| {
                assert_eq!(m.peer, 1);
                if m.is_first() {
                    buf.clear();
                }
                buf.extend_from_slice(m.data);
                if m.is_last() {
                    assert_eq!(buf, message(next), "message {next}");
                    next += 1;
                }
            });
            if n == 0 {
                let s = b.sleeper(false);
                s.sleep(&b_seg, Duration::from_millis(200), || false);
            }
        }
        assert!(matches!(b.send(1, &Envelope([0; 16]), b"done"), Sent::Done));
        sender.join().unwrap();
        b.remove_bridge(pb);
    }
}
