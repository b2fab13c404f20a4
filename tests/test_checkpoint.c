/* Exact restart: save at t1, load, continue to T is bitwise the same as running straight to
   T, for every method (adaptive ones with tolerance > 0, Adams of every order, compensated
   and not). Plus: what a checkpoint refuses (other numerics, corruption, truncation). */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#define REL_NAME "checkpoint"
#include "rel_util.h"

static nbody_system s0;

/* run from s0 to t1 and T; when ckp is set, the run goes through a checkpoint at t1 */
static nbody_result run(const nbody_desc *d, nbody_real t1, nbody_real T, const char *ckp, nbody_system *out, nbody_stats *st) {
    nbody_sim *sim = NULL, *back = NULL;
    nbody_result r = nbody_create(&sim, d, &s0);
    if (r != NBODY_OK) return r;
    r = nbody_advance(sim, t1);
    if (r == NBODY_OK && ckp) {
        r = nbody_checkpoint_save(sim, ckp);
        if (r == NBODY_OK) r = nbody_checkpoint_load(&back, d, ckp);
        nbody_destroy(sim);
        sim = back;
    }
    if (r == NBODY_OK) r = nbody_advance(sim, T);
    if (r == NBODY_OK) r = rel_state(sim, s0.n, out) ? NBODY_OK : NBODY_ERR_OUT_OF_MEMORY;
    if (r == NBODY_OK) *st = nbody_get_stats(sim);
    nbody_destroy(sim);
    return r;
}

static void restart_case(const nbody_desc *d, const char *label) {
    nbody_system a, b;
    nbody_stats sa, sb;
    nbody_result ra, rb;
    memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
    ra = run(d, (nbody_real)0.237, (nbody_real)0.5, NULL, &a, &sa);
    /* a method not built yet is a failure: the test is written for all of them */
    CHECK(ra == NBODY_OK, "%s: straight run: %s", label, nbody_result_string(ra));
    if (ra != NBODY_OK) return;
    rb = run(d, (nbody_real)0.237, (nbody_real)0.5, rel_path("restart"), &b, &sb);
    CHECK(rb == NBODY_OK, "%s: run through a checkpoint: %s", label, nbody_result_string(rb));
    if (ra == NBODY_OK && rb == NBODY_OK) {
        CHECK(rel_same(&a, &b), "%s: restarted state differs from the straight run", label);
        CHECK(sa.steps == sb.steps && sa.rejected == sb.rejected && sa.force_evals == sb.force_evals &&
              memcmp(&sa.dt, &sb.dt, sizeof sa.dt) == 0,
              "%s: stats differ: steps %llu/%llu rejected %llu/%llu evals %llu/%llu", label, sa.steps, sb.steps,
              sa.rejected, sb.rejected, sa.force_evals, sb.force_evals);
    }
    nbody_system_free(&a); nbody_system_free(&b);
}

static void every_method(void) {
    int m, comp, order;
    char label[128];
    for (comp = 0; comp <= 1; ++comp)
        for (m = 1; m < NBODY_METHOD_COUNT_; ++m)
            for (order = 1; order <= (m == NBODY_ADAMS ? 5 : 1); ++order) {
                nbody_desc d;
                memset(&d, 0, sizeof d);
                d.method = (nbody_method)m;
                d.order = m == NBODY_ADAMS ? order : 0;
                d.softening = (nbody_real)0.05;
                d.dt = (nbody_real)0.01;
                d.compensated = comp;
                /* every method with an error estimate runs adaptive: dt_next, rejections and
                   the controller's state must survive the restart too */
                d.tolerance = nbody__methods[m].adaptive ? (nbody_real)1e-7 : 0;
                snprintf(label, sizeof label, "%s order %d compensated %d", nbody_method_name((nbody_method)m), d.order, comp);
                if (m == NBODY_WHFAST) { s0.m[0] *= 20; d.whfast_corrector = 5; }   /* a central body, correctors on */
                restart_case(&d, label);
                if (m == NBODY_WHFAST) s0.m[0] /= 20;
            }
}

