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
       MPI:    mpicc -DNBODY_WITH_MPI ...; several GPUs: nvcc -DNBODY_WITH_NCCL ..., link -lnccl

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
       NBODY_WITH_MPI      include <mpi.h>: desc.mpi_comm shares the bodies among MPI ranks
                           (docs/scaling.md; the calls are then collective)
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
    int             leaf_size;     /* tree engines: nodes of at most this many bodies are summed
                                      directly; 0 = automatic (4 on the CPU tree, measured);
                                      1 = single-body leaves. The GPU trees always use 1. */
    int             devices;       /* CUDA and OpenCL engines: devices used in this process, from
                                      `device` up; 0 = 1 (docs/scaling.md). CPU engines ignore it. */
    void           *mpi_comm;      /* with NBODY_WITH_MPI: a pointer to an MPI_Comm whose ranks share
                                      the bodies, each computing the forces on its slice; NULL =
                                      this process alone. Without NBODY_WITH_MPI it must be NULL
                                      (else NBODY_ERR_UNAVAILABLE). docs/scaling.md */
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
/* Exact restart: a checkpoint carries the whole simulation state (every buffer and scalar a
   method uses), so save at t, load, continue to T is bitwise the same as running straight to T.
   Written to path.tmp then renamed over path, so a failed save leaves the old file intact.
   load refuses a desc whose numerics (engine, method, order, G, softening, dt, tolerance,
   dt_min, dt_max, theta, traversal, visit_order, block_size, compensated, quadrupole, leaf_size) differ
   from the saved one with NBODY_ERR_INVALID_ARGUMENT; threads, device, allocator, log may differ.
   A corrupted or truncated file gives NBODY_ERR_FORMAT, a missing one NBODY_ERR_IO. */
NBODY_API nbody_result nbody_checkpoint_save(const nbody_sim *sim, const char *path);
NBODY_API nbody_result nbody_checkpoint_load(nbody_sim **out, const nbody_desc *desc, const char *path);

/* ---- CUDA-OpenGL interop ----
   Writes the positions of a simulation on a CUDA engine as n interleaved float triples
   (x0 y0 z0 x1 y1 z1 ..., 12 bytes a body: the usual vertex-buffer layout) into device
   memory of the simulation's GPU, with a kernel: nothing goes through the host. device_dst
   is typically an OpenGL buffer registered with cudaGraphicsGLRegisterBuffer and mapped
   (cudaGraphicsMapResources + cudaGraphicsResourceGetMappedPointer). The kernel is queued on
   the legacy default stream, so unmapping on stream 0 (or any synchronising call) orders it
   before OpenGL reads the buffer. The simulation is not changed.
   NBODY_ERR_INVALID_ARGUMENT: sim or device_dst NULL, capacity_bytes < 12 n, or device_dst
   not device memory of the simulation's GPU. NBODY_ERR_UNAVAILABLE: the engine is not
   cuda / cuda-tree (so always without NBODY_WITH_CUDA): use nbody_get_state instead. */
NBODY_API nbody_result nbody_cuda_positions(const nbody_sim *sim, void *device_dst, size_t capacity_bytes);

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
/* f = [v, a] for the bodies [i0, i0 + m) (y, f: 6m reals of those bodies, the state layout)
   from the positions pos of all n bodies (x, then y, then z): a distributed engine's slice */
nbody_result nbody__cuda_derivative_slice(nbody__engine *e, nbody__buf pos, nbody__buf y, nbody__buf f, size_t i0, size_t m);
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
    if (d->leaf_size < 0) return 0;
    if (d->devices < 0) return 0;
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
    if (d.leaf_size == 0) d.leaf_size = 4;         /* measured: bench/results/tree-cpu.md */
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
    size_t *targets;               /* NBODY_ENGINE_TREE on a slice: its bodies in leaf order */
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
    nbody__free(&e->desc, c->targets);
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

/* The _range kernels compute the targets [i0, i1) only, against all sources, body i's
   acceleration going to ax[i - i0]: a distributed engine's slice. Each body's sum is the
   same sequence of operations as in the whole evaluation, so a slice is bitwise a part of it. */
static void nbody__accel_simple_range(const nbody__forces *f, size_t i0, size_t i1) {
    size_t i;
    for (i = i0; i < i1; ++i) {
        nbody_real ax = 0, ay = 0, az = 0;
        nbody__accel_row(f, i, 0, f->n, &ax, &ay, &az);
        f->ax[i - i0] = f->G * ax; f->ay[i - i0] = f->G * ay; f->az[i - i0] = f->G * az;
    }
}
static void nbody__accel_simple(const nbody__forces *f) { nbody__accel_simple_range(f, 0, f->n); }

static void nbody__accel_openmp_range(const nbody__forces *f, int threads, size_t i0, size_t i1) {
    long long i, n = (long long)(i1 - i0);
    (void)threads;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 16) num_threads(threads) if (n > 64))
    for (i = 0; i < n; ++i) {
        nbody_real ax = 0, ay = 0, az = 0;
        nbody__accel_row(f, i0 + (size_t)i, 0, f->n, &ax, &ay, &az);
        f->ax[i] = f->G * ax; f->ay[i] = f->G * ay; f->az[i] = f->G * az;
    }
}
static void nbody__accel_openmp(const nbody__forces *f, int threads) { nbody__accel_openmp_range(f, threads, 0, f->n); }

/* ---- section: BLOCK engine kernel (SIMD) -------------------------------------------
   Two kernels. The default, symmetric one (NBODY__BLOCK_SYMMETRIC; V##_forces_sym below)
   computes each pair once and adds it to both bodies, in a fixed order for any thread
   count; it measured 1.05-1.7x faster than the one-sided kernel on AVX2 and AVX-512
   (docs/README-cpu.md). The one-sided kernel, also its building block for small tiles:
   explicit SIMD with the targets in the lanes: a tile holds NBODY__TILE_U vectors of W
   target bodies, every source j is broadcast to all lanes and its term added in index
   order. Each body's sum is therefore the same sequence of lane-wise operations whatever
   its tile, the block size or the thread that runs it: the result is bitwise independent
   of the thread count and of block_size. Sources need no remainder handling (they are
   broadcast one by one); the last, partial tile of targets is padded.
   The self term is excluded by index: on the diagonal (the sources inside the tile) the
   lane j == i gets 1 added to its r^2, so its dx = 0 term is exactly 0, while two distinct
   coincident bodies with softening 0 still give 0 * inf = NaN, as the SIMPLE engine does.
   r^-3 = (r^2)^(-3/2) from the hardware estimate y of 1/sqrt(r^2) (rsqrt14: relative error
   below 2^-14; rsqrtps: 1.5 * 2^-12) corrected in one go: with e = 1 - r^2 y^2,
   r^-3 = y^3 (1 - e)^(-3/2) = y^3 (1 + 3/2 e + 15/8 e^2 + 35/16 e^3 + ...), the series cut
   where the next term is below the working precision's rounding (|e| <= 2^-13 with rsqrt14:
   1 term in float, 4 in double). That is 5 + terms vector operations, fewer than Newton
   steps on y followed by cubing, and no less accurate (cubing triples y's error).
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
/* horizontal sums in a fixed order (the symmetric kernel's row sums) */
NBODY__VINLINE float nbody__hsum8f(__m256 x) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}
NBODY__VINLINE double nbody__hsum4d(__m256d x) {
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}
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
/* halves by maskz extracts: the casts trip g++ 12 -Wmaybe-uninitialized as well */
#define NBODY__HALF512(d, k) _mm512_maskz_extractf64x4_pd((__mmask8)0xFF, d, k)
NBODY__VINLINE float nbody__vf_hsum(nbody__vf_t x) {
    __m512d d = _mm512_castps_pd(x);
    return nbody__hsum8f(_mm256_add_ps(_mm256_castpd_ps(NBODY__HALF512(d, 0)), _mm256_castpd_ps(NBODY__HALF512(d, 1))));
}
NBODY__VINLINE double nbody__vd_hsum(nbody__vd_t x) { return nbody__hsum4d(_mm256_add_pd(NBODY__HALF512(x, 0), NBODY__HALF512(x, 1))); }
#define NBODY__SIMD_ISA "avx512"
#ifndef NBODY__VD_DIVIDE
#define NBODY__VD_DIVIDE 0         /* 512-bit sqrt/divide are slow: rsqrt14 + series */
#endif
#define NBODY__VF_TERMS 1          /* 1.875 e^2 <= 2.8e-8: below float's half ulp */
#define NBODY__VD_TERMS 4          /* 2.71 e^5 <= 7.5e-20 */
#ifndef NBODY__SYM_ROWS
#define NBODY__SYM_ROWS 3          /* symmetric kernel: broadcast rows per column vector (7 zmm each) */
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
NBODY__VINLINE float nbody__vf_hsum(nbody__vf_t x) { return nbody__hsum8f(x); }
NBODY__VINLINE double nbody__vd_hsum(nbody__vd_t x) { return nbody__hsum4d(x); }
#define NBODY__SIMD_ISA "avx2"
#define NBODY__VF_TERMS 2          /* |e| <= 3 * 2^-12: 2.19 e^3 <= 8.6e-10 */
#define NBODY__VD_TERMS 5          /* the float estimate: 2.93 e^6 <= 4.4e-19 */
#ifndef NBODY__SYM_ROWS
#define NBODY__SYM_ROWS 2          /* 3 measured slower: 16 ymm registers */
#endif
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
/* symmetric kernel: block of bodies, a multiple of the tile tw, about n/8 (at least 4 pairs
   per round to share among threads) and at most NBODY__SYM_VECS vectors of w (a pair's
   column block, 7 arrays, stays in L1); a function of n only, so the sums are too */
#ifndef NBODY__SYM_VECS
#define NBODY__SYM_VECS 64
#endif
static size_t nbody__sym_block(size_t n, size_t tw, size_t w) {
    size_t b = (n / 8 + tw - 1) / tw * tw, cap = (size_t)NBODY__SYM_VECS * w / tw * tw;
    if (b > cap) b = cap;
    return b < tw ? tw : b;
}

/* The kernel, written once over width-generic helpers; instantiated below for float (vf)
   and double (vd). V: prefix, T: scalar type, t: intrinsic suffix, TERMS: terms of the
   series for r^-3 after the estimate, DIVIDE: sqrt and divide instead. */
#define NBODY__SIMD_KERNEL(V, T, t, TERMS, DIVIDE)                                                    \
typedef T V##_s;                                                                                \
NBODY__VINLINE V##_t V##_set1(T a) { return NBODY__MM(set1, t)(a); }                            \
NBODY__VINLINE V##_t V##_load(const T *p) { return NBODY__MM(loadu, t)(p); }                    \
NBODY__VINLINE void V##_store(T *p, V##_t a) { NBODY__MM(storeu, t)(p, a); }                    \
NBODY__VINLINE V##_t V##_add(V##_t a, V##_t b) { return NBODY__MM(add, t)(a, b); }              \
NBODY__VINLINE V##_t V##_sub(V##_t a, V##_t b) { return NBODY__MM(sub, t)(a, b); }              \
NBODY__VINLINE V##_t V##_mul(V##_t a, V##_t b) { return NBODY__MM(mul, t)(a, b); }              \
NBODY__VINLINE V##_t V##_fma(V##_t a, V##_t b, V##_t c) { return NBODY__MM(fmadd, t)(a, b, c); } \
NBODY__VINLINE V##_t V##_fnma(V##_t a, V##_t b, V##_t c) { return NBODY__MM(fnmadd, t)(a, b, c); } \
/* x^(-3/2): the estimate and the series (see the section comment), or (DIVIDE) one correctly  \
   rounded sqrt and divide, which run beside the FMA pipes and win where the divider is fast   \
   for the width. c[k]: the coefficients of (1 - e)^(-3/2), exact in binary. */                 \
NBODY__VINLINE V##_t V##_rsqrt3(V##_t x) {                                                      \
    static const T c[] = {1, 1.5, 1.875, 2.1875, 2.4609375, 2.70703125};                        \
    V##_t y, y2, y3, e, p;                                                                      \
    int k;                                                                                      \
    if (DIVIDE) return NBODY__MM(div, t)(V##_set1(1), V##_mul(x, NBODY__MM(sqrt, t)(x)));       \
    y = V##_estimate(x); y2 = V##_mul(y, y); y3 = V##_mul(y2, y);                               \
    e = V##_fnma(x, y2, V##_set1(1));                                                           \
    p = V##_set1(c[TERMS]);                                                                     \
    for (k = (TERMS) - 1; k >= 1; --k) p = V##_fma(p, e, V##_set1(c[k]));                       \
    return V##_fma(V##_mul(y3, e), p, y3);                                                      \
}                                                                                               \
/* s += m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2), lane-wise */                           \
NBODY__VINLINE void V##_interact(V##_t xj, V##_t yj, V##_t zj, V##_t mj, V##_t e2,              \
                                 V##_t xi, V##_t yi, V##_t zi, V##_t *sx, V##_t *sy, V##_t *sz) { \
    V##_t dx = V##_sub(xj, xi), dy = V##_sub(yj, yi), dz = V##_sub(zj, zi);                     \
    V##_t w = V##_mul(mj, V##_rsqrt3(V##_fma(dx, dx, V##_fma(dy, dy, V##_fma(dz, dz, e2)))));  \
    *sx = V##_fma(w, dx, *sx); *sy = V##_fma(w, dy, *sy); *sz = V##_fma(w, dz, *sz);            \
}                                                                                               \
/* one tile: targets t[x|y|z][0 .. U*W) (body i0 in lane 0) against the sources [j0, j1),      \
   j0 <= i0 < j1; a[x|y|z] = G * sum. The u loops are unrolled so that the tile lives in       \
   registers. */                                                                                \
static void V##_tile(const T *x, const T *y, const T *z, const T *m, size_t j0, size_t j1, T eps2, \
                     T G, size_t i0, const T *tx, const T *ty, const T *tz, T *ax, T *ay, T *az) { \
    enum { W = NBODY__TILE_W(V), U = NBODY__TILE_U };                                           \
    T onehot[2 * W];                                                                            \
    V##_t e2 = V##_set1(eps2), xi[U], yi[U], zi[U], sx[U], sy[U], sz[U];                        \
    size_t j, je = i0 + (size_t)(U * W) < j1 ? i0 + (size_t)(U * W) : j1;                       \
    int u;                                                                                      \
    for (u = 0; u < U; ++u) {                                                                   \
        xi[u] = V##_load(tx + u * W); yi[u] = V##_load(ty + u * W); zi[u] = V##_load(tz + u * W); \
        sx[u] = sy[u] = sz[u] = V##_set1(0);                                                    \
    }                                                                                           \
    for (u = 0; u < 2 * W; ++u) onehot[u] = 0;                                                  \
    onehot[W] = 1;                                                                              \
    for (j = j0; j < i0; ++j) {                                                                 \
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
    for (; j < j1; ++j) {                                                                       \
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
/* the tile of targets [i0, min(i0 + U*W, i1)) against the sources [j0, j1): a partial tile     \
   is padded (its extra lanes are computed, dropped). Body i's sums go to ax[i - o]. */         \
static void V##_tile_out(const nbody__forces *f, size_t j0, size_t j1, T G, size_t i0, size_t i1, size_t o) { \
    enum { TW = NBODY__TILE_W(V) * NBODY__TILE_U };                                             \
    const T *x = (const T *)f->x, *y = (const T *)f->y, *z = (const T *)f->z, *m = (const T *)f->m; \
    T *ax = (T *)f->ax, *ay = (T *)f->ay, *az = (T *)f->az, eps2 = (T)f->eps2;              \
    size_t k, nk = i1 - i0 < (size_t)TW ? i1 - i0 : (size_t)TW;                                 \
    T p[6][TW];                                                                                 \
    if (nk == (size_t)TW) {                                                                     \
        V##_tile(x, y, z, m, j0, j1, eps2, G, i0, x + i0, y + i0, z + i0, ax + (i0 - o), ay + (i0 - o), az + (i0 - o)); \
        return;                                                                                 \
    }                                                                                           \
    for (k = 0; k < (size_t)TW; ++k) {                                                          \
        p[0][k] = k < nk ? x[i0 + k] : 0; p[1][k] = k < nk ? y[i0 + k] : 0;                     \
        p[2][k] = k < nk ? z[i0 + k] : 0;                                                       \
    }                                                                                           \
    V##_tile(x, y, z, m, j0, j1, eps2, G, i0, p[0], p[1], p[2], p[3], p[4], p[5]);              \
    for (k = 0; k < nk; ++k) { ax[i0 - o + k] = p[3][k]; ay[i0 - o + k] = p[4][k]; az[i0 - o + k] = p[5][k]; } \
}                                                                                               \
static void V##_tile_at(const nbody__forces *f, size_t j0, size_t j1, T G, size_t i0, size_t i1) { \
    V##_tile_out(f, j0, j1, G, i0, i1, 0);                                                      \
}                                                                                               \
/* the targets [i0, i1) against all sources, tile by tile; body i's sums go to ax[i - i0] */    \
static void V##_forces_range(const nbody__forces *f, int threads, int block, size_t i0, size_t i1) { \
    enum { TW = NBODY__TILE_W(V) * NBODY__TILE_U };                                             \
    size_t n = f->n;                                                                            \
    long long t, ntiles = (long long)((i1 - i0 + TW - 1) / TW);                                 \
    int chunk = block > 0 ? (block + TW - 1) / TW : NBODY__BLOCK_CHUNK;                         \
    (void)threads; (void)chunk;                                                                 \
    NBODY__PRAGMA(omp parallel for schedule(dynamic, chunk) num_threads(threads)                \
                  if (n >= NBODY__BLOCK_PARALLEL_N))                                            \
    for (t = 0; t < ntiles; ++t) V##_tile_out(f, 0, n, (T)f->G, i0 + (size_t)t * TW, i1, i0);   \
}                                                                                               \
/* all targets against all sources */                                                           \
static void V##_forces(const nbody__forces *f, int threads, int block) {                        \
    V##_forces_range(f, threads, block, 0, f->n);                                               \
}                                                                                               \
/* Symmetric forces (CUDA Handbook, ch. 14, tiled): f_ji = -f_ij, each pair computed once.      \
   Rows: the broadcast bodies i of block J; columns: W bodies j of block I < J in the lanes.    \
   a_i += m_j w d (summed lane-wise, then reduced), a_j -= m_i w d (added to memory per         \
   vector), w = (d^2 + eps^2)^(-3/2), d = x_j - x_i. Block I is whole (a multiple of W          \
   bodies): only the last block may be partial, and it is never a column block. */            \
