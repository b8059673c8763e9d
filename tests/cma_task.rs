//! The task that peers name in single-copy calls (`transport::cma::target`)
//! after `fork`: a child gets a sleeping thread of its own, so that peers
//! of a transport it makes reach its memory, not its parent's. Alone in
//! its test binary: the child of a `fork` must not inherit a lock that
//! another test thread held.

use std::time::{Duration, Instant};

use shmpi::transport::cma;

#[test]
fn a_forked_child_names_a_thread_of_its_own() {
    let parent = cma::target();
    assert_ne!(parent, std::process::id());
    // SAFETY: the child only calls `target` (a thread spawn) and reads
    // files before `_exit`; this binary runs this one test, so no other
    // thread of the harness holds a lock the child could need.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork: {}", std::io::Error::last_os_error());
    if child == 0 {
        let tid = cma::target();
        let own = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .is_ok_and(|c| c.trim() == "shmpi-cma");
        let code = if tid != parent && tid != std::process::id() && own {
            0
        } else {
            1
        };
        // SAFETY: ends the child at once, without running the harness's
        // exit handlers twice.
        unsafe { libc::_exit(code) };
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid place for the child's status.
        let r = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if r == child {
            break;
        }
        assert_eq!(r, 0, "waitpid: {}", std::io::Error::last_os_error());
        if Instant::now() > deadline {
            // SAFETY: signals our own child.
            unsafe { libc::kill(child, libc::SIGKILL) };
            panic!("the forked child did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child named its parent's thread or none of its own (status {status:#x})"
    );
    assert_eq!(cma::target(), parent, "the parent's thread stays");
}
