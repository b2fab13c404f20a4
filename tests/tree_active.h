/* tree_active.h - the tree engines' operation for the tree leapfrog's block steps
   (nbody__active_op) on one engine, with test particles among the active bodies:
   - a build gives each active body the bits of a full evaluation (the derivative), or (bits = 0:
     an engine whose active walk groups the same terms otherwise) its forces to rounding; with
     every body active the bits on every engine;
   - a refit after the bodies moved (the tree of the build's leaf order, its nodes recomputed
     for the new positions) keeps every body within the opening criterion's error bound of the
     exact forces, 4 theta^2 sum_j m_j / d_j^2 (Salmon & Warren's bound of each accepted node's
     monopole, theta^2 M / d^2, with d - r <= d_j <= d + r and r < d), as a build there does;
   - a second engine given only the leaf order (a restart from a checkpoint) refits to the same
     bits as the engine that holds the tree;
   - an engine with the whole block step (ops.kdk_step: levels and kicks on the engine) gives
     the levels and the bits of the host's path (active_forces, the criterion, kick), and
     kicks nothing where a level is refused or a position is not finite.
   Included by test_tree_block.c and cuda_engines.c after nbody.h's implementation and check.h;
   config (may be NULL) sets the engine up after its start (the CUDA tree: the warps' walk);
   refit_is_build = 1: the engine's refit computes the nodes with its build's formula (the CUDA
   tree), so a refit at the build's positions gives the build's forces bit for bit. */
#ifndef TREE_ACTIVE_H
#define TREE_ACTIVE_H
#include <math.h>

/* the worst ratio over the list of |a - exact| to the bound 4 theta^2 sum_j m_j / d_j^2 (G = 1,
   exact: the softened direct sum in double over the sources [0, na)); a: 3 count, x y z rows */
static double tree_active_worst(const nbody_system *s, size_t na, double theta, double eps, const size_t *list, size_t count,
                                const nbody_real *a, double *rms) {
    double worst = 0, sum = 0;
    size_t q, j;
    for (q = 0; q < count; ++q) {
        size_t i = list[q];
        double ex = 0, ey = 0, ez = 0, bound = 0, dx, dy, dz, d2, err;
        for (j = 0; j < na; ++j) {
            if (j == i) continue;
            dx = (double)s->x[j] - (double)s->x[i]; dy = (double)s->y[j] - (double)s->y[i]; dz = (double)s->z[j] - (double)s->z[i];
            d2 = dx * dx + dy * dy + dz * dz;
            ex += (double)s->m[j] * dx / pow(d2 + eps * eps, 1.5);
            ey += (double)s->m[j] * dy / pow(d2 + eps * eps, 1.5);
            ez += (double)s->m[j] * dz / pow(d2 + eps * eps, 1.5);
            bound += (double)s->m[j] / d2;
        }
        bound *= 4 * theta * theta;
        dx = (double)a[q] - ex; dy = (double)a[count + q] - ey; dz = (double)a[2 * count + q] - ez;
        err = sqrt(dx * dx + dy * dy + dz * dz);
        sum += err * err / (ex * ex + ey * ey + ez * ez);
        err /= bound;
        if (!(err <= worst)) worst = err;
    }
    *rms = sqrt(sum / (double)count);
    return worst;
}

/* the state y and kick = [v | a0] of both paths: positions and velocities of s, a0 (3n) the
   forces of the last kick */
static int tree_active_kick_state(nbody__engine *e, nbody__buf y, nbody__buf kick, const nbody_system *s, const nbody_real *a0) {
    size_t n = s->n;
    return nbody__upload_system(e, y, s) == NBODY_OK && e->ops->upload(e, kick, 0, s->vx, n) == NBODY_OK &&
           e->ops->upload(e, kick, n, s->vy, n) == NBODY_OK && e->ops->upload(e, kick, 2 * n, s->vz, n) == NBODY_OK &&
           e->ops->upload(e, kick, 3 * n, a0, 3 * n) == NBODY_OK;
}

