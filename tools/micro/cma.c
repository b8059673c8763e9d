/*
 * cma.c - what one process_vm_readv costs on this machine, without MPI:
 * the fixed cost of a call (the system call, finding the other process,
 * pinning its pages) against the bytes, next to a plain memcpy and an
 * empty system call. The shared copy of a rendezvous makes one such call
 * on each side (docs/protocol.md, "Shared copy"), so its fixed cost is
 * paid on the critical path of every rendezvous message.
 *
 * Build: gcc -O2 -o target/cma tools/micro/cma.c
 * Usage: target/cma [N [READER_CPU OWNER_CPU [REPS]]]
 *   A child pinned to OWNER_CPU (default 0) owns a 4 MiB buffer; the
 *   parent, pinned to READER_CPU (default 1), times REPS (20000) calls
 *   of each kind and prints the mean and best in µs:
 *   - process_vm_readv of N bytes (default 65536), of 4 KiB and of 8 B;
 *   - memcpy of N bytes between two buffers of its own;
 *   - getppid, an empty system call.
 *
 * docs/benchmarks.md, "twenty-third pass", has what it measured.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "micro.h"

#define BUF (4u << 20)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], 0, 0) : 65536;
    int reader = argc > 3 ? atoi(argv[2]) : 1;
    int owner = argc > 3 ? atoi(argv[3]) : 0;
    int reps = argc > 4 ? atoi(argv[4]) : 20000;
    if (n == 0 || n > BUF || reps <= 0) {
        fprintf(stderr, "usage: %s [N [READER_CPU OWNER_CPU [REPS]]], N up to %u\n", argv[0],
                BUF);
        return 2;
    }
    char *src = aligned_alloc(4096, BUF);
    char *dst = aligned_alloc(4096, BUF);
    if (!src || !dst)
        return 1;
    memset(src, 1, BUF);
    pid_t child = fork();
    if (child == 0) {
        pin(owner);
        /* Its own copy of the pages, so the reader pins another process's. */
        memset(src, 3, BUF);
        for (;;)
            pause();
    }
    pin(reader);
    memset(dst, 2, BUF);
    usleep(100000); /* the child has written its pages */
    const char *names[] = {"process_vm_readv N", "process_vm_readv 4 KiB",
                           "process_vm_readv 8 B", "memcpy N", "getppid"};
    size_t sizes[] = {n, 4096, 8, n, 0};
    int failed = 0;
    for (int mode = 0; mode < 5; mode++) {
        double best = 1e30, total = 0;
        for (int i = 0; i < reps; i++) {
            double t = now_us();
            if (mode < 3) {
                struct iovec l = {dst, sizes[mode]}, r = {src, sizes[mode]};
                if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)sizes[mode])
                    failed = 1;
            } else if (mode == 3) {
                memcpy(dst, src, n);
            } else {
                syscall(SYS_getppid);
            }
            double d = now_us() - t;
            total += d;
            if (d < best)
                best = d;
        }
        printf("%-24s %8zu B  mean %7.3f us  best %7.3f us\n", names[mode], sizes[mode],
               total / reps, best);
    }
    kill(child, SIGKILL);
    if (failed)
        fprintf(stderr, "process_vm_readv failed (ptrace_scope, seccomp?): its rows are "
                        "no measure\n");
    return failed;
}
