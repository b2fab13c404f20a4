/* tree_active.h - the tree engines' operation for the tree leapfrog's block steps
   (nbody__active_op) on one engine, with test particles among the active bodies:
   - a build gives each active body the bits of a full evaluation (the derivative), or (bits = 0:
     an engine whose active walk groups the same terms otherwise) its forces to rounding;
   - a refit after the bodies moved (the tree of the build's leaf order, its nodes recomputed
     for the new positions) keeps every body within the opening criterion's error bound of the
     exact forces, 4 theta^2 sum_j m_j / d_j^2 (Salmon & Warren's bound of each accepted node's
     monopole, theta^2 M / d^2, with d - r <= d_j <= d + r and r < d), as a build there does;
   - a second engine given only the leaf order (a restart from a checkpoint) refits to the same
     bits as the engine that holds the tree.
   Included by test_tree_block.c and cuda_engines.c after nbody.h's implementation and check.h;
   config (may be NULL) sets the engine up after its start (the CUDA tree: the warps' walk). */
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

static void check_tree_active(nbody_engine engine, const char *name, void (*config)(nbody__engine *), int bits) {
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
    }
    e.ops->release(&e, y); e.ops->release(&e, f);
    nbody__engine_stop(&e);
    free(order); free(full); free(out); free(built); free(fit);
    nbody_system_free(&s);
}
#endif
