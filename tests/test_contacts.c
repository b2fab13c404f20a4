/* Contact detection on the device (docs/steering.md, "Collisions"): a GPU engine's
   find_contacts returns exactly the host detector's pairs (the same i, j, distance and
   reach, bit for bit, sorted by (i, j)) on random systems with many overlaps, N = 10, 1000,
   50000, with radii and with one distance for all (stop_distance), by the direct search
   and by the tree (CUDA: also on grids capped to 2 blocks); the pair buffer's overflow
   (grow and search again, nothing dropped); merges, bounces and stops through the GPU
   engines give SIMPLE's final state. The host
   detector itself is checked against all pairs by brute force. GPU parts are skipped
   where no engine runs (NBODY_REQUIRE_CUDA=1 makes that a failure); NBODY_TEST_SMALL=1
   (the compute-sanitizer pass) uses fewer bodies. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#define REL_NAME "contacts"
#include "rel_util.h"
#include <math.h>

#ifdef NBODY_WITH_CUDA
void nbody__cuda_test_contacts(int mode, size_t cap0);
void nbody__cuda_test_grid_cap(unsigned int blocks);
#define TEST_CONTACTS(mode, cap0) nbody__cuda_test_contacts(mode, cap0)
#define TEST_GRID_CAP(blocks) nbody__cuda_test_grid_cap(blocks)
#else
#define TEST_CONTACTS(mode, cap0) ((void)0)
#define TEST_GRID_CAP(blocks) ((void)0)
#endif
#ifdef NBODY_WITH_OPENCL
#define TEST_CL_CAP0(cap0) (nbody__cl_ct_cap0 = (cap0))
#else
#define TEST_CL_CAP0(cap0) ((void)0)
#endif

static const nbody_engine gpu_engines[] = {NBODY_ENGINE_CUDA, NBODY_ENGINE_CUDA_TREE, NBODY_ENGINE_OPENCL, NBODY_ENGINE_OPENCL_TREE};
#define NGPU ((int)(sizeof gpu_engines / sizeof gpu_engines[0]))

static size_t scaled(size_t n) {
    const char *v = getenv("NBODY_TEST_SMALL");
    return v && strcmp(v, "1") == 0 && n > 100 ? (n + 49) / 50 : n;
}

static unsigned long long rng_state;
static double urand(void) {   /* xorshift64*, [0, 1) */
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* n bodies uniform in a cube of side n^(1/3) around (off, -off, off/2): radii log-uniform in
   [0.05, 0.5], 1% of them 2, every 17th 0; every 29th body on top of the one before it.
   About one overlap per body. */
static void random_system(nbody_system *s, nbody_real *r, size_t n, unsigned long long seed, double off) {
    double L = cbrt((double)n);
    size_t i;
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    nbody_system_alloc(s, n);
    for (i = 0; i < n; ++i) {
        s->x[i] = (nbody_real)(off + L * urand()); s->y[i] = (nbody_real)(-off + L * urand()); s->z[i] = (nbody_real)(off / 2 + L * urand());
        s->vx[i] = s->vy[i] = s->vz[i] = 0;
        s->m[i] = (nbody_real)(1.0 / (double)n);
        r[i] = (nbody_real)(0.05 * pow(10.0, urand()));
        if (urand() < 0.01) r[i] = 2;
        if (i % 17 == 5) r[i] = 0;
        if (i % 29 == 7) { s->x[i] = s->x[i - 1]; s->y[i] = s->y[i - 1]; s->z[i] = s->z[i - 1]; }
    }
}

static nbody_real *positions(const nbody_system *s) {   /* x(n) y(n) z(n) */
    size_t n = s->n;
    nbody_real *X = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
    memcpy(X, s->x, n * sizeof(nbody_real)); memcpy(X + n, s->y, n * sizeof(nbody_real)); memcpy(X + 2 * n, s->z, n * sizeof(nbody_real));
    return X;
}

