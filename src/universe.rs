//! Initialisation and finalisation: the Rust entry point.
//!
//! Layer L6 (imports L0–L5 and `job`). [`init`] reads the job contract
//! from the environment (or, when started without `shmpiexec`, makes a
//! one-rank world with a private segment), attaches the segment, prepares
//! the transport, meets the other ranks and returns the [`Universe`].
#![forbid(unsafe_code)]

use crate::comm::{Communicator, Process};
use crate::error::{Error, ErrorClass, Result};
use crate::job::{bootstrap, env, JobContract};
use crate::p2p::{Context, Engine, Shared};
use crate::shm::{segment_path, Segment};
use crate::sync::{AtomicU32, Ordering};
use crate::transport::{Layout, Transport, WaitPolicy};
use std::sync::Arc;
use std::time::Instant;

/// 0 never initialised, 1 initialised, 2 finalized.
static STATE: AtomicU32 = AtomicU32::new(0);

/// The thread support level (MPI 4.1 §11.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Threading {
    /// Only one thread.
    Single,
    /// Only the main thread calls.
    Funneled,
    /// Any thread, one at a time.
    Serialized,
    /// Any thread, concurrently.
    Multiple,
}

/// An initialised process: the handle that owns the job's resources.
/// Dropping it finalizes.
#[derive(Debug)]
pub struct Universe {
    proc_: Arc<Process>,
    seg: Arc<Segment>,
    world: Communicator,
    self_comm: Communicator,
    rank: usize,
    start: Instant,
    done: bool,
    /// The intercommunicator to the job that spawned this one.
    parent: Option<Communicator>,
}

/// Initialises shmpi (`MPI_Init`).
///
/// # Errors
/// `Other` when called twice or after finalize, or when the job contract
/// or segment is broken; `NoMem` when the segment's space cannot be
/// reserved.
pub fn init() -> Result<Universe> {
    // AcqRel: one winner among threads racing to initialise.
    if STATE
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(Error::new(
            ErrorClass::Other,
            "shmpi::init called twice (or after finalize): a process initialises once",
        ));
    }
    match init_inner() {
        Ok(u) => Ok(u),
        Err(e) => {
            // Relaxed: the failed init leaves nothing shared behind.
            STATE.store(0, Ordering::Relaxed);
            Err(e)
        }
    }
}

fn init_inner() -> Result<Universe> {
    let (contract, seg, layout) = match JobContract::from_env() {
        Some(c) => {
            let c = c?;
            bootstrap::bind(c.cpu)?;
            bootstrap::bind_set(c.cpuset.as_deref())?;
            let layout =
                Layout::new(c.size, c.ring_size).map_err(|m| Error::new(ErrorClass::Other, m))?;
            let seg = bootstrap::attach(&c, layout.spec(c.job_id))?;
            (c, seg, layout)
        }
        None => singleton()?,
    };
    let seg = Arc::new(seg);
    // A bad `SHMPI_COLL_*` or wait value fails the start, before the
    // start barrier, as the transport's do.
    crate::coll::tuning::check()?;
    let policy = WaitPolicy::for_job(contract.size)?;
    let mut transport = Transport::new(seg.clone(), layout, contract.rank)?;
    let my_cpu = contract
        .cpuset
        .as_ref()
        .and_then(|s| s.first().copied())
        .or(contract.cpu);
    seg.control(contract.rank).set_cpu(my_cpu);
    bootstrap::arrive(&seg, contract.rank, contract.size, env::start_timeout())?;
    transport.set_rank_cpus((0..contract.size).map(|r| seg.control(r).cpu()).collect());
    // Every peer's probe word is published now (the start barrier).
    transport.probe_single_copy();
    // Then, every rank together and before any message, which peers are
    // distant (`transport::placement`).
    transport.probe_placement();
    if contract.size == 1 {
        seg.unlink();
    }
    let engine = Engine::new(transport);
    let proc_ = Arc::new(Process::new(Shared::new(engine, policy)));
    let world = Communicator::new(
        proc_.clone(),
        Context {
            id: crate::comm::context::WORLD_INDEX,
            ranks: (0..contract.size).collect(),
            rank: contract.rank,
        },
        "MPI_COMM_WORLD",
    );
    let self_comm = Communicator::new(
        proc_.clone(),
        Context {
            id: crate::comm::context::SELF_INDEX,
            ranks: Arc::from(vec![contract.rank]),
            rank: 0,
        },
        "MPI_COMM_SELF",
    );
    // A spawned job connects to its parent before anything else.
    let parent = crate::comm::connect_parent(&world)?;
    Ok(Universe {
        proc_,
        seg,
        world,
        self_comm,
        rank: contract.rank,
        start: Instant::now(),
        done: false,
        parent,
    })
}

