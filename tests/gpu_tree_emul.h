/* gpu_tree_emul.h - the GPU trees' build and monopole walk (nbody_cuda.cu, kernels.cl)
   emulated on the CPU with the same shared formulas of nbody.h (nbody__tree_key,
   nbody__tree_inner, NBODY__TREE_CRIT, nbody__heap_skip / next): bodies sorted stably by key,
   leaves in depth-first order, internal nodes from their children, the stackless walk with
   single-body leaves. The same tree as the GPU engines' (the same keys, hence the same
   topology); node values and sums differ from a device's only by its rounding (fused
   multiply-adds, its reciprocal square root). Include after nbody.h (NBODY_IMPLEMENTATION). */
#ifndef GPU_TREE_EMUL_H
#define GPU_TREE_EMUL_H
#include <stdlib.h>
#include <string.h>

typedef struct gpu_tree_emul_kv { NBODY__U64 key; size_t body; } gpu_tree_emul_kv;

static int gpu_tree_emul_cmp(const void *a, const void *b) {
    const gpu_tree_emul_kv *p = (const gpu_tree_emul_kv *)a, *q = (const gpu_tree_emul_kv *)b;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return (p->body > q->body) - (p->body < q->body);   /* stable: ties in body order */
}

/* accelerations a (3n: x, y, z blocks; G = 1) of the n bodies of s from the tree of the first
   nt (test particles [nt, n) walk it), softening eps, opening angle theta; 0 on no memory */
static int gpu_tree_emul_accel(const nbody_system *s, size_t nt, nbody_real eps, nbody_real theta, nbody_real *a) {
    size_t n = s->n, nodes = 2 * nt, P = 1, i, k, L, depth = 0;
    gpu_tree_emul_kv *kv = (gpu_tree_emul_kv *)malloc(nt * sizeof *kv);
    nbody_real *v = (nbody_real *)malloc(nodes * 13 * sizeof(nbody_real));   /* cx cy cz crit2 m lo(3) hi(3) rad b2 */
    size_t *body = (size_t *)malloc(nodes * sizeof(size_t));
    nbody_real lo[3], hi[3], eps2 = eps * eps, it = 1 / theta;
    nbody_real *cx, *cy, *cz, *crit2, *m, *bx0, *by0, *bz0, *bx1, *by1, *bz1, *rad, *b2;
    if (!kv || !v || !body) { free(kv); free(v); free(body); return 0; }
    cx = v; cy = cx + nodes; cz = cy + nodes; crit2 = cz + nodes; m = crit2 + nodes; bx0 = m + nodes; by0 = bx0 + nodes;
    bz0 = by0 + nodes; bx1 = bz0 + nodes; by1 = bx1 + nodes; bz1 = by1 + nodes; rad = bz1 + nodes; b2 = rad + nodes;
    lo[0] = hi[0] = s->x[0]; lo[1] = hi[1] = s->y[0]; lo[2] = hi[2] = s->z[0];
    for (i = 1; i < nt; ++i) {
        nbody_real p[3];
        p[0] = s->x[i]; p[1] = s->y[i]; p[2] = s->z[i];
        for (k = 0; k < 3; ++k) { if (p[k] < lo[k]) lo[k] = p[k]; if (p[k] > hi[k]) hi[k] = p[k]; }
    }
    for (i = 0; i < nt; ++i) {
        kv[i].key = nbody__tree_key(s->x[i], s->y[i], s->z[i], lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
        kv[i].body = i;
    }
    qsort(kv, nt, sizeof *kv, gpu_tree_emul_cmp);
    while (P * 2 <= 2 * nt - 1) { P *= 2; depth++; }
    for (k = 0; k < nt; ++k) {   /* leaf nt + k: the body at depth-first position p */
        size_t j = nt + k, p = j >= P ? j - P : (2 * nt - P) + (j - nt), b = kv[p].body;
        cx[j] = bx0[j] = bx1[j] = s->x[b]; cy[j] = by0[j] = by1[j] = s->y[b]; cz[j] = bz0[j] = bz1[j] = s->z[b];
        crit2[j] = 0; m[j] = s->m[b]; rad[j] = 0; b2[j] = 0; body[j] = b;
    }
    for (L = depth; L-- > 0;) {
        size_t i0 = (size_t)1 << L, i1 = ((size_t)2 << L) < nt ? ((size_t)2 << L) : nt;
        for (i = i0; i < i1; ++i) {
            size_t l = 2 * i, r = l + 1;
            nbody_real crit;
            bx0[i] = NBODY__FMIN(bx0[l], bx0[r]); by0[i] = NBODY__FMIN(by0[l], by0[r]); bz0[i] = NBODY__FMIN(bz0[l], bz0[r]);
            bx1[i] = NBODY__FMAX(bx1[l], bx1[r]); by1[i] = NBODY__FMAX(by1[l], by1[r]); bz1[i] = NBODY__FMAX(bz1[l], bz1[r]);
            crit = nbody__tree_inner(cx[l], cy[l], cz[l], m[l], rad[l], b2[l], cx[r], cy[r], cz[r], m[r], rad[r], b2[r], bx0[i], by0[i],
                                     bz0[i], bx1[i], by1[i], bz1[i], it, 2 * i >= nt, &cx[i], &cy[i], &cz[i], &rad[i], &b2[i]);
            crit2[i] = crit * crit;
            m[i] = m[l] + m[r];
        }
    }
    for (i = 0; i < n; ++i) {   /* kernels.cl's nbody_tree walk */
        nbody_real xi = s->x[i], yi = s->y[i], zi = s->z[i], ax = 0, ay = 0, az = 0;
        size_t c = 1;
        do {
            nbody_real dx = cx[c] - xi, dy = cy[c] - yi, dz = cz[c] - zi;
            if (dx * dx + dy * dy + dz * dz > crit2[c] || (c >= nt && body[c] != i)) {
                nbody__pair_add(dx, dy, dz, m[c], eps2, &ax, &ay, &az);
                c = nbody__heap_skip(c);
            } else {
                c = nbody__heap_next(c, nodes);
            }
        } while (c != 1);
        a[i] = ax; a[n + i] = ay; a[2 * n + i] = az;
    }
    free(kv); free(v); free(body);
    return 1;
}
#endif
