//! Shared-memory windows (MPI 4.1 §12, issue 9): `win_allocate_shared`
//! gives every member a part of one shared file that all members map
//! (`shm::window`), so loads and stores after `shared_query` reach any
//! member's memory, and `put` / `get` / accumulates are copies into and
//! out of it. The memory model is `MPI_WIN_UNIFIED`.
//!
//! Synchronisation: `fence` (a barrier with full fences), passive target
//! `lock` / `unlock` (a reader-writer lock per member in the window's
//! header) and `lock_all`; `flush*` and `sync` are full fences (every
//! access is complete when its call returns). Accumulates of any kind are
//! atomic with respect to each other (one lock per window). An access
//! outside an epoch is `RmaSync`; outside the target's memory `RmaRange`.
//! So is a flush or sync outside a passive-target epoch, a free with an epoch
//! open, and an access after a fence that asserted `NOSUCCEED` (as
//! MPICH). An assertion a call does not take is `Assert`.

use super::{lock, Communicator};
use crate::coll::op::Reducible;
use crate::coll::Op;
use crate::datatype::Scalar;
use crate::error::{Error, ErrorClass, Result};
use crate::shm::window::WinSeg;
use crate::sync::{fence, AtomicU32, Ordering};
use crate::transport::bytes::{as_bytes, as_bytes_mut};
use crate::transport::rma::{Exposed, Memory};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Assertions of window synchronisation calls (`MPI_MODE_*`, with the
/// values of `include/mpi.h`): hints a call may act on or ignore, except
/// that a fence asserting `NOSUCCEED` opens no epoch.
pub mod mode {
    /// No other process holds or asks for a conflicting lock.
    pub const NOCHECK: u32 = 1024;
    /// The fence ends no epoch with accesses in it.
    pub const NOPRECEDE: u32 = 2048;
    /// The window is not the target of a put or accumulate until the
    /// next synchronisation.
    pub const NOPUT: u32 = 4096;
    /// The local window was not stored to since the last synchronisation.
    pub const NOSTORE: u32 = 8192;
    /// The fence starts no epoch.
    pub const NOSUCCEED: u32 = 16384;
    /// What a fence takes.
    pub const FENCE: u32 = NOSTORE | NOPUT | NOPRECEDE | NOSUCCEED;
    /// What `MPI_Win_post` takes.
    pub const POST: u32 = NOCHECK | NOSTORE | NOPUT;
    /// What `MPI_Win_start`, `MPI_Win_lock` and `MPI_Win_lock_all` take.
    pub const START_LOCK: u32 = NOCHECK;
}

/// Checks that `assert` has only bits of `allowed` (a `mode` set).
///
/// # Errors
/// `Assert` naming `call` and the bits it does not take.
pub fn check_assert(call: &str, assert: i32, allowed: u32) -> Result<()> {
    let extra = (assert as u32) & !allowed;
    if extra != 0 {
        return Err(Error::new(
            ErrorClass::Assert,
            format!("{call} does not take the assertion bits {extra:#x} (of {assert})"),
        ));
    }
    Ok(())
}

/// Lock types of passive-target epochs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockType {
    /// `MPI_LOCK_EXCLUSIVE`.
    Exclusive,
    /// `MPI_LOCK_SHARED`.
    Shared,
}

/// The access epochs this process has open on a window.
#[derive(Debug, Default)]
struct Epochs {
    /// Targets of the access epoch `start` opened (ranks of the window's
    /// communicator), while one is open (it may have none).
    started: Option<Vec<i32>>,
    /// Origins of the exposure epoch `post` opened, while one is open.
    posted: Option<Vec<i32>>,
    /// Between fences.
    fence: bool,
    /// `lock_all` held.
    all: bool,
    /// Targets locked, and whether exclusively.
    locks: HashMap<usize, bool>,
}

/// How a window's memory was made (`MPI_WIN_CREATE_FLAVOR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `win_create`: memory each member brought.
    Create,
    /// `win_allocate`: memory the window allocated.
    Allocate,
    /// `win_allocate_shared`: one file every member maps.
    Shared,
    /// `win_create_dynamic`: no memory at creation; each member attaches
    /// memory of its own, which the others reach by system call at its
    /// absolute address (the displacement, in bytes).
    Dynamic,
}

/// Options of window allocation (the info keys MPI defines for it).
#[derive(Clone, Copy, Debug, Default)]
pub struct WinOptions {
    /// `alloc_shared_noncontig`: each member's part starts on its own
    /// page (so its pages can sit on its own NUMA node) instead of right
    /// after the previous member's.
    pub noncontig: bool,
}

/// A window (`MPI_Win`).
#[derive(Debug)]
pub struct Window {
    comm: Communicator,
    /// The lock words (and the members' memory, for `win_allocate_shared`
    /// and `win_allocate`).
    seg: Arc<WinSeg>,
    /// Each member's memory, as this process reaches it, and its
    /// displacement unit.
    parts: Vec<(Memory, usize)>,
    flavor: Flavor,
    epochs: Mutex<Epochs>,
    /// 1 while a fence or `lock_all` epoch reaches every member: the
    /// common case of `access`, checked without the lock.
    open_all: AtomicU32,
    /// 1 while this process holds a passive-target epoch (`lock` on some
    /// member, or `lock_all`): what a flush or sync checks, without the
    /// lock (`check_passive`).
    passive: AtomicU32,
}

static NEXT_WIN: AtomicU32 = AtomicU32::new(0);

/// Alignment of each member's part in a window file for
/// `alloc_shared_noncontig`: a page. Without it the parts are contiguous,
/// each right after the last byte of the previous one (MPI 4.1 §12.2.3),
/// so a program may index one array across the members' parts.
const PAGE: usize = 4096;
/// Alignment of each member's part of a `win_allocate` window.
const LINE: usize = 64;

/// Tags of the post / start / complete / wait tokens (on the window's own
/// communicator).
const TAG_POST: i32 = 1;
const TAG_COMPLETE: i32 = 2;

/// The regions a member of a dynamic window may have attached at once.
const REGIONS: usize = 256;
/// Bytes of a member's table of attached regions in a dynamic window's
/// file: a lock word and the count on a cache line, then (address,
/// length) pairs of 8-byte words.
const TABLE: usize = 64 + 16 * REGIONS;

