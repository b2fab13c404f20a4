/* reference.c - the same run as tests/python/test_bitwise.py, from C: the state after
   nbody_advance as raw nbody_real values (x, y, z, vx, vy, vz, m, then t) on stdout.
   usage: reference IC N ENGINE METHOD DT TOLERANCE SOFTENING T_END [HEARTBEAT]
   IC: plummer (N bodies, seed 42) or oss (the outer solar system; N ignored).
   HEARTBEAT 1: a progress callback that never cancels, every 0.05 s, as the Python package
   installs for Ctrl-C (WHFast synchronises every step when one is set: the last bits differ) */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int lookup(const char *name, const char *(*fn)(int), int count) {
    int i;
    for (i = 0; i < count; ++i) if (!strcmp(fn(i), name)) return i;
    return -1;
}
static const char *engine_name(int i) { return nbody_engine_name((nbody_engine)i); }
static const char *method_name(int i) { return nbody_method_name((nbody_method)i); }
static int heartbeat(const nbody_progress_info *info, void *user_data) { (void)info; (void)user_data; return 0; }

int main(int argc, char **argv) {
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim;
    nbody_result r;
    int e, m, k;
    if (argc != 9 && argc != 10) { fprintf(stderr, "usage: reference IC N ENGINE METHOD DT TOLERANCE SOFTENING T_END\n"); return 2; }
    e = lookup(argv[3], engine_name, NBODY_ENGINE_COUNT_);
    m = lookup(argv[4], method_name, NBODY_METHOD_COUNT_);
    if (e < 0 || m < 0) { fprintf(stderr, "unknown engine or method\n"); return 2; }
    r = !strcmp(argv[1], "oss") ? nbody_ic_outer_solar_system(&s) : nbody_ic_plummer(&s, (size_t)atol(argv[2]), 42);
    if (r != NBODY_OK) return 1;
    d.engine = (nbody_engine)e;
    d.method = (nbody_method)m;
    d.dt = atof(argv[5]);
    d.tolerance = atof(argv[6]);
    d.softening = atof(argv[7]);
    if (argc == 10 && atoi(argv[9])) { d.progress.func = heartbeat; d.progress.interval = 0.05; }
    if (nbody_create(&sim, &d, &s) != NBODY_OK) return 1;
    if (nbody_advance(sim, atof(argv[8])) != NBODY_OK || nbody_get_state(sim, &s) != NBODY_OK) return 1;
    for (k = 0; k < 7; ++k) {
        nbody_real *f[7];
        f[0] = s.x; f[1] = s.y; f[2] = s.z; f[3] = s.vx; f[4] = s.vy; f[5] = s.vz; f[6] = s.m;
        fwrite(f[k], sizeof(nbody_real), s.n, stdout);
    }
    fwrite(&s.t, sizeof s.t, 1, stdout);
    nbody_destroy(sim);
    nbody_system_free(&s);
    return 0;
}
