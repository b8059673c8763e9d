/*
 * micro.h - what the programs of tools/micro share: pinning the calling
 * process to one CPU, a zeroed shared mapping, a fork with both sides
 * pinned. Each program is still built alone
 * (gcc -O2 -o target/NAME tools/micro/NAME.c); this header sits beside it.
 */
#ifndef SHMPI_MICRO_H
#define SHMPI_MICRO_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Pins the calling process to `cpu` (says so on stderr when it cannot). */
static inline void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0)
        perror("sched_setaffinity");
}

/* `len` zeroed bytes shared with the child of a later fork() (exits
 * with a message when they cannot be mapped). */
static inline void *shared_zeroed(size_t len)
{
    void *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, 0, len);
    return p;
}

/* Forks: the parent is pinned to CPU 0, the child to CPU 1. Returns 1 in
 * the child and 0 in the parent; `*child` gets fork()'s value. */
static inline int fork_pinned(pid_t *child)
{
    *child = fork();
    int me = *child == 0;
    pin(me);
    return me;
}

#endif
