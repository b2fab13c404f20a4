/* nbody.h - v0.1.0 - gravitational N-body simulation in one C header.

   Direct O(N^2) forces (scalar, OpenMP, blocked SIMD), Barnes-Hut on a kd-tree stored
   as an implicit heap, every integrator of the usual Runge-Kutta / Adams / Bulirsch-Stoer
   family with real adaptive step control, conservation diagnostics, initial conditions
   and snapshot files; optional CUDA and OpenCL engines. No global state.

   DO THIS ONCE, in exactly one C or C++ file:

       #define NBODY_IMPLEMENTATION
       #include "nbody.h"

   Everywhere else just #include "nbody.h".

   A COMPLETE PROGRAM

       #define NBODY_IMPLEMENTATION
       #include "nbody.h"
       #include <stdio.h>
       int main(void) {
           nbody_system s = {0};
           nbody_sim *sim;
           nbody_desc d = {0};                       // all zero = sensible defaults
           nbody_invariants e0, e1;
           nbody_ic_plummer(&s, 1000, 42);
           d.softening = 0.01;
           if (nbody_create(&sim, &d, &s) != NBODY_OK) return 1;
           nbody_measure(&s, 1, d.softening, &e0);
           nbody_advance(sim, 1.0);                  // lands exactly on t = 1
           nbody_get_state(sim, &s);
           nbody_measure(&s, 1, d.softening, &e1);
           printf("dE/E = %g\n", (e1.energy - e0.energy) / e0.energy);
           nbody_destroy(sim);
           nbody_system_free(&s);
           return 0;
       }

   BUILD
       cc -O2 -fopenmp prog.c -lm           (OpenMP is optional: without it, one thread)
       CUDA:   nvcc -O3 -arch=sm_90 -c nbody_cuda.cu; cc -DNBODY_WITH_CUDA ... nbody_cuda.o -lcudart -lstdc++
       OpenCL: cc -DNBODY_WITH_OPENCL ... -lOpenCL  (nbody_cl.h must sit beside nbody.h)

   CONFIGURATION MACROS (define before the #include that has NBODY_IMPLEMENTATION, and the
   same NBODY_REAL everywhere, nbody_cuda.cu included)
       NBODY_REAL          float or double (default); long double on the CPU engines
       NBODY_STATIC        make every function static (a private copy in one file)
       NBODY_API           linkage of public functions (default extern)
       NBODY_ASSERT(x)     internal invariants only (default assert); never used on user input
       NBODY_MALLOC(sz) NBODY_REALLOC(p,sz) NBODY_FREE(p)   define all three or none;
                           desc.allocator overrides them per simulation at run time
       NBODY_WITH_CUDA     link nbody_cuda.cu (compiled by nvcc) and enable the CUDA engines
       NBODY_WITH_OPENCL   include nbody_cl.h and enable the OpenCL engines (-lOpenCL)
       NBODY_NO_OPENMP     ignore OpenMP even when the compiler has it
   Feature macros never change the API: without NBODY_WITH_CUDA the CUDA engines still exist
   in the enum and nbody_create returns NBODY_ERR_UNAVAILABLE for them.

   THREADING
   There is no global state. Each nbody_sim is independent: two simulations may run on two
   threads at once. One simulation must not be used from two threads at the same time.
   The CPU engines use OpenMP inside a call (desc.threads, 0 = OpenMP's default).

   ERRORS
   Every function that can fail returns nbody_result; nbody_result_string() names it.
   Bad input returns NBODY_ERR_INVALID_ARGUMENT and changes nothing: nothing asserts, aborts
   or prints. A step that turns the state NaN/Inf returns NBODY_ERR_NOT_FINITE and the
   simulation keeps its last good state. Details go to desc.log.func when set.

   PHYSICS AND UNITS
   a_i = G * sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2)   (Plummer softening eps;
   eps = 0 is exact Newtonian gravity; coincident bodies then give NaN, which is reported).
   The state is y = [x(N) y(N) z(N) vx(N) vy(N) vz(N)], f(y) = [v, a(x)].

   License and version history at the end of this file.
*/
#ifndef NBODY_H_INCLUDED
#define NBODY_H_INCLUDED

#define NBODY_VERSION_MAJOR 0
#define NBODY_VERSION_MINOR 1
#define NBODY_VERSION_PATCH 0
#define NBODY_VERSION_STRING "0.1.0"

#include <stddef.h>

#ifndef NBODY_REAL
#define NBODY_REAL double
#endif

#ifndef NBODY_API
#ifdef NBODY_STATIC
#define NBODY_API static
#else
#define NBODY_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef NBODY_REAL nbody_real;

typedef enum nbody_result {
    NBODY_OK = 0,
    NBODY_ERR_INVALID_ARGUMENT,    /* NULL, n == 0 where not allowed, dt <= 0, NaN input, bad enum */
    NBODY_ERR_OUT_OF_MEMORY,
    NBODY_ERR_UNAVAILABLE,         /* backend compiled out, no device, no OpenCL platform */
    NBODY_ERR_DEVICE,              /* a CUDA / OpenCL call failed */
    NBODY_ERR_NOT_FINITE,          /* the state became NaN/Inf; the last good state is kept */
    NBODY_ERR_STEP_TOO_SMALL,      /* adaptive control needed dt < dt_min */
    NBODY_ERR_IO,
    NBODY_ERR_FORMAT               /* a file is not a valid snapshot (bad magic, size, checksum) */
} nbody_result;

typedef struct nbody_system {      /* structure of arrays, length n each */
    size_t n;
    nbody_real *x, *y, *z;
    nbody_real *vx, *vy, *vz;
    nbody_real *m;
    nbody_real t;                  /* simulation time */
} nbody_system;

typedef enum nbody_engine {        /* how accelerations are computed */
    NBODY_ENGINE_DEFAULT = 0,      /* NBODY_ENGINE_BLOCK */
    NBODY_ENGINE_SIMPLE,           /* scalar double loop, the reference */
    NBODY_ENGINE_OPENMP,           /* OpenMP over bodies */
    NBODY_ENGINE_BLOCK,            /* OpenMP + cache blocks + SIMD */
    NBODY_ENGINE_TREE,             /* Barnes-Hut on a kd-tree stored as an implicit heap, CPU */
    NBODY_ENGINE_CUDA,             /* dense tiles on an NVIDIA GPU */
    NBODY_ENGINE_CUDA_TREE,
    NBODY_ENGINE_OPENCL,           /* dense tiles on any OpenCL device */
    NBODY_ENGINE_OPENCL_TREE,
    NBODY_ENGINE_COUNT_
} nbody_engine;

typedef enum nbody_method {        /* how the ODE is integrated */
    NBODY_METHOD_DEFAULT = 0,      /* NBODY_LEAPFROG */
    NBODY_EULER,                   /* 1 */
    NBODY_MIDPOINT,                /* 2 */
    NBODY_LEAPFROG,                /* 2, symplectic kick-drift-kick */
    NBODY_TRAPEZE,                 /* 2, implicit trapezoid */
    NBODY_RK4,                     /* 4 */
    NBODY_RKCK,                    /* 5(4) Cash-Karp, embedded */
    NBODY_RKDP,                    /* 5(4) Dormand-Prince, embedded */
    NBODY_RKDVERK,                 /* 6(5) Verner, embedded */
    NBODY_RKF,                     /* 7(8) Fehlberg, embedded */
    NBODY_RKGL,                    /* 6, implicit Gauss-Legendre, 3 stages */
    NBODY_RKLC,                    /* 4, implicit Lobatto IIIC, 3 stages, embedded */
    NBODY_ADAMS,                   /* Adams-Bashforth, order 1..5 from desc.order */
    NBODY_BS,                      /* Bulirsch-Stoer extrapolation */
    NBODY_METHOD_COUNT_
} nbody_method;

typedef enum nbody_traversal {
    NBODY_TRAVERSAL_DEFAULT = 0,   /* STACKLESS */
    NBODY_TRAVERSAL_STACK,         /* explicit stack over the heap */
    NBODY_TRAVERSAL_STACKLESS,     /* next/skip index arithmetic with find-first-set */
    NBODY_TRAVERSAL_COUNT_
} nbody_traversal;

typedef enum nbody_order {
    NBODY_ORDER_DEFAULT = 0,       /* LEAF */
    NBODY_ORDER_BODY,              /* visit bodies in index order ("cycle") */
    NBODY_ORDER_LEAF,              /* visit bodies in tree-leaf order ("nested") */
    NBODY_ORDER_COUNT_
} nbody_order;

typedef enum nbody_log_level {
    NBODY_LOG_ERROR = 0,
    NBODY_LOG_WARNING,
    NBODY_LOG_INFO
} nbody_log_level;

typedef struct nbody_allocator {   /* all NULL = NBODY_MALLOC / NBODY_FREE */
    void *(*alloc)(size_t size, void *user_data);
    void  (*free)(void *ptr, void *user_data);
    void  *user_data;
} nbody_allocator;

typedef struct nbody_logger {      /* func NULL = silent */
    void (*func)(nbody_log_level level, const char *message, void *user_data);
    void  *user_data;
} nbody_logger;

typedef struct nbody_desc {        /* all zero = defaults */
    nbody_engine    engine;
    nbody_method    method;
    int             order;         /* NBODY_ADAMS: 1..5 (0 = 5) */
    nbody_real      G;             /* 0 = 1 */
    nbody_real      softening;     /* Plummer epsilon; 0 = none */
    nbody_real      dt;            /* fixed step, or first step of adaptive methods; 0 = 1e-3 */
    nbody_real      tolerance;     /* > 0 turns on adaptive step control (embedded methods, BS) */
    nbody_real      dt_min, dt_max;/* 0 = no lower limit beyond round-off / no upper limit */
    nbody_real      theta;         /* tree opening angle: a node of radius r at distance d is used
                                      as one body when r < theta * d; 0 = 0.5 */
    nbody_traversal traversal;
    nbody_order     visit_order;
    int             block_size;    /* CPU/GPU tile size; 0 = automatic */
    int             threads;       /* CPU threads; 0 = OpenMP default */
    int             device;        /* GPU / OpenCL device index */
    int             compensated;   /* 1 = Kahan-compensated state update (long runs) */
    int             quadrupole;    /* tree engines: 1 = add quadrupole moments */
    nbody_allocator allocator;
    nbody_logger    log;
} nbody_desc;

typedef struct nbody_sim nbody_sim;                       /* opaque */

typedef struct nbody_stats {
    nbody_real t, dt;              /* current time, step size last used */
    unsigned long long steps, rejected, force_evals;
} nbody_stats;

typedef struct nbody_invariants {
    nbody_real mass, kinetic, potential, energy;   /* compensated (Kahan) sums */
    nbody_real px, py, pz;                          /* linear momentum */
    nbody_real lx, ly, lz;                          /* angular momentum about the origin */
    nbody_real cx, cy, cz;                          /* centre of mass */
} nbody_invariants;

/* ---- results and version ---- */
NBODY_API const char  *nbody_result_string(nbody_result r);      /* never NULL */
NBODY_API const char  *nbody_version_string(void);
NBODY_API const char  *nbody_engine_name(nbody_engine e);        /* "unknown" when out of range */
NBODY_API const char  *nbody_method_name(nbody_method m);
NBODY_API int          nbody_engine_available(nbody_engine e);   /* compiled in (device not probed) */
NBODY_API int          nbody_method_order(nbody_method m, int adams_order);

/* ---- bodies ---- */
NBODY_API nbody_result nbody_system_alloc(nbody_system *s, size_t n);   /* zeroed arrays */
NBODY_API void         nbody_system_free(nbody_system *s);
NBODY_API nbody_result nbody_system_copy(nbody_system *dst, const nbody_system *src); /* dst same n */

/* ---- simulation ---- */
NBODY_API nbody_result nbody_create(nbody_sim **out, const nbody_desc *desc, const nbody_system *initial);
NBODY_API nbody_result nbody_step(nbody_sim *sim);                        /* one accepted step */
NBODY_API nbody_result nbody_advance(nbody_sim *sim, nbody_real t_end);  /* lands exactly on t_end */
NBODY_API nbody_result nbody_get_state(const nbody_sim *sim, nbody_system *out); /* out has the same n */
NBODY_API nbody_result nbody_set_state(nbody_sim *sim, const nbody_system *in);
NBODY_API void         nbody_destroy(nbody_sim *sim);
NBODY_API nbody_stats  nbody_get_stats(const nbody_sim *sim);
NBODY_API nbody_result nbody_accelerations(const nbody_desc *desc, const nbody_system *s,
                                           nbody_real *ax, nbody_real *ay, nbody_real *az);

/* ---- diagnostics ---- */
NBODY_API nbody_result nbody_measure(const nbody_system *s, nbody_real G, nbody_real softening,
                                     nbody_invariants *out);

