//! Connecting jobs (MPI 4.1 §11.10, issue 8, `docs/connect.md`):
//! `accept` / `connect` over a port (`job::names`), which join two jobs by
//! a bridge (`transport::bridge`) and give an intercommunicator; the
//! links that connected processes keep, and their release by
//! `disconnect`.
//!
//! # The handshake
//!
//! Only the roots talk over the port's socket; each then tells its own
//! group over the local communicator.
//!
//! 1. The connecting root sends its job's segment (path and shape) and
//!    its group's ranks in that job.
//! 2. The accepting root makes the bridge segment (the acceptor's members
//!    first in its layout, then the connector's), maps the other job's
//!    segment, joins the bridge, and claims one context index in the maps
//!    of every member of both sides (the other job's maps are in its
//!    segment, which it now maps). It answers with the verdict, the
//!    bridge, its own segment and its group.
//! 3. Each root broadcasts what it learnt to its group; every member maps
//!    the bridge and the other segment and joins the bridge (its incoming
//!    rings are ready then).
//! 4. Each group gathers whether all its members joined; the roots swap
//!    "ready" (or "fail!"), and each root broadcasts whether both groups
//!    are ready: from then on anyone may send. The accepting root removes
//!    the bridge's file name (every member has it mapped), so nothing is
//!    left in /dev/shm whatever happens later. When anything fails part
//!    way, every member leaves the bridge and gives its bit of the claimed
//!    context index back (a root whose group never learnt the index takes
//!    back the bits the claim set), and both groups get the error.
//!
//! The bridge's rings are at least as large as either job's own, so every
//! fragment either side cuts fits them. The connecting root also names the
//! jobs it is bridged to already, and a second bridge between two jobs is
//! refused (`Unsupported`).
//!
//! # Links
//!
//! Each process counts, per bridge, the communicators that include
//! members of the other job. A communicator freed without `disconnect`
//! leaves its processes connected (MPI 4.1 §11.10.4), so it marks the
//! bridge as kept for the life of the process; when the last communicator
//! over a bridge is disconnected and none was merely freed, the bridge's
//! rings and the other job's segment are unmapped: the jobs are
//! independent again.

use super::{attr, lock, Communicator, Kind};
use crate::error::{Error, ErrorClass, Result};
use crate::job::names::{self, Port};
use crate::shm::{segment_path, Segment, SegmentSpec};
use crate::transport::bridge::BridgeSpec;
use crate::transport::Layout;
use std::io::Read;
use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a root waits for the other root in the middle of a handshake
/// (the other job may have died); waiting for a job to connect at all has
/// no bound, as MPI says.
const HANDSHAKE: Duration = Duration::from_secs(60);

/// One bridge of this process, and what holds it.
#[derive(Debug)]
struct Link {
    peers: Range<usize>,
    /// Live communicators that include its members.
    held: usize,
    /// A communicator over it was freed without `disconnect`: connected
    /// for good.
    kept: bool,
}

/// This process's links to other jobs.
#[derive(Debug, Default)]
pub(crate) struct Links(Vec<Link>);

impl Links {
    /// Counts a new communicator over `members` (peer indices); the links
    /// it holds.
    pub(crate) fn hold(&mut self, members: impl Iterator<Item = usize>) -> Vec<usize> {
        let mut held = Vec::new();
        for m in members {
            if let Some(i) = self.0.iter().position(|l| l.peers.contains(&m)) {
                if !held.contains(&i) {
                    held.push(i);
                }
            }
        }
        for &i in &held {
            self.0[i].held += 1;
        }
        held
    }

    /// Lets go of `held` for a communicator that was `disconnected` or
    /// merely freed; the bridges that nothing holds any more.
    pub(crate) fn release(&mut self, held: &[usize], disconnected: bool) -> Vec<Range<usize>> {
        let mut gone = Vec::new();
        for &i in held {
            let l = &mut self.0[i];
            l.held -= 1;
            l.kept |= !disconnected;
            if l.held == 0 && !l.kept {
                gone.push(l.peers.clone());
                // The slot stays (indices are positions), emptied.
                l.peers = 0..0;
            }
        }
        gone
    }

