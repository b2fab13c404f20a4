/* block_dll.c - the library in a Windows DLL, for tests/test_block_threads.c (make test-windows
   builds it as block_dll.dll next to the test): a BLOCK evaluation, and the worker set's threads
   (duplicated handles, so the test can wait for their end after FreeLibrary). */
#define NBODY_STATIC
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <string.h>
#include <windows.h>

/* BLOCK's accelerations of a Plummer sphere (n, seed) on `threads` threads into out (x[n], y[n], z[n]); 0: done */
__declspec(dllexport) int block_dll_eval(size_t n, unsigned seed, int threads, nbody_real *out) {
    nbody_system s;
    nbody_desc d;
    int r;
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
    if (nbody_ic_plummer(&s, n, seed) != NBODY_OK) return 1;
    d.engine = NBODY_ENGINE_BLOCK; d.threads = threads; d.softening = (nbody_real)0.01;
    r = nbody_accelerations(&d, &s, out, out + n, out + 2 * n) != NBODY_OK;
    nbody_system_free(&s);
    return r;
}

/* the worker set's threads, up to max handles (the caller closes them); their count */
__declspec(dllexport) int block_dll_workers(void **handles, int max) {
    int k = 0;
#if NBODY__SYM_POOL
    for (; k < nbody__pool.workers && k < max; ++k)
        if (!DuplicateHandle(GetCurrentProcess(), nbody__pool.thread[k + 1], GetCurrentProcess(), &handles[k], 0, FALSE,
                             DUPLICATE_SAME_ACCESS)) break;
#else
    (void)handles; (void)max;
#endif
    return k;
}
