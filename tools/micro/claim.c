/*
 * claim.c - what claiming the next slot's lines buys a ping-pong through
 * a ring of slots, with no MPI in the way: each direction has a 2 MiB
 * area of consecutive slots (a header line holding a sequence word, then
 * the N-byte payload), as a ring's frames; the sender copies its message
 * into the next slot and stores the sequence word, the receiver waits
 * for it and copies the payload out.
 *
 * Build: gcc -O2 -mcldemote -mprfchw -o target/claim tools/micro/claim.c
 * Usage: target/claim N DEMOTE CLAIM [REPS]
 *   DEMOTE 1: after storing the sequence word the sender demotes the
 *             payload lines (CLDEMOTE), as ring::Demote does.
 *   CLAIM 1:  then it claims the lines of its next slot for writing
 *             (PREFETCHW), as Producer::flush_hints does.
 * Each of REPS lines (default 5) gives the one-way time of 20,000 round
 * trips, after 1,000 untimed ones.
 *
 * docs/benchmarks.md, "thirty-third pass", has what it measured.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "micro.h"

#define AREA (2 << 20)
#define WARM 1000
#define TRIPS 20000

struct shared {
    char area[2][AREA] __attribute__((aligned(4096))); /* one per direction */
};

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s N DEMOTE CLAIM [REPS]\n", argv[0]);
        return 2;
    }
    size_t n = strtoul(argv[1], 0, 0);
    int demote = atoi(argv[2]), claim = atoi(argv[3]);
    int reps = argc > 4 ? atoi(argv[4]) : 5;
    size_t slot = (64 + n + 63) & ~(size_t)63;
    if (n == 0 || slot > AREA / 4) {
        fprintf(stderr, "N: 1 .. %d\n", AREA / 4 - 64);
        return 2;
    }
    struct shared *s = shared_zeroed(sizeof *s);
    pid_t child;
    int me = fork_pinned(&child);
    char *src = aligned_alloc(64, slot), *dst = aligned_alloc(64, slot);
    memset(src, me + 1, slot);
    memset(dst, 0, slot);
    char *out = s->area[me], *in = s->area[!me];
    size_t opos = 0, ipos = 0;
    uint64_t seq = 1;
    for (int r = 0; r < reps; r++) {
        double t0 = 0;
        for (int i = 0; i < WARM + TRIPS; i++, seq++) {
            if (i == WARM)
                t0 = now_ns();
            if ((i & 1) == me) { /* rank 0 sends on even turns */
                char *p = out + opos;
                memcpy(p + 64, src, n);
                __atomic_store_n((uint64_t *)p, seq, __ATOMIC_RELEASE);
                if (demote)
                    for (size_t o = 64; o < slot; o += 64)
                        _cldemote(p + o);
                opos = opos + 2 * slot > AREA ? 0 : opos + slot;
                if (claim)
                    for (size_t o = 0; o < slot; o += 64)
                        _m_prefetchw(out + opos + o);
            } else {
                char *p = in + ipos;
                while (__atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE) != seq)
                    _mm_pause();
                memcpy(dst, p + 64, n);
                ipos = ipos + 2 * slot > AREA ? 0 : ipos + slot;
            }
        }
        if (me == 0)
            printf("N=%zu demote=%d claim=%d one-way %.3f us\n", n, demote, claim,
                   (now_ns() - t0) / TRIPS / 1000);
        fflush(stdout);
    }
    if (child > 0)
        waitpid(child, 0, 0);
    return 0;
}