/* ---- the host detector against every pair ---- */
static void test_host_detector(void) {
    static const size_t sizes[] = {10, 1000, 3000};
    int k;
    for (k = 0; k < 3; ++k) {
        size_t n = sizes[k], a, b, found = 0, q = 0;
        nbody_system s;
        nbody_real *r = (nbody_real *)malloc(n * sizeof(nbody_real)), *X;
        nbody__pairs P;
        nbody_desc d;
        int same = 1;
        memset(&s, 0, sizeof s); memset(&P, 0, sizeof P); memset(&d, 0, sizeof d);
        d.allocator.alloc = nbody__default_alloc; d.allocator.free = nbody__default_free;
        random_system(&s, r, n, 3 + (unsigned long long)k, 0);
        X = positions(&s);
        CHECK(nbody__find_pairs(&d, n, X, r, 0, &P) == NBODY_OK, "host detector n %lu", (unsigned long)n);
        for (a = 0; a < n; ++a)
            for (b = a + 1; b < n; ++b) {
                nbody_real dx = X[b] - X[a], dy = X[n + b] - X[n + a], dz = X[2 * n + b] - X[2 * n + a];
                if (NBODY__SQRT(dx * dx + dy * dy + dz * dz) < r[a] + r[b]) {
                    ++found;
                    if (q < P.n && P.p[q].i == a && P.p[q].j == b) ++q; else same = 0;
                }
            }
        CHECK(same && q == P.n && found == P.n && (n < 1000 || found > n / 4),
              "host detector n %lu: %lu pairs by sweep and prune, %lu by brute force", (unsigned long)n, (unsigned long)P.n, (unsigned long)found);
        free(P.p); free(X); free(r);
        nbody_system_free(&s);
    }
}

static int info_again;   /* "search again" log lines: the overflow path ran */
static void count_log(nbody_log_level level, const char *msg, void *user) {
    (void)level; (void)user;
    if (strstr(msg, "search again")) ++info_again;
}

/* the engine's pairs against the host detector's on the same positions: 1 when identical,
   -1 when the engine leaves this n to the host */
static int same_pairs(nbody_sim *sim, const nbody_real *X, const nbody_real *r, nbody_real r0, size_t *count, const char *what) {
    const nbody__contact *c = NULL;
    nbody__pairs P;
    size_t k, cnt = 0;
    nbody_result res;
    int same;
    memset(&P, 0, sizeof P);
    res = sim->eng.ops->find_contacts(&sim->eng, sim->y, r != NULL, r0, &c, &cnt);
    if (res == NBODY_ERR_UNAVAILABLE) {   /* the engine leaves this n to the host */
        printf("note: %s: the engine leaves this n to the host's search (nothing to compare)\n", what);
        *count = 0;
        return -1;
    }
    CHECK(res == NBODY_OK, "%s: find_contacts: %s", what, nbody_result_string(res));
    CHECK(nbody__find_pairs(&sim->desc, sim->n, X, r, r0, &P) == NBODY_OK, "%s: host detector", what);
    same = res == NBODY_OK && cnt == P.n;
    for (k = 0; same && k < cnt; ++k)
        same = c[k].i == P.p[k].i && c[k].j == P.p[k].j && c[k].d == P.p[k].d && c[k].reach == P.p[k].reach;
    CHECK(same, "%s: %lu pairs on the device, %lu on the host%s", what, (unsigned long)cnt, (unsigned long)P.n,
          cnt == P.n ? " (not the same)" : "");
    *count = P.n;
    free(P.p);
    return same;
}

