/* kernels.cl - the OpenCL kernels of nbody.h. This file is the source of truth: nbody_cl.h
   carries it as an embedded byte array that `make embed` regenerates (tests/embedded_check.sh
   fails while the copy is stale), after nbody.h's block of shared formulas (BEGIN SHARED
   FORMULAS: the pair interaction's parts, nbody__compensated_add, nbody__heap_skip/next),
   which also enables cl_khr_fp64 with NBODY_CL_FP64.

   Written once for both precisions. The host builds it with
       -DNBODY_CL_REAL=double|float   the scalar type, equal to the host's nbody_real
       -DNBODY_CL_FP64=1              with double (the host checked cl_khr_fp64)
       -DNBODY_CL_HAS_FP64=1          the device has cl_khr_fp64 (the tree key's arithmetic)
       -DNBODY_CL_TILE=T              work-group size of the dense force kernel
       -DNBODY_CL_GROUP=G             work-group size of the reductions (a power of two)
   State layout as on the host: y = [x(n) y(n) z(n) vx(n) vy(n) vz(n)], f(y) = [v, a(x)].
   Plain OpenCL C 1.1/1.2 (helpers not static, clz rather than ctz) so NVIDIA's driver and
   PoCL take the same text. */
typedef NBODY_CL_REAL real;
#define NBODY_CL_CAT_(a, b) a##b
#define NBODY_CL_CAT(a, b) NBODY_CL_CAT_(a, b)
typedef NBODY_CL_CAT(NBODY_CL_REAL, 4) real4;   /* float4 / double4: x, y, z, mass */

/* ---- forces -------------------------------------------------------------------------
   a_i = G sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2), Plummer softening:
   12 floating-point operations and one reciprocal square root per pair: mad is the fused
   multiply-add where the device has one (fma() would be emulated where it has not). */
typedef struct { real x, y, z; } nbody_cl_vec;

/* m r2^(-3/2) from the device's reciprocal square root */
real nbody_cl_weight(real m, real r2) {
    real inv = rsqrt(r2);
    return (m * inv) * (inv * inv);
}

/* a += the pull of mass mj at (xj, yj, zj) on a body at (xi, yi, zi) */
void nbody_cl_pair(nbody_cl_vec *a, real xi, real yi, real zi, real xj, real yj, real zj, real mj, real eps2) {
    real dx = xj - xi, dy = yj - yi, dz = zj - zi;
    nbody__pull(nbody_cl_weight(mj, nbody__soft_r2_fused(dx, dy, dz, eps2)), dx, dy, dz, &a->x, &a->y, &a->z);
}

/* f = [v, G a]: the velocity half is a copy, the acceleration half the sums */
void nbody_cl_store(__global const real *restrict y, __global real *restrict f, uint n, uint i,
                           nbody_cl_vec a, real G) {
    f[i] = y[3 * n + i]; f[n + i] = y[4 * n + i]; f[2 * n + i] = y[5 * n + i];
    f[3 * n + i] = G * a.x; f[4 * n + i] = G * a.y; f[5 * n + i] = G * a.z;
}

/* Dense forces with local-memory tiles (the article's ComputeBlockLocal, the CUDA sample's
   design): each work-group stages NBODY_CL_TILE sources at a time in local memory and every
   work-item sums them against its own body. Any n: the last tile is partial and work-items
   past n only help to load. Tiles are aligned with work-groups, so all self pairs of a group
   lie in the tile whose index is the group's: only that tile and the partial last one take
   the checked loop (self excluded by index, as on the CPU); the rest run branch-free.
   Each tile's terms are summed apart and the tile sums added with Kahan's compensation: a
   plain running sum over all n sources loses about sqrt(n) roundings (float, n = 2^20: a
   median relative error of 1e-5), this one about those of one tile's sum, whatever n, for
   three compensated additions per tile. */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_TILE, 1, 1)))
void nbody_dense(__global const real *restrict y, __global const real *restrict m, __global real *restrict f,
                 uint n, real G, real eps2, uint ns) {  /* sources: bodies [0, ns) (test particles after) */
    __local real4 tile[NBODY_CL_TILE];     /* one wide local load per interaction */
    uint i = get_global_id(0), lid = get_local_id(0), group = i / NBODY_CL_TILE, t, k;  /* the group's tile: */
    /* a device's slice starts at a global offset that is a multiple of the tile */
    uint ntiles = (ns + NBODY_CL_TILE - 1) / NBODY_CL_TILE;
    uint me = i < n ? i : n - 1;
    real xi = y[me], yi = y[n + me], zi = y[2 * n + me];
    nbody_cl_vec a = {0, 0, 0}, comp = {0, 0, 0};
    for (t = 0; t < ntiles; ++t) {
        uint j = t * NBODY_CL_TILE + lid, count = min((uint)NBODY_CL_TILE, ns - t * NBODY_CL_TILE);
        nbody_cl_vec s = {0, 0, 0};
        tile[lid] = j < ns ? (real4)(y[j], y[n + j], y[2 * n + j], m[j]) : (real4)(0, 0, 0, 0);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t == group || count < NBODY_CL_TILE) {
            for (k = 0; k < count; ++k)
                if (k != lid || t != group) nbody_cl_pair(&s, xi, yi, zi, tile[k].x, tile[k].y, tile[k].z, tile[k].w, eps2);
        } else {
#pragma unroll 8
            for (k = 0; k < NBODY_CL_TILE; ++k) {
                real4 p = tile[k];
                nbody_cl_pair(&s, xi, yi, zi, p.x, p.y, p.z, p.w, eps2);
            }
        }
        a.x = nbody__compensated_add(a.x, s.x, &comp.x);
        a.y = nbody__compensated_add(a.y, s.y, &comp.y);
        a.z = nbody__compensated_add(a.z, s.z, &comp.z);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < n) nbody_cl_store(y, f, n, i, a, G);
}

/* ---- the symmetric dense kernel: Newton's third law, each pair of bodies computed once ----
   The sources [0, ns) fall in T tiles of S = B x NBODY_CL_SYM_R bodies (B the work-group
   size, a runtime value). A force evaluation is a few launches in a queue that runs them in
   order, so no work-group ever waits for another:
   - nbody_dense_sym_first: work-group I sums, one-sided, tile I on itself (the self pair
     excluded by index) and, for even T, the opposite tile I + T/2 (the pairs that the rounds
     below would meet twice), into acc[I] with Kahan's compensation;
   - nbody_dense_sym, rounds q = 1 .. (T-1)/2 of a round-robin tournament, K rounds a launch:
     in round q work-group I meets tile J = (I + q) mod T, every pair of the two tiles once.
     Over the rounds every pair of distinct tiles meets exactly once, and in each round every
     tile is an I once and a J once: the actions on I and the reactions on J go to two slots
     of 3n reals of that round, and the T x K work-groups of a launch are independent (so a
     launch is many waves of work-groups: little time lost to its last, partial wave);
   - nbody_dense_sym_sum then adds each round's two slots to acc in round order, and after
     the last launch writes f.
   So every body's sum is formed in one fixed order: the same bits on every run. Memory:
   6n reals (acc and its compensation) and 2K x 3n (the slots).
   Inside a pair of tiles (register blocking, no sub-group operations): work-item w holds R
   bodies of I in registers (w, B + w, 2B + w, ...) with their actions, and J is in local
   memory as B blocks of R bodies (block b: b, B + b, ...) with a reaction sum per body. In
   step s = 0 .. B-1 work-item w takes block (w + s) mod B: the B work-items hold B different
   blocks, so each adds R x R pairs to both sides, the reactions into the local sums, without
   a race; a barrier ends the step. Two local loads and a store per R pairs: with equal masses
   a pair costs 14 operations, 0.75 for the partial sums below and one reciprocal square root
   for two interactions, the one-sided kernel 12 and one for one. Bodies past ns (the partial
   last tile) have mass 0 and their pairs weight 0 (a select, in the tiles that have them). */
