/* emulate_gpu_tree.c - the CUDA tree (nbody_cuda.cu) rebuilt on the CPU from the same
   formulas, to count the terms its walks sum and measure their force error against the
   direct sum, for a choice of sort key, theta, moments, bucket and group size.
   The build: the bodies' keys (nbody__tree_key of nbody.h: Morton or Hilbert, 21 bits an
   axis over the bounding box), a stable sort by key, the count-balanced implicit heap
   (leaf j in [n, 2n) holds the body at depth-first position p(j)), the internal nodes from
   their children (centre of mass, box, radius min(children's reach, farthest corner),
   B2, critical distance NBODY__TREE_CRIT, quadrupole moments by nbody__quad_shift), the
   groups of nbody__cu_group_flags (largest nodes of at most GS bodies, split while wide
   against their distance from the centre or when their children are apart).
   The walks: the group walk (a node accepted for the whole group when the group's box lies
   farther than its critical distance from its centre of mass; a node of at most `bucket`
   bodies that is not is summed body by body; others opened) and the per-body walk (a node
   accepted when the body lies farther than the critical distance; leaves always summed).
   Terms per body: accepted nodes + direct bodies, averaged over all bodies (group walk,
   every group walked) or over the sampled bodies (per-body walk). Errors: per-body relative
   error over 2000 sampled bodies (every body for N <= 20000) against the direct sum in
   double, the walks' sums in double (the GPU's float rounding is ~1e-6, far below).
   Plummer sphere, seed 2026, softening 1e-3, positions rounded to float as the float bench.
   Usage: emulate_gpu_tree N key(morton|hilbert) theta quad(0|1) [bucket (4)] [GS (64)]
          [split (1: the group split rule; 0: none)] [perbody (0|1)]
   Prints one markdown row: N key theta moments bucket GS | groups | terms/body (group walk)
   | nodes/body accepted | direct/body | lane terms/body (sum over groups of terms x GS / N:
   the GPU's work, a warp sums every term for all GS slots of its group however few bodies it
   holds) | the costliest group's terms / the mean group's | median p99 worst (group walk) | per-body walk terms
   and median p99 worst (when perbody = 1). */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <math.h>

typedef struct { double x, y, z; } v3;
static size_t n_, P_;
static double *cx, *cy, *cz, *nm, *lox, *loy, *loz, *hix, *hiy, *hiz, *rad, *b2, *crit2, (*qd)[7];
static unsigned int *rfirst, *rcount, *sorted_;
static v3 *sb;           /* bodies in depth-first order */
static double *sbm;

static unsigned long long *keys_;
static int cmp_key(const void *a, const void *b) {
    unsigned int i = *(const unsigned int *)a, j = *(const unsigned int *)b;
    if (keys_[i] != keys_[j]) return keys_[i] < keys_[j] ? -1 : 1;
    return (i > j) - (i < j);        /* stable, as CUB's radix sort */
}