/* The neighbour limiter in ops.kdk_step (lv.limit = 2, nbody__block_limited) against the host's
   path with the neighbour levels that active_forces gathers, for an engine that gathers them
   (op.neighbours; the others are named and left): the same levels, some of them raised and
   counted, the same bits of state and kicks; a source's own leaf among its neighbours (its
   neighbour level at least its level). The refitted tree of e as check_kdk_step left it. */
/* check_kdk_step's host scratch, which check_kdk_limiter reuses (each writes before it reads):
   the host's and the engine's levels (count each), the forces and kick coefficients (6 count),
   the two states and kicks downloaded (12 n each) */
typedef struct kdk_scratch { unsigned long long *la, *lb; nbody_real *acc, *ha, *hb; } kdk_scratch;

static void check_kdk_limiter(nbody__engine *e, nbody_desc d, const char *name, const nbody_system *s, const size_t *list, size_t count,
                              const nbody_real *a0, unsigned long long *order, unsigned long long *level, nbody__buf ya, nbody__buf yb,
                              nbody__buf ka, nbody__buf kb, const kdk_scratch *w) {
    size_t n = s->n, q, raised = 0, own = 1;
    unsigned long long *la = w->la, *lb = w->lb, *nl = (unsigned long long *)malloc(count * sizeof *nl);
    nbody_real *acc = w->acc, *ha = w->ha, *hb = w->hb, dt_max = (nbody_real)0.0625;
    nbody__active_op op;
    nbody__kick_op kop;
    nbody__kdk_levels lv;
    int ok = nl != NULL, same = 1;
    memset(&op, 0, sizeof op);
    op.y = ya; op.list = list; op.count = count; op.out = acc; op.build = 0; op.order = order; op.wrote = 0;
    op.level = level; op.neighbour_level = nl; op.neighbours = 0;
    ok = ok && tree_active_kick_state(e, ya, ka, s, a0) && tree_active_kick_state(e, yb, kb, s, a0) && e->ops->active_forces(e, &op) == NBODY_OK;
    if (ok && !op.neighbours) {
        printf("%s: active_forces gathers no neighbour levels: the limiter is not the engine's\n", name);
        ok = 0;
    }
    for (q = 0; ok && q < count; ++q) {
        nbody_real dt = dt_max / (nbody_real)(1ULL << level[list[q]]);
        nbody_real bound = nbody__kdk_bound(&d, (nbody_real)nbody__kdk_jerk, acc[q], acc[count + q], acc[2 * count + q], a0, n, list[q], dt);
        unsigned long long k = nbody__block_level_of(level[list[q]], bound, 1ULL << 40, dt_max, 0);
        la[q] = nbody__block_limited(k, nl[q], 2);
        raised += la[q] != k;
        if (list[q] < d.n_active && nl[q] < level[list[q]]) own = 0;
        acc[3 * count + q] = -(dt - dt) / 2; acc[4 * count + q] = dt / 2;
        acc[5 * count + q] = dt_max / (nbody_real)(1ULL << la[q]) / 2;
    }
    kop.y = ya; kop.kick = ka; kop.list = list; kop.count = count; kop.acc = acc; kop.coef = acc + 3 * count;
    ok = ok && e->ops->kick(e, &kop) == NBODY_OK;
    if (ok) {
        CHECK(own, "%s: every active source's neighbour level is at least its own level (its leaf among its neighbours)", name);
        op.y = yb; op.out = NULL; op.level = NULL; op.neighbour_level = NULL; op.wrote = 0;
        lv.kick = kb; lv.level = level; lv.now = 1ULL << 40; lv.dt_max = dt_max; lv.dt_min = 0;
        lv.crit = 2 * d.timestep_eta * d.softening; lv.jerk = (nbody_real)nbody__kdk_jerk;
        lv.level_new = lb; lv.ok = 0; lv.limit = 2; lv.limited = 0;
        ok = e->ops->kdk_step(e, &op, &lv) == NBODY_OK && lv.ok;
        ok = ok && e->ops->download(e, ha, ya, 0, 6 * n) == NBODY_OK && e->ops->download(e, ha + 6 * n, ka, 0, 6 * n) == NBODY_OK &&
             e->ops->download(e, hb, yb, 0, 6 * n) == NBODY_OK && e->ops->download(e, hb + 6 * n, kb, 0, 6 * n) == NBODY_OK;
        for (q = 0; ok && q < count; ++q)
            if (la[q] != lb[q]) same = 0;
        CHECK(ok && same && raised > 0 && lv.limited == raised, "%s: kdk_step with the neighbour limiter: the host's levels (%lu of %lu "
              "raised; the engine counted %llu)", name, (unsigned long)raised, (unsigned long)count, lv.limited);
        CHECK(ok && !memcmp(ha, hb, 12 * n * sizeof(nbody_real)), "%s: kdk_step with the neighbour limiter: the bits of active_forces + "
              "kick", name);
    }
    free(nl);
}