/// A process started without the launcher is a world of one, with a
/// private segment that is unlinked as soon as it is mapped.
fn singleton() -> Result<(JobContract, Segment, Layout)> {
    let layout = Layout::new(1, crate::transport::default_ring_capacity(1))
        .map_err(|m| Error::new(ErrorClass::Intern, m))?;
    let job_id = (std::process::id() as u64) << 32 | 0x5e1f;
    let path = segment_path(&env::shm_dir(), job_id);
    let seg = Segment::create(&path, layout.spec(job_id))?;
    seg.unlink();
    let c = JobContract {
        job_id,
        rank: 0,
        size: 1,
        segment: path,
        ring_size: layout.ring_capacity(),
        cpu: None,
        cpuset: None,
    };
    Ok((c, seg, layout))
}

/// How this process sends messages by size (see [`Universe::protocols`]
/// and `docs/tuning.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protocols {
    /// Bytes of each ring.
    pub ring: usize,
    /// The largest message sent whole, as one ring frame
    /// (`SHMPI_EAGER_LIMIT`); larger ones are pipelined as fragments of
    /// this size, or go by rendezvous.
    pub eager_limit: usize,
    /// The size from which a send that would be copied (a plain `isend`)
    /// goes by rendezvous and single copy; under `SHMPI_CMA=always`, every
    /// send (`SHMPI_CMA_THRESHOLD`).
    pub cma_threshold: usize,
    /// Under `SHMPI_CMA=auto`, the size from which a blocking send goes by
    /// rendezvous (`SHMPI_CMA_BLOCKING`; `None`: never).
    pub cma_blocking: Option<usize>,
    /// The size from which the receiver of a rendezvous shares the copy
    /// with its sender (`SHMPI_CMA_SPLIT`; `None`: never).
    pub cma_split: Option<usize>,
    /// The same for a blocking send's rendezvous, whose sender waits
    /// (`SHMPI_CMA_SPLIT_BLOCKING`; `None`: never).
    pub cma_split_blocking: Option<usize>,
    /// Under `SHMPI_CMA=auto`, the size from which C's `MPI_Isend` goes
    /// by rendezvous (`SHMPI_CMA_C_ISEND`; `None`: never).
    pub cma_c_isend: Option<usize>,
    /// The size from which it does while its receiver has taken every
    /// earlier message of this rank (`SHMPI_CMA_C_ISEND_QUIET`; `None`:
    /// only from `cma_c_isend`).
    pub cma_c_isend_quiet: Option<usize>,
    /// The size from which a message from a pool buffer (`alloc_mem`,
    /// `MPI_Alloc_mem`) goes by rendezvous, copied once out of the pool
    /// (`SHMPI_POOL_THRESHOLD`); shared with the sender from
    /// `cma_split` (`cma_split_blocking`) where single copy is usable.
    pub pool_threshold: usize,
    /// The blocking sends whose rendezvous read the receiver times
    /// (from, below) and the time above which an 8 KiB read counts as
    /// slow, in ns (`SHMPI_CMA_SLOW_READ`): after slow reads the sender's
    /// next such sends take a detour for a while (the ring, or a shared
    /// copy: `transport::fresh`). `None`: no blocking send is judged.
    pub slow_read: Option<(usize, usize, u32)>,
    /// Where the detour of those blocking sends is a shared copy rather
    /// than the ring (`Transport::detour`; `None`: nowhere).
    pub detour_shared_from: Option<usize>,
    /// The same for sends that do not wait: from (C's `MPI_Isend`, a
    /// plain `isend`) and below which their reads are judged; their
    /// detour is the ring.
    pub slow_read_posted: Option<(usize, usize, usize)>,
    /// `SHMPI_CMA`: `auto`, `always`, `off` or `refuse`.
    pub cma_mode: &'static str,
    /// The row of `transport::cma::Defaults` whose thresholds apply where
    /// no variable sets them: this CPU's, unless `SHMPI_CPU_DEFAULTS`
    /// names another.
    pub cpu_row: &'static str,
    /// This CPU's own row (`/proc/cpuinfo`).
    pub cpu_row_here: &'static str,
    /// The largest message whose ring frame the sender demotes to the
    /// shared cache after publishing it, when it follows a pause
    /// (`SHMPI_DEMOTE`; `None`: none, always where the CPU has no
    /// `CLDEMOTE`). Frames of one cache line are never demoted.
    pub demote: Option<usize>,
    /// The largest message after whose ring frame, when it follows a
    /// pause, the sender claims the lines of its next frame's position
    /// for writing (`PREFETCHW`, when it next finds nothing to receive;
    /// `SHMPI_PREFETCHW`; `None`: no claims).
    pub claims: Option<usize>,
    /// The producers' hot window in bytes (`SHMPI_HOT_WINDOW`; 0: none):
    /// in a strict ping-pong a lap ends there; each ring's is cut to a
    /// quarter of the ring's capacity.
    pub hot_window: usize,
    /// Under `SHMPI_CMA=auto`, the size from which a scoped `isend` to
    /// any peer goes by revocable rendezvous (`SHMPI_CMA_SCOPED`; `None`:
    /// only to a distant peer, from `distant_from`).
    pub cma_scoped: Option<usize>,
    /// `SHMPI_DISTANT`: `auto` (the start-up probe), `all` or `none`.
    pub distant_mode: &'static str,
    /// Under `auto`, the hand-off above which a peer is distant
    /// (`SHMPI_DISTANT_NS`, ns; `None`: none is, as on Intel).
    pub distant_ns: Option<u32>,
    /// The size from which a blocking send or plain `isend` to a distant
    /// peer goes by rendezvous (`SHMPI_DISTANT_RENDEZVOUS`; `None`: never).
    pub distant_from: Option<usize>,
    /// The largest ring fragment of a message to a distant peer
    /// (`SHMPI_DISTANT_FRAGMENT`; larger messages below `distant_from`
    /// go to it in fragments of this size).
    pub distant_fragment: usize,
    /// The smallest ring message whose copies may be timed to follow the
    /// placement under `auto` (`SHMPI_DISTANT_WATCH`).
    pub watch_min: usize,
    /// The start-up probe's one-way cache-line hand-off to each rank, in
    /// ns (`None`: this rank, or not measured), and whether that rank is
    /// distant (`transport::placement`).
    pub peers: Vec<(Option<u32>, bool)>,
}

