/* rel_util.h - helpers shared by the reliability tests (include after nbody.h and check.h) */
#ifndef REL_UTIL_H
#define REL_UTIL_H
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#define REL_UNUSED __attribute__((unused))
#if (defined(__unix__) || defined(__APPLE__)) && !defined(__EMSCRIPTEN__)   /* emscripten: no threads without -pthread */
#include <pthread.h>
#include <unistd.h>
#define REL_PTHREADS 1
#else
#define REL_PTHREADS 0
#endif

/* the engine runs here: compiled in and a device answers (a 2-body simulation starts) */
REL_UNUSED static int rel_engine_runs(nbody_engine e) {
    nbody_system s;
    nbody_sim *sim;
    nbody_desc d;
    int ok;
    if (!nbody_engine_available(e)) return 0;
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
    if (nbody_ic_figure_eight(&s) != NBODY_OK) return 0;
    d.engine = e;
    ok = nbody_create(&sim, &d, &s) == NBODY_OK;
    if (ok) nbody_destroy(sim);
    nbody_system_free(&s);
    return ok;
}

/* bitwise equality of two systems (positions, velocities, masses, time) */
REL_UNUSED static int rel_same(const nbody_system *a, const nbody_system *b) {
    const nbody_real *fa[7], *fb[7];
    int i;
    if (a->n != b->n || memcmp(&a->t, &b->t, sizeof a->t) != 0) return 0;
    fa[0] = a->x; fa[1] = a->y; fa[2] = a->z; fa[3] = a->vx; fa[4] = a->vy; fa[5] = a->vz; fa[6] = a->m;
    fb[0] = b->x; fb[1] = b->y; fb[2] = b->z; fb[3] = b->vx; fb[4] = b->vy; fb[5] = b->vz; fb[6] = b->m;
    for (i = 0; i < 7; ++i) if (memcmp(fa[i], fb[i], a->n * sizeof(nbody_real)) != 0) return 0;
    return 1;
}

/* the simulation's state in a freshly allocated system (s zeroed); 0 on failure */
REL_UNUSED static int rel_state(const nbody_sim *sim, size_t n, nbody_system *s) {
    if (nbody_system_alloc(s, n) != NBODY_OK) return 0;
    if (nbody_get_state(sim, s) != NBODY_OK) { nbody_system_free(s); return 0; }
    return 1;
}

/* a scratch file name for this test program */
REL_UNUSED static const char *rel_path(const char *tag) {
    static char buf[4][256];
    static int next;
    char *p = buf[next++ & 3];
    snprintf(p, 256, "build/rel_%s_%s.bin", tag, REL_NAME);
    return p;
}
/* the whole file in a malloc'ed block (*len bytes, one spare byte after them for a NUL);
   NULL when absent or unreadable */
REL_UNUSED static unsigned char *rel_slurp(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        b = (unsigned char *)malloc((size_t)*len + 1);
        if (b && fread(b, 1, (size_t)*len, f) != (size_t)*len) { free(b); b = NULL; }
    }
    fclose(f);
    return b;
}

/* writes len bytes of b to path (a test's crafted file); 0 on failure */
REL_UNUSED static int rel_spit(const char *path, const unsigned char *b, long len) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = fwrite(b, 1, (size_t)len, f) == (size_t)len;
    return fclose(f) == 0 && ok;
}

/* path exists and can be opened for reading */
REL_UNUSED static int rel_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}
#endif