    /// Whether any job is still connected to this process.
    pub(crate) fn any(&self) -> bool {
        self.0.iter().any(|l| !l.peers.is_empty())
    }

    /// The peers of every bridge still held or kept.
    fn live(&self) -> Vec<Range<usize>> {
        self.0
            .iter()
            .filter(|l| !l.peers.is_empty())
            .map(|l| l.peers.clone())
            .collect()
    }
}

/// A writer of handshake messages.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn u64(&mut self, v: u64) -> &mut Msg {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Msg {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    fn path(&mut self, p: &Path) -> &mut Msg {
        self.bytes(p.as_os_str().as_encoded_bytes())
    }
    fn spec(&mut self, s: &SegmentSpec) -> &mut Msg {
        self.u64(s.size)
            .u64(s.layout_digest)
            .u64(u64::from(s.nranks))
            .u64(s.job_id)
    }
    fn ranks(&mut self, r: &[usize]) -> &mut Msg {
        self.u64(r.len() as u64);
        for &x in r {
            self.u64(x as u64);
        }
        self
    }
}

/// A reader of handshake messages.
struct Rd<'a>(&'a [u8]);

fn garbled() -> Error {
    Error::new(ErrorClass::Intern, "a garbled connection handshake")
}

impl Rd<'_> {
    fn u64(&mut self) -> Result<u64> {
        let (h, t) = self.0.split_at_checked(8).ok_or_else(garbled)?;
        self.0 = t;
        Ok(u64::from_le_bytes(h.try_into().expect("8 bytes")))
    }
    fn bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.u64()? as usize;
        let (h, t) = self.0.split_at_checked(n).ok_or_else(garbled)?;
        self.0 = t;
        Ok(h.to_vec())
    }
    fn path(&mut self) -> Result<PathBuf> {
        let b = self.bytes()?;
        Ok(PathBuf::from(String::from_utf8(b).map_err(|_| garbled())?))
    }
    fn spec(&mut self) -> Result<SegmentSpec> {
        Ok(SegmentSpec {
            size: self.u64()?,
            layout_digest: self.u64()?,
            nranks: u32::try_from(self.u64()?).map_err(|_| garbled())?,
            job_id: self.u64()?,
        })
    }
    fn ranks(&mut self) -> Result<Vec<usize>> {
        let n = self.u64()? as usize;
        if n > crate::shm::MAX_RANKS {
            return Err(garbled());
        }
        (0..n).map(|_| self.u64().map(|x| x as usize)).collect()
    }
}

fn port_err(what: &str, e: std::io::Error) -> Error {
    Error::new(
        ErrorClass::Port,
        format!("the other job's root went away during the connection ({what}: {e})"),
    )
}

fn send_msg(s: &mut UnixStream, m: &[u8]) -> Result<()> {
    use std::os::fd::AsRawFd;
    let fd = s.as_raw_fd();
    crate::shm::os::send_all(fd, &(m.len() as u64).to_le_bytes())
        .and_then(|()| crate::shm::os::send_all(fd, m))
        .map_err(|e| port_err("write", e))
}

fn recv_msg(s: &mut UnixStream) -> Result<Vec<u8>> {
    let mut len = [0u8; 8];
    s.read_exact(&mut len).map_err(|e| port_err("read", e))?;
    let n = u64::from_le_bytes(len) as usize;
    if n > 64 << 20 {
        return Err(garbled());
    }
    let mut m = vec![0u8; n];
    s.read_exact(&mut m).map_err(|e| port_err("read", e))?;
    Ok(m)
}

fn attach(path: &Path, spec: SegmentSpec, what: &str) -> Result<Arc<Segment>> {
    // A held segment is named `/proc/<pid>/fd/<fd>` in the handshake.
    let held = path
        .to_str()
        .and_then(|p| p.strip_prefix("/proc/"))
        .and_then(|p| p.split_once("/fd/"))
        .and_then(|(pid, fd)| Some((pid.parse().ok()?, fd.parse().ok()?)));
    let r = match held {
        Some((pid, fd)) => Segment::attach_held(pid, fd, spec),
        None => Segment::attach(path, spec),
    };
    r.map(Arc::new).map_err(|e| {
        Error::new(
            ErrorClass::Other,
            format!("cannot map {what} {}: {e}", path.display()),
        )
    })
}