NBODY__VINLINE void V##_sym_rows(const T *x, const T *y, const T *z, const T *m, T *ax, T *ay,  \
                                 T *az, V##_t e2, size_t v0, size_t v1, size_t i, int cnt) {    \
    enum { W = NBODY__TILE_W(V) };                                                              \
    V##_t xi[NBODY__SYM_ROWS], yi[NBODY__SYM_ROWS], zi[NBODY__SYM_ROWS], mi[NBODY__SYM_ROWS];   \
    V##_t sx[NBODY__SYM_ROWS], sy[NBODY__SYM_ROWS], sz[NBODY__SYM_ROWS];                        \
    size_t j;                                                                                   \
    int u;                                                                                      \
    for (u = 0; u < cnt; ++u) {                                                                 \
        xi[u] = V##_set1(x[i + u]); yi[u] = V##_set1(y[i + u]); zi[u] = V##_set1(z[i + u]);     \
        mi[u] = V##_set1(m[i + u]); sx[u] = sy[u] = sz[u] = V##_set1(0);                        \
    }                                                                                           \
    for (j = v0; j < v1; j += W) {                                                              \
        V##_t xj = V##_load(x + j), yj = V##_load(y + j), zj = V##_load(z + j), mj = V##_load(m + j); \
        V##_t tx = V##_set1(0), ty = tx, tz = tx;                                               \
        NBODY__UNROLL for (u = 0; u < cnt; ++u) {                                               \
            V##_t dx = V##_sub(xj, xi[u]), dy = V##_sub(yj, yi[u]), dz = V##_sub(zj, zi[u]);    \
            V##_t w = V##_rsqrt3(V##_fma(dx, dx, V##_fma(dy, dy, V##_fma(dz, dz, e2))));        \
            V##_t wj = V##_mul(w, mj), wi = V##_mul(w, mi[u]);                                  \
            sx[u] = V##_fma(wj, dx, sx[u]); sy[u] = V##_fma(wj, dy, sy[u]); sz[u] = V##_fma(wj, dz, sz[u]); \
            tx = V##_fnma(wi, dx, tx); ty = V##_fnma(wi, dy, ty); tz = V##_fnma(wi, dz, tz);    \
        }                                                                                       \
        V##_store(ax + j, V##_add(V##_load(ax + j), tx));                                       \
        V##_store(ay + j, V##_add(V##_load(ay + j), ty));                                       \
        V##_store(az + j, V##_add(V##_load(az + j), tz));                                       \
    }                                                                                           \
    for (u = 0; u < cnt; ++u) {                                                                 \
        ax[i + u] += V##_hsum(sx[u]); ay[i + u] += V##_hsum(sy[u]); az[i + u] += V##_hsum(sz[u]); \
    }                                                                                           \
}                                                                                               \
static void V##_sym_pair(const nbody__forces *f, size_t v0, size_t v1, size_t b0, size_t b1) {  \
    const T *x = (const T *)f->x, *y = (const T *)f->y, *z = (const T *)f->z, *m = (const T *)f->m; \
    T *ax = (T *)f->ax, *ay = (T *)f->ay, *az = (T *)f->az;                                     \
    V##_t e2 = V##_set1((T)f->eps2);                                                            \
    size_t i = b0;                                                                              \
    for (; i + NBODY__SYM_ROWS <= b1; i += NBODY__SYM_ROWS)                                     \
        V##_sym_rows(x, y, z, m, ax, ay, az, e2, v0, v1, i, NBODY__SYM_ROWS);                   \
    for (; i < b1; ++i) V##_sym_rows(x, y, z, m, ax, ay, az, e2, v0, v1, i, 1);                 \
}                                                                                               \
/* a block against itself: each tile against itself (the one-sided tile; it stores, so it also \
   zeroes the sums), then tile t's bodies as rows against the later whole vectors as columns,   \
   and the bodies of a last partial vector as rows against tile t */                            \
static void V##_sym_block(const nbody__forces *f, size_t b0, size_t b1) {                       \
    enum { W = NBODY__TILE_W(V), TW = W * NBODY__TILE_U };                                      \
    size_t i0, bw = b0 + (b1 - b0) / W * W;                                                     \
    for (i0 = b0; i0 < b1; i0 += TW) V##_tile_at(f, i0, i0 + TW < b1 ? i0 + TW : b1, 1, i0, b1); \
    for (i0 = b0; i0 + TW < b1; i0 += TW) {                                                     \
        V##_sym_pair(f, i0 + TW, bw, i0, i0 + TW);                                              \
        if (bw < b1) V##_sym_pair(f, i0, i0 + TW, bw, b1);                                      \
    }                                                                                           \
}                                                                                               \
/* Deterministic schedule: blocks of nbody__sym_block(n) bodies (a function of n only); first   \
   each block against itself (which zeroes the sums), then                                     \
   the block pairs in the rounds of a round-robin tournament (circle method), each round's      \
   pairs disjoint. Each pair is a task that depends (inout) on its two blocks: the tasks on a   \
   block run in the order they were created, so every body receives its contributions in the   \
   same order whatever the thread count, yet no thread waits for a whole round (a barrier per   \
   round loses badly when one thread is descheduled on a shared machine). */                   \
static void V##_forces_sym(const nbody__forces *f, int threads) {                               \
    enum { TW = NBODY__TILE_W(V) * NBODY__TILE_U };                                             \
    size_t n = f->n, bs = nbody__sym_block(n, TW, NBODY__TILE_W(V));                            \
    long long nb = (long long)((n + bs - 1) / bs), nt = nb + (nb & 1), k;                       \
    nbody_real *tok = f->ax;       /* block b's dependence token: tok[b * bs] */                 \
    (void)threads; (void)tok;                                                                   \
    NBODY__PRAGMA(omp parallel num_threads(threads) if (n >= NBODY__BLOCK_PARALLEL_N))          \
    {                                                                                           \
        NBODY__PRAGMA(omp single)                                                               \
        {                                                                                       \
            long long r, b;                                                                     \
            for (b = 0; b < nb; ++b) {                                                          \
                NBODY__PRAGMA(omp task firstprivate(b) depend(inout: tok[b * bs]))              \
                V##_sym_block(f, (size_t)b * bs, (size_t)b * bs + bs < n ? (size_t)b * bs + bs : n); \
            }                                                                                   \
            for (r = 0; r < nt - 1; ++r)                                                        \
                for (k = 0; k < nt / 2; ++k) {                                                  \
                    long long p = k ? (r + k) % (nt - 1) : r, q = k ? (r - k + nt - 1) % (nt - 1) : nt - 1; \
                    long long lo = p < q ? p : q, hi = p < q ? q : p;                           \
                    if (hi >= nb) continue;                                                     \
                    NBODY__PRAGMA(omp task firstprivate(lo, hi) depend(inout: tok[lo * bs], tok[hi * bs])) \
                    V##_sym_pair(f, (size_t)lo * bs, (size_t)lo * bs + bs, (size_t)hi * bs,     \
                                 (size_t)hi * bs + bs < n ? (size_t)hi * bs + bs : n);          \
                }                                                                               \
        }                                                                                       \
        NBODY__PRAGMA(omp for schedule(static))                                                 \
        for (k = 0; k < (long long)n; ++k) {                                                    \
            f->ax[k] *= f->G; f->ay[k] *= f->G; f->az[k] *= f->G;                               \
        }                                                                                       \
    }                                                                                           \
}
NBODY__SIMD_KERNEL(nbody__vf, float, ps, NBODY__VF_TERMS, NBODY__VF_DIVIDE)
NBODY__SIMD_KERNEL(nbody__vd, double, pd, NBODY__VD_TERMS, NBODY__VD_DIVIDE)
#else
#define NBODY__SIMD 0
#define NBODY__SIMD_ISA "portable"
#endif

/* the article's 'openmp + block + optimization' loop (a branch-free loop the compiler
   vectorises), softened, any n: the portable path for long double and non-x86 targets */
static void nbody__accel_block_portable_range(const nbody__forces *f, int threads, int block, size_t t0, size_t t1) {
    long long b, nblocks, n = (long long)f->n;
    (void)threads; (void)n;
    if (block <= 0) block = NBODY__BLOCK_DEFAULT;
    nblocks = ((long long)(t1 - t0) + block - 1) / block;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 1) num_threads(threads) if (n >= NBODY__BLOCK_PARALLEL_N))
    for (b = 0; b < nblocks; ++b) {
        size_t i0 = t0 + (size_t)b * (size_t)block, i1 = i0 + (size_t)block, i;
        if (i1 > t1) i1 = t1;
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
            f->ax[i - t0] = f->G * ax; f->ay[i - t0] = f->G * ay; f->az[i - t0] = f->G * az;
        }
    }
}
static void nbody__accel_block_portable(const nbody__forces *f, int threads, int block) {
    nbody__accel_block_portable_range(f, threads, block, 0, f->n);
}

/* The symmetric kernel is the default where it measured faster (bench/results/cpu-*.md):
   NBODY__BLOCK_SYMMETRIC 0 forces the one-sided kernel everywhere. */
#ifndef NBODY__BLOCK_SYMMETRIC
#define NBODY__BLOCK_SYMMETRIC 1
#endif
/* block: targets per scheduling chunk of the one-sided kernel (rounded up to whole tiles);
   0 = automatic. symmetric: the tiled symmetric kernel (the SIMD paths only). */
static void nbody__accel_block_kernel(const nbody__forces *f, int threads, int block, int symmetric) {
#if NBODY__SIMD
    if (sizeof(nbody_real) == sizeof(float)) {
        if (symmetric) nbody__vf_forces_sym(f, threads); else nbody__vf_forces(f, threads, block);
        return;
    }
    if (sizeof(nbody_real) == sizeof(double)) {
        if (symmetric) nbody__vd_forces_sym(f, threads); else nbody__vd_forces(f, threads, block);
        return;
    }
#endif
    (void)symmetric;
    nbody__accel_block_portable(f, threads, block);
}
static void nbody__accel_block(const nbody__forces *f, int threads, int block) {
    nbody__accel_block_kernel(f, threads, block, NBODY__BLOCK_SYMMETRIC);
}
/* the targets [i0, i1): always the one-sided kernel, whose per-body sums do not depend on
   where a slice starts (the symmetric kernel's do, on which pairs share a task) */
static void nbody__accel_block_range(const nbody__forces *f, int threads, int block, size_t i0, size_t i1) {
#if NBODY__SIMD
    if (sizeof(nbody_real) == sizeof(float)) { nbody__vf_forces_range(f, threads, block, i0, i1); return; }
    if (sizeof(nbody_real) == sizeof(double)) { nbody__vd_forces_range(f, threads, block, i0, i1); return; }
#endif
    nbody__accel_block_portable_range(f, threads, block, i0, i1);
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
   Barnes & Hut (Nature 324, 1986) on a kd-tree stored as an implicit binary heap, after the
   article's 'Function Approximation' section. Shared layout (the OpenCL/CUDA tree engines
   read it as is):
     - nodes at heap indices 1 .. 2n-1 (0 unused), children of i at 2i and 2i+1; the heap of
       2n-1 nodes is a full binary tree for ANY n: internal nodes 1..n-1, leaves n..2n-1,
       one body per leaf, body[i] = index of the body in leaf i;
     - per node (structure of arrays): centre of mass cx, cy, cz, mass, and crit2, the
       squared critical distance: node i acts as one body on a point x when
       |x - c_i|^2 > crit2[i], crit2 = (r/theta)^2 with r the radius of the bounding sphere
       about the centre of mass, i.e. r < theta*d; leaves have crit2 = 0 and skip themselves
       by body index;
     - walks end when the index returns to the root 1 (see nbody__heap_skip).
   The leaves n..2n-1 are the bodies in spatial (in-order) order rotated by one partial
   level, so neighbouring leaves are neighbouring bodies except at one seam.
   The CPU engine walks private copies (see 'force walks'): packed node records, buckets of
   desc.leaf_size bodies summed directly, and packets of 32 bodies walking together; with
   leaf_size 1 its accelerations are bitwise those of the plain single-body walk.
   ====================================================================================== */
typedef struct nbody__tree_item {  /* a body while the tree is built: position, mass, index */
    nbody_real p[3], m;
    size_t idx;
} nbody__tree_item;

typedef struct nbody__kdtree {
    size_t n;                      /* bodies; nodes are 1 .. 2n-1 */
    nbody_real *cx, *cy, *cz, *mass, *crit2;   /* 2n each, index 0 unused */
    size_t *body;                  /* 2n, meaningful at leaves n .. 2n-1 */
    /* private to the CPU engine */
    nbody_real *quad;              /* 6 per node (xx xy xz yy yz zz second moments about the
                                      centre of mass) when built with quadrupole, else NULL */
    nbody__tree_item *items;       /* n bodies, permuted into leaf (in-order) order by the build */
    size_t cap;                    /* n the arrays above were allocated for */
    int has_quad;                  /* quad allocated */
    int axis_rule;                 /* NBODY__AXIS_WIDEST (default) or NBODY__AXIS_CYCLE */
    nbody_real inv_theta2;         /* 1 / theta^2 of the last build */
    /* CPU walk data (nbody__tree_prepare), one block from node */
    struct nbody__tree_node *node; /* 2n packed node records */
    nbody_real *bx, *by, *bz, *bm; /* n bodies in item order */
    size_t *pos;                   /* body index -> item position */
    size_t walk_cap, leaf_size;
} nbody__kdtree;

#define NBODY__AXIS_WIDEST 1       /* split the widest extent of the node's bodies */
#define NBODY__AXIS_CYCLE 2        /* x, y, z by depth */
#define NBODY__TREE_TASK_CUTOFF 8192  /* bodies below which a subtree is built by one task */
#define NBODY__TREE_STACK 160      /* > 2 * 64 + 1: depth is at most 64 with 64-bit indices */

/* ---- heap index arithmetic ---------------------------------------------------------- */
/* count of trailing zero bits of v != 0; the portable version is a de Bruijn multiply
   (Leiserson, Prokop & Randall 1998), used where no builtin exists (MSVC: 64-bit intrinsic) */
static NBODY__UNUSED int nbody__ctz64_portable(unsigned long long v) {
    static const unsigned char table[64] = {
        0, 1, 2, 53, 3, 7, 54, 27, 4, 38, 41, 8, 34, 55, 48, 28, 62, 5, 39, 46, 44, 42, 22, 9,
        24, 35, 59, 56, 49, 18, 29, 11, 63, 52, 6, 26, 37, 40, 33, 47, 61, 45, 43, 21, 23, 58,
        17, 10, 51, 25, 36, 32, 60, 20, 57, 16, 50, 31, 19, 15, 30, 14, 13, 12};
    return table[((v & (0ULL - v)) * 0x022FDD63CC95386DULL) >> 58];
}
#if defined(__GNUC__) || defined(__clang__)
#define NBODY__CTZ64(v) __builtin_ctzll(v)
#elif defined(_MSC_VER) && defined(_M_X64)
#include <intrin.h>
static int nbody__ctz64_msvc(unsigned long long v) { unsigned long i; _BitScanForward64(&i, v); return (int)i; }
#define NBODY__CTZ64(v) nbody__ctz64_msvc(v)
#else
#define NBODY__CTZ64(v) nbody__ctz64_portable(v)
#endif

/* Skip the subtree of i: climb while i is a right child (odd), then step to the right
   sibling. The climb is one shift by the count of trailing one-bits (the article's
   find-first-set form, on 64-bit indices). From the last subtree it yields the root 1,
   which ends the walk. */
static size_t nbody__heap_skip(size_t i) {
    unsigned long long v = (unsigned long long)i;
    return (size_t)((v >> NBODY__CTZ64(~v)) + 1);
}
/* Next node in pre-order: the left child when it exists (tree_size = 2n, the length of
   the node arrays), else skip. */
static size_t nbody__heap_next(size_t i, size_t tree_size) {
    return 2 * i < tree_size ? 2 * i : nbody__heap_skip(i);
}

/* leaves under node i of the full heap with nodes 1 .. nodes (nodes = 2n-1): the build
   splits a node's bodies in these proportions, which is what makes any n work */
static size_t nbody__heap_leaves(size_t i, size_t nodes) {
    size_t first = i, last = i, count = 0;
    while (first <= nodes) {
        count += (last < nodes ? last : nodes) - first + 1;
        if (first > nodes / 2) break;               /* no overflow for huge indices */
        first = 2 * first; last = 2 * last + 1;
    }
    return (count + 1) / 2;
}

/* ---- build --------------------------------------------------------------------------- */
static void nbody__item_swap(nbody__tree_item *a, nbody__tree_item *b) { nbody__tree_item t = *a; *a = *b; *b = t; }

/* nth_element: reorder a[0..n) so that a[k] is the element of rank k along axis, with no
   larger key before it and no smaller after it. Quickselect with a median-of-three pivot
   and Hoare partitioning, which stops on equal keys, so identical positions (and bodies on a
   line, split along an axis where all keys are equal) still halve the range each pass. */
static void nbody__select(nbody__tree_item *a, size_t n, size_t k, int axis) {
    long long lo = 0, hi = (long long)n - 1, kk = (long long)k;
    while (hi - lo > 8) {
        long long mid = lo + (hi - lo) / 2, i = lo, j = hi;
        nbody_real pivot;
        if (a[mid].p[axis] < a[lo].p[axis]) nbody__item_swap(&a[mid], &a[lo]);
        if (a[hi].p[axis] < a[lo].p[axis]) nbody__item_swap(&a[hi], &a[lo]);
        if (a[hi].p[axis] < a[mid].p[axis]) nbody__item_swap(&a[hi], &a[mid]);
        pivot = a[mid].p[axis];
        while (i <= j) {
            while (a[i].p[axis] < pivot) ++i;
            while (a[j].p[axis] > pivot) --j;
            if (i <= j) { nbody__item_swap(&a[i], &a[j]); ++i; --j; }
        }
        /* now a[lo..j] <= pivot <= a[i..hi], and a[j+1..i-1] == pivot */
        if (kk <= j) hi = j;
        else if (kk >= i) lo = i;
        else return;
    }
    {   /* insertion sort of the short rest */
        long long i, j;
        for (i = lo + 1; i <= hi; ++i)
            for (j = i; j > lo && a[j].p[axis] < a[j - 1].p[axis]; --j) nbody__item_swap(&a[j], &a[j - 1]);
    }
}

static int nbody__widest_axis(const nbody__tree_item *a, size_t n) {
    nbody_real lo[3], hi[3], w[3];
    size_t i;
    int d;
    for (d = 0; d < 3; ++d) lo[d] = hi[d] = a[0].p[d];
    for (i = 1; i < n; ++i)
        for (d = 0; d < 3; ++d) {
            nbody_real v = a[i].p[d];
            lo[d] = v < lo[d] ? v : lo[d];
            hi[d] = v > hi[d] ? v : hi[d];
        }
    for (d = 0; d < 3; ++d) w[d] = hi[d] - lo[d];
    return w[0] >= w[1] ? (w[0] >= w[2] ? 0 : 2) : (w[1] >= w[2] ? 1 : 2);
}