#ifndef NBODY_CL_SYM_R
#define NBODY_CL_SYM_R 8
#endif
/* the helpers that take the held bodies' private arrays are inlined at every call, so the
   arrays stay in registers (a compiler that kept the calls would pass them through memory) */
#if defined(__has_attribute)
#if __has_attribute(always_inline)
#define NBODY_CL_SYM_INLINE __attribute__((always_inline))
#endif
#endif
#ifndef NBODY_CL_SYM_INLINE
#define NBODY_CL_SYM_INLINE
#endif

/* the R bodies of tile base (ns sources) held by work-item lid of B: positions, masses (0
   past ns, those positions a copy of body ns - 1) */
NBODY_CL_SYM_INLINE void nbody_cl_sym_hold(__global const real *restrict y, __global const real *restrict m, uint n, uint ns, uint base,
                       uint B, uint lid, real *px, real *py, real *pz, real *pm) {
    uint r;
#pragma unroll
    for (r = 0; r < NBODY_CL_SYM_R; ++r) {
        uint i = base + r * B + lid, c = i < ns ? i : ns - 1;
        px[r] = y[c]; py[r] = y[n + c]; pz[r] = y[2 * n + c]; pm[r] = i < ns ? m[c] : 0;
    }
}

/* tile base's S bodies into local memory: (x, y, z, m), m = 1 when uni (every mass equal:
   the host scales the sums), mass 0 past ns */
void nbody_cl_sym_stage(__global const real *restrict y, __global const real *restrict m, uint n, uint ns, uint base,
                        uint S, __local real4 *jb, int uni) {
    uint k;
    for (k = get_local_id(0); k < S; k += get_local_size(0)) {
        uint j = base + k, c = j < ns ? j : ns - 1;
        jb[k] = (real4)(y[c], y[n + c], y[2 * n + c], j < ns ? (uni ? 1 : m[c]) : 0);
    }
}

/* acc[i] (compensation comp[i]) += v, component-wise over the 3 n-strided rows */
void nbody_cl_sym_add(__global real *acc, __global real *comp, uint n, uint i, real vx, real vy, real vz) {
    real c;
    c = comp[i]; acc[i] = nbody__compensated_add(acc[i], vx, &c); comp[i] = c;
    c = comp[n + i]; acc[n + i] = nbody__compensated_add(acc[n + i], vy, &c); comp[n + i] = c;
    c = comp[2 * n + i]; acc[2 * n + i] = nbody__compensated_add(acc[2 * n + i], vz, &c); comp[2 * n + i] = c;
}