static void engines_and_threads(void) {
    nbody_desc d;
    nbody_system a, b;
    nbody_sim *sim = NULL, *back = NULL;
    const char *p = rel_path("threads");
    memset(&d, 0, sizeof d);
    memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
    d.engine = NBODY_ENGINE_OPENMP; d.method = NBODY_RK4; d.softening = (nbody_real)0.05; d.dt = (nbody_real)0.01;
    restart_case(&d, "rk4 on the openmp engine");
    /* a checkpoint written with 1 thread continues on 2 with the same bits */
    d.threads = 1;
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_OK && nbody_advance(sim, (nbody_real)0.1) == NBODY_OK &&
          nbody_checkpoint_save(sim, p) == NBODY_OK, "openmp: save");
    d.threads = 2;
    CHECK(nbody_checkpoint_load(&back, &d, p) == NBODY_OK, "openmp: load with other threads");
    if (sim && back) {
        CHECK(nbody_advance(sim, (nbody_real)0.3) == NBODY_OK && nbody_advance(back, (nbody_real)0.3) == NBODY_OK, "advance");
        CHECK(rel_state(sim, s0.n, &a) && rel_state(back, s0.n, &b) && rel_same(&a, &b), "1 thread vs 2 after restart differ");
    }
    nbody_destroy(sim); nbody_destroy(back);
    nbody_system_free(&a); nbody_system_free(&b);
}

static int file_bytes(const char *path, unsigned char **data, long *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END); *size = ftell(f); fseek(f, 0, SEEK_SET);
    *data = (unsigned char *)malloc((size_t)*size);
    if (!*data || fread(*data, 1, (size_t)*size, f) != (size_t)*size) { fclose(f); return 0; }
    fclose(f);
    return 1;
}
static void write_bytes(const char *path, const unsigned char *data, long size) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(data, 1, (size_t)size, f); fclose(f); }
}