/// How a member exposes its memory to `win_create` (exchanged at
/// creation).
const IN_HEAP: u64 = 0;
const IN_POOL: u64 = 1;

/// Words per member in the records that `win_allocate` /
/// `win_allocate_shared` (size, unit) and `win_create` (length, unit,
/// kind, pool offset, address, task) exchange, before the refusal word
/// (`Communicator::win_records`).
const ALLOC_WORDS: usize = 2;
const CREATE_WORDS: usize = 6;

impl Communicator {
    /// `MPI_Win_allocate_shared`: `size` bytes for this member, in one
    /// file all members map, contiguous in rank order: each member's part
    /// starts right after the last byte of the previous member's (MPI 4.1
    /// §12.2.3; the first at a page boundary). Collective.
    ///
    /// # Errors
    /// `Comm` on an intercommunicator, `Arg` for a zero displacement unit
    /// (at every member: the others name the member that passed it),
    /// `NoMem` when the file cannot be made (every member gets it).
    pub fn win_allocate_shared(&self, size: usize, disp_unit: usize) -> Result<Window> {
        self.win_allocate_with(size, disp_unit, WinOptions::default(), Flavor::Shared)
    }

    /// `MPI_Win_allocate_shared` (`flavor` `Shared`) or `MPI_Win_allocate`
    /// (`Allocate`: the same memory, which on one node is shared anyway)
    /// with options.
    ///
    /// # Errors
    /// As [`win_allocate_shared`](Self::win_allocate_shared); `Arg` for
    /// the flavor `Create`.
    pub fn win_allocate_with(
        &self,
        size: usize,
        disp_unit: usize,
        opts: WinOptions,
        flavor: Flavor,
    ) -> Result<Window> {
        let call = if flavor == Flavor::Allocate {
            "MPI_Win_allocate"
        } else {
            "MPI_Win_allocate_shared"
        };
        let r = self.win_allocate_inner(size, disp_unit, opts, flavor);
        self.ret(call, r)
    }

    /// `MPI_Win_create`: a window over memory each member brings
    /// ([`Exposed`]: a vector, an `alloc_mem` buffer, or memory the C
    /// layer vouches for). Members reach a peer's memory in its shared
    /// pool by copies (no system call), and ordinary memory with
    /// `process_vm_readv` / `process_vm_writev`; creation tests that the
    /// kernel allows the latter wherever it is needed. Collective.
    ///
    /// # Errors
    /// `Comm`, `Arg` as for allocation; `Unsupported` (every member)
    /// when some member's ordinary memory cannot be reached by a system
    /// call here (`SHMPI_CMA=off|refuse`, a seccomp filter, Yama): expose
    /// `alloc_mem` memory then, or use `win_allocate`.
    pub fn win_create(&self, mem: Exposed, disp_unit: usize) -> Result<Window> {
        let r = self.win_create_inner(mem, disp_unit);
        self.ret("MPI_Win_create", r)
    }

    /// `MPI_Win_create_dynamic`: a window without memory, to which each
    /// member attaches memory of its own later ([`Window::attach`]). An
    /// access names the target's memory by its absolute address (the
    /// displacement, in bytes: `MPI_Get_address` at the target) and
    /// reaches it with `process_vm_readv` / `process_vm_writev`, its own
    /// included; creation tests that the kernel allows it towards every
    /// member. Collective.
    ///
    /// # Errors
    /// `Comm` on an intercommunicator; `Unsupported` (every member) when
    /// some member cannot be reached by system call (`SHMPI_CMA=off|refuse`,
    /// a seccomp filter, Yama).
    pub fn win_create_dynamic(&self) -> Result<Window> {
        let r = self.win_create_dynamic_inner();
        self.ret("MPI_Win_create_dynamic", r)
    }

    fn win_create_dynamic_inner(&self) -> Result<Window> {
        self.win_check()?;
        let n = self.size() as usize;
        let me = self.rank() as usize;
        let task = self.proc_.p2p.lock().transport().cma_task();
        let mut all = vec![0u64; n];
        self.allgather(&[u64::from(task)], &mut all)?;
        let world = self.group().world_ranks().to_vec();
        let job = self.proc_.segment().header().nranks() as usize;
        let mut refused: Option<String> = None;
        for (r, &w) in world.iter().enumerate() {
            let why = if w < job {
                self.proc_.p2p.lock().transport().can_reach(w)
            } else {
                Err("it is a process of another job".to_string())
            };
            if let Err(why) = why {
                refused = Some(format!("rank {me} cannot reach rank {r}'s memory: {why}"));
                break;
            }
        }
        self.agree_reachable(refused, "a dynamic window needs process_vm_readv/writev")?;
        // Each member's part is its whole address space, the
        // displacement an address; the unit is a byte.
        let parts = all
            .iter()
            .map(|&t| (Memory::cma(t as u32, 0, usize::MAX), 1))
            .collect();
        // The data area holds each member's table of attached regions,
        // which the others read to check an access.
        let seg = self.win_file(n, n * TABLE)?;
        self.win_finish(seg, parts, Flavor::Dynamic)
    }

    /// Tells every member whether any of them cannot reach another's
    /// memory (`refused`: why this one cannot); then each fails alike,
    /// with `Unsupported` and `hint`.
    fn agree_reachable(&self, refused: Option<String>, hint: &str) -> Result<()> {
        let mut flags = vec![0u8; self.size() as usize];
        self.allgather(&[u8::from(refused.is_some())], &mut flags)?;
        if let Some(bad) = flags.iter().position(|&f| f != 0) {
            return Err(Error::new(
                ErrorClass::Unsupported,
                refused.unwrap_or_else(|| {
                    format!("rank {bad} cannot reach another member's memory by system call")
                }) + &format!(" ({hint})"),
            ));
        }
        Ok(())
    }

    /// What fails every member alike before a window's creation
    /// communicates: a failed job, an intercommunicator.
    fn win_check(&self) -> Result<()> {
        self.proc_.check()?;
        if self.is_inter() {
            return Err(Error::new(
                ErrorClass::Comm,
                "windows are made on intracommunicators",
            ));
        }
        Ok(())
    }

