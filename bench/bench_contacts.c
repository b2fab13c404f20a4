/* bench_contacts.c - collision detection after a step: the engine's own search on the
   device (find_contacts: the pairs come back, sorted) against the host path (the state
   downloaded, then sweep and prune on the CPU), on a Plummer sphere of N bodies with radii
   0.05..0.15 N^(-1/3). Best of 5 after a warm-up (the host path once when it takes
   over 2 s); the pairs of both are compared too.
   Prints one RESULT line per N.
   Usage: bench_contacts [engine: cuda | cuda-tree | opencl | opencl-tree (cuda-tree)] [N ...]
          (default N: 100000 1000000) */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nbody_engine engine_of(const char *s) {
    int e;
    for (e = 1; e < NBODY_ENGINE_COUNT_; ++e) if (strcmp(s, nbody_engine_name((nbody_engine)e)) == 0) return (nbody_engine)e;
    return NBODY_ENGINE_CUDA_TREE;
}

static void one(nbody_engine eng, size_t n) {
    nbody_system s;
    nbody_sim *sim;
    nbody_desc d;
    nbody_real *r = (nbody_real *)malloc(n * sizeof(nbody_real)), *X = (nbody_real *)malloc(6 * n * sizeof(nbody_real));
    double best_dev = 1e30, best_host = 1e30, best_down = 1e30, t0, t1, t2, t3, h = 1.0 / cbrt((double)n);
    size_t i, dev_count = 0, same = 1;
    int slow = 0, on_device = 0;
    nbody__contact *dev = NULL;
    unsigned long long u = 88172645463325252ULL;
    int k;
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
    nbody_ic_plummer(&s, n, 5);
    for (i = 0; i < n; ++i) {
        u ^= u << 13; u ^= u >> 7; u ^= u << 17;
        r[i] = (nbody_real)(h * (0.05 + 0.1 * (double)(u >> 11) / 9007199254740992.0));
    }
    d.engine = eng;
    if (nbody_create(&sim, &d, &s) != NBODY_OK) {
        printf("RESULT contacts %s N=%lu: engine unavailable\n", nbody_engine_name(eng), (unsigned long)n);
        free(r); free(X); nbody_system_free(&s);
        return;
    }
    nbody_set_radii(sim, r);
    for (k = 0; k < 6 && sim->eng.ops->find_contacts; ++k) {   /* the device: a warm-up, then the best of 5 */
        const nbody__contact *c = NULL;
        size_t cnt = 0;
        nbody_result res;
        t0 = nbody__wall_seconds();
        res = sim->eng.ops->find_contacts(&sim->eng, sim->y, 1, 0, &c, &cnt);
        t1 = nbody__wall_seconds();
        if (res == NBODY_ERR_UNAVAILABLE) break;
        on_device = 1;
        if (k > 0 && t1 - t0 < best_dev) best_dev = t1 - t0;
        if (k == 5) {   /* the last result against the host's below */
            dev_count = cnt;
            dev = (nbody__contact *)malloc((cnt ? cnt : 1) * sizeof *dev);
            memcpy(dev, c, cnt * sizeof *dev);
            same = res == NBODY_OK;
        }
    }
    for (k = 0; k < 6 && !slow; ++k) {   /* the host path; when slow (over 2 s) timed once */
        nbody__pairs P;
        memset(&P, 0, sizeof P);
        t1 = nbody__wall_seconds();
        sim->eng.ops->download(&sim->eng, X, sim->y, 0, 6 * n);
        t2 = nbody__wall_seconds();
        nbody__find_pairs(&sim->desc, n, X, r, 0, &P);
        t3 = nbody__wall_seconds();
        slow = t3 - t1 > 2;
        if (k > 0 || slow) {   /* the first is a warm-up, unless it is slow */
            if (t3 - t1 < best_host) best_host = t3 - t1;
            if (t2 - t1 < best_down) best_down = t2 - t1;
        }
        if (on_device && dev) {
            same = same && dev_count == P.n;
            for (i = 0; same && i < dev_count; ++i) same = dev[i].i == P.p[i].i && dev[i].j == P.p[i].j && dev[i].d == P.p[i].d;
        }
        free(P.p);
    }
    free(dev);
    if (on_device)
        printf("RESULT contacts %s N=%lu pairs=%lu: device %.3f ms, host path %.3f ms (download %.3f ms + sweep %.3f ms), %.1fx, same pairs: %s\n",
               nbody_engine_name(eng), (unsigned long)n, (unsigned long)dev_count, 1e3 * best_dev, 1e3 * best_host, 1e3 * best_down,
               1e3 * (best_host - best_down), best_host / best_dev, same ? "yes" : "NO");
    else
        printf("RESULT contacts %s N=%lu: the host path only (no device search for this engine and N), %.3f ms (download %.3f ms)\n",
               nbody_engine_name(eng), (unsigned long)n, 1e3 * best_host, 1e3 * best_down);
    nbody_destroy(sim);
    free(r); free(X);
    nbody_system_free(&s);
}

int main(int argc, char **argv) {
    nbody_engine eng = argc > 1 ? engine_of(argv[1]) : NBODY_ENGINE_CUDA_TREE;
    int a;
    if (argc > 2)
        for (a = 2; a < argc; ++a) one(eng, (size_t)strtoul(argv[a], NULL, 10));
    else {
        one(eng, 100000);
        one(eng, 1000000);
    }
    return 0;
}
