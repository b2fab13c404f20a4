/* bench_treeblock_phases.c - the tree engines' operation for the tree leapfrog's block steps
   (nbody__active_op) alone, on the galaxy collision (nbody_ic_collision, central fraction 0.3,
   separation 3, seed 1) at t = 0, softening 0.01, theta 0.5: for 1, 32, 256, 2048, 16384 and
   65536 active bodies (every n / count-th), the least time of 20 calls of a build and its walk,
   and of a refit and its walk (each call ends with the forces on the host); on an engine with
   the whole block step (ops.kdk_step) also a refit, the walk, the levels and the kicks (each
   call ends with the levels on the host).
   Usage: bench_treeblock_phases engine n     engine: tree or cuda_tree
          TB_KDK=CLIMB:FUSE (cuda_tree): nbody__cuda_kdk_config's CLIMB and FUSE, as in bench_treeblock.c's
          block runs (1:1 the step before these two existed)
   Build: make build/bench_treeblock_phases (WITH_CUDA=1 for cuda_tree). */
#define _POSIX_C_SOURCE 199309L   /* clock_gettime */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef NBODY_WITH_CUDA
void nbody__cuda_kdk_config(unsigned int union_fraction, unsigned int max_lanes, int device_step, int roots_log2, int full,
                            int front, int climb, int fuse, int loop);   /* nbody_cuda.cu */
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    static const size_t counts[] = {1, 32, 256, 2048, 16384, 65536};
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody__engine e;
    nbody__buf y = NULL, kick = NULL;
    nbody__active_op op;
    nbody__kdk_levels lv;
    unsigned long long *level, *level_new;
    size_t n, i, q, *list;
    unsigned long long *order;
    nbody_real *out;
    int c, rep;
    if (argc < 3 || (strcmp(argv[1], "tree") && strcmp(argv[1], "cuda_tree"))) {
        fprintf(stderr, "usage: bench_treeblock_phases tree|cuda_tree n\n");
        return 2;
    }
    n = (size_t)atol(argv[2]);
#ifdef NBODY_WITH_CUDA
    if (getenv("TB_KDK")) {
        int climb = 0, fuse = 0;
        if (sscanf(getenv("TB_KDK"), "%d:%d", &climb, &fuse) < 1) return 2;
        nbody__cuda_kdk_config(0, 0, 1, 0, 1, 1, climb == 1, fuse != 1, -1);
        printf("TB_KDK %s: climb %d, fuse %d\n", getenv("TB_KDK"), climb, fuse);
    }
#endif
    d.engine = strcmp(argv[1], "tree") ? NBODY_ENGINE_CUDA_TREE : NBODY_ENGINE_TREE;
    d.method = NBODY_LEAPFROG; d.stepping = NBODY_STEPPING_BLOCK; d.softening = (nbody_real)0.01; d.theta = (nbody_real)0.5;
    d = nbody__desc_defaults(&d);
    if (n < 2 || nbody_ic_collision(&s, n, (nbody_real)0.3, 3, 1) != NBODY_OK || nbody__engine_start(&e, &d, n, s.m) != NBODY_OK) {
        fprintf(stderr, "bad n, or engine %s not here\n", argv[1]);
        return 2;
    }
    list = (size_t *)malloc(n * sizeof *list); order = (unsigned long long *)malloc(n * sizeof *order);
    out = (nbody_real *)malloc(3 * n * sizeof *out);
    level = (unsigned long long *)calloc(n, sizeof *level); level_new = (unsigned long long *)malloc(n * sizeof *level_new);
    if (!list || !order || !out || !level || !level_new || e.ops->alloc(&e, 6 * n, &y) != NBODY_OK ||
        e.ops->alloc(&e, 6 * n, &kick) != NBODY_OK || nbody__upload_system(&e, y, &s) != NBODY_OK ||
        nbody__upload_system(&e, kick, &s) != NBODY_OK)
        return 1;
    printf("# %s, galaxy collision N = %lu at t = 0, theta 0.5: least of 20 calls\n\n| active bodies | build + walk us | refit + walk us | "
           "refit + walk + levels + kicks us |\n| --- | --- | --- | --- |\n", argv[1], (unsigned long)n);
    lv.kick = kick; lv.level = level; lv.now = 1ULL << 40; lv.dt_max = (nbody_real)0.0625; lv.dt_min = 0;
    lv.crit = 2 * (nbody_real)0.05 * d.softening; lv.level_new = level_new;
    lv.jerk = (nbody_real)nbody__kdk_jerk;         /* the library's criteria (n >= nbody__kdk_jerk_from) */
    lv.limit = nbody__kdk_limit; lv.limited = 0;   /* the library's neighbour limiter */
    for (c = 0; c < 6 && counts[c] <= n; ++c) {
        double tb = 1e30, tr = 1e30, ts = 1e30;
        for (q = 0, i = 0; i < n && q < counts[c]; i += n / counts[c]) list[q++] = i;
        op.y = y; op.list = list; op.count = q; op.out = out; op.order = order;
        op.same = 0; op.level = NULL; op.neighbour_level = NULL; op.reach = NULL; op.reach_min = 0;   /* no neighbour levels */
        for (rep = 0; rep < 20; ++rep) {
            double t0 = now(), t1, t2;
            op.build = 1;
            if (e.ops->active_forces(&e, &op) != NBODY_OK) return 1;
            t1 = now();
            op.build = 0;
            if (e.ops->active_forces(&e, &op) != NBODY_OK) return 1;
            t2 = now();
            if (t1 - t0 < tb) tb = t1 - t0;
            if (t2 - t1 < tr) tr = t2 - t1;
            if (e.ops->kdk_step) {             /* the kicks change velocities only: the positions stay */
                double t3 = now();
                if (e.ops->kdk_step(&e, &op, &lv) != NBODY_OK || !lv.ok) return 1;
                if (now() - t3 < ts) ts = now() - t3;
            }
        }
        if (e.ops->kdk_step) printf("| %lu | %.0f | %.0f | %.0f |\n", (unsigned long)q, tb * 1e6, tr * 1e6, ts * 1e6);
        else printf("| %lu | %.0f | %.0f | |\n", (unsigned long)q, tb * 1e6, tr * 1e6);
    }
    e.ops->release(&e, y); e.ops->release(&e, kick);
    nbody__engine_stop(&e);
    free(list); free(order); free(out); free(level); free(level_new);
    nbody_system_free(&s);
    return 0;
}