    /// Exchanges this member's record `mine` with the other members
    /// creating a window (`call`), with a last word that says whether it
    /// refused its own arguments (`refused`): when any did, every member
    /// fails alike, before anything is made (`Arg` naming the first, or
    /// the refuser's own error), instead of the others waiting for it in
    /// the creation. The records, `mine.len()` words per member, in rank
    /// order.
    fn win_records(&self, call: &str, mine: &[u64], refused: Option<Error>) -> Result<Vec<u64>> {
        let k = mine.len() + 1;
        let n = self.size() as usize;
        let mut rec = mine.to_vec();
        rec.push(u64::from(refused.is_some()));
        let mut all = vec![0u64; k * n];
        self.allgather(&rec, &mut all)?;
        if let Some(e) = refused {
            return Err(e);
        }
        if let Some(bad) = (0..n).find(|&r| all[k * r + k - 1] != 0) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{call}: rank {bad}'s arguments were refused"),
            ));
        }
        Ok(all
            .chunks_exact(k)
            .flat_map(|c| c[..k - 1].iter().copied())
            .collect())
    }

    /// Takes part in the creation of a window of `flavor` for a member
    /// that refused its own arguments with `e` (the C layer's checks), so
    /// that the others fail too instead of waiting for it; gives `e` back.
    pub(crate) fn win_refuse(&self, flavor: Flavor, e: Error) -> Error {
        if self.win_check().is_err() {
            // Every member fails before communicating.
            return e;
        }
        let (call, words) = match flavor {
            Flavor::Create => ("MPI_Win_create", CREATE_WORDS),
            Flavor::Allocate => ("MPI_Win_allocate", ALLOC_WORDS),
            Flavor::Shared => ("MPI_Win_allocate_shared", ALLOC_WORDS),
            // Its members check their arguments after the creation.
            Flavor::Dynamic => return e,
        };
        match self.win_records(call, &[0; CREATE_WORDS][..words], Some(e)) {
            Err(e) => e,
            Ok(_) => unreachable!("a refused record fails"),
        }
    }

    /// The refusal of a zero displacement unit.
    fn unit_refused(disp_unit: usize) -> Option<Error> {
        (disp_unit == 0)
            .then(|| Error::new(ErrorClass::Arg, "the displacement unit must be positive"))
    }

    /// Rank 0 makes the window file (lock words for `n` members, then
    /// `data` bytes) and tells the others its name, or that it failed:
    /// then every member fails. Every member maps it; then the name goes,
    /// so nothing is left in /dev/shm whatever happens later.
    fn win_file(&self, n: usize, data: usize) -> Result<Arc<WinSeg>> {
        let mut name = [0u8; 512];
        let mut made = None;
        if self.rank() == 0 {
            // Relaxed: a counter for unique names.
            let k = NEXT_WIN.fetch_add(1, Ordering::Relaxed);
            let mut p = self.proc_.segment().path().as_os_str().to_owned();
            p.push(format!("-win-{}-{k}", std::process::id()));
            let path = std::path::PathBuf::from(p);
            let text = match WinSeg::create(&path, n, data) {
                Ok(seg) => {
                    made = Some(seg);
                    path.as_os_str().as_encoded_bytes().to_vec()
                }
                Err(e) => format!("!{}", e.detail()).into_bytes(),
            };
            let k = text.len().min(511);
            name[..k].copy_from_slice(&text[..k]);
        }
        self.bcast(&mut name[..], 0)?;
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let text = String::from_utf8_lossy(&name[..end]).into_owned();
        if let Some(msg) = text.strip_prefix('!') {
            return Err(Error::new(ErrorClass::NoMem, msg.to_string()));
        }
        let seg = match made {
            Some(s) => s,
            None => WinSeg::attach(std::path::Path::new(&text), n, data)?,
        };
        self.barrier()?;
        if self.rank() == 0 {
            seg.unlink();
        }
        Ok(Arc::new(seg))
    }

    /// The window's own communicator (a context agreed by the members, as
    /// for any duplicate): post / start / complete / wait tokens travel
    /// on it, never mixing with the program's messages.
    fn win_finish(
        &self,
        seg: Arc<WinSeg>,
        parts: Vec<(Memory, usize)>,
        flavor: Flavor,
    ) -> Result<Window> {
        let comm = self.dup()?;
        comm.set_errhandler(super::ErrHandler::Return);
        Ok(Window {
            comm,
            seg,
            parts,
            flavor,
            epochs: Mutex::new(Epochs::default()),
            open_all: AtomicU32::new(0),
            passive: AtomicU32::new(0),
        })
    }

    fn win_allocate_inner(
        &self,
        size: usize,
        disp_unit: usize,
        opts: WinOptions,
        flavor: Flavor,
    ) -> Result<Window> {
        self.win_check()?;
        if flavor == Flavor::Create {
            return Err(Error::new(
                ErrorClass::Arg,
                "win_create takes the memory it exposes",
            ));
        }
        let n = self.size() as usize;
        let call = if flavor == Flavor::Allocate {
            "MPI_Win_allocate"
        } else {
            "MPI_Win_allocate_shared"
        };
        let all = self.win_records(
            call,
            &[size as u64, disp_unit as u64],
            Self::unit_refused(disp_unit),
        )?;
        // Shared parts are contiguous unless asked otherwise; the parts
        // of `win_allocate` (one file too, but each member's own memory)
        // start on a cache line, so that any type the program keeps
        // there is aligned.
        let align = match (opts.noncontig, flavor) {
            (true, _) => PAGE,
            (false, Flavor::Shared) => 1,
            (false, _) => LINE,
        };
        let mut layout = Vec::with_capacity(n);
        let mut at = 0usize;
        for r in 0..n {
            let (s, u) = (all[2 * r] as usize, all[2 * r + 1] as usize);
            layout.push((at, s, u));
            at = at
                .checked_add(s.div_ceil(align) * align)
                .ok_or_else(|| Error::new(ErrorClass::NoMem, "window sizes overflow"))?;
        }
        let seg = self.win_file(n, at)?;
        let parts = layout
            .into_iter()
            .map(|(off, s, u)| Ok((Memory::in_window(seg.clone(), off, s)?, u)))
            .collect::<Result<Vec<_>>>()?;
        self.win_finish(seg, parts, flavor)
    }

    fn win_create_inner(&self, mem: Exposed, disp_unit: usize) -> Result<Window> {
        self.win_check()?;
        let n = self.size() as usize;
        let me = self.rank() as usize;
        let (kind, off, task) = {
            let e = self.proc_.p2p.lock();
            let task = e.transport().cma_task();
            match e.transport().pool_offset(mem.base(), mem.len()) {
                Some(off) if !mem.is_empty() => (IN_POOL, off, task),
                _ => (IN_HEAP, 0, task),
            }
        };
        let mine = [
            mem.len() as u64,
            disp_unit as u64,
            kind,
            off,
            mem.base() as u64,
            u64::from(task),
        ];
        let all = self.win_records("MPI_Win_create", &mine, Self::unit_refused(disp_unit))?;
        let world = self.group().world_ranks().to_vec();
        let job = self.proc_.segment().header().nranks() as usize;
        let own = Arc::new(mem);
        let mut parts = Vec::with_capacity(n);
        let mut refused: Option<String> = None;
        for r in 0..n {
            let [len, unit, kind, off, addr, task] =
                <[u64; CREATE_WORDS]>::try_from(&all[CREATE_WORDS * r..CREATE_WORDS * (r + 1)])
                    .expect("six words per member");
            let (len, unit) = (len as usize, unit as usize);
            let m = if r == me {
                Memory::own(own.clone())
            } else if kind == IN_POOL && world[r] < job {
                let view = self.proc_.p2p.lock().transport().pool_view(world[r]);
                match view.and_then(|v| Memory::in_pool(Arc::new(v), off as usize, len)) {
                    Ok(m) => m,
                    Err(e) => {
                        // Told to every member below, like a refusal.
                        refused.get_or_insert(format!(
                            "rank {me} cannot map rank {r}'s pool: {}",
                            e.detail()
                        ));
                        Memory::cma(task as u32, addr, len)
                    }
                }
            } else {
                // Ordinary memory, or a pool of another job (whose pool
                // files this job does not know): by system call.
                if len > 0 && refused.is_none() {
                    let why = self.proc_.p2p.lock().transport().can_reach(world[r]);
                    if let Err(why) = why {
                        refused = Some(format!("rank {me} cannot reach rank {r}'s memory: {why}"));
                    }
                }
                Memory::cma(task as u32, addr, len)
            };
            parts.push((m, unit));
        }
        self.agree_reachable(
            refused,
            "win_create over ordinary memory needs process_vm_readv/writev; expose alloc_mem \
             memory, or use win_allocate",
        )?;
        let seg = self.win_file(n, 0)?;
        self.win_finish(seg, parts, Flavor::Create)
    }
}