static int nbody__depth_of(size_t i) { int d = 0; while (i > 1) { i >>= 1; ++d; } return d; }

/* centre of mass, mass, second moments and critical distance of internal node i from its
   children and its bodies items[0..count) */
static void nbody__tree_combine(nbody__kdtree *t, size_t i, const nbody__tree_item *items, size_t count) {
    size_t c[2];
    nbody_real m = t->mass[2 * i] + t->mass[2 * i + 1], w[2], r2 = 0;
    size_t k;
    int s;
    c[0] = 2 * i; c[1] = 2 * i + 1;
    for (s = 0; s < 2; ++s) w[s] = m > 0 ? t->mass[c[s]] / m : (nbody_real)0.5;  /* massless: midpoint */
    t->mass[i] = m;
    t->cx[i] = w[0] * t->cx[c[0]] + w[1] * t->cx[c[1]];
    t->cy[i] = w[0] * t->cy[c[0]] + w[1] * t->cy[c[1]];
    t->cz[i] = w[0] * t->cz[c[0]] + w[1] * t->cz[c[1]];
    /* exact bounding-sphere radius about the centre of mass (one pass per tree level) */
    for (k = 0; k < count; ++k) {
        nbody_real dx = items[k].p[0] - t->cx[i], dy = items[k].p[1] - t->cy[i], dz = items[k].p[2] - t->cz[i];
        nbody_real d2 = dx * dx + dy * dy + dz * dz;
        r2 = d2 > r2 ? d2 : r2;
    }
    t->crit2[i] = r2 * t->inv_theta2;
    if (t->quad) {   /* parallel-axis theorem: S = sum_children S_c + m_c s s^T, s = c_c - c */
        nbody_real *q = t->quad + 6 * i;
        for (k = 0; k < 6; ++k) q[k] = 0;
        for (s = 0; s < 2; ++s) {
            const nbody_real *qc = t->quad + 6 * c[s];
            nbody_real sx = t->cx[c[s]] - t->cx[i], sy = t->cy[c[s]] - t->cy[i], sz = t->cz[c[s]] - t->cz[i];
            nbody_real mc = t->mass[c[s]];
            q[0] += qc[0] + mc * sx * sx; q[1] += qc[1] + mc * sx * sy; q[2] += qc[2] + mc * sx * sz;
            q[3] += qc[3] + mc * sy * sy; q[4] += qc[4] + mc * sy * sz; q[5] += qc[5] + mc * sz * sz;
        }
    }
}

/* build the subtree of node i over items[0..count): count == leaves under i */
static void nbody__tree_build_node(nbody__kdtree *t, size_t i, nbody__tree_item *items, size_t count) {
    size_t nodes = 2 * t->n - 1, left;
    int axis;
    if (count == 1) {              /* leaf: the body itself, exactly */
        t->cx[i] = items[0].p[0]; t->cy[i] = items[0].p[1]; t->cz[i] = items[0].p[2];
        t->mass[i] = items[0].m; t->crit2[i] = 0; t->body[i] = items[0].idx;
        if (t->quad) memset(t->quad + 6 * i, 0, 6 * sizeof(nbody_real));
        return;
    }
    left = nbody__heap_leaves(2 * i, nodes);
    axis = t->axis_rule == NBODY__AXIS_CYCLE ? nbody__depth_of(i) % 3 : nbody__widest_axis(items, count);
    nbody__select(items, count, left, axis);
    if (count > NBODY__TREE_TASK_CUTOFF) {
        NBODY__PRAGMA(omp task)
        nbody__tree_build_node(t, 2 * i, items, left);
        nbody__tree_build_node(t, 2 * i + 1, items + left, count - left);
        NBODY__PRAGMA(omp taskwait)
    } else {
        nbody__tree_build_node(t, 2 * i, items, left);
        nbody__tree_build_node(t, 2 * i + 1, items + left, count - left);
    }
    nbody__tree_combine(t, i, items, count);
}

static NBODY__UNUSED void nbody__kdtree_release(nbody__kdtree *t, const nbody_desc *d) {
    nbody__free(d, t->cx);         /* one block holds every node array */
    nbody__free(d, t->items);
    nbody__free(d, t->node);       /* one block holds the walk data */
    memset(t, 0, sizeof *t);
}

/* (re)allocate for n bodies; arrays are kept while n and the quadrupole flag stay the same */
static nbody_result nbody__kdtree_reserve(nbody__kdtree *t, const nbody_desc *d, size_t n, int quad) {
    size_t nodes = 2 * n, reals = (quad ? 11 : 5), bytes, rbytes;
    int rule = t->axis_rule;
    char *block;
    if (t->cap == n && t->has_quad == quad && t->cx) return NBODY_OK;
    nbody__kdtree_release(t, d);
    t->axis_rule = rule;
    rbytes = nbody__bytes(nbody__bytes(nodes, reals), sizeof(nbody_real));
    bytes = rbytes + nbody__bytes(nodes, sizeof(size_t));
    if (n == 0 || nodes / 2 != n || rbytes == 0 || bytes < rbytes || nbody__bytes(n, sizeof(nbody__tree_item)) == 0)
        return NBODY_ERR_OUT_OF_MEMORY;
    block = (char *)nbody__alloc(d, bytes);
    t->items = (nbody__tree_item *)nbody__alloc(d, n * sizeof(nbody__tree_item));
    if (!block || !t->items) { nbody__free(d, block); nbody__kdtree_release(t, d); t->axis_rule = rule; return NBODY_ERR_OUT_OF_MEMORY; }
    t->cx = (nbody_real *)block;   /* size_t after the reals: both alignments hold */
    t->cy = t->cx + nodes; t->cz = t->cy + nodes; t->mass = t->cz + nodes; t->crit2 = t->mass + nodes;
    t->quad = quad ? t->crit2 + nodes : NULL;
    t->body = (size_t *)(block + rbytes);
    t->cap = n; t->has_quad = quad;
    return NBODY_OK;
}

/* Build the tree of n bodies (positions finite) with d->theta, d->quadrupole, d->threads. */
static NBODY__UNUSED nbody_result nbody__kdtree_build(nbody__kdtree *t, const nbody_desc *d, const nbody_real *x,
                                                       const nbody_real *y, const nbody_real *z, const nbody_real *m, size_t n) {
    nbody_result r = nbody__kdtree_reserve(t, d, n, d->quadrupole);
    long long i, nn = (long long)n;
    if (r != NBODY_OK) return r;
    t->n = n;
    if (t->axis_rule == 0) t->axis_rule = NBODY__AXIS_WIDEST;
    t->inv_theta2 = 1 / (d->theta * d->theta);
    NBODY__PRAGMA(omp parallel for schedule(static) num_threads(nbody__threads(d)) if (nn > 65536))
    for (i = 0; i < nn; ++i) {
        nbody__tree_item *it = &t->items[i];
        it->p[0] = x[i]; it->p[1] = y[i]; it->p[2] = z[i]; it->m = m[i]; it->idx = (size_t)i;
    }
    t->cx[0] = t->cy[0] = t->cz[0] = t->mass[0] = t->crit2[0] = 0; t->body[0] = 0;
    NBODY__PRAGMA(omp parallel num_threads(nbody__threads(d)) if (nn > NBODY__TREE_TASK_CUTOFF))
    {
        NBODY__PRAGMA(omp single)
        nbody__tree_build_node(t, 1, t->items, n);
    }
    return NBODY_OK;
}

/* ---- force walks ----------------------------------------------------------------------
   CPU-private walk data, filled from the shared layout by nbody__tree_prepare:
     - node records: what a visit reads (centre, crit2, mass, and the node's bodies as the
       range [first, first + count) of items) packed in one record, one or two cache lines
       instead of one line per array;
     - the bodies in item (in-order) order as a structure of arrays, so that a bucket's
       bodies are contiguous: a node of at most leaf_size bodies that a body does not
       accept is summed directly from them (exact, self excluded by item position) instead
       of being opened. leaf_size 1 makes the buckets the single-body leaves: the plain
       one-body-per-leaf Barnes-Hut walk, bitwise.
   Targets walk in packets of NBODY__TREE_LANES bodies (neighbours in leaf order). Each
   lane follows exactly its own walk: it is active at a node only when its own walk visits
   that node (stackless: its own next index is the packet's node; stack: its bit in the
   pushed mask), takes the same decisions and adds the same terms in the same order as a
   walk of its body alone. The packet changes nothing in the numbers, only how often a node
   is loaded and tested: once per packet instead of once per body, lanes side by side. */
#ifndef NBODY__TREE_LANES
#define NBODY__TREE_LANES 32         /* bodies per packet, at most 64 */
#endif
#define NBODY__TREE_NONE ((size_t)-1)  /* item position of a padding lane: no body */
typedef unsigned long long nbody__tree_mask;   /* a set of lanes, bit l = lane l */

typedef struct nbody__tree_node {  /* CPU walk record of one heap node */
    nbody_real c[3], crit2, mass;
    size_t first, count;           /* its bodies: items[first .. first + count) */
} nbody__tree_node;

typedef struct nbody__tree_packet {
    nbody_real x[NBODY__TREE_LANES], y[NBODY__TREE_LANES], z[NBODY__TREE_LANES];
    nbody_real ax[NBODY__TREE_LANES], ay[NBODY__TREE_LANES], az[NBODY__TREE_LANES];
    size_t self[NBODY__TREE_LANES];    /* item position of each lane's body */
    nbody_real eps2;
    /* bucket sums apart, 4 partial sums per lane: body first + 4m + j goes to partial j */
    nbody_real b[3][NBODY__TREE_LANES][4];
} nbody__tree_packet;

/* (re)allocate and fill the CPU walk data of a built tree for buckets of leaf_size */
static nbody_result nbody__tree_prepare(nbody__kdtree *t, const nbody_desc *d, size_t leaf_size) {
    size_t n = t->n, nodes = 2 * n, i, nb = nbody__bytes(nodes, sizeof(nbody__tree_node));
    size_t rb = nbody__bytes(4 * (n + 4), sizeof(nbody_real)), pb = nbody__bytes(n, sizeof(size_t));
    long long k, nn = (long long)n;
    if (t->walk_cap != n || !t->node) {
        char *block;
        nbody__free(d, t->node);
        t->node = NULL; t->walk_cap = 0;
        if (nb == 0 || rb == 0 || pb == 0 || nb + rb < nb || nb + rb + pb < nb + rb) return NBODY_ERR_OUT_OF_MEMORY;
        block = (char *)nbody__alloc(d, nb + rb + pb);
        if (!block) return NBODY_ERR_OUT_OF_MEMORY;
        /* records, then reals, then size_t: each part starts aligned for its type */
        t->node = (nbody__tree_node *)block;
        /* each body array padded by 4: bucket sums read whole groups of 4 */
        t->bx = (nbody_real *)(block + nb); t->by = t->bx + n + 4; t->bz = t->by + n + 4; t->bm = t->bz + n + 4;
        memset(t->bx, 0, rb);
        t->pos = (size_t *)(block + nb + rb);
        t->walk_cap = n;
    }
    t->leaf_size = leaf_size;
    NBODY__PRAGMA(omp parallel for schedule(static) num_threads(nbody__threads(d)) if (nn > 65536))
    for (k = 0; k < nn; ++k) {
        const nbody__tree_item *it = &t->items[k];
        t->bx[k] = it->p[0]; t->by[k] = it->p[1]; t->bz[k] = it->p[2]; t->bm[k] = it->m;
        t->pos[it->idx] = (size_t)k;
    }
    /* counts bottom-up, then first items top-down: the right child's bodies follow the
       left child's in items (the build's recursion) */
    memset(&t->node[0], 0, sizeof t->node[0]);
    for (i = nodes - 1; i >= 1; --i) {
        nbody__tree_node *r = &t->node[i];
        r->c[0] = t->cx[i]; r->c[1] = t->cy[i]; r->c[2] = t->cz[i]; r->crit2 = t->crit2[i]; r->mass = t->mass[i];
        r->count = i >= n ? 1 : t->node[2 * i].count + t->node[2 * i + 1].count;
    }
    t->node[1].first = 0;
    for (i = 1; i < n; ++i) {
        t->node[2 * i].first = t->node[i].first;
        t->node[2 * i + 1].first = t->node[i].first + t->node[2 * i].count;
    }
    return NBODY_OK;
}

#if NBODY__SIMD
#define NBODY__TREE_AVX (NBODY__TREE_LANES % 8 == 0)
#else
#define NBODY__TREE_AVX 0
#endif
/* inv = 1 / sqrt(r2) and h3 = inv^3 for all lanes of the generic path (long double, or no
   AVX): float and double lanes with AVX take the fused nbody__tree_visit_pd/_ps instead */
static void nbody__tree_h3(const nbody_real *r2, nbody_real *inv, nbody_real *h3) {
    int l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) { inv[l] = 1 / NBODY__SQRT(r2[l]); h3[l] = inv[l] * inv[l] * inv[l]; }
}

/* Lane helpers. Lane sets are bit masks; the loops are branch-free so that compilers
   vectorise them (omp simd), the square root and divide are in nbody__tree_h3. */
#define NBODY__TREE_BIT(m, l) (((m) >> (l)) & 1u)

/* dx = c - x per lane, d2 = |dx|^2; returns the lanes with d2 > crit2 */
static nbody__tree_mask nbody__tree_dist(const nbody_real *c, nbody_real crit2, const nbody__tree_packet *p, nbody_real *dx,
                                 nbody_real *dy, nbody_real *dz, nbody_real *d2) {
    nbody__tree_mask far = 0;
    int l;
    NBODY__PRAGMA(omp simd reduction(|:far))
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        dx[l] = c[0] - p->x[l]; dy[l] = c[1] - p->y[l]; dz[l] = c[2] - p->z[l];
        d2[l] = dx[l] * dx[l] + dy[l] * dy[l] + dz[l] * dz[l];
        far |= (nbody__tree_mask)(d2[l] > crit2) << l;
    }
    return far;
}

/* the lanes in use add m h3 d, h3 = (d2 + eps^2)^(-3/2) */
static void nbody__tree_add(nbody__tree_packet *p, nbody__tree_mask use, nbody_real m, const nbody_real *dx, const nbody_real *dy,
                            const nbody_real *dz, const nbody_real *d2) {
    nbody_real r2[NBODY__TREE_LANES], inv[NBODY__TREE_LANES], h3[NBODY__TREE_LANES];
    int l;
    NBODY__PRAGMA(omp simd)
    for (l = 0; l < NBODY__TREE_LANES; ++l) r2[l] = d2[l] + p->eps2;
    nbody__tree_h3(r2, inv, h3);
    NBODY__PRAGMA(omp simd)
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        nbody_real w = m * h3[l];
        int on = (int)NBODY__TREE_BIT(use, l);
        p->ax[l] = on ? p->ax[l] + w * dx[l] : p->ax[l];
        p->ay[l] = on ? p->ay[l] + w * dy[l] : p->ay[l];
        p->az[l] = on ? p->az[l] + w * dz[l] : p->az[l];
    }
}

/* Each lane in open (that does not accept a bucket's node) adds the exact sum over the
   bucket's bodies, skipping its own: the bodies in groups of 4, body first + 4m + j into
   the lane's partial sum j (4-wide SIMD where available, the same operations otherwise) */
static void nbody__tree_bucket(const nbody__kdtree *t, const nbody__tree_node *nd, nbody__tree_packet *p, nbody__tree_mask open) {
    size_t k, end = nd->first + nd->count;
    int l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        if (!NBODY__TREE_BIT(open, l)) continue;
#if NBODY__TREE_AVX
        if (sizeof(nbody_real) == sizeof(double) && sizeof(size_t) == 8) {
            const __m256d xi = _mm256_set1_pd((double)p->x[l]), yi = _mm256_set1_pd((double)p->y[l]);
            const __m256d zi = _mm256_set1_pd((double)p->z[l]), e2 = _mm256_set1_pd((double)p->eps2), one = _mm256_set1_pd(1);
            const __m256i self = _mm256_set1_epi64x((long long)p->self[l]), last = _mm256_set1_epi64x((long long)end - 1);
            __m256d sx = _mm256_loadu_pd((double *)p->b[0][l]), sy = _mm256_loadu_pd((double *)p->b[1][l]);
            __m256d sz = _mm256_loadu_pd((double *)p->b[2][l]);
            for (k = nd->first; k < end; k += 4) {
                __m256i idx = _mm256_add_epi64(_mm256_set1_epi64x((long long)k), _mm256_set_epi64x(3, 2, 1, 0));
                __m256d ok = _mm256_castsi256_pd(_mm256_andnot_si256(
                    _mm256_or_si256(_mm256_cmpeq_epi64(idx, self), _mm256_cmpgt_epi64(idx, last)), _mm256_set1_epi64x(-1)));
                __m256d dx = _mm256_sub_pd(_mm256_loadu_pd((const double *)t->bx + k), xi);
                __m256d dy = _mm256_sub_pd(_mm256_loadu_pd((const double *)t->by + k), yi);
                __m256d dz = _mm256_sub_pd(_mm256_loadu_pd((const double *)t->bz + k), zi);
                __m256d d2 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)), _mm256_mul_pd(dz, dz));
                __m256d inv = _mm256_div_pd(one, _mm256_sqrt_pd(_mm256_add_pd(d2, e2)));
                __m256d w = _mm256_mul_pd(_mm256_loadu_pd((const double *)t->bm + k), _mm256_mul_pd(_mm256_mul_pd(inv, inv), inv));
                sx = _mm256_blendv_pd(sx, _mm256_add_pd(sx, _mm256_mul_pd(w, dx)), ok);
                sy = _mm256_blendv_pd(sy, _mm256_add_pd(sy, _mm256_mul_pd(w, dy)), ok);
                sz = _mm256_blendv_pd(sz, _mm256_add_pd(sz, _mm256_mul_pd(w, dz)), ok);
            }
            _mm256_storeu_pd((double *)p->b[0][l], sx); _mm256_storeu_pd((double *)p->b[1][l], sy);
            _mm256_storeu_pd((double *)p->b[2][l], sz);
            continue;
        }
#endif
        for (k = nd->first; k < end; ++k) {
            nbody_real dx = t->bx[k] - p->x[l], dy = t->by[k] - p->y[l], dz = t->bz[k] - p->z[l], inv, w;
            int j = (int)((k - nd->first) % 4);
            if (k == p->self[l]) continue;
            inv = 1 / NBODY__SQRT(dx * dx + dy * dy + dz * dz + p->eps2);
            w = t->bm[k] * (inv * inv * inv);
            p->b[0][l][j] += w * dx; p->b[1][l][j] += w * dy; p->b[2][l][j] += w * dz;
        }
    }
}