static void build(const float *x, const float *y, const float *z, const double *m, size_t n, int hilbert, double theta, int quad) {
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    size_t i, P = 1;
    const float *X[3];
    X[0] = x; X[1] = y; X[2] = z;
    for (i = 0; i < n; ++i) {
        int d;
        for (d = 0; d < 3; ++d) { if (X[d][i] < lo[d]) lo[d] = X[d][i]; if (X[d][i] > hi[d]) hi[d] = X[d][i]; }
    }
    keys_ = (unsigned long long *)malloc(n * sizeof *keys_);
    sorted_ = (unsigned int *)malloc(n * sizeof *sorted_);
    for (i = 0; i < n; ++i) {
        unsigned int q[3];
        int d;
        for (d = 0; d < 3; ++d) {   /* nbody__cu_keys' quantisation, float positions */
            float ext = (float)hi[d] - (float)lo[d];
            double u = ext > 0 ? (double)(X[d][i] - (float)lo[d]) / (double)ext : 0.0;
            unsigned long long v = (unsigned long long)(u * 2097151.0);
            q[d] = (unsigned int)(v > 2097151ULL ? 2097151ULL : v);
        }
        keys_[i] = hilbert ? nbody__tree_hilbert(q[0], q[1], q[2]) : nbody__tree_morton(q[0], q[1], q[2]);
        sorted_[i] = (unsigned int)i;
    }
    qsort(sorted_, n, sizeof *sorted_, cmp_key);
    while (P * 2 <= 2 * n - 1) P *= 2;
    n_ = n; P_ = P;
#define AL(p, T, k) p = (T *)calloc((k), sizeof(T))
    AL(cx, double, 2 * n); AL(cy, double, 2 * n); AL(cz, double, 2 * n); AL(nm, double, 2 * n);
    AL(lox, double, 2 * n); AL(loy, double, 2 * n); AL(loz, double, 2 * n);
    AL(hix, double, 2 * n); AL(hiy, double, 2 * n); AL(hiz, double, 2 * n);
    AL(rad, double, 2 * n); AL(b2, double, 2 * n); AL(crit2, double, 2 * n);
    qd = (double(*)[7])calloc(2 * n, sizeof *qd);
    AL(rfirst, unsigned int, 2 * n); AL(rcount, unsigned int, 2 * n);
    AL(sb, v3, n); AL(sbm, double, n);
    for (i = n; i < 2 * n; ++i) {
        size_t p = i >= P ? i - P : (2 * n - P) + (i - n);
        unsigned int b = sorted_[p];
        cx[i] = lox[i] = hix[i] = x[b]; cy[i] = loy[i] = hiy[i] = y[b]; cz[i] = loz[i] = hiz[i] = z[b];
        nm[i] = m[b];
        sb[p].x = x[b]; sb[p].y = y[b]; sb[p].z = z[b]; sbm[p] = m[b];
        rfirst[i] = (unsigned int)p; rcount[i] = 1;
    }
    for (i = n - 1; i >= 1; --i) {
        size_t l = 2 * i, r = l + 1;
        double c[3], cr;
        lox[i] = fmin(lox[l], lox[r]); loy[i] = fmin(loy[l], loy[r]); loz[i] = fmin(loz[l], loz[r]);
        hix[i] = fmax(hix[l], hix[r]); hiy[i] = fmax(hiy[l], hiy[r]); hiz[i] = fmax(hiz[l], hiz[r]);
        /* the GPU builds' node: nbody.h's shared nbody__tree_inner (here in double) */
        cr = nbody__tree_inner(cx[l], cy[l], cz[l], nm[l], rad[l], b2[l], cx[r], cy[r], cz[r], nm[r], rad[r], b2[r], lox[i], loy[i],
                               loz[i], hix[i], hiy[i], hiz[i], 1 / theta, 2 * i >= n, &c[0], &c[1], &c[2], &rad[i], &b2[i]);
        cx[i] = c[0]; cy[i] = c[1]; cz[i] = c[2]; nm[i] = nm[l] + nm[r]; crit2[i] = cr * cr;
        rfirst[i] = rfirst[l]; rcount[i] = rcount[l] + rcount[r];
        if (quad) {
            double s[6] = {0, 0, 0, 0, 0, 0};
            int h;
            for (h = 0; h < 2; ++h) {
                size_t ch = l + h;
                double sc[6] = {0, 0, 0, 0, 0, 0};
                int k;
                if (ch < n) for (k = 0; k < 6; ++k) sc[k] = qd[ch][k];
                nbody__quad_shift(s, sc, nm[ch], cx[ch] - c[0], cy[ch] - c[1], cz[ch] - c[2]);
            }
            for (h = 0; h < 6; ++h) qd[i][h] = s[h];
            qd[i][6] = s[0] + s[3] + s[5];
        }
    }
    free(keys_);
}