/* ---- initial conditions (deterministic for a seed; pass s zeroed or freed) ---- */
NBODY_API nbody_result nbody_ic_uniform_cube(nbody_system *s, size_t n, unsigned long long seed);
NBODY_API nbody_result nbody_ic_plummer(nbody_system *s, size_t n, unsigned long long seed);
/* a thin disc of n-1 stars on near-circular orbits around a central body holding
   central_fraction (0 < f < 1) of the total mass 1; radius 1, G = 1 */
NBODY_API nbody_result nbody_ic_galaxy(nbody_system *s, size_t n, nbody_real central_fraction,
                                       unsigned long long seed);
/* two such galaxies of n/2 bodies each, 'separation' apart, approaching each other */
NBODY_API nbody_result nbody_ic_collision(nbody_system *s, size_t n, nbody_real central_fraction,
                                          nbody_real separation, unsigned long long seed);
NBODY_API nbody_result nbody_ic_figure_eight(nbody_system *s);
NBODY_API nbody_result nbody_ic_pythagorean(nbody_system *s);

/* ---- files ---- */
NBODY_API nbody_result nbody_save(const char *path, const nbody_system *s);  /* binary + checksum */
NBODY_API nbody_result nbody_load(const char *path, nbody_system *s);  /* allocates s: pass it zeroed */
NBODY_API nbody_result nbody_write_csv(const char *path, const nbody_system *s);

#ifdef __cplusplus
}
#endif
#endif /* NBODY_H_INCLUDED */

/* ======================================================================================
   BACKEND INTERFACE: how engines plug in. Not for users. Visible to the implementation and
   to backends compiled separately (nbody_cuda.cu defines NBODY_BACKEND before including).
   ====================================================================================== */
#if (defined(NBODY_IMPLEMENTATION) || defined(NBODY_BACKEND)) && !defined(NBODY__BACKEND_INTERFACE)
#define NBODY__BACKEND_INTERFACE
#ifdef __cplusplus
extern "C" {
#endif

/* An engine-owned vector of nbody_real: a host pointer, a CUDA device pointer or a cl_mem. */
typedef void *nbody__buf;

#define NBODY__MAX_TERMS 16        /* most stages any tableau needs (Fehlberg 7(8): 13) */

/* out[out_off+i] = y[y_off+i] + h * sum_j c[j] * k[j][k_off+i],  i in [0, len)
   y may be NULL (read as 0). Elementwise, so out may alias y or any k.
   With comp != NULL the update is Kahan-compensated (comp indexed like out):
       d = h*sum - comp; t = y + d; comp = (t - y) - d; out = t                       */
typedef struct nbody__lincomb {
    nbody__buf out;  size_t out_off;
    nbody__buf y;    size_t y_off;
    nbody_real h;
    int        nk;
    nbody_real c[NBODY__MAX_TERMS];
    nbody__buf k[NBODY__MAX_TERMS];
    size_t     k_off;
    size_t     len;
    nbody__buf comp;
} nbody__lincomb;

typedef struct nbody__engine nbody__engine;

typedef struct nbody__engine_ops {
    const char *name;
    nbody_result (*init)(nbody__engine *e);                 /* e->desc, e->n set; fills e->impl */
    void         (*shutdown)(nbody__engine *e);             /* frees all of e->impl; NULL-safe */
    nbody_result (*alloc)(nbody__engine *e, size_t len, nbody__buf *out);  /* len reals */
    void         (*release)(nbody__engine *e, nbody__buf b);               /* NULL-safe */
    nbody_result (*upload)(nbody__engine *e, nbody__buf dst, size_t off, const nbody_real *src, size_t len);
    nbody_result (*download)(nbody__engine *e, nbody_real *dst, nbody__buf src, size_t off, size_t len);
    nbody_result (*set_masses)(nbody__engine *e, const nbody_real *m);     /* n host values */
    /* f = [v, a(x)] for the state y (both 6n long) */
    nbody_result (*derivative)(nbody__engine *e, nbody__buf y, nbody__buf f);
    nbody_result (*lincomb)(nbody__engine *e, const nbody__lincomb *op);
    /* Scaled max norm of the error estimate err_i = h * sum_j c[j] k[j][k_off+i]:
          norm = max_i |err_i| / (atol + rtol * max(|y[y_off+i]|, |out[out_off+i]|))
       (op->out is read, not written; comp ignored). NaN anywhere gives NaN. */
    nbody_result (*error_norm)(nbody__engine *e, const nbody__lincomb *op,
                               nbody_real atol, nbody_real rtol, nbody_real *norm);
    /* *finite = 1 when b[off .. off+len) holds no NaN or Inf */
    nbody_result (*all_finite)(nbody__engine *e, nbody__buf b, size_t off, size_t len, int *finite);
} nbody__engine_ops;

struct nbody__engine {
    const nbody__engine_ops *ops;
    nbody_desc desc;               /* defaults resolved: G, theta, allocator, ... all set */
    size_t     n;                  /* bodies */
    void      *impl;               /* backend-private */
};

/* Backends allocate host memory with e->desc.allocator (always set once defaults are
   resolved) and log by formatting a line themselves and calling e->desc.log.func when it is
   not NULL. They never print, abort or exit. */

#ifdef NBODY_WITH_CUDA
/* Defined in nbody_cuda.cu (compiled with the same NBODY_REAL). tree = 0 dense, 1 tree. */
const nbody__engine_ops *nbody__cuda_engine_ops(int tree);
#endif

#ifdef __cplusplus
}
#endif
#endif /* backend interface */

/* ======================================================================================
   IMPLEMENTATION
   ====================================================================================== */
#if defined(NBODY_IMPLEMENTATION) && !defined(NBODY__IMPLEMENTATION_DONE)
#define NBODY__IMPLEMENTATION_DONE

#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <stdint.h>
#if defined(_OPENMP) && !defined(NBODY_NO_OPENMP)
#include <omp.h>
#define NBODY__OPENMP 1
#define NBODY__PRAGMA(x) _Pragma(#x)
#else
#define NBODY__OPENMP 0
#define NBODY__PRAGMA(x)
#endif

#ifndef NBODY_ASSERT
#include <assert.h>
#define NBODY_ASSERT(x) assert(x)
#endif

#if defined(NBODY_MALLOC) && defined(NBODY_FREE) && defined(NBODY_REALLOC)
/* all three given */
#elif !defined(NBODY_MALLOC) && !defined(NBODY_FREE) && !defined(NBODY_REALLOC)
#define NBODY_MALLOC(sz) malloc(sz)
#define NBODY_REALLOC(p, sz) realloc(p, sz)
#define NBODY_FREE(p) free(p)
#else
#error "Define all of NBODY_MALLOC, NBODY_REALLOC and NBODY_FREE, or none of them."
#endif

#if defined(__GNUC__) || defined(__clang__)
#define NBODY__UNUSED __attribute__((unused))
#else
#define NBODY__UNUSED
#endif

#ifdef NBODY_STATIC
#define NBODY__DEF static NBODY__UNUSED
#else
#define NBODY__DEF
#endif

#ifdef __cplusplus
#define NBODY__ZERO_INIT {}
#else
#define NBODY__ZERO_INIT {0}
#endif

/* exact rational coefficient in the working precision */
#define NBODY__Q(p, q) ((nbody_real)(p) / (nbody_real)(q))

/* math in the working precision (the branch on sizeof folds away) */
static nbody_real nbody__sqrt(nbody_real x) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)sqrtf((float)x);
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)sqrt((double)x);
    return (nbody_real)sqrtl((long double)x);
}
static nbody_real nbody__pow(nbody_real x, nbody_real y) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)powf((float)x, (float)y);
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)pow((double)x, (double)y);
    return (nbody_real)powl((long double)x, (long double)y);
}
static nbody_real nbody__fabs(nbody_real x) { return x < 0 ? -x : x; }
#define NBODY__SQRT(x) nbody__sqrt(x)
#define NBODY__FABS(x) nbody__fabs(x)
#define NBODY__POW(x, y) nbody__pow(x, y)

static int nbody__isfinite(nbody_real v) { return v == v && v - v == 0; }

/* ---------------------------------------------------------------- memory and logging */
static void *nbody__default_alloc(size_t size, void *user_data) { (void)user_data; return NBODY_MALLOC(size); }
static void nbody__default_free(void *p, void *user_data) { (void)user_data; NBODY_FREE(p); }

static void *nbody__alloc(const nbody_desc *d, size_t size) { return d->allocator.alloc(size ? size : 1, d->allocator.user_data); }
static void nbody__free(const nbody_desc *d, void *p) { if (p) d->allocator.free(p, d->allocator.user_data); }

/* overflow-checked count * size; 0 on overflow */
static size_t nbody__bytes(size_t count, size_t size) {
    if (size && count > (size_t)-1 / size) return 0;
    return count * size;
}

static void nbody__log(const nbody_desc *d, nbody_log_level level, const char *fmt, ...) {
    char line[512];
    va_list ap;
    if (!d || !d->log.func) return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    d->log.func(level, line, d->log.user_data);
}

/* ---------------------------------------------------------------- names */
NBODY__DEF const char *nbody_result_string(nbody_result r) {
    switch (r) {
    case NBODY_OK: return "ok";
    case NBODY_ERR_INVALID_ARGUMENT: return "invalid argument";
    case NBODY_ERR_OUT_OF_MEMORY: return "out of memory";
    case NBODY_ERR_UNAVAILABLE: return "unavailable in this build or on this machine";
    case NBODY_ERR_DEVICE: return "device error";
    case NBODY_ERR_NOT_FINITE: return "state became NaN or Inf";
    case NBODY_ERR_STEP_TOO_SMALL: return "step size fell below dt_min";
    case NBODY_ERR_IO: return "input/output error";
    case NBODY_ERR_FORMAT: return "not a valid snapshot file";
    }
    return "unknown result";
}

NBODY__DEF const char *nbody_version_string(void) { return NBODY_VERSION_STRING; }

NBODY__DEF const char *nbody_engine_name(nbody_engine e) {
    static const char *names[NBODY_ENGINE_COUNT_] = {
        "default", "simple", "openmp", "block", "tree", "cuda", "cuda-tree", "opencl", "opencl-tree"};
    return ((int)e >= 0 && e < NBODY_ENGINE_COUNT_) ? names[e] : "unknown";
}

NBODY__DEF const char *nbody_method_name(nbody_method m) {
    static const char *names[NBODY_METHOD_COUNT_] = {
        "default", "euler", "midpoint", "leapfrog", "trapeze", "rk4", "rkck", "rkdp",
        "rkdverk", "rkf", "rkgl", "rklc", "adams", "bs"};
    return ((int)m >= 0 && m < NBODY_METHOD_COUNT_) ? names[m] : "unknown";
}

/* ---------------------------------------------------------------- bodies */
static nbody_real **nbody__fields(nbody_system *s, nbody_real **f[7]) {
    f[0] = &s->x; f[1] = &s->y; f[2] = &s->z; f[3] = &s->vx; f[4] = &s->vy; f[5] = &s->vz; f[6] = &s->m;
    return *f;
}

NBODY__DEF nbody_result nbody_system_alloc(nbody_system *s, size_t n) {
    nbody_real **f[7];
    nbody_real *block;
    size_t bytes = nbody__bytes(n, 7 * sizeof(nbody_real)), i;
    if (!s || n == 0 || bytes == 0) return NBODY_ERR_INVALID_ARGUMENT;
    block = (nbody_real *)NBODY_MALLOC(bytes);   /* one block: x is its start */
    if (!block) return NBODY_ERR_OUT_OF_MEMORY;
    memset(block, 0, bytes);
    nbody__fields(s, f);
    for (i = 0; i < 7; ++i) *f[i] = block + i * n;
    s->n = n;
    s->t = 0;
    return NBODY_OK;
}

NBODY__DEF void nbody_system_free(nbody_system *s) {
    if (!s) return;
    NBODY_FREE(s->x);
    memset(s, 0, sizeof *s);
}

static int nbody__system_valid(const nbody_system *s) {
    size_t i;
    if (!s || s->n == 0 || !s->x || !s->y || !s->z || !s->vx || !s->vy || !s->vz || !s->m) return 0;
    if (!nbody__isfinite(s->t)) return 0;
    for (i = 0; i < s->n; ++i) {
        if (!nbody__isfinite(s->x[i]) || !nbody__isfinite(s->y[i]) || !nbody__isfinite(s->z[i]) ||
            !nbody__isfinite(s->vx[i]) || !nbody__isfinite(s->vy[i]) || !nbody__isfinite(s->vz[i]) ||
            !nbody__isfinite(s->m[i]) || s->m[i] < 0)
            return 0;
    }
    return 1;
}