impl Universe {
    /// The world communicator (`MPI_COMM_WORLD`).
    pub fn world(&self) -> Communicator {
        self.world.clone()
    }

    /// The communicator of this process alone (`MPI_COMM_SELF`).
    pub fn self_comm(&self) -> Communicator {
        self.self_comm.clone()
    }

    /// How close world rank `peer` runs to this one (by the first CPUs of
    /// their bindings: same core, L3, NUMA node, package, or farther);
    /// `None` when either is unbound. The transport's per-pair copy
    /// choice will key on it.
    pub fn peer_distance(&self, peer: usize) -> Option<crate::topology::Distance> {
        self.proc_.p2p.lock().transport().peer_distance(peer)
    }

    /// The NUMA nodes the rings this rank receives on live on (their
    /// headers, first touched by this rank), for checking placement.
    ///
    /// # Errors
    /// `Other` when hwloc cannot tell.
    pub fn receive_memory_nodes(&self) -> Result<Vec<usize>> {
        let e = self.proc_.p2p.lock();
        let t = e.transport();
        let mut nodes = Vec::new();
        for peer in (0..t.size()).filter(|&p| p != self.rank) {
            if let Some(h) = t.receive_header(peer) {
                nodes.extend(crate::topology::memory_nodes(h)?);
            }
        }
        nodes.sort_unstable();
        nodes.dedup();
        Ok(nodes)
    }

