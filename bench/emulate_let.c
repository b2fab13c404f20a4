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
   Usage: emulate_let [log2 N (20)] [D (2)] [theta (0.5)] [level L ... (4 8 12); -1: its bodies (always last)] */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

typedef struct {
    size_t n;                      /* leaves; nodes 1 .. 2n - 1 */
    double *c, *m, *lo, *hi, *crit2;   /* 3 a node for c, lo, hi */
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
    {
        double *rad = (double *)calloc(2 * n, sizeof(double)), *b2 = (double *)calloc(2 * n, sizeof(double));
        for (i = n; i < 2 * n; ++i) {
            size_t p = i >= P ? i - P : (2 * n - P) + (i - n), b = idx[p];
            t->c[3 * i] = t->lo[3 * i] = t->hi[3 * i] = s->x[b];
            t->c[3 * i + 1] = t->lo[3 * i + 1] = t->hi[3 * i + 1] = s->y[b];
            t->c[3 * i + 2] = t->lo[3 * i + 2] = t->hi[3 * i + 2] = s->z[b];
            t->m[i] = s->m[b];
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
        }
        free(rad); free(b2);
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

int main(int argc, char **argv) {
    int lg = argc > 1 ? atoi(argv[1]) : 20, D = argc > 2 ? atoi(argv[2]) : 2, k, j, li;
    double theta = argc > 3 ? atof(argv[3]) : 0.5;
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
    printf("| N | domains | theta | receiver seen as | LET nodes sent, share of the sender's tree (each pair) | MB (float, monopoles) |\n");
    printf("|---:|---:|---:|---|---|---:|\n");
    for (li = 0; li < nl; ++li) {
        double bytes = 0;
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
    return 0;
}