/* ---- the device detector returns the host's pairs ---- */
static void test_device_detector(void) {
    static const size_t sizes[] = {10, 1000, 50000};
    static const char *modes[] = {"by n", "direct", "tree"};
    int k, z, mode;
    for (k = 0; k < NGPU; ++k) {
        if (!rel_engine_runs(gpu_engines[k])) {
            if (nbody_engine_available(gpu_engines[k]))
                check_skip(gpu_engines[k] == NBODY_ENGINE_CUDA ? "NBODY_REQUIRE_CUDA" : NULL, "contacts: GPU engine does not run here");
            continue;
        }
        for (z = 0; z < 3; ++z) {
            size_t n = scaled(sizes[z]), count = 0;
            nbody_system s;
            nbody_real *r = (nbody_real *)malloc(n * sizeof(nbody_real)), *X;
            nbody_sim *sim;
            nbody_desc d;
            char what[160];
            memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
            random_system(&s, r, n, 7 + (unsigned long long)z, z == 1 ? 100.0 : 0.0);
            X = positions(&s);
            d.engine = gpu_engines[k];
            CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "%s: create n %lu", nbody_engine_name(d.engine), (unsigned long)n);
            if (!sim->eng.ops->find_contacts) {
                printf("note: %s detects on the host (no find_contacts)\n", nbody_engine_name(d.engine));
                nbody_destroy(sim); free(X); free(r); nbody_system_free(&s);
                continue;
            }
            CHECK(nbody_set_radii(sim, r) == NBODY_OK, "set radii");
            for (mode = 0; mode < 3; ++mode) {
                TEST_CONTACTS(mode, 0);
                snprintf(what, sizeof what, "%s n %lu %s radii", nbody_engine_name(d.engine), (unsigned long)n, modes[mode]);
                if (same_pairs(sim, X, r, 0, &count, what) >= 0)
                    CHECK(n < 1000 || count > n / 4, "%s: only %lu pairs", what, (unsigned long)count);
                snprintf(what, sizeof what, "%s n %lu %s one distance", nbody_engine_name(d.engine), (unsigned long)n, modes[mode]);
                same_pairs(sim, X, NULL, (nbody_real)0.3, &count, what);
            }
            if (z == 1 && (d.engine == NBODY_ENGINE_CUDA || d.engine == NBODY_ENGINE_CUDA_TREE)) {
                TEST_GRID_CAP(2);      /* grids of 2 blocks: the grid-stride loops cover every body */
                for (mode = 1; mode < 3; ++mode) {
                    TEST_CONTACTS(mode, 0);
                    snprintf(what, sizeof what, "%s n %lu %s, 2 blocks", nbody_engine_name(d.engine), (unsigned long)n, modes[mode]);
                    same_pairs(sim, X, r, 0, &count, what);
                }
                TEST_GRID_CAP(0);
            }
            TEST_CONTACTS(0, 0);
            {   /* radii withdrawn: point masses, no pairs */
                const nbody__contact *c;
                size_t cnt = 1;
                nbody_set_radii(sim, NULL);
                CHECK(sim->eng.ops->find_contacts(&sim->eng, sim->y, 1, 0, &c, &cnt) == NBODY_OK && cnt == 0,
                      "%s: %lu pairs without radii", nbody_engine_name(d.engine), (unsigned long)cnt);
            }
            nbody_destroy(sim);
            free(X); free(r);
            nbody_system_free(&s);
        }
    }
}

/* ---- overflow: a pair buffer of one grows to the count and the search runs again ---- */
static void test_overflow(void) {
    int k, mode;
    for (k = 0; k < NGPU; ++k) {
        if (!rel_engine_runs(gpu_engines[k])) continue;
        for (mode = 1; mode <= 2; ++mode) {
            size_t n = scaled(2000), count = 0;
            nbody_system s;
            nbody_real *r = (nbody_real *)malloc(n * sizeof(nbody_real)), *X;
            nbody_sim *sim;
            nbody_desc d;
            memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
            random_system(&s, r, n, 99, 0);
            X = positions(&s);
            d.engine = gpu_engines[k];
            d.log.func = count_log;
            info_again = 0;
            TEST_CONTACTS(mode, 1);    /* applies to the engine's first search */
            TEST_CL_CAP0(1);
            if (nbody_create(&sim, &d, &s) == NBODY_OK) {
                if (sim->eng.ops->find_contacts) {
                    nbody_set_radii(sim, r);
                    if (same_pairs(sim, X, r, 0, &count, mode == 1 ? "overflow, direct" : "overflow, tree") >= 0)
                        CHECK(info_again == 1 && count > 1, "overflow: %d searches again for %lu pairs", info_again, (unsigned long)count);
                    same_pairs(sim, X, r, 0, &count, "after the overflow");
                    CHECK(info_again == 1, "the grown buffer overflowed again");
                }
                nbody_destroy(sim);
            }
            TEST_CONTACTS(0, 0);
            TEST_CL_CAP0(0);
            free(X); free(r);
            nbody_system_free(&s);
        }
    }
}

/* ---- merges, bounces, stops through the GPU engine against SIMPLE ----
   pairs of spheres far apart (10 units), each pair on a collision course timed to meet
   half way through a step (so the decision is never borderline), plus a cluster of three
   overlapping from the start; gravity weak (masses 1e-3) */