#if NBODY__TREE_AVX
/* nbody__tree_dist and nbody__tree_add fused, W lanes per 256-bit vector (double 4, float 8),
   groups with no active lane skipped and dx, dy, dz kept in registers: the same operations in
   the same order per lane as the generic path, quadrupole term included (q: the node's second
   moments, or NULL). Returns the lanes that do not accept node nd. Instantiated below for
   double (nbody__tree_visit_pd) and float (nbody__tree_visit_ps). */
/* the vector mask of the lanes set in bits (W low bits) */
static __m256d nbody__tree_on_pd(unsigned bits) {
    const __m256i bit = _mm256_set_epi64x(8, 4, 2, 1);
    return _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x((long long)bits), bit), bit));
}
static __m256 nbody__tree_on_ps(unsigned bits) {
    const __m256i bit = _mm256_set_epi32(128, 64, 32, 16, 8, 4, 2, 1);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), bit), bit));
}
#define NBODY__TREE_MM_(op, S) _mm256_##op##_##S
#define NBODY__TREE_MM(op, S) NBODY__TREE_MM_(op, S)
#define NBODY__TM(op) NBODY__TREE_MM(op, NBODY__TREE_S)  /* NBODY__TREE_S: pd or ps, per instance */
/* (a0 b0 + a1 b1) + a2 b2, the association the scalar code uses */
#define NBODY__TDOT(a0, b0, a1, b1, a2, b2) \
    NBODY__TM(add)(NBODY__TM(add)(NBODY__TM(mul)(a0, b0), NBODY__TM(mul)(a1, b1)), NBODY__TM(mul)(a2, b2))
#define NBODY__TREE_VISIT_SIMD(NAME, T, V, W, ON)                                                  \
static nbody__tree_mask NAME(const nbody__tree_node *nd, const nbody_real *q, nbody__tree_packet *p, \
                             nbody__tree_mask act) {                                              \
    const V cx = NBODY__TM(set1)((T)nd->c[0]), cy = NBODY__TM(set1)((T)nd->c[1]);               \
    const V cz = NBODY__TM(set1)((T)nd->c[2]), crit2 = NBODY__TM(set1)((T)nd->crit2);           \
    const V m = NBODY__TM(set1)((T)nd->mass), e2 = NBODY__TM(set1)((T)p->eps2);                 \
    const V one = NBODY__TM(set1)(1);                                                             \
    nbody__tree_mask open = 0;                                                                    \
    int l;                                                                                        \
    for (l = 0; l < NBODY__TREE_LANES; l += W) {                                                  \
        unsigned ag = (unsigned)(act >> l) & ((1u << W) - 1), accg;   /* this group's lanes */   \
        V dx, dy, dz, d2;                                                                         \
        if (!ag) continue;                                                                        \
        dx = NBODY__TM(sub)(cx, NBODY__TM(loadu)((const T *)p->x + l));                           \
        dy = NBODY__TM(sub)(cy, NBODY__TM(loadu)((const T *)p->y + l));                           \
        dz = NBODY__TM(sub)(cz, NBODY__TM(loadu)((const T *)p->z + l));                           \
        d2 = NBODY__TDOT(dx, dx, dy, dy, dz, dz);                                                 \
        accg = ag & (unsigned)NBODY__TM(movemask)(NBODY__TM(cmp)(d2, crit2, _CMP_GT_OQ));         \
        open |= (nbody__tree_mask)(ag & ~accg) << l;                                              \
        if (accg) {                                                                               \
            V on = ON(accg), inv = NBODY__TM(div)(one, NBODY__TM(sqrt)(NBODY__TM(add)(d2, e2)));   \
            V h3 = NBODY__TM(mul)(NBODY__TM(mul)(inv, inv), inv), w = NBODY__TM(mul)(m, h3);      \
            V ax = NBODY__TM(loadu)((T *)p->ax + l), ay = NBODY__TM(loadu)((T *)p->ay + l);        \
            V az = NBODY__TM(loadu)((T *)p->az + l), bx = ax, by = ay, bz = az;                   \
            if (q) {                                                                              \
                V q0 = NBODY__TM(set1)((T)q[0]), q1 = NBODY__TM(set1)((T)q[1]);                   \
                V q2 = NBODY__TM(set1)((T)q[2]), q3 = NBODY__TM(set1)((T)q[3]);                   \
                V q4 = NBODY__TM(set1)((T)q[4]), q5 = NBODY__TM(set1)((T)q[5]);                   \
                V h5 = NBODY__TM(mul)(NBODY__TM(mul)(h3, inv), inv);                              \
                V h7 = NBODY__TM(mul)(NBODY__TM(mul)(h5, inv), inv), t5, rad;                     \
                V sx = NBODY__TDOT(q0, dx, q1, dy, q2, dz), sy = NBODY__TDOT(q1, dx, q3, dy, q4, dz); \
                V sz = NBODY__TDOT(q2, dx, q4, dy, q5, dz);                                       \
                rad = NBODY__TM(mul)(NBODY__TM(mul)(NBODY__TM(set1)((T)7.5), h7),                 \
                                     NBODY__TDOT(dx, sx, dy, sy, dz, sz));                        \
                rad = NBODY__TM(sub)(rad, NBODY__TM(mul)(NBODY__TM(mul)(NBODY__TM(set1)((T)1.5), h5), \
                                                         NBODY__TM(set1)((T)((q[0] + q[3]) + q[5])))); \
                w = NBODY__TM(add)(w, rad);                                                       \
                t5 = NBODY__TM(mul)(NBODY__TM(set1)((T)3), h5);                                   \
                bx = NBODY__TM(sub)(ax, NBODY__TM(mul)(t5, sx));                                  \
                by = NBODY__TM(sub)(ay, NBODY__TM(mul)(t5, sy));                                  \
                bz = NBODY__TM(sub)(az, NBODY__TM(mul)(t5, sz));                                  \
            }                                                                                     \
            ax = NBODY__TM(blendv)(ax, NBODY__TM(add)(bx, NBODY__TM(mul)(w, dx)), on);            \
            ay = NBODY__TM(blendv)(ay, NBODY__TM(add)(by, NBODY__TM(mul)(w, dy)), on);            \
            az = NBODY__TM(blendv)(az, NBODY__TM(add)(bz, NBODY__TM(mul)(w, dz)), on);            \
            NBODY__TM(storeu)((T *)p->ax + l, ax);                                                \
            NBODY__TM(storeu)((T *)p->ay + l, ay);                                                \
            NBODY__TM(storeu)((T *)p->az + l, az);                                                \
        }                                                                                         \
    }                                                                                             \
    return open;                                                                                  \
}
#define NBODY__TREE_S pd
NBODY__TREE_VISIT_SIMD(nbody__tree_visit_pd, double, __m256d, 4, nbody__tree_on_pd)
#undef NBODY__TREE_S
#define NBODY__TREE_S ps
NBODY__TREE_VISIT_SIMD(nbody__tree_visit_ps, float, __m256, 8, nbody__tree_on_ps)
#undef NBODY__TREE_S
#endif

/* Look at node i for the lanes in act: lanes that accept it (|x - c|^2 > crit2) add its
   pull, the others must open it. A bucket (at most leaf_size bodies) is never opened: its
   open lanes add its bodies directly. Returns the lanes that must descend. Shared by both
   walks, so they agree bitwise.
   Quadrupole term of the softened potential g = (d^2 + eps^2)^(-1/2), d = c - x, with
   second moments S (not trace-free: the softened kernel is not harmonic):
     a = M h3 d - 3 h5 S d - 1.5 h5 tr(S) d + 7.5 h7 (d.S.d) d,   hk = (d^2 + eps^2)^(-k/2). */
static nbody__tree_mask nbody__tree_visit(const nbody__kdtree *t, size_t i, nbody__tree_packet *p, nbody__tree_mask act) {
    const nbody__tree_node *nd = &t->node[i];
    nbody_real dx[NBODY__TREE_LANES], dy[NBODY__TREE_LANES], dz[NBODY__TREE_LANES], d2[NBODY__TREE_LANES];
    nbody__tree_mask far, acc, open;
#if NBODY__TREE_AVX
    if (sizeof(nbody_real) == sizeof(double) || sizeof(nbody_real) == sizeof(float)) {
        const nbody_real *q = t->quad && i < t->n ? t->quad + 6 * i : NULL;
        open = sizeof(nbody_real) == sizeof(double) ? nbody__tree_visit_pd(nd, q, p, act) : nbody__tree_visit_ps(nd, q, p, act);
        if (open && nd->count <= t->leaf_size) { nbody__tree_bucket(t, nd, p, open); return 0; }
        return open;
    }
#endif
    far = nbody__tree_dist(nd->c, nd->crit2, p, dx, dy, dz, d2); acc = act & far; open = act & ~far;
    if (acc && t->quad && i < t->n) {
        const nbody_real *q = t->quad + 6 * i;
        nbody_real r2[NBODY__TREE_LANES], inv[NBODY__TREE_LANES], h3[NBODY__TREE_LANES];
        int l;
        for (l = 0; l < NBODY__TREE_LANES; ++l) r2[l] = d2[l] + p->eps2;
        nbody__tree_h3(r2, inv, h3);
        for (l = 0; l < NBODY__TREE_LANES; ++l) if (NBODY__TREE_BIT(acc, l)) {
            nbody_real w = nd->mass * h3[l], h5 = h3[l] * inv[l] * inv[l], h7 = h5 * inv[l] * inv[l];
            nbody_real sx = q[0] * dx[l] + q[1] * dy[l] + q[2] * dz[l], sy = q[1] * dx[l] + q[3] * dy[l] + q[4] * dz[l];
            nbody_real sz = q[2] * dx[l] + q[4] * dy[l] + q[5] * dz[l];
            w += (nbody_real)7.5 * h7 * (dx[l] * sx + dy[l] * sy + dz[l] * sz) - (nbody_real)1.5 * h5 * (q[0] + q[3] + q[5]);
            p->ax[l] -= 3 * h5 * sx; p->ay[l] -= 3 * h5 * sy; p->az[l] -= 3 * h5 * sz;
            p->ax[l] += w * dx[l]; p->ay[l] += w * dy[l]; p->az[l] += w * dz[l];
        }
    } else if (acc) {
        nbody__tree_add(p, acc, nd->mass, dx, dy, dz, d2);
    }
    if (open && nd->count <= t->leaf_size) { nbody__tree_bucket(t, nd, p, open); return 0; }
    return open;
}

/* lanes at node i: those in `others` whose next node is i */
static nbody__tree_mask nbody__tree_lanes_at(const size_t *next, nbody__tree_mask others, size_t i) {
    nbody__tree_mask at = 0;
    int l;
#if NBODY__TREE_AVX
    if (sizeof(size_t) == 8) {
        for (l = 0; l < NBODY__TREE_LANES; l += 4)
            at |= (nbody__tree_mask)_mm256_movemask_pd(_mm256_castsi256_pd(
                      _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(next + l)), _mm256_set1_epi64x((long long)i)))) << l;
        return at & others;
    }
#endif
    for (l = 0; l < NBODY__TREE_LANES; ++l) at |= (nbody__tree_mask)(next[l] == i) << l;
    return at & others;
}

/* next[l] = i for the lanes l in `lanes` */
static void nbody__tree_lanes_set(size_t *next, nbody__tree_mask lanes, size_t i) {
    int l;
#if NBODY__TREE_AVX
    if (sizeof(size_t) == 8) {
        const __m256i bit = _mm256_set_epi64x(8, 4, 2, 1), vi = _mm256_set1_epi64x((long long)i);
        for (l = 0; l < NBODY__TREE_LANES; l += 4) {
            __m256i on = _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x((long long)(lanes >> l)), bit), bit);
            __m256i *q = (__m256i *)(next + l);
            _mm256_storeu_si256(q, _mm256_blendv_epi8(_mm256_loadu_si256(q), vi, on));
        }
        return;
    }
#endif
    for (l = 0; l < NBODY__TREE_LANES; ++l) if (NBODY__TREE_BIT(lanes, l)) next[l] = i;
}

/* Stackless: each lane's walk is its own next node. The packet visits the earliest of them
   in pre-order: the left child when any lane opened the node, else the skip (every other
   lane's next node is the skip of an ancestor, which is at or after it). The lanes at the
   packet's node (act) are carried along; next[] is written only for lanes that leave
   (accept a node the others open) and read only when the packet skips. */
static void nbody__tree_walk_stackless(const nbody__kdtree *t, nbody__tree_packet *p) {
    size_t i = 1, size = 2 * t->n, next[NBODY__TREE_LANES];
    nbody__tree_mask live = 0, act;
    int l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        next[l] = 1;
        live |= (nbody__tree_mask)(p->self[l] != NBODY__TREE_NONE) << l;
    }
    act = live;
    do {
        size_t skip = nbody__heap_skip(i);
        nbody__tree_mask open = nbody__tree_visit(t, i, p, act);
        if (open) {               /* the acceptors wait for the skip, the rest go down */
            if (act & ~open) nbody__tree_lanes_set(next, act & ~open, skip);
            act = open;
            i = nbody__heap_next(i, size);
        } else {                  /* all go to the skip, where waiting lanes may join */
            i = skip;
            if (live & ~act) act |= nbody__tree_lanes_at(next, live & ~act, i);
        }
    } while (i != 1);
}

static void nbody__tree_walk_stack(const nbody__kdtree *t, nbody__tree_packet *p) {
    size_t stack[NBODY__TREE_STACK];
    nbody__tree_mask mask[NBODY__TREE_STACK], m = 0;
    int sp = 0, l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) m |= (nbody__tree_mask)(p->self[l] != NBODY__TREE_NONE) << l;
    stack[sp] = 1; mask[sp++] = m;
    while (sp > 0) {
        size_t i = stack[--sp];
        m = nbody__tree_visit(t, i, p, mask[sp]);
        if (m) { stack[sp] = 2 * i + 1; mask[sp++] = m; stack[sp] = 2 * i; mask[sp++] = m; }   /* left on top */
    }
}

/* accelerations of count bodies from a built tree, body i's going to ax[i - i0]: the bodies
   targets[0 .. count) when targets is not NULL (a slice in leaf order), else all bodies
   (i0 = 0, count = n) in packets of consecutive items (leaf order: neighbours in space), or
   the bodies i0 .. i0 + count in body order. A lane's walk does not depend on the other
   lanes of its packet, so a body's acceleration is the same in any packet. */
static void nbody__tree_forces_of(const nbody__kdtree *t, const nbody_desc *d, const nbody__forces *F,
                                  const size_t *targets, size_t i0, size_t count) {
    long long k, n = (long long)count, npk = (n + NBODY__TREE_LANES - 1) / NBODY__TREE_LANES;
    int leaf = d->visit_order == NBODY_ORDER_LEAF, stack = d->traversal == NBODY_TRAVERSAL_STACK;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 8) num_threads(nbody__threads(d)) if (n > 256))
    for (k = 0; k < npk; ++k) {
        nbody__tree_packet p;
        size_t body[NBODY__TREE_LANES];
        int l;
        p.eps2 = F->eps2;
        for (l = 0; l < NBODY__TREE_LANES; ++l) {
            size_t j = (size_t)k * NBODY__TREE_LANES + (size_t)l, i;
            body[l] = p.self[l] = NBODY__TREE_NONE; p.x[l] = p.y[l] = p.z[l] = 0;
            if (j < (size_t)n) {
                i = body[l] = targets ? targets[j] : leaf ? t->items[j].idx : i0 + j;
                p.self[l] = t->pos[i]; p.x[l] = F->x[i]; p.y[l] = F->y[i]; p.z[l] = F->z[i];
            }
            p.ax[l] = p.ay[l] = p.az[l] = 0;
        }
        memset(p.b, 0, sizeof p.b);
        if (stack) nbody__tree_walk_stack(t, &p);
        else nbody__tree_walk_stackless(t, &p);
        for (l = 0; l < NBODY__TREE_LANES; ++l)
            if (body[l] != NBODY__TREE_NONE) {
                nbody_real s[3];
                int c;
                for (c = 0; c < 3; ++c) s[c] = (p.b[c][l][0] + p.b[c][l][1]) + (p.b[c][l][2] + p.b[c][l][3]);
                F->ax[body[l] - i0] = F->G * (p.ax[l] + s[0]); F->ay[body[l] - i0] = F->G * (p.ay[l] + s[1]);
                F->az[body[l] - i0] = F->G * (p.az[l] + s[2]);
            }
    }
}
static void nbody__tree_forces(const nbody__kdtree *t, const nbody_desc *d, const nbody__forces *F) {
    nbody__tree_forces_of(t, d, F, NULL, 0, F->n);
}

static void nbody__tree_free(nbody__engine *e, void *tree) {
    nbody__kdtree_release((nbody__kdtree *)tree, &e->desc);
    nbody__free(&e->desc, tree);
}

static nbody_result nbody__tree_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__cpu *c = (nbody__cpu *)e->impl;
    nbody__forces F = nbody__forces_for(e, y, f);
    nbody_result r;
    size_t i;
    for (i = 0; i < 3 * e->n; ++i)     /* NaN/Inf positions: NaN forces, which the step reports */
        if (!nbody__isfinite(F.x[i])) {
            nbody_real nan = F.x[i] - F.x[i];
            for (i = 0; i < e->n; ++i) F.ax[i] = F.ay[i] = F.az[i] = nan;
            return NBODY_OK;
        }
    if (!c->tree) {
        c->tree = nbody__alloc(&e->desc, sizeof(nbody__kdtree));
        if (!c->tree) return NBODY_ERR_OUT_OF_MEMORY;
        memset(c->tree, 0, sizeof(nbody__kdtree));
    }
    r = nbody__kdtree_build((nbody__kdtree *)c->tree, &e->desc, F.x, F.y, F.z, F.m, e->n);
    if (r == NBODY_OK) r = nbody__tree_prepare((nbody__kdtree *)c->tree, &e->desc, (size_t)e->desc.leaf_size);
    if (r == NBODY_OK) nbody__tree_forces((nbody__kdtree *)c->tree, &e->desc, &F);
    return r;
}
#define NBODY__TREE_AVAILABLE 1
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

/* ======================================================================================
   section: SLICES AND THE DISTRIBUTED ENGINE (MPI)
   A distributed engine holds a local engine for its slice of the bodies and implements the
   same engine operations with collectives, so that every solver runs unchanged on many
   ranks: f(y) gathers all positions (MPI_Allgatherv) and asks the local engine for the
   forces on its slice against all bodies; linear combinations stay local; the error norm and
   the finiteness check combine every rank's answer (max, and), so all ranks take the same
   step. Buffers hold the rank's bodies only, in the state layout (component c of body
   lo + k at c * count + k); a global range [off, off + len) of a 6n vector maps onto the
   pieces of it this rank owns. Positions are replicated (3n reals on every rank).
   ====================================================================================== */

/* f = [v, a] for the bodies [i0, i0 + m) of a CPU engine: y and f hold those bodies only (6m
   reals each, in the state layout), pos the positions of all n bodies (x, then y, then z) */
