/* bench_tolerance.c - adaptive step control on the tree engine: steps to reach t_end for the
   galaxy pair (the nbody CLI's "collision": two discs of n/2 bodies, central bodies of 90%,
   3 apart, softening 0.02, RKDP) on BLOCK and on TREE, over tolerances, theta 0.5 and 0.3.
   The tree's force error jumps as nodes open and close, so a tolerance below it makes the
   step control chase the jumps. nbody_create warns in that case (the WARNING column says
   whether it did); the advice of that warning is checked here: at the smallest tolerance
   that does not warn, TREE's step count must be within 3x of BLOCK's at the same tolerance.
   A run is cancelled (desc.progress) past 20000 steps or 30 s: "> N" in the table.
       make build/bench_tolerance && ./build/bench_tolerance [n] [t_end]
   (bench/tolerance.sh writes bench/results/tolerance-tree.md)                               */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

typedef struct outcome { unsigned long long steps, rejected; double seconds; int warned, capped; } outcome;

static void on_log(nbody_log_level level, const char *message, void *user_data) {
    if (level == NBODY_LOG_WARNING && strstr(message, "tolerance")) *(int *)user_data = 1;
}

static int cap(const nbody_progress_info *p, void *user_data) {
    double *seconds = (double *)user_data;
    *seconds = p->elapsed;
    return p->steps + p->rejected > 20000 || p->elapsed > 30;
}

static outcome run(const nbody_system *s, nbody_engine e, double theta, double tol, double t_end) {
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim = NULL;
    outcome o;
    nbody_result r;
    nbody_stats st;
    memset(&o, 0, sizeof o);
    d.engine = e;
    d.method = NBODY_RKDP;
    d.softening = (nbody_real)0.02;
    d.dt = (nbody_real)2e-3;
    d.tolerance = (nbody_real)tol;
    d.theta = (nbody_real)theta;
    d.log.func = on_log;
    d.log.user_data = &o.warned;
    d.progress.func = cap;
    d.progress.user_data = &o.seconds;
    if (nbody_create(&sim, &d, s) != NBODY_OK) { o.capped = -1; return o; }
    r = nbody_advance(sim, (nbody_real)t_end);
    st = nbody_get_stats(sim);
    o.steps = st.steps;
    o.rejected = st.rejected;
    o.capped = r == NBODY_ERR_CANCELLED;
    nbody_destroy(sim);
    return o;
}

static void cell(const outcome *o) {
    if (o->capped) printf(" > %llu (%llu rej.) |", o->steps, o->rejected);
    else printf(" %llu (%llu rej.) |", o->steps, o->rejected);
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 1000;
    double t_end = argc > 2 ? atof(argv[2]) : 1;
    static const double tols[] = {1e-2, 1e-3, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 1e-8};
    static const double thetas[] = {0.5, 0.3};
    nbody_system s = NBODY_ZERO;
    int ok = 1;
    size_t i, j;
    if (nbody_ic_collision(&s, n, (nbody_real)0.9, 3, 1) != NBODY_OK) return 1;
    printf("galaxy pair, n = %lu, RKDP, softening 0.02, first step 2e-3, t = 0 -> %g; steps (rejected)\n\n",
           (unsigned long)n, t_end);
    for (j = 0; j < sizeof thetas / sizeof *thetas; ++j) {
        double advised = -1;
        int checked = 0;
        printf("theta %g\n\n| tolerance | BLOCK steps | TREE steps | TREE / BLOCK | TREE warned |\n|---|---|---|---|---|\n",
               thetas[j]);
        for (i = 0; i < sizeof tols / sizeof *tols; ++i) {
            outcome b = run(&s, NBODY_ENGINE_BLOCK, thetas[j], tols[i], t_end);
            outcome t = run(&s, NBODY_ENGINE_TREE, thetas[j], tols[i], t_end);
            double ratio = (double)(t.steps + t.rejected) / (double)(b.steps + b.rejected);
            printf("| %g |", tols[i]);
            cell(&b);
            cell(&t);
            printf(" %s%.2f | %s |\n", t.capped ? "> " : "", ratio, t.warned ? "yes" : "no");
            fflush(stdout);
            if (b.warned) { printf("BLOCK warned at tolerance %g: it should not\n", tols[i]); ok = 0; }
            if (!t.warned) { advised = tols[i]; checked = ratio <= 3 && !t.capped; }
        }
        if (advised > 0)
            printf("\ntheta %g: smallest tolerance without the warning %g: TREE/BLOCK (steps + rejected) %s 3x\n\n",
                   thetas[j], advised, checked ? "within" : "NOT within");
        ok = ok && advised > 0 && checked;
    }
    nbody_system_free(&s);
    printf("%s\n", ok ? "advice holds" : "advice FAILS");
    return ok ? 0 : 1;
}