/* round 0: acc = tile I on itself, plus the opposite tile for even T; comp from 0 */
__kernel void nbody_dense_sym_first(__global const real *restrict y, __global const real *restrict m,
                                    __global real *restrict acc, __local real4 *jb, uint n, uint ns, uint ntiles, real eps2, int uni) {
    const uint B = get_local_size(0), lid = get_local_id(0), S = B * NBODY_CL_SYM_R, I = get_group_id(0);
    real px[NBODY_CL_SYM_R], py[NBODY_CL_SYM_R], pz[NBODY_CL_SYM_R], pm[NBODY_CL_SYM_R];
    nbody_cl_vec a[NBODY_CL_SYM_R], comp[NBODY_CL_SYM_R];
    uint r, k, k0, pass, passes = ntiles > 1 && ntiles % 2 == 0 ? 2 : 1;
    nbody_cl_sym_hold(y, m, n, ns, I * S, B, lid, px, py, pz, pm);
#pragma unroll
    for (r = 0; r < NBODY_CL_SYM_R; ++r) { a[r].x = a[r].y = a[r].z = 0; comp[r] = a[r]; }
    for (pass = 0; pass < passes; ++pass) {
        const uint J = pass ? (I + ntiles / 2) % ntiles : I, count = min(S, ns - J * S);
        nbody_cl_sym_stage(y, m, n, ns, J * S, S, jb, uni);
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (r = 0; r < NBODY_CL_SYM_R; ++r) {
            const uint own = pass ? S : r * B + lid;       /* the self pair's index in the tile */
            nbody_cl_vec s = {0, 0, 0};
            for (k0 = 0; k0 < count; k0 += NBODY_CL_SYM_R) {   /* partial sums of R terms, as in the rounds */
                nbody_cl_vec t = {0, 0, 0};
                for (k = k0; k < k0 + NBODY_CL_SYM_R && k < count; ++k) {
                    real4 p = jb[k];
                    real dx = p.x - px[r], dy = p.y - py[r], dz = p.z - pz[r];
                    real w = nbody_cl_weight(p.w, nbody__soft_r2_fused(dx, dy, dz, eps2));
                    w = k != own ? w : 0;
                    nbody__pull(w, dx, dy, dz, &t.x, &t.y, &t.z);
                }
                s.x += t.x; s.y += t.y; s.z += t.z;
            }
            a[r].x = nbody__compensated_add(a[r].x, s.x, &comp[r].x);
            a[r].y = nbody__compensated_add(a[r].y, s.y, &comp[r].y);
            a[r].z = nbody__compensated_add(a[r].z, s.z, &comp[r].z);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (r = 0; r < NBODY_CL_SYM_R; ++r) {
        uint i = I * S + r * B + lid;
        if (i >= ns) continue;
        acc[i] = a[r].x; acc[n + i] = a[r].y; acc[2 * n + i] = a[r].z;
        acc[3 * n + i] = comp[r].x; acc[4 * n + i] = comp[r].y; acc[5 * n + i] = comp[r].z;
    }
}

/* the R x R pairs of the held bodies and block b of the staged tile, both ways; EDGE: a pair
   with a body past the sources (held index >= ci, staged index >= cj) weighs 0; UNI: every
   mass is equal, the sums are of r2^(-3/2) d (the host scales them). Each side's R
   terms are summed apart before they join the running sums (the action's over the block, the
   reaction's over the held bodies): those sums then take S / R terms instead of S, which
   halves the float error of a tile pair for 3 additions per R pairs a side. */
NBODY_CL_SYM_INLINE void nbody_cl_sym_block(__local const real4 *jb, __local real4 *jr, uint B, uint b, uint lid, int edge, int uni, uint ci, uint cj,
                        const real *px, const real *py, const real *pz, const real *pm,
                        real *ax, real *ay, real *az, real eps2) {
    real tx[NBODY_CL_SYM_R], ty[NBODY_CL_SYM_R], tz[NBODY_CL_SYM_R];
    uint jj, r;
#pragma unroll
    for (r = 0; r < NBODY_CL_SYM_R; ++r) tx[r] = ty[r] = tz[r] = 0;
#pragma unroll
    for (jj = 0; jj < NBODY_CL_SYM_R; ++jj) {
        const uint k = jj * B + b;
        const real4 p = jb[k];
        real4 v;
        real ux = 0, uy = 0, uz = 0;
#pragma unroll
        for (r = 0; r < NBODY_CL_SYM_R; ++r) {
            real dx = p.x - px[r], dy = p.y - py[r], dz = p.z - pz[r];
            real w = nbody_cl_weight(1, nbody__soft_r2_fused(dx, dy, dz, eps2)), wi, wj;   /* r^-3 */
            if (edge) w = r * B + lid < ci && k < cj ? w : 0;
            wi = uni ? w : w * p.w; wj = uni ? w : w * pm[r];
            nbody__pull(wi, dx, dy, dz, &tx[r], &ty[r], &tz[r]);
            ux = mad(-wj, dx, ux); uy = mad(-wj, dy, uy); uz = mad(-wj, dz, uz);
        }
        v = jr[k];
        jr[k] = (real4)(v.x + ux, v.y + uy, v.z + uz, 0);
    }
#pragma unroll
    for (r = 0; r < NBODY_CL_SYM_R; ++r) { ax[r] += tx[r]; ay[r] += ty[r]; az[r] += tz[r]; }
}

/* rounds q0 .. q0 + count - 1 (q0 >= 1), all independent: work-group g takes round
   q = q0 + t and tile I (g = t T + I) and meets tile J = (I + q) mod T, both ways. The actions
   on I go to pend slot t, the reactions on J to slot K + t (3n reals a slot): in each round
   every tile is an I once and a J once, so every body gets one value in each. */
__kernel void nbody_dense_sym(__global const real *restrict y, __global const real *restrict m, __global real *restrict pend,
                              __local real4 *jb, __local real4 *jr, uint n, uint ns, uint ntiles, uint q0, uint K,
                              real eps2, int uni) {
    const uint B = get_local_size(0), lid = get_local_id(0), S = B * NBODY_CL_SYM_R;
    const uint t = get_group_id(0) / ntiles, I = get_group_id(0) % ntiles, J = (I + q0 + t) % ntiles;
    const uint ci = min(S, ns - I * S), cj = min(S, ns - J * S);
    const int edge = ci < S || cj < S;
    __global real *act = pend + (size_t)t * 3 * n, *react = pend + (size_t)(K + t) * 3 * n;
    real px[NBODY_CL_SYM_R], py[NBODY_CL_SYM_R], pz[NBODY_CL_SYM_R], pm[NBODY_CL_SYM_R];
    real ax[NBODY_CL_SYM_R], ay[NBODY_CL_SYM_R], az[NBODY_CL_SYM_R];
    uint r, s, k;
    nbody_cl_sym_hold(y, m, n, ns, I * S, B, lid, px, py, pz, pm);
#pragma unroll
    for (r = 0; r < NBODY_CL_SYM_R; ++r) ax[r] = ay[r] = az[r] = 0;
    nbody_cl_sym_stage(y, m, n, ns, J * S, S, jb, uni);
    for (k = lid; k < S; k += B) jr[k] = (real4)(0, 0, 0, 0);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (s = 0; s < B; ++s) {
        uint b = lid + s < B ? lid + s : lid + s - B;
        if (uni && !edge) nbody_cl_sym_block(jb, jr, B, b, lid, 0, 1, S, S, px, py, pz, pm, ax, ay, az, eps2);
        else if (uni) nbody_cl_sym_block(jb, jr, B, b, lid, 1, 1, ci, cj, px, py, pz, pm, ax, ay, az, eps2);
        else if (!edge) nbody_cl_sym_block(jb, jr, B, b, lid, 0, 0, S, S, px, py, pz, pm, ax, ay, az, eps2);
        else nbody_cl_sym_block(jb, jr, B, b, lid, 1, 0, ci, cj, px, py, pz, pm, ax, ay, az, eps2);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (r = 0; r < NBODY_CL_SYM_R; ++r) {
        uint i = I * S + r * B + lid;
        if (i < ns) { act[i] = ax[r]; act[n + i] = ay[r]; act[2 * n + i] = az[r]; }
    }
    for (k = lid; k < cj; k += B) {
        uint j = J * S + k;
        react[j] = jr[k].x; react[n + j] = jr[k].y; react[2 * n + j] = jr[k].z;
    }
}

/* acc += the count rounds of pend (each round's action, then its reaction, compensated), in
   round order; store: then f = [v, G acc] for the sources */
__kernel void nbody_dense_sym_sum(__global const real *restrict y, __global real *restrict f, __global real *restrict acc,
                                  __global const real *restrict pend, uint n, uint ns, uint count, uint K, real G, int store) {
    uint i = get_global_id(0), t;
    nbody_cl_vec a;
    if (i >= ns) return;
    for (t = 0; t < count; ++t) {
        __global const real *act = pend + (size_t)t * 3 * n, *react = pend + (size_t)(K + t) * 3 * n;
        nbody_cl_sym_add(acc, acc + 3 * n, n, i, act[i], act[n + i], act[2 * n + i]);
        nbody_cl_sym_add(acc, acc + 3 * n, n, i, react[i], react[n + i], react[2 * n + i]);
    }
    if (!store) return;
    a.x = acc[i]; a.y = acc[n + i]; a.z = acc[2 * n + i];
    nbody_cl_store(y, f, n, i, a, G);
}

/* ---- the tree, built on the device every evaluation: the CUDA tree engine's build
   (nbody_cuda.cu), step for step, with nbody.h's shared formulas, so both engines build the
   same tree. The active bodies [0, nt) (test particles [nt, n) walk the tree, are not in it):
   1. their bounding box (nbody_tree_box: groups' partial boxes, then one group folds them);
      it also flags a position of any body that is NaN or Inf, and the walk then gives NaN;
   2. the key of each position in the box (nbody__tree_key: the 63-bit Hilbert key);
   3. a stable LSD radix sort of (key, body) pairs, NBODY_CL_RADIX_BITS a pass: each work-item
      counts the digits of its own run of keys in local memory, one work-group scans the
      groups' counts (digit-major: the offset of each digit in each group), and each
      work-item writes its run in order from its offset: ties keep body order, no atomics,
      the same permutation on every device (and the one CUB's stable sort gives);
   4. the leaves n .. 2n-1 of the heap in depth-first order of the sorted bodies (the bottom
      level [P, 2n) first, then [n, P), P = 2^floor(log2(2n - 1))): every subtree holds a
      contiguous run of the curve, balanced by count as the heap shape requires;
   5. the internal nodes level by level from the leaves (nbody__tree_inner: centre of mass,
      bounding radius, second moment, the critical distance of NBODY__TREE_CRIT). */
#define NBODY_CL_RADIX_BITS 4
#define NBODY_CL_RADIX (1 << NBODY_CL_RADIX_BITS)

/* the box reduction's fold of this work-group's values v (lo x y z, hi x y z, bad) into
   out[0..8) (out[7] = 0) */
void nbody_cl_box_fold(__local real *sh, real *v, __global real *out) {
    uint lid = get_local_id(0), s, k;
    for (k = 0; k < 7; ++k) sh[k * NBODY_CL_GROUP + lid] = v[k];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (s = NBODY_CL_GROUP / 2; s > 0; s >>= 1) {
        if (lid < s)
            for (k = 0; k < 7; ++k) {
                real a = sh[k * NBODY_CL_GROUP + lid], b = sh[k * NBODY_CL_GROUP + lid + s];
                sh[k * NBODY_CL_GROUP + lid] = k < 3 ? fmin(a, b) : fmax(a, b);
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        for (k = 0; k < 7; ++k) out[k] = sh[k * NBODY_CL_GROUP];
        out[7] = 0;
    }
}

/* stage 1: each group's box of the active bodies of the state y into partial[8 group ..],
   with the flag of a NaN or Inf position among all n bodies */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_GROUP, 1, 1)))
void nbody_tree_box(__global const real *y, uint n, uint nt, __global real *partial) {
    __local real sh[7 * NBODY_CL_GROUP];
    real v[7];
    uint i;
    v[0] = v[1] = v[2] = (real)INFINITY; v[3] = v[4] = v[5] = -(real)INFINITY; v[6] = 0;
    for (i = get_global_id(0); i < n; i += get_global_size(0)) {
        real x = y[i], yy = y[n + i], z = y[2 * n + i];
        if (!isfinite(x) || !isfinite(yy) || !isfinite(z)) v[6] = 1;
        else if (i < nt) {
            v[0] = fmin(v[0], x); v[1] = fmin(v[1], yy); v[2] = fmin(v[2], z);
            v[3] = fmax(v[3], x); v[4] = fmax(v[4], yy); v[5] = fmax(v[5], z);
        }
    }
    nbody_cl_box_fold(sh, v, partial + 8 * get_group_id(0));
}

/* stage 2 (one work-group): the groups' boxes folded into box[0..8) */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_GROUP, 1, 1)))
void nbody_tree_box_final(__global const real *partial, uint groups, __global real *box) {
    __local real sh[7 * NBODY_CL_GROUP];
    real v[7];
    uint g, k;
    v[0] = v[1] = v[2] = (real)INFINITY; v[3] = v[4] = v[5] = -(real)INFINITY; v[6] = 0;
    for (g = get_local_id(0); g < groups; g += NBODY_CL_GROUP)
        for (k = 0; k < 7; ++k) v[k] = k < 3 ? fmin(v[k], partial[8 * g + k]) : fmax(v[k], partial[8 * g + k]);
    nbody_cl_box_fold(sh, v, box);
}

