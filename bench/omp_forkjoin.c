/* omp_forkjoin.c - what an OpenMP parallel region of two threads costs apart from its work:
   the runtime's fork and join (an empty region), and the same region running the task graph
   that BLOCK's symmetric schedule was until 2026-11-27 (it is now the "spin" region's scheme,
   nbody__sym_worker), at N = 4096 in float (8 blocks: 8 block tasks and 28 block
   pairs in the rounds of a round-robin tournament, each task depending on its blocks), with
   the tasks empty and with each task spinning for WORK_US microseconds of arithmetic (about a
   block pair's time there: 36 of them on two threads make one evaluation of about 1.5 ms, so
   the ideal region is 18 WORK_US). bench/wine_vs_linux.sh builds it for Linux and for Windows and runs it both
   ways: what it prints is the share of a short BLOCK evaluation that is not the kernel.
   Best and median of REPS regions, in microseconds, timed by the library's wall clock
   (QueryPerformanceCounter on Windows: omp_get_wtime ticks every millisecond there).
       cc -O2 -fopenmp -I. bench/omp_forkjoin.c -lm && ./a.out [reps] */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>

#define BLOCKS 8                   /* nbody__sym_block(4096) = 512 bodies: 8 blocks */
#define WORK_US 80
static volatile int sink;
static long work_iters;            /* iterations of work() that take WORK_US, measured */
static int with_work;

static void work(void) {
    volatile double x = 1;
    long i;
    for (i = 0; i < work_iters; ++i) x = x * 0.999999 + 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double empty_region(void) {
    double t0 = nbody__wall_seconds();
#pragma omp parallel num_threads(2)
    sink = 1;
    return nbody__wall_seconds() - t0;
}

/* the task graph of nbody__simd_forces_sym with no work in the tasks */
static double task_region(void) {
    static char tok[BLOCKS];
    long long nt = BLOCKS + (BLOCKS & 1);
    double t0 = nbody__wall_seconds();
    (void)tok;                     /* gcc does not count a depend clause as a use */
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        long long b, r, q;
        for (b = 0; b < BLOCKS; ++b) {
#pragma omp task firstprivate(b) depend(inout: tok[b])
            if (with_work) work(); else sink = (int)b;
        }
        for (r = 0; r < nt - 1; ++r)
            for (q = 0; q < nt / 2; ++q) {
                long long p = q ? (r + q) % (nt - 1) : r, o = q ? (r - q + nt - 1) % (nt - 1) : nt - 1;
                long long lo = p < o ? p : o, hi = p < o ? o : p;
                if (hi >= BLOCKS) continue;
#pragma omp task firstprivate(lo, hi) depend(inout: tok[lo], tok[hi])
                if (with_work) work(); else sink = (int)(lo + hi);
            }
    }
    return nbody__wall_seconds() - t0;
}

/* the same graph without tasks: the threads take the tasks in the order they are created (an
   atomic counter) and spin until the earlier tasks on the task's blocks are done (a count per
   block: before round r a block has had its own task and one pair a round) */
static double spin_region(void) {
    static int done[BLOCKS];
    long long nt = BLOCKS + (BLOCKS & 1), ntask = BLOCKS + (nt - 1) * (nt / 2), next = 0;
    double t0 = nbody__wall_seconds();
    memset(done, 0, sizeof done);
#pragma omp parallel num_threads(2)
    for (;;) {
        long long k, r, q, p, o, lo, hi;
#pragma omp atomic capture
        k = next++;
        if (k >= ntask) break;
        if (k < BLOCKS) { lo = hi = k; r = -1; }
        else {
            r = (k - BLOCKS) / (nt / 2); q = (k - BLOCKS) % (nt / 2);
            p = q ? (r + q) % (nt - 1) : r; o = q ? (r - q + nt - 1) % (nt - 1) : nt - 1;
            lo = p < o ? p : o; hi = p < o ? o : p;
            if (hi >= BLOCKS) continue;
            for (;;) {
                int a, c;
#pragma omp atomic read
                a = done[lo];
#pragma omp atomic read
                c = done[hi];
                if (a >= 1 + r && c >= 1 + r) break;
            }
        }
#pragma omp flush
        if (with_work) work(); else sink = (int)k;
#pragma omp flush
#pragma omp atomic update
        done[lo] += 1;
        if (hi != lo) {
#pragma omp atomic update
            done[hi] += 1;
        }
    }
    return nbody__wall_seconds() - t0;
}

#if NBODY__SYM_POOL
/* MinGW-w64 builds with libgomp run BLOCK's schedule on the library's own worker set instead
   of a region (nbody__sym_pool_run): a job of no task for the caller and one worker, back to
   back (the worker still spinning), and after 2 ms of the caller's own work (the worker asleep
   on its condition variable, woken) */
static double pool_job(void) {
    static nbody__sym_state s;
    double t0;
    s.ntask = 0; s.team = 2; s.next = 0; s.slot[0] = s.slot[1] = LLONG_MAX;
    t0 = nbody__wall_seconds();
    if (!nbody__sym_pool_run(&s)) return 1;
    return nbody__wall_seconds() - t0;
}
static double pool_job_idle(void) {
    double t0 = nbody__wall_seconds();
    while (nbody__wall_seconds() - t0 < 2e-3) sink = 0;
    return pool_job();
}
#endif

static void report(const char *what, double (*region)(void), int reps) {
    double *t = (double *)malloc((size_t)reps * sizeof *t);
    int r;
    if (!t) return;
    for (r = 0; r < reps; ++r) t[r] = region();
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("REGION %s threads=2: best %.1f us median %.1f us\n", what, t[0] * 1e6, t[reps / 2] * 1e6);
    free(t);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 1000;
    if (reps < 1) reps = 1;
    double t = 0;
    report("empty", empty_region, reps);
    report("tasks-36", task_region, reps);
    report("spin-36", spin_region, reps);
#if NBODY__SYM_POOL
    report("worker-set", pool_job, reps);
    report("worker-set-after-2ms", pool_job_idle, reps / 10 + 1);
#endif
    for (work_iters = 1000; t < WORK_US * 1e-6; work_iters *= 2) {   /* about WORK_US of one core */
        int r;
        t = 1e30;
        for (r = 0; r < 5; ++r) {
            double t0 = nbody__wall_seconds(), dt;
            work();
            dt = nbody__wall_seconds() - t0;
            if (dt < t) t = dt;
        }
    }
    work_iters = (long)((double)work_iters / 2 * WORK_US * 1e-6 / t);
    with_work = 1;
    printf("(each task of the next line: %ld iterations, about %d us; the ideal region: %d us)\n", work_iters, WORK_US, 18 * WORK_US);
    report("tasks-36-work", task_region, reps / 10 + 1);
    report("spin-36-work", spin_region, reps / 10 + 1);
    return 0;
}