    /// What this rank's single-copy self-test found at init: whether
    /// peers may send it large messages by rendezvous, which it copies
    /// straight out of their memory (`docs/tuning.md`, `SHMPI_CMA`).
    pub fn single_copy(&self) -> crate::shm::SingleCopy {
        self.seg.control(self.rank).single_copy()
    }

    /// The limits that decide how this process sends a message of a given
    /// size (what `shmpi-bench protocols` prints).
    pub fn protocols(&self) -> Protocols {
        let e = self.proc_.p2p.lock();
        let t = e.transport();
        Protocols {
            ring: t.ring_capacity(),
            eager_limit: t.fragment_size(),
            cma_threshold: t.cma_threshold(),
            cma_blocking: t.blocking_threshold(),
            cma_split: t.split_threshold(),
            cma_split_blocking: t.split_blocking_threshold(),
            cma_c_isend: t.c_isend_threshold(),
            cma_c_isend_quiet: t.c_isend_quiet_threshold(),
            pool_threshold: t.pool_threshold(),
            slow_read: t.judged_range(),
            detour_shared_from: t.detour_shared_from(),
            slow_read_posted: t.judged_posted_range(),
            cma_mode: t.cma_mode().name(),
            cpu_row: t.cpu_row().name(),
            cpu_row_here: crate::transport::cma::CpuRow::of_this_cpu().name(),
            demote: t.demote_limit(),
            claims: t.claim_limit(),
            hot_window: t.hot_window(),
            cma_scoped: t.scoped_threshold(),
            distant_mode: t.distant_policy().0.name(),
            distant_ns: t.distant_ns(),
            distant_from: t.distant_policy().1,
            distant_fragment: t.distant_fragment_size(),
            watch_min: t.watch_min(),
            peers: t
                .hand_off_ns()
                .iter()
                .enumerate()
                .map(|(p, ns)| (*ns, t.is_distant(p)))
                .collect(),
        }
    }

    /// Messages this process has sent and received by rendezvous and
    /// single copy so far, as (sent, received); every other message went
    /// through the rings.
    pub fn rendezvous_counts(&self) -> (u64, u64) {
        self.proc_.p2p.lock().rendezvous_counts()
    }

    /// This process's rendezvous copies shared with the other side so far
    /// (`SHMPI_CMA_SPLIT`): offers made as a receiver, offers it revoked
    /// and copied itself, back parts written as a sender.
    pub fn split_counts(&self) -> crate::p2p::SplitCounts {
        self.proc_.p2p.lock().split_counts()
    }

    /// `len` bytes of memory the ranks share (`MPI_Alloc_mem`): a buffer
    /// in this rank's shared pool (`SHMPI_ALLOC_POOL` bytes, made at the
    /// first call). A message sent from it (of at least
    /// `SHMPI_POOL_THRESHOLD` bytes) is copied once, by the receiver,
    /// straight out of the pool. Ordinary memory works everywhere too.
    ///
    /// # Errors
    /// `NoMem` when the pool has no room (or `/dev/shm` is full).
    ///
    /// # MPI
    /// MPI 4.1 §9.2.
    pub fn alloc_mem(&self, len: usize) -> Result<crate::transport::SharedBuf> {
        self.proc_.check()?;
        self.proc_.p2p.lock().transport().alloc_shared(len)
    }

