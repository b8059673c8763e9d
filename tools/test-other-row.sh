#!/usr/bin/env bash
#
# test-other-row.sh - the test suite again on another kind of CPU's paths:
# under the row of single-copy and window defaults of the CPU kind this
# machine is not (`SHMPI_CPU_DEFAULTS`: AMD family 25 on Intel, Intel
# elsewhere) and without cache-line demotion (`SHMPI_DEMOTE=0`, as on a
# CPU without CLDEMOTE). A test that holds only on the CPU it was written
# on fails here instead of on the next machine; the timings stay this
# CPU's. Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if grep -q '^vendor_id.*GenuineIntel' /proc/cpuinfo 2>/dev/null; then
    row=amd-family-25
else
    row=intel
fi
echo "tools/test-other-row.sh: the suite under SHMPI_CPU_DEFAULTS=$row SHMPI_DEMOTE=0" >&2
SHMPI_CPU_DEFAULTS=$row SHMPI_DEMOTE=0 cargo test "$@"