/* the sort keys of the active bodies, and their indices */
__kernel void nbody_tree_keys(__global const real *y, uint n, uint nt, __global const real *box, __global ulong *key,
                              __global uint *val) {
    uint i = get_global_id(0);
    if (i >= nt) return;
    key[i] = nbody__tree_key(y[i], y[n + i], y[2 * n + i], box[0], box[1], box[2], box[3], box[4], box[5]);
    val[i] = i;
}

/* the radix sort's counts: work-item lid of group g owns the keys [i0, i1), the run
   (g NBODY_CL_GROUP + lid) per .. + per (clipped to n); cnt[d NBODY_CL_GROUP + lid] = how
   many of them have digit d at bit `shift` */
void nbody_cl_sort_count(__global const ulong *key, uint n, uint per, uint shift, __local uint *cnt, uint *i0, uint *i1) {
    uint lid = get_local_id(0), start = (get_group_id(0) * NBODY_CL_GROUP + lid) * per, d, i;
    *i0 = min(start, n); *i1 = min(start + per, n);
    for (d = 0; d < NBODY_CL_RADIX; ++d) cnt[d * NBODY_CL_GROUP + lid] = 0;
    for (i = *i0; i < *i1; ++i) cnt[((uint)(key[i] >> shift) & (NBODY_CL_RADIX - 1)) * NBODY_CL_GROUP + lid]++;
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* pass 1: hist[d groups + g] = the keys of group g with digit d */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_GROUP, 1, 1)))
void nbody_sort_hist(__global const ulong *key, uint n, uint per, uint shift, __global uint *hist, uint groups) {
    __local uint cnt[NBODY_CL_RADIX * NBODY_CL_GROUP];
    uint lid = get_local_id(0), i0, i1, t, s = 0;
    nbody_cl_sort_count(key, n, per, shift, cnt, &i0, &i1);
    if (lid < NBODY_CL_RADIX) {
        for (t = 0; t < NBODY_CL_GROUP; ++t) s += cnt[lid * NBODY_CL_GROUP + t];
        hist[lid * groups + get_group_id(0)] = s;
    }
}

