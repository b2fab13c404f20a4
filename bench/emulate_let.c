/* emulate_let.c - the sizes of the locally essential trees of the CUDA tree's domains
   (desc.decompose on several GPUs, nbody_cuda.cu), rebuilt on the CPU from the same formulas:
   a Plummer sphere split into D ranges of the Hilbert curve of equal counts, each domain's
   heap tree built as the GPU builds it (keys over the domain's own box, nbody__tree_inner),
   and for every pair of domains the nodes of the sender's tree kept in the LET for the
   receiver seen as the bounding boxes of its tree's nodes at level L (2^L boxes; the GPU code
   uses L = 4, 16 boxes), or as its bodies themselves (the smallest LET any box description can
   give). A node is kept whole when every box lies beyond its critical distance (tested down
   the receiver's tree, which prunes: a node beyond a receiver node's box is beyond all boxes
   below it), opened otherwise; leaves are kept. Prints the kept nodes as a share of the
   sender's tree and the LET bytes in float (monopoles: 24 bytes a node).
   Usage: emulate_let [log2 N (20)] [D (2)] [theta (0.5)] [level L ... (4 8 12); -1: its bodies (always last)]
   EMULATE_COSTS=1: instead, the LET walk's steps for each GPU group of every domain (walk_costs)
   EMULATE_ENERGY=jitter: instead, the energy check of tests/cuda_multi.c on 1 .. 4 domains (dd_energy, monopoles)
   EMULATE_ENERGY_QUAD=1: the same with quadrupoles over collisions of five seeds (2: the domains frozen) */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <float.h>
#include <string.h>

typedef struct {
    size_t n;                      /* leaves; nodes 1 .. 2n - 1 */
    double *c, *m, *lo, *hi, *crit2;   /* 3 a node for c, lo, hi */
    size_t *cnt;                   /* bodies under a node */
    size_t *body;                  /* a leaf's body */
    double (*qd)[7];               /* quadrupole moments about c: xx xy xz yy yz zz trace (nbody__quad_shift) */
} tree;

static const unsigned long long *keys_;
static int cmp_key(const void *a, const void *b) {
    unsigned long long x = keys_[*(const size_t *)a], y = keys_[*(const size_t *)b];
    return x < y ? -1 : x > y ? 1 : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}