NBODY__DEF nbody_result nbody_system_copy(nbody_system *dst, const nbody_system *src) {
    if (!dst || !src || !src->x || !dst->x || dst->n != src->n || src->n == 0) return NBODY_ERR_INVALID_ARGUMENT;
    memcpy(dst->x, src->x, src->n * sizeof(nbody_real)); memcpy(dst->y, src->y, src->n * sizeof(nbody_real));
    memcpy(dst->z, src->z, src->n * sizeof(nbody_real)); memcpy(dst->vx, src->vx, src->n * sizeof(nbody_real));
    memcpy(dst->vy, src->vy, src->n * sizeof(nbody_real)); memcpy(dst->vz, src->vz, src->n * sizeof(nbody_real));
    memcpy(dst->m, src->m, src->n * sizeof(nbody_real));
    dst->t = src->t;
    return NBODY_OK;
}

/* ---------------------------------------------------------------- desc defaults (one place) */
static int nbody__desc_valid(const nbody_desc *d) {
    if ((int)d->engine < 0 || d->engine >= NBODY_ENGINE_COUNT_) return 0;
    if ((int)d->method < 0 || d->method >= NBODY_METHOD_COUNT_) return 0;
    if ((int)d->traversal < 0 || d->traversal >= NBODY_TRAVERSAL_COUNT_) return 0;
    if ((int)d->visit_order < 0 || d->visit_order >= NBODY_ORDER_COUNT_) return 0;
    if (d->method == NBODY_ADAMS && (d->order < 0 || d->order > 5)) return 0;
    if (!nbody__isfinite(d->G) || d->G < 0) return 0;
    if (!nbody__isfinite(d->softening) || d->softening < 0) return 0;
    if (!nbody__isfinite(d->dt) || d->dt < 0) return 0;
    if (!nbody__isfinite(d->tolerance) || d->tolerance < 0) return 0;
    if (!nbody__isfinite(d->dt_min) || d->dt_min < 0) return 0;
    if (!nbody__isfinite(d->dt_max) || d->dt_max < 0) return 0;
    if (d->dt_max > 0 && d->dt_min > d->dt_max) return 0;
    if (!nbody__isfinite(d->theta) || d->theta < 0) return 0;
    if (d->block_size < 0 || d->threads < 0 || d->device < 0) return 0;
    if (d->compensated < 0 || d->compensated > 1 || d->quadrupole < 0 || d->quadrupole > 1) return 0;
    if ((d->allocator.alloc == NULL) != (d->allocator.free == NULL)) return 0;
    return 1;
}

static nbody_desc nbody__desc_defaults(const nbody_desc *in) {
    nbody_desc d = *in;
    if (d.engine == NBODY_ENGINE_DEFAULT) d.engine = NBODY_ENGINE_BLOCK;
    if (d.method == NBODY_METHOD_DEFAULT) d.method = NBODY_LEAPFROG;
    if (d.method == NBODY_ADAMS && d.order == 0) d.order = 5;
    if (d.G == 0) d.G = 1;
    if (d.dt == 0) d.dt = (nbody_real)1e-3;
    if (d.theta == 0) d.theta = (nbody_real)0.5;
    if (d.traversal == NBODY_TRAVERSAL_DEFAULT) d.traversal = NBODY_TRAVERSAL_STACKLESS;
    if (d.visit_order == NBODY_ORDER_DEFAULT) d.visit_order = NBODY_ORDER_LEAF;
    if (!d.allocator.alloc) { d.allocator.alloc = nbody__default_alloc; d.allocator.free = nbody__default_free; d.allocator.user_data = NULL; }
    return d;
}

/* ======================================================================================
   HOST BUFFERS: the vector operations shared by every CPU engine
   ====================================================================================== */
static nbody_result nbody__host_alloc(nbody__engine *e, size_t len, nbody__buf *out) {
    size_t bytes = nbody__bytes(len, sizeof(nbody_real));
    void *p = bytes ? nbody__alloc(&e->desc, bytes) : NULL;
    if (!p) return NBODY_ERR_OUT_OF_MEMORY;
    memset(p, 0, bytes);
    *out = p;
    return NBODY_OK;
}
static void nbody__host_release(nbody__engine *e, nbody__buf b) { nbody__free(&e->desc, b); }
static nbody_result nbody__host_upload(nbody__engine *e, nbody__buf dst, size_t off, const nbody_real *src, size_t len) {
    (void)e; memcpy((nbody_real *)dst + off, src, len * sizeof(nbody_real)); return NBODY_OK;
}
static nbody_result nbody__host_download(nbody__engine *e, nbody_real *dst, nbody__buf src, size_t off, size_t len) {
    (void)e; memcpy(dst, (const nbody_real *)src + off, len * sizeof(nbody_real)); return NBODY_OK;
}

/* sum_j c[j] k[j][i], the terms in a fixed order (reproducible for any thread count) */
static nbody_real nbody__host_terms(const nbody__lincomb *op, size_t i) {
    nbody_real s = 0;
    int j;
    for (j = 0; j < op->nk; ++j) s += op->c[j] * ((const nbody_real *)op->k[j])[op->k_off + i];
    return s;
}

static nbody_result nbody__host_lincomb(nbody__engine *e, const nbody__lincomb *op) {
    nbody_real *out = (nbody_real *)op->out + op->out_off;
    const nbody_real *y = op->y ? (const nbody_real *)op->y + op->y_off : NULL;
    nbody_real *comp = op->comp ? (nbody_real *)op->comp + op->out_off : NULL;
    long long i, len = (long long)op->len;
    (void)e;
    NBODY__PRAGMA(omp parallel for schedule(static) if (len > 65536))
    for (i = 0; i < len; ++i) {
        nbody_real d = op->h * nbody__host_terms(op, (size_t)i), y0 = y ? y[i] : 0;
        if (comp) {
            nbody_real t;
            d -= comp[i];
            t = y0 + d;
            comp[i] = (t - y0) - d;
            out[i] = t;
        } else {
            out[i] = y0 + d;
        }
    }
    return NBODY_OK;
}

static nbody_result nbody__host_error_norm(nbody__engine *e, const nbody__lincomb *op, nbody_real atol,
                                           nbody_real rtol, nbody_real *norm) {
    const nbody_real *y = (const nbody_real *)op->y + op->y_off, *yn = (const nbody_real *)op->out + op->out_off;
    nbody_real worst = 0;
    size_t i;
    (void)e;
    for (i = 0; i < op->len; ++i) {
        nbody_real a = NBODY__FABS(y[i]), b = NBODY__FABS(yn[i]);
        nbody_real r = NBODY__FABS(op->h * nbody__host_terms(op, i)) / (atol + rtol * (a > b ? a : b));
        if (!(r <= worst)) worst = r;          /* NaN sticks */
        if (worst != worst) break;
    }
    *norm = worst;
    return NBODY_OK;
}

static nbody_result nbody__host_all_finite(nbody__engine *e, nbody__buf b, size_t off, size_t len, int *finite) {
    const nbody_real *p = (const nbody_real *)b + off;
    size_t i;
    (void)e;
    for (i = 0; i < len; ++i) if (!nbody__isfinite(p[i])) { *finite = 0; return NBODY_OK; }
    *finite = 1;
    return NBODY_OK;
}

/* CPU engines keep the masses and their scratch in this */
typedef struct nbody__cpu {
    nbody_real *m;
    void *tree;                    /* NBODY_ENGINE_TREE: the kd-tree workspace */
} nbody__cpu;

static nbody_result nbody__cpu_init(nbody__engine *e) {
    nbody__cpu *c = (nbody__cpu *)nbody__alloc(&e->desc, sizeof *c);
    if (!c) return NBODY_ERR_OUT_OF_MEMORY;
    memset(c, 0, sizeof *c);
    c->m = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes(e->n, sizeof(nbody_real)));
    if (!c->m) { nbody__free(&e->desc, c); return NBODY_ERR_OUT_OF_MEMORY; }
    memset(c->m, 0, e->n * sizeof(nbody_real));
    e->impl = c;
    return NBODY_OK;
}

static void nbody__tree_free(nbody__engine *e, void *tree);

static void nbody__cpu_shutdown(nbody__engine *e) {
    nbody__cpu *c = (nbody__cpu *)e->impl;
    if (!c) return;
    if (c->tree) nbody__tree_free(e, c->tree);
    nbody__free(&e->desc, c->m);
    nbody__free(&e->desc, c);
    e->impl = NULL;
}

static nbody_result nbody__cpu_set_masses(nbody__engine *e, const nbody_real *m) {
    memcpy(((nbody__cpu *)e->impl)->m, m, e->n * sizeof(nbody_real));
    return NBODY_OK;
}

#if NBODY__OPENMP
static int nbody__threads(const nbody_desc *d) { return d->threads > 0 ? d->threads : omp_get_max_threads(); }
#endif

/* ======================================================================================
   DIRECT FORCE KERNELS (SIMPLE, OPENMP, BLOCK)
   Each body's sum runs over j in index order on one thread: the result is bitwise the same
   for any thread count. The self term is excluded by index, so with softening 0 two distinct
   bodies at the same place give NaN, which the step reports as NBODY_ERR_NOT_FINITE.
   ====================================================================================== */
typedef struct nbody__forces {     /* one force evaluation: sources and targets */
    const nbody_real *x, *y, *z, *m;
    nbody_real *ax, *ay, *az;
    size_t n;
    nbody_real G, eps2;
} nbody__forces;

/* acceleration of body i from bodies [j0, j1), scalar */
static void nbody__accel_row(const nbody__forces *f, size_t i, size_t j0, size_t j1,
                             nbody_real *sx, nbody_real *sy, nbody_real *sz) {
    nbody_real xi = f->x[i], yi = f->y[i], zi = f->z[i], ax = 0, ay = 0, az = 0;
    size_t j;
    for (j = j0; j < j1; ++j) {
        nbody_real dx = f->x[j] - xi, dy = f->y[j] - yi, dz = f->z[j] - zi;
        nbody_real r2 = dx * dx + dy * dy + dz * dz + f->eps2, inv, w;
        if (j == i) continue;
        inv = 1 / NBODY__SQRT(r2);
        w = f->m[j] * inv * inv * inv;
        ax += w * dx; ay += w * dy; az += w * dz;
    }
    *sx += ax; *sy += ay; *sz += az;
}

static void nbody__accel_simple(const nbody__forces *f) {
    size_t i;
    for (i = 0; i < f->n; ++i) {
        nbody_real ax = 0, ay = 0, az = 0;
        nbody__accel_row(f, i, 0, f->n, &ax, &ay, &az);
        f->ax[i] = f->G * ax; f->ay[i] = f->G * ay; f->az[i] = f->G * az;
    }
}

static void nbody__accel_openmp(const nbody__forces *f, int threads) {
    long long i, n = (long long)f->n;
    (void)threads;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 16) num_threads(threads) if (n > 64))
    for (i = 0; i < n; ++i) {
        nbody_real ax = 0, ay = 0, az = 0;
        nbody__accel_row(f, (size_t)i, 0, f->n, &ax, &ay, &az);
        f->ax[i] = f->G * ax; f->ay[i] = f->G * ay; f->az[i] = f->G * az;
    }
}

/* ---- section: BLOCK engine kernel (SIMD) -------------------------------------------
   Explicit SIMD with the targets in the lanes: a tile holds NBODY__TILE_U vectors of W
   target bodies, every source j is broadcast to all lanes and its term added in index
   order. Each body's sum is therefore the same sequence of lane-wise operations whatever
   its tile, the block size or the thread that runs it: the result is bitwise independent
   of the thread count and of block_size. Sources need no remainder handling (they are
   broadcast one by one); the last, partial tile of targets is padded.
   The self term is excluded by index: on the diagonal (the sources inside the tile) the
   lane j == i gets 1 added to its r^2, so its dx = 0 term is exactly 0, while two distinct
   coincident bodies with softening 0 still give 0 * inf = NaN, as the SIMPLE engine does.
   1/sqrt(r^2) is the hardware estimate (rsqrt14: 14 bits; rsqrtps: 12 bits) refined to the
   working precision: float one Newton-Raphson step, double one third-order step then one
   Newton step (relative error about 2^-40 after the first, below 1 ulp after the second;
   the series y(1 + e/2 + 3e^2/8), e = 1 - x y^2, is Householder's method of order 3).
   Exception, by measurement: 256-bit double divides, 1 / (r^2 sqrt(r^2)), see below.
   AVX-512F or AVX2+FMA are chosen at compile time (-march=native, -mavx2 -mfma, ...);
   everything else, long double included, uses the portable loop the compiler vectorises.
   NBODY_NO_SIMD forces the portable loop. */
/* Below NBODY__BLOCK_PARALLEL_N bodies one thread runs the whole evaluation (n = 1024 is
   about 0.4 ms on one core, far above a fork/join; smaller n gains little and, on a loaded
   machine, loses badly when a worker is descheduled). Chunks of 4 tiles balance well. */