static NBODY__UNUSED nbody_result nbody__cpu_derivative_slice(nbody__engine *e, nbody__buf pos, nbody__buf yb,
                                                            nbody__buf fb, size_t i0, size_t m) {
    nbody__cpu *c = (nbody__cpu *)e->impl;
    const nbody_real *p = (const nbody_real *)pos;
    nbody_real *y = (nbody_real *)yb, *f = (nbody_real *)fb;
    size_t n = e->n, i;
    int threads = 1;
    nbody__forces F;
    F.x = p; F.y = p + n; F.z = p + 2 * n; F.m = c->m;
    F.ax = f + 3 * m; F.ay = f + 4 * m; F.az = f + 5 * m;
    F.n = n; F.G = e->desc.G; F.eps2 = e->desc.softening * e->desc.softening;
    if (m) memcpy(f, y + 3 * m, 3 * m * sizeof(nbody_real));   /* dx/dt = v */
#if NBODY__OPENMP
    threads = nbody__threads(&e->desc);
#endif
    switch (e->desc.engine) {
    case NBODY_ENGINE_SIMPLE: nbody__accel_simple_range(&F, i0, i0 + m); return NBODY_OK;
    case NBODY_ENGINE_OPENMP: nbody__accel_openmp_range(&F, threads, i0, i0 + m); return NBODY_OK;
    case NBODY_ENGINE_TREE: break;
    default: nbody__accel_block_range(&F, threads, e->desc.block_size, i0, i0 + m); return NBODY_OK;
    }
    for (i = 0; i < 3 * n; ++i)        /* NaN/Inf positions: NaN forces, as the whole engine */
        if (!nbody__isfinite(p[i])) {
            nbody_real nan = p[i] - p[i];
            for (i = 0; i < m; ++i) F.ax[i] = F.ay[i] = F.az[i] = nan;
            return NBODY_OK;
        }
    {
        nbody__kdtree *t;
        nbody_result r;
        if (!c->tree) {
            c->tree = nbody__alloc(&e->desc, sizeof(nbody__kdtree));
            if (!c->tree) return NBODY_ERR_OUT_OF_MEMORY;
            memset(c->tree, 0, sizeof(nbody__kdtree));
        }
        t = (nbody__kdtree *)c->tree;
        r = nbody__kdtree_build(t, &e->desc, F.x, F.y, F.z, F.m, n);
        if (r == NBODY_OK) r = nbody__tree_prepare(t, &e->desc, (size_t)e->desc.leaf_size);
        if (r != NBODY_OK) return r;
        if (e->desc.visit_order == NBODY_ORDER_LEAF && m < n) {
            /* the slice's bodies in leaf order: packets of neighbours in space */
            size_t k = 0;
            if (!c->targets) {
                c->targets = (size_t *)nbody__alloc(&e->desc, nbody__bytes(n, sizeof(size_t)));
                if (!c->targets) return NBODY_ERR_OUT_OF_MEMORY;
            }
            for (i = 0; i < n; ++i)
                if (t->items[i].idx >= i0 && t->items[i].idx < i0 + m) c->targets[k++] = t->items[i].idx;
            nbody__tree_forces_of(t, &e->desc, &F, c->targets, i0, m);
        } else {
            nbody__tree_forces_of(t, &e->desc, &F, NULL, i0, m);
        }
    }
    return NBODY_OK;
}

#ifdef NBODY_WITH_MPI
#if defined(__cplusplus) && !defined(OMPI_SKIP_MPICXX)
#define OMPI_SKIP_MPICXX 1         /* the C API only (Open MPI's and MPICH's C++ bindings off) */
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#define NBODY__MPI 1
static unsigned long long nbody__fnv1a(unsigned long long h, const void *data, size_t len);
static void nbody__ckp_desc(const nbody_desc *d, int *iv, nbody_real *rv);

typedef struct nbody__dist {
    nbody__engine local;           /* this rank's engine: all n masses, buffers of its slice */
    MPI_Comm comm;                 /* the library's duplicate of the user's communicator */
    MPI_Datatype real;             /* nbody_real as bytes (float, double, long double alike) */
    int rank, size;
    size_t lo, count;              /* this rank's bodies [lo, lo + count) */
    size_t *first;                 /* rank r's bodies [first[r], first[r + 1]) */
    int *counts3, *displs3;        /* 3 * its body count, 3 * its first body (positions) */
    int *counts, *displs;          /* scratch for the gathers of downloads */
    nbody_real *packed;            /* 3n: each rank's [x, y, z] of its slice, rank after rank */
    nbody__buf pos;                /* 3n in the local engine: x, y, z of all bodies */
} nbody__dist;

static nbody__dist *nbody__dist_of(nbody__engine *e) { return (nbody__dist *)e->impl; }

/* the worst result of every rank (all equal to r when nothing failed anywhere) */
static nbody_result nbody__mpi_worst(MPI_Comm comm, nbody_result r) {
    int in = (int)r, out = 0;
    if (MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
    return (nbody_result)out;
}

/* rank r's first body: n split as evenly as body counts allow, the larger slices first */
static size_t nbody__dist_first(size_t n, int size, int r) {
    size_t q = n / (size_t)size, rem = n % (size_t)size, k = (size_t)r;
    return k * q + (k < rem ? k : rem);
}

/* Calls f(piece) for each piece of the global range [off, off + len) this rank owns:
   global index off + rel .. off + rel + plen is local loc .. loc + plen. */
typedef struct nbody__piece { size_t rel, loc, len; } nbody__piece;
static int nbody__dist_pieces(const nbody__dist *d, size_t n, size_t off, size_t len, nbody__piece *out, int cap) {
    size_t c, end = off + len;
    int np = 0;
    if (len == 0) return 0;
    for (c = off / n; c * n < end && np < cap; ++c) {
        size_t g0 = c * n + d->lo, g1 = g0 + d->count;
        if (g0 < off) g0 = off;
        if (g1 > end) g1 = end;
        if (g1 > (c + 1) * n) g1 = (c + 1) * n;
        if (g0 >= g1) continue;
        out[np].rel = g0 - off; out[np].loc = c * d->count + (g0 - c * n - d->lo); out[np].len = g1 - g0;
        ++np;
    }
    return np;
}
#define NBODY__DIST_PIECES 64      /* components a range may span: 6 in a state vector */

static nbody_result nbody__dist_alloc(nbody__engine *e, size_t len, nbody__buf *out) {
    nbody__dist *d = nbody__dist_of(e);
    size_t loc = len / e->n * d->count + (len % e->n < d->count ? len % e->n : d->count);
    return d->local.ops->alloc(&d->local, loc ? loc : 1, out);
}
static void nbody__dist_release(nbody__engine *e, nbody__buf b) {
    nbody__dist *d = nbody__dist_of(e);
    if (b) d->local.ops->release(&d->local, b);
}
/* every rank passes the same src: each keeps its pieces */
static nbody_result nbody__dist_upload(nbody__engine *e, nbody__buf dst, size_t off, const nbody_real *src, size_t len) {
    nbody__dist *d = nbody__dist_of(e);
    nbody__piece pc[NBODY__DIST_PIECES];
    nbody_result r = NBODY_OK;
    int i, np = nbody__dist_pieces(d, e->n, off, len, pc, NBODY__DIST_PIECES);
    for (i = 0; i < np && r == NBODY_OK; ++i) r = d->local.ops->upload(&d->local, dst, pc[i].loc, src + pc[i].rel, pc[i].len);
    return r;
}
/* every rank receives the whole range: per component, each rank's piece, gathered */
static nbody_result nbody__dist_download(nbody__engine *e, nbody_real *dst, nbody__buf src, size_t off, size_t len) {
    nbody__dist *d = nbody__dist_of(e);
    size_t n = e->n, end = off + len, c;
    nbody_result r = NBODY_OK;
    for (c = len ? off / n : 0; len && c * n < end; ++c) {
        size_t b0 = (off > c * n ? off - c * n : 0), b1 = (end < (c + 1) * n ? end - c * n : n);
        int k;
        for (k = 0; k < d->size; ++k) {
            size_t p0 = d->first[k] > b0 ? d->first[k] : b0, p1 = d->first[k + 1] < b1 ? d->first[k + 1] : b1;
            d->counts[k] = p1 > p0 ? (int)(p1 - p0) : 0;
            d->displs[k] = p1 > p0 ? (int)(p0 - b0) : 0;
        }
        if (d->counts[d->rank] > 0 && r == NBODY_OK)
            r = d->local.ops->download(&d->local, dst + (c * n + b0 - off) + d->displs[d->rank], src,
                                       c * d->count + (b0 + (size_t)d->displs[d->rank] - d->lo), (size_t)d->counts[d->rank]);
        if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dst + (c * n + b0 - off), d->counts, d->displs, d->real,
                           d->comm) != MPI_SUCCESS && r == NBODY_OK)
            r = NBODY_ERR_DEVICE;
    }
    return nbody__mpi_worst(d->comm, r);
}
static nbody_result nbody__dist_set_masses(nbody__engine *e, const nbody_real *m) {
    nbody__dist *d = nbody__dist_of(e);
    return d->local.ops->set_masses(&d->local, m);
}

/* the slice's forces in the local engine, from all positions in d->pos */
static nbody_result nbody__dist_slice_forces(nbody__dist *d, nbody__buf y, nbody__buf f) {
    switch (d->local.desc.engine) {
#ifdef NBODY_WITH_CUDA
    case NBODY_ENGINE_CUDA:
    case NBODY_ENGINE_CUDA_TREE: return nbody__cuda_derivative_slice(&d->local, d->pos, y, f, d->lo, d->count);
#endif
    default: return nbody__cpu_derivative_slice(&d->local, d->pos, y, f, d->lo, d->count);
    }
}

static nbody_result nbody__dist_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__dist *d = nbody__dist_of(e);
    nbody_result r = NBODY_OK;
    int k, c;
    if (d->count) r = d->local.ops->download(&d->local, d->packed + 3 * d->lo, y, 0, 3 * d->count);
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d->packed, d->counts3, d->displs3, d->real, d->comm) != MPI_SUCCESS &&
        r == NBODY_OK)
        r = NBODY_ERR_DEVICE;
    for (k = 0; k < d->size && r == NBODY_OK; ++k) {     /* rank k's [x, y, z] into x[], y[], z[] */
        size_t cnt = d->first[k + 1] - d->first[k];
        for (c = 0; c < 3 && r == NBODY_OK && cnt; ++c)
            r = d->local.ops->upload(&d->local, d->pos, (size_t)c * e->n + d->first[k], d->packed + 3 * d->first[k] + (size_t)c * cnt, cnt);
    }
    if (r == NBODY_OK) r = nbody__dist_slice_forces(d, y, f);
    return nbody__mpi_worst(d->comm, r);
}

/* the same lincomb on each owned piece; offsets of out, y, k agree modulo n (component
   boundaries), as they do in every solver */
static nbody_result nbody__dist_local_op(const nbody__dist *d, size_t n, const nbody__lincomb *op, const nbody__piece *p,
                                         nbody__lincomb *lop) {
    size_t gy = op->y_off + p->rel, gk = op->k_off + p->rel, go = op->out_off + p->rel;
    size_t b = p->loc - go / n * d->count;     /* the piece's first body, from lo */
    if (gy % n != go % n || gk % n != go % n) return NBODY_ERR_INVALID_ARGUMENT;
    *lop = *op;
    lop->out_off = p->loc;
    lop->y_off = gy / n * d->count + b;
    lop->k_off = gk / n * d->count + b;
    lop->len = p->len;
    return NBODY_OK;
}
static nbody_result nbody__dist_lincomb(nbody__engine *e, const nbody__lincomb *op) {
    nbody__dist *d = nbody__dist_of(e);
    nbody__piece pc[NBODY__DIST_PIECES];
    nbody_result r = NBODY_OK;
    int i, np = nbody__dist_pieces(d, e->n, op->out_off, op->len, pc, NBODY__DIST_PIECES);
    for (i = 0; i < np && r == NBODY_OK; ++i) {
        nbody__lincomb lop;
        r = nbody__dist_local_op(d, e->n, op, &pc[i], &lop);
        if (r == NBODY_OK) r = d->local.ops->lincomb(&d->local, &lop);
    }
    return r;
}
/* max over the pieces, then over the ranks (max is exact: the norm of one process); NaN sticks */
static nbody_result nbody__dist_error_norm(nbody__engine *e, const nbody__lincomb *op, nbody_real atol, nbody_real rtol,
                                           nbody_real *norm) {
    nbody__dist *d = nbody__dist_of(e);
    nbody__piece pc[NBODY__DIST_PIECES];
    nbody_real worst = 0, *all = d->packed + 3 * e->n;   /* room for one real a rank */
    nbody_result r = NBODY_OK;
    int i, np = nbody__dist_pieces(d, e->n, op->out_off, op->len, pc, NBODY__DIST_PIECES);
    for (i = 0; i < np && r == NBODY_OK; ++i) {
        nbody__lincomb lop;
        nbody_real v = 0;
        r = nbody__dist_local_op(d, e->n, op, &pc[i], &lop);
        if (r == NBODY_OK) r = d->local.ops->error_norm(&d->local, &lop, atol, rtol, &v);
        if (!(v <= worst)) worst = v;
        if (worst != worst) break;
    }
    if (MPI_Allgather(&worst, 1, d->real, all, 1, d->real, d->comm) != MPI_SUCCESS && r == NBODY_OK) r = NBODY_ERR_DEVICE;
    worst = 0;
    for (i = 0; i < d->size; ++i) {
        if (!(all[i] <= worst)) worst = all[i];
        if (worst != worst) break;
    }
    *norm = worst;
    return nbody__mpi_worst(d->comm, r);
}
static nbody_result nbody__dist_all_finite(nbody__engine *e, nbody__buf b, size_t off, size_t len, int *finite) {
    nbody__dist *d = nbody__dist_of(e);
    nbody__piece pc[NBODY__DIST_PIECES];
    nbody_result r = NBODY_OK;
    int i, ok = 1, all = 0, np = nbody__dist_pieces(d, e->n, off, len, pc, NBODY__DIST_PIECES);
    for (i = 0; i < np && r == NBODY_OK && ok; ++i) r = d->local.ops->all_finite(&d->local, b, pc[i].loc, pc[i].len, &ok);
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, d->comm) != MPI_SUCCESS && r == NBODY_OK) r = NBODY_ERR_DEVICE;
    *finite = all;
    return nbody__mpi_worst(d->comm, r);
}

static void nbody__dist_shutdown(nbody__engine *e) {
    nbody__dist *d = nbody__dist_of(e);
    if (!d) return;
    if (d->local.ops) {
        if (d->pos) d->local.ops->release(&d->local, d->pos);
        d->local.ops->shutdown(&d->local);
    }
    if (d->real != MPI_DATATYPE_NULL) MPI_Type_free(&d->real);
    if (d->comm != MPI_COMM_NULL) MPI_Comm_free(&d->comm);
    nbody__free(&e->desc, d->first); nbody__free(&e->desc, d->counts3);
    nbody__free(&e->desc, d->packed);
    nbody__free(&e->desc, d);
    e->impl = NULL;
}

/* collective: every rank of the user's communicator */
static nbody_result nbody__dist_init(nbody__engine *e) {
    nbody_desc ld = e->desc;
    nbody__dist *d;
    nbody_result r = NBODY_OK;
    int k;
    d = (nbody__dist *)nbody__alloc(&e->desc, sizeof *d);
    if (!d) return NBODY_ERR_OUT_OF_MEMORY;     /* before any collective: the others fail later */
    memset(d, 0, sizeof *d);
    d->comm = MPI_COMM_NULL; d->real = MPI_DATATYPE_NULL;
    e->impl = d;
    if (MPI_Comm_dup(*(MPI_Comm *)e->desc.mpi_comm, &d->comm) != MPI_SUCCESS) { d->comm = MPI_COMM_NULL; nbody__dist_shutdown(e); return NBODY_ERR_DEVICE; }
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    if (MPI_Type_contiguous((int)sizeof(nbody_real), MPI_BYTE, &d->real) != MPI_SUCCESS || MPI_Type_commit(&d->real) != MPI_SUCCESS)
        r = NBODY_ERR_DEVICE;
    if (e->n > (size_t)0x7FFFFFFF / 3) r = NBODY_ERR_UNAVAILABLE;   /* MPI counts are int */
    if (r == NBODY_OK) {
        d->first = (size_t *)nbody__alloc(&e->desc, nbody__bytes((size_t)d->size + 1, sizeof(size_t)));
        d->counts3 = (int *)nbody__alloc(&e->desc, nbody__bytes(4 * (size_t)d->size, sizeof(int)));
        d->packed = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes(3 * e->n + (size_t)d->size, sizeof(nbody_real)));
        if (!d->first || !d->counts3 || !d->packed) r = NBODY_ERR_OUT_OF_MEMORY;
    }
    if (r == NBODY_OK) {
        d->displs3 = d->counts3 + d->size; d->counts = d->displs3 + d->size; d->displs = d->counts + d->size;
        for (k = 0; k <= d->size; ++k) d->first[k] = nbody__dist_first(e->n, d->size, k);
        for (k = 0; k < d->size; ++k) {
            d->counts3[k] = (int)(3 * (d->first[k + 1] - d->first[k]));
            d->displs3[k] = (int)(3 * d->first[k]);
        }
        d->lo = d->first[d->rank]; d->count = d->first[d->rank + 1] - d->lo;
        ld.mpi_comm = NULL;
        if (ld.engine == NBODY_ENGINE_CUDA || ld.engine == NBODY_ENGINE_CUDA_TREE) {
            /* one GPU a rank: a host's ranks take desc.device, desc.device + 1, ... */
            MPI_Comm host;
            int local = 0;
            if (MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &host) == MPI_SUCCESS) {
                MPI_Comm_rank(host, &local);
                MPI_Comm_free(&host);
            }
            ld.device += local;
            if (ld.devices > 1) r = NBODY_ERR_UNAVAILABLE;   /* several GPUs a rank: not with MPI */
        }
    }
    if (r == NBODY_OK) {
        d->local.ops = nbody__engine_ops_for(ld.engine);
        d->local.desc = ld; d->local.n = e->n;
        r = d->local.ops->init(&d->local);
        if (r != NBODY_OK) d->local.ops = NULL;
    }
    if (r == NBODY_OK) r = d->local.ops->alloc(&d->local, 3 * e->n, &d->pos);
    r = d->comm != MPI_COMM_NULL ? nbody__mpi_worst(d->comm, r) : r;
    if (r != NBODY_OK) nbody__dist_shutdown(e);
    return r;
}