static void refusals(void) {
    nbody_desc d, other;
    nbody_system fig, snap;
    nbody_sim *sim = NULL, *back = NULL, *sentinel = (nbody_sim *)&fig;
    const char *good = rel_path("good"), *bad = rel_path("bad");
    unsigned char *data = NULL;
    long size = 0, i, bad_flip = 0, bad_trunc = 0;
    memset(&fig, 0, sizeof fig); memset(&snap, 0, sizeof snap);
    memset(&d, 0, sizeof d);
    nbody_ic_figure_eight(&fig);
    CHECK(nbody_create(&sim, &d, &fig) == NBODY_OK && nbody_advance(sim, (nbody_real)0.05) == NBODY_OK, "figure eight");
    CHECK(nbody_checkpoint_save(NULL, good) == NBODY_ERR_INVALID_ARGUMENT, "save NULL sim");
    CHECK(nbody_checkpoint_save(sim, NULL) == NBODY_ERR_INVALID_ARGUMENT, "save NULL path");
    CHECK(nbody_checkpoint_save(sim, "build/no/such/dir/ckp") == NBODY_ERR_IO, "save into a missing directory");
    CHECK(nbody_checkpoint_save(sim, good) == NBODY_OK, "save");
    CHECK(nbody_checkpoint_load(NULL, &d, good) == NBODY_ERR_INVALID_ARGUMENT, "load NULL out");
    CHECK(nbody_checkpoint_load(&back, NULL, good) == NBODY_ERR_INVALID_ARGUMENT, "load NULL desc");
    CHECK(nbody_checkpoint_load(&back, &d, NULL) == NBODY_ERR_INVALID_ARGUMENT, "load NULL path");
    back = sentinel;
    CHECK(nbody_checkpoint_load(&back, &d, "build/no/such/file") == NBODY_ERR_IO && back == sentinel, "missing file: IO, out untouched");
    /* numerics that differ are refused; the resolved defaults count, not the literal zeros */
    other = d; other.softening = (nbody_real)0.01;
    CHECK(nbody_checkpoint_load(&back, &other, good) == NBODY_ERR_INVALID_ARGUMENT && back == sentinel, "other softening accepted");
    other = d; other.method = NBODY_RK4;
    CHECK(nbody_checkpoint_load(&back, &other, good) == NBODY_ERR_INVALID_ARGUMENT, "other method accepted");
    other = d; other.engine = NBODY_ENGINE_SIMPLE;
    CHECK(nbody_checkpoint_load(&back, &other, good) == NBODY_ERR_INVALID_ARGUMENT, "other engine accepted");
    other = d; other.compensated = 1;
    CHECK(nbody_checkpoint_load(&back, &other, good) == NBODY_ERR_INVALID_ARGUMENT, "other compensation accepted");
    other = d; other.engine = NBODY_ENGINE_BLOCK; other.method = NBODY_LEAPFROG; other.G = 1; other.dt = (nbody_real)1e-3; other.threads = 1;
    CHECK(nbody_checkpoint_load(&back, &other, good) == NBODY_OK, "explicit defaults and other threads refused");
    if (back != sentinel) nbody_destroy(back);
    back = sentinel;
    /* snapshots and checkpoints do not pass for each other */
    CHECK(nbody_load(good, &snap) == NBODY_ERR_FORMAT, "nbody_load read a checkpoint");
    CHECK(nbody_save(bad, &fig) == NBODY_OK && nbody_checkpoint_load(&back, &d, bad) == NBODY_ERR_FORMAT, "checkpoint_load read a snapshot");
    /* every single-byte corruption and every truncation is NBODY_ERR_FORMAT */
    CHECK(file_bytes(good, &data, &size), "read back");
    for (i = 0; data && i < size; ++i) {
        nbody_result r;
        data[i] ^= 0x20;
        write_bytes(bad, data, size);
        data[i] ^= 0x20;
        r = nbody_checkpoint_load(&back, &d, bad);
        if (r != NBODY_ERR_FORMAT || back != sentinel) bad_flip++;
    }
    for (i = 0; data && i < size; ++i) {
        write_bytes(bad, data, i);
        if (nbody_checkpoint_load(&back, &d, bad) != NBODY_ERR_FORMAT || back != sentinel) bad_trunc++;
    }
    CHECK(bad_flip == 0, "%ld of %ld byte flips not refused as FORMAT", bad_flip, size);
    CHECK(bad_trunc == 0, "%ld of %ld truncations not refused as FORMAT", bad_trunc, size);
    /* a failed save leaves the previous checkpoint in place */
    {
        unsigned char *again = NULL;
        long size2 = 0;
        nbody_sim *loaded = NULL;
        CHECK(nbody_checkpoint_load(&loaded, &d, good) == NBODY_OK, "reload");
        CHECK(file_bytes(good, &again, &size2) && size2 == size && memcmp(again, data, (size_t)size) == 0, "load changed the file");
        free(again);
        nbody_destroy(loaded);
    }
    free(data);
    remove(bad);
    nbody_destroy(sim);
    nbody_system_free(&fig);
}

/* the method state is written from its field list under the fields' names */
static long find_record(const unsigned char *data, long size, const char *name) {
    long i;
    for (i = 0; i + 16 <= size; ++i)
        if (memcmp(data + i, name, strlen(name) + 1) == 0) return i;
    return -1;
}
static void fix_sum(unsigned char *data, long size) {
    unsigned long long sum = nbody__fnv1a(NBODY__FNV_SEED, data, (size_t)size - 8);
    memcpy(data + size - 8, &sum, 8);
}