/* pass 2 (one work-group): hist[0..len) replaced by its exclusive prefix sums */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_GROUP, 1, 1)))
void nbody_sort_scan(__global uint *hist, uint len) {
    __local uint sh[NBODY_CL_GROUP];
    uint lid = get_local_id(0), carry = 0, base, s;
    for (base = 0; base < len; base += NBODY_CL_GROUP) {
        uint v = base + lid < len ? hist[base + lid] : 0;
        sh[lid] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (s = 1; s < NBODY_CL_GROUP; s <<= 1) {      /* inclusive scan (Hillis & Steele) */
            uint t = lid >= s ? sh[lid - s] : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            sh[lid] += t;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (base + lid < len) hist[base + lid] = carry + sh[lid] - v;
        carry += sh[NBODY_CL_GROUP - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* pass 3: each work-item writes its run in order from its offset: digit d of group g starts
   at hist[d groups + g], and within the group the work-items follow in order */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_GROUP, 1, 1)))
void nbody_sort_scatter(__global const ulong *key, __global const uint *val, __global ulong *key_out, __global uint *val_out,
                        uint n, uint per, uint shift, __global const uint *hist, uint groups) {
    __local uint cnt[NBODY_CL_RADIX * NBODY_CL_GROUP];
    uint lid = get_local_id(0), i0, i1, i;
    nbody_cl_sort_count(key, n, per, shift, cnt, &i0, &i1);
    if (lid < NBODY_CL_RADIX) {
        uint s = hist[lid * groups + get_group_id(0)], t;
        for (t = 0; t < NBODY_CL_GROUP; ++t) {
            uint c = cnt[lid * NBODY_CL_GROUP + t];
            cnt[lid * NBODY_CL_GROUP + t] = s;
            s += c;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (i = i0; i < i1; ++i) {
        ulong k = key[i];
        uint p = cnt[((uint)(k >> shift) & (NBODY_CL_RADIX - 1)) * NBODY_CL_GROUP + lid]++;
        key_out[p] = k; val_out[p] = val[i];
    }
}

/* the leaves: leaf nt + k holds the body sorted[p], p its depth-first position; node = (x, y,
   z, crit2 = 0: a leaf is always a body), lo = (x, y, z, B2 = 0), hi = (x, y, z), radius 0 */
__kernel void nbody_tree_leaves(__global const real *y, __global const real *m, uint n, uint nt, uint P,
                                __global const uint *sorted, __global real4 *node, __global real *mass, __global real4 *lo,
                                __global real4 *hi, __global real *rad, __global uint *body) {
    uint k = get_global_id(0), j, p, b;
    real4 v;
    if (k >= nt) return;
    j = nt + k; p = j >= P ? j - P : (2 * nt - P) + (j - nt);
    b = sorted[p];
    v = (real4)(y[b], y[n + b], y[2 * n + b], 0);
    node[j] = v; lo[j] = v; hi[j] = v;
    mass[j] = m[b]; rad[j] = 0; body[j] = b;
}

/* the internal nodes [i0, i1) of one level from their children (the level below: done) */
__kernel void nbody_tree_internal(uint i0, uint i1, uint nt, __global real4 *node, __global real *mass, __global real4 *lo,
                                  __global real4 *hi, __global real *rad, real inv_theta) {
    uint i = i0 + get_global_id(0), l, r;
    real4 cl, cr, bl, br, hl, hr, blo, bhi;
    real ml, mr, cx, cy, cz, radius, b2, crit;
    if (i >= i1) return;
    l = 2 * i; r = l + 1;
    cl = node[l]; cr = node[r]; bl = lo[l]; br = lo[r]; hl = hi[l]; hr = hi[r];
    ml = mass[l]; mr = mass[r];
    blo = (real4)(fmin(bl.x, br.x), fmin(bl.y, br.y), fmin(bl.z, br.z), 0);
    bhi = (real4)(fmax(hl.x, hr.x), fmax(hl.y, hr.y), fmax(hl.z, hr.z), 0);
    crit = nbody__tree_inner(cl.x, cl.y, cl.z, ml, rad[l], bl.w, cr.x, cr.y, cr.z, mr, rad[r], br.w, blo.x, blo.y, blo.z, bhi.x,
                            bhi.y, bhi.z, inv_theta, 2 * i >= nt, &cx, &cy, &cz, &radius, &b2);
    blo.w = b2;
    node[i] = (real4)(cx, cy, cz, crit * crit);
    mass[i] = ml + mr; lo[i] = blo; hi[i] = bhi; rad[i] = radius;
}

/* Barnes-Hut on that heap tree: nodes 1 .. 2nt-1, children 2i and 2i+1, leaves nt .. 2nt-1;
   node c is used as one body when d^2 > crit2[c].
   Stackless walk (the article's next_up / skip_down): "descend" is the left child when one
   exists, "skip this subtree" shifts off the trailing one-bits of the index and adds one,
   which is the right sibling of the nearest left ancestor, or the root when the walk is done
   (nbody__heap_next, nbody__heap_skip).
   Leaves (crit2 = 0) act as bodies, except the target's own leaf, excluded by index as on
   the CPU; another body at distance 0 gives the same term the direct kernels give.
   Leaf order (leaf_order = 1): work-item g takes the body of leaf nt+g, so neighbouring
   work-items are neighbours in space and walk nearly the same nodes. box[6] != 0 (a position
   is NaN or Inf): NaN accelerations, no walk. */
/* body i's walk alone (G not applied): the sum of nbody_tree and nbody_tree_list */
nbody_cl_vec nbody_cl_tree_sum(__global const real *restrict y, uint n, real eps2, __global const real4 *restrict node,
                               __global const real *restrict mass, __global const uint *restrict body, uint nt, uint i) {
    uint c = 1, nodes = 2 * nt;
    real xi = y[i], yi = y[n + i], zi = y[2 * n + i];
    nbody_cl_vec a = {0, 0, 0};
    do {
        real4 p = node[c];                 /* cx, cy, cz, crit2 */
        real dx = p.x - xi, dy = p.y - yi, dz = p.z - zi;
        if (dx * dx + dy * dy + dz * dz > p.w || (c >= nt && body[c] != i)) {
            nbody_cl_pair(&a, xi, yi, zi, p.x, p.y, p.z, mass[c], eps2);
            c = nbody__heap_skip(c);
        } else {
            c = nbody__heap_next(c, nodes);
        }
    } while (c != 1);
    return a;
}

__kernel void nbody_tree(__global const real *restrict y, __global real *restrict f, uint n, real G,
                         real eps2, __global const real4 *restrict node, __global const real *restrict mass,
                         __global const uint *restrict body, int leaf_order, uint nt, __global const real *restrict box) {
    /* the tree holds bodies [0, nt), the active ones; test particles [nt, n) walk it too */
    uint g = get_global_id(0), i;
    nbody_cl_vec a = {0, 0, 0};
    if (g >= n) return;
    i = leaf_order && g < nt ? body[nt + g] : g;
    if (box[6] != 0) a.x = a.y = a.z = (real)NAN;
    else a = nbody_cl_tree_sum(y, n, eps2, node, mass, body, nt, i);
    nbody_cl_store(y, f, n, i, a, G);
}

/* The tree leapfrog's block steps: the bodies list[0 .. count) walk alone (test particles
   too), G a into out[q], out[count + q], out[2 count + q] */
__kernel void nbody_tree_list(__global const real *restrict y, __global real *restrict out, uint n, real G,
                              real eps2, __global const real4 *restrict node, __global const real *restrict mass,
                              __global const uint *restrict body, uint nt, __global const real *restrict box,
                              __global const uint *restrict list, uint count) {
    uint q = get_global_id(0);
    nbody_cl_vec a = {0, 0, 0};
    if (q >= count) return;
    if (box[6] != 0) a.x = a.y = a.z = (real)NAN;
    else a = nbody_cl_tree_sum(y, n, eps2, node, mass, body, nt, list[q]);
    out[q] = G * a.x; out[count + q] = G * a.y; out[2 * count + q] = G * a.z;
}

/* the kicks of the active bodies list[0 .. count) (nbody__kick_op in nbody.h): with a = acc's
   and c = coef's three rows at q, v1 = v + c0 a0 + c1 a to y's velocity, v1 + c2 a and a to
   kick = [v | a0] */
__kernel void nbody_kick(__global real *y, __global real *kick, __global const uint *restrict list, uint count, uint n,
                         __global const real *restrict acc, __global const real *restrict coef) {
    uint q = get_global_id(0), i, k;
    if (q >= count) return;
    i = list[q];
    for (k = 0; k < 3; ++k) {
        real ak = acc[k * count + q], v1 = kick[k * n + i] + coef[q] * kick[(3 + k) * n + i] + coef[count + q] * ak;
        y[(3 + k) * n + i] = v1;
        kick[k * n + i] = v1 + coef[2 * count + q] * ak;
        kick[(3 + k) * n + i] = ak;
    }
}

/* The same walk for a work-group together (the CUDA tree engine's warp walk): the group walks
   the union of its work-items' walks, one node a step for all (one broadcast load), opening a
   node when any work-item needs it opened. A work-item that accepts a node the group opens
   adds it and idles until the walk reaches skip(node), which in this pre-order walk is where
   it leaves that subtree: each work-item adds the same nodes in the same order as alone (the
   same bits as nbody_tree). One barrier a step: the flag of step s lives in slot s mod 3, and
   the slot of step s + 1 is cleared during step s (its last readers finished at step s - 2). */
__kernel void nbody_tree_union(__global const real *restrict y, __global real *restrict f, uint n, real G,
                               real eps2, __global const real4 *restrict node, __global const real *restrict mass,
                               __global const uint *restrict body, int leaf_order, uint nt, __global const real *restrict box) {
    __local int flag[3];
    /* work-items past n walk for the last work-item's body (in its group: nothing added to the
       union) and store nothing (would they, they would store the same bits) */
    uint g = get_global_id(0), lid = get_local_id(0), gw = min(g, n - 1), c = 1, nodes = 2 * nt, resume = 0, step = 0;
    uint i = leaf_order && gw < nt ? body[nt + gw] : gw;
    real xi = y[i], yi = y[n + i], zi = y[2 * n + i];
    nbody_cl_vec a = {0, 0, 0};
    if (box[6] != 0) {                     /* the same for the whole group (no return before a barrier:
                                              PoCL then stored for work-items past n) */
        a.x = a.y = a.z = (real)NAN;
    } else {
        if (lid == 0) { flag[0] = 0; flag[1] = 0; }
        barrier(CLK_LOCAL_MEM_FENCE);
        do {
            real4 p = node[c];
            real dx = p.x - xi, dy = p.y - yi, dz = p.z - zi;
            uint skip = nbody__heap_skip(c), slot = step % 3;
            int acc = dx * dx + dy * dy + dz * dz > p.w || (c >= nt && body[c] != i), open;
            if (c == resume) resume = 0;      /* 0: walking now */
            if (lid == 0) flag[(step + 1) % 3] = 0;
            if (resume == 0 && !acc && c < nt) flag[slot] = 1;
            barrier(CLK_LOCAL_MEM_FENCE);
            open = flag[slot];
            acc = acc && resume == 0;
            if (acc && open) resume = skip;
            if (acc) nbody_cl_pair(&a, xi, yi, zi, p.x, p.y, p.z, mass[c], eps2);
            c = open ? 2 * c : skip;
            ++step;
        } while (c != 1);
    }
    if (g < n) nbody_cl_store(y, f, n, i, a, G);
}

/* ---- engine operations (semantics: nbody__lincomb and nbody__engine_ops in nbody.h) ------ */
#define NBODY_CL_MAX_TERMS 16
typedef struct { real c[NBODY_CL_MAX_TERMS]; } nbody_cl_coeffs;

/* sum_j c[j] k_j[i], the terms in a fixed order like the host's */
#define NBODY_CL_TERMS_ARGS __global const real *k0, __global const real *k1, __global const real *k2, \
    __global const real *k3, __global const real *k4, __global const real *k5, __global const real *k6, \
    __global const real *k7, __global const real *k8, __global const real *k9, __global const real *k10, \
    __global const real *k11, __global const real *k12, __global const real *k13, __global const real *k14, \
    __global const real *k15, nbody_cl_coeffs c, int nk, ulong k_off
#define NBODY_CL_TERM(j) if (nk > j) s += c.c[j] * k##j[k_off + i]
#define NBODY_CL_TERMS() do { \
        NBODY_CL_TERM(0); NBODY_CL_TERM(1); NBODY_CL_TERM(2); NBODY_CL_TERM(3); \
        NBODY_CL_TERM(4); NBODY_CL_TERM(5); NBODY_CL_TERM(6); NBODY_CL_TERM(7); \
        NBODY_CL_TERM(8); NBODY_CL_TERM(9); NBODY_CL_TERM(10); NBODY_CL_TERM(11); \
        NBODY_CL_TERM(12); NBODY_CL_TERM(13); NBODY_CL_TERM(14); NBODY_CL_TERM(15); \
    } while (0)

/* out[out_off+i] = y[y_off+i] + h sum_j c[j] k_j[k_off+i]; has_y = 0 reads y as 0. With
   has_comp the update is Kahan-compensated (comp indexed like out): nbody__compensated_add.
   Offsets are arguments rather than sub-buffers,
   whose origins would have to meet CL_DEVICE_MEM_BASE_ADDR_ALIGN. */
__kernel void nbody_lincomb(__global real *out, ulong out_off, __global const real *y, ulong y_off,
                            int has_y, __global real *comp, int has_comp, real h, ulong len,
                            NBODY_CL_TERMS_ARGS) {
    size_t i = get_global_id(0);
    real s = 0, y0, d;
    if (i >= len) return;
    NBODY_CL_TERMS();
    y0 = has_y ? y[y_off + i] : 0;
    d = h * s;
    if (has_comp) {
        real c = comp[out_off + i];
        out[out_off + i] = nbody__compensated_add(y0, d, &c);
        comp[out_off + i] = c;
    } else {
        out[out_off + i] = y0 + d;
    }
}

/* max that keeps NaN: once any value is NaN the result is NaN */
real nbody_cl_max(real a, real b) { return (isnan(a) || a > b) ? a : b; }

/* each work-group writes the max of its values to partial[group]; the host takes the max */
void nbody_cl_group_max(__local real *scratch, real v, __global real *partial) {
    uint lid = get_local_id(0), s;
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (s = NBODY_CL_GROUP / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] = nbody_cl_max(scratch[lid], scratch[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = scratch[0];
}

/* norm = max_i |h sum_j c[j] k_j[i]| / (atol + rtol max(|y[i]|, |yn[i]|)), NaN propagating */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_GROUP, 1, 1)))
void nbody_error_norm(__global const real *y, ulong y_off, __global const real *yn, ulong out_off,
                      real h, real atol, real rtol, ulong len, __global real *partial,
                      NBODY_CL_TERMS_ARGS) {
    __local real scratch[NBODY_CL_GROUP];
    real worst = 0;
    size_t i;
    for (i = get_global_id(0); i < len; i += get_global_size(0)) {
        real s = 0;
        NBODY_CL_TERMS();
        worst = nbody_cl_max(fabs(h * s) / (atol + rtol * fmax(fabs(y[y_off + i]), fabs(yn[out_off + i]))), worst);
    }
    nbody_cl_group_max(scratch, worst, partial);
}

/* partial max is 1 where some b[i] is NaN or Inf, else 0 */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_GROUP, 1, 1)))
void nbody_all_finite(__global const real *b, ulong off, ulong len, __global real *partial) {
    __local real scratch[NBODY_CL_GROUP];
    real bad = 0;
    size_t i;
    for (i = get_global_id(0); i < len; i += get_global_size(0))
        if (!isfinite(b[off + i])) bad = 1;
    nbody_cl_group_max(scratch, bad, partial);
}