/* ops.kdk_step against the host's path on the refitted tree of e (order: its leaf order),
   the bodies of s at levels 2 + i % 5, the step ending at a block time of every level; the
   force of every third body's last kick turned around (a0 = -a of f), so that for some the
   bound from the force's change (nbody__kdk_change) decides the level */
static void check_kdk_step(nbody__engine *e, nbody_desc d, const char *name, const nbody_system *s, const size_t *list, size_t count,
                           unsigned long long *order, const nbody_real *f) {
    size_t n = s->n, i, q;
    nbody__buf ya = NULL, yb = NULL, ka = NULL, kb = NULL;
    unsigned long long *level = (unsigned long long *)malloc(n * sizeof *level), *la = (unsigned long long *)malloc(count * sizeof *la);
    unsigned long long *lb = (unsigned long long *)malloc(count * sizeof *lb);
    nbody_real *acc = (nbody_real *)malloc(6 * count * sizeof(nbody_real)), *ha = (nbody_real *)malloc(12 * n * sizeof(nbody_real));
    nbody_real *hb = (nbody_real *)malloc(12 * n * sizeof(nbody_real)), dt_max = (nbody_real)0.0625;
    nbody_real *a0 = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
    nbody__active_op op;
    nbody__kick_op kop;
    nbody__kdk_levels lv;
    nbody_system bad = NBODY_ZERO;
    int ok = a0 != NULL, same = 1, changed = 0, turned = 0;
    memset(&op, 0, sizeof op);         /* no neighbour levels asked (level, neighbour_level NULL) */
    d.timestep_eta = (nbody_real)0.05;
    for (i = 0; i < n; ++i) level[i] = 2 + i % 5;
    for (i = 0; ok && i < 3 * n; ++i) a0[i] = i % n % 3 ? f[3 * n + i] : -f[3 * n + i];
    ok = ok && e->ops->alloc(e, 6 * n, &ya) == NBODY_OK && e->ops->alloc(e, 6 * n, &yb) == NBODY_OK &&
         e->ops->alloc(e, 6 * n, &ka) == NBODY_OK && e->ops->alloc(e, 6 * n, &kb) == NBODY_OK && tree_active_kick_state(e, ya, ka, s, a0) &&
         tree_active_kick_state(e, yb, kb, s, a0);
    /* the host's path: forces, levels (nbody__kdk_bound), coefficients, kick */
    op.y = ya; op.list = list; op.count = count; op.out = acc; op.build = 0; op.order = order; op.wrote = 0;
    ok = ok && e->ops->active_forces(e, &op) == NBODY_OK;
    for (q = 0; ok && q < count; ++q) {
        nbody_real dt = dt_max / (nbody_real)(1ULL << level[list[q]]);
        nbody_real bound = nbody__kdk_bound(&d, (nbody_real)nbody__kdk_jerk, acc[q], acc[count + q], acc[2 * count + q], a0, n, list[q],
                                            dt);
        la[q] = nbody__block_level_of(level[list[q]], bound, 1ULL << 40, dt_max, 0);
        turned += bound < nbody__kdk_criterion(&d, acc[q], acc[count + q], acc[2 * count + q]);
        acc[3 * count + q] = -(dt - dt) / 2; acc[4 * count + q] = dt / 2;
        acc[5 * count + q] = dt_max / (nbody_real)(1ULL << la[q]) / 2;
    }
    kop.y = ya; kop.kick = ka; kop.list = list; kop.count = count; kop.acc = acc; kop.coef = acc + 3 * count;
    ok = ok && e->ops->kick(e, &kop) == NBODY_OK;
    /* the engine's step */
    op.y = yb; op.out = NULL; op.wrote = 0;
    lv.kick = kb; lv.level = level; lv.now = 1ULL << 40; lv.dt_max = dt_max; lv.dt_min = 0;
    lv.crit = 2 * d.timestep_eta * d.softening; lv.jerk = (nbody_real)nbody__kdk_jerk; lv.level_new = lb; lv.ok = 0;
    lv.limit = -1; lv.limited = 0;     /* no neighbour limiter: that below */
    ok = ok && e->ops->kdk_step(e, &op, &lv) == NBODY_OK && lv.ok && op.wrote;
    ok = ok && e->ops->download(e, ha, ya, 0, 6 * n) == NBODY_OK && e->ops->download(e, ha + 6 * n, ka, 0, 6 * n) == NBODY_OK &&
         e->ops->download(e, hb, yb, 0, 6 * n) == NBODY_OK && e->ops->download(e, hb + 6 * n, kb, 0, 6 * n) == NBODY_OK;
    for (q = 0; ok && q < count; ++q) {
        if (la[q] != lb[q]) same = 0;
        if (la[q] != level[list[q]]) changed = 1;
    }
    CHECK(ok && same && changed && turned > 0, "%s: kdk_step's levels are the host's (%lu active bodies, some changed: %d; %d decided "
          "by the force's change)", name, (unsigned long)count, changed, turned);
    CHECK(ok && !memcmp(ha, hb, 12 * n * sizeof(nbody_real)), "%s: kdk_step's state and kicks are the bits of active_forces + kick", name);
    if (ok) {
        kdk_scratch w;
        w.la = la; w.lb = lb; w.acc = acc; w.ha = ha; w.hb = hb;
        check_kdk_limiter(e, d, name, s, list, count, a0, order, level, ya, yb, ka, kb, &w);
    }
    /* refused: a level below dt_min, then a position that is not finite; nothing kicked */
    ok = ok && tree_active_kick_state(e, yb, kb, s, a0);
    lv.dt_min = 1; lv.ok = 1; op.y = yb;
    ok = ok && e->ops->kdk_step(e, &op, &lv) == NBODY_OK && !lv.ok;
    ok = ok && e->ops->download(e, hb + 6 * n, kb, 0, 6 * n) == NBODY_OK && e->ops->download(e, hb, yb, 0, 6 * n) == NBODY_OK;
    CHECK(ok && !memcmp(hb + 3 * n, s->vx, n * sizeof(nbody_real)) && !memcmp(hb + 6 * n, s->vx, n * sizeof(nbody_real)) &&
          !memcmp(hb + 9 * n, a0, 3 * n * sizeof(nbody_real)), "%s: kdk_step with a level refused kicks nothing", name);
    ok = ok && nbody_system_alloc(&bad, n) == NBODY_OK && nbody_system_copy(&bad, s) == NBODY_OK;
    if (ok) bad.x[list[count / 2]] = (nbody_real)NAN;
    ok = ok && tree_active_kick_state(e, yb, kb, &bad, a0);
    lv.dt_min = 0; lv.ok = 1;
    ok = ok && e->ops->kdk_step(e, &op, &lv) == NBODY_OK && !lv.ok;
    ok = ok && e->ops->download(e, hb + 6 * n, kb, 0, 6 * n) == NBODY_OK;
    CHECK(ok && !memcmp(hb + 6 * n, s->vx, n * sizeof(nbody_real)) && !memcmp(hb + 9 * n, a0, 3 * n * sizeof(nbody_real)),
          "%s: kdk_step with a position not finite kicks nothing", name);
    if (ya) e->ops->release(e, ya);
    if (yb) e->ops->release(e, yb);
    if (ka) e->ops->release(e, ka);
    if (kb) e->ops->release(e, kb);
    nbody_system_free(&bad);
    free(level); free(la); free(lb); free(acc); free(ha); free(hb); free(a0);
}