#ifndef NBODY__BLOCK_PARALLEL_N
#define NBODY__BLOCK_PARALLEL_N 1024
#endif
#define NBODY__BLOCK_CHUNK 4
#define NBODY__BLOCK_DEFAULT 64
#if !defined(NBODY_NO_SIMD) && defined(__GNUC__) && (defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)))
#include <immintrin.h>
#define NBODY__SIMD 1
#define NBODY__VINLINE static inline __attribute__((always_inline)) NBODY__UNUSED
#ifdef __AVX512F__
/* maskz forms: the plain ones trip g++ 12 -Wmaybe-uninitialized inside immintrin.h */
typedef __m512 nbody__vf_t;
typedef __m512d nbody__vd_t;
#define NBODY__MM(op, t) _mm512_##op##_##t
#ifndef NBODY__TILE_U
#define NBODY__TILE_U 2
#endif
NBODY__VINLINE nbody__vf_t nbody__vf_estimate(nbody__vf_t x) { return _mm512_maskz_rsqrt14_ps((__mmask16)0xFFFF, x); }
NBODY__VINLINE nbody__vd_t nbody__vd_estimate(nbody__vd_t x) { return _mm512_maskz_rsqrt14_pd((__mmask8)0xFF, x); }
#define NBODY__SIMD_ISA "avx512"
#ifndef NBODY__VD_DIVIDE
#define NBODY__VD_DIVIDE 0         /* 512-bit sqrt/divide are slow: rsqrt14 + refinement */
#endif
#else
typedef __m256 nbody__vf_t;
typedef __m256d nbody__vd_t;
#define NBODY__MM(op, t) _mm256_##op##_##t
#ifndef NBODY__TILE_U
#define NBODY__TILE_U 2
#endif
NBODY__VINLINE nbody__vf_t nbody__vf_estimate(nbody__vf_t x) { return _mm256_rsqrt_ps(x); }
/* AVX2 has no double estimate: the float one (valid for r^2 in the float range) serves
   only when NBODY__VD_DIVIDE is 0; the default divides. */
NBODY__VINLINE nbody__vd_t nbody__vd_estimate(nbody__vd_t x) { return _mm256_cvtps_pd(_mm_rsqrt_ps(_mm256_cvtpd_ps(x))); }
#define NBODY__SIMD_ISA "avx2"
#ifndef NBODY__VD_DIVIDE
#define NBODY__VD_DIVIDE 1         /* measured on Zen 3: sqrt + divide 8.5e8 /s per core,
                                      float estimate + refinement 6.6e8 /s (the divider runs
                                      beside the FMA pipes); also exact over the whole range */
#endif
#endif
#if defined(__clang__)
#define NBODY__UNROLL _Pragma("unroll")
#else
#define NBODY__UNROLL _Pragma("GCC unroll 4")
#endif
#ifndef NBODY__VF_DIVIDE
#define NBODY__VF_DIVIDE 0
#endif
#define NBODY__TILE_W(V) ((int)(sizeof(V##_t) / sizeof(V##_s)))

/* The kernel, written once over width-generic helpers; instantiated below for float (vf)
   and double (vd). V: prefix, T: scalar type, t: intrinsic suffix, STEPS3: third-order
   refinement steps before the final Newton step. */
#define NBODY__SIMD_KERNEL(V, T, t, STEPS3, DIVIDE)                                                   \
typedef T V##_s;                                                                                \
NBODY__VINLINE V##_t V##_set1(T a) { return NBODY__MM(set1, t)(a); }                            \
NBODY__VINLINE V##_t V##_load(const T *p) { return NBODY__MM(loadu, t)(p); }                    \
NBODY__VINLINE void V##_store(T *p, V##_t a) { NBODY__MM(storeu, t)(p, a); }                    \
NBODY__VINLINE V##_t V##_add(V##_t a, V##_t b) { return NBODY__MM(add, t)(a, b); }              \
NBODY__VINLINE V##_t V##_sub(V##_t a, V##_t b) { return NBODY__MM(sub, t)(a, b); }              \
NBODY__VINLINE V##_t V##_mul(V##_t a, V##_t b) { return NBODY__MM(mul, t)(a, b); }              \
NBODY__VINLINE V##_t V##_fma(V##_t a, V##_t b, V##_t c) { return NBODY__MM(fmadd, t)(a, b, c); } \
NBODY__VINLINE V##_t V##_fnma(V##_t a, V##_t b, V##_t c) { return NBODY__MM(fnmadd, t)(a, b, c); } \
/* 1/sqrt(x) to the working precision (see the section comment) */                              \
NBODY__VINLINE V##_t V##_rsqrt(V##_t x) {                                                       \
    V##_t one = V##_set1(1), half = V##_set1((T)0.5), y = V##_estimate(x), e;                   \
    int k;                                                                                      \
    for (k = 0; k < (STEPS3); ++k) {                                                            \
        e = V##_fnma(V##_mul(x, y), y, one);                                                    \
        y = V##_fma(V##_mul(y, e), V##_fma(e, V##_set1((T)0.375), half), y);                    \
    }                                                                                           \
    e = V##_fnma(V##_mul(x, y), y, one);                                                        \
    return V##_fma(V##_mul(y, e), half, y);                                                     \
}                                                                                               \
/* x^(-3/2): the refined estimate cubed, or (DIVIDE) one correctly rounded sqrt and divide,     \
   which runs beside the FMA pipes and wins where the divider is fast for the width */       \
NBODY__VINLINE V##_t V##_rsqrt3(V##_t x) {                                                      \
    V##_t r;                                                                                    \
    if (DIVIDE) return NBODY__MM(div, t)(V##_set1(1), V##_mul(x, NBODY__MM(sqrt, t)(x)));       \
    r = V##_rsqrt(x);                                                                           \
    return V##_mul(r, V##_mul(r, r));                                                           \
}                                                                                               \
/* s += m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2), lane-wise */                           \
NBODY__VINLINE void V##_interact(V##_t xj, V##_t yj, V##_t zj, V##_t mj, V##_t e2,              \
                                 V##_t xi, V##_t yi, V##_t zi, V##_t *sx, V##_t *sy, V##_t *sz) { \
    V##_t dx = V##_sub(xj, xi), dy = V##_sub(yj, yi), dz = V##_sub(zj, zi);                     \
    V##_t w = V##_mul(mj, V##_rsqrt3(V##_fma(dx, dx, V##_fma(dy, dy, V##_fma(dz, dz, e2)))));  \
    *sx = V##_fma(w, dx, *sx); *sy = V##_fma(w, dy, *sy); *sz = V##_fma(w, dz, *sz);            \
}                                                                                               \
/* one tile: targets t[x|y|z][0 .. U*W) (body i0 in lane 0) against all n sources;           \
   a[x|y|z] = G * sum. The u loops are unrolled so that the tile lives in registers. */        \
static void V##_tile(const T *x, const T *y, const T *z, const T *m, size_t n, T eps2, T G,     \
                     size_t i0, const T *tx, const T *ty, const T *tz, T *ax, T *ay, T *az) {   \
    enum { W = NBODY__TILE_W(V), U = NBODY__TILE_U };                                           \
    T onehot[2 * W];                                                                            \
    V##_t e2 = V##_set1(eps2), xi[U], yi[U], zi[U], sx[U], sy[U], sz[U];                        \
    size_t j, je = i0 + (size_t)(U * W) < n ? i0 + (size_t)(U * W) : n;                         \
    int u;                                                                                      \
    for (u = 0; u < U; ++u) {                                                                   \
        xi[u] = V##_load(tx + u * W); yi[u] = V##_load(ty + u * W); zi[u] = V##_load(tz + u * W); \
        sx[u] = sy[u] = sz[u] = V##_set1(0);                                                    \
    }                                                                                           \
    for (u = 0; u < 2 * W; ++u) onehot[u] = 0;                                                  \
    onehot[W] = 1;                                                                              \
    for (j = 0; j < i0; ++j) {                                                                  \
        V##_t xj = V##_set1(x[j]), yj = V##_set1(y[j]), zj = V##_set1(z[j]), mj = V##_set1(m[j]); \
        NBODY__UNROLL for (u = 0; u < U; ++u)                                                   \
            V##_interact(xj, yj, zj, mj, e2, xi[u], yi[u], zi[u], &sx[u], &sy[u], &sz[u]);      \
    }                                                                                           \
    for (; j < je; ++j) { /* the diagonal: 1 added to r^2 in the lane of body j itself */       \
        V##_t xj = V##_set1(x[j]), yj = V##_set1(y[j]), zj = V##_set1(z[j]), mj = V##_set1(m[j]); \
        for (u = 0; u < U; ++u) {                                                               \
            long long l = (long long)(j - i0) - (long long)u * W;                               \
            V##_t d = (l >= 0 && l < W) ? V##_add(e2, V##_load(onehot + W - l)) : e2;           \
            V##_interact(xj, yj, zj, mj, d, xi[u], yi[u], zi[u], &sx[u], &sy[u], &sz[u]);       \
        }                                                                                       \
    }                                                                                           \
    for (; j < n; ++j) {                                                                        \
        V##_t xj = V##_set1(x[j]), yj = V##_set1(y[j]), zj = V##_set1(z[j]), mj = V##_set1(m[j]); \
        NBODY__UNROLL for (u = 0; u < U; ++u)                                                   \
            V##_interact(xj, yj, zj, mj, e2, xi[u], yi[u], zi[u], &sx[u], &sy[u], &sz[u]);      \
    }                                                                                           \
    for (u = 0; u < U; ++u) {                                                                   \
        V##_t g = V##_set1(G);                                                                  \
        V##_store(ax + u * W, V##_mul(g, sx[u]));                                               \
        V##_store(ay + u * W, V##_mul(g, sy[u]));                                               \
        V##_store(az + u * W, V##_mul(g, sz[u]));                                               \
    }                                                                                           \
}                                                                                               \
/* all targets, tile by tile; the last tile padded (its extra lanes are computed, dropped) */  \
static void V##_forces(const nbody__forces *f, int threads, int block) {                        \
    enum { TW = NBODY__TILE_W(V) * NBODY__TILE_U };                                             \
    const T *x = (const T *)f->x, *y = (const T *)f->y, *z = (const T *)f->z, *m = (const T *)f->m; \
    T *ax = (T *)f->ax, *ay = (T *)f->ay, *az = (T *)f->az, eps2 = (T)f->eps2, G = (T)f->G;     \
    size_t n = f->n;                                                                            \
    long long t, ntiles = (long long)((n + TW - 1) / TW);                                       \
    int chunk = block > 0 ? (block + TW - 1) / TW : NBODY__BLOCK_CHUNK;                         \
    (void)threads; (void)chunk;                                                                 \
    NBODY__PRAGMA(omp parallel for schedule(dynamic, chunk) num_threads(threads)                \
                  if (n >= NBODY__BLOCK_PARALLEL_N))                                            \
    for (t = 0; t < ntiles; ++t) {                                                              \
        size_t i0 = (size_t)t * TW, k, nk = n - i0 < (size_t)TW ? n - i0 : (size_t)TW;          \
        T p[6][TW];                                                                             \
        if (nk == (size_t)TW) {                                                                 \
            V##_tile(x, y, z, m, n, eps2, G, i0, x + i0, y + i0, z + i0, ax + i0, ay + i0, az + i0); \
            continue;                                                                           \
        }                                                                                       \
        for (k = 0; k < (size_t)TW; ++k) {                                                      \
            p[0][k] = k < nk ? x[i0 + k] : 0; p[1][k] = k < nk ? y[i0 + k] : 0;                 \
            p[2][k] = k < nk ? z[i0 + k] : 0;                                                   \
        }                                                                                       \
        V##_tile(x, y, z, m, n, eps2, G, i0, p[0], p[1], p[2], p[3], p[4], p[5]);               \
        for (k = 0; k < nk; ++k) { ax[i0 + k] = p[3][k]; ay[i0 + k] = p[4][k]; az[i0 + k] = p[5][k]; } \
    }                                                                                           \
}
NBODY__SIMD_KERNEL(nbody__vf, float, ps, 0, NBODY__VF_DIVIDE)
NBODY__SIMD_KERNEL(nbody__vd, double, pd, 1, NBODY__VD_DIVIDE)
#else
#define NBODY__SIMD 0
#define NBODY__SIMD_ISA "portable"
#endif

/* the article's 'openmp + block + optimization' loop (a branch-free loop the compiler
   vectorises), softened, any n: the portable path for long double and non-x86 targets */