/// What a root learns in the handshake, as its group gets it.
struct Joined {
    verdict: [u8; 8],
    bridge: PathBuf,
    bridge_spec: SegmentSpec,
    remote: PathBuf,
    remote_spec: SegmentSpec,
    remote_ranks: Vec<usize>,
    /// Where this side's members start in the bridge's layout, and the
    /// other side's.
    mine_at: usize,
    theirs_at: usize,
    /// The bridge's ring capacity.
    cap: usize,
    /// At the accepting root: the bridge it made (its name goes once both
    /// sides have mapped it).
    made: Option<Segment>,
    /// At a root: the peers it got by joining the bridge.
    peers: Option<Range<usize>>,
}

impl Joined {
    fn encode(&self) -> Vec<u8> {
        let mut m = Msg::default();
        m.0.extend_from_slice(&self.verdict);
        m.path(&self.bridge)
            .spec(&self.bridge_spec)
            .path(&self.remote)
            .spec(&self.remote_spec)
            .ranks(&self.remote_ranks)
            .u64(self.mine_at as u64)
            .u64(self.theirs_at as u64)
            .u64(self.cap as u64);
        m.0
    }

    fn decode(b: &[u8]) -> Result<Joined> {
        let (v, rest) = b.split_at_checked(8).ok_or_else(garbled)?;
        let mut r = Rd(rest);
        Ok(Joined {
            verdict: v.try_into().expect("8 bytes"),
            bridge: r.path()?,
            bridge_spec: r.spec()?,
            remote: r.path()?,
            remote_spec: r.spec()?,
            remote_ranks: r.ranks()?,
            mine_at: r.u64()? as usize,
            theirs_at: r.u64()? as usize,
            cap: r.u64()? as usize,
            made: None,
            peers: None,
        })
    }
}

/// A handshake outcome on the wire: 0 and the join, or 1, the error
/// class and its words.
fn outcome_msg(r: &Result<Joined>) -> Vec<u8> {
    match r {
        Ok(j) => {
            let mut m = vec![0u8];
            m.extend(j.encode());
            m
        }
        Err(e) => {
            let mut m = vec![1u8];
            m.extend_from_slice(&e.class().code().to_le_bytes());
            m.extend_from_slice(e.detail().as_bytes());
            m
        }
    }
}

fn read_outcome(b: &[u8]) -> Result<Joined> {
    match b.split_first() {
        Some((0, rest)) => Joined::decode(rest),
        Some((1, rest)) if rest.len() >= 4 => {
            let code = i32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
            Err(Error::new(
                ErrorClass::from_code(code).unwrap_or(ErrorClass::Other),
                String::from_utf8_lossy(&rest[4..]).into_owned(),
            ))
        }
        _ => Err(garbled()),
    }
}

impl Communicator {
    /// `MPI_Comm_accept`: waits at `root` for a job to connect to `port`
    /// (significant at `root` only; no bound on the wait, as MPI says),
    /// and gives the intercommunicator to the connecting group.
    /// Collective over this communicator.
    ///
    /// # Errors
    /// `Root`, `Port` (no port at the root, or the other root vanished),
    /// `Unsupported` when this communicator reaches beyond this job,
    /// `Other` when no context id is free; every member gets the root's
    /// error.
    pub fn accept(&self, port: Option<&Port>, root: i32) -> Result<Communicator> {
        let r = self.join_jobs(root, true, || {
            port.ok_or_else(|| Error::new(ErrorClass::Port, "no port given at the root"))?
                .accept(None)
        });
        self.ret("MPI_Comm_accept", r)
    }

