/* bench_opencl with NBODY_REAL float: ./build/bench_opencl_float [max_n] */
#define NBODY_REAL float
#include "bench_opencl.c"