static void nbody__accel_block_portable(const nbody__forces *f, int threads, int block) {
    long long b, nblocks, n = (long long)f->n;
    (void)threads;
    if (block <= 0) block = NBODY__BLOCK_DEFAULT;
    nblocks = (n + block - 1) / block;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 1) num_threads(threads) if (n >= NBODY__BLOCK_PARALLEL_N))
    for (b = 0; b < nblocks; ++b) {
        size_t i0 = (size_t)b * (size_t)block, i1 = i0 + (size_t)block, i;
        if (i1 > f->n) i1 = f->n;
        for (i = i0; i < i1; ++i) {
            nbody_real xi = f->x[i], yi = f->y[i], zi = f->z[i], ax = 0, ay = 0, az = 0;
            size_t j;
            NBODY__PRAGMA(omp simd reduction(+:ax, ay, az))
            for (j = 0; j < f->n; ++j) {
                nbody_real dx = f->x[j] - xi, dy = f->y[j] - yi, dz = f->z[j] - zi;
                nbody_real r2 = dx * dx + dy * dy + dz * dz + f->eps2;
                nbody_real inv, w;
                r2 = (j == i) ? 1 : r2;
                inv = 1 / NBODY__SQRT(r2);
                w = (j == i) ? 0 : f->m[j] * inv * inv * inv;
                ax += w * dx; ay += w * dy; az += w * dz;
            }
            f->ax[i] = f->G * ax; f->ay[i] = f->G * ay; f->az[i] = f->G * az;
        }
    }
}

/* block: targets per scheduling chunk (rounded up to whole tiles); 0 = automatic */
static void nbody__accel_block(const nbody__forces *f, int threads, int block) {
#if NBODY__SIMD
    if (sizeof(nbody_real) == sizeof(float)) { nbody__vf_forces(f, threads, block); return; }
    if (sizeof(nbody_real) == sizeof(double)) { nbody__vd_forces(f, threads, block); return; }
#endif
    nbody__accel_block_portable(f, threads, block);
}
/* ---- end section: BLOCK engine kernel ---- */

static nbody__forces nbody__forces_for(nbody__engine *e, nbody__buf yb, nbody__buf fb) {
    nbody_real *y = (nbody_real *)yb, *f = (nbody_real *)fb;
    size_t n = e->n;
    nbody__forces F;
    F.x = y; F.y = y + n; F.z = y + 2 * n; F.m = ((nbody__cpu *)e->impl)->m;
    F.ax = f + 3 * n; F.ay = f + 4 * n; F.az = f + 5 * n;
    F.n = n; F.G = e->desc.G; F.eps2 = e->desc.softening * e->desc.softening;
    memcpy(f, y + 3 * n, 3 * n * sizeof(nbody_real));   /* dx/dt = v */
    return F;
}

static nbody_result nbody__simple_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__forces F = nbody__forces_for(e, y, f);
    nbody__accel_simple(&F);
    return NBODY_OK;
}
static nbody_result nbody__openmp_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__forces F = nbody__forces_for(e, y, f);
#if NBODY__OPENMP
    nbody__accel_openmp(&F, nbody__threads(&e->desc));
#else
    nbody__accel_openmp(&F, 1);
#endif
    return NBODY_OK;
}
static nbody_result nbody__block_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__forces F = nbody__forces_for(e, y, f);
#if NBODY__OPENMP
    nbody__accel_block(&F, nbody__threads(&e->desc), e->desc.block_size);
#else
    nbody__accel_block(&F, 1, e->desc.block_size);
#endif
    return NBODY_OK;
}

/* ======================================================================================
   section: KD-TREE (NBODY_ENGINE_TREE)
   ====================================================================================== */
static void nbody__tree_free(nbody__engine *e, void *tree) { (void)e; (void)tree; }
static nbody_result nbody__tree_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    (void)e; (void)y; (void)f;
    return NBODY_ERR_UNAVAILABLE;
}
#define NBODY__TREE_AVAILABLE 0
/* ---- end section: KD-TREE ---- */

#define NBODY__CPU_ENGINE(label, deriv) { label, nbody__cpu_init, nbody__cpu_shutdown, nbody__host_alloc, \
    nbody__host_release, nbody__host_upload, nbody__host_download, nbody__cpu_set_masses, deriv, \
    nbody__host_lincomb, nbody__host_error_norm, nbody__host_all_finite }
static const nbody__engine_ops nbody__simple_ops = NBODY__CPU_ENGINE("simple", nbody__simple_derivative);
static const nbody__engine_ops nbody__openmp_ops = NBODY__CPU_ENGINE("openmp", nbody__openmp_derivative);
static const nbody__engine_ops nbody__block_ops = NBODY__CPU_ENGINE("block", nbody__block_derivative);
static const nbody__engine_ops nbody__tree_ops = NBODY__CPU_ENGINE("tree", nbody__tree_derivative);

#ifdef NBODY_WITH_OPENCL
#include "nbody_cl.h"              /* defines nbody__opencl_engine_ops(int tree) */
#endif

/* the ops table for an engine, NULL when compiled out */
static const nbody__engine_ops *nbody__engine_ops_for(nbody_engine engine) {
    switch (engine) {
    case NBODY_ENGINE_DEFAULT:
    case NBODY_ENGINE_BLOCK: return &nbody__block_ops;
    case NBODY_ENGINE_SIMPLE: return &nbody__simple_ops;
    case NBODY_ENGINE_OPENMP: return &nbody__openmp_ops;
    case NBODY_ENGINE_TREE: return NBODY__TREE_AVAILABLE ? &nbody__tree_ops : NULL;
#ifdef NBODY_WITH_CUDA
    case NBODY_ENGINE_CUDA: return nbody__cuda_engine_ops(0);
    case NBODY_ENGINE_CUDA_TREE: return nbody__cuda_engine_ops(1);
#endif
#ifdef NBODY_WITH_OPENCL
    case NBODY_ENGINE_OPENCL: return nbody__opencl_engine_ops(0);
    case NBODY_ENGINE_OPENCL_TREE: return nbody__opencl_engine_ops(1);
#endif
    default: return NULL;
    }
}

NBODY__DEF int nbody_engine_available(nbody_engine e) {
    return ((int)e >= 0 && e < NBODY_ENGINE_COUNT_) && nbody__engine_ops_for(e) != NULL;
}

/* engine lifetime: start with the masses, stop frees everything */
static nbody_result nbody__engine_start(nbody__engine *e, const nbody_desc *d, size_t n, const nbody_real *m) {
    nbody_result r;
    memset(e, 0, sizeof *e);
    e->ops = nbody__engine_ops_for(d->engine);
    if (!e->ops) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: engine '%s' is not available in this build", nbody_engine_name(d->engine));
        return NBODY_ERR_UNAVAILABLE;
    }
    e->desc = *d;
    e->n = n;
    r = e->ops->init(e);
    if (r != NBODY_OK) { e->ops = NULL; return r; }
    r = e->ops->set_masses(e, m);
    if (r != NBODY_OK) { e->ops->shutdown(e); e->ops = NULL; }
    return r;
}

static void nbody__engine_stop(nbody__engine *e) {
    if (e->ops) e->ops->shutdown(e);
    e->ops = NULL;
}

/* ======================================================================================
   SOLVERS: written once against the engine operations, so every method runs on every
   engine and the state never leaves the device between steps.
   ====================================================================================== */
typedef struct nbody__tableau {    /* explicit or implicit Runge-Kutta */
    int stages, order, embedded_order, fsal;
    const nbody_real *a;           /* stages x stages, row-major */
    const nbody_real *b;           /* propagating (higher-order) weights */
    const nbody_real *bhat;        /* embedded weights, NULL when none */
    const nbody_real *c;
} nbody__tableau;

typedef struct nbody__method_info nbody__method_info;

#define NBODY__MAX_WORK 24

struct nbody_sim {
    nbody__engine eng;
    nbody_desc desc;               /* defaults resolved */
    const nbody__method_info *method;
    size_t n, len;                 /* bodies, 6n */
    nbody__buf y, y_new, ytmp;     /* state, candidate, stage argument */
    nbody__buf k[NBODY__MAX_TERMS];/* stage derivatives; k[0] = f(y) when f_valid */
    nbody__buf comp, comp_new;     /* Kahan compensation (desc.compensated) */
    nbody__buf work[NBODY__MAX_WORK]; /* method-private vectors */
    int nk, nwork;
    int f_valid;                   /* k[0] holds f(y) */
    int history;                   /* multistep methods: how many past derivatives are valid */
    /* Method-private scalars. Every piece of a method's state lives in the buffers above or
       in these fields, so a checkpoint that saves them restarts any method bitwise exactly. */
    int        mint[8];
    nbody_real mreal[8];
    nbody_real t, dt_next;
    nbody_real *m;                 /* host copy of the masses */
    nbody_stats stats;
};

/* attempt one step of size h from sim->y into sim->y_new; *err is the scaled error norm
   (<= 1 accepts) for adaptive methods, 0 otherwise */
typedef nbody_result (*nbody__attempt_fn)(nbody_sim *s, nbody_real h, nbody_real *err);
/* after an accepted step (y_new already swapped into y) */
typedef void (*nbody__commit_fn)(nbody_sim *s, nbody_real h);

struct nbody__method_info {
    nbody_method id;
    int order;                     /* nominal order (Adams: from desc.order) */
    int adaptive;                  /* has an error estimate: tolerance > 0 turns control on */
    int nk, nwork;                 /* buffers it needs */
    const nbody__tableau *tableau;
    nbody__attempt_fn attempt;
    nbody__commit_fn commit;       /* NULL: nothing to do */
};

static nbody_result nbody__derivative(nbody_sim *s, nbody__buf y, nbody__buf f) {
    s->stats.force_evals++;
    return s->eng.ops->derivative(&s->eng, y, f);
}

static nbody__lincomb nbody__op(nbody__buf out, nbody__buf y, nbody_real h, size_t len) {
    nbody__lincomb op;
    memset(&op, 0, sizeof op);
    op.out = out; op.y = y; op.h = h; op.len = len;
    return op;
}

/* k[0] = f(y) unless already known */
static nbody_result nbody__first_stage(nbody_sim *s) {
    nbody_result r = NBODY_OK;
    if (!s->f_valid) r = nbody__derivative(s, s->y, s->k[0]);
    if (r == NBODY_OK) s->f_valid = 1;
    return r;
}

/* y_new = y + h * sum c_j k_j over the whole state, Kahan-compensated when asked: the one
   place every method makes its final update */
static nbody_result nbody__update(nbody_sim *s, nbody_real h, int nk, const nbody_real *c, nbody__buf const *k) {
    nbody__lincomb op = nbody__op(s->y_new, s->y, h, s->len);
    int j;
    if (s->comp) {
        nbody__lincomb copy = nbody__op(s->comp_new, s->comp, 0, s->len);
        nbody_result r = s->eng.ops->lincomb(&s->eng, &copy);
        if (r != NBODY_OK) return r;
        op.comp = s->comp_new;
    }
    op.nk = nk;
    for (j = 0; j < nk; ++j) { op.c[j] = c[j]; op.k[j] = k[j]; }
    return s->eng.ops->lincomb(&s->eng, &op);
}

/* ---- explicit Runge-Kutta from a Butcher tableau (with an embedded row when present) ---- */
static nbody_result nbody__attempt_erk(nbody_sim *s, nbody_real h, nbody_real *err) {
    const nbody__tableau *T = s->method->tableau;
    nbody_result r = nbody__first_stage(s);
    int i, j;
    for (i = 1; i < T->stages && r == NBODY_OK; ++i) {
        nbody__lincomb op = nbody__op(s->ytmp, s->y, h, s->len);
        for (j = 0; j < i; ++j) {
            nbody_real a = T->a[i * T->stages + j];
            if (a != 0) { op.c[op.nk] = a; op.k[op.nk] = s->k[j]; op.nk++; }
        }
        r = s->eng.ops->lincomb(&s->eng, &op);
        if (r == NBODY_OK) r = nbody__derivative(s, s->ytmp, s->k[i]);
    }
    if (r == NBODY_OK) r = nbody__update(s, h, T->stages, T->b, s->k);
    *err = 0;
    if (r == NBODY_OK && T->bhat && s->desc.tolerance > 0) {
        nbody__lincomb op = nbody__op(s->y_new, s->y, h, s->len);
        op.nk = T->stages;
        for (j = 0; j < T->stages; ++j) { op.c[j] = T->b[j] - T->bhat[j]; op.k[j] = s->k[j]; }
        r = s->eng.ops->error_norm(&s->eng, &op, s->desc.tolerance, s->desc.tolerance, err);
    }
    return r;
}

static void nbody__swap(nbody__buf *a, nbody__buf *b) { nbody__buf t = *a; *a = *b; *b = t; }

static void nbody__commit_erk(nbody_sim *s, nbody_real h) {
    const nbody__tableau *T = s->method->tableau;
    (void)h;
    if (T->fsal) { nbody__swap(&s->k[0], &s->k[T->stages - 1]); s->f_valid = 1; }
    else s->f_valid = 0;
}

/* ---- leapfrog, kick-drift-kick: v+ = v + h/2 a(x); x' = x + h v+; v' = v+ + h/2 a(x').
   Written as one update y' = y + h [v+, (a(x) + a(x'))/2] so the compensated path is shared;
   a(x') is reused as a(x) of the next step (one force evaluation per step). */