static double extent(size_t i) { return fmax(fmax(hix[i] - lox[i], hiy[i] - loy[i]), hiz[i] - loz[i]); }
static int group_split(size_t i, int rule) {
    size_t a = 2 * i, b = a + 1;
    double dx, dy, dz, e, gx, gy, gz;
    if (i >= n_) return 0;
    if (!rule) return 0;
    dx = fmax(fmax(lox[i] - cx[1], cx[1] - hix[i]), 0.0); dy = fmax(fmax(loy[i] - cy[1], cy[1] - hiy[i]), 0.0);
    dz = fmax(fmax(loz[i] - cz[1], cz[1] - hiz[i]), 0.0); e = extent(i);
    gx = fmax(fmax(lox[b] - hix[a], lox[a] - hix[b]), 0.0); gy = fmax(fmax(loy[b] - hiy[a], loy[a] - hiy[b]), 0.0);
    gz = fmax(fmax(loz[b] - hiz[a], loz[a] - hiz[b]), 0.0);
    return 4 * e * e > dx * dx + dy * dy + dz * dz || fmax(fmax(gx, gy), gz) > fmax(extent(a), extent(b));
}
static int is_group(size_t i, unsigned int GS, int rule) {
    size_t j;
    int g = rcount[i] <= GS && !group_split(i, rule);
    for (j = i; g && j > 1 && rcount[j / 2] <= GS; j /= 2) g = group_split(j / 2, rule);
    return g;
}

static void add_node(size_t i, int quad, double eps2, double px, double py, double pz, double *a) {
    double dx = cx[i] - px, dy = cy[i] - py, dz = cz[i] - pz, r2 = dx * dx + dy * dy + dz * dz + eps2;
    if (quad && i < n_) {
        double yy = 1 / sqrt(r2), y2 = yy * yy, h3 = yy * y2, h5 = h3 * y2, h7 = h5 * y2;
        nbody__quad_add(qd[i][0], qd[i][1], qd[i][2], qd[i][3], qd[i][4], qd[i][5], qd[i][6], nm[i] * h3, h5, h7, dx, dy, dz,
                        &a[0], &a[1], &a[2]);
    } else {
        double w = nm[i] / (r2 * sqrt(r2));
        a[0] += w * dx; a[1] += w * dy; a[2] += w * dz;
    }
}

/* the group walk of node g; acc: 3 per body of the group (NULL: count only) */
static size_t *stk;
static void group_walk(size_t g, int quad, unsigned int bucket, double eps2, double *acc, double *nacc, double *ndir) {
    size_t sp = 0, f = rfirst[g], c = rcount[g], k;
    double lx = 1e300, ly = 1e300, lz = 1e300, hx = -1e300, hy = -1e300, hz = -1e300;
    for (k = 0; k < c; ++k) {
        v3 b = sb[f + k];
        lx = fmin(lx, b.x); ly = fmin(ly, b.y); lz = fmin(lz, b.z); hx = fmax(hx, b.x); hy = fmax(hy, b.y); hz = fmax(hz, b.z);
    }
    stk[sp++] = 1;
    while (sp) {
        size_t i = stk[--sp];
        double ex = fmax(fmax(cx[i] - hx, lx - cx[i]), 0.0), ey = fmax(fmax(cy[i] - hy, ly - cy[i]), 0.0);
        double ez = fmax(fmax(cz[i] - hz, lz - cz[i]), 0.0);
        if (i < n_ && ex * ex + ey * ey + ez * ez > crit2[i]) {
            *nacc += 1;
            if (acc) for (k = 0; k < c; ++k) add_node(i, quad, eps2, sb[f + k].x, sb[f + k].y, sb[f + k].z, acc + 3 * k);
        } else if (rcount[i] <= bucket) {
            *ndir += rcount[i];
            if (acc) {
                size_t q;
                for (k = 0; k < c; ++k)
                    for (q = rfirst[i]; q < rfirst[i] + rcount[i]; ++q) {
                        double dx = sb[q].x - sb[f + k].x, dy = sb[q].y - sb[f + k].y, dz = sb[q].z - sb[f + k].z;
                        double d2 = dx * dx + dy * dy + dz * dz, r2 = d2 + eps2, w;
                        if (d2 <= 0) continue;
                        w = sbm[q] / (r2 * sqrt(r2));
                        acc[3 * k] += w * dx; acc[3 * k + 1] += w * dy; acc[3 * k + 2] += w * dz;
                    }
            }
        } else {
            stk[sp++] = 2 * i + 1; stk[sp++] = 2 * i;
        }
    }
}
/* the per-body walk (the engine's monopole walk) of the body at depth-first position p */
static double body_walk(size_t p, int quad, double eps2, double *a) {
    size_t cur = 1;
    double terms = 0, px = sb[p].x, py = sb[p].y, pz = sb[p].z;
    a[0] = a[1] = a[2] = 0;
    do {
        double dx = cx[cur] - px, dy = cy[cur] - py, dz = cz[cur] - pz, d2 = dx * dx + dy * dy + dz * dz;
        size_t skip = nbody__heap_skip(cur);
        int acc = d2 > crit2[cur];
        if (acc) { add_node(cur, quad, eps2, px, py, pz, a); terms += 1; }
        cur = !acc && cur < n_ ? 2 * cur : skip;
    } while (cur != 1);
    return terms;
}