static void course_system(nbody_system *s, nbody_real *r, size_t pairs, nbody_real dt) {
    size_t p, n = 2 * pairs + 3, i;
    rng_state = 12345;
    nbody_system_alloc(s, n);
    for (p = 0; p < pairs; ++p) {
        double cx = 10.0 * (double)(p % 4), cy = 10.0 * (double)((p / 4) % 4), cz = 10.0 * (double)(p / 16);
        double R = 0.2 + 0.2 * urand(), b = R * urand(), w = 1 + urand();            /* radii, impact parameter, closing speed */
        double s0 = sqrt(4 * R * R - b * b), tc = (3.5 + (double)(p % 5) * 10) * (double)dt;   /* contact at tc, mid-step */
        double ux = urand() - 0.5, uy = urand() - 0.5, uz = urand() - 0.5, un = sqrt(ux * ux + uy * uy + uz * uz);
        double gap = s0 + w * tc;
        ux /= un; uy /= un; uz /= un;
        for (i = 0; i < 2; ++i) {   /* body i at the centre -+ (gap/2 along u) +- (b/2 across) */
            double sg = i ? 1 : -1;
            size_t j = 2 * p + i;
            s->x[j] = (nbody_real)(cx + sg * gap / 2 * ux + sg * b / 2 * uy / sqrt(ux * ux + uy * uy) );
            s->y[j] = (nbody_real)(cy + sg * gap / 2 * uy - sg * b / 2 * ux / sqrt(ux * ux + uy * uy));
            s->z[j] = (nbody_real)(cz + sg * gap / 2 * uz);
            s->vx[j] = (nbody_real)(-sg * w / 2 * ux); s->vy[j] = (nbody_real)(-sg * w / 2 * uy); s->vz[j] = (nbody_real)(-sg * w / 2 * uz);
            s->m[j] = (nbody_real)(1e-3 * (1 + i));
            r[j] = (nbody_real)R;
        }
    }
    for (i = 0; i < 3; ++i) {   /* the cluster, beyond the pairs */
        size_t j = 2 * pairs + i;
        s->x[j] = (nbody_real)(-20 + 0.1 * (double)i); s->y[j] = (nbody_real)(i == 2 ? 0.12 : 0.05 * (double)i); s->z[j] = 0;
        s->vx[j] = (nbody_real)(0.1 * (double)i); s->vy[j] = 0; s->vz[j] = (nbody_real)-0.1;
        s->m[j] = (nbody_real)1e-3; r[j] = (nbody_real)0.15;
    }
}

static double state_diff(const nbody_system *a, const nbody_system *b) {
    double w = 0;
    size_t i;
    for (i = 0; i < a->n; ++i) {
        double e[7];
        int c;
        e[0] = (double)a->x[i] - (double)b->x[i]; e[1] = (double)a->y[i] - (double)b->y[i]; e[2] = (double)a->z[i] - (double)b->z[i];
        e[3] = (double)a->vx[i] - (double)b->vx[i]; e[4] = (double)a->vy[i] - (double)b->vy[i]; e[5] = (double)a->vz[i] - (double)b->vz[i];
        e[6] = ((double)a->m[i] - (double)b->m[i]) * 1e3;
        for (c = 0; c < 7; ++c) if (!(fabs(e[c]) <= w)) w = fabs(e[c]);
    }
    return w;
}

static void run_course(nbody_engine eng, nbody_collision how, nbody_real stop_distance, nbody_real escape, nbody_system *out,
                       nbody_event *ev, nbody_result *res) {
    const size_t pairs = 40;
    nbody_system s;
    nbody_real r[2 * 40 + 3];
    nbody_sim *sim;
    nbody_desc d;
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d); memset(out, 0, sizeof *out); memset(ev, 0, sizeof *ev);
    d.engine = eng; d.method = NBODY_RK4; d.dt = (nbody_real)1e-2; d.softening = (nbody_real)0.05;
    d.theta = (nbody_real)0.2;
    d.collision = how; d.restitution = (nbody_real)0.8; d.stop_distance = stop_distance; d.escape_distance = escape;
    course_system(&s, r, pairs, d.dt);
    *res = nbody_create(&sim, &d, &s);
    if (*res == NBODY_OK) {
        nbody_set_radii(sim, r);
        *res = nbody_advance(sim, (nbody_real)0.6);
        nbody_get_event(sim, ev);
        nbody_system_alloc(out, nbody_get_n(sim));
        nbody_get_state(sim, out);
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
}