static void named_fields(void) {
    nbody_desc d;
    nbody_sim *sim = NULL, *back = NULL;
    nbody_system a, b;
    const char *good = rel_path("fields"), *moved = rel_path("fields_moved");
    unsigned char *data = NULL, *swapped;
    long size = 0, at_s, at_h;
    int m, i, j, clash = 0, names = 0;
    /* every list: short distinct names; fields that do not overlap, inside nbody_sim */
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m) {
        const nbody__method_info *mi = &nbody__methods[m];
        for (i = 0; i < mi->nfields; ++i) {
            const nbody__field *f = &mi->fields[i];
            size_t size_i = (size_t)f->count * (f->kind == NBODY__FIELD_INT ? sizeof(int) : f->kind == NBODY__FIELD_REAL ?
                                                sizeof(nbody_real) : sizeof(nbody__buf));
            if (strlen(f->name) >= NBODY__CKP_NAME || f->count < 1 || f->offset + size_i > sizeof(nbody_sim)) names++;
            for (j = 0; j < mi->nfields; ++j) {
                const nbody__field *g = &mi->fields[j];
                if (j != i && (strcmp(f->name, g->name) == 0 || (g->offset >= f->offset && g->offset < f->offset + size_i))) clash++;
            }
        }
    }
    CHECK(names == 0, "%d fields with a bad name, count or offset", names);
    CHECK(clash == 0, "%d fields share a name or overlap", clash);
    /* records found by name: swapped records load, and continue bitwise like the file as written */
    memset(&d, 0, sizeof d);
    memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
    d.method = NBODY_ADAMS; d.order = 5; d.softening = (nbody_real)0.05; d.dt = (nbody_real)0.01;
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_OK && nbody_advance(sim, (nbody_real)0.1) == NBODY_OK &&
          nbody_checkpoint_save(sim, good) == NBODY_OK && file_bytes(good, &data, &size), "adams: save");
    nbody_destroy(sim); sim = NULL;
    if (!data) return;
    at_s = find_record(data, size, "spacing");
    at_h = find_record(data, size, "history");
    CHECK(at_s > 0 && at_h == at_s + 16 + 8 + (long)sizeof(nbody_real), "adams: records spacing, history not found in order");
    swapped = (unsigned char *)malloc((size_t)size);
    if (swapped && at_s > 0 && at_h == at_s + 16 + 8 + (long)sizeof(nbody_real)) {
        long ls = at_h - at_s, lh = 16 + 8 + (long)sizeof(int);
        memcpy(swapped, data, (size_t)size);
        memcpy(swapped + at_s, data + at_h, (size_t)lh);
        memcpy(swapped + at_s + lh, data + at_s, (size_t)ls);
        fix_sum(swapped, size);
        write_bytes(moved, swapped, size);
        CHECK(nbody_checkpoint_load(&sim, &d, good) == NBODY_OK && nbody_checkpoint_load(&back, &d, moved) == NBODY_OK,
              "adams: records in another order refused");
        if (sim && back) {
            CHECK(nbody_advance(sim, (nbody_real)0.3) == NBODY_OK && nbody_advance(back, (nbody_real)0.3) == NBODY_OK &&
                  rel_state(sim, s0.n, &a) && rel_state(back, s0.n, &b) && rel_same(&a, &b),
                  "adams: reordered records continue differently");
        }
        nbody_destroy(sim); nbody_destroy(back); sim = back = NULL;
        /* a name the list does not have, and an int out of its range, are refused */
        memcpy(swapped, data, (size_t)size);
        swapped[at_h] = 'H';
        fix_sum(swapped, size);
        write_bytes(moved, swapped, size);
        CHECK(nbody_checkpoint_load(&back, &d, moved) == NBODY_ERR_FORMAT, "adams: unknown field name accepted");
        memcpy(swapped, data, (size_t)size);
        i = NBODY__ADAMS_MAX_ORDER;
        memcpy(swapped + at_h + 24, &i, sizeof i);
        fix_sum(swapped, size);
        write_bytes(moved, swapped, size);
        CHECK(nbody_checkpoint_load(&back, &d, moved) == NBODY_ERR_FORMAT, "adams: history out of range accepted");
    }
    free(swapped); free(data);
    remove(moved);
    nbody_system_free(&a); nbody_system_free(&b);
}

int main(void) {
    (void)check_skip;
    nbody_ic_plummer(&s0, 16, 7);
    every_method();
    engines_and_threads();
    refusals();
    named_fields();
    nbody_system_free(&s0);
    return check_finish();
}