static nbody_result nbody__attempt_leapfrog(nbody_sim *s, nbody_real h, nbody_real *err) {
    size_t h3 = s->len / 2;
    nbody__buf rate = s->work[0];
    nbody__lincomb op;
    nbody_result r = nbody__first_stage(s);
    *err = 0;
    if (r != NBODY_OK) return r;
    op = nbody__op(rate, s->y, h / 2, h3);                     /* rate_x = v + h/2 a(x) */
    op.y_off = h3; op.nk = 1; op.c[0] = 1; op.k[0] = s->k[0]; op.k_off = h3;
    if ((r = s->eng.ops->lincomb(&s->eng, &op)) != NBODY_OK) return r;
    op = nbody__op(s->ytmp, s->y, h, h3);                      /* x' = x + h rate_x */
    op.nk = 1; op.c[0] = 1; op.k[0] = rate;
    if ((r = s->eng.ops->lincomb(&s->eng, &op)) != NBODY_OK) return r;
    if ((r = nbody__derivative(s, s->ytmp, s->k[1])) != NBODY_OK) return r;
    op = nbody__op(rate, NULL, 1, h3);                         /* rate_v = (a + a')/2 */
    op.out_off = h3; op.k_off = h3; op.nk = 2; op.c[0] = op.c[1] = (nbody_real)0.5;
    op.k[0] = s->k[0]; op.k[1] = s->k[1];
    if ((r = s->eng.ops->lincomb(&s->eng, &op)) != NBODY_OK) return r;
    {
        nbody_real one = 1;
        return nbody__update(s, h, 1, &one, &rate);
    }
}

static void nbody__commit_leapfrog(nbody_sim *s, nbody_real h) {
    (void)h;
    nbody__swap(&s->k[0], &s->k[1]);   /* a(x') of the step just taken */
    s->f_valid = 1;
}

/* ---- tableaux ---- */
static const nbody_real nbody__euler_a[] = {0};
static const nbody_real nbody__euler_b[] = {1};
static const nbody_real nbody__euler_c[] = {0};
static const nbody__tableau nbody__euler_tab = {1, 1, 0, 0, nbody__euler_a, nbody__euler_b, NULL, nbody__euler_c};

/* explicit midpoint (Runge's second-order method) */
static const nbody_real nbody__midpoint_a[] = {0, 0, NBODY__Q(1, 2), 0};
static const nbody_real nbody__midpoint_b[] = {0, 1};
static const nbody_real nbody__midpoint_c[] = {0, NBODY__Q(1, 2)};
static const nbody__tableau nbody__midpoint_tab = {2, 2, 0, 0, nbody__midpoint_a, nbody__midpoint_b, NULL, nbody__midpoint_c};

/* classical fourth-order Runge-Kutta (Kutta 1901) */
static const nbody_real nbody__rk4_a[] = {0, 0, 0, 0, NBODY__Q(1, 2), 0, 0, 0, 0, NBODY__Q(1, 2), 0, 0, 0, 0, 1, 0};
static const nbody_real nbody__rk4_b[] = {NBODY__Q(1, 6), NBODY__Q(1, 3), NBODY__Q(1, 3), NBODY__Q(1, 6)};
static const nbody_real nbody__rk4_c[] = {0, NBODY__Q(1, 2), NBODY__Q(1, 2), 1};
static const nbody__tableau nbody__rk4_tab = {4, 4, 0, 0, nbody__rk4_a, nbody__rk4_b, NULL, nbody__rk4_c};

/* ---- section: INTEGRATORS (tableaux, implicit, Adams, Bulirsch-Stoer) ---- */
/* ---- end section: INTEGRATORS ---- */

/* one row per nbody_method, in enum order; attempt NULL = not built yet */
static const nbody__method_info nbody__methods[NBODY_METHOD_COUNT_] = {
    {NBODY_METHOD_DEFAULT, 0, 0, 0, 0, NULL, NULL, NULL},
    {NBODY_EULER, 1, 0, 1, 0, &nbody__euler_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_MIDPOINT, 2, 0, 2, 0, &nbody__midpoint_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_LEAPFROG, 2, 0, 2, 1, NULL, nbody__attempt_leapfrog, nbody__commit_leapfrog},
    {NBODY_TRAPEZE, 2, 0, 0, 0, NULL, NULL, NULL},
    {NBODY_RK4, 4, 0, 4, 0, &nbody__rk4_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_RKCK, 5, 1, 0, 0, NULL, NULL, NULL},
    {NBODY_RKDP, 5, 1, 0, 0, NULL, NULL, NULL},
    {NBODY_RKDVERK, 6, 1, 0, 0, NULL, NULL, NULL},
    {NBODY_RKF, 7, 1, 0, 0, NULL, NULL, NULL},
    {NBODY_RKGL, 6, 0, 0, 0, NULL, NULL, NULL},
    {NBODY_RKLC, 4, 1, 0, 0, NULL, NULL, NULL},
    {NBODY_ADAMS, 5, 0, 0, 0, NULL, NULL, NULL},
    {NBODY_BS, 0, 1, 0, 0, NULL, NULL, NULL}};

NBODY__DEF int nbody_method_order(nbody_method m, int adams_order) {
    if ((int)m < 0 || m >= NBODY_METHOD_COUNT_) return 0;
    if (m == NBODY_METHOD_DEFAULT) m = NBODY_LEAPFROG;
    if (m == NBODY_ADAMS) return adams_order >= 1 && adams_order <= 5 ? adams_order : 5;
    return nbody__methods[m].order;
}

/* ---- step-size controller (Hairer, Norsett & Wanner, Solving ODEs I, II.4):
   h_new = h * min(grow, max(shrink, safety * err^(-1/(q+1)))), q the lower order of the pair */
#define NBODY__SAFETY ((nbody_real)0.9)
#define NBODY__GROW ((nbody_real)5)
#define NBODY__SHRINK ((nbody_real)0.2)

static nbody_real nbody__controller(const nbody_sim *s, nbody_real h, nbody_real err) {
    int q = s->method->tableau ? s->method->tableau->embedded_order : s->method->order - 1;
    nbody_real f;
    if (q < 1) q = 1;
    if (!(err == err)) return h * NBODY__SHRINK;                  /* NaN: shrink hard */
    if (err <= 0) return h * NBODY__GROW;
    f = NBODY__SAFETY * NBODY__POW(err, -(nbody_real)1 / (nbody_real)(q + 1));
    if (f > NBODY__GROW) f = NBODY__GROW;
    if (f < NBODY__SHRINK) f = NBODY__SHRINK;
    return h * f;
}

static int nbody__adaptive(const nbody_sim *s) { return s->method->adaptive && s->desc.tolerance > 0; }

/* Take one accepted step, never past t_limit (pass +Inf for none). The state is committed
   only when the step succeeds and is finite: on any error y, t and history are unchanged. */
static nbody_result nbody__step_to(nbody_sim *s, nbody_real t_limit) {
    nbody_real h = s->dt_next, remaining = t_limit - s->t, err = 0;
    int clipped = 0, rejected = 0, finite = 0;
    nbody_result r;
    if (s->desc.dt_max > 0 && h > s->desc.dt_max) h = s->desc.dt_max;
    if (h >= remaining || remaining - h < h * (nbody_real)1e-8) { h = remaining; clipped = 1; }
    for (;;) {
        r = s->method->attempt(s, h, &err);
        if (r != NBODY_OK) return r;
        if (!nbody__adaptive(s) || err <= 1) break;
        s->stats.rejected++;
        rejected = 1;
        h = nbody__controller(s, h, err);
        clipped = 0;
        if (h <= s->desc.dt_min || h <= NBODY__FABS(s->t) * (nbody_real)(4 * DBL_EPSILON) || !(h > 0)) {
            nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: step size %g below dt_min at t = %g", (double)h, (double)s->t);
            return NBODY_ERR_STEP_TOO_SMALL;
        }
    }
    r = s->eng.ops->all_finite(&s->eng, s->y_new, 0, s->len, &finite);
    if (r != NBODY_OK) return r;
    if (!finite) {
        nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: state became NaN/Inf in the step from t = %g", (double)s->t);
        return NBODY_ERR_NOT_FINITE;
    }
    nbody__swap(&s->y, &s->y_new);
    if (s->comp) nbody__swap(&s->comp, &s->comp_new);
    s->t = clipped ? t_limit : s->t + h;
    s->stats.steps++;
    s->stats.dt = h;
    if (s->method->commit) s->method->commit(s, h);
    if (nbody__adaptive(s)) {
        nbody_real next = nbody__controller(s, h, err);
        if (rejected && next > h) next = h;            /* no growth right after a rejection */
        if (!(clipped && !rejected && next < s->dt_next)) s->dt_next = next;
        if (s->desc.dt_max > 0 && s->dt_next > s->desc.dt_max) s->dt_next = s->desc.dt_max;
        if (s->dt_next < s->desc.dt_min) s->dt_next = s->desc.dt_min;
    }
    return NBODY_OK;
}

/* ---- simulation object ---- */
static void nbody__release_buffers(nbody_sim *s) {
    int i;
    if (!s->eng.ops) return;
    s->eng.ops->release(&s->eng, s->y); s->eng.ops->release(&s->eng, s->y_new);
    s->eng.ops->release(&s->eng, s->ytmp);
    s->eng.ops->release(&s->eng, s->comp); s->eng.ops->release(&s->eng, s->comp_new);
    for (i = 0; i < NBODY__MAX_TERMS; ++i) s->eng.ops->release(&s->eng, s->k[i]);
    for (i = 0; i < NBODY__MAX_WORK; ++i) s->eng.ops->release(&s->eng, s->work[i]);
}

NBODY__DEF void nbody_destroy(nbody_sim *sim) {
    nbody_desc d;
    if (!sim) return;
    d = sim->desc;
    nbody__release_buffers(sim);
    nbody__engine_stop(&sim->eng);
    nbody__free(&d, sim->m);
    nbody__free(&d, sim);
}

/* upload a host system into the simulation's state (n already checked) */
static nbody_result nbody__upload_state(nbody_sim *s, const nbody_system *in) {
    const nbody_real *f[6];
    nbody_result r = NBODY_OK;
    int i;
    f[0] = in->x; f[1] = in->y; f[2] = in->z; f[3] = in->vx; f[4] = in->vy; f[5] = in->vz;
    for (i = 0; i < 6 && r == NBODY_OK; ++i) r = s->eng.ops->upload(&s->eng, s->y, (size_t)i * s->n, f[i], s->n);
    return r;
}

static nbody_result nbody__alloc_buffers(nbody_sim *s) {
    nbody_result r = NBODY_OK;
    int i;
    r = s->eng.ops->alloc(&s->eng, s->len, &s->y);
    if (r == NBODY_OK) r = s->eng.ops->alloc(&s->eng, s->len, &s->y_new);
    if (r == NBODY_OK) r = s->eng.ops->alloc(&s->eng, s->len, &s->ytmp);
    if (r == NBODY_OK && s->desc.compensated) {
        r = s->eng.ops->alloc(&s->eng, s->len, &s->comp);
        if (r == NBODY_OK) r = s->eng.ops->alloc(&s->eng, s->len, &s->comp_new);
    }
    for (i = 0; i < s->nk && r == NBODY_OK; ++i) r = s->eng.ops->alloc(&s->eng, s->len, &s->k[i]);
    for (i = 0; i < s->nwork && r == NBODY_OK; ++i) r = s->eng.ops->alloc(&s->eng, s->len, &s->work[i]);
    return r;
}