impl Window {
    /// The window's communicator.
    pub fn comm(&self) -> &Communicator {
        &self.comm
    }

    /// How the window's memory was made.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// `MPI_Win_attach`: makes `len` bytes at address `base` of this
    /// process reachable through this dynamic window (local: no member
    /// waits). The program keeps them valid until it detaches them. The
    /// region goes into this member's table in the window's file, which
    /// the others consult on each access ([`access`](Self::access)).
    ///
    /// # Errors
    /// `RmaFlavor` on a window that is not dynamic; `RmaAttach` for a
    /// region that overlaps one attached already, or when `REGIONS` are
    /// attached already.
    pub fn attach(&self, base: usize, len: usize) -> Result<()> {
        let r = (|| {
            self.dynamic("MPI_Win_attach")?;
            let end = base.checked_add(len).ok_or_else(|| {
                Error::new(
                    ErrorClass::RmaAttach,
                    format!("{len} bytes at {base:#x} pass the end of the address space"),
                )
            })?;
            let me = self.comm.rank() as usize;
            self.with_table(me, true, |regions| {
                if let Some(&(b, l)) = regions
                    .iter()
                    .find(|&&(b, l)| base < b + l.max(1) && b < end.max(base + 1))
                {
                    return Err(Error::new(
                        ErrorClass::RmaAttach,
                        format!(
                            "{len} bytes at {base:#x} overlap the {l} bytes at {b:#x} \
                             attached already"
                        ),
                    ));
                }
                if regions.len() == REGIONS {
                    return Err(Error::new(
                        ErrorClass::RmaAttach,
                        format!("{REGIONS} regions are attached already: detach one first"),
                    ));
                }
                regions.push((base, len));
                Ok(true)
            })
        })();
        self.comm.ret("MPI_Win_attach", r)
    }

    /// `MPI_Win_detach`: the region attached at `base` is no longer part
    /// of this dynamic window.
    ///
    /// # Errors
    /// `RmaFlavor` on a window that is not dynamic; `RmaAttach` when no
    /// region was attached at `base`.
    pub fn detach(&self, base: usize) -> Result<()> {
        let r = (|| {
            self.dynamic("MPI_Win_detach")?;
            let me = self.comm.rank() as usize;
            self.with_table(me, true, |regions| {
                let i = regions
                    .iter()
                    .position(|&(b, _)| b == base)
                    .ok_or_else(|| {
                        Error::new(
                            ErrorClass::RmaAttach,
                            format!("no memory is attached at {base:#x}"),
                        )
                    })?;
                regions.swap_remove(i);
                Ok(true)
            })
        })();
        self.comm.ret("MPI_Win_detach", r)
    }