static const nbody__engine_ops nbody__dist_ops = {
    "mpi", nbody__dist_init, nbody__dist_shutdown, nbody__dist_alloc, nbody__dist_release, nbody__dist_upload,
    nbody__dist_download, nbody__dist_set_masses, nbody__dist_derivative, nbody__dist_lincomb, nbody__dist_error_norm,
    nbody__dist_all_finite };

/* the distributed engine over desc.engine: CPU engines, and the CUDA ones (one GPU a rank) */
static const nbody__engine_ops *nbody__dist_engine_ops(const nbody_desc *d) {
    const nbody__engine_ops *local = nbody__engine_ops_for(d->engine);
    if (!local) return NULL;
    if (d->engine == NBODY_ENGINE_OPENCL || d->engine == NBODY_ENGINE_OPENCL_TREE) return NULL;
    return &nbody__dist_ops;
}

/* the result every rank agrees on after a local step of a collective call */
static nbody_result nbody__engine_agree(nbody__engine *e, nbody_result r) {
    if (e->ops != &nbody__dist_ops || !e->impl) return r;
    return nbody__mpi_worst(nbody__dist_of(e)->comm, r);
}
/* writes files (rank 0) */
static int nbody__engine_writer(nbody__engine *e) { return e->ops != &nbody__dist_ops || nbody__dist_of(e)->rank == 0; }

/* With desc.mpi_comm: every rank's verdict r combined, then (when all are valid) the same
   system and numerics on every rank, compared by hash. Collective over the user's comm. */
static nbody_result nbody__mpi_verdict(const nbody_desc *desc, nbody_result r) {
    int flag = 0;
    if (!desc->mpi_comm) return r;
    if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag) return NBODY_ERR_INVALID_ARGUMENT;
    return nbody__mpi_worst(*(MPI_Comm *)desc->mpi_comm, r);
}
static nbody_result nbody__mpi_same(const nbody_desc *desc, const nbody_system *s, nbody_result r) {
    unsigned long long h = 0xCBF29CE484222325ULL, lo = 0, hi = 0;
    nbody_real *f[7];
    int iv[16], i;
    nbody_real rv[16];
    MPI_Comm comm;
    r = nbody__mpi_verdict(desc, r);
    if (!desc->mpi_comm || r != NBODY_OK) return r;
    comm = *(MPI_Comm *)desc->mpi_comm;
    f[0] = s->x; f[1] = s->y; f[2] = s->z; f[3] = s->vx; f[4] = s->vy; f[5] = s->vz; f[6] = s->m;
    for (i = 0; i < 7; ++i) h = nbody__fnv1a(h, f[i], s->n * sizeof(nbody_real));
    h = nbody__fnv1a(h, &s->t, sizeof s->t);
    memset(iv, 0, sizeof iv); memset(rv, 0, sizeof rv);
    nbody__ckp_desc(desc, iv, rv);
    h = nbody__fnv1a(h, iv, sizeof iv);
    h = nbody__fnv1a(h, rv, sizeof rv);
    if (MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm) != MPI_SUCCESS ||
        MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm) != MPI_SUCCESS)
        return NBODY_ERR_DEVICE;
    if (lo != hi) {
        nbody__log(desc, NBODY_LOG_ERROR, "nbody: the ranks of desc.mpi_comm passed different systems or numerics");
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    return NBODY_OK;
}
#else
#define NBODY__MPI 0
static const nbody__engine_ops *nbody__dist_engine_ops(const nbody_desc *d) { (void)d; return NULL; }
static nbody_result nbody__engine_agree(nbody__engine *e, nbody_result r) { (void)e; return r; }
static int nbody__engine_writer(nbody__engine *e) { (void)e; return 1; }
static nbody_result nbody__mpi_verdict(const nbody_desc *desc, nbody_result r) { (void)desc; return r; }
static nbody_result nbody__mpi_same(const nbody_desc *desc, const nbody_system *s, nbody_result r) { (void)desc; (void)s; return r; }
#endif
/* ---- end section: SLICES AND THE DISTRIBUTED ENGINE ---- */

/* engine lifetime: start with the masses, stop frees everything */
static nbody_result nbody__engine_start(nbody__engine *e, const nbody_desc *d, size_t n, const nbody_real *m) {
    nbody_result r;
    memset(e, 0, sizeof *e);
    if (d->devices > 1 && (d->engine == NBODY_ENGINE_OPENCL || d->engine == NBODY_ENGINE_OPENCL_TREE)) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: several OpenCL devices (desc.devices > 1) are not available yet");
        return NBODY_ERR_UNAVAILABLE;
    }
    e->ops = d->mpi_comm ? nbody__dist_engine_ops(d) : nbody__engine_ops_for(d->engine);
    if (!e->ops) {
        if (d->mpi_comm && !NBODY__MPI) nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.mpi_comm needs NBODY_WITH_MPI");
        else nbody__log(d, NBODY_LOG_ERROR, "nbody: engine '%s' is not available in this build", nbody_engine_name(d->engine));
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
/* Every method below propagates its higher-order solution; the embedded row only estimates
   the error. Method-private scalars: NBODY_ADAMS mreal[0] = spacing of its history;
   NBODY_BS mint[0] = target column, mreal[0] = proposed next step. */

static nbody_real nbody__eps(void) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)FLT_EPSILON;
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)DBL_EPSILON;
    return (nbody_real)LDBL_EPSILON;
}

/* after a step whose last stage is not f(y_new): k[0] must be evaluated again */
static void nbody__commit_invalidate(nbody_sim *s, nbody_real h) { (void)h; s->f_valid = 0; }

/* Kutta's third-order method (Kutta 1901; HNW I, Table II.1.1): starts Adams order 3 */
static const nbody_real nbody__kutta3_a[] = {0, 0, 0, NBODY__Q(1, 2), 0, 0, -1, 2, 0};
static const nbody_real nbody__kutta3_b[] = {NBODY__Q(1, 6), NBODY__Q(2, 3), NBODY__Q(1, 6)};
static const nbody_real nbody__kutta3_c[] = {0, NBODY__Q(1, 2), 1};
static const nbody__tableau nbody__kutta3_tab = {3, 3, 0, 0, nbody__kutta3_a, nbody__kutta3_b, NULL, nbody__kutta3_c};

/* Cash & Karp, ACM TOMS 16 (1990) 201-222, Table 5 (the 5(4) pair of Numerical Recipes 16.2) */
static const nbody_real nbody__rkck_a[] = {
    0, 0, 0, 0, 0, 0,
    NBODY__Q(1, 5), 0, 0, 0, 0, 0,
    NBODY__Q(3, 40), NBODY__Q(9, 40), 0, 0, 0, 0,
    NBODY__Q(3, 10), NBODY__Q(-9, 10), NBODY__Q(6, 5), 0, 0, 0,
    NBODY__Q(-11, 54), NBODY__Q(5, 2), NBODY__Q(-70, 27), NBODY__Q(35, 27), 0, 0,
    NBODY__Q(1631, 55296), NBODY__Q(175, 512), NBODY__Q(575, 13824), NBODY__Q(44275, 110592), NBODY__Q(253, 4096), 0};
static const nbody_real nbody__rkck_b[] = {NBODY__Q(37, 378), 0, NBODY__Q(250, 621), NBODY__Q(125, 594), 0, NBODY__Q(512, 1771)};
static const nbody_real nbody__rkck_bhat[] = {NBODY__Q(2825, 27648), 0, NBODY__Q(18575, 48384), NBODY__Q(13525, 55296),
                                              NBODY__Q(277, 14336), NBODY__Q(1, 4)};
static const nbody_real nbody__rkck_c[] = {0, NBODY__Q(1, 5), NBODY__Q(3, 10), NBODY__Q(3, 5), 1, NBODY__Q(7, 8)};
static const nbody__tableau nbody__rkck_tab = {6, 5, 4, 0, nbody__rkck_a, nbody__rkck_b, nbody__rkck_bhat, nbody__rkck_c};
/* its fifth-order row alone starts Adams order 5 */
static const nbody__tableau nbody__rkck5_tab = {6, 5, 0, 0, nbody__rkck_a, nbody__rkck_b, NULL, nbody__rkck_c};

/* Dormand & Prince, J. Comput. Appl. Math. 6 (1980) 19-26 (HNW I, Table II.5.2, DOPRI5).
   The last row equals b, so stage 7 is f(y_new): first same as last. */
static const nbody_real nbody__rkdp_a[] = {
    0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(1, 5), 0, 0, 0, 0, 0, 0,
    NBODY__Q(3, 40), NBODY__Q(9, 40), 0, 0, 0, 0, 0,
    NBODY__Q(44, 45), NBODY__Q(-56, 15), NBODY__Q(32, 9), 0, 0, 0, 0,
    NBODY__Q(19372, 6561), NBODY__Q(-25360, 2187), NBODY__Q(64448, 6561), NBODY__Q(-212, 729), 0, 0, 0,
    NBODY__Q(9017, 3168), NBODY__Q(-355, 33), NBODY__Q(46732, 5247), NBODY__Q(49, 176), NBODY__Q(-5103, 18656), 0, 0,
    NBODY__Q(35, 384), 0, NBODY__Q(500, 1113), NBODY__Q(125, 192), NBODY__Q(-2187, 6784), NBODY__Q(11, 84), 0};
static const nbody_real nbody__rkdp_b[] = {NBODY__Q(35, 384), 0, NBODY__Q(500, 1113), NBODY__Q(125, 192),
                                           NBODY__Q(-2187, 6784), NBODY__Q(11, 84), 0};
static const nbody_real nbody__rkdp_bhat[] = {NBODY__Q(5179, 57600), 0, NBODY__Q(7571, 16695), NBODY__Q(393, 640),
                                              NBODY__Q(-92097, 339200), NBODY__Q(187, 2100), NBODY__Q(1, 40)};
static const nbody_real nbody__rkdp_c[] = {0, NBODY__Q(1, 5), NBODY__Q(3, 10), NBODY__Q(4, 5), NBODY__Q(8, 9), 1, 1};
static const nbody__tableau nbody__rkdp_tab = {7, 5, 4, 1, nbody__rkdp_a, nbody__rkdp_b, nbody__rkdp_bhat, nbody__rkdp_c};

/* Verner's 6(5) pair as used by DVERK (Hull, Enright & Jackson, "User's guide for DVERK",
   Univ. Toronto TR 100, 1976; Verner, SIAM J. Numer. Anal. 15 (1978) 772-790) */
static const nbody_real nbody__dverk_a[] = {
    0, 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(1, 6), 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(4, 75), NBODY__Q(16, 75), 0, 0, 0, 0, 0, 0,
    NBODY__Q(5, 6), NBODY__Q(-8, 3), NBODY__Q(5, 2), 0, 0, 0, 0, 0,
    NBODY__Q(-165, 64), NBODY__Q(55, 6), NBODY__Q(-425, 64), NBODY__Q(85, 96), 0, 0, 0, 0,
    NBODY__Q(12, 5), -8, NBODY__Q(4015, 612), NBODY__Q(-11, 36), NBODY__Q(88, 255), 0, 0, 0,
    NBODY__Q(-8263, 15000), NBODY__Q(124, 75), NBODY__Q(-643, 680), NBODY__Q(-81, 250), NBODY__Q(2484, 10625), 0, 0, 0,
    NBODY__Q(3501, 1720), NBODY__Q(-300, 43), NBODY__Q(297275, 52632), NBODY__Q(-319, 2322), NBODY__Q(24068, 84065), 0,
    NBODY__Q(3850, 26703), 0};
static const nbody_real nbody__dverk_b[] = {NBODY__Q(3, 40), 0, NBODY__Q(875, 2244), NBODY__Q(23, 72), NBODY__Q(264, 1955), 0,
                                            NBODY__Q(125, 11592), NBODY__Q(43, 616)};
static const nbody_real nbody__dverk_bhat[] = {NBODY__Q(13, 160), 0, NBODY__Q(2375, 5984), NBODY__Q(5, 16), NBODY__Q(12, 85),
                                               NBODY__Q(3, 44), 0, 0};
static const nbody_real nbody__dverk_c[] = {0, NBODY__Q(1, 6), NBODY__Q(4, 15), NBODY__Q(2, 3), NBODY__Q(5, 6), 1, NBODY__Q(1, 15), 1};
static const nbody__tableau nbody__dverk_tab = {8, 6, 5, 0, nbody__dverk_a, nbody__dverk_b, nbody__dverk_bhat, nbody__dverk_c};

/* Fehlberg 7(8), NASA TR R-287 (1968), Table X (HNW I, Table II.5.4, RKF78). Propagated with the
   eighth-order weights; their difference from the seventh-order ones is 41/840 (k1 + k11 - k12 - k13). */
static const nbody_real nbody__rkf_a[] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(2, 27), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(1, 36), NBODY__Q(1, 12), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(1, 24), 0, NBODY__Q(1, 8), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(5, 12), 0, NBODY__Q(-25, 16), NBODY__Q(25, 16), 0, 0, 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(1, 20), 0, 0, NBODY__Q(1, 4), NBODY__Q(1, 5), 0, 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(-25, 108), 0, 0, NBODY__Q(125, 108), NBODY__Q(-65, 27), NBODY__Q(125, 54), 0, 0, 0, 0, 0, 0, 0,
    NBODY__Q(31, 300), 0, 0, 0, NBODY__Q(61, 225), NBODY__Q(-2, 9), NBODY__Q(13, 900), 0, 0, 0, 0, 0, 0,
    2, 0, 0, NBODY__Q(-53, 6), NBODY__Q(704, 45), NBODY__Q(-107, 9), NBODY__Q(67, 90), 3, 0, 0, 0, 0, 0,
    NBODY__Q(-91, 108), 0, 0, NBODY__Q(23, 108), NBODY__Q(-976, 135), NBODY__Q(311, 54), NBODY__Q(-19, 60), NBODY__Q(17, 6),
    NBODY__Q(-1, 12), 0, 0, 0, 0,
    NBODY__Q(2383, 4100), 0, 0, NBODY__Q(-341, 164), NBODY__Q(4496, 1025), NBODY__Q(-301, 82), NBODY__Q(2133, 4100),
    NBODY__Q(45, 82), NBODY__Q(45, 164), NBODY__Q(18, 41), 0, 0, 0,
    NBODY__Q(3, 205), 0, 0, 0, 0, NBODY__Q(-6, 41), NBODY__Q(-3, 205), NBODY__Q(-3, 41), NBODY__Q(3, 41), NBODY__Q(6, 41), 0, 0, 0,
    NBODY__Q(-1777, 4100), 0, 0, NBODY__Q(-341, 164), NBODY__Q(4496, 1025), NBODY__Q(-289, 82), NBODY__Q(2193, 4100),
    NBODY__Q(51, 82), NBODY__Q(33, 164), NBODY__Q(12, 41), 0, 1, 0};
static const nbody_real nbody__rkf_b[] = {0, 0, 0, 0, 0, NBODY__Q(34, 105), NBODY__Q(9, 35), NBODY__Q(9, 35), NBODY__Q(9, 280),
                                          NBODY__Q(9, 280), 0, NBODY__Q(41, 840), NBODY__Q(41, 840)};
static const nbody_real nbody__rkf_bhat[] = {NBODY__Q(41, 840), 0, 0, 0, 0, NBODY__Q(34, 105), NBODY__Q(9, 35), NBODY__Q(9, 35),
                                             NBODY__Q(9, 280), NBODY__Q(9, 280), NBODY__Q(41, 840), 0, 0};
static const nbody_real nbody__rkf_c[] = {0, NBODY__Q(2, 27), NBODY__Q(1, 9), NBODY__Q(1, 6), NBODY__Q(5, 12), NBODY__Q(1, 2),
                                          NBODY__Q(5, 6), NBODY__Q(1, 6), NBODY__Q(2, 3), NBODY__Q(1, 3), 1, 0, 1};
static const nbody__tableau nbody__rkf_tab = {13, 8, 7, 0, nbody__rkf_a, nbody__rkf_b, nbody__rkf_bhat, nbody__rkf_c};

/* ---- implicit Runge-Kutta ----
   Trapezoidal rule = Lobatto IIIA with 2 stages (its first stage is explicit, K1 = f(y)). */
static const nbody_real nbody__trapeze_a[] = {0, 0, NBODY__Q(1, 2), NBODY__Q(1, 2)};
static const nbody_real nbody__trapeze_b[] = {NBODY__Q(1, 2), NBODY__Q(1, 2)};
static const nbody_real nbody__trapeze_c[] = {0, 1};
static const nbody__tableau nbody__trapeze_tab = {2, 2, 0, 0, nbody__trapeze_a, nbody__trapeze_b, NULL, nbody__trapeze_c};

/* Lobatto IIIC, 3 stages, order 4 (Chipman 1971; HNW II, Table IV.5.11). Embedded: the
   trapezoidal rule over the stage derivatives, b^ = (1/2, 0, 1/2), order 2 (sum b^ = 1,
   sum b^ c = 1/2), so err = h/3 (K1 - 2 K2 + K3) = O(h^3): conservative, never optimistic. */
static const nbody_real nbody__lobatto_a[] = {NBODY__Q(1, 6), NBODY__Q(-1, 3), NBODY__Q(1, 6),
                                              NBODY__Q(1, 6), NBODY__Q(5, 12), NBODY__Q(-1, 12),
                                              NBODY__Q(1, 6), NBODY__Q(2, 3), NBODY__Q(1, 6)};
static const nbody_real nbody__lobatto_b[] = {NBODY__Q(1, 6), NBODY__Q(2, 3), NBODY__Q(1, 6)};
static const nbody_real nbody__lobatto_bhat[] = {NBODY__Q(1, 2), 0, NBODY__Q(1, 2)};
static const nbody_real nbody__lobatto_c[] = {0, NBODY__Q(1, 2), 1};
static const nbody__tableau nbody__lobatto_tab = {3, 4, 2, 0, nbody__lobatto_a, nbody__lobatto_b, nbody__lobatto_bhat, nbody__lobatto_c};

/* Gauss-Legendre, 3 stages, order 6 (Kuntzmann 1961, Butcher 1964; HNW I, Table II.7.4);
   the sqrt(15) entries are computed in the working precision, so they are not stored. */
static void nbody__gauss3(nbody__tableau *T, nbody_real a[9], nbody_real b[3], nbody_real c[3]) {
    nbody_real r = NBODY__SQRT((nbody_real)15);
    a[0] = NBODY__Q(5, 36);          a[1] = NBODY__Q(2, 9) - r / 15; a[2] = NBODY__Q(5, 36) - r / 30;
    a[3] = NBODY__Q(5, 36) + r / 24; a[4] = NBODY__Q(2, 9);          a[5] = NBODY__Q(5, 36) - r / 24;
    a[6] = NBODY__Q(5, 36) + r / 30; a[7] = NBODY__Q(2, 9) + r / 15; a[8] = NBODY__Q(5, 36);
    b[0] = b[2] = NBODY__Q(5, 18); b[1] = NBODY__Q(4, 9);
    c[0] = NBODY__Q(1, 2) - r / 10; c[1] = NBODY__Q(1, 2); c[2] = NBODY__Q(1, 2) + r / 10;
    T->stages = 3; T->order = 6; T->embedded_order = 0; T->fsal = 0;
    T->a = a; T->b = b; T->bhat = NULL; T->c = c;
}

