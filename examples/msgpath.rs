//! Instructions per message on the small-message path, for callgrind
//! (`tools/icount.sh` runs it): a count of instructions is deterministic
//! where these shared machines' timings are not.
//!
//! Two ranks (run under `shmpiexec -n 2`). In rounds, rank 0 sends a batch
//! of messages of `S` bytes (default 8) and waits for an ack; rank 1 first
//! sleeps 10 ms, so the whole batch sits in its ring, then receives it: no
//! spinning enters the counts. `MODE=blocking` (default): 32 `send` /
//! `recv` per batch; `MODE=window`: a window of 64 `isend` (in a lending
//! scope) / `irecv` and `wait_all`; `MODE=many`: the same sends, and one
//! `recv_many` of the 64 into one buffer, as `shmpi-bench bw` does;
//! `MODE=irecv`: the blocking sends, each received by an `irecv` and its
//! `wait` (the halo exchange's receive, `shmpi-bench latency --irecv`).
//! The functions `send_batch` and `recv_batch` hold the counted work.

const ROUNDS: usize = 300;

fn main() {
    let size: usize = std::env::var("S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let mode = std::env::var("MODE").unwrap_or_default();
    let many = mode == "many";
    let window = many || mode == "window";
    let irecv = mode == "irecv";
    let batch = if window { 64 } else { 32 };
    let u = shmpi::init().expect("init");
    let w = u.world();
    assert_eq!(w.size(), 2, "run with 2 ranks");
    let sbuf = vec![7u8; size];
    let mut rbufs: Vec<Vec<u8>> = (0..batch).map(|_| vec![0u8; size]).collect();
    let mut ack = [0u8; 1];
    w.barrier().expect("barrier");
    for _ in 0..ROUNDS {
        if w.rank() == 0 {
            send_batch(&w, &sbuf, batch, window);
            w.recv(&mut ack, 1, 2).expect("ack");
        } else {
            std::thread::sleep(std::time::Duration::from_millis(10));
            recv_batch(&w, &mut rbufs, window, many, irecv);
            w.send(&ack, 0, 2).expect("ack");
        }
    }
    w.barrier().expect("barrier");
    if w.rank() == 0 {
        println!(
            "msgpath: {} messages of {size} bytes each way",
            ROUNDS * batch
        );
    }
}

#[inline(never)]
fn send_batch(w: &shmpi::Communicator, buf: &[u8], batch: usize, window: bool) {
    if window {
        shmpi::comm::scope(|sc| {
            let reqs: Vec<_> = (0..batch)
                .map(|_| sc.isend(w, buf, 1, 1).expect("isend"))
                .collect();
            shmpi::comm::wait_all(reqs).expect("wait_all");
        });
    } else {
        for _ in 0..batch {
            w.send(buf, 1, 1).expect("send");
        }
    }
}

#[inline(never)]
fn recv_batch(
    w: &shmpi::Communicator,
    bufs: &mut [Vec<u8>],
    window: bool,
    many: bool,
    irecv: bool,
) {
    if irecv {
        let buf = &mut bufs[0];
        for _ in 0..32 {
            w.irecv(buf, 0, 1).expect("irecv").wait().expect("wait");
        }
    } else if many {
        let n = bufs.len();
        w.recv_many(&mut bufs[0], n, 0, 1).expect("recv_many");
    } else if window {
        let reqs: Vec<_> = bufs
            .iter_mut()
            .map(|b| w.irecv(b, 0, 1).expect("irecv"))
            .collect();
        shmpi::comm::wait_all(reqs).expect("wait_all");
    } else {
        let buf = &mut bufs[0];
        for _ in 0..32 {
            w.recv(buf, 0, 1).expect("recv");
        }
    }
}