    /// Runs `f` on member `rank`'s table of attached regions, under its
    /// lock (exclusive to change it: `f` returns whether it did).
    fn with_table(
        &self,
        rank: usize,
        exclusive: bool,
        f: impl FnOnce(&mut Vec<(usize, usize)>) -> Result<bool>,
    ) -> Result<()> {
        let at = rank * TABLE;
        let word = self.seg.data_word(at);
        WinSeg::lock_word(word, exclusive);
        let r = (|| {
            let mut count = [0u8; 8];
            self.seg.read(at + 8, &mut count)?;
            let n = (u64::from_ne_bytes(count) as usize).min(REGIONS);
            let mut raw = vec![0u8; 16 * n];
            self.seg.read(at + 64, &mut raw)?;
            let mut regions: Vec<(usize, usize)> = raw
                .chunks_exact(16)
                .map(|c| {
                    let w = |k: usize| {
                        u64::from_ne_bytes(c[k..k + 8].try_into().expect("8 bytes")) as usize
                    };
                    (w(0), w(8))
                })
                .collect();
            if f(&mut regions)? {
                let mut out = Vec::with_capacity(16 * regions.len());
                for &(b, l) in &regions {
                    out.extend_from_slice(&(b as u64).to_ne_bytes());
                    out.extend_from_slice(&(l as u64).to_ne_bytes());
                }
                self.seg.write(at + 64, &out)?;
                self.seg
                    .write(at + 8, &(regions.len() as u64).to_ne_bytes())?;
            }
            Ok(())
        })();
        WinSeg::unlock_word(word, exclusive);
        r
    }

    /// Checks that `len` bytes at address `addr` lie in one region member
    /// `rank` of this dynamic window has attached.
    ///
    /// # Errors
    /// `RmaRange` otherwise.
    fn attached_at(&self, rank: usize, addr: usize, len: usize) -> Result<()> {
        let mut found = false;
        self.with_table(rank, false, |regions| {
            found = regions
                .iter()
                .any(|&(b, l)| b <= addr && addr.checked_add(len).is_some_and(|e| e <= b + l));
            Ok(false)
        })?;
        if !found {
            return Err(Error::new(
                ErrorClass::RmaRange,
                format!(
                    "{len} bytes at address {addr:#x} are not in memory rank {rank} attached to \
                     the dynamic window"
                ),
            ));
        }
        Ok(())
    }

    /// Refuses a window that is not dynamic.
    fn dynamic(&self, call: &str) -> Result<()> {
        if self.flavor != Flavor::Dynamic {
            return Err(Error::new(
                ErrorClass::RmaFlavor,
                format!("{call} needs a dynamic window (MPI_Win_create_dynamic)"),
            ));
        }
        Ok(())
    }

    /// `MPI_Win_shared_query`: member `rank`'s base address, size and
    /// displacement unit. Loads and stores there are the application's
    /// (synchronised by the window's epochs, as MPI says). For a
    /// `win_create` window, a member whose memory this process does not
    /// map (ordinary memory of another process) gives a null address and
    /// size 0, as MPI 4.1 §12.2.3 allows.
    ///
    /// # Errors
    /// `Rank` for a member out of range.
    pub fn shared_query(&self, rank: i32) -> Result<(*mut u8, usize, usize)> {
        let (m, unit) = self.member(rank)?;
        Ok(match m.mapped() {
            Some(p) => (p, m.len(), unit),
            None => (std::ptr::null_mut(), 0, unit),
        })
    }