/* ---- contacts (docs/steering.md) ----------------------------------------------------
   The direct search for touching pairs: work-item i tests every j > i, and keeps the
   candidates with |x_j - x_i|^2 <= (r_i + r_j)^2 slack (slack = 1 + 64 epsilons, far above
   this device's rounding, contracted or not). The host decides each candidate exactly as
   its own detector does, from the positions and radii written here (8 reals a pair:
   x_i y_i z_i r_i x_j y_j z_j r_j), so the answer does not depend on the device's
   arithmetic. rad_on = 0: r0 for every body. Past cap only the count grows: the host
   enlarges the buffers and runs the search again. */
__kernel void nbody_contacts(__global const real *y, __global const real *rad, uint rad_on, real r0, uint n, real slack,
                             __global uint *pairs, __global real *vals, uint cap, __global volatile uint *count) {
    uint i = (uint)get_global_id(0), j;
    real xi, yi, zi, ri;
    if (i >= n) return;
    xi = y[i]; yi = y[n + i]; zi = y[2 * n + i]; ri = rad_on ? rad[i] : r0;
    for (j = i + 1; j < n; ++j) {
        real rj = rad_on ? rad[j] : r0, rr = ri + rj;
        real dx = y[j] - xi, dy = y[n + j] - yi, dz = y[2 * n + j] - zi;
        if (dx * dx + dy * dy + dz * dz <= rr * rr * slack) {
            uint k = atomic_inc(count);
            if (k < cap) {
                pairs[2 * k] = i; pairs[2 * k + 1] = j;
                vals[8 * k] = xi; vals[8 * k + 1] = yi; vals[8 * k + 2] = zi; vals[8 * k + 3] = ri;
                vals[8 * k + 4] = y[j]; vals[8 * k + 5] = y[n + j]; vals[8 * k + 6] = y[2 * n + j]; vals[8 * k + 7] = rj;
            }
        }
    }
}