    /// `MPI_Comm_connect`: connects this group to the job accepting on
    /// `port_name` (significant at `root` only), waiting up to `timeout`
    /// for the port to exist. Collective over this communicator.
    ///
    /// # Errors
    /// As [`accept`](Self::accept); `Port` for a name that is not an open
    /// port within `timeout`.
    pub fn connect(&self, port_name: &str, root: i32, timeout: Duration) -> Result<Communicator> {
        let r = self.join_jobs(root, false, || names::connect(port_name, timeout));
        self.ret("MPI_Comm_connect", r)
    }

    /// `MPI_Comm_join`: this process and the one at the other end of
    /// `stream` (any connected stream socket) get an intercommunicator of
    /// the two, like `accept` / `connect` over this communicator (`SELF`
    /// in MPI); the one with the lower cross-job name accepts.
    ///
    /// # Errors
    /// As [`accept`](Self::accept).
    pub fn join(&self, mut stream: UnixStream) -> Result<Communicator> {
        let r = (|| {
            if self.size() != 1 {
                return Err(Error::new(
                    ErrorClass::Comm,
                    "MPI_Comm_join joins single processes (call it on MPI_COMM_SELF)",
                ));
            }
            stream
                .set_read_timeout(Some(HANDSHAKE))
                .map_err(|e| port_err("socket", e))?;
            let me = self.gpid(self.proc_.p2p.world_rank());
            send_msg(&mut stream, &me.to_le_bytes())?;
            let theirs = recv_msg(&mut stream)?;
            let theirs = u128::from_le_bytes(theirs.try_into().map_err(|_| garbled())?);
            self.join_jobs(0, me < theirs, || Ok(stream))
        })();
        self.ret("MPI_Comm_join", r)
    }

    pub(super) fn join_jobs(
        &self,
        root: i32,
        accepting: bool,
        socket: impl FnOnce() -> Result<UnixStream>,
    ) -> Result<Communicator> {
        self.proc_.check()?;
        let what = if accepting {
            "MPI_Comm_accept"
        } else {
            "MPI_Comm_connect"
        };
        if self.is_inter() {
            return Err(Error::new(
                ErrorClass::Comm,
                format!("{what} needs an intracommunicator"),
            ));
        }
        let root = self.root_of(root)?;
        let c = self.coll();
        let job_size = self.proc_.segment().header().nranks() as usize;
        let mine = self.inner.group.world_ranks().to_vec();
        let at_root = self.ctx.rank == root;
        // The root does the talking; the others learn the outcome.
        let mut msg = Vec::new();
        let mut stream = None;
        let mut made = None;
        let mut root_peers = None;
        if at_root {
            let r = if mine.iter().any(|&w| w >= job_size) {
                Err(Error::new(
                    ErrorClass::Unsupported,
                    format!("{what} over a communicator that reaches another job"),
                ))
            } else {
                socket().and_then(|mut s| {
                    let mut j = if accepting {
                        s.set_read_timeout(Some(HANDSHAKE))
                            .map_err(|e| port_err("socket", e))?;
                        self.accept_root(&mut s, &mine)?
                    } else {
                        self.connect_root(&mut s, &mine)?
                    };
                    stream = Some(s);
                    made = j.made.take();
                    root_peers = j.peers.take();
                    Ok(j)
                })
            };
            msg = outcome_msg(&r);
        }
        if let Err(e) = super::inter::bcast_vec(&c, root, &mut msg) {
            self.undo_join(root_peers, None);
            return Err(e);
        }
        let j = read_outcome(&msg)?;
        let index = match super::create::read_verdict(&j.verdict, what) {
            Ok(i) => i,
            Err(e) => {
                self.undo_join(root_peers, None);
                return Err(e);
            }
        };
        // Every member joins the bridge (the root did already); within
        // one job the other group's members are world ranks already.
        let same_job = j.remote_spec.job_id == self.proc_.segment().spec().job_id;
        let joined: Result<Vec<usize>> = if same_job {
            Ok(j.remote_ranks.clone())
        } else if at_root {
            root_peers
                .clone()
                .map(Iterator::collect)
                .ok_or_else(garbled)
        } else {
            self.join_bridge(&j, self.ctx.rank).map(|p| {
                root_peers = Some(p.clone());
                p.collect()
            })
        };
        // Whether every member of this group joined; then whether both
        // groups did (the roots swap a word). Nobody sends before both.
        let mut oks = vec![0u8; self.size() as usize];
        let gathered = c.allgather_t(&[u8::from(joined.is_ok())], &mut oks);
        let mine_ok = gathered.is_ok() && oks.iter().all(|&o| o == 1);
        let mut both = [u8::from(mine_ok)];
        if let Some(s) = stream.as_mut() {
            let word: &[u8] = if mine_ok { b"ready" } else { b"fail!" };
            let theirs_ok = send_msg(s, word)
                .and_then(|()| recv_msg(s))
                .is_ok_and(|w| w == b"ready");
            both[0] = u8::from(mine_ok && theirs_ok);
            if both[0] == 1 {
                if let Some(b) = made.take() {
                    b.unlink();
                }
            }
        }
        let told = c.bcast_t(root, &mut both);
        match (joined, gathered, told, both[0]) {
            (Ok(peers), Ok(()), Ok(()), 1) => Ok(self.inter_child(
                index,
                self.inner.group.clone(),
                peers,
                attr::Cache::default(),
            )),
            (joined, gathered, told, _) => {
                self.undo_join(if same_job { None } else { root_peers }, Some(index));
                Err(joined
                    .err()
                    .or(gathered.err())
                    .or(told.err())
                    .unwrap_or_else(|| {
                        Error::new(
                            ErrorClass::Port,
                            format!("{what}: a member of one of the two groups could not join"),
                        )
                    }))
            }
        }
    }

