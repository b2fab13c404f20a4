/* bench_clsym with NBODY_REAL float */
#define NBODY_REAL float
#include "bench_clsym.c"