/* the order of the bodies idx[0 .. n) by their Hilbert keys in their bounding box */
static void hilbert_sort(const nbody_system *s, size_t *idx, size_t n) {
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    unsigned long long *key = (unsigned long long *)malloc(s->n * sizeof *key);
    size_t i;
    for (i = 0; i < n; ++i) {
        size_t b = idx[i];
        double p[3] = {s->x[b], s->y[b], s->z[b]};
        int d;
        for (d = 0; d < 3; ++d) { lo[d] = fmin(lo[d], p[d]); hi[d] = fmax(hi[d], p[d]); }
    }
    for (i = 0; i < n; ++i) {
        size_t b = idx[i];
        key[b] = nbody__tree_key(s->x[b], s->y[b], s->z[b], lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
    }
    keys_ = key;
    qsort(idx, n, sizeof *idx, cmp_key);
    free(key);
}
/* the GPU's heap over the bodies idx[0 .. n) (sorted by key): leaf j holds depth-first position p(j) */
static void build(tree *t, const nbody_system *s, const size_t *idx, size_t n, double theta) {
    size_t P = 1, i;
    while (P * 2 <= 2 * n - 1) P *= 2;
    t->n = n;
    t->c = (double *)calloc(6 * n, sizeof(double)); t->lo = (double *)calloc(6 * n, sizeof(double));
    t->hi = (double *)calloc(6 * n, sizeof(double)); t->m = (double *)calloc(2 * n, sizeof(double));
    t->crit2 = (double *)calloc(2 * n, sizeof(double));
    t->body = (size_t *)calloc(2 * n, sizeof(size_t));
    t->qd = (double(*)[7])calloc(2 * n, sizeof *t->qd);
    {
        double *rad = (double *)calloc(2 * n, sizeof(double)), *b2 = (double *)calloc(2 * n, sizeof(double));
        for (i = n; i < 2 * n; ++i) {
            size_t p = i >= P ? i - P : (2 * n - P) + (i - n), b = idx[p];
            t->c[3 * i] = t->lo[3 * i] = t->hi[3 * i] = s->x[b];
            t->c[3 * i + 1] = t->lo[3 * i + 1] = t->hi[3 * i + 1] = s->y[b];
            t->c[3 * i + 2] = t->lo[3 * i + 2] = t->hi[3 * i + 2] = s->z[b];
            t->m[i] = s->m[b];
            t->body[i] = b;
        }
        for (i = n - 1; i >= 1; --i) {
            size_t l = 2 * i, r = l + 1;
            int d;
            double cr;
            for (d = 0; d < 3; ++d) { t->lo[3 * i + d] = fmin(t->lo[3 * l + d], t->lo[3 * r + d]); t->hi[3 * i + d] = fmax(t->hi[3 * l + d], t->hi[3 * r + d]); }
            cr = nbody__tree_inner(t->c[3 * l], t->c[3 * l + 1], t->c[3 * l + 2], t->m[l], rad[l], b2[l], t->c[3 * r], t->c[3 * r + 1],
                                   t->c[3 * r + 2], t->m[r], rad[r], b2[r], t->lo[3 * i], t->lo[3 * i + 1], t->lo[3 * i + 2], t->hi[3 * i],
                                   t->hi[3 * i + 1], t->hi[3 * i + 2], 1 / theta, 2 * i >= n, &t->c[3 * i], &t->c[3 * i + 1],
                                   &t->c[3 * i + 2], &rad[i], &b2[i]);
            t->m[i] = t->m[l] + t->m[r]; t->crit2[i] = cr * cr;
            {   /* the GPU build's moments (emulate_gpu_tree.c) */
                double q[6] = {0, 0, 0, 0, 0, 0};
                int h, k;
                for (h = 0; h < 2; ++h) {
                    size_t ch = l + (size_t)h;
                    double sc[6] = {0, 0, 0, 0, 0, 0};
                    if (ch < n) for (k = 0; k < 6; ++k) sc[k] = t->qd[ch][k];
                    nbody__quad_shift(q, sc, t->m[ch], t->c[3 * ch] - t->c[3 * i], t->c[3 * ch + 1] - t->c[3 * i + 1], t->c[3 * ch + 2] - t->c[3 * i + 2]);
                }
                for (h = 0; h < 6; ++h) t->qd[i][h] = q[h];
                t->qd[i][6] = q[0] + q[3] + q[5];
            }
        }
        free(rad); free(b2);
        t->cnt = (size_t *)calloc(2 * n, sizeof(size_t));
        for (i = 2 * n - 1; i >= 1; --i) t->cnt[i] = i >= n ? 1 : t->cnt[2 * i] + t->cnt[2 * i + 1];
    }
}
/* 1 when the sender node (centre c, crit2) lies beyond every box of the receiver r at level L
   (L < 0: its leaves) at or below receiver node k */
static int beyond(const tree *r, size_t k, int level, int L, const double *c, double crit2) {
    double d2 = 0;
    int d;
    for (d = 0; d < 3; ++d) {
        double e = fmax(fmax(r->lo[3 * k + d] - c[d], c[d] - r->hi[3 * k + d]), 0);
        d2 += e * e;
    }
    if (d2 > crit2) return 1;
    if (k >= r->n || level == L) return 0;
    return beyond(r, 2 * k, level + 1, L, c, crit2) && beyond(r, 2 * k + 1, level + 1, L, c, crit2);
}
/* the nodes of s's subtree at i kept in the LET for r (boxes at level L) */
static size_t kept(const tree *s, size_t i, const tree *r, int L) {
    if (i >= s->n || beyond(r, 1, 0, L, s->c + 3 * i, s->crit2[i])) return 1;
    return 1 + kept(s, 2 * i, r, L) + kept(s, 2 * i + 1, r, L);
}

/* ---- the receiver seen as its LET walk's groups (nbody_cuda.cu): the groups' boxes, the leaves
   G + g of a heap of unions. The GPU's LET kernels emulated step by step (marks top-down a
   level at a time, sizes bottom-up, places top-down, the stackless walk of the group-box heap
   with the 8-ulp margin), then the LET walk (a group's box in the opening test, kept-whole
   nodes always accepted, bodies summed directly, never accepted) against the group walk of the
   sender's whole tree: the same nodes in the same order, so the same sums to the bit. The GPU's
   groups are its group walk's (nodes of at most 64 neighbours, split where not compact); here
   they are windows of 32 leaves: the equality holds for any groups whose boxes the walk and
   the heap share. */
typedef struct { size_t G; double *lo, *hi; } groups;
static groups group_boxes(const tree *r) {
    groups q;
    size_t g, t, i;
    int d;
    q.G = (r->n + 31) / 32;
    q.lo = (double *)calloc(6 * q.G, sizeof(double)); q.hi = (double *)calloc(6 * q.G, sizeof(double));
    for (g = 0; g < q.G; ++g)
        for (t = 32 * g; t < 32 * g + 32 && t < r->n; ++t)
            for (d = 0; d < 3; ++d) {
                double v = r->c[3 * (r->n + t) + d];
                q.lo[3 * (q.G + g) + d] = t == 32 * g ? v : fmin(q.lo[3 * (q.G + g) + d], v);
                q.hi[3 * (q.G + g) + d] = t == 32 * g ? v : fmax(q.hi[3 * (q.G + g) + d], v);
            }
    for (i = q.G - 1; i >= 1; --i)
        for (d = 0; d < 3; ++d) {
            q.lo[3 * i + d] = fmin(q.lo[6 * i + d], q.lo[6 * i + 3 + d]); q.hi[3 * i + d] = fmax(q.hi[6 * i + d], q.hi[6 * i + 3 + d]);
        }
    return q;
}
static double box_d2(const double *lo, const double *hi, const double *c) {
    double ex = fmax(fmax(lo[0] - c[0], c[0] - hi[0]), 0), ey = fmax(fmax(lo[1] - c[1], c[1] - hi[1]), 0);
    double ez = fmax(fmax(lo[2] - c[2], c[2] - hi[2]), 0);
    return fma(ex, ex, fma(ey, ey, ez * ez));
}
/* nbody__cu_let_beyond */
static int beyond_groups(const groups *q, const double *c, double crit2) {
    double need = crit2 * (1 + 8 * DBL_EPSILON);
    size_t cur = 1;
    do {
        if (box_d2(q->lo + 3 * cur, q->hi + 3 * cur, c) > need) cur = nbody__heap_skip(cur);
        else if (cur >= q->G) return 0;
        else cur = 2 * cur;
    } while (cur != 1);
    return 1;
}
typedef struct { size_t count; double *c, *m, *w; size_t *skip; } let;
/* nbody__cu_let_mark, nbody__cu_let_count, nbody__cu_let_place, a level at a time */
static let make_let(const tree *s, const groups *q) {
    size_t n = s->n, top = 1, i;
    int depth = 0, L;
    unsigned char *state = (unsigned char *)calloc(2 * n, 1);
    size_t *lsize = (size_t *)calloc(2 * n, sizeof(size_t)), *lpos = (size_t *)calloc(2 * n, sizeof(size_t));
    let l;
    while (top * 2 <= 2 * n - 1) { top *= 2; depth++; }
    for (L = 0; L <= depth; ++L)
        for (i = (size_t)1 << L; i < ((size_t)2 << L) && i < 2 * n; ++i) {
            unsigned char st = i == 1 || state[i / 2] == 2 ? 1 : 0;
            if (st && i < n && !beyond_groups(q, s->c + 3 * i, s->crit2[i])) st = 2;
            state[i] = st;
        }
    for (L = depth; L >= 0; --L)
        for (i = (size_t)1 << L; i < ((size_t)2 << L) && i < 2 * n; ++i) lsize[i] = state[i] == 2 ? 1 + lsize[2 * i] + lsize[2 * i + 1] : 1;
    l.count = lsize[1];
    l.c = (double *)malloc(3 * l.count * sizeof(double)); l.m = (double *)malloc(l.count * sizeof(double));
    l.w = (double *)malloc(l.count * sizeof(double)); l.skip = (size_t *)malloc(l.count * sizeof(size_t));
    lpos[1] = 0;
    for (L = 0; L <= depth; ++L)
        for (i = (size_t)1 << L; i < ((size_t)2 << L) && i < 2 * n; ++i) {
            size_t p = lpos[i];
            int opened = state[i] == 2;
            if (i < n) { lpos[2 * i] = opened ? p + 1 : (size_t)-1; lpos[2 * i + 1] = opened ? p + 1 + lsize[2 * i] : (size_t)-1; }
            if (p == (size_t)-1) continue;
            l.c[3 * p] = s->c[3 * i]; l.c[3 * p + 1] = s->c[3 * i + 1]; l.c[3 * p + 2] = s->c[3 * i + 2];
            l.m[p] = s->m[i]; l.w[p] = i < n && !opened ? -1 : s->crit2[i]; l.skip[p] = p + lsize[i];
        }
    free(state); free(lsize); free(lpos);
    return l;
}
static void pull(double m, const double *c, const double *me, double *a) {
    double dx = c[0] - me[0], dy = c[1] - me[1], dz = c[2] - me[2], r2 = dx * dx + dy * dy + dz * dz + 1e-4, w = m / (r2 * sqrt(r2));
    a[0] += w * dx; a[1] += w * dy; a[2] += w * dz;
}
/* receiver r's leaf t: its group's walk of the LET (nbody__cu_let_walk), or of the sender's whole tree */
static void walk_let(const let *l, const groups *q, const tree *r, size_t t, double *a) {
    const double *lo = q->lo + 3 * (q->G + t / 32), *hi = q->hi + 3 * (q->G + t / 32), *me = r->c + 3 * (r->n + t);
    size_t cur = 0;
    while (cur < l->count) {
        const double *c = l->c + 3 * cur;
        double dx = c[0] - me[0], dy = c[1] - me[1], dz = c[2] - me[2];
        if (l->w[cur] < 0 || (l->skip[cur] > cur + 1 && box_d2(lo, hi, c) > l->w[cur])) { pull(l->m[cur], c, me, a); cur = l->skip[cur]; }
        else if (l->skip[cur] == cur + 1) { if (dx * dx + dy * dy + dz * dz > 0) pull(l->m[cur], c, me, a); cur = l->skip[cur]; }
        else ++cur;
    }
}
static void walk_tree(const tree *s, const groups *q, const tree *r, size_t t, double *a) {
    const double *lo = q->lo + 3 * (q->G + t / 32), *hi = q->hi + 3 * (q->G + t / 32), *me = r->c + 3 * (r->n + t);
    size_t cur = 1;
    do {
        const double *c = s->c + 3 * cur;
        double dx = c[0] - me[0], dy = c[1] - me[1], dz = c[2] - me[2];
        if (cur < s->n && box_d2(lo, hi, c) > s->crit2[cur]) { pull(s->m[cur], c, me, a); cur = nbody__heap_skip(cur); }
        else if (cur >= s->n) { if (dx * dx + dy * dy + dz * dz > 0) pull(s->m[cur], c, me, a); cur = nbody__heap_skip(cur); }
        else cur = 2 * cur;
    } while (cur != 1);
}
/* the LET of k for j as the kernels make it; 1 when its walk is the whole tree's for every body of j */
static int check_groups(const tree *s, const tree *r, size_t *count) {
    groups q = group_boxes(r);
    let l = make_let(s, &q);
    size_t t, bad = 0;
    for (t = 0; t < r->n; ++t) {
        double a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
        walk_let(&l, &q, r, t, a);
        walk_tree(s, &q, r, t, b);
        bad += a[0] != b[0] || a[1] != b[1] || a[2] != b[2];
    }
    *count = l.count;
    free(q.lo); free(q.hi); free(l.c); free(l.m); free(l.w); free(l.skip);
    return bad == 0;
}

/* ---- the GPU's groups (nbody__cu_group_flags: the largest nodes of at most 64 bodies, split
   while 4 extent^2 > their squared distance from the root's centre of mass, or while their
   children lie farther apart than the larger child's extent) and what the LET walk costs them:
   its steps (a node a step, one warp a group, nbody__cu_let_walk) over the LETs made for their
   boxes. A warp's time is about its steps: the largest against the mean tells whether a few
   groups hold the walk back. */
static double ext(const tree *t, size_t i) {
    return fmax(fmax(t->hi[3 * i] - t->lo[3 * i], t->hi[3 * i + 1] - t->lo[3 * i + 1]), t->hi[3 * i + 2] - t->lo[3 * i + 2]);
}
static int gsplit(const tree *t, size_t i) {
    double d2 = box_d2(t->lo + 3 * i, t->hi + 3 * i, t->c + 3), e = ext(t, i), gap = 0;
    int d;
    if (i >= t->n) return 0;
    for (d = 0; d < 3; ++d) {
        double g = fmax(fmax(t->lo[3 * (2 * i + 1) + d] - t->hi[3 * (2 * i) + d], t->lo[3 * (2 * i) + d] - t->hi[3 * (2 * i + 1) + d]), 0);
        gap = fmax(gap, g);
    }
    return 4 * e * e > d2 || gap > fmax(ext(t, 2 * i), ext(t, 2 * i + 1));
}
static groups gpu_groups(const tree *r) {
    groups q;
    size_t i, j, G = 0, *list = (size_t *)malloc(2 * r->n * sizeof(size_t));
    for (i = 1; i < 2 * r->n; ++i) {
        int g = r->cnt[i] <= 64 && !gsplit(r, i);
        for (j = i; g && j > 1 && r->cnt[j / 2] <= 64; j /= 2) g = gsplit(r, j / 2);
        if (g) list[G++] = i;
    }
    q.G = G;
    q.lo = (double *)calloc(6 * G, sizeof(double)); q.hi = (double *)calloc(6 * G, sizeof(double));
    for (i = 0; i < G; ++i) {
        memcpy(q.lo + 3 * (G + i), r->lo + 3 * list[i], 3 * sizeof(double)); memcpy(q.hi + 3 * (G + i), r->hi + 3 * list[i], 3 * sizeof(double));
    }
    for (i = G - 1; i >= 1; --i) {
        int d;
        for (d = 0; d < 3; ++d) {
            q.lo[3 * i + d] = fmin(q.lo[6 * i + d], q.lo[6 * i + 3 + d]); q.hi[3 * i + d] = fmax(q.hi[6 * i + d], q.hi[6 * i + 3 + d]);
        }
    }
    free(list);
    return q;
}
/* the steps of group g's walk of the LET l */
static size_t let_steps(const let *l, const groups *q, size_t g) {
    const double *lo = q->lo + 3 * (q->G + g), *hi = q->hi + 3 * (q->G + g);
    size_t cur = 0, steps = 0;
    while (cur < l->count) {
        ++steps;
        if (l->w[cur] < 0 || (l->skip[cur] > cur + 1 && box_d2(lo, hi, l->c + 3 * cur) > l->w[cur])) cur = l->skip[cur];
        else if (l->skip[cur] == cur + 1) cur = l->skip[cur];
        else ++cur;
    }
    return steps;
}
/* receiver j's groups over the LETs of every other domain: groups, LET nodes received, steps
   a group (mean, largest), the largest's extent against the domain's */
static void walk_costs(const tree *t, int D, int j) {
    groups q = gpu_groups(&t[j]);
    size_t g, nodes = 0, worst = 0, wg = 0;
    double total = 0;
    int k;
    let l[16];
    for (k = 0; k < D; ++k) if (k != j) { l[k] = make_let(&t[k], &q); nodes += l[k].count; }
    for (g = 0; g < q.G; ++g) {
        size_t steps = 0;
        for (k = 0; k < D; ++k) if (k != j) steps += let_steps(&l[k], &q, g);
        total += (double)steps;
        if (steps > worst) { worst = steps; wg = g; }
    }
    printf("| %d | %lu | %lu | %lu | %.0f | %lu | %.1f | %.3g / %.3g |\n", j, (unsigned long)t[j].n, (unsigned long)q.G, (unsigned long)nodes,
           total / (double)q.G, (unsigned long)worst, (double)worst / (total / (double)q.G),
           fmax(fmax(q.hi[3 * (q.G + wg)] - q.lo[3 * (q.G + wg)], q.hi[3 * (q.G + wg) + 1] - q.lo[3 * (q.G + wg) + 1]),
                q.hi[3 * (q.G + wg) + 2] - q.lo[3 * (q.G + wg) + 2]), ext(&t[j], 1));
    for (k = 0; k < D; ++k) if (k != j) { free(l[k].c); free(l[k].m); free(l[k].w); free(l[k].skip); }
    free(q.lo); free(q.hi);
}

/* ---- the energy check of tests/cuda_multi.c emulated (monopoles: this emulation has no
   quadrupoles): a galaxy collision of 1000 bodies, leapfrog dt 2^-8 to t = 0.5, theta 0.5,
   softening 0.02, every body's force the sum of the GPU group walks (the GPU's groups, whole
   trees: what the LETs give) of the D domains' trees. The domains: the global Hilbert order cut
   into D ranges of equal counts at every step (moving), the first step's members kept (frozen),
   or the cuts moved by up to `jitter` of a domain at random every step (splitters set from
   noisy walk times). D = 1 is one GPU's group walk. */
static void free_tree(tree *t) {
    free(t->c); free(t->lo); free(t->hi); free(t->m); free(t->crit2); free(t->cnt); free(t->body); free(t->qd);
}
/* the leaves of receiver node i (all heap nodes under it at or past n) */
static void leaves_of(const tree *r, size_t i, size_t *out, size_t *k) {
    if (i >= r->n) { out[(*k)++] = i; return; }
    leaves_of(r, 2 * i, out, k); leaves_of(r, 2 * i + 1, out, k);
}
/* G = 1 accelerations of every body of s: the group walk of each domain tree for each group */
static int quad_;   /* dd_forces: accepted nodes with their quadrupoles */
static void dd_forces(const nbody_system *s, const size_t *dom, int D, double theta, double eps2, double *ax, double *ay, double *az) {
    size_t n = s->n, i, *idx = (size_t *)malloc(n * sizeof *idx), start[17], leaf[64];
    tree t[16];
    int k, j;
    for (i = 0; i < n; ++i) idx[i] = i;
    hilbert_sort(s, idx, n);
    {   /* stable partition by domain, each range in the global order, then its own tree */
        size_t *tmp = (size_t *)malloc(n * sizeof *tmp), q = 0;
        for (k = 0; k < D; ++k) {
            start[k] = q;
            for (i = 0; i < n; ++i) if (dom[idx[i]] == (size_t)k) tmp[q++] = idx[i];
        }
        start[D] = q;
        memcpy(idx, tmp, n * sizeof *idx);
        free(tmp);
    }
    for (k = 0; k < D; ++k) { hilbert_sort(s, idx + start[k], start[k + 1] - start[k]); build(&t[k], s, idx + start[k], start[k + 1] - start[k], theta); }
    for (i = 0; i < n; ++i) ax[i] = ay[i] = az[i] = 0;
    for (j = 0; j < D; ++j) {
        groups q = gpu_groups(&t[j]);
        size_t g, gi, nl;
        size_t *gnode = (size_t *)malloc(q.G * sizeof *gnode), G = 0;
        for (i = 1; i < 2 * t[j].n; ++i) {   /* the same selection as gpu_groups, for the nodes */
            int ok = t[j].cnt[i] <= 64 && !gsplit(&t[j], i);
            size_t jj;
            for (jj = i; ok && jj > 1 && t[j].cnt[jj / 2] <= 64; jj /= 2) ok = gsplit(&t[j], jj / 2);
            if (ok) gnode[G++] = i;
        }
        for (g = 0; g < G; ++g) {
            const double *lo = q.lo + 3 * (q.G + g), *hi = q.hi + 3 * (q.G + g);
            nl = 0;
            leaves_of(&t[j], gnode[g], leaf, &nl);
            for (k = 0; k < D; ++k) {
                const tree *sk = &t[k];
                size_t cur = 1;
                do {
                    const double *c = sk->c + 3 * cur;
                    if (cur < sk->n && box_d2(lo, hi, c) > sk->crit2[cur]) {
                        for (gi = 0; gi < nl; ++gi) {
                            size_t b = t[j].body[leaf[gi]];
                            double dx = c[0] - s->x[b], dy = c[1] - s->y[b], dz = c[2] - s->z[b], r2 = dx * dx + dy * dy + dz * dz + eps2;
                            if (quad_) {
                                const double *q = sk->qd[cur];
                                double yy = 1 / sqrt(r2), y2 = yy * yy, h3 = yy * y2, h5 = h3 * y2, h7 = h5 * y2;
                                nbody__quad_add(q[0], q[1], q[2], q[3], q[4], q[5], q[6], sk->m[cur] * h3, h5, h7, dx, dy, dz, &ax[b], &ay[b], &az[b]);
                            } else {
                                double w = sk->m[cur] / (r2 * sqrt(r2));
                                ax[b] += w * dx; ay[b] += w * dy; az[b] += w * dz;
                            }
                        }
                        cur = nbody__heap_skip(cur);
                    } else if (cur >= sk->n) {
                        for (gi = 0; gi < nl; ++gi) {
                            size_t b = t[j].body[leaf[gi]];
                            double dx = c[0] - s->x[b], dy = c[1] - s->y[b], dz = c[2] - s->z[b], d2 = dx * dx + dy * dy + dz * dz;
                            if (d2 > 0) {
                                double r2 = d2 + eps2, w = sk->m[cur] / (r2 * sqrt(r2));
                                ax[b] += w * dx; ay[b] += w * dy; az[b] += w * dz;
                            }
                        }
                        cur = nbody__heap_skip(cur);
                    } else {
                        cur = 2 * cur;
                    }
                } while (cur != 1);
            }
        }
        free(gnode); free(q.lo); free(q.hi);
    }
    for (k = 0; k < D; ++k) free_tree(&t[k]);
    free(idx);
}
/* domains of equal counts along the global Hilbert order, the cuts moved by up to jitter of a domain */
static void cut_domains(const nbody_system *s, int D, double jitter, size_t *dom) {
    size_t n = s->n, i, *idx = (size_t *)malloc(n * sizeof *idx), cut[17];
    int k;
    for (i = 0; i < n; ++i) idx[i] = i;
    hilbert_sort(s, idx, n);
    cut[0] = 0; cut[D] = n;
    for (k = 1; k < D; ++k) {
        double u = jitter * (2.0 * rand() / RAND_MAX - 1) * (double)n / D;
        cut[k] = (size_t)((double)n * k / D + u);
        if (cut[k] < cut[k - 1]) cut[k] = cut[k - 1];
    }
    for (k = 0; k < D; ++k) for (i = cut[k]; i < cut[k + 1]; ++i) dom[idx[i]] = (size_t)k;
    free(idx);
}
/* |dE/E| of the collision on D domains: mode 0 moving, 1 frozen, 2 moving with jitter */
static double dd_energy(int D, int mode, double jitter, int seed) {
    nbody_system s = NBODY_ZERO;
    nbody_invariants i0, i1;
    double eps = 0.02, dt = 1.0 / 256, *a = NULL;
    size_t n, i, *dom;
    int step;
    srand(7);
    nbody_ic_collision(&s, 1000, (nbody_real)0.3, 3, (unsigned long)seed);
    n = s.n;
    a = (double *)malloc(3 * n * sizeof *a); dom = (size_t *)malloc(n * sizeof *dom);
    nbody_measure(&s, 1, (nbody_real)eps, &i0);
    cut_domains(&s, D, 0, dom);
    dd_forces(&s, dom, D, 0.5, eps * eps, a, a + n, a + 2 * n);
    for (step = 0; step < 128; ++step) {
        for (i = 0; i < n; ++i) {
            s.vx[i] += (nbody_real)(0.5 * dt * a[i]); s.vy[i] += (nbody_real)(0.5 * dt * a[n + i]); s.vz[i] += (nbody_real)(0.5 * dt * a[2 * n + i]);
            s.x[i] += (nbody_real)(dt * s.vx[i]); s.y[i] += (nbody_real)(dt * s.vy[i]); s.z[i] += (nbody_real)(dt * s.vz[i]);
        }
        if (mode != 1) cut_domains(&s, D, mode == 2 ? jitter : 0, dom);
        dd_forces(&s, dom, D, 0.5, eps * eps, a, a + n, a + 2 * n);
        for (i = 0; i < n; ++i) {
            s.vx[i] += (nbody_real)(0.5 * dt * a[i]); s.vy[i] += (nbody_real)(0.5 * dt * a[n + i]); s.vz[i] += (nbody_real)(0.5 * dt * a[2 * n + i]);
        }
    }
    s.t = (nbody_real)(128 * dt);
    nbody_measure(&s, 1, (nbody_real)eps, &i1);
    free(a); free(dom);
    nbody_system_free(&s);
    return fabs((double)(i1.energy - i0.energy) / (double)i0.energy);
}

int main(int argc, char **argv) {
    int lg = argc > 1 ? atoi(argv[1]) : 20, D = argc > 2 ? atoi(argv[2]) : 2, k, j, li, ok = 1;
    double theta = argc > 3 ? atof(argv[3]) : 0.5, bytes = 0;
    int levels[16] = {4, 8, 12, -1}, nl = 4;
    size_t n = (size_t)1 << lg, i, *idx = (size_t *)malloc(n * sizeof *idx);
    nbody_system s = NBODY_ZERO;
    tree t[16];
    if (argc > 4) {
        for (nl = 0; nl + 4 < argc && nl < 15; ++nl) levels[nl] = atoi(argv[nl + 4]);
        levels[nl++] = -1;
    }
    if (D < 2 || D > 16 || nbody_ic_plummer(&s, n, 1) != NBODY_OK) return 1;
    for (i = 0; i < n; ++i) idx[i] = i;
    hilbert_sort(&s, idx, n);      /* the domains: equal counts along the global curve */
    for (k = 0; k < D; ++k) {
        size_t a = n * (size_t)k / (size_t)D, b = n * (size_t)(k + 1) / (size_t)D;
        hilbert_sort(&s, idx + a, b - a);   /* each domain's tree: keys over its own box */
        build(&t[k], &s, idx + a, b - a, theta);
    }
    if (getenv("EMULATE_ENERGY")) {   /* the energy check on 1 .. 4 domains: moving, frozen, jittered cuts */
        double jit = atof(getenv("EMULATE_ENERGY"));
        printf("| domains | cuts moving with the bodies | frozen (the first step's members) | moving, jittered by up to %.2f of a domain |\n", jit);
        printf("|---:|---:|---:|---:|\n");
        for (k = 1; k <= 4; ++k) printf("| %d | %.3g | %.3g | %.3g |\n", k, dd_energy(k, 0, 0, 11), dd_energy(k, 1, 0, 11), dd_energy(k, 2, jit, 11));
        return 0;
    }
    if (getenv("EMULATE_ENERGY_QUAD")) {   /* the same with quadrupoles, collisions of five seeds: 1 cuts moving, 2 frozen */
        int mode = atoi(getenv("EMULATE_ENERGY_QUAD")) == 2;
        quad_ = 1;
        printf("| domains | seed 11 | 12 | 13 | 14 | 15 |\n|---:|---:|---:|---:|---:|---:|\n");
        for (k = 1; k <= 4; ++k) {
            printf("| %d |", k);
            for (j = 11; j <= 15; ++j) { printf(" %.3g |", dd_energy(k, mode, 0, j)); fflush(stdout); }
            printf("\n");
        }
        return 0;
    }
    if (getenv("EMULATE_COSTS")) {   /* the LET walk's steps a GPU group (no equality check: fast) */
        printf("| receiver | bodies | groups | LET nodes received | steps a group, mean | largest | largest / mean | its extent / the domain's |\n");
        printf("|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (j = 0; j < D; ++j) walk_costs(t, D, j);
        return 0;
    }
    printf("| N | domains | theta | receiver seen as | LET nodes sent, share of the sender's tree (each pair) | MB (float, monopoles) |\n");
    printf("|---:|---:|---:|---|---|---:|\n");
    for (li = 0; li < nl; ++li) {
        bytes = 0;
        printf("| 2^%d | %d | %.2f | %s", lg, D, theta, levels[li] < 0 ? "its bodies" : "");
        if (levels[li] >= 0) printf("%d boxes", 1 << levels[li]);
        printf(" | ");
        for (k = 0; k < D; ++k)
            for (j = 0; j < D; ++j) {
                size_t c;
                if (j == k) continue;
                c = kept(&t[k], 1, &t[j], levels[li]);
                bytes += 24.0 * (double)c;
                printf("%d->%d %.1f%% ", k, j, 100.0 * (double)c / (double)(2 * t[k].n - 1));
            }
        printf("| %.1f |\n", bytes / 1e6);
        fflush(stdout);
    }
    bytes = 0;
    printf("| 2^%d | %d | %.2f | its walk's groups of 32 (the GPU's kernels emulated) | ", lg, D, theta);
    for (k = 0; k < D; ++k)
        for (j = 0; j < D; ++j) {
            size_t c;
            if (j == k) continue;
            ok = check_groups(&t[k], &t[j], &c) && ok;
            bytes += 24.0 * (double)c;
            printf("%d->%d %.1f%% ", k, j, 100.0 * (double)c / (double)(2 * t[k].n - 1));
        }
    printf("| %.1f |\n\nthe walks of the LETs made for the groups %s the group walks of the senders' whole trees, every body to the bit\n",
           bytes / 1e6, ok ? "equal" : "DIFFER FROM");
    return !ok;
}