static void test_through_engine(void) {
    /* merges, bounces, a collision stop, a close-encounter stop; then merges with every check
       at once (an escape distance never reached, a stop distance shorter than any contact),
       and merges stopped by an escape (the state comes down for it, the pairs do not) */
    static const nbody_collision hows[] = {NBODY_COLLISION_MERGE, NBODY_COLLISION_BOUNCE, NBODY_COLLISION_STOP, NBODY_COLLISION_NONE,
                                           NBODY_COLLISION_MERGE, NBODY_COLLISION_MERGE};
    static const char *names[] = {"merge", "bounce", "stop", "stop distance", "merge, every check", "merge, escape"};
    static const double stops[] = {0, 0, 0, 0.1, 1e-4, 0}, escapes[] = {0, 0, 0, 0, 100, 40};
    int k, h;
    for (k = 0; k < NGPU; ++k) {
        int tree = gpu_engines[k] == NBODY_ENGINE_CUDA_TREE || gpu_engines[k] == NBODY_ENGINE_OPENCL_TREE;
        /* dense: the forces differ from SIMPLE's by round-off; the tree (theta 0.2) by its
           truncation error of the far field: theta^2 of the other pairs' pull (~1e-5) over
           t = 0.6 bounds it by ~3e-7 in velocity */
        double tol = sizeof(nbody_real) == sizeof(float) ? (tree ? 2e-4 : 1e-4) : (tree ? 1e-6 : 1e-12);
        if (!rel_engine_runs(gpu_engines[k])) continue;
        for (h = 0; h < 6; ++h) {
            nbody_system a, b;
            nbody_event ea, eb;
            nbody_result ra, rb;
            nbody_real sd = (nbody_real)stops[h], esc = (nbody_real)escapes[h];
            if (scaled(1000) < 1000 && h != 0) continue;   /* the sanitizer pass: merges only */
            run_course(NBODY_ENGINE_SIMPLE, hows[h], sd, esc, &a, &ea, &ra);
            run_course(gpu_engines[k], hows[h], sd, esc, &b, &eb, &rb);
            CHECK(ra == rb && a.n == b.n && ea.merges == eb.merges && ea.bounces == eb.bounces && ea.kind == eb.kind && ea.i == eb.i &&
                  ea.j == eb.j && ea.t == eb.t,
                  "%s %s: simple %s n %lu merges %llu bounces %llu event %d (%lu, %lu); gpu %s n %lu merges %llu bounces %llu event %d (%lu, %lu)",
                  nbody_engine_name(gpu_engines[k]), names[h], nbody_result_string(ra), (unsigned long)a.n, ea.merges, ea.bounces,
                  (int)ea.kind, (unsigned long)ea.i, (unsigned long)ea.j, nbody_result_string(rb), (unsigned long)b.n, eb.merges,
                  eb.bounces, (int)eb.kind, (unsigned long)eb.i, (unsigned long)eb.j);
            if (h == 0) CHECK(ea.merges >= 40, "merge: %llu merges", ea.merges);
            if (h == 1) CHECK(ea.bounces >= 40, "bounce: %llu bounces", ea.bounces);
            if (h == 2 || h == 3 || h == 5) CHECK(ra == NBODY_STOPPED, "%s: %s", names[h], nbody_result_string(ra));
            if (h == 4) CHECK(ra == NBODY_OK && ea.merges >= 40, "%s: %s, %llu merges", names[h], nbody_result_string(ra), ea.merges);
            if (h == 5) CHECK(ea.kind == NBODY_EVENT_ESCAPE, "%s: event %d", names[h], (int)ea.kind);
            if (a.n == b.n) {
                double dst = state_diff(&a, &b);
                CHECK(dst < tol && fabs((double)ea.distance - (double)eb.distance) < tol, "%s %s: final states differ by %g, distances by %g",
                      nbody_engine_name(gpu_engines[k]), names[h], dst, fabs((double)ea.distance - (double)eb.distance));
            }
            nbody_system_free(&a); nbody_system_free(&b);
        }
    }
}

int main(void) {
#ifdef NBODY_WITH_OPENCL
    nbody__cl_ct_other_max = 2048;   /* a CPU device (PoCL) searches too, as a GPU would */
#endif
    test_host_detector();
    test_device_detector();
    test_overflow();
    test_through_engine();
    return check_finish();
}