NBODY__DEF nbody_result nbody_create(nbody_sim **out, const nbody_desc *desc, const nbody_system *initial) {
    nbody_desc d;
    nbody_sim *s;
    nbody_result r;
    if (!out || !desc || !nbody__desc_valid(desc) || !nbody__system_valid(initial)) return NBODY_ERR_INVALID_ARGUMENT;
    if (initial->n > ((size_t)-1) / (6 * sizeof(nbody_real))) return NBODY_ERR_INVALID_ARGUMENT;
    d = nbody__desc_defaults(desc);
    if (!nbody__methods[d.method].attempt) {
        nbody__log(&d, NBODY_LOG_ERROR, "nbody: method '%s' is not built yet", nbody_method_name(d.method));
        return NBODY_ERR_UNAVAILABLE;
    }
    s = (nbody_sim *)nbody__alloc(&d, sizeof *s);
    if (!s) return NBODY_ERR_OUT_OF_MEMORY;
    memset(s, 0, sizeof *s);
    s->desc = d;
    s->method = &nbody__methods[d.method];
    s->n = initial->n;
    s->len = 6 * initial->n;
    s->nk = s->method->nk;
    s->nwork = s->method->nwork;
    s->t = initial->t;
    s->dt_next = d.dt;
    s->m = (nbody_real *)nbody__alloc(&d, nbody__bytes(s->n, sizeof(nbody_real)));
    if (!s->m) { nbody__free(&d, s); return NBODY_ERR_OUT_OF_MEMORY; }
    memcpy(s->m, initial->m, s->n * sizeof(nbody_real));
    r = nbody__engine_start(&s->eng, &d, s->n, s->m);
    if (r == NBODY_OK) r = nbody__alloc_buffers(s);
    if (r == NBODY_OK) r = nbody__upload_state(s, initial);
    if (r != NBODY_OK) { nbody_destroy(s); return r; }
    s->stats.t = s->t;
    s->stats.dt = 0;
    *out = s;
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_step(nbody_sim *sim) {
    if (!sim) return NBODY_ERR_INVALID_ARGUMENT;
    return nbody__step_to(sim, (nbody_real)HUGE_VAL);
}

NBODY__DEF nbody_result nbody_advance(nbody_sim *sim, nbody_real t_end) {
    if (!sim || !nbody__isfinite(t_end) || t_end < sim->t) return NBODY_ERR_INVALID_ARGUMENT;
    while (sim->t < t_end) {
        nbody_result r = nbody__step_to(sim, t_end);
        if (r != NBODY_OK) return r;
    }
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_get_state(const nbody_sim *sim, nbody_system *out) {
    nbody_real *f[6];
    nbody_result r = NBODY_OK;
    int i;
    if (!sim || !out || out->n != sim->n || !out->x || !out->y || !out->z || !out->vx || !out->vy ||
        !out->vz || !out->m)
        return NBODY_ERR_INVALID_ARGUMENT;
    f[0] = out->x; f[1] = out->y; f[2] = out->z; f[3] = out->vx; f[4] = out->vy; f[5] = out->vz;
    for (i = 0; i < 6 && r == NBODY_OK; ++i)
        r = sim->eng.ops->download((nbody__engine *)&sim->eng, f[i], sim->y, (size_t)i * sim->n, sim->n);
    if (r != NBODY_OK) return r;
    memcpy(out->m, sim->m, sim->n * sizeof(nbody_real));
    out->t = sim->t;
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_set_state(nbody_sim *sim, const nbody_system *in) {
    nbody_result r;
    if (!sim || !nbody__system_valid(in) || in->n != sim->n) return NBODY_ERR_INVALID_ARGUMENT;
    r = sim->eng.ops->set_masses(&sim->eng, in->m);
    if (r == NBODY_OK) r = nbody__upload_state(sim, in);
    if (r != NBODY_OK) return r;
    if (sim->comp) {
        nbody__lincomb zero = nbody__op(sim->comp, NULL, 0, sim->len);
        r = sim->eng.ops->lincomb(&sim->eng, &zero);
        if (r != NBODY_OK) return r;
    }
    memcpy(sim->m, in->m, sim->n * sizeof(nbody_real));
    sim->t = in->t;
    sim->f_valid = 0;
    sim->history = 0;
    return NBODY_OK;
}

NBODY__DEF nbody_stats nbody_get_stats(const nbody_sim *sim) {
    nbody_stats st;
    memset(&st, 0, sizeof st);
    if (!sim) return st;
    st = sim->stats;
    st.t = sim->t;
    return st;
}

NBODY__DEF nbody_result nbody_accelerations(const nbody_desc *desc, const nbody_system *s,
                                            nbody_real *ax, nbody_real *ay, nbody_real *az) {
    nbody_desc d;
    nbody__engine e;
    nbody__buf y = NULL, f = NULL;
    nbody_sim tmp;
    nbody_result r;
    if (!desc || !ax || !ay || !az || !nbody__desc_valid(desc) || !nbody__system_valid(s)) return NBODY_ERR_INVALID_ARGUMENT;
    if (s->n > ((size_t)-1) / (6 * sizeof(nbody_real))) return NBODY_ERR_INVALID_ARGUMENT;
    d = nbody__desc_defaults(desc);
    r = nbody__engine_start(&e, &d, s->n, s->m);
    if (r != NBODY_OK) return r;
    memset(&tmp, 0, sizeof tmp);
    tmp.eng = e; tmp.n = s->n; tmp.len = 6 * s->n;
    r = e.ops->alloc(&e, tmp.len, &y);
    if (r == NBODY_OK) r = e.ops->alloc(&e, tmp.len, &f);
    tmp.y = y;
    if (r == NBODY_OK) r = nbody__upload_state(&tmp, s);
    if (r == NBODY_OK) r = e.ops->derivative(&e, y, f);
    if (r == NBODY_OK) r = e.ops->download(&e, ax, f, 3 * s->n, s->n);
    if (r == NBODY_OK) r = e.ops->download(&e, ay, f, 4 * s->n, s->n);
    if (r == NBODY_OK) r = e.ops->download(&e, az, f, 5 * s->n, s->n);
    if (y) e.ops->release(&e, y);
    if (f) e.ops->release(&e, f);
    nbody__engine_stop(&e);
    return r;
}

/* ======================================================================================
   DIAGNOSTICS
   ====================================================================================== */
typedef struct nbody__kahan { nbody_real sum, c; } nbody__kahan;
static void nbody__kahan_add(nbody__kahan *k, nbody_real v) {
    nbody_real y = v - k->c, t = k->sum + y;
    k->c = (t - k->sum) - y;
    k->sum = t;
}

NBODY__DEF nbody_result nbody_measure(const nbody_system *s, nbody_real G, nbody_real softening, nbody_invariants *out) {
    nbody__kahan mass = {0, 0}, kin = {0, 0}, pot = {0, 0}, p[3], l[3], c[3];
    nbody_real *rows;
    long long i, n;
    int d;
    if (!out || !nbody__system_valid(s) || !nbody__isfinite(G) || G < 0 || !nbody__isfinite(softening) || softening < 0)
        return NBODY_ERR_INVALID_ARGUMENT;
    if (G == 0) G = 1;
    n = (long long)s->n;
    rows = (nbody_real *)NBODY_MALLOC(nbody__bytes(s->n, sizeof(nbody_real)));
    if (!rows) return NBODY_ERR_OUT_OF_MEMORY;
    memset(p, 0, sizeof p); memset(l, 0, sizeof l); memset(c, 0, sizeof c);
    /* potential: each row i sums j > i with its own Kahan sum, rows then added in order, so the
       result does not depend on the thread count */
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 32) if (n > 512))
    for (i = 0; i < n; ++i) {
        nbody__kahan row = {0, 0};
        long long j;
        for (j = i + 1; j < n; ++j) {
            nbody_real dx = s->x[j] - s->x[i], dy = s->y[j] - s->y[i], dz = s->z[j] - s->z[i];
            nbody__kahan_add(&row, s->m[j] / NBODY__SQRT(dx * dx + dy * dy + dz * dz + softening * softening));
        }
        rows[i] = -G * s->m[i] * row.sum;
    }
    for (i = 0; i < n; ++i) {
        nbody_real m = s->m[i], v2 = s->vx[i] * s->vx[i] + s->vy[i] * s->vy[i] + s->vz[i] * s->vz[i];
        nbody__kahan_add(&pot, rows[i]);
        nbody__kahan_add(&mass, m);
        nbody__kahan_add(&kin, (nbody_real)0.5 * m * v2);
        nbody__kahan_add(&p[0], m * s->vx[i]); nbody__kahan_add(&p[1], m * s->vy[i]); nbody__kahan_add(&p[2], m * s->vz[i]);
        nbody__kahan_add(&l[0], m * (s->y[i] * s->vz[i] - s->z[i] * s->vy[i]));
        nbody__kahan_add(&l[1], m * (s->z[i] * s->vx[i] - s->x[i] * s->vz[i]));
        nbody__kahan_add(&l[2], m * (s->x[i] * s->vy[i] - s->y[i] * s->vx[i]));
        nbody__kahan_add(&c[0], m * s->x[i]); nbody__kahan_add(&c[1], m * s->y[i]); nbody__kahan_add(&c[2], m * s->z[i]);
    }
    NBODY_FREE(rows);
    out->mass = mass.sum; out->kinetic = kin.sum; out->potential = pot.sum;
    out->energy = kin.sum + pot.sum;
    out->px = p[0].sum; out->py = p[1].sum; out->pz = p[2].sum;
    out->lx = l[0].sum; out->ly = l[1].sum; out->lz = l[2].sum;
    for (d = 0; d < 3; ++d) c[d].sum = mass.sum > 0 ? c[d].sum / mass.sum : 0;
    out->cx = c[0].sum; out->cy = c[1].sum; out->cz = c[2].sum;
    return NBODY_OK;
}

/* ======================================================================================
   INITIAL CONDITIONS: splitmix64 (Steele, Lea & Flood 2014), integer-only, so a seed gives
   the same bodies on every platform and compiler.
   ====================================================================================== */
typedef struct nbody__rng { unsigned long long s; } nbody__rng;
static unsigned long long nbody__rng_next(nbody__rng *r) {
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
/* uniform in [0, 1), 53 bits */
static double nbody__rng_uniform(nbody__rng *r) { return (double)(nbody__rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static double nbody__rng_range(nbody__rng *r, double a, double b) { return a + (b - a) * nbody__rng_uniform(r); }

/* a uniformly random direction times radius */
static void nbody__rng_sphere(nbody__rng *r, double radius, double *x, double *y, double *z) {
    double ct = nbody__rng_range(r, -1, 1), phi = nbody__rng_range(r, 0, 6.283185307179586476925);
    double st = sqrt(1 - ct * ct);
    *x = radius * st * cos(phi); *y = radius * st * sin(phi); *z = radius * ct;
}

/* move the centre of mass of bodies [i0, i1) to rest at the origin */
static void nbody__to_com_frame(nbody_system *s, size_t i0, size_t i1) {
    double m = 0, c[6] = {0, 0, 0, 0, 0, 0};
    size_t i;
    for (i = i0; i < i1; ++i) {
        m += (double)s->m[i];
        c[0] += (double)(s->m[i] * s->x[i]); c[1] += (double)(s->m[i] * s->y[i]); c[2] += (double)(s->m[i] * s->z[i]);
        c[3] += (double)(s->m[i] * s->vx[i]); c[4] += (double)(s->m[i] * s->vy[i]); c[5] += (double)(s->m[i] * s->vz[i]);
    }
    if (m <= 0) return;
    for (i = i0; i < i1; ++i) {
        s->x[i] -= (nbody_real)(c[0] / m); s->y[i] -= (nbody_real)(c[1] / m); s->z[i] -= (nbody_real)(c[2] / m);
        s->vx[i] -= (nbody_real)(c[3] / m); s->vy[i] -= (nbody_real)(c[4] / m); s->vz[i] -= (nbody_real)(c[5] / m);
    }
}

static nbody_result nbody__ic_begin(nbody_system *s, size_t n) {
    if (!s || n == 0) return NBODY_ERR_INVALID_ARGUMENT;
    return nbody_system_alloc(s, n);
}

/* n bodies of mass 1/n uniform in the cube [-1, 1]^3, at rest (a cold collapse) */
NBODY__DEF nbody_result nbody_ic_uniform_cube(nbody_system *s, size_t n, unsigned long long seed) {
    nbody__rng rng;
    size_t i;
    nbody_result r = nbody__ic_begin(s, n);
    if (r != NBODY_OK) return r;
    rng.s = seed;
    for (i = 0; i < n; ++i) {
        s->x[i] = (nbody_real)nbody__rng_range(&rng, -1, 1);
        s->y[i] = (nbody_real)nbody__rng_range(&rng, -1, 1);
        s->z[i] = (nbody_real)nbody__rng_range(&rng, -1, 1);
        s->m[i] = (nbody_real)(1.0 / (double)n);
    }
    nbody__to_com_frame(s, 0, n);
    return NBODY_OK;
}

/* Plummer sphere in Henon units (M = G = 1, E = -1/4), by Aarseth, Henon & Wielen (1974),
   radii cut at 10 scale lengths as usual */
NBODY__DEF nbody_result nbody_ic_plummer(nbody_system *s, size_t n, unsigned long long seed) {
    const double scale = 16.0 / (3.0 * 3.14159265358979323846);    /* Plummer a -> Henon units */
    nbody__rng rng;
    size_t i;
    nbody_result r = nbody__ic_begin(s, n);
    if (r != NBODY_OK) return r;
    rng.s = seed;
    for (i = 0; i < n; ++i) {
        double radius, q, g, v, x, y, z;
        do radius = 1.0 / sqrt(pow(nbody__rng_range(&rng, 1e-10, 1), -2.0 / 3.0) - 1.0);
        while (radius > 10);
        nbody__rng_sphere(&rng, radius / scale, &x, &y, &z);
        s->x[i] = (nbody_real)x; s->y[i] = (nbody_real)y; s->z[i] = (nbody_real)z;
        do { q = nbody__rng_uniform(&rng); g = nbody__rng_range(&rng, 0, 0.1); }   /* von Neumann rejection */
        while (g > q * q * pow(1 - q * q, 3.5));
        v = q * sqrt(2.0) * pow(1 + radius * radius, -0.25);
        nbody__rng_sphere(&rng, v * sqrt(scale), &x, &y, &z);
        s->vx[i] = (nbody_real)x; s->vy[i] = (nbody_real)y; s->vz[i] = (nbody_real)z;
        s->m[i] = (nbody_real)(1.0 / (double)n);
    }
    nbody__to_com_frame(s, 0, n);
    return NBODY_OK;
}

/* disc of bodies [i0, i1) around a central body at i0: mass `mass`, centre c, velocity v,
   tilted by `tilt` radians about the x axis; stars on circular orbits about the enclosed mass */
static void nbody__disc(nbody_system *s, size_t i0, size_t i1, double mass, double f, double tilt,
                        const double c[3], const double v[3], nbody__rng *rng) {
    const double rmin = 0.05, rmax = 1.0;
    size_t nstars = i1 - i0 - 1, i;
    double ct = cos(tilt), st = sin(tilt);
    s->x[i0] = (nbody_real)c[0]; s->y[i0] = (nbody_real)c[1]; s->z[i0] = (nbody_real)c[2];
    s->vx[i0] = (nbody_real)v[0]; s->vy[i0] = (nbody_real)v[1]; s->vz[i0] = (nbody_real)v[2];
    s->m[i0] = (nbody_real)(nstars ? mass * f : mass);
    for (i = i0 + 1; i < i1; ++i) {
        double u = nbody__rng_uniform(rng), r = sqrt(rmin * rmin + u * (rmax * rmax - rmin * rmin));
        double phi = nbody__rng_range(rng, 0, 6.283185307179586476925), h = nbody__rng_range(rng, -0.02, 0.02);
        double enclosed = mass * (f + (1 - f) * u), speed = sqrt(enclosed / r);
        double px = r * cos(phi), py = r * sin(phi), pz = h, wx = -speed * sin(phi), wy = speed * cos(phi);
        s->x[i] = (nbody_real)(c[0] + px); s->y[i] = (nbody_real)(c[1] + ct * py - st * pz); s->z[i] = (nbody_real)(c[2] + st * py + ct * pz);
        s->vx[i] = (nbody_real)(v[0] + wx); s->vy[i] = (nbody_real)(v[1] + ct * wy); s->vz[i] = (nbody_real)(v[2] + st * wy);
        s->m[i] = (nbody_real)(mass * (1 - f) / (double)nstars);
    }
}

NBODY__DEF nbody_result nbody_ic_galaxy(nbody_system *s, size_t n, nbody_real central_fraction, unsigned long long seed) {
    static const double zero[3] = {0, 0, 0};
    nbody__rng rng;
    nbody_result r;
    if (!s || n == 0 || !nbody__isfinite(central_fraction) || central_fraction <= 0 || central_fraction >= 1)
        return NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__ic_begin(s, n)) != NBODY_OK) return r;
    rng.s = seed;
    nbody__disc(s, 0, n, 1.0, (double)central_fraction, 0, zero, zero, &rng);
    nbody__to_com_frame(s, 0, n);
    return NBODY_OK;
}

/* two galaxies of total mass 1/2 each, centres `separation` apart along x with an impact
   parameter of separation/4 along y, falling towards each other on a parabolic orbit; the
   second disc is tilted by 60 degrees (the article's headline run) */
NBODY__DEF nbody_result nbody_ic_collision(nbody_system *s, size_t n, nbody_real central_fraction,
                                           nbody_real separation, unsigned long long seed) {
    nbody__rng rng;
    nbody_result r;
    double d, b, v, c1[3], c2[3], v1[3], v2[3];
    size_t half;
    if (!s || n < 2 || !nbody__isfinite(central_fraction) || central_fraction <= 0 || central_fraction >= 1 ||
        !nbody__isfinite(separation) || separation <= 0)
        return NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__ic_begin(s, n)) != NBODY_OK) return r;
    rng.s = seed;
    d = (double)separation; b = d / 4;
    v = sqrt(2.0 * 1.0 / sqrt(d * d + b * b)) / 2;       /* each moves at half the parabolic speed */
    c1[0] = -d / 2; c1[1] = -b / 2; c1[2] = 0; c2[0] = d / 2; c2[1] = b / 2; c2[2] = 0;
    v1[0] = v; v1[1] = 0; v1[2] = 0; v2[0] = -v; v2[1] = 0; v2[2] = 0;
    half = (n + 1) / 2;
    nbody__disc(s, 0, half, 0.5, (double)central_fraction, 0, c1, v1, &rng);
    nbody__disc(s, half, n, 0.5, (double)central_fraction, 1.0471975511965976, c2, v2, &rng);
    nbody__to_com_frame(s, 0, n);
    return NBODY_OK;
}

