/* the OpenCL tests with NBODY_REAL float: kernels.cl built for float (tolerances in TOL) */
#define NBODY_REAL float
#include "test_opencl.c"