    /// Member `rank`'s memory (how this process reaches it; its length is
    /// the member's size) and displacement unit.
    ///
    /// # Errors
    /// `Rank` for a member out of range.
    pub fn member(&self, rank: i32) -> Result<(&Memory, usize)> {
        usize::try_from(rank)
            .ok()
            .and_then(|r| self.parts.get(r))
            .map(|(m, u)| (m, *u))
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Rank,
                    format!(
                        "rank {rank} is not a member of a window of {} members",
                        self.parts.len()
                    ),
                )
            })
    }

    /// Checks an access of `len` bytes at displacement `disp` of member
    /// `rank`: inside an epoch that reaches it, inside its memory. The
    /// byte offset in the member's memory.
    ///
    /// # Errors
    /// `Rank`, `RmaSync`, `RmaRange`.
    pub fn access(&self, rank: i32, disp: usize, len: usize) -> Result<usize> {
        let (m, unit) = self.member(rank)?;
        let size = m.len();
        // Relaxed: a flag of this process's own epochs, set and cleared by
        // its own calls (MPI makes a window's epochs per process).
        if self.open_all.load(Ordering::Relaxed) == 0 {
            let e = lock(&self.epochs);
            if !(e.fence
                || e.all
                || e.locks.contains_key(&(rank as usize))
                || e.started.as_ref().is_some_and(|t| t.contains(&rank)))
            {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    format!(
                        "no access epoch reaches rank {rank}: call fence, lock or lock_all first"
                    ),
                ));
            }
        }
        let start = disp.checked_mul(unit);
        match start.and_then(|s| s.checked_add(len)) {
            Some(_) if self.flavor == Flavor::Dynamic => {
                // A displacement is an address, which must be in memory
                // the target attached.
                let addr = start.unwrap_or(0);
                if len > 0 {
                    self.attached_at(rank as usize, addr, len)?;
                }
                Ok(addr)
            }
            Some(end) if end <= size => Ok(start.unwrap_or(0)),
            _ => Err(Error::new(
                ErrorClass::RmaRange,
                format!(
                    "{len} bytes at displacement {disp} (unit {unit}) fall outside rank {rank}'s {size} bytes"
                ),
            )),
        }
    }

    /// `MPI_Put` of `src` to member `rank` at displacement `disp`.
    ///
    /// # Errors
    /// `Rank`, `RmaSync`, `RmaRange`.
    pub fn put<T: Scalar>(&self, src: &[T], rank: i32, disp: usize) -> Result<()> {
        let b = as_bytes(src);
        let r = self
            .access(rank, disp, b.len())
            .and_then(|o| self.parts[rank as usize].0.write(o, b));
        self.comm.ret("MPI_Put", r)
    }

    /// `MPI_Get` from member `rank` at displacement `disp` into `dst`.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn get<T: Scalar>(&self, dst: &mut [T], rank: i32, disp: usize) -> Result<()> {
        let b = as_bytes_mut(dst);
        let r = self
            .access(rank, disp, b.len())
            .and_then(|o| self.parts[rank as usize].0.read(o, b));
        self.comm.ret("MPI_Get", r)
    }

    /// Runs `f` with the window's accumulate lock held (what makes
    /// accumulates atomic).
    pub fn atomically<R>(&self, f: impl FnOnce() -> R) -> R {
        self.seg.atomically(f)
    }

    /// `MPI_Accumulate`: `target = src op target`, atomic with respect to
    /// other accumulates.
    ///
    /// # Errors
    /// As [`put`](Self::put), and `Op` for an op that does not apply.
    pub fn accumulate<T: Reducible>(
        &self,
        src: &[T],
        rank: i32,
        disp: usize,
        op: &Op,
    ) -> Result<()> {
        let mut old = src.to_vec();
        let r = self.get_accumulate_inner(src, &mut old, rank, disp, op);
        self.comm.ret("MPI_Accumulate", r)
    }

    /// `MPI_Get_accumulate`: `result` gets the target's old values, then
    /// `target = src op target`, atomically.
    ///
    /// # Errors
    /// As [`accumulate`](Self::accumulate).
    pub fn get_accumulate<T: Reducible>(
        &self,
        src: &[T],
        result: &mut [T],
        rank: i32,
        disp: usize,
        op: &Op,
    ) -> Result<()> {
        let r = self.get_accumulate_inner(src, result, rank, disp, op);
        self.comm.ret("MPI_Get_accumulate", r)
    }

    fn get_accumulate_inner<T: Reducible>(
        &self,
        src: &[T],
        result: &mut [T],
        rank: i32,
        disp: usize,
        op: &Op,
    ) -> Result<()> {
        op.check::<T>()?;
        if result.len() != src.len() {
            return Err(Error::new(
                ErrorClass::Count,
                "result and origin differ in length",
            ));
        }
        let o = self.access(rank, disp, std::mem::size_of_val(src))?;
        let m = &self.parts[rank as usize].0;
        self.atomically(|| {
            m.read(o, as_bytes_mut(result))?;
            let mut cur = result.to_vec();
            op.apply(src, &mut cur);
            m.write(o, as_bytes(&cur))
        })
    }

    /// `MPI_Fetch_and_op` of one element.
    ///
    /// # Errors
    /// As [`accumulate`](Self::accumulate).
    pub fn fetch_and_op<T: Reducible>(&self, src: T, rank: i32, disp: usize, op: &Op) -> Result<T> {
        let mut out = [src];
        let r = self.get_accumulate_inner(&[src], &mut out, rank, disp, op);
        self.comm.ret("MPI_Fetch_and_op", r).map(|_| out[0])
    }

    /// `MPI_Compare_and_swap`: the target's old value; it becomes `new`
    /// if it equalled `compare`. Atomic with respect to accumulates.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn compare_and_swap<T: Scalar + PartialEq>(
        &self,
        new: T,
        compare: T,
        rank: i32,
        disp: usize,
    ) -> Result<T> {
        let r = (|| {
            let o = self.access(rank, disp, std::mem::size_of::<T>())?;
            let m = &self.parts[rank as usize].0;
            self.atomically(|| {
                let mut old = [compare];
                m.read(o, as_bytes_mut(&mut old))?;
                if old[0] == compare {
                    m.write(o, as_bytes(&[new]))?;
                }
                Ok(old[0])
            })
        })();
        self.comm.ret("MPI_Compare_and_swap", r)
    }

    /// `MPI_Win_fence`: ends the previous fence epoch and starts the next
    /// (a barrier with full fences). Collective.
    ///
    /// # Errors
    /// `RmaSync` inside this process's `lock` or `lock_all` epoch (before
    /// the barrier); as the barrier.
    pub fn fence(&self) -> Result<()> {
        self.fence_with(0)
    }

    /// `MPI_Win_fence` with assertions (`mode::FENCE` bits). After
    /// `NOSUCCEED` no epoch is open: an access before the next fence is
    /// `RmaSync`.
    ///
    /// # Errors
    /// `Assert` for a bit a fence does not take, `RmaSync` inside this
    /// process's `lock` or `lock_all` epoch (both before the barrier); as
    /// the barrier.
    pub fn fence_with(&self, assert: i32) -> Result<()> {
        if let Err(e) = check_assert("MPI_Win_fence", assert, mode::FENCE) {
            return self.comm.ret("MPI_Win_fence", Err(e));
        }
        let open = assert as u32 & mode::NOSUCCEED == 0;
        {
            let e = lock(&self.epochs);
            if e.all || !e.locks.is_empty() {
                let r = Err(Error::new(
                    ErrorClass::RmaSync,
                    "MPI_Win_fence inside a passive-target epoch (lock or lock_all)",
                ));
                drop(e);
                return self.comm.ret("MPI_Win_fence", r);
            }
        }
        // SYNC(win.fence): SeqCst fences around the barrier: every store
        // to the window before it is seen by every member after it.
        fence(Ordering::SeqCst);
        let r = self.comm.barrier();
        fence(Ordering::SeqCst);
        lock(&self.epochs).fence = open;
        // Relaxed: see `access` (no lock_all is held: checked above).
        self.open_all.store(u32::from(open), Ordering::Relaxed);
        self.comm.ret("MPI_Win_fence", r)
    }

    /// `MPI_Win_lock`: a passive-target epoch on member `rank`.
    ///
    /// # Errors
    /// `Rank`; `RmaSync` if this process already holds a lock on it, or
    /// `lock_all` (whose shared hold it would wait for).
    pub fn lock(&self, kind: LockType, rank: i32) -> Result<()> {
        let r = (|| {
            self.member(rank)?;
            let r = rank as usize;
            let e = lock(&self.epochs);
            if e.locks.contains_key(&r) {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    format!("rank {rank} is already locked by this process"),
                ));
            }
            if e.all {
                // Its lock word is held shared already: waiting for it
                // exclusively would wait for this process.
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    "MPI_Win_lock inside this process's MPI_Win_lock_all epoch",
                ));
            }
            drop(e);
            self.seg.lock(r, kind == LockType::Exclusive);
            let mut e = lock(&self.epochs);
            e.locks.insert(r, kind == LockType::Exclusive);
            self.note_passive(&e);
            Ok(())
        })();
        self.comm.ret("MPI_Win_lock", r)
    }

    /// `MPI_Win_unlock`: ends the epoch on `rank`; its accesses are
    /// complete at the target.
    ///
    /// # Errors
    /// `RmaSync` if `rank` is not locked by this process.
    pub fn unlock(&self, rank: i32) -> Result<()> {
        let r = (|| {
            let removed = {
                let mut e = lock(&self.epochs);
                let removed = e.locks.remove(&(rank as usize));
                self.note_passive(&e);
                removed
            };
            let Some(excl) = removed else {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    format!("rank {rank} is not locked by this process"),
                ));
            };
            // SYNC(win.unlock): SeqCst fence: this process's accesses to
            // the window are ordered before the lock word's release (pairs
            // with the next holder's acquire in `WinSeg::lock`).
            fence(Ordering::SeqCst);
            self.seg.unlock(rank as usize, excl);
            Ok(())
        })();
        self.comm.ret("MPI_Win_unlock", r)
    }

    /// `MPI_Win_lock_all`: a shared epoch on every member.
    ///
    /// # Errors
    /// `RmaSync` if already held, or while this process holds a `lock`.
    pub fn lock_all(&self) -> Result<()> {
        let r = (|| {
            let mut e = lock(&self.epochs);
            if e.all {
                return Err(Error::new(ErrorClass::RmaSync, "lock_all is already held"));
            }
            if let Some(r) = e.locks.keys().next() {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    format!("MPI_Win_lock_all while this process holds MPI_Win_lock on rank {r}"),
                ));
            }
            for m in 0..self.parts.len() {
                self.seg.lock(m, false);
            }
            e.all = true;
            self.note_passive(&e);
            // Relaxed: see `access`.
            self.open_all.store(1, Ordering::Relaxed);
            Ok(())
        })();
        self.comm.ret("MPI_Win_lock_all", r)
    }

    /// `MPI_Win_unlock_all`.
    ///
    /// # Errors
    /// `RmaSync` if `lock_all` is not held.
    pub fn unlock_all(&self) -> Result<()> {
        let r = (|| {
            let mut e = lock(&self.epochs);
            if !e.all {
                return Err(Error::new(ErrorClass::RmaSync, "lock_all is not held"));
            }
            // SYNC(win.unlock): as in `unlock`.
            fence(Ordering::SeqCst);
            for m in 0..self.parts.len() {
                self.seg.unlock(m, false);
            }
            e.all = false;
            self.note_passive(&e);
            // Relaxed: see `access`.
            self.open_all.store(u32::from(e.fence), Ordering::Relaxed);
            Ok(())
        })();
        self.comm.ret("MPI_Win_unlock_all", r)
    }

    /// `MPI_Win_flush` / `flush_all` / `flush_local` / `flush_local_all`:
    /// every access of this process is complete when its call returns, so
    /// these are full memory fences, called inside a passive-target epoch
    /// (MPI 4.1 §12.5.4).
    ///
    /// # Errors
    /// `RmaSync` when this process holds neither `lock` nor `lock_all`
    /// (MPICH and Open MPI refuse it too).
    pub fn flush(&self) -> Result<()> {
        let r = self.check_passive("MPI_Win_flush");
        self.comm.ret("MPI_Win_flush", r)?;
        self.fence_memory();
        Ok(())
    }

    /// Checks that this process holds a passive-target epoch (`lock` on
    /// some member, or `lock_all`): what flushes and request-based
    /// accesses (`MPI_Rput`, MPI 4.1 §12.3.5) need.
    ///
    /// # Errors
    /// `RmaSync` naming `call`.
    pub fn check_passive(&self, call: &str) -> Result<()> {
        // Relaxed: a flag of this process's own epochs, set and cleared by
        // its own calls under the epochs' lock (`note_passive`), as
        // `open_all`.
        if self.passive.load(Ordering::Relaxed) != 0 {
            return Ok(());
        }
        Err(Error::new(
            ErrorClass::RmaSync,
            format!("{call} outside a passive-target epoch: call MPI_Win_lock or MPI_Win_lock_all first"),
        ))
    }

    /// Records in `passive` whether `e` holds a passive-target epoch; called
    /// with the epochs' lock held wherever that changes.
    fn note_passive(&self, e: &Epochs) {
        // Relaxed: see `check_passive`.
        self.passive
            .store(u32::from(e.all || !e.locks.is_empty()), Ordering::Relaxed);
    }

    /// `MPI_Win_sync`: a full memory fence, inside a passive-target epoch
    /// ("all flush and sync functions can be called only within passive
    /// target epochs", MPI 4.1 §12.5.4; MPICH refuses it outside too,
    /// Open MPI does not).
    ///
    /// # Errors
    /// `RmaSync` outside a passive-target epoch.
    pub fn sync(&self) -> Result<()> {
        let r = self.check_passive("MPI_Win_sync");
        self.comm.ret("MPI_Win_sync", r)?;
        self.fence_memory();
        Ok(())
    }

    fn fence_memory(&self) {
        // SYNC(win.flush): SeqCst fence: this process's window accesses
        // are ordered before what follows (pairs with the other side's
        // fence, lock or barrier).
        fence(Ordering::SeqCst);
    }

    /// `MPI_Win_post`: opens an exposure epoch for the window ranks in
    /// `origins` (each is told it may start).
    ///
    /// # Errors
    /// `RmaSync` if an exposure epoch is open; `Rank`.
    pub fn post(&self, origins: &[i32]) -> Result<()> {
        let r = (|| {
            let mut e = lock(&self.epochs);
            if e.posted.is_some() {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    "an exposure epoch is already open",
                ));
            }
            for &o in origins {
                self.member(o)?;
                self.comm.send(&[0u8; 0], o, TAG_POST)?;
            }
            e.posted = Some(origins.to_vec());
            Ok(())
        })();
        self.comm.ret("MPI_Win_post", r)
    }

    /// `MPI_Win_start`: opens an access epoch to the window ranks in
    /// `targets`, once each has posted.
    ///
    /// # Errors
    /// `RmaSync` if an access epoch is open; `Rank`.
    pub fn start(&self, targets: &[i32]) -> Result<()> {
        let r = (|| {
            if lock(&self.epochs).started.is_some() {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    "an access epoch is already open",
                ));
            }
            for &t in targets {
                self.member(t)?;
                self.comm.recv(&mut [0u8; 0], t, TAG_POST)?;
            }
            lock(&self.epochs).started = Some(targets.to_vec());
            Ok(())
        })();
        self.comm.ret("MPI_Win_start", r)
    }

    /// `MPI_Win_complete`: ends the access epoch of `start`; its accesses
    /// are complete and each target is told.
    ///
    /// # Errors
    /// `RmaSync` without an open access epoch.
    pub fn complete(&self) -> Result<()> {
        let r = (|| {
            let Some(targets) = lock(&self.epochs).started.take() else {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    "no access epoch (MPI_Win_start) is open",
                ));
            };
            // SYNC(win.pscw): SeqCst fence before the token: the target's
            // wait (after receiving it) sees every access.
            fence(Ordering::SeqCst);
            for t in targets {
                self.comm.send(&[0u8; 0], t, TAG_COMPLETE)?;
            }
            Ok(())
        })();
        self.comm.ret("MPI_Win_complete", r)
    }

    /// `MPI_Win_wait`: ends the exposure epoch of `post` once every
    /// origin has completed.
    ///
    /// # Errors
    /// `RmaSync` without an open exposure epoch.
    pub fn wait(&self) -> Result<()> {
        let r = (|| {
            let Some(origins) = lock(&self.epochs).posted.take() else {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    "no exposure epoch (MPI_Win_post) is open",
                ));
            };
            for o in origins {
                self.comm.recv(&mut [0u8; 0], o, TAG_COMPLETE)?;
            }
            fence(Ordering::SeqCst);
            Ok(())
        })();
        self.comm.ret("MPI_Win_wait", r)
    }

    /// `MPI_Win_test`: [`wait`](Self::wait) if every origin of the
    /// exposure epoch has completed (then `true`), else nothing (`false`).
    ///
    /// # Errors
    /// `RmaSync` without an open exposure epoch.
    pub fn test(&self) -> Result<bool> {
        let r = (|| {
            let mut e = lock(&self.epochs);
            let Some(origins) = e.posted.as_ref() else {
                return Err(Error::new(
                    ErrorClass::RmaSync,
                    "no exposure epoch (MPI_Win_post) is open",
                ));
            };
            for &o in origins {
                if self.comm.iprobe(o, TAG_COMPLETE)?.is_none() {
                    return Ok(false);
                }
            }
            let origins = e.posted.take().unwrap_or_default();
            drop(e);
            for o in origins {
                self.comm.recv(&mut [0u8; 0], o, TAG_COMPLETE)?;
            }
            // SYNC(win.pscw): as in `wait`.
            fence(Ordering::SeqCst);
            Ok(true)
        })();
        self.comm.ret("MPI_Win_test", r)
    }

    /// `MPI_Win_free`: collective; waits for every member (a barrier), so
    /// no member still accesses the memory.
    ///
    /// # Errors
    /// `RmaSync` with a lock, `lock_all`, start or post epoch open: the
    /// window is gone with `self`, so this process's epochs are ended
    /// first (its locks released, a start epoch completed) and the free
    /// goes on, so no other member waits for ever; as the barrier.
    pub fn free(self) -> Result<()> {
        match self.check_closed() {
            Ok(()) => self.free_shared(),
            Err(e) => {
                self.end_epochs();
                let r = self.free_shared();
                self.comm.ret("MPI_Win_free", r.and(Err(e)))
            }
        }
    }

    /// Ends every epoch this process has open on the window: the error
    /// path of [`free`](Self::free).
    fn end_epochs(&self) {
        let (all, locks, started) = {
            let mut e = lock(&self.epochs);
            e.posted = None;
            let ended = (
                std::mem::take(&mut e.all),
                std::mem::take(&mut e.locks),
                e.started.is_some(),
            );
            self.note_passive(&e);
            ended
        };
        // SYNC(win.unlock): as in `unlock`.
        fence(Ordering::SeqCst);
        if all {
            for m in 0..self.parts.len() {
                self.seg.unlock(m, false);
            }
        }
        for (r, excl) in locks {
            self.seg.unlock(r, excl);
        }
        if started {
            // Its targets wait for the token; an error here is the
            // communicator's, reported by the free's barrier too.
            let _ = self.complete();
        }
        let fenced = lock(&self.epochs).fence;
        // Relaxed: see `access`.
        self.open_all.store(u32::from(fenced), Ordering::Relaxed);
    }

    /// Checks that this process has no epoch open but a fence's, which
    /// `MPI_Win_free` needs (MPI 4.1 §12.2.5).
    ///
    /// # Errors
    /// `RmaSync` naming the epoch.
    pub fn check_closed(&self) -> Result<()> {
        let e = lock(&self.epochs);
        let open = if e.all {
            Some("MPI_Win_lock_all".to_string())
        } else if let Some(r) = e.locks.keys().next() {
            Some(format!("MPI_Win_lock on rank {r}"))
        } else if e.started.is_some() {
            Some("MPI_Win_start".to_string())
        } else if e.posted.is_some() {
            Some("MPI_Win_post".to_string())
        } else {
            None
        };
        match open {
            Some(what) => Err(Error::new(
                ErrorClass::RmaSync,
                format!("MPI_Win_free with the epoch of {what} still open"),
            )),
            None => Ok(()),
        }
    }

    /// `free` through a shared reference (the C layer, whose handle table
    /// and per-thread caches may still hold the window): the collective
    /// part; the memory goes with the last reference.
    ///
    /// # Errors
    /// `RmaSync` with an epoch open but a fence's (before the barrier:
    /// the window stays usable); as the barrier.
    pub fn free_shared(&self) -> Result<()> {
        if let Err(e) = self.check_closed() {
            return self.comm.ret("MPI_Win_free", Err(e));
        }
        // SYNC(win.fence): as in `fence_with`: every access before the
        // barrier is seen by every member after it.
        fence(Ordering::SeqCst);
        let r = self.comm.barrier();
        // Every access is complete and every member is here: letting go
        // of the window's communicator is a disconnect, not a free (a
        // window over members of another job does not keep the jobs
        // connected after `win_free`).
        if r.is_ok() {
            self.comm.mark_disconnected();
        }
        self.comm.ret("MPI_Win_free", r)
    }
}