/* Chenciner & Montgomery (2000); initial values from Simo; period 6.32591398 */
NBODY__DEF nbody_result nbody_ic_figure_eight(nbody_system *s) {
    nbody_result r = nbody__ic_begin(s, 3);
    int i;
    if (r != NBODY_OK) return r;
    s->x[0] = (nbody_real)0.97000436; s->y[0] = (nbody_real)-0.24308753;
    s->x[1] = -s->x[0]; s->y[1] = -s->y[0];
    s->vx[2] = (nbody_real)-0.93240737; s->vy[2] = (nbody_real)-0.86473146;
    s->vx[0] = s->vx[1] = -s->vx[2] / 2; s->vy[0] = s->vy[1] = -s->vy[2] / 2;
    for (i = 0; i < 3; ++i) s->m[i] = 1;
    return NBODY_OK;
}

/* Burrau's problem: masses 3, 4, 5 at rest at the corners of a 3-4-5 triangle, each opposite
   the side of its own length (Szebehely & Peters 1967) */
NBODY__DEF nbody_result nbody_ic_pythagorean(nbody_system *s) {
    nbody_result r = nbody__ic_begin(s, 3);
    if (r != NBODY_OK) return r;
    s->x[0] = 1; s->y[0] = 3; s->m[0] = 3;
    s->x[1] = -2; s->y[1] = -1; s->m[1] = 4;
    s->x[2] = 1; s->y[2] = -1; s->m[2] = 5;
    return NBODY_OK;
}

/* ======================================================================================
   FILES
   Snapshot layout (native byte order, marked): "NBODYSNP" | u32 version | u32 byte-order mark
   0x01020304 | u32 sizeof(nbody_real) | u32 reserved 0 | u64 n | real t | 7 n reals (x y z vx
   vy vz m) | u64 FNV-1a 64 checksum of everything before it.
   ====================================================================================== */
#define NBODY__SNAP_MAGIC "NBODYSNP"
#define NBODY__SNAP_VERSION 1u
#define NBODY__SNAP_HEADER (8 + 4 * 4 + 8)

static unsigned long long nbody__fnv1a(unsigned long long h, const void *data, size_t len) {
    const unsigned char *p = (const unsigned char *)data;
    size_t i;
    for (i = 0; i < len; ++i) { h ^= p[i]; h *= 0x100000001B3ULL; }
    return h;
}
#define NBODY__FNV_SEED 0xCBF29CE484222325ULL

typedef struct nbody__writer { FILE *f; unsigned long long sum; int ok; } nbody__writer;
static void nbody__put(nbody__writer *w, const void *p, size_t len) {
    if (w->ok && fwrite(p, 1, len, w->f) != len) w->ok = 0;
    w->sum = nbody__fnv1a(w->sum, p, len);
}

NBODY__DEF nbody_result nbody_save(const char *path, const nbody_system *s) {
    nbody__writer w;
    nbody_real *fields[7];
    unsigned int head[4];
    unsigned long long n64;
    int i;
    if (!path || !nbody__system_valid(s)) return NBODY_ERR_INVALID_ARGUMENT;
    w.f = fopen(path, "wb");
    if (!w.f) return NBODY_ERR_IO;
    w.sum = NBODY__FNV_SEED; w.ok = 1;
    head[0] = NBODY__SNAP_VERSION; head[1] = 0x01020304u; head[2] = (unsigned int)sizeof(nbody_real); head[3] = 0;
    n64 = (unsigned long long)s->n;
    fields[0] = s->x; fields[1] = s->y; fields[2] = s->z; fields[3] = s->vx; fields[4] = s->vy; fields[5] = s->vz; fields[6] = s->m;
    nbody__put(&w, NBODY__SNAP_MAGIC, 8);
    nbody__put(&w, head, sizeof head);
    nbody__put(&w, &n64, sizeof n64);
    nbody__put(&w, &s->t, sizeof s->t);
    for (i = 0; i < 7; ++i) nbody__put(&w, fields[i], s->n * sizeof(nbody_real));
    n64 = w.sum;
    if (w.ok && fwrite(&n64, 1, sizeof n64, w.f) != sizeof n64) w.ok = 0;
    if (fclose(w.f) != 0) w.ok = 0;
    return w.ok ? NBODY_OK : NBODY_ERR_IO;
}

NBODY__DEF nbody_result nbody_load(const char *path, nbody_system *s) {
    FILE *f;
    char magic[8];
    unsigned int head[4];
    unsigned long long n64, sum, stored;
    long size;
    nbody_system tmp;
    nbody_real *fields[7];
    nbody_result r = NBODY_ERR_FORMAT;
    int i;
    if (!path || !s) return NBODY_ERR_INVALID_ARGUMENT;
    f = fopen(path, "rb");
    if (!f) return NBODY_ERR_IO;
    memset(&tmp, 0, sizeof tmp);
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NBODY_ERR_IO; }
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, NBODY__SNAP_MAGIC, 8) != 0) goto done;
    if (fread(head, 1, sizeof head, f) != sizeof head || fread(&n64, 1, sizeof n64, f) != sizeof n64) goto done;
    if (head[0] != NBODY__SNAP_VERSION || head[1] != 0x01020304u || head[2] != sizeof(nbody_real) || head[3] != 0) goto done;
    /* the size must match exactly before anything is allocated */
    if (n64 == 0 || n64 > ((unsigned long long)size) / (7 * sizeof(nbody_real)) ||
        (unsigned long long)size != NBODY__SNAP_HEADER + sizeof(nbody_real) * (1 + 7 * n64) + 8)
        goto done;
    if ((r = nbody_system_alloc(&tmp, (size_t)n64)) != NBODY_OK) goto done;
    r = NBODY_ERR_FORMAT;
    sum = nbody__fnv1a(NBODY__FNV_SEED, magic, 8);
    sum = nbody__fnv1a(sum, head, sizeof head);
    sum = nbody__fnv1a(sum, &n64, sizeof n64);
    if (fread(&tmp.t, 1, sizeof tmp.t, f) != sizeof tmp.t) goto done;
    sum = nbody__fnv1a(sum, &tmp.t, sizeof tmp.t);
    fields[0] = tmp.x; fields[1] = tmp.y; fields[2] = tmp.z; fields[3] = tmp.vx; fields[4] = tmp.vy; fields[5] = tmp.vz; fields[6] = tmp.m;
    for (i = 0; i < 7; ++i) {
        if (fread(fields[i], sizeof(nbody_real), tmp.n, f) != tmp.n) goto done;
        sum = nbody__fnv1a(sum, fields[i], tmp.n * sizeof(nbody_real));
    }
    if (fread(&stored, 1, sizeof stored, f) != sizeof stored || stored != sum) goto done;
    if (!nbody__system_valid(&tmp)) goto done;
    *s = tmp;
    memset(&tmp, 0, sizeof tmp);
    r = NBODY_OK;
done:
    fclose(f);
    nbody_system_free(&tmp);
    return r;
}

NBODY__DEF nbody_result nbody_write_csv(const char *path, const nbody_system *s) {
    FILE *f;
    size_t i;
    int ok = 1;
    if (!path || !nbody__system_valid(s)) return NBODY_ERR_INVALID_ARGUMENT;
    f = fopen(path, "w");
    if (!f) return NBODY_ERR_IO;
    if (fprintf(f, "# t = %.17g\ni,x,y,z,vx,vy,vz,m\n", (double)s->t) < 0) ok = 0;
    for (i = 0; i < s->n && ok; ++i)
        if (fprintf(f, "%lu,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", (unsigned long)i, (double)s->x[i],
                    (double)s->y[i], (double)s->z[i], (double)s->vx[i], (double)s->vy[i], (double)s->vz[i],
                    (double)s->m[i]) < 0)
            ok = 0;
    if (fclose(f) != 0) ok = 0;
    return ok ? NBODY_OK : NBODY_ERR_IO;
}

#endif /* NBODY_IMPLEMENTATION */

/*
   VERSION HISTORY
   0.1.0  first release: CPU direct engines, Euler / midpoint / leapfrog / RK4, diagnostics,
          initial conditions, snapshots.

   LICENSE
   MIT License. Copyright (c) 2026 the nbody.h authors.
   Permission is hereby granted, free of charge, to any person obtaining a copy of this
   software and associated documentation files (the "Software"), to deal in the Software
   without restriction, including without limitation the rights to use, copy, modify, merge,
   publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons
   to whom the Software is furnished to do so, subject to the following conditions:
   The above copyright notice and this permission notice shall be included in all copies or
   substantial portions of the Software.
   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.
*/