static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static void stats(double *e, size_t k, double *out) {
    qsort(e, k, sizeof *e, cmpd);
    out[0] = e[k / 2]; out[1] = e[(k - 1) * 99 / 100]; out[2] = e[k - 1];
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 262144, i, k, ng = 0, *pos_of, *grp_of;
    int hilbert = argc > 2 && strcmp(argv[2], "hilbert") == 0;
    double theta = argc > 3 ? atof(argv[3]) : 0.5;
    int quad = argc > 4 ? atoi(argv[4]) : 0;
    unsigned int bucket = argc > 5 ? (unsigned int)atoi(argv[5]) : 4, GS = argc > 6 ? (unsigned int)atoi(argv[6]) : 64;
    int rule = argc > 7 ? atoi(argv[7]) : 1, perbody = argc > 8 ? atoi(argv[8]) : 0;
    const double eps = 1e-3, eps2 = eps * eps;
    nbody_system s = NBODY__ZERO_INIT;
    float *x, *y, *z;
    double *m, *ref, *err, *err2, slot = 0, gsum = 0, gmax = 0, nacc = 0, ndir = 0, st[3], st2[3] = {0, 0, 0}, bterms = 0;
    size_t *idx;
    unsigned int *groups;
    if (n < 64) return 1;
    nbody_ic_plummer(&s, n, 2026);
    x = (float *)malloc(n * sizeof *x); y = (float *)malloc(n * sizeof *y); z = (float *)malloc(n * sizeof *z);
    m = (double *)malloc(n * sizeof *m);
    for (i = 0; i < n; ++i) { x[i] = (float)s.x[i]; y[i] = (float)s.y[i]; z[i] = (float)s.z[i]; m[i] = (float)s.m[i]; }
    build(x, y, z, m, n, hilbert, theta, quad);
    stk = (size_t *)malloc(64 * 2 * 64 * sizeof *stk + 4096 * 64);
    groups = (unsigned int *)malloc(n * sizeof *groups);
    for (i = 1; i < 2 * n; ++i) if (is_group(i, GS, rule)) groups[ng++] = (unsigned int)i;
    /* every body in exactly one group */
    {
        size_t tot = 0;
        for (i = 0; i < ng; ++i) tot += rcount[groups[i]];
        if (tot != n) { printf("groups cover %lu of %lu bodies\n", (unsigned long)tot, (unsigned long)n); return 1; }
    }
    for (i = 0; i < ng; ++i) {
        double a = 0, d = 0;
        group_walk(groups[i], quad, bucket, eps2, NULL, &a, &d);
        nacc += a * rcount[groups[i]]; ndir += d * rcount[groups[i]];
        slot += (a + d) * GS; gsum += a + d;
        if (a + d > gmax) gmax = a + d;
    }
    /* the sampled bodies: their depth-first positions and groups */
    k = n <= 20000 ? n : 2000;
    idx = (size_t *)malloc(k * sizeof *idx);
    for (i = 0; i < k; ++i) idx[i] = k == n ? i : (size_t)(((unsigned long long)i * 2654435761u) % n);
    pos_of = (size_t *)malloc(n * sizeof *pos_of);
    grp_of = (size_t *)malloc(n * sizeof *grp_of);
    for (i = 0; i < n; ++i) pos_of[sorted_[i]] = i;
    for (i = 0; i < ng; ++i) {
        size_t q;
        for (q = rfirst[groups[i]]; q < rfirst[groups[i]] + rcount[groups[i]]; ++q) grp_of[q] = i;
    }
    ref = (double *)malloc(3 * k * sizeof *ref);
    err = (double *)malloc(k * sizeof *err);
    err2 = (double *)malloc(k * sizeof *err2);
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 16))
    for (i = 0; i < k; ++i) {
        size_t b = idx[i], j;
        double a[3] = {0, 0, 0};
        for (j = 0; j < n; ++j) {
            double dx = (double)x[j] - x[b], dy = (double)y[j] - y[b], dz = (double)z[j] - z[b], r2 = dx * dx + dy * dy + dz * dz + eps2, w;
            if (j == b) continue;
            w = m[j] / (r2 * sqrt(r2));
            a[0] += w * dx; a[1] += w * dy; a[2] += w * dz;
        }
        ref[3 * i] = a[0]; ref[3 * i + 1] = a[1]; ref[3 * i + 2] = a[2];
    }
    {
        double *ga = (double *)malloc(3 * 4096 * sizeof *ga);
        for (i = 0; i < k; ++i) {
            size_t p = pos_of[idx[i]], g = groups[grp_of[p]], off = p - rfirst[g];
            double d0 = 0, d1 = 0, dx, dy, dz, rr = ref[3 * i] * ref[3 * i] + ref[3 * i + 1] * ref[3 * i + 1] + ref[3 * i + 2] * ref[3 * i + 2];
            memset(ga, 0, 3 * rcount[g] * sizeof *ga);
            group_walk(g, quad, bucket, eps2, ga, &d0, &d1);
            dx = ga[3 * off] - ref[3 * i]; dy = ga[3 * off + 1] - ref[3 * i + 1]; dz = ga[3 * off + 2] - ref[3 * i + 2];
            err[i] = sqrt((dx * dx + dy * dy + dz * dz) / rr);
            if (perbody) {
                double a[3];
                bterms += body_walk(p, quad, eps2, a);
                dx = a[0] - ref[3 * i]; dy = a[1] - ref[3 * i + 1]; dz = a[2] - ref[3 * i + 2];
                err2[i] = sqrt((dx * dx + dy * dy + dz * dz) / rr);
            }
        }
        free(ga);
    }
    stats(err, k, st);
    if (perbody) stats(err2, k, st2);
    printf("| %lu | %s | %.2f | %s | %u | %u%s | %lu | %.0f | %.0f | %.0f | %.0f | %.1f | %.2e | %.2e | %.2e |", (unsigned long)n,
           hilbert ? "hilbert" : "morton", theta, quad ? "quad" : "mono", bucket, GS, rule ? "" : " nosplit", (unsigned long)ng,
           (nacc + ndir) / n, nacc / n, ndir / n, slot / n, gmax / (gsum / ng), st[0], st[1], st[2]);
    if (perbody) printf(" %.0f | %.2e | %.2e | %.2e |", bterms / k, st2[0], st2[1], st2[2]);
    printf("\n");
    nbody_system_free(&s);
    return 0;
}
