/*
 * pipeline.c - the bound on a 16-64 KiB message between two cores with
 * no MPI in the way: a ping-pong of N-byte messages through a shared
 * mapping, written whole or in chunks, so the ring's copy-in/copy-out
 * overlap can be judged against what the hardware allows.
 *
 * Build: gcc -O2 -mavx2 -o target/pipeline tools/micro/pipeline.c
 * Usage: target/pipeline N MODE [CHUNK [PREFETCH [REPS]]]
 *   MODE 0: the sender writes the message with non-temporal stores,
 *           fences, sets one flag; the receiver, seeing the flag, copies
 *           it out with 32-byte loads and stores (as a streamed ring frame
 *           to a distant peer, ring::Reservation::write_streaming).
 *   MODE 1: the same in CHUNK-byte pieces, a flag each; the receiver
 *           copies each piece as its flag shows (a pipelined message).
 *   MODE 2: as 0 (PREFETCH, the bytes the receiver's forward copy
 *           prefetches ahead, applies to every mode; the figures name
 *           this mode for it).
 *   MODE 3: as 0 with ordinary stores (a plain ring frame).
 *   MODE 4: as 1 with each chunk's flag in its own first line, as a ring
 *           frame's header is (that line written with ordinary stores,
 *           the rest streamed).
 *   MODE 5: as 4, and before publishing a chunk the sender zeroes the
 *           first word of the next chunk, as the ring's producer writes a
 *           guard at the position after a frame it commits over bytes of
 *           an earlier lap.
 *   MODE 6: as 5 with the chunk's first line (but its flag word) written
 *           before the streamed rest, as the ring's producer writes a
 *           frame's wire header before its payload and the header word
 *           last.
 *   MODE 7: as 0, the receiver copying back to front (as the ring's
 *           named receive copies a frame it waited for, from 2 KiB).
 *   MODE 8: as 1, each chunk copied back to front.
 * Each of REPS lines (default 10) gives the cache-line hand-off measured
 * just before and after its 2,000 round trips (one-way ns), which tells
 * the placement on VMs whose vCPUs move (one CCD or two, on the Zen 4
 * VM), and the one-way time of the message in µs.
 *
 * docs/benchmarks.md, "twenty-first pass", has what it measured.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "micro.h"

#define MAXN (1 << 20)
#define MAXCH 256
#define TRIPS 2000
#define LINE_TRIPS 20000

struct dir {
    volatile uint64_t flag[MAXCH][8]; /* one line each */
    char buf[MAXN] __attribute__((aligned(64)));
};
struct shared {
    volatile uint64_t line[8];  /* the hand-off probe */
    volatile uint64_t gate[8];  /* the two sides' barrier */
    struct dir d[2];            /* one per direction */
};

static struct shared *S;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void store_nt(char *d, const char *s, size_t n)
{
    for (size_t o = 0; o < n; o += 64) {
        __m256i a = _mm256_loadu_si256((const void *)(s + o));
        __m256i b = _mm256_loadu_si256((const void *)(s + o + 32));
        _mm256_stream_si256((void *)(d + o), a);
        _mm256_stream_si256((void *)(d + o + 32), b);
    }
    _mm_sfence();
}

static void copy(char *d, const char *s, size_t n, size_t pf)
{
    for (size_t o = 0; o < n; o += 128) {
        if (pf) {
            _mm_prefetch(s + o + pf, _MM_HINT_T0);
            _mm_prefetch(s + o + pf + 64, _MM_HINT_T0);
        }
        __m256i a = _mm256_loadu_si256((const void *)(s + o));
        __m256i b = _mm256_loadu_si256((const void *)(s + o + 32));
        __m256i c = _mm256_loadu_si256((const void *)(s + o + 64));
        __m256i e = _mm256_loadu_si256((const void *)(s + o + 96));
        _mm256_storeu_si256((void *)(d + o), a);
        _mm256_storeu_si256((void *)(d + o + 32), b);
        _mm256_storeu_si256((void *)(d + o + 64), c);
        _mm256_storeu_si256((void *)(d + o + 96), e);
    }
}

/* copy() from the end to the start. */
static void copy_back(char *d, const char *s, size_t n)
{
    for (size_t e = n; e >= 128; e -= 128) {
        __m256i a = _mm256_loadu_si256((const void *)(s + e - 32));
        __m256i b = _mm256_loadu_si256((const void *)(s + e - 64));
        __m256i c = _mm256_loadu_si256((const void *)(s + e - 96));
        __m256i f = _mm256_loadu_si256((const void *)(s + e - 128));
        _mm256_storeu_si256((void *)(d + e - 32), a);
        _mm256_storeu_si256((void *)(d + e - 64), b);
        _mm256_storeu_si256((void *)(d + e - 96), c);
        _mm256_storeu_si256((void *)(d + e - 128), f);
    }
}