static void check_tree_active(nbody_engine engine, const char *name, void (*config)(nbody__engine *), int bits, int refit_is_build) {
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody__engine e, e2;
    nbody__buf y = NULL, f = NULL, y2 = NULL;
    nbody__active_op op;
    size_t n = 3000, na = 2600, list[700], count = 0, i, q;
    unsigned long long *order = (unsigned long long *)malloc(n * sizeof *order);
    nbody_real *full = (nbody_real *)malloc(6 * n * sizeof(nbody_real)), *out = (nbody_real *)malloc(3 * 700 * sizeof(nbody_real));
    nbody_real *built = (nbody_real *)malloc(3 * 700 * sizeof(nbody_real)), *fit = (nbody_real *)malloc(3 * 700 * sizeof(nbody_real));
    int same = 1, ok;
    double wb, wf, rb, rf, moved = 0;
    memset(&op, 0, sizeof op);         /* no neighbour levels asked (level, neighbour_level NULL) */
    nbody_ic_collision(&s, n, (nbody_real)0.3, 3, 4);
    d.engine = engine; d.method = NBODY_LEAPFROG; d.stepping = NBODY_STEPPING_BLOCK; d.softening = (nbody_real)0.01;
    d.theta = (nbody_real)0.5; d.n_active = na;
    d = nbody__desc_defaults(&d);
    for (i = 5; i < n && count < 700; i += 3 + i % 5) list[count++] = i;   /* sources and test particles, ascending */
    if (nbody__engine_start(&e, &d, n, s.m) != NBODY_OK) {
        check_skip(NULL, "engine not started");
        free(order); free(full); free(out); free(built); free(fit); nbody_system_free(&s);
        return;
    }
    if (config) config(&e);
    CHECK(e.ops->alloc(&e, 6 * n, &y) == NBODY_OK && e.ops->alloc(&e, 6 * n, &f) == NBODY_OK &&
          nbody__upload_system(&e, y, &s) == NBODY_OK && e.ops->derivative(&e, y, f) == NBODY_OK &&
          e.ops->download(&e, full, f, 0, 6 * n) == NBODY_OK, "%s: a full evaluation", name);
    {   /* every body active: the bits of the full evaluation on every engine (CUDA_TREE walks as its derivative) */
        size_t *all = (size_t *)malloc(n * sizeof *all);
        nbody_real *fa = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
        for (i = 0; all && i < n; ++i) all[i] = i;
        op.y = y; op.list = all; op.count = n; op.out = fa; op.build = 1; op.order = order; op.wrote = 0;
        ok = all && fa && e.ops->active_forces && e.ops->active_forces(&e, &op) == NBODY_OK;
        CHECK(ok && !memcmp(fa, full + 3 * n, 3 * n * sizeof(nbody_real)), "%s: every body active (%lu, the last %lu test particles): "
              "the forces of a full evaluation, bit for bit", name, (unsigned long)n, (unsigned long)(n - na));
        free(all); free(fa);
    }
    op.y = y; op.list = list; op.count = count; op.out = out; op.build = 1; op.order = order; op.wrote = 0;
    CHECK(e.ops->active_forces && e.ops->active_forces(&e, &op) == NBODY_OK, "%s: %lu active bodies' forces from a build", name,
          (unsigned long)count);
    if (bits) {
        for (q = 0; q < count; ++q)
            for (i = 0; i < 3; ++i)
                if (memcmp(&out[i * count + q], &full[(3 + i) * n + list[q]], sizeof(nbody_real))) same = 0;
        CHECK(same, "%s: the active bodies' forces are the full evaluation's bits (%lu of %lu bodies, the last %lu test particles)", name,
              (unsigned long)count, (unsigned long)n, (unsigned long)(n - na));
    } else {                           /* the same terms summed in another grouping: equal to rounding */
        double worst = 0, tol = sizeof(nbody_real) == sizeof(double) ? 1e-10 : 1e-4;
        for (q = 0; q < count; ++q) {
            double dd = 0, aa = 0;
            for (i = 0; i < 3; ++i) {
                double a = (double)out[i * count + q], b = (double)full[(3 + i) * n + list[q]];
                dd += (a - b) * (a - b); aa += b * b;
            }
            if (!(sqrt(dd / aa) <= worst)) worst = sqrt(dd / aa);
        }
        CHECK(worst < tol, "%s: the active bodies' forces are the full evaluation's to rounding: worst relative difference %.3g "
              "(%lu of %lu bodies, the last %lu test particles)", name, worst, (unsigned long)count, (unsigned long)n,
              (unsigned long)(n - na));
    }
    if (!op.wrote) {                   /* an engine that builds at every call: nothing to refit */
        printf("%s: builds at every call (no refits)\n", name);
        op.build = 0; op.out = built;
        CHECK(e.ops->active_forces(&e, &op) == NBODY_OK && !op.wrote && !memcmp(out, built, 3 * count * sizeof(nbody_real)),
              "%s: a refit asked for builds the same tree", name);
        count = 0;
    } else {
        CHECK(nbody__is_permutation(order, n, full, 6 * n * sizeof(nbody_real)), "%s: the build's leaf order is a permutation", name);
        if (refit_is_build) {          /* the same positions: every node recomputed as it was built */
            op.build = 0; op.out = fit; op.wrote = 0;
            CHECK(e.ops->active_forces(&e, &op) == NBODY_OK && op.wrote && !memcmp(out, fit, 3 * count * sizeof(nbody_real)),
                  "%s: a refit where the tree was built gives the build's forces, bit for bit", name);
        }
    }
    if (count) {
    /* the bodies drift for 0.05 (a collision speed of about 1: several softening lengths) */
    for (i = 0; i < n; ++i) {
        s.x[i] += (nbody_real)0.05 * s.vx[i]; s.y[i] += (nbody_real)0.05 * s.vy[i]; s.z[i] += (nbody_real)0.05 * s.vz[i];
        moved += 0.05 * sqrt((double)(s.vx[i] * s.vx[i] + s.vy[i] * s.vy[i] + s.vz[i] * s.vz[i])) / (double)n;
    }
    ok = nbody__upload_system(&e, y, &s) == NBODY_OK;
    op.build = 0; op.out = fit; op.wrote = 0;
    ok = ok && e.ops->active_forces(&e, &op) == NBODY_OK && op.wrote;
    CHECK(ok, "%s: the refit's forces", name);
    {   /* a second engine with only the order refits to the same bits */
        nbody_real *again = full;
        int started = nbody__engine_start(&e2, &d, n, s.m) == NBODY_OK;
        if (started && config) config(&e2);
        ok = started && e2.ops->alloc(&e2, 6 * n, &y2) == NBODY_OK && nbody__upload_system(&e2, y2, &s) == NBODY_OK;
        op.y = y2; op.out = again; op.wrote = 0;
        ok = ok && e2.ops->active_forces(&e2, &op) == NBODY_OK && op.wrote;
        CHECK(ok && !memcmp(again, fit, 3 * count * sizeof(nbody_real)), "%s: a refit laid out from the leaf order alone gives the "
              "bits of the engine that holds the tree", name);
        if (started && y2) e2.ops->release(&e2, y2);
        if (started) nbody__engine_stop(&e2);
    }
    op.y = y; op.build = 1; op.out = built; op.wrote = 0;
    CHECK(e.ops->active_forces(&e, &op) == NBODY_OK, "%s: a build at the moved positions", name);
    wb = tree_active_worst(&s, na, 0.5, 0.01, list, count, built, &rb);
    wf = tree_active_worst(&s, na, 0.5, 0.01, list, count, fit, &rf);
    printf("%s: bodies moved %.3g on average; force error over its bound 4 theta^2 sum m/d^2, worst body: build %.3g, refit %.3g; "
           "rms relative error: build %.3g, refit %.3g\n", name, moved, wb, wf, rb, rf);
    CHECK(wb < 1 && wf < 1 && wf > 0, "%s: refit (%.3g) and build (%.3g) forces within the opening criterion's bound", name, wf, wb);
    CHECK(rf < 2 * rb, "%s: the refit's rms relative error %.3g, the build's %.3g", name, rf, rb);
    CHECK(memcmp(built, fit, 3 * count * sizeof(nbody_real)) != 0, "%s: the refitted tree is not the tree built there", name);
    if (e.ops->kdk_step) check_kdk_step(&e, d, name, &s, list, count, order, full);
    }
    e.ops->release(&e, y); e.ops->release(&e, f);
    nbody__engine_stop(&e);
    free(order); free(full); free(out); free(built); free(fit);
    nbody_system_free(&s);
}
#endif
