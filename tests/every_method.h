/* every_method.h - one check shared by the GPU engines' tests: every method the CPU has,
   fixed step and adaptive, gives the CPU's result on the engine, because the solvers only
   call engine operations. Include after check.h and nbody.h (with NBODY_IMPLEMENTATION). */
#ifndef EVERY_METHOD_H
#define EVERY_METHOD_H
#include <math.h>

/* 51 Plummer bodies to t = 0.2, SIMPLE against `engine`: positions and velocities within
   1e-12 (double) or 1e-4 (float); methods not built into this nbody.h end the loop */
static void check_every_method(nbody_engine engine) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    nbody_system s0 = {0}, a = {0}, b = {0};
    int m, k;
    nbody_ic_plummer(&s0, 51, 3);
    nbody_system_alloc(&a, 51); nbody_system_alloc(&b, 51);
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m)
        for (k = 0; k < 2; ++k) {
            nbody_desc d = NBODY__ZERO_INIT;
            nbody_sim *sa = NULL, *sb = NULL;
            nbody_result ra, rb;
            double diff = 0;
            size_t i;
            if (m == NBODY_WHFAST) continue;   /* a CPU method (GPU engines refuse it): tests/test_whfast.c */
            if (m == NBODY_HERMITE) continue;  /* its own engine operation: tests/hermite_engine.h */
            if (k && !nbody_method_adaptive((nbody_method)m)) continue;   /* a tolerance is refused there */
            d.method = (nbody_method)m; d.softening = (nbody_real)0.05; d.dt = (nbody_real)2e-3;
            d.tolerance = k ? (nbody_real)(dbl ? 1e-8 : 1e-4) : 0;
            d.engine = NBODY_ENGINE_SIMPLE;
            rb = nbody_create(&sb, &d, &s0);
            if (rb == NBODY_ERR_UNAVAILABLE) break;
            if (rb == NBODY_OK) rb = nbody_advance(sb, (nbody_real)0.2);
            if (rb == NBODY_OK) rb = nbody_get_state(sb, &b);
            d.engine = engine;
            ra = nbody_create(&sa, &d, &s0);
            if (ra == NBODY_OK) ra = nbody_advance(sa, (nbody_real)0.2);
            if (ra == NBODY_OK) ra = nbody_get_state(sa, &a);
            for (i = 0; i < 51; ++i) {
                double e = fabs((double)(a.x[i] - b.x[i])) + fabs((double)(a.vx[i] - b.vx[i]));
                if (!(e <= diff)) diff = e;
            }
            CHECK(ra == NBODY_OK && rb == NBODY_OK && diff <= (dbl ? 1e-12 : 1e-4),
                  "%s tolerance %g: %s %s, cpu %s, states differ by %.3g", nbody_method_name((nbody_method)m),
                  (double)d.tolerance, nbody_engine_name(engine), nbody_result_string(ra), nbody_result_string(rb), diff);
            nbody_destroy(sa); nbody_destroy(sb);
        }
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}
#endif
