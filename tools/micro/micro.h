/*
 * micro.h - what the programs of tools/micro share: pinning the calling
 * process to one CPU. Each program is still built alone
 * (gcc -O2 -o target/NAME tools/micro/NAME.c); this header sits beside it.
 */
#ifndef SHMPI_MICRO_H
#define SHMPI_MICRO_H

#include <sched.h>
#include <stdio.h>

/* Pins the calling process to `cpu` (says so on stderr when it cannot). */
static inline void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0)
        perror("sched_setaffinity");
}

#endif
