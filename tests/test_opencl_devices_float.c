/* the several-OpenCL-devices tests with NBODY_REAL float: kernels.cl built for float */
#define NBODY_REAL float
#include "test_opencl_devices.c"