    /// Undoes a join that failed part way: leaves the bridge (`peers`) and
    /// gives back this process's bit of the claimed context `index`.
    fn undo_join(&self, peers: Option<Range<usize>>, index: Option<u32>) {
        if let Some(p) = peers {
            lock(&self.proc_.links).0.retain(|l| l.peers != p);
            self.proc_.p2p.lock().remove_bridge(p);
        }
        if let Some(i) = index {
            super::context::release(&self.proc_.p2p, i);
        }
    }

    /// Maps the bridge and the other job's segment and joins the bridge at
    /// position `j.mine_at + rank`; the other side's peer indices.
    fn join_bridge(&self, j: &Joined, rank: usize) -> Result<Range<usize>> {
        let bridge = attach(&j.bridge, j.bridge_spec, "the bridge")?;
        let remote = attach(&j.remote, j.remote_spec, "the other job's segment")?;
        let n = j.bridge_spec.nranks as usize;
        let layout = Layout::new(n, j.cap).map_err(|e| Error::new(ErrorClass::Intern, e))?;
        if layout.digest() != j.bridge_spec.layout_digest {
            return Err(Error::new(
                ErrorClass::Intern,
                "the bridge's layout differs from this process's (different shmpi builds?)",
            ));
        }
        let members = j
            .remote_ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| (j.theirs_at + i, r))
            .collect();
        let peers = self.proc_.p2p.lock().add_bridge(BridgeSpec {
            seg: bridge,
            layout,
            me: j.mine_at + rank,
            remote,
            members,
        })?;
        lock(&self.proc_.links).0.push(Link {
            peers: peers.clone(),
            held: 0,
            kept: false,
        });
        Ok(peers)
    }

    /// The connecting root's half of the handshake: sends how to reach
    /// this job, its group, its ring capacity and the jobs it is bridged
    /// to already; waits (without a bound, as MPI's connect does once the
    /// port exists) for the answer, and joins the bridge.
    fn connect_root(&self, s: &mut UnixStream, mine: &[usize]) -> Result<Joined> {
        let seg = self.proc_.segment();
        let (cap, bridged) = {
            let e = self.proc_.p2p.lock();
            (e.transport().ring_capacity(), e.transport().bridged_jobs())
        };
        let mut m = Msg::default();
        m.path(&held_path(seg))
            .spec(seg.spec())
            .ranks(mine)
            .u64(cap as u64)
            .u64(bridged.len() as u64);
        for b in &bridged {
            m.u64(*b);
        }
        send_msg(s, &m.0)?;
        let j = read_outcome(&recv_msg(s)?)?;
        s.set_read_timeout(Some(HANDSHAKE))
            .map_err(|e| port_err("socket", e))?;
        let index = super::create::read_verdict(&j.verdict, "MPI_Comm_connect")?;
        // The acceptor wrote it from its side: turn it round.
        let mut j = Joined {
            mine_at: j.theirs_at,
            theirs_at: j.mine_at,
            ..j
        };
        if j.remote_spec.job_id != seg.spec().job_id {
            match self.join_bridge(&j, self.ctx.rank) {
                Ok(p) => j.peers = Some(p),
                Err(e) => {
                    // The group never learns the index: take its bits back.
                    super::context::unclaim(&self.proc_.p2p, mine, index);
                    return Err(e);
                }
            }
        }
        Ok(j)
    }

    /// The accepting root's half of the handshake.
    fn accept_root(&self, s: &mut UnixStream, mine: &[usize]) -> Result<Joined> {
        let hello = recv_msg(s)?;
        let mut r = Rd(&hello);
        let (remote, remote_spec, theirs) = (r.path()?, r.spec()?, r.ranks()?);
        let their_cap = r.u64()? as usize;
        let their_bridges: Vec<u64> = (0..r.u64()?.min(4096))
            .map(|_| r.u64())
            .collect::<Result<_>>()?;
        let seg = self.proc_.segment();
        let outcome = (|| {
            if remote_spec.job_id == seg.spec().job_id {
                // Two groups of this job: no bridge, the members are world
                // ranks; one index for both.
                if theirs.iter().any(|w| mine.contains(w)) {
                    return Err(Error::new(
                        ErrorClass::Group,
                        "the accepting and connecting groups overlap",
                    ));
                }
                let mut all = mine.to_vec();
                all.extend_from_slice(&theirs);
                let index = super::context::claim(&self.proc_.p2p, &all);
                return Ok(Joined {
                    verdict: super::create::verdict(&index),
                    bridge: PathBuf::new(),
                    bridge_spec: remote_spec,
                    remote: PathBuf::new(),
                    remote_spec,
                    remote_ranks: theirs.clone(),
                    mine_at: 0,
                    theirs_at: 0,
                    cap: 0,
                    made: None,
                    peers: None,
                });
            }
            let (my_cap, already) = {
                let e = self.proc_.p2p.lock();
                let t = e.transport();
                (
                    t.ring_capacity(),
                    t.peer_range_of(remote_spec.job_id).is_some()
                        || their_bridges.contains(&seg.spec().job_id),
                )
            };
            if already {
                return Err(Error::new(
                    ErrorClass::Unsupported,
                    "this job is already connected to that job (a second connection between \
                     the same two jobs is not supported yet)",
                ));
            }
            let (a, b) = (mine.len(), theirs.len());
            let n = a + b;
            // At least either job's own ring: every fragment either side
            // cuts fits a bridge ring.
            let cap = crate::transport::default_ring_capacity(n)
                .max(my_cap)
                .max(their_cap);
            let layout = Layout::new(n, cap).map_err(|e| Error::new(ErrorClass::Other, e))?;
            // Named like a job segment, with a fresh id of the launcher's kind.
            let id = crate::job::spawn::job_id();
            let path = segment_path(&crate::job::env::shm_dir(), id);
            let spec = layout.spec(id);
            let made = Segment::create(&path, spec).map_err(|e| {
                Error::new(
                    ErrorClass::NoMem,
                    format!("cannot make the bridge {}: {e}", path.display()),
                )
            })?;
            let mut j = Joined {
                verdict: [0; 8],
                bridge: path.clone(),
                bridge_spec: spec,
                remote: remote.clone(),
                remote_spec,
                remote_ranks: theirs.clone(),
                mine_at: 0,
                theirs_at: a,
                cap,
                made: Some(made),
                peers: None,
            };
            // (A failure drops `made`, which removes the file.)
            let peers = self.join_bridge(&j, self.ctx.rank)?;
            // One index in the maps of every member of both sides.
            let mut all = mine.to_vec();
            all.extend(peers.clone());
            let index = super::context::claim(&self.proc_.p2p, &all);
            if let Err(e) = index {
                self.undo_join(Some(peers), None);
                return Err(e);
            }
            j.verdict = super::create::verdict(&index);
            j.peers = Some(peers);
            Ok(j)
        })();
        let j = match outcome {
            Ok(j) => j,
            Err(e) => {
                // Tell the other root why, then fail here too.
                let _ = send_msg(s, &outcome_msg(&Err(e.clone())));
                return Err(e);
            }
        };
        // The reply, from the connector's point of view written as ours
        // (it turns it round): our segment is its remote.
        let reply = Joined {
            verdict: j.verdict,
            bridge: j.bridge.clone(),
            bridge_spec: j.bridge_spec,
            remote: held_path(seg),
            remote_spec: *seg.spec(),
            remote_ranks: mine.to_vec(),
            mine_at: j.mine_at,
            theirs_at: j.theirs_at,
            cap: j.cap,
            made: None,
            peers: None,
        };
        if let Err(e) = send_msg(s, &outcome_msg(&Ok(reply))) {
            // The connector went away: nobody learns the index, so take
            // back every bit the claim set, then leave the bridge.
            if let Ok(i) = super::create::read_verdict(&j.verdict, "MPI_Comm_accept") {
                let mut all = mine.to_vec();
                all.extend(j.peers.clone().into_iter().flatten());
                super::context::unclaim(&self.proc_.p2p, &all, i);
            }
            self.undo_join(j.peers.clone(), None);
            return Err(e);
        }
        Ok(j)
    }

    /// `MPI_Abort` on this communicator: ends this job and, best effort,
    /// the jobs of its members in other jobs (their launchers see the
    /// mark and end them); an independent job is never touched.
    pub fn abort(&self, code: i32) -> ! {
        let job = self.proc_.segment().header().nranks() as usize;
        let mut members: Vec<usize> = self.inner.group.world_ranks().to_vec();
        if let Kind::Inter { remote, .. } = &self.inner.kind {
            members.extend_from_slice(remote.world_ranks());
        }
        let homes: Vec<_> = {
            let e = self.proc_.p2p.lock();
            members
                .into_iter()
                .filter(|&p| p >= job && e.transport().is_peer(p))
                .map(|p| e.transport().home_of(p))
                .collect()
        };
        for (seg, r) in homes {
            crate::job::bootstrap::abort_mark(&seg, r, code);
        }
        let me = self.proc_.p2p.world_rank();
        crate::job::bootstrap::abort_mark(self.proc_.segment(), me, code);
        crate::error::say(format_args!(
            "shmpi: rank {me} called abort with error code {code}"
        ));
        std::process::exit(crate::job::abort_status(code));
    }

    /// Marks this communicator disconnected (its links are let go without
    /// keeping the jobs connected when its last handle goes).
    pub(crate) fn mark_disconnected(&self) {
        // Relaxed: read by this process's own drop of the last handle.
        self.inner
            .disconnected
            .store(1, crate::sync::Ordering::Relaxed);
    }
}