/* ---- NBODY_HERMITE (nbody__hermite_op, nbody__hermite_levels, nbody__hermite_store): the CUDA
   engine's design (nbody_cuda.cu, "NBODY_HERMITE"): the active bodies' forces by work-groups of
   NBODY_CL_HT items over (active bodies x source slices) as nbody__hermite_shape decides, each
   source predicted as its tile is loaded (the first group writes the prediction into pred), then
   a work-group an active body adding its slices' sums: corrected in place (the step) or
   gathered into rows (the start), and the undo of a step. Pair terms in real, sums in double
   where the device has it. */
#define NBODY_CL_HT 64
#define NBODY_CL_HT_LOG2 6
#if NBODY_CL_FP64 || NBODY_CL_HAS_FP64
typedef double nbody_cl_hsum;
#else
typedef real nbody_cl_hsum;
#endif

/* body j at the step's time (nbody__hermite_predict1): x y z m, vx vy vz 0, ax ay az 0 */
void nbody_hermite_predict(__global const real *restrict base, __global const real *restrict force,
                           __global const real *restrict high, __global const ulong *restrict ticks, __global const real *restrict m,
                           ulong now, real tick, real span, int order, uint n, uint j, real4 *x, real4 *v, real4 *a) {
    real dt = nbody__hermite_dt(ticks[j], now, tick, span), p[9];
    uint k;
    for (k = 0; k < 3; ++k) {
        uint xi = k * n + j, vi = xi + 3 * n;
        nbody__hermite_predict1(base[xi], base[vi], force[xi], force[vi], order == 6 ? high[xi] : 0, order == 6 ? high[vi] : 0, dt,
                                &p[k], &p[3 + k], &p[6 + k]);
    }
    *x = (real4)(p[0], p[1], p[2], m[j]);
    *v = (real4)(p[3], p[4], p[5], 0);
    *a = (real4)(p[6], p[7], p[8], 0);
}
void nbody_hermite_put(__global real *restrict pred, uint n, uint j, real4 x, real4 v) {
    pred[j] = x.x; pred[n + j] = x.y; pred[2 * n + j] = x.z; pred[3 * n + j] = v.x; pred[4 * n + j] = v.y; pred[5 * n + j] = v.z;
}

#define NBODY_CL_HSTATE __global const real *restrict base, __global const real *restrict force, \
    __global const real *restrict high, __global const ulong *restrict ticks, __global const real *restrict m, ulong now, \
    real tick, real span, int order, uint n
#define NBODY_CL_HPREDICT(j, x, v, a) nbody_hermite_predict(base, force, high, ticks, m, now, tick, span, order, n, j, x, v, a)

/* the work-group's 2^ti_log2 active bodies (group 0 of the range) against source slice
   get_group_id(1); its lanes' sums added by a fixed tree into part[(slice 9 + c) count + q];
   the first group writes the prediction of its slice, and of its share of the test particles
   [nsrc, n), into pred */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_HT, 1, 1)))