    /// The intercommunicator to the job that spawned this one
    /// (`MPI_Comm_get_parent`), if it was spawned.
    pub fn parent(&self) -> Option<&Communicator> {
        self.parent.as_ref()
    }

    /// Takes the parent intercommunicator out (to disconnect it, which
    /// consumes it); `parent()` is `None` afterwards, as
    /// `MPI_Comm_get_parent` gives `MPI_COMM_NULL` after a disconnect.
    pub fn take_parent(&mut self) -> Option<Communicator> {
        self.parent.take()
    }

    /// This rank's application index in a multi-program job or
    /// `spawn_multiple` (`MPI_APPNUM`); 0 for a single program.
    pub fn appnum(&self) -> usize {
        std::env::var(crate::job::env::APPNUM)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// How many processes this node can usefully run
    /// (`MPI_UNIVERSE_SIZE`): the CPUs the launcher may use (its affinity,
    /// cgroup cpusets included; a rank bound to one core still sees them
    /// all), or this process's for a singleton; the job's size if larger.
    pub fn universe_size(&self) -> usize {
        let cpus = std::env::var(crate::job::env::UNIVERSE_SIZE)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        cpus.max(self.world.size() as usize)
    }

    /// Whether this process is still connected to another job (a
    /// communicator over a bridge is live, or was freed without
    /// `disconnect`: MPI 4.1 §11.10.4).
    pub fn connected_to_other_jobs(&self) -> bool {
        crate::comm::lock(&self.proc_.links).any()
    }

    /// This process's world rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Seconds since init (`MPI_Wtime`, not synchronised across ranks).
    pub fn wtime(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The thread level this library provides. Every handle is
    /// `Send + Sync` and the engine is behind one lock, so concurrent calls
    /// are safe.
    pub fn threading(&self) -> Threading {
        Threading::Multiple
    }

    /// Ends communication (`MPI_Finalize`): waits for this rank's queued
    /// sends, meets every rank in a barrier, and marks the rank finalized.
    ///
    /// # Errors
    /// `Other` if communication fails on the way.
    pub fn finalize(mut self) -> Result<()> {
        self.finalize_inner()
    }

    fn finalize_inner(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let n = self.world.size() as usize;
        self.proc_.p2p.wait_until(None, |e| {
            (0..n).all(|p| e.transport().is_idle(p)).then_some(Ok(()))
        })?;
        // Collective over connected processes: other jobs first.
        crate::comm::meet_connected(&self.proc_)?;
        self.world.barrier()?;
        // Every rendezvous from this rank's pool has been acked (the sends
        // completed above), and no rank reads it after the barrier.
        self.proc_.p2p.lock().transport().unlink_pool();
        bootstrap::depart(&self.seg, self.rank);
        // Relaxed: see `Process::check`.
        self.proc_.finalized.store(1, Ordering::Relaxed);
        // Relaxed: the process-wide flag for a second init.
        STATE.store(2, Ordering::Relaxed);
        Ok(())
    }

    /// Ends the whole job (`MPI_Abort`): marks this rank aborted with
    /// `code` and exits; the launcher then terminates every other rank and
    /// exits with `code`.
    pub fn abort(&self, code: i32) -> ! {
        bootstrap::abort_mark(&self.seg, self.rank, code);
        crate::error::say(format_args!(
            "shmpi: rank {} called abort with error code {code}",
            self.rank
        ));
        std::process::exit(crate::job::abort_status(code));
    }
}

impl Drop for Universe {
    /// Finalizes, unless the thread is unwinding from a panic: finalize
    /// waits for every rank, which may be waiting for this one, so the
    /// rank ends the job instead (`docs/errors.md`, "A rank that
    /// panics").
    fn drop(&mut self) {
        if std::thread::panicking() && !self.done {
            self.done = true;
            self.seg.control(self.rank).abort_for_panic(self.rank);
            return;
        }
        if let Err(e) = self.finalize_inner() {
            crate::error::say(format_args!("shmpi: finalize during drop failed: {e}"));
        }
    }
}
