/* nbody_cuda.cu - the CUDA engines of nbody.h (NBODY_ENGINE_CUDA, NBODY_ENGINE_CUDA_TREE).

   Build: nvcc -O3 -arch=sm_90 [-DNBODY_REAL=float] -c nbody_cuda.cu
          cc -DNBODY_WITH_CUDA ... nbody_cuda.o -lcudart -lstdc++
   The same NBODY_REAL as the program that includes nbody.h with NBODY_IMPLEMENTATION.

   Everything of the engine interface runs on the device: the state and every stage vector
   are cudaMalloc'ed buffers, so a solver's whole step stays on the GPU and only
   nbody_get_state copies back. All work is issued on the legacy default stream, so the
   order of operations is the order of calls and every download synchronises.

   Dense engine: shared-memory tiles of packed (x, y, z, m) records, each thread holding R
   target bodies in registers (register blocking: one shared load feeds R interactions), the
   source range split into slices across blockIdx.y when there are too few target blocks to
   fill the GPU; the slices' partial sums are added in a fixed order by a second kernel, so a
   configuration always gives the same bits.

   Tree engine: the heap kd-tree of the CPU engine (nodes 1..2n-1, leaves n..2n-1 one body
   each, children 2i, 2i+1), built on the GPU every evaluation: bodies sorted by 63-bit
   Hilbert key (nbody__tree_key, CUB radix sort) and laid into the leaves in depth-first
   order, so every subtree holds a contiguous range of the Hilbert curve (a connected,
   compact piece of space; a range of the Z curve is not, and cost the walks twice the
   terms), balanced by count exactly as the heap shape requires; the internal nodes are then filled bottom-up, one launch per level.
   The split planes differ from the CPU tree's median splits, the acceptance criterion is
   the same formula (NBODY__TREE_CRIT in nbody.h): r there is a bounding-sphere radius about
   the centre of mass (here the smaller of two valid bounds: the sphere around the
   children's spheres, and the distance to the farthest corner of the node's box), B2 the
   second moment from the children's by the parallel-axis theorem. The
   walk is stackless (next = 2i for internal nodes, skip(i) = (i >> ctz(~i)) + 1, back at the
   root means done) and thread k walks for leaf n + k, so neighbouring threads follow nearly
   the same path through the read-only-cached node records. */
#define NBODY_BACKEND
#include "nbody.h"

#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <chrono>

typedef nbody_real nbody__r;

/* ======================================================================================
   small device helpers
   ====================================================================================== */
/* packed record: a body (x, y, z, m) or a tree node (cx, cy, cz, crit2). CUDA 13 deprecates
   double4, hence our own; 16-byte alignment gives 128-bit loads for both precisions. */
template <class T> struct __align__(16) nbody__v4 { T x, y, z, w; };

/* A v4 record in one (float) or two (double) vector loads: through the read-only cache
   (nbody__ldg4), or through L2 only (nbody__cu_ldcg4) where other blocks of the same launch
   wrote it (the refit). */
template <bool L2> __device__ __forceinline__ nbody__v4<float> nbody__load4(const nbody__v4<float> *p) {
    float4 a = L2 ? __ldcg((const float4 *)p) : __ldg((const float4 *)p);
    nbody__v4<float> v = {a.x, a.y, a.z, a.w};
    return v;
}
template <bool L2> __device__ __forceinline__ nbody__v4<double> nbody__load4(const nbody__v4<double> *p) {
    double2 a = L2 ? __ldcg((const double2 *)p) : __ldg((const double2 *)p);
    double2 b = L2 ? __ldcg((const double2 *)p + 1) : __ldg((const double2 *)p + 1);
    nbody__v4<double> v = {a.x, a.y, b.x, b.y};
    return v;
}
template <class T> __device__ __forceinline__ nbody__v4<T> nbody__ldg4(const nbody__v4<T> *p) { return nbody__load4<false>(p); }
template <class T> __device__ __forceinline__ nbody__v4<T> nbody__cu_ldcg4(const nbody__v4<T> *p) { return nbody__load4<true>(p); }

/* m / (r2)^(3/2). float: the hardware reciprocal square root (MUFU.RSQ, ~2 ulp).
   double: the hardware's ~22-bit estimate y of r2^(-1/2), then with e = 1 - r2 y^2,
   r2^(-3/2) = y^3 (1 - e)^(-3/2) = y^3 (1 + 3/2 e + 15/8 e^2 + O(e^3)): a series step of
   third order, full double precision from one correction (7 double operations). */
__device__ __forceinline__ float nbody__weight(float m, float r2) {
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(r2));
    return (m * y) * (y * y);
}
__device__ __forceinline__ double nbody__weight(double m, double r2) {
    double y, t, e, p, mw;
    asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(r2));
    t = y * y;
    e = fma(-r2, t, 1.0);
    p = fma(1.875, e, 1.5);
    mw = m * (t * y);
    return fma(mw * e, p, mw);
}

/* ======================================================================================
   engine state
   ====================================================================================== */
typedef nbody__v4<nbody__r> nbody__rec;

typedef struct nbody__cuda {
    int dev, tree, sms;
    nbody__r *m;                   /* n masses */
    nbody__rec *bodies;            /* dense: n packed bodies */
    nbody__r *partial;             /* dense: slices x 3n partial sums */
    size_t partial_len;
    void *red;                     /* reduction scratch */
    int block, tuned;              /* threads per block, chosen (tuned = 1) or given */
    int bodies_per_thread;         /* dense: targets a thread holds (1, 2, 4, 8) */
    int walk;                      /* tree: NBODY__CU_WALK_THREAD or _WARP (monopoles, tuned), _GROUP (quadrupoles) */
    int uni;                       /* every mass equals mass1: the dense kernel's UNI form */
    nbody__r mass1;
    int variant;                   /* 0 the engine's kernel, 1 the plain tile kernel (benchmarks) */
    int sym;                       /* dense: the symmetric kernel (tuned) */
    int *flags;                    /* dense symmetric: a round counter per tile */
    size_t flags_len;
    /* tree */
    nbody__rec *node, *lo, *hi;    /* 2n: (com, crit2), box corners */
    nbody__r *nmass, *rad;         /* 2n */
    unsigned long long *key[2];
    unsigned int *val[2], *leafbody;
    unsigned int *ownpos;          /* several GPUs: the depth-first position of each body of [own0, own0 + ownm), from the leaves' pass */
    size_t own0, ownm;
    void *cubtmp;
    size_t cubbytes;
    /* test particles (desc.n_active < n): the active positions packed for the tree build */
    nbody__r *yact;                /* 3 n_active, allocated on first use */
    const nbody__r *ycur;          /* the state of this derivative (test particles' positions) */
    struct nbody__cu_slice_work *slice;   /* slices (nbody__cuda_derivative_slice): scratch */
    /* group walk: bodies in depth-first (Hilbert) order, each node's range of them, quadrupoles */
    nbody__rec *sb;                /* n: (x, y, z, m) at depth-first position p */
    uint2 *nrange;                 /* 2n: (first position, count) of each node's bodies */
    nbody__rec *nquad;             /* 2 per internal node: (xx xy xz yy), (yz zz trace 0); NULL: monopole */
    int bucket, depth;             /* leaf bucket size; depth of the heap (its stack bound) */
    int smem_max;                  /* shared memory a block may opt in to */
    int gw_maxthreads[4];          /* the group walk's threads per block (registers): monopole, quadrupole; + 2: global stack */
    unsigned int *gw_next;         /* that counter, then the number of groups */
    int gw_occ_threads, gw_occ;    /* the group walk's resident blocks an SM (gw_occ) at gw_occ_threads a block */
    unsigned int *gw_groups;       /* n: the groups' nodes (nbody__cu_group_flags) */
    size_t gw_n;                   /* n + 1: gw_groups holds the Hilbert tree's groups of n bodies; 0: none */
    unsigned char *gw_flag;        /* 2n: node i is a group */
    void *gw_tmp;                  /* scratch of the selection */
    size_t gw_tmpbytes;
    unsigned int *gw_gstack;       /* the global-stack group walk's stacks: a warp's scap entries each */
    size_t gw_gstack_len;
    int timing;                    /* benchmarks: events around build and walk */
    cudaEvent_t tev[3];
    cudaEvent_t bev[5];            /* benchmarks: the build's steps (box and keys, sort, leaves, internal nodes, groups) */
    struct nbody__cu_contacts *contacts;  /* contact search: radii, pair buffers, its tree; on first use */
    struct nbody__cu_hermite *herm;       /* NBODY_HERMITE's buffers, on first use */
    struct nbody__cu_kdk *kdk;     /* the tree leapfrog's block steps: scratch, on first use */
    int kdk_tree;                  /* the tree arrays hold the block steps' tree (0 after any other build) */
} nbody__cuda;
struct nbody__cu_slice_work;
static void nbody__cu_slice_free(struct nbody__cu_slice_work *w, const nbody_desc *d);
struct nbody__cu_kdk;
static void nbody__cu_kdk_free(struct nbody__cu_kdk *w, const nbody_desc *d);
struct nbody__cu_contacts;
static void nbody__cu_ct_free(struct nbody__cu_contacts *w, const nbody_desc *d);
struct nbody__cu_hermite;
static void nbody__cu_h_free(struct nbody__cu_hermite *h, const nbody_desc *d);

/* sources: the active bodies [0, n_active), all n when n_active is 0 */
static size_t nbody__cu_nsrc(const nbody__engine *e) {
    return e->desc.n_active > 0 && e->desc.n_active < e->n ? e->desc.n_active : e->n;
}

#define NBODY__RED_SLOTS 1024

static void nbody__cu_log(nbody__engine *e, nbody_log_level level, const char *fmt, ...) {
    char line[512];
    va_list ap;
    if (!e->desc.log.func) return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    e->desc.log.func(level, line, e->desc.log.user_data);
}

/* every CUDA status goes through here: OK, or a logged nbody_result */
static nbody_result nbody__cu_check(nbody__engine *e, cudaError_t err, const char *what) {
    if (err == cudaSuccess) return NBODY_OK;
    nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: %s: %s", what, cudaGetErrorString(err));
    (void)cudaGetLastError();      /* clear a non-sticky error so the engine stays usable */
    return err == cudaErrorMemoryAllocation ? NBODY_ERR_OUT_OF_MEMORY : NBODY_ERR_DEVICE;
}
#define NBODY__CU(call) do { nbody_result r_ = nbody__cu_check(e, (call), #call); if (r_ != NBODY_OK) return r_; } while (0)

static nbody__cuda *nbody__cu(nbody__engine *e) { return (nbody__cuda *)e->impl; }

static nbody_result nbody__cu_enter(nbody__engine *e) {
    NBODY__CU(cudaSetDevice(nbody__cu(e)->dev));
    return NBODY_OK;
}

template <class P> static nbody_result nbody__cu_malloc(nbody__engine *e, P **p, size_t count) {
    size_t bytes = count * sizeof(P);
    if (count && bytes / count != sizeof(P)) return NBODY_ERR_OUT_OF_MEMORY;
    *p = NULL;
    NBODY__CU(cudaMalloc((void **)p, bytes ? bytes : 1));
    return NBODY_OK;
}

/* Blocks for n items at threads per block, at most the grid cap: every kernel launched with
   this count is grid-stride, so a capped grid still covers all n items. The cap can be made
   tiny by tests (nbody__cuda_test_grid_cap) to prove that cover. */
static unsigned int nbody__cu_grid_cap = 65535u * 32u;
static unsigned int nbody__cu_blocks(size_t n, int threads) {
    size_t b = (n + (size_t)threads - 1) / (size_t)threads;
    return (unsigned int)(b < nbody__cu_grid_cap ? (b ? b : 1) : nbody__cu_grid_cap);
}
/* Tests only: the grid cap of nbody__cu_blocks (0 = the default 65535 x 32); not thread-safe. */
extern "C" void nbody__cuda_test_grid_cap(unsigned int blocks) { nbody__cu_grid_cap = blocks ? blocks : 65535u * 32u; }

/* ======================================================================================
   vector operations (lincomb, error norm, finiteness)
   ====================================================================================== */
template <class T> struct nbody__cu_lc {     /* an nbody__lincomb with the offsets applied */
    T *out, *comp;
    const T *y;
    const T *k[NBODY__MAX_TERMS];
    T c[NBODY__MAX_TERMS];
    T h;
    int nk;
    size_t len;
};

/* sum_j c[j] k[j][i] in the same fixed order as the host engines */
template <class T> __device__ __forceinline__ T nbody__cu_terms(const nbody__cu_lc<T> &p, size_t i) {
    T s = 0;
    for (int j = 0; j < p.nk; ++j) s += p.c[j] * p.k[j][i];
    return s;
}

/* products and sums rounded as written (no contraction into fma): the host's arithmetic */
__device__ __forceinline__ float nbody__cu_mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double nbody__cu_mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float nbody__cu_add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double nbody__cu_add_rn(double a, double b) { return __dadd_rn(a, b); }

/* element i of the combination with the step h (p.h, or one the device chose: the tree
   leapfrog's block steps, nbody__cu_kdk_drift). The product by h and the sum are rounded as
   written: left to the compiler, y0 + h s was contracted into an fma in one kernel and not in
   the other, which a step h that is not a power of two (block times from an origin off the
   dt_max grid) shows in the last bit. */
template <class T> __device__ __forceinline__ void nbody__cu_lc_one(const nbody__cu_lc<T> &p, size_t i, T h) {
    T d = nbody__cu_mul_rn(h, nbody__cu_terms(p, i)), y0 = p.y ? p.y[i] : (T)0;
    if (p.comp) {
        p.out[i] = nbody__compensated_add(y0, d, &p.comp[i]);
    } else {
        p.out[i] = nbody__cu_add_rn(y0, d);
    }
}
template <class T> __global__ void nbody__cu_lincomb_kernel(nbody__cu_lc<T> p) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < p.len; i += (size_t)gridDim.x * blockDim.x)
        nbody__cu_lc_one(p, i, p.h);
}

static nbody__cu_lc<nbody__r> nbody__cu_lc_of(const nbody__lincomb *op) {
    nbody__cu_lc<nbody__r> p;
    memset(&p, 0, sizeof p);
    p.out = (nbody__r *)op->out + op->out_off;
    p.comp = op->comp ? (nbody__r *)op->comp + op->out_off : NULL;
    p.y = op->y ? (const nbody__r *)op->y + op->y_off : NULL;
    p.nk = op->nk;
    for (int j = 0; j < op->nk && j < NBODY__MAX_TERMS; ++j) { p.c[j] = op->c[j]; p.k[j] = (const nbody__r *)op->k[j] + op->k_off; }
    p.h = op->h;
    p.len = op->len;
    return p;
}

/* --- one generic two-stage reduction: each block folds a grid-stride range, one block
   folds the block results; Op is associative with an identity */
template <class T> struct nbody__cu_maxnan {  /* max that keeps NaN */
    typedef T V;
    __device__ static T identity() { return 0; }
    __device__ static T fold(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
};
template <class T> struct nbody__box { T lo[3], hi[3]; };
template <class T> struct nbody__cu_boxop {
    typedef nbody__box<T> V;
    __device__ static V identity() {
        V v;
        for (int d = 0; d < 3; ++d) { v.lo[d] = (T)HUGE_VAL; v.hi[d] = -(T)HUGE_VAL; }
        return v;
    }
    __device__ static V fold(V a, const V &b) {
        for (int d = 0; d < 3; ++d) { a.lo[d] = fmin(a.lo[d], b.lo[d]); a.hi[d] = fmax(a.hi[d], b.hi[d]); }
        return a;
    }
};

template <class T> struct nbody__cu_map_norm {   /* |err_i| / (atol + rtol max(|y|, |y_new|)) */
    nbody__cu_lc<T> p;
    T atol, rtol;
    __device__ T operator()(size_t i) const {
        T a = fabs(p.y[i]), b = fabs(p.out[i]);
        return fabs(p.h * nbody__cu_terms(p, i)) / (atol + rtol * (a > b ? a : b));
    }
};
template <class T> struct nbody__cu_map_nonfinite {
    const T *b;
    __device__ T operator()(size_t i) const { T v = b[i]; return (v == v && v - v == 0) ? (T)0 : (T)1; }
};
template <class T> struct nbody__cu_map_box {
    const T *x;
    size_t n;
    __device__ nbody__box<T> operator()(size_t i) const {
        nbody__box<T> v;
        for (int d = 0; d < 3; ++d) v.lo[d] = v.hi[d] = x[d * n + i];
        return v;
    }
};
template <class V> struct nbody__cu_map_array {
    const V *a;
    __device__ V operator()(size_t i) const { return a[i]; }
};

#define NBODY__RED_THREADS 256
template <class Op, class Map> __global__ void nbody__cu_reduce_kernel(Map map, size_t n, typename Op::V *out) {
    typedef typename Op::V V;
    __shared__ V sh[NBODY__RED_THREADS];
    V acc = Op::identity();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc = Op::fold(acc, map(i));
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = NBODY__RED_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] = Op::fold(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

/* the result lands in device memory at red + NBODY__RED_SLOTS elements */
template <class Op, class Map> static nbody_result nbody__cu_reduce(nbody__engine *e, Map map, size_t n, typename Op::V **result) {
    typedef typename Op::V V;
    V *slots = (V *)nbody__cu(e)->red;
    unsigned int blocks = nbody__cu_blocks(n, NBODY__RED_THREADS);
    if (blocks > NBODY__RED_SLOTS) blocks = NBODY__RED_SLOTS;
    nbody__cu_reduce_kernel<Op><<<blocks, NBODY__RED_THREADS>>>(map, n, slots);
    NBODY__CU(cudaGetLastError());
    nbody__cu_map_array<V> again = {slots};
    nbody__cu_reduce_kernel<Op><<<1, NBODY__RED_THREADS>>>(again, (size_t)blocks, slots + NBODY__RED_SLOTS);
    NBODY__CU(cudaGetLastError());
    *result = slots + NBODY__RED_SLOTS;
    return NBODY_OK;
}

/* ======================================================================================
   dense forces
   ====================================================================================== */
/* bodies[i] = (x, y, z, m); f[0, 3n) = v */
template <class T> __global__ void nbody__cu_pack(const T *y, const T *m, nbody__v4<T> *bodies, T *f, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < 3 * n; i += (size_t)gridDim.x * blockDim.x) {
        f[i] = y[3 * n + i];
        if (i < n) { nbody__v4<T> b = {y[i], y[n + i], y[2 * n + i], m[i]}; bodies[i] = b; }
    }
}

/* A thread's R targets base + r B + threadIdx.x, r < R (past n: body n - 1 again, tv false),
   their sums zeroed; shared by both dense kernels */
template <class T, int R>
__device__ __forceinline__ void nbody__cu_targets(const nbody__v4<T> *bodies, size_t n, size_t base, int B, T *px, T *py,
                                                  T *pz, T *pm, bool *tv, T *ax, T *ay, T *az) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const size_t i = base + (size_t)r * B + threadIdx.x;
        const nbody__v4<T> b = bodies[i < n ? i : n - 1];
        px[r] = b.x; py[r] = b.y; pz[r] = b.z; pm[r] = b.w; tv[r] = i < n; ax[r] = ay[r] = az[r] = 0;
    }
}

/* One block: targets [base, base + R*B) of the targets [i0, i0 + m) (the whole engine: 0, n;
   a slice of several GPUs or MPI ranks: its own), thread t holds base + r*B + t for r < R;
   source slice k's sums go to out + 3mk, body i at i - i0. Sources
   run in tiles of B records through shared memory; blockIdx.y selects a slice of
   tiles_per_slice tiles of the sources [0, nsrc). With softening 0 the self term (0 * Inf)
   is removed by index, only in the R tiles that overlap the block's own targets.
   UNI (every mass equal): the weight is r2^(-3/2) and the mass goes into the final scale,
   one multiplication fewer per interaction (11 FP32 instructions + 1 MUFU in float). */
template <class T, int R, bool MASK, bool UNI>
__device__ __forceinline__ void nbody__cu_tile(const nbody__v4<T> *sh, int cnt, size_t j0, size_t base, int B,
                                               const T *px, const T *py, const T *pz, T *ax, T *ay, T *az, T eps2) {
#pragma unroll 8
    for (int jj = 0; jj < cnt; ++jj) {
        const nbody__v4<T> s = sh[jj];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            T dx = s.x - px[r], dy = s.y - py[r], dz = s.z - pz[r];
            T r2 = nbody__soft_r2_fused(dx, dy, dz, eps2), w;
            if (MASK) {
                bool self = j0 + jj == base + (size_t)r * B + threadIdx.x;
                r2 = self ? (T)1 : r2;
                w = nbody__weight(UNI ? (T)1 : s.w, r2);
                w = self ? (T)0 : w;
            } else {
                w = nbody__weight(UNI ? (T)1 : s.w, r2);
            }
            nbody__pull(w, dx, dy, dz, &ax[r], &ay[r], &az[r]);
        }
    }
}

template <class T, int R, bool UNI>
__global__ void nbody__cu_dense(const nbody__v4<T> *__restrict__ bodies, T *__restrict__ out, size_t i0, size_t m,
                                size_t nsrc, size_t tiles_per_slice, size_t tile_cap, T eps2, T scale) {
    extern __shared__ unsigned char nbody__smem[];
    nbody__v4<T> *sh = (nbody__v4<T> *)nbody__smem;
    const int B = blockDim.x;
    const size_t base = i0 + (size_t)blockIdx.x * B * R, ntiles = (nsrc + B - 1) / B, end = i0 + m;
    const size_t t0 = blockIdx.y * tiles_per_slice, tn = tiles_per_slice < tile_cap ? tiles_per_slice : tile_cap;
    const size_t t1 = t0 + tn < ntiles ? t0 + tn : ntiles;
    T px[R], py[R], pz[R], pm[R], ax[R], ay[R], az[R];
    bool tv[R];
    nbody__cu_targets<T, R>(bodies, end, base, B, px, py, pz, pm, tv, ax, ay, az);
    for (size_t t = t0; t < t1; ++t) {
        size_t j0 = t * B, j = j0 + threadIdx.x;
        int cnt = (int)(nsrc - j0 < (size_t)B ? nsrc - j0 : (size_t)B);
        __syncthreads();
        if (j < nsrc) sh[threadIdx.x] = bodies[j];
        __syncthreads();
        if (eps2 == 0 && j0 + B > base && j0 < base + (size_t)B * R)
            nbody__cu_tile<T, R, true, UNI>(sh, cnt, j0, base, B, px, py, pz, ax, ay, az, eps2);
        else
            nbody__cu_tile<T, R, false, UNI>(sh, cnt, j0, base, B, px, py, pz, ax, ay, az, eps2);
    }
    out += blockIdx.y * 3 * m;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        size_t i = base + (size_t)r * B + threadIdx.x;
        if (i < end) { out[i - i0] = scale * ax[r]; out[m + i - i0] = scale * ay[r]; out[2 * m + i - i0] = scale * az[r]; }
    }
}

/* f[3n + i] = scale * sum over slices, in slice order */
template <class T> __global__ void nbody__cu_sum_slices(const T *partial, T *acc, size_t n3, int slices, T scale) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n3; i += (size_t)gridDim.x * blockDim.x) {
        T s = 0;
        for (int k = 0; k < slices; ++k) s += partial[(size_t)k * n3 + i];
        acc[i] = scale * s;
    }
}

/* The plain tile kernel: the article's and the CUDA sample's design (one body per thread,
   tiles of B bodies in shared memory, the library's 1/sqrt), kept as the benchmarks'
   baseline; it relies on softening > 0 for the self term. */
template <class T> __global__ void nbody__cu_plain(const nbody__v4<T> *bodies, T *acc, size_t n, T eps2, T G) {
    extern __shared__ unsigned char nbody__smem[];
    nbody__v4<T> *sh = (nbody__v4<T> *)nbody__smem;
    /* grid-stride over blocks of targets: the bound is the same for a whole block (barriers) */
    for (size_t i0 = blockIdx.x * (size_t)blockDim.x; i0 < n; i0 += (size_t)gridDim.x * blockDim.x) {
        size_t i = i0 + threadIdx.x;
        nbody__v4<T> me = bodies[i < n ? i : n - 1];
        T ax = 0, ay = 0, az = 0;
        for (size_t j0 = 0; j0 < n; j0 += blockDim.x) {
            nbody__v4<T> z = {0, 0, 0, 0};
            __syncthreads();
            sh[threadIdx.x] = j0 + threadIdx.x < n ? bodies[j0 + threadIdx.x] : z;
            __syncthreads();
            for (int jj = 0; jj < (int)blockDim.x; ++jj) {
                nbody__pair_add(sh[jj].x - me.x, sh[jj].y - me.y, sh[jj].z - me.z, sh[jj].w, eps2, &ax, &ay, &az);
            }
        }
        if (i < n) { acc[i] = G * ax; acc[n + i] = G * ay; acc[2 * n + i] = G * az; }
    }
}

/* --------------------------------------------------------------------------------------
   The symmetric kernel: Newton's third law on the GPU, each pair computed once.
   The bodies fall in m tiles of T = B x R (threads x bodies per thread; B a multiple of 32).
   Work items: the m self tiles first (one-sided, nbody__cu_tile), then the pairs of distinct
   tiles in m' - 1 rounds of a round-robin tournament (m' = m rounded up to even, the circle
   method: in round q, slot 0 pairs tile m' - 1 with q, slot s > 0 pairs (q + s) mod (m' - 1)
   with (q - s) mod (m' - 1); a tile paired with m' - 1 = m, for odd m, has a bye).
   In a pair of tiles (I, J) each warp holds 32 R bodies of I in registers and meets J's
   bodies in groups of 32: at step k lane l meets body l ^ k of the group (shared memory)
   and adds w = r2^(-3/2) d to its R bodies and -w d to that body's accumulator, which then
   moves (butterfly shuffle by k ^ (k + 1)) to the lane that meets the body next. After 32
   steps lane l holds the warp's sum for body l ^ 31; the warps' sums are added in warp order.
   Per pair of bodies 14 FP32 instructions + 1 MUFU with equal masses (16 + 1 otherwise), so
   7.5 per interaction against the one-sided kernel's 12; per step of R pairs 1 shared load
   and 3 shuffles more.
   Deterministic: persistent blocks, all resident (a cooperative launch), take the items in
   order; every tile is in every round once, and the item of round q adds to a tile's sums
   only after round q - 1 has (a flag per tile, waited for after the computation), so every
   body's sum is formed in round order: the same bits on every run. Dependences point only
   to earlier items, which resident blocks hold: no deadlock. Tuning runs the items [0, item1)
   alone, a prefix of the same work. Several GPUs run shares [item0, item1) of whole rounds,
   each into its own buffer (zeroed where the share lacks round 0): a share's flags count its
   own rounds, so its dependences stay inside it. */
__device__ __forceinline__ int nbody__cu_flag_get(const int *p) {
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void nbody__cu_flag_set(int *p, int v) {
    asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* targets (registers) against the T bodies of sh, both ways; the warps' reactions into reac
   (warp-major, 3 x T each); EDGE: pairs with a body past n (tv false, or index >= nvalid) add 0 */
template <class T, int R, bool UNI, bool EDGE>
__device__ __forceinline__ void nbody__cu_pair_tile(const nbody__v4<T> *sh, T *reac, int tile, int nvalid,
                                                    const T *px, const T *py, const T *pz, const T *pm,
                                                    const bool *tv, T *ax, T *ay, T *az, T eps2) {
    const int lane = threadIdx.x & 31, ngroups = EDGE ? (nvalid + 31) / 32 : tile / 32;
    T *mine = reac + (size_t)(threadIdx.x >> 5) * 3 * tile;
    for (int g = 0; g < ngroups; ++g) {
        const nbody__v4<T> *grp = sh + g * 32;
        T sx = 0, sy = 0, sz = 0;
        for (int a = 0; a < 32; a += 8) {
            const int la = lane ^ a;
#pragma unroll
            for (int b = 0; b < 8; ++b) {
                const int src = la ^ b;
                const nbody__v4<T> s = grp[src];
                const bool sv = !EDGE || g * 32 + src < nvalid;
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    T dx = s.x - px[r], dy = s.y - py[r], dz = s.z - pz[r];
                    T r2 = nbody__soft_r2_fused(dx, dy, dz, eps2), w = nbody__weight((T)1, r2);
                    if (EDGE) w = sv && tv[r] ? w : (T)0;
                    const T wt = UNI ? w : w * s.w, ws = UNI ? w : w * pm[r];
                    nbody__pull(wt, dx, dy, dz, &ax[r], &ay[r], &az[r]);
                    /* the reaction -ws d: written out, as nbody__pull(-ws, ...) compiles to other code */
                    sx = fma(-ws, dx, sx); sy = fma(-ws, dy, sy); sz = fma(-ws, dz, sz);
                }
                if (b < 7 || a < 24) {
                    const int mask = b < 7 ? b ^ (b + 1) : (a + 7) ^ (a + 8);
                    sx = __shfl_xor_sync(0xffffffffu, sx, mask);
                    sy = __shfl_xor_sync(0xffffffffu, sy, mask);
                    sz = __shfl_xor_sync(0xffffffffu, sz, mask);
                }
            }
        }
        const int j = g * 32 + (lane ^ 31);
        mine[j] = sx; mine[tile + j] = sy; mine[2 * tile + j] = sz;
    }
}

template <class T, int R, bool UNI>
__global__ void nbody__cu_dense_sym(const nbody__v4<T> *__restrict__ bodies, T *__restrict__ acc, int *__restrict__ flags,
                                    size_t n, int m, size_t item0, size_t item1, T eps2) {
    extern __shared__ unsigned char nbody__smem[];
    const int B = blockDim.x, W = B >> 5, tile = B * R, mp = m + (m & 1), slots = mp / 2;
    /* the items [item0, item1): item0 is 0 or the first item of a round, round0; the flags
       count the rounds done within this range, so the chain restarts at item0 */
    const int round0 = item0 < (size_t)m ? 0 : (int)((item0 - m) / slots) + 1;
    nbody__v4<T> *sh = (nbody__v4<T> *)nbody__smem;
    T *reac = (T *)(sh + tile);
    for (size_t x = item0 + blockIdx.x; x < item1; x += gridDim.x) {
        int I, J, round;
        if (x < (size_t)m) {
            I = J = (int)x; round = 0;
        } else {
            const int q = (int)((x - m) / slots), s = (int)((x - m) % slots);
            round = q + 1;
            I = s == 0 ? mp - 1 : (q + s) % (mp - 1);
            J = s == 0 ? q : (q - s + mp - 1) % (mp - 1);
        }
        const bool real = I < m && J < m;
        const size_t baseI = (size_t)I * tile, baseJ = (size_t)J * tile;
        T px[R], py[R], pz[R], pm[R], ax[R], ay[R], az[R];
        bool tv[R];
        if (real) {
            nbody__cu_targets<T, R>(bodies, n, baseI, B, px, py, pz, pm, tv, ax, ay, az);
            const int nvalid = (int)(n - baseJ < (size_t)tile ? n - baseJ : (size_t)tile);
            __syncthreads();                                   /* the last item's sh and reac are read */
            for (int j = threadIdx.x; j < tile; j += B) sh[j] = bodies[baseJ + j < n ? baseJ + j : n - 1];
            __syncthreads();
            if (I == J)
                nbody__cu_tile<T, R, true, UNI>(sh, nvalid, baseJ, baseI, B, px, py, pz, ax, ay, az, eps2);
            else if (nvalid < tile || baseI + tile > n)
                nbody__cu_pair_tile<T, R, UNI, true>(sh, reac, tile, nvalid, px, py, pz, pm, tv, ax, ay, az, eps2);
            else
                nbody__cu_pair_tile<T, R, UNI, false>(sh, reac, tile, tile, px, py, pz, pm, tv, ax, ay, az, eps2);
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            if (I < m) while (nbody__cu_flag_get(flags + I) < round - round0) {}
            if (J < m && J != I) while (nbody__cu_flag_get(flags + J) < round - round0) {}
            __threadfence();
        }
        __syncthreads();
        if (real) {
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const size_t i = baseI + (size_t)r * B + threadIdx.x;
                if (i >= n) continue;
                T *o = acc + i;
                __stcg(o, round ? __ldcg(o) + ax[r] : ax[r]);
                __stcg(o + n, round ? __ldcg(o + n) + ay[r] : ay[r]);
                __stcg(o + 2 * n, round ? __ldcg(o + 2 * n) + az[r] : az[r]);
            }
            if (I != J)
                for (int j = threadIdx.x; j < tile && baseJ + j < n; j += B) {
                    T *o = acc + baseJ + j;
                    for (int c = 0; c < 3; ++c) {
                        T s = reac[(size_t)c * tile + j];
                        for (int w = 1; w < W; ++w) s += reac[((size_t)w * 3 + c) * tile + j];
                        __stcg(o + c * n, __ldcg(o + c * n) + s);
                    }
                }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            if (I < m) nbody__cu_flag_set(flags + I, round - round0 + 1);
            if (J < m && J != I) nbody__cu_flag_set(flags + J, round - round0 + 1);
        }
    }
}

/* the kernel instantiation for R bodies per thread (1, 2, 4, 8), equal masses or not,
   one-sided or symmetric */
#define NBODY__CU_DENSE_FNS(K, U) \
    {(const void *)K<nbody__r, 1, U>, (const void *)K<nbody__r, 2, U>, (const void *)K<nbody__r, 4, U>, \
     (const void *)K<nbody__r, 8, U>}
static const void *nbody__cu_dense_fn(int R, int uni, int sym) {
    static const void *const fns[2][2][4] = {
        {NBODY__CU_DENSE_FNS(nbody__cu_dense, false), NBODY__CU_DENSE_FNS(nbody__cu_dense, true)},
        {NBODY__CU_DENSE_FNS(nbody__cu_dense_sym, false), NBODY__CU_DENSE_FNS(nbody__cu_dense_sym, true)}};
    return fns[sym != 0][uni != 0][R >= 8 ? 3 : R >= 4 ? 2 : R - 1];
}
#undef NBODY__CU_DENSE_FNS

static int nbody__cu_dense_max_threads(int R, int uni, int sym) {
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, nbody__cu_dense_fn(R, uni, sym)) != cudaSuccess) { (void)cudaGetLastError(); return 0; }
    return a.maxThreadsPerBlock;
}

/* *p holds at least len elements (grown, contents lost) */
template <class P> static nbody_result nbody__cu_reserve(nbody__engine *e, P **p, size_t *have, size_t len) {
    if (*have >= len) return NBODY_OK;
    cudaFree(*p);
    *p = NULL; *have = 0;
    nbody_result r = nbody__cu_malloc(e, p, len);
    if (r == NBODY_OK) *have = len;
    return r;
}

/* The slice model's rates, from H100 figures (docs/benchmarks.md): the dense kernel's
   interactions per second in float and double (the one-sided kernel measures 2.2e12 and
   0.96e12, the symmetric one 3.1e12 and 1.3e12), the memory bandwidth a streaming kernel sees
   (3.35e12 bytes/s peak), and a kernel launch. Only their ratios matter, so the model chooses
   sensibly on other GPUs too. */
#define NBODY__CU_PAIRS_PER_S_FLOAT 2.4e12
#define NBODY__CU_PAIRS_PER_S_DOUBLE 0.9e12
#define NBODY__CU_BYTES_PER_S 2.5e12
#define NBODY__CU_LAUNCH_S 5e-6

/* How many source slices. Blocks of equal work run in waves of G = SMs x resident blocks, so
   the time is about ceil(blocks / G) x (tiles per block) x (time of one tile) plus, with
   slices, writing and adding the partial sums: the count minimising that model (a tail wave
   of 2.4 blocks per SM where 3 fit costs 20%). The rates only weigh the two terms. */
static size_t nbody__cu_slices(nbody__engine *e, const void *fn, int B, int R, size_t *tiles_per_slice) {
    nbody__cuda *c = nbody__cu(e);
    int occ = 0;
    size_t n = e->n, iblocks = (n + (size_t)B * R - 1) / ((size_t)B * R), ntiles = (nbody__cu_nsrc(e) + B - 1) / B, G, s, best_s = 1;
    size_t smax = ((size_t)1 << 24) / (3 * n) > 16 ? ((size_t)1 << 24) / (3 * n) : 16;   /* partial sums' memory */
    double rate = sizeof(nbody__r) == sizeof(float) ? NBODY__CU_PAIRS_PER_S_FLOAT : NBODY__CU_PAIRS_PER_S_DOUBLE;
    double tile_s, sum_s, best = -1;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, B, B * sizeof(nbody__rec)) != cudaSuccess)
        (void)cudaGetLastError();
    G = (size_t)c->sms * (size_t)(occ > 0 ? occ : 1);
    tile_s = (double)B * B * R * (double)G / rate;
    sum_s = 6.0 * (double)n * sizeof(nbody__r) / NBODY__CU_BYTES_PER_S;
    if (smax > ntiles) smax = ntiles;
    if (smax > 65535) smax = 65535;
    for (s = 1; s <= smax; ++s) {
        size_t tps = (ntiles + s - 1) / s, sl = (ntiles + tps - 1) / tps;
        double t = (double)((iblocks * sl + G - 1) / G) * (double)tps * tile_s +
                   (sl > 1 ? (double)sl * sum_s + NBODY__CU_LAUNCH_S : 0);
        if (best < 0 || t < best * (1 - 1e-9)) { best = t; best_s = sl; }
    }
    *tiles_per_slice = (ntiles + best_s - 1) / best_s;
    return best_s;
}

/* tile_cap < all: each block stops after tile_cap tiles (tuning: the real grid, less work);
   mid, if given, is recorded between the force kernel and the slices' sum */
static nbody_result nbody__cu_dense_launch(nbody__engine *e, int B, int R, size_t tile_cap, nbody__r *f, cudaEvent_t mid) {
    nbody__cuda *c = nbody__cu(e);
    const void *fn = nbody__cu_dense_fn(R, c->uni, 0);
    size_t n = e->n, nsrc = nbody__cu_nsrc(e), tps, slices = nbody__cu_slices(e, fn, B, R, &tps);
    size_t iblocks = (n + (size_t)B * R - 1) / ((size_t)B * R);
    nbody__r eps2 = e->desc.softening * e->desc.softening, scale = c->uni ? e->desc.G * c->mass1 : e->desc.G, one = 1;
    nbody__r *out = f + 3 * n;
    size_t i0 = 0;
    void *args[] = {&c->bodies, &out, &i0, &n, &nsrc, &tps, &tile_cap, &eps2, &scale};
    dim3 grid((unsigned int)iblocks, (unsigned int)slices);
    if (slices > 1 && nbody__cu_reserve(e, &c->partial, &c->partial_len, slices * 3 * n) != NBODY_OK) {
        /* no room for the slices' partial sums: one slice writes the result directly */
        nbody__cu_log(e, NBODY_LOG_WARNING, "nbody cuda: no device memory for %lu partial sums; one source slice", (unsigned long)slices);
        slices = 1; tps = (n + B - 1) / B;
        grid.y = 1;
    }
    if (slices > 1) {
        out = c->partial;
        args[8] = &one;
    }
    NBODY__CU(cudaLaunchKernel(fn, grid, dim3((unsigned int)B), args, B * sizeof(nbody__rec), 0));
    if (mid) NBODY__CU(cudaEventRecord(mid));
    if (slices > 1) {
        nbody__cu_sum_slices<<<nbody__cu_blocks(3 * n, 256), 256>>>(c->partial, f + 3 * n, 3 * n, (int)slices, scale);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}

/* The symmetric kernel's tile count and shared memory (the tile, and 3 x tile reactions a warp) */
static size_t nbody__cu_sym_tiles(size_t n, int B, int R, size_t *items, size_t *smem) {
    size_t tile = (size_t)B * R, m = (n + tile - 1) / tile, mp = m + (m & 1);
    *items = m + (mp - 1) * (mp / 2);
    *smem = tile * sizeof(nbody__rec) + (size_t)(B / 32) * 3 * tile * sizeof(nbody__r);
    return m;
}

/* The kernel into c->partial, then f[3n, 6n) = scale x partial; sample > 0 (tuning): only the
   m self items and the first sample items of the tournament */
static nbody_result nbody__cu_sym_launch(nbody__engine *e, int B, int R, size_t sample, nbody__r *f, cudaEvent_t mid) {
    nbody__cuda *c = nbody__cu(e);
    const void *fn = nbody__cu_dense_fn(R, c->uni, 1);
    size_t n = e->n, items, smem, m = nbody__cu_sym_tiles(n, B, R, &items, &smem), item0 = 0, item1 = items, G;
    nbody__r eps2 = e->desc.softening * e->desc.softening, scale = c->uni ? e->desc.G * c->mass1 : e->desc.G;
    int occ = 0, im = (int)m;
    nbody_result r;
    void *args[] = {&c->bodies, &c->partial, &c->flags, &n, &im, &item0, &item1, &eps2};
    NBODY__CU(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    NBODY__CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, B, smem));
    if (occ < 1) {   /* its shared memory does not fit this device: the one-sided kernel from now on */
        nbody__cu_log(e, NBODY_LOG_WARNING, "nbody cuda: the symmetric kernel does not fit %d threads per block here; the one-sided one is used", B);
        c->sym = 0;
        return nbody__cu_dense_launch(e, B, R, (size_t)-1, f, mid);
    }
    if (sample > 0 && m + sample < items) item1 = m + sample;
    G = (size_t)occ * (size_t)c->sms;
    if (G > item1) G = item1;
    if ((r = nbody__cu_reserve(e, &c->partial, &c->partial_len, 3 * n)) != NBODY_OK) return r;
    if ((r = nbody__cu_reserve(e, &c->flags, &c->flags_len, m)) != NBODY_OK) return r;
    NBODY__CU(cudaMemsetAsync(c->flags, 0, m * sizeof(int)));
    cudaError_t err = cudaLaunchCooperativeKernel(fn, dim3((unsigned int)G), dim3((unsigned int)B), args, smem, 0);
    if (err == cudaErrorCooperativeLaunchTooLarge || err == cudaErrorNotSupported) {
        /* the blocks cannot all be resident (a shared GPU, MPS): the one-sided kernel from now on */
        (void)cudaGetLastError();
        nbody__cu_log(e, NBODY_LOG_WARNING, "nbody cuda: %s; the symmetric kernel gives way to the one-sided one", cudaGetErrorString(err));
        c->sym = 0;
        return nbody__cu_dense_launch(e, B, R, (size_t)-1, f, mid);
    }
    NBODY__CU(err);
    if (mid) NBODY__CU(cudaEventRecord(mid));
    nbody__cu_sum_slices<<<nbody__cu_blocks(3 * n, 256), 256>>>(c->partial, f + 3 * n, 3 * n, 1, scale);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}

/* the symmetric kernel needs whole warps; sample: see nbody__cu_forces */
static nbody_result nbody__cu_dense_forces(nbody__engine *e, int B, int R, size_t sample, nbody__r *f, cudaEvent_t mid) {
    nbody__cuda *c = nbody__cu(e);
    int sym = c->sym && B % 32 == 0 && nbody__cu_nsrc(e) == e->n;   /* test particles: one-sided */
    if (c->variant == 1 && nbody__cu_nsrc(e) == e->n) {
        size_t n = e->n;
        nbody__cu_plain<<<nbody__cu_blocks(n, B), B, B * sizeof(nbody__rec)>>>(c->bodies, f + 3 * n, n,
                                                                                 e->desc.softening * e->desc.softening, e->desc.G);
        NBODY__CU(cudaGetLastError());
        if (mid) NBODY__CU(cudaEventRecord(mid));
        return NBODY_OK;
    }
    R = R >= 8 ? 8 : R >= 4 ? 4 : R >= 2 ? 2 : 1;
    while (R > 1 && B > nbody__cu_dense_max_threads(R, c->uni, sym)) R /= 2;   /* registers: fewer bodies per thread */
    if (B > nbody__cu_dense_max_threads(R, c->uni, sym)) {   /* checked at create: only a device change gets here */
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: %d threads per block do not fit the dense kernel on this device", B);
        return NBODY_ERR_UNAVAILABLE;
    }
    if (sym) return nbody__cu_sym_launch(e, B, R, sample, f, mid);
    return nbody__cu_dense_launch(e, B, R, sample ? sample : (size_t)-1, f, mid);
}

/* ======================================================================================
   tree build and walk
   ====================================================================================== */
/* the bodies' sort keys: each coordinate quantised to 21 bits over the bounding box, then
   the Hilbert key of nbody.h (nbody__tree_key: every run of sorted bodies a compact piece of
   space) or the Morton key (hilbert = 0: the contact search; the group walk's benchmarks) */
/* each body's key and index; with pk given, also its (x, y, z, m) packed into pk */
template <class T> __global__ void nbody__cu_keys(const T *x, const T *m, size_t n, const nbody__box<T> *box,
                                                    unsigned long long *key, unsigned int *val, nbody__v4<T> *pk, int hilbert) {
    nbody__box<T> b = *box;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (pk) {
            nbody__v4<T> w = {x[i], x[n + i], x[2 * n + i], m[i]};
            pk[i] = w;
        }
        key[i] = hilbert ? nbody__tree_key(x[i], x[n + i], x[2 * n + i], b.lo[0], b.lo[1], b.lo[2], b.hi[0], b.hi[1], b.hi[2])
                         : nbody__tree_morton((unsigned int)nbody__tree_coord(x[i], b.lo[0], b.hi[0]),
                                              (unsigned int)nbody__tree_coord(x[n + i], b.lo[1], b.hi[1]),
                                              (unsigned int)nbody__tree_coord(x[2 * n + i], b.lo[2], b.hi[2]));
        val[i] = (unsigned int)i;
    }
}
/* benchmarks only: 1 sorts the tree by Morton keys and splits the group walk's groups at
   wide nodes and jumps of the curve (the tree before the Hilbert keys), for comparison */
static int nbody__cu_tree_morton = 0;
extern "C" void nbody__cuda_bench_tree_morton(int on) { nbody__cu_tree_morton = on != 0; }

/* The build of part of the tree (several GPUs dividing it, nbody__cu_multi_tree_forces): node i
   of heap level `level` is built when its ancestor at level cut.L, a = i >> (level - L), has
   mask[a - 2^L] == want; mask NULL: every node. */
struct nbody__cu_cut {
    const unsigned char *mask;
    unsigned int L;
    unsigned char want;
};
__device__ __forceinline__ bool nbody__cu_cut_skip(const nbody__cu_cut &cut, size_t i, int level) {
    return cut.mask && cut.mask[(i >> (level - (int)cut.L)) - ((size_t)1 << cut.L)] != cut.want;
}

/* leaf j in [n, 2n) holds the body at depth-first position p(j): the complete heap's bottom
   level [P, 2n) comes first, then the leaves [n, P) one level up (P = 2^floor(log2(2n-1)) =
   2^depth) */
template <class T> __global__ void nbody__cu_leaves(const nbody__v4<T> *pk, size_t n, size_t P, const unsigned int *sorted,
                                                    nbody__v4<T> *node, T *nmass, nbody__v4<T> *lo, nbody__v4<T> *hi,
                                                    T *rad, unsigned int *leafbody, nbody__v4<T> *sb, uint2 *nrange,
                                                    nbody__cu_cut cut, int depth, unsigned int *ownpos, size_t own0, size_t ownm) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        size_t j = n + k, p = j >= P ? j - P : (2 * n - P) + (j - n);
        unsigned int b = sorted[p];
        if (cut.want != 2) {                         /* every leaf's, whatever the cut; once (not in the pass of the opened subtrees) */
            leafbody[k] = b;
            if (ownpos && b - own0 < ownm) ownpos[b - own0] = (unsigned int)p;
        }
        if (nbody__cu_cut_skip(cut, j, j >= P ? depth : depth - 1)) continue;
        nbody__v4<T> w = nbody__ldg4(pk + b), v = {w.x, w.y, w.z, (T)0};   /* (x, y, z, m) of body b */
        node[j] = v; lo[j] = v; hi[j] = v;
        nmass[j] = w.w; rad[j] = 0;
        sb[p] = w;                                   /* the bodies in depth-first order */
        nrange[j] = make_uint2((unsigned int)p, 1u);
    }
}

/* internal nodes [i0, i1) of a tree of n leaves from their children, which are already
   done (grid-stride). lo[i].w holds the node's second moment B2 = sum m |x - c|^2 about its
   centre of mass (parallel-axis theorem from the children's); node[i].w the squared critical
   distance of NBODY__TREE_CRIT, the CPU tree's formula (nbody__tree_inner, nbody.h). */
/* a node's record: centre of mass and squared critical distance (c), box (lo, hi; lo.w: B2),
   mass and radius */
template <class T> struct nbody__cu_nodeval {
    nbody__v4<T> c, lo, hi;
    T m, r;
};
/* node i from its children's records */
template <class T>
__device__ __forceinline__ nbody__cu_nodeval<T> nbody__cu_node_of(size_t i, size_t n, const nbody__cu_nodeval<T> &l,
                                                                  const nbody__cu_nodeval<T> &r, T inv_theta) {
    nbody__cu_nodeval<T> v;
    T b2, crit;
    v.lo.x = fmin(l.lo.x, r.lo.x); v.lo.y = fmin(l.lo.y, r.lo.y); v.lo.z = fmin(l.lo.z, r.lo.z); v.lo.w = 0;
    v.hi.x = fmax(l.hi.x, r.hi.x); v.hi.y = fmax(l.hi.y, r.hi.y); v.hi.z = fmax(l.hi.z, r.hi.z); v.hi.w = 0;
    crit = nbody__tree_inner(l.c.x, l.c.y, l.c.z, l.m, l.r, l.lo.w, r.c.x, r.c.y, r.c.z, r.m, r.r, r.lo.w, v.lo.x, v.lo.y, v.lo.z, v.hi.x,
                            v.hi.y, v.hi.z, inv_theta, 2 * i >= n, &v.c.x, &v.c.y, &v.c.z, &v.r, &b2);
    v.lo.w = b2;
    v.c.w = crit * crit;
    v.m = l.m + r.m;
    return v;
}
template <class T>
__device__ __forceinline__ void nbody__cu_node_store(size_t i, const nbody__cu_nodeval<T> &v, nbody__v4<T> *node, T *nmass, nbody__v4<T> *lo,
                                                     nbody__v4<T> *hi, T *rad) {
    node[i] = v.c; nmass[i] = v.m; lo[i] = v.lo; hi[i] = v.hi; rad[i] = v.r;
}
/* node i from its children's centres (cl, cr), boxes (bl..hl, br..hr; lo.w: B2), masses and radii */
template <class T>
__device__ __forceinline__ nbody__v4<T> nbody__cu_node_from(size_t i, size_t n, nbody__v4<T> cl, nbody__v4<T> cr, nbody__v4<T> bl,
                                                           nbody__v4<T> br, nbody__v4<T> hl, nbody__v4<T> hr, T ml, T mr, T rl, T rr,
                                                           T inv_theta, nbody__v4<T> *node, T *nmass, nbody__v4<T> *lo, nbody__v4<T> *hi,
                                                           T *rad) {
    nbody__cu_nodeval<T> a, b, v;
    a.c = cl; a.lo = bl; a.hi = hl; a.m = ml; a.r = rl;
    b.c = cr; b.lo = br; b.hi = hr; b.m = mr; b.r = rr;
    v = nbody__cu_node_of<T>(i, n, a, b, inv_theta);
    nbody__cu_node_store<T>(i, v, node, nmass, lo, hi, rad);
    return v.c;
}

template <class T> __global__ void nbody__cu_internal(size_t i0, size_t i1, size_t n, nbody__v4<T> *node, T *nmass, nbody__v4<T> *lo,
                                                      nbody__v4<T> *hi, T *rad, T inv_theta, uint2 *nrange, nbody__v4<T> *quad,
                                                      nbody__cu_cut cut, int level) {
    for (size_t i = i0 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < i1; i += (size_t)gridDim.x * blockDim.x) {
        size_t l = 2 * i, r = l + 1;
        if (nbody__cu_cut_skip(cut, i, level)) continue;
        nbody__v4<T> cl = node[l], cr = node[r];
        T ml = nmass[l], mr = nmass[r];
        nbody__v4<T> c = nbody__cu_node_from<T>(i, n, cl, cr, lo[l], lo[r], hi[l], hi[r], ml, mr, rad[l], rad[r], inv_theta, node, nmass, lo,
                                                hi, rad);
        {   /* a subtree's bodies are contiguous in depth-first order, the left child's first */
            uint2 gl = nrange[l], gr = nrange[r];
            nrange[i] = make_uint2(gl.x, gl.y + gr.y);
        }
        if (quad) {   /* second moments about c, parallel-axis theorem (leaves have none) */
            T s[6] = {0, 0, 0, 0, 0, 0};
            for (int h = 0; h < 2; ++h) {
                size_t ch = l + h;
                nbody__v4<T> cc = h ? cr : cl;
                T mc = h ? mr : ml, sc[6] = {0, 0, 0, 0, 0, 0};
                if (ch < n) {
                    nbody__v4<T> qa = quad[2 * ch], qb = quad[2 * ch + 1];
                    sc[0] = qa.x; sc[1] = qa.y; sc[2] = qa.z; sc[3] = qa.w; sc[4] = qb.x; sc[5] = qb.y;
                }
                nbody__quad_shift(s, sc, mc, cc.x - c.x, cc.y - c.y, cc.z - c.z);
            }
            nbody__v4<T> qa = {s[0], s[1], s[2], s[3]}, qb = {s[4], s[5], s[0] + s[3] + s[5], (T)0};
            quad[2 * i] = qa; quad[2 * i + 1] = qb;
        }
    }
}

/* the tree walks: monopoles a thread per leaf alone or the warps' threads together (the
   same bits, so several GPUs or MPI ranks walking for their slices' leaf lists give the
   bits of one GPU), quadrupoles and buckets the group walk (forced for monopoles by
   benchmarks and tests) */
#define NBODY__CU_WALK_THREAD 1
#define NBODY__CU_WALK_WARP 2
#define NBODY__CU_WALK_GROUP 3
#define NBODY__CU_WALK_GROUP_GSTACK 4   /* the group walk, its stacks in global memory (more warps resident) */
#define NBODY__CU_GW_BPL 2         /* the group walk's bodies per lane: groups of 64 (measured faster than 32) */

/* The group walk's groups: nodes of at most GS bodies (their bodies are contiguous in
   depth-first order), the largest such nodes: on the Hilbert curve every such node is a
   compact piece of space (measured by bench/emulate_gpu_tree.c: splitting them as below
   costs more terms per body than it saves). On the Morton curve (nbody__cu_tree_morton) a
   node is split into its children, down to single bodies, when
   - its extent exceeds half its distance from the centre of mass of the whole system c: a
     group in a sparse halo spans a box that reaches the core, and a walk with that box
     opens every node of the core (measured: one such group of 32 bodies took as long as all
     the others together);
   - or its two children lie farther apart than the larger child's extent (a jump of the Z
     curve: an aligned run of it is not always compact). */
template <class T> __device__ __forceinline__ T nbody__cu_extent(nbody__v4<T> l, nbody__v4<T> h) {
    return fmax(fmax(h.x - l.x, h.y - l.y), h.z - l.z);
}
template <class T>
__device__ __forceinline__ bool nbody__cu_group_split(size_t i, size_t n, const nbody__v4<T> *lo, const nbody__v4<T> *hi, nbody__v4<T> c,
                                                      int split) {
    if (!split || i >= n) return false;                        /* a leaf: one body */
    nbody__v4<T> il = lo[i], ih = hi[i], al = lo[2 * i], ah = hi[2 * i], bl = lo[2 * i + 1], bh = hi[2 * i + 1];
    T dx = fmax(fmax(il.x - c.x, c.x - ih.x), (T)0), dy = fmax(fmax(il.y - c.y, c.y - ih.y), (T)0);
    T dz = fmax(fmax(il.z - c.z, c.z - ih.z), (T)0), e = nbody__cu_extent(il, ih);
    T gx = fmax(fmax(bl.x - ah.x, al.x - bh.x), (T)0), gy = fmax(fmax(bl.y - ah.y, al.y - bh.y), (T)0);
    T gz = fmax(fmax(bl.z - ah.z, al.z - bh.z), (T)0);
    return 4 * e * e > dx * dx + dy * dy + dz * dz || fmax(fmax(gx, gy), gz) > fmax(nbody__cu_extent(al, ah), nbody__cu_extent(bl, bh));
}
template <class T> __global__ void nbody__cu_group_flags(size_t n, unsigned int GS, const uint2 *nrange, const nbody__v4<T> *node,
                                                         const nbody__v4<T> *lo, const nbody__v4<T> *hi, unsigned char *flag,
                                                         unsigned int *ids, int split) {
    nbody__v4<T> c = node[1];
    for (size_t i = 1 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < 2 * n; i += (size_t)gridDim.x * blockDim.x) {
        bool g = nrange[i].y <= GS && !nbody__cu_group_split<T>(i, n, lo, hi, c, split);
        for (size_t j = i; g && j > 1 && nrange[j / 2].y <= GS; j /= 2) g = nbody__cu_group_split<T>(j / 2, n, lo, hi, c, split);
        flag[i] = g;
        ids[i] = (unsigned int)i;
    }
}

/* The neighbour time-step limiter's gather (>>kdk in nbody.h) in the block steps' walks: the
   finest level among the bodies of the leaves a walk reaches (its neighbours: the bodies it
   sums directly, its own among them), each body's level in level, leaf k's body leafbody[k],
   to out where the walk writes its forces. level NULL: none gathered. */
struct nbody__cu_near {
    const unsigned char *level;
    const unsigned int *leafbody;
    unsigned char *out;
};
/* the level of leaf node j (j >= n) into the walk's maximum near */
__device__ __forceinline__ void nbody__cu_near_add(const nbody__cu_near &nb, unsigned int j, unsigned int n, unsigned int &near) {
    unsigned int k = nb.level[nb.leafbody[j - n]];
    near = k > near ? k : near;
}

/* one walk of the whole tree for the body at me, its pull added to (ax, ay, az); walking:
   false for a thread that only helps its warp (WARP; past the last body); NEAR: the levels of
   the leaves this body's own walk reaches into near (nbody__cu_near) */
template <class T, bool WARP, bool NEAR>
__device__ __forceinline__ void nbody__cu_walk_body(const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass, unsigned int n,
                                                    unsigned int mask, bool walking, nbody__v4<T> me, T eps2, T &ax, T &ay, T &az,
                                                    const nbody__cu_near &nb, unsigned int &near) {
    unsigned int cur = 1, resume = walking ? 0u : ~0u;     /* resume 0: this thread is walking */
    do {
        nbody__v4<T> q = nbody__ldg4(node + cur);
        T dx = q.x - me.x, dy = q.y - me.y, dz = q.z - me.z;
        T d2 = fma(dx, dx, fma(dy, dy, dz * dz));
        unsigned int skip = nbody__heap_skip(cur);
        bool acc = d2 > q.w, open;
        if (WARP) {
            if (cur == resume) resume = 0;
            open = __any_sync(mask, resume == 0 && !acc && cur < n);
            acc = acc && resume == 0;
            if (acc && open) resume = skip;
        } else {
            open = !acc && cur < n;
        }
        if (NEAR && cur >= n && resume == 0) nbody__cu_near_add(nb, cur, n, near);   /* a leaf of this body's own walk */
        if (acc) {
            T w = nbody__weight(__ldg(nmass + cur), d2 + eps2);
            nbody__pull(w, dx, dy, dz, &ax, &ay, &az);
        }
        cur = open ? 2 * cur : skip;
    } while (cur != 1);
}

/* Thread t walks for leaf n + k, k = list[t] (list given) or first + t, t < count: accepted
   nodes (d^2 > crit2) act as one body and are skipped, others are opened; leaves are never
   opened, so the self term falls out. G times the pull goes to acc[j], acc[as + j],
   acc[2 as + j] with j = leafbody[k] - base (leafbody given: by body) or j = k (none: in leaf
   order). The whole walk: first 0, count n, by body into f + 3 nf; a slice of several GPUs
   or MPI ranks: a range of leaves in leaf order, or a list of its bodies' leaves. A body's
   walk is the same whatever its packet, so its bits are too.
   Block b of the launch is block b * bstride of the walk (tuning samples every bstride-th
   block of leaves).
   WARP = false: each thread walks alone; a warp's threads load up to 32 different nodes per
   step and diverge on accept/open.
   WARP = true: the warp walks the union of its threads' walks, one node per step for all 32
   (one broadcast load): it opens a node when any thread needs it opened. A thread that
   accepts a node the warp opens adds it and idles until the warp leaves that subtree, which
   in this pre-order walk is exactly when it reaches skip(node). Each thread therefore adds
   the same nodes in the same order as alone: the same bits, fewer loads, no divergence
   beyond the weight's predication.
   Grid-stride: block b then walks for the leaf blocks b + g, b + 2g, ... (g = gridDim.x, in
   units of bstride blocks), so a grid capped below count / blockDim.x blocks covers every leaf.
   NEAR (the block steps of every body with the neighbour limiter): each walk's neighbour level
   to nb.out[j] too (nbody__cu_near); the forces are the same bits. */
template <class T, bool WARP, bool NEAR>
__global__ void nbody__cu_walk(const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass, const unsigned int *__restrict__ list,
                               unsigned int first, unsigned int count, const unsigned int *__restrict__ leafbody, size_t base, T *acc,
                               size_t as, unsigned int n, unsigned int bstride, T eps2, T G, nbody__cu_near nb) {
    const unsigned int wbase = threadIdx.x & ~31u;
    const unsigned int mask = blockDim.x - wbase >= 32 ? ~0u : (1u << (blockDim.x - wbase)) - 1;  /* a partial last warp */
    for (size_t t0 = (size_t)blockIdx.x * bstride * blockDim.x; t0 < count; t0 += (size_t)gridDim.x * bstride * blockDim.x) {
        unsigned int t = t0 + threadIdx.x < count ? (unsigned int)(t0 + threadIdx.x) : count - 1;
        unsigned int k = list ? list[t] : first + t;
        bool walking = t0 + threadIdx.x < count;
        if (!WARP && !walking) return;                       /* later rounds lie past count too */
        T ax = 0, ay = 0, az = 0;
        unsigned int near = 0;
        nbody__cu_walk_body<T, WARP, NEAR>(node, nmass, n, mask, walking, nbody__ldg4(node + n + k), eps2, ax, ay, az, nb, near);
        if (walking) {
            size_t j = leafbody ? (size_t)leafbody[k] - base : (size_t)k;
            acc[j] = G * ax; acc[as + j] = G * ay; acc[2 * as + j] = G * az;
            if (NEAR) nb.out[j] = (unsigned char)near;
        }
    }
}

/* r2^(-1/2): float the hardware estimate (as nbody__weight), double the library's */
__device__ __forceinline__ float nbody__cu_rsqrt(float r2) {
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(r2));
    return y;
}
__device__ __forceinline__ double nbody__cu_rsqrt(double r2) { return rsqrt(r2); }

/* the pull of an accepted node of mass M with second moments S = (qa: xx xy xz yy,
   qb: yz zz trace) about its centre of mass at d = c - x, r2 = d^2 + eps^2: the softened
   quadrupole expansion of the CPU tree (nbody__quad_add in nbody.h), hk = r2^(-k/2) */
template <class T>
__device__ __forceinline__ void nbody__cu_quad_add(nbody__v4<T> qa, nbody__v4<T> qb, T M, T dx, T dy, T dz, T r2, T &ax, T &ay,
                                                   T &az) {
    T y = nbody__cu_rsqrt(r2), y2 = y * y, h3 = y * y2, h5 = h3 * y2, h7 = h5 * y2;
    nbody__quad_add(qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, M * h3, h5, h7, dx, dy, dz, &ax, &ay, &az);
}

/* Group walk (Bedorf, Gaburov & Portegies Zwart 2012, Bonsai): warp g walks once for the 32
   consecutive leaves [32g, 32g + 32), neighbours on the Hilbert curve, with the group's
   bounding box in place of a body: a node is accepted for the whole group when its centre
   of mass lies farther than its critical distance from the box (then it is also for each
   body: a body's distance is at least the box's), a node of at most `bucket` bodies that is
   not is summed directly, its bodies (contiguous in depth-first order) appended, any other
   node is opened. The 32 lanes test 32 nodes at a time, taken from the top of a stack in
   shared memory; accepted nodes and direct bodies go to two lists in shared memory, and
   each full 32 entries of a list are gathered into a tile that every lane sums for its own
   body (one broadcast load per interaction). Direct bodies at distance 0 (the body itself,
   coincident ones) add nothing, as in the other walks.
   Stack bound: the chunk is the stack's top and children are pushed in reverse lane order,
   so the stack stays sorted by depth and a chunk that takes a node of depth d takes every
   deeper one: at most 64 entries per depth, 64 (depth + 1) in all.
   GSTACK: the stacks in global memory instead (as Bonsai), a warp's at gstack + its index in
   the grid x scap: a warp then needs a fifth of the shared memory, so registers alone bound
   the warps resident on an SM; the stack's top stays in the L1 cache. */
template <class T> struct nbody__cu_gw {    /* one warp's shared memory */
    nbody__v4<T> *tile, *qtile;
    unsigned int *stack, *nlist, *blist;
};
template <class T> __host__ __device__ __forceinline__ size_t nbody__cu_gw_bytes(bool quad, unsigned int scap, unsigned int bucket) {
    size_t b = (quad ? 96 : 32) * sizeof(nbody__v4<T>) + 4 * ((size_t)scap + 64 + 31 + 32 * (size_t)bucket);
    return (b + 15) & ~(size_t)15;
}
/* a lane's bodies in the group walk: BPL of them, lanes 32 apart */
template <class T, int BPL> struct nbody__cu_gw_acc {
    nbody__v4<T> me[BPL];
    T ax[BPL], ay[BPL], az[BPL];
};
#ifdef NBODY_CU_GW_STATS   /* benchmarks: what a group walk does (tested nodes, accepted nodes, direct bodies, clocks) */
__device__ unsigned long long nbody__cu_gw_stat[8];
#define NBODY__CU_GW_STAT(k, v) atomicAdd(&nbody__cu_gw_stat[k], (unsigned long long)(v))
#else
#define NBODY__CU_GW_STAT(k, v) ((void)0)
#endif
template <class T, bool QUAD, int BPL>
__device__ __forceinline__ void nbody__cu_gw_nodes(const nbody__cu_gw<T> &s, const unsigned int *list, unsigned int cnt, unsigned int lane,
                                                   const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass,
                                                   const nbody__v4<T> *__restrict__ nquad, T eps2, nbody__cu_gw_acc<T, BPL> &a) {
    if (lane < cnt) {
        unsigned int i = list[lane];
        nbody__v4<T> q = nbody__ldg4(node + i);
        q.w = __ldg(nmass + i);
        s.tile[lane] = q;
        if (QUAD) { s.qtile[2 * lane] = nbody__ldg4(nquad + 2 * i); s.qtile[2 * lane + 1] = nbody__ldg4(nquad + 2 * i + 1); }
    }
    __syncwarp();
#pragma unroll 4
    for (unsigned int j = 0; j < cnt; ++j) {
        nbody__v4<T> q = s.tile[j];
#pragma unroll
        for (int b = 0; b < BPL; ++b) {
            T dx = q.x - a.me[b].x, dy = q.y - a.me[b].y, dz = q.z - a.me[b].z;
            T r2 = nbody__soft_r2_fused(dx, dy, dz, eps2);
            if (QUAD) {
                nbody__cu_quad_add(s.qtile[2 * j], s.qtile[2 * j + 1], q.w, dx, dy, dz, r2, a.ax[b], a.ay[b], a.az[b]);
            } else {
                T w = nbody__weight(q.w, r2);
                nbody__pull(w, dx, dy, dz, &a.ax[b], &a.ay[b], &a.az[b]);
            }
        }
    }
    __syncwarp();
}
template <class T, int BPL>
__device__ __forceinline__ void nbody__cu_gw_bodies(const nbody__cu_gw<T> &s, const unsigned int *list, unsigned int cnt, unsigned int lane,
                                                    const nbody__v4<T> *__restrict__ sb, T eps2, nbody__cu_gw_acc<T, BPL> &a) {
    if (lane < cnt) s.tile[lane] = nbody__ldg4(sb + list[lane]);
    __syncwarp();
#pragma unroll 4
    for (unsigned int j = 0; j < cnt; ++j) {
        nbody__v4<T> q = s.tile[j];
#pragma unroll
        for (int b = 0; b < BPL; ++b) {
            T dx = q.x - a.me[b].x, dy = q.y - a.me[b].y, dz = q.z - a.me[b].z;
            T d2 = fma(dx, dx, fma(dy, dy, dz * dz));
            T w = d2 > 0 ? nbody__weight(q.w, d2 + eps2) : (T)0;
            nbody__pull(w, dx, dy, dz, &a.ax[b], &a.ay[b], &a.az[b]);
        }
    }
    __syncwarp();
}
/* the leaf (node n + k: returns k) at depth-first position p of a heap of n leaves whose bottom
   level starts at P: the bottom level's leaves come first */
__host__ __device__ __forceinline__ size_t nbody__cu_pos_leaf(size_t p, size_t n, size_t P) {
    return p < 2 * n - P ? P + p - n : p - (2 * n - P);
}
/* Each warp takes the next group from a work counter when it is done, so a block's warps
   never wait for its slowest group and the grid is only what is resident: next[0] the counter
   (the first group to walk), next[1] the end; groups: the groups' nodes (nbody__cu_group_flags,
   or a GPU's range of them in depth-first order); a lane holds the bodies lane, lane + 32, ...
   of its group. P: the heap's bottom level (nbody__cu_leaves). G times the pull goes to f[j],
   f[fs + j], f[2 fs + j]: j the body (leafbody given) or its depth-first position (NULL). */
template <class T, bool QUAD, int BPL, bool GSTACK>
__global__ void nbody__cu_walk_group(const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass,
                                     const nbody__v4<T> *__restrict__ nquad, const uint2 *__restrict__ nrange,
                                     const nbody__v4<T> *__restrict__ sb, const unsigned int *__restrict__ leafbody, T *f,
                                     unsigned int n, unsigned int P, unsigned int bstride, T eps2, T G, size_t fs, unsigned int bucket,
                                     unsigned int scap, unsigned int *next, const unsigned int *__restrict__ groups,
                                     unsigned int *gstack) {
    extern __shared__ unsigned char nbody__smem[];
    const unsigned int lane = threadIdx.x & 31;
    const unsigned int lt = (1u << lane) - 1, gt = ~((2u << lane) - 1);
    const unsigned int ngroups = next[1];
    nbody__cu_gw<T> s;
    {
        unsigned char *base = nbody__smem + (threadIdx.x >> 5) * nbody__cu_gw_bytes<T>(QUAD, GSTACK ? 0u : scap, bucket);
        s.tile = (nbody__v4<T> *)base;
        s.qtile = s.tile + 32;
        s.stack = (unsigned int *)(base + (QUAD ? 96 : 32) * sizeof(nbody__v4<T>));
        s.nlist = s.stack + (GSTACK ? 0u : scap);
        if (GSTACK) s.stack = gstack + ((size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * scap;
        s.blist = s.nlist + 64;
    }
    for (;;) {
        unsigned int t = 0, gnode;
        uint2 grg;
        if (lane == 0) t = atomicAdd(next, 1u);
        t = __shfl_sync(~0u, t, 0);
        if ((size_t)t * bstride >= ngroups) break;
        gnode = groups[(size_t)t * bstride];
        grg = nrange[gnode];
#ifdef NBODY_CU_GW_STATS
        long long t0 = clock64();
        unsigned long long tested = 0;
#endif
        nbody__cu_gw_acc<T, BPL> a;
        T lx, ly, lz, hx, hy, hz;
        unsigned int sp = 1, nn = 0, nbd = 0;
#pragma unroll
        for (int b = 0; b < BPL; ++b) {
            unsigned int q = lane + 32 * b;
            a.me[b] = nbody__ldg4(sb + grg.x + (q < grg.y ? q : 0));
            a.ax[b] = a.ay[b] = a.az[b] = 0;
            if (b == 0) { lx = hx = a.me[b].x; ly = hy = a.me[b].y; lz = hz = a.me[b].z; }
            lx = fmin(lx, a.me[b].x); ly = fmin(ly, a.me[b].y); lz = fmin(lz, a.me[b].z);
            hx = fmax(hx, a.me[b].x); hy = fmax(hy, a.me[b].y); hz = fmax(hz, a.me[b].z);
        }
        for (int o = 16; o > 0; o >>= 1) {
            lx = fmin(lx, __shfl_xor_sync(~0u, lx, o)); ly = fmin(ly, __shfl_xor_sync(~0u, ly, o)); lz = fmin(lz, __shfl_xor_sync(~0u, lz, o));
            hx = fmax(hx, __shfl_xor_sync(~0u, hx, o)); hy = fmax(hy, __shfl_xor_sync(~0u, hy, o)); hz = fmax(hz, __shfl_xor_sync(~0u, hz, o));
        }
        if (lane == 0) s.stack[0] = 1;
        __syncwarp();
        while (sp > 0) {
            unsigned int take = sp < 32 ? sp : 32, i = 0, cnt = 0, first = 0, macc, mopen;
            bool acc = false, open = false;
            if (lane < take) i = s.stack[sp - 1 - lane];
            __syncwarp();
            sp -= take;
#ifdef NBODY_CU_GW_STATS
            tested += take;
#endif
            if (lane < take) {
                nbody__v4<T> q = nbody__ldg4(node + i);
                T ex = fmax(fmax(q.x - hx, lx - q.x), (T)0), ey = fmax(fmax(q.y - hy, ly - q.y), (T)0);
                T ez = fmax(fmax(q.z - hz, lz - q.z), (T)0);
                acc = i < n && fma(ex, ex, fma(ey, ey, ez * ez)) > q.w;   /* leaves: direct bodies */
                if (!acc) {
                    uint2 rg = __ldg(nrange + i);
                    if (rg.y <= bucket) { cnt = rg.y; first = rg.x; }
                    else open = true;
                }
            }
            macc = __ballot_sync(~0u, acc);
            mopen = __ballot_sync(~0u, open);
            if (acc) s.nlist[nn + __popc(macc & lt)] = i;
            nn += __popc(macc);
            if (open) {   /* the shallower (higher) lanes' children lower: the stack stays sorted by depth */
                unsigned int pos = sp + 2 * __popc(mopen & gt);
                s.stack[pos] = 2 * i + 1; s.stack[pos + 1] = 2 * i;
            }
            sp += 2 * __popc(mopen);
            if (__ballot_sync(~0u, cnt > 0)) {
                unsigned int incl = cnt, tot;
                for (int o = 1; o < 32; o <<= 1) {
                    unsigned int v = __shfl_up_sync(~0u, incl, o);
                    if (lane >= (unsigned int)o) incl += v;
                }
                tot = __shfl_sync(~0u, incl, 31);
                for (unsigned int t = 0; t < cnt; ++t) s.blist[nbd + incl - cnt + t] = first + t;
                nbd += tot;
#ifdef NBODY_CU_GW_STATS
                if (lane == 0) NBODY__CU_GW_STAT(2, tot);
#endif
            }
#ifdef NBODY_CU_GW_STATS
            if (lane == 0) NBODY__CU_GW_STAT(1, __popc(macc));
#endif
            __syncwarp();
            while (nn >= 32) { nn -= 32; nbody__cu_gw_nodes<T, QUAD, BPL>(s, s.nlist + nn, 32, lane, node, nmass, nquad, eps2, a); }
            while (nbd >= 32) { nbd -= 32; nbody__cu_gw_bodies<T, BPL>(s, s.blist + nbd, 32, lane, sb, eps2, a); }
        }
        if (nn) nbody__cu_gw_nodes<T, QUAD, BPL>(s, s.nlist, nn, lane, node, nmass, nquad, eps2, a);
        if (nbd) nbody__cu_gw_bodies<T, BPL>(s, s.blist, nbd, lane, sb, eps2, a);
#pragma unroll
        for (int b = 0; b < BPL; ++b) {
            unsigned int q = lane + 32 * b, p = grg.x + q;
            if (q < grg.y) {
                size_t bi = leafbody ? leafbody[nbody__cu_pos_leaf(p, n, P)] : p;
                f[bi] = G * a.ax[b]; f[fs + bi] = G * a.ay[b]; f[2 * fs + bi] = G * a.az[b];
            }
        }
#ifdef NBODY_CU_GW_STATS
        if (lane == 0) {
            unsigned long long dt = (unsigned long long)(clock64() - t0);
            NBODY__CU_GW_STAT(0, tested); NBODY__CU_GW_STAT(3, dt); NBODY__CU_GW_STAT(4, 1);
            atomicMax(&nbody__cu_gw_stat[5], dt);
        }
#endif
        __syncwarp();
    }
}
#ifdef NBODY_CU_GW_STATS
extern "C" void nbody__cuda_gw_stats(unsigned long long out[8], int reset) {
    cudaDeviceSynchronize();
    cudaMemcpyFromSymbol(out, nbody__cu_gw_stat, 8 * sizeof(unsigned long long));
    if (reset) { unsigned long long z[8] = {0}; cudaMemcpyToSymbol(nbody__cu_gw_stat, z, sizeof z); }
}
#endif

/* test particles [lo, hi) (at or past nt) walk the tree of the active bodies [0, nt), a thread
   each, alone: the same accept/open rule as nbody__cu_walk; a leaf at distance 0 is skipped as
   there. Positions y[k], y[ny + k], y[2 ny + k]; G times the pull to acc[j], acc[as + j],
   acc[2 as + j], j = k - base (the whole state: base 0; a slice: its first body) */
template <class T>
__global__ void nbody__cu_walk_test(const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass, const T *y, size_t ny,
                                    size_t lo, size_t hi, T *acc, size_t as, size_t base, size_t nt, T eps2, T G,
                                    const nbody__v4<T> *__restrict__ nquad) {
    for (size_t k = lo + blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < hi; k += (size_t)gridDim.x * blockDim.x) {   /* grid-stride */
        T px = y[k], py = y[ny + k], pz = y[2 * ny + k], ax = 0, ay = 0, az = 0;
        unsigned int cur = 1;
        do {
            nbody__v4<T> q = nbody__ldg4(node + cur);
            T dx = q.x - px, dy = q.y - py, dz = q.z - pz;
            T d2 = fma(dx, dx, fma(dy, dy, dz * dz));
            unsigned int skip = nbody__heap_skip(cur);
            bool acc = d2 > q.w;
            if (acc && nquad && cur < nt) {
                nbody__cu_quad_add(nbody__ldg4(nquad + 2 * cur), nbody__ldg4(nquad + 2 * cur + 1), __ldg(nmass + cur), dx, dy, dz,
                                   d2 + eps2, ax, ay, az);
            } else if (acc) {
                T w = nbody__weight(__ldg(nmass + cur), d2 + eps2);
                nbody__pull(w, dx, dy, dz, &ax, &ay, &az);
            }
            cur = !acc && cur < nt ? 2 * cur : skip;
        } while (cur != 1);
        acc[k - base] = G * ax; acc[as + k - base] = G * ay; acc[2 * as + k - base] = G * az;
    }
}

/* The build: the bodies sorted by the keys of their positions (stable: equal keys keep the
   bodies' order, so every build of the same bodies is the same tree), laid into the leaves in
   depth-first order, the internal nodes from their children level by level, the group walk's
   groups. The keys' pass also packs each body's (x, y, z, m) into c->bodies, so the leaves
   gather one 16-byte record a body in key order instead of four scattered numbers.
   Its parts: nbody__cu_tree_sort (the box, the keys, the sort: c->val[1] the bodies in key
   order; returns the tree's active bodies in *nt and P), nbody__cu_tree_leaves and
   nbody__cu_tree_levels (the nodes a cut selects: several GPUs divide them) and
   nbody__cu_tree_groups. */
static nbody_result nbody__cu_tree_sort(nbody__engine *e, const nbody__r *y, size_t *nt, size_t *Pout) {
    nbody__cuda *c = nbody__cu(e);
    size_t n = nbody__cu_nsrc(e), P = 1;     /* the tree holds the active bodies */
    nbody__box<nbody__r> *box;
    int depth = 0;
    c->ycur = y;
    c->kdk_tree = 0;
    if (n < e->n) {                          /* pack their positions: the build reads [x(n) y(n) z(n)] */
        nbody_result rr = c->yact ? NBODY_OK : nbody__cu_malloc(e, &c->yact, 3 * n);
        if (rr != NBODY_OK) return rr;
        for (int d = 0; d < 3; ++d)
            NBODY__CU(cudaMemcpyAsync(c->yact + d * n, y + d * e->n, n * sizeof(nbody__r), cudaMemcpyDeviceToDevice));
        y = c->yact;
    }
    nbody__cu_map_box<nbody__r> mb = {y, n};
    nbody_result r = nbody__cu_reduce<nbody__cu_boxop<nbody__r> >(e, mb, n, &box);
    if (r != NBODY_OK) return r;
    while (P * 2 <= 2 * n - 1) { P *= 2; depth++; }
    nbody__cu_keys<<<nbody__cu_blocks(n, 256), 256>>>(y, c->m, n, box, c->key[0], c->val[0], c->bodies, !nbody__cu_tree_morton);
    NBODY__CU(cudaGetLastError());
    if (c->bev[0]) NBODY__CU(cudaEventRecord(c->bev[0], 0));
    {
        size_t bytes = c->cubbytes;
        NBODY__CU(cub::DeviceRadixSort::SortPairs(c->cubtmp, bytes, c->key[0], c->key[1], c->val[0], c->val[1], (int)n, 0, 63));
    }
    if (c->bev[1]) NBODY__CU(cudaEventRecord(c->bev[1], 0));
    c->depth = depth;
    *nt = n;
    *Pout = P;
    return NBODY_OK;
}
static nbody_result nbody__cu_tree_leaves(nbody__engine *e, size_t n, size_t P, nbody__cu_cut cut) {
    nbody__cuda *c = nbody__cu(e);
    nbody__cu_leaves<<<nbody__cu_blocks(n, 256), 256>>>(c->bodies, n, P, c->val[1], c->node, c->nmass, c->lo, c->hi, c->rad, c->leafbody,
                                                        c->sb, c->nrange, cut, c->depth, c->ownpos, c->own0, c->ownm);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}
/* the internal nodes of the levels [lev0, lev1), deepest first */
static nbody_result nbody__cu_tree_levels(nbody__engine *e, size_t n, int lev0, int lev1, nbody__cu_cut cut) {
    nbody__cuda *c = nbody__cu(e);
    nbody__r it = 1 / e->desc.theta;
    for (int L = lev1 - 1; L >= lev0; --L) {
        size_t i0 = (size_t)1 << L, i1 = ((size_t)2 << L) < n ? ((size_t)2 << L) : n;
        if (i0 >= i1) continue;
        nbody__cu_internal<<<nbody__cu_blocks(i1 - i0, 256), 256>>>(i0, i1, n, c->node, c->nmass, c->lo, c->hi, c->rad, it, c->nrange,
                                                                    c->nquad, cut, L);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}
/* the group walk's groups, their count in gw_next[1]. On the Hilbert tree they are the largest
   nodes of at most 64 bodies, which depends on n alone: made once for each n (c->gw_n) */
static nbody_result nbody__cu_tree_groups(nbody__engine *e, size_t n) {
    nbody__cuda *c = nbody__cu(e);
    if ((c->nquad || c->walk >= NBODY__CU_WALK_GROUP) && (nbody__cu_tree_morton || c->gw_n != n + 1)) {
        size_t bytes = c->gw_tmpbytes;
        nbody__cu_group_flags<nbody__r><<<nbody__cu_blocks(2 * n, 256), 256>>>(n, 32u * NBODY__CU_GW_BPL, c->nrange, c->node, c->lo, c->hi, c->gw_flag,
                                                                               c->val[0], nbody__cu_tree_morton);
        NBODY__CU(cudaGetLastError());
        NBODY__CU(cub::DeviceSelect::Flagged(c->gw_tmp, bytes, c->val[0] + 1, c->gw_flag + 1, c->gw_groups, c->gw_next + 1, (int)(2 * n - 1)));
        c->gw_n = nbody__cu_tree_morton ? 0 : n + 1;
    }
    return NBODY_OK;
}
static nbody_result nbody__cu_tree_build(nbody__engine *e, const nbody__r *y) {
    nbody__cuda *c = nbody__cu(e);
    nbody__cu_cut all = {NULL, 0, 0};
    size_t n, P;
    nbody_result r = nbody__cu_tree_sort(e, y, &n, &P);
    if (r == NBODY_OK) r = nbody__cu_tree_leaves(e, n, P, all);
    if (r == NBODY_OK && c->bev[2]) r = nbody__cu_check(e, cudaEventRecord(c->bev[2], 0), "cudaEventRecord");
    if (r == NBODY_OK) r = nbody__cu_tree_levels(e, n, 0, c->depth, all);
    if (r == NBODY_OK && c->bev[3]) r = nbody__cu_check(e, cudaEventRecord(c->bev[3], 0), "cudaEventRecord");
    if (r == NBODY_OK) r = nbody__cu_tree_groups(e, n);
    if (r == NBODY_OK && c->bev[4]) r = nbody__cu_check(e, cudaEventRecord(c->bev[4], 0), "cudaEventRecord");
    return r;
}


/* the group walk's stack entries, and its threads per block for a given B: whole warps, as
   many as its shared memory allows */
static unsigned int nbody__cu_gw_scap(const nbody__cuda *c) { return 64u * (unsigned int)(c->depth + 1); }
static int nbody__cu_gw_threads(const nbody__cuda *c, int B, int gstack, size_t *smem) {
    size_t per = nbody__cu_gw_bytes<nbody__r>(c->nquad != NULL, gstack ? 0u : nbody__cu_gw_scap(c), (unsigned int)c->bucket);
    int w = (B + 31) / 32, wmax = (int)((size_t)c->smem_max / per), wreg = c->gw_maxthreads[(c->nquad != NULL) + 2 * gstack] / 32;
    if (wmax > wreg) wmax = wreg;
    if (w > wmax) w = wmax;
    if (w < 1) w = 1;
    *smem = per * (size_t)w;
    return 32 * w;
}

typedef void (*nbody__cu_gw_fn)(const nbody__rec *, const nbody__r *, const nbody__rec *, const uint2 *, const nbody__rec *,
                                const unsigned int *, nbody__r *, unsigned int, unsigned int, unsigned int, nbody__r, nbody__r,
                                size_t, unsigned int, unsigned int, unsigned int *, const unsigned int *, unsigned int *);
static nbody__cu_gw_fn nbody__cu_gw_kernel(int quad, int gstack) {
    if (gstack)
        return quad ? nbody__cu_walk_group<nbody__r, true, NBODY__CU_GW_BPL, true> : nbody__cu_walk_group<nbody__r, false, NBODY__CU_GW_BPL, true>;
    return quad ? nbody__cu_walk_group<nbody__r, true, NBODY__CU_GW_BPL, false> : nbody__cu_walk_group<nbody__r, false, NBODY__CU_GW_BPL, false>;
}

/* one launch of nbody__cu_walk (arguments there) with the per-body walk `walk`: the warps'
   union (NBODY__CU_WALK_WARP) or each thread alone; the same bits either way */
static nbody_result nbody__cu_walk_launch(nbody__engine *e, int walk, unsigned int blocks, unsigned int B, const unsigned int *list,
                                          size_t first, size_t count, const unsigned int *leafbody, size_t base, nbody__r *acc, size_t as,
                                          size_t bstride) {
    nbody__cuda *c = nbody__cu(e);
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    unsigned int nt = (unsigned int)nbody__cu_nsrc(e);
    nbody__cu_near none = {NULL, NULL, NULL};
    if (walk == NBODY__CU_WALK_WARP)
        nbody__cu_walk<nbody__r, true, false><<<blocks, B>>>(c->node, c->nmass, list, (unsigned int)first, (unsigned int)count, leafbody, base,
                                                             acc, as, nt, (unsigned int)bstride, eps2, e->desc.G, none);
    else
        nbody__cu_walk<nbody__r, false, false><<<blocks, B>>>(c->node, c->nmass, list, (unsigned int)first, (unsigned int)count, leafbody,
                                                              base, acc, as, nt, (unsigned int)bstride, eps2, e->desc.G, none);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}

/* one launch of the group walk (nbody__cu_walk_group; walk NBODY__CU_WALK_GROUP or _GSTACK),
   threads per block from B, as many blocks as are resident, at most a warp per group: the
   groups [next[0], next[1]) of groups (every bstride-th of them), by body into f + 3 e->n
   (leafbody given) or by depth-first position into f (fs apart; NULL) */
static nbody_result nbody__cu_group_launch(nbody__engine *e, int B, int walk, size_t bstride, const unsigned int *groups, unsigned int *next,
                                           const unsigned int *leafbody, nbody__r *f, size_t fs) {
    nbody__cuda *c = nbody__cu(e);
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    size_t nt = nbody__cu_nsrc(e), smem, P = 1, warps = (nt + 31) / 32;
    int gstack = walk == NBODY__CU_WALK_GROUP_GSTACK, T = nbody__cu_gw_threads(c, B, gstack, &smem);
    nbody__cu_gw_fn fn = nbody__cu_gw_kernel(c->nquad != NULL, gstack);
    unsigned int blocks;
    while (P * 2 <= 2 * nt - 1) P *= 2;
    warps = (warps + bstride - 1) / bstride;
    blocks = (unsigned int)((warps + T / 32 - 1) / (T / 32));
    if (c->gw_occ_threads != 2 * T + gstack) {   /* blocks of T threads resident on an SM, asked once per T and kernel */
        c->gw_occ_threads = 2 * T + gstack;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&c->gw_occ, fn, T, smem) != cudaSuccess) { c->gw_occ = 0; (void)cudaGetLastError(); }
    }
    if (c->gw_occ > 0 && (size_t)c->gw_occ * c->sms < blocks) blocks = (unsigned int)(c->gw_occ * c->sms);
    if (blocks > nbody__cu_grid_cap) blocks = nbody__cu_grid_cap;
    if (gstack && (size_t)blocks * (T / 32) * nbody__cu_gw_scap(c) > c->gw_gstack_len) {   /* grown on demand */
        size_t len = (size_t)blocks * (T / 32) * nbody__cu_gw_scap(c);
        nbody_result rr;
        cudaFree(c->gw_gstack);
        c->gw_gstack = NULL; c->gw_gstack_len = 0;
        if ((rr = nbody__cu_malloc(e, &c->gw_gstack, len)) != NBODY_OK) return rr;
        c->gw_gstack_len = len;
    }
    fn<<<blocks, T, smem>>>(c->node, c->nmass, c->nquad, c->nrange, c->sb, leafbody, leafbody ? f + 3 * e->n : f, (unsigned int)nt,
                            (unsigned int)P, (unsigned int)bstride, eps2, e->desc.G, leafbody ? e->n : fs, (unsigned int)c->bucket,
                            nbody__cu_gw_scap(c), next, groups, c->gw_gstack);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}

/* every bstride-th block only; quadrupoles always take the group walk */
static nbody_result nbody__cu_tree_walk(nbody__engine *e, int B, int walk, size_t bstride, nbody__r *f) {
    nbody__cuda *c = nbody__cu(e);
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    size_t nt = nbody__cu_nsrc(e);
    unsigned int blocks, sb;
    if (walk >= NBODY__CU_WALK_GROUP || c->nquad) {   /* every group: the counter from 0 */
        nbody_result rg;
        NBODY__CU(cudaMemsetAsync(c->gw_next, 0, sizeof(unsigned int)));
        rg = nbody__cu_group_launch(e, B, walk >= NBODY__CU_WALK_GROUP ? walk : NBODY__CU_WALK_GROUP, bstride, c->gw_groups, c->gw_next,
                                    c->leafbody, f, 0);
        if (rg != NBODY_OK) return rg;
        walk = 0;
    }
    blocks = nbody__cu_blocks(nt, B); sb = (unsigned int)((blocks + bstride - 1) / bstride);
    if (walk != 0) {
        nbody_result rw = nbody__cu_walk_launch(e, walk, sb, (unsigned int)B, NULL, 0, nt, c->leafbody, 0, f + 3 * e->n, e->n, bstride);
        if (rw != NBODY_OK) return rw;
    }
    if (nt < e->n) {
        nbody__cu_walk_test<nbody__r><<<nbody__cu_blocks(e->n - nt, B), B>>>(c->node, c->nmass, c->ycur, e->n, nt, e->n, f + 3 * e->n,
                                                                              e->n, 0, nt, eps2, e->desc.G, c->nquad);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}

/* ======================================================================================
   block size: given, or tuned once on the first derivative
   ====================================================================================== */
/* sample = 0 for the real thing; in tuning, the dense kernel's tiles per block or the walk's
   block stride; mid: see nbody__cu_dense_launch. bodies_per_thread: dense; walk: tree. */
static nbody_result nbody__cu_forces(nbody__engine *e, int B, int bodies_per_thread, int walk, size_t sample, nbody__r *f,
                                     cudaEvent_t mid) {
    if (nbody__cu(e)->tree) return nbody__cu_tree_walk(e, B, walk, sample ? sample : 1, f);
    return nbody__cu_dense_forces(e, B, bodies_per_thread, sample, f, mid);
}

/* Tuning: each candidate (threads per block x bodies per thread, or x walk; dense: one-sided or
   symmetric) is timed on the real data, the fastest kept; the caller then computes the real
   result. A candidate is timed on a sample of about 2^34 interactions (dense) or 2^20 leaves
   (tree) spread over the whole problem, and its time scaled to the whole: dense one-sided, the
   real grid with every block stopping after its share of tiles (the slices' sum timed apart,
   unscaled); symmetric, the self tiles and the first rounds of the tournament, waits and all;
   tree, every bstride-th block of leaves, so the sample covers the centre and the outskirts
   alike. */
#define NBODY__CU_SAMPLE_PAIRS 17179869184.0        /* 2^34 */
#define NBODY__CU_SAMPLE_LEAVES ((size_t)1 << 20)
#define NBODY__CU_SYM_SMEM_MAX (160 * 1024)         /* the symmetric kernel's shared memory, at most */
#define NBODY__CU_MAX_CANDIDATES 40

typedef struct nbody__cu_candidate {
    int block, bodies_per_thread, walk, sym;
    size_t sample;                 /* nbody__cu_forces' sample: 0 = the whole problem */
    double scale;                  /* the sample's time x scale = the whole problem's */
} nbody__cu_candidate;

/* every candidate that fits, in the order they are timed; returns how many */
static int nbody__cu_candidates(nbody__engine *e, nbody__cu_candidate *out) {
    static const int blocks[] = {64, 128, 256, 512, 1024}, sym_blocks[] = {64, 96, 128, 192, 256};
    static const int bodies[] = {1, 2, 4, 8}, walks[] = {NBODY__CU_WALK_THREAD, NBODY__CU_WALK_WARP};
    static const int gwalks[] = {NBODY__CU_WALK_GROUP, NBODY__CU_WALK_GROUP_GSTACK};
    nbody__cuda *c = nbody__cu(e);
    double n = (double)e->n;
    int count = 0, quad = c->nquad != NULL, nv = c->tree ? 2 : 4;
    for (int sym = 0; sym < (c->tree ? 1 : 2); ++sym)
        for (int bi = 0; bi < 5; ++bi)
            for (int vi = 0; vi < nv; ++vi) {
                nbody__cu_candidate k;
                int B = sym ? sym_blocks[bi] : blocks[bi], R = c->tree ? 0 : bodies[vi];
                k.block = B; k.bodies_per_thread = R; k.walk = c->tree ? (quad ? gwalks[vi] : walks[vi]) : 0; k.sym = sym;
                k.sample = 0; k.scale = 1;
                if (c->tree) {
                    size_t nb = nbody__cu_blocks(e->n, B), want = NBODY__CU_SAMPLE_LEAVES / (size_t)B;
                    k.sample = nb > want ? nb / want : 1;
                    k.scale = (double)nb / (double)((nb + k.sample - 1) / k.sample);
                } else if (sym) {
                    size_t items, smem, m = nbody__cu_sym_tiles(e->n, B, R, &items, &smem);
                    if (m < 8 || smem > NBODY__CU_SYM_SMEM_MAX || B > nbody__cu_dense_max_threads(R, c->uni, 1)) continue;
                    k.sample = (size_t)(NBODY__CU_SAMPLE_PAIRS / (2.0 * B * R * B * R)) + 1;
                    if (k.sample < 16 * (size_t)c->sms) k.sample = 16 * (size_t)c->sms;
                    if (m + k.sample >= items) k.sample = 0;
                    else k.scale = (double)items / (double)(m + k.sample);
                } else {
                    size_t tps;
                    if (B * (size_t)R > 4 * e->n + 1024 || B > nbody__cu_dense_max_threads(R, c->uni, 0)) continue;
                    (void)nbody__cu_slices(e, nbody__cu_dense_fn(R, c->uni, 0), B, R, &tps);
                    k.sample = (size_t)((double)tps * NBODY__CU_SAMPLE_PAIRS / (n * n)) + 1;
                    if (k.sample < 4) k.sample = 4;
                    if (k.sample >= tps) k.sample = 0;
                    else k.scale = (double)tps / (double)k.sample;
                }
                out[count++] = k;
            }
    return count;
}

/* a candidate's estimated time for the whole problem in ms: a warm-up, then the best of two
   timed runs (ev: three events) */
static nbody_result nbody__cu_time_one(nbody__engine *e, const nbody__cu_candidate *k, cudaEvent_t *ev, nbody__r *f,
                                       double *ms) {
    nbody__cuda *c = nbody__cu(e);
    double est = -1;
    nbody_result r;
    c->sym = k->sym;
    r = nbody__cu_forces(e, k->block, k->bodies_per_thread, k->walk, k->sample, f, NULL);   /* warm-up */
    for (int rep = 0; rep < 2 && r == NBODY_OK; ++rep) {
        float ms_force = 0, ms_sum = 0;
        r = nbody__cu_check(e, cudaEventRecord(ev[0]), "cudaEventRecord");
        if (r == NBODY_OK) r = nbody__cu_forces(e, k->block, k->bodies_per_thread, k->walk, k->sample, f, ev[1]);
        if (r == NBODY_OK && c->tree) r = nbody__cu_check(e, cudaEventRecord(ev[1]), "cudaEventRecord");
        if (r == NBODY_OK) r = nbody__cu_check(e, cudaEventRecord(ev[2]), "cudaEventRecord");
        if (r == NBODY_OK) r = nbody__cu_check(e, cudaEventSynchronize(ev[2]), "tuning run");
        if (r == NBODY_OK) r = nbody__cu_check(e, cudaEventElapsedTime(&ms_force, ev[0], ev[1]), "cudaEventElapsedTime");
        if (r == NBODY_OK) r = nbody__cu_check(e, cudaEventElapsedTime(&ms_sum, ev[1], ev[2]), "cudaEventElapsedTime");
        if (r == NBODY_OK && (est < 0 || ms_force * k->scale + ms_sum < est)) est = ms_force * k->scale + ms_sum;
    }
    *ms = est;
    return r;
}

static void nbody__cu_report_tuning(nbody__engine *e, double ms) {
    nbody__cuda *c = nbody__cu(e);
    if (c->tree)
        nbody__cu_log(e, NBODY_LOG_INFO, "nbody cuda-tree: tuned: %d threads per block, %s walk (%.3g ms estimated)", c->block,
                      c->walk == NBODY__CU_WALK_GROUP_GSTACK ? "group (global stack)" : c->walk == NBODY__CU_WALK_GROUP ? "group"
                      : c->walk == NBODY__CU_WALK_WARP ? "warp" : "thread", ms);
    else
        nbody__cu_log(e, NBODY_LOG_INFO, "nbody cuda: tuned: %s kernel, %d threads per block x %d bodies per thread (%.3g ms estimated)",
                      c->sym ? "symmetric" : "one-sided", c->block, c->bodies_per_thread, ms);
}

/* candidates, time each, keep the fastest, report it */
static nbody_result nbody__cu_tune(nbody__engine *e, nbody__r *f) {
    nbody__cuda *c = nbody__cu(e);
    nbody__cu_candidate cand[NBODY__CU_MAX_CANDIDATES];
    cudaEvent_t ev[3] = {NULL, NULL, NULL};
    double best = -1;
    nbody_result r = NBODY_OK;
    int count = nbody__cu_candidates(e, cand), chosen = -1;
    for (int k = 0; k < 3 && r == NBODY_OK; ++k) r = nbody__cu_check(e, cudaEventCreate(&ev[k]), "cudaEventCreate");
    for (int i = 0; i < count && r == NBODY_OK; ++i) {
        double est = -1;
        r = nbody__cu_time_one(e, &cand[i], ev, f, &est);
        if (r == NBODY_OK && (best < 0 || est < best)) { best = est; chosen = i; }
    }
    for (int k = 0; k < 3; ++k)
        if (ev[k]) cudaEventDestroy(ev[k]);
    c->sym = chosen >= 0 ? cand[chosen].sym : 0;
    if (chosen >= 0) {
        c->block = cand[chosen].block;
        if (c->tree) c->walk = cand[chosen].walk;
        else c->bodies_per_thread = cand[chosen].bodies_per_thread;
    }
    if (r == NBODY_OK) {
        c->tuned = 1;
        nbody__cu_report_tuning(e, best);
    }
    return r;
}

/* ======================================================================================
   contacts (docs/steering.md): the pairs closer than the sum of their radii, or than a
   distance, found on the device for the collision and close-encounter checks after each
   accepted step (the engine ops set_radii and find_contacts); only the pairs come back.
   n <= 4096 (nbody__cu_ct_direct_max): every pair i < j, direct, in shared-memory tiles.
   Larger n: a bounding-volume tree over all n bodies, built for the call in the layout of
   the gravity tree (heap nodes 1..2n-1, leaves n..2n-1 in depth-first Morton order, CUB
   radix sort), each node's box enclosing its bodies' spheres [x - r, x + r] (widened by
   32 ulps of |x| + r, so that rounding never loses a pair), filled bottom-up one level per
   launch. Each body walks it stackless from its own leaf on, descending into the nodes
   whose box meets its own and testing the leaves it reaches: those after its own in
   depth-first order, so each pair once. Why not the gravity tree: it holds the active bodies only, is built at
   stage states, and its boxes bound points, not spheres. Why not a sort-based uniform
   grid: one cell size suits one radius, and radii may differ by orders of magnitude (a
   planet among planetesimals puts hundreds of bodies in each of its cells), while a node
   box adapts to its own bodies. Both cost a sort of n keys plus the pairs.
   Pairs go through an atomic counter into a capped buffer of keys (i << 32 | j); when more
   were found than fit, the buffer grows to the count and the search runs again: no pair is
   dropped. The keys are radix-sorted (the result does not depend on the atomics' order),
   then each pair's distance and reach are computed with round-to-nearest intrinsics in the
   host detector's order of operations (no FMA contraction): the same pairs, distances and
   reaches as nbody__find_pairs, bit for bit.
   ====================================================================================== */
struct nbody__cu_contacts {
    nbody__r *radii;                        /* n, from set_radii */
    int has_radii;
    nbody__rec *blo, *bhi;                  /* tree: 2n node boxes (w unused) */
    unsigned int *lbody;                    /* tree: n, the body of leaf n + k */
    unsigned long long *mkey[2];            /* tree: Morton codes, n each */
    unsigned int *mval[2];
    unsigned long long *keys[2];            /* pair keys, cap each */
    nbody__contact *dout;                   /* cap records */
    size_t cap;
    unsigned long long *count;              /* the pairs found by the last search */
    void *tmp;                              /* CUB scratch */
    size_t tmpbytes;
    nbody__contact *hout;                   /* the op's result, hcap records */
    size_t hcap;
};

#define NBODY__CT_THREADS 128
static size_t nbody__cu_ct_direct_max = 4096;   /* direct search up to this n */
static int nbody__cu_ct_mode = 0;                /* tests: 0 by n, 1 direct, 2 tree */
static size_t nbody__cu_ct_cap0 = 0;             /* tests: the first pair capacity (0: 1024 + n/4) */
/* Tests only: mode 0 chooses by n, 1 always direct, 2 always the tree; cap0 the first size
   of the pair buffer of engines that have not searched yet (0 = the default); not thread-safe. */
extern "C" void nbody__cuda_test_contacts(int mode, size_t cap0) { nbody__cu_ct_mode = mode; nbody__cu_ct_cap0 = cap0; }

/* |x_j - x_i| and r_i + r_j exactly as nbody__find_pairs computes them on the host */
__device__ __forceinline__ double nbody__cu_ct_dist(double xi, double yi, double zi, double xj, double yj, double zj) {
    double dx = __dsub_rn(xj, xi), dy = __dsub_rn(yj, yi), dz = __dsub_rn(zj, zi);
    return __dsqrt_rn(__dadd_rn(__dadd_rn(__dmul_rn(dx, dx), __dmul_rn(dy, dy)), __dmul_rn(dz, dz)));
}
__device__ __forceinline__ float nbody__cu_ct_dist(float xi, float yi, float zi, float xj, float yj, float zj) {
    float dx = __fsub_rn(xj, xi), dy = __fsub_rn(yj, yi), dz = __fsub_rn(zj, zi);
    return __fsqrt_rn(__fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz)));
}
__device__ __forceinline__ double nbody__cu_ct_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float nbody__cu_ct_add(float a, float b) { return __fadd_rn(a, b); }
/* 1 when the pair i, j is closer than ri + rj, as nbody__find_pairs decides; the square
   root only for pairs past a cheap test with a margin (of 16 epsilons, far above rounding) */
template <class T>
__device__ __forceinline__ int nbody__cu_ct_hit(T xi, T yi, T zi, T xj, T yj, T zj, T ri, T rj) {
    const T slack = (T)(sizeof(T) == sizeof(float) ? 1 + 16 * 1.1920928955078125e-7 : 1 + 16 * 2.220446049250313e-16);
    T dx = xj - xi, dy = yj - yi, dz = zj - zi, rr = ri + rj;
    if (!(dx * dx + dy * dy + dz * dz <= rr * rr * slack)) return 0;
    return nbody__cu_ct_dist(xi, yi, zi, xj, yj, zj) < nbody__cu_ct_add(ri, rj);
}

/* the pair (i, j), i < j, closer than r_i + r_j: its key into the buffer while there is room */
template <class T>
__device__ __forceinline__ void nbody__cu_ct_test(const T *y, size_t n, size_t i, size_t j, T ri, T rj, unsigned long long *keys,
                                                  unsigned long long cap, unsigned long long *count) {
    if (i > j) { size_t t = i; i = j; j = t; T u = ri; ri = rj; rj = u; }
    if (nbody__cu_ct_hit(y[i], y[n + i], y[2 * n + i], y[j], y[n + j], y[2 * n + j], ri, rj)) {
        unsigned long long at = atomicAdd(count, 1ULL);
        if (at < cap) keys[at] = ((unsigned long long)i << 32) | (unsigned long long)j;
    }
}

/* direct: thread i tests every j > i, the js through shared memory a tile at a time;
   rad NULL: r0 for every body. Grid-stride over whole blocks (the tiles are per block). */
template <class T>
__global__ void nbody__cu_ct_direct(const T *y, const T *rad, T r0, size_t n, unsigned long long *keys, unsigned long long cap,
                                    unsigned long long *count) {
    __shared__ T sx[NBODY__CT_THREADS], sy[NBODY__CT_THREADS], sz[NBODY__CT_THREADS], sr[NBODY__CT_THREADS];
    for (size_t base = (size_t)blockIdx.x * blockDim.x; base < n; base += (size_t)gridDim.x * blockDim.x) {
        size_t i = base + threadIdx.x;
        T xi = 0, yi = 0, zi = 0, ri = r0;
        if (i < n) { xi = y[i]; yi = y[n + i]; zi = y[2 * n + i]; if (rad) ri = rad[i]; }
        for (size_t t0 = base; t0 < n; t0 += blockDim.x) {
            size_t j = t0 + threadIdx.x, m = n - t0 < blockDim.x ? n - t0 : blockDim.x;
            __syncthreads();
            if (j < n) { sx[threadIdx.x] = y[j]; sy[threadIdx.x] = y[n + j]; sz[threadIdx.x] = y[2 * n + j]; sr[threadIdx.x] = rad ? rad[j] : r0; }
            __syncthreads();
            if (i >= n) continue;
            for (size_t q = 0; q < m; ++q) {
                if (t0 + q <= i) continue;
                if (nbody__cu_ct_hit(xi, yi, zi, sx[q], sy[q], sz[q], ri, sr[q])) {
                    unsigned long long at = atomicAdd(count, 1ULL);
                    if (at < cap) keys[at] = ((unsigned long long)i << 32) | (unsigned long long)(t0 + q);
                }
            }
        }
    }
}

/* depth-first position of heap node j >= n (a leaf) of a heap with n leaves, P = 2^floor(log2(2n-1)) */
__device__ __forceinline__ size_t nbody__cu_ct_dfs(size_t j, size_t n, size_t P) { return j >= P ? j - P : (2 * n - P) + (j - n); }

/* leaf boxes: the sphere of the body at depth-first position p(j), widened by 32 ulps */
template <class T>
__global__ void nbody__cu_ct_leaves(const T *y, const T *rad, T r0, size_t n, size_t P, const unsigned int *sorted, nbody__v4<T> *lo,
                                    nbody__v4<T> *hi, unsigned int *lbody) {
    const T pad = (T)(sizeof(T) == sizeof(float) ? 16 * 1.1920928955078125e-7 : 16 * 2.220446049250313e-16);
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        size_t j = n + k;
        unsigned int b = sorted[nbody__cu_ct_dfs(j, n, P)];
        T x = y[b], yy = y[n + b], z = y[2 * n + b], r = rad ? rad[b] : r0;
        T w = r + (fmax(fabs(x), fmax(fabs(yy), fabs(z))) + r) * pad;
        nbody__v4<T> a = {x - w, yy - w, z - w, (T)0}, c = {x + w, yy + w, z + w, (T)0};
        lo[j] = a; hi[j] = c;
        lbody[k] = b;
    }
}

/* internal nodes [i0, i1): the union of their children's boxes */
template <class T> __global__ void nbody__cu_ct_internal(size_t i0, size_t i1, nbody__v4<T> *lo, nbody__v4<T> *hi) {
    for (size_t i = i0 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < i1; i += (size_t)gridDim.x * blockDim.x) {
        nbody__v4<T> a = lo[2 * i], b = lo[2 * i + 1], c = hi[2 * i], d = hi[2 * i + 1];
        nbody__v4<T> l = {fmin(a.x, b.x), fmin(a.y, b.y), fmin(a.z, b.z), (T)0}, h = {fmax(c.x, d.x), fmax(c.y, d.y), fmax(c.z, d.z), (T)0};
        lo[i] = l; hi[i] = h;
    }
}

/* thread k walks for leaf n + k: stackless pre-order (next = 2i into a node whose box meets
   the leaf's, skip(i) = (i >> ctz(~i)) + 1 past one that does not, back at the root = done),
   from skip(leaf) on: the rest of a pre-order walk after its own leaf, whose ancestors all
   meet its box anyway. So it reaches exactly the leaves after its own in depth-first order
   that a whole walk would reach (each pair once, half the work of a whole walk). */
__device__ __forceinline__ size_t nbody__cu_ct_skip(size_t i) { return (i >> (__ffsll((long long)~i) - 1)) + 1; }
template <class T>
__global__ void nbody__cu_ct_walk(const nbody__v4<T> *__restrict__ lo, const nbody__v4<T> *__restrict__ hi,
                                  const unsigned int *__restrict__ lbody, const T *y, const T *rad, T r0, size_t n,
                                  unsigned long long *keys, unsigned long long cap, unsigned long long *count) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        size_t leaf = n + k, node = nbody__cu_ct_skip(leaf);
        unsigned int bi = lbody[k];
        nbody__v4<T> ql = lo[leaf], qh = hi[leaf];
        T ri = rad ? rad[bi] : r0;
        while (node != 1) {
            nbody__v4<T> a = nbody__ldg4(lo + node), b = nbody__ldg4(hi + node);
            bool meet = a.x <= qh.x && ql.x <= b.x && a.y <= qh.y && ql.y <= b.y && a.z <= qh.z && ql.z <= b.z;
            if (meet && node < n) { node = 2 * node; continue; }
            if (meet) {
                unsigned int bj = __ldg(lbody + (node - n));
                nbody__cu_ct_test(y, n, (size_t)bi, (size_t)bj, ri, rad ? rad[bj] : r0, keys, cap, count);
            }
            node = nbody__cu_ct_skip(node);
        }
    }
}

/* the sorted keys to records, distance and reach as the host computes them */
__global__ void nbody__cu_ct_gather(const unsigned long long *keys, size_t m, const nbody__r *y, const nbody__r *rad, nbody__r r0, size_t n,
                                    nbody__contact *out) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < m; k += (size_t)gridDim.x * blockDim.x) {
        size_t i = (size_t)(keys[k] >> 32), j = (size_t)(keys[k] & 0xffffffffULL);
        nbody__contact c;
        c.i = i; c.j = j;
        c.d = nbody__cu_ct_dist(y[i], y[n + i], y[2 * n + i], y[j], y[n + j], y[2 * n + j]);
        c.reach = nbody__cu_ct_add(rad ? rad[i] : r0, rad ? rad[j] : r0);
        out[k] = c;
    }
}

static void nbody__cu_ct_free(nbody__cu_contacts *w, const nbody_desc *d) {
    if (!w) return;
    cudaFree(w->radii); cudaFree(w->blo); cudaFree(w->bhi); cudaFree(w->lbody);
    for (int k = 0; k < 2; ++k) { cudaFree(w->mkey[k]); cudaFree(w->mval[k]); cudaFree(w->keys[k]); }
    cudaFree(w->dout); cudaFree(w->count); cudaFree(w->tmp);
    (void)cudaGetLastError();
    if (w->hout) d->allocator.free(w->hout, d->allocator.user_data);
    d->allocator.free(w, d->allocator.user_data);
}

static nbody_result nbody__cu_ct_work(nbody__engine *e, nbody__cu_contacts **out) {
    nbody__cuda *c = nbody__cu(e);
    nbody_result r = nbody__cu_enter(e);
    if (r != NBODY_OK) return r;
    if (!c->contacts) {
        nbody__cu_contacts *w = (nbody__cu_contacts *)e->desc.allocator.alloc(sizeof *w, e->desc.allocator.user_data);
        if (!w) return NBODY_ERR_OUT_OF_MEMORY;
        memset(w, 0, sizeof *w);
        if ((r = nbody__cu_malloc(e, &w->count, 1)) != NBODY_OK) { nbody__cu_ct_free(w, &e->desc); return r; }
        c->contacts = w;
    }
    *out = c->contacts;
    return NBODY_OK;
}

/* CUB scratch of at least bytes */
static nbody_result nbody__cu_ct_tmp(nbody__engine *e, nbody__cu_contacts *w, size_t bytes) {
    if (bytes <= w->tmpbytes) return NBODY_OK;
    cudaFree(w->tmp);
    w->tmp = NULL; w->tmpbytes = 0;
    nbody_result r = nbody__cu_malloc(e, (unsigned char **)&w->tmp, bytes);
    if (r == NBODY_OK) w->tmpbytes = bytes;
    return r;
}

/* room for cap pairs (the old ones are not kept) */
static nbody_result nbody__cu_ct_grow(nbody__engine *e, nbody__cu_contacts *w, size_t cap) {
    nbody_result r;
    cudaFree(w->keys[0]); cudaFree(w->keys[1]); cudaFree(w->dout);
    w->keys[0] = w->keys[1] = NULL; w->dout = NULL; w->cap = 0;
    r = nbody__cu_malloc(e, &w->keys[0], cap);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->keys[1], cap);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->dout, cap);
    if (r == NBODY_OK) w->cap = cap;
    return r;
}

static nbody_result nbody__cu_set_radii(nbody__engine *e, const nbody_real *r) {
    nbody__cu_contacts *w;
    nbody_result res = nbody__cu_ct_work(e, &w);
    if (res != NBODY_OK) return res;
    w->has_radii = 0;
    if (!r) return NBODY_OK;
    if (!w->radii && (res = nbody__cu_malloc(e, &w->radii, e->n)) != NBODY_OK) return res;
    NBODY__CU(cudaMemcpy(w->radii, r, e->n * sizeof(nbody__r), cudaMemcpyHostToDevice));
    w->has_radii = 1;
    return NBODY_OK;
}

/* the bounding-volume tree of the spheres (radii rad, or r0 each) of the positions y */
static nbody_result nbody__cu_ct_build(nbody__engine *e, nbody__cu_contacts *w, const nbody__r *y, const nbody__r *rad, nbody__r r0) {
    size_t n = e->n, P = 1, bytes = 0;
    int depth = 0;
    nbody_result r = NBODY_OK;
    nbody__box<nbody__r> *box;
    if (!w->blo) {
        r = nbody__cu_malloc(e, &w->blo, 2 * n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->bhi, 2 * n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->lbody, n);
        for (int k = 0; k < 2 && r == NBODY_OK; ++k) {
            r = nbody__cu_malloc(e, &w->mkey[k], n);
            if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->mval[k], n);
        }
        if (r != NBODY_OK) {   /* all or nothing */
            cudaFree(w->blo); cudaFree(w->bhi); cudaFree(w->lbody);
            for (int k = 0; k < 2; ++k) { cudaFree(w->mkey[k]); cudaFree(w->mval[k]); w->mkey[k] = NULL; w->mval[k] = NULL; }
            w->blo = w->bhi = NULL; w->lbody = NULL;
            return r;
        }
    }
    nbody__cu_map_box<nbody__r> mb = {y, n};
    if ((r = nbody__cu_reduce<nbody__cu_boxop<nbody__r> >(e, mb, n, &box)) != NBODY_OK) return r;
    while (P * 2 <= 2 * n - 1) { P *= 2; depth++; }
    nbody__cu_keys<<<nbody__cu_blocks(n, 256), 256>>>(y, (const nbody__r *)NULL, n, box, w->mkey[0], w->mval[0], (nbody__rec *)NULL, 0);
    NBODY__CU(cudaGetLastError());
    NBODY__CU(cub::DeviceRadixSort::SortPairs(NULL, bytes, w->mkey[0], w->mkey[1], w->mval[0], w->mval[1], (int)n, 0, 63));
    if ((r = nbody__cu_ct_tmp(e, w, bytes)) != NBODY_OK) return r;
    bytes = w->tmpbytes;
    NBODY__CU(cub::DeviceRadixSort::SortPairs(w->tmp, bytes, w->mkey[0], w->mkey[1], w->mval[0], w->mval[1], (int)n, 0, 63));
    nbody__cu_ct_leaves<<<nbody__cu_blocks(n, 256), 256>>>(y, rad, r0, n, P, w->mval[1], w->blo, w->bhi, w->lbody);
    NBODY__CU(cudaGetLastError());
    for (int L = depth - 1; L >= 0; --L) {
        size_t i0 = (size_t)1 << L, i1 = ((size_t)2 << L) < n ? ((size_t)2 << L) : n;
        if (i0 >= i1) continue;
        nbody__cu_ct_internal<<<nbody__cu_blocks(i1 - i0, 256), 256>>>(i0, i1, w->blo, w->bhi);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}

static nbody_result nbody__cu_find_contacts(nbody__engine *e, nbody__buf yb, int use_radii, nbody_real r0, const nbody__contact **pairs,
                                            size_t *count) {
    const nbody__r *y = (const nbody__r *)yb, *rad;
    size_t n = e->n, bytes = 0;
    unsigned long long found = 0;
    nbody__cu_contacts *w;
    nbody_result r;
    int tree;
    *pairs = NULL; *count = 0;
    if (!y || !(r0 >= 0)) return NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__cu_ct_work(e, &w)) != NBODY_OK) return r;
    if (n < 2 || (use_radii && !w->has_radii)) return NBODY_OK;   /* no radii: all zero, nothing is closer than 0 */
    rad = use_radii ? w->radii : NULL;
    tree = nbody__cu_ct_mode == 2 || (nbody__cu_ct_mode == 0 && n > nbody__cu_ct_direct_max);
    if (!w->cap && (r = nbody__cu_ct_grow(e, w, nbody__cu_ct_cap0 ? nbody__cu_ct_cap0 : 1024 + n / 4)) != NBODY_OK) return r;
    if (tree && (r = nbody__cu_ct_build(e, w, y, rad, (nbody__r)r0)) != NBODY_OK) return r;
    for (;;) {
        NBODY__CU(cudaMemset(w->count, 0, sizeof *w->count));
        if (tree)
            nbody__cu_ct_walk<<<nbody__cu_blocks(n, NBODY__CT_THREADS), NBODY__CT_THREADS>>>(w->blo, w->bhi, w->lbody, y, rad, (nbody__r)r0, n,
                                                                                           w->keys[0], w->cap, w->count);
        else
            nbody__cu_ct_direct<<<nbody__cu_blocks(n, NBODY__CT_THREADS), NBODY__CT_THREADS>>>(y, rad, (nbody__r)r0, n, w->keys[0],
                                                                                             w->cap, w->count);
        NBODY__CU(cudaGetLastError());
        NBODY__CU(cudaMemcpy(&found, w->count, sizeof found, cudaMemcpyDeviceToHost));
        if (found <= w->cap) break;
        if (found > 0x7fffffffULL) {
            nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: %llu contact pairs, more than 2^31 - 1", found);
            return NBODY_ERR_OUT_OF_MEMORY;
        }
        nbody__cu_log(e, NBODY_LOG_INFO, "nbody cuda: %llu contact pairs, room for %lu: search again", found, (unsigned long)w->cap);
        if ((r = nbody__cu_ct_grow(e, w, (size_t)found + (size_t)found / 4)) != NBODY_OK) return r;
    }
    if (found == 0) return NBODY_OK;
    NBODY__CU(cub::DeviceRadixSort::SortKeys(NULL, bytes, w->keys[0], w->keys[1], (int)found, 0, 62));
    if ((r = nbody__cu_ct_tmp(e, w, bytes)) != NBODY_OK) return r;
    bytes = w->tmpbytes;
    NBODY__CU(cub::DeviceRadixSort::SortKeys(w->tmp, bytes, w->keys[0], w->keys[1], (int)found, 0, 62));
    nbody__cu_ct_gather<<<nbody__cu_blocks((size_t)found, 256), 256>>>(w->keys[1], (size_t)found, y, rad, (nbody__r)r0, n, w->dout);
    NBODY__CU(cudaGetLastError());
    if (w->hcap < (size_t)found) {
        size_t cap = (size_t)found + (size_t)found / 4;
        if (w->hout) e->desc.allocator.free(w->hout, e->desc.allocator.user_data);
        w->hcap = 0;
        w->hout = (nbody__contact *)e->desc.allocator.alloc(cap * sizeof(nbody__contact), e->desc.allocator.user_data);
        if (!w->hout) return NBODY_ERR_OUT_OF_MEMORY;
        w->hcap = cap;
    }
    NBODY__CU(cudaMemcpy(w->hout, w->dout, (size_t)found * sizeof(nbody__contact), cudaMemcpyDeviceToHost));
    *pairs = w->hout; *count = (size_t)found;
    return NBODY_OK;
}

/* ======================================================================================
   engine operations
   ====================================================================================== */
static void nbody__cu_shutdown(nbody__engine *e) {
    nbody__cuda *c = nbody__cu(e);
    if (!c) return;
    (void)cudaSetDevice(c->dev);
    cudaFree(c->m); cudaFree(c->bodies); cudaFree(c->partial); cudaFree(c->red); cudaFree(c->flags);
    cudaFree(c->node); cudaFree(c->lo); cudaFree(c->hi); cudaFree(c->nmass); cudaFree(c->rad);
    cudaFree(c->key[0]); cudaFree(c->key[1]); cudaFree(c->val[0]); cudaFree(c->val[1]);
    cudaFree(c->leafbody); cudaFree(c->ownpos); cudaFree(c->cubtmp); cudaFree(c->yact);
    nbody__cu_slice_free(c->slice, &e->desc);
    nbody__cu_ct_free(c->contacts, &e->desc);
    nbody__cu_h_free(c->herm, &e->desc);
    nbody__cu_kdk_free(c->kdk, &e->desc);
    cudaFree(c->sb); cudaFree(c->nrange); cudaFree(c->nquad);
    for (int k = 0; k < 5; ++k)
        if (c->bev[k]) cudaEventDestroy(c->bev[k]);
    cudaFree(c->gw_next); cudaFree(c->gw_groups); cudaFree(c->gw_flag); cudaFree(c->gw_tmp); cudaFree(c->gw_gstack);
    for (int k = 0; k < 3; ++k)
        if (c->tev[k]) cudaEventDestroy(c->tev[k]);
    (void)cudaGetLastError();
    e->desc.allocator.free(c, e->desc.allocator.user_data);
    e->impl = NULL;
}

/* A block size the user gave must fit the kernels it will launch on this device (their
   register use caps threads per block below 1024): refused here, at nbody_create, rather
   than by the first step. The dense kernels then lower bodies per thread as needed. */
static nbody_result nbody__cu_check_block(nbody__engine *e, int tree) {
    int B = e->desc.block_size, limit = 1024;
    cudaFuncAttributes a;
    if (tree) {
        /* the group walk caps its threads per block itself (whole warps, registers, shared memory) */
        const void *fns[] = {(const void *)nbody__cu_walk<nbody__r, true, false>, (const void *)nbody__cu_walk<nbody__r, false, false>};
        for (int k = 0; k < 2; ++k) {
            if (cudaFuncGetAttributes(&a, fns[k]) != cudaSuccess) { (void)cudaGetLastError(); return NBODY_ERR_DEVICE; }
            if (a.maxThreadsPerBlock < limit) limit = a.maxThreadsPerBlock;
        }
    } else {
        limit = nbody__cu_dense_max_threads(1, 0, 0);
        if (nbody__cu_dense_max_threads(1, 1, 0) < limit) limit = nbody__cu_dense_max_threads(1, 1, 0);
    }
    if (B <= limit) return NBODY_OK;
    nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: block_size %d above the %s kernel's limit of %d threads per block on this device",
                  B, tree ? "tree walk" : "dense", limit);
    return NBODY_ERR_INVALID_ARGUMENT;
}
static nbody_result nbody__cu_multi_init(nbody__engine *e, int tree);
static int nbody__cu_is_multi(nbody__engine *e);

static nbody_result nbody__cu_init_common(nbody__engine *e, int tree) {
    nbody__cuda *c;
    int count = 0;
    nbody_result r;
    cudaError_t err;
    /* the tree walks single-body leaves, stackless, in leaf order, with monopoles: any other
       choice of the desc is refused rather than ignored */
    if (tree && e->desc.leaf_size > 32) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda-tree: leaf_size %d above the GPU walk's 32", e->desc.leaf_size);
        return NBODY_ERR_UNAVAILABLE;
    }
    if (tree && e->desc.traversal == NBODY_TRAVERSAL_STACK) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda-tree: the walk is stackless only (traversal STACK refused)");
        return NBODY_ERR_UNAVAILABLE;
    }
    if (tree && e->desc.visit_order == NBODY_ORDER_BODY) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda-tree: bodies are walked in leaf order only (visit_order BODY refused)");
        return NBODY_ERR_UNAVAILABLE;
    }
    if (e->desc.devices > 1) return nbody__cu_multi_init(e, tree);    /* several GPUs: see there */
    err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: no CUDA device (%s)", cudaGetErrorString(err));
        return NBODY_ERR_UNAVAILABLE;
    }
    if (e->desc.device >= count) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: device %d requested, %d present", e->desc.device, count);
        return NBODY_ERR_UNAVAILABLE;
    }
    if (e->desc.block_size > 1024) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: block_size %d above 1024", e->desc.block_size);
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if (e->n > ((size_t)1 << 30)) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: %lu bodies above the engines' 2^30", (unsigned long)e->n);
        return NBODY_ERR_UNAVAILABLE;
    }
    c = (nbody__cuda *)e->desc.allocator.alloc(sizeof *c, e->desc.allocator.user_data);
    if (!c) return NBODY_ERR_OUT_OF_MEMORY;
    memset(c, 0, sizeof *c);
    c->dev = e->desc.device;
    c->tree = tree;
    e->impl = c;
    r = nbody__cu_check(e, cudaSetDevice(c->dev), "cudaSetDevice");
    if (r == NBODY_OK) r = nbody__cu_check(e, cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, c->dev), "device attributes");
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->m, e->n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, (unsigned char **)&c->red, 2 * NBODY__RED_SLOTS * sizeof(nbody__box<nbody__r>));
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->bodies, e->n);   /* dense: the packed bodies; tree: the build's */
    if (r == NBODY_OK && tree) {
        size_t nn = 2 * e->n;
        r = nbody__cu_malloc(e, &c->node, nn);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->lo, nn);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->hi, nn);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->nmass, nn);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->rad, nn);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->key[0], e->n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->key[1], e->n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->val[0], 2 * e->n);   /* then the node ids of the group selection */
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->val[1], e->n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->leafbody, e->n);
        if (r == NBODY_OK)
            r = nbody__cu_check(e, cub::DeviceRadixSort::SortPairs(NULL, c->cubbytes, c->key[0], c->key[1], c->val[0],
                                                                    c->val[1], (int)e->n, 0, 63), "sort size");
        if (r == NBODY_OK) r = nbody__cu_malloc(e, (unsigned char **)&c->cubtmp, c->cubbytes);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->sb, e->n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->nrange, nn);
        if (r == NBODY_OK && e->desc.quadrupole) r = nbody__cu_malloc(e, &c->nquad, 2 * e->n);
        c->bucket = e->desc.leaf_size > 0 ? e->desc.leaf_size : 1;
        if (r == NBODY_OK)
            r = nbody__cu_check(e, cudaDeviceGetAttribute(&c->smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, c->dev), "device attributes");
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->gw_next, 2);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->gw_groups, e->n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &c->gw_flag, 2 * e->n);
        if (r == NBODY_OK)
            r = nbody__cu_check(e, cub::DeviceSelect::Flagged(NULL, c->gw_tmpbytes, c->val[0] + 1, c->gw_flag + 1, c->gw_groups, c->gw_next + 1,
                                                              (int)(2 * e->n - 1)), "select size");
        if (r == NBODY_OK) r = nbody__cu_malloc(e, (unsigned char **)&c->gw_tmp, c->gw_tmpbytes ? c->gw_tmpbytes : 1);
        for (int k = 0; k < 4 && r == NBODY_OK; ++k) {   /* more than the default 48 KB of shared memory; registers cap the threads */
            cudaFuncAttributes a;
            nbody__cu_gw_fn fn = nbody__cu_gw_kernel(k & 1, k >> 1);
            r = nbody__cu_check(e, cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, c->smem_max), "cudaFuncSetAttribute");
            if (r == NBODY_OK) r = nbody__cu_check(e, cudaFuncGetAttributes(&a, (const void *)fn), "cudaFuncGetAttributes");
            c->gw_maxthreads[k] = r == NBODY_OK ? a.maxThreadsPerBlock : 32;
        }
    }
    if (r == NBODY_OK && e->desc.block_size > 0) r = nbody__cu_check_block(e, tree);
    if (r == NBODY_OK && e->desc.block_size > 0) {
        c->block = e->desc.block_size;
        c->bodies_per_thread = sizeof(nbody__r) == sizeof(float) ? 4 : 2;
        c->walk = e->desc.quadrupole ? NBODY__CU_WALK_GROUP : NBODY__CU_WALK_WARP;   /* tree: warp or group walk */
        c->tuned = 1;
    }
    if (r != NBODY_OK) nbody__cu_shutdown(e);
    return r;
}
static nbody_result nbody__cu_init_dense(nbody__engine *e) { return nbody__cu_init_common(e, 0); }
static nbody_result nbody__cu_init_tree(nbody__engine *e) { return nbody__cu_init_common(e, 1); }

static nbody_result nbody__cu_alloc(nbody__engine *e, size_t len, nbody__buf *out) {
    nbody__r *p = NULL;
    nbody_result r = nbody__cu_enter(e);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &p, len);
    if (r != NBODY_OK) return r;
    r = nbody__cu_check(e, cudaMemset(p, 0, len * sizeof(nbody__r)), "cudaMemset");
    if (r != NBODY_OK) { cudaFree(p); return r; }
    *out = p;
    return NBODY_OK;
}

static void nbody__cu_release(nbody__engine *e, nbody__buf b) {
    if (!b) return;
    (void)cudaSetDevice(nbody__cu(e)->dev);
    cudaFree(b);
    (void)cudaGetLastError();
}

static nbody_result nbody__cu_upload(nbody__engine *e, nbody__buf dst, size_t off, const nbody_real *src, size_t len) {
    nbody_result r = nbody__cu_enter(e);
    if (r != NBODY_OK) return r;
    NBODY__CU(cudaMemcpy((nbody__r *)dst + off, src, len * sizeof(nbody__r), cudaMemcpyHostToDevice));
    return NBODY_OK;
}

static nbody_result nbody__cu_download(nbody__engine *e, nbody_real *dst, nbody__buf src, size_t off, size_t len) {
    nbody_result r = nbody__cu_enter(e);
    if (r != NBODY_OK) return r;
    NBODY__CU(cudaMemcpy(dst, (const nbody__r *)src + off, len * sizeof(nbody__r), cudaMemcpyDeviceToHost));
    return NBODY_OK;
}

static nbody_result nbody__cu_set_masses(nbody__engine *e, const nbody_real *m) {
    nbody__cuda *c = nbody__cu(e);
    size_t i;
    nbody_result r = nbody__cu_upload(e, c->m, 0, m, e->n);
    if (r != NBODY_OK) return r;
    for (i = 1; i < e->n && m[i] == m[0]; ++i) {}
    c->uni = e->n > 0 && i == e->n;
    c->mass1 = e->n > 0 ? m[0] : 0;
    return NBODY_OK;
}

static nbody_result nbody__cu_derivative(nbody__engine *e, nbody__buf yb, nbody__buf fb) {
    nbody__cuda *c = nbody__cu(e);
    const nbody__r *y = (const nbody__r *)yb;
    nbody__r *f = (nbody__r *)fb;
    size_t n = e->n;
    nbody_result r = nbody__cu_enter(e);
    if (r != NBODY_OK) return r;
    if (c->tree) {
        nbody__cu_lc<nbody__r> copy;   /* f[0, 3n) = v */
        memset(&copy, 0, sizeof copy);
        copy.out = f; copy.y = y + 3 * n; copy.len = 3 * n;
        nbody__cu_lincomb_kernel<<<nbody__cu_blocks(3 * n, 256), 256>>>(copy);
        NBODY__CU(cudaGetLastError());
        if (c->timing) NBODY__CU(cudaEventRecord(c->tev[0]));
        if ((r = nbody__cu_tree_build(e, y)) != NBODY_OK) return r;
        if (c->timing) NBODY__CU(cudaEventRecord(c->tev[1]));
    } else {
        nbody__cu_pack<<<nbody__cu_blocks(3 * n, 256), 256>>>(y, c->m, c->bodies, f, n);
        NBODY__CU(cudaGetLastError());
    }
    if (!c->tuned && (r = nbody__cu_tune(e, f)) != NBODY_OK) return r;
    r = nbody__cu_forces(e, c->block, c->bodies_per_thread, c->walk, 0, f, NULL);
    if (r == NBODY_OK && c->tree && c->timing) NBODY__CU(cudaEventRecord(c->tev[2]));
    return r;
}

static nbody_result nbody__cu_lincomb(nbody__engine *e, const nbody__lincomb *op) {
    nbody__cu_lc<nbody__r> p;
    nbody_result r;
    if (op->len == 0) return NBODY_OK;
    if (op->nk < 0 || op->nk > NBODY__MAX_TERMS) return NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__cu_enter(e)) != NBODY_OK) return r;
    p = nbody__cu_lc_of(op);
    nbody__cu_lincomb_kernel<<<nbody__cu_blocks(op->len, 256), 256>>>(p);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}

static nbody_result nbody__cu_error_norm(nbody__engine *e, const nbody__lincomb *op, nbody_real atol, nbody_real rtol,
                                         nbody_real *norm) {
    nbody__cu_map_norm<nbody__r> map;
    nbody__r *dev;
    nbody_result r;
    if (op->len == 0) { *norm = 0; return NBODY_OK; }
    if (op->nk < 0 || op->nk > NBODY__MAX_TERMS || !op->y) return NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__cu_enter(e)) != NBODY_OK) return r;
    map.p = nbody__cu_lc_of(op);
    map.p.comp = NULL;
    map.atol = atol; map.rtol = rtol;
    if ((r = nbody__cu_reduce<nbody__cu_maxnan<nbody__r> >(e, map, op->len, &dev)) != NBODY_OK) return r;
    NBODY__CU(cudaMemcpy(norm, dev, sizeof *norm, cudaMemcpyDeviceToHost));
    return NBODY_OK;
}

static nbody_result nbody__cu_all_finite(nbody__engine *e, nbody__buf b, size_t off, size_t len, int *finite) {
    nbody__cu_map_nonfinite<nbody__r> map = {(const nbody__r *)b + off};
    nbody__r *dev, bad = 0;
    nbody_result r;
    if (len == 0) { *finite = 1; return NBODY_OK; }
    if ((r = nbody__cu_enter(e)) != NBODY_OK) return r;
    if ((r = nbody__cu_reduce<nbody__cu_maxnan<nbody__r> >(e, map, len, &dev)) != NBODY_OK) return r;
    NBODY__CU(cudaMemcpy(&bad, dev, sizeof bad, cudaMemcpyDeviceToHost));
    *finite = bad == 0;
    return NBODY_OK;
}

/* ======================================================================================
   NBODY_HERMITE on the device: nbody__hermite_op, nbody__hermite_levels (hermite_step) and
   nbody__hermite_store (the undo of a step)
   The state (base, force, high: each body at its own time), its copy of the ticks and the
   predicted state stay in device buffers. A block step (hermite_step) is two launches and one
   synchronisation, and moves the active list and the active bodies' levels (5 bytes a body)
   up and their new levels (a byte) down, through mapped pinned host memory that the kernels
   read and write in place (no copy call: each costs microseconds of host time, and most
   steps have a handful of active bodies; the force kernel reads the list there once and
   copies it for the correction, so that one round trip to the host a step is on its path):
     forces   a, jerk (snap) of the active bodies from every source predicted to the step's
              time on the way (nbody__hermite_predict1 as the tile is loaded; the blocks of the
              first group of active bodies write the prediction into pred, y_new's layout,
              test particles included). A block of NBODY__CU_H_THREADS threads takes TI
              active bodies and one slice of the sources; the TJ = threads / TI lanes of a
              body share each tile of the slice and their sums are added by a fixed tree at
              the end. Many active bodies: TI = the block, one thread a body (phi-GPU's
              i-parallel kernel); few: TI is the next power of two of their count and the
              sources split over as many slices as fill the GPU (the j-parallelism of phi-GPU
              and HiGPUs), whose partial sums are added by
     correct  a warp a body: its slices' sums (a fixed order), G applied, then the corrector
              and the next level (nbody__hermite_correct, nbody__hermite_criterion,
              nbody__block_level_of: the host's code), written in place (base, force, high,
              ticks; x, v into pred), the state it replaces kept for an undo: a step the host
              refuses after all (a level below the smallest step, a value not finite) is
              undone by hermite_store (commit -1), one launch.
   nbody__hermite_op (the start's forces of every body) runs the same forces kernel and, in
   place of the corrector, gathers rows for the host.
   Pair terms in NBODY_REAL (the weight from the hardware's reciprocal square root, corrected
   to full precision in double), sums in double (phi-GPU: single-precision pair terms, double
   sums). A configuration gives the same bits on every run; the sums' order differs from the
   CPU engines', so trajectories agree with theirs to rounding.
   ====================================================================================== */
#define NBODY__CU_H_THREADS 128
#define NBODY__CU_H_LOG2 7                 /* log2 NBODY__CU_H_THREADS */
#define NBODY__CU_H_WAVES 16               /* blocks an SM the slices aim at (with few active bodies) */
#define NBODY__CU_H_CTL_BYTES 512          /* hermite_run's control block, rounded up: the levels after it aligned */

struct nbody__cu_hermite {
    unsigned long long *ticks;     /* n: each body's time, updated by the steps */
    double *part;                  /* slices x 9 x count: the slices' sums */
    size_t part_cap;
    nbody__r *keep;                /* 18n: the last step's active bodies before it (the undo) */
    unsigned long long *tkeep;     /* n: their times */
    unsigned int *list;            /* n: the step's list and levels, copied by the force kernel */
    unsigned char *lev;
    unsigned int *hlist;           /* mapped pinned host memory, which the kernels read and write
                                      in place (no copy call a step): the list (n), */
    nbody__r *hrows;               /* the rows of nbody__hermite_op (24n), */
    unsigned char *hlev;           /* the active bodies' levels, in and out (n) */
    unsigned int *dhlist;          /* their device addresses */
    nbody__r *dhrows;
    unsigned char *dhlev;
    struct nbody__cu_h_shape *shape;   /* hermite_run: the forces' shape for each count below */
    size_t shape_len, shape_src;   /* shape_len, for shape_src sources */
    unsigned char *run, *hrun;     /* its control block and levels: device, pinned host */
    int run_blocks[2];             /* its grid, order 4 and 6 (0: not known yet, -1: no run here) */
};

static void nbody__cu_h_free(nbody__cu_hermite *h, const nbody_desc *d) {
    if (!h) return;
    cudaFree(h->ticks); cudaFree(h->part); cudaFree(h->keep); cudaFree(h->tkeep); cudaFree(h->list); cudaFree(h->lev);
    cudaFreeHost(h->hlist); cudaFreeHost(h->hrows); cudaFreeHost(h->hlev);
    cudaFree(h->shape); cudaFree(h->run); cudaFreeHost(h->hrun);
    (void)cudaGetLastError();
    d->allocator.free(h, d->allocator.user_data);
}

/* host memory the GPU reads and writes in place (mapped; flags: cudaHostAllocPortable where
   several GPUs share it) */
template <class P> static nbody_result nbody__cu_host_alloc(nbody__engine *e, P **host, size_t count, unsigned int flags) {
    *host = NULL;
    return nbody__cu_check(e, cudaHostAlloc((void **)host, (count ? count : 1) * sizeof(P), cudaHostAllocMapped | flags), "cudaHostAlloc");
}
template <class P> static nbody_result nbody__cu_host_mapped(nbody__engine *e, P **host, P **dev, size_t count) {
    nbody_result r = nbody__cu_host_alloc(e, host, count, 0);
    if (r == NBODY_OK) r = nbody__cu_check(e, cudaHostGetDevicePointer((void **)dev, *host, 0), "cudaHostGetDevicePointer");
    return r;
}

static nbody_result nbody__cu_h_work(nbody__engine *e, nbody__cu_hermite **out) {
    nbody__cuda *c = nbody__cu(e);
    nbody__cu_hermite *h = c->herm;
    size_t n = e->n;
    nbody_result r = NBODY_OK;
    if (h) { *out = h; return NBODY_OK; }
    h = (nbody__cu_hermite *)e->desc.allocator.alloc(sizeof *h, e->desc.allocator.user_data);
    if (!h) return NBODY_ERR_OUT_OF_MEMORY;
    memset(h, 0, sizeof *h);
    c->herm = h;
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &h->ticks, n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &h->keep, 18 * n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &h->tkeep, n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &h->list, n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &h->lev, n);
    if (r == NBODY_OK) r = nbody__cu_host_mapped(e, &h->hlist, &h->dhlist, n);
    if (r == NBODY_OK) r = nbody__cu_host_mapped(e, &h->hrows, &h->dhrows, 24 * n);
    if (r == NBODY_OK) r = nbody__cu_host_mapped(e, &h->hlev, &h->dhlev, n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &h->run, NBODY__CU_H_CTL_BYTES + (n + 15) / 16 * 16);
    if (r == NBODY_OK) r = nbody__cu_check(e, cudaMallocHost((void **)&h->hrun, NBODY__CU_H_CTL_BYTES + (n + 15) / 16 * 16), "cudaMallocHost");
    if (r != NBODY_OK) { nbody__cu_h_free(h, &e->desc); c->herm = NULL; return r; }
    *out = h;
    return NBODY_OK;
}

/* ---- kernels ---- */
/* r2^(-1/2) for the pair terms: float the hardware estimate (nbody__cu_rsqrt); double the
   ~22-bit estimate y, then y (1 - e)^(-1/2) = y (1 + e/2 + 3/8 e^2 + O(e^3)), e = 1 - r2 y^2:
   full precision in 5 double operations (the library's rsqrt takes about three times that) */
__device__ __forceinline__ float nbody__cu_h_rsqrt(float r2) { return nbody__cu_rsqrt(r2); }
__device__ __forceinline__ double nbody__cu_h_rsqrt(double r2) {
    double y, e;
    asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(r2));
    e = fma(-r2, y * y, 1.0);
    return fma(y * e, fma(0.375, e, 0.5), y);
}

/* what the kernels read of a step: the state at each body's time and the step's time */
template <class T> struct nbody__cu_h_state {
    const T *base, *force, *high, *m;
    const unsigned long long *ticks;
    unsigned long long now;
    T tick, span;
    int order;
    size_t n;
};

/* body j predicted to the step's time (nbody__hermite_predict1): x (with its mass), v, a */
template <class T>
__device__ __forceinline__ void nbody__cu_h_predict(const nbody__cu_h_state<T> &S, size_t j, nbody__v4<T> *x, nbody__v4<T> *v,
                                                    nbody__v4<T> *a) {
    T dt = nbody__hermite_dt(S.ticks[j], S.now, S.tick, S.span), p[9];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        size_t xi = (size_t)k * S.n + j, vi = xi + 3 * S.n;
        nbody__hermite_predict1(S.base[xi], S.base[vi], S.force[xi], S.force[vi], S.order == 6 ? S.high[xi] : (T)0,
                                S.order == 6 ? S.high[vi] : (T)0, dt, &p[k], &p[3 + k], &p[6 + k]);
    }
    x->x = p[0]; x->y = p[1]; x->z = p[2]; x->w = S.m[j];
    v->x = p[3]; v->y = p[4]; v->z = p[5]; v->w = 0;
    a->x = p[6]; a->y = p[7]; a->z = p[8]; a->w = 0;
}
template <class T> __device__ __forceinline__ void nbody__cu_h_put(T *pred, size_t n, size_t j, const nbody__v4<T> &x, const nbody__v4<T> &v) {
    pred[j] = x.x; pred[n + j] = x.y; pred[2 * n + j] = x.z; pred[3 * n + j] = v.x; pred[4 * n + j] = v.y; pred[5 * n + j] = v.z;
}

/* the slice by (slice_len sources, of slices) for the active bodies bx TI .. (see above) of the
   list src (none: from list itself); the first group (bx 0) writes the prediction of its slice,
   and of its share of the test particles [nsrc, n), into pred; with copy (the host's step) the
   first slice (by 0) copies the list and the levels (slev: NULL for none) from mapped memory into
   list and lev for the kernels after it (one round trip to the host a step, which the
   prediction of the first tile hides: the target is predicted after it). No pointer here is
   __restrict__: in the run of steps (nbody__cu_h_run) the same kernel writes the state, the list
   and the levels that it reads in the next step, which the read-only cache would not see.
   Several GPUs (nbody__cu_mh_forces): the targets' predicted x v a come in rows (24 reals a list
   entry) and the sources are a slice of the bodies whose first is body lo, so that target i is
   source i - lo of it where it is one (unsigned wrap-around otherwise: no source). */
template <class T, bool SNAP>
__device__ __forceinline__ void nbody__cu_h_forces_group(const nbody__cu_h_state<T> &S, const unsigned int *src, const unsigned char *slev,
                                                         unsigned int count, unsigned int nsrc, unsigned int slice_len, int ti_log2,
                                                         T eps2, T *pred, double *part, unsigned int *list, unsigned char *lev,
                                                         bool copy_list, unsigned int bx, unsigned int by, unsigned int slices,
                                                         const T *rows = NULL, size_t lo = 0) {
    const int B = NBODY__CU_H_THREADS, NK = SNAP ? 9 : 6;
    __shared__ nbody__v4<T> sx[B], sv[B], sa[SNAP ? B : 1];
    __shared__ double red[9][B];
    const int TI = 1 << ti_log2, TJ = B >> ti_log2, li = threadIdx.x & (TI - 1), lj = threadIdx.x >> ti_log2;
    const unsigned int q = bx * TI + li, qc = q < count ? q : count - 1, i = src[qc];
    const size_t self = (size_t)i - lo;
    const bool copy = copy_list && by == 0 && lj == 0 && q < count;
    const unsigned char level = copy && slev ? slev[q] : 0;
    const unsigned int j0 = by * slice_len, j1 = min(nsrc, j0 + slice_len);
    const bool first = bx == 0;
    nbody__v4<T> xi, vi, ai, tx, tv, ta;
    double s[9];
    if (rows) {
        const T *r = rows + 24 * (size_t)qc;
        xi.x = r[0]; xi.y = r[1]; xi.z = r[2]; vi.x = r[3]; vi.y = r[4]; vi.z = r[5]; ai.x = r[6]; ai.y = r[7]; ai.z = r[8];
    }
    if (first && nsrc < S.n) {         /* the test particles: predicted for pred only */
        size_t per = (S.n - nsrc + slices - 1) / slices, t1 = min(S.n, nsrc + (by + 1) * per);
        for (size_t j = nsrc + by * per + threadIdx.x; j < t1; j += B) {
            nbody__cu_h_predict(S, j, &tx, &tv, &ta);
            nbody__cu_h_put(pred, S.n, j, tx, tv);
        }
    }
#pragma unroll
    for (int k = 0; k < 9; ++k) s[k] = 0;
    for (unsigned int t0 = j0; t0 < j1; t0 += B) {
        const int tl = (int)min((unsigned int)B, j1 - t0);
        __syncthreads();
        if ((int)threadIdx.x < tl) {
            nbody__cu_h_predict(S, t0 + threadIdx.x, &tx, &tv, &ta);
            sx[threadIdx.x] = tx; sv[threadIdx.x] = tv;
            if (SNAP) sa[threadIdx.x] = ta;
            if (first) nbody__cu_h_put(pred, S.n, t0 + threadIdx.x, tx, tv);
        }
        if (!rows && t0 == j0) nbody__cu_h_predict(S, i, &xi, &vi, &ai);
        __syncthreads();
#pragma unroll 4
        for (int k = lj; k < tl; k += TJ) {
            const nbody__v4<T> pj = sx[k], vj = sv[k];
            const T dx = pj.x - xi.x, dy = pj.y - xi.y, dz = pj.z - xi.z;
            const T r2 = nbody__soft_r2_fused(dx, dy, dz, eps2), inv = nbody__cu_h_rsqrt(r2), inv2 = inv * inv;
            T t[9];
            if (t0 + (size_t)k == self) continue;   /* not itself */
            if (SNAP) {
                const nbody__v4<T> aj = sa[k];
                nbody__hermite_terms(dx, dy, dz, vj.x - vi.x, vj.y - vi.y, vj.z - vi.z, aj.x - ai.x, aj.y - ai.y, aj.z - ai.z,
                                     pj.w * inv * inv2, inv2, 1, t);
            } else {
                nbody__hermite_terms(dx, dy, dz, vj.x - vi.x, vj.y - vi.y, vj.z - vi.z, (T)0, (T)0, (T)0, pj.w * inv * inv2, inv2, 0, t);
            }
#pragma unroll
            for (int c = 0; c < NK; ++c) s[c] += (double)t[c];
        }
    }
    /* the TJ lanes of each body: a fixed tree, so the same bits every run; its levels whose
       partners are 32 threads or more apart through shared memory, the rest (TI < 32: the sums
       are then in warp 0) by shuffles, the same additions */
#pragma unroll
    for (int c = 0; c < NK; ++c) red[c][threadIdx.x] = s[c];
    __syncthreads();
    int stride = TJ / 2;
    for (; stride > 0 && stride * TI >= 32; stride /= 2) {
        if (lj < stride)
#pragma unroll
            for (int c = 0; c < NK; ++c) red[c][threadIdx.x] += red[c][threadIdx.x + stride * TI];
        __syncthreads();
    }
    if (threadIdx.x < 32 || lj == 0) {     /* warp 0 whole where levels are left (TI < 32) */
#pragma unroll
        for (int c = 0; c < NK; ++c) s[c] = red[c][threadIdx.x];
        for (; stride > 0; stride /= 2)
#pragma unroll
            for (int c = 0; c < NK; ++c) s[c] += __shfl_down_sync(0xffffffffu, s[c], stride * TI);
        if (lj == 0 && q < count)
#pragma unroll
            for (int c = 0; c < NK; ++c) part[((size_t)q * 9 + c) * slices + by] = s[c];
    }
    if (copy) { list[q] = i; lev[q] = level; }
}

/* the host's step: the group blockIdx.x, slice blockIdx.y, the list from mapped memory */
template <class T, bool SNAP>
__global__ void __launch_bounds__(NBODY__CU_H_THREADS)
nbody__cu_h_forces(nbody__cu_h_state<T> S, const unsigned int *hlist, const unsigned char *hlev, unsigned int count,
                   unsigned int nsrc, unsigned int slice_len, int ti_log2, T eps2, T *pred, double *part, unsigned int *list,
                   unsigned char *lev, bool copy_list) {
    nbody__cu_h_forces_group<T, SNAP>(S, hlist, hlev, count, nsrc, slice_len, ti_log2, eps2, pred, part, list, lev, copy_list,
                                      blockIdx.x, blockIdx.y, gridDim.y);
}

/* G times active body q's sums of rows 0 .. nk over its slices, into f[0 .. 9) of every lane of
   its warp (each lane's slices in order, then a fixed butterfly: the same bits every run and in
   every lane; the rows' loads and trees interleaved, where one thread's loop over hundreds of
   slices would wait on each load) */
template <class T>
__device__ __forceinline__ void nbody__cu_h_slice_sums(const double *part, unsigned int slices, size_t q, int nk, unsigned int lane,
                                                       T G, T *f) {
    double sum[9];
#pragma unroll
    for (int k = 0; k < 9; ++k) sum[k] = 0;
    for (unsigned int sl = lane; sl < slices; sl += 32)
#pragma unroll
        for (int k = 0; k < 9; ++k)
            if (k < nk) sum[k] += part[(q * 9 + (size_t)k) * slices + sl];
    for (int off = 16; off > 0; off >>= 1)
#pragma unroll
        for (int k = 0; k < 9; ++k) sum[k] += __shfl_xor_sync(0xffffffffu, sum[k], off);
#pragma unroll
    for (int k = 0; k < 9; ++k) f[k] = G * (T)sum[k];
}

/* a warp an active body: rows 0-8 its forces, rows 9-23 x v a jerk snap at its own time */
template <class T>
__global__ void nbody__cu_h_rows(const double *part, unsigned int slices, int nk, unsigned int count, const unsigned int *list,
                                 const T *base, const T *force, const T *high, size_t n, T G, T *rows) {
    const unsigned int lane = threadIdx.x & 31;
    const size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t q = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5; q < count; q += warps) {
        size_t i = list[q];
        T f[9];
        nbody__cu_h_slice_sums<T>(part, slices, q, nk, lane, G, f);
        if (lane == 0)
            for (int k = 0; k < 9; ++k) rows[(size_t)k * count + q] = f[k];
        if (lane < 6) {
            rows[(size_t)(9 + lane) * count + q] = base[(size_t)lane * n + i];
            rows[(size_t)(15 + lane) * count + q] = force[(size_t)lane * n + i];
        } else if (lane < 9) {
            rows[(size_t)(15 + lane) * count + q] = high[(size_t)(lane - 6) * n + i];
        }
    }
}

/* hermite_step's correction of active body q (body i, at level `level`), by a warp: its forces,
   then lane k < 3 corrects axis k (nbody__hermite_correct_axis) over its elapsed time, written
   in place (base, force, high, its time; x, v into pred), the 18 values and the time it replaces
   into keep and tkeep; lane 0 returns its next level (nbody__hermite_correct's norms,
   nbody__hermite_criterion, nbody__block_level_of), NBODY__BLOCK_LEVELS + 2 where a corrected
   value is not finite */
template <class T>
__device__ __forceinline__ unsigned int nbody__cu_h_correct1(const nbody__cu_h_state<T> &S, const double *part, unsigned int slices,
                                                              size_t q, size_t i, unsigned long long level, unsigned int lane, T G, T eta,
                                                              T dt_max, T dt_min, T *base, T *force, T *high, unsigned long long *ticks,
                                                              T *pred, T *keep, unsigned long long *tkeep) {
    const size_t n = S.n, xi = (size_t)lane * n + i, vi = xi + 3 * n;
    T f[9], d[6], x1, v1, s1, c, dd, e, old[6];
    int finite;
    nbody__cu_h_slice_sums<T>(part, slices, q, S.order == 6 ? 9 : 6, lane, G, f);
    if (lane >= 3) return 0;
    const unsigned long long t0 = ticks[i];
    const T a1 = lane == 0 ? f[0] : lane == 1 ? f[1] : f[2], j1 = lane == 0 ? f[3] : lane == 1 ? f[4] : f[5];
    const T s1_in = lane == 0 ? f[6] : lane == 1 ? f[7] : f[8];
    old[0] = base[xi]; old[1] = base[vi]; old[2] = force[xi]; old[3] = force[vi]; old[4] = high[xi]; old[5] = high[vi];
    nbody__hermite_correct_axis(S.order, a1, j1, s1_in, old[0], old[1], old[2], old[3], old[4], nbody__hermite_dt(t0, S.now, S.tick, S.span),
                                &x1, &v1, &s1, &c, &dd, &e);
    finite = isfinite(x1) && isfinite(v1) && isfinite(a1) && isfinite(j1) && isfinite(s1) && isfinite(c);
#pragma unroll
    for (int k = 0; k < 6; ++k) keep[18 * q + 3 * k + lane] = old[k];
    base[xi] = x1; base[vi] = v1; force[xi] = a1; force[vi] = j1; high[xi] = s1; high[vi] = c;
    pred[xi] = x1; pred[vi] = v1;
    /* the norms of the axes' results (nbody__hermite_correct's d) in lane 0 */
    {
        const T sy = __shfl_sync(7u, s1, 1), sz = __shfl_sync(7u, s1, 2), cy = __shfl_sync(7u, c, 1), cz = __shfl_sync(7u, c, 2);
        const T dy = __shfl_sync(7u, dd, 1), dz = __shfl_sync(7u, dd, 2), ey = __shfl_sync(7u, e, 1), ez = __shfl_sync(7u, e, 2);
        finite &= __shfl_sync(7u, finite, 1) & __shfl_sync(7u, finite, 2);
        if (lane != 0) return 0;
        d[0] = nbody__norm3(f[0], f[1], f[2]); d[1] = nbody__norm3(f[3], f[4], f[5]);
        d[2] = nbody__norm3(s1, sy, sz); d[3] = nbody__norm3(c, cy, cz); d[4] = nbody__norm3(dd, dy, dz); d[5] = nbody__norm3(e, ey, ez);
    }
    tkeep[q] = t0;
    ticks[i] = S.now;
    return (unsigned int)(finite ? nbody__block_level_of(level, nbody__hermite_criterion(S.order, eta, d), S.now, dt_max, dt_min)
                                 : NBODY__BLOCK_LEVELS + 2);
}

/* the host's step: a warp an active body, its next level into hlev[q] (mapped host memory) */
template <class T>
__global__ void nbody__cu_h_correct(nbody__cu_h_state<T> S, const double *part, unsigned int slices, unsigned int count,
                                    const unsigned int *list, T G, T eta, T dt_max, T dt_min, T *base, T *force, T *high,
                                    unsigned long long *ticks, T *pred, T *keep, unsigned long long *tkeep, const unsigned char *lev,
                                    unsigned char *hlev) {
    const unsigned int lane = threadIdx.x & 31;
    const size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t q = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5; q < count; q += warps) {
        const unsigned int k = nbody__cu_h_correct1<T>(S, part, slices, q, list[q], lane == 0 ? lev[q] : 0, lane, G, eta, dt_max, dt_min,
                                                      base, force, high, ticks, pred, keep, tkeep);
        if (lane == 0) hlev[q] = (unsigned char)k;
    }
}

/* the undo of active body q (body i) of the last step: its state and time back from keep, tkeep */
template <class T>
__device__ __forceinline__ void nbody__cu_h_undo1(const T *keep, const unsigned long long *tkeep, size_t q, size_t i, size_t n, T *base,
                                                  T *force, T *high, unsigned long long *ticks) {
    for (int k = 0; k < 6; ++k) {
        base[(size_t)k * n + i] = keep[18 * q + k]; force[(size_t)k * n + i] = keep[18 * q + 6 + k];
        high[(size_t)k * n + i] = keep[18 * q + 12 + k];
    }
    ticks[i] = tkeep[q];
}
template <class T>
__global__ void nbody__cu_h_undo(const T *keep, const unsigned long long *tkeep, const unsigned int *list, unsigned int count, size_t n,
                                 T *base, T *force, T *high, unsigned long long *ticks) {
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < count; q += (size_t)gridDim.x * blockDim.x)
        nbody__cu_h_undo1<T>(keep, tkeep, q, list[q], n, base, force, high, ticks);
}

/* ---- a run of block steps in one launch (hermite_run) ----
   A cooperative launch of as many blocks as are resident loops over the steps, two grid-wide
   barriers a step: every block schedules from the census of the levels, kept in the control
   block with atomics (the block time, the first active level, the active count: a warp's
   ballot and sum), and scans the levels into its own copy of the list in shared memory (the
   same list in every block; block 0 keeps the control block and writes the list out for the
   correction); the blocks take the forces' groups and slices in turn (nbody__cu_h_forces_group,
   the shape of the host's step for the same count, so the same bits); barrier; the warps
   correct the active bodies (nbody__cu_h_correct1) and move their levels in the census;
   barrier. A step with a refused level is undone by the warps that corrected it, and the run
   ends before it. A step of more active bodies ends the kernel with its list made by block 0:
   the host launches its two kernels (nbody__cu_h_forces, nbody__cu_h_run_big) and the next
   run kernel, which first takes that step into its totals (or undoes it). Measured on one H100
   (bench/results/hermite-gpu-run-2026-11-27.md, hermite-gpu-sync-2026-11-27.md): block 0
   scheduling alone behind a third barrier is slower at N = 16384 (0.93 s against 0.84), and so
   are the last block scheduling in a barrier's place, 4 blocks an SM and a run ending at every
   large step. */
#ifndef NBODY__CU_H_RUN_MAX
#define NBODY__CU_H_RUN_MAX 1024           /* the largest active count a run kernel's step takes (0: no runs;
                                              each block lists them in shared memory: 5 bytes a body) */
#endif
#ifndef NBODY__CU_H_RUN_BPS
#define NBODY__CU_H_RUN_BPS 2              /* a run's blocks an SM (126-128 registers a thread would fit 4:
                                              slower at N = 16384, 0.98 s against 0.84; 1 is slower) */
#endif
#define NBODY__CU_H_SCAN 8                 /* 16-byte words of levels a thread scans at once */

struct nbody__cu_h_shape { int ti_log2; unsigned int slices, slice_len; };

/* the run's control block: at the head of one device buffer, every body's level (a byte) after it */
struct nbody__cu_h_ctl {
    unsigned long long now, prev, next;    /* the last step's tick, the one before it, this step's
                                              (block 0 keeps them; the blocks read them at launch) */
    unsigned long long tick_stop, body_steps;
    unsigned int count;                    /* the kernel's step's active bodies, or a large step's once
                                              the host's launches took it (the next kernel counts it) */
    unsigned int big;                      /* the kernel ended before a step of this many (the list
                                              ready), which the host's launches take; 0: the run ends */
    unsigned int steps, n_all, small, max_level;   /* steps taken; a step of n_all or more ends the run,
                                              one of fewer than small the kernel takes */
    int bad;                               /* a body of this step got a level the run refuses */
    unsigned int census[NBODY__BLOCK_LEVELS + 1];   /* the bodies at each level */
};

template <class T> struct nbody__cu_h_run_args {
    nbody__cu_h_ctl *ctl;
    unsigned char *level;                  /* every body's level (n, rounded up to 16 bytes) */
    const nbody__cu_h_shape *shape;        /* the forces' shape for count m: shape[m] */
    unsigned int *list;                    /* the step's active bodies */
    unsigned char *lev;                    /* and their levels before it */
    double *part;
    T *pred[2];                            /* step k writes pred[k % 2] */
    T *base, *force, *high, *keep;
    unsigned long long *ticks, *tkeep;
    T G, eta, dt_max, dt_min, eps2;
    unsigned int nsrc;
};

/* the bodies listed in a 32-bit word of levels whose first is body j: bit 8 b set where byte b
   is a body (j + b < n) at a level >= k0 (kk: k0 in each byte) */
__device__ __forceinline__ unsigned int nbody__cu_h_active4(unsigned int word, unsigned int kk, unsigned int j, size_t n) {
    const size_t left = j < n ? n - j : 0;
    const unsigned int valid = left >= 4 ? 0x01010101u : 0x01010101u & ((1u << (8 * (unsigned int)left)) - 1u);
    return __vcmpgeu4(word, kk) & valid;
}
/* how many bodies a 16-byte word of levels (word index wd) lists */
__device__ __forceinline__ unsigned int nbody__cu_h_active16(uint4 v, unsigned int kk, unsigned int wd, size_t n) {
    return __popc(nbody__cu_h_active4(v.x, kk, wd * 16, n)) + __popc(nbody__cu_h_active4(v.y, kk, wd * 16 + 4, n)) +
           __popc(nbody__cu_h_active4(v.z, kk, wd * 16 + 8, n)) + __popc(nbody__cu_h_active4(v.w, kk, wd * 16 + 12, n));
}

/* a schedule from the census, by warp 0 (lane 0 writes *out, shared): after the step that
   ended at tick now, the next block time (nbody__block_census_due: the earliest end of an
   occupied level's step is the end of the finest occupied level's, since every coarser step
   ends on the finer grid), the first level k0 whose step divides it (from its trailing zeros),
   the active count m (the bodies at levels >= k0) and whether the run takes it (go) */
struct nbody__cu_h_due { unsigned long long next; unsigned int k0, m; int go; };
__device__ __forceinline__ void nbody__cu_h_due_of(volatile nbody__cu_h_ctl *c, unsigned long long now, nbody__cu_h_due *out) {
    const int L = NBODY__BLOCK_LEVELS;
    const unsigned int lane = threadIdx.x & 31;
    const unsigned int lo = c->census[lane], hi = lane + 32 <= (unsigned int)L ? c->census[lane + 32] : 0u;
    const unsigned int blo = __ballot_sync(0xffffffffu, lo != 0), bhi = __ballot_sync(0xffffffffu, hi != 0);
    const int kmax = bhi ? 63 - __clz(bhi) : blo ? 31 - __clz(blo) : -1;
    unsigned long long next = ~0ULL;
    unsigned int k0, m;
    if (kmax >= 0) {
        const unsigned long long span = 1ULL << (L - kmax);
        next = (now & ~(span - 1)) + span;
    }
    k0 = next == 0 ? 0u : (unsigned int)max(0, L - (__ffsll((long long)next) - 1));
    m = __reduce_add_sync(0xffffffffu, (lane >= k0 ? lo : 0u) + (lane + 32 >= k0 ? hi : 0u));
    if (lane == 0) { out->next = next; out->k0 = k0; out->m = m; out->go = m > 0 && m < c->n_all && next < c->tick_stop; }
}

/* the bodies of levels >= k0 into list, lev by the block (the order of the scan, the same in
   every block: a body's sums do not depend on its place in the list); returns their count */
__device__ unsigned int nbody__cu_h_scan(const unsigned char *level, size_t n, unsigned int k0, unsigned int *list, unsigned char *lev) {
    const int B = NBODY__CU_H_THREADS;
    __shared__ unsigned int s_warp[NBODY__CU_H_THREADS / 32];
    const unsigned int t = threadIdx.x, lane = t & 31, w = t >> 5, words = (unsigned int)((n + 15) / 16);
    const unsigned int kk = k0 * 0x01010101u;    /* k0 in each byte: __vcmpgeu4 tests four levels at once */
    unsigned int base = 0;
    for (unsigned int w0 = 0; w0 < words; w0 += B * NBODY__CU_H_SCAN) {
        uint4 v[NBODY__CU_H_SCAN];
        unsigned int mine = 0, before = 0, x;
#pragma unroll
        for (int r = 0; r < NBODY__CU_H_SCAN; ++r) {
            const unsigned int wd = w0 + (unsigned int)r * B + t;
            v[r] = wd < words ? ((const uint4 *)level)[wd] : make_uint4(0, 0, 0, 0);
            mine += nbody__cu_h_active16(v[r], kk, wd, n);
        }
        x = mine;                          /* the block's exclusive scan of the counts */
        for (int o = 1; o < 32; o <<= 1) {
            unsigned int y = __shfl_up_sync(0xffffffffu, x, o);
            if ((int)lane >= o) x += y;
        }
        if (lane == 31) s_warp[w] = x;
        __syncthreads();
        for (unsigned int k = 0; k < B / 32; ++k) before += k < w ? s_warp[k] : 0;
        before += base + x - mine;
#pragma unroll
        for (int r = 0; r < NBODY__CU_H_SCAN; ++r) {
            const unsigned int wd = w0 + (unsigned int)r * B + t;
            const unsigned int word[4] = {v[r].x, v[r].y, v[r].z, v[r].w};
#pragma unroll
            for (int h = 0; h < 4; ++h)
                for (unsigned int bits = nbody__cu_h_active4(word[h], kk, wd * 16 + 4 * h, n); bits; bits &= bits - 1) {
                    const unsigned int b = (unsigned int)(__ffs((int)bits) - 1) >> 3;
                    list[before] = wd * 16 + 4 * h + b; lev[before] = (unsigned char)(word[h] >> (8 * b)); ++before;
                }
        }
        for (unsigned int k = 0; k < B / 32; ++k) base += s_warp[k];
        __syncthreads();
    }
    return base;
}


/* the correction of the step's m active bodies by the warps of the grid, their levels moved in
   the census; a level above max_level marks the step bad */
template <class T>
__device__ __forceinline__ void nbody__cu_h_run_correct(const nbody__cu_h_state<T> &S, const nbody__cu_h_run_args<T> &A, unsigned int m,
                                                        unsigned int slices, T *pred) {
    volatile nbody__cu_h_ctl *c = A.ctl;
    const unsigned int lane = threadIdx.x & 31;
    const size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t q = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5; q < m; q += warps) {
        const size_t i = A.list[q];
        const unsigned int old = A.lev[q];
        const unsigned int l = nbody__cu_h_correct1<T>(S, A.part, slices, q, i, old, lane, A.G, A.eta, A.dt_max, A.dt_min, A.base, A.force,
                                                       A.high, A.ticks, pred, A.keep, A.tkeep);
        if (lane == 0 && l > c->max_level) c->bad = 1;
        else if (lane == 0 && l != old) {
            A.level[i] = (unsigned char)l;
            atomicSub(&A.ctl->census[old], 1u); atomicAdd(&A.ctl->census[l], 1u);
        }
    }
}
/* the undo of a bad step of m active bodies: state, times, levels and census back */
template <class T>
__device__ __forceinline__ void nbody__cu_h_run_undo(const nbody__cu_h_run_args<T> &A, unsigned int m, size_t n) {
    const size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    if (threadIdx.x & 31) return;
    for (size_t q = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5; q < m; q += warps) {
        const size_t i = A.list[q];
        const unsigned int old = A.lev[q], l = A.level[i];
        nbody__cu_h_undo1<T>(A.keep, A.tkeep, q, i, n, A.base, A.force, A.high, A.ticks);
        if (l != old) {
            A.level[i] = (unsigned char)old;
            atomicSub(&A.ctl->census[l], 1u); atomicAdd(&A.ctl->census[old], 1u);
        }
    }
}

/* the run: steps until the schedule ends it, hands a large step to the host's launches, or a
   step is refused; first, a large step the host's launches took and marked bad is undone */
template <class T, bool SNAP>
__global__ void __launch_bounds__(NBODY__CU_H_THREADS)
nbody__cu_h_run(nbody__cu_h_state<T> S0, nbody__cu_h_run_args<T> A) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    volatile nbody__cu_h_ctl *c = A.ctl;
    nbody__cu_h_state<T> S = S0;
    if (c->bad) {
        nbody__cu_h_run_undo<T>(A, c->count, S.n);
        grid.sync();                       /* every block has read count before it is cleared */
        if (blockIdx.x == 0 && threadIdx.x == 0) c->count = c->big = 0;
        return;
    }
    __shared__ unsigned int s_list[NBODY__CU_H_RUN_MAX > 0 ? NBODY__CU_H_RUN_MAX : 1];
    __shared__ unsigned char s_lev[NBODY__CU_H_RUN_MAX > 0 ? NBODY__CU_H_RUN_MAX : 1];
    __shared__ nbody__cu_h_due s_due;
    unsigned long long prev = c->prev, now = c->now;
    unsigned int taken = c->count, steps = c->steps;
    const unsigned long long due0 = c->next;
    const unsigned int small = c->small;
    grid.sync();                           /* every block has read the control block before block 0 writes it */
    if (taken) { prev = now; now = due0; }
    for (;;) {
        if (threadIdx.x < 32) nbody__cu_h_due_of(c, now, &s_due);
        __syncthreads();
        const nbody__cu_h_due due = s_due;
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            if (taken) { c->prev = prev; c->now = now; c->steps = steps + 1; c->body_steps = c->body_steps + taken; }
            c->next = due.next;
        }
        if (taken) ++steps;
        if (!due.go || due.m >= small) {   /* the end, or a large step for the host's launches */
            if (blockIdx.x == 0) {
                const unsigned int m = due.go ? nbody__cu_h_scan(A.level, S.n, due.k0, A.list, A.lev) : 0;
                if (threadIdx.x == 0) { c->count = 0; c->big = m; }
            }
            return;
        }
        const nbody__cu_h_shape sh = A.shape[due.m];   /* loaded while the levels are scanned */
        const unsigned int m = nbody__cu_h_scan(A.level, S.n, due.k0, s_list, s_lev);
        if (blockIdx.x == 0) {             /* the list for the correction */
            for (unsigned int q = threadIdx.x; q < m; q += NBODY__CU_H_THREADS) { A.list[q] = s_list[q]; A.lev[q] = s_lev[q]; }
            if (threadIdx.x == 0) { c->count = m; c->big = 0; }
        }
        const unsigned int groups = (m + (1u << sh.ti_log2) - 1) >> sh.ti_log2;
        T *pred = A.pred[steps & 1];
        S.now = due.next;
        for (unsigned int g = blockIdx.x; g < groups * sh.slices; g += gridDim.x) {
            nbody__cu_h_forces_group<T, SNAP>(S, s_list, NULL, m, A.nsrc, sh.slice_len, sh.ti_log2, A.eps2, pred, A.part, A.list, A.lev,
                                              false, g % groups, g / groups, sh.slices);
            __syncthreads();               /* the next group's tiles and sums reuse the shared memory */
        }
        grid.sync();
        nbody__cu_h_run_correct<T>(S, A, m, sh.slices, pred);
        grid.sync();
        if (c->bad) {
            nbody__cu_h_run_undo<T>(A, m, S.n);
            return;
        }
        prev = now; now = due.next; taken = m;
    }
}

/* the correction of a large step of a run, after the host's forces launch (the step's count
   stays in the control block, for the next run kernel to take into its totals or undo) */
template <class T>
__global__ void nbody__cu_h_run_big(nbody__cu_h_state<T> S, nbody__cu_h_run_args<T> A, unsigned int m, unsigned int slices, T *pred) {
    nbody__cu_h_run_correct<T>(S, A, m, slices, pred);
    if (blockIdx.x == 0 && threadIdx.x == 0) A.ctl->count = m;
}

/* the slices' sums (h->part) for `need` values, grown as needed */
static nbody_result nbody__cu_h_part(nbody__engine *e, nbody__cu_hermite *h, size_t need) {
    nbody_result r;
    if (need <= h->part_cap) return NBODY_OK;
    cudaFree(h->part);
    h->part = NULL; h->part_cap = 0;
    if ((r = nbody__cu_malloc(e, &h->part, need)) != NBODY_OK) return r;
    h->part_cap = need;
    return NBODY_OK;
}

/* ---- the operations ---- */
/* the list (and with lev the active bodies' levels) into mapped memory, then the forces'
   launch: *slices of them in h->part (0: no sources) */
static nbody_result nbody__cu_h_launch(nbody__engine *e, const nbody__hermite_op *op, const unsigned long long *lev,
                                       nbody__cu_hermite **out, nbody__cu_h_state<nbody__r> *S, unsigned int *slices_out) {
    nbody__cuda *c = nbody__cu(e);
    nbody__cu_hermite *h;
    size_t n = e->n, m = op->count, q;
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    unsigned int slices, slice_len;
    int ti_log2;
    nbody_result r = nbody__cu_enter(e);
    if (r == NBODY_OK) r = nbody__cu_h_work(e, &h);
    if (r != NBODY_OK) return r;
    if (m == 0 || m > n || op->n_src == 0 || op->n_src > n || n > 0xFFFFFFFFu) return NBODY_ERR_INVALID_ARGUMENT;   /* callers: m > 0 */
    *out = h;
    for (q = 0; q < m; ++q) h->hlist[q] = (unsigned int)op->list[q];   /* the last kernel that read it ended at the last sync */
    if (lev)
        for (q = 0; q < m; ++q) h->hlev[q] = (unsigned char)lev[op->list[q]];
    if (op->ticks_all) NBODY__CU(cudaMemcpy(h->ticks, op->ticks, n * sizeof(unsigned long long), cudaMemcpyHostToDevice));
    S->base = (const nbody__r *)op->base; S->force = (const nbody__r *)op->force; S->high = (const nbody__r *)op->high;
    S->m = c->m; S->ticks = h->ticks; S->now = op->now; S->tick = op->tick; S->span = op->span; S->order = op->order; S->n = n;
    nbody__hermite_shape(m, op->n_src, NBODY__CU_H_LOG2, (size_t)c->sms * NBODY__CU_H_WAVES, &ti_log2, &slices, &slice_len);
    if ((r = nbody__cu_h_part(e, h, (size_t)slices * 9 * m)) != NBODY_OK) return r;
    {
        dim3 grid((unsigned int)((m + ((size_t)1 << ti_log2) - 1) >> ti_log2), slices);
        if (op->order == 6)
            nbody__cu_h_forces<nbody__r, true><<<grid, NBODY__CU_H_THREADS>>>(*S, h->dhlist, lev ? h->dhlev : NULL, (unsigned int)m,
                                                                             (unsigned int)op->n_src, slice_len, ti_log2, eps2,
                                                                             (nbody__r *)op->pred, h->part, h->list, h->lev, true);
        else
            nbody__cu_h_forces<nbody__r, false><<<grid, NBODY__CU_H_THREADS>>>(*S, h->dhlist, lev ? h->dhlev : NULL, (unsigned int)m,
                                                                              (unsigned int)op->n_src, slice_len, ti_log2, eps2,
                                                                              (nbody__r *)op->pred, h->part, h->list, h->lev, true);
        NBODY__CU(cudaGetLastError());
    }
    *slices_out = slices;
    return NBODY_OK;
}

static nbody_result nbody__cu_hermite_op(nbody__engine *e, const nbody__hermite_op *op) {
    nbody__cu_hermite *h;
    nbody__cu_h_state<nbody__r> S;
    size_t m = op->count;
    unsigned int slices;
    nbody_result r = m ? nbody__cu_h_launch(e, op, NULL, &h, &S, &slices) : NBODY_OK;
    if (r != NBODY_OK || m == 0) return r;
    nbody__cu_h_rows<<<nbody__cu_blocks(32 * m, 128), 128>>>(h->part, slices, op->order == 6 ? 9 : 6, (unsigned int)m, h->list,
                                                           S.base, S.force, S.high, e->n, (nbody__r)e->desc.G, h->dhrows);
    NBODY__CU(cudaGetLastError());
    NBODY__CU(cudaStreamSynchronize(0));       /* the rows are in host memory once the kernel ends */
    memcpy(op->out, h->hrows, 24 * m * sizeof(nbody__r));
    return NBODY_OK;
}

/* hermite_step: two launches and one synchronisation; the levels move through mapped memory */
static nbody_result nbody__cu_hermite_step(nbody__engine *e, const nbody__hermite_op *op, const nbody__hermite_levels *lv) {
    nbody__cu_hermite *h;
    nbody__cu_h_state<nbody__r> S;
    size_t m = op->count, q;
    unsigned int slices;
    nbody_result r = m ? nbody__cu_h_launch(e, op, lv->level, &h, &S, &slices) : NBODY_OK;
    if (r != NBODY_OK || m == 0) return r;
    nbody__cu_h_correct<<<nbody__cu_blocks(32 * m, 128), 128>>>(S, h->part, slices, (unsigned int)m, h->list, (nbody__r)e->desc.G,
                                                              lv->eta, lv->dt_max, lv->dt_min, (nbody__r *)op->base,
                                                              (nbody__r *)op->force, (nbody__r *)op->high, h->ticks,
                                                              (nbody__r *)op->pred, h->keep, h->tkeep, h->lev, h->dhlev);
    NBODY__CU(cudaGetLastError());
    NBODY__CU(cudaStreamSynchronize(0));
    for (q = 0; q < m; ++q) lv->level_new[q] = h->hlev[q];
    return NBODY_OK;
}

/* hermite_run's shapes (nbody__hermite_shape, as nbody__cu_h_launch) for the counts [0, len) and
   the partial sums they need; its grid: the resident blocks, at most NBODY__CU_H_RUN_BPS an SM */
static nbody_result nbody__cu_h_run_setup(nbody__engine *e, nbody__cu_hermite *h, size_t nsrc, size_t len, int order, int *blocks) {
    nbody__cuda *c = nbody__cu(e);
    int *b = &h->run_blocks[order == 6], occ = 0;
    const void *fn = order == 6 ? (const void *)nbody__cu_h_run<nbody__r, true> : (const void *)nbody__cu_h_run<nbody__r, false>;
    nbody_result r;
    if (*b == 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, NBODY__CU_H_THREADS, 0) != cudaSuccess) (void)cudaGetLastError();
        *b = occ > 0 ? (occ < NBODY__CU_H_RUN_BPS ? occ : NBODY__CU_H_RUN_BPS) * c->sms : -1;
    }
    *blocks = *b;
    if (*b < 0 || (h->shape_len >= len && h->shape_src == nsrc)) return NBODY_OK;
    {
        nbody__cu_h_shape *tab = (nbody__cu_h_shape *)e->desc.allocator.alloc(len * sizeof *tab, e->desc.allocator.user_data);
        size_t m, need = 0;
        if (!tab) return NBODY_ERR_OUT_OF_MEMORY;
        memset(tab, 0, len * sizeof *tab);
        for (m = 1; m < len; ++m) {
            nbody__hermite_shape(m, nsrc, NBODY__CU_H_LOG2, (size_t)c->sms * NBODY__CU_H_WAVES, &tab[m].ti_log2, &tab[m].slices, &tab[m].slice_len);
            if ((size_t)tab[m].slices * 9 * m > need) need = (size_t)tab[m].slices * 9 * m;
        }
        cudaFree(h->shape);
        h->shape = NULL; h->shape_len = 0;
        r = nbody__cu_h_part(e, h, need);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &h->shape, len);
        if (r == NBODY_OK) r = nbody__cu_check(e, cudaMemcpy(h->shape, tab, len * sizeof *tab, cudaMemcpyHostToDevice), "cudaMemcpy");
        e->desc.allocator.free(tab, e->desc.allocator.user_data);
        if (r != NBODY_OK) return r;
        h->shape_len = len; h->shape_src = nsrc;
    }
    return NBODY_OK;
}

/* a run kernel's launch, then its control block back (a wait); NBODY_ERR_UNAVAILABLE (logged
   once) where the blocks cannot all be resident (a GPU shared with other work) */
static nbody_result nbody__cu_h_run_launch(nbody__engine *e, nbody__cu_hermite *h, int order, int blocks, nbody__cu_h_state<nbody__r> *S,
                                           nbody__cu_h_run_args<nbody__r> *A) {
    void *args[] = {S, A};
    const void *fn = order == 6 ? (const void *)nbody__cu_h_run<nbody__r, true> : (const void *)nbody__cu_h_run<nbody__r, false>;
    cudaError_t err = cudaLaunchCooperativeKernel(fn, dim3((unsigned int)blocks), dim3(NBODY__CU_H_THREADS), args, 0, 0);
    if (err == cudaErrorCooperativeLaunchTooLarge || err == cudaErrorNotSupported) {
        (void)cudaGetLastError();
        nbody__cu_log(e, NBODY_LOG_WARNING, "nbody cuda: %s; hermite's block steps go through the host one at a time", cudaGetErrorString(err));
        h->run_blocks[order == 6] = -1;
        return NBODY_ERR_UNAVAILABLE;
    }
    NBODY__CU(err);
    NBODY__CU(cudaMemcpy(h->hrun, h->run, sizeof(nbody__cu_h_ctl), cudaMemcpyDeviceToHost));
    return NBODY_OK;
}

/* a large step of a run (m active bodies, listed by the run kernel's schedule): the host step's
   forces launch (its shape: the same bits) and the run's correction */
static nbody_result nbody__cu_h_run_big_step(nbody__engine *e, nbody__cu_hermite *h, int order, unsigned int m, unsigned long long now,
                                             unsigned int steps, nbody__cu_h_state<nbody__r> *S, nbody__cu_h_run_args<nbody__r> *A) {
    nbody__cuda *c = nbody__cu(e);
    unsigned int slices, slice_len;
    int ti_log2;
    nbody__r *pred = A->pred[steps & 1];
    nbody_result r;
    nbody__hermite_shape(m, A->nsrc, NBODY__CU_H_LOG2, (size_t)c->sms * NBODY__CU_H_WAVES, &ti_log2, &slices, &slice_len);
    if ((r = nbody__cu_h_part(e, h, (size_t)slices * 9 * m)) != NBODY_OK) return r;
    A->part = h->part;
    S->now = now;
    {
        dim3 grid((unsigned int)((m + (1u << ti_log2) - 1) >> ti_log2), slices);
        if (order == 6)
            nbody__cu_h_forces<nbody__r, true><<<grid, NBODY__CU_H_THREADS>>>(*S, A->list, NULL, m, A->nsrc, slice_len, ti_log2, A->eps2, pred,
                                                                             h->part, A->list, A->lev, false);
        else
            nbody__cu_h_forces<nbody__r, false><<<grid, NBODY__CU_H_THREADS>>>(*S, A->list, NULL, m, A->nsrc, slice_len, ti_log2, A->eps2,
                                                                              pred, h->part, A->list, A->lev, false);
        NBODY__CU(cudaGetLastError());
    }
    nbody__cu_h_run_big<nbody__r><<<nbody__cu_blocks(32 * (size_t)m, 128), 128>>>(*S, *A, m, slices, pred);
    NBODY__CU(cudaGetLastError());
    S->now = 0;
    return NBODY_OK;
}

/* hermite_run: run kernels take the steps with at most NBODY__CU_H_RUN_MAX active bodies, the
   host's launches the larger ones in between (their list made on the device), so that only a
   wait a large step and the levels once each way move between host and device. */
static nbody_result nbody__cu_hermite_run(nbody__engine *e, nbody__hermite_run *run) {
    nbody__cu_hermite *h;
    const nbody__hermite_op *op = &run->op;
    size_t n = e->n, i, bytes = NBODY__CU_H_CTL_BYTES + (n + 15) / 16 * 16;
    size_t len = run->max_active < (size_t)NBODY__CU_H_RUN_MAX + 1 ? run->max_active : (size_t)NBODY__CU_H_RUN_MAX + 1;
    nbody__cu_h_ctl *ctl;
    nbody__cu_h_state<nbody__r> S;
    nbody__cu_h_run_args<nbody__r> A;
    int blocks = 0;
    nbody_result r = nbody__cu_enter(e);
    run->steps = 0; run->body_steps = 0; run->last = run->prev = run->now;
    if (r == NBODY_OK) r = nbody__cu_h_work(e, &h);
    if (r != NBODY_OK) return r;
    if (op->n_src == 0 || op->n_src > n || n > 0xFFFFFFFFu || op->span >= 0 || run->max_level > NBODY__BLOCK_LEVELS)
        return NBODY_ERR_INVALID_ARGUMENT;
    run->max_active = NBODY__CU_H_RUN_MAX > 0 && run->max_active > 1 ? run->max_active - 1 : 0;
    if (run->max_active == 0 || len < 2) return NBODY_OK;
    if ((r = nbody__cu_h_run_setup(e, h, op->n_src, len, op->order, &blocks)) != NBODY_OK) return r;
    if (blocks < 0) { run->max_active = 0; return NBODY_OK; }
    if (op->ticks_all) NBODY__CU(cudaMemcpy(h->ticks, op->ticks, n * sizeof(unsigned long long), cudaMemcpyHostToDevice));
    memset(h->hrun, 0, bytes);
    ctl = (nbody__cu_h_ctl *)h->hrun;
    ctl->now = run->now; ctl->tick_stop = run->tick_stop; ctl->n_all = (unsigned int)(run->max_active + 1); ctl->small = (unsigned int)len;
    ctl->max_level = (unsigned int)run->max_level;
    for (i = 0; i < n; ++i) {
        if (run->level[i] > NBODY__BLOCK_LEVELS) return NBODY_ERR_INVALID_ARGUMENT;
        h->hrun[NBODY__CU_H_CTL_BYTES + i] = (unsigned char)run->level[i];
        ctl->census[run->level[i]]++;
    }
    NBODY__CU(cudaMemcpy(h->run, h->hrun, bytes, cudaMemcpyHostToDevice));
    S.base = (const nbody__r *)op->base; S.force = (const nbody__r *)op->force; S.high = (const nbody__r *)op->high;
    S.m = nbody__cu(e)->m; S.ticks = h->ticks; S.now = 0; S.tick = op->tick; S.span = op->span; S.order = op->order; S.n = n;
    A.ctl = (nbody__cu_h_ctl *)h->run; A.level = h->run + NBODY__CU_H_CTL_BYTES; A.shape = h->shape; A.list = h->list; A.lev = h->lev;
    A.part = h->part; A.pred[0] = (nbody__r *)op->pred; A.pred[1] = (nbody__r *)run->other;
    A.base = (nbody__r *)op->base; A.force = (nbody__r *)op->force; A.high = (nbody__r *)op->high; A.keep = h->keep;
    A.ticks = h->ticks; A.tkeep = h->tkeep; A.G = (nbody__r)e->desc.G; A.eta = run->eta; A.dt_max = run->dt_max; A.dt_min = run->dt_min;
    A.eps2 = e->desc.softening * e->desc.softening; A.nsrc = (unsigned int)op->n_src;
    for (;;) {
        r = nbody__cu_h_run_launch(e, h, op->order, blocks, &S, &A);
        if (r == NBODY_ERR_UNAVAILABLE && ctl->steps == 0 && ctl->big == 0) { run->max_active = 0; return NBODY_OK; }
        if (r != NBODY_OK) return r;
        if (ctl->big == 0) break;
        if ((r = nbody__cu_h_run_big_step(e, h, op->order, ctl->big, ctl->next, ctl->steps, &S, &A)) != NBODY_OK) return r;
    }
    NBODY__CU(cudaMemcpy(h->hrun, h->run, bytes, cudaMemcpyDeviceToHost));
    run->steps = ctl->steps; run->body_steps = ctl->body_steps; run->last = ctl->now; run->prev = ctl->prev;
    for (i = 0; i < n && run->steps; ++i) run->level[i] = h->hrun[NBODY__CU_H_CTL_BYTES + i];
    return NBODY_OK;
}

/* after hermite_step the step is in place: commit 1 has nothing to do, commit -1 undoes it
   (the device's list is still the step's) */
static nbody_result nbody__cu_hermite_store(nbody__engine *e, const nbody__hermite_store *op) {
    nbody__cuda *c = nbody__cu(e);
    size_t m = op->count;
    nbody_result r = nbody__cu_enter(e);
    if (r != NBODY_OK) return r;
    if (!c->herm || m > e->n || op->commit == 0) return NBODY_ERR_INVALID_ARGUMENT;   /* after a step, its list */
    if (op->commit > 0 || m == 0) return NBODY_OK;
    nbody__cu_h_undo<<<nbody__cu_blocks(m, 128), 128>>>(c->herm->keep, c->herm->tkeep, c->herm->list, (unsigned int)m, e->n,
                                                      (nbody__r *)op->base, (nbody__r *)op->force, (nbody__r *)op->high,
                                                      c->herm->ticks);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}

/* ======================================================================================
   the tree leapfrog's block steps (>>kdk in nbody.h, nbody__active_op). A step that builds
   runs the tree build of the derivative and sends the leaf order to the host (the method keeps
   it for checkpoints); the others refit that tree in one launch (nbody__cu_refit: a block's
   subtree above its leaves in shared memory, then up the heap, the second child to arrive
   computing its parent), with no sort. The
   host sorts the active bodies' leaves (from its copy of the order, a bitmap over the leaves)
   and sends them with the list (and their levels) in one copy; each is walked breadth first
   by a block (nbody__cu_walk_front: each node of its walk tested once, the chain of dependent
   loads the tree's depth; a body's lanes splitting the tree by subtree, nbody__cu_walk_split,
   and the warps' union of 32 neighbours' walks, nbody__cu_walk, are the benchmarks'
   alternatives) into a by-leaf scratch; active test particles walk with every test particle
   (nbody__cu_walk_test over [nt, n)). Then either (active_forces) one gather puts the 3 count
   forces in list order for the one copy back, and the kick reuses the device's list and
   forces with the host's coefficients; or (kdk_step) one launch chooses each active body's
   next level and its coefficients there (nbody__cu_kdk_levels), one kicks unless a body was
   refused (nbody__cu_kdk_kick), both in one block's launch up to 1024 active bodies
   (nbody__cu_kdk_levels_kick), and one copy brings the levels back: a block step is then the
   drift, the refit, the list up, the walk, one or two small launches and one wait.
   ====================================================================================== */
struct nbody__cu_kdk {
    unsigned int *list;            /* device, 4n: the active sources' leaves (sorted), each active
                                      body's slot in acc (list order), the active bodies, their levels */
    unsigned int *host;            /* pinned, 5n + 2 + n / 4 + 1: the same on the host; then flags and levels back;
                                      then every body's level as a byte (nbody__cu_kdk_levels_up) */
    unsigned int *up;              /* device, n: the refit's arrival counters (zero between refits) */
    unsigned int *flag;            /* device, n + 2: a position was not finite (build or refit), a body's
                                      step refused (kdk_step); then the active bodies' next levels */
    nbody__r *acc, *io;            /* device: 3n forces by leaf (test particles by body); 6n: the list's forces and kick coefficients */
    nbody__r *full;                /* device, 6n on first use: a step of every body walks as a derivative does, a | v there */
    unsigned int *pos;             /* host, n: each source's leaf */
    unsigned long long *bits;      /* host, n / 64 + 1: the active leaves (zero between uses) */
    struct nbody__cu_kdk_ctl *ctl, *hctl;   /* device and pinned, on first use: a run's scheduler (nbody__cu_kdk_run) */
    unsigned char *level;          /* device, n: each body's level (a run's, or the host's for the limiter) */
    unsigned char *near;           /* device, n: the walks' neighbour levels where they write forces (nbody__cu_near) */
    unsigned int *dpos;            /* device, n: each source's leaf in a run */
    unsigned int front_blocks;     /* a run's breadth-first walk: its persistent blocks (nbody__cu_kdk_run) */
};
static void nbody__cu_kdk_free(nbody__cu_kdk *w, const nbody_desc *d) {
    if (!w) return;
    cudaFree(w->list); cudaFree(w->up); cudaFree(w->flag); cudaFree(w->acc); cudaFree(w->io); cudaFree(w->full);
    cudaFree(w->ctl); cudaFree(w->level); cudaFree(w->near); cudaFree(w->dpos);
    if (w->host) cudaFreeHost(w->host);
    if (w->hctl) cudaFreeHost(w->hctl);
    d->allocator.free(w->pos, d->allocator.user_data);
    d->allocator.free(w->bits, d->allocator.user_data);
    d->allocator.free(w, d->allocator.user_data);
}

/* Refit: leaf j (n <= j < 2n) takes the body sorted[p(j)] at the positions x (stride: one
   coordinate's length) as nbody__cu_leaves does. A block takes NBODY__CU_REFIT_B heap positions
   j0 + B blockIdx.x + t (j0 a multiple of B, so a block's run is aligned): when they are all
   leaves, they are the bottom of one subtree of log2 B levels, which the block computes level by
   level in shared memory, and its root's thread climbs on; otherwise (the runs holding n or 2n,
   or climb = 1) each leaf's thread climbs. A climb: at each parent the first child's thread
   stops (its writes fenced before the counter), the second computes the parent from both
   children as nbody__cu_internal does, reads through L2, and clears the counter for the next
   refit. No node below a whole block's root is reached by a climb (its leaves are all in the
   block), so its counters stay zero. Every node is its children's function: the same bits
   either way. A position that is not finite sets *bad. */
#define NBODY__CU_REFIT_B 256
#define NBODY__CU_REFIT_LOG2B 8
template <class T>
__global__ void __launch_bounds__(NBODY__CU_REFIT_B)
nbody__cu_refit(const T *x, size_t stride, const T *m, size_t n, size_t P, size_t j0, const unsigned int *sorted, nbody__v4<T> *node, T *nmass,
                nbody__v4<T> *lo, nbody__v4<T> *hi, T *rad, unsigned int *up, unsigned int *bad, T inv_theta, int climb,
                const unsigned int *stop) {
    __shared__ nbody__cu_nodeval<T> sv[NBODY__CU_REFIT_B];
    const unsigned int t = threadIdx.x;
    size_t base = j0 + blockIdx.x * (size_t)NBODY__CU_REFIT_B, j = base + t, i;
    bool whole = !climb && base >= n && base + NBODY__CU_REFIT_B <= 2 * n;
    nbody__cu_nodeval<T> v;
    if (stop && *stop) return;                    /* a run of block steps that has stopped (nbody__cu_kdk_run) */
    if (j >= n && j < 2 * n) {
        size_t p = j >= P ? j - P : (2 * n - P) + (j - n);
        unsigned int b = sorted[p];
        v.c.x = x[b]; v.c.y = x[stride + b]; v.c.z = x[2 * stride + b]; v.c.w = 0;
        if (!(isfinite(v.c.x) && isfinite(v.c.y) && isfinite(v.c.z))) atomicOr(bad, 1u);
        v.lo = v.c; v.hi = v.c; v.m = m[b]; v.r = 0;
        nbody__cu_node_store<T>(j, v, node, nmass, lo, hi, rad);
    } else if (!whole) return;
    if (whole) {                                  /* the block's subtree, a level at a time */
        sv[t] = v;
        __syncthreads();
        for (unsigned int w = NBODY__CU_REFIT_B / 2, s = 1; w >= 1; w >>= 1, ++s) {
            if (t < w) v = nbody__cu_node_of<T>((base >> s) + t, n, sv[2 * t], sv[2 * t + 1], inv_theta);
            __syncthreads();
            if (t < w) { sv[t] = v; nbody__cu_node_store<T>((base >> s) + t, v, node, nmass, lo, hi, rad); }
            __syncthreads();
        }
        if (t != 0) return;
        j = base >> NBODY__CU_REFIT_LOG2B;
    }
    for (i = j / 2; i >= 1; i /= 2) {
        size_t l = 2 * i, r = l + 1;
        __threadfence();
        if (atomicAdd(up + i, 1u) == 0) return;
        up[i] = 0;
        nbody__cu_node_from<T>(i, n, nbody__cu_ldcg4(node + l), nbody__cu_ldcg4(node + r), nbody__cu_ldcg4(lo + l), nbody__cu_ldcg4(lo + r),
                               nbody__cu_ldcg4(hi + l), nbody__cu_ldcg4(hi + r), __ldcg(nmass + l), __ldcg(nmass + r), __ldcg(rad + l),
                               __ldcg(rad + r), inv_theta, node, nmass, lo, hi, rad);
    }
}

/* The active bodies' walk: L lanes a body (a warp, or up to a block when few bodies are
   active), splitting the walk by subtree, so that a step with few active bodies is not one
   long chain of dependent loads (a lone walk of a 2^16 tree visits thousands of nodes one
   after the other). The heap's nodes at depth D (2^D <= nt / 2) root 2^D subtrees, lane l
   taking those of 2^D + l + L j (nbody__cu_split_shape). For each root the lane tests its ancestors from the tree's
   root down, as the whole walk would: the first it accepts, the walk of the whole tree accepts
   too, and the lane adds it when the root is that ancestor's leftmost at depth D (each
   accepted ancestor once); when it accepts none, it walks the subtree (nbody__cu_walk_body's
   rule: accept d^2 > crit2, open internal nodes, skip leaves otherwise, the body's own among
   them). The accepted nodes are those of the whole walk; the sum is its terms grouped by lane,
   a butterfly within each warp, then the warps' sums in order (shared memory) when L > 32: the
   bits depend on L and D, not on the launch. Leaf k = list[w] of body w; G times the sum to
   acc[k], acc[as + k], acc[2 as + k]. Blocks of L threads (a body a block) when L > 32, else
   of whole warps. */
#define NBODY__CU_SPLIT_LANES 1024         /* the most lanes a body (one subtree each) */

/* the pulls on a body at me of the nodes cur .. end (exclusive) of a depth-first walk of the
   heap (nbody__cu_walk_body's rule: accept d^2 > crit2, open internal nodes, skip leaves
   otherwise, the body's own among them); end = nbody__heap_skip of the subtree's root; the
   levels of the leaves reached into near where nb->level is not NULL (nbody__cu_near) */
template <class T>
__device__ __forceinline__ void nbody__cu_subtree_pull(const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass, nbody__v4<T> me,
                                                       unsigned int cur, unsigned int end, unsigned int n, T eps2, T *ax, T *ay, T *az,
                                                       const nbody__cu_near &nb, unsigned int &near) {
    do {
        nbody__v4<T> q = nbody__ldg4(node + cur);
        T dx = q.x - me.x, dy = q.y - me.y, dz = q.z - me.z, d2 = fma(dx, dx, fma(dy, dy, dz * dz));
        bool take = d2 > q.w;
        if (nb.level && cur >= n) nbody__cu_near_add(nb, cur, n, near);
        if (take) nbody__pull(nbody__weight(__ldg(nmass + cur), d2 + eps2), dx, dy, dz, ax, ay, az);
        cur = !take && cur < n ? 2 * cur : nbody__heap_skip(cur);
    } while (cur != end);
}
template <class T>
__global__ void __launch_bounds__(NBODY__CU_SPLIT_LANES)
nbody__cu_walk_split(const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass, const unsigned int *__restrict__ list,
                     unsigned int count, T *acc, size_t as, unsigned int n, int D, unsigned int L, T eps2, T G) {
    __shared__ T part[3 * (NBODY__CU_SPLIT_LANES / 32)];
    unsigned int lane = threadIdx.x % L, w = (unsigned int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / L);
    if (w >= count) return;                           /* whole bodies (whole warps) leave together */
    unsigned int k = list[w], first = 1u << D, near = 0;
    const nbody__cu_near none = {NULL, NULL, NULL};   /* a benchmark's walk: no neighbour levels */
    nbody__v4<T> me = nbody__ldg4(node + n + k);
    T ax = 0, ay = 0, az = 0;
    for (unsigned int r = first + lane; r < 2 * first; r += L) {
        bool walk = true;
        for (int up = D; up >= 1 && walk; --up) {     /* the ancestors, the root first */
            unsigned int a = r >> up;
            nbody__v4<T> q = nbody__ldg4(node + a);
            T dx = q.x - me.x, dy = q.y - me.y, dz = q.z - me.z, d2 = fma(dx, dx, fma(dy, dy, dz * dz));
            if (d2 > q.w) {
                walk = false;
                if (r == a << up) nbody__pull(nbody__weight(__ldg(nmass + a), d2 + eps2), dx, dy, dz, &ax, &ay, &az);
            }
        }
        if (walk) nbody__cu_subtree_pull(node, nmass, me, r, nbody__heap_skip(r), n, eps2, &ax, &ay, &az, none, near);
    }
    for (int o = 16; o > 0; o >>= 1) {
        ax += __shfl_xor_sync(~0u, ax, o); ay += __shfl_xor_sync(~0u, ay, o); az += __shfl_xor_sync(~0u, az, o);
    }
    if (L > 32) {                                     /* a block a body (L = blockDim.x): the warps in order */
        unsigned int wi = threadIdx.x >> 5;
        if ((threadIdx.x & 31u) == 0) { part[3 * wi] = ax; part[3 * wi + 1] = ay; part[3 * wi + 2] = az; }
        __syncthreads();
        if (threadIdx.x == 0)
            for (unsigned int v = 1; v < L / 32; ++v) { ax += part[3 * v]; ay += part[3 * v + 1]; az += part[3 * v + 2]; }
    }
    if (lane == 0) { acc[k] = G * ax; acc[as + k] = G * ay; acc[2 * as + k] = G * az; }
}

/* a run of block steps on the device: its scheduler's state (nbody__cu_kdk_run, below) */
#define NBODY__CU_KDK_GO 0u
#define NBODY__CU_KDK_END 1u               /* the next block time is at or past tick_stop */
#define NBODY__CU_KDK_ALL 2u               /* every body active: the host queues it (kdk_loop 2) or takes it */
#define NBODY__CU_KDK_LEVEL 3u             /* a level finer than max_level is occupied */
#define NBODY__CU_KDK_BUILD 4u             /* the tree is due to be built afresh: the host queues it */
#define NBODY__CU_KDK_REFUSED 5u           /* a new level refused: the host takes the step */
struct nbody__cu_kdk_ctl {
    unsigned long long now, due, tick_stop, steps, body_steps, age, age_limit, limited;
    nbody__r t, t_new, h, dt, origin, tick;
    unsigned int census[NBODY__BLOCK_LEVELS + 1];
    unsigned int m, work, stop, pending, k0, max_level, n;
};

/* The active bodies' walk breadth first: a block a body takes the tree a level at a time, each
   thread testing one node of the frontier (accepted: d^2 > crit2, its pull added; a leaf not
   accepted, the body's own among them, skipped; an internal node opened: its two children go to
   the next frontier, in the frontier's order through a prefix sum over the block), so each node
   of the walk is tested once and the chain of dependent loads is the tree's depth times the
   frontier's chunks of NBODY__CU_FRONT_T, not the length of a subtree's walk (512 or 1024
   threads a body when few are active were no faster: bench/results/treeblock-2026-11-27.md,
   run 5). A node whose children would pass the frontier's room is walked depth first by its
   thread. The accepted nodes are those of nbody__cu_walk_body; the sum is grouped by thread,
   then the warps' sums in order: the bits depend on the body and the tree alone. Leaf
   k = list[blockIdx.x]; G times the sum to acc[k], acc[as + k], acc[2 as + k], and with
   nb.level the walk's neighbour level to nb.out[k] (nbody__cu_near: a maximum, any order). */
#define NBODY__CU_FRONT_T 128
#define NBODY__CU_FRONT_CAP 2048
template <class T> struct nbody__cu_front_smem {
    unsigned int fr[2][NBODY__CU_FRONT_CAP];
    unsigned int wsum[NBODY__CU_FRONT_T / 32], wnear[NBODY__CU_FRONT_T / 32];
    T part[3 * (NBODY__CU_FRONT_T / 32)];
};
/* leaf k's walk by the block (sm: the block's shared memory, free again on return) */
template <class T>
__device__ __forceinline__ void nbody__cu_front_one(const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass, unsigned int k, T *acc,
                                                    size_t as, unsigned int n, T eps2, T G, const nbody__cu_near &nb,
                                                    nbody__cu_front_smem<T> &sm) {
    unsigned int (&fr)[2][NBODY__CU_FRONT_CAP] = sm.fr;
    unsigned int *wsum = sm.wsum;
    T *part = sm.part;
    const unsigned int tid = threadIdx.x, lane = tid & 31u, wi = tid >> 5;
    unsigned int cnt = 1, buf = 0, near = 0;
    nbody__v4<T> me = nbody__ldg4(node + n + k);
    T ax = 0, ay = 0, az = 0;
    if (tid == 0) fr[0][0] = 1;
    __syncthreads();
    while (cnt) {
        unsigned int next = 0;
        for (unsigned int base = 0; base < cnt; base += NBODY__CU_FRONT_T) {
            unsigned int idx = base + tid, c = 0, off = 0, tot = 0, bal;
            bool open = false;
            if (idx < cnt) {
                c = fr[buf][idx];
                nbody__v4<T> q = nbody__ldg4(node + c);
                T dx = q.x - me.x, dy = q.y - me.y, dz = q.z - me.z, d2 = fma(dx, dx, fma(dy, dy, dz * dz));
                if (nb.level && c >= n) nbody__cu_near_add(nb, c, n, near);
                if (d2 > q.w) nbody__pull(nbody__weight(__ldg(nmass + c), d2 + eps2), dx, dy, dz, &ax, &ay, &az);
                else open = c < n;
            }
            bal = __ballot_sync(~0u, open);
            if (lane == 0) wsum[wi] = (unsigned int)__popc(bal);
            __syncthreads();
            for (unsigned int v = 0; v < NBODY__CU_FRONT_T / 32; ++v) {
                if (v < wi) off += wsum[v];
                tot += wsum[v];
            }
            if (open) {
                unsigned int pos = next + 2 * (off + (unsigned int)__popc(bal & ((1u << lane) - 1u)));
                if (pos < NBODY__CU_FRONT_CAP) {   /* pos even: both children fit */
                    fr[buf ^ 1u][pos] = 2 * c; fr[buf ^ 1u][pos + 1] = 2 * c + 1;
                } else {                           /* no room: c's children's subtrees depth first, here */
                    nbody__cu_subtree_pull(node, nmass, me, 2 * c, nbody__heap_skip(c), n, eps2, &ax, &ay, &az, nb, near);
                }
            }
            next += 2 * tot;
            __syncthreads();                       /* wsum is written again; the next frontier is complete */
        }
        cnt = next < NBODY__CU_FRONT_CAP ? next : NBODY__CU_FRONT_CAP;
        buf ^= 1u;
    }
    for (int o = 16; o > 0; o >>= 1) {
        ax += __shfl_xor_sync(~0u, ax, o); ay += __shfl_xor_sync(~0u, ay, o); az += __shfl_xor_sync(~0u, az, o);
        near = max(near, __shfl_xor_sync(~0u, near, o));
    }
    if (lane == 0) { part[3 * wi] = ax; part[3 * wi + 1] = ay; part[3 * wi + 2] = az; sm.wnear[wi] = near; }
    __syncthreads();
    if (tid == 0) {
        for (unsigned int v = 1; v < NBODY__CU_FRONT_T / 32; ++v) {
            ax += part[3 * v]; ay += part[3 * v + 1]; az += part[3 * v + 2];
            near = max(near, sm.wnear[v]);
        }
        acc[k] = G * ax; acc[as + k] = G * ay; acc[2 * as + k] = G * az;
        if (nb.level) nb.out[k] = (unsigned char)near;
    }
}
/* The walks of a list: without c, block b walks leaf list[b] (the host's list, a block a
   body); with c (a run on the device), the blocks take the list's entries from c->work until
   its c->m are taken, entry q being body list[q] at leaf pos[list[q]], the leaf to slot[q]. One
   kernel for both, so that a body's forces (and neighbour level, nb) are the same bits on
   either path. */
template <class T>
__global__ void __launch_bounds__(NBODY__CU_FRONT_T)
nbody__cu_walk_front(const nbody__v4<T> *__restrict__ node, const T *__restrict__ nmass, const unsigned int *__restrict__ list,
                     const unsigned int *pos, unsigned int *slot, nbody__cu_kdk_ctl *c, T *acc, size_t as, unsigned int n, T eps2, T G,
                     nbody__cu_near nb) {
    __shared__ nbody__cu_front_smem<T> sm;
    __shared__ unsigned int take;
    unsigned int m = gridDim.x, q = blockIdx.x, k;
    if (c) {
        if (c->stop) return;
        m = c->m;
    }
    for (;;) {
        if (c) {
            if (threadIdx.x == 0) take = atomicAdd(&c->work, 1u);
            __syncthreads();
            q = take;
            __syncthreads();                       /* take is written again */
        }
        if (q >= m) return;
        k = pos ? pos[list[q]] : list[q];
        if (slot && threadIdx.x == 0) slot[q] = k;
        nbody__cu_front_one<T>(node, nmass, k, acc, as, n, eps2, G, nb, sm);
        if (!c) return;
    }
}

/* out[d count + q] = acc[d n + slot[q]], NaN for all when a position was not finite; with near
   (the walks' neighbour levels) also nl[q] = near[slot[q]] */
template <class T> __global__ void nbody__cu_kdk_gather(const T *acc, size_t n, const unsigned int *slot, size_t count, const unsigned int *bad, T *out,
                                                        const unsigned char *near, unsigned int *nl) {
    bool nan = bad[0] != 0;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < count; q += (size_t)gridDim.x * blockDim.x) {
        for (int d = 0; d < 3; ++d) out[d * count + q] = nan ? (T)NAN : acc[d * n + slot[q]];
        if (near) nl[q] = near[slot[q]];
    }
}

/* kdk_step's levels (nbody__kdk_levels): active body q (level level[q], forces at slot[q] as
   the gather takes them, all NaN when nan) gets its next level into flag[2 + q] from GADGET's
   criterion sqrt(crit / |a|) bounded by the force's change since body body[q]'s last kick
   (a0: kick's second half; jerk 0: off) and nbody__block_level_of, computed as the host does
   (nbody__kdk_criterion, nbody__kdk_change: no fma), raised by the neighbour limiter (nbody__block_limited with
   the walk's neighbour level near[slot[q]] and gap; near NULL: none) as the host's
   nbody__kdk_level raises it, NBODY__CU_KDK_RAISED added to the level where it did, and its
   kick coefficients into io after its forces (nbody__kick_op's layout); returns 1 (refused)
   when a force is not finite or a level past NBODY__BLOCK_LEVELS */
#define NBODY__CU_KDK_RAISED 0x100u
#define NBODY__CU_KDK_LEVEL_OF(f) ((f) & 0xFFu)
template <class T>
__device__ __forceinline__ T nbody__cu_norm3(T x, T y, T z) {
    return sqrt(nbody__cu_add_rn(nbody__cu_add_rn(nbody__cu_mul_rn(x, x), nbody__cu_mul_rn(y, y)), nbody__cu_mul_rn(z, z)));
}
template <class T>
__device__ __forceinline__ bool nbody__cu_kdk_level(size_t q, bool nan, const T *acc, size_t n, const unsigned int *slot,
                                                    const unsigned int *level, size_t count, unsigned int *flag, T *io,
                                                    unsigned long long now, T dt_max, T dt_min, T crit, const unsigned char *near, int gap,
                                                    const T *a0, const unsigned int *body, T jerk) {
    T a[3], an, cr, dt, e, change;
    unsigned long long k = level[q], k1, raised;
    size_t i = body[q];
    bool refused = false;
    for (int d = 0; d < 3; ++d) io[d * count + q] = a[d] = nan ? (T)NAN : acc[d * n + slot[q]];
    an = nbody__cu_norm3(a[0], a[1], a[2]);
    cr = an > 0 ? sqrt(crit / an) : (T)HUGE_VAL;
    dt = dt_max / (T)(1ULL << k); e = dt;
    change = nbody__cu_norm3(a[0] - a0[i], a[1] - a0[n + i], a[2] - a0[2 * n + i]);   /* nbody__kdk_change */
    change = jerk > 0 && change > 0 ? nbody__cu_mul_rn(nbody__cu_mul_rn(jerk, an), e) / change : (T)HUGE_VAL;
    if (change < cr) cr = change;
    k1 = nbody__block_level_of(k, cr, now, dt_max, dt_min);
    raised = near ? nbody__block_limited(k1, near[slot[q]], gap) : k1;
    if (!(isfinite(a[0]) && isfinite(a[1]) && isfinite(a[2])) || k1 > NBODY__BLOCK_LEVELS) {
        refused = true;
        k1 = raised = NBODY__BLOCK_LEVELS + 1;
    }
    io[3 * count + q] = -(dt - e) / 2; io[4 * count + q] = e / 2;
    io[5 * count + q] = raised <= NBODY__BLOCK_LEVELS ? dt_max / (T)(1ULL << raised) / 2 : (T)0;
    flag[2 + q] = (unsigned int)raised | (raised != k1 ? NBODY__CU_KDK_RAISED : 0u);
    return refused;
}
/* the levels of all active bodies; flag[1] = 1 when one is refused */
template <class T>
__global__ void nbody__cu_kdk_levels(const T *acc, size_t n, const unsigned int *slot, const unsigned int *level, size_t count,
                                     unsigned int *flag, T *io, unsigned long long now, T dt_max, T dt_min, T crit, const unsigned char *near,
                                     int gap, const T *a0, const unsigned int *body, T jerk) {
    bool nan = flag[0] != 0;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < count; q += (size_t)gridDim.x * blockDim.x)
        if (nbody__cu_kdk_level<T>(q, nan, acc, n, slot, level, count, flag, io, now, dt_max, dt_min, crit, near, gap, a0, body, jerk))
            atomicOr(flag + 1, 1u);
}

/* nbody__kick_op for active body q: v1 = v + c0 a0 + c1 a to y's velocity, v1 + c2 a and a to
   kick = [v | a0] */
template <class T>
__device__ __forceinline__ void nbody__cu_kdk_kick_one(size_t q, T *y, T *kick, const unsigned int *list, size_t count, size_t n, const T *acc,
                                                       const T *coef) {
    size_t i = list[q];
    for (int k = 0; k < 3; ++k) {
        T ak = acc[k * count + q], v1 = kick[k * n + i] + coef[q] * kick[(3 + k) * n + i] + coef[count + q] * ak;
        y[(3 + k) * n + i] = v1;
        kick[k * n + i] = v1 + coef[2 * count + q] * ak;
        kick[(3 + k) * n + i] = ak;
    }
}
/* the kicks of all active bodies; nothing when refused is set and not zero */
template <class T>
__global__ void nbody__cu_kdk_kick(T *y, T *kick, const unsigned int *list, size_t count, size_t n, const T *acc, const T *coef,
                                   const unsigned int *refused) {
    if (refused && refused[0]) return;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < count; q += (size_t)gridDim.x * blockDim.x)
        nbody__cu_kdk_kick_one<T>(q, y, kick, list, count, n, acc, coef);
}

/* both in one block (count <= its threads, the steps of few active bodies: one launch fewer);
   the block's threads agree on a refusal before any kicks */
template <class T>
__global__ void nbody__cu_kdk_levels_kick(const T *acc, size_t n, const unsigned int *slot, const unsigned int *level, size_t count,
                                          unsigned int *flag, T *io, unsigned long long now, T dt_max, T dt_min, T crit, T jerk, T *y,
                                          T *kick, const unsigned int *list, const unsigned char *near, int gap) {
    size_t q = threadIdx.x;
    int refused = q < count && nbody__cu_kdk_level<T>(q, flag[0] != 0, acc, n, slot, level, count, flag, io, now, dt_max, dt_min, crit,
                                                      near, gap, kick + 3 * n, list, jerk);
    if (__syncthreads_or(refused)) {
        if (q == 0) flag[1] = 1u;
        return;
    }
    if (q < count) nbody__cu_kdk_kick_one<T>(q, y, kick, list, count, n, io, io + 3 * count);
}

/* ---- a run of block steps on the device (ops.kdk_run, nbody__kdk_run): the scheduler's state
   lives in one nbody__cu_kdk_ctl, each body's level in a byte, and a step is six launches of
   fixed shape whatever its active count, queued by the host without a wait: the scheduler
   (one thread: the last step's commit, the next block time from the census of the levels, the
   active levels, whether to stop), the drift of every body with the active list appended by
   atomics (its order does not matter: each body's forces, level and kick are its own), the
   refit (or, queued by the host on a stop that asks for it, the build), the breadth-first walk
   with the blocks taking the list's bodies from a counter, the levels, the kicks with the
   census moved. Once a step stops the run, every later launch returns at once; the host reads
   the state after each batch of steps, sized to end near the next build. */
/* the scheduler: commit the last step if one is pending (1; 2 after a build: the tree's age
   restarts; 3 after a step of every body: also the origin moves to it at a multiple of dt_max,
   as nbody__block_commit moves it), then the next block time and its active levels as
   nbody__block_census_due and nbody__block_census_active choose them, or a stop. Mode 0: a
   step; 1 after a build stop: a build step; 3 after a stop of every body active: its step;
   2: commit only */
__global__ void nbody__cu_kdk_sched(nbody__cu_kdk_ctl *c, unsigned int *flag, int mode) {
    unsigned long long span, due;
    unsigned int m = 0, k0, stop = NBODY__CU_KDK_GO;
    int kmax = NBODY__BLOCK_LEVELS, k, tz;
    if (c->pending) {
        c->now = c->due; c->t = c->t_new; c->dt = c->h;
        c->steps++; c->body_steps += c->m;
        c->age = (c->pending >= 2 ? 0 : c->age) + c->m;
        if (c->pending == 3 && (c->now & ((1ULL << NBODY__BLOCK_LEVELS) - 1)) == 0) {
            c->origin = c->t; c->tick_stop -= c->now; c->now = 0;
        }
        c->pending = 0;
    }
    if (mode == 2) return;
    if ((mode == 1 && c->stop == NBODY__CU_KDK_BUILD) || (mode == 3 && c->stop == NBODY__CU_KDK_ALL)) c->stop = NBODY__CU_KDK_GO;
    if (c->stop) return;
    while (kmax > 0 && !c->census[kmax]) --kmax;
    span = 1ULL << (NBODY__BLOCK_LEVELS - kmax);
    due = (c->now & ~(span - 1)) + span;          /* the finest occupied level's next step ends first */
    tz = __ffsll((long long)due) - 1;
    k0 = tz >= NBODY__BLOCK_LEVELS ? 0u : (unsigned int)(NBODY__BLOCK_LEVELS - tz);
    for (k = (int)k0; k <= NBODY__BLOCK_LEVELS; ++k) m += c->census[k];
    if (due >= c->tick_stop) stop = NBODY__CU_KDK_END;
    else if (m >= c->n && mode != 3) stop = NBODY__CU_KDK_ALL;
    else if ((unsigned int)kmax > c->max_level) stop = NBODY__CU_KDK_LEVEL;
    else if (mode == 0 && c->age + m > c->age_limit) stop = NBODY__CU_KDK_BUILD;
    if (stop) { c->stop = stop; return; }
    c->due = due; c->k0 = k0; c->m = 0; c->work = 0;
    c->t_new = nbody__cu_add_rn(c->origin, nbody__cu_mul_rn((nbody__r)due, c->tick));   /* the host's origin + next tick */
    c->h = c->t_new - c->t;
    flag[0] = flag[1] = 0;
}

/* the drift of every body (p: y_new = y + h kick, h the step's) and the active bodies, their
   index and level, appended to body and lev (c->m of them) */
template <class T>
__global__ void nbody__cu_kdk_drift(nbody__cu_lc<T> p, nbody__cu_kdk_ctl *c, const unsigned char *level, unsigned int *body, unsigned int *lev,
                                    size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const unsigned int lane = threadIdx.x & 31u;
    if (c->stop) return;
    T h = c->h;
    unsigned int k0 = c->k0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < p.len; i += stride) nbody__cu_lc_one(p, i, h);
    for (size_t base = blockIdx.x * (size_t)blockDim.x; base < n; base += stride) {   /* whole warps: the ballot */
        size_t i = base + threadIdx.x;
        unsigned int k = i < n ? level[i] : 0u, bal = __ballot_sync(~0u, i < n && k >= k0), first = 0;
        if (lane == 0 && bal) first = atomicAdd(&c->m, (unsigned int)__popc(bal));
        first = __shfl_sync(~0u, first, 0);
        if (i < n && k >= k0) {
            unsigned int q = first + (unsigned int)__popc(bal & ((1u << lane) - 1u));
            body[q] = (unsigned int)i; lev[q] = k;
        }
    }
}

/* each source's leaf: pos[sorted[p]] = the leaf of depth-first position p (nbody__cu_leaf_of),
   and (leafbody not NULL) each leaf's body, as a build writes it */
__global__ void nbody__cu_kdk_pos(const unsigned int *sorted, size_t nt, size_t P, unsigned int *pos, unsigned int *leafbody) {
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < nt; p += (size_t)gridDim.x * blockDim.x) {
        unsigned int k = (unsigned int)(p < 2 * nt - P ? P + p - nt : p - (2 * nt - P));
        pos[sorted[p]] = k;
        if (leafbody) leafbody[k] = sorted[p];
    }
}

/* the active bodies' levels and coefficients (nbody__cu_kdk_level); flag[1] = 1 when one is
   refused or finer than the block times resolve */
template <class T>
__global__ void nbody__cu_kdk_levels_run(const nbody__cu_kdk_ctl *c, const T *acc, size_t n, const unsigned int *slot, const unsigned int *lev,
                                         unsigned int *flag, T *io, T dt_max, T dt_min, T crit, const unsigned char *near, int gap,
                                         const T *a0, const unsigned int *body, T jerk) {
    if (c->stop) return;
    const size_t count = c->m;
    const bool nan = flag[0] != 0;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < count; q += (size_t)gridDim.x * blockDim.x)
        if (nbody__cu_kdk_level<T>(q, nan, acc, n, slot, lev, count, flag, io, c->due, dt_max, dt_min, crit, near, gap, a0, body, jerk) ||
            NBODY__CU_KDK_LEVEL_OF(flag[2 + q]) > c->max_level)
            atomicOr(flag + 1, 1u);
}

/* the kicks (nbody__cu_kdk_kick_one) and each active body's new level, the census moved with
   it; a refusal stops the run with nothing kicked; else the step is pending (nbody__cu_kdk_sched's
   mode: 0 a refit, 1 a build, 3 every body) */
template <class T>
__global__ void nbody__cu_kdk_kick_run(nbody__cu_kdk_ctl *c, T *y, T *kick, const unsigned int *body, const unsigned int *lev,
                                       const unsigned int *flag, const T *io, size_t n, unsigned char *level, int mode) {
    if (c->stop) return;
    const size_t count = c->m;
    const bool first = blockIdx.x == 0 && threadIdx.x == 0;
    if (flag[1]) {
        if (first) c->stop = NBODY__CU_KDK_REFUSED;
        return;
    }
    for (size_t base = blockIdx.x * (size_t)blockDim.x; base < count; base += (size_t)gridDim.x * blockDim.x) {   /* whole warps: the ballot */
        size_t q = base + threadIdx.x;
        unsigned int raised = __ballot_sync(~0u, q < count && (flag[2 + q] & NBODY__CU_KDK_RAISED));
        if ((threadIdx.x & 31u) == 0 && raised) atomicAdd(&c->limited, (unsigned long long)__popc(raised));
        if (q >= count) continue;
        unsigned int k = lev[q], k1 = NBODY__CU_KDK_LEVEL_OF(flag[2 + q]);
        nbody__cu_kdk_kick_one<T>(q, y, kick, body, count, n, io, io + 3 * count);
        level[body[q]] = (unsigned char)k1;
        if (k1 != k) { atomicSub(c->census + k, 1u); atomicAdd(c->census + k1, 1u); }
    }
    if (first) c->pending = mode == 3 ? 3u : mode == 1 ? 2u : 1u;
}

static nbody_result nbody__cu_kdk_work(nbody__engine *e, nbody__cu_kdk **out) {
    nbody__cuda *c = nbody__cu(e);
    nbody__cu_kdk *w = c->kdk;
    size_t n = e->n;
    nbody_result r;
    if (w) { *out = w; return NBODY_OK; }
    w = (nbody__cu_kdk *)e->desc.allocator.alloc(sizeof *w, e->desc.allocator.user_data);
    if (!w) return NBODY_ERR_OUT_OF_MEMORY;
    memset(w, 0, sizeof *w);
    c->kdk = w;
    w->pos = (unsigned int *)e->desc.allocator.alloc(n * sizeof(unsigned int), e->desc.allocator.user_data);
    w->bits = (unsigned long long *)e->desc.allocator.alloc((n / 64 + 1) * sizeof(unsigned long long), e->desc.allocator.user_data);
    r = w->pos && w->bits ? NBODY_OK : NBODY_ERR_OUT_OF_MEMORY;
    if (r == NBODY_OK) memset(w->bits, 0, (n / 64 + 1) * sizeof(unsigned long long));
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->list, 4 * n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->up, n);
    if (r == NBODY_OK) r = nbody__cu_check(e, cudaMemset(w->up, 0, n * sizeof(unsigned int)), "memset");
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->flag, n + 2);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->acc, 3 * n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->io, 6 * n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->level, n);
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->near, n);
    if (r == NBODY_OK) r = nbody__cu_check(e, cudaMemset(w->near, 0, n), "memset");   /* test particles' entries stay 0 */
    if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->dpos, n);
    if (r == NBODY_OK)
        r = nbody__cu_check(e, cudaMallocHost((void **)&w->host, (5 * n + 2 + n / 4 + 1) * sizeof(unsigned int)), "cudaMallocHost");
    if (r != NBODY_OK) { nbody__cu_kdk_free(w, &e->desc); c->kdk = NULL; return r; }
    *out = w;
    return NBODY_OK;
}

/* Benchmarks (bench/bench_treeblock.c): the warps' union walk when more than 1 / kdk_union of
   the sources are active (0: never; measured slower than the breadth-first walk at every
   count, bench/results/treeblock-2026-11-27.md); at most kdk_lanes lanes a body in the split
   walk (32: a warp), each
   with 2^kdk_roots subtrees; kdk_device = 0: kdk_step declines (the host's path:
   active_forces, the levels, kick); kdk_full = 0: a step of every body walks the list too;
   kdk_front = 0: the split walk where the breadth-first walk would be; kdk_climb = 1: the
   refit climbs from every leaf (no block's subtree in shared memory); kdk_fuse = 0: the levels
   and kicks in two launches at every count; kdk_loop: 0 no runs of steps on the device
   (kdk_run declines: the host schedules every step), 1 runs that leave the steps of every body
   to the host, 2 runs that take them too (the default, NBODY__CU_KDK_LOOP; < 0: the default) */
#define NBODY__CU_KDK_LOOP 2
static unsigned int nbody__cu_kdk_union = 0, nbody__cu_kdk_lanes = NBODY__CU_SPLIT_LANES;
/* The neighbour time-step limiter (nbody__kdk_limit in nbody.h) on CUDA_TREE: off unless
   nbody__cuda_kdk_limiter(1). Measured on the galaxy collision (bench/results/
   treeblock-limiter-gpu-2026-11-27.md): N = 2^16 to t = 6, eta 0.05, seeds 1-3, abs(dE/E)
   7.8e-3 / 9.6e-3 / 7.6e-3 with it against 2.7e-3 / 1.9e-3 / 9.2e-3 without, for 6-8 % more
   time; N = 512 to t = 4 (seeds 4, 5) 0.062 against 0.063. On, every path gathers the
   neighbour levels (active_forces for the host, kdk_step and the runs on the device), so
   that they still take the same steps. */
static int nbody__cu_kdk_limiter = 0;
extern "C" void nbody__cuda_kdk_limiter(int on) { nbody__cu_kdk_limiter = on != 0; }
/* A run's breadth-first walk takes the active bodies with as many blocks as are resident
   (cudaOccupancyMaxActiveBlocksPerMultiprocessor) rather than 8 a multiprocessor: the walks
   wait on loads, and more of them in flight hide more of it. A block's walk is its body's
   alone, so the bits do not depend on the count. Benchmarks: nbody__cuda_kdk_front_blocks(k), k blocks a
   multiprocessor (0: the resident count). */
static int nbody__cu_kdk_front_per_sm = 0;
extern "C" void nbody__cuda_kdk_front_blocks(int per_sm) { nbody__cu_kdk_front_per_sm = per_sm > 0 ? per_sm : 0; }
static int nbody__cu_kdk_device = 1, nbody__cu_kdk_roots = 2, nbody__cu_kdk_full = 1, nbody__cu_kdk_front = 1, nbody__cu_kdk_climb = 0,
           nbody__cu_kdk_fuse = 1, nbody__cu_kdk_loop = NBODY__CU_KDK_LOOP;
extern "C" void nbody__cuda_kdk_config(unsigned int union_fraction, unsigned int max_lanes, int device_step, int roots_log2, int full,
                                       int front, int climb, int fuse, int loop) {
    nbody__cu_kdk_loop = loop >= 0 && loop <= 2 ? loop : NBODY__CU_KDK_LOOP;
    nbody__cu_kdk_climb = climb;
    nbody__cu_kdk_fuse = fuse;
    nbody__cu_kdk_full = full;
    nbody__cu_kdk_front = front;
    nbody__cu_kdk_union = union_fraction;
    nbody__cu_kdk_lanes = max_lanes >= 32 && max_lanes <= NBODY__CU_SPLIT_LANES ? max_lanes : NBODY__CU_SPLIT_LANES;
    nbody__cu_kdk_device = device_step;
    nbody__cu_kdk_roots = roots_log2 > 0 && roots_log2 <= 6 ? roots_log2 : 2;
}

/* the heap's P (the largest power of two at most 2 nt - 1) and the leaf of depth-first position p */
static size_t nbody__cu_heap_p(size_t nt) { size_t P = 1; while (P * 2 <= 2 * nt - 1) P *= 2; return P; }
static size_t nbody__cu_leaf_of(size_t p, size_t nt, size_t P) { return p < 2 * nt - P ? P + p - nt : p - (2 * nt - P); }

/* the tree of the block steps on the device: built (its order to the host) or laid out from
   the host's order, then refitted to y; w->pos from the order */
static nbody_result nbody__cu_kdk_tree(nbody__engine *e, nbody__cu_kdk *w, nbody__active_op *op) {
    nbody__cuda *c = nbody__cu(e);
    const nbody__r *y = (const nbody__r *)op->y;
    size_t n = e->n, nt = nbody__cu_nsrc(e), P = nbody__cu_heap_p(nt), p;
    unsigned int *h = w->host;
    nbody_result r;
    NBODY__CU(cudaMemsetAsync(w->flag, 0, 2 * sizeof(unsigned int)));
    if (op->build) {
        if ((r = nbody__cu_tree_build(e, y)) != NBODY_OK) return r;
        NBODY__CU(cudaMemcpy(h, c->val[1], nt * sizeof(unsigned int), cudaMemcpyDeviceToHost));
        for (p = 0; p < n; ++p) op->order[p] = p < nt ? h[p] : p;
    } else {
        if (!c->kdk_tree) {            /* lay the host's order out: the sort's output of a build */
            int depth = 0;
            for (p = 0; p < nt; ++p) h[p] = (unsigned int)op->order[p];
            NBODY__CU(cudaMemcpy(c->val[1], h, nt * sizeof(unsigned int), cudaMemcpyHostToDevice));
            nbody__cu_kdk_pos<<<nbody__cu_blocks(nt, 256), 256>>>(c->val[1], nt, P, w->dpos, c->leafbody);   /* the limiter's leafbody */
            NBODY__CU(cudaGetLastError());
            for (size_t q = 1; q * 2 <= 2 * nt - 1; q *= 2) depth++;
            c->depth = depth;
        }
        c->ycur = y;
        size_t j0 = nt / NBODY__CU_REFIT_B * NBODY__CU_REFIT_B;
        nbody__cu_refit<nbody__r><<<(unsigned int)((2 * nt - j0 + NBODY__CU_REFIT_B - 1) / NBODY__CU_REFIT_B), NBODY__CU_REFIT_B>>>(
            y, n, c->m, nt, P, j0, c->val[1], c->node, c->nmass, c->lo, c->hi, c->rad, w->up, w->flag, 1 / e->desc.theta, nbody__cu_kdk_climb,
            (const unsigned int *)NULL);
        NBODY__CU(cudaGetLastError());
    }
    if (op->build || !c->kdk_tree) {
        for (p = 0; p < nt; ++p) w->pos[op->order[p]] = (unsigned int)nbody__cu_leaf_of(p, nt, P);
        c->kdk_tree = 1;
    }
    op->wrote = 1;
    return NBODY_OK;
}

/* the split walk's lanes a body and depth: a warp, or (few bodies) more lanes, up to a block,
   until the bodies' lanes fill the device twice; each lane 4 subtrees (a warp: depth 7), so
   that the subtrees near the body, which the walk opens to their leaves, are small and spread
   over lanes (the subtrees are interleaved: neighbours go to other lanes) */
static void nbody__cu_split_shape(const nbody__cuda *c, size_t bodies, size_t nt, unsigned int *L, int *D) {
    size_t fill = (size_t)c->sms * 2048 * 2;
    int d = 0, l = 5;
    while (l < 10 && ((size_t)2 << l) <= nbody__cu_kdk_lanes && bodies * ((size_t)2 << l) <= fill) ++l;
    while (d < l + nbody__cu_kdk_roots && ((size_t)2 << d) <= nt) ++d;
    if (l > d) l = d > 5 ? d : 5;
    *L = 1u << l;
    *D = d;
}

/* a step of every body on a tree built for it: the derivative's tuned walk, by body, into
   w->full + 3n; with nb.level the same walk with the neighbour levels (nbody__cu_walk's NEAR, the
   same forces; the group walk, which a benchmark or test may force, not: its per-thread walk) */
static nbody_result nbody__cu_kdk_every(nbody__engine *e, nbody__cu_kdk *w, const nbody__cu_near &nb) {
    nbody__cuda *c = nbody__cu(e);
    size_t n = e->n, nt = nbody__cu_nsrc(e);
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    const unsigned int B = 128;          /* within the NEAR walk's registers at any tuning */
    if (!nb.level) return nbody__cu_tree_walk(e, c->block, c->walk, 1, w->full);
    if (c->walk == NBODY__CU_WALK_WARP)
        nbody__cu_walk<nbody__r, true, true><<<nbody__cu_blocks(nt, B), B>>>(c->node, c->nmass, (const unsigned int *)NULL, 0, (unsigned int)nt,
                                                                            c->leafbody, 0, w->full + 3 * n, n, (unsigned int)nt, 1, eps2,
                                                                            e->desc.G, nb);
    else
        nbody__cu_walk<nbody__r, false, true><<<nbody__cu_blocks(nt, B), B>>>(c->node, c->nmass, (const unsigned int *)NULL, 0,
                                                                             (unsigned int)nt, c->leafbody, 0, w->full + 3 * n, n,
                                                                             (unsigned int)nt, 1, eps2, e->desc.G, nb);
    NBODY__CU(cudaGetLastError());
    if (nt < n) {
        nbody__cu_walk_test<nbody__r><<<nbody__cu_blocks(n - nt, B), B>>>(c->node, c->nmass, c->ycur, n, nt, n, w->full + 3 * n, n, 0, nt,
                                                                           eps2, e->desc.G, c->nquad);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}

/* every body's level (host, n) to w->level as bytes, for the neighbour limiter's walks */
static nbody_result nbody__cu_kdk_levels_up(nbody__engine *e, nbody__cu_kdk *w, const unsigned long long *level) {
    size_t n = e->n, i;
    unsigned char *b = (unsigned char *)(w->host + 5 * n + 2);
    for (i = 0; i < n; ++i) b[i] = (unsigned char)level[i];   /* at most NBODY__BLOCK_LEVELS */
    NBODY__CU(cudaMemcpyAsync(w->level, b, n, cudaMemcpyHostToDevice));
    return NBODY_OK;
}

/* the tree (nbody__cu_kdk_tree), the active list up (with level: the active bodies' levels
   too) and the walks: active body q's forces at (*acc)[d n + (*slot)[q]], d = 0, 1, 2 (by leaf,
   test particles by body; a step of every body on a tree built for it walks as the derivative
   does, by body); *src the active sources' count. With all (every body's level, host, n) the
   walks gather the neighbour levels (nbody__cu_near) at (*near)[(*slot)[q]] (test particles: 0),
   *near NULL where they do not (the benchmarks' other walks) */
static nbody_result nbody__cu_kdk_walk(nbody__engine *e, nbody__active_op *op, const unsigned long long *level,
                                       const unsigned long long *all, nbody__cu_kdk **wp, size_t *srcp, const nbody__r **acc,
                                       const unsigned int **slot, const unsigned char **near) {
    nbody__cuda *c = nbody__cu(e);
    const nbody__r *y = (const nbody__r *)op->y;
    const size_t *list = op->list;
    size_t n = e->n, nt = nbody__cu_nsrc(e), count = op->count, src = count, m = 0, q, wd;
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    const int B = 256;
    unsigned int *h;
    nbody__cu_kdk *w;
    nbody__cu_near nb = {NULL, NULL, NULL};
    int full = count == n && op->build && nbody__cu_kdk_full, uni;
    nbody_result r;
    if (c->nquad) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody: cuda-tree: block steps walk monopoles only (desc.quadrupole refused)");
        return NBODY_ERR_UNAVAILABLE;
    }
    while (src > 0 && list[src - 1] >= nt) --src;   /* list ascending: the sources' part */
    if ((r = nbody__cu_kdk_work(e, &w)) != NBODY_OK || (r = nbody__cu_kdk_tree(e, w, op)) != NBODY_OK) return r;
    h = w->host;
    for (q = 0; q < src; ++q) { size_t k = w->pos[list[q]]; w->bits[k >> 6] |= 1ULL << (k & 63); }
    for (wd = 0; wd < (nt + 63) / 64; ++wd)       /* the active leaves in leaf order */
        for (unsigned long long x = w->bits[wd]; x; x &= x - 1) h[m++] = (unsigned int)(wd * 64 + (size_t)__builtin_ctzll(x));
    for (wd = 0; wd < (nt + 63) / 64; ++wd) w->bits[wd] = 0;
    for (q = 0; q < count; ++q) {
        h[src + q] = (unsigned int)(q < src ? w->pos[list[q]] : list[q]);   /* test particles: acc by body */
        h[src + count + q] = (unsigned int)list[q];
        if (level) h[src + 2 * count + q] = (unsigned int)level[list[q]];
    }
    NBODY__CU(cudaMemcpyAsync(w->list, h, (src + (level ? 3 : 2) * count) * sizeof(unsigned int), cudaMemcpyHostToDevice));
    uni = nbody__cu_kdk_union && nbody__cu_kdk_union * src > nt;
    if (all && (full || (!uni && nbody__cu_kdk_front))) {
        if ((r = nbody__cu_kdk_levels_up(e, w, all)) != NBODY_OK) return r;
        nb.level = w->level; nb.leafbody = c->leafbody; nb.out = w->near;
    }
    *wp = w; *srcp = src; *acc = w->acc; *slot = w->list + src; *near = nb.out;
    if (full) {                                    /* every body, a fresh tree: the derivative's tuned walk */
        if (!w->full && (r = nbody__cu_malloc(e, &w->full, 6 * n)) != NBODY_OK) return r;
        if (!c->tuned && (r = nbody__cu_tune(e, w->full)) != NBODY_OK) return r;
        *acc = w->full + 3 * n; *slot = w->list + src + count;
        return nbody__cu_kdk_every(e, w, nb);
    }
    if (uni) {                                     /* benchmarks: the warps' union of 32 neighbours' walks */
        if ((r = nbody__cu_walk_launch(e, NBODY__CU_WALK_WARP, nbody__cu_blocks(src, B), (unsigned int)B, w->list, 0, src, NULL, 0, w->acc,
                                       n, 1)) != NBODY_OK)
            return r;
    } else if (src && nbody__cu_kdk_front) {
        nbody__cu_walk_front<nbody__r><<<(unsigned int)src, NBODY__CU_FRONT_T>>>(c->node, c->nmass, w->list, (const unsigned int *)NULL,
                                                                                (unsigned int *)NULL, (nbody__cu_kdk_ctl *)NULL, w->acc, n,
                                                                                (unsigned int)nt, eps2, e->desc.G, nb);
        NBODY__CU(cudaGetLastError());
    } else if (src) {
        unsigned int L, T;
        int D;
        nbody__cu_split_shape(c, src, nt, &L, &D);
        T = L > 32 ? L : 128;              /* a block a body, or four warps of a body each */
        nbody__cu_walk_split<nbody__r><<<(unsigned int)((src + T / L - 1) / (T / L)), T>>>(c->node, c->nmass, w->list, (unsigned int)src,
                                                                                          w->acc, n, (unsigned int)nt, D, L, eps2,
                                                                                          e->desc.G);
        NBODY__CU(cudaGetLastError());
    }
    if (src < count) {
        nbody__cu_walk_test<nbody__r><<<nbody__cu_blocks(n - nt, B), B>>>(c->node, c->nmass, y, n, nt, n, w->acc, n, 0, nt, eps2,
                                                                           e->desc.G, (const nbody__rec *)NULL);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}

/* the forces, and with op->level and op->neighbour_level the neighbour levels where the
   limiter is on (nbody__cu_kdk_limiter; no reaches: the wake-ups are TREE's) */
static nbody_result nbody__cu_active_forces(nbody__engine *e, nbody__active_op *op) {
    size_t count = op->count, src, q;
    const nbody__r *acc;
    const unsigned int *slot;
    const unsigned char *near;
    unsigned int *back;
    nbody__cu_kdk *w;
    nbody_result r = nbody__cu_enter(e);
    op->neighbours = 0;
    if (r != NBODY_OK || !count) return r;
    r = nbody__cu_kdk_walk(e, op, NULL, nbody__cu_kdk_limiter && op->neighbour_level ? op->level : NULL, &w, &src, &acc, &slot, &near);
    if (r != NBODY_OK) return r;
    nbody__cu_kdk_gather<nbody__r><<<nbody__cu_blocks(count, 256), 256>>>(acc, e->n, slot, count, w->flag, w->io, near, w->flag + 2);
    NBODY__CU(cudaGetLastError());
    NBODY__CU(cudaMemcpy(op->out, w->io, 3 * count * sizeof(nbody__r), cudaMemcpyDeviceToHost));
    if (near) {
        back = w->host + 4 * e->n;
        NBODY__CU(cudaMemcpy(back, w->flag + 2, count * sizeof(unsigned int), cudaMemcpyDeviceToHost));
        for (q = 0; q < count; ++q) op->neighbour_level[q] = back[q];
        op->neighbours = 1;
    }
    return NBODY_OK;
}

/* after active_forces of the same list: its forces are still in io, its list on the device */
static nbody_result nbody__cu_kick(nbody__engine *e, const nbody__kick_op *op) {
    nbody__cuda *c = nbody__cu(e);
    nbody__cu_kdk *w = c->kdk;
    size_t m = op->count, src = m, nt = nbody__cu_nsrc(e);
    nbody_result r = nbody__cu_enter(e);
    if (r != NBODY_OK || !m) return r;
    if (!w) return NBODY_ERR_UNAVAILABLE;   /* no active_forces before: not how the method calls */
    while (src > 0 && op->list[src - 1] >= nt) --src;
    NBODY__CU(cudaMemcpyAsync(w->io + 3 * m, op->coef, 3 * m * sizeof(nbody__r), cudaMemcpyHostToDevice));
    nbody__cu_kdk_kick<nbody__r><<<nbody__cu_blocks(m, 256), 256>>>((nbody__r *)op->y, (nbody__r *)op->kick, w->list + src + m, m, e->n,
                                                                     w->io, w->io + 3 * m, (const unsigned int *)NULL);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}

/* nbody__kdk_levels: the walk, the levels and coefficients, the kicks unless refused, and one
   copy back of the flags and levels (the step's one wait) */
static nbody_result nbody__cu_kdk_step(nbody__engine *e, nbody__active_op *op, nbody__kdk_levels *lv) {
    size_t count = op->count, src, q;
    const nbody__r *acc;
    const unsigned int *slot;
    const unsigned char *near;
    unsigned int *back;
    nbody__cu_kdk *w;
    nbody_result r = nbody__cu_enter(e);
    lv->ok = 0;
    if (r != NBODY_OK || !count || !nbody__cu_kdk_device) return r;
    r = nbody__cu_kdk_walk(e, op, lv->level, nbody__cu_kdk_limiter && lv->limit >= 0 ? lv->level : NULL, &w, &src, &acc, &slot, &near);
    if (r != NBODY_OK) return r;
    if (nbody__cu_kdk_fuse && count <= 1024) {
        nbody__cu_kdk_levels_kick<nbody__r><<<1, (unsigned int)(count + 31) / 32 * 32>>>(acc, e->n, slot, w->list + src + 2 * count, count,
                                                                                         w->flag, w->io, lv->now, lv->dt_max, lv->dt_min,
                                                                                         lv->crit, lv->jerk, (nbody__r *)op->y,
                                                                                         (nbody__r *)lv->kick, w->list + src + count, near,
                                                                                         lv->limit);
        NBODY__CU(cudaGetLastError());
    } else {
        nbody__cu_kdk_levels<nbody__r><<<nbody__cu_blocks(count, 256), 256>>>(acc, e->n, slot, w->list + src + 2 * count, count, w->flag,
                                                                               w->io, lv->now, lv->dt_max, lv->dt_min, lv->crit, near,
                                                                               lv->limit, (const nbody__r *)lv->kick + 3 * e->n,
                                                                               w->list + src + count, lv->jerk);
        NBODY__CU(cudaGetLastError());
        nbody__cu_kdk_kick<nbody__r><<<nbody__cu_blocks(count, 256), 256>>>((nbody__r *)op->y, (nbody__r *)lv->kick, w->list + src + count,
                                                                             count, e->n, w->io, w->io + 3 * count, w->flag + 1);
        NBODY__CU(cudaGetLastError());
    }
    back = w->host + 4 * e->n;
    NBODY__CU(cudaMemcpy(back, w->flag, (count + 2) * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    lv->ok = back[1] == 0;
    for (q = 0; q < count; ++q) {
        lv->level_new[q] = NBODY__CU_KDK_LEVEL_OF(back[2 + q]);
        lv->limited += lv->ok && (back[2 + q] & NBODY__CU_KDK_RAISED);
    }
    return NBODY_OK;
}

/* one block step of a run (nbody__cu_kdk_run), queued: y drifts into ynew; mode 1 (a stop
   asked for it) builds the tree afresh from ynew instead of the refit, mode 3 (every body
   active) builds it and walks every body as nbody__cu_kdk_walk does there (the derivative's
   walk, forces by body) */
static nbody_result nbody__cu_kdk_queue(nbody__engine *e, nbody__cu_kdk *w, const nbody__kdk_run *run, const nbody__r *y, nbody__r *ynew,
                                        int mode) {
    nbody__cuda *c = nbody__cu(e);
    size_t n = e->n, P = nbody__cu_heap_p(n), j0 = n / NBODY__CU_REFIT_B * NBODY__CU_REFIT_B;
    unsigned int *body = w->list, *lev = w->list + n, *slot = w->list + 2 * n;
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    nbody__cu_lc<nbody__r> p;
    nbody__cu_near nb = {NULL, NULL, NULL};
    nbody_result r;
    if (nbody__cu_kdk_limiter && run->limit >= 0) { nb.level = w->level; nb.leafbody = c->leafbody; nb.out = w->near; }   /* the run's levels */
    memset(&p, 0, sizeof p);                      /* nbody__attempt_kdk's drift: y + h (1 kick) */
    p.out = ynew; p.y = y; p.nk = 1; p.c[0] = 1; p.k[0] = (const nbody__r *)run->kick; p.len = 6 * n;
    const nbody__r *acc = w->acc;
    nbody__cu_kdk_sched<<<1, 1>>>(w->ctl, w->flag, mode);
    nbody__cu_kdk_drift<nbody__r><<<nbody__cu_blocks(n, 256), 256>>>(p, w->ctl, w->level, body, lev, n);
    NBODY__CU(cudaGetLastError());
    c->ycur = ynew;
    if (mode) {
        if ((r = nbody__cu_tree_build(e, ynew)) != NBODY_OK) return r;
        nbody__cu_kdk_pos<<<nbody__cu_blocks(n, 256), 256>>>(c->val[1], n, P, w->dpos, (unsigned int *)NULL);
        c->kdk_tree = 1;                           /* val[1] is the order of this tree */
    } else {
        nbody__cu_refit<nbody__r><<<(unsigned int)((2 * n - j0 + NBODY__CU_REFIT_B - 1) / NBODY__CU_REFIT_B), NBODY__CU_REFIT_B>>>(
            ynew, n, c->m, n, P, j0, c->val[1], c->node, c->nmass, c->lo, c->hi, c->rad, w->up, w->flag, 1 / e->desc.theta, nbody__cu_kdk_climb,
            &w->ctl->stop);
    }
    NBODY__CU(cudaGetLastError());
    if (mode == 3) {                               /* by body: the slots are the bodies */
        if ((r = nbody__cu_kdk_every(e, w, nb)) != NBODY_OK) return r;
        acc = w->full + 3 * n; slot = body;
    } else {
        nbody__cu_walk_front<nbody__r><<<w->front_blocks, NBODY__CU_FRONT_T>>>(c->node, c->nmass, body, w->dpos, slot, w->ctl, w->acc,
                                                                                       n, (unsigned int)n, eps2, e->desc.G, nb);
    }
    nbody__cu_kdk_levels_run<nbody__r><<<nbody__cu_blocks(n, 256), 256>>>(w->ctl, acc, n, slot, lev, w->flag, w->io, run->dt_max,
                                                                           run->dt_min, run->crit, nb.out, run->limit,
                                                                           (const nbody__r *)run->kick + 3 * n, body, run->jerk);
    nbody__cu_kdk_kick_run<nbody__r><<<nbody__cu_blocks(n, 256), 256>>>(w->ctl, ynew, (nbody__r *)run->kick, body, lev, w->flag, w->io, n,
                                                                         w->level, mode);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}

/* the steps to queue before the next look: those until the next build (at the mean active
   count so far) or until the finest occupied level reaches the next block time of every body
   or tick_stop, whichever is first (1 to 64); a stop within them costs launches that return */
static size_t nbody__cu_kdk_batch(const nbody__cu_kdk_ctl *h, int mode) {
    int kmin = 0, kmax = NBODY__BLOCK_LEVELS;
    unsigned long long span_c, span_f, t_all, avg, age = mode ? 0 : h->age, b_time, b_build;
    while (kmin < NBODY__BLOCK_LEVELS && !h->census[kmin]) ++kmin;
    while (kmax > 0 && !h->census[kmax]) --kmax;
    span_c = 1ULL << (NBODY__BLOCK_LEVELS - kmin); span_f = 1ULL << (NBODY__BLOCK_LEVELS - kmax);
    t_all = (h->now & ~(span_c - 1)) + span_c;
    if (t_all > h->tick_stop) t_all = h->tick_stop;
    b_time = t_all > h->now ? (t_all - h->now) / span_f : 1;
    avg = h->steps ? h->body_steps / h->steps : h->n / 16 + 1;
    b_build = (h->age_limit > age ? (h->age_limit - age) / (avg ? avg : 1) : 0) + (mode ? 2 : 1);
    if (b_time > b_build) b_time = b_build;
    return b_time < 1 ? 1 : b_time > 64 ? 64 : (size_t)b_time;
}

/* nbody__kdk_run: batches of queued steps (nbody__cu_kdk_queue), the state read after each;
   a stop for a build queues the build step first in the next batch. Declines (no steps) with
   test particles, quadrupoles, a tree not the block steps' or a benchmark's other walk. */
static nbody_result nbody__cu_kdk_run(nbody__engine *e, nbody__kdk_run *run) {
    nbody__cuda *c = nbody__cu(e);
    size_t n = e->n, i, batch, k;
    unsigned long long done = 0;
    nbody__r *ys[2];
    nbody__cu_kdk *w;
    nbody__cu_kdk_ctl *h;
    unsigned char *lv;
    int mode = 0;
    nbody_result r = nbody__cu_enter(e);
    run->steps = 0; run->body_steps = 0; run->built = 0;
    if (r != NBODY_OK) return r;
    if (run->max_level > NBODY__BLOCK_LEVELS || !run->level || !run->order) return NBODY_ERR_INVALID_ARGUMENT;
    if (!nbody__cu_kdk_loop || !nbody__cu_kdk_device || !nbody__cu_kdk_front || nbody__cu_kdk_union || !c->kdk_tree || c->nquad ||
        nbody__cu_nsrc(e) != n || n < 2 || n > 0xFFFFFFFFu)
        return NBODY_OK;
    if ((r = nbody__cu_kdk_work(e, &w)) != NBODY_OK) return r;
    if (!w->ctl) {
        int per_sm = 0;
        if ((r = nbody__cu_malloc(e, &w->ctl, 1)) != NBODY_OK) return r;
        NBODY__CU(cudaMallocHost((void **)&w->hctl, sizeof *w->hctl));
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, nbody__cu_walk_front<nbody__r>, NBODY__CU_FRONT_T, 0) != cudaSuccess) {
            (void)cudaGetLastError();
            per_sm = 8;
        }
        w->front_blocks = (unsigned int)c->sms * (unsigned int)(per_sm > 0 ? per_sm : 1);
    }
    if (nbody__cu_kdk_front_per_sm) w->front_blocks = (unsigned int)c->sms * (unsigned int)nbody__cu_kdk_front_per_sm;
    h = w->hctl;
    lv = (unsigned char *)w->host;
    memset(h, 0, sizeof *h);
    h->now = run->now; h->tick_stop = run->tick_stop; h->age = run->age; h->age_limit = run->age_limit;
    h->t = run->t; h->origin = run->origin; h->tick = run->tick; h->max_level = (unsigned int)run->max_level; h->n = (unsigned int)n;
    for (i = 0; i < n; ++i) {
        if (run->level[i] > NBODY__BLOCK_LEVELS) return NBODY_ERR_INVALID_ARGUMENT;
        lv[i] = (unsigned char)run->level[i];
        h->census[run->level[i]]++;
    }
    NBODY__CU(cudaMemcpyAsync(w->ctl, h, sizeof *h, cudaMemcpyHostToDevice));
    NBODY__CU(cudaMemcpyAsync(w->level, lv, n, cudaMemcpyHostToDevice));
    nbody__cu_kdk_pos<<<nbody__cu_blocks(n, 256), 256>>>(c->val[1], n, nbody__cu_heap_p(n), w->dpos, (unsigned int *)NULL);
    NBODY__CU(cudaGetLastError());
    ys[0] = (nbody__r *)run->y; ys[1] = (nbody__r *)run->other;
    for (;;) {
        int queued = mode;
        batch = nbody__cu_kdk_batch(h, mode);
        for (k = 0; k < batch; ++k)
            if ((r = nbody__cu_kdk_queue(e, w, run, ys[(done + k) % 2], ys[(done + k + 1) % 2], k == 0 ? mode : 0)) != NBODY_OK) return r;
        run->built |= mode != 0;
        nbody__cu_kdk_sched<<<1, 1>>>(w->ctl, w->flag, 2);
        NBODY__CU(cudaGetLastError());
        NBODY__CU(cudaMemcpy(h, w->ctl, sizeof *h, cudaMemcpyDeviceToHost));
        mode = h->stop == NBODY__CU_KDK_BUILD ? 1 : h->stop == NBODY__CU_KDK_ALL && nbody__cu_kdk_loop == 2 && w->full && c->tuned &&
                                                    nbody__cu_kdk_full ? 3 : h->stop == NBODY__CU_KDK_GO ? 0 : -1;
        if (mode < 0 || (mode && mode == queued && h->steps == done)) break;   /* the host's step, or no progress */
        done = h->steps;
    }
    run->steps = (size_t)h->steps; run->body_steps = h->body_steps; run->age = h->age; run->limited = h->limited;
    run->now = h->now; run->t = h->t; run->origin = h->origin; run->dt = h->dt;
    NBODY__CU(cudaMemcpy(lv, w->level, n, cudaMemcpyDeviceToHost));
    for (i = 0; i < n; ++i) run->level[i] = lv[i];
    if (run->built) {                              /* the tree built last: its order to the host, as a build step sends it */
        size_t P = nbody__cu_heap_p(n);
        NBODY__CU(cudaMemcpy(w->host, c->val[1], n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
        for (i = 0; i < n; ++i) { run->order[i] = w->host[i]; w->pos[w->host[i]] = (unsigned int)nbody__cu_leaf_of(i, n, P); }
    }
    return NBODY_OK;
}

static const nbody__engine_ops nbody__cuda_dense_ops = {
    "cuda", nbody__cu_init_dense, nbody__cu_shutdown, nbody__cu_alloc, nbody__cu_release, nbody__cu_upload,
    nbody__cu_download, nbody__cu_set_masses, nbody__cu_derivative, nbody__cu_lincomb, nbody__cu_error_norm,
    nbody__cu_all_finite, nbody__cu_set_radii, nbody__cu_find_contacts, nbody__cu_hermite_op, NULL, NULL,
    nbody__cu_hermite_store, nbody__cu_hermite_step, NULL, nbody__cu_hermite_run, NULL};
static const nbody__engine_ops nbody__cuda_tree_ops = {
    "cuda-tree", nbody__cu_init_tree, nbody__cu_shutdown, nbody__cu_alloc, nbody__cu_release, nbody__cu_upload,
    nbody__cu_download, nbody__cu_set_masses, nbody__cu_derivative, nbody__cu_lincomb, nbody__cu_error_norm,
    nbody__cu_all_finite, nbody__cu_set_radii, nbody__cu_find_contacts, NULL, nbody__cu_active_forces, nbody__cu_kick, NULL,
    NULL, nbody__cu_kdk_step, NULL, nbody__cu_kdk_run};

extern "C" const nbody__engine_ops *nbody__cuda_engine_ops(int tree) {
    return tree ? &nbody__cuda_tree_ops : &nbody__cuda_dense_ops;
}

/* Benchmarks and tests only: choose the kernel (dense: 0 the one-sided, 1 the plain tile
   kernel, 2 the symmetric), the threads per block and per_thread (0 = keep): the bodies per
   thread of the dense engine, the walk of the tree (NBODY__CU_WALK_*); a block ends tuning. */
static void nbody__cu_multi_config(nbody__engine *e, int variant, int block, int per_thread, int *choice);
extern "C" void nbody__cuda_bench_config(nbody__engine *e, int variant, int block, int per_thread) {
    nbody__cuda *c = nbody__cu(e);
    if (nbody__cu_is_multi(e)) { nbody__cu_multi_config(e, variant, block, per_thread, NULL); return; }
    c->variant = variant == 1;
    c->sym = variant == 2;
    if (block > 0) { c->block = block; c->tuned = 1; }
    if (per_thread > 0 && c->tree) c->walk = per_thread;
    else if (per_thread > 0) c->bodies_per_thread = per_thread;
}
/* Benchmarks only (tree): from the next derivative on, time the build and the walk with
   events; *build_ms and *walk_ms: those of the last derivative (-1 before one). */
extern "C" void nbody__cuda_bench_tree_times(nbody__engine *e, double *build_ms, double *walk_ms) {
    nbody__cuda *c = nbody__cu(e);
    float a = -1, b = -1;
    if (!c->timing) {
        int ok = 1;
        for (int k = 0; k < 3; ++k) ok = ok && cudaEventCreate(&c->tev[k]) == cudaSuccess;
        c->timing = ok;
    } else if (cudaEventSynchronize(c->tev[2]) == cudaSuccess && cudaEventElapsedTime(&a, c->tev[0], c->tev[1]) == cudaSuccess &&
               cudaEventElapsedTime(&b, c->tev[1], c->tev[2]) == cudaSuccess) {
    } else {
        a = b = -1;
    }
    (void)cudaGetLastError();
    *build_ms = a; *walk_ms = b;
}
/* Benchmarks only: the tuned choice (0 before the first derivative); *per_thread as in
   nbody__cuda_bench_config; *symmetric: 1 when the dense engine chose the symmetric kernel. */
extern "C" void nbody__cuda_bench_choice(nbody__engine *e, int *block, int *per_thread, int *symmetric) {
    nbody__cuda *c = nbody__cu(e);
    if (nbody__cu_is_multi(e)) {
        int ch[3];
        nbody__cu_multi_config(e, -1, 0, 0, ch);
        *block = ch[0]; *per_thread = ch[1]; *symmetric = ch[2];
        return;
    }
    *block = c->block;
    *per_thread = c->tree ? c->walk : c->bodies_per_thread;
    *symmetric = c->sym;
}

/* ======================================================================================
   CUDA-OpenGL interop (nbody_cuda_positions in nbody.h): the state's SoA positions
   x(n) y(n) z(n) as interleaved float xyz, the vertex-buffer layout, on the device
   ====================================================================================== */
template <class T> __global__ void nbody__cu_xyz_kernel(const T *y, size_t n, float *dst) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        dst[3 * i] = (float)y[i];
        dst[3 * i + 1] = (float)y[n + i];
        dst[3 * i + 2] = (float)y[2 * n + i];
    }
}

extern "C" nbody_result nbody__cuda_positions(nbody__engine *e, nbody__buf y, size_t n, void *dst) {
    cudaPointerAttributes at;
    if (nbody__cu_is_multi(e)) return NBODY_ERR_UNAVAILABLE;          /* the state is split over GPUs */
    nbody_result r = nbody__cu_enter(e);
    if (r != NBODY_OK) return r;
    /* a host pointer, or memory of another GPU, would fault inside the kernel: refuse it */
    if (cudaPointerGetAttributes(&at, dst) != cudaSuccess) {
        (void)cudaGetLastError();
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if ((at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged) || at.device != nbody__cu(e)->dev) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: positions: destination is not device memory of GPU %d", nbody__cu(e)->dev);
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if (n == 0) return NBODY_OK;
    nbody__cu_xyz_kernel<<<nbody__cu_blocks(n, 256), 256>>>((const nbody__r *)y, n, (float *)dst);
    NBODY__CU(cudaGetLastError());
    return NBODY_OK;
}

/* ======================================================================================
   Slices and several GPUs. nbody__cuda_derivative_slice: the forces on the bodies
   [i0, i0 + m) from all n, whose positions arrive gathered (x, y, z: 3n), for a distributed
   engine (one GPU a rank, MPI) and for several GPUs of one process (desc.devices > 1, below).
   Dense: the one-sided tile kernel on the slice's targets, the sources split into blockIdx.y
   slices when the slice's blocks cannot fill the GPU (a body's sum then depends on that
   split: forces agree with one GPU's to rounding, not bitwise). Tree (MPI ranks): every GPU
   builds the whole tree from the gathered positions and walks its slice's leaves only, in
   leaf order (a compacted leaf list), then its slice's test particles: each thread walks as
   in the whole walk, so a slice's forces are bitwise those of one GPU. Several GPUs of one
   process walk ranges of the leaf order instead, balanced by their measured times
   (nbody__cu_multi_tree_forces).
   ====================================================================================== */
template <class T> __global__ void nbody__cu_pack_pos(const T *p, const T *m, nbody__v4<T> *bodies, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        nbody__v4<T> b = {p[i], p[n + i], p[2 * n + i], m[i]};
        bodies[i] = b;
    }
}

__global__ void nbody__cu_iota(unsigned int *v, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) v[k] = (unsigned int)k;
}

/* flag[k] = 1 when leaf nt + k holds a body of [i0, i0 + m) */
__global__ void nbody__cu_slice_flags(const unsigned int *leafbody, size_t n, size_t i0, size_t m, unsigned char *flag) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
        flag[k] = (size_t)leafbody[k] - i0 < m;
}

/* the slices' scratch (tree: leaf flags, the compacted leaf list, CUB's workspace) */
struct nbody__cu_slice_work {
    unsigned char *flag;
    unsigned int *ids, *list;      /* 0 .. n-1; the selected leaves */
    int *count;
    void *tmp;
    size_t tmpbytes;
};
static void nbody__cu_slice_free(nbody__cu_slice_work *w, const nbody_desc *d) {
    if (!w) return;
    cudaFree(w->flag); cudaFree(w->ids); cudaFree(w->list); cudaFree(w->count); cudaFree(w->tmp);
    d->allocator.free(w, d->allocator.user_data);
}

static nbody_result nbody__cu_slice_walk(nbody__engine *e, const nbody__r *p, const unsigned int *list, size_t first, size_t count,
                                         nbody__r *f, size_t i0, size_t m);
/* a slice's bodies' leaves, compacted into a list (in leaf order), then their walks */
static nbody_result nbody__cu_slice_tree(nbody__engine *e, const nbody__r *p, nbody__r *f, size_t i0, size_t m) {
    nbody__cuda *c = nbody__cu(e);
    nbody__cu_slice_work *w = c->slice;
    size_t n = e->n, nt = nbody__cu_nsrc(e);
    nbody_result r;
    if (!w) {
        w = (nbody__cu_slice_work *)e->desc.allocator.alloc(sizeof *w, e->desc.allocator.user_data);
        if (!w) return NBODY_ERR_OUT_OF_MEMORY;
        memset(w, 0, sizeof *w);
        c->slice = w;
        r = nbody__cu_malloc(e, &w->flag, n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->ids, n);
        if (r == NBODY_OK) {
            nbody__cu_iota<<<nbody__cu_blocks(n, 256), 256>>>(w->ids, n);
            r = nbody__cu_check(e, cudaGetLastError(), "iota");
        }
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->list, n);
        if (r == NBODY_OK) r = nbody__cu_malloc(e, &w->count, 1);
        if (r == NBODY_OK) r = nbody__cu_check(e, cub::DeviceSelect::Flagged(NULL, w->tmpbytes, w->ids, w->flag, w->list, w->count, (int)n), "select size");
        if (r == NBODY_OK) r = nbody__cu_malloc(e, (unsigned char **)&w->tmp, w->tmpbytes);
        if (r != NBODY_OK) { nbody__cu_slice_free(w, &e->desc); c->slice = NULL; return r; }
    }
    if ((r = nbody__cu_tree_build(e, p)) != NBODY_OK) return r;
    nbody__cu_slice_flags<<<nbody__cu_blocks(nt, 256), 256>>>(c->leafbody, nt, i0, m, w->flag);
    NBODY__CU(cudaGetLastError());
    {
        size_t bytes = w->tmpbytes;
        NBODY__CU(cub::DeviceSelect::Flagged(w->tmp, bytes, w->ids, w->flag, w->list, w->count, (int)nt));
    }
    return nbody__cu_slice_walk(e, p, w->list, 0, i0 < nt ? (i0 + m < nt ? m : nt - i0) : 0, f, i0, m);
}

/* the walks of a slice [i0, i0 + m) of bodies: the leaves list[t] (or first + t), t < count, by
   body into f + 3m, and the slice's test particles from the gathered positions p (3n) */
static nbody_result nbody__cu_slice_walk(nbody__engine *e, const nbody__r *p, const unsigned int *list, size_t first, size_t count,
                                         nbody__r *f, size_t i0, size_t m) {
    nbody__cuda *c = nbody__cu(e);
    size_t n = e->n, nt = nbody__cu_nsrc(e), lo = i0 > nt ? i0 : nt;
    int B = c->block > 0 ? c->block : 128;
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    unsigned int blocks = (unsigned int)((count + (size_t)B - 1) / (size_t)B);
    if (count) {
        nbody_result rw = nbody__cu_walk_launch(e, c->walk, blocks, (unsigned int)B, list, first, count, c->leafbody, i0, f + 3 * m, m, 1);
        if (rw != NBODY_OK) return rw;
    }
    if (lo < i0 + m) {
        nbody__cu_walk_test<nbody__r><<<nbody__cu_blocks(i0 + m - lo, B), B>>>(c->node, c->nmass, p, n, lo, i0 + m, f + 3 * m, m, i0, nt, eps2,
                                                                               e->desc.G, c->nquad);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}

template <int R, bool UNI>
static nbody_result nbody__cu_slice_dense_launch(nbody__engine *e, nbody__r *f, size_t i0, size_t m) {
    nbody__cuda *c = nbody__cu(e);
    const void *fn = (const void *)nbody__cu_dense<nbody__r, R, UNI>;
    int B = c->block > 0 ? c->block : 256, occ = 0;
    size_t nsrc = nbody__cu_nsrc(e);      /* the sources: the active bodies (test particles pull nothing) */
    size_t ntiles = (nsrc + B - 1) / B, iblocks = (m + (size_t)B * R - 1) / ((size_t)B * R), G, S, tps, all = (size_t)-1;
    nbody__r eps2 = e->desc.softening * e->desc.softening, scale = UNI ? e->desc.G * c->mass1 : e->desc.G, one = 1;
    nbody__r *out = f + 3 * m;
    nbody_result r;
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, fn) == cudaSuccess && B > fa.maxThreadsPerBlock) B = fa.maxThreadsPerBlock / 32 * 32;
    (void)cudaGetLastError();
    ntiles = (nsrc + B - 1) / B; iblocks = (m + (size_t)B * R - 1) / ((size_t)B * R);
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, B, B * sizeof(nbody__rec)) != cudaSuccess) (void)cudaGetLastError();
    G = (size_t)c->sms * (size_t)(occ > 0 ? occ : 1);
    S = (G + iblocks - 1) / iblocks;                 /* source slices: fill the GPU once */
    if (S > ntiles) S = ntiles;
    if (S > 64) S = 64;
    if (S < 1) S = 1;
    tps = (ntiles + S - 1) / S;
    S = (ntiles + tps - 1) / tps;
    if (S > 1) {
        if ((r = nbody__cu_reserve(e, &c->partial, &c->partial_len, S * 3 * m)) != NBODY_OK) return r;
        out = c->partial;
    }
    {
        nbody__r sc = S > 1 ? one : scale;
        void *args[] = {&c->bodies, &out, &i0, &m, &nsrc, &tps, &all, &eps2, &sc};
        NBODY__CU(cudaLaunchKernel(fn, dim3((unsigned int)iblocks, (unsigned int)S), dim3((unsigned int)B), args, B * sizeof(nbody__rec), 0));
    }
    if (S > 1) {
        nbody__cu_sum_slices<<<nbody__cu_blocks(3 * m, 256), 256>>>(c->partial, f + 3 * m, 3 * m, (int)S, scale);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}

/* no tuning on slices: the measured good defaults. Dense: 256 threads. Tree: each thread walks
   alone (quadrupoles: the group walk, as many threads a block as fit), the walk one GPU's
   tuning chose at 2^20, 2^22 and 2^24 on the Hilbert tree, in blocks
   of 1024 threads as there (or as many as the kernel's registers allow): neighbouring leaves
   in one block share the nodes in the SM's cache; measured on two H200s at 2^24, 102.5 ms a
   step against 112.1 with 256 threads. Both walks and every block give the same bits. */
static void nbody__cu_slice_defaults(nbody__cuda *c) {
    cudaFuncAttributes fa;
    if (c->tuned) return;
    c->block = 256;
    if (c->tree) {
        c->block = 1024;
        if (cudaFuncGetAttributes(&fa, (const void *)nbody__cu_walk<nbody__r, false, false>) == cudaSuccess && fa.maxThreadsPerBlock < 1024)
            c->block = fa.maxThreadsPerBlock / 32 * 32;
        (void)cudaGetLastError();
    }
    c->bodies_per_thread = sizeof(nbody__r) == sizeof(float) ? 4 : 2;
    c->walk = !c->tree ? NBODY__CU_WALK_WARP : c->nquad ? NBODY__CU_WALK_GROUP : NBODY__CU_WALK_THREAD;   /* quadrupoles: groups */
    c->tuned = 1;
}

extern "C" nbody_result nbody__cuda_derivative_slice(nbody__engine *e, nbody__buf pos, nbody__buf yb, nbody__buf fb, size_t i0,
                                                     size_t m) {
    nbody__cuda *c = nbody__cu(e);
    const nbody__r *p = (const nbody__r *)pos, *y = (const nbody__r *)yb;
    nbody__r *f = (nbody__r *)fb;
    nbody_result r = nbody__cu_enter(e);
    if (r != NBODY_OK || m == 0) return r;
    NBODY__CU(cudaMemcpyAsync(f, y + 3 * m, 3 * m * sizeof(nbody__r), cudaMemcpyDeviceToDevice, 0));   /* dx/dt = v */
    if (c->tree && c->nquad) {     /* the slices' walk over a leaf list has monopoles only */
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda-tree: quadrupole moments need the GPUs of one process (not MPI ranks)");
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    nbody__cu_slice_defaults(c);
    if (c->tree) return nbody__cu_slice_tree(e, p, f, i0, m);
    nbody__cu_pack_pos<<<nbody__cu_blocks(e->n, 256), 256>>>(p, c->m, c->bodies, e->n);
    NBODY__CU(cudaGetLastError());
    if (sizeof(nbody__r) == sizeof(float))
        return c->uni ? nbody__cu_slice_dense_launch<4, true>(e, f, i0, m) : nbody__cu_slice_dense_launch<4, false>(e, f, i0, m);
    return c->uni ? nbody__cu_slice_dense_launch<2, true>(e, f, i0, m) : nbody__cu_slice_dense_launch<2, false>(e, f, i0, m);
}

/* ======================================================================================
   Several GPUs in one process (desc.devices > 1): GPU k = desc.device + k owns the bodies
   [first[k], first[k + 1]) (n split evenly) with a single-GPU engine for them; a buffer is
   one slice a GPU. f(y): every GPU's positions go to every GPU (NCCL broadcasts, one per
   owner and component, in one group: the all-gather of uneven slices), then each GPU
   computes its slice's forces (dense: or the split symmetric kernel and a reduce-scatter,
   whichever measures faster, see nbody__cu_multi_choose); linear combinations stay on each
   GPU; the error norm is the
   largest of the GPUs' (NaN sticks), finiteness their and. Every solver runs unchanged.
   Built with NBODY_WITH_NCCL (nvcc -DNBODY_WITH_NCCL ... -lnccl); without it devices > 1
   gives NBODY_ERR_UNAVAILABLE.
   ====================================================================================== */
#define NBODY__CU_MAX_DEVICES 16
#ifdef NBODY_WITH_NCCL
#include <nccl.h>
#endif

/* the phases of a tree evaluation on several GPUs, timed on each GPU by events at their edges
   (nbody__cuda_multi_phases): the positions' all-gather, the build, the walk, the accelerations'
   all-gather, the taking of its own */
#define NBODY__CU_MPHASES 5
struct nbody__cu_multi {
    int count;
    nbody__engine sub[NBODY__CU_MAX_DEVICES];      /* GPU k's engine: all n masses, its slice's buffers */
    size_t first[NBODY__CU_MAX_DEVICES + 1];
    nbody__r *pos[NBODY__CU_MAX_DEVICES];          /* 3n on each GPU: the gathered positions */
#ifdef NBODY_WITH_NCCL
    ncclComm_t comm[NBODY__CU_MAX_DEVICES];
#endif
    /* dense: the design (NBODY__CU_GATHER, NBODY__CU_SPLIT; NBODY__CU_UNDECIDED until the first
       evaluation times both); the split symmetric kernel's threads per block and bodies per thread */
    int tree, design, split_block, split_R;
    nbody__r *recv[NBODY__CU_MAX_DEVICES];         /* split: D x 3 x (GPU k's bodies) partial sums received */
    /* tree (nbody__cu_multi_tree_forces): GPU k walks the leaf positions [wfirst[k],
       wfirst[k + 1]) into lacc[k] (3 x the active bodies, leaf order), timed by wev[k];
       wtimed: the events hold walks not yet read; balance: move the boundaries by those times */
    size_t wfirst[NBODY__CU_MAX_DEVICES + 1];
    nbody__r *lacc[NBODY__CU_MAX_DEVICES];
    cudaEvent_t wev[NBODY__CU_MAX_DEVICES][NBODY__CU_MPHASES + 1];   /* the phases' edges, below */
    int wtimed, balance;
    /* the group walk (quadrupoles): GPU k's groups in depth-first order, gord[k] + nt (gord[k]:
       the group starting at each position, gflag[k] flags those), gsel[k]: their count, the
       counter and end of its range, then the D + 1 boundaries in positions; gbound: GPU 0's
       boundaries on the host, gbev their copy's event */
    unsigned int *gord[NBODY__CU_MAX_DEVICES], *gsel[NBODY__CU_MAX_DEVICES], *gbound;
    unsigned char *gflag[NBODY__CU_MAX_DEVICES];
    void *gtmp[NBODY__CU_MAX_DEVICES];
    size_t gtmpbytes;
    cudaEvent_t gbev;
    int gready;                                    /* gord holds the groups (they depend on n alone) */
    /* the divided build (nbody__cu_multi_tree_forces): the heap's level cutL holds 2^cutL
       subtrees; GPU k builds those of its run [crun[k], crun[k + 1]) and the others its walks
       may open (cmask[k]: 1 its own, 2 those, 0 none), the subtrees' roots are all-gathered
       (croot[k]: NBODY__CU_ROOT numbers each) and every GPU makes the levels above. divide: on
       (default) or off (the whole build on every GPU; tests, benchmarks); divided: this engine
       builds so (the active bodies are all the bodies, the Hilbert tree, enough levels);
       ready: a first build made nrange and the groups, which depend on n alone, on every GPU */
    int divide, divided, ready, cutL;
    size_t crun[NBODY__CU_MAX_DEVICES + 1];
    unsigned char *cmask[NBODY__CU_MAX_DEVICES];
    nbody__r *croot[NBODY__CU_MAX_DEVICES];
    struct nbody__cu_mherm *herm;                  /* NBODY_HERMITE (dense): on first use */
};
#define NBODY__CU_ROOT 24                          /* a root's numbers: node, lo, hi, (mass, radius), quadrupole x 2 */
#define NBODY__CU_UNDECIDED (-1)
#define NBODY__CU_GATHER 0
#define NBODY__CU_SPLIT 1
struct nbody__cu_mbuf { nbody__buf part[NBODY__CU_MAX_DEVICES]; };

static nbody__cu_multi *nbody__cu_mu(nbody__engine *e) { return (nbody__cu_multi *)e->impl; }
static size_t nbody__cu_mcount(const nbody__cu_multi *g, int k) { return g->first[k + 1] - g->first[k]; }

/* the part of the global range [off, off + len) GPU k owns, within component c: *rel (from
   off), *loc (in its buffer), returns the length (0: none) */
static size_t nbody__cu_mpiece(const nbody__cu_multi *g, size_t n, int k, size_t c, size_t off, size_t len, size_t *rel, size_t *loc) {
    size_t g0 = c * n + g->first[k], g1 = g0 + nbody__cu_mcount(g, k), end = off + len;
    if (g0 < off) g0 = off;
    if (g1 > end) g1 = end;
    if (g0 >= g1) return 0;
    *rel = g0 - off;
    *loc = c * nbody__cu_mcount(g, k) + (g0 - c * n - g->first[k]);
    return g1 - g0;
}

struct nbody__cu_mherm;
static void nbody__cu_mh_free(nbody__cu_multi *g, const nbody_desc *d);
static void nbody__cu_multi_shutdown(nbody__engine *e) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    if (!g) return;
    nbody__cu_mh_free(g, &e->desc);
    for (int k = 0; k < g->count; ++k) {
#ifdef NBODY_WITH_NCCL
        if (g->comm[k]) ncclCommDestroy(g->comm[k]);
#endif
        if (g->sub[k].impl) {
            (void)cudaSetDevice(nbody__cu(&g->sub[k])->dev);
            cudaFree(g->pos[k]);
            cudaFree(g->recv[k]);
            cudaFree(g->lacc[k]);
            cudaFree(g->gord[k]); cudaFree(g->gsel[k]); cudaFree(g->gflag[k]); cudaFree(g->gtmp[k]);
            cudaFree(g->cmask[k]); cudaFree(g->croot[k]);
            for (int q = 0; q <= NBODY__CU_MPHASES; ++q)
                if (g->wev[k][q]) cudaEventDestroy(g->wev[k][q]);
            if (k == 0 && g->gbev) cudaEventDestroy(g->gbev);
            nbody__cu_shutdown(&g->sub[k]);
        }
    }
    if (g->gbound) cudaFreeHost(g->gbound);
    (void)cudaGetLastError();
    e->desc.allocator.free(g, e->desc.allocator.user_data);
    e->impl = NULL;
}

static nbody_result nbody__cu_multi_alloc(nbody__engine *e, size_t len, nbody__buf *out) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__cu_mbuf *b = (nbody__cu_mbuf *)e->desc.allocator.alloc(sizeof *b, e->desc.allocator.user_data);
    nbody_result r = NBODY_OK;
    if (!b) return NBODY_ERR_OUT_OF_MEMORY;
    memset(b, 0, sizeof *b);
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {
        size_t cnt = nbody__cu_mcount(g, k), loc = len / e->n * cnt + (len % e->n < cnt ? len % e->n : cnt);
        r = nbody__cu_alloc(&g->sub[k], loc ? loc : 1, &b->part[k]);
    }
    if (r != NBODY_OK) {
        for (int k = 0; k < g->count; ++k) nbody__cu_release(&g->sub[k], b->part[k]);
        e->desc.allocator.free(b, e->desc.allocator.user_data);
        return r;
    }
    *out = b;
    return NBODY_OK;
}
static void nbody__cu_multi_release(nbody__engine *e, nbody__buf buf) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__cu_mbuf *b = (nbody__cu_mbuf *)buf;
    if (!b) return;
    for (int k = 0; k < g->count; ++k) nbody__cu_release(&g->sub[k], b->part[k]);
    e->desc.allocator.free(b, e->desc.allocator.user_data);
}
static nbody_result nbody__cu_multi_upload(nbody__engine *e, nbody__buf dst, size_t off, const nbody_real *src, size_t len) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody_result r = NBODY_OK;
    for (int k = 0; k < g->count; ++k)
        for (size_t c = off / e->n; len && c * e->n < off + len && r == NBODY_OK; ++c) {
            size_t rel, loc, l = nbody__cu_mpiece(g, e->n, k, c, off, len, &rel, &loc);
            if (l) r = nbody__cu_upload(&g->sub[k], ((nbody__cu_mbuf *)dst)->part[k], loc, src + rel, l);
        }
    return r;
}
static nbody_result nbody__cu_multi_download(nbody__engine *e, nbody_real *dst, nbody__buf src, size_t off, size_t len) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody_result r = NBODY_OK;
    for (int k = 0; k < g->count; ++k)
        for (size_t c = off / e->n; len && c * e->n < off + len && r == NBODY_OK; ++c) {
            size_t rel, loc, l = nbody__cu_mpiece(g, e->n, k, c, off, len, &rel, &loc);
            if (l) r = nbody__cu_download(&g->sub[k], dst + rel, ((nbody__cu_mbuf *)src)->part[k], loc, l);
        }
    return r;
}
static nbody_result nbody__cu_multi_set_masses(nbody__engine *e, const nbody_real *m) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody_result r = NBODY_OK;
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) r = nbody__cu_set_masses(&g->sub[k], m);
    return r;
}

/* GPU k's share of op: fn(sub-op) for each owned piece (offsets agree modulo n) */
template <class F> static nbody_result nbody__cu_multi_each(nbody__engine *e, const nbody__lincomb *op, F fn) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    size_t n = e->n;
    nbody_result r = NBODY_OK;
    if (op->y_off % n != op->out_off % n || op->k_off % n != op->out_off % n) return NBODY_ERR_INVALID_ARGUMENT;
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {
        size_t cnt = nbody__cu_mcount(g, k);
        for (size_t c = op->out_off / n; op->len && c * n < op->out_off + op->len && r == NBODY_OK; ++c) {
            size_t rel, loc, l = nbody__cu_mpiece(g, n, k, c, op->out_off, op->len, &rel, &loc);
            nbody__lincomb lop = *op;
            if (!l) continue;
            size_t b = loc - c * cnt;                    /* the piece's first body, from first[k] */
            lop.out = ((nbody__cu_mbuf *)op->out)->part[k]; lop.out_off = loc;
            lop.y = op->y ? ((nbody__cu_mbuf *)op->y)->part[k] : NULL; lop.y_off = (op->y_off + rel) / n * cnt + b;
            lop.comp = op->comp ? ((nbody__cu_mbuf *)op->comp)->part[k] : NULL;
            for (int j = 0; j < op->nk && j < NBODY__MAX_TERMS; ++j) lop.k[j] = ((nbody__cu_mbuf *)op->k[j])->part[k];
            lop.k_off = (op->k_off + rel) / n * cnt + b;
            lop.len = l;
            r = fn(&g->sub[k], &lop);
        }
    }
    return r;
}
static nbody_result nbody__cu_multi_lincomb(nbody__engine *e, const nbody__lincomb *op) {
    if (op->nk < 0 || op->nk > NBODY__MAX_TERMS) return NBODY_ERR_INVALID_ARGUMENT;
    return nbody__cu_multi_each(e, op, [](nbody__engine *s, const nbody__lincomb *l) { return nbody__cu_lincomb(s, l); });
}
static nbody_result nbody__cu_multi_error_norm(nbody__engine *e, const nbody__lincomb *op, nbody_real atol, nbody_real rtol,
                                               nbody_real *norm) {
    nbody_real worst = 0;
    if (op->nk < 0 || op->nk > NBODY__MAX_TERMS || !op->y) return NBODY_ERR_INVALID_ARGUMENT;
    nbody_result r = nbody__cu_multi_each(e, op, [&](nbody__engine *s, const nbody__lincomb *l) {
        nbody_real v = 0;
        nbody_result q = nbody__cu_error_norm(s, l, atol, rtol, &v);
        if (!(v <= worst) && worst == worst) worst = v;    /* the largest; NaN sticks */
        return q;
    });
    *norm = worst;
    return r;
}
static nbody_result nbody__cu_multi_all_finite(nbody__engine *e, nbody__buf b, size_t off, size_t len, int *finite) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody_result r = NBODY_OK;
    *finite = 1;
    for (int k = 0; k < g->count && r == NBODY_OK && *finite; ++k)
        for (size_t c = off / e->n; len && c * e->n < off + len && r == NBODY_OK && *finite; ++c) {
            size_t rel, loc, l = nbody__cu_mpiece(g, e->n, k, c, off, len, &rel, &loc);
            if (l) r = nbody__cu_all_finite(&g->sub[k], ((nbody__cu_mbuf *)b)->part[k], loc, l, finite);
        }
    return r;
}

#ifdef NBODY_WITH_NCCL
/* --------------------------------------------------------------------------------------
   The split symmetric kernel (dense, design NBODY__CU_SPLIT). The tournament of the
   symmetric kernel (nbody__cu_dense_sym: round 0 the m self tiles, then mp - 1 rounds of
   tile pairs) is cut into D shares of whole rounds, balanced by pair count (round 0 holds
   m T^2 / 2 pairs, every later round floor(m / 2) T^2): GPU k runs the rounds
   [rounds[k], rounds[k + 1]) against the gathered positions and holds partial sums for all
   n bodies (3n, its own buffer, its own flags). Then a reduce-scatter: GPU k receives every
   other GPU's partial sums of its bodies (NCCL send/receive in one group) and adds them in
   GPU order, p_0 + p_1 + ... + p_(D-1), one addition at a time, times G (and the common
   mass): a fixed order, so the same bits on every run; one GPU adds every round in one
   chain, D GPUs add D chains, so the sums differ from one GPU's by rounding (about 1e-16
   relative in double). The all-gather of positions stays: every GPU needs all of them.
   Chosen at the first evaluation against the all-gather with one-sided slices (below).
   -------------------------------------------------------------------------------------- */
static size_t nbody__cu_round_item(size_t m, size_t q) {   /* the first item of round q */
    return q == 0 ? 0 : m + (q - 1) * ((m + (m & 1)) / 2);
}
static void nbody__cu_split_rounds(size_t m, int D, size_t *rounds) {
    size_t mp = m + (m & 1);
    double w0 = 0.5 * (double)m, wq = (double)(m / 2), W = w0 + wq * (double)(mp - 1);
    rounds[0] = 0; rounds[D] = mp;
    for (int k = 1; k < D; ++k) {
        double want = W * k / D;
        double x = wq > 0 ? (want - w0) / wq + 1.5 : (double)mp;   /* the nearest b >= 1: w0 + (b - 1) wq ~ want */
        size_t b = want < 0.5 * w0 ? 0 : x < 1 ? 1 : x < (double)mp ? (size_t)x : mp;
        if (b > mp) b = mp;
        if (b < rounds[k - 1]) b = rounds[k - 1];
        rounds[k] = b;
    }
}

/* out[i] = scale x (the GPUs' partial sums of body first + i in GPU order): GPU k's own from
   own (3 x n), the others' from recv (D x 3 x cnt) */
template <class T> __global__ void nbody__cu_split_sum(const T *own, size_t n, size_t first, const T *recv, size_t cnt, int D,
                                                       int k, T scale, T *out) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < 3 * cnt; i += (size_t)gridDim.x * blockDim.x) {
        size_t c = i / cnt, b = i - c * cnt;
        T s = 0;
        for (int j = 0; j < D; ++j) {
            T v = j == k ? own[c * n + first + b] : recv[(size_t)j * 3 * cnt + i];
            s = j ? s + v : v;
        }
        out[i] = scale * s;
    }
}

/* the split's B and R as the kernel runs them (bodies per thread lowered where registers
   cap the block); 0: this block size cannot run the symmetric kernel */
static int nbody__cu_split_conf(nbody__engine *s, int B, int *R) {
    int uni = nbody__cu(s)->uni, r = *R >= 8 ? 8 : *R >= 4 ? 4 : *R >= 2 ? 2 : 1;
    while (r > 1 && B > nbody__cu_dense_max_threads(r, uni, 1)) r /= 2;
    *R = r;
    return B >= 32 && B % 32 == 0 && B <= nbody__cu_dense_max_threads(r, uni, 1);
}

/* GPU e's share, the items [item0, item1), into its c->partial (3n, unscaled sums);
   NBODY_ERR_UNAVAILABLE: the kernel cannot run here (shared memory, residency) */
static nbody_result nbody__cu_split_share(nbody__engine *e, int B, int R, size_t item0, size_t item1) {
    nbody__cuda *c = nbody__cu(e);
    const void *fn = nbody__cu_dense_fn(R, c->uni, 1);
    size_t n = e->n, items, smem, m = nbody__cu_sym_tiles(n, B, R, &items, &smem), G;
    nbody__r eps2 = e->desc.softening * e->desc.softening;
    int occ = 0, im = (int)m;
    nbody_result r;
    void *args[] = {&c->bodies, &c->partial, &c->flags, &n, &im, &item0, &item1, &eps2};
    if ((r = nbody__cu_reserve(e, &c->partial, &c->partial_len, 3 * n)) != NBODY_OK) return r;
    if ((r = nbody__cu_reserve(e, &c->flags, &c->flags_len, m)) != NBODY_OK) return r;
    NBODY__CU(cudaMemsetAsync(c->flags, 0, m * sizeof(int)));
    if (item0 > 0 || item1 <= item0) NBODY__CU(cudaMemsetAsync(c->partial, 0, 3 * n * sizeof(nbody__r)));   /* no round 0 here */
    if (item1 <= item0) return NBODY_OK;
    if (cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, B, smem) != cudaSuccess || occ < 1) {
        (void)cudaGetLastError();
        return NBODY_ERR_UNAVAILABLE;
    }
    G = (size_t)occ * (size_t)c->sms;
    if (G > item1 - item0) G = item1 - item0;
    cudaError_t err = cudaLaunchCooperativeKernel(fn, dim3((unsigned int)G), dim3((unsigned int)B), args, smem, 0);
    if (err == cudaErrorCooperativeLaunchTooLarge || err == cudaErrorNotSupported) {
        (void)cudaGetLastError();
        return NBODY_ERR_UNAVAILABLE;
    }
    NBODY__CU(err);
    return NBODY_OK;
}

static void nbody__cu_mlog_nccl(nbody__engine *e, const char *what, ncclResult_t nr) {
    if (e->desc.log.func) {
        char line[256];
        snprintf(line, sizeof line, "nbody cuda: NCCL %s failed: %s", what, ncclGetErrorString(nr));
        e->desc.log.func(NBODY_LOG_ERROR, line, e->desc.log.user_data);
    }
}

/* the reduce-scatter: every GPU's partial sums of GPU k's bodies to GPU k, added there in GPU
   order into f's accelerations */
static nbody_result nbody__cu_split_exchange(nbody__engine *e, nbody__cu_mbuf *f) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    size_t n = e->n;
    const int D = g->count;
    ncclDataType_t type = sizeof(nbody__r) == sizeof(float) ? ncclFloat : ncclDouble;
    ncclResult_t nr;
    nbody_result r = NBODY_OK;
    for (int k = 0; k < D && r == NBODY_OK; ++k)
        if (!g->recv[k] && (r = nbody__cu_enter(&g->sub[k])) == NBODY_OK)
            r = nbody__cu_malloc(&g->sub[k], &g->recv[k], (size_t)D * 3 * nbody__cu_mcount(g, k));
    if (r != NBODY_OK) return r;
    nr = ncclGroupStart();
    for (int k = 0; k < D && nr == ncclSuccess; ++k) {
        size_t cnt = nbody__cu_mcount(g, k);
        for (int j = 0; j < D && cnt && nr == ncclSuccess; ++j)
            for (size_t c = 0; c < 3 && j != k && nr == ncclSuccess; ++c) {
                nr = ncclSend(nbody__cu(&g->sub[j])->partial + c * n + g->first[k], cnt, type, k, g->comm[j], 0);
                if (nr == ncclSuccess) nr = ncclRecv(g->recv[k] + ((size_t)j * 3 + c) * cnt, cnt, type, j, g->comm[k], 0);
            }
    }
    {
        ncclResult_t ne = ncclGroupEnd();
        if (nr == ncclSuccess) nr = ne;
    }
    if (nr != ncclSuccess) { nbody__cu_mlog_nccl(e, "reduce-scatter of partial forces", nr); return NBODY_ERR_DEVICE; }
    for (int k = 0; k < D && r == NBODY_OK; ++k) {
        nbody__engine *s = &g->sub[k];
        nbody__cuda *c = nbody__cu(s);
        size_t cnt = nbody__cu_mcount(g, k);
        nbody__r scale = c->uni ? s->desc.G * c->mass1 : s->desc.G;
        if (!cnt || (r = nbody__cu_enter(s)) != NBODY_OK) continue;
        nbody__cu_split_sum<<<nbody__cu_blocks(3 * cnt, 256), 256>>>(c->partial, n, g->first[k], g->recv[k], cnt, D, k, scale,
                                                                     (nbody__r *)f->part[k] + 3 * cnt);
        r = nbody__cu_check(s, cudaGetLastError(), "split sum");
    }
    return r;
}

/* f(y) by the split symmetric kernel, the positions already gathered */
static nbody_result nbody__cu_split_forces(nbody__engine *e, nbody__cu_mbuf *y, nbody__cu_mbuf *f) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    size_t n = e->n, items, smem, rounds[NBODY__CU_MAX_DEVICES + 1], m;
    int B = g->split_block, R = g->split_R;
    nbody_result r = NBODY_OK;
    if ((r = nbody__cu_enter(&g->sub[0])) != NBODY_OK) return r;
    if (!nbody__cu_split_conf(&g->sub[0], B, &R)) return NBODY_ERR_UNAVAILABLE;
    g->split_R = R;
    m = nbody__cu_sym_tiles(n, B, R, &items, &smem);
    nbody__cu_split_rounds(m, g->count, rounds);
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {
        nbody__engine *s = &g->sub[k];
        nbody__cuda *c = nbody__cu(s);
        size_t cnt = nbody__cu_mcount(g, k);
        if ((r = nbody__cu_enter(s)) != NBODY_OK) break;
        if (cnt) r = nbody__cu_check(s, cudaMemcpyAsync(f->part[k], (const nbody__r *)y->part[k] + 3 * cnt, 3 * cnt * sizeof(nbody__r),
                                                        cudaMemcpyDeviceToDevice, 0), "copy");   /* dx/dt = v */
        if (r != NBODY_OK) break;
        nbody__cu_pack_pos<<<nbody__cu_blocks(n, 256), 256>>>(g->pos[k], c->m, c->bodies, n);
        if ((r = nbody__cu_check(s, cudaGetLastError(), "pack")) != NBODY_OK) break;
        r = nbody__cu_split_share(s, B, R, nbody__cu_round_item(m, rounds[k]), nbody__cu_round_item(m, rounds[k + 1]));
    }
    if (r == NBODY_OK) r = nbody__cu_split_exchange(e, f);
    return r;
}

static double nbody__cu_wall(void) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static nbody_result nbody__cu_msync(nbody__engine *e) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody_result r = NBODY_OK;
    for (int k = 0; k < g->count && r == NBODY_OK; ++k)
        if ((r = nbody__cu_enter(&g->sub[k])) == NBODY_OK) r = nbody__cu_check(&g->sub[k], cudaDeviceSynchronize(), "synchronize");
    return r;
}

/* The first dense evaluation (no block_size given): the two designs measured on the real data.
   On GPU 0, against the whole problem, the single-GPU tuner's timing (nbody__cu_time_one, a
   sample scaled to the whole): the one-sided kernel as the slices run it (256 threads, 4
   bodies a thread in float, 2 in double) gives the all-gather design's time a GPU, C1 / D;
   every symmetric candidate, the best Cs gives the split's, Cs / D plus the reduce-scatter,
   timed on all GPUs (the best of two). The smaller estimate wins, logged at INFO. */
static nbody_result nbody__cu_multi_choose(nbody__engine *e, nbody__cu_mbuf *f) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__engine *s0 = &g->sub[0];
    nbody__cuda *c0 = nbody__cu(s0);
    nbody__cu_candidate cand[NBODY__CU_MAX_CANDIDATES];
    cudaEvent_t ev[3] = {NULL, NULL, NULL};
    nbody__r *tmp = NULL;
    size_t n = e->n;
    const int D = g->count, Rdef = sizeof(nbody__r) == sizeof(float) ? 4 : 2;
    double c1 = -1, cs = -1, tx = -1, split_ms, gather_ms;
    int count, B = 0, R = 0;
    nbody_result r;
    g->design = NBODY__CU_GATHER;
    if (nbody__cu_nsrc(e) != n) return NBODY_OK;        /* test particles: the one-sided slices */
    if ((r = nbody__cu_enter(s0)) != NBODY_OK) return r;
    nbody__cu_pack_pos<<<nbody__cu_blocks(n, 256), 256>>>(g->pos[0], c0->m, c0->bodies, n);
    r = nbody__cu_check(s0, cudaGetLastError(), "pack");
    if (r == NBODY_OK) r = nbody__cu_malloc(s0, &tmp, 6 * n);
    for (int k = 0; k < 3 && r == NBODY_OK; ++k) r = nbody__cu_check(s0, cudaEventCreate(&ev[k]), "cudaEventCreate");
    count = r == NBODY_OK ? nbody__cu_candidates(s0, cand) : 0;
    for (int i = 0; i < count && r == NBODY_OK; ++i) {
        double est = -1;
        if (!cand[i].sym && !(cand[i].block == 256 && cand[i].bodies_per_thread == Rdef)) continue;
        r = nbody__cu_time_one(s0, &cand[i], ev, tmp, &est);
        if (r != NBODY_OK || est < 0 || (cand[i].sym && !c0->sym)) continue;   /* a symmetric one that gave way */
        if (!cand[i].sym) c1 = est;
        else if (cs < 0 || est < cs) { cs = est; B = cand[i].block; R = cand[i].bodies_per_thread; }
    }
    c0->sym = 0;
    for (int k = 0; k < 3; ++k)
        if (ev[k]) cudaEventDestroy(ev[k]);
    cudaFree(tmp);
    if (r != NBODY_OK) return r;
    if (cs < 0 || c1 < 0) {
        nbody__cu_log(e, NBODY_LOG_INFO, "nbody cuda: %d GPUs: all-gather and one-sided slices (no symmetric kernel for n = %lu)", D,
                      (unsigned long)n);
        return NBODY_OK;
    }
    for (int k = 0; k < D && r == NBODY_OK; ++k) {       /* the exchange's buffers, zeroed */
        nbody__engine *s = &g->sub[k];
        nbody__cuda *c = nbody__cu(s);
        if ((r = nbody__cu_enter(s)) == NBODY_OK) r = nbody__cu_reserve(s, &c->partial, &c->partial_len, 3 * n);
        if (r == NBODY_OK) r = nbody__cu_check(s, cudaMemset(c->partial, 0, 3 * n * sizeof(nbody__r)), "cudaMemset");
    }
    for (int rep = 0; rep < 3 && r == NBODY_OK; ++rep) {   /* a warm-up, then the best of two */
        double t0 = nbody__cu_wall();
        r = nbody__cu_split_exchange(e, f);
        if (r == NBODY_OK) r = nbody__cu_msync(e);
        if (r == NBODY_OK && rep > 0 && (tx < 0 || 1e3 * (nbody__cu_wall() - t0) < tx)) tx = 1e3 * (nbody__cu_wall() - t0);
    }
    if (r != NBODY_OK) return r;
    split_ms = cs / D + tx;
    gather_ms = c1 / D;
    g->split_block = B; g->split_R = R;
    g->design = split_ms < gather_ms ? NBODY__CU_SPLIT : NBODY__CU_GATHER;
    nbody__cu_log(e, NBODY_LOG_INFO,
                  "nbody cuda: %d GPUs: %s (estimated ms a force evaluation: split symmetric kernel, %d threads x %d bodies, "
                  "%.3g + reduce-scatter %.3g; all-gather and one-sided slices %.3g)",
                  D, g->design == NBODY__CU_SPLIT ? "the split symmetric kernel with a reduce-scatter" : "all-gather and one-sided slices",
                  B, R, cs / D, tx, gather_ms);
    return NBODY_OK;
}
#endif

#ifdef NBODY_WITH_NCCL
/* a GPU's bodies' accelerations from the gathered ones: f[3m + c m + t] = acc[c nt + q] for the
   bodies t < mt of its slice (m in all), q the depth-first position pos[t] of body t (POS) or its
   leaf (leaf order). Reads scattered, writes in order: four H200s at 2^26, 1.38 ms where
   scanning every leaf and writing scattered took 3.05 (the positions' scattered writes in the
   leaves' pass cost about as much, bench/results/tree-4gpu-divided-2026-11-27.md). */
template <class T, bool POS>
__global__ void nbody__cu_take(const unsigned int *pos, const T *acc, size_t nt, size_t P, size_t mt, size_t m, T *f) {
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < mt; t += (size_t)gridDim.x * blockDim.x) {
        size_t q = POS ? (size_t)pos[t] : nbody__cu_pos_leaf(pos[t], nt, P);
        f[3 * m + t] = acc[q]; f[4 * m + t] = acc[nt + q]; f[5 * m + t] = acc[2 * nt + q];
    }
}

/* The group walk by ranges: the groups (count[0] of them, nodes in node order) listed by the
   depth-first position where each starts: gid[p] = the group starting at p, flag[p] = 1 */
__global__ void nbody__cu_group_starts(const unsigned int *groups, const unsigned int *count, const uint2 *nrange, unsigned char *flag,
                                       unsigned int *gid) {
    unsigned int cnt = count[0];
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < cnt; t += (size_t)gridDim.x * blockDim.x) {
        unsigned int gn = groups[t], p = nrange[gn].x;
        flag[p] = 1;
        gid[p] = gn;
    }
}
struct nbody__cu_wbounds { unsigned int w[NBODY__CU_MAX_DEVICES + 1]; };
/* sel = (count of the groups ord[] in depth-first order, then written here:) the first group
   and the end of GPU k's range, then the D + 1 boundaries in positions: the groups whose
   first position lies in [w[j], w[j + 1]) are GPU j's, its bodies the positions
   [S[j], S[j + 1]) (S[0] = 0, S[D] = nt). One warp: lane j searches boundary j. */
__global__ void nbody__cu_group_bounds(const unsigned int *ord, const uint2 *nrange, unsigned int nt, nbody__cu_wbounds w, int D, int k,
                                       unsigned int *sel) {
    unsigned int cnt = sel[0], j = threadIdx.x, lo = 0, hi = cnt, S = nt;
    if ((int)j <= D) {
        while (lo < hi) {          /* the first group starting at or past w[j] */
            unsigned int mid = lo + (hi - lo) / 2;
            if (nrange[ord[mid]].x < w.w[j]) lo = mid + 1; else hi = mid;
        }
        if (lo < cnt) S = nrange[ord[lo]].x;
        sel[3 + j] = S;
        if ((int)j == k) sel[1] = lo;
        if ((int)j == k + 1) sel[2] = lo;
    }
}

/* GPU k's groups in depth-first order, its range of them [w[k], w[k + 1]) (positions) set up as
   the walk's counter and end, the boundaries S copied to the host by GPU 0 (g->gbev) */
static nbody_result nbody__cu_multi_groups(nbody__engine *e, int k) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__engine *s = &g->sub[k];
    nbody__cuda *c = nbody__cu(s);
    size_t nt = nbody__cu_nsrc(e), bytes = g->gtmpbytes;
    nbody__cu_wbounds w;
    for (int j = 0; j <= g->count; ++j) w.w[j] = (unsigned int)g->wfirst[j];
    if (!g->gready) {              /* the groups in depth-first order: made once (n alone decides them) */
        NBODY__CU(cudaMemsetAsync(g->gflag[k], 0, nt));
        nbody__cu_group_starts<<<nbody__cu_blocks(nt, 256), 256>>>(c->gw_groups, c->gw_next + 1, c->nrange, g->gflag[k], g->gord[k]);
        NBODY__CU(cudaGetLastError());
        NBODY__CU(cub::DeviceSelect::Flagged(g->gtmp[k], bytes, g->gord[k], g->gflag[k], g->gord[k] + nt, g->gsel[k], (int)nt));
    }
    nbody__cu_group_bounds<<<1, 32>>>(g->gord[k] + nt, c->nrange, (unsigned int)nt, w, g->count, k, g->gsel[k]);
    NBODY__CU(cudaGetLastError());
    if (k == 0) {
        NBODY__CU(cudaMemcpyAsync(g->gbound, g->gsel[k] + 3, ((size_t)g->count + 1) * sizeof(unsigned int), cudaMemcpyDeviceToHost, 0));
        NBODY__CU(cudaEventRecord(g->gbev, 0));
    }
    return NBODY_OK;
}

/* The divided build's pieces. A subtree's root r (level L: node 2^L + r) packed into
   NBODY__CU_ROOT numbers at out + r NBODY__CU_ROOT, or (unpack) from there into the tree */
template <class T>
__global__ void nbody__cu_root_pack(size_t r0, size_t r1, unsigned int L, nbody__v4<T> *node, T *nmass, nbody__v4<T> *lo, nbody__v4<T> *hi,
                                    T *rad, nbody__v4<T> *quad, T *out, int unpack) {
    for (size_t r = r0 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < r1; r += (size_t)gridDim.x * blockDim.x) {
        size_t i = ((size_t)1 << L) + r;
        nbody__v4<T> *o = (nbody__v4<T> *)(out + r * NBODY__CU_ROOT);
        if (unpack) {
            node[i] = o[0]; lo[i] = o[1]; hi[i] = o[2]; nmass[i] = o[3].x; rad[i] = o[3].y;
            if (quad) { quad[2 * i] = o[4]; quad[2 * i + 1] = o[5]; }
        } else {
            nbody__v4<T> mr = {nmass[i], rad[i], (T)0, (T)0};
            o[0] = node[i]; o[1] = lo[i]; o[2] = hi[i]; o[3] = mr;
            if (quad) { o[4] = quad[2 * i]; o[5] = quad[2 * i + 1]; }
        }
    }
}
/* whether the box (l, h) may see the node (centre q.xyz, squared critical distance q.w) opened:
   the walks' test of a group's box (a body's distance is at least its box's) */
template <class T> __device__ __forceinline__ bool nbody__cu_box_opens(nbody__v4<T> q, nbody__v4<T> l, nbody__v4<T> h) {
    T ex = fmax(fmax(q.x - h.x, l.x - q.x), (T)0), ey = fmax(fmax(q.y - h.y, l.y - q.y), (T)0);
    T ez = fmax(fmax(q.z - h.z, l.z - q.z), (T)0);
    return !(fma(ex, ex, fma(ey, ey, ez * ez)) > q.w);
}
/* mask[f] = 2 for each subtree f outside the run [s0, s1) whose root a walk of the run's bodies
   may open: the root is not accepted from the box of some subtree of the run. Those boxes are
   tested where the box of their level-Lb ancestor (nodes [b0, b1] of level Lb hold the run) is
   not accepted. A box holds every walking body and group in it, and its distance from the
   root's centre is computed as the walks compute a body's or a group's (rounding is
   monotonic), so a root accepted from every box is accepted by every walk of the run, which
   then never reads below it. Lanes: (subtree, 32 level-Lb boxes). */
template <class T>
__global__ void nbody__cu_cut_open(const nbody__v4<T> *node, const nbody__v4<T> *lo, const nbody__v4<T> *hi, unsigned int L, unsigned int Lb,
                                   size_t s0, size_t s1, size_t b0, size_t b1, unsigned char *mask) {
    size_t chunks = (b1 - b0 + 32) / 32, items = chunks << L, R = (size_t)1 << L;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < items; t += (size_t)gridDim.x * blockDim.x) {
        size_t f = t / chunks, b = b0 + (t % chunks) * 32, be = b + 32 <= b1 + 1 ? b + 32 : b1 + 1;
        bool opens = false;
        if (f >= s0 && f < s1) continue;
        nbody__v4<T> q = node[R + f];
        for (; b < be && !opens; ++b) {
            size_t i = ((size_t)1 << Lb) + b, r0 = b << (L - Lb), r1 = (b + 1) << (L - Lb);
            if (!nbody__cu_box_opens<T>(q, lo[i], hi[i])) continue;
            for (size_t r = r0 > s0 ? r0 : s0; r < r1 && r < s1 && !opens; ++r) opens = nbody__cu_box_opens<T>(q, lo[R + r], hi[R + r]);
        }
        if (opens) mask[f] = 2;
    }
}

/* the first depth-first position of subtree r of level L (r = 2^L: the end, nt) */
static size_t nbody__cu_cut_pos(size_t r, int L, int depth, size_t nt, size_t P) {
    size_t jb = (((size_t)1 << L) + r) << (depth - L);    /* its leftmost descendant on the bottom level */
    if (r >= ((size_t)1 << L)) return nt;
    return jb < 2 * nt ? jb - P : (2 * nt - P) + ((jb >> 1) - nt);   /* or a leaf one level up */
}
/* the leaves (leaf order: node nt + k) at the depth-first positions [a, b): up to two ranges
   [k[0], k[1]), [k[2], k[3]); returns how many */
static int nbody__cu_pos_leaves(size_t a, size_t b, size_t nt, size_t P, size_t *k) {
    size_t m = 2 * nt - P;         /* positions [0, m): the bottom level's leaves P - nt + p; [m, nt): leaves p - m */
    int c = 0;
    if (a < b && a < m) { k[0] = P - nt + a; k[1] = P - nt + (b < m ? b : m); c = 1; }
    if (a < b && b > m) { k[2 * c] = (a > m ? a : m) - m; k[2 * c + 1] = b - m; c++; }
    return c;
}
/* the walks' boundaries (positions) moved to the nearest subtree boundaries: the runs crun */
static void nbody__cu_cut_snap(nbody__cu_multi *g, size_t nt, size_t P, int depth) {
    size_t R = (size_t)1 << g->cutL;
    g->crun[0] = 0; g->crun[g->count] = R;
    for (int k = 1; k < g->count; ++k) {
        size_t lo = 0, hi = R;     /* the first subtree starting at or past wfirst[k] */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (nbody__cu_cut_pos(mid, g->cutL, depth, nt, P) < g->wfirst[k]) lo = mid + 1; else hi = mid;
        }
        if (lo > 0 && g->wfirst[k] - nbody__cu_cut_pos(lo - 1, g->cutL, depth, nt, P) < nbody__cu_cut_pos(lo, g->cutL, depth, nt, P) - g->wfirst[k]) lo--;
        g->crun[k] = lo < g->crun[k - 1] ? g->crun[k - 1] : lo;
    }
    for (int k = 0; k <= g->count; ++k) g->wfirst[k] = nbody__cu_cut_pos(g->crun[k], g->cutL, depth, nt, P);
}
/* GPU k's subtrees: its own run, their roots packed for the all-gather */
static nbody_result nbody__cu_cut_own(nbody__engine *e, int k, size_t nt, size_t P) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__engine *s = &g->sub[k];
    nbody__cuda *c = nbody__cu(s);
    size_t s0 = g->crun[k], s1 = g->crun[k + 1];
    nbody__cu_cut own = {g->cmask[k], (unsigned int)g->cutL, 1};
    nbody_result r;
    NBODY__CU(cudaMemsetAsync(g->cmask[k], 0, (size_t)1 << g->cutL));
    if (s1 > s0) NBODY__CU(cudaMemsetAsync(g->cmask[k] + s0, 1, s1 - s0));
    if ((r = nbody__cu_tree_leaves(s, nt, P, own)) != NBODY_OK) return r;
    if (c->bev[2]) NBODY__CU(cudaEventRecord(c->bev[2], 0));
    if ((r = nbody__cu_tree_levels(s, nt, g->cutL, c->depth, own)) != NBODY_OK) return r;
    if (c->bev[3]) NBODY__CU(cudaEventRecord(c->bev[3], 0));
    if (s1 > s0) {
        nbody__cu_root_pack<nbody__r><<<nbody__cu_blocks(s1 - s0, 256), 256>>>(s0, s1, (unsigned int)g->cutL, c->node, c->nmass, c->lo, c->hi,
                                                                               c->rad, c->nquad, g->croot[k], 0);
        NBODY__CU(cudaGetLastError());
    }
    return NBODY_OK;
}
/* GPU k, after the roots' all-gather: the levels above them, then the subtrees its walks may open */
static nbody_result nbody__cu_cut_rest(nbody__engine *e, int k, size_t nt, size_t P) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__engine *s = &g->sub[k];
    nbody__cuda *c = nbody__cu(s);
    size_t R = (size_t)1 << g->cutL, s0 = g->crun[k], s1 = g->crun[k + 1];
    int L = g->cutL, Lb = L >= 3 ? L - 3 : 0;
    nbody__cu_cut all = {NULL, 0, 0}, open = {g->cmask[k], (unsigned int)L, 2};
    nbody_result r;
    nbody__cu_root_pack<nbody__r><<<nbody__cu_blocks(R, 256), 256>>>(0, R, (unsigned int)L, c->node, c->nmass, c->lo, c->hi, c->rad, c->nquad,
                                                                     g->croot[k], 1);
    NBODY__CU(cudaGetLastError());
    if ((r = nbody__cu_tree_levels(s, nt, 0, L, all)) != NBODY_OK) return r;
    if (s1 > s0) {
        size_t b0 = s0 >> (L - Lb), b1 = (s1 - 1) >> (L - Lb), items = ((b1 - b0 + 32) / 32) << L;
        nbody__cu_cut_open<nbody__r><<<nbody__cu_blocks(items, 256), 256>>>(c->node, c->lo, c->hi, (unsigned int)L, (unsigned int)Lb, s0, s1, b0,
                                                                             b1, g->cmask[k]);
        NBODY__CU(cudaGetLastError());
        if ((r = nbody__cu_tree_leaves(s, nt, P, open)) != NBODY_OK) return r;
        if ((r = nbody__cu_tree_levels(s, nt, L + 1, c->depth, open)) != NBODY_OK) return r;
    }
    if (c->bev[4]) NBODY__CU(cudaEventRecord(c->bev[4], 0));
    return NBODY_OK;
}
/* the subtrees' roots from their builders to every GPU (in place) */
static nbody_result nbody__cu_cut_gather(nbody__engine *e) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    ncclDataType_t type = sizeof(nbody__r) == sizeof(float) ? ncclFloat : ncclDouble;
    ncclResult_t nr = ncclGroupStart();
    for (int d = 0; d < g->count && nr == ncclSuccess; ++d)
        for (int j = 0; j < g->count && nr == ncclSuccess; ++j) {
            size_t s0 = g->crun[j], s1 = g->crun[j + 1];
            nbody__r *a = g->croot[d] + s0 * NBODY__CU_ROOT;
            if (s1 > s0) nr = ncclBroadcast(a, a, (s1 - s0) * NBODY__CU_ROOT, type, j, g->comm[d], 0);
        }
    if (ncclGroupEnd() != ncclSuccess || nr != ncclSuccess) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: NCCL exchange of the subtrees' roots failed: %s", ncclGetErrorString(nr));
        return NBODY_ERR_DEVICE;
    }
    return NBODY_OK;
}
/* whether this evaluation divides the build (then the walks' boundaries are depth-first
   positions at subtree boundaries), its level cutL; the masks and roots' buffers on first use */
static nbody_result nbody__cu_cut_setup(nbody__engine *e, size_t nt, int depth) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody_result r = NBODY_OK;
    /* subtrees of 512 to 1024 bodies, at least 128: the groups (at most 64 bodies) lie inside
       them, and a node summed directly (its bodies, at most the leaf bucket) too */
    int L = depth - 10 >= 1 ? depth - 10 : 1;
    g->divided = g->divide && nt == e->n && !nbody__cu_tree_morton && depth >= 9 &&
                 (size_t)nbody__cu(&g->sub[0])->bucket < ((size_t)1 << (depth - L - 1));
    if (nbody__cu_tree_morton) g->ready = g->gready = 0;
    if (!g->divided) return NBODY_OK;
    g->cutL = L;
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {
        nbody__engine *s = &g->sub[k];
        if (g->cmask[k] || (r = nbody__cu_enter(s)) != NBODY_OK) continue;
        r = nbody__cu_malloc(s, &g->cmask[k], (size_t)1 << g->cutL);
        if (r == NBODY_OK) r = nbody__cu_malloc(s, &g->croot[k], ((size_t)NBODY__CU_ROOT) << g->cutL);
    }
    return r;
}

/* The tree on several GPUs, one tree: a body's walk, or its group's, is the one GPU's walk of
   the same tree, so the forces are one GPU's bit for bit whatever GPU walks it. Each GPU walks
   a compact stretch of the Hilbert curve: monopoles the leaves of a range of depth-first
   positions (or, without the divided build, of leaf order), quadrupoles (the group walk) the
   groups that start in it, writing the accelerations in that order; an all-gather of those
   (3 x the active bodies) gives every GPU all of them, and each takes its own bodies' (and
   walks its own test particles). The boundaries move halfway to equal walk times
   (nbody__dist_rebalance, as the CPU tree's under MPI), from the walks' GPU times: the cost of
   a body varies with its place (the core of a cluster opens more nodes), so equal counts are
   not equal work.
   The build is divided (nbody__cu_cut_*): every GPU sorts all the gathered positions (the same
   order), the heap's level L = depth - 10 (at least 1) cuts the tree into 2^L subtrees whose
   bodies are runs of depth-first positions, and GPU k builds the subtrees of its walks' run (the boundaries
   snap to subtree boundaries), all-gathers their roots, makes the levels above them (the same
   nodes from the same roots on every GPU), then builds the other subtrees whose roots its
   walks may open (nbody__cu_cut_open); the others' insides it never reads. Each node it reads
   is made by the same kernel from the same numbers as one GPU's, so the bits stay one GPU's.
   The first evaluation builds the whole tree on every GPU: the node ranges and groups, which
   depend on n alone, are kept from it. Without the divided build (test particles, which walk
   from anywhere; small trees) every GPU builds the whole tree. The host waits once an
   evaluation, for the group boundaries (GPU 0's build), while the walks run. */
static nbody_result nbody__cu_multi_tree_forces(nbody__engine *e, nbody__cu_mbuf *y, nbody__cu_mbuf *f) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    size_t nt = nbody__cu_nsrc(e), P = 1, pn;
    ncclDataType_t type = sizeof(nbody__r) == sizeof(float) ? ncclFloat : ncclDouble;
    ncclResult_t nr;
    nbody_result r = NBODY_OK;
    const int quad = nbody__cu(&g->sub[0])->nquad != NULL;
    int depth = 0, cut;
    while (P * 2 <= 2 * nt - 1) { P *= 2; depth++; }
    if ((r = nbody__cu_cut_setup(e, nt, depth)) != NBODY_OK) return r;
    cut = g->divided && g->ready;
    if (g->wtimed) {               /* the last walks' times (they ended long ago, or end soon) */
        double t[NBODY__CU_MAX_DEVICES];
        int ok = 1;
        for (int k = 0; k < g->count && ok; ++k) {
            float ms = -1;
            ok = cudaEventSynchronize(g->wev[k][3]) == cudaSuccess && cudaEventElapsedTime(&ms, g->wev[k][2], g->wev[k][3]) == cudaSuccess;
            t[k] = ms;
        }
        (void)cudaGetLastError();
        if (ok && g->balance) nbody__dist_rebalance(g->wfirst, t, g->count, 1);
        g->wtimed = 0;
    }
    if (g->divided) nbody__cu_cut_snap(g, nt, P, depth);
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {
        nbody__engine *s = &g->sub[k];
        size_t m = nbody__cu_mcount(g, k);
        if ((r = nbody__cu_enter(s)) != NBODY_OK) break;
        NBODY__CU(cudaEventRecord(g->wev[k][1], 0));
        if (m) NBODY__CU(cudaMemcpyAsync(f->part[k], (const nbody__r *)y->part[k] + 3 * m, 3 * m * sizeof(nbody__r), cudaMemcpyDeviceToDevice, 0));
        if (!cut) r = nbody__cu_tree_build(s, g->pos[k]);
        else if ((r = nbody__cu_tree_sort(s, g->pos[k], &pn, &P)) == NBODY_OK) r = nbody__cu_cut_own(e, k, nt, P);
    }
    if (r == NBODY_OK && cut) r = nbody__cu_cut_gather(e);
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {
        nbody__engine *s = &g->sub[k];
        nbody__cuda *c = nbody__cu(s);
        size_t w0 = g->wfirst[k], cnt = g->wfirst[k + 1] - w0, lr[4];
        unsigned int B;
        if ((r = nbody__cu_enter(s)) != NBODY_OK) break;
        if (cut && (r = nbody__cu_cut_rest(e, k, nt, P)) != NBODY_OK) break;
        nbody__cu_slice_defaults(c);
        B = (unsigned int)c->block;
        if (quad && (r = nbody__cu_multi_groups(e, k)) != NBODY_OK) break;
        NBODY__CU(cudaEventRecord(g->wev[k][2], 0));
        if (quad) r = nbody__cu_group_launch(s, (int)B, c->walk, 1, g->gord[k] + nt, g->gsel[k] + 1, NULL, g->lacc[k], nt);
        else if (g->divided) {     /* the positions [w0, w0 + cnt): one or two ranges of leaves */
            for (int q = 0, nq = nbody__cu_pos_leaves(w0, w0 + cnt, nt, P, lr); q < nq && r == NBODY_OK; ++q)
                r = nbody__cu_walk_launch(s, c->walk, (unsigned int)((lr[2 * q + 1] - lr[2 * q] + B - 1) / B), B, NULL, lr[2 * q],
                                          lr[2 * q + 1] - lr[2 * q], NULL, 0, g->lacc[k], nt, 1);
        } else if (cnt) r = nbody__cu_walk_launch(s, c->walk, (unsigned int)((cnt + B - 1) / B), B, NULL, w0, cnt, NULL, 0, g->lacc[k], nt, 1);
        if (r != NBODY_OK) break;
        NBODY__CU(cudaEventRecord(g->wev[k][3], 0));
    }
    if (r != NBODY_OK) return r;
    g->wtimed = 1;
    if (quad) g->gready = !nbody__cu_tree_morton;
    if (g->divided) g->ready = 1;  /* nrange and the groups are made on every GPU */
    if (quad) {                    /* the walked ranges: the boundaries at the groups' starts */
        if ((r = nbody__cu_enter(&g->sub[0])) != NBODY_OK) return r;
        if ((r = nbody__cu_check(&g->sub[0], cudaEventSynchronize(g->gbev), "group boundaries")) != NBODY_OK) return r;
        for (int k = 0; k <= g->count; ++k) g->wfirst[k] = g->gbound[k];
    }
    nr = ncclGroupStart();         /* the accelerations' all-gather: each range from its walker */
    for (int d = 0; d < g->count && nr == ncclSuccess; ++d)
        for (int k = 0; k < g->count && nr == ncclSuccess; ++k) {
            size_t lr[4], w0 = g->wfirst[k], cnt = g->wfirst[k + 1] - w0;
            int nq = 1;
            lr[0] = w0; lr[1] = w0 + cnt;
            if (g->divided && !quad) nq = nbody__cu_pos_leaves(w0, w0 + cnt, nt, P, lr);
            for (int q = 0; q < nq && nr == ncclSuccess; ++q)
                for (size_t c = 0; c < 3 && lr[2 * q + 1] > lr[2 * q] && nr == ncclSuccess; ++c) {
                    nbody__r *a = g->lacc[d] + c * nt + lr[2 * q];
                    nr = ncclBroadcast(a, a, lr[2 * q + 1] - lr[2 * q], type, k, g->comm[d], 0);   /* in place */
                }
        }
    if (ncclGroupEnd() != ncclSuccess || nr != ncclSuccess) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: NCCL exchange of the tree's accelerations failed: %s", ncclGetErrorString(nr));
        return NBODY_ERR_DEVICE;
    }
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {
        nbody__engine *s = &g->sub[k];
        nbody__cuda *c = nbody__cu(s);
        size_t m = nbody__cu_mcount(g, k);
        if ((r = nbody__cu_enter(s)) != NBODY_OK) break;
        NBODY__CU(cudaEventRecord(g->wev[k][4], 0));
        if (c->ownm && quad)
            nbody__cu_take<nbody__r, true><<<nbody__cu_blocks(c->ownm, 256), 256>>>(c->ownpos, g->lacc[k], nt, P, c->ownm, m, (nbody__r *)f->part[k]);
        else if (c->ownm)
            nbody__cu_take<nbody__r, false><<<nbody__cu_blocks(c->ownm, 256), 256>>>(c->ownpos, g->lacc[k], nt, P, c->ownm, m, (nbody__r *)f->part[k]);
        NBODY__CU(cudaGetLastError());
        if (m) r = nbody__cu_slice_walk(s, g->pos[k], NULL, 0, 0, (nbody__r *)f->part[k], g->first[k], m);   /* its test particles */
        if (r == NBODY_OK) r = nbody__cu_check(s, cudaEventRecord(g->wev[k][5], 0), "cudaEventRecord");
    }
    return r;
}

/* Benchmarks: the last tree evaluation's phases on each GPU in ms, ms[NBODY__CU_MPHASES k + q]:
   q = 0 the positions' all-gather (waits for the slowest GPU included), 1 the build (and the
   group ranges), 2 the walk, 3 the accelerations' all-gather, 4 the taking of its own bodies'.
   Waits for them. Returns D, 0 when e is not a tree on several GPUs or nothing was timed. */
extern "C" int nbody__cuda_multi_phases(nbody__engine *e, double *ms) {
    nbody__cu_multi *g;
    if (!nbody__cu_is_multi(e) || !nbody__cu_mu(e)->tree) return 0;
    g = nbody__cu_mu(e);
    for (int k = 0; k < g->count; ++k)
        for (int q = 0; q < NBODY__CU_MPHASES; ++q) {
            float t = -1;
            if (cudaEventSynchronize(g->wev[k][q + 1]) != cudaSuccess || cudaEventElapsedTime(&t, g->wev[k][q], g->wev[k][q + 1]) != cudaSuccess) {
                (void)cudaGetLastError();
                return 0;
            }
            ms[NBODY__CU_MPHASES * k + q] = t;
        }
    return g->count;
}
#endif

static nbody_result nbody__cu_multi_derivative(nbody__engine *e, nbody__buf yb, nbody__buf fb) {
#ifdef NBODY_WITH_NCCL
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__cu_mbuf *y = (nbody__cu_mbuf *)yb, *f = (nbody__cu_mbuf *)fb;
    nbody_result r = NBODY_OK;
    size_t n = e->n;
    ncclDataType_t type = sizeof(nbody__r) == sizeof(float) ? ncclFloat : ncclDouble;
    ncclResult_t nr;
    for (int k = 0; k < g->count && g->tree && r == NBODY_OK; ++k)   /* the phases' first edge */
        if ((r = nbody__cu_enter(&g->sub[k])) == NBODY_OK) r = nbody__cu_check(&g->sub[k], cudaEventRecord(g->wev[k][0], 0), "cudaEventRecord");
    if (r != NBODY_OK) return r;
    nr = ncclGroupStart();
    for (int d = 0; d < g->count && nr == ncclSuccess; ++d)
        for (int k = 0; k < g->count && nr == ncclSuccess; ++k) {
            size_t cnt = nbody__cu_mcount(g, k);
            for (size_t c = 0; c < 3 && cnt && nr == ncclSuccess; ++c) {
                nbody__r *dst = g->pos[d] + c * n + g->first[k];
                const nbody__r *src = d == k ? (const nbody__r *)y->part[k] + c * cnt : dst;
                nr = ncclBroadcast(src, dst, cnt, type, k, g->comm[d], 0);
            }
        }
    if (ncclGroupEnd() != ncclSuccess || nr != ncclSuccess) {
        if (e->desc.log.func) {
            char line[256];
            snprintf(line, sizeof line, "nbody cuda: NCCL position exchange failed: %s", ncclGetErrorString(nr));
            e->desc.log.func(NBODY_LOG_ERROR, line, e->desc.log.user_data);
        }
        return NBODY_ERR_DEVICE;
    }
    if (!g->tree && g->design == NBODY__CU_UNDECIDED) r = nbody__cu_multi_choose(e, f);
    if (r == NBODY_OK && !g->tree && g->design == NBODY__CU_SPLIT) {
        r = nbody__cu_split_forces(e, y, f);
        if (r != NBODY_ERR_UNAVAILABLE) return r;
        nbody__cu_log(e, NBODY_LOG_WARNING, "nbody cuda: the split symmetric kernel (%d threads x %d bodies) cannot run here; "
                      "all-gather and one-sided slices from now on", g->split_block, g->split_R);
        g->design = NBODY__CU_GATHER;
        r = NBODY_OK;
    }
    if (g->tree) return r == NBODY_OK ? nbody__cu_multi_tree_forces(e, y, f) : r;
    for (int k = 0; k < g->count && r == NBODY_OK; ++k)
        r = nbody__cuda_derivative_slice(&g->sub[k], g->pos[k], y->part[k], f->part[k], g->first[k], nbody__cu_mcount(g, k));
    return r;
#else
    (void)e; (void)yb; (void)fb;
    return NBODY_ERR_UNAVAILABLE;
#endif
}

/* --------------------------------------------------------------------------------------
   NBODY_HERMITE on several GPUs (dense): the sources split by owner, the partial forces
   reduced. GPU k predicts the active bodies it owns into their rows (nbody__cu_mh_rows:
   predicted x v a, then x v a jerk snap at their own time), which land in mapped host memory
   at their place in the list; then every GPU sums the forces on all active bodies from its own
   bodies, predicted as they are loaded (nbody__cu_mh_forces, the single GPU's shape:
   nbody__hermite_shape), its slices' sums added in a fixed order (nbody__cu_mh_sums) into its
   rows of the mapped partial sums, and the host adds the GPUs' partial sums in GPU order
   (the same bits every run). The host corrects the active bodies and each GPU stores the
   ones it owns (nbody__cu_mh_store). Only the active bodies' rows move, through mapped host
   memory (a step with few active bodies is bound by its launches and waits, which NCCL's
   collectives would not shorten): three waits a step. A body's sum is split by owner, so the
   steps are one GPU's to rounding, not bitwise.
   -------------------------------------------------------------------------------------- */
struct nbody__cu_mherm {
    nbody__r *rows;                /* mapped: 24 a list entry (nbody__hermite_op's rows 9-23 and
                                      the predicted x v a the GPUs read as targets) */
    double *sums;                  /* mapped: D x 9 x n, each GPU's partial sums */
    unsigned int *list;            /* mapped: the step's list */
    nbody__r *next;                /* mapped: the store's 18 a body */
    unsigned long long *ticks[NBODY__CU_MAX_DEVICES];   /* GPU k: its bodies' times */
    double *part[NBODY__CU_MAX_DEVICES];                /* GPU k: slices x 9 x count sums */
    size_t part_cap[NBODY__CU_MAX_DEVICES];
    size_t qfirst[NBODY__CU_MAX_DEVICES + 1];           /* GPU k owns list entries [qfirst[k], qfirst[k + 1]) */
};

static void nbody__cu_mh_free(nbody__cu_multi *g, const nbody_desc *d) {
    nbody__cu_mherm *h = g->herm;
    if (!h) return;
    for (int k = 0; k < g->count; ++k) {
        if (!g->sub[k].impl) continue;
        (void)cudaSetDevice(nbody__cu(&g->sub[k])->dev);
        cudaFree(h->ticks[k]); cudaFree(h->part[k]);
    }
    cudaFreeHost(h->rows); cudaFreeHost(h->sums); cudaFreeHost(h->list); cudaFreeHost(h->next);
    (void)cudaGetLastError();
    d->allocator.free(h, d->allocator.user_data);
    g->herm = NULL;
}

static nbody_result nbody__cu_mh_work(nbody__engine *e, nbody__cu_mherm **out) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__cu_mherm *h = g->herm;
    size_t n = e->n;
    nbody_result r = NBODY_OK;
    if (h) { *out = h; return NBODY_OK; }
    h = (nbody__cu_mherm *)e->desc.allocator.alloc(sizeof *h, e->desc.allocator.user_data);
    if (!h) return NBODY_ERR_OUT_OF_MEMORY;
    memset(h, 0, sizeof *h);
    g->herm = h;
    /* portable: one allocation for every GPU; with unified addressing its device address is its host address */
    r = nbody__cu_host_alloc(e, &h->rows, 24 * n, cudaHostAllocPortable);
    if (r == NBODY_OK) r = nbody__cu_host_alloc(e, &h->sums, (size_t)g->count * 9 * n, cudaHostAllocPortable);
    if (r == NBODY_OK) r = nbody__cu_host_alloc(e, &h->list, n, cudaHostAllocPortable);
    if (r == NBODY_OK) r = nbody__cu_host_alloc(e, &h->next, 18 * n, cudaHostAllocPortable);
    for (int k = 0; k < g->count && r == NBODY_OK; ++k)
        if ((r = nbody__cu_enter(&g->sub[k])) == NBODY_OK) r = nbody__cu_malloc(&g->sub[k], &h->ticks[k], nbody__cu_mcount(g, k));
    if (r != NBODY_OK) { nbody__cu_mh_free(g, &e->desc); return r; }
    *out = h;
    return NBODY_OK;
}

/* GPU k's slice as a whole engine of its cnt bodies (base, force, high, times, masses) */
static nbody__cu_h_state<nbody__r> nbody__cu_mh_state(nbody__engine *e, const nbody__hermite_op *op, int k) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__cu_h_state<nbody__r> S;
    S.base = (const nbody__r *)((nbody__cu_mbuf *)op->base)->part[k];
    S.force = (const nbody__r *)((nbody__cu_mbuf *)op->force)->part[k];
    S.high = (const nbody__r *)((nbody__cu_mbuf *)op->high)->part[k];
    S.m = nbody__cu(&g->sub[k])->m + g->first[k];
    S.ticks = g->herm->ticks[k]; S.now = op->now; S.tick = op->tick; S.span = op->span; S.order = op->order;
    S.n = nbody__cu_mcount(g, k);
    return S;
}

/* the active bodies list[q0 .. q1) of a slice (its first body lo) predicted, and their state
   at their own time, into rows (24 each) */
template <class T>
__global__ void nbody__cu_mh_rows(nbody__cu_h_state<T> S, const unsigned int *list, size_t q0, size_t q1, size_t lo, T *rows) {
    for (size_t q = q0 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < q1; q += (size_t)gridDim.x * blockDim.x) {
        size_t i = list[q] - lo, n = S.n;
        nbody__v4<T> x, v, a;
        T *row = rows + 24 * q;
        nbody__cu_h_predict(S, i, &x, &v, &a);
        row[0] = x.x; row[1] = x.y; row[2] = x.z; row[3] = v.x; row[4] = v.y; row[5] = v.z; row[6] = a.x; row[7] = a.y; row[8] = a.z;
        for (int k = 0; k < 6; ++k) { row[9 + k] = S.base[(size_t)k * n + i]; row[15 + k] = S.force[(size_t)k * n + i]; }
        for (int k = 0; k < 3; ++k) row[21 + k] = S.high[(size_t)k * n + i];
    }
}

/* nbody__cu_h_forces with the targets from rows (list entry q: rows + 24 q) and the sources a
   slice's [0, nsrc) (its first body lo): the slice blockIdx.y for the targets blockIdx.x TI ..;
   the first group (blockIdx.x 0) writes the slice's bodies predicted into pred (its share of
   the slice's test particles [nsrc, S.n) too) */
template <class T, bool SNAP>
__global__ void __launch_bounds__(NBODY__CU_H_THREADS)
nbody__cu_mh_forces(nbody__cu_h_state<T> S, const T *rows, const unsigned int *list, size_t lo, unsigned int count, unsigned int nsrc,
                    unsigned int slice_len, int ti_log2, T eps2, T *pred, double *part) {
    nbody__cu_h_forces_group<T, SNAP>(S, list, NULL, count, nsrc, slice_len, ti_log2, eps2, pred, part, NULL, NULL, false,
                                      blockIdx.x, blockIdx.y, gridDim.y, rows, lo);
}

/* a warp a list entry: its slices' sums (nbody__cu_h_slice_sums, G not applied) into sums
   (9 rows of count, mapped host memory) */
__global__ void nbody__cu_mh_sums(const double *part, unsigned int slices, int nk, unsigned int count, double *sums) {
    const unsigned int lane = threadIdx.x & 31;
    const size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t q = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5; q < count; q += warps) {
        double f[9];
        nbody__cu_h_slice_sums<double>(part, slices, q, nk, lane, 1.0, f);
        if (lane == 0)
            for (int k = 0; k < 9; ++k) sums[(size_t)k * count + q] = k < nk ? f[k] : 0;
    }
}

/* nbody__hermite_store of the list entries [q0, q1) a slice owns (its first body lo, n bodies) */
template <class T>
__global__ void nbody__cu_mh_store(const unsigned int *list, const T *next, size_t q0, size_t q1, size_t lo, size_t n, int commit,
                                   unsigned long long now, T *pred, T *base, T *force, T *high, unsigned long long *ticks) {
    for (size_t q = q0 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < q1; q += (size_t)gridDim.x * blockDim.x) {
        size_t i = list[q] - lo;
        const T *nx = next + 18 * q;
        for (int k = 0; k < 6; ++k) {
            if (!commit) { pred[(size_t)k * n + i] = nx[k]; continue; }
            base[(size_t)k * n + i] = nx[k]; force[(size_t)k * n + i] = nx[6 + k]; high[(size_t)k * n + i] = nx[12 + k];
        }
        if (commit) ticks[i] = now;
    }
}

/* every GPU's queue drained (the mapped rows and sums are then the host's to read) */
static nbody_result nbody__cu_mh_wait(nbody__engine *e) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody_result r = NBODY_OK;
    for (int k = 0; k < g->count && r == NBODY_OK; ++k)
        if ((r = nbody__cu_enter(&g->sub[k])) == NBODY_OK)
            r = nbody__cu_check(&g->sub[k], cudaStreamSynchronize(0), "hermite on several GPUs");
    return r;
}

/* the list into mapped memory, each GPU's share of it; the times when the host changed them */
static nbody_result nbody__cu_mh_list(nbody__engine *e, nbody__cu_mherm *h, const size_t *list, size_t m, const unsigned long long *ticks) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    size_t q = 0;
    for (size_t a = 0; a < m; ++a) h->list[a] = (unsigned int)list[a];
    for (int k = 0; k <= g->count; ++k) {      /* the list rises: each GPU's entries follow the last one's */
        while (q < m && list[q] < g->first[k]) ++q;
        h->qfirst[k] = k == g->count ? m : q;
    }
    for (int k = 0; k < g->count && ticks; ++k) {
        nbody__engine *s = &g->sub[k];
        size_t cnt = nbody__cu_mcount(g, k);
        nbody_result r = cnt ? nbody__cu_enter(s) : NBODY_OK;
        if (r == NBODY_OK && cnt)
            r = nbody__cu_check(s, cudaMemcpy(h->ticks[k], ticks + g->first[k], cnt * sizeof(unsigned long long), cudaMemcpyHostToDevice),
                                "hermite times");
        if (r != NBODY_OK) return r;
    }
    return NBODY_OK;
}

static nbody_result nbody__cu_multi_hermite(nbody__engine *e, const nbody__hermite_op *op) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__cu_mherm *h;
    size_t n = e->n, m = op->count;
    unsigned int slices[NBODY__CU_MAX_DEVICES];
    nbody_result r = nbody__cu_mh_work(e, &h);
    if (r != NBODY_OK || m == 0) return r;
    if (m > n || op->n_src == 0 || op->n_src > n || n > 0xFFFFFFFFu) return NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__cu_mh_list(e, h, op->list, m, op->ticks_all ? op->ticks : NULL)) != NBODY_OK) return r;
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {         /* the owners' rows */
        nbody__engine *s = &g->sub[k];
        size_t q0 = h->qfirst[k], q1 = h->qfirst[k + 1];
        if (q1 == q0 || (r = nbody__cu_enter(s)) != NBODY_OK) continue;
        nbody__cu_mh_rows<nbody__r><<<nbody__cu_blocks(q1 - q0, 128), 128>>>(nbody__cu_mh_state(e, op, k), h->list, q0, q1,
                                                                            g->first[k], h->rows);
        r = nbody__cu_check(s, cudaGetLastError(), "hermite rows");
    }
    if (r == NBODY_OK) r = nbody__cu_mh_wait(e);
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {         /* each GPU's partial sums */
        nbody__engine *s = &g->sub[k];
        nbody__cuda *c = nbody__cu(s);
        size_t cnt = nbody__cu_mcount(g, k), lo = g->first[k];
        size_t nsrc = op->n_src <= lo ? 0 : op->n_src - lo < cnt ? op->n_src - lo : cnt;
        unsigned int slice_len;
        int ti_log2;
        double *sums = h->sums + (size_t)k * 9 * m;
        nbody__r eps2 = e->desc.softening * e->desc.softening;
        slices[k] = 0;
        if (!cnt) { memset(sums, 0, 9 * m * sizeof(double)); continue; }
        if ((r = nbody__cu_enter(s)) != NBODY_OK) break;
        nbody__hermite_shape(m, nsrc, NBODY__CU_H_LOG2, (size_t)c->sms * NBODY__CU_H_WAVES, &ti_log2, &slices[k], &slice_len);
        if ((size_t)slices[k] * 9 * m > h->part_cap[k]) {
            cudaFree(h->part[k]);
            h->part[k] = NULL; h->part_cap[k] = 0;
            if ((r = nbody__cu_malloc(s, &h->part[k], (size_t)slices[k] * 9 * m)) != NBODY_OK) break;
            h->part_cap[k] = (size_t)slices[k] * 9 * m;
        }
        dim3 grid((unsigned int)((m + ((size_t)1 << ti_log2) - 1) >> ti_log2), slices[k]);
        nbody__r *pred = (nbody__r *)((nbody__cu_mbuf *)op->pred)->part[k];
        if (op->order == 6)
            nbody__cu_mh_forces<nbody__r, true><<<grid, NBODY__CU_H_THREADS>>>(nbody__cu_mh_state(e, op, k), h->rows, h->list, lo,
                                                                              (unsigned int)m, (unsigned int)nsrc, slice_len, ti_log2,
                                                                              eps2, pred, h->part[k]);
        else
            nbody__cu_mh_forces<nbody__r, false><<<grid, NBODY__CU_H_THREADS>>>(nbody__cu_mh_state(e, op, k), h->rows, h->list, lo,
                                                                               (unsigned int)m, (unsigned int)nsrc, slice_len, ti_log2,
                                                                               eps2, pred, h->part[k]);
        if ((r = nbody__cu_check(s, cudaGetLastError(), "hermite forces")) != NBODY_OK) break;
        nbody__cu_mh_sums<<<nbody__cu_blocks(32 * m, 128), 128>>>(h->part[k], slices[k], op->order == 6 ? 9 : 6, (unsigned int)m, sums);
        r = nbody__cu_check(s, cudaGetLastError(), "hermite sums");
    }
    if (r == NBODY_OK) r = nbody__cu_mh_wait(e);
    if (r != NBODY_OK) return r;
    for (size_t q = 0; q < m; ++q)            /* the GPUs' sums in GPU order; the state rows */
        for (int c = 0; c < 24; ++c) {
            double sum = 0;
            if (c >= 9) { op->out[(size_t)c * m + q] = h->rows[24 * q + (size_t)c]; continue; }
            for (int k = 0; k < g->count; ++k) sum += h->sums[((size_t)k * 9 + (size_t)c) * m + q];
            op->out[(size_t)c * m + q] = (nbody_real)e->desc.G * (nbody_real)sum;
        }
    return NBODY_OK;
}

/* each GPU stores the active bodies it owns: commit 0 copies the rows (the step's list is in
   mapped memory since the step's forces), commit 1 reuses them and waits for the GPUs (the
   next step rewrites the mapped list) */
static nbody_result nbody__cu_multi_hermite_store(nbody__engine *e, const nbody__hermite_store *op) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__cu_mherm *h = g->herm;
    size_t m = op->count;
    nbody_result r = NBODY_OK;
    if (!h || m > e->n || op->commit < 0) return NBODY_ERR_INVALID_ARGUMENT;   /* after the step's forces; no undo (no hermite_step) */
    if (m == 0) return NBODY_OK;
    if (op->commit == 0) {
        memcpy(h->next, op->next, 18 * m * sizeof(nbody__r));
        if ((r = nbody__cu_mh_list(e, h, op->list, m, NULL)) != NBODY_OK) return r;
    }
    for (int k = 0; k < g->count && r == NBODY_OK; ++k) {
        nbody__engine *s = &g->sub[k];
        size_t q0 = h->qfirst[k], q1 = h->qfirst[k + 1];
        if (q1 == q0 || (r = nbody__cu_enter(s)) != NBODY_OK) continue;
        nbody__cu_mh_store<nbody__r><<<nbody__cu_blocks(q1 - q0, 128), 128>>>(
            h->list, h->next, q0, q1, g->first[k], nbody__cu_mcount(g, k), op->commit, op->now,
            (nbody__r *)((nbody__cu_mbuf *)op->pred)->part[k], (nbody__r *)((nbody__cu_mbuf *)op->base)->part[k],
            (nbody__r *)((nbody__cu_mbuf *)op->force)->part[k], (nbody__r *)((nbody__cu_mbuf *)op->high)->part[k], h->ticks[k]);
        r = nbody__cu_check(s, cudaGetLastError(), "hermite store");
    }
    return r == NBODY_OK && op->commit ? nbody__cu_mh_wait(e) : r;
}

static nbody_result nbody__cu_multi_init_dense(nbody__engine *e);
static nbody_result nbody__cu_multi_init_tree(nbody__engine *e);
static const nbody__engine_ops nbody__cuda_multi_ops[2] = {
    {"cuda", nbody__cu_multi_init_dense, nbody__cu_multi_shutdown, nbody__cu_multi_alloc, nbody__cu_multi_release,
     nbody__cu_multi_upload, nbody__cu_multi_download, nbody__cu_multi_set_masses, nbody__cu_multi_derivative,
     nbody__cu_multi_lincomb, nbody__cu_multi_error_norm, nbody__cu_multi_all_finite, NULL, NULL, nbody__cu_multi_hermite,
     NULL, NULL, nbody__cu_multi_hermite_store, NULL},
    {"cuda-tree", nbody__cu_multi_init_tree, nbody__cu_multi_shutdown, nbody__cu_multi_alloc, nbody__cu_multi_release,
     nbody__cu_multi_upload, nbody__cu_multi_download, nbody__cu_multi_set_masses, nbody__cu_multi_derivative,
     nbody__cu_multi_lincomb, nbody__cu_multi_error_norm, nbody__cu_multi_all_finite}};

/* GPU k's buffers for the group walk by ranges (nbody__cu_multi_groups); GPU 0 also the host's
   copy of the boundaries and its event */
static nbody_result nbody__cu_multi_group_alloc(nbody__engine *e, int k) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    nbody__engine *s = &g->sub[k];
    size_t nt = nbody__cu_nsrc(e), bytes = 0;
    nbody_result r = nbody__cu_malloc(s, &g->gord[k], 2 * nt);
    if (r == NBODY_OK) r = nbody__cu_malloc(s, &g->gsel[k], 3 + (size_t)g->count + 1);
    if (r == NBODY_OK) r = nbody__cu_malloc(s, &g->gflag[k], nt);
    if (r == NBODY_OK)
        r = nbody__cu_check(s, cub::DeviceSelect::Flagged(NULL, bytes, g->gord[k], g->gflag[k], g->gord[k] + nt, g->gsel[k], (int)nt),
                            "select size");
    if (r == NBODY_OK) r = nbody__cu_malloc(s, (unsigned char **)&g->gtmp[k], bytes ? bytes : 1);
    g->gtmpbytes = bytes;
    if (r == NBODY_OK && k == 0) r = nbody__cu_host_alloc(s, &g->gbound, (size_t)g->count + 1, cudaHostAllocPortable);
    if (r == NBODY_OK && k == 0) r = nbody__cu_check(s, cudaEventCreateWithFlags(&g->gbev, cudaEventDisableTiming), "cudaEventCreate");
    return r;
}

/* Called by the single-GPU init when desc.devices > 1: from then on e runs on the multi-GPU
   operations (nbody__engine_start calls e->ops after init, so it follows the switch). */
static nbody_result nbody__cu_multi_init(nbody__engine *e, int tree) {
    nbody__cu_multi *g;
    int count = 0, D = e->desc.devices;
    nbody_result r = NBODY_OK;
    if (cudaGetDeviceCount(&count) != cudaSuccess) { (void)cudaGetLastError(); count = 0; }
#ifndef NBODY_WITH_NCCL
    nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: devices = %d needs a build with NBODY_WITH_NCCL", D);
    count = 0;
#endif
    if (D > NBODY__CU_MAX_DEVICES || e->desc.device + D > count) {
        nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: devices %d..%d requested, %d present (at most %d)", e->desc.device,
                      e->desc.device + D - 1, count, NBODY__CU_MAX_DEVICES);
        return NBODY_ERR_UNAVAILABLE;
    }
    g = (nbody__cu_multi *)e->desc.allocator.alloc(sizeof *g, e->desc.allocator.user_data);
    if (!g) return NBODY_ERR_OUT_OF_MEMORY;
    memset(g, 0, sizeof *g);
    g->count = D;
    g->tree = tree;
    g->design = tree || e->desc.block_size > 0 ? NBODY__CU_GATHER : NBODY__CU_UNDECIDED;   /* a given block: the one-sided kernel */
    e->impl = g;
    e->ops = &nbody__cuda_multi_ops[tree != 0];
    for (int k = 0; k <= D; ++k) {
        size_t q = e->n / (size_t)D, rem = e->n % (size_t)D, kk = (size_t)k, nt = nbody__cu_nsrc(e);
        g->first[k] = kk * q + (kk < rem ? kk : rem);
        g->wfirst[k] = kk * (nt / (size_t)D) + (kk < nt % (size_t)D ? kk : nt % (size_t)D);   /* the first walks: by count */
    }
    g->balance = 1;
    g->divide = 1;
    for (int k = 0; k < D && r == NBODY_OK; ++k) {
        nbody__engine *s = &g->sub[k];
        s->ops = nbody__cuda_engine_ops(tree);
        s->desc = e->desc;
        s->desc.device = e->desc.device + k;
        s->desc.devices = 1;
        s->n = e->n;
        r = nbody__cu_init_common(s, tree);
        if (r == NBODY_OK) r = nbody__cu_malloc(s, &g->pos[k], 3 * e->n);
        if (r == NBODY_OK && tree) r = nbody__cu_malloc(s, &g->lacc[k], 3 * nbody__cu_nsrc(e));
        if (r == NBODY_OK && tree) {   /* its bodies in the tree (the active ones): their positions */
            nbody__cuda *c = nbody__cu(s);
            size_t nt = nbody__cu_nsrc(e), end = g->first[k + 1] < nt ? g->first[k + 1] : nt;
            c->own0 = g->first[k];
            c->ownm = end > c->own0 ? end - c->own0 : 0;
            r = nbody__cu_malloc(s, &c->ownpos, c->ownm ? c->ownm : 1);
        }
        for (int q = 0; q <= NBODY__CU_MPHASES && r == NBODY_OK && tree; ++q)
            r = nbody__cu_check(s, cudaEventCreate(&g->wev[k][q]), "cudaEventCreate");
        if (r == NBODY_OK && tree && e->desc.quadrupole) r = nbody__cu_multi_group_alloc(e, k);
        for (int j = 0; j < D && r == NBODY_OK; ++j)      /* NVLink / PCIe peer access where there is */
            if (j != k && cudaDeviceEnablePeerAccess(e->desc.device + j, 0) != cudaSuccess) (void)cudaGetLastError();
    }
#ifdef NBODY_WITH_NCCL
    if (r == NBODY_OK) {
        int devs[NBODY__CU_MAX_DEVICES];
        for (int k = 0; k < D; ++k) devs[k] = e->desc.device + k;
        ncclResult_t nr = ncclCommInitAll(g->comm, D, devs);
        if (nr != ncclSuccess) {
            nbody__cu_log(e, NBODY_LOG_ERROR, "nbody cuda: ncclCommInitAll: %s", ncclGetErrorString(nr));
            memset(g->comm, 0, sizeof g->comm);
            r = NBODY_ERR_DEVICE;
        }
    }
#endif
    if (r != NBODY_OK) { nbody__cu_multi_shutdown(e); e->ops = nbody__cuda_engine_ops(tree); }
    return r;
}
/* nbody__cuda_bench_config on several GPUs (dense): variant 2 the split symmetric kernel with
   block x per_thread (0: 128 x 4), otherwise the all-gather and one-sided slices (block: their
   threads per block); variant -1 reads the choice into choice[3] (block, bodies per thread,
   1 for the split; -1 before the first evaluation). */
static void nbody__cu_multi_config(nbody__engine *e, int variant, int block, int per_thread, int *choice) {
    nbody__cu_multi *g = nbody__cu_mu(e);
    if (variant < 0) {
        nbody__cuda *c = nbody__cu(&g->sub[0]);
        int split = g->design == NBODY__CU_SPLIT;
        choice[0] = split ? g->split_block : c->block;
        choice[1] = split ? g->split_R : g->tree ? c->walk : c->bodies_per_thread;
        choice[2] = g->design == NBODY__CU_UNDECIDED ? -1 : split;
        return;
    }
    if (g->tree) {
        for (int k = 0; k < g->count; ++k) nbody__cuda_bench_config(&g->sub[k], 0, block, per_thread);
        return;
    }
    if (variant == 2) {
        g->design = NBODY__CU_SPLIT;
        g->split_block = block > 0 ? block : 128;
        g->split_R = per_thread > 0 ? per_thread : 4;
        return;
    }
    g->design = NBODY__CU_GATHER;
    for (int k = 0; k < g->count && block > 0; ++k) nbody__cuda_bench_config(&g->sub[k], 0, block, 0);
}
/* Tests and benchmarks (the tree on several GPUs): the walks' leaf boundaries wfirst[0 .. D]
   copied to w, or from w with set = 1 (rising from 0 to the active bodies, else refused:
   returns -1); balance 1 / 0 switches the balance by measured times on / off (-1: kept).
   Returns D, 0 when e is not a tree on several GPUs. */
extern "C" int nbody__cuda_multi_walk(nbody__engine *e, size_t *w, int set, int balance) {
    nbody__cu_multi *g;
    if (!nbody__cu_is_multi(e) || !nbody__cu_mu(e)->tree) return 0;
    g = nbody__cu_mu(e);
    if (balance >= 0) g->balance = balance != 0;
    if (set) {
        int ok = w[0] == 0 && w[g->count] == nbody__cu_nsrc(e);
        for (int k = 0; k < g->count; ++k) ok = ok && w[k] <= w[k + 1];
        if (!ok) return -1;
        memcpy(g->wfirst, w, ((size_t)g->count + 1) * sizeof *w);
        g->wtimed = 0;             /* the last times belong to other boundaries */
    } else {
        memcpy(w, g->wfirst, ((size_t)g->count + 1) * sizeof *w);
    }
    return g->count;
}
/* Tests and benchmarks (the tree on several GPUs): the divided build on (on = 1, the default) or
   off (0: every GPU builds the whole tree). Returns D, 0 when e is not a tree on several GPUs. */
extern "C" int nbody__cuda_multi_divide(nbody__engine *e, int on) {
    if (!nbody__cu_is_multi(e) || !nbody__cu_mu(e)->tree) return 0;
    nbody__cu_mu(e)->divide = on != 0;
    return nbody__cu_mu(e)->count;
}
/* Benchmarks only (tree; several GPUs: GPU 0's): from the next build on, events between the
   build's steps; ms[0..3] of the last build: the sort, the leaves, the internal nodes, the
   groups (the rest of the build is the box and the keys). Returns 0 before a timed build. */
extern "C" int nbody__cuda_bench_build_steps(nbody__engine *e, double *ms) {
    nbody__cuda *c = nbody__cu(nbody__cu_is_multi(e) ? &((nbody__cu_multi *)e->impl)->sub[0] : e);
    int ok = 1;
    if (cudaSetDevice(c->dev) != cudaSuccess) { (void)cudaGetLastError(); return 0; }
    if (!c->bev[0]) {
        for (int k = 0; k < 5 && ok; ++k) ok = cudaEventCreate(&c->bev[k]) == cudaSuccess;
        (void)cudaGetLastError();
        return 0;
    }
    for (int k = 0; k < 4 && ok; ++k) {
        float t = -1;
        ok = cudaEventSynchronize(c->bev[k + 1]) == cudaSuccess && cudaEventElapsedTime(&t, c->bev[k], c->bev[k + 1]) == cudaSuccess;
        ms[k] = t;
    }
    (void)cudaGetLastError();
    return ok;
}
static nbody_result nbody__cu_multi_init_dense(nbody__engine *e) { return nbody__cu_multi_init(e, 0); }
static nbody_result nbody__cu_multi_init_tree(nbody__engine *e) { return nbody__cu_multi_init(e, 1); }
static int nbody__cu_is_multi(nbody__engine *e) { return e->ops == &nbody__cuda_multi_ops[0] || e->ops == &nbody__cuda_multi_ops[1]; }