#define NBODY__IRK_MAX_SWEEPS 60

/* max_i |h (p_i - q_i)| / (atol + rtol |y_i|): the scaled size of a difference of derivatives */
static nbody_result nbody__scaled_change(nbody_sim *s, nbody_real h, nbody__buf p, nbody__buf q, nbody_real tol,
                                         nbody_real *norm) {
    nbody__lincomb op = nbody__op(s->y, s->y, h, s->len);
    op.nk = 2; op.c[0] = 1; op.c[1] = -1; op.k[0] = p; op.k[1] = q;
    return s->eng.ops->error_norm(&s->eng, &op, tol, tol, norm);
}

/* Stage derivatives K_i = f(y + h sum_j a_ij K_j) in k[1..stages], solved to convergence by
   Gauss-Seidel fixed-point sweeps starting from K_i = f(y). For gravity (non-stiff) each sweep
   is a contraction by about h |df/dy|, so it converges for any step an explicit method could
   take; a sweep stops when the largest change of h K_i is below 16 eps (scaled like the error
   norm). No convergence in NBODY__IRK_MAX_SWEEPS sweeps means the step is too large: with step
   control it is rejected and shrunk (err = +Inf); with a fixed step the step fails with
   NBODY_ERR_STEP_TOO_SMALL and the state is unchanged. A row of zeros (trapezoid) is K = f(y). */
static nbody_result nbody__solve_irk(nbody_sim *s, const nbody__tableau *T, nbody_real h, nbody_real *err) {
    nbody_real tol = 16 * nbody__eps(), change = 0;
    int i, j, sweep, S = T->stages;
    nbody_result r = nbody__first_stage(s);
    *err = 0;
    for (i = 0; i < S && r == NBODY_OK; ++i) {
        nbody__lincomb copy = nbody__op(s->k[1 + i], s->k[0], 0, s->len);
        r = s->eng.ops->lincomb(&s->eng, &copy);
    }
    for (sweep = 0; r == NBODY_OK; ++sweep) {
        if (sweep == NBODY__IRK_MAX_SWEEPS) {
            nbody__log(&s->desc, NBODY_LOG_WARNING, "nbody: implicit stages did not converge with dt = %g at t = %g",
                       (double)h, (double)s->t);
            if (s->method->adaptive && s->desc.tolerance > 0) { *err = (nbody_real)HUGE_VAL; return NBODY_OK; }
            return NBODY_ERR_STEP_TOO_SMALL;
        }
        change = 0;
        for (i = 0; i < S && r == NBODY_OK; ++i) {
            nbody__lincomb op = nbody__op(s->ytmp, s->y, h, s->len);
            nbody_real ci = 0;
            for (j = 0; j < S; ++j)
                if (T->a[i * S + j] != 0) { op.c[op.nk] = T->a[i * S + j]; op.k[op.nk] = s->k[1 + j]; op.nk++; }
            if (op.nk == 0) continue;
            r = s->eng.ops->lincomb(&s->eng, &op);
            if (r == NBODY_OK) r = nbody__derivative(s, s->ytmp, s->work[0]);
            if (r == NBODY_OK) r = nbody__scaled_change(s, h, s->work[0], s->k[1 + i], tol, &ci);
            nbody__swap(&s->work[0], &s->k[1 + i]);
            if (!(ci <= change)) change = ci;          /* NaN sticks: it ends the sweeps below */
        }
        if (!(change > 1)) break;
    }
    if (r == NBODY_OK) r = nbody__update(s, h, S, T->b, &s->k[1]);
    if (r == NBODY_OK && T->bhat && s->desc.tolerance > 0) {
        nbody__lincomb op = nbody__op(s->y_new, s->y, h, s->len);
        op.nk = S;
        for (j = 0; j < S; ++j) { op.c[j] = T->b[j] - T->bhat[j]; op.k[j] = s->k[1 + j]; }
        r = s->eng.ops->error_norm(&s->eng, &op, s->desc.tolerance, s->desc.tolerance, err);
    }
    return r;
}

static nbody_result nbody__attempt_irk(nbody_sim *s, nbody_real h, nbody_real *err) {
    return nbody__solve_irk(s, s->method->tableau, h, err);
}

static nbody_result nbody__attempt_gauss(nbody_sim *s, nbody_real h, nbody_real *err) {
    nbody__tableau T;
    nbody_real a[9], b[3], c[3];
    nbody__gauss3(&T, a, b, c);
    return nbody__solve_irk(s, &T, h, err);
}

/* ---- Adams-Bashforth of order p (HNW I, III.1, Table 1.1):
   y_{n+1} = y_n + h sum_{j<p} beta_j f_{n-j}. f_n is k[0]; f_{n-1} .. f_{n-p+1} are the ring
   work[0] .. work[p-2]; history counts how many of them are valid AND spaced by mreal[0]. Until
   p-1 are, a Runge-Kutta step of order p is taken instead (a new dt, a clipped last step or
   nbody_set_state restart the history). */
static const nbody_real nbody__adams_beta[5][5] = {
    {1, 0, 0, 0, 0},
    {NBODY__Q(3, 2), NBODY__Q(-1, 2), 0, 0, 0},
    {NBODY__Q(23, 12), NBODY__Q(-16, 12), NBODY__Q(5, 12), 0, 0},
    {NBODY__Q(55, 24), NBODY__Q(-59, 24), NBODY__Q(37, 24), NBODY__Q(-9, 24), 0},
    {NBODY__Q(1901, 720), NBODY__Q(-2774, 720), NBODY__Q(2616, 720), NBODY__Q(-1274, 720), NBODY__Q(251, 720)}};
static const nbody__tableau *const nbody__adams_start[5] = {&nbody__euler_tab, &nbody__midpoint_tab, &nbody__kutta3_tab,
                                                            &nbody__rk4_tab, &nbody__rkck5_tab};

/* The history is usable for a step h: equal spacing up to 1e-10 relative (a last step clipped
   by accumulated round-off in t keeps it; the constant-step formula then errs by O(1e-10 h^2 f'),
   far below the method's own error). */
static int nbody__adams_spaced(const nbody_sim *s, nbody_real h) {
    nbody_real rel = 64 * nbody__eps() > (nbody_real)1e-10 ? 64 * nbody__eps() : (nbody_real)1e-10;
    return s->history > 0 && NBODY__FABS(h - s->mreal[0]) <= rel * NBODY__FABS(h);
}

static nbody_result nbody__attempt_adams(nbody_sim *s, nbody_real h, nbody_real *err) {
    int p = s->desc.order, j, usable = nbody__adams_spaced(s, h) ? s->history : 0;
    nbody_real beta[5];
    nbody__buf f[5];
    nbody_result r;
    if (usable < p - 1) {
        /* the generic explicit driver reads the tableau from s->method: lend it the starter */
        const nbody__method_info *self = s->method;
        nbody__method_info start = *self;
        start.tableau = nbody__adams_start[p - 1];
        s->method = &start;
        r = nbody__attempt_erk(s, h, err);
        s->method = self;
        return r;
    }
    *err = 0;
    if ((r = nbody__first_stage(s)) != NBODY_OK) return r;
    for (j = 0; j < p; ++j) { beta[j] = nbody__adams_beta[p - 1][j]; f[j] = j ? s->work[j - 1] : s->k[0]; }
    return nbody__update(s, h, p, beta, f);
}

/* f_n joins the ring (buffers rotate by pointer: nothing is copied) */
static void nbody__commit_adams(nbody_sim *s, nbody_real h) {
    int p = s->desc.order, j;
    if (!nbody__adams_spaced(s, h)) s->history = 0;
    s->mreal[0] = h;
    if (p > 1) {
        nbody__buf oldest = s->work[p - 2];
        for (j = p - 2; j > 0; --j) s->work[j] = s->work[j - 1];
        s->work[0] = s->k[0];
        s->k[0] = oldest;
        if (s->history < p - 1) s->history++;
    }
    s->f_valid = 0;
}

/* ---- Bulirsch-Stoer (Deuflhard 1983; HNW I, II.9, as in ODEX): modified midpoint with
   n_j = 2j substeps, Aitken-Neville extrapolation in (H/n_j)^2, T_jk of order 2k.
   Everything is an increment d = z - y (smaller numbers, and the final update is y + d
   through nbody__update). work[0..KMAX-1]: the latest row T_j1..T_jj; work[KMAX]: the new
   entry; work[KMAX+1]: scratch; work[KMAX+2]: the midpoint's other increment.
   Fixed step (tolerance 0): NBODY__BS_FIXED columns, order 8. Adaptive: the ODEX
   convergence tests in columns kopt-1, kopt, kopt+1, then order and step chosen by the work
   per unit step A_k / H_k; the controller uses the step proposed here. */
#define NBODY__BS_KMAX 8
#define NBODY__BS_FIXED 4
#define NBODY__BS_NEW NBODY__BS_KMAX
#define NBODY__BS_SCRATCH (NBODY__BS_KMAX + 1)
#define NBODY__BS_OTHER (NBODY__BS_KMAX + 2)

/* work[out] = z_n - y for n midpoint substeps over H (Gragg 1965), no final smoothing: for
   even n its error has an expansion in even powers of H/n. k[0] = f(y) already. */
static nbody_result nbody__bs_midpoint(nbody_sim *s, nbody_real H, int n, int out) {
    nbody_real h = H / (nbody_real)n;
    nbody__buf a = s->work[NBODY__BS_OTHER], b = s->work[out], t;
    nbody__lincomb op = nbody__op(a, NULL, 0, s->len);            /* d_0 = 0 */
    nbody_result r = s->eng.ops->lincomb(&s->eng, &op);
    int m;
    if (r == NBODY_OK) {                                           /* d_1 = h f(y) */
        op = nbody__op(b, NULL, h, s->len); op.nk = 1; op.c[0] = 1; op.k[0] = s->k[0];
        r = s->eng.ops->lincomb(&s->eng, &op);
    }
    for (m = 1; m < n && r == NBODY_OK; ++m) {                     /* d_{m+1} = d_{m-1} + 2h f(y + d_m) */
        op = nbody__op(s->ytmp, s->y, 1, s->len); op.nk = 1; op.c[0] = 1; op.k[0] = b;
        r = s->eng.ops->lincomb(&s->eng, &op);
        if (r == NBODY_OK) r = nbody__derivative(s, s->ytmp, s->k[1]);
        op = nbody__op(a, a, 2 * h, s->len); op.nk = 1; op.c[0] = 1; op.k[0] = s->k[1];
        if (r == NBODY_OK) r = s->eng.ops->lincomb(&s->eng, &op);
        t = a; a = b; b = t;
    }
    s->work[out] = b;
    s->work[NBODY__BS_OTHER] = a;
    return r;
}

/* row j (1-based) of the extrapolation table: T_j1 from the midpoint rule, then
   T_{j,k+1} = T_jk + (T_jk - T_{j-1,k}) / ((n_j / n_{j-k})^2 - 1); the row replaces the old one */
static nbody_result nbody__bs_row(nbody_sim *s, nbody_real H, int j) {
    nbody_result r = nbody__bs_midpoint(s, H, 2 * j, NBODY__BS_NEW);
    int k;
    for (k = 1; k < j && r == NBODY_OK; ++k) {
        nbody_real q = (nbody_real)j / (nbody_real)(j - k), inv = 1 / (q * q - 1);
        nbody__lincomb op = nbody__op(s->work[NBODY__BS_SCRATCH], s->work[NBODY__BS_NEW], 1, s->len);
        op.nk = 2; op.c[0] = inv; op.c[1] = -inv; op.k[0] = s->work[NBODY__BS_NEW]; op.k[1] = s->work[k - 1];
        r = s->eng.ops->lincomb(&s->eng, &op);
        nbody__swap(&s->work[k - 1], &s->work[NBODY__BS_NEW]);      /* T_jk kept for row j+1 */
        nbody__swap(&s->work[NBODY__BS_NEW], &s->work[NBODY__BS_SCRATCH]);
    }
    nbody__swap(&s->work[j - 1], &s->work[NBODY__BS_NEW]);          /* T_jj */
    return r;
}

/* ODEX's step for column j: H_j = H 0.94 (0.65 / err)^(1/(2j-1)), H_j / H kept in
   [0.02^(1/(2j-1)) / 4, 50^(1/(2j-1))] so high columns grow less per step */
static nbody_real nbody__bs_factor(nbody_real err, int j) {
    nbody_real x = (nbody_real)1 / (nbody_real)(2 * j - 1), lo = NBODY__POW((nbody_real)0.02, x);
    nbody_real f = (nbody_real)0.94 * NBODY__POW((nbody_real)0.65 / err, x);
    if (!(f >= lo / 4)) f = lo / 4;                                 /* NaN included */
    return f > 1 / lo ? 1 / lo : f;
}

/* ODEX's choice of the next column from the work per unit step W_k = A_k / H_k */
static int nbody__bs_next_column(const nbody_real *w, int kc, int kopt) {
    int k;
    if (kc == 2) k = 3;
    else if (kc <= kopt) {
        k = kc;
        if (w[kc - 1] < (nbody_real)0.8 * w[kc]) k = kc - 1;
        if (w[kc] < (nbody_real)0.9 * w[kc - 1]) k = kc + 1;
    } else {
        k = kc - 1;
        if (kc > 3 && w[kc - 2] < (nbody_real)0.8 * w[kc - 1]) k = kc - 2;
        if (w[kc] < (nbody_real)0.9 * w[k]) k = kc;
    }
    return k > NBODY__BS_KMAX - 1 ? NBODY__BS_KMAX - 1 : k;
}

static nbody_result nbody__attempt_bs(nbody_sim *s, nbody_real H, nbody_real *err) {
    int adaptive = s->desc.tolerance > 0, kopt = s->mint[0], last, j, kc = 0, knew;
    nbody_real work_k[NBODY__BS_KMAX + 2], hk[NBODY__BS_KMAX + 2], cost[NBODY__BS_KMAX + 2], e = 0, one = 1;
    nbody_result r = nbody__first_stage(s);
    *err = 0;
    if (kopt < 2) {                                                /* ODEX's first guess from the tolerance */
        kopt = adaptive ? (int)(-(nbody_real)log10((double)s->desc.tolerance) * (nbody_real)0.6 + (nbody_real)1.5) : 0;
        if (kopt < 3) kopt = 3;
        if (kopt > NBODY__BS_KMAX - 1) kopt = NBODY__BS_KMAX - 1;
    }
    last = adaptive ? kopt + 1 : NBODY__BS_FIXED;
    cost[0] = 1;                                                   /* f(y), shared by every row */
    for (j = 1; j <= NBODY__BS_KMAX; ++j) cost[j] = cost[j - 1] + (nbody_real)(2 * j - 1);
    for (j = 1; j <= last && r == NBODY_OK; ++j) {
        r = nbody__bs_row(s, H, j);
        if (r != NBODY_OK || !adaptive || j < 2) continue;
        r = nbody__scaled_change(s, 1, s->work[j - 1], s->work[j - 2], s->desc.tolerance, &e);
        hk[j] = H * nbody__bs_factor(e, j);
        work_k[j] = cost[j] / hk[j];
        if (j >= kopt - 1 && e <= 1) { kc = j; break; }
        /* ODEX: give up early when even column kopt+1 cannot be expected to converge */
        if (j == kopt - 1 && e > (nbody_real)((kopt + 1) * (kopt + 1) * kopt * kopt)) break;
        if (j == kopt && e > (nbody_real)((kopt + 1) * (kopt + 1))) break;
    }
    if (r != NBODY_OK) return r;
    if (!adaptive) return nbody__update(s, 1, 1, &one, &s->work[NBODY__BS_FIXED - 1]);
    if (j > last) j = last;
    if (kc) {                                                      /* accepted in column kc */
        knew = nbody__bs_next_column(work_k, kc, kopt);
        s->mreal[0] = knew > kc ? hk[kc] * (cost[knew] / cost[kc]) : hk[knew];
        s->mint[0] = knew;
        *err = e;
        return nbody__update(s, 1, 1, &one, &s->work[kc - 1]);
    }
    knew = j < kopt ? j : kopt;                                    /* rejected after column j */
    if (knew >= 3 && work_k[knew - 1] < (nbody_real)0.8 * work_k[knew]) knew--;
    if (knew < 2) knew = 2;
    s->mreal[0] = hk[knew];
    s->mint[0] = knew;
    *err = e > 1 ? e : (nbody_real)HUGE_VAL;
    return NBODY_OK;
}

/* BS chooses its next step together with its order in the attempt */
static nbody_real nbody__bs_proposal(const nbody_sim *s) { return s->mreal[0]; }
/* ---- end section: INTEGRATORS ---- */