void nbody_hermite_forces(NBODY_CL_HSTATE, __global const uint *restrict list, uint count, uint nsrc, uint slice_len, int ti_log2,
                          real eps2, __global real *restrict pred, __global nbody_cl_hsum *restrict part) {
    __local real4 sx[NBODY_CL_HT], sv[NBODY_CL_HT], sa[NBODY_CL_HT];
    __local nbody_cl_hsum red[9 * NBODY_CL_HT];
    uint lid = get_local_id(0), TI = 1u << ti_log2, TJ = NBODY_CL_HT >> ti_log2, li = lid & (TI - 1), lj = lid >> ti_log2;
    uint q = get_group_id(0) * TI + li, i = list[q < count ? q : count - 1], snap = order == 6, nk = snap ? 9 : 6, c, k, stride;
    uint j0 = get_group_id(1) * slice_len, j1 = min(nsrc, j0 + slice_len), t0, first = get_group_id(0) == 0;
    real4 xi, vi, ai, tx, tv, ta;
    nbody_cl_hsum s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    if (first && nsrc < n) {              /* the test particles: predicted for pred only */
        uint per = (n - nsrc + (uint)get_num_groups(1) - 1) / (uint)get_num_groups(1), t1 = min(n, nsrc + ((uint)get_group_id(1) + 1) * per), j;
        for (j = nsrc + (uint)get_group_id(1) * per + lid; j < t1; j += NBODY_CL_HT) {
            NBODY_CL_HPREDICT(j, &tx, &tv, &ta);
            nbody_hermite_put(pred, n, j, tx, tv);
        }
    }
    NBODY_CL_HPREDICT(i, &xi, &vi, &ai);
    for (t0 = j0; t0 < j1; t0 += NBODY_CL_HT) {
        uint tl = min((uint)NBODY_CL_HT, j1 - t0);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < tl) {
            NBODY_CL_HPREDICT(t0 + lid, &tx, &tv, &ta);
            sx[lid] = tx; sv[lid] = tv; sa[lid] = ta;
            if (first) nbody_hermite_put(pred, n, t0 + lid, tx, tv);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (k = lj; k < tl; k += TJ) {
            real4 pj = sx[k], vj = sv[k], aj = snap ? sa[k] : vj;
            real dx = pj.x - xi.x, dy = pj.y - xi.y, dz = pj.z - xi.z, t[9];
            real r2 = nbody__soft_r2_fused(dx, dy, dz, eps2), inv = rsqrt(r2), inv2 = inv * inv;
            if (t0 + k == i) continue;             /* not itself */
            nbody__hermite_terms(dx, dy, dz, vj.x - vi.x, vj.y - vi.y, vj.z - vi.z, snap ? aj.x - ai.x : 0, snap ? aj.y - ai.y : 0,
                                 snap ? aj.z - ai.z : 0, pj.w * inv * inv2, inv2, snap, t);
            for (c = 0; c < nk; ++c) s[c] += (nbody_cl_hsum)t[c];
        }
    }
    for (c = 0; c < nk; ++c) red[c * NBODY_CL_HT + lid] = s[c];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (stride = TJ / 2; stride > 0; stride /= 2) {
        if (lj < stride)
            for (c = 0; c < nk; ++c) red[c * NBODY_CL_HT + lid] += red[c * NBODY_CL_HT + lid + stride * TI];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lj == 0 && q < count)
        for (c = 0; c < nk; ++c) part[(q * 9 + c) * get_num_groups(1) + get_group_id(1)] = red[c * NBODY_CL_HT + lid];
}

/* G times active body q = get_group_id(0)'s sums of rows 0 .. nk over its slices into f of
   item 0 (each item's slices in order, then a fixed tree); the whole work-group calls it */
void nbody_hermite_sums(__global const nbody_cl_hsum *restrict part, uint slices, uint nk, uint q, real G,
                        __local nbody_cl_hsum *red, real *f) {
    uint lid = get_local_id(0), k, sl, stride;
    for (k = 0; k < 9; ++k) {
        nbody_cl_hsum sum = 0;
        for (sl = lid; k < nk && sl < slices; sl += NBODY_CL_HT) sum += part[(q * 9 + k) * slices + sl];
        red[lid] = sum;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (stride = NBODY_CL_HT / 2; stride > 0; stride /= 2) {
            if (lid < stride) red[lid] += red[lid + stride];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        f[k] = G * (real)red[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* a work-group of NBODY_CL_HT items an active body: rows 0-8 its forces, rows 9-23 x v a jerk
   snap at its own time */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_HT, 1, 1)))
void nbody_hermite_rows(__global const nbody_cl_hsum *restrict part, uint slices, uint nk, uint count,
                        __global const uint *restrict list, __global const real *restrict base,
                        __global const real *restrict force, __global const real *restrict high, uint n, real G,
                        __global real *restrict rows) {
    __local nbody_cl_hsum red[NBODY_CL_HT];
    uint q = get_group_id(0), lid = get_local_id(0), i = list[q], k;
    real f[9];
    nbody_hermite_sums(part, slices, nk, q, G, red, f);
    if (lid == 0)
        for (k = 0; k < 9; ++k) rows[k * count + q] = f[k];
    if (lid < 6) { rows[(9 + lid) * count + q] = base[lid * n + i]; rows[(15 + lid) * count + q] = force[lid * n + i]; }
    else if (lid < 9) rows[(15 + lid) * count + q] = high[(lid - 6) * n + i];
}

/* the step's correction, a work-group an active body: its forces, then in item 0 its
   correction (nbody__hermite_correct) and next level from its level lev[q] (overwritten by
   the new one; NBODY__BLOCK_LEVELS + 2 where a corrected value is not finite), in place:
   base, force, high, its time; x, v into pred; the 18 values and the time it replaces into
   keep and tkeep */
__kernel __attribute__((reqd_work_group_size(NBODY_CL_HT, 1, 1)))
void nbody_hermite_correct(__global const nbody_cl_hsum *restrict part, uint slices, uint count, __global const uint *restrict list,
                           __global real *restrict base, __global real *restrict force, __global real *restrict high,
                           __global ulong *restrict ticks, uint n, real G, ulong now, real tick, real span, int order, real eta,
                           real dt_max, real dt_min, __global real *restrict pred, __global real *restrict keep,
                           __global ulong *restrict tkeep, __global uchar *restrict lev) {
    __local nbody_cl_hsum red[NBODY_CL_HT];
    uint q = get_group_id(0), i = list[q], k;
    int finite = 1;
    real b[24], nx[18], d[6];
    ulong t0;
    nbody_hermite_sums(part, slices, order == 6 ? 9 : 6, q, G, red, b);
    if (get_local_id(0) != 0) return;
    t0 = ticks[i];
    for (k = 0; k < 6; ++k) {
        keep[18 * q + k] = base[k * n + i]; keep[18 * q + 6 + k] = force[k * n + i]; keep[18 * q + 12 + k] = high[k * n + i];
    }
    for (k = 0; k < 15; ++k) b[9 + k] = keep[18 * q + k];
    nbody__hermite_correct(order, b, nbody__hermite_dt(t0, now, tick, span), nx, d);
    for (k = 0; k < 18; ++k) finite = finite && isfinite(nx[k]);
    for (k = 0; k < 6; ++k) {
        base[k * n + i] = nx[k]; force[k * n + i] = nx[6 + k]; high[k * n + i] = nx[12 + k]; pred[k * n + i] = nx[k];
    }
    tkeep[q] = t0;
    ticks[i] = now;
    lev[q] = (uchar)(finite ? nbody__block_level_of(lev[q], nbody__hermite_criterion(order, eta, d), now, dt_max, dt_min)
                            : NBODY__BLOCK_LEVELS + 2);
}

/* the undo of the last step: its active bodies' state and times back from keep, tkeep */
__kernel void nbody_hermite_undo(__global const real *restrict keep, __global const ulong *restrict tkeep,
                                 __global const uint *restrict list, uint count, uint n, __global real *restrict base,
                                 __global real *restrict force, __global real *restrict high, __global ulong *restrict ticks) {
    uint q = get_global_id(0), i, k;
    if (q >= count) return;
    i = list[q];
    for (k = 0; k < 6; ++k) {
        base[k * n + i] = keep[18 * q + k]; force[k * n + i] = keep[18 * q + 6 + k]; high[k * n + i] = keep[18 * q + 12 + k];
    }
    ticks[i] = tkeep[q];
}