/// How the other job reaches this job's segment: through this process's
/// descriptor of it (its name is gone).
fn held_path(seg: &Segment) -> PathBuf {
    PathBuf::from(format!("/proc/{}/fd/{}", std::process::id(), seg.fd()))
}

/// The context of the finalize meeting between connected jobs (bit 29,
/// which no communicator's id has).
const MEET_CTX: u32 = super::context::FOREIGN_BIT;

/// `finalize` is collective over connected processes (MPI 4.1 §11.10.4):
/// before its job's own barrier, a process that is still connected to
/// other jobs (communicators freed without `disconnect`) sends every
/// member of those jobs it has a bridge to a token and waits for theirs;
/// a member that died is passed over (its token fails with
/// `ProcFailed`). The other job's members do the same in their
/// `finalize`, and each job's barrier spreads the wait to its other
/// ranks.
///
/// # Errors
/// A failed send or receive other than a dead peer's.
pub(crate) fn meet_connected(proc_: &super::Process) -> Result<()> {
    let live = lock(&proc_.links).live();
    if live.is_empty() {
        return Ok(());
    }
    let sh = &proc_.p2p;
    // Source: the position in the bridge; tag: the bridge's own, so the
    // tokens of different bridges never match each other.
    let pos: Vec<(usize, usize, usize, i32)> = {
        let e = sh.lock();
        live.into_iter()
            .flatten()
            .filter_map(|p| {
                let (me, at, tag) = e.transport().bridge_position(p)?;
                (!e.transport().is_dead(p)).then_some((p, me, at, tag))
            })
            .collect()
    };
    for &(p, me, _, tag) in &pos {
        match sh.send_bytes(MEET_CTX, me as u32, p, tag, &[], false) {
            Err(e) if e.class() != ErrorClass::ProcFailed => return Err(e),
            _ => {}
        }
    }
    for &(p, _, at, tag) in &pos {
        match sh.recv_bytes(MEET_CTX, at as i32, Some(p), tag, &mut []) {
            Err(e) if e.class() != ErrorClass::ProcFailed => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Tells the engine which members of a communicator's contexts are in
/// other jobs (`release_links` forgets them with the communicator). When one of them
/// dies, an `ANY_SOURCE` receive on the point-to-point context fails, and
/// every receive on its collective contexts (a collective over a
/// communicator with a dead member fails at every live member instead of
/// leaving some waiting for the others).
pub(super) fn note_far_contexts(proc_: &super::Process, ctx: &crate::p2p::Context, kind: &Kind) {
    let job = proc_.segment().header().nranks() as usize;
    let far =
        |ranks: &[usize]| -> Vec<usize> { ranks.iter().copied().filter(|&w| w >= job).collect() };
    let mut all = far(&ctx.ranks);
    if let Kind::Inter { local, .. } = kind {
        all.extend(far(&local.ranks));
    }
    let mut e = proc_.p2p.lock();
    e.note_far_members(ctx.id, far(&ctx.ranks));
    e.note_far_members(ctx.coll_id(), all.clone());
    if let Kind::Inter { local, .. } = kind {
        e.note_far_members(local.id, all.clone());
        e.note_far_members(local.coll_id(), all);
    }
}

/// Lets go of the links a communicator's last handle held.
pub(super) fn release_links(c: &super::Inner) {
    if c.links.is_empty() {
        return;
    }
    // Relaxed: see `mark_disconnected`.
    let disconnected = c.disconnected.load(crate::sync::Ordering::Relaxed) != 0;
    let gone = lock(&c.proc_.links).release(&c.links, disconnected);
    let mut e = c.proc_.p2p.lock();
    if let Some(i) = c.index {
        use super::context::INTER_LOCAL_BIT;
        use crate::p2p::COLL_BIT;
        for id in [
            i,
            i | COLL_BIT,
            i | INTER_LOCAL_BIT,
            i | INTER_LOCAL_BIT | COLL_BIT,
        ] {
            e.note_far_members(id, Vec::new());
        }
    }
    for peers in gone {
        e.remove_bridge(peers);
    }
}

/// The links a new communicator over `kind` and `group` holds.
pub(super) fn hold_links(
    proc_: &super::Process,
    group: &crate::group::Group,
    kind: &Kind,
) -> Vec<usize> {
    let job = proc_.segment().header().nranks() as usize;
    let far = |g: &crate::group::Group| g.world_ranks().iter().any(|&w| w >= job);
    let remote = match kind {
        Kind::Inter { remote, .. } => Some(remote),
        Kind::Intra => None,
    };
    if !far(group) && !remote.is_some_and(far) {
        return Vec::new();
    }
    let members = group
        .world_ranks()
        .iter()
        .chain(remote.map_or(&[][..], |r| r.world_ranks()))
        .copied();
    lock(&proc_.links).hold(members)
}