/* one row per nbody_method, in enum order; attempt NULL = not built yet */
static const nbody__method_info nbody__methods[NBODY_METHOD_COUNT_] = {
    {NBODY_METHOD_DEFAULT, 0, 0, 0, 0, NULL, NULL, NULL},
    {NBODY_EULER, 1, 0, 1, 0, &nbody__euler_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_MIDPOINT, 2, 0, 2, 0, &nbody__midpoint_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_LEAPFROG, 2, 0, 2, 1, NULL, nbody__attempt_leapfrog, nbody__commit_leapfrog},
    {NBODY_TRAPEZE, 2, 0, 3, 1, &nbody__trapeze_tab, nbody__attempt_irk, nbody__commit_invalidate},
    {NBODY_RK4, 4, 0, 4, 0, &nbody__rk4_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_RKCK, 5, 1, 6, 0, &nbody__rkck_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_RKDP, 5, 1, 7, 0, &nbody__rkdp_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_RKDVERK, 6, 1, 8, 0, &nbody__dverk_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_RKF, 8, 1, 13, 0, &nbody__rkf_tab, nbody__attempt_erk, nbody__commit_erk},
    {NBODY_RKGL, 6, 0, 4, 1, NULL, nbody__attempt_gauss, nbody__commit_invalidate},
    {NBODY_RKLC, 4, 1, 4, 1, &nbody__lobatto_tab, nbody__attempt_irk, nbody__commit_invalidate},
    {NBODY_ADAMS, 5, 0, 6, 4, NULL, nbody__attempt_adams, nbody__commit_adams},
    {NBODY_BS, 2 * NBODY__BS_FIXED, 1, 2, NBODY__BS_KMAX + 3, NULL, nbody__attempt_bs, nbody__commit_invalidate}};

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
    if (s->method->id == NBODY_BS) return nbody__bs_proposal(s);   /* step chosen with the order */
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
    if (!out || !desc) return NBODY_ERR_INVALID_ARGUMENT;
    r = nbody__desc_valid(desc) && nbody__system_valid(initial) && initial->n <= ((size_t)-1) / (6 * sizeof(nbody_real))
            ? NBODY_OK : NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__mpi_same(desc, initial, r)) != NBODY_OK) return r;   /* with mpi_comm: all ranks alike */
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
    if (s->eng.ops) r = nbody__engine_agree(&s->eng, r);
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
    if (!sim) return NBODY_ERR_INVALID_ARGUMENT;
    r = nbody__system_valid(in) && in->n == sim->n ? NBODY_OK : NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__mpi_same(&sim->desc, in, r)) != NBODY_OK) return r;
    r = sim->eng.ops->set_masses(&sim->eng, in->m);
    if (r == NBODY_OK) r = nbody__upload_state(sim, in);
    if ((r = nbody__engine_agree(&sim->eng, r)) != NBODY_OK) return r;
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
    if (!desc) return NBODY_ERR_INVALID_ARGUMENT;
    r = ax && ay && az && nbody__desc_valid(desc) && nbody__system_valid(s) && s->n <= ((size_t)-1) / (6 * sizeof(nbody_real))
            ? NBODY_OK : NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__mpi_same(desc, s, r)) != NBODY_OK) return r;
    d = nbody__desc_defaults(desc);
    r = nbody__engine_start(&e, &d, s->n, s->m);
    if (r != NBODY_OK) return r;
    memset(&tmp, 0, sizeof tmp);
    tmp.eng = e; tmp.n = s->n; tmp.len = 6 * s->n;
    r = e.ops->alloc(&e, tmp.len, &y);
    if (r == NBODY_OK) r = e.ops->alloc(&e, tmp.len, &f);
    tmp.y = y;
    if (r == NBODY_OK) r = nbody__upload_state(&tmp, s);
    r = nbody__engine_agree(&e, r);
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
    if (!w->f) return;             /* a rank that does not write */
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

/* ---- section: CHECKPOINTS -------------------------------------------------------------
   Layout (native byte order, marked like a snapshot):
     "NBODYCKP" | u32 version | u32 byte-order mark 0x01020304 | u32 sizeof(nbody_real) |
     u32 sizeof(int) | u64 n | int ints[21] | real reals[18] | u64 steps, rejected, force_evals |
     n reals masses | nbuf blocks of 6n reals: y, k[0..nk), work[0..nwork), comp, comp_new
     (the last two when compensated) | u64 FNV-1a 64 checksum of everything before it.
   ints:  engine method order traversal visit_order block_size compensated quadrupole leaf_size (the desc
          fields that change the numbers) | nk nwork f_valid history | mint[8]
   reals: G softening dt tolerance dt_min dt_max theta | t dt_next stats.dt | mreal[8]
   y_new and ytmp are not saved: every method writes them before reading them in a step. */
#define NBODY__CKP_MAGIC "NBODYCKP"
#define NBODY__CKP_VERSION 2u         /* 2: leaf_size added to the desc ints */
#define NBODY__CKP_DESC_INTS 9
#define NBODY__CKP_DESC_REALS 7
#define NBODY__CKP_INTS (NBODY__CKP_DESC_INTS + 4 + 8)
#define NBODY__CKP_REALS (NBODY__CKP_DESC_REALS + 3 + 8)
#define NBODY__CKP_MAX_BUFS (3 + NBODY__MAX_TERMS + NBODY__MAX_WORK)

typedef struct nbody__ckp_head {
    unsigned int head[4];          /* version, byte-order mark, sizeof(nbody_real), sizeof(int) */
    unsigned long long n;
    int ints[NBODY__CKP_INTS];
    nbody_real reals[NBODY__CKP_REALS];
    unsigned long long counts[3];
} nbody__ckp_head;

/* the desc fields that change the numbers, in file order */
static void nbody__ckp_desc(const nbody_desc *d, int *iv, nbody_real *rv) {
    iv[0] = (int)d->engine; iv[1] = (int)d->method; iv[2] = d->order; iv[3] = (int)d->traversal;
    iv[4] = (int)d->visit_order; iv[5] = d->block_size; iv[6] = d->compensated; iv[7] = d->quadrupole;
    iv[8] = d->leaf_size;
    rv[0] = d->G; rv[1] = d->softening; rv[2] = d->dt; rv[3] = d->tolerance;
    rv[4] = d->dt_min; rv[5] = d->dt_max; rv[6] = d->theta;
}

/* every buffer a checkpoint carries, in file order; returns how many */
static int nbody__ckp_buffers(nbody_sim *s, nbody__buf **b) {
    int i, nb = 0;
    b[nb++] = &s->y;
    for (i = 0; i < s->nk; ++i) b[nb++] = &s->k[i];
    for (i = 0; i < s->nwork; ++i) b[nb++] = &s->work[i];
    if (s->comp) { b[nb++] = &s->comp; b[nb++] = &s->comp_new; }
    return nb;
}

/* file size for a header, 0 when it cannot be (overflow or out-of-range counts) */
static unsigned long long nbody__ckp_size(const nbody__ckp_head *h) {
    const unsigned long long fixed = 8 + sizeof h->head + 8 + sizeof h->ints + sizeof h->reals + sizeof h->counts + 8;
    unsigned long long nbuf, per;
    int nk = h->ints[NBODY__CKP_DESC_INTS], nwork = h->ints[NBODY__CKP_DESC_INTS + 1], comp = h->ints[6];
    if (nk < 0 || nk > NBODY__MAX_TERMS || nwork < 0 || nwork > NBODY__MAX_WORK || comp < 0 || comp > 1) return 0;
    nbuf = 1 + (unsigned long long)nk + (unsigned long long)nwork + 2 * (unsigned long long)comp;
    per = (1 + 6 * nbuf) * sizeof(nbody_real);       /* bytes per body */
    if (h->n == 0 || h->n > (0xFFFFFFFFFFFFFFFFULL - fixed) / per) return 0;
    return fixed + h->n * per;
}

NBODY__DEF nbody_result nbody_checkpoint_save(const nbody_sim *sim, const char *path) {
    /* downloads take a non-const engine; nothing in the simulation changes */
    nbody_sim *s = (nbody_sim *)sim;
    nbody__buf *bufs[NBODY__CKP_MAX_BUFS];
    nbody__ckp_head h;
    nbody__writer w;
    nbody_real *host;
    char *tmp;
    size_t plen, hostb;
    nbody_result r = NBODY_OK;
    int i, nb;
    if (!sim || !path) return NBODY_ERR_INVALID_ARGUMENT;
    plen = strlen(path);
    hostb = s->len * sizeof(nbody_real);
    /* one block: a host copy of one buffer, then the name "path.tmp" */
    host = (nbody_real *)nbody__alloc(&s->desc, hostb + plen + 5);
    if (!host) return NBODY_ERR_OUT_OF_MEMORY;
    tmp = (char *)host + hostb;
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    memset(&h, 0, sizeof h);
    h.head[0] = NBODY__CKP_VERSION; h.head[1] = 0x01020304u;
    h.head[2] = (unsigned int)sizeof(nbody_real); h.head[3] = (unsigned int)sizeof(int);
    h.n = (unsigned long long)s->n;
    nbody__ckp_desc(&s->desc, h.ints, h.reals);
    h.ints[NBODY__CKP_DESC_INTS] = s->nk; h.ints[NBODY__CKP_DESC_INTS + 1] = s->nwork;
    h.ints[NBODY__CKP_DESC_INTS + 2] = s->f_valid; h.ints[NBODY__CKP_DESC_INTS + 3] = s->history;
    memcpy(h.ints + NBODY__CKP_DESC_INTS + 4, s->mint, sizeof s->mint);
    h.reals[NBODY__CKP_DESC_REALS] = s->t; h.reals[NBODY__CKP_DESC_REALS + 1] = s->dt_next;
    h.reals[NBODY__CKP_DESC_REALS + 2] = s->stats.dt;
    for (i = 0; i < 8; ++i) h.reals[NBODY__CKP_DESC_REALS + 3 + i] = s->mreal[i];
    h.counts[0] = s->stats.steps; h.counts[1] = s->stats.rejected; h.counts[2] = s->stats.force_evals;
    /* with several ranks every rank gathers each buffer (collective), rank 0 writes */
    w.f = nbody__engine_writer(&s->eng) ? fopen(tmp, "wb") : NULL;
    r = nbody__engine_agree(&s->eng, nbody__engine_writer(&s->eng) && !w.f ? NBODY_ERR_IO : NBODY_OK);
    if (r != NBODY_OK) { nbody__free(&s->desc, host); return r; }
    w.sum = NBODY__FNV_SEED; w.ok = w.f != NULL;
    nbody__put(&w, NBODY__CKP_MAGIC, 8);
    nbody__put(&w, h.head, sizeof h.head);
    nbody__put(&w, &h.n, sizeof h.n);
    nbody__put(&w, h.ints, sizeof h.ints);
    nbody__put(&w, h.reals, sizeof h.reals);
    nbody__put(&w, h.counts, sizeof h.counts);
    nbody__put(&w, s->m, s->n * sizeof(nbody_real));
    nb = nbody__ckp_buffers(s, bufs);
    for (i = 0; i < nb && r == NBODY_OK; ++i) {
        r = s->eng.ops->download(&s->eng, host, *bufs[i], 0, s->len);
        if (r == NBODY_OK) nbody__put(&w, host, hostb);
    }
    if (w.f) {
        if (w.ok && fwrite(&w.sum, 1, sizeof w.sum, w.f) != sizeof w.sum) w.ok = 0;
        if (fclose(w.f) != 0) w.ok = 0;
        if (r == NBODY_OK && !w.ok) r = NBODY_ERR_IO;
        /* POSIX rename replaces path atomically; where it refuses an existing target, remove first */
        if (r == NBODY_OK && rename(tmp, path) != 0 && (remove(path), rename(tmp, path) != 0)) r = NBODY_ERR_IO;
        if (r != NBODY_OK) remove(tmp);
    }
    nbody__free(&s->desc, host);
    return nbody__engine_agree(&s->eng, r);
}

/* read len bytes, 0 when the file is short */
static int nbody__ckp_get(FILE *f, void *p, size_t len) { return fread(p, 1, len, f) == len; }

/* pass 1: the checksum over the whole file, before anything in it is trusted */
static nbody_result nbody__ckp_verify(FILE *f, unsigned long long size) {
    unsigned char chunk[4096];
    unsigned long long sum = NBODY__FNV_SEED, left, stored;
    if (size < 16) return NBODY_ERR_FORMAT;
    for (left = size - 8; left > 0;) {
        size_t len = left < sizeof chunk ? (size_t)left : sizeof chunk;
        if (!nbody__ckp_get(f, chunk, len)) return NBODY_ERR_FORMAT;
        sum = nbody__fnv1a(sum, chunk, len);
        left -= len;
    }
    if (!nbody__ckp_get(f, &stored, sizeof stored) || stored != sum) return NBODY_ERR_FORMAT;
    return NBODY_OK;
}

/* pass 2: header, the desc check, bodies; *sys allocated here (freed by the caller) */
static nbody_result nbody__ckp_read_head(FILE *f, unsigned long long size, const nbody_desc *d,
                                         nbody__ckp_head *h, nbody_system *sys) {
    char magic[8];
    int iv[NBODY__CKP_DESC_INTS], i;
    nbody_real rv[NBODY__CKP_DESC_REALS], *fields[7];
    nbody_result r;
    if (!nbody__ckp_get(f, magic, 8) || memcmp(magic, NBODY__CKP_MAGIC, 8) != 0 || !nbody__ckp_get(f, h->head, sizeof h->head) ||
        !nbody__ckp_get(f, &h->n, sizeof h->n) || !nbody__ckp_get(f, h->ints, sizeof h->ints) ||
        !nbody__ckp_get(f, h->reals, sizeof h->reals) || !nbody__ckp_get(f, h->counts, sizeof h->counts))
        return NBODY_ERR_FORMAT;
    if (h->head[0] != NBODY__CKP_VERSION || h->head[1] != 0x01020304u || h->head[2] != sizeof(nbody_real) ||
        h->head[3] != sizeof(int) || nbody__ckp_size(h) != size)
        return NBODY_ERR_FORMAT;
    for (i = 0; i < NBODY__CKP_REALS; ++i) if (!nbody__isfinite(h->reals[i])) return NBODY_ERR_FORMAT;
    if (!(h->reals[NBODY__CKP_DESC_REALS + 1] > 0) || h->ints[NBODY__CKP_DESC_INTS + 2] < 0 ||
        h->ints[NBODY__CKP_DESC_INTS + 2] > 1 || h->ints[NBODY__CKP_DESC_INTS + 3] < 0)
        return NBODY_ERR_FORMAT;
    nbody__ckp_desc(d, iv, rv);
    for (i = 0; i < NBODY__CKP_DESC_INTS; ++i) if (iv[i] != h->ints[i]) return NBODY_ERR_INVALID_ARGUMENT;
    for (i = 0; i < NBODY__CKP_DESC_REALS; ++i) if (rv[i] != h->reals[i]) return NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody_system_alloc(sys, (size_t)h->n)) != NBODY_OK) return r;
    fields[0] = sys->m; fields[1] = sys->x; fields[2] = sys->y; fields[3] = sys->z;
    fields[4] = sys->vx; fields[5] = sys->vy; fields[6] = sys->vz;
    for (i = 0; i < 7; ++i) if (!nbody__ckp_get(f, fields[i], sys->n * sizeof(nbody_real))) return NBODY_ERR_FORMAT;
    sys->t = h->reals[NBODY__CKP_DESC_REALS];
    return nbody__system_valid(sys) ? NBODY_OK : NBODY_ERR_FORMAT;
}

/* pass 2 continued: a simulation from the bodies, then every other buffer and scalar */
static nbody_result nbody__ckp_restore(FILE *f, const nbody_desc *desc, const nbody__ckp_head *h,
                                       const nbody_system *sys, nbody_sim **out) {
    nbody__buf *bufs[NBODY__CKP_MAX_BUFS];
    nbody_sim *s;
    nbody_real *host;
    int i, nb;
    nbody_result r = nbody_create(&s, desc, sys);
    if (r != NBODY_OK) return r;
    if (s->nk != h->ints[NBODY__CKP_DESC_INTS] || s->nwork != h->ints[NBODY__CKP_DESC_INTS + 1]) {
        nbody_destroy(s);
        return NBODY_ERR_FORMAT;     /* written by a build whose method keeps other buffers */
    }
    host = (nbody_real *)nbody__alloc(&s->desc, s->len * sizeof(nbody_real));
    if (!host) { nbody_destroy(s); return NBODY_ERR_OUT_OF_MEMORY; }
    nb = nbody__ckp_buffers(s, bufs);
    for (i = 1; i < nb && r == NBODY_OK; ++i) {    /* bufs[0] = y came in through nbody_create */
        r = nbody__ckp_get(f, host, s->len * sizeof(nbody_real)) ? NBODY_OK : NBODY_ERR_FORMAT;
        if (r == NBODY_OK) r = s->eng.ops->upload(&s->eng, *bufs[i], 0, host, s->len);
    }
    nbody__free(&s->desc, host);
    r = nbody__engine_agree(&s->eng, r);
    if (r != NBODY_OK) { nbody_destroy(s); return r; }
    s->f_valid = h->ints[NBODY__CKP_DESC_INTS + 2];
    s->history = h->ints[NBODY__CKP_DESC_INTS + 3];
    memcpy(s->mint, h->ints + NBODY__CKP_DESC_INTS + 4, sizeof s->mint);
    s->t = h->reals[NBODY__CKP_DESC_REALS];
    s->dt_next = h->reals[NBODY__CKP_DESC_REALS + 1];
    s->stats.dt = h->reals[NBODY__CKP_DESC_REALS + 2];
    for (i = 0; i < 8; ++i) s->mreal[i] = h->reals[NBODY__CKP_DESC_REALS + 3 + i];
    s->stats.t = s->t;
    s->stats.steps = h->counts[0]; s->stats.rejected = h->counts[1]; s->stats.force_evals = h->counts[2];
    *out = s;
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_checkpoint_load(nbody_sim **out, const nbody_desc *desc, const char *path) {
    nbody__ckp_head h;
    nbody_system sys;
    nbody_desc d;
    unsigned long long size;
    long end;
    FILE *f;
    nbody_result r;
    if (!out || !desc || !path || !nbody__desc_valid(desc)) return NBODY_ERR_INVALID_ARGUMENT;
    /* with desc.mpi_comm every rank reads the file (any number of ranks may have written it) */
    f = fopen(path, "rb");
    r = f ? NBODY_OK : NBODY_ERR_IO;
    if (f && (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)) r = NBODY_ERR_IO;
    size = r == NBODY_OK ? (unsigned long long)end : 0;
    d = nbody__desc_defaults(desc);
    memset(&sys, 0, sizeof sys);
    if (r == NBODY_OK) r = nbody__ckp_verify(f, size);
    if (r == NBODY_OK) r = fseek(f, 0, SEEK_SET) == 0 ? NBODY_OK : NBODY_ERR_IO;
    if (r == NBODY_OK) r = nbody__ckp_read_head(f, size, &d, &h, &sys);
    r = nbody__mpi_verdict(desc, r);
    if (r == NBODY_OK) r = nbody__ckp_restore(f, desc, &h, &sys, out);
    nbody_system_free(&sys);
    if (f) fclose(f);
    return r;
}
/* ---- end section: CHECKPOINTS ---- */

/* ---- section: CUDA-OpenGL INTEROP (viewer) --------------------------------------------- */
#ifdef NBODY_WITH_CUDA
#ifdef __cplusplus
extern "C" {
#endif
/* Defined at the end of nbody_cuda.cu: the kernel that writes n float xyz triples from the
   state y, after checking that dst is device memory of the engine's GPU. */
nbody_result nbody__cuda_positions(nbody__engine *e, nbody__buf y, size_t n, void *dst);
#ifdef __cplusplus
}
#endif
#endif

NBODY__DEF nbody_result nbody_cuda_positions(const nbody_sim *sim, void *device_dst, size_t capacity_bytes) {
    if (!sim || !device_dst || capacity_bytes / (3 * sizeof(float)) < sim->n) return NBODY_ERR_INVALID_ARGUMENT;
    if (sim->desc.engine != NBODY_ENGINE_CUDA && sim->desc.engine != NBODY_ENGINE_CUDA_TREE) return NBODY_ERR_UNAVAILABLE;
#ifdef NBODY_WITH_CUDA
    return nbody__cuda_positions((nbody__engine *)&sim->eng, sim->y, sim->n, device_dst);
#else
    return NBODY_ERR_UNAVAILABLE;
#endif
}
/* ---- end section: CUDA-OpenGL INTEROP ---- */

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