/* One-way hand-off of a line, ns (both sides call it; values only grow). */
static double handoff(int me)
{
    static uint64_t base;
    double t0 = now_ns();
    for (uint64_t i = 0; i < LINE_TRIPS; i++) {
        uint64_t b = base + 2 * i;
        if (me == 0) {
            S->line[0] = b + 1;
            while (S->line[0] != b + 2)
                _mm_pause();
        } else {
            while (S->line[0] != b + 1)
                _mm_pause();
            S->line[0] = b + 2;
        }
    }
    base += 2 * LINE_TRIPS;
    return (now_ns() - t0) / LINE_TRIPS / 2;
}

static void barrier(int me)
{
    static uint64_t gen;
    gen++;
    if (me == 0) {
        S->gate[0] = gen;
        while (S->gate[1] != gen)
            _mm_pause();
    } else {
        while (S->gate[0] != gen)
            _mm_pause();
        S->gate[1] = gen;
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s N MODE [CHUNK [PREFETCH [REPS]]]\n", argv[0]);
        return 2;
    }
    size_t n = strtoul(argv[1], 0, 0);
    int mode = atoi(argv[2]);
    size_t ch = argc > 3 ? strtoul(argv[3], 0, 0) : n;
    size_t pf = argc > 4 ? strtoul(argv[4], 0, 0) : 0;
    int reps = argc > 5 ? atoi(argv[5]) : 10;
    if (n < 128 || n > MAXN || n % 128 || ch < 128 || ch % 128 || (n + ch - 1) / ch > MAXCH ||
        mode < 0 || mode > 8) {
        fprintf(stderr, "N and CHUNK: multiples of 128 up to %d, at most %d chunks; MODE 0-8\n",
                MAXN, MAXCH);
        return 2;
    }
    S = shared_zeroed(sizeof *S);
    pid_t child;
    int me = fork_pinned(&child);
    char *src = aligned_alloc(64, MAXN + 4096), *dst = aligned_alloc(64, MAXN + 4096);
    memset(src, me + 1, MAXN + 4096);
    memset(dst, 0, MAXN + 4096);
    uint64_t seq = 0;
    /* What each mode does, so that one sender loop and one receiver loop
     * serve them all: a whole message is one chunk. */
    int chunked = mode == 1 || (mode >= 4 && mode <= 6) || mode == 8;
    int flag_in_line = mode >= 4 && mode <= 6; /* the flag in the chunk's first line */
    int plain = mode == 3;                      /* ordinary stores, not streamed */
    int back = mode == 7 || mode == 8;          /* the receiver copies back to front */
    if (!chunked)
        ch = n;
    int chunks = (n + ch - 1) / ch;
    for (int r = 0; r < reps; r++) {
        barrier(me);
        double before = handoff(me);
        barrier(me);
        double t0 = now_ns();
        for (int i = 0; i < TRIPS; i++) {
            for (int side = 0; side < 2; side++) {
                struct dir *D = &S->d[side];
                seq++;
                for (int c = 0; c < chunks; c++) {
                    size_t o = c * ch, l = n - o < ch ? n - o : ch;
                    char *at = D->buf + o;
                    volatile uint64_t *flag = flag_in_line ? (volatile uint64_t *)at : &D->flag[c][0];
                    if (me == side && flag_in_line) {
                        if (mode == 6)
                            memcpy(at + 8, src + o + 8, 56);
                        store_nt(at + 64, src + o + 64, l - 64);
                        if (mode != 6)
                            memcpy(at + 8, src + o + 8, 56);
                        if (mode >= 5 && c + 1 < chunks)
                            *(volatile uint64_t *)(at + l) = 0;
                        __atomic_store_n(flag, seq, __ATOMIC_RELEASE);
                    } else if (me == side) {
                        if (plain)
                            copy(at, src + o, l, 0);
                        else
                            store_nt(at, src + o, l);
                        __atomic_store_n(flag, seq, __ATOMIC_RELEASE);
                    } else {
                        while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != seq)
                            _mm_pause();
                        if (back)
                            copy_back(dst + o, at, l);
                        else
                            copy(dst + o, at, l, pf);
                    }
                }
            }
        }
        double us = (now_ns() - t0) / TRIPS / 2 / 1000;
        barrier(me);
        double after = handoff(me);
        if (me == 0)
            printf("n=%zu mode=%d ch=%zu pf=%zu line %.0f/%.0f ns  one-way %.3f us\n", n, mode,
                   ch, pf, before, after, us);
    }
    if (child > 0)
        waitpid(child, 0, 0);
    return 0;
}
