/* nbody.h - v0.1.0 - gravitational N-body simulation in one C header.

   Direct O(N^2) forces (scalar, OpenMP, blocked SIMD), Barnes-Hut on a kd-tree stored
   as an implicit heap, every integrator of the usual Runge-Kutta / Adams / Bulirsch-Stoer
   family with real adaptive step control, conservation diagnostics, initial conditions
   and snapshot files; optional CUDA and OpenCL engines. No global state.

   DO THIS ONCE, in exactly one C or C++ file:

       #define NBODY_IMPLEMENTATION
       #include "nbody.h"

   Everywhere else just #include "nbody.h".

   C AND C++: zero-initialise the structs with NBODY_ZERO ({0} in C, {} in C++), as below;
   every program here compiles as C99 and as C++11 with -Wall -Wextra -pedantic -Werror.

   A COMPLETE PROGRAM

       #define NBODY_IMPLEMENTATION
       #include "nbody.h"
       #include <stdio.h>
       int main(void) {
           nbody_system s = NBODY_ZERO;
           nbody_sim *sim;
           nbody_desc d = NBODY_ZERO;                // all zero = sensible defaults
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
       Windows: MSVC (cl /O2 /openmp prog.c: OpenMP 2.0 is enough), or MinGW-w64:
               x86_64-w64-mingw32-gcc -O2 -fopenmp -static prog.c (docs/platforms.md)
       Paths are UTF-8 everywhere; files past 2 GiB work everywhere. Include nbody.h with
       NBODY_IMPLEMENTATION before other headers: it sets _FILE_OFFSET_BITS (and, in strict
       ISO modes, _POSIX_C_SOURCE) for its 64-bit offsets and monotonic clock on POSIX.

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
   threads at once. One simulation must not be used from two threads at the same time: a
   call that finds it inside another call (another thread, or its own hook calling nbody_step,
   nbody_advance or nbody_destroy) returns NBODY_ERR_BUSY and does nothing (nbody_destroy,
   which returns void, logs the refusal and frees nothing). The calls a hook may make work
   from the hook's own thread only; from any other thread they are refused while it runs.
   The CPU engines use OpenMP inside a call (desc.threads, 0 = OpenMP's default, at most
   NBODY_MAX_THREADS = 1024).

   ERRORS
   Every function that can fail returns nbody_result; nbody_result_string() names it.
   Bad input returns NBODY_ERR_INVALID_ARGUMENT and changes nothing: nothing asserts, aborts
   or prints. A step that turns the state NaN/Inf returns NBODY_ERR_NOT_FINITE and the
   simulation keeps its last good state. A step too small to change t in NBODY_REAL returns
   NBODY_ERR_STEP_TOO_SMALL (state kept). desc.progress (a heartbeat called during
   nbody_advance) may cancel it: NBODY_ERR_CANCELLED, state of the last accepted step.
   Every failure logs one ERROR line saying why (the file, field or body, and the value): to
   desc.log.func when set, and always to nbody_last_error(), the calling thread's last error
   line, so the functions without a desc (nbody_load, nbody_save, nbody_write_csv,
   nbody_archive_open, the initial conditions, ...) say why too:
       if (nbody_load("run.snap", &s) != NBODY_OK) fprintf(stderr, "%s\n", nbody_last_error());
   It is per thread (the only state outside nbody_sim), set by each failure and not cleared by
   a success, like errno. A log function may call the library; what those calls log goes to
   nbody_last_error only, never back into it. nbody_create logs a WARNING for an adaptive tolerance below what a
   tree engine's force error allows (docs/progress.md).
   LIMITS: every refusal of a desc or of the bodies is decided in one place,
   nbody_desc_check(&desc, &bodies), which nbody_create calls (and which a front end can call
   before creating anything); each refusal logs one ERROR line naming the field or the body
   and its value ("nbody: desc.theta = 1e+06 must be at most 1.2 ...", "nbody: body 7: m = -1 is
   negative"). nbody_interval_check does the same for an output interval (snapshots every
   dt_out from t_start to t_end).

   PHYSICS AND UNITS
   a_i = G * sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2)   (Plummer softening eps;
   eps = 0 is exact Newtonian gravity; coincident bodies then give NaN, which is reported).
   The state is y = [x(N) y(N) z(N) vx(N) vy(N) vz(N)], f(y) = [v, a(x)].

   CONTENTS: search for the tag (">>simulation") to jump to a section; the implementation
   reads top-down: a call leads forward, from nbody_create to the force kernels.
       >>api              public API: results, bodies, nbody_desc, every function
       >>portability      what each compiler spells its own way: pragmas, OpenMP, restrict,
                          cpuid, the monotonic clock, UTF-8 paths, 64-bit file offsets
       >>backend          the engine interface (for nbody_cuda.cu and nbody_cl.h too)
       >>implementation   implementation: configuration, system headers, math wrappers
       >>utilities        memory and logging, names, bodies, desc defaults
       >>types            nbody_sim, the typed method state, forward declarations
       >>methods          Butcher tableaux and the method table
       >>simulation       nbody_create, nbody_step, nbody_advance, the step loop, get/set
       >>solvers          Runge-Kutta, leapfrog, implicit RK, Adams, Bulirsch-Stoer
         >>radau          Gauss-Radau (IAS15)
         >>whfast         Wisdom-Holman (WHFast)
         >>scheduler      the block scheduler: power-of-two steps per body, integer ticks
         >>hermite        Hermite predictor-corrector on the block scheduler
         >>kdk            the tree leapfrog's block steps (kick-drift-kick) on the scheduler
         >>solver_ops     f(y), linear combinations, the update
       >>engines          SIMD levels, the CPU engines' state
         >>host           host buffers: the vector operations of the CPU engines
         >>direct         SIMPLE, OPENMP, BLOCK derivatives and the direct kernels
         >>block          the BLOCK kernel: schedules, AVX2 and AVX-512 levels
         >>tree           Barnes-Hut on the kd-tree heap
         >>mpi            slices and the distributed (MPI) engine
         >>hooks          the engine table, engine start and stop
       >>steering         extra forces, hooks, collisions, events
       >>diagnostics      nbody_measure
       >>ic               initial conditions
       >>orbital          orbital elements
       >>files            snapshots and CSV
         >>checkpoints    exact restarts
         >>archive        the snapshot archive
         >>interop        CUDA-OpenGL interop

   License and version history at the end of this file.
*/
/* ======================================================================================
   >>api  PUBLIC API
   ====================================================================================== */
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

/* Zero-initialise any nbody struct, the same line in C and C++ (all zero = defaults):
       nbody_desc d = NBODY_ZERO;       nbody_system s = NBODY_ZERO;
   It is {0} in C and {} in C++. C99 has no empty braces; C++ refuses {0} for nbody_desc
   (its first member is an enum) and warns about {0} under -Wextra (missing initializers).
   Plain C may keep writing = {0}. */
#ifdef __cplusplus
#define NBODY_ZERO {}
#else
#define NBODY_ZERO {0}
#endif

typedef enum nbody_result {
    NBODY_OK = 0,
    NBODY_ERR_INVALID_ARGUMENT,    /* NULL, n == 0 where not allowed, dt <= 0, NaN input, bad enum */
    NBODY_ERR_OUT_OF_MEMORY,
    NBODY_ERR_UNAVAILABLE,         /* backend compiled out, no device, no OpenCL platform */
    NBODY_ERR_DEVICE,              /* a CUDA / OpenCL call failed */
    NBODY_ERR_NOT_FINITE,          /* the state became NaN/Inf; the last good state is kept */
    NBODY_ERR_STEP_TOO_SMALL,      /* adaptive control needed dt < dt_min */
    NBODY_ERR_IO,
    NBODY_ERR_FORMAT,              /* a file is not a valid snapshot (bad magic, size, checksum) */
    NBODY_ERR_CANCELLED,           /* desc.progress asked to stop; the state is the last accepted step */
    NBODY_STOPPED,                 /* an event stopped the run after an accepted step (an exit
                                      condition, a collision with NBODY_COLLISION_STOP, a hook
                                      asked to stop): nbody_get_event names it; the state is
                                      the one of that step (docs/steering.md) */
    NBODY_ERR_BUSY                 /* the simulation is inside a call on another thread, or inside
                                      one of its own hooks: nothing was done */
} nbody_result;

/* Limits that nbody_desc_check and nbody_interval_check enforce (define before the first
   #include to change them). desc.threads above NBODY_MAX_THREADS is refused (and above
   OpenMP's thread limit, omp_get_thread_limit()): a team of 10^5 threads overflows the
   OpenMP runtime's stack. An output interval that would write more than NBODY_MAX_OUTPUTS
   outputs in one run is refused. */
#ifndef NBODY_MAX_THREADS
#define NBODY_MAX_THREADS 1024
#endif
#ifndef NBODY_MAX_OUTPUTS
#define NBODY_MAX_OUTPUTS 1000000
#endif

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
    NBODY_RADAU,                   /* 15, Gauss-Radau predictor-corrector (IAS15), adaptive by
                                      default: desc.radau_control; docs/orbital.md */
    NBODY_WHFAST,                  /* 2, Wisdom-Holman (WHFast): Kepler drifts about body 0 and
                                      interaction kicks, fixed step desc.dt, symplectic correctors
                                      desc.whfast_corrector; CPU engines; docs/orbital.md */
    NBODY_HERMITE,                 /* 4 or 6 (desc.order 0/4 or 6), Hermite predictor-corrector
                                      with individual block (power-of-two) steps chosen by
                                      Aarseth's criterion (desc.timestep_eta, desc.stepping);
                                      direct CPU engines, CUDA, OpenCL; docs/hermite.md */
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

/* NBODY_RADAU's step: tolerance is its epsilon (0 = 1e-9, machine precision in double) */
typedef enum nbody_radau_control {
    NBODY_RADAU_PRS23 = 0,         /* smallest timescale of any body (Pham, Rein & Spiegel 2024) */
    NBODY_RADAU_GLOBAL,            /* max |b7| / max |a| over all bodies (Rein & Spiegel 2015) */
    NBODY_RADAU_FIXED,             /* fixed step desc.dt (order studies) */
    NBODY_RADAU_CONTROL_COUNT_
} nbody_radau_control;
typedef enum nbody_simd {         /* the CPU kernels' instruction set (BLOCK and TREE engines) */
    NBODY_SIMD_DEFAULT = 0,        /* the environment variable NBODY_SIMD, else the best this CPU runs */
    NBODY_SIMD_PORTABLE,           /* plain C the compiler vectorises */
    NBODY_SIMD_AVX2,               /* x86-64 AVX2 + FMA */
    NBODY_SIMD_AVX512,             /* x86-64 AVX-512F */
    NBODY_SIMD_NEON,               /* AArch64 Advanced SIMD (baseline on every ARM64 CPU) */
    NBODY_SIMD_SIMD128,            /* WebAssembly SIMD128 (built with -msimd128) */
    NBODY_SIMD_COUNT_
} nbody_simd;

/* NBODY_WHFAST's canonical coordinates (body 0 is the central body) */
typedef enum nbody_whfast_coordinates {
    NBODY_WHFAST_JACOBI = 0,       /* Jacobi: body i about the centre of mass of bodies 0..i-1 */
    NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC,  /* heliocentric positions, barycentric velocities
                                      (Duncan, Levison & Lee 1998); no correctors */
    NBODY_WHFAST_COORDINATES_COUNT_
} nbody_whfast_coordinates;

/* How the bodies share the time step (desc.stepping) */
typedef enum nbody_stepping {
    NBODY_STEPPING_DEFAULT = 0,    /* the method's own: NBODY_HERMITE block steps, others shared */
    NBODY_STEPPING_SHARED,         /* one step for all bodies (NBODY_HERMITE too: the smallest
                                      any body asks for, for comparison) */
    NBODY_STEPPING_BLOCK,          /* individual power-of-two steps: NBODY_HERMITE; NBODY_LEAPFROG
                                      on the tree engines (kick-drift-kick, docs/tree.md); the
                                      other methods refuse it */
    NBODY_STEPPING_COUNT_
} nbody_stepping;

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

/* Progress (desc.progress): nbody_advance calls func after accepted steps, after every one
   when interval is 0, else once at least `interval` seconds of wall-clock time have passed
   since the last call (checked also after each rejected step, so a run whose steps keep
   being rejected still reports). A nonzero return cancels: nbody_advance returns
   NBODY_ERR_CANCELLED and the simulation holds the state of the last accepted step (nbody_get_state,
   nbody_checkpoint_save and a later nbody_advance work as after any step). The wall clock is
   monotonic: QueryPerformanceCounter on Windows, clock_gettime(CLOCK_MONOTONIC) on POSIX,
   emscripten_get_now under emscripten. */
typedef struct nbody_progress_info {
    nbody_real t;                  /* time of the state now (the last accepted step) */
    nbody_real t_start, t_end;     /* where this nbody_advance began and where it lands */
    nbody_real dt;                 /* size of the last accepted step */
    unsigned long long steps, rejected;   /* since nbody_create, as nbody_get_stats */
    double elapsed;                /* wall-clock seconds since this nbody_advance began */
} nbody_progress_info;

typedef struct nbody_progress {    /* func NULL = no progress calls */
    int  (*func)(const nbody_progress_info *info, void *user_data);   /* nonzero = cancel */
    void  *user_data;
    double interval;               /* seconds between calls; 0 = after every accepted step */
} nbody_progress;
/* ---- steering (docs/steering.md): extra forces, hooks, collisions, events ---- */
struct nbody_sim;
/* Adds accelerations to ax, ay, az (which hold gravity) for the n bodies at time t (the
   stage time of the integrator). Positions, velocities and masses are read-only. */
typedef void (*nbody_extra_force_fn)(size_t n, nbody_real t, const nbody_real *x, const nbody_real *y,
                                     const nbody_real *z, const nbody_real *vx, const nbody_real *vy,
                                     const nbody_real *vz, const nbody_real *m, nbody_real *ax,
                                     nbody_real *ay, nbody_real *az, void *user_data);
/* Called before / after each accepted step; nonzero stops the run with NBODY_STOPPED.
   May call nbody_get_state, nbody_set_state (any n), nbody_set_radii, nbody_get_stats. */
typedef int (*nbody_step_hook_fn)(struct nbody_sim *sim, void *user_data);

typedef enum nbody_collision {     /* what happens when two bodies' spheres touch */
    NBODY_COLLISION_NONE = 0,      /* radii ignored: point masses */
    NBODY_COLLISION_MERGE,         /* one body (mass, momentum, centre of mass conserved) */
    NBODY_COLLISION_BOUNCE,        /* hard spheres, desc.restitution */
    NBODY_COLLISION_STOP,          /* NBODY_STOPPED, the pair in nbody_get_event */
    NBODY_COLLISION_COUNT_
} nbody_collision;

typedef enum nbody_event_kind {
    NBODY_EVENT_NONE = 0,
    NBODY_EVENT_CLOSE_ENCOUNTER,   /* bodies i, j closer than desc.stop_distance */
    NBODY_EVENT_ESCAPE,            /* body i farther than desc.escape_distance from the origin */
    NBODY_EVENT_COLLISION,         /* bodies i, j touch (NBODY_COLLISION_STOP) */
    NBODY_EVENT_HOOK               /* a before/after-step hook returned nonzero */
} nbody_event_kind;

typedef struct nbody_event {       /* the event that stopped the run */
    nbody_event_kind kind;
    size_t i, j;                   /* the bodies (j unused for escapes and hooks), i < j */
    nbody_real t, distance;        /* time of the step; distance between i and j, or of i to the origin */
    unsigned long long merges, bounces;   /* collisions resolved since nbody_create */
} nbody_event;

typedef struct nbody_desc {        /* all zero = defaults */
    nbody_engine    engine;
    nbody_method    method;
    int             order;         /* NBODY_ADAMS: 1..5 (0 = 5) */
    nbody_real      G;             /* 0 = 1 */
    nbody_real      softening;     /* Plummer epsilon; 0 = none */
    nbody_real      dt;            /* fixed step, or first step of adaptive methods; 0 = 1e-3 */
    nbody_real      tolerance;     /* > 0 turns on adaptive step control (embedded methods, BS) */
    nbody_real      dt_min, dt_max;/* 0 = no lower limit beyond round-off / no upper limit */
    nbody_real      theta;         /* tree opening parameter: a node is used as one body when the
                                      bound on its monopole error is at most theta^2 of its pull
                                      (docs/README-tree.md); 0 = 0.5 */
    nbody_traversal traversal;
    nbody_order     visit_order;
    int             block_size;    /* 0 = automatic. CUDA: threads per block; OpenCL: work-group
                                      size; BLOCK: bodies per block of its tiled kernels, a multiple
                                      of 32 from 32 to 16384 (else refused); docs/engines.md */
    int             threads;       /* CPU threads; 0 = OpenMP default */
    int             device;        /* GPU / OpenCL device index */
    int             compensated;   /* 1 = Kahan-compensated state update (long runs) */
    int             quadrupole;    /* tree engines: 1 = add quadrupole moments */
    int             leaf_size;     /* tree engines: nodes of at most this many bodies are summed
                                      directly; 0 = automatic (4 on the CPU tree, measured);
                                      1 = single-body leaves. The GPU trees always use 1. */
    nbody_progress  progress;      /* heartbeat and cancel during nbody_advance; NULL func = none */
    size_t          n_active;      /* the first n_active bodies attract; the rest are test
                                      particles that feel them only; 0 = all */
    nbody_extra_force_fn extra_force;   /* NULL = gravity only */
    void           *extra_force_user_data;
    int             extra_force_velocity_free;  /* 1 = extra_force ignores vx, vy, vz (then
                                      NBODY_LEAPFROG accepts it; without it leapfrog refuses) */
    nbody_step_hook_fn before_step, after_step;
    void           *hook_user_data;
    nbody_collision collision;     /* with radii from nbody_set_radii */
    nbody_real      restitution;   /* NBODY_COLLISION_BOUNCE: share of the normal speed kept,
                                      0..1 (1 = elastic, 0 = the pair leaves touching) */
    nbody_real      stop_distance; /* > 0: NBODY_STOPPED when two bodies come closer */
    nbody_real      escape_distance;  /* > 0: NBODY_STOPPED when a body is farther from the origin */
    nbody_radau_control radau_control; /* NBODY_RADAU: step-size criterion (0 = PRS23) */
    nbody_simd      simd;          /* CPU engines: SIMD level; one the CPU lacks gives
                                      NBODY_ERR_UNAVAILABLE (docs/cpu.md) */
    int             devices;       /* CUDA and OpenCL engines: devices used in this process, from
                                      `device` up; 0 = 1 (docs/scaling.md). CPU engines ignore it. */
    void           *mpi_comm;      /* with NBODY_WITH_MPI: a pointer to an MPI_Comm whose ranks share
                                      the bodies, each computing the forces on its slice; NULL =
                                      this process alone. Without NBODY_WITH_MPI it must be NULL
                                      (else NBODY_ERR_UNAVAILABLE). docs/scaling.md */
    int             decompose;     /* with mpi_comm and NBODY_ENGINE_TREE: 1 = domain decomposition
                                      (each rank a box of space cut by planes, balanced by each
                                      body's counted walk work, its own tree, locally essential
                                      trees exchanged);
                                      0 = every rank builds the whole tree (docs/scaling.md) */
    nbody_whfast_coordinates whfast_coordinates; /* NBODY_WHFAST: 0 = Jacobi */
    int             whfast_corrector;  /* NBODY_WHFAST: symplectic corrector order 0 (none), 3, 5,
                                      7, 11 or 17 (Wisdom, Holman & Touma 1996); Jacobi only */
    nbody_stepping  stepping;      /* shared or individual block steps (0 = the method's own) */
    nbody_real      timestep_eta;  /* NBODY_HERMITE's accuracy: Aarseth's eta, step
                                      dt = sqrt(eta) (A1 / A(p-2))^(1/(p-3)) for order p
                                      (docs/hermite.md); 0 = 0.02 (order 4), 0.1 (order 6).
                                      NBODY_LEAPFROG's block steps: dt = sqrt(2 eta softening /
                                      |a|) (docs/tree.md); 0 = 0.025.
                                      The largest block step is dt_max (0 = 1/16), the smallest
                                      dt_max 2^-40 or dt_min */
    nbody_allocator allocator;
    nbody_logger    log;
} nbody_desc;

typedef struct nbody_sim nbody_sim;                       /* opaque */

typedef struct nbody_stats {
    nbody_real t, dt;              /* current time, step size last used */
    unsigned long long steps, rejected, force_evals;
    unsigned long long body_steps; /* bodies advanced, summed over the steps (n a step for shared
                                      steps; the active bodies of each block step) */
    unsigned long long interactions;  /* pair terms the forces summed (NBODY_HERMITE) */
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
/* The reason for the calling thread's last error: one line naming the file, field or body and
   the value ("nbody: snapshot run.snap: checksum mismatch over its 1680 bytes: the file is
   damaged"), "" before any. Every ERROR line the library logs lands here, with or without a
   desc.log, so the functions that take no desc (nbody_load, nbody_save, nbody_write_csv,
   nbody_archive_open, the initial conditions, ...) say why too. Like errno it is set by each
   failure and not cleared by a success: read it right after a call returned an error. Never
   NULL; the text stays until this thread's next error. */
NBODY_API const char  *nbody_last_error(void);
NBODY_API const char  *nbody_engine_name(nbody_engine e);        /* "unknown" when out of range */
NBODY_API const char  *nbody_method_name(nbody_method m);
NBODY_API int          nbody_engine_available(nbody_engine e);   /* compiled in (device not probed) */
NBODY_API int          nbody_simd_available(nbody_simd level);   /* built in and this CPU runs it */
NBODY_API int          nbody_method_order(nbody_method m, int adams_order);
NBODY_API int          nbody_method_adaptive(nbody_method m);   /* 1: desc.tolerance > 0 turns on step control */

/* ---- bodies ---- */
NBODY_API nbody_result nbody_system_alloc(nbody_system *s, size_t n);   /* zeroed arrays */
NBODY_API void         nbody_system_free(nbody_system *s);
NBODY_API nbody_result nbody_system_copy(nbody_system *dst, const nbody_system *src); /* dst same n */

/* ---- limits: one place for every refusal of a desc (docs/api.md#limits) ----
   nbody_desc_check: what nbody_create refuses about a desc and the initial bodies, without
   creating anything (initial NULL: the desc alone). NBODY_OK, or the result nbody_create
   would give (NBODY_ERR_INVALID_ARGUMENT, or NBODY_ERR_UNAVAILABLE for a method the engine
   lacks), with one ERROR line through desc->log naming the field or body and the value:
   an enum out of range; a negative, NaN or Inf G, softening, dt, tolerance, dt_min, dt_max,
   theta, restitution, stop or escape distance; theta > 1.2; a tolerance given to a fixed-step
   method or below NBODY_REAL's epsilon / 16; threads above NBODY_MAX_THREADS; a body with a
   NaN/Inf coordinate or a negative mass; n_active > n; ... (the full list: docs/api.md).
   nbody_interval_check: an output every `every` of simulation time from t_start to t_end
   (snapshots, frames, archive records, progress lines): refused unless every is finite and
   > 0, t_start <= t_end are finite, t_end + every differs from t_end by more than 4 ulps in
   NBODY_REAL, and (t_end - t_start) / every <= NBODY_MAX_OUTPUTS. `what` names the option in
   the log line (e.g. "--snapshot-every"); desc may be NULL (no log line). */
NBODY_API nbody_result nbody_desc_check(const nbody_desc *desc, const nbody_system *initial);
NBODY_API nbody_result nbody_interval_check(const nbody_desc *desc, nbody_real t_start, nbody_real t_end,
                                            nbody_real every, const char *what);

/* ---- simulation ---- */
NBODY_API nbody_result nbody_create(nbody_sim **out, const nbody_desc *desc, const nbody_system *initial);
NBODY_API nbody_result nbody_step(nbody_sim *sim);                        /* one accepted step */
NBODY_API nbody_result nbody_advance(nbody_sim *sim, nbody_real t_end);  /* lands exactly on t_end */
NBODY_API nbody_result nbody_get_state(const nbody_sim *sim, nbody_system *out); /* out has the same n */
NBODY_API nbody_result nbody_set_state(nbody_sim *sim, const nbody_system *in);
NBODY_API void         nbody_destroy(nbody_sim *sim);
NBODY_API nbody_stats  nbody_get_stats(const nbody_sim *sim);
/* the SIMD level a CPU engine runs: "avx512", "avx2", "neon", "simd128", "portable"; "none" for
   GPU engines or NULL */
NBODY_API const char  *nbody_simd_name(const nbody_sim *sim);
NBODY_API nbody_result nbody_accelerations(const nbody_desc *desc, const nbody_system *s,
                                           nbody_real *ax, nbody_real *ay, nbody_real *az);

/* ---- steering (docs/steering.md) ----
   Radii for collisions: n values >= 0 (NULL = all zero, point masses). Kept by the
   simulation, merged with the bodies; a nbody_set_state with another n resets them to 0. */
NBODY_API nbody_result nbody_set_radii(nbody_sim *sim, const nbody_real *r);
NBODY_API nbody_result nbody_get_radii(const nbody_sim *sim, nbody_real *r);   /* n values */
NBODY_API size_t       nbody_get_n(const nbody_sim *sim);          /* bodies now (merges shrink it) */
NBODY_API size_t       nbody_get_n_active(const nbody_sim *sim);   /* attracting bodies now */
/* the event behind the last NBODY_STOPPED (kind NONE before any), and collision counts */
NBODY_API nbody_result nbody_get_event(const nbody_sim *sim, nbody_event *out);

/* ---- snapshot archive (docs/steering.md) ----
   One file of snapshots, each an exact restart (a checkpoint, plus radii and n_active).
   nbody_archive_attach makes the simulation append one after the accepted steps where
   simulation time passed a multiple of every_t, every_steps steps were taken, or every_wall
   seconds of wall-clock time went by since the last (0 = that rule off; path NULL detaches).
   nbody_archive_append writes one now. nbody_archive_open indexes an archive; load(i) makes a
   simulation that continues bitwise as the original run did from snapshot i. */
typedef struct nbody_archive nbody_archive;
NBODY_API nbody_result nbody_archive_attach(nbody_sim *sim, const char *path, nbody_real every_t,
                                            unsigned long long every_steps, double every_wall);
NBODY_API nbody_result nbody_archive_append(const nbody_sim *sim, const char *path);
NBODY_API nbody_result nbody_archive_open(nbody_archive **out, const char *path);
NBODY_API size_t       nbody_archive_count(const nbody_archive *a);
/* damaged stretches nbody_archive_open skipped (a record whose magic or header checksum is
   wrong, a torn last record): 0 for an intact archive. The records after a damaged one are
   still indexed, so nbody_archive_count never silently drops an intact record. */
NBODY_API size_t       nbody_archive_damaged(const nbody_archive *a);
NBODY_API nbody_real   nbody_archive_time(const nbody_archive *a, size_t i);   /* NaN out of range */
NBODY_API nbody_result nbody_archive_load(const nbody_archive *a, size_t i, const nbody_desc *desc, nbody_sim **out);
NBODY_API void         nbody_archive_close(nbody_archive *a);

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
/* the Sun (with the inner planets' mass) and Jupiter, Saturn, Uranus, Neptune at JD 2440400.5
   (1969 June 28), from Applegate et al. 1986, AJ 92, 176 (as in REBOUND's outer-solar-system
   example); units G = 1, AU, solar masses, time 1/k days (k = 0.01720209895, the Gaussian
   constant: one year is about 2 pi). Moved to the centre-of-mass frame. */
NBODY_API nbody_result nbody_ic_outer_solar_system(nbody_system *s);

/* ---- orbital elements (docs/orbital.md) ----
   Angles in radians. mu = G (M + m) of the pair. Bound orbits have 0 <= e < 1 and a > 0,
   hyperbolic ones e > 1 and a < 0 (a parabola, e = 1, has no finite a: only
   nbody_orbit_from_state gives it, with a = +Inf and M = tan(f/2) + tan(f/2)^3 / 3).
   Degenerate angles follow REBOUND's conventions: inc = 0 gives Omega = 0 (omega measured from
   the x axis), e = 0 gives omega = 0 (f measured from the node). */
typedef struct nbody_orbit {
    nbody_real a;                  /* semi-major axis (< 0 hyperbolic) */
    nbody_real e;                  /* eccentricity */
    nbody_real inc;                /* inclination, 0..pi */
    nbody_real Omega;              /* longitude of the ascending node, -pi..pi */
    nbody_real omega;              /* argument of pericentre, -pi..pi */
    nbody_real f;                  /* true anomaly, -pi..pi */
    nbody_real M;                  /* mean anomaly (hyperbolic: e sinh H - H) */
} nbody_orbit;

typedef enum nbody_anomaly {       /* which anomaly of an nbody_orbit places the body */
    NBODY_ANOMALY_TRUE = 0,        /* f */
    NBODY_ANOMALY_MEAN             /* M (Kepler's equation solved to round-off) */
} nbody_anomaly;

#define NBODY_JACOBI ((size_t)-1)  /* as primary: the centre of mass of the bodies before */

/* relative position and velocity of an orbit about mu */
NBODY_API nbody_result nbody_orbit_to_state(nbody_real mu, const nbody_orbit *o, nbody_anomaly anomaly,
                                            nbody_real pos[3], nbody_real vel[3]);
NBODY_API nbody_result nbody_orbit_from_state(nbody_real mu, const nbody_real pos[3], const nbody_real vel[3],
                                              nbody_orbit *out);
/* appends a body of mass m on orbit o about body `primary`, or with NBODY_JACOBI about the
   centre of mass of all bodies already in s (mu = G (M + m) with M their mass); s has n >= 1
   and is reallocated (its arrays move) */
NBODY_API nbody_result nbody_add_orbit(nbody_system *s, nbody_real G, nbody_real m, const nbody_orbit *o,
                                       nbody_anomaly anomaly, size_t primary);
/* the orbit of body i about body `primary`, or with NBODY_JACOBI about the centre of mass of
   bodies 0..i-1 (i >= 1) */
NBODY_API nbody_result nbody_get_orbit(const nbody_system *s, nbody_real G, size_t i, size_t primary, nbody_orbit *out);
/* shifts positions and velocities so that the centre of mass is at rest at the origin */
NBODY_API nbody_result nbody_move_to_com(nbody_system *s);

/* ---- files ---- */
NBODY_API nbody_result nbody_save(const char *path, const nbody_system *s);  /* binary + checksum */
NBODY_API nbody_result nbody_load(const char *path, nbody_system *s);  /* allocates s: pass it zeroed */
NBODY_API nbody_result nbody_write_csv(const char *path, const nbody_system *s);
/* Exact restart: a checkpoint carries the whole simulation state (every buffer and scalar a
   method uses), so save at t, load, continue to T is bitwise the same as running straight to T.
   Written to path.tmp then renamed over path, so a failed save leaves the old file intact.
   load refuses a desc whose numerics (engine, method, order, G, softening, dt, tolerance,
   dt_min, dt_max, theta, traversal, visit_order, block_size, compensated, quadrupole, leaf_size,
   radau_control, whfast_coordinates, whfast_corrector) differ
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
   >>portability  PORTABILITY: what each compiler and C library spells its own way, in one
   place (GCC, Clang, MSVC, MinGW-w64, nvcc, emscripten). Everything below uses these names
   and never a compiler's own spelling (tests/msvc_constructs.sh checks that). Visible to
   the implementation and to backends compiled separately.
   ====================================================================================== */
#if (defined(NBODY_IMPLEMENTATION) || defined(NBODY_BACKEND)) && !defined(NBODY__PORTABILITY)
#define NBODY__PORTABILITY
/* Feature macros, set only where nobody set them. They act only before the translation
   unit's first system header, so include nbody.h with NBODY_IMPLEMENTATION before other
   headers (or set them yourself); where they come too late, the fallbacks below still build.
   MSVC's C library deprecates fopen and getenv (C4996) without _CRT_SECURE_NO_WARNINGS (as
   stb). In strict ISO modes (-std=c99) a POSIX C library declares fseeko/ftello and
   clock_gettime only with _POSIX_C_SOURCE (set only there: in GNU modes it would hide the
   default extensions); _FILE_OFFSET_BITS 64 makes off_t 64 bits on 32-bit systems. */
#if defined(_MSC_VER) && !defined(_CRT_SECURE_NO_WARNINGS)
#define _CRT_SECURE_NO_WARNINGS
#endif
#if !defined(_WIN32) && defined(NBODY_IMPLEMENTATION)
#if defined(__STRICT_ANSI__) && !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) && \
    !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE)
#define _POSIX_C_SOURCE 200112L
#endif
#ifndef _FILE_OFFSET_BITS
#define _FILE_OFFSET_BITS 64
#endif
#endif

/* a pragma from a macro: C99's _Pragma; MSVC's C has it only from /std:c11, __pragma always */
#if defined(_MSC_VER) && !defined(__clang__)
#define NBODY__PRAGMA_RAW(x) __pragma(x)
#else
#define NBODY__PRAGMA_RAW(x) _Pragma(#x)
#endif

/* OpenMP. NBODY__PRAGMA: the constructs of OpenMP 2.0 (parallel, for, single, critical),
   which every OpenMP compiler has, MSVC's /openmp included. NBODY__PRAGMA_OMP4: those of
   OpenMP 3.0-4.0 (task, depend, taskwait, simd), which MSVC's OpenMP 2.0 lacks: there they
   expand to nothing, which stays correct where they are used: a task then runs at once in
   the thread that creates it (inside `single`: one thread, in creation order, the order its
   dependences impose anyway, so the same results), taskwait has nothing to wait for, simd
   is a vectorisation hint. */
#if defined(_OPENMP) && !defined(NBODY_NO_OPENMP) && !defined(__CUDACC__)
#define NBODY__OPENMP 1
#define NBODY__PRAGMA(x) NBODY__PRAGMA_RAW(x)
#if _OPENMP >= 201307 && !(defined(_MSC_VER) && !defined(__clang__))
#define NBODY__PRAGMA_OMP4(x) NBODY__PRAGMA_RAW(x)
#else
#define NBODY__PRAGMA_OMP4(x)
#endif
#else
#define NBODY__OPENMP 0
#define NBODY__PRAGMA(x)
#define NBODY__PRAGMA_OMP4(x)
#endif
/* loop unrolling hints (none where the compiler has no pragma for it) */
#if defined(__clang__)
#define NBODY__UNROLL NBODY__PRAGMA_RAW(unroll)
#define NBODY__UNROLL8 NBODY__PRAGMA_RAW(unroll)
#elif defined(__GNUC__) && __GNUC__ >= 8
#define NBODY__UNROLL NBODY__PRAGMA_RAW(GCC unroll 4)
#define NBODY__UNROLL8 NBODY__PRAGMA_RAW(GCC unroll 8)
#else
#define NBODY__UNROLL
#define NBODY__UNROLL8
#endif

/* restrict: C99's keyword; C++ and MSVC's C spell it __restrict */
#if defined(__cplusplus) || defined(_MSC_VER)
#define NBODY__RESTRICT __restrict
#else
#define NBODY__RESTRICT restrict
#endif
/* a static function a build may leave unused (-Wunused-function); MSVC's C4505 is disabled
   around the implementation instead (below) */
#if defined(__GNUC__) || defined(__clang__)
#define NBODY__UNUSED __attribute__((unused))
#else
#define NBODY__UNUSED
#endif
#if defined(__GNUC__) || defined(__clang__)
#define NBODY__FORCEINLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define NBODY__FORCEINLINE __forceinline
#else
#define NBODY__FORCEINLINE inline
#endif
/* GCC and Clang compile a function for an instruction set by its target attribute; MSVC
   compiles any intrinsic anywhere (as miniaudio relies on), so its functions need none */
#if defined(__GNUC__) || defined(__clang__)
#define NBODY__TARGET(isa) __attribute__((target(isa)))
#else
#define NBODY__TARGET(isa)
#endif

#if defined(NBODY_IMPLEMENTATION) && !defined(NBODY__PORTABILITY_IMPL)
#define NBODY__PORTABILITY_IMPL
#include <stdio.h>
#include <time.h>
#if defined(_MSC_VER)
/* /W4 warnings the code accepts on purpose, off for the implementation only (popped at its
   end): 4505 a static function this configuration leaves unused; 4996 fopen, getenv (when
   the CRT was included before _CRT_SECURE_NO_WARNINGS above); 4127 the sizeof(nbody_real)
   branches that fold away; 4706 assignments in conditions, as `if (!(f = fopen(...)))` */
#pragma warning(push)
#pragma warning(disable : 4505 4996 4127 4706)
#endif

#if defined(_MSC_VER)
#include <intrin.h>
#endif
/* x86 CPU features for the run-time SIMD dispatch (>>engines): cpuid and xgetbv */
#if (defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)) && !defined(__CUDACC__)
#define NBODY__X86 1
#if defined(_MSC_VER)
static NBODY__UNUSED void nbody__cpuid(unsigned int leaf, unsigned int sub, unsigned int r[4]) {
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    r[0] = (unsigned int)v[0]; r[1] = (unsigned int)v[1]; r[2] = (unsigned int)v[2]; r[3] = (unsigned int)v[3];
}
static NBODY__UNUSED unsigned long long nbody__xgetbv0(void) { return (unsigned long long)_xgetbv(0); }
#else
#include <cpuid.h>
static NBODY__UNUSED void nbody__cpuid(unsigned int leaf, unsigned int sub, unsigned int r[4]) { __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]); }
static NBODY__UNUSED unsigned long long nbody__xgetbv0(void) {
    unsigned int lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}
#endif
#else
#define NBODY__X86 0
#endif

/* The per-simulation busy flag (a guard against a second thread and against re-entry from
   a hook): nbody__flag_cas sets it to desired when it holds expected (1) and fails otherwise
   (0), nbody__flag_set stores a value. GCC/Clang's __atomic builtins, MSVC's _Interlocked
   intrinsics (C11's <stdatomic.h> is not in MSVC's C by default); other compilers get a
   plain flag, which guards against re-entry but not against a race. */
static NBODY__UNUSED int nbody__flag_cas(volatile long *flag, long expected, long desired) {
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_compare_exchange_n(flag, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
#elif defined(_MSC_VER)
    return _InterlockedCompareExchange(flag, desired, expected) == expected;
#else
    if (*flag != expected) return 0;
    *flag = desired;
    return 1;
#endif
}
static NBODY__UNUSED void nbody__flag_set(volatile long *flag, long v) {
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(flag, v, __ATOMIC_RELEASE);
#elif defined(_MSC_VER)
    _InterlockedExchange(flag, v);
#else
    *flag = v;
#endif
}
/* the same for a pointer (the thread a hook runs on) */
static NBODY__UNUSED const void *nbody__ptr_load(const void *volatile *p) {
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#elif defined(_MSC_VER)
    return _InterlockedCompareExchangePointer((void *volatile *)p, NULL, NULL);
#else
    return *p;
#endif
}
static NBODY__UNUSED void nbody__ptr_store(const void *volatile *p, const void *v) {
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#elif defined(_MSC_VER)
    _InterlockedExchangePointer((void *volatile *)p, (void *)v);
#else
    *p = v;
#endif
}

/* Counters shared by the threads of one parallel region (the symmetric BLOCK schedule's
   tickets and progress, >>block): an add returning the new value (acquire and release), a
   load that acquires, a store that releases. NBODY__ATOMICS is 0 for a compiler with neither
   GCC's builtins nor MSVC's intrinsics: the schedule then runs on one thread. */
#if defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER)
#define NBODY__ATOMICS 1
#else
#define NBODY__ATOMICS 0
#endif
static NBODY__UNUSED long long nbody__count_add(volatile long long *p, long long v) {
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL);
#elif defined(_MSC_VER)
    return _InterlockedExchangeAdd64(p, v) + v;
#else
    return *p += v;
#endif
}
/* *p = max(*p, v) in one atomic step (the tree walk's neighbour levels, >>kdk) */
static NBODY__UNUSED void nbody__count_max(volatile long long *p, long long v) {
#if defined(__GNUC__) || defined(__clang__)
    long long c = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (c < v && !__atomic_compare_exchange_n(p, &c, v, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {}
#elif defined(_MSC_VER)
    long long c = *p;
    while (c < v) {
        long long o = _InterlockedCompareExchange64(p, v, c);
        if (o == c) break;
        c = o;
    }
#else
    NBODY__PRAGMA(omp critical(nbody__count_max))
    { if (*p < v) *p = v; }
#endif
}
static NBODY__UNUSED long long nbody__count_load(const volatile long long *p) {
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#elif defined(_MSC_VER)
    return _InterlockedCompareExchange64((volatile long long *)p, 0, 0);
#else
    return *p;
#endif
}
static NBODY__UNUSED void nbody__count_store(volatile long long *p, long long v) {
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#elif defined(_MSC_VER)
    _InterlockedExchange64(p, v);
#else
    *p = v;
#endif
}

/* BLOCK's own worker threads instead of an OpenMP region (>>block, nbody__sym_pool_run): in
   MinGW-w64 builds with GCC's OpenMP runtime, whose fork and join block on semaphores
   (docs/platforms.md). -DNBODY__SYM_POOL=0 gives those builds the OpenMP region back. */
#ifndef NBODY__SYM_POOL
#if defined(_WIN32) && defined(__GNUC__) && !defined(__clang__) && NBODY__OPENMP && NBODY__ATOMICS
#define NBODY__SYM_POOL 1
#else
#define NBODY__SYM_POOL 0
#endif
#endif

/* Windows: the kernel32 functions used, declared as stb_image declares them (no
   <windows.h> and its macros: near, far, min, max); the same types as windows.h's
   declarations, which may come before or after */
#if defined(_WIN32)
#ifdef __cplusplus
extern "C" {
#endif
union _LARGE_INTEGER;
__declspec(dllimport) int __stdcall QueryPerformanceCounter(union _LARGE_INTEGER *count);
__declspec(dllimport) int __stdcall QueryPerformanceFrequency(union _LARGE_INTEGER *frequency);
__declspec(dllimport) int __stdcall MoveFileExW(const wchar_t *from, const wchar_t *to, unsigned long flags);
__declspec(dllimport) int __stdcall SwitchToThread(void);
__declspec(dllimport) int __stdcall MultiByteToWideChar(unsigned int code_page, unsigned long flags, const char *str,
                                                        int bytes, wchar_t *wide, int wide_chars);
#if NBODY__SYM_POOL                    /* threads, an SRW lock and a condition variable */
#if defined(_WIN64)
typedef unsigned long long nbody__win_size;   /* SIZE_T */
#else
typedef unsigned long nbody__win_size;
#endif
struct _SECURITY_ATTRIBUTES;
struct _RTL_SRWLOCK;
struct _RTL_CONDITION_VARIABLE;
__declspec(dllimport) void *__stdcall CreateThread(struct _SECURITY_ATTRIBUTES *attributes, nbody__win_size stack,
                                                   unsigned long(__stdcall *start)(void *), void *arg, unsigned long flags,
                                                   unsigned long *id);
__declspec(dllimport) unsigned long __stdcall WaitForMultipleObjects(unsigned long count, void *const *handles, int all,
                                                                     unsigned long ms);
__declspec(dllimport) void __stdcall ExitThread(unsigned long code);
__declspec(dllimport) int __stdcall CloseHandle(void *handle);
__declspec(dllimport) void __stdcall AcquireSRWLockExclusive(struct _RTL_SRWLOCK *lock);
__declspec(dllimport) void __stdcall ReleaseSRWLockExclusive(struct _RTL_SRWLOCK *lock);
__declspec(dllimport) int __stdcall SleepConditionVariableSRW(struct _RTL_CONDITION_VARIABLE *cv, struct _RTL_SRWLOCK *lock,
                                                              unsigned long ms, unsigned long flags);
__declspec(dllimport) void __stdcall WakeAllConditionVariable(struct _RTL_CONDITION_VARIABLE *cv);
#endif
#ifdef __cplusplus
}
#endif
#elif defined(__EMSCRIPTEN__)
#include <emscripten.h>
#endif
#if NBODY__OPENMP && !defined(_WIN32)
#include <sched.h>
#endif

/* One step of a spinning wait (threads of one region waiting for each other's results): the
   CPU's spin-wait hint for the first NBODY__SPIN_PAUSES steps (about 100 us on current x86,
   longer than most waits: a task's time), then the core offered to another thread for
   NBODY__SPIN_YIELDS steps, then short sleeps: a long wait means the thread being waited for
   lost its core to another process (a loaded machine), and a thread that keeps spinning or
   yielding holds the core it needs. POSIX: sched_yield, then nanosleep for 50 us (yields only
   where a strict C mode hid POSIX.1b's nanosleep). Windows:
   SwitchToThread throughout (Wine serves it without a call to its server; Sleep counts in
   milliseconds). */
#define NBODY__SPIN_PAUSES 2000u
#define NBODY__SPIN_YIELDS 50u
static NBODY__UNUSED void nbody__spin_step(unsigned long step) {
    if (step < NBODY__SPIN_PAUSES) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
        __builtin_ia32_pause();
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
        _mm_pause();
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
        __asm__ __volatile__("yield");
#elif defined(_MSC_VER) && defined(_M_ARM64)
        __yield();
#endif
        return;
    }
#if defined(_WIN32)
    SwitchToThread();
#elif NBODY__OPENMP && defined(CLOCK_MONOTONIC)   /* nanosleep comes with clock_gettime (POSIX.1b) */
    if (step < NBODY__SPIN_PAUSES + NBODY__SPIN_YIELDS) sched_yield();
    else {
        struct timespec ts;
        ts.tv_sec = 0; ts.tv_nsec = 50000;
        nanosleep(&ts, NULL);
    }
#elif NBODY__OPENMP
    sched_yield();
#endif
}

/* wall-clock seconds from a monotonic clock, for intervals only (progress, checkpoints):
   QueryPerformanceCounter, emscripten_get_now, POSIX's CLOCK_MONOTONIC; clock() only in a C
   library with none of them (it counts processor time there, wall time on Windows) */
static NBODY__UNUSED double nbody__wall_seconds(void) {
#if defined(_WIN32)
    long long count = 0, frequency = 1;
    QueryPerformanceFrequency((union _LARGE_INTEGER *)(void *)&frequency);
    QueryPerformanceCounter((union _LARGE_INTEGER *)(void *)&count);
    return (double)count / (double)(frequency > 0 ? frequency : 1);
#elif defined(__EMSCRIPTEN__)
    return emscripten_get_now() / 1000.0;
#elif defined(CLOCK_MONOTONIC)         /* defined with clock_gettime (POSIX 1003.1b) */
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0) return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return (double)clock() / (double)CLOCKS_PER_SEC;
#else
    return (double)clock() / (double)CLOCKS_PER_SEC;
#endif
}

/* Thread-local storage, for nbody_last_error's line only: C++11's thread_local, MSVC's
   __declspec(thread), GCC/Clang's __thread (accepted in C99 -pedantic, on MinGW and by
   emscripten, where a build without threads makes it a plain static), C11's _Thread_local.
   A compiler with none of these keeps one line for the whole process. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define NBODY__THREAD_LOCAL thread_local
#elif defined(_MSC_VER) && !defined(__clang__)
#define NBODY__THREAD_LOCAL __declspec(thread)
#elif defined(__GNUC__) || defined(__clang__)
#define NBODY__THREAD_LOCAL __thread
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define NBODY__THREAD_LOCAL _Thread_local
#else
#define NBODY__THREAD_LOCAL
#endif

/* Files: UTF-8 paths and 64-bit offsets everywhere. Windows opens a path through its UTF-16
   form (_wfopen, as stb_image; fopen would read it in the ANSI code page) and seeks with
   _fseeki64/_ftelli64 (long is 32 bits there, so fseek stops at 2 GiB); POSIX has
   fseeko/ftello (64-bit off_t with _FILE_OFFSET_BITS 64), or fseek where a strict ISO mode
   hid them from glibc (long is 64 bits on every 64-bit POSIX system). */
typedef long long nbody__off;
#define NBODY__PATH_MAX 1024           /* UTF-16 units of a Windows path, its end included */
static NBODY__UNUSED FILE *nbody__fopen(const char *path, const char *mode) {
#if defined(_WIN32)
    wchar_t wpath[NBODY__PATH_MAX], wmode[16];
    if (!MultiByteToWideChar(65001u, 0, path, -1, wpath, NBODY__PATH_MAX) || !MultiByteToWideChar(65001u, 0, mode, -1, wmode, 16))
        return NULL;                   /* 65001: CP_UTF8; 0: too long or not UTF-8 */
    return _wfopen(wpath, wmode);
#else
    return fopen(path, mode);
#endif
}
static NBODY__UNUSED int nbody__remove(const char *path) {
#if defined(_WIN32)
    wchar_t wpath[NBODY__PATH_MAX];
    if (!MultiByteToWideChar(65001u, 0, path, -1, wpath, NBODY__PATH_MAX)) return -1;
    return _wremove(wpath);
#else
    return remove(path);
#endif
}
/* from replaces to, at once where the system can (POSIX rename; Windows' rename refuses an
   existing target, MoveFileExW replaces it: 1 MOVEFILE_REPLACE_EXISTING, 8 WRITE_THROUGH) */
static NBODY__UNUSED int nbody__rename(const char *from, const char *to) {
#if defined(_WIN32)
    wchar_t wfrom[NBODY__PATH_MAX], wto[NBODY__PATH_MAX];
    if (!MultiByteToWideChar(65001u, 0, from, -1, wfrom, NBODY__PATH_MAX) || !MultiByteToWideChar(65001u, 0, to, -1, wto, NBODY__PATH_MAX))
        return -1;
    return MoveFileExW(wfrom, wto, 1u | 8u) ? 0 : -1;
#else
    return rename(from, to);
#endif
}
static NBODY__UNUSED int nbody__fseek(FILE *f, nbody__off offset, int whence) {
#if defined(_WIN32)
    return _fseeki64(f, offset, whence);
#elif defined(__GLIBC__) && !defined(__USE_LARGEFILE) && !defined(__USE_XOPEN2K)
    if (offset != (nbody__off)(long)offset) return -1;
    return fseek(f, (long)offset, whence);
#else
    if (offset != (nbody__off)(off_t)offset) return -1;
    return fseeko(f, (off_t)offset, whence);
#endif
}
static NBODY__UNUSED nbody__off nbody__ftell(FILE *f) {
#if defined(_WIN32)
    return (nbody__off)_ftelli64(f);
#elif defined(__GLIBC__) && !defined(__USE_LARGEFILE) && !defined(__USE_XOPEN2K)
    return (nbody__off)ftell(f);
#else
    return (nbody__off)ftello(f);
#endif
}
/* A finished file to the disk before it is renamed over the old one (fsync; _commit on
   Windows), and a file cut back to len bytes after a failed append (ftruncate; _chsize_s).
   Where a strict ISO mode hid them from glibc (nbody.h included after other headers), and
   on systems with neither, nothing is synced (fflush alone) and nothing cut: 0. */
#if defined(_WIN32)
#include <io.h>
static NBODY__UNUSED int nbody__sync_file(FILE *f) { return _commit(_fileno(f)) == 0; }
static NBODY__UNUSED int nbody__truncate(FILE *f, nbody__off len) { return _chsize_s(_fileno(f), len) == 0; }
#elif (defined(__unix__) || defined(__APPLE__)) && !(defined(__GLIBC__) && !defined(__USE_XOPEN2K))
#include <unistd.h>
static NBODY__UNUSED int nbody__sync_file(FILE *f) { return fsync(fileno(f)) == 0; }
static NBODY__UNUSED int nbody__truncate(FILE *f, nbody__off len) {
    if (len != (nbody__off)(off_t)len) return 0;
    return ftruncate(fileno(f), (off_t)len) == 0;
}
#else
static NBODY__UNUSED int nbody__sync_file(FILE *f) { (void)f; return 1; }
static NBODY__UNUSED int nbody__truncate(FILE *f, nbody__off len) { (void)f; (void)len; return 0; }
#endif
/* What is at path: 0 nothing or a regular file, 1 a directory, 2 anything else (a device, a
   pipe, a socket: /dev/stdout, a FIFO). The writers save a regular file beside and rename
   it over; a rename would replace a device node or a pipe with a file, so those are written
   in place (stat follows symbolic links: a link to a regular file is saved beside as well). */
#if defined(_WIN32)
#include <sys/stat.h>
static NBODY__UNUSED int nbody__path_kind(const char *path) {
    wchar_t wpath[NBODY__PATH_MAX];
    struct _stat64 st;
    if (!MultiByteToWideChar(65001u, 0, path, -1, wpath, NBODY__PATH_MAX) || _wstat64(wpath, &st) != 0) return 0;
    return (st.st_mode & _S_IFMT) == _S_IFDIR ? 1 : (st.st_mode & _S_IFMT) == _S_IFREG ? 0 : 2;
}
#elif defined(__unix__) || defined(__APPLE__)
#include <sys/stat.h>
static NBODY__UNUSED int nbody__path_kind(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    return S_ISDIR(st.st_mode) ? 1 : S_ISREG(st.st_mode) ? 0 : 2;
}
#else
static NBODY__UNUSED int nbody__path_kind(const char *path) { (void)path; return 0; }
#endif
#endif /* NBODY_IMPLEMENTATION: portability */
#endif /* portability */


/* ======================================================================================
   >>backend  BACKEND INTERFACE: how engines plug in. Not for users. Visible to the implementation and
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

/* Below this many elements a host vector op runs serially: entering a parallel region costs
   more than the loop (measured: bench/bench_orbital.c, a 3-body run with and without -fopenmp) */
#define NBODY__HOST_PARALLEL_MIN 65536

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

/* a pair of bodies i < j closer than reach (find_contacts): distance d = |x_j - x_i| */
typedef struct nbody__contact { size_t i, j; nbody_real d, reach; } nbody__contact;

/* NBODY_HERMITE's engine operation (>>hermite): every body predicted from its own time to
   the step's time into pred (x v, 6n; pred_acc: 3n of scratch for the predicted a) by the Taylor
   series of the derivatives kept at its time; then the acceleration, jerk (and snap, order 6)
   of the active bodies list[0 .. count) from the sources [0, n_src) at their predicted state,
   G applied, into out (host, 24 count, each row count long): rows 0-8 ax ay az jx jy jz sx sy
   sz; rows 9-23 the active bodies' state at their own time, gathered from base, force, high:
   x v a jerk snap (3 each; the host corrects them there, so an engine whose buffers live on a
   device moves only the active bodies' rows). */
typedef struct nbody__hermite_op {
    nbody__buf base, force, high;  /* x v | a jerk | snap crackle at each body's time (6n each) */
    const unsigned long long *ticks;   /* each body's time, in ticks since the origin (host, n) */
    int ticks_all;                 /* 1: the ticks changed since the last call other than by the
                                      stores' commits (an engine that keeps a copy reads all n) */
    unsigned long long now;        /* block step: the step's time in ticks */
    nbody_real tick;               /* the time of one tick */
    nbody_real span;               /* >= 0: a synchronising step to origin + span (ticks read as
                                      times, now unused); < 0: a block step to now */
    int order;                     /* 4 or 6 */
    nbody__buf pred, pred_acc;
    const size_t *list;
    size_t count, n_src;
    nbody_real *out;
} nbody__hermite_op;

/* The corrected active bodies back into the engine's buffers (after nbody__hermite_op, with
   its list and count): next is host, 18 a body (body q at next + 18 q: x v a jerk snap crackle,
   3 each). commit = 0: their x, v into pred (the step's state); commit = 1: all 18 into base,
   force, high and their time becomes now (ticks), from the same next as the commit = 0 call
   before it (an engine may keep its copy of that call's rows). After ops.hermite_step (which
   puts the step in place itself) only commit = -1 is asked: the step undone, every active
   body's state and time back to what they were before it. */
typedef struct nbody__hermite_store {
    nbody__buf pred, base, force, high;
    const size_t *list;
    size_t count;
    const nbody_real *next;
    unsigned long long now;
    int commit;
} nbody__hermite_store;

/* NBODY_HERMITE's whole step on the engine (ops.hermite_step, optional: without it the host
   corrects from nbody__hermite_op's rows): nbody__hermite_op's prediction and forces (its out
   unused), then each active body corrected there (nbody__hermite_correct over its elapsed
   time nbody__hermite_dt) and its next level chosen (nbody__hermite_criterion,
   nbody__block_level_of at the step's end, now): the corrected bodies into base, force, high
   at the time now (their x, v into pred), what they replace kept for an undo
   (nbody__hermite_store with commit = -1), and the next level of active body q into
   level_new[q] (NBODY__BLOCK_LEVELS + 2 where a corrected value is not finite). Only the
   list, the levels and the new levels move. */
typedef struct nbody__hermite_levels {
    const unsigned long long *level;   /* each body's level (host, n) */
    unsigned long long *level_new;     /* out (host, count) */
    nbody_real eta, dt_max, dt_min;
} nbody__hermite_levels;

/* NBODY_HERMITE's block steps taken on the engine one after another, the host out of the loop
   (ops.hermite_run, optional, with hermite_step): from the scheduler's state after a committed
   step, where every body of level k sits at the tick now - now % 2^(NBODY__BLOCK_LEVELS - k)
   (the census is exact), the engine schedules as nbody__block_schedule does (the next block
   time the earliest end of an occupied level's step, the active bodies those of the levels
   whose step divides it) and takes each step as hermite_step does, with the same bits, while
   the step's time is before tick_stop and it has fewer than max_active active bodies. A step
   with a new level the host would refuse (a value not finite, a step below the smallest or
   dt_min) or above max_level is undone there and left to the host.
   op: nbody__hermite_op's state, ticks, tick, order, pred and n_src (list, count, out unused;
   span < 0). Step k writes the state at its time into op.pred (k even) or other (k odd), as
   y_new and y swap: other holds the state at the start. Out: steps, body_steps (the sum of
   their active counts), last and prev (the ticks of the last step and of the one before it),
   every body's level in level (host, n, in and out; a body's tick follows from its level and
   last) and in max_active the most active bodies the engine's runs take (0: none). */
typedef struct nbody__hermite_run {
    nbody__hermite_op op;
    nbody__buf other;
    unsigned long long *level;
    unsigned long long now, tick_stop, max_level;
    size_t max_active;
    nbody_real eta, dt_max, dt_min;
    size_t steps;
    unsigned long long body_steps, last, prev;
} nbody__hermite_run;

/* The GPU engines' shape of the Hermite forces (nbody_cuda.cu, kernels.cl): work-groups of
   2^log2_threads items, each taking 2^ti_log2 active bodies and one slice of the sources, whose
   2^(log2_threads - ti_log2) lanes of a body share the slice. Many active bodies: a work-item a
   body (ti_log2 = log2_threads); few: ti_log2 the next power of two of their count, and the
   sources split into as many slices (multiples of a work-group) as make about target_groups
   work-groups, so that a step with a handful of active bodies still fills the device. */
static inline NBODY__UNUSED void nbody__hermite_shape(size_t count, size_t nsrc, int log2_threads, size_t target_groups,
                                                      int *ti_log2, unsigned *slices, unsigned *slice_len) {
    size_t threads = (size_t)1 << log2_threads, tiles = (nsrc + threads - 1) / threads, gx, S, per;
    int l = 0;
    while (((size_t)1 << l) < count && l < log2_threads) ++l;
    gx = (count + ((size_t)1 << l) - 1) >> l;
    S = gx ? (target_groups + gx - 1) / gx : 1;
    if (S > tiles) S = tiles;
    if (S > 65535) S = 65535;
    if (S < 1) S = 1;
    per = tiles ? (tiles + S - 1) / S : 1;
    *ti_log2 = l;
    *slice_len = (unsigned)(per * threads);
    *slices = (unsigned)(tiles ? (tiles + per - 1) / per : 1);
}

/* The tree leapfrog's block steps (>>kdk): the accelerations, G applied, of the active bodies
   list[0 .. count) (host, ascending) from the sources at the positions of the state y, into out
   (host, 3 count: ax, ay, az each count long); NaN forces when a position of y is not finite.
   The tree they walk: build = 1 builds it afresh from y and writes its leaf order, a
   permutation of the bodies (the sources [0, n_src) in leaf order, then the test particles in
   index order), into order (host, n); build = 0 refits the tree of order to y: the same
   structure (which body sits in which leaf), each node's centre of mass, extent, second moment
   and critical distance recomputed bottom-up from the bodies' positions, so that the opening
   test keeps the build's error bound while the nodes grow with the bodies' motion. An engine
   that holds that tree refits its own copy; one that does not (after a load) lays the tree
   out from order first. *wrote = 1: order is the tree walked. An engine that cannot refit
   builds on every call and leaves order alone (wrote = 0: the method asks for a build next).
   same = 1 (with build = 0): y and the tree are those of the previous call (no refit needed).
   The neighbour time-step limiter's input (>>kdk; optional for an engine): with level (host, n,
   each body's level) and neighbour_level (host, count) not NULL, an engine that walks buckets writes into
   neighbour_level[q] the finest (largest) level among the bodies active body q summed directly (the bodies
   of the buckets it opened: its neighbours), and, with reach (host, n) not NULL, raises reach[j]
   for each such neighbour j to the pull of body list[q] on it, G m / (d^2 + softening^2) at
   their distance d, as nbody__real_key's bits (a max: any order, any number of threads give
   the same values), where that pull is above reach_min (an engine may skip a body whose
   G m / softening^2 is not), then sets *neighbours = 1. */
typedef struct nbody__active_op {
    nbody__buf y;
    const size_t *list;
    size_t count;
    nbody_real *out;
    int build;
    unsigned long long *order;
    int wrote;
    int same;
    const unsigned long long *level;   /* NULL: no neighbour levels asked */
    unsigned long long *neighbour_level; /* out (count) */
    long long *reach;                  /* in/out (n), or NULL */
    nbody_real reach_min;
    int neighbours;                    /* out */
} nbody__active_op;

/* The tree leapfrog's block steps (>>kdk): the kicks of the active bodies list[0 .. count).
   With a the new acceleration of body i = list[q] (acc[q], acc[count + q], acc[2 count + q]),
   a0 and v the acceleration and velocity in kick = [v (3n) | a0 (3n)], and c = coef[q],
   coef[count + q], coef[2 count + q]:
       v1 = v + c0 a0 + c1 a  (closing kick);   y.v = v1;   kick.v = v1 + c2 a;   kick.a0 = a
   It follows the active_forces call of the same list, and acc is that call's out: an engine
   whose buffers live on a device may kick with its own copy of both. */
typedef struct nbody__kick_op {
    nbody__buf y, kick;
    const size_t *list;            /* host */
    size_t count;
    const nbody_real *acc, *coef;  /* host, 3 count each */
} nbody__kick_op;

/* The tree leapfrog's block step on the engine (>>kdk; ops.kdk_step, optional: without it the
   host chooses the levels between active_forces and kick): nbody__active_op's forces (its out
   unused), then for each active body q, i = list[q], at a block time (not a synchronising step,
   so its elapsed time is its step): its next level from the criteria,
   nbody__block_level_of(level[i], min(sqrt(crit / |a|), nbody__kdk_change(a, a0, dt) with jerk),
   now, dt_max, dt_min) where a0 is kick's second half (the body's last kick), raised by the
   neighbour limiter where the engine gathers neighbour levels as active_forces does
   (nbody__block_limited(k, neighbour level, limit), each raise counted in limited), into
   level_new[q], and its kicks (nbody__kick_op with c = -(dt - dt) / 2, dt / 2, dt_max 2^-level_new[q] / 2, dt =
   dt_max 2^-level[i]) on y = op's y and kick. *ok = 0 when a force is not finite or a level
   past NBODY__BLOCK_LEVELS: then nothing is kicked (the method takes the step through
   active_forces and kick, which name the body). Only the list and the active bodies' levels
   move, and the engine waits once. */
typedef struct nbody__kdk_levels {
    nbody__buf kick;
    const unsigned long long *level;   /* each body's level (host, n) */
    unsigned long long now;            /* the block time that ends the step, in ticks */
    nbody_real dt_max, dt_min, crit;   /* crit: 2 eta softening */
    nbody_real jerk;                   /* the second bound's factor (nbody__kdk_change, with kick's a0; 0: off) */
    int limit;                         /* the neighbour limiter's gap (nbody__block_limited; negative: off):
                                          an engine that gathers neighbour levels applies it */
    unsigned long long *level_new;     /* out (host, count) */
    unsigned long long limited;        /* out: the levels the limiter raised (added to) */
    int ok;                            /* out */
} nbody__kdk_levels;

/* The tree leapfrog's block steps taken on the engine one after another, the host out of the
   loop (>>kdk; ops.kdk_run, optional, with kdk_step): from the scheduler's state after a
   committed step, where every body of level k sits at the tick now - now % 2^(NBODY__BLOCK_LEVELS
   - k) (the census is exact), and with the engine holding the tree of order, the engine
   schedules as nbody__block_schedule does (the next block time the earliest end of an occupied
   level's step, the active bodies those of the levels whose step divides it) and takes each
   step as nbody__attempt_kdk with kdk_step and nbody__commit_kdk would, with the same bits: the
   drift of every body from y (t the time of now, each block time origin + ticks tick), the
   active bodies' forces from the tree refitted, or built afresh where every body is active or
   the walks since its build (age) plus the step's active bodies would pass age_limit, their
   levels and kicks, the origin moving to a step of every body at a multiple of dt_max (now 0,
   tick_stop shifted with it); while the step's time is before tick_stop (an engine may also
   stop before a step of every body). A step with a new level the host would refuse (a force
   not finite, a step below the smallest or dt_min) or above max_level is not kept and left to
   the host. Step k drifts from y (k even) or other (k odd) into the other, as y and y_new swap.
   Out: steps, body_steps (the sum of their active counts), now (the ticks of the last step),
   t and origin, dt (the last step's size), every body's level in level (host, n, in and out),
   age, and built = 1 when a step built the tree afresh: its leaf order is then in order
   (host, n). */
typedef struct nbody__kdk_run {
    nbody__buf y, other, kick;
    unsigned long long *level, *order;
    unsigned long long now, tick_stop, max_level, age, age_limit;
    nbody_real t, origin, tick, dt_max, dt_min, crit, jerk;   /* crit, jerk: as nbody__kdk_levels' */
    size_t steps;
    unsigned long long body_steps;
    nbody_real dt;
    int built;
    int limit;                         /* as nbody__kdk_levels' */
    unsigned long long limited;        /* out: the levels the limiter raised in the steps taken */
} nbody__kdk_run;

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
    /* Optional, both or neither (NULL: the host downloads the state and finds the pairs
       itself, nbody__find_pairs). set_radii: n host radii kept by the engine (NULL = none,
       all zero). find_contacts: every pair i < j of the state y with
       |x_j - x_i| < r_i + r_j, where r are the radii of set_radii (use_radii = 1) or r0 for
       every body (use_radii = 0), sorted by (i, j), d and reach computed as nbody__find_pairs
       does (so the very same pairs, distances and reaches); *pairs is engine-owned, valid
       until the next call. NBODY_ERR_UNAVAILABLE (nothing logged): not for this n, the host
       searches instead. */
    nbody_result (*set_radii)(nbody__engine *e, const nbody_real *r);
    nbody_result (*find_contacts)(nbody__engine *e, nbody__buf y, int use_radii, nbody_real r0,
                                  const nbody__contact **pairs, size_t *count);
    /* NULL (and hermite_store NULL): the engine does not run NBODY_HERMITE (nbody__hermite_op) */
    nbody_result (*hermite)(nbody__engine *e, const nbody__hermite_op *op);
    /* Both or neither (NULL: no block steps for NBODY_LEAPFROG, >>kdk): nbody__active_op,
       nbody__kick_op */
    nbody_result (*active_forces)(nbody__engine *e, nbody__active_op *op);
    nbody_result (*kick)(nbody__engine *e, const nbody__kick_op *op);
    /* with hermite (both or neither): nbody__hermite_store */
    nbody_result (*hermite_store)(nbody__engine *e, const nbody__hermite_store *op);
    /* optional, with hermite: nbody__hermite_levels */
    nbody_result (*hermite_step)(nbody__engine *e, const nbody__hermite_op *op, const nbody__hermite_levels *lv);
    /* optional, with active_forces: nbody__kdk_levels */
    nbody_result (*kdk_step)(nbody__engine *e, nbody__active_op *op, nbody__kdk_levels *lv);
    /* optional, with hermite_step: nbody__hermite_run */
    nbody_result (*hermite_run)(nbody__engine *e, nbody__hermite_run *run);
    /* optional, with kdk_step: nbody__kdk_run */
    nbody_result (*kdk_run)(nbody__engine *e, nbody__kdk_run *run);
} nbody__engine_ops;

struct nbody__engine {
    const nbody__engine_ops *ops;
    nbody_desc desc;               /* defaults resolved: G, theta, allocator, ... all set */
    size_t     n;                  /* bodies */
    void      *impl;               /* backend-private */
    unsigned long long epoch;      /* the step attempt the evaluations belong to (steps + rejected):
                                      an engine that moves work between participants by measured
                                      times does so when it changes, so that one step's
                                      evaluations are one function of the state (implicit stages
                                      converge) */
};

/* Backends allocate host memory with e->desc.allocator (always set once defaults are
   resolved) and log by formatting a line themselves and calling e->desc.log.func when it is
   not NULL. They never print, abort or exit. */

/* The tree's opening criterion NBODY__TREE_CRIT, the key of a position and the internal
   node of the GPU trees: in the block of shared formulas below. */

#ifdef NBODY_WITH_CUDA
/* Defined in nbody_cuda.cu (compiled with the same NBODY_REAL). tree = 0 dense, 1 tree. */
const nbody__engine_ops *nbody__cuda_engine_ops(int tree);
/* f = [v, a] for the bodies [i0, i0 + m) (y, f: 6m reals of those bodies, the state layout)
   from the positions pos of all n bodies (x, then y, then z): a distributed engine's slice */
nbody_result nbody__cuda_derivative_slice(nbody__engine *e, nbody__buf pos, nbody__buf y, nbody__buf f, size_t i0, size_t m);
#endif

/* Load balance of a tree walk by measured cost (the TREE engine under MPI, the CUDA tree on
   several GPUs): given each rank's (GPU's) walk time t[k] over its
   leaf positions [w[k], w[k + 1]), spread evenly over them, moves the inner boundaries w[1 ..
   size - 1] to where the cumulative time reaches k / size of the total, so that the next walk
   (of a tree that has barely changed) takes about as long on every rank. Every rank calls it
   with the same gathered times and gets the same boundaries. Forces do not depend on the
   boundaries (a body's walk is its own), so neither do the results, only their speed.
   halfway: each boundary moves half the way there (a noisy time moves it less). Times that
   are not all positive and finite leave w as it is; so do more than NBODY__DIST_MAX_RANKS
   ranks (their walks stay split by count). */
#define NBODY__DIST_MAX_RANKS 1024
static inline NBODY__UNUSED void nbody__dist_rebalance(size_t *w, const double *t, int size, int halfway) {
    double total = 0, cum = 0;
    size_t nw[NBODY__DIST_MAX_RANKS + 1];
    int k, j = 0;
    if (size < 2 || size > NBODY__DIST_MAX_RANKS) return;
    for (k = 0; k < size; ++k) {
        if (!(t[k] >= 0 && t[k] < 1e30) || (t[k] == 0 && w[k + 1] > w[k])) return;
        total += t[k];
    }
    if (!(total > 0)) return;
    nw[0] = w[0];
    for (k = 1; k < size; ++k) {
        double target = total * k / size, pos;
        while (j < size - 1 && cum + t[j] <= target) cum += t[j++];
        pos = (double)w[j] + (t[j] > 0 ? (target - cum) / t[j] * (double)(w[j + 1] - w[j]) : 0);
        nw[k] = (size_t)(pos + 0.5);
        if (nw[k] > w[j + 1]) nw[k] = w[j + 1];
        if (nw[k] < nw[k - 1]) nw[k] = nw[k - 1];
    }
    for (k = 1; k < size; ++k) w[k] = halfway ? (w[k] + nw[k]) / 2 : nw[k];
}

#ifdef __cplusplus
}
#endif

/* BEGIN SHARED FORMULAS */
/* ---- formulas shared by the CPU engines, nbody_cuda.cu and kernels.cl ---------------------
   The pair interaction, its quadrupole term and the moments it needs, the compensated
   (Kahan) addition and the heap index arithmetic, written once in the C subset that C99/C++, CUDA and OpenCL C share. The
   CPU engines call them here, nbody_cuda.cu through this header, and the OpenCL kernels
   through kernels.cl, in front of which `make embed` (tools/embed_kernels.sh) puts the lines
   from BEGIN to END SHARED FORMULAS: edit them here, then run make embed (make test fails
   while nbody_cl.h is stale). What a compiler must do its own way is one named line each:
     NBODY__SHARED        how the functions are declared: static inline in C and C++,
                          __device__ __forceinline__ in CUDA, plain in OpenCL C 1.x (no static)
     NBODY__REAL          the working precision (OpenCL: the host's -DNBODY_CL_REAL)
     NBODY__SQRT(x)       square root in the working precision
     NBODY__FMA(a, b, c)  a b + c: fused on the GPUs (fma, OpenCL's mad); the CPU build
                          (-ffp-contract=off) rounds the product, as its SIMD kernels do
     NBODY__HEAP_INDEX    a heap node index: size_t on the CPU, 32 bits on the GPUs
     NBODY__CTZ(v)        the number of trailing zero bits of v != 0
     NBODY__U64, NBODY__U64C(c)   an unsigned 64-bit integer type, and a constant of it
     NBODY__KEY_REAL      the arithmetic of the tree key (double; float on an OpenCL device
                          without cl_khr_fp64), NBODY__TREE_SLACK its criterion's 1 + 2^-20
     NBODY__FMIN, NBODY__FMAX   min and max in the working precision (no NaN occurs there)
   The reciprocal square root of the GPUs' fast weight (nbody__weight in nbody_cuda.cu,
   nbody_cl_weight in kernels.cl) is the hardware's, not in this block.
   Keep the operations in the order written: the CPU's SIMD kernels reproduce these sums lane
   by lane and the tests compare them bit for bit; reassociating one changes the last bits
   of every engine that uses it. */
#if defined(__OPENCL_VERSION__)
#if NBODY_CL_FP64 || NBODY_CL_HAS_FP64     /* the host passes NBODY_CL_HAS_FP64 when the device has it */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define NBODY__KEY_REAL double
#define NBODY__TREE_SLACK (1 + 1.0 / 1048576)
#else
#define NBODY__KEY_REAL float
#define NBODY__TREE_SLACK (1 + 1.0f / 1048576)
#endif
#define NBODY__SHARED
#define NBODY__REAL NBODY_CL_REAL
#define NBODY__SQRT(x) sqrt(x)
#define NBODY__FMA(a, b, c) mad(a, b, c)
#define NBODY__HEAP_INDEX uint
#define NBODY__CTZ(v) (31 - (int)clz((v) & (0u - (v))))   /* OpenCL C 1.x has no ctz */
#define NBODY__U64 ulong
#define NBODY__U64C(c) c##UL
#define NBODY__FMIN(a, b) fmin(a, b)
#define NBODY__FMAX(a, b) fmax(a, b)
#define NBODY__CBRT(x) cbrt(x)
#define NBODY__HUGE ((NBODY__REAL)INFINITY)
#elif defined(__CUDACC__)
#define NBODY__SHARED static __device__ __forceinline__
#define NBODY__REAL nbody_real
#define NBODY__SQRT(x) sqrt(x)
#define NBODY__FMA(a, b, c) fma(a, b, c)
#define NBODY__HEAP_INDEX unsigned int
#define NBODY__CTZ(v) (__ffs((int)(v)) - 1)
#define NBODY__FMIN(a, b) fmin(a, b)
#define NBODY__FMAX(a, b) fmax(a, b)
#define NBODY__CBRT(x) cbrt(x)
#define NBODY__HUGE ((NBODY__REAL)HUGE_VAL)
#else
#include <math.h>
#if defined(__GNUC__) || defined(__clang__)
#define NBODY__SHARED static inline __attribute__((unused))
#elif defined(_MSC_VER) && !defined(__cplusplus)
#define NBODY__SHARED static __inline
#else
#define NBODY__SHARED static inline
#endif
#define NBODY__REAL nbody_real
/* math in the working precision (the branch on sizeof folds away) */
NBODY__SHARED nbody_real nbody__sqrt(nbody_real x) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)sqrtf((float)x);
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)sqrt((double)x);
    return (nbody_real)sqrtl((long double)x);
}
#define NBODY__SQRT(x) nbody__sqrt(x)
#define NBODY__FMA(a, b, c) ((a) * (b) + (c))
#define NBODY__HEAP_INDEX size_t
/* count of trailing zero bits of v != 0; the portable version is a de Bruijn multiply
   (Leiserson, Prokop & Randall 1998), used where no builtin exists (MSVC: 64-bit intrinsic) */
NBODY__SHARED int nbody__ctz64_portable(unsigned long long v) {
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
NBODY__SHARED int nbody__ctz64_msvc(unsigned long long v) { unsigned long i; _BitScanForward64(&i, v); return (int)i; }
#define NBODY__CTZ64(v) nbody__ctz64_msvc(v)
#else
#define NBODY__CTZ64(v) nbody__ctz64_portable(v)
#endif
#define NBODY__CTZ(v) NBODY__CTZ64((unsigned long long)(v))
#define NBODY__FMIN(a, b) ((b) < (a) ? (b) : (a))
#define NBODY__FMAX(a, b) ((b) > (a) ? (b) : (a))
/* the C library's cube root, several times cheaper than pow(x, 1/3) (nbody__cbrt in >>ic is the
   one with the same bits on every platform, for the initial conditions) */
NBODY__SHARED nbody_real nbody__cube_root(nbody_real x) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)cbrtf((float)x);
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)cbrt((double)x);
    return (nbody_real)cbrtl((long double)x);
}
#define NBODY__CBRT(x) nbody__cube_root(x)
#define NBODY__HUGE ((nbody_real)HUGE_VAL)
#endif
#if !defined(__OPENCL_VERSION__)
#define NBODY__U64 unsigned long long
#define NBODY__U64C(c) c##ULL
#define NBODY__KEY_REAL double
#define NBODY__TREE_SLACK (1 + 1.0 / 1048576)
#endif

/* ---- the pair interaction: a_i += m_j d / (|d|^2 + eps^2)^(3/2), d = x_j - x_i (Plummer
   softening; G is applied to the sums). The reference form sums |d|^2 in index order and
   takes 1 / sqrt: the CPU engines, and the CUDA benchmarks' plain kernel. The GPU engines'
   tiles form r^2 by fused multiply-adds, eps^2 first (nbody__soft_r2_fused), and take their
   weight from the hardware's reciprocal square root. */
/* r^2 = |d|^2 + eps^2, the reference order */
NBODY__SHARED NBODY__REAL nbody__soft_r2(NBODY__REAL dx, NBODY__REAL dy, NBODY__REAL dz, NBODY__REAL eps2) {
    return dx * dx + dy * dy + dz * dz + eps2;
}
/* r^2 = |d|^2 + eps^2 by three fused multiply-adds */
NBODY__SHARED NBODY__REAL nbody__soft_r2_fused(NBODY__REAL dx, NBODY__REAL dy, NBODY__REAL dz, NBODY__REAL eps2) {
    return NBODY__FMA(dx, dx, NBODY__FMA(dy, dy, NBODY__FMA(dz, dz, eps2)));
}
/* m r2^(-3/2), the reference weight: 1 / sqrt, then m inv inv inv (the SIMPLE engine's
   order, which the other CPU kernels fall back to where their own form is not finite) */
NBODY__SHARED NBODY__REAL nbody__pair_weight(NBODY__REAL m, NBODY__REAL r2) {
    NBODY__REAL inv = 1 / NBODY__SQRT(r2);
    return m * inv * inv * inv;
}
/* a += w d */
NBODY__SHARED void nbody__pull(NBODY__REAL w, NBODY__REAL dx, NBODY__REAL dy, NBODY__REAL dz, NBODY__REAL *ax, NBODY__REAL *ay,
                               NBODY__REAL *az) {
    *ax = NBODY__FMA(w, dx, *ax); *ay = NBODY__FMA(w, dy, *ay); *az = NBODY__FMA(w, dz, *az);
}
/* a += m d (|d|^2 + eps^2)^(-3/2), the reference form */
NBODY__SHARED void nbody__pair_add(NBODY__REAL dx, NBODY__REAL dy, NBODY__REAL dz, NBODY__REAL m, NBODY__REAL eps2,
                                   NBODY__REAL *ax, NBODY__REAL *ay, NBODY__REAL *az) {
    nbody__pull(nbody__pair_weight(m, nbody__soft_r2(dx, dy, dz, eps2)), dx, dy, dz, ax, ay, az);
}

/* ---- Hermite's pair terms (Makino & Aarseth 1992; the snap: Nitadori & Makino 2008): for the
   relative position d, velocity v and acceleration a of source j seen from body i (j - i),
   r2 = |d|^2 + eps^2, alpha = d.v / r2, beta = (|v|^2 + d.a) / r2 + alpha^2 and A = m d r2^(-3/2):
       acc += A,  jerk += J = m v r2^(-3/2) - 3 alpha A,  snap += m a r2^(-3/2) - 6 alpha J - 3 beta A
   (the time derivatives of A; softening enters through r2 alone). t[0..9): the terms of this
   pair, acc, jerk, snap; snap = 0 leaves t[6..9) alone. */
/* the terms from the pair's weight mr3 = m r2^(-3/2) and inv2 = 1 / r2, however an engine forms them */
NBODY__SHARED void nbody__hermite_terms(NBODY__REAL dx, NBODY__REAL dy, NBODY__REAL dz, NBODY__REAL vx, NBODY__REAL vy,
                                        NBODY__REAL vz, NBODY__REAL ax, NBODY__REAL ay, NBODY__REAL az, NBODY__REAL mr3,
                                        NBODY__REAL inv2, int snap, NBODY__REAL *t) {
    NBODY__REAL alpha = (dx * vx + dy * vy + dz * vz) * inv2;
    t[0] = mr3 * dx; t[1] = mr3 * dy; t[2] = mr3 * dz;
    t[3] = mr3 * vx - 3 * alpha * t[0]; t[4] = mr3 * vy - 3 * alpha * t[1]; t[5] = mr3 * vz - 3 * alpha * t[2];
    if (snap) {
        NBODY__REAL beta = (vx * vx + vy * vy + vz * vz + dx * ax + dy * ay + dz * az) * inv2 + alpha * alpha;
        t[6] = mr3 * ax - 6 * alpha * t[3] - 3 * beta * t[0];
        t[7] = mr3 * ay - 6 * alpha * t[4] - 3 * beta * t[1];
        t[8] = mr3 * az - 6 * alpha * t[5] - 3 * beta * t[2];
    }
}
/* the reference form: 1 / sqrt, as the CPU engines */
NBODY__SHARED void nbody__hermite_pair(NBODY__REAL dx, NBODY__REAL dy, NBODY__REAL dz, NBODY__REAL vx, NBODY__REAL vy,
                                       NBODY__REAL vz, NBODY__REAL ax, NBODY__REAL ay, NBODY__REAL az, NBODY__REAL m,
                                       NBODY__REAL eps2, int snap, NBODY__REAL *t) {
    NBODY__REAL r2 = nbody__soft_r2(dx, dy, dz, eps2), inv = 1 / NBODY__SQRT(r2), inv2 = inv * inv;
    nbody__hermite_terms(dx, dy, dz, vx, vy, vz, ax, ay, az, m * inv * inv2, inv2, snap, t);
}

/* ---- Hermite's predictor: a body's time dt before the step's (its time t in ticks since the
   origin; span >= 0: a synchronising step to origin + span), then one component of its x, v
   (and a, for the 6th order's snap) there by the Taylor series of its derivatives at its own
   time, to the jerk (order 4: s = c = 0) or crackle term, in Horner form */
NBODY__SHARED NBODY__REAL nbody__hermite_dt(NBODY__U64 t, NBODY__U64 now, NBODY__REAL tick, NBODY__REAL span) {
    return span >= 0 ? span - (NBODY__REAL)t * tick : (NBODY__REAL)(now - t) * tick;
}
NBODY__SHARED void nbody__hermite_predict1(NBODY__REAL x, NBODY__REAL v, NBODY__REAL a, NBODY__REAL j, NBODY__REAL s,
                                           NBODY__REAL c, NBODY__REAL dt, NBODY__REAL *px, NBODY__REAL *pv, NBODY__REAL *pa) {
    NBODY__REAL h2 = dt / 2, h3 = dt / 3, h4 = dt / 4, h5 = dt / 5;
    *px = x + dt * (v + h2 * (a + h3 * (j + h4 * (s + h5 * c))));
    *pv = v + dt * (a + h2 * (j + h3 * (s + h4 * c)));
    *pa = a + dt * (j + h2 * (s + h3 * c));
}

/* ---- Hermite's corrector, one body (>>hermite): b its forces at the step's end and its state
   at its own time, 3 components each in the order of the engines' rows, a1 j1 s1 x0 v0 a0 j0 s0
   (s1 unused at order 4), dt the step; nx gets x1 v1 a1 j1 and the snap and crackle at the end
   (18 values), d the norms |a| .. |a5| there that the criterion reads. Order 4: Makino &
   Aarseth (1992) eq. 5-6, the higher derivatives from the cubic interpolant; order 6:
   Nitadori & Makino (2008) eq. 14 and the quintic's derivatives. */
NBODY__SHARED NBODY__REAL nbody__norm3(NBODY__REAL x, NBODY__REAL y, NBODY__REAL z) { return NBODY__SQRT(x * x + y * y + z * z); }
/* one axis of the corrector (the GPU engines give each its own thread): x1, v1, the snap s1 and
   crackle c at the end, and dd, e (order 6: the 4th and 5th derivatives; 0 at order 4) */
NBODY__SHARED void nbody__hermite_correct_axis(int order, NBODY__REAL a1, NBODY__REAL j1, NBODY__REAL s1_in, NBODY__REAL x0, NBODY__REAL v0,
                                               NBODY__REAL a0, NBODY__REAL j0, NBODY__REAL s0, NBODY__REAL dt, NBODY__REAL *x1,
                                               NBODY__REAL *v1, NBODY__REAL *s1, NBODY__REAL *c, NBODY__REAL *dd, NBODY__REAL *e) {
    NBODY__REAL h2 = dt * dt, h3 = h2 * dt, D = a1 - a0;
    if (order == 6) {
        *s1 = s1_in;
        *v1 = v0 + dt / 2 * (a0 + a1) - h2 / 10 * (j1 - j0) + h3 / 120 * (s0 + s1_in);
        *x1 = x0 + dt / 2 * (v0 + *v1) - h2 / 10 * D + h3 / 120 * (j0 + j1);
        *c = (60 * D - dt * (24 * j0 + 36 * j1) + h2 * (9 * s1_in - 3 * s0)) / h3;
        *dd = (360 * D - dt * (168 * j0 + 192 * j1) + h2 * (36 * s1_in - 24 * s0)) / (h3 * dt);
        *e = (720 * D - 360 * dt * (j0 + j1) + 60 * h2 * (s1_in - s0)) / (h3 * h2);
    } else {
        *v1 = v0 + dt / 2 * (a0 + a1) + h2 / 12 * (j0 - j1);
        *x1 = x0 + dt / 2 * (v0 + *v1) - h2 / 12 * D;
        *c = (-12 * D + 6 * dt * (j0 + j1)) / h3;
        *s1 = (6 * D - dt * (4 * j0 + 2 * j1)) / h2 + dt * *c;
        *dd = *e = 0;
    }
}
NBODY__SHARED void nbody__hermite_correct(int order, const NBODY__REAL *b, NBODY__REAL dt, NBODY__REAL *nx, NBODY__REAL *d) {
    NBODY__REAL c[3], dd[3], e[3];
    int k;
    for (k = 0; k < 3; ++k) {
        nbody__hermite_correct_axis(order, b[k], b[3 + k], b[6 + k], b[9 + k], b[12 + k], b[15 + k], b[18 + k], b[21 + k], dt, &nx[k],
                                    &nx[3 + k], &nx[12 + k], &c[k], &dd[k], &e[k]);
        nx[6 + k] = b[k]; nx[9 + k] = b[3 + k]; nx[15 + k] = c[k];
    }
    d[0] = nbody__norm3(b[0], b[1], b[2]); d[1] = nbody__norm3(b[3], b[4], b[5]);
    d[2] = nbody__norm3(nx[12], nx[13], nx[14]); d[3] = nbody__norm3(c[0], c[1], c[2]);
    d[4] = nbody__norm3(dd[0], dd[1], dd[2]); d[5] = nbody__norm3(e[0], e[1], e[2]);
}

/* the accuracy criterion of order p (4 or 6), Nitadori & Makino (2008) eq. 8, with Aarseth's
   eta inside the root: dt = sqrt(eta) (A(1) / A(p-2))^(1/(p-3)),
   A(k) = sqrt(|a(k-1)| |a(k+1)| + |a(k)|^2), a(k) the k-th time derivative of the acceleration
   (p = 4 is Aarseth's dt = sqrt(eta (|a||a2| + |a1|^2) / (|a1||a3| + |a2|^2))). d: the norms
   |a|, |a1| .. |a5|. Infinity where the higher derivatives vanish (a lone body). */
NBODY__SHARED NBODY__REAL nbody__hermite_criterion(int order, NBODY__REAL eta, const NBODY__REAL *d) {
    NBODY__REAL a1 = NBODY__SQRT(d[0] * d[2] + d[1] * d[1]);
    NBODY__REAL ap = order == 6 ? NBODY__SQRT(d[3] * d[5] + d[4] * d[4]) : NBODY__SQRT(d[1] * d[3] + d[2] * d[2]);
    NBODY__REAL q = a1 / ap;
    if (!(ap > 0)) return NBODY__HUGE;
    return NBODY__SQRT(eta) * (order == 6 ? NBODY__CBRT(q) : q);
}

/* ---- the block scheduler's levels (>>scheduler): a body's step is dt_max 2^-k at level
   k = 0 .. NBODY__BLOCK_LEVELS. The level a body takes after a step that ended at tick t1 (ticks
   since the origin), from its level k and the step its criterion asks for (crit): the finest
   level whose step is at most crit (halving freely), or k - 1 when twice the step fits crit
   and t1 is on the grid of the doubled step. NBODY__BLOCK_LEVELS + 1: crit is below the
   smallest step or dt_min (dt_min <= 0: none). */
#define NBODY__BLOCK_LEVELS 40     /* steps dt_max 2^-k, k = 0 .. 40; one tick is dt_max 2^-40 */
NBODY__SHARED NBODY__U64 nbody__block_level_of(NBODY__U64 k, NBODY__REAL crit, NBODY__U64 t1, NBODY__REAL dt_max, NBODY__REAL dt_min) {
    NBODY__REAL step = dt_max / (NBODY__REAL)(NBODY__U64C(1) << k);
    if (!(crit == crit)) return NBODY__BLOCK_LEVELS + 1;           /* NaN: no step fits */
    while (step > crit && k <= NBODY__BLOCK_LEVELS) { step /= 2; ++k; }
    if (k > NBODY__BLOCK_LEVELS || (dt_min > 0 && step < dt_min)) return NBODY__BLOCK_LEVELS + 1;
    if (k > 0 && 2 * step <= crit && (t1 & ((NBODY__U64C(1) << (NBODY__BLOCK_LEVELS - (k - 1))) - 1)) == 0) --k;   /* a mask, not a 64-bit remainder */
    return k;
}

/* ---- the neighbour time-step limiter (>>kdk; Saitoh & Makino 2009): level k raised to at
   least the finest level among a body's neighbours less gap (its step at most 2^gap times
   theirs); k itself past NBODY__BLOCK_LEVELS (refused) or gap < 0 (off): k. The host's
   nbody__kdk_level and the GPU tree's levels (nbody_cuda.cu) both take it from here. */
NBODY__SHARED NBODY__U64 nbody__block_limited(NBODY__U64 k, NBODY__U64 neighbour_level, int gap) {
    if (k > NBODY__BLOCK_LEVELS || gap < 0 || neighbour_level <= (NBODY__U64)gap) return k;
    return k < neighbour_level - (NBODY__U64)gap ? neighbour_level - (NBODY__U64)gap : k;
}

/* ---- the quadrupole term of a tree node of mass M, second moments S = (xx xy xz yy yz zz)
   about its centre of mass (not trace-free: the softened kernel is not harmonic), trace tr,
   at d = c - x:
       a += (w0 + 7.5 h7 d.S.d - 1.5 h5 tr) d - 3 h5 S d,   hk = (|d|^2 + eps^2)^(-k/2),
   w0 = M h3 the monopole's weight (each engine forms h3, h5, h7 its own way). */
NBODY__SHARED void nbody__quad_add(NBODY__REAL sxx, NBODY__REAL sxy, NBODY__REAL sxz, NBODY__REAL syy, NBODY__REAL syz,
                                   NBODY__REAL szz, NBODY__REAL tr, NBODY__REAL w0, NBODY__REAL h5, NBODY__REAL h7,
                                   NBODY__REAL dx, NBODY__REAL dy, NBODY__REAL dz, NBODY__REAL *ax, NBODY__REAL *ay,
                                   NBODY__REAL *az) {
    NBODY__REAL sx = sxx * dx + sxy * dy + sxz * dz, sy = sxy * dx + syy * dy + syz * dz;
    NBODY__REAL sz = sxz * dx + syz * dy + szz * dz, t = 3 * h5;
    NBODY__REAL w = w0 + ((NBODY__REAL)15 / 2 * h7 * (dx * sx + dy * sy + dz * sz) - (NBODY__REAL)3 / 2 * h5 * tr);
    *ax = NBODY__FMA(-t, sx, *ax); *ay = NBODY__FMA(-t, sy, *ay); *az = NBODY__FMA(-t, sz, *az);
    nbody__pull(w, dx, dy, dz, ax, ay, az);
}

/* second moments about a node's centre of mass c from a child's, by the parallel-axis
   theorem: S += S_c + m_c s s^T, s = c_c - c (S, S_c: xx xy xz yy yz zz) */
NBODY__SHARED void nbody__quad_shift(NBODY__REAL *s, const NBODY__REAL *sc, NBODY__REAL mc, NBODY__REAL sx, NBODY__REAL sy,
                                     NBODY__REAL sz) {
    s[0] += sc[0] + mc * sx * sx; s[1] += sc[1] + mc * sx * sy; s[2] += sc[2] + mc * sx * sz;
    s[3] += sc[3] + mc * sy * sy; s[4] += sc[4] + mc * sy * sz; s[5] += sc[5] + mc * sz * sz;
}

/* ---- compensated addition (Kahan 1965): returns sum + v and updates the compensation c,
       d = v - c; t = sum + d; c = (t - sum) - d.
   Never built with unsafe math, so the compiler keeps (t - sum) - d as written. */
NBODY__SHARED NBODY__REAL nbody__compensated_add(NBODY__REAL sum, NBODY__REAL v, NBODY__REAL *c) {
    NBODY__REAL d = v - *c, t = sum + d;
    *c = (t - sum) - d;
    return t;
}

/* ---- heap index arithmetic of the implicit kd-tree (nodes 1 .. 2n-1, children 2i, 2i+1).
   Skip the subtree of i: climb while i is a right child (odd), then step to the right
   sibling. The climb is one shift by the count of trailing one-bits (the article's
   find-first-set form). From the last subtree it yields the root 1, which ends the walk. */
NBODY__SHARED NBODY__HEAP_INDEX nbody__heap_skip(NBODY__HEAP_INDEX i) {
    return (i >> NBODY__CTZ(~i)) + 1;
}
/* Next node in pre-order: the left child when it exists (tree_size = 2n, the length of
   the node arrays), else skip. */
NBODY__SHARED NBODY__HEAP_INDEX nbody__heap_next(NBODY__HEAP_INDEX i, NBODY__HEAP_INDEX tree_size) {
    return 2 * i < tree_size ? 2 * i : nbody__heap_skip(i);
}
/* The tree's opening criterion, one formula for every tree engine (the kd-tree build of
   the implementation, nbody__tree_inner of the GPU builds in nbody_cuda.cu and kernels.cl). A
   node of mass M, bodies within r of its centre of mass c and second moment
   B2 = sum_j m_j |x_j - c|^2 acts as one body on a point at distance d from c when
       d > r + k sqrt(3 B2 / M) / theta,   k = 2 for a node of two bodies, else 1.
   Salmon & Warren (1994) bound the error of the monopole by
   (3 - 2 r/d) / (1 - r/d)^2 B2 / d^4 <= 3 B2 / (d^2 (d - r)^2), so with k = 1 that error is
   at most theta^2 times the node's own pull M / d^2, wherever c lies in the node (the offset
   of the centre of mass is in r) and however the mass is spread (a compact core in a wide
   node has a small B2). Measured on Plummer spheres, the worst bodies are those whose pulls
   cancel, where a pair node's error is the largest term: opening a pair costs one extra
   interaction, hence its tolerance is four times tighter (k = 2). Returns the critical
   distance; callers store its square. b2m = B2 / M (0 for a massless node). */
/* r * (1 + 2^-20): a body on the bounding sphere (a massless one at a node whose mass sits in
   one point has b2m = 0) must not be accepted by the rounding of sqrt(r^2)^2 */
#define NBODY__TREE_CRIT(r, b2m, inv_theta, pair, SQRT) \
    ((r) * NBODY__TREE_SLACK + ((pair) ? 2 : 1) * (inv_theta) * SQRT(3 * (b2m)))


/* ---- the GPU trees' build (nbody_cuda.cu, kernels.cl; tests emulate it on the CPU): bodies
   sorted by the key of their position in the bounding box, laid into the leaves of the heap
   in depth-first order, the internal nodes filled from their children. */
/* v's low 21 bits spread to every third bit */
NBODY__SHARED NBODY__U64 nbody__tree_spread3(NBODY__U64 v) {
    v &= NBODY__U64C(0x1fffff);
    v = (v | v << 32) & NBODY__U64C(0x1f00000000ffff);
    v = (v | v << 16) & NBODY__U64C(0x1f0000ff0000ff);
    v = (v | v << 8) & NBODY__U64C(0x100f00f00f00f00f);
    v = (v | v << 4) & NBODY__U64C(0x10c30c30c30c30c3);
    v = (v | v << 2) & NBODY__U64C(0x1249249249249249);
    return v;
}
/* a coordinate in the box [lo, hi] on 21 bits: (x - lo) / (hi - lo) in NBODY__KEY_REAL
   (double wherever the device has it: every engine then gets the same bits) */
NBODY__SHARED NBODY__U64 nbody__tree_coord(NBODY__REAL x, NBODY__REAL lo, NBODY__REAL hi) {
    NBODY__REAL ext = hi - lo;
    NBODY__KEY_REAL u = ext > 0 ? (NBODY__KEY_REAL)(x - lo) / (NBODY__KEY_REAL)ext : (NBODY__KEY_REAL)0;
    NBODY__U64 q = (NBODY__U64)(u * (NBODY__KEY_REAL)2097151);
    return q > NBODY__U64C(2097151) ? NBODY__U64C(2097151) : q;
}
/* A body's cell (x, y, z), 21 bits an axis, to a 63-bit key along a space-filling curve.
   Morton (Z order): the axes' bits interleaved, x lowest. Hilbert (Skilling 2004, "Programming
   the Hilbert curve": the transpose by exchanges and inversions, Gray decoding, then the bits
   interleaved, x highest): consecutive keys are neighbouring cells, so every run of sorted
   bodies is a connected, compact piece of space, where a run of the Z curve can jump across
   the box (twice to four times the terms a walk sums, measured). */
NBODY__SHARED NBODY__U64 nbody__tree_morton(unsigned int x, unsigned int y, unsigned int z) {
    return nbody__tree_spread3(x) | nbody__tree_spread3(y) << 1 | nbody__tree_spread3(z) << 2;
}
NBODY__SHARED NBODY__U64 nbody__tree_hilbert(unsigned int x, unsigned int y, unsigned int z) {
    unsigned int q, p, t;
    x &= 0x1fffffu; y &= 0x1fffffu; z &= 0x1fffffu;
    for (q = 1u << 20; q > 1; q >>= 1) {   /* inverse undo, axis by axis (x: invert or nothing) */
        p = q - 1;
        if (x & q) x ^= p;
        if (y & q) x ^= p;
        else { t = (x ^ y) & p; x ^= t; y ^= t; }
        if (z & q) x ^= p;
        else { t = (x ^ z) & p; x ^= t; z ^= t; }
    }
    y ^= x; z ^= y;                        /* Gray encode */
    t = 0;
    for (q = 1u << 20; q > 1; q >>= 1)
        if (z & q) t ^= q - 1;
    x ^= t; y ^= t; z ^= t;
    return nbody__tree_spread3(x) << 2 | nbody__tree_spread3(y) << 1 | nbody__tree_spread3(z);
}
/* The sort key of a position in the bounding box lo..hi: the Hilbert key of its cell. Every
   GPU build sorts by this one function (stable, ties by body index), so every engine builds
   the same tree of the same bodies. */
NBODY__SHARED NBODY__U64 nbody__tree_key(NBODY__REAL x, NBODY__REAL y, NBODY__REAL z, NBODY__REAL lox, NBODY__REAL loy,
                                         NBODY__REAL loz, NBODY__REAL hix, NBODY__REAL hiy, NBODY__REAL hiz) {
    return nbody__tree_hilbert((unsigned int)nbody__tree_coord(x, lox, hix), (unsigned int)nbody__tree_coord(y, loy, hiy),
                               (unsigned int)nbody__tree_coord(z, loz, hiz));
}
/* An internal node from its children l and r: centres of mass (lx, ly, lz), (rx, ry, rz),
   masses ml, mr, radii rl, rr (bodies within r of the centre of mass), second moments b2l, b2r
   (sum m |x - c|^2), and the node's box lo..hi (the union of the children's). Writes the
   node's centre of mass c (the box centre when massless; kept inside the box), radius and
   second moment (parallel-axis theorem); returns its critical distance (NBODY__TREE_CRIT;
   pair: both children are leaves). The radius is the smaller of two bounds: the sphere
   about c around the children's spheres, and the distance from c to the box's farthest
   corner. */
NBODY__SHARED NBODY__REAL nbody__tree_inner(NBODY__REAL lx, NBODY__REAL ly, NBODY__REAL lz, NBODY__REAL ml, NBODY__REAL rl,
                                           NBODY__REAL b2l, NBODY__REAL rx, NBODY__REAL ry, NBODY__REAL rz, NBODY__REAL mr,
                                           NBODY__REAL rr, NBODY__REAL b2r, NBODY__REAL lox, NBODY__REAL loy, NBODY__REAL loz,
                                           NBODY__REAL hix, NBODY__REAL hiy, NBODY__REAL hiz, NBODY__REAL inv_theta, int pair,
                                           NBODY__REAL *cx, NBODY__REAL *cy, NBODY__REAL *cz, NBODY__REAL *radius,
                                           NBODY__REAL *b2) {
    NBODY__REAL m = ml + mr, x, y, z, corner, ra;
    if (m > 0) {
        x = (ml * lx + mr * rx) / m; y = (ml * ly + mr * ry) / m; z = (ml * lz + mr * rz) / m;
    } else {
        x = (lox + hix) / 2; y = (loy + hiy) / 2; z = (loz + hiz) / 2;
    }
    /* inside the box (rounding), so the corner bound stays a bound */
    x = NBODY__FMIN(NBODY__FMAX(x, lox), hix); y = NBODY__FMIN(NBODY__FMAX(y, loy), hiy); z = NBODY__FMIN(NBODY__FMAX(z, loz), hiz);
    {
        NBODY__REAL ax = lx - x, ay = ly - y, az = lz - z, bx = rx - x, by = ry - y, bz = rz - z;
        ra = NBODY__FMAX(NBODY__SQRT(ax * ax + ay * ay + az * az) + rl, NBODY__SQRT(bx * bx + by * by + bz * bz) + rr);
    }
    {
        NBODY__REAL fx = NBODY__FMAX(x - lox, hix - x), fy = NBODY__FMAX(y - loy, hiy - y), fz = NBODY__FMAX(z - loz, hiz - z);
        corner = NBODY__SQRT(fx * fx + fy * fy + fz * fz);
    }
    ra = NBODY__FMIN(ra, corner);
    {
        NBODY__REAL ax = lx - x, ay = ly - y, az = lz - z, bx = rx - x, by = ry - y, bz = rz - z;
        *b2 = (b2l + ml * (ax * ax + ay * ay + az * az)) + (b2r + mr * (bx * bx + by * by + bz * bz));
    }
    *cx = x; *cy = y; *cz = z; *radius = ra;
    return NBODY__TREE_CRIT(ra, m > 0 ? *b2 / m : (NBODY__REAL)0, inv_theta, pair, NBODY__SQRT);
}
/* END SHARED FORMULAS */
#endif /* backend interface */

/* ======================================================================================
   >>implementation  IMPLEMENTATION
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
#include <limits.h>
#include <time.h>
#if NBODY__OPENMP
#include <omp.h>
#endif

/* NBODY_IO_FAULT(op): a test hook; nonzero makes that step of a file write fail as a full
   disk would ("write", "flush", "sync", "close", "rename"). Tests define it before the
   #include (tests/test_write_fail.c); it is 0 everywhere else. */
#ifndef NBODY_IO_FAULT
#define NBODY_IO_FAULT(op) 0
#endif
#include <errno.h>

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

/* math in the working precision (the branch on sizeof folds away; nbody__sqrt and
   NBODY__SQRT: the shared formulas, backend interface) */
static nbody_real nbody__pow(nbody_real x, nbody_real y) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)powf((float)x, (float)y);
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)pow((double)x, (double)y);
    return (nbody_real)powl((long double)x, (long double)y);
}
static nbody_real nbody__fabs(nbody_real x) { return x < 0 ? -x : x; }
#define NBODY__FABS(x) nbody__fabs(x)
#define NBODY__POW(x, y) nbody__pow(x, y)

static int nbody__isfinite(nbody_real v) { return v == v && v - v == 0; }

/* ======================================================================================
   >>utilities  SMALL UTILITIES: memory and logging, names, bodies, desc defaults
   ====================================================================================== */

/* ---- memory and logging ---- */
static void *nbody__default_alloc(size_t size, void *user_data) { (void)user_data; return NBODY_MALLOC(size); }
static void nbody__default_free(void *p, void *user_data) { (void)user_data; NBODY_FREE(p); }

static void *nbody__alloc(const nbody_desc *d, size_t size) { return d->allocator.alloc(size ? size : 1, d->allocator.user_data); }
static void nbody__free(const nbody_desc *d, void *p) { if (p) d->allocator.free(p, d->allocator.user_data); }

/* overflow-checked count * size; 0 on overflow */
static size_t nbody__bytes(size_t count, size_t size) {
    if (size && count > (size_t)-1 / size) return 0;
    return count * size;
}

/* The calling thread's last ERROR line (nbody_last_error). Per thread, so two simulations
   on two threads never see each other's errors; the only state outside nbody_sim. */
static NBODY__THREAD_LOCAL char nbody__last_error[512];

/* set while this thread runs a desc.log function: a log function may call the library (look
   at the simulation, say), and what those calls log (a BUSY refusal, say) must not call it
   again, or each line would log the next without end */
static NBODY__THREAD_LOCAL int nbody__in_log;

/* one log line to desc.log (d may be NULL: none); an ERROR line is also kept for
   nbody_last_error, so a function without a desc still says why */
static void nbody__vlog(const nbody_desc *d, nbody_log_level level, const char *fmt, va_list ap) {
    char line[sizeof nbody__last_error];
    int to_hook = d && d->log.func && !nbody__in_log;
    if (!to_hook && level != NBODY_LOG_ERROR) return;
    vsnprintf(line, sizeof line, fmt, ap);
    if (level == NBODY_LOG_ERROR) memcpy(nbody__last_error, line, sizeof line);
    if (!to_hook) return;
    nbody__in_log = 1;
    d->log.func(level, line, d->log.user_data);
    nbody__in_log = 0;
}
static void nbody__log(const nbody_desc *d, nbody_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    nbody__vlog(d, level, fmt, ap);
    va_end(ap);
}
/* a refusal: logs one ERROR line and returns r */
static nbody_result nbody__fail(const nbody_desc *d, nbody_result r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    nbody__vlog(d, NBODY_LOG_ERROR, fmt, ap);
    va_end(ap);
    return r;
}

NBODY__DEF const char *nbody_last_error(void) { return nbody__last_error; }

/* ---- names ---- */
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
    case NBODY_ERR_CANCELLED: return "cancelled by the progress callback";
    case NBODY_STOPPED: return "stopped by an event (nbody_get_event)";
    case NBODY_ERR_BUSY: return "simulation busy (in a call on another thread or in its own hook)";
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
        "rkdverk", "rkf", "rkgl", "rklc", "adams", "bs", "radau", "whfast", "hermite"};
    return ((int)m >= 0 && m < NBODY_METHOD_COUNT_) ? names[m] : "unknown";
}

/* ---- bodies ---- */
static nbody_real **nbody__fields(nbody_system *s, nbody_real **f[7]) {
    f[0] = &s->x; f[1] = &s->y; f[2] = &s->z; f[3] = &s->vx; f[4] = &s->vy; f[5] = &s->vz; f[6] = &s->m;
    return *f;
}

NBODY__DEF nbody_result nbody_system_alloc(nbody_system *s, size_t n) {
    nbody_real **f[7];
    nbody_real *block;
    size_t bytes = nbody__bytes(n, 7 * sizeof(nbody_real)), i;
    if (!s || n == 0 || bytes == 0)
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_system_alloc: %s", !s ? "s is NULL" : n == 0 ?
                           "n = 0 bodies" : "n is too large for memory");
    block = (nbody_real *)NBODY_MALLOC(bytes);   /* one block: x is its start */
    if (!block)
        return nbody__fail(NULL, NBODY_ERR_OUT_OF_MEMORY, "nbody: nbody_system_alloc: out of memory for %lu bodies", (unsigned long)n);
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
    if (!dst || !src || !src->x || !dst->x || dst->n != src->n || src->n == 0)
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_system_copy: %s", !dst || !src ? "dst or src is NULL" :
                           !src->x || !dst->x ? "dst or src has no arrays" : "dst and src differ in n (or n = 0)");
    memcpy(dst->x, src->x, src->n * sizeof(nbody_real)); memcpy(dst->y, src->y, src->n * sizeof(nbody_real));
    memcpy(dst->z, src->z, src->n * sizeof(nbody_real)); memcpy(dst->vx, src->vx, src->n * sizeof(nbody_real));
    memcpy(dst->vy, src->vy, src->n * sizeof(nbody_real)); memcpy(dst->vz, src->vz, src->n * sizeof(nbody_real));
    memcpy(dst->m, src->m, src->n * sizeof(nbody_real));
    dst->t = src->t;
    return NBODY_OK;
}

/* ---- limits (one place): nbody_desc_check, nbody_interval_check; every refusal logs one line
   naming the field or body and its value ---- */
static nbody_real nbody__eps(void) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)FLT_EPSILON;
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)DBL_EPSILON;
    return (nbody_real)LDBL_EPSILON;
}

/* The smallest tolerance accepted: epsilon / 16 of NBODY_REAL. Compensated runs reach a few
   times below epsilon (the outer solar system with RKF 7(8) at 1e-16 in double), but far
   below it the steps shrink without end: RKDP at 1e-300 had reached t = 7e-281 after 5 s. */
static nbody_real nbody__tolerance_floor(void) { return nbody__eps() / 16; }

static int nbody__enum_ok(const nbody_desc *d, const char *field, int v, int count) {
    if (v >= 0 && v < count) return 1;
    nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.%s = %d is out of range (0..%d)", field, v, count - 1);
    return 0;
}
static int nbody__int_ok(const nbody_desc *d, const char *field, int v, int lo, int hi, const char *why) {
    if (v >= lo && v <= hi) return 1;
    nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.%s = %d is out of range (%d..%d)%s", field, v, lo, hi, why);
    return 0;
}
/* finite and >= 0 (0 being the default where the field has one) */
static int nbody__real_ok(const nbody_desc *d, const char *field, nbody_real v) {
    if (nbody__isfinite(v) && v >= 0) return 1;
    nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.%s = %g must be finite and >= 0", field, (double)v);
    return 0;
}

static int nbody__threads_ok(const nbody_desc *d) {
    int limit = NBODY_MAX_THREADS;
#if NBODY__OPENMP
    if (omp_get_thread_limit() < limit) limit = omp_get_thread_limit();
#endif
    return nbody__int_ok(d, "threads", d->threads, 0, limit, " (NBODY_MAX_THREADS or OpenMP's thread limit)");
}

static int nbody__tolerance_ok(const nbody_desc *d) {
    nbody_method m = d->method == NBODY_METHOD_DEFAULT ? NBODY_LEAPFROG : d->method;
    if (!nbody__real_ok(d, "tolerance", d->tolerance) || d->tolerance == 0) return d->tolerance == 0;
    if (!nbody_method_adaptive(m)) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.tolerance = %g needs an adaptive method (rkck, rkdp, rkdverk, "
                   "rkf, rklc, bs, radau): %s takes fixed steps of desc.dt", (double)d->tolerance, nbody_method_name(m));
        return 0;
    }
    if (d->tolerance < nbody__tolerance_floor()) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.tolerance = %g is below what NBODY_REAL (%d bytes, epsilon %g) can "
                   "meet: the steps would shrink without end; use at least %g", (double)d->tolerance,
                   (int)sizeof(nbody_real), (double)nbody__eps(), (double)nbody__tolerance_floor());
        return 0;
    }
    return 1;
}

/* theta: 0 (the default) or in (0, NBODY__THETA_MAX]. The criterion (NBODY__TREE_CRIT) takes a
   node only from beyond its bounding sphere, so no body is ever pulled by a node that holds
   it, at any theta; theta bounds the node's monopole error by theta^2 of its own pull, and
   past 1 the measured errors grow slowly but without end (bench/bench_tree_accuracy.c, N =
   12347, every body against a direct sum; bench/results/theta-2026-11-27.md): the worst body
   of a Plummer sphere, a uniform cube and two disc galaxies was at most 0.67 of its force at
   theta 1.2 (the CPU tree in double and the CUDA tree in float, monopoles and quadrupoles),
   but 1.09 at 1.5 (the CUDA tree's monopoles, the galaxies), 1.01 at 2 on the CPU and 5.0 at
   10. The bound keeps every body's error below its force on every tree engine measured. */
#define NBODY__THETA_MAX 1.2
static int nbody__theta_ok(const nbody_desc *d) {
    if (!nbody__real_ok(d, "theta", d->theta)) return 0;
    if (d->theta <= (nbody_real)NBODY__THETA_MAX) return 1;
    nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.theta = %g must be at most %g (0 = 0.5): beyond it a tree's worst force "
               "error passes the force itself (measured: 109%% at theta 1.5, 500%% at 10)", (double)d->theta, NBODY__THETA_MAX);
    return 0;
}

static int nbody__step_limits_ok(const nbody_desc *d) {
    if (!nbody__real_ok(d, "dt", d->dt) || !nbody__real_ok(d, "dt_min", d->dt_min) ||
        !nbody__real_ok(d, "dt_max", d->dt_max))
        return 0;
    if (d->dt_max > 0 && d->dt_min > d->dt_max) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.dt_min = %g is above desc.dt_max = %g", (double)d->dt_min,
                   (double)d->dt_max);
        return 0;
    }
    return 1;
}

static int nbody__steering_ok(const nbody_desc *d) {
    if (d->restitution > 1) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.restitution = %g must be in 0..1", (double)d->restitution);
        return 0;
    }
    if (!(d->progress.interval >= 0 && d->progress.interval < 1e300)) {   /* NaN, Inf, < 0 */
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.progress.interval = %g must be finite and >= 0",
                   d->progress.interval);
        return 0;
    }
    if ((d->allocator.alloc == NULL) != (d->allocator.free == NULL)) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.allocator needs both alloc and free (or neither)");
        return 0;
    }
    return nbody__real_ok(d, "restitution", d->restitution) && nbody__real_ok(d, "stop_distance", d->stop_distance) &&
           nbody__real_ok(d, "escape_distance", d->escape_distance) &&
           nbody__int_ok(d, "extra_force_velocity_free", d->extra_force_velocity_free, 0, 1, "");
}

/* desc.decompose: 0 or 1, and 1 only for the CPU tree (the one engine with a decomposed walk) */
static int nbody__decompose_ok(const nbody_desc *d) {
    if (!nbody__int_ok(d, "decompose", d->decompose, 0, 1, "")) return 0;
    if (d->decompose && d->engine != NBODY_ENGINE_TREE) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.decompose = 1 needs NBODY_ENGINE_TREE (engine %d)", (int)d->engine);
        return 0;
    }
    return 1;
}

static int nbody__whfast_corrector_ok(const nbody_desc *d) {
    int c = d->whfast_corrector;
    if (c == 0 || c == 3 || c == 5 || c == 7 || c == 11 || c == 17) return 1;
    nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.whfast_corrector = %d must be 0, 3, 5, 7, 11 or 17", c);
    return 0;
}

/* every field of a desc on its own (no bodies): 1, or 0 and one log line */
static int nbody__desc_valid(const nbody_desc *d) {
    return nbody__enum_ok(d, "engine", (int)d->engine, NBODY_ENGINE_COUNT_) &&
           nbody__enum_ok(d, "method", (int)d->method, NBODY_METHOD_COUNT_) &&
           nbody__enum_ok(d, "traversal", (int)d->traversal, NBODY_TRAVERSAL_COUNT_) &&
           nbody__enum_ok(d, "visit_order", (int)d->visit_order, NBODY_ORDER_COUNT_) &&
           nbody__enum_ok(d, "simd", (int)d->simd, NBODY_SIMD_COUNT_) &&
           nbody__enum_ok(d, "radau_control", (int)d->radau_control, NBODY_RADAU_CONTROL_COUNT_) &&
           nbody__enum_ok(d, "whfast_coordinates", (int)d->whfast_coordinates, NBODY_WHFAST_COORDINATES_COUNT_) &&
           nbody__enum_ok(d, "collision", (int)d->collision, NBODY_COLLISION_COUNT_) &&
           (d->method != NBODY_ADAMS || nbody__int_ok(d, "order", d->order, 0, 5, " for adams")) &&
           nbody__real_ok(d, "G", d->G) && nbody__real_ok(d, "softening", d->softening) && nbody__step_limits_ok(d) &&
           nbody__tolerance_ok(d) && nbody__theta_ok(d) && nbody__threads_ok(d) &&
           nbody__int_ok(d, "block_size", d->block_size, 0, INT_MAX, "") &&
           nbody__int_ok(d, "device", d->device, 0, INT_MAX, "") && nbody__int_ok(d, "devices", d->devices, 0, INT_MAX, "") &&
           nbody__int_ok(d, "compensated", d->compensated, 0, 1, "") &&
           nbody__int_ok(d, "quadrupole", d->quadrupole, 0, 1, "") &&
           nbody__int_ok(d, "leaf_size", d->leaf_size, 0, INT_MAX, "") && nbody__whfast_corrector_ok(d) &&
           nbody__enum_ok(d, "stepping", (int)d->stepping, NBODY_STEPPING_COUNT_) &&
           nbody__real_ok(d, "timestep_eta", d->timestep_eta) && nbody__steering_ok(d) && nbody__decompose_ok(d);
}

/* why the bodies are refused, written into why (len bytes): the system NULL, empty or
   missing an array, t not finite, or the first bad body with its field and value; NULL when
   they are valid. Arrays are read only when n fits in memory (a huge n is refused unread). */
static const char *nbody__system_fault(const nbody_system *s, char *why, size_t len) {
    static const char *names[7] = {"x", "y", "z", "vx", "vy", "vz", "m"};
    size_t i;
    int k;
    if (!s || s->n == 0 || !s->x || !s->y || !s->z || !s->vx || !s->vy || !s->vz || !s->m)
        snprintf(why, len, "the system is %s", !s ? "NULL" : s->n == 0 ? "empty (n = 0)" : "missing an array");
    else if (s->n > ((size_t)-1) / (7 * sizeof(nbody_real)))
        snprintf(why, len, "n = %lu bodies do not fit in memory", (unsigned long)s->n);
    else if (!nbody__isfinite(s->t))
        snprintf(why, len, "the system's time t = %g is not finite", (double)s->t);
    else if (nbody__system_valid(s))
        return NULL;
    else
        for (i = 0; i < s->n; ++i) {
            const nbody_real v[7] = {s->x[i], s->y[i], s->z[i], s->vx[i], s->vy[i], s->vz[i], s->m[i]};
            for (k = 0; k < 7; ++k)
                if (!nbody__isfinite(v[k]) || (k == 6 && v[k] < 0)) {
                    snprintf(why, len, "body %lu: %s = %g %s", (unsigned long)i, names[k], (double)v[k],
                             nbody__isfinite(v[k]) ? "is negative" : "is not finite");
                    return why;
                }
        }
    return why;
}

/* the bodies of a desc-less function fn: 0, or 1 and one line "nbody: fn: why" */
static int nbody__system_refused(const char *fn, const nbody_system *s) {
    char why[160];
    if (!nbody__system_fault(s, why, sizeof why)) return 0;
    nbody__log(NULL, NBODY_LOG_ERROR, "nbody: %s: %s", fn, why);
    return 1;
}

/* the bodies: 1, or 0 and one log line naming the first bad body */
static int nbody__system_checked(const nbody_desc *d, const nbody_system *s) {
    char why[160];
    if (!nbody__system_fault(s, why, sizeof why)) return 1;
    nbody__log(d, NBODY_LOG_ERROR, "nbody: %s", why);
    return 0;
}

/* ---- desc defaults (one place) ---- */
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
    if (d.method == NBODY_RADAU) d.compensated = 1; /* its update is always compensated */
    if (d.method == NBODY_HERMITE) {
        if (d.order == 0) d.order = 4;
        if (d.timestep_eta == 0) d.timestep_eta = (nbody_real)(d.order == 6 ? 0.1 : 0.02);
        if (d.stepping == NBODY_STEPPING_DEFAULT) d.stepping = NBODY_STEPPING_BLOCK;
    } else if (d.stepping == NBODY_STEPPING_DEFAULT) {
        d.stepping = NBODY_STEPPING_SHARED;
    }
    /* GADGET's customary ErrTolIntAccuracy for its criterion sqrt(2 eta softening / |a|) */
    if (d.method == NBODY_LEAPFROG && d.stepping == NBODY_STEPPING_BLOCK && d.timestep_eta == 0) d.timestep_eta = (nbody_real)0.025;
    if (!d.allocator.alloc) { d.allocator.alloc = nbody__default_alloc; d.allocator.free = nbody__default_free; d.allocator.user_data = NULL; }
    return d;
}

/* a real v >= 0 as an integer of the same order (IEEE bits: the tree walk's maxima, >>kdk),
   and back */
static NBODY__UNUSED long long nbody__real_key(nbody_real v) {
    if (sizeof(nbody_real) == sizeof(long long)) { long long k; memcpy(&k, &v, sizeof k); return k; }
    { unsigned int k; float f = (float)v; memcpy(&k, &f, sizeof k); return (long long)k; }
}
static NBODY__UNUSED nbody_real nbody__real_of_key(long long k) {
    if (sizeof(nbody_real) == sizeof(long long)) { nbody_real v; memcpy(&v, &k, sizeof v); return v; }
    { unsigned int u = (unsigned int)k; float f; memcpy(&f, &u, sizeof f); return (nbody_real)f; }
}

/* ======================================================================================
   >>types  PRIVATE TYPES AND DECLARATIONS
   The simulation object and what it holds: the typed state of each method, the field
   lists a checkpoint is written from, the method descriptor; then forward declarations of
   the functions that the sections below call before they define them.
   ====================================================================================== */

typedef struct nbody__tableau {    /* explicit or implicit Runge-Kutta */
    int stages, order, embedded_order, fsal;
    const nbody_real *a;           /* stages x stages, row-major */
    const nbody_real *b;           /* propagating (higher-order) weights */
    const nbody_real *bhat;        /* embedded weights, NULL when none */
    const nbody_real *c;
} nbody__tableau;

typedef struct nbody__method_info nbody__method_info;

/* ---- typed solver state: what a method keeps between steps, and its named scratch vectors.
   Each method that has any owns one struct, a member of nbody_sim (separate members, not a
   union: every method's state is zero unless it is the one running, and nothing is shared).
   Its field list (nbody__*_fields, after nbody_sim) is the one description every generic
   piece works from: buffers are allocated, released and checkpointed through it, scalars
   are checkpointed and carried over a change of n through it. */
typedef struct nbody__leapfrog_state {
    nbody__buf rate;               /* [v + h/2 a(x), (a(x) + a(x'))/2]: the step's one update direction */
} nbody__leapfrog_state;

typedef struct nbody__irk_state {  /* NBODY_TRAPEZE, NBODY_RKGL, NBODY_RKLC */
    nbody__buf stage;              /* f at the stage just evaluated, before it replaces K_i */
} nbody__irk_state;

#define NBODY__ADAMS_MAX_ORDER 5
typedef struct nbody__adams_state {
    nbody_real spacing;            /* the step the past derivatives are spaced by */
    int history;                   /* how many of past[] are valid and spaced by `spacing` */
    nbody__buf past[NBODY__ADAMS_MAX_ORDER - 1]; /* f_{n-1}, f_{n-2}, ...: a ring rotated by pointer */
} nbody__adams_state;

#define NBODY__BS_KMAX 8
typedef struct nbody__bs_state {
    int column;                    /* target column (order) of the next step; < 2: none yet */
    nbody_real proposal;           /* next step, chosen together with the column */
    nbody__buf table[NBODY__BS_KMAX]; /* the latest extrapolation row T_j1 .. T_jj */
    nbody__buf entry;              /* the new entry T_j,k+1 */
    nbody__buf scratch;
    nbody__buf other;              /* the modified midpoint's other increment */
} nbody__bs_state;

#define NBODY__RADAU_NB 7          /* B_1 .. B_7 */
/* the Gauss-Radau constants (>>radau), computed once when the simulation is created */
typedef struct nbody__radau_consts {
    nbody_real h[8];               /* nodes, h[0] = 0 */
    nbody_real c[8][8];            /* N_k(s) = s prod_{i<k} (s - h_i) = sum_j c[k][j] s^j, 1 <= j <= k <= 7 */
    nbody_real d[8][8];            /* G_k = sum_{j >= k} d[k][j] B_j */
    nbody_real r[8][8];            /* r[k][i] = 1 / d[k][i] rounded, i < k */
    nbody_real dk[8][8];           /* d[k][i] = h_k - h_i (i > 0; rounded once) or h_k (i = 0) */
    nbody_real dh[8][8], dl[8][8]; /* d[k][i] = dh + dl exactly, dh of half the mantissa (Veltkamp) */
    nbody_real split;              /* 2^ceil(p / 2) + 1, p the mantissa's bits: Veltkamp's constant */
    nbody_real binom[8][8];        /* binom[j][m] = binom(m, j), 1 <= j <= m <= 7 (the shift of B) */
} nbody__radau_consts;

typedef struct nbody__radau_state {
    nbody_real last_step;          /* h of the last accepted step */
    nbody_real proposal;           /* next step */
    nbody_real ratio;              /* h / last_step of the attempt in progress */
    int predicted;                 /* the attempt started from a prediction of B */
    int have_b;                    /* b_accepted holds the B of an accepted step */
    nbody__buf b_accepted[NBODY__RADAU_NB]; /* B of the last accepted step */
    nbody__buf prediction[NBODY__RADAU_NB]; /* the prediction E that step started from */
    nbody__buf b[NBODY__RADAU_NB];          /* B of the attempt */
    nbody__buf g[NBODY__RADAU_NB];          /* G of the attempt (Newton form) */
    nbody__buf b_comp[NBODY__RADAU_NB];     /* B's compensation */
    nbody__buf change;             /* D = G_k(new) - G_k(old) */
    nbody__buf x_comp;             /* the state's position compensation, in the acceleration half */
    nbody__buf divided;            /* the divided difference being built */
    nbody_real *host;              /* 24n host scratch (PRS23): written before read, not saved */
    nbody__radau_consts K;         /* constants: set by nbody_create, not saved */
} nbody__radau_state;

/* The block scheduler (>>scheduler) that NBODY_HERMITE and the tree leapfrog's block steps
   (>>kdk) share: each body's time and step as integer ticks, the active list of a step. */
/* the block scheduler's census of the levels (>>scheduler; scratch, rebuilt from the ticks) */
typedef struct nbody__block_census {
    size_t start[NBODY__BLOCK_LEVELS + 2];   /* level k's bodies: order[start[k] .. start[k + 1]) */
    size_t *order;                 /* the bodies by level (n) */
    size_t *where;                 /* each body's position in order (n) */
    unsigned long long *bits;      /* a bit a body, zero between uses: the active list in index order */
    int valid;                     /* 0: rebuild from the ticks before use */
    int exact;                     /* every body sits where the census assumes (else the ticks are scanned) */
} nbody__block_census;
typedef struct nbody__block_sched {
    int live;                      /* the fields below hold the state of y (0: rebuilt from y) */
    nbody_real origin;             /* the time of tick 0 */
    unsigned long long now;        /* the time t in ticks since origin */
    unsigned long long *ticks[2];  /* each body's time in ticks since origin, and its level */
    /* scratch, written before read in a step (not saved) */
    size_t *active;                /* the active list (n) */
    size_t count;                  /* its length */
    int sync;                      /* this step lands every body on t_new (not a block time) */
    unsigned long long due;        /* a block step's time in ticks */
    nbody_real t_new;
    unsigned long long *level_new; /* the active bodies' next levels (n) */
    nbody__block_census census;
    int ticks_sent;                /* the engine has every body's time: 0 after a start, an origin
                                      move or a load (nbody__hermite_op.ticks_all) */
} nbody__block_sched;

/* NBODY_HERMITE (>>hermite): each body's x, v at its own time and the derivatives there (its
   time and step in the scheduler); y is every body predicted to the simulation time t (what
   nbody_get_state returns). */
typedef struct nbody__hermite_state {
    nbody__buf base;               /* x, v of each body at its own time (6n) */
    nbody__buf force;              /* a, jerk there (6n) */
    nbody__buf high;               /* snap, crackle there (6n; the corrector's, order 4) */
    /* scratch, written before read in a step (not saved) */
    nbody_real *out;               /* the engine's a, jerk, snap of the active bodies and their
                                      state at their own time (24n, nbody__hermite_op) */
    nbody_real *next;              /* their corrected x v a j s c (18n), levels in level_new */
    int run;                       /* nbody_advance with nothing that watches each step: the
                                      engine may take steps on its own (ops.hermite_run) */
    size_t run_cap;                /* the most active bodies the engine's runs take (its last
                                      run's word; unknown: SIZE_MAX) */
} nbody__hermite_state;

/* NBODY_LEAPFROG with NBODY_STEPPING_BLOCK on the tree engines (>>kdk): kick-drift-kick with a
   power-of-two step per body. y holds every body's position at t (all drift together) and its
   velocity synchronised to t; kick the velocity each body drifts with (after its last opening
   half kick) and the acceleration of that kick: y' = y + h kick is the drift of every body. */
typedef struct nbody__kdk_state {
    nbody__buf kick;               /* [v after the last kick (3n) | a at that kick (3n)] */
    unsigned long long *tree[1];   /* the leaf order of the tree the forces walk (nbody__active_op) */
    int tree_live;                 /* tree holds it (0: the next step builds a tree afresh) */
    unsigned long long tree_age;   /* active bodies whose forces came from that tree since its build */
    /* scratch, written before read in a step (not saved) */
    nbody_real *acc;               /* the active bodies' new accelerations (3n) */
    nbody_real *coef;              /* their kick coefficients (3n) */
    nbody_real *a0;                /* a host copy of kick's second half (3n), current where a0_valid:
                                      the step criterion's a0 (nbody__kdk_change) */
    int a0_valid;                  /* 0 after a step on the engine (it kicks with its own copy) or a
                                      load: the next host step reads kick back (nbody__kdk_a0) */
    long long *reach;              /* each body's reach from the walks (n, nbody__active_op; zero
                                      between steps) */
    int tree_built;                /* this step's forces came from a tree built afresh */
    int tree_wrote;                /* and its order is in tree */
    int run;                       /* nbody_advance with nothing that watches each step: the
                                      engine may take steps on its own (ops.kdk_run) */
    int walked_neighbours;         /* this step's walk gave the neighbour levels */
    unsigned long long woken, limited;   /* counts since the start, not saved: bodies woken early
                                            (their step cut short) and levels the limiter raised */
} nbody__kdk_state;

/* One entry of a method's field list. Checkpoints write each field under its name, and a
   load matches the names, so adding a field cannot shift another. */
typedef enum nbody__field_kind {
    NBODY__FIELD_INT, NBODY__FIELD_REAL, NBODY__FIELD_BUF,
    NBODY__FIELD_U64,              /* count unsigned 64-bit integers */
    NBODY__FIELD_TICKS             /* count host arrays of n unsigned 64-bit integers (hi < 0: one
                                      array, a permutation of 0 .. n-1, the identity at the start) */
} nbody__field_kind;
typedef struct nbody__field {
    const char *name;              /* as written in checkpoints: at most 15 characters */
    nbody__field_kind kind;
    size_t offset;                 /* in nbody_sim */
    int count;                     /* array length, 1 for one value */
    int lo, hi;                    /* NBODY__FIELD_INT: the values a checkpoint may hold;
                                      NBODY__FIELD_TICKS: hi > 0 bounds the last array's values */
    int history;                   /* 1: counts valid past buffers; 0 when the state is replaced */
} nbody__field;

typedef struct nbody__archiver {   /* nbody_archive_attach */
    char *path;
    int pending;                   /* a record is due: written before the simulation next changes */
    nbody_real every_t, next_t;
    unsigned long long every_steps, last_step;
    double every_wall, last_wall;  /* seconds; last_wall from nbody__wall_seconds() */
} nbody__archiver;

typedef struct nbody__steer {      /* host-side steering state, carried across a change of n */
    nbody_real *radii;             /* n, NULL = all zero */
    nbody_real *host;              /* 9n scratch (state + accelerations) for GPU engines, lazily */
    nbody_event event;
    nbody__archiver *archive;
} nbody__steer;

typedef struct nbody__whfast_state {   /* NBODY_WHFAST */
    int live;                      /* canonical holds the canonical state of y (corrector applied) */
    nbody_real h;                  /* the step canonical was opened with (the corrector's) */
    nbody__buf canonical;          /* the canonical (Jacobi or democratic heliocentric) state */
    nbody__buf copy;               /* canonical with the inverse corrector applied */
    /* deferred synchronization (not saved: nbody_advance sets and clears them) */
    int defer;                     /* nbody_advance to t_limit with nothing that reads y between steps */
    nbody_real t_limit;
    int pending, deferred;         /* this attempt's y_new / y are not the synchronized state */
    int half;                      /* canonical lacks its last step's closing drift(h/2) (joined to the next) */
} nbody__whfast_state;

struct nbody_sim {
    nbody__engine eng;
    nbody_desc desc;               /* defaults resolved */
    const nbody__method_info *method;
    size_t n, len;                 /* bodies, 6n */
    nbody__buf y, y_new, ytmp;     /* state, candidate, stage argument */
    nbody__buf k[NBODY__MAX_TERMS];/* stage derivatives; k[0] = f(y) when f_valid */
    nbody__buf comp, comp_new;     /* Kahan compensation (desc.compensated) */
    int nk;                        /* k[0..nk) allocated (the method's stages) */
    int f_valid;                   /* k[0] holds f(y) */
    /* Method state. Every piece of it lives in the buffers above or in these structs' listed
       fields, so a checkpoint that saves them restarts any method bitwise exactly. */
    nbody__leapfrog_state leapfrog;
    nbody__irk_state irk;
    nbody__adams_state adams;
    nbody__bs_state bs;
    nbody__radau_state radau;
    nbody__whfast_state whfast;
    nbody__hermite_state hermite;
    nbody__kdk_state kdk;
    nbody__block_sched sched;      /* NBODY_HERMITE's and the tree leapfrog's block steps */
    nbody_real t, dt_next;
    nbody_real *m;                 /* host copy of the masses */
    nbody_stats stats;
    /* desc.progress during one nbody_advance (active = 0 outside it) */
    struct { int active; nbody_real t_start, t_end; double wall0, last; } progress;
    nbody_real t_stage;            /* time of the stage being evaluated (extra forces) */
    nbody__steer steer;            /* radii, events, archive: host side, between steps */
    volatile long busy;            /* NBODY__IDLE, NBODY__BUSY or NBODY__IN_HOOK(+1): nbody__enter */
    const void *volatile hook_thread;   /* nbody__thread_tag of the thread running a hook, else NULL */
};

/* The field lists. To give a new method state: a struct above, a member of nbody_sim, a list
   here from NBODY__FIELD rows (every buffer, and every scalar that outlives a step), and
   NBODY__FIELDS(list) in its nbody__methods row; checkpoints, a change of n, nbody_set_state
   and the buffers' allocation then handle it. Bump NBODY__CKP_VERSION when a list changes
   (a load also refuses a file whose names differ from the list). For example:
       static const nbody__field nbody__irk_fields[] = {
           NBODY__FIELD(irk, nbody__irk_state, stage, NBODY__FIELD_BUF, 1, 0, 0, 0)};  */
#define NBODY__FIELD(member, type, field, kind, count, lo, hi, history) \
    {#field, kind, offsetof(nbody_sim, member) + offsetof(type, field), count, lo, hi, history}
#define NBODY__FIELDS(list) list, (int)(sizeof list / sizeof list[0])

static const nbody__field nbody__leapfrog_fields[] = {
    NBODY__FIELD(leapfrog, nbody__leapfrog_state, rate, NBODY__FIELD_BUF, 1, 0, 0, 0)};
static const nbody__field nbody__irk_fields[] = {
    NBODY__FIELD(irk, nbody__irk_state, stage, NBODY__FIELD_BUF, 1, 0, 0, 0)};
static const nbody__field nbody__adams_fields[] = {
    NBODY__FIELD(adams, nbody__adams_state, spacing, NBODY__FIELD_REAL, 1, 0, 0, 0),
    NBODY__FIELD(adams, nbody__adams_state, history, NBODY__FIELD_INT, 1, 0, NBODY__ADAMS_MAX_ORDER - 1, 1),
    NBODY__FIELD(adams, nbody__adams_state, past, NBODY__FIELD_BUF, NBODY__ADAMS_MAX_ORDER - 1, 0, 0, 0)};
static const nbody__field nbody__bs_fields[] = {
    NBODY__FIELD(bs, nbody__bs_state, column, NBODY__FIELD_INT, 1, 0, NBODY__BS_KMAX - 1, 0),
    NBODY__FIELD(bs, nbody__bs_state, proposal, NBODY__FIELD_REAL, 1, 0, 0, 0),
    NBODY__FIELD(bs, nbody__bs_state, table, NBODY__FIELD_BUF, NBODY__BS_KMAX, 0, 0, 0),
    NBODY__FIELD(bs, nbody__bs_state, entry, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(bs, nbody__bs_state, scratch, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(bs, nbody__bs_state, other, NBODY__FIELD_BUF, 1, 0, 0, 0)};
static const nbody__field nbody__radau_fields[] = {
    NBODY__FIELD(radau, nbody__radau_state, last_step, NBODY__FIELD_REAL, 1, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, proposal, NBODY__FIELD_REAL, 1, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, ratio, NBODY__FIELD_REAL, 1, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, predicted, NBODY__FIELD_INT, 1, 0, 1, 0),
    NBODY__FIELD(radau, nbody__radau_state, have_b, NBODY__FIELD_INT, 1, 0, 1, 1),
    NBODY__FIELD(radau, nbody__radau_state, b_accepted, NBODY__FIELD_BUF, NBODY__RADAU_NB, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, prediction, NBODY__FIELD_BUF, NBODY__RADAU_NB, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, b, NBODY__FIELD_BUF, NBODY__RADAU_NB, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, g, NBODY__FIELD_BUF, NBODY__RADAU_NB, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, b_comp, NBODY__FIELD_BUF, NBODY__RADAU_NB, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, change, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, x_comp, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(radau, nbody__radau_state, divided, NBODY__FIELD_BUF, 1, 0, 0, 0)};
static const nbody__field nbody__whfast_fields[] = {
    NBODY__FIELD(whfast, nbody__whfast_state, live, NBODY__FIELD_INT, 1, 0, 1, 1),
    NBODY__FIELD(whfast, nbody__whfast_state, h, NBODY__FIELD_REAL, 1, 0, 0, 0),
    NBODY__FIELD(whfast, nbody__whfast_state, canonical, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(whfast, nbody__whfast_state, copy, NBODY__FIELD_BUF, 1, 0, 0, 0)};

static const nbody__field nbody__hermite_fields[] = {
    NBODY__FIELD(sched, nbody__block_sched, live, NBODY__FIELD_INT, 1, 0, 1, 1),
    NBODY__FIELD(sched, nbody__block_sched, origin, NBODY__FIELD_REAL, 1, 0, 0, 0),
    NBODY__FIELD(sched, nbody__block_sched, now, NBODY__FIELD_U64, 1, 0, 0, 0),
    NBODY__FIELD(hermite, nbody__hermite_state, base, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(hermite, nbody__hermite_state, force, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(hermite, nbody__hermite_state, high, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(sched, nbody__block_sched, ticks, NBODY__FIELD_TICKS, 2, 0, NBODY__BLOCK_LEVELS, 0)};
static const nbody__field nbody__kdk_fields[] = {
    NBODY__FIELD(sched, nbody__block_sched, live, NBODY__FIELD_INT, 1, 0, 1, 1),
    NBODY__FIELD(sched, nbody__block_sched, origin, NBODY__FIELD_REAL, 1, 0, 0, 0),
    NBODY__FIELD(sched, nbody__block_sched, now, NBODY__FIELD_U64, 1, 0, 0, 0),
    NBODY__FIELD(kdk, nbody__kdk_state, kick, NBODY__FIELD_BUF, 1, 0, 0, 0),
    NBODY__FIELD(sched, nbody__block_sched, ticks, NBODY__FIELD_TICKS, 2, 0, NBODY__BLOCK_LEVELS, 0),
    NBODY__FIELD(kdk, nbody__kdk_state, tree_live, NBODY__FIELD_INT, 1, 0, 1, 1),
    NBODY__FIELD(kdk, nbody__kdk_state, tree_age, NBODY__FIELD_U64, 1, 0, 0, 0),
    NBODY__FIELD(kdk, nbody__kdk_state, tree, NBODY__FIELD_TICKS, 1, 0, -1, 0)};

static void *nbody__field_at(nbody_sim *s, const nbody__field *f) { return (char *)s + f->offset; }

/* attempt one step of size h from sim->y into sim->y_new; *err is the scaled error norm
   (<= 1 accepts) for adaptive methods, 0 otherwise */
typedef nbody_result (*nbody__attempt_fn)(nbody_sim *s, nbody_real h, nbody_real *err);
/* after an accepted step (y_new already swapped into y) */
typedef void (*nbody__commit_fn)(nbody_sim *s, nbody_real h);
/* the next step of a method that schedules its own (the block scheduler): its size *h and the
   time *t_new it lands on, never past t_limit */
typedef nbody_result (*nbody__schedule_fn)(nbody_sim *s, nbody_real t_limit, nbody_real *h, nbody_real *t_new);

struct nbody__method_info {
    nbody_method id;
    int order;                     /* nominal order (Adams: from desc.order) */
    int adaptive;                  /* has an error estimate: tolerance > 0 turns control on */
    int nk;                        /* stage derivatives it needs */
    const nbody__field *fields;    /* its state (NULL: none) */
    int nfields;
    const nbody__tableau *tableau;
    nbody__attempt_fn attempt;
    nbody__commit_fn commit;       /* NULL: nothing to do */
    nbody__schedule_fn schedule;   /* NULL: the step is dt_next, clipped at t_limit (the
                                      controller's); else the method's scheduler picks it */
};

/* CPU engines keep the masses and their scratch in this */
typedef struct nbody__cpu {
    nbody_real *m;
    nbody_simd simd;               /* the SIMD level, chosen at init (nbody__simd_choose) */
    void *tree;                    /* NBODY_ENGINE_TREE: the kd-tree workspace */
    size_t *targets;               /* NBODY_ENGINE_TREE on a slice: its bodies in leaf order */
    double *hermite_part;          /* BLOCK's NBODY_HERMITE: each task's sums, and their count */
    size_t hermite_cap;
    nbody_real *hermite_keep;      /* BLOCK's hermite_step: what the last step's active bodies'
                                      18 values were before it (the undo), and its count */
    size_t keep_cap;
    size_t *slot;                  /* TREE's block steps: each body's place in the active list
                                      (NBODY__TREE_NONE when not active), then the walk order (2n) */
    const struct nbody__forces *given;   /* nbody_accelerations: the caller's arrays, which the
                                      derivative reads and writes in place of its y and f */
} nbody__cpu;

/* BLOCK's desc.block_size: 0 (automatic) or a multiple of NBODY__BLOCK_SIZE_STEP (a whole
   number of tiles at every SIMD level: 8 to 32 bodies) in [STEP, NBODY__BLOCK_SIZE_MAX] */
#define NBODY__BLOCK_SIZE_STEP 32
#define NBODY__BLOCK_SIZE_MAX 16384

/* defined below in >>simulation */
static int nbody__progress(nbody_sim *s, int accepted);
static nbody_result nbody__step_to(nbody_sim *s, nbody_real t_limit);

/* defined below in >>solvers */
static nbody_result nbody__erk_step(nbody_sim *s, const nbody__tableau *T, nbody_real h, nbody_real *err);
static nbody_result nbody__attempt_erk(nbody_sim *s, nbody_real h, nbody_real *err);
static void nbody__swap(nbody__buf *a, nbody__buf *b);
static void nbody__commit_erk(nbody_sim *s, nbody_real h);
static nbody_result nbody__attempt_leapfrog(nbody_sim *s, nbody_real h, nbody_real *err);
static void nbody__commit_leapfrog(nbody_sim *s, nbody_real h);
static void nbody__commit_invalidate(nbody_sim *s, nbody_real h);
static nbody_result nbody__attempt_irk(nbody_sim *s, nbody_real h, nbody_real *err);
static nbody_result nbody__attempt_gauss(nbody_sim *s, nbody_real h, nbody_real *err);
static nbody_result nbody__attempt_adams(nbody_sim *s, nbody_real h, nbody_real *err);
static void nbody__commit_adams(nbody_sim *s, nbody_real h);
static nbody_result nbody__attempt_bs(nbody_sim *s, nbody_real H, nbody_real *err);
static nbody_real nbody__bs_proposal(const nbody_sim *s);

/* defined below in >>radau */
static nbody_result nbody__attempt_radau(nbody_sim *s, nbody_real h, nbody_real *err);
static void nbody__commit_radau(nbody_sim *s, nbody_real h);
static nbody_real nbody__radau_proposal(const nbody_sim *s);
static void nbody__radau_setup(nbody__radau_consts *K);

/* defined below in >>whfast */
static int nbody__whfast_dominant(const nbody_desc *d, const nbody_real *m, size_t n);
static int nbody__coincident(const nbody_desc *d, const nbody_real *x, const nbody_real *y, const nbody_real *z, size_t n);
static nbody_result nbody__whfast_sync(nbody_sim *s, nbody_real *Y);
static void nbody__whfast_close(nbody_sim *s);
static nbody_result nbody__attempt_whfast(nbody_sim *s, nbody_real h, nbody_real *err);
static void nbody__commit_whfast(nbody_sim *s, nbody_real h);

/* defined below in >>hermite */
static nbody_result nbody__schedule_hermite(nbody_sim *s, nbody_real t_limit, nbody_real *h, nbody_real *t_new);
static nbody_result nbody__attempt_hermite(nbody_sim *s, nbody_real h, nbody_real *err);
static void nbody__commit_hermite(nbody_sim *s, nbody_real h);
static nbody_result nbody__hermite_create(nbody_sim *s);
static void nbody__hermite_destroy(nbody_sim *s);

/* defined below in >>kdk */
static nbody_result nbody__schedule_kdk(nbody_sim *s, nbody_real t_limit, nbody_real *h, nbody_real *t_new);
static nbody_result nbody__attempt_kdk(nbody_sim *s, nbody_real h, nbody_real *err);
static void nbody__commit_kdk(nbody_sim *s, nbody_real h);
static nbody_result nbody__kdk_create(nbody_sim *s);
static void nbody__kdk_destroy(nbody_sim *s);

/* defined below in >>solver_ops */
static nbody_result nbody__derivative(nbody_sim *s, nbody__buf y, nbody__buf f);
static nbody__lincomb nbody__op(nbody__buf out, nbody__buf y, nbody_real h, size_t len);
static nbody_result nbody__first_stage(nbody_sim *s);
static nbody_result nbody__update(nbody_sim *s, nbody_real h, int nk, const nbody_real *c, nbody__buf const *k);

/* defined below in >>engines */
static int nbody__threads(const nbody_desc *d);
static const char *nbody__simd_level_name(nbody_simd level);
static size_t nbody__n_src(const nbody__engine *e);
static nbody_result nbody__cpu_init(nbody__engine *e);
static int nbody__cpu_in_place(nbody__engine *e, const nbody_system *s, nbody_real *ax, nbody_real *ay, nbody_real *az,
                               nbody_result *r);

/* defined below in >>mpi */
static nbody_result nbody__engine_agree(nbody__engine *e, nbody_result r);
static nbody_result nbody__mpi_same(const nbody_desc *desc, const nbody_system *s, nbody_result r);

/* defined below in >>hooks */
static nbody_result nbody__engine_start(nbody__engine *e, const nbody_desc *d, size_t n, const nbody_real *m);
static void nbody__engine_stop(nbody__engine *e);

/* defined below in >>steering */
static nbody_result nbody__stop(nbody_sim *s, nbody_event_kind kind, size_t i, size_t j, nbody_real dist);
static nbody_result nbody__set_radii(nbody_sim *sim, const nbody_real *r);
static nbody_result nbody__archive_flush(nbody_sim *s);
static int nbody__hook(nbody_sim *s, nbody_step_hook_fn fn);
static nbody_result nbody__after_step(nbody_sim *s);

/* ======================================================================================
   >>methods  THE METHOD TABLE: the Butcher tableaux and one row per nbody_method
   nbody_create picks its row; the functions a row names follow in SOLVERS.
   ====================================================================================== */

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

/* ---- Bulirsch-Stoer (Deuflhard 1983; HNW I, II.9, as in ODEX): modified midpoint with
   n_j = 2j substeps, Aitken-Neville extrapolation in (H/n_j)^2, T_jk of order 2k.
   Everything is an increment d = z - y (smaller numbers, and the final update is y + d
   through nbody__update). bs.table: the latest row T_j1..T_jj; bs.entry: the new entry;
   bs.other: the midpoint's other increment.
   Fixed step (tolerance 0): NBODY__BS_FIXED columns, order 8. Adaptive: the ODEX
   convergence tests in columns kopt-1, kopt, kopt+1, then order and step chosen by the work
   per unit step A_k / H_k; the controller uses the step proposed here. */
#define NBODY__BS_FIXED 4

/* one row per nbody_method, in enum order; attempt NULL = not built yet */
static const nbody__method_info nbody__methods[NBODY_METHOD_COUNT_] = {
    {NBODY_METHOD_DEFAULT, 0, 0, 0, NULL, 0, NULL, NULL, NULL, NULL},
    {NBODY_EULER, 1, 0, 1, NULL, 0, &nbody__euler_tab, nbody__attempt_erk, nbody__commit_erk, NULL},
    {NBODY_MIDPOINT, 2, 0, 2, NULL, 0, &nbody__midpoint_tab, nbody__attempt_erk, nbody__commit_erk, NULL},
    {NBODY_LEAPFROG, 2, 0, 2, NBODY__FIELDS(nbody__leapfrog_fields), NULL, nbody__attempt_leapfrog, nbody__commit_leapfrog, NULL},
    {NBODY_TRAPEZE, 2, 0, 3, NBODY__FIELDS(nbody__irk_fields), &nbody__trapeze_tab, nbody__attempt_irk, nbody__commit_invalidate, NULL},
    {NBODY_RK4, 4, 0, 4, NULL, 0, &nbody__rk4_tab, nbody__attempt_erk, nbody__commit_erk, NULL},
    {NBODY_RKCK, 5, 1, 6, NULL, 0, &nbody__rkck_tab, nbody__attempt_erk, nbody__commit_erk, NULL},
    {NBODY_RKDP, 5, 1, 7, NULL, 0, &nbody__rkdp_tab, nbody__attempt_erk, nbody__commit_erk, NULL},
    {NBODY_RKDVERK, 6, 1, 8, NULL, 0, &nbody__dverk_tab, nbody__attempt_erk, nbody__commit_erk, NULL},
    {NBODY_RKF, 8, 1, 13, NULL, 0, &nbody__rkf_tab, nbody__attempt_erk, nbody__commit_erk, NULL},
    {NBODY_RKGL, 6, 0, 4, NBODY__FIELDS(nbody__irk_fields), NULL, nbody__attempt_gauss, nbody__commit_invalidate, NULL},
    {NBODY_RKLC, 4, 1, 4, NBODY__FIELDS(nbody__irk_fields), &nbody__lobatto_tab, nbody__attempt_irk, nbody__commit_invalidate, NULL},
    {NBODY_ADAMS, 5, 0, 6, NBODY__FIELDS(nbody__adams_fields), NULL, nbody__attempt_adams, nbody__commit_adams, NULL},
    {NBODY_BS, 2 * NBODY__BS_FIXED, 1, 2, NBODY__FIELDS(nbody__bs_fields), NULL, nbody__attempt_bs, nbody__commit_invalidate, NULL},
    {NBODY_RADAU, 15, 1, 2, NBODY__FIELDS(nbody__radau_fields), NULL, nbody__attempt_radau, nbody__commit_radau, NULL},
    {NBODY_WHFAST, 2, 0, 1, NBODY__FIELDS(nbody__whfast_fields), NULL, nbody__attempt_whfast, nbody__commit_whfast, NULL},
    {NBODY_HERMITE, 4, 0, 0, NBODY__FIELDS(nbody__hermite_fields), NULL, nbody__attempt_hermite, nbody__commit_hermite,
     nbody__schedule_hermite}};

/* NBODY_LEAPFROG with NBODY_STEPPING_BLOCK: its own state and steps (>>kdk) */
static const nbody__method_info nbody__kdk_row = {NBODY_LEAPFROG, 2, 0, 0, NBODY__FIELDS(nbody__kdk_fields), NULL,
                                                  nbody__attempt_kdk, nbody__commit_kdk, nbody__schedule_kdk};

/* the row that runs method m (valid) with the resolved stepping */
static const nbody__method_info *nbody__method_row(nbody_method m, nbody_stepping stepping) {
    return m == NBODY_LEAPFROG && stepping == NBODY_STEPPING_BLOCK ? &nbody__kdk_row : &nbody__methods[m];
}

NBODY__DEF int nbody_method_order(nbody_method m, int adams_order) {
    if ((int)m < 0 || m >= NBODY_METHOD_COUNT_) return 0;
    if (m == NBODY_METHOD_DEFAULT) m = NBODY_LEAPFROG;
    if (m == NBODY_ADAMS) return adams_order >= 1 && adams_order <= 5 ? adams_order : 5;
    if (m == NBODY_HERMITE) return adams_order == 6 ? 6 : 4;
    return nbody__methods[m].order;
}

NBODY__DEF int nbody_method_adaptive(nbody_method m) {
    if ((int)m < 0 || m >= NBODY_METHOD_COUNT_) return 0;
    return nbody__methods[m].adaptive;
}

/* ======================================================================================
   >>simulation  SIMULATION: create, step and advance, the step loop, get and set
   nbody_create -> nbody_advance -> nbody__step_steered -> nbody__step_to -> the method's
   attempt (SOLVERS) -> nbody__derivative -> the engine's derivative (ENGINES).
   ====================================================================================== */

/* ---- simulation object ---- */
/* the method state's buffers, through its field list: alloc = 1 allocates them, 0 releases them */
static nbody_result nbody__state_buffers(nbody_sim *s, int alloc) {
    nbody_result r = NBODY_OK;
    int i, j;
    for (i = 0; i < s->method->nfields; ++i) {
        const nbody__field *f = &s->method->fields[i];
        nbody__buf *b = (nbody__buf *)nbody__field_at(s, f);
        if (f->kind == NBODY__FIELD_TICKS) {       /* host arrays of n integers */
            unsigned long long **t = (unsigned long long **)nbody__field_at(s, f);
            for (j = 0; j < f->count && r == NBODY_OK; ++j) {
                if (!alloc) { nbody__free(&s->desc, t[j]); t[j] = NULL; continue; }
                size_t i;
                t[j] = (unsigned long long *)nbody__alloc(&s->desc, nbody__bytes(s->n, sizeof(unsigned long long)));
                if (!t[j]) r = NBODY_ERR_OUT_OF_MEMORY;
                else for (i = 0; i < s->n; ++i) t[j][i] = f->hi < 0 ? i : 0;
            }
            continue;
        }
        if (f->kind != NBODY__FIELD_BUF) continue;
        for (j = 0; j < f->count && r == NBODY_OK; ++j) {
            if (alloc) r = s->eng.ops->alloc(&s->eng, s->len, &b[j]);
            else s->eng.ops->release(&s->eng, b[j]);
        }
    }
    return r;
}

/* the state was replaced (nbody_set_state): the method's past buffers no longer belong to it */
static void nbody__state_forget_history(nbody_sim *s) {
    int i;
    for (i = 0; i < s->method->nfields; ++i)
        if (s->method->fields[i].history) *(int *)nbody__field_at(s, &s->method->fields[i]) = 0;
}

/* the method's scalars from another simulation of the same method, but its history counts
   (to's buffers are new) */
static void nbody__state_copy_scalars(nbody_sim *to, nbody_sim *from) {
    int i;
    for (i = 0; i < to->method->nfields; ++i) {
        const nbody__field *f = &to->method->fields[i];
        size_t size = f->kind == NBODY__FIELD_INT ? sizeof(int) : f->kind == NBODY__FIELD_U64 ? sizeof(unsigned long long)
                                                                                              : sizeof(nbody_real);
        if (f->kind == NBODY__FIELD_BUF || f->kind == NBODY__FIELD_TICKS || f->history) continue;
        memcpy(nbody__field_at(to, f), nbody__field_at(from, f), (size_t)f->count * size);
    }
}

static void nbody__release_buffers(nbody_sim *s) {
    int i;
    if (!s->eng.ops) return;
    s->eng.ops->release(&s->eng, s->y); s->eng.ops->release(&s->eng, s->y_new);
    s->eng.ops->release(&s->eng, s->ytmp);
    s->eng.ops->release(&s->eng, s->comp); s->eng.ops->release(&s->eng, s->comp_new);
    for (i = 0; i < NBODY__MAX_TERMS; ++i) s->eng.ops->release(&s->eng, s->k[i]);
    (void)nbody__state_buffers(s, 0);
}

/* ---- the busy flag: one call at a time on a simulation ----
   A public call takes the flag from IDLE to BUSY (atomic compare-exchange) and gives it back;
   while a hook runs it reads IN_HOOK, and the calls a hook may make (hook_ok: reading and
   replacing the state, radii, checkpoints) take it from IN_HOOK to IN_HOOK + 1, from the
   hook's own thread only (sim->hook_thread). Anything else finds it taken: NBODY_ERR_BUSY and
   a log line, nothing done. Returns the value to restore with nbody__leave, or -1 when busy. */
#define NBODY__IDLE 0
#define NBODY__BUSY 1
#define NBODY__IN_HOOK 2

/* A tag of the calling thread: the address of a thread-local byte, distinct for every live
   thread wherever NBODY__THREAD_LOCAL is thread-local (C11 <threads.h> and pthread_self are
   not everywhere; TLS is). Where it is not, every thread has the same tag, and a call from
   another thread during a hook gets through as from the hook. Another thread never reads its
   own tag in hook_thread: a thread's last store there was NULL (at its own hook's end). */
static NBODY__THREAD_LOCAL char nbody__thread_byte;
static const void *nbody__thread_tag(void) { return &nbody__thread_byte; }

static long nbody__enter(const nbody_sim *sim, const char *call, int hook_ok) {
    nbody_sim *s = (nbody_sim *)sim;   /* the flag is the one thing a const call changes */
    if (nbody__flag_cas(&s->busy, NBODY__IDLE, NBODY__BUSY)) return NBODY__IDLE;
    if (hook_ok && nbody__ptr_load(&s->hook_thread) == nbody__thread_tag() &&
        nbody__flag_cas(&s->busy, NBODY__IN_HOOK, NBODY__IN_HOOK + 1))
        return NBODY__IN_HOOK;
    nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: %s refused: the simulation is inside another call (on another thread, "
               "or this is a call from its own hook that a hook may not make)", call);
    return -1;
}
static void nbody__leave(const nbody_sim *sim, long restore) { nbody__flag_set(&((nbody_sim *)sim)->busy, restore); }

static void nbody__steer_free(nbody_sim *s);

/* nbody_destroy while the simulation is busy (from its own hook, or during a call on another
   thread) would free what the running call uses: it logs and does nothing (the call returns
   void, so the log line is the only answer); destroy it after the call returns. */
NBODY__DEF void nbody_destroy(nbody_sim *sim) {
    nbody_desc d;
    if (!sim) return;
    if (nbody__enter(sim, "nbody_destroy", 0) < 0) return;
    (void)nbody__archive_flush(sim);                 /* a failure is logged: destroy has no result */
    nbody__steer_free(sim);
    d = sim->desc;
    nbody__release_buffers(sim);
    nbody__engine_stop(&sim->eng);
    nbody__free(&d, sim->m);
    nbody__free(&d, sim->radau.host);
    if (sim->method == &nbody__kdk_row) nbody__kdk_destroy(sim);
    else nbody__hermite_destroy(sim);
    nbody__free(&d, sim);
}

/* upload a host system into a 6n state buffer y of engine e (n already checked) */
static nbody_result nbody__upload_system(nbody__engine *e, nbody__buf y, const nbody_system *in) {
    const nbody_real *f[6];
    nbody_result r = NBODY_OK;
    int i;
    f[0] = in->x; f[1] = in->y; f[2] = in->z; f[3] = in->vx; f[4] = in->vy; f[5] = in->vz;
    for (i = 0; i < 6 && r == NBODY_OK; ++i) r = e->ops->upload(e, y, (size_t)i * in->n, f[i], in->n);
    return r;
}

static nbody_result nbody__upload_state(nbody_sim *s, const nbody_system *in) {
    return nbody__upload_system(&s->eng, s->y, in);
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
    if (r == NBODY_OK) r = nbody__state_buffers(s, 1);
    return r;
}

/* The CPU tree's median relative force error (docs/tree.md, Plummer sphere N = 20000):
   6.4e-3 (theta / 0.5)^2.5 with monopoles, 1.7e-3 (theta / 0.5)^3.5 with quadrupoles. */
static double nbody__tree_error_at_half(int quad) { return quad ? 1.7e-3 : 6.4e-3; }
static double nbody__tree_error_power(int quad) { return quad ? 3.5 : 2.5; }

/* The tree's force jumps (by about its force error) whenever a node opens as bodies move; an
   error estimate sees each jump, and a tolerance far below it makes the step control chase
   them with tiny, often rejected steps. Measured on the galaxy pair (bench/bench_tolerance.c,
   bench/results/tolerance-tree.md): steps stay near the direct engine's while the tolerance is
   at least NBODY__TREE_TOL_RATIO times the force error. */
#define NBODY__TREE_TOL_RATIO 1e-3
/* Any adaptive method on a tree engine gets a warning at create: the force is not smooth
   (RADAU at its default tolerance stopped with STEP_TOO_SMALL after seconds at n = 100..3000);
   a tolerance below the force error's reach gets the measured bound. */
static void nbody__warn_tolerance(const nbody_desc *d, const nbody__method_info *m) {
    int quad = (d->engine == NBODY_ENGINE_TREE || d->engine == NBODY_ENGINE_CUDA_TREE) && d->quadrupole;
    double e_half = nbody__tree_error_at_half(quad), p = nbody__tree_error_power(quad);
    double err = e_half * pow((double)d->theta / 0.5, p), least = NBODY__TREE_TOL_RATIO * err;
    int adaptive = m->id == NBODY_RADAU ? d->radau_control != NBODY_RADAU_FIXED : m->adaptive && d->tolerance > 0;
    if (!adaptive) return;
    if (d->engine != NBODY_ENGINE_TREE && d->engine != NBODY_ENGINE_CUDA_TREE && d->engine != NBODY_ENGINE_OPENCL_TREE)
        return;
    if (d->tolerance <= 0 || (double)d->tolerance >= least) {
        nbody__log(d, NBODY_LOG_WARNING, "nbody: %s is adaptive, and the %s engine's force jumps (by about %.1e) as tree "
                   "nodes open: the step control may shrink the step until it fails with NBODY_ERR_STEP_TOO_SMALL; for "
                   "long runs prefer a fixed-step method (leapfrog), a softening, or a direct engine (block)",
                   nbody_method_name(m->id), nbody_engine_name(d->engine), err);
        return;
    }
    nbody__log(d, NBODY_LOG_WARNING,
               "nbody: tolerance %g is below what the %s engine's force error allows (median relative error about "
               "%.1e at theta %g%s): the step control would chase the error's jumps with tiny, often rejected steps; "
               "use a tolerance of at least %.1e, or theta <= %.2g for this tolerance, or a direct engine (block)",
               (double)d->tolerance, nbody_engine_name(d->engine), err, (double)d->theta, quad ? " with quadrupoles" : "",
               least, 0.5 * pow((double)d->tolerance / (NBODY__TREE_TOL_RATIO * e_half), 1 / p));
}

/* what a method needs of the engine and the bodies, the desc's defaults resolved */
static nbody_result nbody__method_check(const nbody_desc *d, const nbody_system *initial) {
    if (d->extra_force && !d->extra_force_velocity_free && (d->method == NBODY_LEAPFROG || d->method == NBODY_WHFAST)) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: %s needs velocity-free forces: set extra_force_velocity_free "
                   "when extra_force ignores velocities, or choose another method", nbody_method_name(d->method));
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if (d->method == NBODY_WHFAST) {
        if (d->engine != NBODY_ENGINE_SIMPLE && d->engine != NBODY_ENGINE_OPENMP && d->engine != NBODY_ENGINE_BLOCK &&
            d->engine != NBODY_ENGINE_TREE) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: whfast runs on the CPU engines (simple, openmp, block, tree), not on %s",
                       nbody_engine_name(d->engine));
            return NBODY_ERR_UNAVAILABLE;
        }
        if (d->mpi_comm) {         /* its drifts and kicks read the whole state in one process's memory */
            nbody__log(d, NBODY_LOG_ERROR, "nbody: whfast refuses mpi_comm (its Kepler drifts run on the whole state in one "
                       "process)");
            return NBODY_ERR_UNAVAILABLE;
        }
        if (d->whfast_corrector && d->whfast_coordinates != NBODY_WHFAST_JACOBI) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.whfast_corrector = %d needs Jacobi coordinates", d->whfast_corrector);
            return NBODY_ERR_INVALID_ARGUMENT;
        }
        if (initial && !nbody__whfast_dominant(d, initial->m, initial->n)) return NBODY_ERR_INVALID_ARGUMENT;
        if (initial && nbody__coincident(d, initial->x, initial->y, initial->z, initial->n)) return NBODY_ERR_INVALID_ARGUMENT;
    }
    if (d->stepping == NBODY_STEPPING_BLOCK && d->method != NBODY_HERMITE && d->method != NBODY_LEAPFROG) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.stepping = block (individual power-of-two steps) needs method hermite, "
                   "or leapfrog on a tree engine; %s takes one shared step for all bodies", nbody_method_name(d->method));
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if (d->stepping == NBODY_STEPPING_BLOCK && d->method == NBODY_LEAPFROG) {
        if (d->engine != NBODY_ENGINE_TREE && d->engine != NBODY_ENGINE_CUDA_TREE && d->engine != NBODY_ENGINE_OPENCL_TREE) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.stepping = block with leapfrog runs on the tree engines (tree, "
                       "cuda_tree, opencl_tree), not on %s (hermite gives block steps on the direct engines)",
                       nbody_engine_name(d->engine));
            return NBODY_ERR_UNAVAILABLE;
        }
        if (!(d->softening > 0)) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.stepping = block with leapfrog needs desc.softening > 0 (its step "
                       "criterion is sqrt(2 timestep_eta softening / |a|)); softening is %g", (double)d->softening);
            return NBODY_ERR_INVALID_ARGUMENT;
        }
        if (d->extra_force || d->mpi_comm) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.stepping = block with leapfrog refuses %s", d->extra_force
                       ? "extra_force (the callback gives forces on every body, the block steps need them on the active ones)"
                       : "mpi_comm (its block steps run in one process)");
            return NBODY_ERR_UNAVAILABLE;
        }
    }
    if (d->method == NBODY_HERMITE) {
        if (d->order != 4 && d->order != 6) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.order = %d refused for hermite: 0 or 4 (fourth order) or 6 (sixth)",
                       d->order);
            return NBODY_ERR_INVALID_ARGUMENT;
        }
        if (d->order == 6 && sizeof(nbody_real) < sizeof(double)) {
            /* its criterion takes the 4th and 5th derivatives of the forces from differences of
               accelerations: in float they are rounding noise, and the steps shrink without end */
            nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.order = 6 refused for hermite with NBODY_REAL of %d bytes: the "
                       "sixth order needs double precision (use order 4)", (int)sizeof(nbody_real));
            return NBODY_ERR_INVALID_ARGUMENT;
        }
        if (d->engine != NBODY_ENGINE_SIMPLE && d->engine != NBODY_ENGINE_OPENMP && d->engine != NBODY_ENGINE_BLOCK &&
            d->engine != NBODY_ENGINE_CUDA && d->engine != NBODY_ENGINE_OPENCL) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: hermite runs on the direct engines (simple, openmp, block, cuda, opencl), "
                       "not on %s (it needs exact jerks)", nbody_engine_name(d->engine));
            return NBODY_ERR_UNAVAILABLE;
        }
        if (d->extra_force) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: hermite refuses extra_force (its corrector needs the jerk of every force, "
                       "which the callback does not give)");
            return NBODY_ERR_UNAVAILABLE;
        }
        if (d->mpi_comm && d->engine != NBODY_ENGINE_SIMPLE && d->engine != NBODY_ENGINE_OPENMP && d->engine != NBODY_ENGINE_BLOCK) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: hermite with mpi_comm runs on the CPU engines (simple, openmp, block), not "
                       "on %s (several GPUs: desc.devices in one process)", nbody_engine_name(d->engine));
            return NBODY_ERR_UNAVAILABLE;
        }
    }
    if (!nbody__methods[d->method].attempt) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: method '%s' is not built yet", nbody_method_name(d->method));
        return NBODY_ERR_UNAVAILABLE;
    }
    if (initial && d->n_active > initial->n) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.n_active = %lu is above n = %lu", (unsigned long)d->n_active,
                   (unsigned long)initial->n);
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_desc_check(const nbody_desc *desc, const nbody_system *initial) {
    nbody_desc d;
    if (!desc) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_desc_check: desc is NULL");
    if (!nbody__desc_valid(desc)) return NBODY_ERR_INVALID_ARGUMENT;
    if (initial && !nbody__system_checked(desc, initial)) return NBODY_ERR_INVALID_ARGUMENT;
    d = nbody__desc_defaults(desc);
    return nbody__method_check(&d, initial);
}

NBODY__DEF nbody_result nbody_interval_check(const nbody_desc *desc, nbody_real t_start, nbody_real t_end,
                                             nbody_real every, const char *what) {
    nbody_real span = NBODY__FABS(t_start) > NBODY__FABS(t_end) ? NBODY__FABS(t_start) : NBODY__FABS(t_end);
    const char *name = what ? what : "interval";
    if (!nbody__isfinite(t_start) || !nbody__isfinite(t_end) || t_end < t_start) {
        nbody__log(desc, NBODY_LOG_ERROR, "nbody: %s: the run from t = %g to %g is not a finite forward interval", name,
                   (double)t_start, (double)t_end);
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if (!nbody__isfinite(every) || !(every > 0)) {
        nbody__log(desc, NBODY_LOG_ERROR, "nbody: %s = %g must be finite and > 0", name, (double)every);
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if (every <= 4 * nbody__eps() * span) {
        nbody__log(desc, NBODY_LOG_ERROR, "nbody: %s = %g is below what NBODY_REAL (%d bytes) resolves at t = %g: use at "
                   "least %g", name, (double)every, (int)sizeof(nbody_real), (double)span, (double)(8 * nbody__eps() * span));
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if ((double)(t_end - t_start) / (double)every > (double)NBODY_MAX_OUTPUTS) {
        nbody__log(desc, NBODY_LOG_ERROR, "nbody: %s = %g would write %.3g outputs from t = %g to %g, more than "
                   "NBODY_MAX_OUTPUTS (%lu)", name, (double)every, (double)(t_end - t_start) / (double)every,
                   (double)t_start, (double)t_end, (unsigned long)NBODY_MAX_OUTPUTS);
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_create(nbody_sim **out, const nbody_desc *desc, const nbody_system *initial) {
    nbody_desc d;
    nbody_sim *s;
    nbody_result r;
    if (!out || !desc) return nbody__fail(desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_create: %s is NULL", !out ? "out" : "desc");
    if (!initial) {
        nbody__log(desc, NBODY_LOG_ERROR, "nbody: nbody_create needs the initial bodies (initial is NULL)");
        r = NBODY_ERR_INVALID_ARGUMENT;
    } else {
        r = nbody_desc_check(desc, initial);
    }
    if ((r = nbody__mpi_same(desc, initial, r)) != NBODY_OK) return r;   /* with mpi_comm: all ranks alike */
    d = nbody__desc_defaults(desc);
    nbody__warn_tolerance(&d, &nbody__methods[d.method]);
    s = (nbody_sim *)nbody__alloc(&d, sizeof *s);
    if (!s) return NBODY_ERR_OUT_OF_MEMORY;
    memset(s, 0, sizeof *s);
    s->desc = d;
    s->method = nbody__method_row(d.method, d.stepping);
    s->n = initial->n;
    s->len = 6 * initial->n;
    s->nk = s->method->nk;
    s->t = initial->t;
    s->dt_next = d.dt;
    s->m = (nbody_real *)nbody__alloc(&d, nbody__bytes(s->n, sizeof(nbody_real)));
    if (!s->m) { nbody__free(&d, s); return NBODY_ERR_OUT_OF_MEMORY; }
    memcpy(s->m, initial->m, s->n * sizeof(nbody_real));
    r = nbody__engine_start(&s->eng, &d, s->n, s->m);
    if (r == NBODY_OK && d.method == NBODY_RADAU) {
        s->radau.host = (nbody_real *)nbody__alloc(&d, nbody__bytes(s->len, 4 * sizeof(nbody_real)));
        if (!s->radau.host) r = NBODY_ERR_OUT_OF_MEMORY;
        nbody__radau_setup(&s->radau.K);
    }
    if (r == NBODY_OK && d.method == NBODY_HERMITE) r = nbody__hermite_create(s);
    if (r == NBODY_OK && s->method == &nbody__kdk_row) {
        if (!s->eng.ops->active_forces || !s->eng.ops->kick) {
            nbody__log(&d, NBODY_LOG_ERROR, "nbody: desc.stepping = block with leapfrog: the %s engine%s has no block steps",
                       nbody_engine_name(d.engine), d.devices > 1 ? " on several devices" : "");
            r = NBODY_ERR_UNAVAILABLE;
        }
        if (r == NBODY_OK) r = nbody__kdk_create(s);
    }
    if (r == NBODY_OK) r = nbody__alloc_buffers(s);
    if (r == NBODY_OK) r = nbody__upload_state(s, initial);
    if (s->eng.ops) r = nbody__engine_agree(&s->eng, r);
    if (r != NBODY_OK) { nbody_destroy(s); return r; }
    s->stats.t = s->t;
    s->stats.dt = 0;
    *out = s;
    return NBODY_OK;
}

static nbody_result nbody__step_steered(nbody_sim *s, nbody_real t_limit);

NBODY__DEF nbody_result nbody_step(nbody_sim *sim) {
    nbody_result r;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_step: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_step", 0)) < 0) return NBODY_ERR_BUSY;
    r = nbody__step_steered(sim, (nbody_real)HUGE_VAL);
    nbody__leave(sim, e);
    return r;
}

static nbody_result nbody__advance(nbody_sim *sim, nbody_real t_end);

NBODY__DEF nbody_result nbody_advance(nbody_sim *sim, nbody_real t_end) {
    nbody_result r;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_advance: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_advance", 0)) < 0) return NBODY_ERR_BUSY;
    if (!nbody__isfinite(t_end) || t_end < sim->t) {
        nbody__log(&sim->desc, NBODY_LOG_ERROR, "nbody: nbody_advance to t_end = %g: %s t = %g", (double)t_end,
                   nbody__isfinite(t_end) ? "before the simulation's" : "not finite; the simulation is at", (double)sim->t);
        r = NBODY_ERR_INVALID_ARGUMENT;
    } else {
        r = nbody__advance(sim, t_end);
    }
    nbody__leave(sim, e);
    return r;
}

static nbody_result nbody__advance(nbody_sim *sim, nbody_real t_end) {
    nbody_result r = NBODY_OK;
    int unobserved;
    if (sim->desc.progress.func) {
        sim->progress.active = 1;
        sim->progress.t_start = sim->t;
        sim->progress.t_end = t_end;
        sim->progress.wall0 = sim->progress.last = nbody__wall_seconds();
    }
    /* WHFast: synchronize only where the state is read (see its section) */
    /* nothing watches the steps in between: WHFast synchronises, Hermite's engine steps, only at the end */
    unobserved = !sim->desc.before_step && !sim->desc.after_step && !sim->desc.progress.func && !sim->steer.archive &&
                 sim->desc.collision == NBODY_COLLISION_NONE && !(sim->desc.stop_distance > 0) && !(sim->desc.escape_distance > 0);
    sim->whfast.defer = sim->method->id == NBODY_WHFAST && unobserved && !(sim->desc.extra_force && sim->desc.whfast_corrector);
    sim->hermite.run = sim->method->id == NBODY_HERMITE && unobserved;
    sim->kdk.run = sim->method == &nbody__kdk_row && unobserved;
    sim->whfast.t_limit = t_end;
    while (r == NBODY_OK && sim->t < t_end) {
        r = nbody__step_steered(sim, t_end);
        if (r == NBODY_OK && nbody__progress(sim, 1)) r = NBODY_ERR_CANCELLED;
    }
    sim->whfast.defer = 0;
    sim->hermite.run = 0;
    sim->kdk.run = 0;
    if (sim->whfast.deferred) {                        /* stopped early: y synchronized, if it can be */
        int finite = 0;
        nbody_result q;
        if (!sim->whfast.live) {                       /* a failed deferred attempt: the accepted state is in copy */
            memcpy(sim->whfast.canonical, sim->whfast.copy, sim->len * sizeof(nbody_real));
            sim->whfast.live = 1;
        }
        nbody__whfast_close(sim);
        q = nbody__whfast_sync(sim, (nbody_real *)sim->y_new);
        if (q == NBODY_OK) q = sim->eng.ops->all_finite(&sim->eng, sim->y_new, 0, sim->len, &finite);
        if (q == NBODY_OK && finite) nbody__swap(&sim->y, &sim->y_new);
        sim->whfast.deferred = 0;
    }
    sim->progress.active = 0;
    return r;
}

static nbody_result nbody__step_steered(nbody_sim *s, nbody_real t_limit) {
    nbody_result r;
    if ((r = nbody__archive_flush(s)) != NBODY_OK) return r;   /* the record due after the last step */
    if (s->desc.before_step) {
        if (nbody__hook(s, s->desc.before_step)) return nbody__stop(s, NBODY_EVENT_HOOK, 0, 0, 0);
        if (!(s->t < t_limit)) return NBODY_OK;      /* the hook moved the time past the limit */
    }
    r = nbody__step_to(s, t_limit);
    return r == NBODY_OK ? nbody__after_step(s) : r;
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
    if (s->method->id == NBODY_RADAU) return nbody__radau_proposal(s);
    if (q < 1) q = 1;
    if (!(err == err)) return h * NBODY__SHRINK;                  /* NaN: shrink hard */
    if (err <= 0) return h * NBODY__GROW;
    f = NBODY__SAFETY * NBODY__POW(err, -(nbody_real)1 / (nbody_real)(q + 1));
    if (f > NBODY__GROW) f = NBODY__GROW;
    if (f < NBODY__SHRINK) f = NBODY__SHRINK;
    return h * f;
}

static int nbody__adaptive(const nbody_sim *s) {
    if (s->method->id == NBODY_RADAU) return s->desc.radau_control != NBODY_RADAU_FIXED;   /* tolerance 0 = 1e-9 */
    return s->method->adaptive && s->desc.tolerance > 0;
}

/* ---- progress (desc.progress) ---- */
/* the wall clock: nbody__wall_seconds (>>portability) */

/* Calls desc.progress.func, inside nbody_advance, after an accepted step (accepted = 1) or a
   rejected one, as its interval says; 1 = cancel. */
static int nbody__progress(nbody_sim *s, int accepted) {
    nbody_progress_info info;
    double now;
    if (!s->progress.active || !s->desc.progress.func) return 0;
    if (s->desc.progress.interval <= 0 && !accepted) return 0;      /* every accepted step */
    now = nbody__wall_seconds();
    if (s->desc.progress.interval > 0 && now - s->progress.last < s->desc.progress.interval) return 0;
    s->progress.last = now;
    info.t = s->t;
    info.t_start = s->progress.t_start;
    info.t_end = s->progress.t_end;
    info.dt = s->stats.dt;
    info.steps = s->stats.steps;
    info.rejected = s->stats.rejected;
    info.elapsed = now - s->progress.wall0;
    return s->desc.progress.func(&info, s->desc.progress.user_data) != 0;
}

/* A NaN error estimate: when the forces at the step's start are already NaN or Inf (two
   bodies at one point without softening), shrinking the step cannot help; NOT_FINITE then,
   at once, instead of shrinking to a step of 0 (ytmp is the stage scratch, free here). */
static nbody_result nbody__start_forces_finite(nbody_sim *s) {
    int finite = 0;
    nbody_result r;
    s->t_stage = s->t;
    r = nbody__derivative(s, s->y, s->ytmp);
    if (r == NBODY_OK) r = s->eng.ops->all_finite(&s->eng, s->ytmp, 0, s->len, &finite);
    if (r != NBODY_OK || finite) return r;
    nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: the forces at t = %g are NaN or Inf (bodies at one point without "
               "softening?): no step size can help", (double)s->t);
    return NBODY_ERR_NOT_FINITE;
}

/* Take one accepted step, never past t_limit (pass +Inf for none). The state is committed
   only when the step succeeds and is finite: on any error y, t and history are unchanged. */
static nbody_result nbody__step_to(nbody_sim *s, nbody_real t_limit) {
    nbody_real h = s->dt_next, remaining = t_limit - s->t, err = 0, t_new = 0;
    int clipped = 0, rejected = 0, finite = 0;
    nbody_result r;
    if (s->method->schedule) {         /* the block scheduler: a block time, or t_limit exactly */
        if ((r = s->method->schedule(s, t_limit, &h, &t_new)) != NBODY_OK) return r;
        clipped = t_new == t_limit;
    } else {
        if (s->desc.dt_max > 0 && h > s->desc.dt_max) h = s->desc.dt_max;
        if (h >= remaining || remaining - h < h * (nbody_real)1e-8) { h = remaining; clipped = 1; }
        t_new = clipped ? t_limit : s->t + h;
    }
    /* a step that t + h cannot resolve (below half an ulp of t in NBODY_REAL) would leave t
       where it is, and nbody_advance would loop forever */
    if (!clipped && !(t_new > s->t)) {
        nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: step size %g does not change t = %g in this precision",
                   (double)h, (double)s->t);
        return NBODY_ERR_STEP_TOO_SMALL;
    }
    for (;;) {
        nbody_real h_old = h;
        r = s->method->attempt(s, h, &err);
        if (r != NBODY_OK) return r;
        if (!nbody__adaptive(s) || err <= 1) break;
        if (!(err == err) && (r = nbody__start_forces_finite(s)) != NBODY_OK) return r;   /* no step size helps */
        s->stats.rejected++;
        rejected = 1;
        h = nbody__controller(s, h, err);
        if (!(h < h_old)) h = h_old * NBODY__SHRINK;   /* every rejection shrinks: the loop ends */
        clipped = 0;
        t_new = s->t + h;
        if (h <= s->desc.dt_min || h <= NBODY__FABS(s->t) * 4 * nbody__eps() || !(h > 0)) {
            nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: step size %g fell below %s at t = %g: the forces change faster "
                       "than the step control can follow; a softening (close encounters), a fixed-step method such as "
                       "leapfrog (tree engines), or a smaller desc.dt_min may help", (double)h,
                       h <= s->desc.dt_min ? "desc.dt_min" : "what t resolves", (double)s->t);
            return NBODY_ERR_STEP_TOO_SMALL;
        }
        if (nbody__progress(s, 0)) return NBODY_ERR_CANCELLED;
    }
    /* The block steps check what they compute themselves (Hermite each body it corrects, the
       others only predicted; the tree leapfrog its forces, NaN when a drifted position is not):
       a scan of all n bodies would cost more than a block step with few active (a launch and a
       wait on a GPU) */
    if (!s->method->schedule && (r = s->eng.ops->all_finite(&s->eng, s->y_new, 0, s->len, &finite)) != NBODY_OK) return r;
    if (!s->method->schedule && !finite) {
        nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: state became NaN/Inf in the step from t = %g", (double)s->t);
        return NBODY_ERR_NOT_FINITE;
    }
    nbody__swap(&s->y, &s->y_new);
    if (s->comp) nbody__swap(&s->comp, &s->comp_new);
    s->t = t_new;
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

static nbody_result nbody__get_state(const nbody_sim *sim, nbody_system *out) {
    nbody_real *f[6];
    nbody_result r = NBODY_OK;
    int i;
    if (!out || !out->x || !out->y || !out->z || !out->vx || !out->vy || !out->vz || !out->m)
        return nbody__fail(&sim->desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_get_state: out is %s", !out ? "NULL" :
                           "missing an array (allocate it with nbody_system_alloc(out, nbody_get_n(sim)))");
    if (out->n != sim->n)
        return nbody__fail(&sim->desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_get_state: out has n = %lu, the simulation "
                           "%lu bodies", (unsigned long)out->n, (unsigned long)sim->n);
    f[0] = out->x; f[1] = out->y; f[2] = out->z; f[3] = out->vx; f[4] = out->vy; f[5] = out->vz;
    for (i = 0; i < 6 && r == NBODY_OK; ++i)
        r = sim->eng.ops->download((nbody__engine *)&sim->eng, f[i], sim->y, (size_t)i * sim->n, sim->n);
    if (r != NBODY_OK) return r;
    memcpy(out->m, sim->m, sim->n * sizeof(nbody_real));
    out->t = sim->t;
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_get_state(const nbody_sim *sim, nbody_system *out) {
    nbody_result r;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_get_state: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_get_state", 1)) < 0) return NBODY_ERR_BUSY;
    r = nbody__get_state(sim, out);
    nbody__leave(sim, e);
    return r;
}

static nbody_result nbody__resize(nbody_sim *sim, const nbody_system *in);

static nbody_result nbody__set_state(nbody_sim *sim, const nbody_system *in) {
    nbody_result r;
    r = nbody__system_checked(&sim->desc, in) ? NBODY_OK : NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__mpi_same(&sim->desc, in, r)) != NBODY_OK) return r;   /* every rank the same system */
    if (in->n != sim->n) return nbody__resize(sim, in);
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
    nbody__state_forget_history(sim);
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_set_state(nbody_sim *sim, const nbody_system *in) {
    nbody_result r;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_set_state: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_set_state", 1)) < 0) return NBODY_ERR_BUSY;
    r = nbody__archive_flush(sim);                   /* a due record holds the state before */
    if (r == NBODY_OK) r = nbody__set_state(sim, in);
    nbody__leave(sim, e);
    return r;
}

NBODY__DEF const char *nbody_simd_name(const nbody_sim *sim) {
    if (!sim || !sim->eng.ops || sim->eng.ops->init != nbody__cpu_init || !sim->eng.impl) return "none";
    return nbody__simd_level_name(((const nbody__cpu *)sim->eng.impl)->simd);
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
    nbody_result r;
    if (!desc) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_accelerations: desc is NULL");
    r = !(ax && ay && az) ? nbody__fail(desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_accelerations: ax, ay or az is NULL")
        : nbody__desc_valid(desc) && nbody__system_checked(desc, s) ? NBODY_OK : NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__mpi_same(desc, s, r)) != NBODY_OK) return r;
    d = nbody__desc_defaults(desc);
    r = nbody__engine_start(&e, &d, s->n, s->m);
    if (r != NBODY_OK) return r;
    if (nbody__cpu_in_place(&e, s, ax, ay, az, &r)) {   /* a CPU engine: no state buffers */
        nbody__engine_stop(&e);
        return r;
    }
    r = e.ops->alloc(&e, 6 * s->n, &y);
    if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * s->n, &f);
    if (r == NBODY_OK) r = nbody__upload_system(&e, y, s);
    r = nbody__engine_agree(&e, r);
    if (r == NBODY_OK) r = e.ops->derivative(&e, y, f);   /* f = (v, a) */
    if (r == NBODY_OK) r = e.ops->download(&e, ax, f, 3 * s->n, s->n);
    if (r == NBODY_OK) r = e.ops->download(&e, ay, f, 4 * s->n, s->n);
    if (r == NBODY_OK) r = e.ops->download(&e, az, f, 5 * s->n, s->n);
    if (y) e.ops->release(&e, y);
    if (f) e.ops->release(&e, f);
    nbody__engine_stop(&e);
    return r;
}

/* ======================================================================================
   >>solvers  SOLVERS: written once against the engine operations, so every method runs on every
   engine and the state never leaves the device between steps.
   ====================================================================================== */

/* Every method below propagates its higher-order solution; the embedded row only estimates
   the error. Method state: nbody__adams_state, nbody__bs_state (with nbody_sim). */

/* after a step whose last stage is not f(y_new): k[0] must be evaluated again */
static void nbody__commit_invalidate(nbody_sim *s, nbody_real h) { (void)h; s->f_valid = 0; }

/* ---- explicit Runge-Kutta from a Butcher tableau (with an embedded row when present) ---- */

static nbody_result nbody__attempt_erk(nbody_sim *s, nbody_real h, nbody_real *err) {
    return nbody__erk_step(s, s->method->tableau, h, err);
}

static void nbody__swap(nbody__buf *a, nbody__buf *b) { nbody__buf t = *a; *a = *b; *b = t; }

static void nbody__commit_erk(nbody_sim *s, nbody_real h) {
    const nbody__tableau *T = s->method->tableau;
    (void)h;
    if (T->fsal) { nbody__swap(&s->k[0], &s->k[T->stages - 1]); s->f_valid = 1; }
    else s->f_valid = 0;
}
static nbody_result nbody__erk_step(nbody_sim *s, const nbody__tableau *T, nbody_real h, nbody_real *err) {
    nbody_result r = nbody__first_stage(s);
    int i, j;
    for (i = 1; i < T->stages && r == NBODY_OK; ++i) {
        nbody__lincomb op = nbody__op(s->ytmp, s->y, h, s->len);
        for (j = 0; j < i; ++j) {
            nbody_real a = T->a[i * T->stages + j];
            if (a != 0) { op.c[op.nk] = a; op.k[op.nk] = s->k[j]; op.nk++; }
        }
        r = s->eng.ops->lincomb(&s->eng, &op);
        s->t_stage = s->t + T->c[i] * h;
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

/* ---- leapfrog, kick-drift-kick: v+ = v + h/2 a(x); x' = x + h v+; v' = v+ + h/2 a(x').
   Written as one update y' = y + h [v+, (a(x) + a(x'))/2] so the compensated path is shared;
   a(x') is reused as a(x) of the next step (one force evaluation per step). */
static nbody_result nbody__attempt_leapfrog(nbody_sim *s, nbody_real h, nbody_real *err) {
    size_t half = s->len / 2;      /* positions [0, half), velocities [half, len) */
    nbody__buf rate = s->leapfrog.rate;
    nbody__lincomb op;
    nbody_result r = nbody__first_stage(s);
    *err = 0;
    if (r != NBODY_OK) return r;
    op = nbody__op(rate, s->y, h / 2, half);                   /* rate_x = v + h/2 a(x) */
    op.y_off = half; op.nk = 1; op.c[0] = 1; op.k[0] = s->k[0]; op.k_off = half;
    if ((r = s->eng.ops->lincomb(&s->eng, &op)) != NBODY_OK) return r;
    op = nbody__op(s->ytmp, s->y, h, half);                    /* x' = x + h rate_x */
    op.nk = 1; op.c[0] = 1; op.k[0] = rate;
    if ((r = s->eng.ops->lincomb(&s->eng, &op)) != NBODY_OK) return r;
    s->t_stage = s->t + h;
    if ((r = nbody__derivative(s, s->ytmp, s->k[1])) != NBODY_OK) return r;
    op = nbody__op(rate, NULL, 1, half);                       /* rate_v = (a + a')/2 */
    op.out_off = half; op.k_off = half; op.nk = 2; op.c[0] = op.c[1] = (nbody_real)0.5;
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
            s->t_stage = s->t + T->c[i] * h;
            if (r == NBODY_OK) r = nbody__derivative(s, s->ytmp, s->irk.stage);
            if (r == NBODY_OK) r = nbody__scaled_change(s, h, s->irk.stage, s->k[1 + i], tol, &ci);
            nbody__swap(&s->irk.stage, &s->k[1 + i]);
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
   adams.past[0 .. p-2]; adams.history counts how many of them are valid AND spaced by
   adams.spacing. Until p-1 are, a Runge-Kutta step of order p is taken instead (a new dt, a
   clipped last step or nbody_set_state restart the history). */
static const nbody_real nbody__adams_beta[NBODY__ADAMS_MAX_ORDER][NBODY__ADAMS_MAX_ORDER] = {
    {1, 0, 0, 0, 0},
    {NBODY__Q(3, 2), NBODY__Q(-1, 2), 0, 0, 0},
    {NBODY__Q(23, 12), NBODY__Q(-16, 12), NBODY__Q(5, 12), 0, 0},
    {NBODY__Q(55, 24), NBODY__Q(-59, 24), NBODY__Q(37, 24), NBODY__Q(-9, 24), 0},
    {NBODY__Q(1901, 720), NBODY__Q(-2774, 720), NBODY__Q(2616, 720), NBODY__Q(-1274, 720), NBODY__Q(251, 720)}};
static const nbody__tableau *const nbody__adams_start[NBODY__ADAMS_MAX_ORDER] = {
    &nbody__euler_tab, &nbody__midpoint_tab, &nbody__kutta3_tab, &nbody__rk4_tab, &nbody__rkck5_tab};

/* The history is usable for a step h: equal spacing up to 1e-10 relative (a last step clipped
   by accumulated round-off in t keeps it; the constant-step formula then errs by O(1e-10 h^2 f'),
   far below the method's own error). */
static int nbody__adams_spaced(const nbody_sim *s, nbody_real h) {
    nbody_real rel = 64 * nbody__eps() > (nbody_real)1e-10 ? 64 * nbody__eps() : (nbody_real)1e-10;
    return s->adams.history > 0 && NBODY__FABS(h - s->adams.spacing) <= rel * NBODY__FABS(h);
}

static nbody_result nbody__attempt_adams(nbody_sim *s, nbody_real h, nbody_real *err) {
    int p = s->desc.order, j, usable = nbody__adams_spaced(s, h) ? s->adams.history : 0;
    nbody_real beta[NBODY__ADAMS_MAX_ORDER];
    nbody__buf f[NBODY__ADAMS_MAX_ORDER];
    nbody_result r;
    if (usable < p - 1) return nbody__erk_step(s, nbody__adams_start[p - 1], h, err);   /* a Runge-Kutta starter */
    *err = 0;
    if ((r = nbody__first_stage(s)) != NBODY_OK) return r;
    for (j = 0; j < p; ++j) { beta[j] = nbody__adams_beta[p - 1][j]; f[j] = j ? s->adams.past[j - 1] : s->k[0]; }
    return nbody__update(s, h, p, beta, f);
}

/* f_n joins the ring (buffers rotate by pointer: nothing is copied) */
static void nbody__commit_adams(nbody_sim *s, nbody_real h) {
    int p = s->desc.order, j;
    nbody__adams_state *A = &s->adams;
    if (!nbody__adams_spaced(s, h)) A->history = 0;
    A->spacing = h;
    if (p > 1) {
        nbody__buf oldest = A->past[p - 2];
        for (j = p - 2; j > 0; --j) A->past[j] = A->past[j - 1];
        A->past[0] = s->k[0];
        s->k[0] = oldest;
        if (A->history < p - 1) A->history++;
    }
    s->f_valid = 0;
}

/* *out = z_n - y for n midpoint substeps over H (Gragg 1965), no final smoothing: for
   even n its error has an expansion in even powers of H/n. k[0] = f(y) already. */
static nbody_result nbody__bs_midpoint(nbody_sim *s, nbody_real H, int n, nbody__buf *out) {
    nbody_real h = H / (nbody_real)n;
    nbody__buf a = s->bs.other, b = *out, t;
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
        s->t_stage = s->t + (nbody_real)m * h;
        if (r == NBODY_OK) r = nbody__derivative(s, s->ytmp, s->k[1]);
        op = nbody__op(a, a, 2 * h, s->len); op.nk = 1; op.c[0] = 1; op.k[0] = s->k[1];
        if (r == NBODY_OK) r = s->eng.ops->lincomb(&s->eng, &op);
        t = a; a = b; b = t;
    }
    *out = b;
    s->bs.other = a;
    return r;
}

/* row j (1-based) of the extrapolation table: T_j1 from the midpoint rule, then
   T_{j,k+1} = T_jk + (T_jk - T_{j-1,k}) / ((n_j / n_{j-k})^2 - 1); the row replaces the old one */
static nbody_result nbody__bs_row(nbody_sim *s, nbody_real H, int j) {
    nbody__bs_state *S = &s->bs;
    nbody_result r = nbody__bs_midpoint(s, H, 2 * j, &S->entry);
    int k;
    for (k = 1; k < j && r == NBODY_OK; ++k) {
        nbody_real q = (nbody_real)j / (nbody_real)(j - k), inv = 1 / (q * q - 1);
        nbody__lincomb op = nbody__op(S->scratch, S->entry, 1, s->len);
        op.nk = 2; op.c[0] = inv; op.c[1] = -inv; op.k[0] = S->entry; op.k[1] = S->table[k - 1];
        r = s->eng.ops->lincomb(&s->eng, &op);
        nbody__swap(&S->table[k - 1], &S->entry);                   /* T_jk kept for row j+1 */
        nbody__swap(&S->entry, &S->scratch);
    }
    nbody__swap(&S->table[j - 1], &S->entry);                       /* T_jj */
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
    int adaptive = s->desc.tolerance > 0, kopt = s->bs.column, last, j, kc = 0, knew;
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
        r = nbody__scaled_change(s, 1, s->bs.table[j - 1], s->bs.table[j - 2], s->desc.tolerance, &e);
        hk[j] = H * nbody__bs_factor(e, j);
        work_k[j] = cost[j] / hk[j];
        if (j >= kopt - 1 && e <= 1) { kc = j; break; }
        /* ODEX: give up early when even column kopt+1 cannot be expected to converge */
        if (j == kopt - 1 && e > (nbody_real)((kopt + 1) * (kopt + 1) * kopt * kopt)) break;
        if (j == kopt && e > (nbody_real)((kopt + 1) * (kopt + 1))) break;
    }
    if (r != NBODY_OK) return r;
    if (!adaptive) return nbody__update(s, 1, 1, &one, &s->bs.table[NBODY__BS_FIXED - 1]);
    if (j > last) j = last;
    if (kc) {                                                      /* accepted in column kc */
        knew = nbody__bs_next_column(work_k, kc, kopt);
        s->bs.proposal = knew > kc ? hk[kc] * (cost[knew] / cost[kc]) : hk[knew];
        s->bs.column = knew;
        *err = e;
        return nbody__update(s, 1, 1, &one, &s->bs.table[kc - 1]);
    }
    knew = j < kopt ? j : kopt;                                    /* rejected after column j */
    if (knew >= 3 && work_k[knew - 1] < (nbody_real)0.8 * work_k[knew]) knew--;
    if (knew < 2) knew = 2;
    s->bs.proposal = hk[knew];
    s->bs.column = knew;
    *err = e > 1 || e != e ? e : (nbody_real)HUGE_VAL;         /* NaN kept: nbody__step_to tells it apart */
    return NBODY_OK;
}

/* BS chooses its next step together with its order in the attempt */
static nbody_real nbody__bs_proposal(const nbody_sim *s) { return s->bs.proposal; }

/* ======================================================================================
   >>radau  GAUSS-RADAU (NBODY_RADAU)
   Everhart's 15th-order predictor-corrector (Everhart 1985, ASSL 115, 185) as in IAS15
   (Rein & Spiegel 2015, MNRAS 446, 1424). Over a step h the acceleration is the polynomial
       a(t0 + s h) = a0 + B1 s + B2 s^2 + ... + B7 s^7,
   fitted through f at the 7 Gauss-Radau nodes h_1..h_7 of [0, 1] (with h_0 = 0); equally
   a0 + G1 s + G2 s (s - h1) + ... (Newton form, G by divided differences). Positions and
   velocities are its exact integrals:
       x(s) = x0 + s h v0 + (s h)^2 (a0/2 + sum_j B_j s^j / ((j+1)(j+2)))
       v(s) = v0 + s h (a0 + sum_j B_j s^j / (j+1)).
   Predictor-corrector sweeps over the nodes refine G and B until max |dB7| / max |a| falls
   below eps/2 (or stops falling, or 12 sweeps). B is accumulated with compensated summation,
   and the final update is compensated (desc.compensated is forced on). The next step starts
   from B shifted to the new interval (the polynomial's Taylor shift, corrected by how far
   the last prediction was off), and the step size comes from
     PRS23 (default; Pham, Rein & Spiegel 2024, MNRAS 527, 11729):
       tau_i^2 = 2 |a|^2 / (|a'|^2 + |a| |a''|) at the step's end for each body, dt = tau_min (7! eps)^(1/7)
     GLOBAL (Rein & Spiegel 2015): err = max |B7| / max |a|, dt = h (eps / err)^(1/7)
   with eps = desc.tolerance (0 = 1e-9). A proposed step below h/4 rejects the step; growth is
   at most 4x a step. Written against the engine operations: every engine runs it. On the CPU
   engines (the host lincomb) each part of a step runs instead as one fused pass over the
   elements, the same operations in the same order, so the same bits (nbody__radau_host_*).
   Vectors live in the acceleration half [3n, 6n) of 6n buffers (the k layout); k[0] = f(y),
   k[1] = f at a node. The rest of the state is nbody__radau_state (with nbody_sim).
   ====================================================================================== */

#define NBODY__RADAU_EPS ((nbody_real)1e-9)

/* the nodes: 0 and the roots of (P_7 + P_8)(2s - 1) (Gauss-Radau), to 32 digits */
static const long double nbody__radau_nodes[8] = {0.0L,
    0.056262560536922146465652191032311L, 0.18024069173689236498757994280918L,
    0.35262471711316963737390777017124L, 0.54715362633055538300144855765235L,
    0.73421017721541053152321060830661L, 0.88532094683909576809035976293249L,
    0.97752061356128750189117450042915L};

/* q^j and binom(m, j), rounded as the shift of B uses them */
static nbody_real nbody__radau_pow(nbody_real q, int j) {
    nbody_real qj = 1;
    int i;
    for (i = 0; i < j; ++i) qj *= q;
    return qj;
}
static nbody_real nbody__radau_binom(int m, int j) {
    nbody_real binom = 1;
    int i;
    for (i = 0; i < j; ++i) binom = binom * (nbody_real)(m - i) / (nbody_real)(i + 1);
    return binom;
}

/* every derived constant, computed in long double from the nodes */
static void nbody__radau_setup(nbody__radau_consts *K) {
    long double c[8][8], d[8][8];
    int k, j, i;
    memset(c, 0, sizeof c); memset(d, 0, sizeof d); memset(K, 0, sizeof *K);
    {
        int p = sizeof(nbody_real) == sizeof(float) ? FLT_MANT_DIG : sizeof(nbody_real) == sizeof(double) ? DBL_MANT_DIG : LDBL_MANT_DIG;
        K->split = (nbody_real)ldexp(1.0, (p + 1) / 2) + 1;
    }
    c[1][1] = 1;
    for (k = 2; k <= 7; ++k)                     /* N_k = N_{k-1} (s - h_{k-1}) */
        for (j = 1; j <= k; ++j) c[k][j] = c[k - 1][j - 1] - nbody__radau_nodes[k - 1] * c[k - 1][j];
    /* B_j = sum_{k >= j} c[k][j] G_k: unit upper triangular in (j, k); invert by back substitution */
    for (j = 7; j >= 1; --j) {
        d[j][j] = 1;
        for (k = j - 1; k >= 1; --k) {           /* row k of the inverse, column j */
            long double sum = 0;
            for (i = k + 1; i <= j; ++i) sum += c[i][k] * d[i][j];
            d[k][j] = -sum;
        }
    }
    for (k = 0; k < 8; ++k) {
        K->h[k] = (nbody_real)nbody__radau_nodes[k];
        for (j = 0; j < 8; ++j) {
            K->c[k][j] = (nbody_real)c[k][j];
            K->d[k][j] = (nbody_real)d[k][j];
            if (j < k) {
                nbody_real dv = j ? (nbody_real)(nbody__radau_nodes[k] - nbody__radau_nodes[j]) : K->h[k], t;
                K->dk[k][j] = dv;
                K->r[k][j] = j ? (nbody_real)(1.0L / (nbody__radau_nodes[k] - nbody__radau_nodes[j])) : 1 / K->h[k];
                t = K->split * dv;
                K->dh[k][j] = t - (t - dv);
                K->dl[k][j] = dv - K->dh[k][j];
            }
            if (k >= 1 && j >= k) K->binom[k][j] = nbody__radau_binom(j, k);
        }
    }
}

static nbody_real nbody__radau_eps(const nbody_sim *s) {
    return s->desc.tolerance > 0 ? s->desc.tolerance : NBODY__RADAU_EPS;
}

/* max_i |v[3n + i]| over the acceleration half */
static nbody_result nbody__radau_maxabs(nbody_sim *s, nbody__buf v, nbody_real *out) {
    nbody__lincomb op = nbody__op(v, v, 1, s->len / 2);
    op.out_off = op.y_off = op.k_off = s->len / 2;
    op.nk = 1; op.c[0] = 1; op.k[0] = v;
    return s->eng.ops->error_norm(&s->eng, &op, 1, 0, out);
}

/* out = q^j sum_{m >= j} binom(m, j) src_m (+ plus - minus when given): the Taylor shift of
   B, as REBOUND's IAS15 rounds it: the sum from m = 7 down (smallest first) times q^j, added
   to the difference plus - minus (the last prediction's error, formed first) */
static nbody_result nbody__radau_shift(nbody_sim *s, nbody__buf out, const nbody__buf *src, int j, nbody_real q,
                                       nbody__buf plus, nbody__buf minus) {
    size_t half = s->len / 2;
    nbody__lincomb op;
    int m;
    if (minus) {                                       /* out = plus - minus */
        nbody_result r;
        op = nbody__op(out, plus, 1, half);
        op.out_off = op.y_off = op.k_off = half;
        op.nk = 1; op.c[0] = -1; op.k[0] = minus;
        if ((r = s->eng.ops->lincomb(&s->eng, &op)) != NBODY_OK) return r;
        plus = out;
    }
    op = nbody__op(out, plus, nbody__radau_pow(q, j), half);
    op.out_off = op.y_off = op.k_off = half;
    for (m = 7; m >= j; --m) { op.c[op.nk] = s->radau.K.binom[j][m]; op.k[op.nk] = src[m - 1]; op.nk++; }
    return s->eng.ops->lincomb(&s->eng, &op);
}

/* PRS23: the smallest tau_i^2 (in units of h^2), from a0 and B downloaded to the host;
   0 when no body has a normal acceleration */
static nbody_result nbody__radau_prs23(nbody_sim *s, nbody_real *tau2) {
    size_t n = s->n, half = s->len / 2, i;
    nbody_real *a = s->radau.host, best = (nbody_real)HUGE_VAL;
    nbody_result r = s->eng.ops->download(&s->eng, a, s->k[0], half, half);
    int j, c;
    for (j = 0; j < 7 && r == NBODY_OK; ++j)
        r = s->eng.ops->download(&s->eng, a + (size_t)(j + 1) * half, s->radau.b[j], half, half);
    if (r != NBODY_OK) return r;
    for (i = 0; i < n; ++i) {
        nbody_real y2 = 0, y3 = 0, y4 = 0, t2;
        for (c = 0; c < 3; ++c) {
            size_t k = (size_t)c * n + i;
            nbody_real v = a[k], d1 = 0, d2 = 0;
            for (j = 1; j <= 7; ++j) {
                nbody_real b = a[(size_t)j * half + k];
                v += b; d1 += (nbody_real)j * b; d2 += (nbody_real)(j * (j - 1)) * b;
            }
            y2 += v * v; y3 += d1 * d1; y4 += d2 * d2;
        }
        if (!(y2 > 0) || !nbody__isfinite(y2)) continue;
        t2 = 2 * y2 / (y3 + NBODY__SQRT(y4 * y2));
        if (t2 > 0 && nbody__isfinite(t2) && t2 < best) best = t2;
    }
    *tau2 = nbody__isfinite(best) ? best : 0;
    return NBODY_OK;
}

/* ---- one attempt in parts, each through the engine operations (every engine runs them) ---- */

/* the predictor needs velocities only for forces that read them: gravity alone does not, as in IAS15 */
static int nbody__radau_velocities(const nbody_sim *s) {
    return s->desc.extra_force && !s->desc.extra_force_velocity_free;
}

/* The predictor's coefficients at node k (t = h h_k): cx[0..9] for positions (of B7 .. B1, a0,
   v0 and the compensation), cv[0..8] for velocities (of B7 .. B1, a0 and the compensation):
       x0 + (t^2 (h_k^7/72 B7 + .. + h_k/6 B1 + a0/2) + t v0 - comp_x)
       v0 + (t (h_k^7/8 B7 + .. + h_k/2 B1 + a0) - comp_v)
   the terms summed smallest first, B7 .. B1, a0, v0, then the compensation, as REBOUND's
   IAS15 evaluates them */
static void nbody__radau_coeffs(const nbody__radau_consts *K, int k, nbody_real h, nbody_real cx[10], nbody_real cv[9]) {
    nbody_real t = h * K->h[k], sk = K->h[k], p = 1;
    int j;
    cx[9] = -1; cx[8] = t; cx[7] = t * t / 2;
    cv[8] = -1; cv[7] = t;
    for (j = 1; j <= 7; ++j) {
        p *= sk;
        cx[7 - j] = t * t * p / (nbody_real)((j + 1) * (j + 2));
        cv[7 - j] = t * p / (nbody_real)(j + 1);
    }
}

/* B from the prediction (or 0), G from B, compensations 0, and the position half of the
   state's compensation moved to the acceleration half */
static nbody_result nbody__radau_start(nbody_sim *s, const nbody__radau_consts *K, int predict, nbody_real q) {
    size_t half = s->len / 2;
    nbody__radau_state *R = &s->radau;
    nbody__buf *B = R->b, *G = R->g, *CS = R->b_comp, *BACC = R->b_accepted, *EACC = R->prediction;
    nbody_result r = NBODY_OK;
    nbody__lincomb op;
    int j, k;
    for (j = 1; j <= 7 && r == NBODY_OK; ++j) {
        if (predict) r = nbody__radau_shift(s, B[j - 1], BACC, j, q, BACC[j - 1], EACC[j - 1]);
        else { op = nbody__op(B[j - 1], NULL, 0, half); op.out_off = half; r = s->eng.ops->lincomb(&s->eng, &op); }
        if (r == NBODY_OK) { op = nbody__op(CS[j - 1], NULL, 0, half); op.out_off = half; r = s->eng.ops->lincomb(&s->eng, &op); }
    }
    for (k = 1; k <= 7 && r == NBODY_OK; ++k) {
        op = nbody__op(G[k - 1], NULL, 1, half);
        op.out_off = op.k_off = half;
        for (j = k; j <= 7; ++j) { op.c[op.nk] = K->d[k][j]; op.k[op.nk] = B[j - 1]; op.nk++; }
        r = s->eng.ops->lincomb(&s->eng, &op);
    }
    op = nbody__op(R->x_comp, s->comp, 1, half);
    op.out_off = half;
    if (r == NBODY_OK) r = s->eng.ops->lincomb(&s->eng, &op);
    return r;
}

/* the state at node k into ytmp: x0 + t v0 + t^2 (a0/2 + sum B_j s^j/((j+1)(j+2))) and
   v0 + t (a0 + sum B_j s^j/(j+1)) */
static nbody_result nbody__radau_predict(nbody_sim *s, const nbody__radau_consts *K, int k, nbody_real h) {
    size_t half = s->len / 2;
    nbody__buf *B = s->radau.b;
    nbody_real cx[10], cv[9];
    nbody_result r;
    nbody__lincomb op;
    int j;
    nbody__radau_coeffs(K, k, h, cx, cv);
    op = nbody__op(s->ytmp, s->y, 1, half);
    op.k_off = half;
    op.nk = 10;
    for (j = 0; j < 10; ++j) op.c[j] = cx[j];
    for (j = 1; j <= 7; ++j) op.k[7 - j] = B[j - 1];
    op.k[7] = s->k[0]; op.k[8] = s->y; op.k[9] = s->radau.x_comp;
    r = s->eng.ops->lincomb(&s->eng, &op);
    if (r != NBODY_OK || !nbody__radau_velocities(s)) return r;
    op = nbody__op(s->ytmp, s->y, 1, half);
    op.out_off = op.y_off = op.k_off = half;
    op.nk = 9;
    for (j = 0; j < 9; ++j) op.c[j] = cv[j];
    for (j = 1; j <= 7; ++j) op.k[7 - j] = B[j - 1];
    op.k[7] = s->k[0]; op.k[8] = s->comp;
    return s->eng.ops->lincomb(&s->eng, &op);
}

/* from f at node k (k[1]): the new G_k by divided differences,
       G_k = ((((a - a0) / h_k - G_1) / (h_k - h_1) - G_2) / (h_k - h_2) ... - G_{k-1}) / (h_k - h_{k-1}),
   nested as written (a - a0 first: nearly equal numbers); D = G_k(new) - G_k(old);
   B_j += c[k][j] D, compensated.
   The engine operations multiply but do not divide, so each quotient u / d is q = u r (r = 1 / d
   rounded) corrected by its exact residual: e = u - d q, formed exactly by Dekker's product
   (d = dh + dl and q = qh + ql split in halves of the mantissa, so every partial product is
   exact), then u / d = q + e r. The plain product u r carries the rounding of r, the same
   relative error at every step: the outer solar system's energy drifted by about 2e-20 a step
   (bench/results/orbital-2026-11-23.md); a residual rounded before the subtraction drifts the
   other way. ytmp and y_new (acceleration halves, free between a node's derivative and the
   next prediction, and before the step's end) hold qh and ql. */
/* out = y + h (c0 k0 + c1 k1 + c2 k2) over the acceleration halves, the first nk terms (y may be NULL) */
static nbody_result nbody__radau_lc(nbody_sim *s, nbody__buf out, nbody__buf y, nbody_real h, int nk, nbody_real c0, nbody__buf k0,
                                    nbody_real c1, nbody__buf k1, nbody_real c2, nbody__buf k2) {
    size_t half = s->len / 2;
    nbody__lincomb op = nbody__op(out, y, h, half);
    op.out_off = op.y_off = op.k_off = half;
    op.nk = nk; op.c[0] = c0; op.k[0] = k0; op.c[1] = c1; op.k[1] = k1; op.c[2] = c2; op.k[2] = k2;
    return s->eng.ops->lincomb(&s->eng, &op);
}
static nbody_result nbody__radau_correct(nbody_sim *s, const nbody__radau_consts *K, int k) {
    size_t half = s->len / 2;
    nbody__radau_state *R = &s->radau;
    nbody__buf *B = R->b, *G = R->g, *CS = R->b_comp, D = R->change;
    nbody_result r;
    nbody__lincomb op;
    int j;
    r = nbody__radau_lc(s, R->divided, s->k[1], 1, 1, -1, s->k[0], 0, NULL, 0, NULL);   /* a - a0 */
    for (j = 0; j < k && r == NBODY_OK; ++j) {
        nbody__buf u = R->divided, q = D, qh = s->ytmp, ql = s->y_new;   /* D: scratch until formed below */
        nbody_real nd = -K->dk[k][j];
        if (j) r = nbody__radau_lc(s, u, NULL, 1, 2, 1, u, -1, G[j - 1], 0, NULL);                            /* u = divided - G_j */
        /* each step one operation, in the order the fused host pass forms them */
        if (r == NBODY_OK) r = nbody__radau_lc(s, q, NULL, K->r[k][j], 1, 1, u, 0, NULL, 0, NULL);            /* q = u r */
        if (r == NBODY_OK) r = nbody__radau_lc(s, qh, NULL, 1, 1, K->split, q, 0, NULL, 0, NULL);             /* T = C q */
        if (r == NBODY_OK) r = nbody__radau_lc(s, ql, NULL, 1, 2, 1, qh, -1, q, 0, NULL);                     /* T - q */
        if (r == NBODY_OK) r = nbody__radau_lc(s, qh, NULL, 1, 2, 1, qh, -1, ql, 0, NULL);                    /* qh */
        if (r == NBODY_OK) r = nbody__radau_lc(s, ql, NULL, 1, 2, 1, q, -1, qh, 0, NULL);                     /* ql */
        if (r == NBODY_OK) {                           /* ql = the error of fl(d q): dh qh - fl(d q) + dh ql + dl qh + dl ql */
            op = nbody__op(ql, NULL, 1, half);
            op.out_off = op.k_off = half;
            op.nk = 5;
            op.c[0] = K->dh[k][j]; op.k[0] = qh; op.c[1] = nd; op.k[1] = q; op.c[2] = K->dh[k][j]; op.k[2] = ql;
            op.c[3] = K->dl[k][j]; op.k[3] = qh; op.c[4] = K->dl[k][j]; op.k[4] = ql;
            r = s->eng.ops->lincomb(&s->eng, &op);
        }
        if (r == NBODY_OK) r = nbody__radau_lc(s, u, NULL, 1, 3, 1, u, nd, q, -1, ql);                        /* e = u - d q */
        if (r == NBODY_OK) r = nbody__radau_lc(s, u, q, K->r[k][j], 1, 1, u, 0, NULL, 0, NULL);               /* q + e r */
    }
    if (r == NBODY_OK) r = nbody__radau_lc(s, D, NULL, 1, 2, 1, R->divided, -1, G[k - 1], 0, NULL);
    if (r == NBODY_OK) r = nbody__radau_lc(s, G[k - 1], NULL, 1, 1, 1, R->divided, 0, NULL, 0, NULL);   /* G_k = the new value itself */
    for (j = 1; j <= k && r == NBODY_OK; ++j) {
        op = nbody__op(B[j - 1], B[j - 1], 1, half);
        op.out_off = op.y_off = op.k_off = half;
        op.nk = 1; op.c[0] = K->c[k][j]; op.k[0] = D; op.comp = CS[j - 1];
        r = s->eng.ops->lincomb(&s->eng, &op);
    }
    return r;
}

/* The step's end: x and v, every term added on its own with compensation, smallest first
   (a single rounded increment would carry a bias the compensation cannot remove). Term j
   (8 .. 0): B_{j-1} (j >= 2), a0 (j = 1), v0 (j = 0, positions only), times cx[j], cv[j]. */
static void nbody__radau_end_coeffs(nbody_real h, nbody_real cx[9], nbody_real cv[9]) {
    int j;
    for (j = 8; j >= 0; --j) {
        cx[j] = j >= 2 ? h * h / (nbody_real)(j * (j + 1)) : j == 1 ? h * h / 2 : h;
        cv[j] = j >= 2 ? h / (nbody_real)j : h;
    }
}
static nbody_result nbody__radau_finish(nbody_sim *s, nbody_real h) {
    size_t half = s->len / 2;
    nbody__buf *B = s->radau.b;
    nbody__lincomb copy = nbody__op(s->comp_new, s->comp, 0, s->len), op;
    nbody_real cx[9], cv[9];
    nbody_result r = s->eng.ops->lincomb(&s->eng, &copy);
    int j;
    nbody__radau_end_coeffs(h, cx, cv);
    for (j = 8; j >= 0 && r == NBODY_OK; --j) {        /* x: B7 .. B1, a0, v0; v: B7 .. B1, a0 */
        nbody__buf term = j >= 2 ? B[j - 2] : j == 1 ? s->k[0] : s->y;
        op = nbody__op(s->y_new, j == 8 ? s->y : s->y_new, 1, half);
        op.k_off = half; op.comp = s->comp_new; op.nk = 1; op.c[0] = cx[j]; op.k[0] = term;
        r = s->eng.ops->lincomb(&s->eng, &op);
        if (r != NBODY_OK || j == 0) break;
        op = nbody__op(s->y_new, j == 8 ? s->y : s->y_new, 1, half);
        op.out_off = op.y_off = op.k_off = half; op.comp = s->comp_new;
        op.nk = 1; op.c[0] = cv[j]; op.k[0] = term;
        r = s->eng.ops->lincomb(&s->eng, &op);
    }
    return r;
}

/* ---- the same parts fused for the CPU engines ----
   With the host engine's lincomb every vector is a host array, and each part above becomes
   one pass over the elements (a node's correction and the next node's prediction share one)
   instead of up to a dozen engine calls. Each element goes through exactly the arithmetic of
   nbody__host_lincomb for the operations above, in their order (a sum from 0, term by term,
   times h, then the plain or compensated addition; the max norm as nbody__host_error_norm
   forms it), and every operation is elementwise: the results are the same to the bit. */

static nbody_result nbody__host_lincomb(nbody__engine *e, const nbody__lincomb *op);   /* in >>host */

static int nbody__radau_on_host(const nbody_sim *s) { return s->eng.ops->lincomb == nbody__host_lincomb; }

typedef struct nbody__radau_host {   /* the vectors as host arrays, index i in [0, 3n) */
    nbody_real *b[7], *g[7], *cs[7], *bacc[7], *eacc[7], *change, *divided, *x_comp;   /* acceleration halves */
    const nbody_real *a0, *at, *x0, *v0, *cx0, *cv0;   /* f(y), f at the node; y and comp by halves */
    nbody_real *xt, *vt, *xn, *vn, *cxn, *cvn;          /* ytmp, y_new and comp_new by halves */
    const nbody__radau_consts *K;
    nbody_real qj[8];                                   /* q^j of the shift */
    nbody_real cx[8][10], cv[8][9];                     /* nbody__radau_coeffs at each node */
    nbody_real ex[9], ev[9];                            /* nbody__radau_end_coeffs */
    int velocities;
} nbody__radau_host;

/* the arrays, q^j and (h > 0) the coefficients of an attempt of step h */
static void nbody__radau_host_open(nbody_sim *s, nbody_real h, nbody_real q, nbody__radau_host *V) {
    nbody__radau_state *R = &s->radau;
    size_t half = s->len / 2;
    int j;
    for (j = 0; j < 7; ++j) {
        V->b[j] = (nbody_real *)R->b[j] + half; V->g[j] = (nbody_real *)R->g[j] + half;
        V->cs[j] = (nbody_real *)R->b_comp[j] + half; V->bacc[j] = (nbody_real *)R->b_accepted[j] + half;
        V->eacc[j] = (nbody_real *)R->prediction[j] + half;
    }
    V->change = (nbody_real *)R->change + half; V->divided = (nbody_real *)R->divided + half;
    V->x_comp = (nbody_real *)R->x_comp + half;
    V->a0 = (const nbody_real *)s->k[0] + half; V->at = (const nbody_real *)s->k[1] + half;
    V->x0 = (const nbody_real *)s->y; V->v0 = V->x0 + half;
    V->cx0 = (const nbody_real *)s->comp; V->cv0 = V->cx0 + half;
    V->xt = (nbody_real *)s->ytmp; V->vt = V->xt + half;
    V->xn = (nbody_real *)s->y_new; V->vn = V->xn + half;
    V->cxn = (nbody_real *)s->comp_new; V->cvn = V->cxn + half;
    V->K = &R->K;
    V->velocities = nbody__radau_velocities(s);
    for (j = 1; j <= 7; ++j) V->qj[j] = nbody__radau_pow(q, j);
    if (h > 0) {
        for (j = 1; j <= 7; ++j) nbody__radau_coeffs(V->K, j, h, V->cx[j], V->cv[j]);
        nbody__radau_end_coeffs(h, V->ex, V->ev);
    }
}

/* the max norm of nbody__radau_maxabs, one more element */
static nbody_real nbody__radau_host_max(nbody_real worst, nbody_real v) {
    nbody_real a = NBODY__FABS(v), b = NBODY__FABS(v), sum = 0, r;
    sum += 1 * v;
    r = NBODY__FABS(1 * sum) / (1 + 0 * (a > b ? a : b));
    return worst != worst || r <= worst ? worst : r;      /* NaN sticks */
}

/* nbody__radau_start for the elements [i0, i1) (predict: from the shifted B) */
static void nbody__radau_host_start(const nbody__radau_host *V, int predict, size_t i0, size_t i1) {
    const nbody__radau_consts *K = V->K;
    size_t i;
    int j, k, m;
    for (i = i0; i < i1; ++i) {
        for (j = 1; j <= 7; ++j) {
            nbody_real b, sum = 0;
            if (predict) {
                sum += -1 * V->eacc[j - 1][i];
                b = V->bacc[j - 1][i] + 1 * sum;
                sum = 0;
                for (m = 7; m >= j; --m) sum += K->binom[j][m] * V->bacc[m - 1][i];
                b = b + V->qj[j] * sum;
            } else {
                b = 0 + 0 * sum;
            }
            V->b[j - 1][i] = b;
            sum = 0;
            V->cs[j - 1][i] = 0 + 0 * sum;
        }
        for (k = 1; k <= 7; ++k) {
            nbody_real sum = 0;
            for (j = k; j <= 7; ++j) sum += K->d[k][j] * V->b[j - 1][i];
            V->g[k - 1][i] = 0 + 1 * sum;
        }
        {
            nbody_real sum = 0;
            V->x_comp[i] = V->cx0[i] + 1 * sum;
        }
    }
}

/* nbody__radau_predict at node k for the elements [i0, i1) */
static void nbody__radau_host_predict(const nbody__radau_host *V, int k, size_t i0, size_t i1) {
    const nbody_real *NBODY__RESTRICT b1 = V->b[0], *NBODY__RESTRICT b2 = V->b[1], *NBODY__RESTRICT b3 = V->b[2],
                     *NBODY__RESTRICT b4 = V->b[3], *NBODY__RESTRICT b5 = V->b[4], *NBODY__RESTRICT b6 = V->b[5],
                     *NBODY__RESTRICT b7 = V->b[6], *NBODY__RESTRICT a0 = V->a0, *NBODY__RESTRICT x0 = V->x0,
                     *NBODY__RESTRICT v0 = V->v0, *NBODY__RESTRICT xc = V->x_comp, *NBODY__RESTRICT vc = V->cv0;
    nbody_real *NBODY__RESTRICT xt = V->xt, *NBODY__RESTRICT vt = V->vt;
    const nbody_real *c = V->cx[k];
    size_t i;
    for (i = i0; i < i1; ++i) {
        nbody_real sum = 0;
        sum += c[0] * b7[i]; sum += c[1] * b6[i]; sum += c[2] * b5[i]; sum += c[3] * b4[i]; sum += c[4] * b3[i];
        sum += c[5] * b2[i]; sum += c[6] * b1[i]; sum += c[7] * a0[i]; sum += c[8] * v0[i]; sum += c[9] * xc[i];
        xt[i] = x0[i] + 1 * sum;
    }
    if (!V->velocities) return;
    c = V->cv[k];
    for (i = i0; i < i1; ++i) {
        nbody_real sum = 0;
        sum += c[0] * b7[i]; sum += c[1] * b6[i]; sum += c[2] * b5[i]; sum += c[3] * b4[i]; sum += c[4] * b3[i];
        sum += c[5] * b2[i]; sum += c[6] * b1[i]; sum += c[7] * a0[i]; sum += c[8] * vc[i];
        vt[i] = v0[i] + 1 * sum;
    }
}

/* a b + c rounded once (C99 fma): for the residual u - d q it is exact, the value Dekker's
   product gives in nbody__radau_correct, in three operations instead of nine */
static nbody_real nbody__fma(nbody_real a, nbody_real b, nbody_real c) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)fmaf((float)a, (float)b, (float)c);
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)fma((double)a, (double)b, (double)c);
    return (nbody_real)fmal((long double)a, (long double)b, (long double)c);
}

/* nbody__radau_correct at node k for the elements [i0, i1), then nbody__radau_predict at
   node k + 1 (k < 7) or the max norms of D and a into *dmax, *amax (k = 7) */
static void nbody__radau_host_correct(const nbody__radau_host *V, int k, size_t i0, size_t i1, nbody_real *dmax,
                                      nbody_real *amax) {
    const nbody__radau_consts *K = V->K;
    nbody_real *NBODY__RESTRICT dif = V->divided, *NBODY__RESTRICT d = V->change, *NBODY__RESTRICT gk = V->g[k - 1];
    const nbody_real *NBODY__RESTRICT at = V->at, *NBODY__RESTRICT a0 = V->a0;
    size_t i;
    int j;
    for (i = i0; i < i1; ++i) {
        nbody_real sum = 0;
        sum += -1 * a0[i];
        dif[i] = at[i] + 1 * sum;
    }
    for (j = 0; j < k; ++j) {                          /* u / d from the reciprocal and the exact residual, see there */
        const nbody_real *NBODY__RESTRICT g = V->g[j ? j - 1 : 0];
        const nbody_real w = K->r[k][j], nd = -K->dk[k][j];
        for (i = i0; i < i1; ++i) {
            nbody_real sum, u, q, e;
            if (j) { sum = 0; sum += 1 * dif[i]; sum += -1 * g[i]; u = 0 + 1 * sum; } else u = dif[i];
            sum = 0; sum += 1 * u; q = 0 + w * sum;
            e = nbody__fma(nd, q, u);
            sum = 0; sum += 1 * e; dif[i] = q + w * sum;
        }
    }
    for (i = i0; i < i1; ++i) {
        nbody_real sum = 0;
        sum += 1 * dif[i]; sum += -1 * gk[i];
        d[i] = 0 + 1 * sum;
        sum = 0; sum += 1 * dif[i];
        gk[i] = 0 + 1 * sum;
    }
    for (j = 1; j <= k; ++j) {
        nbody_real *NBODY__RESTRICT b = V->b[j - 1], *NBODY__RESTRICT cs = V->cs[j - 1], c = K->c[k][j];
        for (i = i0; i < i1; ++i) {
            nbody_real sum = 0;
            sum += c * d[i];
            b[i] = nbody__compensated_add(b[i], 1 * sum, &cs[i]);
        }
    }
    if (k < 7) { nbody__radau_host_predict(V, k + 1, i0, i1); return; }
    for (i = i0; i < i1; ++i) { *dmax = nbody__radau_host_max(*dmax, d[i]); *amax = nbody__radau_host_max(*amax, at[i]); }
}

/* nbody__radau_finish for the elements [i0, i1) of each half */
static void nbody__radau_host_finish(const nbody__radau_host *V, size_t i0, size_t i1) {
    nbody_real *NBODY__RESTRICT xn = V->xn, *NBODY__RESTRICT vn = V->vn, *NBODY__RESTRICT cxn = V->cxn,
               *NBODY__RESTRICT cvn = V->cvn;
    const nbody_real *NBODY__RESTRICT x0 = V->x0, *NBODY__RESTRICT v0 = V->v0;
    size_t i;
    int j;
    for (i = i0; i < i1; ++i) {
        nbody_real sum = 0;
        cxn[i] = V->cx0[i] + 0 * sum; cvn[i] = V->cv0[i] + 0 * sum;
        xn[i] = x0[i]; vn[i] = v0[i];
    }
    for (j = 8; j >= 0; --j) {                         /* x: B7 .. B1, a0, v0; v: B7 .. B1, a0 */
        const nbody_real *NBODY__RESTRICT term = j >= 2 ? V->b[j - 2] : j == 1 ? V->a0 : v0;
        nbody_real cx = V->ex[j], cv = V->ev[j];
        for (i = i0; i < i1; ++i) {
            nbody_real sum = 0;
            sum += cx * term[i];
            xn[i] = nbody__compensated_add(xn[i], 1 * sum, &cxn[i]);
        }
        if (j == 0) break;
        for (i = i0; i < i1; ++i) {
            nbody_real sum = 0;
            sum += cv * term[i];
            vn[i] = nbody__compensated_add(vn[i], 1 * sum, &cvn[i]);
        }
    }
}

/* nbody__commit_radau's prediction E for the elements [i0, i1) (predicted: shifted B) */
static void nbody__radau_host_commit(const nbody__radau_host *V, int predicted, size_t i0, size_t i1) {
    size_t i;
    int j, m;
    for (i = i0; i < i1; ++i)
        for (j = 1; j <= 7; ++j) {
            nbody_real sum = 0;
            if (predicted) {
                for (m = 7; m >= j; --m) sum += V->K->binom[j][m] * V->bacc[m - 1][i];
                V->eacc[j - 1][i] = 0 + V->qj[j] * sum;
            } else {
                V->eacc[j - 1][i] = 0 + 0 * sum;
            }
        }
}

/* one pass over [0, 3n): serial below NBODY__HOST_PARALLEL_MIN elements, as the host
   engine's own operations; above, in chunks of that size over the threads. arg: start and
   commit, whether B is shifted; predict and correct, the node. *dmax, *amax: correct at node 7. */
typedef enum { NBODY__RADAU_START, NBODY__RADAU_PREDICT, NBODY__RADAU_CORRECT, NBODY__RADAU_FINISH,
               NBODY__RADAU_COMMIT } nbody__radau_pass;

static void nbody__radau_host_range(const nbody__radau_host *V, nbody__radau_pass pass, int arg, size_t i0, size_t i1,
                                    nbody_real *dmax, nbody_real *amax) {
    switch (pass) {
    case NBODY__RADAU_START: nbody__radau_host_start(V, arg, i0, i1); break;
    case NBODY__RADAU_PREDICT: nbody__radau_host_predict(V, arg, i0, i1); break;
    case NBODY__RADAU_CORRECT: nbody__radau_host_correct(V, arg, i0, i1, dmax, amax); break;
    case NBODY__RADAU_FINISH: nbody__radau_host_finish(V, i0, i1); break;
    case NBODY__RADAU_COMMIT: nbody__radau_host_commit(V, arg, i0, i1); break;
    }
}

static void nbody__radau_host_run(const nbody__radau_host *V, nbody__radau_pass pass, int arg, size_t len,
                                  nbody_real *dmax, nbody_real *amax) {
    nbody_real dm = 0, am = 0;
#if NBODY__OPENMP
    if (len > NBODY__HOST_PARALLEL_MIN) {
        long long c, chunks = ((long long)len + NBODY__HOST_PARALLEL_MIN - 1) / NBODY__HOST_PARALLEL_MIN;
        NBODY__PRAGMA(omp parallel for schedule(static))
        for (c = 0; c < chunks; ++c) {
            size_t lo = (size_t)c * NBODY__HOST_PARALLEL_MIN, hi = lo + NBODY__HOST_PARALLEL_MIN;
            nbody_real d = 0, a = 0;
            nbody__radau_host_range(V, pass, arg, lo, hi < len ? hi : len, &d, &a);
            NBODY__PRAGMA(omp critical(nbody__radau_host_run))
            { dm = nbody__radau_host_max(dm, d); am = nbody__radau_host_max(am, a); }
        }
        if (dmax) { *dmax = dm; *amax = am; }
        return;
    }
#endif
    nbody__radau_host_range(V, pass, arg, 0, len, &dm, &am);
    if (dmax) { *dmax = dm; *amax = am; }
}

static nbody_result nbody__attempt_radau(nbody_sim *s, nbody_real h, nbody_real *err) {
    size_t half = s->len / 2;
    nbody__radau_state *R = &s->radau;
    const nbody__radau_consts *K = &R->K;
    nbody__buf *B = R->b, D = R->change, at = s->k[1];
    nbody_real q = R->last_step > 0 ? h / R->last_step : 0, pc = (nbody_real)HUGE_VAL, pc_last = 2, amax = 0, dmax = 0;
    nbody_real thresh = nbody__eps() * (nbody_real)0.45, proposal = 4 * h;
    int predict = R->have_b && q > 0 && q <= 20, host = nbody__radau_on_host(s), k, sweep;
    nbody__radau_host V;
    nbody_result r = nbody__first_stage(s);
    *err = 0;
    if (r != NBODY_OK) return r;
    if (host) {
        nbody__radau_host_open(s, h, q, &V);
        nbody__radau_host_run(&V, NBODY__RADAU_START, predict, half, NULL, NULL);
    } else {
        r = nbody__radau_start(s, K, predict, q);
    }
    R->predicted = predict;
    R->ratio = q;
    for (sweep = 0; r == NBODY_OK; ++sweep) {
        if (pc < thresh) break;
        if (sweep > 2 && pc_last <= pc) break;
        if (sweep >= 12) break;
        pc_last = pc;
        for (k = 1; k <= 7 && r == NBODY_OK; ++k) {
            if (!host) r = nbody__radau_predict(s, K, k, h);
            else if (k == 1) nbody__radau_host_run(&V, NBODY__RADAU_PREDICT, 1, half, NULL, NULL);  /* the others in the correction before */
            s->t_stage = s->t + h * K->h[k];
            if (r == NBODY_OK) r = nbody__derivative(s, s->ytmp, at);
            if (r != NBODY_OK) break;
            if (!host) r = nbody__radau_correct(s, K, k);
            else nbody__radau_host_run(&V, NBODY__RADAU_CORRECT, k, half, &dmax, &amax);
        }
        /* convergence: max |dB7| / max |a| over the last node (dB7 = dG7 = D; on the host
           from the last node's correction) */
        if (r == NBODY_OK && !host) r = nbody__radau_maxabs(s, D, &dmax);
        if (r == NBODY_OK && !host) r = nbody__radau_maxabs(s, at, &amax);
        if (r != NBODY_OK) break;
        pc = amax > 0 ? dmax / amax : (dmax > 0 ? (nbody_real)HUGE_VAL : 0);
        if (pc != pc) pc = (nbody_real)HUGE_VAL;
        if (!nbody__isfinite(pc) && sweep >= 1) break;   /* NaN state: the finite check reports it */
    }
    if (r != NBODY_OK) return r;
    if (host) nbody__radau_host_run(&V, NBODY__RADAU_FINISH, 0, half, NULL, NULL);
    else r = nbody__radau_finish(s, h);
    if (r != NBODY_OK) return r;
    /* the next step */
    if (s->desc.radau_control == NBODY_RADAU_FIXED) { R->proposal = h; return NBODY_OK; }
    if (s->desc.radau_control != NBODY_RADAU_GLOBAL) {
        nbody_real tau2 = 0;
        r = nbody__radau_prs23(s, &tau2);
        if (r != NBODY_OK) return r;
        proposal = tau2 > 0 ? NBODY__SQRT(tau2) * h * NBODY__POW(nbody__radau_eps(s) * 5040, (nbody_real)1 / 7) : 4 * h;
    }
    /* The global criterion: by choice, or as the second opinion before PRS23 rejects a step. A
       body whose acceleration passes through zero (the figure-eight's middle body at each
       crossing) has a PRS23 timescale proportional to the time since the crossing, about a
       quarter of any step just taken: PRS23 alone would reject every step there. */
    if (s->desc.radau_control == NBODY_RADAU_GLOBAL || proposal < h / 4) {
        nbody_real b7 = 0, global;
        r = nbody__radau_maxabs(s, B[6], &b7);
        if (r == NBODY_OK) r = nbody__radau_maxabs(s, at, &amax);
        if (r != NBODY_OK) return r;
        global = (b7 > 0 && amax > 0 && nbody__isfinite(b7 / amax))
                     ? h * NBODY__POW(nbody__radau_eps(s) / (b7 / amax), (nbody_real)1 / 7) : 4 * h;
        proposal = s->desc.radau_control == NBODY_RADAU_GLOBAL || !(global <= proposal) ? global : proposal;
    }
    if (!(proposal == proposal)) proposal = h / 4;
    if (proposal > 4 * h) proposal = 4 * h;
    R->proposal = proposal;
    *err = proposal < h / 4 ? 2 : 0;                     /* much smaller: redo with the proposal */
    return NBODY_OK;
}

/* the accepted B becomes the next step's source; its prediction E is kept beside it */
static void nbody__commit_radau(nbody_sim *s, nbody_real h) {
    nbody__radau_state *R = &s->radau;
    nbody__buf *B = R->b, *BACC = R->b_accepted, *EACC = R->prediction;
    size_t half = s->len / 2;
    int j;
    if (nbody__radau_on_host(s)) {
        nbody__radau_host V;
        nbody__radau_host_open(s, 0, R->ratio, &V);
        nbody__radau_host_run(&V, NBODY__RADAU_COMMIT, R->predicted, half, NULL, NULL);
    } else {
        for (j = 1; j <= 7; ++j) {
            if (R->predicted) nbody__radau_shift(s, EACC[j - 1], BACC, j, R->ratio, NULL, NULL);
            else {
                nbody__lincomb op = nbody__op(EACC[j - 1], NULL, 0, half);
                op.out_off = half;
                s->eng.ops->lincomb(&s->eng, &op);
            }
        }
    }
    for (j = 0; j < 7; ++j) nbody__swap(&BACC[j], &B[j]);
    R->last_step = h;
    R->have_b = 1;
    s->f_valid = 0;
}

static nbody_real nbody__radau_proposal(const nbody_sim *s) { return s->radau.proposal; }

/* ======================================================================================
   >>whfast  WHFAST (NBODY_WHFAST)
   Wisdom & Holman (1991) in the form of WHFast (Rein & Tamayo 2015, MNRAS 452, 376): the
   Hamiltonian is split into Kepler motions about body 0 and an interaction part, and a step
   is drift(h/2) kick(h) drift(h/2). Canonical coordinates (desc.whfast_coordinates):
     Jacobi: r'_i = x_i - X_{i-1} (X_k the centre of mass of bodies 0..k), each a Kepler orbit
       of mu = G eta_i (eta_i = m_0 + .. + m_i); the kick adds to v'_i the Jacobi transform of
       the engine's accelerations plus G eta_i r'_i / |r'_i|^3 (that is, minus the Kepler part).
     democratic heliocentric (Duncan, Levison & Lee 1998): Q_i = x_i - x_0 with barycentric
       velocities u_i, Kepler orbits of mu = G m_0, a jump Q_i += h sum_j m_j u_j / m_0 (half
       on each side of the kick, as in REBOUND's WHFast), kicks by the engine's accelerations
       plus G m_0 Q_i / |Q_i|^3.
   The interaction comes from the engine's forces (softening, extra forces and test particles
   included) less the Kepler term, so it carries the round-off of that difference (about
   eps times the ratio of the central pull to the perturbation). Index 0 of the canonical
   state holds the centre of mass and its velocity. Test particles (beyond n_active) count
   as massless. The Kepler drift solves the universal Kepler equation in Stumpff functions
   (elliptic, parabolic, hyperbolic) by Halley steps kept inside a bracket, with bisection
   where a step leaves it. Symplectic correctors (Wisdom, Holman & Touma 1996; the
   coefficients of REBOUND's WHFast) are applied to the canonical state once, when it is
   opened from y; y is the state with the inverse corrector applied to a copy wherever it is
   read (every step when something reads it between steps; see nbody__attempt_whfast for the
   deferred synchronization that joins the half drifts of consecutive steps otherwise). A
   step of another size (the last one of nbody_advance) reopens the canonical state from y.
   State: nbody__whfast_state (canonical, copy); k[0] forces.
   ====================================================================================== */

#define NBODY__WHFAST_DOMINANCE 10    /* body 0 must outweigh every other body this many times */

/* Stumpff functions c_0..c_3 (Danby 1988, Fundamentals of Celestial Mechanics, 6.9):
   c_k(z) = sum_j (-z)^j / (k + 2j)!, the series for |z| <= 0.1, then brought back up with
   c_0(4z) = 2 c_0^2 - 1, c_1(4z) = c_0 c_1, c_2(4z) = c_1^2 / 2, c_3(4z) = (c_2 + c_0 c_3) / 4 */
static void nbody__stumpff(nbody_real z, nbody_real c[4]) {
    static const double inv_fact[18] = {1., 1., 1. / 2, 1. / 6, 1. / 24, 1. / 120, 1. / 720, 1. / 5040, 1. / 40320,
                                        1. / 362880, 1. / 3628800, 1. / 39916800, 1. / 479001600, 1. / 6227020800.,
                                        1. / 87178291200., 1. / 1307674368000., 1. / 20922789888000.,
                                        1. / 355687428096000.};
    int quarter = 0, j, top = 16;
    nbody_real c2, c3;
    while (NBODY__FABS(z) > (nbody_real)0.1) { z /= 4; ++quarter; }
    /* the series to z^7 (|z| <= 0.1) or z^4 (|z| <= 0.01, a remainder below 1e-19 of c2 in double) */
    if (sizeof(nbody_real) <= 8 && NBODY__FABS(z) <= (nbody_real)0.01) top = 10;
    c2 = (nbody_real)inv_fact[top]; c3 = (nbody_real)inv_fact[top + 1];
    for (j = top - 2; j >= 2; j -= 2) { c2 = (nbody_real)inv_fact[j] - z * c2; c3 = (nbody_real)inv_fact[j + 1] - z * c3; }
    c[2] = c2; c[3] = c3; c[1] = 1 - z * c3; c[0] = 1 - z * c2;
    for (; quarter > 0; --quarter) {
        c[3] = (c[2] + c[0] * c[3]) / 4;
        c[2] = c[1] * c[1] / 2;
        c[1] = c[0] * c[1];
        c[0] = 2 * c[0] * c[0] - 1;
    }
}

/* G_n(X) = X^n c_n(beta X^2) (Stiefel & Scheifele) */
static void nbody__stiefel(nbody_real beta, nbody_real X, nbody_real G[4]) {
    nbody_real c[4];
    nbody__stumpff(beta * X * X, c);
    G[0] = c[0]; G[1] = X * c[1]; G[2] = X * X * c[2]; G[3] = X * X * X * c[3];
}

/* Moves (x, v) along its Kepler orbit about a mass of G M = mu for a time dt, in universal
   variables: with r0 = |x|, eta0 = x.v, beta = 2 mu / r0 - v^2 and zeta0 = mu - beta r0,
   X solves F(X) = r0 X + eta0 G2 + zeta0 G3 = dt, F'(X) = r(X) = r0 + eta0 G1 + zeta0 G2 > 0,
   and x(dt) = x + f x + g v, v(dt) = v + fd x + gd v with the f and g functions less their
   identity part (f = -mu G2 / r0, g = dt - mu G3, fd = -mu G1 / (r0 r), gd = -mu G2 / r).
   Bound orbits take dt modulo the period (X modulo 2 pi / sqrt(beta)). Returns the
   iterations used, -1 when the orbit is degenerate (x = 0). */
/* eps^0.4 of nbody_real (float, double, long double): Halley's last correction needed */
#define NBODY__KEPLER_CUBIC ((nbody_real)(sizeof(nbody_real) <= 4 ? 1.7e-3 : sizeof(nbody_real) <= 8 ? 5.6e-7 : 2.6e-8))
static int nbody__kepler_drift(nbody_real mu, nbody_real dt, nbody_real *x, nbody_real *y, nbody_real *z,
                               nbody_real *vx, nbody_real *vy, nbody_real *vz) {
    const nbody_real two_pi = (nbody_real)6.283185307179586476925286766559L;
    nbody_real r0 = NBODY__SQRT(*x * *x + *y * *y + *z * *z), v2 = *vx * *vx + *vy * *vy + *vz * *vz;
    nbody_real eta0 = *x * *vx + *y * *vy + *z * *vz, beta, zeta0, G[4], X, lo, hi, width, r, f, g, fd, gd, x0, y0, z0;
    nbody_real r0i, ri;
    int it, halley;
    if (!(r0 > 0)) return -1;
    if (dt == 0 || mu == 0) {
        *x += dt * *vx; *y += dt * *vy; *z += dt * *vz;
        return 0;
    }
    r0i = 1 / r0;
    beta = 2 * mu * r0i - v2;
    zeta0 = mu - beta * r0;
    if (beta > 0) {                                   /* bound: one period at most */
        nbody_real sb = NBODY__SQRT(beta), xp = two_pi / sb;
        /* |dt| beyond half the period 2 pi mu / beta^1.5 (dt^2 beta^3 >= pi^2 mu^2): whole turns removed */
        if (dt * dt * beta * beta * beta >= (nbody_real)9.8696044010893586188344909998761511L * mu * mu) {
            nbody_real period = xp * mu / beta, turns = (nbody_real)floor((double)(dt / period + (nbody_real)0.5));
            dt -= turns * period;
        }
        lo = -xp; hi = xp;
    } else {                   /* unbound: double X from a small start until F crosses dt */
        nbody_real s = dt > 0 ? 1 : -1, step = NBODY__FABS(dt) / r0;
        if (beta < 0 && step * NBODY__SQRT(-beta) > 1) step = 1 / NBODY__SQRT(-beta);
        lo = 0; hi = 0;
        for (it = 0; it < 2000; ++it) {
            nbody__stiefel(beta, s * step, G);
            if (s * (r0 * s * step + eta0 * G[2] + zeta0 * G[3] - dt) >= 0) break;
            step *= 2;
        }
        if (s > 0) hi = step; else lo = -step;
    }
    {   /* fourth-order start: F = r0 X + eta0 X^2/2 + zeta0 X^3/6 - beta eta0 X^4/24 + .. reverted,
           X = u (1 + b2 u + b3 u^2 + b4 u^3), u = dt / r0 */
        nbody_real u = dt * r0i, e = eta0 * r0i, zr = zeta0 * r0i;
        nbody_real b2 = -e / 2, b3 = e * e / 2 - zr / 6, b4 = e * (5 * zr / 12 - 5 * e * e / 8 + beta / 24);
        X = u * (1 + u * (b2 + u * (b3 + u * b4)));
    }
    if (!(X > lo && X < hi)) X = (lo + hi) / 2;
    width = hi - lo;
    for (it = 1; it <= 200; ++it) {
        nbody_real F, Fp, Fpp, Xn;
        nbody__stiefel(beta, X, G);
        F = r0 * X + eta0 * G[2] + zeta0 * G[3] - dt;
        Fp = r0 + eta0 * G[1] + zeta0 * G[2];
        Fpp = eta0 * G[0] + zeta0 * G[1];
        if (F == 0) break;
        if (F < 0) lo = X; else hi = X;
        Xn = X - 2 * F * Fp / (2 * Fp * Fp - F * Fpp);                 /* Halley */
        halley = Xn > lo && Xn < hi;
        if (!halley) Xn = lo + (hi - lo) / 2;                          /* outside the bracket: bisect */
        if (it % 4 == 0) {                                             /* slow (far out on an exponential) */
            if (hi - lo > width / 2) { Xn = lo + (hi - lo) / 2; halley = 0; }
            width = hi - lo;
        }
        /* Halley converges cubically: a correction below eps^0.4 leaves one below eps/1000
           (eps/24 in float) for the next, so X + correction is final without that iteration */
        if (NBODY__FABS(Xn - X) <= 2 * nbody__eps() * NBODY__FABS(X) || !(hi - lo > 2 * nbody__eps() * NBODY__FABS(X)) ||
            (halley && NBODY__FABS(Xn - X) <= NBODY__KEPLER_CUBIC * NBODY__FABS(X))) {
            nbody_real d = Xn - X;
            if (NBODY__FABS(d) <= NBODY__KEPLER_CUBIC * NBODY__FABS(X) && NBODY__FABS(beta * X * X) <= 40) {
                /* G at X + d by Taylor's series to d^3 (G0' = -beta G1, G_k' = G_{k-1}): the
                   remainder is (d/X)^4 times G, below round-off, instead of the Stumpff series again */
                nbody_real d2 = d * d / 2, d3 = d * d2 / 3, g0 = G[0], g1 = G[1], g2 = G[2];
                G[0] = g0 - beta * (d * g1 + d2 * g0 - beta * d3 * g1);
                G[1] = g1 + d * g0 - beta * (d2 * g1 + d3 * g0);
                G[2] = g2 + d * g1 + d2 * g0 - beta * d3 * g1;
                G[3] = G[3] + d * g2 + d2 * g1 + d3 * g0;
            } else {
                nbody__stiefel(beta, Xn, G);
            }
            X = Xn;
            break;
        }
        X = Xn;
    }
    r = r0 + eta0 * G[1] + zeta0 * G[2];
    ri = 1 / r;
    f = -mu * G[2] * r0i; g = dt - mu * G[3];
    fd = -mu * G[1] * r0i * ri; gd = -mu * G[2] * ri;
    x0 = *x; y0 = *y; z0 = *z;
    *x += f * x0 + g * *vx; *y += f * y0 + g * *vy; *z += f * z0 + g * *vz;
    *vx += fd * x0 + gd * *vx; *vy += fd * y0 + gd * *vy; *vz += fd * z0 + gd * *vz;
    return it;
}

/* the mass WHFast gives body i: test particles count as massless */
static nbody_real nbody__whfast_mass(const nbody_sim *s, size_t i) {
    size_t na = s->desc.n_active ? s->desc.n_active : s->n;
    return i < na ? s->m[i] : 0;
}

/* inertial state Y (6n, the state layout) -> canonical state C */
static void nbody__whfast_from_inertial(const nbody_sim *s, const nbody_real *Y, nbody_real *C) {
    size_t n = s->n, i;
    int c;
    if (s->desc.whfast_coordinates == NBODY_WHFAST_JACOBI) {
        for (c = 0; c < 6; ++c) {
            const nbody_real *u = Y + (size_t)c * n;
            nbody_real *w = C + (size_t)c * n, msum = nbody__whfast_mass(s, 0), wsum = msum * u[0];
            for (i = 1; i < n; ++i) {
                nbody_real mi = nbody__whfast_mass(s, i);
                w[i] = u[i] - wsum / msum;
                wsum += mi * u[i];
                msum += mi;
            }
            w[0] = wsum / msum;
        }
    } else {
        for (c = 0; c < 6; ++c) {
            const nbody_real *u = Y + (size_t)c * n;
            nbody_real *w = C + (size_t)c * n, msum = 0, wsum = 0;
            for (i = 0; i < n; ++i) { wsum += nbody__whfast_mass(s, i) * u[i]; msum += nbody__whfast_mass(s, i); }
            w[0] = wsum / msum;
            for (i = 1; i < n; ++i) w[i] = c < 3 ? u[i] - u[0] : u[i] - w[0];
        }
    }
}

/* canonical state C -> inertial state Y */
static void nbody__whfast_to_inertial(const nbody_sim *s, const nbody_real *C, nbody_real *Y) {
    size_t n = s->n, i;
    int c;
    nbody_real mtot = 0;
    for (i = 0; i < n; ++i) mtot += nbody__whfast_mass(s, i);
    if (s->desc.whfast_coordinates == NBODY_WHFAST_JACOBI) {
        const nbody_real *wx = C, *wy = C + n, *wz = C + 2 * n, *wvx = C + 3 * n, *wvy = C + 4 * n, *wvz = C + 5 * n;
        nbody_real *ux = Y, *uy = Y + n, *uz = Y + 2 * n, *uvx = Y + 3 * n, *uvy = Y + 4 * n, *uvz = Y + 5 * n;
        nbody_real eta = mtot, cx = wx[0], cy = wy[0], cz = wz[0], cvx = wvx[0], cvy = wvy[0], cvz = wvz[0];
        (void)c;
        for (i = n - 1; i >= 1; --i) {                   /* X_{i-1} = X_i - (m_i / eta_i) r'_i */
            nbody_real mi = nbody__whfast_mass(s, i), q = mi / eta;
            cx -= q * wx[i]; ux[i] = wx[i] + cx;
            cy -= q * wy[i]; uy[i] = wy[i] + cy;
            cz -= q * wz[i]; uz[i] = wz[i] + cz;
            cvx -= q * wvx[i]; uvx[i] = wvx[i] + cvx;
            cvy -= q * wvy[i]; uvy[i] = wvy[i] + cvy;
            cvz -= q * wvz[i]; uvz[i] = wvz[i] + cvz;
            eta -= mi;
        }
        ux[0] = cx; uy[0] = cy; uz[0] = cz; uvx[0] = cvx; uvy[0] = cvy; uvz[0] = cvz;
    } else {
        for (c = 0; c < 6; ++c) {
            const nbody_real *w = C + (size_t)c * n;
            nbody_real *u = Y + (size_t)c * n, sum = 0;
            for (i = 1; i < n; ++i) sum += nbody__whfast_mass(s, i) * w[i];
            if (c < 3) {                                 /* M X = M x_0 + sum m_i Q_i */
                u[0] = w[0] - sum / mtot;
                for (i = 1; i < n; ++i) u[i] = u[0] + w[i];
            } else {                                     /* m_0 (v_0 - V) + sum m_i u_i = 0 */
                u[0] = w[0] - sum / s->m[0];
                for (i = 1; i < n; ++i) u[i] = w[i] + w[0];
            }
        }
    }
}

/* democratic heliocentric coordinates: the jump Q_i += h sum_j m_j u_j / m_0 (the Sun's momentum) */
static void nbody__whfast_jump(const nbody_sim *s, nbody_real *C, nbody_real h) {
    size_t n = s->n, i;
    int c;
    for (c = 0; c < 3; ++c) {
        nbody_real p = 0, *q = C + (size_t)c * n;
        const nbody_real *u = C + (size_t)(c + 3) * n;
        for (i = 1; i < n; ++i) p += nbody__whfast_mass(s, i) * u[i];
        p = h * p / s->m[0];
        for (i = 1; i < n; ++i) q[i] += p;
    }
}

/* the Kepler part over a time h: every body's Kepler drift and the centre of mass's straight line */
static void nbody__whfast_drift(const nbody_sim *s, nbody_real *C, nbody_real h) {
    size_t n = s->n, i;
    nbody_real G = s->desc.G, eta = nbody__whfast_mass(s, 0);
    int dh = s->desc.whfast_coordinates == NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC;
    for (i = 1; i < n; ++i) {
        eta += nbody__whfast_mass(s, i);
        nbody__kepler_drift(G * (dh ? s->m[0] : eta), h, C + i, C + n + i, C + 2 * n + i, C + 3 * n + i, C + 4 * n + i,
                            C + 5 * n + i);
    }
    C[0] += h * C[3 * n]; C[n] += h * C[4 * n]; C[2 * n] += h * C[5 * n];
}

/* the interaction kick over h: the engine's forces at the inertial positions of C, at time t;
   the inertial state of C (before the kick) is left in the buffer Yb. Democratic heliocentric
   coordinates: the jump of h/2 on either side of it (as in REBOUND's WHFast), so that the
   Kepler drifts of consecutive steps can be joined */
static nbody_result nbody__whfast_kick_in(nbody_sim *s, nbody_real *C, nbody_real h, nbody_real t, nbody__buf Yb) {
    size_t n = s->n, i;
    nbody_real *Y = (nbody_real *)Yb, *A, G = s->desc.G, mtot = 0, eta, sx, sy, sz;
    nbody_result r;
    int c, dh = s->desc.whfast_coordinates == NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC;
    if (dh) nbody__whfast_jump(s, C, h / 2);
    nbody__whfast_to_inertial(s, C, Y);
    s->t_stage = t;
    if ((r = nbody__derivative(s, Yb, s->k[0])) != NBODY_OK) return r;
    s->f_valid = 0;
    A = (nbody_real *)s->k[0] + 3 * n;
    {                                                    /* the centre of mass: external forces only */
        nbody_real sum[3] = {0, 0, 0};
        for (i = 0; i < n; ++i) {
            nbody_real mi = nbody__whfast_mass(s, i);
            mtot += mi;
            sum[0] += mi * A[i]; sum[1] += mi * A[n + i]; sum[2] += mi * A[2 * n + i];
        }
        for (c = 0; c < 3; ++c) C[(size_t)(c + 3) * n] += h * sum[c] / mtot;
    }
    eta = nbody__whfast_mass(s, 0);
    sx = eta * A[0]; sy = eta * A[n]; sz = eta * A[2 * n];   /* sum_{j<i} m_j a_j */
    for (i = 1; i < n; ++i) {
        nbody_real x = C[i], y = C[n + i], z = C[2 * n + i], r2 = x * x + y * y + z * z, mi = nbody__whfast_mass(s, i);
        nbody_real k = G * (dh ? s->m[0] : eta + mi) / (r2 * NBODY__SQRT(r2));
        nbody_real ax = A[i] + k * x, ay = A[n + i] + k * y, az = A[2 * n + i] + k * z;
        if (!dh) {                                       /* a'_i = a_i - (sum_{j<i} m_j a_j) / eta_{i-1} */
            ax -= sx / eta; ay -= sy / eta; az -= sz / eta;
            sx += mi * A[i]; sy += mi * A[n + i]; sz += mi * A[2 * n + i];
            eta += mi;
        }
        C[3 * n + i] += h * ax; C[4 * n + i] += h * ay; C[5 * n + i] += h * az;
    }
    if (dh) nbody__whfast_jump(s, C, h / 2);
    return NBODY_OK;
}

static nbody_result nbody__whfast_kick(nbody_sim *s, nbody_real *C, nbody_real h, nbody_real t) {
    return nbody__whfast_kick_in(s, C, h, t, s->ytmp);
}

/* Wisdom, Holman & Touma (1996) corrector stages Z(a, b) = D(a) K(-b) D(-2a) K(b) D(a), applied
   for k = 1..m as Z(-a_k h, -inv b_k h), then for k = m..1 as Z(a_k h, inv b_k h); inv = 1 applies
   the corrector, -1 its inverse. a_k = j sqrt(7/40) for stage j (order 3 turns the sign of a). */
static nbody_result nbody__whfast_corrector(nbody_sim *s, nbody_real *C, nbody_real h, nbody_real inv) {
    static const double a1 = 0.41833001326703777398908601289259374469640768464934;
    static const double b3[1] = {-0.024900596027799867499350357910273437184309981229127};
    static const double b5[2] = {-0.0083001986759332891664501193034244790614366604097090,
                                 0.041500993379666445832250596517122395307183302048545};
    static const double b7[3] = {0.0024926811426922105779030593952776964450539008582219,
                                 -0.018270923246702131478062356884535264841652263842597,
                                 0.053964399093127498721765893493510877532452806339655};
    static const double b11[5] = {0.00020361579647854651301632818774633716473696537436847,
                                  -0.0023487215292295354188307328851055489876255097419754,
                                  0.012309078592019946317544564763237909911330686448336,
                                  -0.038121613681288650508647613260247372125243616270670,
                                  0.072593394748842738674253180742744961827622366521517};
    static const double b17[8] = {-0.0000043347415473373580190650223498124944896789841432241,
                                  0.000076436355227935738363241846979413475106795392377415,
                                  -0.00063599983075817658983166881625078545864140848560259,
                                  0.0033132577069380655655490196833451994080066801611459,
                                  -0.012071760822342291062449751726959664253913904872527,
                                  0.032422198864713580293681523029577130832258806467604,
                                  -0.065192863576377893658290760803725762027864651086787,
                                  0.093056103771425958591541059067553547100903397724386};
    const double *b;
    int m, k, pass;
    nbody_result r = NBODY_OK;
    double sign = 1;
    switch (s->desc.whfast_corrector) {
    case 3: b = b3; m = 1; sign = -1; break;
    case 5: b = b5; m = 2; break;
    case 7: b = b7; m = 3; break;
    case 11: b = b11; m = 5; break;
    case 17: b = b17; m = 8; break;
    default: return NBODY_OK;
    }
    for (pass = 0; pass < 2; ++pass)
        for (k = 0; k < m && r == NBODY_OK; ++k) {
            int j = pass ? m - 1 - k : k;                    /* stage j uses a_{m-j} */
            nbody_real q = pass ? 1 : -1;
            nbody_real a = q * (nbody_real)(sign * (m - j) * a1) * h, bb = q * inv * (nbody_real)b[j] * h;
            nbody__whfast_drift(s, C, a);
            r = nbody__whfast_kick(s, C, -bb, s->t);
            if (r != NBODY_OK) break;
            nbody__whfast_drift(s, C, -2 * a);
            r = nbody__whfast_kick(s, C, bb, s->t);
            nbody__whfast_drift(s, C, a);
        }
    return r;
}

/* Two bodies at one point: WHFast's Kepler drifts and kicks then give a finite but
   meaningless state (velocities of 400, the energy's sign flipped), so it refuses them.
   Sorted by position (O(n log n)); 1 and a log line naming the pair when two coincide. */
typedef struct nbody__spot { nbody_real x, y, z; size_t i; } nbody__spot;
static int nbody__spot_cmp(const void *a, const void *b) {
    const nbody__spot *p = (const nbody__spot *)a, *q = (const nbody__spot *)b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    if (p->y != q->y) return p->y < q->y ? -1 : 1;
    if (p->z != q->z) return p->z < q->z ? -1 : 1;
    return p->i < q->i ? -1 : (p->i > q->i);
}
static int nbody__coincident(const nbody_desc *d, const nbody_real *x, const nbody_real *y, const nbody_real *z, size_t n) {
    nbody__spot *p = (nbody__spot *)NBODY_MALLOC(nbody__bytes(n, sizeof *p));
    size_t i;
    int found = 0;
    if (!p) return 0;                  /* no memory to look: the step reports what follows */
    for (i = 0; i < n; ++i) { p[i].x = x[i]; p[i].y = y[i]; p[i].z = z[i]; p[i].i = i; }
    qsort(p, n, sizeof *p, nbody__spot_cmp);
    for (i = 1; i < n && !found; ++i)
        if (p[i].x == p[i - 1].x && p[i].y == p[i - 1].y && p[i].z == p[i - 1].z) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: whfast: bodies %lu and %lu are at the same point (%g, %g, %g): "
                       "their Kepler orbits and kicks are undefined", (unsigned long)p[i - 1].i, (unsigned long)p[i].i,
                       (double)p[i].x, (double)p[i].y, (double)p[i].z);
            found = 1;
        }
    NBODY_FREE(p);
    return found;
}

/* body 0 outweighs every other body NBODY__WHFAST_DOMINANCE times: 0 and a log line when not */
static int nbody__whfast_dominant(const nbody_desc *d, const nbody_real *m, size_t n) {
    size_t i;
    for (i = 1; i < n; ++i)
        if (!(m[0] > NBODY__WHFAST_DOMINANCE * m[i])) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: whfast needs body 0 to be the central body, more than %d times as "
                       "massive as any other; body %lu has %g against m0 = %g (use radau for such systems)",
                       NBODY__WHFAST_DOMINANCE, (unsigned long)i, (double)m[i], (double)m[0]);
            return 0;
        }
    return 1;
}

/* the synchronized state of the canonical one (the inverse corrector on a copy) into Y */
static nbody_result nbody__whfast_sync(nbody_sim *s, nbody_real *Y) {
    nbody_real *T = (nbody_real *)s->whfast.copy;
    nbody_result r;
    memcpy(T, s->whfast.canonical, s->len * sizeof(nbody_real));
    if ((r = nbody__whfast_corrector(s, T, s->whfast.h, -1)) != NBODY_OK) return r;
    nbody__whfast_to_inertial(s, T, Y);
    return NBODY_OK;
}

/* canonical completed by the closing drift(h/2) its last step left out (a no-op when none is left) */
static void nbody__whfast_close(nbody_sim *s) {
    if (s->whfast.half) nbody__whfast_drift(s, (nbody_real *)s->whfast.canonical, s->whfast.h / 2);
    s->whfast.half = 0;
}

/* Deferred synchronization: inside nbody_advance, when no hook, event, archive or progress
   report reads the state between steps (and, with a corrector, no extra force, whose time
   the corrector's kicks would see otherwise), a step that is not the last one leaves out its
   closing drift(h/2) and the next step opens with drift(h) instead of drift(h/2) (the two
   half drifts joined: half the Kepler solves), and y is not synchronized (y_new = the
   inertial state the kick saw, finite-checked as usual). The last step, a step of another
   size and the end of nbody_advance close the drift and synchronize (the inverse corrector
   on a copy). drift(h) differs from drift(h/2) drift(h/2) by round-off only, so the results
   agree with a synchronization every step to round-off (not bitwise); the corrector costs its
   extra force evaluations once per call. */
static nbody_result nbody__attempt_whfast(nbody_sim *s, nbody_real h, nbody_real *err) {
    nbody_real *C = (nbody_real *)s->whfast.canonical, *T = (nbody_real *)s->whfast.copy;
    nbody_result r = NBODY_OK;
    *err = 0;
    s->whfast.pending = 0;
    if (s->whfast.defer) {                               /* not the last step of nbody_advance (step_to's rule) */
        nbody_real remaining = s->whfast.t_limit - s->t;
        s->whfast.pending = h < remaining && remaining - h >= h * (nbody_real)1e-8;
    }
    if (s->whfast.live && s->whfast.deferred && (!s->whfast.pending || s->whfast.h != h)) {
        /* y synchronized first, as the last accepted step left it: the state a failure keeps */
        nbody__whfast_close(s);
        if ((r = nbody__whfast_sync(s, (nbody_real *)s->y)) != NBODY_OK) return r;
        s->whfast.deferred = 0;
    }
    if (s->whfast.live && s->whfast.deferred) memcpy(T, C, s->len * sizeof(nbody_real));   /* kept if this fails */
    if (!s->whfast.live || s->whfast.h != h) {          /* open the canonical state from y */
        const nbody_real *Y = (const nbody_real *)s->y;
        if (!nbody__whfast_dominant(&s->desc, s->m, s->n)) return NBODY_ERR_INVALID_ARGUMENT;
        if (nbody__coincident(&s->desc, Y, Y + s->n, Y + 2 * s->n, s->n)) return NBODY_ERR_NOT_FINITE;
        nbody__whfast_from_inertial(s, Y, C);
        s->whfast.h = h;
        s->whfast.half = 0;
        r = nbody__whfast_corrector(s, C, h, 1);
    }
    s->whfast.live = 0;                                  /* until the step is accepted */
    if (r != NBODY_OK) return r;
    nbody__whfast_drift(s, C, s->whfast.half ? h : h / 2);  /* the last step's closing half joined */
    if (s->whfast.pending)                               /* y_new: the state the kick sees */
        return nbody__whfast_kick_in(s, C, h, s->t + h / 2, s->y_new);
    if ((r = nbody__whfast_kick(s, C, h, s->t + h / 2)) != NBODY_OK) return r;
    nbody__whfast_drift(s, C, h / 2);
    if (s->desc.whfast_corrector) {
        memcpy(T, C, s->len * sizeof(nbody_real));
        if ((r = nbody__whfast_corrector(s, T, h, -1)) != NBODY_OK) return r;
        nbody__whfast_to_inertial(s, T, (nbody_real *)s->y_new);
    } else {
        nbody__whfast_to_inertial(s, C, (nbody_real *)s->y_new);
    }
    return NBODY_OK;
}

static void nbody__commit_whfast(nbody_sim *s, nbody_real h) {
    (void)h;
    s->whfast.live = 1;
    s->whfast.deferred = s->whfast.pending;
    s->whfast.half = s->whfast.pending;
    s->f_valid = 0;
}

/* ======================================================================================
   >>scheduler  THE BLOCK SCHEDULER: individual power-of-two steps (Makino 1991; Makino &
   Aarseth 1992). A body's step is dt_max 2^-k at level k = 0 .. NBODY__BLOCK_LEVELS, and
   time is kept as integer ticks of the smallest step, dt_max 2^-NBODY__BLOCK_LEVELS, since
   an origin: block times are exact, and a body at level k sits at a multiple of its step.
   The next block time is the smallest t_i + dt_i; the bodies due then are the active list.
   A step halves freely, and doubles (once per step) only where the body's new time is a
   multiple of the doubled step, so every body stays on the grid of its level. A step that
   lands on a time off the grid (nbody_advance's t_end) synchronises every body there, and
   the origin moves to it.
   ====================================================================================== */

/* the step of level k in ticks */
static unsigned long long nbody__block_span(unsigned long long level) { return 1ULL << (NBODY__BLOCK_LEVELS - level); }

/* the largest step, and the time of one tick. Its default 1/16: a body on a longer step can
   run into a close encounter that its own derivatives do not see coming (measured on
   unsoftened Plummer spheres of 1024 bodies, bench/bench_hermite.c: with 1/8 one such
   encounter cost 7e-7 of the energy where 1/16 gives 1e-8, as ph4 does, for 0.5 % more body
   steps) */
static nbody_real nbody__block_dt_max(const nbody_desc *d) { return d->dt_max > 0 ? d->dt_max : (nbody_real)0.0625; }
static nbody_real nbody__block_tick(const nbody_desc *d) {
    return nbody__block_dt_max(d) * (nbody_real)(1.0 / (double)(1ULL << NBODY__BLOCK_LEVELS));
}

/* the level after a step that ended at tick t1 (nbody__block_level_of with the desc's steps) */
static unsigned long long nbody__block_level(const nbody_desc *d, unsigned long long k, nbody_real crit, unsigned long long t1) {
    return nbody__block_level_of(k, crit, t1, nbody__block_dt_max(d), d->dt_min);
}

/* the first level: the finest whose step is at most crit (no doubling to check) */
static unsigned long long nbody__block_first_level(const nbody_desc *d, nbody_real crit) {
    return nbody__block_level(d, 0, crit, 1);
}

/* the next block time, min over bodies of t_i + their step (ticks), and the bodies due then,
   in index order, into list (*count of them): one pass, the list restarted at each new minimum */
static unsigned long long nbody__block_next(const unsigned long long *const *ticks, size_t n, size_t *list, size_t *count) {
    unsigned long long next = ~0ULL;
    size_t i, c = 0;
    for (i = 0; i < n; ++i) {
        unsigned long long t = ticks[0][i] + nbody__block_span(ticks[1][i]);
        if (t > next) continue;
        if (t < next) { next = t; c = 0; }
        list[c++] = i;
    }
    *count = c;
    return next;
}

/* The census: bodies at level k all sit at the same time, the last multiple of their step at
   or before the current time (each body's time is a multiple of its step, and the current time
   lies within its step). So the next block time is the earliest end of an occupied level's
   step, and the bodies due then are those of every level whose step divides it, the levels
   k >= k0: with the bodies kept sorted by level (a bucket a level, in one array), a suffix of
   that array. A block step then costs O(levels + active bodies) here, where the times of all
   bodies cost a few times n operations (most of a step with a few active bodies among 10^4 or
   more); the suffix goes through a bitmap back into index order (n / 64 words). A state where
   a body is not where the census says (a checkpoint written otherwise) is scheduled by the
   scan of the ticks (nbody__block_next). */
static void nbody__block_census_build(nbody__block_census *c, const unsigned long long *const *ticks, size_t n, unsigned long long now) {
    size_t i, fill[NBODY__BLOCK_LEVELS + 1];
    int k;
    memset(c->start, 0, sizeof c->start);
    c->exact = 1;
    for (i = 0; i < n; ++i) {
        unsigned long long l = ticks[1][i];
        if (l > NBODY__BLOCK_LEVELS) { c->exact = 0; return; }
        c->start[l + 1]++;
        if (ticks[0][i] != now - now % nbody__block_span(l)) c->exact = 0;
    }
    for (k = 0; k <= NBODY__BLOCK_LEVELS; ++k) { c->start[k + 1] += c->start[k]; fill[k] = c->start[k]; }
    for (i = 0; i < n; ++i) { size_t p = fill[ticks[1][i]]++; c->order[p] = i; c->where[i] = p; }
    c->valid = 1;
}
static void nbody__block_census_swap(nbody__block_census *c, size_t p, size_t q) {
    size_t a = c->order[p], b = c->order[q];
    c->order[p] = b; c->order[q] = a; c->where[b] = p; c->where[a] = q;
}
/* body i moves from level k to level k1: across one bucket boundary at a time, swapped with
   the bucket's last (finer) or first (coarser) body */
static void nbody__block_census_move(nbody__block_census *c, size_t i, unsigned long long k, unsigned long long k1) {
    if (!c->valid) return;
    if (k > NBODY__BLOCK_LEVELS || k1 > NBODY__BLOCK_LEVELS) { c->valid = 0; return; }
    for (; k < k1; ++k) { nbody__block_census_swap(c, c->where[i], c->start[k + 1] - 1); c->start[k + 1]--; }
    for (; k > k1; --k) { nbody__block_census_swap(c, c->where[i], c->start[k]); c->start[k]++; }
}
static unsigned long long nbody__block_census_due(const nbody__block_census *c, unsigned long long now) {
    unsigned long long next = ~0ULL;
    int k;
    for (k = 0; k <= NBODY__BLOCK_LEVELS; ++k)
        if (c->start[k + 1] > c->start[k]) {
            unsigned long long span = nbody__block_span((unsigned long long)k), t = now - now % span + span;
            if (t < next) next = t;
        }
    return next;
}
static size_t nbody__block_census_active(const nbody__block_census *c, size_t n, unsigned long long next, size_t *list) {
    size_t p, w, m = 0;
    unsigned k0 = 0;
    while (k0 < NBODY__BLOCK_LEVELS && next % nbody__block_span(k0) != 0) ++k0;
    for (p = c->start[k0]; p < n; ++p) c->bits[c->order[p] >> 6] |= 1ULL << (c->order[p] & 63);
    for (w = 0; w < (n + 63) / 64; ++w) {
        unsigned long long x = c->bits[w];
        c->bits[w] = 0;
        for (; x; x &= x - 1) list[m++] = w * 64 + (size_t)NBODY__CTZ64(x);
    }
    return m;
}

/* Every body starts at the simulation time: tick 0 at the origin t (a start, or a restart
   after nbody_set_state or a collision) */
static void nbody__block_reset(nbody_sim *s) {
    size_t i;
    for (i = 0; i < s->n; ++i) { s->sched.ticks[0][i] = 0; s->sched.active[i] = i; }
    s->sched.origin = s->t; s->sched.now = 0;
    s->sched.census.valid = 0; s->sched.ticks_sent = 0;
}

/* After a start has put each body's first level in ticks[1]: a level past the smallest step
   fails; shared stepping puts every body on the finest */
static nbody_result nbody__block_started(nbody_sim *s, const char *method) {
    nbody__block_sched *B = &s->sched;
    unsigned long long level = 0;
    size_t i;
    for (i = 0; i < s->n; ++i)
        if (B->ticks[1][i] > level) level = B->ticks[1][i];
    if (level > NBODY__BLOCK_LEVELS) {
        nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: %s: a start step is below the smallest step dt_max 2^-%d%s at t = %g",
                   method, NBODY__BLOCK_LEVELS, s->desc.dt_min > 0 ? " or dt_min" : "", (double)s->t);
        return NBODY_ERR_STEP_TOO_SMALL;
    }
    if (s->desc.stepping == NBODY_STEPPING_SHARED)
        for (i = 0; i < s->n; ++i) B->ticks[1][i] = level;
    B->census.valid = 0;
    B->live = 1;
    return NBODY_OK;
}

/* The next step of a block-stepping method: (re)started by `begin` when the state is not
   live, then the next block time and its active bodies, or every body to t_limit exactly when
   the block time would pass it */
static nbody_result nbody__block_schedule(nbody_sim *s, nbody_real t_limit, nbody_real *h, nbody_real *t_new,
                                          nbody_result (*begin)(nbody_sim *)) {
    nbody__block_sched *B = &s->sched;
    unsigned long long next;
    nbody_real t_block;
    nbody_result r;
    if (!B->live && (r = begin(s)) != NBODY_OK) return r;
    if (!B->census.valid) nbody__block_census_build(&B->census, (const unsigned long long *const *)B->ticks, s->n, B->now);
    if (B->census.exact) next = nbody__block_census_due(&B->census, B->now);
    else next = nbody__block_next((const unsigned long long *const *)B->ticks, s->n, B->active, &B->count);
    t_block = B->origin + (nbody_real)next * nbody__block_tick(&s->desc);
    /* a block time at t_limit or before it by less than 1e-8 of the step: land on t_limit */
    B->sync = !(t_block <= t_limit && (t_block == t_limit || t_limit - t_block >= (t_block - s->t) * (nbody_real)1e-8));
    if (B->sync) {
        size_t i;
        for (i = 0; i < s->n; ++i) B->active[i] = i;
        B->count = s->n;
        *t_new = t_limit;
    } else {
        if (B->census.exact) B->count = nbody__block_census_active(&B->census, s->n, next, B->active);
        B->due = next;
        *t_new = t_block;
    }
    B->t_new = *t_new;
    *h = *t_new - s->t;
    return NBODY_OK;
}

/* the time from body i's own time to the step's (a block time, or t_new when synchronising) */
static nbody_real nbody__block_elapsed(const nbody_sim *s, size_t i) {
    const nbody__block_sched *B = &s->sched;
    nbody_real tick = nbody__block_tick(&s->desc);
    return B->sync ? (B->t_new - B->origin) - (nbody_real)B->ticks[0][i] * tick : (nbody_real)(B->due - B->ticks[0][i]) * tick;
}

/* After the active bodies' next levels are in level_new: one below the smallest step fails;
   shared stepping gives every active body the finest of them */
static nbody_result nbody__block_levels_done(nbody_sim *s, const char *method) {
    nbody__block_sched *B = &s->sched;
    unsigned long long shared = 0;
    size_t q;
    for (q = 0; q < B->count; ++q)
        if (B->level_new[q] > shared) shared = B->level_new[q];
    if (shared > NBODY__BLOCK_LEVELS) {
        nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: %s: a body's step fell below the smallest step dt_max 2^-%d%s at t = %g",
                   method, NBODY__BLOCK_LEVELS, s->desc.dt_min > 0 ? " or dt_min" : "", (double)B->t_new);
        return NBODY_ERR_STEP_TOO_SMALL;
    }
    if (s->desc.stepping == NBODY_STEPPING_SHARED)
        for (q = 0; q < B->count; ++q) B->level_new[q] = shared;
    return NBODY_OK;
}

/* the accepted step's new times and levels of the active bodies; the origin moves to a
   synchronising step's time, and to a block time where every body is due at a multiple of
   dt_max, so that the ticks stay below 2^NBODY__BLOCK_LEVELS and convert to NBODY_REAL
   exactly on any run length */
static void nbody__block_commit(nbody_sim *s) {
    nbody__block_sched *B = &s->sched;
    unsigned long long now = B->sync ? 0 : B->due;
    size_t q, n = s->n;
    for (q = 0; q < B->count; ++q) {
        nbody__block_census_move(&B->census, B->active[q], B->ticks[1][B->active[q]], B->level_new[q]);
        B->ticks[0][B->active[q]] = now;
        B->ticks[1][B->active[q]] = B->level_new[q];
    }
    if (B->sync) B->origin = B->t_new;
    B->now = now;
    if (!B->sync && B->count == n && now % nbody__block_span(0) == 0) {
        B->origin = B->t_new; B->now = 0;
        for (q = 0; q < n; ++q) B->ticks[0][q] = 0;
        B->ticks_sent = 0;
    }
    s->stats.body_steps += B->count;
}

/* the scheduler's scratch (not state: written before read) */
static nbody_result nbody__block_create(nbody_sim *s) {
    nbody__block_census *c = &s->sched.census;
    size_t n = s->n ? s->n : 1;
    s->sched.active = (size_t *)nbody__alloc(&s->desc, nbody__bytes(s->n, sizeof(size_t)));
    s->sched.level_new = (unsigned long long *)nbody__alloc(&s->desc, nbody__bytes(s->n, sizeof(unsigned long long)));
    c->order = (size_t *)nbody__alloc(&s->desc, nbody__bytes(n, sizeof(size_t)));
    c->where = (size_t *)nbody__alloc(&s->desc, nbody__bytes(n, sizeof(size_t)));
    c->bits = (unsigned long long *)nbody__alloc(&s->desc, nbody__bytes(n / 64 + 1, sizeof(unsigned long long)));
    if (c->bits) memset(c->bits, 0, (n / 64 + 1) * sizeof(unsigned long long));
    return s->sched.active && s->sched.level_new && c->order && c->where && c->bits ? NBODY_OK : NBODY_ERR_OUT_OF_MEMORY;
}

static void nbody__block_destroy(nbody_sim *s) {
    nbody__free(&s->desc, s->sched.active);
    nbody__free(&s->desc, s->sched.level_new);
    nbody__free(&s->desc, s->sched.census.order);
    nbody__free(&s->desc, s->sched.census.where);
    nbody__free(&s->desc, s->sched.census.bits);
}

/* ======================================================================================
   >>hermite  HERMITE (NBODY_HERMITE): predictor, engine forces, corrector, on the block
   scheduler. 4th order: Makino & Aarseth (1992), the step from Aarseth's criterion;
   6th order: Nitadori & Makino (2008), with the snap from the force kernel and their
   generalised criterion. A step (block or shared):
     1. the engine predicts every body to the step's time (its Taylor series from its own
        time: x, v to the jerk (4th) or crackle (6th) term; a too for the 6th order's snap);
     2. the engine computes a, jerk (snap) of the active bodies from the predicted sources;
     3. each active body is corrected (Hermite interpolation of its forces at both ends), the
        higher derivatives at the new time come from that interpolation, and its next level
        from the criterion.
   y holds every body predicted to t (corrected ones exactly): nbody_get_state, hooks,
   collisions and exit conditions see that synchronised state. The state stays in the
   engine's buffers (device memory on the GPU engines). The GPU engines run steps 1-3 themselves
   (ops.hermite_step: only the list and the levels move); on the CPU engines the correction is
   computed here from the active bodies' rows that the engine gathers (nbody__hermite_op) and
   goes back through nbody__hermite_store. Both run the shared formulas nbody__hermite_correct,
   nbody__hermite_criterion and nbody__block_level_of.
   ====================================================================================== */

/* the start step (Aarseth 2003, eq. 2.14): eta_s |a| / |jerk|, with eta_s = 0.01 sqrt(eta / 0.02)
   (Aarseth's 0.01 at order 4's default eta; the first step is the one no higher derivative
   checks, so it is short at either order) */
static nbody_real nbody__hermite_start_step(nbody_real eta, nbody_real a, nbody_real j) {
    nbody_real eta_s = (nbody_real)0.01 * NBODY__SQRT(eta / (nbody_real)0.02);
    return j > 0 ? eta_s * a / j : (nbody_real)HUGE_VAL;
}

/* evaluations of the engine's operation on `bodies` active bodies in all, in the stats */
static void nbody__hermite_count(nbody_sim *s, unsigned long long evals, unsigned long long bodies) {
    s->stats.force_evals += evals;
    s->stats.interactions += bodies * (unsigned long long)nbody__n_src(&s->eng);
}

/* the engine's operation for the bodies `list` at the step to `now` (span < 0) or to the
   origin + span (a synchronising step), counted in the stats */
static void nbody__hermite_op_fill(nbody_sim *s, const size_t *list, size_t count, unsigned long long now, nbody_real span,
                                   nbody__hermite_op *op) {
    op->base = s->hermite.base; op->force = s->hermite.force; op->high = s->hermite.high;
    op->ticks = s->sched.ticks[0]; op->ticks_all = !s->sched.ticks_sent; op->now = now; op->tick = nbody__block_tick(&s->desc);
    op->span = span; op->order = s->desc.order; op->pred = s->y_new; op->pred_acc = s->ytmp;
    op->list = list; op->count = count; op->n_src = nbody__n_src(&s->eng); op->out = s->hermite.out;
}
static void nbody__hermite_op_for(nbody_sim *s, const size_t *list, size_t count, unsigned long long now, nbody_real span,
                                  nbody__hermite_op *op) {
    nbody__hermite_op_fill(s, list, count, now, span, op);
    nbody__hermite_count(s, 1, count);
}
static nbody_result nbody__hermite_forces(nbody_sim *s, const size_t *list, size_t count, unsigned long long now, nbody_real span) {
    nbody__hermite_op op;
    nbody_result r;
    nbody__hermite_op_for(s, list, count, now, span, &op);
    if ((r = s->eng.ops->hermite(&s->eng, &op)) == NBODY_OK) s->sched.ticks_sent = 1;
    return r;
}

/* the corrected active bodies (H->next) into the engine: x, v into y_new (commit 0), or all
   of it into base, force, high at the time now (commit 1) */
static nbody_result nbody__hermite_store_next(nbody_sim *s, int commit, unsigned long long now) {
    nbody__hermite_store op;
    op.pred = s->y_new; op.base = s->hermite.base; op.force = s->hermite.force; op.high = s->hermite.high;
    op.list = s->sched.active; op.count = s->sched.count; op.next = s->hermite.next; op.now = now; op.commit = commit;
    return s->eng.ops->hermite_store(&s->eng, &op);
}

/* Start (or restart, after nbody_set_state or a collision) from y at t: every body's own
   time is t, its a, jerk (and snap) from the engine, its first level from the start step. */
static nbody_result nbody__hermite_begin(nbody_sim *s) {
    nbody__hermite_state *H = &s->hermite;
    size_t n = s->n, i;
    nbody_real *o = H->out;
    nbody__lincomb copy;
    nbody_result r;
    int pass;
    memset(&copy, 0, sizeof copy);     /* base = y; force, high = 0 (h = 0, no terms): in the engine's buffers */
    copy.out = H->base; copy.y = s->y; copy.len = s->len;
    if ((r = s->eng.ops->lincomb(&s->eng, &copy)) != NBODY_OK) return r;
    copy.y = NULL; copy.out = H->force;
    if ((r = s->eng.ops->lincomb(&s->eng, &copy)) != NBODY_OK) return r;
    copy.out = H->high;
    if ((r = s->eng.ops->lincomb(&s->eng, &copy)) != NBODY_OK) return r;
    nbody__block_reset(s);
    for (pass = 0; pass < (s->desc.order == 6 ? 2 : 1); ++pass) {   /* the snap needs the predicted a */
        if ((r = nbody__hermite_forces(s, s->sched.active, n, 0, 0)) != NBODY_OK) return r;
        if ((r = s->eng.ops->upload(&s->eng, H->force, 0, o, 6 * n)) != NBODY_OK) return r;   /* rows a, jerk */
        if (pass && (r = s->eng.ops->upload(&s->eng, H->high, 0, o + 6 * n, 3 * n)) != NBODY_OK) return r;
    }
    for (i = 0; i < 9 * n; ++i)
        if (!nbody__isfinite(o[i]) && (i < 6 * n || s->desc.order == 6)) {
            nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: hermite: the forces on body %lu are NaN/Inf at t = %g (coincident "
                       "bodies without softening?)", (unsigned long)(i % n), (double)s->t);
            return NBODY_ERR_NOT_FINITE;
        }
    for (i = 0; i < n; ++i) {
        nbody_real a = nbody__norm3(o[i], o[n + i], o[2 * n + i]);
        nbody_real j = nbody__norm3(o[3 * n + i], o[4 * n + i], o[5 * n + i]);
        s->sched.ticks[1][i] = nbody__block_first_level(&s->desc, nbody__hermite_start_step(s->desc.timestep_eta, a, j));
    }
    return nbody__block_started(s, "hermite");
}

/* the finest level whose step the times up to t_limit resolve (t + step > t), so that every
   block time the engine takes on its own is one nbody__step_to would take */
static unsigned long long nbody__hermite_resolved_level(const nbody_sim *s, nbody_real t_limit) {
    nbody_real t = NBODY__FABS(s->t) > NBODY__FABS(t_limit) ? NBODY__FABS(s->t) : NBODY__FABS(t_limit);
    nbody_real step = nbody__block_dt_max(&s->desc);
    unsigned long long k = 0;
    while (k < NBODY__BLOCK_LEVELS && t + step / 8 > t) { step /= 2; ++k; }   /* a step of 2 ulp or more */
    return k;
}

/* Block steps on the engine itself (ops.hermite_run) ahead of the step that nbody__step_to
   takes, while nothing watches the steps in between (hermite.run) and the census is exact: a
   step with a few active bodies costs a GPU's launches and a wait on the host some ten times
   its arithmetic, which a run of steps on the device does not pay. The engine takes the steps
   the scheduler and hermite_step would, with the same bits, so the stats and the state are
   those of one nbody__step_to each. It stops before a step the host takes: every body active
   (the origin may move there), a block time within 4e-8 dt_max of t_limit (the synchronising
   step may land there), a step whose new level is refused or finer than the block times
   resolve. */
static nbody_result nbody__hermite_run_engine(nbody_sim *s, nbody_real t_limit) {
    nbody__block_sched *B = &s->sched;
    nbody__hermite_run run;
    nbody_real tick = nbody__block_tick(&s->desc), dt_max = nbody__block_dt_max(&s->desc), left, t_k;
    nbody_real margin = (nbody_real)4e-8 * dt_max + 8 * nbody__eps() * (NBODY__FABS(t_limit) + NBODY__FABS(s->sched.origin));
    unsigned long long span0 = nbody__block_span(0), next, k0 = 0;
    size_t i;
    nbody_result r;
    if (!s->hermite.run || !s->eng.ops->hermite_run || !B->live || s->desc.stepping == NBODY_STEPPING_SHARED || s->n < 2) return NBODY_OK;
    if (!B->census.valid) nbody__block_census_build(&B->census, (const unsigned long long *const *)B->ticks, s->n, B->now);
    run.max_level = nbody__hermite_resolved_level(s, t_limit);
    if (!B->census.exact || B->census.start[NBODY__BLOCK_LEVELS + 1] > B->census.start[run.max_level + 1]) return NBODY_OK;
    next = nbody__block_census_due(&B->census, B->now);
    while (k0 < NBODY__BLOCK_LEVELS && next % nbody__block_span(k0) != 0) ++k0;
    if (s->n - B->census.start[k0] > s->hermite.run_cap) return NBODY_OK;     /* the next step is the host's */
    /* the block times taken here end before tick_stop, where t_limit - t stays above twice what
       nbody__block_schedule's test for a synchronising step asks (1e-8 of a step <= dt_max) */
    left = (t_limit - margin - B->origin) / tick;
    if (!(left > (nbody_real)(B->now + 1))) return NBODY_OK;
    run.tick_stop = left > (nbody_real)(2 * span0) ? 2 * span0 : (unsigned long long)left;
    t_k = B->origin + (nbody_real)(run.tick_stop - 1) * tick;
    if (!(t_k < t_limit && t_limit - t_k >= (nbody_real)2e-8 * dt_max) || next >= run.tick_stop) return NBODY_OK;
    nbody__hermite_op_fill(s, NULL, 0, 0, -1, &run.op);
    run.other = s->y; run.level = B->ticks[1]; run.now = B->now; run.max_active = s->n;
    run.eta = s->desc.timestep_eta; run.dt_max = dt_max; run.dt_min = s->desc.dt_min;
    r = s->eng.ops->hermite_run(&s->eng, &run);
    nbody__hermite_count(s, run.steps, run.body_steps);
    s->hermite.run_cap = run.max_active;
    if (r != NBODY_OK) {
        B->live = 0;   /* the engine's state is unknown: the next step restarts from y */
        return r;
    }
    B->ticks_sent = 1;
    if (run.steps == 0) return NBODY_OK;
    for (i = 0; i < s->n; ++i) B->ticks[0][i] = run.last & ~(nbody__block_span(B->ticks[1][i]) - 1);   /* spans: powers of two */
    B->census.valid = 0;
    B->now = B->due = run.last;
    if (run.steps % 2) nbody__swap(&s->y, &s->y_new);
    s->t = B->origin + (nbody_real)run.last * tick;
    s->stats.steps += run.steps;
    s->stats.body_steps += run.body_steps;
    s->stats.dt = (s->t - (B->origin + (nbody_real)run.prev * tick));
    return NBODY_OK;
}

static nbody_result nbody__schedule_hermite(nbody_sim *s, nbody_real t_limit, nbody_real *h, nbody_real *t_new) {
    nbody_result r = s->sched.live ? nbody__hermite_run_engine(s, t_limit) : NBODY_OK;
    if (r != NBODY_OK) return r;
    return nbody__block_schedule(s, t_limit, h, t_new, nbody__hermite_begin);
}

/* active body q's forces and state at its own time (the engine's rows, nbody__hermite_correct's b) */
static void nbody__hermite_gather(const nbody_sim *s, size_t q, nbody_real *b) {
    size_t m = s->sched.count;
    int k;
    for (k = 0; k < 24; ++k) b[k] = s->hermite.out[(size_t)k * m + q];
}

static nbody_result nbody__hermite_not_finite(const nbody_sim *s, size_t i) {
    nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: hermite: body %lu became NaN/Inf in the step from t = %g", (unsigned long)i,
               (double)s->t);
    return NBODY_ERR_NOT_FINITE;
}

/* the host's correction of the active bodies from the engine's rows: into next (and y_new).
   The threads share the bodies of a large step (each body's own arithmetic: the same bits); a
   body that is not finite gets the level NBODY__BLOCK_LEVELS + 2, logged after the loop. */
static nbody_result nbody__hermite_correct_host(nbody_sim *s, unsigned long long next, nbody_real span) {
    nbody__block_sched *B = &s->sched;
    long long q, m = (long long)B->count;
    int threads = nbody__threads(&s->desc);
    nbody_result r;
    (void)threads;
    if ((r = nbody__hermite_forces(s, B->active, B->count, next, span)) != NBODY_OK) return r;
    NBODY__PRAGMA(omp parallel for schedule(static) num_threads(threads) if (threads > 1 && m >= 256))
    for (q = 0; q < m; ++q) {
        size_t i = B->active[q];
        nbody_real b[24], d[6], *nx = s->hermite.next + 18 * (size_t)q;
        int k, finite = 1;
        nbody__hermite_gather(s, (size_t)q, b);
        nbody__hermite_correct(s->desc.order, b, nbody__block_elapsed(s, i), nx, d);
        for (k = 0; k < 18; ++k) finite = finite && nbody__isfinite(nx[k]);
        B->level_new[q] = finite ? nbody__block_level(&s->desc, B->ticks[1][i],
                                                      nbody__hermite_criterion(s->desc.order, s->desc.timestep_eta, d), next)
                                 : NBODY__BLOCK_LEVELS + 2;
    }
    for (q = 0; q < m; ++q)
        if (B->level_new[q] == NBODY__BLOCK_LEVELS + 2) return nbody__hermite_not_finite(s, B->active[q]);
    return NBODY_OK;
}

/* the engine's correction (ops.hermite_step): only the new levels come back. The step is in
   the engine's state at once; a step refused here (a value not finite, a level below the
   smallest step) is undone there. An engine fault leaves the state unknown: the next step
   restarts from y. */
static nbody_result nbody__hermite_correct_engine(nbody_sim *s, unsigned long long next, nbody_real span) {
    nbody__block_sched *B = &s->sched;
    nbody__hermite_op op;
    nbody__hermite_levels lv;
    size_t q;
    nbody_result r;
    nbody__hermite_op_for(s, B->active, B->count, next, span, &op);
    lv.level = B->ticks[1]; lv.level_new = B->level_new;
    lv.eta = s->desc.timestep_eta; lv.dt_max = nbody__block_dt_max(&s->desc); lv.dt_min = s->desc.dt_min;
    if ((r = s->eng.ops->hermite_step(&s->eng, &op, &lv)) != NBODY_OK) {
        B->live = 0;
        return r;
    }
    B->ticks_sent = 1;
    for (q = 0; q < B->count && r == NBODY_OK; ++q)
        if (B->level_new[q] == NBODY__BLOCK_LEVELS + 2) r = nbody__hermite_not_finite(s, B->active[q]);
    if (r == NBODY_OK) r = nbody__block_levels_done(s, "hermite");
    if (r != NBODY_OK && nbody__hermite_store_next(s, -1, next) != NBODY_OK) B->live = 0;
    return r;
}

/* The step: forces on the active bodies at the predicted state (into y_new, every body
   there), each corrected (into y_new) and its next level into level_new, on the engine where
   it can (ops.hermite_step: in the engine's state at once), else here, where the state in
   base, force, high changes only in the commit; the ticks change in the commit. */
static nbody_result nbody__attempt_hermite(nbody_sim *s, nbody_real h, nbody_real *err) {
    nbody__block_sched *B = &s->sched;
    nbody_real span = B->sync ? B->t_new - B->origin : -1;
    unsigned long long next = B->sync ? 0 : B->due;
    nbody_result r;
    (void)h;
    *err = 0;
    if (s->eng.ops->hermite_step) return nbody__hermite_correct_engine(s, next, span);
    if ((r = nbody__hermite_correct_host(s, next, span)) != NBODY_OK) return r;
    if ((r = nbody__block_levels_done(s, "hermite")) != NBODY_OK) return r;
    return nbody__hermite_store_next(s, 0, next);
}

static void nbody__commit_hermite(nbody_sim *s, nbody_real h) {
    (void)h;
    /* the engine keeps the rows of the attempt's store (host engines: a copy), so this cannot
       fail but on a device fault: then the integration restarts from y. An engine that steps
       itself (ops.hermite_step) has the step in place already. */
    if (!s->eng.ops->hermite_step && nbody__hermite_store_next(s, 1, s->sched.sync ? 0 : s->sched.due) != NBODY_OK)
        s->sched.live = 0;
    nbody__block_commit(s);
}

/* scratch of the steps (not state: written before read) */
static nbody_result nbody__hermite_create(nbody_sim *s) {
    nbody__hermite_state *H = &s->hermite;
    size_t n = s->n;
    H->out = (nbody_real *)nbody__alloc(&s->desc, nbody__bytes(n, 42 * sizeof(nbody_real)));
    if (nbody__block_create(s) != NBODY_OK || !H->out || nbody__bytes(n, 42 * sizeof(nbody_real)) == 0) return NBODY_ERR_OUT_OF_MEMORY;
    if (!s->eng.ops->hermite || !s->eng.ops->hermite_store) {
        nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: hermite does not run on the %s engine in this configuration (several "
                   "OpenCL devices: one device only)", s->eng.ops->name);
        return NBODY_ERR_UNAVAILABLE;
    }
    H->next = H->out + 24 * n;
    H->run_cap = (size_t)-1;
    return NBODY_OK;
}

static void nbody__hermite_destroy(nbody_sim *s) {
    nbody__block_destroy(s);
    nbody__free(&s->desc, s->hermite.out);
}

/* ======================================================================================
   >>kdk  THE TREE LEAPFROG'S BLOCK STEPS (NBODY_LEAPFROG with NBODY_STEPPING_BLOCK): kick-drift-
   kick with a power-of-two step per body on the block scheduler, as GADGET does (Springel
   2005, section 4; Springel et al. 2021 for GADGET-4). Every body drifts at every block step
   (y' = y + h kick: positions with the velocity of each body's last opening kick, and the
   synchronised velocities with its acceleration); the engine computes the forces of the
   active bodies only, from every body at their drifted positions; each active body takes its
   closing half kick, its next level from the criterion, and its opening half kick:
       v1 = v_open - a0 (dt - e) / 2 + a e / 2,   v_open' = v1 + a dt' / 2
   where v_open and a0 are those of its last kick, dt its step, e the time since that kick
   (e = dt at a block time; less in the synchronising step that lands on t_end), dt' its next
   step. The step criterion is GADGET's dt = sqrt(2 eta softening / |a|) (desc.timestep_eta),
   bounded by the change of the body's force since its last kick (nbody__kdk_change).
   y holds every body at t (active ones exactly kicked, the others' velocities predicted with
   their last acceleration): nbody_get_state, hooks, collisions and exit conditions see it.
   ====================================================================================== */

static nbody_real nbody__kdk_criterion(const nbody_desc *d, nbody_real ax, nbody_real ay, nbody_real az) {
    nbody_real a = nbody__norm3(ax, ay, az);
    return a > 0 ? NBODY__SQRT(2 * d->timestep_eta * d->softening / a) : (nbody_real)HUGE_VAL;
}

/* The second step bound, from the change of a body's force: dt <= jerk |a| e / |a - a0|, with a
   the force at this kick, a0 the force at its last kick (kick's second half: the kicks keep it,
   so the bound costs no evaluation) and e the time between them, an Aarseth-like |a| / |da/dt|
   whose derivative is the difference. GADGET's criterion looks at |a| alone and gives long
   steps where the force is weak but turning fast: the galaxies' centres, bodies crossing the
   other galaxy's core, where the collision loses most of its energy. The smaller of the two
   decides. jerk = nbody__kdk_jerk; a - a0 also holds the tree's force error (a refitted or
   rebuilt tree moves a force by it at once), so a factor below 1 shortens steps for that noise
   and the levels flicker: bench/results/treeblock-criterion-2026-11-27.md measured 1 (the
   2^16 collision's abs(dE/E) on TREE 4-10x lower for 4 % more body steps), 0.5 worse than
   none. CUDA_TREE's device levels compute it with these operations in this order (no fma).
   It applies from nbody__kdk_jerk_from attracting bodies: over 8 seeds of the collision it
   lowered the error at 8192 (7 of 8) and above, was neutral at 4096 and raised it at 2048 (8 of
   8), where a body's force also turns as single neighbours pass
   (bench/results/treeblock-bound-2026-11-27.md). */
static double nbody__kdk_jerk = 1.0;
static size_t nbody__kdk_jerk_from = 8192;

/* the factor of this simulation's bound: nbody__kdk_jerk from nbody__kdk_jerk_from attracting
   bodies, 0 (off) below */
static nbody_real nbody__kdk_jerk_of(const nbody_sim *s) {
    return nbody__n_src(&s->eng) >= nbody__kdk_jerk_from ? (nbody_real)nbody__kdk_jerk : 0;
}

static nbody_real nbody__kdk_change(nbody_real jerk, nbody_real ax, nbody_real ay, nbody_real az, nbody_real bx, nbody_real by,
                                    nbody_real bz, nbody_real e) {
    nbody_real d = nbody__norm3(ax - bx, ay - by, az - bz);
    return jerk > 0 && d > 0 ? jerk * nbody__norm3(ax, ay, az) * e / d : (nbody_real)HUGE_VAL;
}

/* body i's step bound at a kick with force a, a time e after its last kick: the smaller of the
   two criteria (jerk: nbody__kdk_jerk_of), a0 (3n, kick's second half) holding the force of that kick */
static nbody_real nbody__kdk_bound(const nbody_desc *d, nbody_real jerk, nbody_real ax, nbody_real ay, nbody_real az, const nbody_real *a0,
                                   size_t n, size_t i, nbody_real e) {
    nbody_real crit = nbody__kdk_criterion(d, ax, ay, az);
    nbody_real change = nbody__kdk_change(jerk, ax, ay, az, a0[i], a0[n + i], a0[2 * n + i], e);
    return change < crit ? change : crit;
}

/* The tree the forces walk is built afresh when the walks since its last build add up to
   nbody__kdk_rebuild n bodies, and at every step where all bodies are active (the largest
   steps, a start, a synchronising step), where a build costs a tenth of the walks; at the
   other steps it is refitted to the drifted positions (nbody__active_op): the opening test
   stays the build's bound, but nodes grown with their bodies' motion are opened more often,
   so an old tree walks slower. The fraction balances the two: bench/bench_treeblock.c. */
static double nbody__kdk_rebuild = 1.0;

/* The neighbour time-step limiter (Saitoh & Makino 2009): an active body's next level is at
   least the finest level among its neighbours, the bodies whose forces on it the tree walk sums
   directly (the bodies of the buckets it opens), minus nbody__kdk_limit: its step at most
   2^nbody__kdk_limit times theirs. GADGET's criterion sees an encounter only in a body's
   acceleration at its last kick: a disc star on a long step meets a galaxy's core within that
   step, and the run heats; with the limiter the levels fall off gradually around fine-stepped
   regions (bench/results/treeblock-limiter-2026-11-27.md: factor 4 as Saitoh & Makino's; 2
   measured worse). Negative: off. An engine that does not gather the neighbour levels steps
   without it: OPENCL_TREE, and CUDA_TREE unless its switch is on (nbody__cuda_kdk_limiter in
   nbody_cuda.cu: measured worse there). On, CUDA_TREE gathers them on the device (its leaves are
   single bodies: the neighbours are the leaves a walk reaches, the body's own among them) and
   applies this rule in its own steps too (nbody__kdk_levels, nbody__kdk_run).
   Wake-ups (nbody__kdk_wake; off: on the collision they lowered no error and cost 60-100 % more
   CPU time): a body that is not active, and whose step is longer than the criterion asks for
   the largest pull of an active neighbour on it, ends its step at this block time (Durier &
   Dalla Vecchia 2012): its position loses the part of its opening half kick not taken
   (nbody__kdk_wake_shift; nbody__kdk_shift 0 leaves it, for that measurement), its closing kick
   covers the time since its last kick, as the synchronising step's does, and its next level is
   one whose grid holds this time. */
static int nbody__kdk_limit = 2;
static int nbody__kdk_wake = 0, nbody__kdk_shift = 1;

/* the accelerations of the bodies list[0 .. count) at the positions of y into out, from a tree
   built afresh (build = 1), the refitted tree of kdk.tree, or (same = 1) that tree as the
   previous call left it; neighbour_level not NULL: the neighbour levels into neighbour_level (count), and the reach
   of each neighbour into kdk.reach when wake = 1 */
static nbody_result nbody__kdk_forces(nbody_sim *s, nbody__buf y, const size_t *list, size_t count, int build, int same,
                                      nbody_real *out, unsigned long long *neighbour_level, int wake) {
    const nbody_real *a = out;
    nbody__active_op op;
    nbody_result r;
    size_t q;
    s->stats.force_evals += !same;    /* the woken bodies' walk completes the step's evaluation */
    op.y = y; op.list = list; op.count = count; op.out = out;
    op.build = build || !s->kdk.tree_live; op.order = s->kdk.tree[0]; op.wrote = 0; op.same = same;
    op.level = neighbour_level && (nbody__kdk_limit >= 0 || nbody__kdk_wake) ? s->sched.ticks[1] : NULL; op.neighbour_level = neighbour_level;
    op.reach = wake && nbody__kdk_wake ? s->kdk.reach : NULL;
    /* a pull that the criterion meets with a step of dt_max wakes nobody */
    op.reach_min = 2 * s->desc.timestep_eta * s->desc.softening / (nbody__block_dt_max(&s->desc) * nbody__block_dt_max(&s->desc));
    op.neighbours = 0;
    if ((r = s->eng.ops->active_forces(&s->eng, &op)) != NBODY_OK) return r;
    if (!same) { s->kdk.tree_built = op.build; s->kdk.tree_wrote = op.wrote; s->kdk.walked_neighbours = op.neighbours; }
    for (q = 0; q < 3 * count; ++q)
        if (!nbody__isfinite(a[q])) {
            nbody__log(&s->desc, NBODY_LOG_ERROR, "nbody: leapfrog: the force on body %lu is NaN/Inf at t = %g (coincident "
                       "bodies, or a position that is not finite)", (unsigned long)list[q % count], (double)s->sched.t_new);
            return NBODY_ERR_NOT_FINITE;
        }
    return NBODY_OK;
}

/* after a step's forces: the tree's age in walks, and whether its order is known */
static void nbody__kdk_tree_used(nbody_sim *s, size_t count) {
    s->kdk.tree_live = s->kdk.tree_wrote;
    s->kdk.tree_age = (s->kdk.tree_built ? 0 : s->kdk.tree_age) + count;
}

/* the kicks (nbody__kick_op) of the bodies list[0 .. count) with their accelerations acc and
   coefficients coef */
static nbody_result nbody__kdk_kick(nbody_sim *s, nbody__buf y, const size_t *list, size_t count, const nbody_real *acc,
                                    const nbody_real *coef) {
    nbody__kick_op op;
    nbody_result r;
    size_t q, c, n = s->n;
    op.y = y; op.kick = s->kdk.kick; op.list = list; op.count = count; op.acc = acc; op.coef = coef;
    r = count ? s->eng.ops->kick(&s->eng, &op) : NBODY_OK;
    if (r != NBODY_OK) s->kdk.a0_valid = 0;
    for (c = 0; s->kdk.a0_valid && c < 3; ++c)      /* kick.a0 = a: the host's copy follows */
        for (q = 0; q < count; ++q) s->kdk.a0[c * n + list[q]] = acc[c * count + q];
    return r;
}

/* kdk.a0 current: read back from kick's second half where a step on the engine kicked with its
   own copy, or after a load */
static nbody_result nbody__kdk_a0(nbody_sim *s) {
    nbody_result r;
    if (s->kdk.a0_valid) return NBODY_OK;
    r = s->eng.ops->download(&s->eng, s->kdk.a0, s->kdk.kick, 3 * s->n, 3 * s->n);
    s->kdk.a0_valid = r == NBODY_OK;
    return r;
}

/* Start (or restart, after nbody_set_state or a collision) from y at t: the forces on every
   body, its first level from the criterion, and its opening half kick (both halves of kick
   start as y's velocities, so the closing terms are zero times finite numbers) */
static nbody_result nbody__kdk_begin(nbody_sim *s) {
    nbody__block_sched *B = &s->sched;
    nbody__lincomb copy = nbody__op(s->kdk.kick, s->y, 0, 3 * s->n);
    nbody_real *a = s->kdk.acc, *c = s->kdk.coef, dt_max = nbody__block_dt_max(&s->desc);
    size_t i, n = s->n;
    nbody_result r;
    nbody__block_reset(s);
    memset(s->kdk.reach, 0, n * sizeof(long long));
    B->count = n; B->t_new = s->t;
    if ((r = nbody__kdk_forces(s, s->y, B->active, n, 1, 0, a, NULL, 0)) != NBODY_OK) return r;
    nbody__kdk_tree_used(s, n);
    for (i = 0; i < n; ++i) B->ticks[1][i] = nbody__block_first_level(&s->desc, nbody__kdk_criterion(&s->desc, a[i], a[n + i], a[2 * n + i]));
    if ((r = nbody__block_started(s, "leapfrog")) != NBODY_OK) return r;
    for (i = 0; i < n; ++i) {
        c[i] = c[n + i] = 0;
        c[2 * n + i] = dt_max / (nbody_real)(1ULL << B->ticks[1][i]) / 2;
    }
    copy.y_off = 3 * n;
    r = s->eng.ops->lincomb(&s->eng, &copy);
    copy.out_off = 3 * n;
    if (r == NBODY_OK) r = s->eng.ops->lincomb(&s->eng, &copy);
    s->kdk.a0_valid = 1;               /* every body is kicked: the copy is its acceleration */
    if (r == NBODY_OK) r = nbody__kdk_kick(s, s->y, B->active, n, a, c);
    if (r != NBODY_OK) B->live = s->kdk.a0_valid = 0;
    return r;
}

/* Block steps on the engine itself (ops.kdk_run) ahead of the step that nbody__step_to takes,
   while nothing watches the steps in between (kdk.run), the census is exact and the engine
   holds the tree (tree_live): a GPU then takes a block step in a few launches with no wait
   (the host's scheduling, the list up, the levels back and the wait cost some 200 us a step,
   more than the kernels of a step with few active bodies). The engine takes the steps that
   nbody__block_schedule and nbody__attempt_kdk would, with the same bits, so the stats, the
   state and the tree's age and order are those of one nbody__step_to each. It stops before a
   step the host takes: a block time within 4e-8 dt_max of t_limit (the synchronising step may
   land there), a step whose new level is refused or finer than the block times resolve (the
   host names it). */
static nbody_result nbody__kdk_run_engine(nbody_sim *s, nbody_real t_limit) {
    nbody__block_sched *B = &s->sched;
    nbody__kdk_run run;
    nbody_real tick = nbody__block_tick(&s->desc), dt_max = nbody__block_dt_max(&s->desc), left, t_k;
    nbody_real margin = (nbody_real)4e-8 * dt_max + 8 * nbody__eps() * (NBODY__FABS(t_limit) + NBODY__FABS(B->origin));
    unsigned long long next;
    size_t i;
    nbody_result r;
    if (!s->kdk.run || !s->eng.ops->kdk_run || !B->live || !s->kdk.tree_live || s->n < 2) return NBODY_OK;
    if (!B->census.valid) nbody__block_census_build(&B->census, (const unsigned long long *const *)B->ticks, s->n, B->now);
    run.max_level = nbody__hermite_resolved_level(s, t_limit);
    if (!B->census.exact || B->census.start[NBODY__BLOCK_LEVELS + 1] > B->census.start[run.max_level + 1]) return NBODY_OK;
    next = nbody__block_census_due(&B->census, B->now);
    left = (t_limit - margin - B->origin) / tick;      /* as nbody__hermite_run_engine */
    if (!(left > (nbody_real)(B->now + 1))) return NBODY_OK;
    run.tick_stop = left > (nbody_real)(1ULL << 62) ? 1ULL << 62 : (unsigned long long)left;
    t_k = B->origin + (nbody_real)(run.tick_stop - 1) * tick;
    if (!(t_k < t_limit && t_limit - t_k >= (nbody_real)2e-8 * dt_max) || next >= run.tick_stop) return NBODY_OK;
    run.y = s->y; run.other = s->y_new; run.kick = s->kdk.kick; run.level = B->ticks[1]; run.order = s->kdk.tree[0];
    run.now = B->now; run.age = s->kdk.tree_age;
    run.age_limit = (unsigned long long)(nbody__kdk_rebuild * (double)s->n);   /* age + m > rebuild n: nbody__attempt_kdk */
    run.t = s->t; run.origin = B->origin; run.tick = tick; run.dt_max = dt_max; run.dt_min = s->desc.dt_min;
    run.crit = 2 * s->desc.timestep_eta * s->desc.softening; run.jerk = nbody__kdk_jerk_of(s);
    run.limit = nbody__kdk_limit; run.limited = 0;
    r = s->eng.ops->kdk_run(&s->eng, &run);
    if (r != NBODY_OK || run.steps) s->kdk.a0_valid = 0;   /* the engine's kicks */
    if (r != NBODY_OK) {
        B->live = 0;   /* the engine's state is unknown: the next step restarts from y */
        return r;
    }
    if (run.built) {   /* the tree was built afresh on the device: its order is in kdk.tree */
        s->kdk.tree_live = 1;
        s->kdk.tree_age = run.age;
    }
    if (run.steps == 0) return NBODY_OK;
    s->kdk.limited += run.limited;
    for (i = 0; i < s->n; ++i) B->ticks[0][i] = run.now & ~(nbody__block_span(B->ticks[1][i]) - 1);   /* spans: powers of two */
    B->census.valid = 0;
    B->now = B->due = run.now;
    B->origin = run.origin;
    if (run.steps % 2) nbody__swap(&s->y, &s->y_new);
    s->t = run.t;
    s->kdk.tree_age = run.age;
    s->stats.steps += run.steps;
    s->stats.body_steps += run.body_steps;
    s->stats.force_evals += run.steps;
    s->stats.dt = run.dt;
    return NBODY_OK;
}

static nbody_result nbody__schedule_kdk(nbody_sim *s, nbody_real t_limit, nbody_real *h, nbody_real *t_new) {
    nbody_result r = s->sched.live ? nbody__kdk_run_engine(s, t_limit) : NBODY_OK;
    if (r != NBODY_OK) return r;
    return nbody__block_schedule(s, t_limit, h, t_new, nbody__kdk_begin);
}

/* A block time's forces, levels and kicks in one engine call (nbody__kdk_levels); *done = 0
   where the engine has none, or found a force not finite or a level out of range (nothing
   kicked: the host's path then takes the step and names the body) */
static nbody_result nbody__kdk_engine_step(nbody_sim *s, int build, int *done) {
    nbody__block_sched *B = &s->sched;
    nbody__active_op op;
    nbody__kdk_levels lv;
    nbody_result r;
    *done = 0;
    if (B->sync || !s->eng.ops->kdk_step) return NBODY_OK;
    memset(&op, 0, sizeof op);        /* the levels and the limiter's fields are lv's */
    op.y = s->y_new; op.list = B->active; op.count = B->count; op.out = NULL;
    op.build = build || !s->kdk.tree_live; op.order = s->kdk.tree[0]; op.wrote = 0;
    lv.kick = s->kdk.kick; lv.level = B->ticks[1]; lv.now = B->due;
    lv.dt_max = nbody__block_dt_max(&s->desc); lv.dt_min = s->desc.dt_min;
    lv.crit = 2 * s->desc.timestep_eta * s->desc.softening; lv.jerk = nbody__kdk_jerk_of(s);
    lv.limit = nbody__kdk_limit; lv.limited = 0;
    lv.level_new = B->level_new; lv.ok = 0;
    r = s->eng.ops->kdk_step(&s->eng, &op, &lv);
    if (r != NBODY_OK || lv.ok) s->kdk.a0_valid = 0;      /* the engine's kicks */
    if (r != NBODY_OK) return r;
    s->kdk.tree_built = op.build; s->kdk.tree_wrote = op.wrote;
    if (!lv.ok) return NBODY_OK;
    s->kdk.limited += lv.limited;
    s->stats.force_evals++;
    *done = 1;
    return NBODY_OK;
}

/* The bodies to wake, appended to the active list after its count entries, in index order
   (both lists ascending; returns how many): those not active whose step is longer than the
   criterion's for the largest pull of an active neighbour on them (kdk.reach, zeroed here) */
static size_t nbody__kdk_wake_list(nbody_sim *s) {
    nbody__block_sched *B = &s->sched;
    nbody_real tick = nbody__block_tick(&s->desc);
    size_t i, q = 0, m = B->count, w = 0;
    for (i = 0; i < s->n; ++i) {
        nbody_real pull;
        if (!s->kdk.reach[i]) continue;
        pull = nbody__real_of_key(s->kdk.reach[i]);
        s->kdk.reach[i] = 0;
        while (q < m && B->active[q] < i) ++q;
        if (q < m && B->active[q] == i) continue;
        if (nbody__kdk_criterion(&s->desc, pull, 0, 0) < (nbody_real)nbody__block_span(B->ticks[1][i]) * tick) B->active[m + w++] = i;
    }
    return w;
}

/* The woken bodies active[m .. m + w) drifted a time e since their last kick with the velocity
   of an opening half kick for their whole step dt, a0 dt / 2: their step ends at e, so the part
   of it not taken, a0 (dt - e) / 2, leaves their positions (x -= a0 (dt - e) e / 2; the closing
   kick takes it from the velocity), which makes it the kick-drift-kick step of length e */
static nbody_result nbody__kdk_wake_shift(nbody_sim *s, size_t m, size_t w) {
    nbody__block_sched *B = &s->sched;
    nbody_real dt_max = nbody__block_dt_max(&s->desc);
    nbody__lincomb op = nbody__op(s->y_new, s->y_new, 0, 1);
    nbody_result r = NBODY_OK;
    size_t q, c, n = s->n;
    op.nk = 1; op.c[0] = 1; op.k[0] = s->kdk.kick;
    for (q = m; q < m + w && r == NBODY_OK; ++q) {
        size_t i = B->active[q];
        nbody_real e = nbody__block_elapsed(s, i), dt = dt_max / (nbody_real)(1ULL << B->ticks[1][i]);
        op.h = -(dt - e) * e / 2;
        for (c = 0; c < 3 && r == NBODY_OK; ++c) {
            op.out_off = op.y_off = c * n + i; op.k_off = 3 * n + c * n + i;
            r = s->eng.ops->lincomb(&s->eng, &op);
        }
    }
    return r;
}

/* body i's next level from the criterion (crit) and the limiter: at least its neighbours'
   finest (neighbour_level) less nbody__kdk_limit, then the coarsest level whose grid holds the step's end
   t1 (a woken body ends its step off its old grid) */
static unsigned long long nbody__kdk_level(nbody_sim *s, size_t i, nbody_real crit, unsigned long long neighbour_level, unsigned long long t1) {
    unsigned long long k = nbody__block_level(&s->desc, s->sched.ticks[1][i], crit, t1), raised;
    if (k > NBODY__BLOCK_LEVELS) return k;
    raised = s->kdk.walked_neighbours ? nbody__block_limited(k, neighbour_level, nbody__kdk_limit) : k;
    if (raised != k) { k = raised; s->kdk.limited++; }
    while (k < NBODY__BLOCK_LEVELS && t1 % nbody__block_span(k) != 0) ++k;
    return k;
}

/* The step: every body drifts into y_new, the active ones' forces there (with their neighbours'
   levels), the forces of the bodies they wake (appended to the active list), the next levels of
   both, then their kicks. The kicks change the state kick, so they come last, once the step is
   known to succeed (forces finite, which needs every drifted position finite; levels in range). */
static nbody_result nbody__attempt_kdk(nbody_sim *s, nbody_real h, nbody_real *err) {
    nbody__block_sched *B = &s->sched;
    nbody__lincomb drift = nbody__op(s->y_new, s->y, h, s->len);
    nbody_real *a = s->kdk.acc, *c = s->kdk.coef, dt_max = nbody__block_dt_max(&s->desc), jerk = nbody__kdk_jerk_of(s);
    unsigned long long next = B->sync ? 0 : B->due;
    size_t q, m = B->count, w = 0, all;
    int build = m == s->n || (double)(s->kdk.tree_age + m) > nbody__kdk_rebuild * (double)s->n, done;
    nbody_result r;
    *err = 0;
    drift.nk = 1; drift.c[0] = 1; drift.k[0] = s->kdk.kick;
    if ((r = s->eng.ops->lincomb(&s->eng, &drift)) != NBODY_OK) return r;
    if ((r = nbody__kdk_engine_step(s, build, &done)) != NBODY_OK || done) return r;
    if ((r = nbody__kdk_forces(s, s->y_new, B->active, m, build, 0, a, B->level_new, 1)) != NBODY_OK) return r;
    if (s->kdk.walked_neighbours) w = nbody__kdk_wake_list(s);
    all = m + w;
    if (w && nbody__kdk_shift && (r = nbody__kdk_wake_shift(s, m, w)) != NBODY_OK) return r;
    if (w && (r = nbody__kdk_forces(s, s->y_new, B->active + m, w, 0, 1, a + 3 * m, B->level_new + m, 0)) != NBODY_OK) return r;
    if ((r = nbody__kdk_a0(s)) != NBODY_OK) return r;
    for (q = 0; q < all; ++q) {
        size_t i = B->active[q], o = q < m ? 0 : 3 * m, p = q < m ? q : q - m, k = q < m ? m : w;   /* a, c of the woken: after 3m */
        nbody_real e = nbody__block_elapsed(s, i), dt = dt_max / (nbody_real)(1ULL << B->ticks[1][i]);
        nbody_real crit = nbody__kdk_bound(&s->desc, jerk, a[o + p], a[o + k + p], a[o + 2 * k + p], s->kdk.a0, s->n, i, e);
        B->level_new[q] = nbody__kdk_level(s, i, crit, s->kdk.walked_neighbours ? B->level_new[q] : 0, next);
        c[o + p] = -(dt - e) / 2; c[o + k + p] = e / 2;
    }
    B->count = all;
    if ((r = nbody__block_levels_done(s, "leapfrog")) != NBODY_OK) { B->count = m; return r; }
    for (q = 0; q < all; ++q) {
        size_t o = q < m ? 0 : 3 * m, p = q < m ? q : q - m, k = q < m ? m : w;
        c[o + 2 * k + p] = dt_max / (nbody_real)(1ULL << B->level_new[q]) / 2;
    }
    s->kdk.woken += w;
    if ((r = nbody__kdk_kick(s, s->y_new, B->active, m, a, c)) != NBODY_OK) return r;
    return nbody__kdk_kick(s, s->y_new, B->active + m, w, a + 3 * m, c + 3 * m);
}

static void nbody__commit_kdk(nbody_sim *s, nbody_real h) {
    (void)h;
    nbody__kdk_tree_used(s, s->sched.count);
    nbody__block_commit(s);
}

/* scratch of the steps (not state: written before read) */
static nbody_result nbody__kdk_create(nbody_sim *s) {
    size_t bytes = nbody__bytes(s->n, 6 * sizeof(nbody_real)), rb = nbody__bytes(s->n, sizeof(long long));
    s->kdk.acc = (nbody_real *)nbody__alloc(&s->desc, bytes);
    s->kdk.a0 = (nbody_real *)nbody__alloc(&s->desc, bytes / 2);
    s->kdk.reach = (long long *)nbody__alloc(&s->desc, rb);
    s->kdk.a0_valid = 0;
    if (nbody__block_create(s) != NBODY_OK || !s->kdk.acc || !s->kdk.a0 || !s->kdk.reach || bytes == 0) return NBODY_ERR_OUT_OF_MEMORY;
    memset(s->kdk.reach, 0, rb);
    s->kdk.coef = s->kdk.acc + 3 * s->n;
    return NBODY_OK;
}

static void nbody__kdk_destroy(nbody_sim *s) {
    nbody__block_destroy(s);
    nbody__free(&s->desc, s->kdk.acc);
    nbody__free(&s->desc, s->kdk.a0);
    nbody__free(&s->desc, s->kdk.reach);
}

/* ======================================================================================
   >>solver_ops  SOLVER OPERATIONS: what every method is written with
   f(y) through the engine (plus the extra forces), linear combinations, the final update.
   ====================================================================================== */

static nbody_result nbody__extra_force(nbody_sim *s, nbody__buf y, nbody__buf f);

static nbody_result nbody__derivative(nbody_sim *s, nbody__buf y, nbody__buf f) {
    nbody_result r;
    s->stats.force_evals++;
    s->eng.epoch = s->stats.steps + s->stats.rejected;
    r = s->eng.ops->derivative(&s->eng, y, f);
    if (r == NBODY_OK && s->desc.extra_force) r = nbody__extra_force(s, y, f);
    return r;
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
    s->t_stage = s->t;
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

/* ======================================================================================
   >>engines  ENGINES: where the forces are computed
   The CPU engines (SIMPLE, OPENMP, BLOCK, TREE) share the host buffers below and differ
   in their derivative; GPU engines plug in through the same operations (BACKEND
   INTERFACE). First the SIMD levels the CPU kernels are built for and the CPU engines'
   state.
   ====================================================================================== */

/* ---- SIMD levels: what the build has, what the CPU has ---------------------------------
   Code shape: the library needs its kernels for its own nbody_real only, so the preprocessor
   tells float from double (NBODY__KIND), and each ISA level has one layer of one-line helpers
   over its vector of nbody_real (nbody__v512_*, nbody__v256_*) and one kernel body over that
   layer (nbody__avx512_tile, nbody__avx2_tile, ...): real functions, compiled for their ISA
   with GCC/Clang target attributes (MSVC compiles intrinsics without them) and chosen at
   nbody_create from what the CPU and the OS report (cpuid and xgetbv: nbody__x86_runs). The
   schedules around them (threads, tiles, block pairs) are written once and reach a level's
   kernels through a table (nbody__simd_kernels), once per tile or block pair, never per
   pair. Other compilers get the levels their flags turn on (__AVX2__, __AVX512F__). The
   128-bit levels, NEON (AArch64, where it is baseline: __aarch64__, _M_ARM64) and
   WebAssembly SIMD128 (-msimd128: __wasm_simd128__), are chosen by the target at compile
   time; they never meet in one build, so they share one layer name (nbody__v128_*, each ISA
   its own one-line helpers) and one kernel body. Long double and any other NBODY_REAL, other
   targets and NBODY_NO_SIMD get the portable loop only. */
#define NBODY__KIND_float 1
#define NBODY__KIND_double 2
#define NBODY__KIND_long 0 *           /* "long double" -> 0 * double -> 0 in #if */
#define NBODY__KIND_OF_(t) NBODY__KIND_##t
#define NBODY__KIND_OF(t) NBODY__KIND_OF_(t)
#if NBODY__KIND_OF(NBODY_REAL) == 1
#define NBODY__KIND 1                  /* float */
#elif NBODY__KIND_OF(NBODY_REAL) == 2
#define NBODY__KIND 2                  /* double */
#else
#define NBODY__KIND 0                  /* anything else: portable only */
#endif
#if !defined(NBODY_NO_SIMD) && NBODY__KIND != 0 && NBODY__X86
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 5) || (defined(_MSC_VER) && _MSC_VER >= 1920)
#define NBODY__SIMD_DISPATCH 1         /* every level built, the CPU decides at run time */
#define NBODY__HAVE_AVX2 1
#define NBODY__HAVE_AVX512 1
#define NBODY__TARGET_AVX2 NBODY__TARGET("avx2,fma")
#define NBODY__TARGET_AVX512 NBODY__TARGET("avx512f,avx2,fma")
#else                                  /* what the compiler flags allow */
#if defined(__AVX2__) && (defined(__FMA__) || defined(_MSC_VER))
#define NBODY__HAVE_AVX2 1
#endif
#if defined(__AVX512F__)
#define NBODY__HAVE_AVX512 1
#endif
#define NBODY__TARGET_AVX2
#define NBODY__TARGET_AVX512
#endif
#endif
#if !defined(NBODY_NO_SIMD) && NBODY__KIND != 0 && !defined(__CUDACC__)
#if defined(__aarch64__) || defined(_M_ARM64)
#define NBODY__HAVE_NEON 1
#elif defined(__wasm_simd128__)
#define NBODY__HAVE_SIMD128 1
#endif
#endif
#ifndef NBODY__SIMD_DISPATCH
#define NBODY__SIMD_DISPATCH 0
#endif
#ifndef NBODY__HAVE_NEON
#define NBODY__HAVE_NEON 0
#endif
#ifndef NBODY__HAVE_SIMD128
#define NBODY__HAVE_SIMD128 0
#endif
#define NBODY__HAVE_V128 (NBODY__HAVE_NEON || NBODY__HAVE_SIMD128)   /* a 128-bit level */
#ifndef NBODY__HAVE_AVX2
#define NBODY__HAVE_AVX2 0
#endif
#ifndef NBODY__HAVE_AVX512
#define NBODY__HAVE_AVX512 0
#endif
#if NBODY__HAVE_AVX2 || NBODY__HAVE_AVX512
#include <immintrin.h>
#if defined(__clang__) && defined(_MSC_VER) && !defined(__AVX512F__)
/* clang-cl's immintrin.h (unlike MSVC's) declares only the levels the flags turn on; the
   kernels compiled by target attribute need the rest */
#include <smmintrin.h>
#include <avxintrin.h>
#include <avx2intrin.h>
#include <fmaintrin.h>
#include <avx512fintrin.h>
#endif
#endif
#if NBODY__HAVE_NEON
#include <arm_neon.h>
#endif
#if NBODY__HAVE_SIMD128
#include <wasm_simd128.h>
#endif

/* 1 when this build has the level's kernels and this CPU runs them */
#if NBODY__SIMD_DISPATCH
/* 1 when this x86 CPU and its operating system run the level, as miniaudio detects it:
   cpuid's feature bits (leaf 1 ecx: FMA 12, OSXSAVE 27, AVX 28; leaf 7 ebx: AVX2 5,
   AVX512F 16) and XCR0, whose bits say the OS saves the registers (1-2: xmm, ymm; 5-7: the
   AVX-512 state) */
static int nbody__x86_runs(nbody_simd level) {
    unsigned int r0[4], r1[4], r7[4] = {0, 0, 0, 0};
    unsigned long long xcr0 = 0;
    int avx2, avx512;
    nbody__cpuid(0, 0, r0);
    nbody__cpuid(1, 0, r1);
    if (r0[0] >= 7) nbody__cpuid(7, 0, r7);
    if (r1[2] >> 27 & 1u) xcr0 = nbody__xgetbv0();
    avx2 = (r1[2] >> 28 & 1u) && (r1[2] >> 12 & 1u) && (r7[1] >> 5 & 1u) && (xcr0 & 0x6u) == 0x6u;
    avx512 = avx2 && (r7[1] >> 16 & 1u) && (xcr0 & 0xe6u) == 0xe6u;
    return level == NBODY_SIMD_AVX2 ? avx2 : level == NBODY_SIMD_AVX512 ? avx512 : 0;
}
#endif
static int nbody__simd_runs(nbody_simd level) {
    switch (level) {
    case NBODY_SIMD_PORTABLE: return 1;
#if NBODY__HAVE_AVX2
    case NBODY_SIMD_AVX2:
#endif
#if NBODY__HAVE_AVX512
    case NBODY_SIMD_AVX512:
#endif
#if NBODY__HAVE_AVX2 || NBODY__HAVE_AVX512
#if NBODY__SIMD_DISPATCH
        return nbody__x86_runs(level);
#else
        return 1;                      /* the compiler flags asked for it */
#endif
#endif
#if NBODY__HAVE_NEON
    case NBODY_SIMD_NEON: return 1;      /* baseline on AArch64: the build decides */
#endif
#if NBODY__HAVE_SIMD128
    case NBODY_SIMD_SIMD128: return 1;   /* a wasm engine without SIMD128 refuses the module */
#endif
    default: return 0;
    }
}
static nbody_simd nbody__simd_best(void) {
    if (nbody__simd_runs(NBODY_SIMD_AVX512)) return NBODY_SIMD_AVX512;
    if (nbody__simd_runs(NBODY_SIMD_AVX2)) return NBODY_SIMD_AVX2;
    if (nbody__simd_runs(NBODY_SIMD_NEON)) return NBODY_SIMD_NEON;
    if (nbody__simd_runs(NBODY_SIMD_SIMD128)) return NBODY_SIMD_SIMD128;
    return NBODY_SIMD_PORTABLE;
}
static const char *nbody__simd_level_name(nbody_simd level) {
    static const char *names[NBODY_SIMD_COUNT_] = {"default", "portable", "avx2", "avx512", "neon", "simd128"};
    return ((int)level >= 0 && level < NBODY_SIMD_COUNT_) ? names[level] : "unknown";
}
NBODY__DEF int nbody_simd_available(nbody_simd level) {
    if (level == NBODY_SIMD_DEFAULT) return 1;
    return ((int)level > 0 && level < NBODY_SIMD_COUNT_) && nbody__simd_runs(level);
}

/* The level a CPU engine uses: desc.simd, else the environment variable NBODY_SIMD, else the
   best this CPU runs. A level asked for and not available is an error, not a fallback. */
static nbody_result nbody__simd_choose(const nbody_desc *d, const char *engine, nbody_simd *out) {
    nbody_simd level = d->simd;
    const char *from = "desc.simd", *env = getenv("NBODY_SIMD");
    if (level == NBODY_SIMD_DEFAULT && env && *env && strcmp(env, "default") != 0) {
        int k;
        from = "NBODY_SIMD";
        for (k = 1; k < NBODY_SIMD_COUNT_; ++k) if (strcmp(env, nbody__simd_level_name((nbody_simd)k)) == 0) level = (nbody_simd)k;
        if (level == NBODY_SIMD_DEFAULT) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: NBODY_SIMD=%s is not a SIMD level (portable, avx2, avx512, neon, simd128, default)", env);
            return NBODY_ERR_INVALID_ARGUMENT;
        }
    }
    if (level == NBODY_SIMD_DEFAULT) {
        *out = nbody__simd_best();
        nbody__log(d, NBODY_LOG_INFO, "nbody: engine '%s', SIMD level %s (the best this CPU and build run)", engine, nbody__simd_level_name(*out));
        return NBODY_OK;
    }
    if (!nbody__simd_runs(level)) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: SIMD level %s (%s) is not available: %s", nbody__simd_level_name(level), from,
                   NBODY__HAVE_AVX2 || NBODY__HAVE_AVX512 || NBODY__HAVE_V128 ? "this CPU lacks it or the build left it out"
                                                          : "this build has the portable loop only (NBODY_REAL, target or NBODY_NO_SIMD)");
        return NBODY_ERR_UNAVAILABLE;
    }
    *out = level;
    nbody__log(d, NBODY_LOG_INFO, "nbody: engine '%s', SIMD level %s (from %s)", engine, nbody__simd_level_name(level), from);
    return NBODY_OK;
}
static nbody_result nbody__cpu_init(nbody__engine *e) {
    nbody__cpu *c;
    nbody_simd level;
    nbody_result r;
    int bsz = e->desc.block_size;
    if (bsz != 0 && strcmp(e->ops->name, "block") == 0 &&
        (bsz < NBODY__BLOCK_SIZE_STEP || bsz > NBODY__BLOCK_SIZE_MAX || bsz % NBODY__BLOCK_SIZE_STEP != 0)) {
        nbody__log(&e->desc, NBODY_LOG_ERROR, "nbody: block: block_size %d refused: 0 (automatic) or a multiple of %d "
                   "from %d to %d", bsz, NBODY__BLOCK_SIZE_STEP, NBODY__BLOCK_SIZE_STEP, NBODY__BLOCK_SIZE_MAX);
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    r = nbody__simd_choose(&e->desc, e->ops->name, &level);
    if (r != NBODY_OK) return r;
    c = (nbody__cpu *)nbody__alloc(&e->desc, sizeof *c);
    if (!c) return NBODY_ERR_OUT_OF_MEMORY;
    memset(c, 0, sizeof *c);
    c->m = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes(e->n, sizeof(nbody_real)));
    c->simd = level;
    if (!c->m) { nbody__free(&e->desc, c); return NBODY_ERR_OUT_OF_MEMORY; }
    memset(c->m, 0, e->n * sizeof(nbody_real));
    e->impl = c;
    if (e->desc.block_size > 0 && strcmp(e->ops->name, "block") == 0)   /* what the field does here, said once */
        nbody__log(&e->desc, NBODY_LOG_INFO, "nbody: block: block_size %d bodies per block of the symmetric kernel (a pair of "
                   "blocks is one tile of work), per scheduling chunk of the one-sided kernel and of the portable loop",
                   e->desc.block_size);
    return NBODY_OK;
}

static void nbody__tree_free(nbody__engine *e, void *tree);

static void nbody__cpu_shutdown(nbody__engine *e) {
    nbody__cpu *c = (nbody__cpu *)e->impl;
    if (!c) return;
    if (c->tree) nbody__tree_free(e, c->tree);
    nbody__free(&e->desc, c->targets);
    nbody__free(&e->desc, c->hermite_part);
    nbody__free(&e->desc, c->hermite_keep);
    nbody__free(&e->desc, c->slot);
    nbody__free(&e->desc, c->m);
    nbody__free(&e->desc, c);
    e->impl = NULL;
}

static nbody_result nbody__cpu_set_masses(nbody__engine *e, const nbody_real *m) {
    memcpy(((nbody__cpu *)e->impl)->m, m, e->n * sizeof(nbody_real));
    return NBODY_OK;
}

/* the threads a desc asks for (its default: OpenMP's); 1 in a build without OpenMP */
#if NBODY__OPENMP
static int nbody__threads(const nbody_desc *d) { return d->threads > 0 ? d->threads : omp_get_max_threads(); }
#else
static int nbody__threads(const nbody_desc *d) { (void)d; return 1; }
#endif

/* ======================================================================================
   >>host  HOST BUFFERS: the vector operations shared by every CPU engine
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

/* elements [i0, i1) of a lincomb, the loop and its body in one function: with -fopenmp a
   per-element helper called from the serial loop and from the parallel region was not
   inlined by GCC, and a few-body run paid 10-30% for the calls */
static void nbody__host_lincomb_range(const nbody__lincomb *op, nbody_real *out, const nbody_real *y, nbody_real *comp,
                                      size_t i0, size_t i1) {
    size_t i;
    for (i = i0; i < i1; ++i) {
        nbody_real d = op->h * nbody__host_terms(op, i), y0 = y ? y[i] : 0;
        if (comp) {
            out[i] = nbody__compensated_add(y0, d, &comp[i]);
        } else {
            out[i] = y0 + d;
        }
    }
}

static nbody_result nbody__host_lincomb(nbody__engine *e, const nbody__lincomb *op) {
    nbody_real *out = (nbody_real *)op->out + op->out_off;
    const nbody_real *y = op->y ? (const nbody_real *)op->y + op->y_off : NULL;
    nbody_real *comp = op->comp ? (nbody_real *)op->comp + op->out_off : NULL;
    long long len = (long long)op->len;
    (void)e;
#if NBODY__OPENMP
    if (len > NBODY__HOST_PARALLEL_MIN) {
        long long c, chunks = (len + NBODY__HOST_PARALLEL_MIN - 1) / NBODY__HOST_PARALLEL_MIN;
        NBODY__PRAGMA(omp parallel for schedule(static))
        for (c = 0; c < chunks; ++c) {
            long long lo = c * NBODY__HOST_PARALLEL_MIN, hi = lo + NBODY__HOST_PARALLEL_MIN;
            nbody__host_lincomb_range(op, out, y, comp, (size_t)lo, (size_t)(hi < len ? hi : len));
        }
        return NBODY_OK;
    }
#endif
    nbody__host_lincomb_range(op, out, y, comp, 0, (size_t)len);
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

/* x - x is 0 for a finite x and NaN for NaN and Inf, so a piece's sum of them is 0 exactly when
   the piece is finite: pieces of 4096 without a branch a value (the loop vectorises; the
   block-step methods check every body after each step) */
static nbody_result nbody__host_all_finite(nbody__engine *e, nbody__buf b, size_t off, size_t len, int *finite) {
    const nbody_real *p = (const nbody_real *)b + off;
    size_t c;
    (void)e;
    for (c = 0; c < len; c += 4096) {
        const nbody_real *q = p + c;
        long long i, m = (long long)(len - c < 4096 ? len - c : 4096);
        nbody_real z = 0;
        NBODY__PRAGMA_OMP4(omp simd reduction(+:z))
        for (i = 0; i < m; ++i) z += q[i] - q[i];
        if (!(z == 0)) { *finite = 0; return NBODY_OK; }
    }
    *finite = 1;
    return NBODY_OK;
}

/* the tree leapfrog's kicks of the active bodies (nbody__kick_op), on host buffers */
static nbody_result nbody__host_kick(nbody__engine *e, const nbody__kick_op *op) {
    nbody_real *y = (nbody_real *)op->y, *kick = (nbody_real *)op->kick;
    const nbody_real *a = op->acc, *c = op->coef;
    long long q, m = (long long)op->count;
    size_t n = e->n;
    NBODY__PRAGMA(omp parallel for schedule(static) num_threads(nbody__threads(&e->desc)) if (m > NBODY__HOST_PARALLEL_MIN / 8))
    for (q = 0; q < m; ++q) {
        size_t i = op->list[q];
        int k;
        for (k = 0; k < 3; ++k) {
            nbody_real ak = a[(size_t)k * (size_t)m + (size_t)q];
            nbody_real v1 = kick[k * n + i] + c[q] * kick[(3 + k) * n + i] + c[m + q] * ak;
            y[(3 + k) * n + i] = v1;
            kick[k * n + i] = v1 + c[2 * m + q] * ak;
            kick[(3 + k) * n + i] = ak;
        }
    }
    return NBODY_OK;
}

/* ======================================================================================
   >>direct  DIRECT FORCE KERNELS (SIMPLE, OPENMP, BLOCK)
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

/* defined below in >>direct */
static void nbody__accel_simple(const nbody__forces *f);
static void nbody__accel_openmp(const nbody__forces *f, int threads);
static size_t nbody__n_src(const nbody__engine *e);
static void nbody__accel_test(const nbody__forces *f, size_t na, int threads);

/* defined below in >>block */
static void nbody__accel_block(const nbody__forces *f, int threads, int block, nbody_simd level);
static void nbody__accel_test_simd(const nbody__forces *f, size_t na, int threads, int block, nbody_simd level);

/* one evaluation of a CPU engine: the positions x, y, z (n each) and the engine's masses,
   the accelerations into ax, ay, az */
static nbody__forces nbody__forces_at(nbody__engine *e, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                                      nbody_real *ax, nbody_real *ay, nbody_real *az) {
    nbody__forces F;
    F.x = x; F.y = y; F.z = z; F.m = ((nbody__cpu *)e->impl)->m;
    F.ax = ax; F.ay = ay; F.az = az;
    F.n = e->n; F.G = e->desc.G; F.eps2 = e->desc.softening * e->desc.softening;
    return F;
}
/* a CPU engine's derivative: its evaluation of the state y into f (both 6n), or of the caller's
   arrays that nbody_accelerations gave the engine (y and f unused) */
static nbody__forces nbody__forces_for(nbody__engine *e, nbody__buf yb, nbody__buf fb) {
    nbody_real *y = (nbody_real *)yb, *f = (nbody_real *)fb;
    size_t n = e->n;
    if (((nbody__cpu *)e->impl)->given) return *((nbody__cpu *)e->impl)->given;
    memcpy(f, y + 3 * n, 3 * n * sizeof(nbody_real));   /* dx/dt = v */
    return nbody__forces_at(e, y, y + n, y + 2 * n, f + 3 * n, f + 4 * n, f + 5 * n);
}
/* nonzero when one of ax, ay, az shares memory with another or with s's positions (n reals each;
   addresses compared as integers) */
static int nbody__overlap(const nbody_real *ax, const nbody_real *ay, const nbody_real *az, const nbody_system *s) {
    const nbody_real *p[6];
    size_t len = s->n * sizeof(nbody_real), i, j;
    p[0] = ax; p[1] = ay; p[2] = az; p[3] = s->x; p[4] = s->y; p[5] = s->z;
    for (i = 0; i < 3; ++i)
        for (j = i + 1; j < 6; ++j)
            if ((size_t)p[i] < (size_t)p[j] + len && (size_t)p[j] < (size_t)p[i] + len) return 1;
    return 0;
}

/* nbody_accelerations with a CPU engine e (started for s): the derivative reads s's positions and
   writes ax, ay, az in place, without the two state buffers of 6n reals that the other engines
   need (allocated, filled and freed each call: fresh pages each time on Windows' and Wine's
   heaps). 0 (nothing done) for other engines, and where the arrays overlap, which the buffers
   allow. */
static int nbody__cpu_in_place(nbody__engine *e, const nbody_system *s, nbody_real *ax, nbody_real *ay, nbody_real *az,
                               nbody_result *r) {
    nbody__forces F;
    if (e->ops->alloc != nbody__host_alloc || nbody__overlap(ax, ay, az, s)) return 0;
    F = nbody__forces_at(e, s->x, s->y, s->z, ax, ay, az);
    ((nbody__cpu *)e->impl)->given = &F;
    *r = e->ops->derivative(e, NULL, NULL);
    ((nbody__cpu *)e->impl)->given = NULL;
    return 1;
}

static nbody_result nbody__simple_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__forces F = nbody__forces_for(e, y, f), A = F;
    A.n = nbody__n_src(e);                 /* the active bodies among themselves */
    nbody__accel_simple(&A);
    if (A.n < F.n) nbody__accel_test(&F, A.n, 1);
    return NBODY_OK;
}
static nbody_result nbody__openmp_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__forces F = nbody__forces_for(e, y, f), A = F;
    int threads = nbody__threads(&e->desc);
    A.n = nbody__n_src(e);
    nbody__accel_openmp(&A, threads);
    if (A.n < F.n) nbody__accel_test(&F, A.n, threads);
    return NBODY_OK;
}
static nbody_result nbody__block_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__forces F = nbody__forces_for(e, y, f), A = F;
    int threads = nbody__threads(&e->desc);
    A.n = nbody__n_src(e);
    nbody__accel_block(&A, threads, e->desc.block_size, ((nbody__cpu *)e->impl)->simd);
    if (A.n < F.n) nbody__accel_test_simd(&F, A.n, threads, e->desc.block_size, ((nbody__cpu *)e->impl)->simd);
    return NBODY_OK;
}

/* acceleration of body i from bodies [j0, j1), scalar */
static void nbody__accel_row(const nbody__forces *f, size_t i, size_t j0, size_t j1,
                             nbody_real *sx, nbody_real *sy, nbody_real *sz) {
    nbody_real xi = f->x[i], yi = f->y[i], zi = f->z[i], ax = 0, ay = 0, az = 0;
    size_t j;
    for (j = j0; j < j1; ++j)
        if (j != i) nbody__pair_add(f->x[j] - xi, f->y[j] - yi, f->z[j] - zi, f->m[j], f->eps2, &ax, &ay, &az);
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
/* all bodies: nbody__accel_simple_range(f, 0, n) bit for bit, with each pair's 1 / sqrt formed
   once (half the square roots and divisions: what a few-body run spends most on in its
   forces). For d = x_j - x_i the other direction's -d is exact and |d|^2 the same, so the
   weight m inv inv inv and a += w d are the same operations as in the row of either body;
   body k's sum still runs over the sources in index order (i < k as the outer loop reaches
   them, then j > k), from 0, and ends as 0 + sum as in nbody__accel_row, then times G. */
static void nbody__accel_simple(const nbody__forces *f) {
    size_t n = f->n, i, j;
    for (i = 0; i < n; ++i) { f->ax[i] = 0; f->ay[i] = 0; f->az[i] = 0; }
    for (i = 0; i < n; ++i) {
        nbody_real xi = f->x[i], yi = f->y[i], zi = f->z[i], mi = f->m[i], ax = f->ax[i], ay = f->ay[i], az = f->az[i];
        for (j = i + 1; j < n; ++j) {
            nbody_real dx = f->x[j] - xi, dy = f->y[j] - yi, dz = f->z[j] - zi;
            nbody_real inv = 1 / NBODY__SQRT(nbody__soft_r2(dx, dy, dz, f->eps2));
            nbody__pull(f->m[j] * inv * inv * inv, dx, dy, dz, &ax, &ay, &az);
            nbody__pull(mi * inv * inv * inv, -dx, -dy, -dz, &f->ax[j], &f->ay[j], &f->az[j]);
        }
        f->ax[i] = f->G * ((nbody_real)0 + ax); f->ay[i] = f->G * ((nbody_real)0 + ay); f->az[i] = f->G * ((nbody_real)0 + az);
    }
}

static void nbody__accel_openmp_range(const nbody__forces *f, int threads, size_t i0, size_t i1) {
    long long i, n = (long long)(i1 - i0);
    (void)threads;
    if (n <= 64) { nbody__accel_simple_range(f, i0, i1); return; }   /* no parallel region for a few bodies */
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 16) num_threads(threads))
    for (i = 0; i < n; ++i) {
        nbody_real ax = 0, ay = 0, az = 0;
        nbody__accel_row(f, i0 + (size_t)i, 0, f->n, &ax, &ay, &az);
        f->ax[i] = f->G * ax; f->ay[i] = f->G * ay; f->az[i] = f->G * az;
    }
}
static void nbody__accel_openmp(const nbody__forces *f, int threads) { nbody__accel_openmp_range(f, threads, 0, f->n); }

/* ---- test particles (desc.n_active) ------------------------------------------------------
   With n_active = na < n, the engines compute the na active bodies among themselves with
   their usual kernel (a nbody__forces of n = na: the same arrays, shorter), then the test
   particles [na, n) from the sources [0, na) only: O(na n) work. */
static size_t nbody__n_src(const nbody__engine *e) {
    size_t na = e->desc.n_active;
    return na == 0 || na > e->n ? e->n : na;
}

/* test particles [na, n) from sources [0, na), scalar rows in source order (SIMPLE, OPENMP) */
static void nbody__accel_test(const nbody__forces *f, size_t na, int threads) {
    long long i, n = (long long)f->n;
    (void)threads;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 16) num_threads(threads) if (threads > 1 && n - (long long)na > 64))
    for (i = (long long)na; i < n; ++i) {
        nbody_real ax = 0, ay = 0, az = 0;
        nbody__accel_row(f, (size_t)i, 0, na, &ax, &ay, &az);
        f->ax[i] = f->G * ax; f->ay[i] = f->G * ay; f->az[i] = f->G * az;
    }
}

/* ---- NBODY_HERMITE on the CPU engines (nbody__hermite_op) ------------------------------- */
/* the bodies [i0, i1) predicted to the step's time: x, v (and a, order 6) by their Taylor
   series from the body's own time, to the jerk term (order 4) or the crackle term (order 6).
   Sixteen bodies at a time: their dt in scalar code (64-bit ticks) and its fractions dt/2 ..
   dt/5 once (the divisions cost more than the series), then the series over contiguous
   components in a loop the compiler vectorises (omp simd) for the instruction set of the
   function it is inlined into (nbody__hermite_predict_for) */
static NBODY__FORCEINLINE void nbody__hermite_predict_span(size_t n, const nbody__hermite_op *op, size_t i0, size_t i1) {
    const nbody_real *b = (const nbody_real *)op->base, *f = (const nbody_real *)op->force, *hi = (const nbody_real *)op->high;
    nbody_real *p = (nbody_real *)op->pred, *pa = (nbody_real *)op->pred_acc;
    size_t c, k;
    for (c = i0; c < i1; c += 16) {
        nbody_real dt[16], h2[16], h3[16], h4[16], h5[16];
        long long l, m = (long long)(i1 - c < 16 ? i1 - c : 16);
        for (l = 0; l < m; ++l)
            dt[l] = op->span >= 0 ? op->span - (nbody_real)op->ticks[c + (size_t)l] * op->tick
                                  : (nbody_real)(op->now - op->ticks[c + (size_t)l]) * op->tick;
        NBODY__PRAGMA_OMP4(omp simd)
        for (l = 0; l < m; ++l) { h2[l] = dt[l] / 2; h3[l] = dt[l] / 3; h4[l] = dt[l] / 4; h5[l] = dt[l] / 5; }
        for (k = 0; k < 3; ++k) {
            const nbody_real *x0 = b + k * n + c, *v0 = b + (3 + k) * n + c, *a0 = f + k * n + c, *j0 = f + (3 + k) * n + c;
            nbody_real *px = p + k * n + c, *pv = p + (3 + k) * n + c;
            if (op->order == 6) {
                const nbody_real *s0 = hi + k * n + c, *c0 = hi + (3 + k) * n + c;
                nbody_real *pac = pa + k * n + c;
                NBODY__PRAGMA_OMP4(omp simd)
                for (l = 0; l < m; ++l) {   /* Horner: x + dt (v + dt/2 (a + dt/3 (j + dt/4 (s + dt/5 c)))) */
                    px[l] = x0[l] + dt[l] * (v0[l] + h2[l] * (a0[l] + h3[l] * (j0[l] + h4[l] * (s0[l] + h5[l] * c0[l]))));
                    pv[l] = v0[l] + dt[l] * (a0[l] + h2[l] * (j0[l] + h3[l] * (s0[l] + h4[l] * c0[l])));
                    pac[l] = a0[l] + dt[l] * (j0[l] + h2[l] * (s0[l] + h3[l] * c0[l]));
                }
            } else {
                NBODY__PRAGMA_OMP4(omp simd)
                for (l = 0; l < m; ++l) {
                    px[l] = x0[l] + dt[l] * (v0[l] + h2[l] * (a0[l] + h3[l] * j0[l]));
                    pv[l] = v0[l] + dt[l] * (a0[l] + h2[l] * j0[l]);
                }
            }
        }
    }
}

/* the predictor of a SIMD level (the compiler's default instruction set for the others) */
typedef void (*nbody__hermite_predict_fn)(size_t n, const nbody__hermite_op *op, size_t i0, size_t i1);
static void nbody__hermite_predict_default(size_t n, const nbody__hermite_op *op, size_t i0, size_t i1) {
    nbody__hermite_predict_span(n, op, i0, i1);
}
static nbody__hermite_predict_fn nbody__hermite_predict_for(nbody_simd level);   /* in >>block */

/* every body predicted (nbody__hermite_predict_span), in pieces of 256 shared among the
   threads of the parallel region it is called in (an orphaned `omp for`; one thread outside
   any region) */
#define NBODY__HERMITE_PIECE 256
static void nbody__hermite_predict_n(size_t n, const nbody__hermite_op *op, nbody__hermite_predict_fn span) {
    long long c, pieces = (long long)((n + NBODY__HERMITE_PIECE - 1) / NBODY__HERMITE_PIECE);
    NBODY__PRAGMA(omp for schedule(static))
    for (c = 0; c < pieces; ++c) {
        size_t i0 = (size_t)c * NBODY__HERMITE_PIECE, i1 = i0 + NBODY__HERMITE_PIECE;
        span(n, op, i0, i1 < n ? i1 : n);
    }
}
static void nbody__hermite_predict(const nbody__engine *e, const nbody__hermite_op *op, nbody__hermite_predict_fn span) {
    nbody__hermite_predict_n(e->n, op, span);
}

/* active body q's state at its own time into rows 9-23 of out (nbody__hermite_op) */
static void nbody__hermite_gather_row(const nbody__engine *e, const nbody__hermite_op *op, size_t q) {
    const nbody_real *b = (const nbody_real *)op->base, *f = (const nbody_real *)op->force, *hi = (const nbody_real *)op->high;
    size_t i = op->list[q], m = op->count, n = e->n;
    int k;
    for (k = 0; k < 6; ++k) {
        op->out[(9 + (size_t)k) * m + q] = b[(size_t)k * n + i];
        op->out[(15 + (size_t)k) * m + q] = f[(size_t)k * n + i];
    }
    for (k = 0; k < 3; ++k) op->out[(21 + (size_t)k) * m + q] = hi[(size_t)k * n + i];
}
static void nbody__hermite_gather_rows(const nbody__engine *e, const nbody__hermite_op *op) {
    size_t q;
    for (q = 0; q < op->count; ++q) nbody__hermite_gather_row(e, op, q);
}

/* nbody__hermite_store of the active bodies [q0, q1) of op->list into host buffers of n bodies
   a component whose first is body lo (a slice: the distributed engine); the threads share
   the bodies of a large step (a copy: the same bits on any thread count) */
static void nbody__hermite_store_rows(const nbody__hermite_store *op, size_t n, size_t lo, size_t q0, size_t q1, int threads) {
    nbody_real *to[3];
    long long q;
    (void)threads;
    to[0] = (nbody_real *)op->base; to[1] = (nbody_real *)op->force; to[2] = (nbody_real *)op->high;
    NBODY__PRAGMA(omp parallel for schedule(static) num_threads(threads) if (threads > 1 && q1 - q0 >= 512))
    for (q = (long long)q0; q < (long long)q1; ++q) {
        size_t i = op->list[q] - lo;
        const nbody_real *nx = op->next + 18 * (size_t)q;
        int k;
        if (!op->commit) for (k = 0; k < 6; ++k) ((nbody_real *)op->pred)[(size_t)k * n + i] = nx[k];
        else for (k = 0; k < 18; ++k) to[k / 6][(size_t)(k % 6) * n + i] = nx[k];
    }
}
/* commit = -1 (after BLOCK's ops.hermite_step): the rows that step kept, back in place */
static nbody_result nbody__host_hermite_store(nbody__engine *e, const nbody__hermite_store *op) {
    const nbody__cpu *c = (const nbody__cpu *)e->impl;
    nbody__hermite_store undo = *op;
    if (op->commit < 0) {
        if (op->count > c->keep_cap) return NBODY_ERR_INVALID_ARGUMENT;   /* not after such a step */
        undo.next = c->hermite_keep; undo.commit = 1;
    }
    nbody__hermite_store_rows(&undo, e->n, 0, 0, op->count, nbody__threads(&e->desc));
    return NBODY_OK;
}

/* ops.hermite_step's correction of active body q on host buffers, once its forces are in
   b[0 .. 9) (G applied): its state at its own time gathered into b[9 .. 24) and kept (18
   values at keep, for an undo), nbody__hermite_correct over its elapsed time, the result in
   place (base, force, high; x, v into pred) and its next level into lv->level_new[q]
   (NBODY__BLOCK_LEVELS + 2 where a corrected value is not finite). The host's correction
   (nbody__hermite_correct_host) computes the same bits. */
static void nbody__host_hermite_correct(const nbody__engine *e, const nbody__hermite_op *op, const nbody__hermite_levels *lv,
                                        size_t q, nbody_real *b, nbody_real *keep) {
    nbody_real *to[3], nx[18], d[6];
    size_t i = op->list[q], n = e->n;
    int k, finite = 1;
    to[0] = (nbody_real *)op->base; to[1] = (nbody_real *)op->force; to[2] = (nbody_real *)op->high;
    for (k = 0; k < 18; ++k) keep[k] = to[k / 6][(size_t)(k % 6) * n + i];
    for (k = 0; k < 15; ++k) b[9 + k] = keep[k];
    nbody__hermite_correct(op->order, b, nbody__hermite_dt(op->ticks[i], op->now, op->tick, op->span), nx, d);
    for (k = 0; k < 18; ++k) {
        finite = finite && nbody__isfinite(nx[k]);
        to[k / 6][(size_t)(k % 6) * n + i] = nx[k];
    }
    for (k = 0; k < 6; ++k) ((nbody_real *)op->pred)[(size_t)k * n + i] = nx[k];
    lv->level_new[q] = finite ? nbody__block_level_of(lv->level[i], nbody__hermite_criterion(op->order, lv->eta, d), op->now,
                                                      lv->dt_max, lv->dt_min)
                              : NBODY__BLOCK_LEVELS + 2;
}

/* the sources of a Hermite force: predicted x, v (a for the snap), masses */
typedef struct nbody__hermite_src {
    const nbody_real *x, *y, *z, *vx, *vy, *vz, *ax, *ay, *az, *m;
    size_t n;                      /* sources [0, n) */
    nbody_real eps2;
    int snap;
} nbody__hermite_src;

static nbody__hermite_src nbody__hermite_src_of(const nbody__engine *e, const nbody__hermite_op *op) {
    const nbody_real *p = (const nbody_real *)op->pred, *pa = (const nbody_real *)op->pred_acc;
    size_t n = e->n;
    nbody__hermite_src S;
    S.x = p; S.y = p + n; S.z = p + 2 * n; S.vx = p + 3 * n; S.vy = p + 4 * n; S.vz = p + 5 * n;
    S.ax = pa; S.ay = pa + n; S.az = pa + 2 * n; S.m = ((const nbody__cpu *)e->impl)->m;
    S.n = op->n_src; S.eps2 = e->desc.softening * e->desc.softening; S.snap = op->order == 6;
    return S;
}

/* body i's a, jerk (snap) from the sources [j0, j1) in index order, added to sum[9] (double) */
static void nbody__hermite_row(const nbody__hermite_src *S, size_t i, size_t j0, size_t j1, double *sum) {
    nbody_real t[9], ax = S->snap ? S->ax[i] : 0, ay = S->snap ? S->ay[i] : 0, az = S->snap ? S->az[i] : 0;
    size_t j;
    int k;
    for (j = j0; j < j1; ++j) {
        if (j == i) continue;
        nbody__hermite_pair(S->x[j] - S->x[i], S->y[j] - S->y[i], S->z[j] - S->z[i], S->vx[j] - S->vx[i], S->vy[j] - S->vy[i],
                            S->vz[j] - S->vz[i], S->snap ? S->ax[j] - ax : 0, S->snap ? S->ay[j] - ay : 0,
                            S->snap ? S->az[j] - az : 0, S->m[j], S->eps2, S->snap, t);
        for (k = 0; k < (S->snap ? 9 : 6); ++k) sum[k] += (double)t[k];
    }
}

/* SIMPLE and OPENMP: each active body's row over all sources in index order (the same bits
   on any thread count); OPENMP shares the active bodies among threads */
static void nbody__hermite_rows(const nbody__engine *e, const nbody__hermite_op *op, int threads) {
    nbody__hermite_src S = nbody__hermite_src_of(e, op);
    long long q, m = (long long)op->count;
    (void)threads;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 4) num_threads(threads) if (threads > 1 && (double)m * (double)S.n >= 262144))
    for (q = 0; q < m; ++q) {
        double sum[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        int k;
        nbody__hermite_row(&S, op->list[q], 0, S.n, sum);
        for (k = 0; k < 9; ++k) op->out[(size_t)k * (size_t)m + (size_t)q] = e->desc.G * (nbody_real)sum[k];
    }
}

static nbody_result nbody__simple_hermite(nbody__engine *e, const nbody__hermite_op *op) {
    nbody__hermite_predict(e, op, nbody__hermite_predict_default);
    nbody__hermite_rows(e, op, 1);
    nbody__hermite_gather_rows(e, op);
    return NBODY_OK;
}
static nbody_result nbody__openmp_hermite(nbody__engine *e, const nbody__hermite_op *op) {
    int threads = nbody__threads(&e->desc);
    NBODY__PRAGMA(omp parallel num_threads(threads) if (threads > 1 && e->n >= 4 * NBODY__HERMITE_PIECE))
    nbody__hermite_predict(e, op, nbody__hermite_predict_default);
    nbody__hermite_rows(e, op, threads);
    nbody__hermite_gather_rows(e, op);
    return NBODY_OK;
}

/* ======================================================================================
   >>block  BLOCK engine kernel (SIMD)
   Two kernels. The default, symmetric one (NBODY__BLOCK_SYMMETRIC; nbody__simd_forces_sym)
   computes each pair once and adds it to both bodies, in a fixed order for any thread
   count; it measured 1.05-1.7x faster than the one-sided kernel on AVX2 and AVX-512
   (docs/engines.md). The one-sided kernel, also its building block for small tiles:
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
   1 term in float, 3 in double with the 4th folded in by minimax). That is 5 + terms vector
   operations, fewer than Newton steps on y followed by cubing, and no less accurate (cubing
   triples y's error). AVX-512 float takes one more off: y^3 (5/2 - 3/2 x y^2) is computed as
   K y^3 (A - x y^2) with K ~ 3/2 folded into the rows' masses and the rows' reduced sums
   (nbody__v512_rsqrt3k), so the column vectors take m_j as it is. The symmetric
   kernel thus costs 16 (float) and 19 (double) 512-bit multiply/FMA-pipe operations per pair
   vector (bench/results/cpu-kernel-tuning-*.md).
   Exception, by measurement: 256-bit double divides, 1 / (r^2 sqrt(r^2)), see below.
   The levels (AVX-512F, AVX2 + FMA, portable) are all built in and chosen at nbody_create
   (SIMD levels below, docs/cpu.md); long double, other targets and NBODY_NO_SIMD have the
   portable loop the compiler vectorises only.
   ====================================================================================== */

/* Below NBODY__BLOCK_PARALLEL_N bodies one thread runs the whole evaluation (n = 1024 is
   about 0.4 ms on one core, far above a fork/join; smaller n gains little and, on a loaded
   machine, loses badly when a worker is descheduled). Chunks of 4 tiles balance well. */
#ifndef NBODY__BLOCK_PARALLEL_N
#define NBODY__BLOCK_PARALLEL_N 1024
#endif
#define NBODY__BLOCK_CHUNK 4
#define NBODY__BLOCK_DEFAULT 64
/* the one-sided kernels over targets against n sources: threads from NBODY__BLOCK_PARALLEL_N
   sources, or from as much work (few sources, many targets: test particles) */
static NBODY__UNUSED int nbody__block_parallel(size_t n, size_t targets) {
    return n >= NBODY__BLOCK_PARALLEL_N || (double)n * (double)targets >= (double)NBODY__BLOCK_PARALLEL_N * NBODY__BLOCK_PARALLEL_N;
}

/* ---- the kernels of one SIMD level, and the schedules that run them -------------------- */
typedef struct nbody__simd_kernels {
    /* one tile of tw targets t[x|y|z] (body i0 in lane 0) against the sources [j0, j1),
       j0 <= i0 < j1: a[x|y|z] = G * sum */
    void (*tile)(const nbody_real *x, const nbody_real *y, const nbody_real *z, const nbody_real *m, size_t j0, size_t j1,
                 nbody_real eps2, nbody_real G, size_t i0, const nbody_real *tx, const nbody_real *ty, const nbody_real *tz,
                 nbody_real *ax, nbody_real *ay, nbody_real *az);
    /* symmetric: the rows [b0, b1) against the whole vectors [v0, v1), both sides summed */
    void (*sym_pair)(const nbody__forces *f, size_t v0, size_t v1, size_t b0, size_t b1);
    size_t w, tw;                  /* lanes per vector, targets per tile */
} nbody__simd_kernels;
#define NBODY__TW_MAX 64           /* the widest tile of any level */

/* defined below in >>block */
static NBODY__UNUSED void nbody__simd_forces_range(const nbody__simd_kernels *k, const nbody__forces *f, int threads, int block,
                                                   size_t i0, size_t i1);
static NBODY__UNUSED void nbody__simd_forces(const nbody__simd_kernels *k, const nbody__forces *f, int threads, int block);
static NBODY__UNUSED void nbody__simd_forces_sym(const nbody__simd_kernels *k, const nbody__forces *f, int threads, int block);
static const nbody__simd_kernels *nbody__simd_kernels_for(nbody_simd level);
static void nbody__accel_block_portable_range(const nbody__forces *f, int threads, int block, size_t t0, size_t t1);
static void nbody__accel_block_portable(const nbody__forces *f, int threads, int block);
static int nbody__forces_finite(const nbody__forces *f, size_t count);
static void nbody__accel_block_kernel(const nbody__forces *f, int threads, int block, int symmetric, nbody_simd level);

/* The symmetric kernel is the default where it measured faster (bench/results/cpu-*.md):
   NBODY__BLOCK_SYMMETRIC 0 forces the one-sided kernel everywhere. */
#ifndef NBODY__BLOCK_SYMMETRIC
#define NBODY__BLOCK_SYMMETRIC 1
#endif
static void nbody__accel_block(const nbody__forces *f, int threads, int block, nbody_simd level) {
    nbody__accel_block_kernel(f, threads, block, NBODY__BLOCK_SYMMETRIC, level);
}
/* the targets [i0, i1): always the one-sided kernel, whose per-body sums do not depend on
   where a slice starts (the symmetric kernel's do, on which pairs share a task) */
static void nbody__accel_block_range(const nbody__forces *f, int threads, int block, size_t i0, size_t i1, nbody_simd level) {
    const nbody__simd_kernels *k = nbody__simd_kernels_for(level);
    if (k) {
        nbody__simd_forces_range(k, f, threads, block, i0, i1);
        if (nbody__forces_finite(f, i1 - i0)) return;   /* else SIMPLE's classes, as for the whole */
    }
    nbody__accel_block_portable_range(f, threads, block, i0, i1);
}
/* test particles [na, n) from the sources [0, na) (BLOCK): the one-sided kernel of the level
   (its tiles of targets against the na sources; the portable loop where there is none), so
   the same formula and NaN/Inf handling as the active bodies', O(na n) */
static void nbody__accel_test_simd(const nbody__forces *f, size_t na, int threads, int block, nbody_simd level) {
    nbody__forces S = *f;
    S.n = na; S.ax = f->ax + na; S.ay = f->ay + na; S.az = f->az + na;
    nbody__accel_block_range(&S, threads, block, na, f->n, level);
}
/* nonzero when the count accelerations computed are finite */
static int nbody__forces_finite(const nbody__forces *f, size_t count) {
    size_t i;
    for (i = 0; i < count; ++i)
        if (!nbody__isfinite(f->ax[i]) || !nbody__isfinite(f->ay[i]) || !nbody__isfinite(f->az[i])) return 0;
    return 1;
}
/* block: targets per scheduling chunk of the one-sided kernel (rounded up to whole tiles);
   0 = automatic. symmetric: the tiled symmetric kernel (the SIMD levels only). level: the
   SIMD level. The estimate and its series are exact in class only where every term is finite
   (x = inf gives 0 * inf in e, an r^-3 beyond the range gives inf * 0 with m = 0, ...): when a
   sum comes out NaN or Inf, which is rare and always a fault or an extreme input, the whole
   evaluation is done again by the portable loop, which computes each term as the SIMPLE
   engine does (1 / sqrt, then m inv inv inv), so NaN, Inf and finite results are SIMPLE's. */
static void nbody__accel_block_kernel(const nbody__forces *f, int threads, int block, int symmetric, nbody_simd level) {
    const nbody__simd_kernels *k = nbody__simd_kernels_for(level);
    if (k) {
        if (symmetric) nbody__simd_forces_sym(k, f, threads, block); else nbody__simd_forces(k, f, threads, block);
        if (nbody__forces_finite(f, f->n)) return;
    }
    nbody__accel_block_portable(f, threads, block);
}

/* the article's 'openmp + block + optimization' loop (a branch-free loop the compiler
   vectorises), softened, any n: the portable path for long double and non-x86 targets, and the
   deterministic one (desc.simd = NBODY_SIMD_PORTABLE, docs/determinism.md). Each body's sum
   runs in NBODY__LANES lanes (source j in lane j mod NBODY__LANES, each lane in index order),
   added pairwise at the end: an order the source fixes, so the compiler vectorises across the
   lanes without reassociating a sum (an `omp simd reduction` would leave the order to the
   vector width: other bits on each platform and compiler), and the bits are the same
   everywhere and for any thread count. */
#define NBODY__LANES 8
static NBODY__FORCEINLINE void nbody__portable_term(const nbody__forces *f, size_t i, size_t j, nbody_real xi, nbody_real yi,
                                                    nbody_real zi, nbody_real *sx, nbody_real *sy, nbody_real *sz) {
    nbody_real dx = f->x[j] - xi, dy = f->y[j] - yi, dz = f->z[j] - zi;
    nbody_real r2 = (j == i) ? 1 : nbody__soft_r2(dx, dy, dz, f->eps2);
    nbody_real w = (j == i) ? 0 : nbody__pair_weight(f->m[j], r2);
    *sx += w * dx; *sy += w * dy; *sz += w * dz;
}
static nbody_real nbody__lanes_sum(const nbody_real *s) {   /* pairwise, for NBODY__LANES 8 */
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
static void nbody__accel_block_portable_range(const nbody__forces *f, int threads, int block, size_t t0, size_t t1) {
    long long b, nblocks, n = (long long)f->n;
    (void)threads; (void)n;
    if (block <= 0) block = NBODY__BLOCK_DEFAULT;
    nblocks = ((long long)(t1 - t0) + block - 1) / block;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 1) num_threads(threads) if (nbody__block_parallel((size_t)n, t1 - t0)))
    for (b = 0; b < nblocks; ++b) {
        size_t i0 = t0 + (size_t)b * (size_t)block, i1 = i0 + (size_t)block, i;
        if (i1 > t1) i1 = t1;
        for (i = i0; i < i1; ++i) {
            nbody_real xi = f->x[i], yi = f->y[i], zi = f->z[i], sx[NBODY__LANES], sy[NBODY__LANES], sz[NBODY__LANES];
            size_t j, l;
            for (l = 0; l < NBODY__LANES; ++l) { sx[l] = 0; sy[l] = 0; sz[l] = 0; }
            for (j = 0; j + NBODY__LANES <= f->n; j += NBODY__LANES) {
                NBODY__PRAGMA_OMP4(omp simd)
                for (l = 0; l < NBODY__LANES; ++l) nbody__portable_term(f, i, j + l, xi, yi, zi, &sx[l], &sy[l], &sz[l]);
            }
            for (l = 0; j + l < f->n; ++l) nbody__portable_term(f, i, j + l, xi, yi, zi, &sx[l], &sy[l], &sz[l]);
            f->ax[i - t0] = f->G * nbody__lanes_sum(sx); f->ay[i - t0] = f->G * nbody__lanes_sum(sy);
            f->az[i - t0] = f->G * nbody__lanes_sum(sz);
        }
    }
}
static void nbody__accel_block_portable(const nbody__forces *f, int threads, int block) {
    nbody__accel_block_portable_range(f, threads, block, 0, f->n);
}

/* ---- the schedules, written once for every level ---- */
/* symmetric kernel: block of bodies, a multiple of the tile tw, about n/8 (NBODY__SYM_SPLIT;
   at least 4 pairs per round to share among threads) and at most NBODY__SYM_VECS vectors of w
   (a pair's column block, 7 arrays, stays in L1); a function of n only, so the sums are too.
   n/4 measured 4-5 % faster per core for float at N = 4096 on Zen 4, but allows only 2 block
   pairs at once there */
#ifndef NBODY__SYM_SPLIT
#define NBODY__SYM_SPLIT 8
#endif
#ifndef NBODY__SYM_VECS
#define NBODY__SYM_VECS 64
#endif
static NBODY__UNUSED size_t nbody__sym_block(size_t n, size_t tw, size_t w) {
    size_t b = (n / NBODY__SYM_SPLIT + tw - 1) / tw * tw, cap = (size_t)NBODY__SYM_VECS * w / tw * tw;
    if (b > cap) b = cap;
    return b < tw ? tw : b;
}
/* the tile of targets [i0, min(i0 + tw, i1)) against the sources [j0, j1), body i's sums
   going to ax[i - o]: a partial tile is padded (its extra lanes are computed, dropped) */
static NBODY__UNUSED void nbody__simd_tile_out(const nbody__simd_kernels *k, const nbody__forces *f, size_t j0, size_t j1,
                                               nbody_real G, size_t i0, size_t i1, size_t o) {
    size_t q, tw = k->tw, nk = i1 - i0 < tw ? i1 - i0 : tw;
    nbody_real p[6][NBODY__TW_MAX];
    if (nk == tw) {
        k->tile(f->x, f->y, f->z, f->m, j0, j1, f->eps2, G, i0, f->x + i0, f->y + i0, f->z + i0, f->ax + (i0 - o), f->ay + (i0 - o),
                f->az + (i0 - o));
        return;
    }
    memset(p, 0, sizeof p);            /* the partial tile only; every optimisation level sees it set */
    for (q = 0; q < nk; ++q) { p[0][q] = f->x[i0 + q]; p[1][q] = f->y[i0 + q]; p[2][q] = f->z[i0 + q]; }
    k->tile(f->x, f->y, f->z, f->m, j0, j1, f->eps2, G, i0, p[0], p[1], p[2], p[3], p[4], p[5]);
    for (q = 0; q < nk; ++q) { f->ax[i0 - o + q] = p[3][q]; f->ay[i0 - o + q] = p[4][q]; f->az[i0 - o + q] = p[5][q]; }
}
static NBODY__UNUSED void nbody__simd_tile_at(const nbody__simd_kernels *k, const nbody__forces *f, size_t j0, size_t j1, nbody_real G,
                                              size_t i0, size_t i1) {
    nbody__simd_tile_out(k, f, j0, j1, G, i0, i1, 0);
}
/* one-sided: the targets [i0, i1) against all sources, tile by tile, body i's sums going to
   ax[i - i0] (a slice of the distributed engine; [0, n) for the whole) */
static NBODY__UNUSED void nbody__simd_forces_range(const nbody__simd_kernels *k, const nbody__forces *f, int threads, int block,
                                                   size_t i0, size_t i1) {
    size_t n = f->n, tw = k->tw;
    long long t, ntiles = (long long)((i1 - i0 + tw - 1) / tw);
    int chunk = block > 0 ? (int)(((size_t)block + tw - 1) / tw) : NBODY__BLOCK_CHUNK;
    (void)threads; (void)chunk;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, chunk) num_threads(threads) if (nbody__block_parallel(n, i1 - i0)))
    for (t = 0; t < ntiles; ++t) nbody__simd_tile_out(k, f, 0, n, f->G, i0 + (size_t)t * tw, i1, i0);
}
static NBODY__UNUSED void nbody__simd_forces(const nbody__simd_kernels *k, const nbody__forces *f, int threads, int block) {
    nbody__simd_forces_range(k, f, threads, block, 0, f->n);
}
/* Symmetric forces (CUDA Handbook, ch. 14, tiled): f_ji = -f_ij, each pair computed once.
   Rows: the broadcast bodies i of block J; columns: w bodies j of block I < J in the lanes.
   Block I is whole (a multiple of w bodies): only the last block may be partial, and it is
   never a column block.
   A block against itself: each tile against itself (the one-sided tile; it stores, so it also
   zeroes the sums), then tile t's bodies as rows against the later whole vectors as columns,
   and the bodies of a last partial vector as rows against tile t */
static NBODY__UNUSED void nbody__simd_sym_block(const nbody__simd_kernels *k, const nbody__forces *f, size_t b0, size_t b1) {
    size_t i0, tw = k->tw, bw = b0 + (b1 - b0) / k->w * k->w;
    for (i0 = b0; i0 < b1; i0 += tw) nbody__simd_tile_at(k, f, i0, i0 + tw < b1 ? i0 + tw : b1, 1, i0, b1);
    for (i0 = b0; i0 + tw < b1; i0 += tw) {
        k->sym_pair(f, i0 + tw, bw, i0, i0 + tw);
        if (bw < b1) k->sym_pair(f, i0, i0 + tw, bw, b1);
    }
}
/* Deterministic schedule: blocks of desc.block_size bodies (a multiple of every level's tile,
   checked at nbody_create), or of nbody__sym_block(n) when it is 0 (a function of n only); first
   each block against itself (which zeroes the sums), then the block pairs in the rounds of a
   round-robin tournament (circle method), each round's pairs disjoint. Each of these tasks
   runs after the earlier tasks on its blocks, so every body receives its contributions in the
   same order whatever the thread count, yet no thread waits for a whole round (a barrier per
   round loses badly when one thread is descheduled on a shared machine).
   The threads of one parallel region take the tasks in that order from a ticket counter and
   spin (then yield) until the earlier tasks on the task's two blocks are done: no barrier,
   task queue or task wait inside the evaluation, whose only blocking waits are the region's
   fork and join. Blocking waits are what MinGW-w64's libgomp does at every barrier and empty
   task queue, and under Wine each is a call to its server (docs/platforms.md); an OpenMP task
   graph with the same dependences cost 25 such calls an evaluation
   (bench/results/wine-server-calls-*.md). */
/* the schedule's task k in creation order: k < nb is a block against itself (round -1); then
   round r = (k - nb) / (nt / 2)'s pair q = (k - nb) % (nt / 2) of a tournament of nt = nb +
   (nb & 1) players: pair 0 is r against nt - 1, pair q > 0 is r + q against r - q (mod nt - 1).
   0 for a pair with the phantom player nb (odd nb: block r sits round r out). The blocks meet
   themselves in round 0's order (0, nt - 1, 1, nt - 2, ...; nbody__sym_self), so that round 0's
   first pairs do not wait for the last of those tasks: with the blocks in index order the
   first pair, 0 against nt - 1, waited for the task just before it, about one task's time an
   evaluation (4.5 % at N = 4096 on two threads). Only the order between blocks changes: each
   block's own sequence, and so every sum, is the same. */
static NBODY__UNUSED long long nbody__sym_self(long long b, long long nb) {   /* the task of b against itself */
    long long nt = nb + (nb & 1), k = b < nt / 2 ? 2 * b : 2 * (nt - 1 - b) + 1;
    return k - ((nb & 1) && k > 0);   /* the phantom's place (1) left out */
}
static NBODY__UNUSED int nbody__sym_task(long long k, long long nb, long long *lo, long long *hi, long long *r) {
    long long nt = nb + (nb & 1), q, p, o;
    if (k < nb) {
        k += (nb & 1) && k > 0;
        *lo = *hi = k & 1 ? nt - 1 - (k - 1) / 2 : k / 2;
        *r = -1;
        return 1;
    }
    *r = (k - nb) / (nt / 2); q = (k - nb) % (nt / 2);
    p = q ? (*r + q) % (nt - 1) : *r; o = q ? (*r - q + nt - 1) % (nt - 1) : nt - 1;
    *lo = p < o ? p : o; *hi = p < o ? o : p;
    return *hi < nb;
}
/* the last task on block b before round r >= 0 (nbody__sym_task's numbering): its pair of the
   round before, or of the one before that when b sat the round out, or its own task */
static NBODY__UNUSED long long nbody__sym_before(long long b, long long r, long long nb) {
    long long nt = nb + (nb & 1), d, q;
    if ((nb & 1) && b == r - 1) --r;
    if (--r < 0) return nbody__sym_self(b, nb);
    if (b == r || b == nt - 1) q = 0;
    else { d = (b - r + nt - 1) % (nt - 1); q = d < nt / 2 ? d : nt - 1 - d; }
    return nb + r * (nt / 2) + q;
}
/* The threads' shared state. slot[u] is a lower bound of the tickets thread u holds and has
   not finished (LLONG_MAX: none), so every task below the smallest slot is done: a thread
   stores the counter's value in its slot before it takes a ticket (the add that takes it
   releases that store) and again after each task. At most NBODY__SYM_TEAM threads (a round
   has nb / 2 pairs to share; 256 threads would need 512 blocks to keep busy). */
#define NBODY__SYM_TEAM 256
typedef struct nbody__sym_state {
    const nbody__simd_kernels *k;
    const nbody__forces *f;
    size_t bs;
    long long nb, ntask;
    int team;
    volatile long long next, slot[NBODY__SYM_TEAM];
} nbody__sym_state;
static NBODY__UNUSED long long nbody__sym_oldest(const nbody__sym_state *s) {
    long long m = LLONG_MAX, v;
    int u;
    for (u = 0; u < s->team; ++u)
        if ((v = nbody__count_load(&s->slot[u])) < m) m = v;
    return m;
}
/* thread me's part: tickets until none is left */
static NBODY__UNUSED void nbody__sym_worker(nbody__sym_state *s, int me) {
    const nbody__forces *f = s->f;
    for (;;) {
        long long t, lo, hi, r, before;
        unsigned long step = 0;
        size_t b0, b1;
        nbody__count_store(&s->slot[me], nbody__count_load(&s->next));
        t = nbody__count_add(&s->next, 1) - 1;
        if (t >= s->ntask) break;
        nbody__count_store(&s->slot[me], t);
        if (!nbody__sym_task(t, s->nb, &lo, &hi, &r)) continue;
        if (r >= 0) {
            before = nbody__sym_before(lo, r, s->nb);
            if (nbody__sym_before(hi, r, s->nb) > before) before = nbody__sym_before(hi, r, s->nb);
            while (nbody__sym_oldest(s) <= before) nbody__spin_step(step++);
        }
        b0 = (size_t)hi * s->bs; b1 = b0 + s->bs < f->n ? b0 + s->bs : f->n;
        if (lo == hi) nbody__simd_sym_block(s->k, f, b0, b1);
        else s->k->sym_pair(f, (size_t)lo * s->bs, (size_t)lo * s->bs + s->bs, b0, b1);
    }
    nbody__count_store(&s->slot[me], LLONG_MAX);
}
/* ---- the schedule's threads in MinGW-w64 builds with GCC's OpenMP (NBODY__SYM_POOL) --------
   There libgomp is its POSIX configuration: a region's fork and join block on winpthreads
   semaphores, round trips to the wineserver under Wine (35-90 us a two-thread region against
   0.7 us on Linux), and OMP_WAIT_POLICY / GOMP_SPINCOUNT are read but unused. So the schedule
   runs on threads of the library's own, kept for the process: after an evaluation a worker
   spins for NBODY__POOL_SPIN pauses (the next evaluation of a simulation usually comes within
   them), then sleeps on a condition variable with an SRW lock, which Windows and Wine serve in
   the process (keyed waits; futexes in Wine), no server. Created by the first evaluation that
   needs them; joined at exit (atexit). A call from inside an OpenMP region, or while another
   thread's evaluation holds the set, runs the OpenMP region instead. The same tasks in the same
   order: the same bits. The calling thread is member 0; workers 1..team-1 take part in a job. */
#if NBODY__SYM_POOL
#ifndef NBODY__POOL_SPIN
/* pauses before a worker sleeps: 0.28 ms on a 2023 Xeon (14 ns a pause), about 1 ms where a pause
   takes 45-50 ns (Skylake-SP). Waking a sleeper costs its next evaluation 7-25 us under Wine; an
   evaluation after 0.5 ms of the caller's own work, the worker asleep each time, measured the same
   as back to back (bench/results/wine-series-2026-11-27.md) */
#define NBODY__POOL_SPIN 20000u
#endif
#define NBODY__POOL_JOIN_MS 1000ul /* at exit, the longest wait for a worker's thread to end */
typedef struct nbody__win_word { void *p; } nbody__win_word;   /* SRWLOCK, CONDITION_VARIABLE (0: ready) */
static struct nbody__sym_pool {
    volatile long long busy;       /* 1: an evaluation (or the exit) holds the set */
    volatile long long job;        /* bumped to start a job */
    volatile long long team;       /* the job's members, the caller included */
    volatile long long done;       /* workers finished with the job */
    volatile long long quit, left; /* set at exit; workers that have left their loop */
    nbody__sym_state *volatile s;  /* the job */
    int workers;                   /* threads created (slots 1..workers) */
    long long seen[NBODY__SYM_TEAM];   /* a new worker's last job */
    void *thread[NBODY__SYM_TEAM];
    nbody__win_word lock, wake;
    int sleepers;                  /* under lock */
} nbody__pool;
#define NBODY__POOL_LOCK ((struct _RTL_SRWLOCK *)(void *)&nbody__pool.lock)
#define NBODY__POOL_WAKE ((struct _RTL_CONDITION_VARIABLE *)(void *)&nbody__pool.wake)
/* a worker: wait (spin, then sleep) for a job it has not seen, run its part, until the exit */
static NBODY__UNUSED unsigned long __stdcall nbody__pool_main(void *arg) {
    int me = (int)(size_t)arg;
    long long seen = nbody__pool.seen[me], job;
    for (;;) {
        unsigned long spin = 0;
        while ((job = nbody__count_load(&nbody__pool.job)) == seen && !nbody__count_load(&nbody__pool.quit)) {
            if (spin++ < NBODY__POOL_SPIN) { nbody__spin_step(0); continue; }   /* one pause */
            AcquireSRWLockExclusive(NBODY__POOL_LOCK);
            ++nbody__pool.sleepers;
            while (nbody__count_load(&nbody__pool.job) == seen && !nbody__count_load(&nbody__pool.quit))
                SleepConditionVariableSRW(NBODY__POOL_WAKE, NBODY__POOL_LOCK, 0xFFFFFFFFul, 0);   /* INFINITE */
            --nbody__pool.sleepers;
            ReleaseSRWLockExclusive(NBODY__POOL_LOCK);
        }
        if (job == seen) break;    /* the exit, no job waiting */
        seen = job;
        if (me < nbody__count_load(&nbody__pool.team)) {
            nbody__sym_worker(nbody__pool.s, me);
            nbody__count_add(&nbody__pool.done, 1);
        }
    }
    nbody__count_add(&nbody__pool.left, 1);
    ExitThread(0);   /* none of the library's code after the count: FreeLibrary may unmap it next */
    return 0;
}
static NBODY__UNUSED void nbody__pool_wake_all(void) {
    AcquireSRWLockExclusive(NBODY__POOL_LOCK);
    if (nbody__pool.sleepers) WakeAllConditionVariable(NBODY__POOL_WAKE);
    ReleaseSRWLockExclusive(NBODY__POOL_LOCK);
}
/* at exit: take the set (an evaluation in flight ends first), tell the workers, wait for them.
   Each leaves its loop at once and calls ExitThread. The wait for the threads' end is bounded,
   and one wait for all of them: a library unloaded with FreeLibrary runs this under the loader
   lock, which a thread's end needs, so there the wait always lasts the bound (the bound covers
   a worker between its count and its call to ExitThread; tests/test_block_threads.c unloads a
   DLL). At the process's exit the threads end at once. */
static NBODY__UNUSED void nbody__pool_exit(void) {
    unsigned long step = 0;
    int u, k;
    while (nbody__count_add(&nbody__pool.busy, 1) != 1) { nbody__count_add(&nbody__pool.busy, -1); nbody__spin_step(step++); }
    nbody__count_store(&nbody__pool.quit, 1);
    nbody__pool_wake_all();
    for (step = 0; nbody__count_load(&nbody__pool.left) < nbody__pool.workers;) nbody__spin_step(step++);
    for (u = 1; u <= nbody__pool.workers; u += 64) {   /* MAXIMUM_WAIT_OBJECTS handles a wait */
        k = nbody__pool.workers + 1 - u < 64 ? nbody__pool.workers + 1 - u : 64;
        (void)WaitForMultipleObjects((unsigned long)k, &nbody__pool.thread[u], 1, NBODY__POOL_JOIN_MS);
    }
    for (u = 1; u <= nbody__pool.workers; ++u) CloseHandle(nbody__pool.thread[u]);
    nbody__pool.workers = 0;
}
/* workers 1..workers exist (0: a thread could not be created) */
static NBODY__UNUSED int nbody__pool_grow(int workers) {
    while (nbody__pool.workers < workers) {
        int me = nbody__pool.workers + 1;
        nbody__pool.seen[me] = nbody__pool.job;
        nbody__pool.thread[me] = CreateThread(NULL, 0, nbody__pool_main, (void *)(size_t)me, 0, NULL);
        if (!nbody__pool.thread[me]) return 0;
        if (nbody__pool.workers++ == 0) (void)atexit(nbody__pool_exit);
    }
    return 1;
}
/* s's tasks on s->team threads of the set, the caller among them; 0 where the set is not
   available (the caller runs the OpenMP region) */
static NBODY__UNUSED int nbody__sym_pool_run(nbody__sym_state *s) {
    unsigned long step = 0;
    if (omp_in_parallel()) return 0;
    if (nbody__count_add(&nbody__pool.busy, 1) != 1 || nbody__count_load(&nbody__pool.quit) || !nbody__pool_grow(s->team - 1)) {
        nbody__count_add(&nbody__pool.busy, -1);
        return 0;
    }
    nbody__pool.s = s;
    nbody__count_store(&nbody__pool.team, s->team);
    nbody__count_store(&nbody__pool.done, 0);
    nbody__count_store(&nbody__pool.job, nbody__pool.job + 1);   /* releases the three above */
    nbody__pool_wake_all();
    nbody__sym_worker(s, 0);
    while (nbody__count_load(&nbody__pool.done) < s->team - 1) nbody__spin_step(step++);
    nbody__count_add(&nbody__pool.busy, -1);
    return 1;
}
#endif
static NBODY__UNUSED void nbody__simd_forces_sym(const nbody__simd_kernels *k, const nbody__forces *f, int threads, int block) {
    nbody__sym_state s;
    size_t n = f->n, i;
    long long nt;
    int u;
    s.k = k; s.f = f;
    s.bs = block > 0 ? ((size_t)block + k->tw - 1) / k->tw * k->tw : nbody__sym_block(n, k->tw, k->w);
    s.nb = (long long)((n + s.bs - 1) / s.bs); nt = s.nb + (s.nb & 1);
    s.ntask = s.nb + (nt - 1) * (nt / 2);
    s.team = !NBODY__OPENMP || !NBODY__ATOMICS || n < NBODY__BLOCK_PARALLEL_N || threads < 2 ? 1
             : threads < NBODY__SYM_TEAM ? threads : NBODY__SYM_TEAM;
    s.next = 0;
    for (u = 0; u < s.team; ++u) s.slot[u] = LLONG_MAX;
    if (s.team == 1) nbody__sym_worker(&s, 0);   /* no parallel region entered */
#if NBODY__SYM_POOL
    else if (nbody__sym_pool_run(&s)) {}
#endif
#if NBODY__OPENMP
    else {
        NBODY__PRAGMA(omp parallel num_threads(s.team))
        nbody__sym_worker(&s, omp_get_thread_num());
    }
#endif
    for (i = 0; i < n; ++i) { f->ax[i] *= f->G; f->ay[i] *= f->G; f->az[i] *= f->G; }
}
/* (1 - e)^(-3/2) = 1 + e (1.5 + 1.875 e + 2.1875 e^2 + 2.4609375 e^3 + ...), |e| <= a = 2^-13:
   the e^3 term folded into the e term (minimax of e^4 - b e^2 on [-a, a]: b = 2 (sqrt 2 - 1) a^2),
   the weight's error at most 2.46 (3 - 2 sqrt 2) a^4 = 0.42 * 2^-52, one term fewer than the
   series: e (C1 + e (C2 + C3 e)), the double levels that start from an estimate (AVX-512, NEON) */
#define NBODY__SERIES_C1 1.5
#define NBODY__SERIES_C2 (1.875 + 3.0380e-8)
#define NBODY__SERIES_C3 2.1875
/* ---- AVX-512F level: helpers over 512-bit vectors of nbody_real ---- */
#if NBODY__HAVE_AVX512
#define NBODY__I512 static NBODY__FORCEINLINE NBODY__TARGET_AVX512 NBODY__UNUSED
#if NBODY__KIND == 2
typedef __m512d nbody__v512;
#define NBODY__V512_W 8
#define NBODY__X512(op) _mm512_##op##_pd     /* the intrinsic of this precision */
#else
typedef __m512 nbody__v512;
#define NBODY__V512_W 16
#define NBODY__X512(op) _mm512_##op##_ps
#endif
NBODY__I512 nbody__v512 nbody__v512_set1(nbody_real a) { return NBODY__X512(set1)(a); }
NBODY__I512 nbody__v512 nbody__v512_load(const nbody_real *p) { return NBODY__X512(loadu)(p); }
NBODY__I512 nbody__v512 nbody__v512_load1(const nbody_real *p) { return NBODY__X512(set1)(*p); }   /* *p in every lane */
NBODY__I512 void nbody__v512_store(nbody_real *p, nbody__v512 a) { NBODY__X512(storeu)(p, a); }
NBODY__I512 nbody__v512 nbody__v512_add(nbody__v512 a, nbody__v512 b) { return NBODY__X512(add)(a, b); }
NBODY__I512 nbody__v512 nbody__v512_sub(nbody__v512 a, nbody__v512 b) { return NBODY__X512(sub)(a, b); }
NBODY__I512 nbody__v512 nbody__v512_mul(nbody__v512 a, nbody__v512 b) { return NBODY__X512(mul)(a, b); }
NBODY__I512 nbody__v512 nbody__v512_fma(nbody__v512 a, nbody__v512 b, nbody__v512 c) { return NBODY__X512(fmadd)(a, b, c); }
NBODY__I512 nbody__v512 nbody__v512_fnma(nbody__v512 a, nbody__v512 b, nbody__v512 c) { return NBODY__X512(fnmadd)(a, b, c); }
#if NBODY__KIND == 2
/* maskz forms: the plain ones trip g++ 12 -Wmaybe-uninitialized inside immintrin.h */
NBODY__I512 nbody__v512 nbody__v512_rsqrt_estimate(nbody__v512 x) { return _mm512_maskz_rsqrt14_pd((__mmask8)0xFF, x); }
/* the series of NBODY__SERIES_C1.. */
NBODY__I512 nbody__v512 nbody__v512_series(nbody__v512 e) {
    return nbody__v512_fma(nbody__v512_fma(nbody__v512_set1(NBODY__SERIES_C3), e, nbody__v512_set1(NBODY__SERIES_C2)), e,
                           nbody__v512_set1(NBODY__SERIES_C1));
}
/* r^-3 = NBODY__V512_K nbody__v512_rsqrt3k(r^2): double, K = 1:
   x^(-3/2) = y^3 (1 - e)^(-3/2), e = 1 - x y^2, y the estimate of x^(-1/2) */
#define NBODY__V512_K 1
NBODY__I512 nbody__v512 nbody__v512_rsqrt3k(nbody__v512 x) {
    nbody__v512 y = nbody__v512_rsqrt_estimate(x), y2 = nbody__v512_mul(y, y), y3 = nbody__v512_mul(y2, y);
    nbody__v512 e = nbody__v512_fnma(x, y2, nbody__v512_set1(1));
    return nbody__v512_fma(nbody__v512_mul(y3, e), nbody__v512_series(e), y3);
}
NBODY__I512 nbody__v512 nbody__v512_load1k(const nbody_real *p) { return nbody__v512_load1(p); }   /* K *p in every lane */
NBODY__I512 nbody_real nbody__v512_hsum(nbody__v512 x) {   /* fixed order */
    __m256d h = _mm256_add_pd(_mm512_maskz_extractf64x4_pd((__mmask8)0xFF, x, 0), _mm512_maskz_extractf64x4_pd((__mmask8)0xFF, x, 1));
    __m128d q = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    return _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)));
}
#else
NBODY__I512 nbody__v512 nbody__v512_rsqrt_estimate(nbody__v512 x) { return _mm512_maskz_rsqrt14_ps((__mmask16)0xFFFF, x); }
/* float: one term of the series, x^(-3/2) ~ y^3 (1 + 3/2 e) = y^3 (5/2 - 3/2 x y^2) (1.875 e^2 <=
   2.8e-8, below float's half ulp), computed as K y^3 (A - x y^2): one fnma and one multiply
   after y^3, the factor K (about 3/2) applied by the kernels where it costs no vector operation
   per pair: the broadcast masses (K m_i, K m_j) and the symmetric rows' reduced sums.
   A and K are floats with K (A - 1) = 1 + 0.94 a^2 and K ~ 3/2 that minimise the largest error
   against (1 - e)^(-3/2) on |e| <= a = 2^-13 (0.155 * 2^-23; the plain 5/3 and 3/2 give 0.73) */
#define NBODY__V512_K 1.5000677108764648f
NBODY__I512 nbody__v512 nbody__v512_rsqrt3k(nbody__v512 x) {
    nbody__v512 y = nbody__v512_rsqrt_estimate(x), y2 = nbody__v512_mul(y, y), y3 = nbody__v512_mul(y2, y);
    return nbody__v512_mul(y3, nbody__v512_fnma(x, y2, nbody__v512_set1(1.66663658618927f)));
}
NBODY__I512 nbody__v512 nbody__v512_load1k(const nbody_real *p) { return _mm512_set1_ps(NBODY__V512_K * *p); }
NBODY__I512 nbody_real nbody__v512_hsum(nbody__v512 x) {   /* fixed order */
    __m512d d = _mm512_castps_pd(x);
    __m256 h = _mm256_add_ps(_mm256_castpd_ps(_mm512_maskz_extractf64x4_pd((__mmask8)0xFF, d, 0)),
                             _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd((__mmask8)0xFF, d, 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}
#endif
/* x^(-3/2) itself (the kernels use nbody__v512_rsqrt3k and K m) */
NBODY__I512 nbody__v512 nbody__v512_rsqrt3(nbody__v512 x) {
    return NBODY__V512_K == 1 ? nbody__v512_rsqrt3k(x) : nbody__v512_mul(nbody__v512_set1((nbody_real)NBODY__V512_K), nbody__v512_rsqrt3k(x));
}
#endif

/* ---- AVX2 + FMA level: helpers over 256-bit vectors of nbody_real ---- */
#if NBODY__HAVE_AVX2
#define NBODY__I256 static NBODY__FORCEINLINE NBODY__TARGET_AVX2 NBODY__UNUSED
#if NBODY__KIND == 2
typedef __m256d nbody__v256;
#define NBODY__V256_W 4
#define NBODY__X256(op) _mm256_##op##_pd     /* the intrinsic of this precision */
#else
typedef __m256 nbody__v256;
#define NBODY__V256_W 8
#define NBODY__X256(op) _mm256_##op##_ps
#endif
NBODY__I256 nbody__v256 nbody__v256_set1(nbody_real a) { return NBODY__X256(set1)(a); }
NBODY__I256 nbody__v256 nbody__v256_load(const nbody_real *p) { return NBODY__X256(loadu)(p); }
NBODY__I256 nbody__v256 nbody__v256_load1(const nbody_real *p) { return NBODY__X256(set1)(*p); }   /* *p in every lane */
NBODY__I256 void nbody__v256_store(nbody_real *p, nbody__v256 a) { NBODY__X256(storeu)(p, a); }
NBODY__I256 nbody__v256 nbody__v256_add(nbody__v256 a, nbody__v256 b) { return NBODY__X256(add)(a, b); }
NBODY__I256 nbody__v256 nbody__v256_sub(nbody__v256 a, nbody__v256 b) { return NBODY__X256(sub)(a, b); }
NBODY__I256 nbody__v256 nbody__v256_mul(nbody__v256 a, nbody__v256 b) { return NBODY__X256(mul)(a, b); }
NBODY__I256 nbody__v256 nbody__v256_div(nbody__v256 a, nbody__v256 b) { return NBODY__X256(div)(a, b); }
NBODY__I256 nbody__v256 nbody__v256_sqrt(nbody__v256 a) { return NBODY__X256(sqrt)(a); }
NBODY__I256 nbody__v256 nbody__v256_fma(nbody__v256 a, nbody__v256 b, nbody__v256 c) { return NBODY__X256(fmadd)(a, b, c); }
NBODY__I256 nbody__v256 nbody__v256_fnma(nbody__v256 a, nbody__v256 b, nbody__v256 c) { return NBODY__X256(fnmadd)(a, b, c); }
/* lanes where a > b, as bits; the lanes set in bits (W low bits) as a vector mask; a where mask, else b */
NBODY__I256 unsigned nbody__v256_gt(nbody__v256 a, nbody__v256 b) { return (unsigned)NBODY__X256(movemask)(NBODY__X256(cmp)(a, b, _CMP_GT_OQ)); }
NBODY__I256 unsigned nbody__v256_nan(nbody__v256 a) { return (unsigned)NBODY__X256(movemask)(NBODY__X256(cmp)(a, a, _CMP_UNORD_Q)); }
NBODY__I256 nbody__v256 nbody__v256_select(nbody__v256 mask, nbody__v256 a, nbody__v256 b) { return NBODY__X256(blendv)(b, a, mask); }
#if NBODY__KIND == 2
NBODY__I256 nbody__v256 nbody__v256_lanes(unsigned bits) {
    const __m256i bit = _mm256_set_epi64x(8, 4, 2, 1);
    return _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x((long long)bits), bit), bit));
}
/* 256-bit double: one correctly rounded sqrt and divide, measured faster on Zen 3 than the
   float estimate and its series (the divider runs beside the FMA pipes), exact over the range */
NBODY__I256 nbody__v256 nbody__v256_rsqrt3(nbody__v256 x) { return _mm256_div_pd(_mm256_set1_pd(1), _mm256_mul_pd(x, _mm256_sqrt_pd(x))); }
NBODY__I256 nbody_real nbody__v256_hsum(nbody__v256 x) {   /* fixed order */
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}
#else
NBODY__I256 nbody__v256 nbody__v256_lanes(unsigned bits) {
    const __m256i bit = _mm256_set_epi32(128, 64, 32, 16, 8, 4, 2, 1);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), bit), bit));
}
/* the estimate (rsqrtps, relative error below 1.5 * 2^-12) and two terms of the series:
   |e| <= 3 * 2^-12, 2.19 e^3 <= 8.6e-10 */
NBODY__I256 nbody__v256 nbody__v256_rsqrt3(nbody__v256 x) {
    nbody__v256 y = _mm256_rsqrt_ps(x), y2 = nbody__v256_mul(y, y), y3 = nbody__v256_mul(y2, y);
    nbody__v256 e = nbody__v256_fnma(x, y2, nbody__v256_set1(1));
    nbody__v256 p = nbody__v256_fma(nbody__v256_set1(1.875f), e, nbody__v256_set1(1.5f));
    return nbody__v256_fma(nbody__v256_mul(y3, e), p, y3);
}
NBODY__I256 nbody_real nbody__v256_hsum(nbody__v256 x) {   /* fixed order */
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}
#endif
/* r^-3 itself: K = 1 */
#define NBODY__V256_K 1
NBODY__I256 nbody__v256 nbody__v256_rsqrt3k(nbody__v256 x) { return nbody__v256_rsqrt3(x); }
NBODY__I256 nbody__v256 nbody__v256_load1k(const nbody_real *p) { return nbody__v256_load1(p); }
#endif

/* ---- the BLOCK kernels, written once over a vector layer -------------------------------------
   A layer is a vector type V of W lanes of nbody_real with its one-line helpers (above for
   AVX-512F and AVX2 + FMA, below for the 128-bit levels): V_set1, V_load, V_load1 (*p in every
   lane), V_load1k (K *p), V_store, V_add, V_sub, V_mul, V_fma (a b + c), V_fnma (c - a b),
   V_hsum (in a fixed order), V_rsqrt3k (x^(-3/2) / K) and its factor K (1 but in AVX-512 float,
   see nbody__v512_rsqrt3k). NBODY__BLOCK_KERNELS(lv, V, W, K, U, R, S, FN, IN) writes one
   level's kernels over the layer V: the pair term V_interact, the one-sided tile lv_tile (U
   vectors of targets), the symmetric rows lv_sym_rows and pairs lv_sym_pair (R broadcast rows
   per column vector, staged S at a time), with the function attributes FN (the level's target)
   and IN (its inline helpers), and the table lv_kernels the schedules above call. A level's
   bits are its layer's: the kernel shape is the same on every level.
   Why a macro: C99 has no templates, and a single-file library cannot include its own text
   again by a path (it is copied, renamed, pasted into other files). It is the one place the
   library writes code in a macro, only this body: the layers are plain functions, and each
   expansion defines real functions named after its level (nbody__avx2_tile, ...) that
   profilers, objdump and grep see. To step through one in a debugger, build with -g3 or read
   it expanded (cc -E). The portable loop is not one of its levels: its sums run in
   NBODY__LANES lanes added pairwise, which gives the same bits everywhere (docs/determinism.md),
   and its terms are SIMPLE's (1 / sqrt, then m inv inv inv). */
#define NBODY__BLOCK_KERNELS(lv, V, W_, K, U_, R_, S_, FN, IN)                                                                            \
/* s += K m_j (x_j - x_i) (|x_j - x_i|^2 + eps^2)^(-3/2) / K, lane-wise */                                                                \
IN void V##_interact(V xj, V yj, V zj, V mj, V e2, V xi, V yi, V zi, V *sx, V *sy, V *sz) {                                               \
    V dx = V##_sub(xj, xi), dy = V##_sub(yj, yi), dz = V##_sub(zj, zi);                                                                   \
    V w = V##_mul(mj, V##_rsqrt3k(V##_fma(dx, dx, V##_fma(dy, dy, V##_fma(dz, dz, e2)))));                                                \
    *sx = V##_fma(w, dx, *sx); *sy = V##_fma(w, dy, *sy); *sz = V##_fma(w, dz, *sz);                                                      \
}                                                                                                                                         \
/* the tile of nbody__simd_kernels.tile; the u loops are unrolled so that it lives in registers */                                        \
FN void lv##_tile(const nbody_real *x, const nbody_real *y, const nbody_real *z, const nbody_real *m, size_t j0, size_t j1,               \
                  nbody_real eps2, nbody_real G, size_t i0, const nbody_real *tx, const nbody_real *ty, const nbody_real *tz,             \
                  nbody_real *ax, nbody_real *ay, nbody_real *az) {                                                                       \
    enum { W = W_, U = U_ };                                                                                                              \
    nbody_real onehot[2 * W];                                                                                                             \
    V e2 = V##_set1(eps2), g = V##_set1(G), xi[U], yi[U], zi[U], sx[U], sy[U], sz[U];                                                     \
    size_t j, je = i0 + (size_t)(U * W) < j1 ? i0 + (size_t)(U * W) : j1, jd = i0 < j1 ? i0 : j1;   /* jd: j1 <= i0 for test particles */ \
    int u;                                                                                                                                \
    for (u = 0; u < U; ++u) {                                                                                                             \
        xi[u] = V##_load(tx + u * W); yi[u] = V##_load(ty + u * W); zi[u] = V##_load(tz + u * W);                                         \
        sx[u] = sy[u] = sz[u] = V##_set1(0);                                                                                              \
    }                                                                                                                                     \
    for (u = 0; u < 2 * W; ++u) onehot[u] = 0;                                                                                            \
    onehot[W] = 1;                                                                                                                        \
    for (j = j0; j < jd; ++j) {                                                                                                           \
        V xj = V##_load1(x + j), yj = V##_load1(y + j), zj = V##_load1(z + j), mj = V##_load1k(m + j);                                    \
        NBODY__UNROLL for (u = 0; u < U; ++u) V##_interact(xj, yj, zj, mj, e2, xi[u], yi[u], zi[u], &sx[u], &sy[u], &sz[u]);              \
    }                                                                                                                                     \
    for (; j < je; ++j) {          /* the diagonal: 1 added to r^2 in the lane of body j itself */                                        \
        V xj = V##_load1(x + j), yj = V##_load1(y + j), zj = V##_load1(z + j), mj = V##_load1k(m + j);                                    \
        for (u = 0; u < U; ++u) {                                                                                                         \
            long long l = (long long)(j - i0) - (long long)u * W;                                                                         \
            V d = (l >= 0 && l < W) ? V##_add(e2, V##_load(onehot + W - l)) : e2;                                                         \
            V##_interact(xj, yj, zj, mj, d, xi[u], yi[u], zi[u], &sx[u], &sy[u], &sz[u]);                                                 \
        }                                                                                                                                 \
    }                                                                                                                                     \
    for (; j < j1; ++j) {                                                                                                                 \
        V xj = V##_load1(x + j), yj = V##_load1(y + j), zj = V##_load1(z + j), mj = V##_load1k(m + j);                                    \
        NBODY__UNROLL for (u = 0; u < U; ++u) V##_interact(xj, yj, zj, mj, e2, xi[u], yi[u], zi[u], &sx[u], &sy[u], &sz[u]);              \
    }                                                                                                                                     \
    for (u = 0; u < U; ++u) {                                                                                                             \
        V##_store(ax + u * W, V##_mul(g, sx[u])); V##_store(ay + u * W, V##_mul(g, sy[u]));                                               \
        V##_store(az + u * W, V##_mul(g, sz[u]));                                                                                         \
    }                                                                                                                                     \
}                                                                                                                                         \
/* symmetric rows: the cnt bodies i.. as broadcast rows against the column vectors [v0, v1):                                              \
   a_i += m_j w d (summed lane-wise, then reduced), a_j -= m_i w d (added to memory per                                                   \
   vector), w = (d^2 + eps^2)^(-3/2), d = x_j - x_i; the rows staged S_ at a time (their r^2,                                             \
   then r^-3, then the sums: the estimates of several rows in flight at once) */                                                          \
IN void lv##_sym_rows(const nbody_real *x, const nbody_real *y, const nbody_real *z, const nbody_real *m, nbody_real *ax,                 \
                      nbody_real *ay, nbody_real *az, V e2, size_t v0, size_t v1, size_t i, int cnt) {                                    \
    enum { W = W_, R = R_, S = S_ };                                                                                                      \
    V xi[R], yi[R], zi[R], mi[R], sx[R], sy[R], sz[R];                                                                                    \
    size_t j;                                                                                                                             \
    int u;                                                                                                                                \
    NBODY__UNROLL8 for (u = 0; u < cnt; ++u) {                                                                                            \
        xi[u] = V##_load1(x + i + u); yi[u] = V##_load1(y + i + u); zi[u] = V##_load1(z + i + u);                                         \
        mi[u] = V##_load1k(m + i + u); sx[u] = sy[u] = sz[u] = V##_set1(0);                                                               \
    }                                                                                                                                     \
    for (j = v0; j < v1; j += W) {                                                                                                        \
        V xj = V##_load(x + j), yj = V##_load(y + j), zj = V##_load(z + j), mj = V##_load(m + j);                                         \
        V tx = V##_set1(0), ty = tx, tz = tx, dx[R], dy[R], dz[R], w[R];                                                                  \
        int g, ge;                                                                                                                        \
        NBODY__UNROLL8 for (g = 0; g < cnt; g += S) {                                                                                     \
            ge = g + S < cnt ? g + S : cnt;                                                                                               \
            NBODY__UNROLL8 for (u = g; u < ge; ++u) {                                                                                     \
                dx[u] = V##_sub(xj, xi[u]); dy[u] = V##_sub(yj, yi[u]); dz[u] = V##_sub(zj, zi[u]);                                       \
                w[u] = V##_fma(dx[u], dx[u], V##_fma(dy[u], dy[u], V##_fma(dz[u], dz[u], e2)));                                           \
            }                                                                                                                             \
            NBODY__UNROLL8 for (u = g; u < ge; ++u) w[u] = V##_rsqrt3k(w[u]);                                                             \
            NBODY__UNROLL8 for (u = g; u < ge; ++u) {                                                                                     \
                V wj = V##_mul(w[u], mj), wi = V##_mul(w[u], mi[u]);                                                                      \
                sx[u] = V##_fma(wj, dx[u], sx[u]); sy[u] = V##_fma(wj, dy[u], sy[u]); sz[u] = V##_fma(wj, dz[u], sz[u]);                  \
                tx = V##_fnma(wi, dx[u], tx); ty = V##_fnma(wi, dy[u], ty); tz = V##_fnma(wi, dz[u], tz);                                 \
            }                                                                                                                             \
        }                                                                                                                                 \
        V##_store(ax + j, V##_add(V##_load(ax + j), tx)); V##_store(ay + j, V##_add(V##_load(ay + j), ty));                               \
        V##_store(az + j, V##_add(V##_load(az + j), tz));                                                                                 \
    }                                                                                                                                     \
    NBODY__UNROLL8 for (u = 0; u < cnt; ++u) {   /* the rows' sums take K here: the columns' masses are plain m_j */                      \
        ax[i + u] += (nbody_real)(K) * V##_hsum(sx[u]); ay[i + u] += (nbody_real)(K) * V##_hsum(sy[u]);                                   \
        az[i + u] += (nbody_real)(K) * V##_hsum(sz[u]);                                                                                   \
    }                                                                                                                                     \
}                                                                                                                                         \
/* the sym_pair of nbody__simd_kernels */                                                                                                 \
FN void lv##_sym_pair(const nbody__forces *f, size_t v0, size_t v1, size_t b0, size_t b1) {                                               \
    V e2 = V##_set1(f->eps2);                                                                                                             \
    size_t i = b0;                                                                                                                        \
    for (; i + (R_) <= b1; i += (R_)) lv##_sym_rows(f->x, f->y, f->z, f->m, f->ax, f->ay, f->az, e2, v0, v1, i, (R_));                    \
    for (; i < b1; ++i) lv##_sym_rows(f->x, f->y, f->z, f->m, f->ax, f->ay, f->az, e2, v0, v1, i, 1);                                     \
}                                                                                                                                         \
static const nbody__simd_kernels lv##_kernels = {lv##_tile, lv##_sym_pair, (W_), (W_) * (U_)};

/* ---- AVX-512F level: the BLOCK kernels ---- */
#if NBODY__HAVE_AVX512
#ifndef NBODY__AVX512_TILE_U
#define NBODY__AVX512_TILE_U 2         /* vectors of targets per tile */
#endif
#ifndef NBODY__AVX512_SYM_ROWS
#define NBODY__AVX512_SYM_ROWS 4       /* symmetric kernel: broadcast rows per column vector (7 vectors each; 4 measured best on Zen 4) */
#endif
#ifndef NBODY__AVX512_SYM_STAGE
#define NBODY__AVX512_SYM_STAGE 2       /* rows staged together: their r^2, then r^-3, then sums (2: no spilled sums) */
#endif
NBODY__BLOCK_KERNELS(nbody__avx512, nbody__v512, NBODY__V512_W, NBODY__V512_K, NBODY__AVX512_TILE_U, NBODY__AVX512_SYM_ROWS,
                     NBODY__AVX512_SYM_STAGE, static NBODY__TARGET_AVX512, NBODY__I512)
#endif

/* ---- AVX2 + FMA level: the BLOCK kernels ---- */
#if NBODY__HAVE_AVX2
#ifndef NBODY__AVX2_TILE_U
#define NBODY__AVX2_TILE_U 2         /* vectors of targets per tile */
#endif
#ifndef NBODY__AVX2_SYM_ROWS
#define NBODY__AVX2_SYM_ROWS 2       /* symmetric kernel: broadcast rows per column vector (3 measured slower: 16 registers) */
#endif
NBODY__BLOCK_KERNELS(nbody__avx2, nbody__v256, NBODY__V256_W, NBODY__V256_K, NBODY__AVX2_TILE_U, NBODY__AVX2_SYM_ROWS, 1,
                     static NBODY__TARGET_AVX2, NBODY__I256)
#endif
/* ---- 128-bit levels (NEON, WebAssembly SIMD128): helpers over 128-bit vectors of nbody_real.
   One layer name for both ISAs (a build has at most one of them), so the kernels below are
   written once. nbody__v128m is a lane mask (all ones where set). ---- */
#if NBODY__HAVE_V128
#define NBODY__I128 static NBODY__FORCEINLINE NBODY__UNUSED
#if NBODY__HAVE_NEON
#if NBODY__KIND == 2
typedef float64x2_t nbody__v128;
typedef uint64x2_t nbody__v128m;
#define NBODY__V128_W 2
#define NBODY__X128(op) op##_f64             /* the intrinsic of this precision */
NBODY__I128 unsigned nbody__v128_bits(nbody__v128m m) { return (unsigned)vaddvq_u64(vandq_u64(m, vcombine_u64(vcreate_u64(1), vcreate_u64(2)))); }
NBODY__I128 nbody__v128m nbody__v128_lanes(unsigned bits) { return vtstq_u64(vdupq_n_u64(bits), vcombine_u64(vcreate_u64(1), vcreate_u64(2))); }
#else
typedef float32x4_t nbody__v128;
typedef uint32x4_t nbody__v128m;
#define NBODY__V128_W 4
#define NBODY__X128(op) op##_f32
NBODY__I128 uint32x4_t nbody__v128_bit(void) { return vcombine_u32(vcreate_u32(0x0000000200000001ULL), vcreate_u32(0x0000000800000004ULL)); }
NBODY__I128 unsigned nbody__v128_bits(nbody__v128m m) { return vaddvq_u32(vandq_u32(m, nbody__v128_bit())); }
NBODY__I128 nbody__v128m nbody__v128_lanes(unsigned bits) { return vtstq_u32(vdupq_n_u32(bits), nbody__v128_bit()); }
#endif
NBODY__I128 nbody__v128 nbody__v128_set1(nbody_real a) { return NBODY__X128(vdupq_n)(a); }
NBODY__I128 nbody__v128 nbody__v128_load1(const nbody_real *p) { return NBODY__X128(vld1q_dup)(p); }   /* *p in every lane */
NBODY__I128 nbody__v128 nbody__v128_load(const nbody_real *p) { return NBODY__X128(vld1q)(p); }
NBODY__I128 void nbody__v128_store(nbody_real *p, nbody__v128 a) { NBODY__X128(vst1q)(p, a); }
NBODY__I128 nbody__v128 nbody__v128_add(nbody__v128 a, nbody__v128 b) { return NBODY__X128(vaddq)(a, b); }
NBODY__I128 nbody__v128 nbody__v128_sub(nbody__v128 a, nbody__v128 b) { return NBODY__X128(vsubq)(a, b); }
NBODY__I128 nbody__v128 nbody__v128_mul(nbody__v128 a, nbody__v128 b) { return NBODY__X128(vmulq)(a, b); }
NBODY__I128 nbody__v128 nbody__v128_div(nbody__v128 a, nbody__v128 b) { return NBODY__X128(vdivq)(a, b); }
NBODY__I128 nbody__v128 nbody__v128_sqrt(nbody__v128 a) { return NBODY__X128(vsqrtq)(a); }
NBODY__I128 nbody__v128 nbody__v128_fma(nbody__v128 a, nbody__v128 b, nbody__v128 c) { return NBODY__X128(vfmaq)(c, a, b); }
NBODY__I128 nbody__v128 nbody__v128_fnma(nbody__v128 a, nbody__v128 b, nbody__v128 c) { return NBODY__X128(vfmsq)(c, a, b); }
/* frsqrte (relative error below 2^-8.25) and one Newton step (frsqrts: (3 - a b) / 2) */
NBODY__I128 nbody__v128 nbody__v128_rsqrt_refined(nbody__v128 x) {
    nbody__v128 y = NBODY__X128(vrsqrteq)(x);
    return NBODY__X128(vmulq)(y, NBODY__X128(vrsqrtsq)(NBODY__X128(vmulq)(x, y), y));
}
NBODY__I128 unsigned nbody__v128_nan(nbody__v128 a) { return ((1u << NBODY__V128_W) - 1u) & ~nbody__v128_bits(NBODY__X128(vceqq)(a, a)); }
NBODY__I128 nbody__v128 nbody__v128_select(nbody__v128m m, nbody__v128 a, nbody__v128 b) { return NBODY__X128(vbslq)(m, a, b); }
NBODY__I128 nbody_real nbody__v128_hsum(nbody__v128 x) { return NBODY__X128(vaddvq)(x); }   /* fixed order */
#else                                  /* SIMD128: no fused multiply-add (two roundings), no estimate */
typedef v128_t nbody__v128;
typedef v128_t nbody__v128m;
#if NBODY__KIND == 2
#define NBODY__V128_W 2
#define NBODY__X128(op) wasm_f64x2_##op      /* the intrinsic of this precision */
NBODY__I128 nbody__v128 nbody__v128_load1(const nbody_real *p) { return wasm_v128_load64_splat(p); }
NBODY__I128 unsigned nbody__v128_bits(nbody__v128m m) { return (unsigned)wasm_i64x2_bitmask(m); }
NBODY__I128 nbody__v128m nbody__v128_lanes(unsigned bits) { return wasm_i64x2_make(-(long long)(bits & 1), -(long long)((bits >> 1) & 1)); }
NBODY__I128 nbody_real nbody__v128_hsum(nbody__v128 x) { return wasm_f64x2_extract_lane(x, 0) + wasm_f64x2_extract_lane(x, 1); }
#else
#define NBODY__V128_W 4
#define NBODY__X128(op) wasm_f32x4_##op
NBODY__I128 nbody__v128 nbody__v128_load1(const nbody_real *p) { return wasm_v128_load32_splat(p); }
NBODY__I128 unsigned nbody__v128_bits(nbody__v128m m) { return (unsigned)wasm_i32x4_bitmask(m); }
NBODY__I128 nbody__v128m nbody__v128_lanes(unsigned bits) {
    return wasm_i32x4_make(-(int)(bits & 1), -(int)((bits >> 1) & 1), -(int)((bits >> 2) & 1), -(int)((bits >> 3) & 1));
}
NBODY__I128 nbody_real nbody__v128_hsum(nbody__v128 x) {   /* fixed order */
    return (wasm_f32x4_extract_lane(x, 0) + wasm_f32x4_extract_lane(x, 1)) + (wasm_f32x4_extract_lane(x, 2) + wasm_f32x4_extract_lane(x, 3));
}
#endif
NBODY__I128 nbody__v128 nbody__v128_set1(nbody_real a) { return NBODY__X128(splat)(a); }
NBODY__I128 nbody__v128 nbody__v128_load(const nbody_real *p) { return wasm_v128_load(p); }
NBODY__I128 void nbody__v128_store(nbody_real *p, nbody__v128 a) { wasm_v128_store(p, a); }
NBODY__I128 nbody__v128 nbody__v128_add(nbody__v128 a, nbody__v128 b) { return NBODY__X128(add)(a, b); }
NBODY__I128 nbody__v128 nbody__v128_sub(nbody__v128 a, nbody__v128 b) { return NBODY__X128(sub)(a, b); }
NBODY__I128 nbody__v128 nbody__v128_mul(nbody__v128 a, nbody__v128 b) { return NBODY__X128(mul)(a, b); }
NBODY__I128 nbody__v128 nbody__v128_div(nbody__v128 a, nbody__v128 b) { return NBODY__X128(div)(a, b); }
NBODY__I128 nbody__v128 nbody__v128_sqrt(nbody__v128 a) { return NBODY__X128(sqrt)(a); }
NBODY__I128 unsigned nbody__v128_nan(nbody__v128 a) { return ((1u << NBODY__V128_W) - 1u) & ~nbody__v128_bits(NBODY__X128(eq)(a, a)); }
#endif
#if NBODY__HAVE_SIMD128
NBODY__I128 nbody__v128 nbody__v128_fma(nbody__v128 a, nbody__v128 b, nbody__v128 c) { return nbody__v128_add(nbody__v128_mul(a, b), c); }
NBODY__I128 nbody__v128 nbody__v128_fnma(nbody__v128 a, nbody__v128 b, nbody__v128 c) { return nbody__v128_sub(c, nbody__v128_mul(a, b)); }
NBODY__I128 nbody__v128 nbody__v128_select(nbody__v128m m, nbody__v128 a, nbody__v128 b) { return wasm_v128_bitselect(a, b, m); }
/* x^(-3/2) = 1 / (x sqrt x), correctly rounded sqrt and divide: SIMD128 has no estimate */
NBODY__I128 nbody__v128 nbody__v128_rsqrt3(nbody__v128 x) {
    return nbody__v128_div(nbody__v128_set1(1), nbody__v128_mul(x, nbody__v128_sqrt(x)));
}
#elif NBODY__KIND == 2
/* x^(-3/2) = y^3 (1 - e)^(-3/2), e = 1 - x y^2, y the refined estimate (|e| <= 2^-14.9 < 2^-13):
   the series of NBODY__SERIES_C1.. */
NBODY__I128 nbody__v128 nbody__v128_rsqrt3(nbody__v128 x) {
    nbody__v128 y = nbody__v128_rsqrt_refined(x), y2 = nbody__v128_mul(y, y), y3 = nbody__v128_mul(y2, y);
    nbody__v128 e = nbody__v128_fnma(x, y2, nbody__v128_set1(1));
    nbody__v128 p = nbody__v128_fma(nbody__v128_fma(nbody__v128_set1(NBODY__SERIES_C3), e, nbody__v128_set1(NBODY__SERIES_C2)), e,
                                    nbody__v128_set1(NBODY__SERIES_C1));
    return nbody__v128_fma(nbody__v128_mul(y3, e), p, y3);
}
#else
/* float: y^3 (1 + 3/2 e) (the next term, 1.875 e^2 <= 2^-28.9, is below float's half ulp) */
NBODY__I128 nbody__v128 nbody__v128_rsqrt3(nbody__v128 x) {
    nbody__v128 y = nbody__v128_rsqrt_refined(x), y2 = nbody__v128_mul(y, y), y3 = nbody__v128_mul(y2, y);
    nbody__v128 e = nbody__v128_fnma(x, y2, nbody__v128_set1(1));
    return nbody__v128_fma(nbody__v128_mul(y3, e), nbody__v128_set1((nbody_real)NBODY__SERIES_C1), y3);
}
#endif
/* r^-3 itself: K = 1 */
#define NBODY__V128_K 1
NBODY__I128 nbody__v128 nbody__v128_rsqrt3k(nbody__v128 x) { return nbody__v128_rsqrt3(x); }
NBODY__I128 nbody__v128 nbody__v128_load1k(const nbody_real *p) { return nbody__v128_load1(p); }
#endif

/* ---- 128-bit levels: the BLOCK kernels, once for NEON and SIMD128 ---- */
#if NBODY__HAVE_V128
#ifndef NBODY__V128_TILE_U
#define NBODY__V128_TILE_U 2         /* vectors of targets per tile (NEON: 3 and 4 spill, bench/results/neon-*.md) */
#endif
#ifndef NBODY__V128_SYM_ROWS
#define NBODY__V128_SYM_ROWS 2       /* symmetric kernel: broadcast rows per column vector (as the tile) */
#endif
NBODY__BLOCK_KERNELS(nbody__v128, nbody__v128, NBODY__V128_W, NBODY__V128_K, NBODY__V128_TILE_U, NBODY__V128_SYM_ROWS, 1, static,
                     NBODY__I128)
#endif
/* the kernels of a level; NULL: the portable loop */
static const nbody__simd_kernels *nbody__simd_kernels_for(nbody_simd level) {
#if NBODY__HAVE_AVX512
    if (level == NBODY_SIMD_AVX512) return &nbody__avx512_kernels;
#endif
#if NBODY__HAVE_AVX2
    if (level == NBODY_SIMD_AVX2) return &nbody__avx2_kernels;
#endif
#if NBODY__HAVE_V128
    if (level == NBODY_SIMD_NEON || level == NBODY_SIMD_SIMD128) return &nbody__v128_kernels;   /* the one this build has */
#endif
    (void)level;
    return NULL;
}

/* ---- NBODY_HERMITE on BLOCK: tiles of NBODY__HERMITE_TW active bodies (gathered, targets in
   the lanes) against chunks of NBODY__HERMITE_CHUNK sources (broadcast one by one, in index
   order), the tasks (tile, chunk) shared among threads, each chunk's sums kept apart and
   added in chunk order: a function of the bodies only, the same bits on any thread count.
   A few active bodies still fill the threads (a chunk each), many fill them by tiles; with
   fewer active sources than a tile's lanes, a task is one target against a chunk whose
   sources sit in the lanes (NBODY__HERMITE_LANES), so that no lane idles. Sums in double
   (the float build's pair terms too: phi-GPU's mixed precision); the SIMD levels have the
   double build's tiles (the float build runs the portable tile). A body's
   own term is left out by index: its lane gets r^2 + 1 and mass 0 where j is itself. */
#define NBODY__HERMITE_TW 8
#define NBODY__HERMITE_CHUNK 4096
typedef struct nbody__hermite_tile_in {
    nbody_real t[9][NBODY__HERMITE_TW];   /* the targets' x y z vx vy vz ax ay az */
    size_t idx[NBODY__HERMITE_TW];        /* their body indices, rising; (size_t)-1 pads */
} nbody__hermite_tile_in;
/* a tile against the sources [j0, j1): sums[k * TW + lane], k = a, jerk (, snap) components */
typedef void (*nbody__hermite_tile_fn)(const nbody__hermite_src *S, size_t j0, size_t j1, const nbody__hermite_tile_in *T,
                                       double *sums);

/* the portable tile: lane by lane, as nbody__hermite_row */
static void nbody__hermite_tile_portable(const nbody__hermite_src *S, size_t j0, size_t j1, const nbody__hermite_tile_in *T,
                                         double *sums) {
    int l, k;
    for (k = 0; k < 9 * NBODY__HERMITE_TW; ++k) sums[k] = 0;
    for (l = 0; l < NBODY__HERMITE_TW; ++l) {
        size_t j;
        nbody_real t[9];
        if (T->idx[l] == (size_t)-1) continue;
        for (j = j0; j < j1; ++j) {
            if (j == T->idx[l]) continue;
            nbody__hermite_pair(S->x[j] - T->t[0][l], S->y[j] - T->t[1][l], S->z[j] - T->t[2][l], S->vx[j] - T->t[3][l],
                                S->vy[j] - T->t[4][l], S->vz[j] - T->t[5][l], S->snap ? S->ax[j] - T->t[6][l] : 0,
                                S->snap ? S->ay[j] - T->t[7][l] : 0, S->snap ? S->az[j] - T->t[8][l] : 0, S->m[j], S->eps2,
                                S->snap, t);
            for (k = 0; k < (S->snap ? 9 : 6); ++k) sums[k * NBODY__HERMITE_TW + l] += (double)t[k];
        }
    }
}

/* one target i against the sources [j0, j1) into sums[0..9) (NBODY__HERMITE_LANES below) */
typedef void (*nbody__hermite_lanes_fn)(const nbody__hermite_src *S, size_t j0, size_t j1, size_t i, double *sums);
/* the portable one: nbody__hermite_row, in index order (the portable tile's order) */
static void nbody__hermite_lanes_portable(const nbody__hermite_src *S, size_t j0, size_t j1, size_t i, double *sums) {
    int k;
    for (k = 0; k < 9; ++k) sums[k] = 0;
    nbody__hermite_row(S, i, j0, j1, sums);
}

/* The pair terms of nbody__hermite_pair, lane-wise, written once over a vector layer V (the
   BLOCK kernels' layers, see NBODY__BLOCK_KERNELS, with V_rsqrt = 1 / sqrt to the double's
   precision), with the attribute IN: V_hermite adds them to s[0..6) (s[6..9) with the snap),
   source j broadcast (p: x y z vx vy vz ax ay az, and m), targets t. The terms of
   nbody__hermite_pair with mr3 taken out: A = mr3 d, J = mr3 (v - a3 d),
   S = mr3 (a - 2 a3 v + (5/3 a3^2 - q i3) d) with i3 = 3 / r^2, a3 = i3 d.v (3 alpha) and
   q = v.v + d.a (S's 3 beta A and 6 alpha J expanded): 33 vector instructions per pair at
   order 4, 55 at order 6, against 34 and 65 for the sums of A, J and S as written there. Written out component by component (no
   loops over arrays): the compiler keeps it all in registers. */
#define NBODY__HERMITE_PAIR(V, IN)                                                                                       \
IN void V##_hermite(const V *p, V m, V e2, const V *t, int snap, V *s) {                                                  \
    V dx = V##_sub(p[0], t[0]), dy = V##_sub(p[1], t[1]), dz = V##_sub(p[2], t[2]);                                      \
    V vx = V##_sub(p[3], t[3]), vy = V##_sub(p[4], t[4]), vz = V##_sub(p[5], t[5]);                                      \
    V r2 = V##_fma(dx, dx, V##_fma(dy, dy, V##_fma(dz, dz, e2)));                                                        \
    V inv = V##_rsqrt(r2), inv2 = V##_mul(inv, inv);                                                                     \
    V mr3 = V##_mul(V##_mul(m, inv), inv2), i3 = V##_mul(V##_set1(3), inv2);                                             \
    V a3 = V##_mul(V##_fma(dx, vx, V##_fma(dy, vy, V##_mul(dz, vz))), i3);                                               \
    s[0] = V##_fma(mr3, dx, s[0]); s[1] = V##_fma(mr3, dy, s[1]); s[2] = V##_fma(mr3, dz, s[2]);                         \
    s[3] = V##_fma(mr3, V##_fnma(a3, dx, vx), s[3]);                                                                     \
    s[4] = V##_fma(mr3, V##_fnma(a3, dy, vy), s[4]);                                                                     \
    s[5] = V##_fma(mr3, V##_fnma(a3, dz, vz), s[5]);                                                                     \
    if (snap) {                                                                                                          \
        V ax = V##_sub(p[6], t[6]), ay = V##_sub(p[7], t[7]), az = V##_sub(p[8], t[8]);                                  \
        V q = V##_fma(vx, vx, V##_fma(vy, vy, V##_fma(vz, vz, V##_fma(dx, ax, V##_fma(dy, ay, V##_mul(dz, az))))));      \
        V gamma = V##_fnma(q, i3, V##_mul(a3, V##_mul(V##_set1((nbody_real)(5.0 / 3)), a3)));                                          \
        V a6 = V##_add(a3, a3);                                                                                          \
        s[6] = V##_fma(mr3, V##_fma(gamma, dx, V##_fnma(a6, vx, ax)), s[6]);                                             \
        s[7] = V##_fma(mr3, V##_fma(gamma, dy, V##_fnma(a6, vy, ay)), s[7]);                                             \
        s[8] = V##_fma(mr3, V##_fma(gamma, dz, V##_fnma(a6, vz, az)), s[8]);                                             \
    }                                                                                                                    \
}

/* One target, body i, against the sources [j0, j1) in the lanes, W at a time: for the steps
   with few active bodies, whose tiles would leave most lanes empty. The pair terms are the
   tile's (V_hermite with the sources loaded and the target broadcast); each lane sums its own
   sources, and the lanes are added in order into sums[0..9) (double). The vector that holds i
   itself and the one that passes j1 go through a copy where those lanes carry mass 0 at
   distance 1 (V_hermite_pad); the others are loaded as they lie (V_hermite_run). */
#define NBODY__HERMITE_LANES(V, IN, W)                                                                                   \
IN void V##_hermite_run(const nbody__hermite_src *S, size_t j0, size_t j1, V e2, const V *t, int snap, V *s) {          \
    V p[9];                                                                                                              \
    size_t j;                                                                                                            \
    p[6] = p[7] = p[8] = V##_set1(0);                                                                                    \
    for (j = j0; j < j1; j += W) {                                                                                       \
        p[0] = V##_load(S->x + j); p[1] = V##_load(S->y + j); p[2] = V##_load(S->z + j);                                 \
        p[3] = V##_load(S->vx + j); p[4] = V##_load(S->vy + j); p[5] = V##_load(S->vz + j);                              \
        if (snap) { p[6] = V##_load(S->ax + j); p[7] = V##_load(S->ay + j); p[8] = V##_load(S->az + j); }                \
        V##_hermite(p, V##_load(S->m + j), e2, t, snap, s);                                                              \
    }                                                                                                                    \
}                                                                                                                        \
IN void V##_hermite_pad(const nbody__hermite_src *S, size_t j, size_t j1, size_t i, const nbody_real *ti, V e2,          \
                        const V *t, int snap, V *s) {                                                                    \
    const nbody_real *c[9];                                                                                              \
    nbody_real pad[10][W];                                                                                               \
    V p[9];                                                                                                              \
    size_t l;                                                                                                            \
    int k;                                                                                                               \
    c[0] = S->x; c[1] = S->y; c[2] = S->z; c[3] = S->vx; c[4] = S->vy; c[5] = S->vz; c[6] = S->ax; c[7] = S->ay;        \
    c[8] = S->az;                                                                                                        \
    for (l = 0; l < W; ++l) {                                                                                            \
        int off = j + l >= j1 || j + l == i;                                                                             \
        for (k = 0; k < 9; ++k) pad[k][l] = off ? ti[k] + (k == 0) : k < 6 || snap ? c[k][j + l] : 0;                    \
        pad[9][l] = off ? 0 : S->m[j + l];                                                                               \
    }                                                                                                                    \
    for (k = 0; k < 9; ++k) p[k] = V##_load(pad[k]);                                                                     \
    V##_hermite(p, V##_load(pad[9]), e2, t, snap, s);                                                                    \
}                                                                                                                        \
IN void V##_hermite_lanes(const nbody__hermite_src *S, size_t j0, size_t j1, size_t i, int snap, double *sums) {         \
    nbody_real ti[9], lane[W];                                                                                           \
    V t[9], s[9], e2 = V##_set1(S->eps2);                                                                                \
    size_t end = j0 + (j1 - j0) / W * W, self = i >= j0 && i < end ? j0 + (i - j0) / W * W : end, l;                     \
    int k;                                                                                                               \
    ti[0] = S->x[i]; ti[1] = S->y[i]; ti[2] = S->z[i]; ti[3] = S->vx[i]; ti[4] = S->vy[i]; ti[5] = S->vz[i];             \
    ti[6] = snap ? S->ax[i] : 0; ti[7] = snap ? S->ay[i] : 0; ti[8] = snap ? S->az[i] : 0;                               \
    for (k = 0; k < 9; ++k) { t[k] = V##_set1(ti[k]); s[k] = V##_set1(0); }                                              \
    V##_hermite_run(S, j0, self, e2, t, snap, s);                                                                        \
    if (self < end) {                                                                                                    \
        V##_hermite_pad(S, self, j1, i, ti, e2, t, snap, s);                                                             \
        V##_hermite_run(S, self + W, end, e2, t, snap, s);                                                               \
    }                                                                                                                    \
    if (end < j1) V##_hermite_pad(S, end, j1, i, ti, e2, t, snap, s);                                                    \
    for (k = 0; k < 9; ++k) {                                                                                            \
        V##_store(lane, s[k]);                                                                                           \
        sums[k] = 0;                                                                                                     \
        for (l = 0; l < W; ++l) sums[k] += (double)lane[l];                                                              \
    }                                                                                                                    \
}

#if NBODY__HAVE_AVX512 && NBODY__KIND == 2
/* 1 / sqrt(x) to the double's precision: the estimate y (2^-14) and the series of
   (1 - e)^(-1/2) = 1 + e/2 + 3/8 e^2 + 5/16 e^3, e = 1 - x y^2 (the next term, 35/128 e^4, is
   below 2^-54) */
NBODY__I512 nbody__v512 nbody__v512_rsqrt(nbody__v512 x) {
    nbody__v512 y = nbody__v512_rsqrt_estimate(x), e = nbody__v512_fnma(x, nbody__v512_mul(y, y), nbody__v512_set1(1));
    nbody__v512 p = nbody__v512_fma(nbody__v512_fma(nbody__v512_set1(0.3125), e, nbody__v512_set1(0.375)), e, nbody__v512_set1(0.5));
    return nbody__v512_fma(nbody__v512_mul(y, e), p, y);
}
NBODY__HERMITE_PAIR(nbody__v512, NBODY__I512)
NBODY__HERMITE_LANES(nbody__v512, NBODY__I512, NBODY__V512_W)
static NBODY__TARGET_AVX512 void nbody__avx512_hermite_lanes(const nbody__hermite_src *S, size_t j0, size_t j1, size_t i,
                                                             double *sums) {
    if (S->snap) nbody__v512_hermite_lanes(S, j0, j1, i, 1, sums);
    else nbody__v512_hermite_lanes(S, j0, j1, i, 0, sums);
}
/* sources [j0, j1) broadcast against the tile's lanes; lane `self` (or -1) is source j itself */
NBODY__I512 void nbody__avx512_hermite_span(const nbody__hermite_src *S, size_t j0, size_t j1, int self, const nbody__v512 *t,
                                            int snap, nbody__v512 *s) {
    nbody__v512 e2 = nbody__v512_set1(S->eps2), p[9];
    size_t j;
    int k;
    if (self >= 0) e2 = _mm512_mask_add_pd(e2, (__mmask8)(1u << self), e2, nbody__v512_set1(1));
    for (k = 6; k < 9; ++k) p[k] = nbody__v512_set1(0);
    for (j = j0; j < j1; ++j) {
        nbody__v512 m = nbody__v512_set1(S->m[j]);
        if (self >= 0) m = _mm512_maskz_mov_pd((__mmask8)~(1u << self), m);
        p[0] = nbody__v512_set1(S->x[j]); p[1] = nbody__v512_set1(S->y[j]); p[2] = nbody__v512_set1(S->z[j]);
        p[3] = nbody__v512_set1(S->vx[j]); p[4] = nbody__v512_set1(S->vy[j]); p[5] = nbody__v512_set1(S->vz[j]);
        if (snap) { p[6] = nbody__v512_set1(S->ax[j]); p[7] = nbody__v512_set1(S->ay[j]); p[8] = nbody__v512_set1(S->az[j]); }
        nbody__v512_hermite(p, m, e2, t, snap, s);
    }
}
static NBODY__TARGET_AVX512 void nbody__avx512_hermite_tile(const nbody__hermite_src *S, size_t j0, size_t j1,
                                                            const nbody__hermite_tile_in *T, double *sums) {
    nbody__v512 t[9], s[9];
    size_t j = j0;
    int k, l;
    for (k = 0; k < 9; ++k) { t[k] = nbody__v512_load(T->t[k]); s[k] = nbody__v512_set1(0); }
    for (l = 0; l < NBODY__HERMITE_TW; ++l) {   /* the rising indices split the range at the tile's own bodies */
        size_t i = T->idx[l];
        if (i < j || i >= j1) continue;
        if (S->snap) { nbody__avx512_hermite_span(S, j, i, -1, t, 1, s); nbody__avx512_hermite_span(S, i, i + 1, l, t, 1, s); }
        else { nbody__avx512_hermite_span(S, j, i, -1, t, 0, s); nbody__avx512_hermite_span(S, i, i + 1, l, t, 0, s); }
        j = i + 1;
    }
    if (S->snap) nbody__avx512_hermite_span(S, j, j1, -1, t, 1, s);
    else nbody__avx512_hermite_span(S, j, j1, -1, t, 0, s);
    for (k = 0; k < 9; ++k) nbody__v512_store(sums + k * NBODY__HERMITE_TW, s[k]);
}
#endif

#if NBODY__HAVE_AVX2 && NBODY__KIND == 2
/* 1 / sqrt(x): one correctly rounded sqrt and divide (as the level's r^-3) */
NBODY__I256 nbody__v256 nbody__v256_rsqrt(nbody__v256 x) { return nbody__v256_div(nbody__v256_set1(1), nbody__v256_sqrt(x)); }
NBODY__HERMITE_PAIR(nbody__v256, NBODY__I256)
NBODY__HERMITE_LANES(nbody__v256, NBODY__I256, NBODY__V256_W)
static NBODY__TARGET_AVX2 void nbody__avx2_hermite_lanes(const nbody__hermite_src *S, size_t j0, size_t j1, size_t i,
                                                         double *sums) {
    if (S->snap) nbody__v256_hermite_lanes(S, j0, j1, i, 1, sums);
    else nbody__v256_hermite_lanes(S, j0, j1, i, 0, sums);
}
/* sources [j0, j1) against the tile's two vectors of lanes; lane `self` (or -1) is source j */
NBODY__I256 void nbody__avx2_hermite_span(const nbody__hermite_src *S, size_t j0, size_t j1, int self, const nbody__v256 *t,
                                          int snap, nbody__v256 *s) {
    enum { W = NBODY__V256_W };
    nbody__v256 e2[2], keep[2], p[9];
    size_t j;
    int k, u;
    for (u = 0; u < 2; ++u) {
        unsigned bits = self >= u * W && self < (u + 1) * W ? 1u << (self - u * W) : 0;
        nbody__v256 mask = nbody__v256_lanes(bits);
        e2[u] = nbody__v256_add(nbody__v256_set1(S->eps2), nbody__v256_select(mask, nbody__v256_set1(1), nbody__v256_set1(0)));
        keep[u] = nbody__v256_select(mask, nbody__v256_set1(0), nbody__v256_set1(1));
    }
    for (k = 6; k < 9; ++k) p[k] = nbody__v256_set1(0);
    for (j = j0; j < j1; ++j) {
        nbody__v256 m = nbody__v256_set1(S->m[j]);
        p[0] = nbody__v256_set1(S->x[j]); p[1] = nbody__v256_set1(S->y[j]); p[2] = nbody__v256_set1(S->z[j]);
        p[3] = nbody__v256_set1(S->vx[j]); p[4] = nbody__v256_set1(S->vy[j]); p[5] = nbody__v256_set1(S->vz[j]);
        if (snap) { p[6] = nbody__v256_set1(S->ax[j]); p[7] = nbody__v256_set1(S->ay[j]); p[8] = nbody__v256_set1(S->az[j]); }
        for (u = 0; u < 2; ++u) nbody__v256_hermite(p, self >= 0 ? nbody__v256_mul(m, keep[u]) : m, e2[u], t + 9 * u, snap, s + 9 * u);
    }
}
static NBODY__TARGET_AVX2 void nbody__avx2_hermite_tile(const nbody__hermite_src *S, size_t j0, size_t j1,
                                                        const nbody__hermite_tile_in *T, double *sums) {
    enum { W = NBODY__V256_W };
    nbody__v256 t[18], s[18];
    size_t j = j0;
    int k, l, u;
    for (u = 0; u < 2; ++u)
        for (k = 0; k < 9; ++k) { t[9 * u + k] = nbody__v256_load(T->t[k] + u * W); s[9 * u + k] = nbody__v256_set1(0); }
    for (l = 0; l < NBODY__HERMITE_TW; ++l) {
        size_t i = T->idx[l];
        if (i < j || i >= j1) continue;
        if (S->snap) { nbody__avx2_hermite_span(S, j, i, -1, t, 1, s); nbody__avx2_hermite_span(S, i, i + 1, l, t, 1, s); }
        else { nbody__avx2_hermite_span(S, j, i, -1, t, 0, s); nbody__avx2_hermite_span(S, i, i + 1, l, t, 0, s); }
        j = i + 1;
    }
    if (S->snap) nbody__avx2_hermite_span(S, j, j1, -1, t, 1, s);
    else nbody__avx2_hermite_span(S, j, j1, -1, t, 0, s);
    for (u = 0; u < 2; ++u)
        for (k = 0; k < 9; ++k) nbody__v256_store(sums + k * NBODY__HERMITE_TW + u * W, s[9 * u + k]);
}
#endif

/* the predictor compiled for a SIMD level's instruction set (the same arithmetic, in its lanes) */
#if NBODY__HAVE_AVX512
static NBODY__TARGET_AVX512 void nbody__avx512_hermite_predict(size_t n, const nbody__hermite_op *op, size_t i0, size_t i1) {
    nbody__hermite_predict_span(n, op, i0, i1);
}
#endif
#if NBODY__HAVE_AVX2
static NBODY__TARGET_AVX2 void nbody__avx2_hermite_predict(size_t n, const nbody__hermite_op *op, size_t i0, size_t i1) {
    nbody__hermite_predict_span(n, op, i0, i1);
}
#endif
static nbody__hermite_predict_fn nbody__hermite_predict_for(nbody_simd level) {
#if NBODY__HAVE_AVX512
    if (level == NBODY_SIMD_AVX512) return nbody__avx512_hermite_predict;
#endif
#if NBODY__HAVE_AVX2
    if (level == NBODY_SIMD_AVX2) return nbody__avx2_hermite_predict;
#endif
    (void)level;
    return nbody__hermite_predict_default;
}

/* the tile and the one-target function of a SIMD level (the portable ones where the level has
   none for this NBODY_REAL) */
static void nbody__hermite_kernels_for(nbody_simd level, nbody__hermite_tile_fn *tile, nbody__hermite_lanes_fn *lanes) {
    *tile = nbody__hermite_tile_portable; *lanes = nbody__hermite_lanes_portable;
#if NBODY__HAVE_AVX512 && NBODY__KIND == 2
    if (level == NBODY_SIMD_AVX512) { *tile = nbody__avx512_hermite_tile; *lanes = nbody__avx512_hermite_lanes; }
#endif
#if NBODY__HAVE_AVX2 && NBODY__KIND == 2
    if (level == NBODY_SIMD_AVX2) { *tile = nbody__avx2_hermite_tile; *lanes = nbody__avx2_hermite_lanes; }
#endif
    (void)level;
}

/* the tile q's targets: active bodies q TW .. (padded with the first one's state) */
static void nbody__hermite_tile_gather(const nbody__hermite_src *S, const nbody__hermite_op *op, size_t tile,
                                       nbody__hermite_tile_in *T) {
    int l, k;
    for (l = 0; l < NBODY__HERMITE_TW; ++l) {
        size_t q = tile * NBODY__HERMITE_TW + (size_t)l, i = op->list[q < op->count ? q : tile * NBODY__HERMITE_TW];
        const nbody_real *c[9];
        c[0] = S->x; c[1] = S->y; c[2] = S->z; c[3] = S->vx; c[4] = S->vy; c[5] = S->vz; c[6] = S->ax; c[7] = S->ay; c[8] = S->az;
        for (k = 0; k < 9; ++k) T->t[k][l] = k < 6 || S->snap ? c[k][i] : 0;
        T->idx[l] = q < op->count ? i : (size_t)-1;
    }
}

/* the sources' chunk for a step with `groups` groups of active sources (tiles, or single
   bodies): at least 16 tasks (group, chunk) where few are active, so that they still fill the
   threads, and at most NBODY__HERMITE_CHUNK sources (they stay in cache) and at least 256 (a
   task pays for its scheduling). A function of the counts alone: the sums are the same bits on
   any thread count */
static size_t nbody__hermite_chunk(size_t groups, size_t n) {
    size_t want = (16 + groups - 1) / groups, chunk = ((n + want - 1) / want + 255) / 256 * 256;
    return chunk < 256 ? 256 : chunk > NBODY__HERMITE_CHUNK ? NBODY__HERMITE_CHUNK : chunk;
}

/* the active sources (list entries below n_src: the list rises) */
static size_t nbody__hermite_active_sources(const nbody__hermite_op *op) {
    size_t lo = 0, hi = op->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (op->list[mid] < op->n_src) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* BLOCK's ops.hermite (lv NULL: the forces and state rows into op->out) and ops.hermite_step
   (the whole step, nbody__host_hermite_correct): the predictor, the forces and the correction
   in one parallel region, a block step's only fork and join */
static nbody_result nbody__block_hermite_run(nbody__engine *e, const nbody__hermite_op *op, const nbody__hermite_levels *lv) {
    nbody__cpu *c = (nbody__cpu *)e->impl;
    nbody__hermite_src S = nbody__hermite_src_of(e, op);
    nbody__hermite_tile_fn tile;
    nbody__hermite_lanes_fn lanes;
    /* Fewer active sources than a tile's lanes: a target a task, the sources in the lanes (no
       empty lanes). The path and the chunks follow the active sources, not all active bodies,
       so that test particles change nothing of the sources' sums. */
    size_t src = nbody__hermite_active_sources(op);
    int by_target = src < NBODY__HERMITE_TW;
    size_t width = by_target ? 1 : NBODY__HERMITE_TW, groups = (op->count + width - 1) / width;
    size_t chunk = nbody__hermite_chunk(src ? (src + width - 1) / width : 1, S.n), nchunks = (S.n + chunk - 1) / chunk;
    size_t need = groups * nchunks * 9 * width;
    long long t, tasks = (long long)(groups * nchunks);
    int threads = nbody__threads(&e->desc);
    nbody__hermite_predict_fn predict = nbody__hermite_predict_for(c->simd);
    (void)threads;
    nbody__hermite_kernels_for(c->simd, &tile, &lanes);
    if (need > c->hermite_cap) {
        nbody__free(&e->desc, c->hermite_part);
        c->hermite_part = (double *)nbody__alloc(&e->desc, nbody__bytes(need, sizeof(double)));
        c->hermite_cap = c->hermite_part ? need : 0;
        if (!c->hermite_part) return NBODY_ERR_OUT_OF_MEMORY;
    }
    if (lv && op->count > c->keep_cap) {
        nbody__free(&e->desc, c->hermite_keep);
        c->hermite_keep = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes(op->count, 18 * sizeof(nbody_real)));
        c->keep_cap = c->hermite_keep ? op->count : 0;
        if (!c->hermite_keep) return NBODY_ERR_OUT_OF_MEMORY;
    }
    /* one parallel region for the predictor and the forces, from some 16k pair terms or 1024
       bodies to predict on (about 25 us of one core's work, ten times a region's start and
       end); below that one thread does it all: many block steps have few active bodies */
    NBODY__PRAGMA(omp parallel num_threads(threads) if (threads > 1 && ((double)op->count * (double)S.n >= 16384 || e->n >= 4 * NBODY__HERMITE_PIECE)))
    {
        nbody__hermite_predict(e, op, predict);
        NBODY__PRAGMA(omp for schedule(dynamic, 1))
        for (t = 0; t < tasks; ++t) {
            size_t g = (size_t)t / nchunks, ch = (size_t)t % nchunks, j0 = ch * chunk, j1 = j0 + chunk < S.n ? j0 + chunk : S.n;
            double *part = c->hermite_part + (size_t)t * 9 * width;
            if (by_target) lanes(&S, j0, j1, op->list[g], part);
            else {
                nbody__hermite_tile_in T;
                nbody__hermite_tile_gather(&S, op, g, &T);
                tile(&S, j0, j1, &T, part);
            }
        }
        NBODY__PRAGMA(omp for schedule(static) nowait)
        for (t = 0; t < (long long)op->count; ++t) {   /* each chunk's sums, in chunk order; the state rows or the correction */
            size_t q = (size_t)t, g = q / width, l = q % width, ch;
            nbody_real b[24];
            int k;
            for (k = 0; k < 9; ++k) {
                double sum = 0;
                for (ch = 0; ch < nchunks; ++ch) sum += c->hermite_part[((g * nchunks + ch) * 9 + (size_t)k) * width + l];
                b[k] = e->desc.G * (nbody_real)sum;
                if (!lv) op->out[(size_t)k * op->count + q] = b[k];
            }
            if (lv) nbody__host_hermite_correct(e, op, lv, q, b, c->hermite_keep + 18 * q);
            else nbody__hermite_gather_row(e, op, q);
        }
    }
    return NBODY_OK;
}
static nbody_result nbody__block_hermite(nbody__engine *e, const nbody__hermite_op *op) { return nbody__block_hermite_run(e, op, NULL); }
static nbody_result nbody__block_hermite_step(nbody__engine *e, const nbody__hermite_op *op, const nbody__hermite_levels *lv) {
    return nbody__block_hermite_run(e, op, lv);
}

/* ======================================================================================
   >>tree  KD-TREE (NBODY_ENGINE_TREE)
   Barnes & Hut (Nature 324, 1986) on a kd-tree stored as an implicit binary heap, after the
   article's 'Function Approximation' section. Shared layout (the OpenCL/CUDA tree engines
   read it as is):
     - nodes at heap indices 1 .. 2n-1 (0 unused), children of i at 2i and 2i+1; the heap of
       2n-1 nodes is a full binary tree for ANY n: internal nodes 1..n-1, leaves n..2n-1,
       one body per leaf, body[i] = index of the body in leaf i;
     - per node (structure of arrays): centre of mass cx, cy, cz, mass, and crit2, the
       squared critical distance: node i acts as one body on a point x when
       |x - c_i|^2 > crit2[i] (NBODY__TREE_CRIT, backend interface); leaves have crit2 = 0 and skip
       themselves by body index;
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
    nbody_real inv_theta;          /* 1 / theta of the last build */
    /* CPU walk data (nbody__tree_prepare), one block from node */
    struct nbody__tree_node *node; /* 2n packed node records */
    nbody_real *bx, *by, *bz, *bm; /* n bodies in item order */
    size_t *pos;                   /* body index -> item position */
    size_t walk_cap, leaf_size;
    int walk;                      /* NBODY__TREE_WALK_*: whose code walks (the engine's SIMD level) */
    const size_t *kid;             /* NULL: the heap (children of i at 2i, 2i + 1); a locally
                                      essential tree (>>mpi): children of i at kid[i], kid[i] + 1,
                                      none where kid[i] = 0; walked with the stack only */
    /* refits (nbody__tree_refit): each node's box lo, hi (3 each), radius and second moment B2
       (8 reals a node, 2n nodes), allocated on the first refit */
    nbody_real *fit;
    size_t fit_cap;
    int fit_valid;                 /* the walk data hold a tree that a refit may keep (its leaf order) */
} nbody__kdtree;

#define NBODY__AXIS_WIDEST 1       /* split the widest extent of the node's bodies */
#define NBODY__AXIS_CYCLE 2        /* x, y, z by depth */
#define NBODY__TREE_TASK_CUTOFF 8192  /* bodies below which a subtree is built by one task */
#define NBODY__TREE_STACK 160      /* > 2 * 64 + 1: depth is at most 64 with 64-bit indices */

/* ---- heap index arithmetic ----------------------------------------------------------
   nbody__heap_skip and nbody__heap_next: the shared formulas (backend interface) */

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
    nbody_real m = t->mass[2 * i] + t->mass[2 * i + 1], w[2], r2 = 0, b2 = 0, crit;
    size_t k;
    int s;
    c[0] = 2 * i; c[1] = 2 * i + 1;
    for (s = 0; s < 2; ++s) w[s] = m > 0 ? t->mass[c[s]] / m : (nbody_real)0.5;  /* massless: midpoint */
    t->mass[i] = m;
    t->cx[i] = w[0] * t->cx[c[0]] + w[1] * t->cx[c[1]];
    t->cy[i] = w[0] * t->cy[c[0]] + w[1] * t->cy[c[1]];
    t->cz[i] = w[0] * t->cz[c[0]] + w[1] * t->cz[c[1]];
    /* exact bounding-sphere radius and second moment B2 about the centre of mass (one pass
       per tree level); the children are both leaves exactly when 2i >= n */
    for (k = 0; k < count; ++k) {
        nbody_real dx = items[k].p[0] - t->cx[i], dy = items[k].p[1] - t->cy[i], dz = items[k].p[2] - t->cz[i];
        nbody_real d2 = dx * dx + dy * dy + dz * dz;
        r2 = d2 > r2 ? d2 : r2;
        b2 += items[k].m * d2;
    }
    crit = NBODY__TREE_CRIT(NBODY__SQRT(r2), m > 0 ? b2 / m : 0, t->inv_theta, 2 * i >= t->n, NBODY__SQRT);
    t->crit2[i] = crit * crit;
    if (t->quad) {   /* parallel-axis theorem: S = sum_children S_c + m_c s s^T, s = c_c - c */
        nbody_real *q = t->quad + 6 * i;
        for (k = 0; k < 6; ++k) q[k] = 0;
        for (s = 0; s < 2; ++s) {
            nbody__quad_shift(q, t->quad + 6 * c[s], t->mass[c[s]], t->cx[c[s]] - t->cx[i], t->cy[c[s]] - t->cy[i],
                              t->cz[c[s]] - t->cz[i]);
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
        NBODY__PRAGMA_OMP4(omp task)
        nbody__tree_build_node(t, 2 * i, items, left);
        nbody__tree_build_node(t, 2 * i + 1, items + left, count - left);
        NBODY__PRAGMA_OMP4(omp taskwait)
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
    nbody__free(d, t->fit);
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
    t->inv_theta = 1 / d->theta;
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
/* the number of lanes in m */
static size_t nbody__tree_lanes_in(nbody__tree_mask m) {
    size_t c = 0;
    for (; m; m &= m - 1) ++c;
    return c;
}

typedef struct nbody__tree_node {  /* CPU walk record of one heap node */
    nbody_real c[3], crit2, mass;
    size_t first, count;           /* its bodies: items[first .. first + count) */
} nbody__tree_node;

/* the neighbour levels a walk of the block steps gathers (nbody__active_op's level, neighbour_level, reach
   and gap): neighbour_level in the walk's slots */
typedef struct nbody__tree_near {
    const unsigned long long *level;
    unsigned long long *neighbour_level;
    long long *reach;
    nbody_real reach_min;
} nbody__tree_near;

typedef struct nbody__tree_packet {
    nbody_real x[NBODY__TREE_LANES], y[NBODY__TREE_LANES], z[NBODY__TREE_LANES];
    nbody_real ax[NBODY__TREE_LANES], ay[NBODY__TREE_LANES], az[NBODY__TREE_LANES];
    size_t self[NBODY__TREE_LANES];    /* item position of each lane's body */
    nbody_real eps2;
    /* bucket sums apart, 4 partial sums per lane: body first + 4m + j goes to partial j */
    nbody_real b[3][NBODY__TREE_LANES][4];
    /* the last walk's work in lane interactions: NBODY__TREE_LANES a node visited (every lane
       is computed), a bucket's bodies for each lane that sums it; the decomposed tree's cost
       of its bodies (>>mpi, nbody__tree_forces_domain). Set by every walk. */
    size_t work;
    /* NULL, or the neighbour levels to gather: each lane's G m (gm) and the finest level of the
       bodies it summed directly (neighbour_level) */
    const nbody__tree_near *nb;
    nbody_real gm[NBODY__TREE_LANES];
    unsigned long long neighbour_level[NBODY__TREE_LANES];
    nbody__tree_mask heavy;        /* the lanes whose largest pull, G m / softening^2, passes reach_min */
} nbody__tree_packet;

/* each node's bodies as a range of items: counts bottom-up, then first items top-down (the
   right child's bodies follow the left child's in items, the build's recursion) */
static void nbody__tree_ranges(nbody__kdtree *t) {
    size_t n = t->n, i;
    for (i = 2 * n - 1; i >= 1; --i) t->node[i].count = i >= n ? 1 : t->node[2 * i].count + t->node[2 * i + 1].count;
    t->node[1].first = 0;
    for (i = 1; i < n; ++i) {
        t->node[2 * i].first = t->node[i].first;
        t->node[2 * i + 1].first = t->node[i].first + t->node[2 * i].count;
    }
}

/* (re)allocate the CPU walk data for t->n bodies */
static nbody_result nbody__tree_walk_reserve(nbody__kdtree *t, const nbody_desc *d) {
    size_t n = t->n, nodes = 2 * n, nb = nbody__bytes(nodes, sizeof(nbody__tree_node));
    size_t rb = nbody__bytes(4 * (n + 4), sizeof(nbody_real)), pb = nbody__bytes(n, sizeof(size_t));
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
    return NBODY_OK;
}

/* (re)allocate and fill the CPU walk data of a built tree for buckets of leaf_size */
static nbody_result nbody__tree_prepare(nbody__kdtree *t, const nbody_desc *d, size_t leaf_size) {
    size_t n = t->n, nodes = 2 * n, i;
    long long k, nn = (long long)n;
    nbody_result r = nbody__tree_walk_reserve(t, d);
    if (r != NBODY_OK) return r;
    t->leaf_size = leaf_size;
    t->fit_valid = 0;
    NBODY__PRAGMA(omp parallel for schedule(static) num_threads(nbody__threads(d)) if (nn > 65536))
    for (k = 0; k < nn; ++k) {
        const nbody__tree_item *it = &t->items[k];
        t->bx[k] = it->p[0]; t->by[k] = it->p[1]; t->bz[k] = it->p[2]; t->bm[k] = it->m;
        t->pos[it->idx] = (size_t)k;
    }
    memset(&t->node[0], 0, sizeof t->node[0]);
    for (i = nodes - 1; i >= 1; --i) {
        nbody__tree_node *r = &t->node[i];
        r->c[0] = t->cx[i]; r->c[1] = t->cy[i]; r->c[2] = t->cz[i]; r->crit2 = t->crit2[i]; r->mass = t->mass[i];
    }
    nbody__tree_ranges(t);
    return NBODY_OK;
}

/* The tree of leaf order `order` (the first n entries; n bodies) laid out for refits: the
   items and the walk data's ranges, without any node's contents (nbody__tree_refit fills them) */
static nbody_result nbody__tree_layout(nbody__kdtree *t, const nbody_desc *d, const unsigned long long *order, size_t n, size_t leaf_size) {
    nbody_result r = nbody__kdtree_reserve(t, d, n, d->quadrupole);
    size_t k;
    if (r != NBODY_OK) return r;
    t->n = n;
    if (t->axis_rule == 0) t->axis_rule = NBODY__AXIS_WIDEST;
    if ((r = nbody__tree_walk_reserve(t, d)) != NBODY_OK) return r;
    for (k = 0; k < n; ++k) { t->items[k].idx = (size_t)order[k]; t->pos[order[k]] = k; }
    nbody__tree_ranges(t);
    for (k = n; k < 2 * n; ++k) t->body[k] = t->items[t->node[k].first].idx;
    if (t->quad) memset(t->quad + 6 * n, 0, 6 * n * sizeof(nbody_real));   /* leaves: no second moments */
    t->leaf_size = leaf_size;
    t->inv_theta = 1 / d->theta;
    t->fit_valid = 1;
    return NBODY_OK;
}

/* Refit (nbody__active_op): the walk data of the tree laid out in items recomputed for the
   positions x, y, z and masses m: the leaves, then the internal nodes from the deepest level
   up, each from its children by nbody__tree_inner, the GPU builds' formula (the radius the
   smaller of the sphere around the children's spheres and the box's farthest corner, the
   second moment by the parallel-axis theorem): O(n) and no selection, where a build selects
   along every level. The shared-layout arrays (cx .. crit2) are left as the last build's: the
   walks read the walk data only. */

/* leaf j (n <= j < 2n): its body's position and mass, exactly; 1 when not finite */
static int nbody__tree_refit_leaf(nbody__kdtree *t, size_t j, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                                  const nbody_real *m) {
    size_t it = t->node[j].first, b = t->items[it].idx;
    nbody__tree_node *r = &t->node[j];
    nbody_real *fj = t->fit + 8 * j;
    r->c[0] = fj[0] = fj[3] = t->bx[it] = x[b];
    r->c[1] = fj[1] = fj[4] = t->by[it] = y[b];
    r->c[2] = fj[2] = fj[5] = t->bz[it] = z[b];
    r->mass = t->bm[it] = m[b];
    r->crit2 = fj[6] = fj[7] = 0;
    return !nbody__isfinite(x[b]) || !nbody__isfinite(y[b]) || !nbody__isfinite(z[b]);
}

/* internal node i from its children (refitted before it) */
static void nbody__tree_refit_inner(nbody__kdtree *t, size_t i) {
    size_t a = 2 * i, b = a + 1;
    const nbody__tree_node *ra = &t->node[a], *rb = &t->node[b];
    const nbody_real *fa = t->fit + 8 * a, *fb = t->fit + 8 * b;
    nbody_real *fi = t->fit + 8 * i, crit;
    nbody__tree_node *r = &t->node[i];
    int c;
    for (c = 0; c < 3; ++c) { fi[c] = NBODY__FMIN(fa[c], fb[c]); fi[3 + c] = NBODY__FMAX(fa[3 + c], fb[3 + c]); }
    crit = nbody__tree_inner(ra->c[0], ra->c[1], ra->c[2], ra->mass, fa[6], fa[7], rb->c[0], rb->c[1], rb->c[2], rb->mass, fb[6], fb[7],
                             fi[0], fi[1], fi[2], fi[3], fi[4], fi[5], t->inv_theta, a >= t->n, &r->c[0], &r->c[1], &r->c[2], &fi[6],
                             &fi[7]);
    r->crit2 = crit * crit;
    r->mass = ra->mass + rb->mass;
    if (t->quad) {   /* parallel-axis theorem, as the build */
        nbody_real *q = t->quad + 6 * i;
        for (c = 0; c < 6; ++c) q[c] = 0;
        nbody__quad_shift(q, t->quad + 6 * a, ra->mass, ra->c[0] - r->c[0], ra->c[1] - r->c[1], ra->c[2] - r->c[2]);
        nbody__quad_shift(q, t->quad + 6 * b, rb->mass, rb->c[0] - r->c[0], rb->c[1] - r->c[1], rb->c[2] - r->c[2]);
    }
}

/* the subtree under heap node r (the nodes r 2^l .. (r + 1) 2^l - 1 of each level l below it):
   its leaves, then, all finite, its internal nodes from the deepest level up; 1 when a leaf is
   not finite */
static int nbody__tree_refit_subtree(nbody__kdtree *t, size_t r, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                                     const nbody_real *m) {
    size_t n = t->n, nodes = 2 * n, i;
    int L = 0, l, bad = 0;
    while ((r << (L + 1)) < nodes) ++L;
    for (l = 0; l <= L; ++l) {
        size_t hi = (r + 1) << l < nodes ? (r + 1) << l : nodes;
        for (i = r << l > n ? r << l : n; i < hi; ++i) bad |= nbody__tree_refit_leaf(t, i, x, y, z, m);
    }
    for (l = L; l >= 0 && !bad; --l) {
        size_t hi = (r + 1) << l < n ? (r + 1) << l : n;
        for (i = r << l; i < hi; ++i) nbody__tree_refit_inner(t, i);
    }
    return bad;
}

/* The heap cut at the depth D where 2^D subtrees give every thread some 16 (2^D <= n, so the
   nodes above them are internal): the subtrees in one parallel loop, then the nodes above. The
   same bits as any order: each node is its children's function. */
static nbody_result nbody__tree_refit(nbody__kdtree *t, const nbody_desc *d, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                                      const nbody_real *m, int *finite) {
    size_t n = t->n, nodes = 2 * n, top = 1, i;
    long long k, lo, hi;
    int bad = 0, threads = nbody__threads(d);
    if (t->fit_cap != n) {
        nbody__free(d, t->fit);
        t->fit_cap = 0;
        if (nbody__bytes(nodes, 8 * sizeof(nbody_real)) == 0 || !(t->fit = (nbody_real *)nbody__alloc(d, nodes * 8 * sizeof(nbody_real))))
            return NBODY_ERR_OUT_OF_MEMORY;
        t->fit_cap = n;
    }
    while (top < (size_t)16 * (size_t)threads && 2 * top <= n) top *= 2;
    lo = (long long)top; hi = 2 * (long long)top;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 1) num_threads(threads) if (n > 16384) reduction(|:bad))
    for (k = lo; k < hi; ++k) bad |= nbody__tree_refit_subtree(t, (size_t)k, x, y, z, m);
    *finite = !bad;
    if (bad) return NBODY_OK;          /* the nodes would be NaN: the caller reports it */
    for (i = top - 1; i >= 1; --i) nbody__tree_refit_inner(t, i);
    return NBODY_OK;
}

/* The AVX2 level (also used at AVX-512) has its own visit, bucket and lane helpers below,
   compiled for AVX2 and reached through nbody__tree_walk_*_avx2: the walks are written once
   (nbody__tree_walk_*_body) and instantiated per level, so nothing on the walk's hot path
   goes through a pointer. Packets of a multiple of 8 lanes only. The 128-bit levels (NEON,
   SIMD128) walk with the generic visit and their own bucket sums (nbody__tree_bucket_v128). */
#define NBODY__TREE_AVX2 (NBODY__HAVE_AVX2 && NBODY__TREE_LANES % 8 == 0)
#define NBODY__TREE_WALK_GENERIC 0
#define NBODY__TREE_WALK_AVX2 1
#define NBODY__TREE_WALK_V128 2
/* the walk code of a SIMD level */
static int nbody__tree_walk_of(nbody_simd level) {
    if (NBODY__TREE_AVX2 && (level == NBODY_SIMD_AVX2 || level == NBODY_SIMD_AVX512)) return NBODY__TREE_WALK_AVX2;
    if (NBODY__HAVE_V128 && (level == NBODY_SIMD_NEON || level == NBODY_SIMD_SIMD128)) return NBODY__TREE_WALK_V128;
    return NBODY__TREE_WALK_GENERIC;
}
/* m h3, h3 = inv^3; where that is not finite, m inv inv inv, the SIMPLE engine's order (m = 0
   and an h3 beyond the range give 0 there, not NaN) */
static NBODY__FORCEINLINE nbody_real nbody__tree_weight(nbody_real m, nbody_real inv, nbody_real h3) {
    nbody_real w = m * h3;
    return w - w == 0 ? w : m * inv * inv * inv;
}
#if NBODY__TREE_AVX2
NBODY__I256 nbody__v256 nbody__v256_weight(nbody__v256 m, nbody__v256 inv, nbody__v256 h3) {
    nbody__v256 w = nbody__v256_mul(m, h3);
    unsigned bad = nbody__v256_nan(nbody__v256_sub(w, w));
    return bad ? nbody__v256_select(nbody__v256_lanes(bad), nbody__v256_mul(nbody__v256_mul(nbody__v256_mul(m, inv), inv), inv), w) : w;
}
#endif
/* inv = 1 / sqrt(r2) and h3 = inv^3 for all lanes of the generic path */
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
    nbody__tree_mask outside = 0;   /* not "far": <windows.h> defines far and near away */
    int l;
    NBODY__PRAGMA_OMP4(omp simd reduction(|:outside))
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        dx[l] = c[0] - p->x[l]; dy[l] = c[1] - p->y[l]; dz[l] = c[2] - p->z[l];
        d2[l] = dx[l] * dx[l] + dy[l] * dy[l] + dz[l] * dz[l];
        outside |= (nbody__tree_mask)(d2[l] > crit2) << l;
    }
    return outside;
}

/* the lanes in use add m h3 d, h3 = (d2 + eps^2)^(-3/2) */
static void nbody__tree_add(nbody__tree_packet *p, nbody__tree_mask use, nbody_real m, const nbody_real *dx, const nbody_real *dy,
                            const nbody_real *dz, const nbody_real *d2) {
    nbody_real r2[NBODY__TREE_LANES], inv[NBODY__TREE_LANES], h3[NBODY__TREE_LANES];
    int l;
    NBODY__PRAGMA_OMP4(omp simd)
    for (l = 0; l < NBODY__TREE_LANES; ++l) r2[l] = d2[l] + p->eps2;
    nbody__tree_h3(r2, inv, h3);
    NBODY__PRAGMA_OMP4(omp simd)
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        nbody_real w = nbody__tree_weight(m, inv[l], h3[l]);
        int on = (int)NBODY__TREE_BIT(use, l);
        p->ax[l] = on ? p->ax[l] + w * dx[l] : p->ax[l];
        p->ay[l] = on ? p->ay[l] + w * dy[l] : p->ay[l];
        p->az[l] = on ? p->az[l] + w * dz[l] : p->az[l];
    }
}

/* The neighbour levels of a bucket the lanes in open sum directly (p->nb): each such lane's neighbour_level
   rises to the bucket's finest level, and each body of the bucket has its reach raised to the
   largest pull of those lanes' bodies on it where that passes reach_min (an atomic max) */
static void nbody__tree_bucket_near(const nbody__kdtree *t, const nbody__tree_node *nd, nbody__tree_packet *p, nbody__tree_mask open) {
    const unsigned long long *level = p->nb->level;
    unsigned long long top = 0;
    size_t k, end = nd->first + nd->count;
    nbody__tree_mask m;
    for (k = nd->first; k < end; ++k) top = level[t->items[k].idx] > top ? level[t->items[k].idx] : top;
    for (m = open; m; m &= m - 1) {
        int l = (int)NBODY__CTZ64(m);
        p->neighbour_level[l] = top > p->neighbour_level[l] ? top : p->neighbour_level[l];
    }
    if (!p->nb->reach || !(open &= p->heavy)) return;
    for (k = nd->first; k < end; ++k) {
        nbody_real gm = 0, r2 = 1;     /* the largest pull so far, gm / r2 */
        for (m = open; m; m &= m - 1) {
            int l = (int)NBODY__CTZ64(m);
            nbody_real d2 = nbody__soft_r2(t->bx[k] - p->x[l], t->by[k] - p->y[l], t->bz[k] - p->z[l], p->eps2);
            if (k != p->self[l] && p->gm[l] * r2 > gm * d2) { gm = p->gm[l]; r2 = d2; }
        }
        if (gm > p->nb->reach_min * r2) nbody__count_max((volatile long long *)&p->nb->reach[t->items[k].idx], nbody__real_key(gm / r2));
    }
}

/* Each lane in open (that does not accept a bucket's node) adds the exact sum over the
   bucket's bodies, skipping its own: the bodies in groups of 4, body first + 4m + j into
   the lane's partial sum j (nbody__tree_bucket_avx2: 4-wide, the same operations) */
static void nbody__tree_bucket(const nbody__kdtree *t, const nbody__tree_node *nd, nbody__tree_packet *p, nbody__tree_mask open) {
    size_t k, end = nd->first + nd->count;
    int l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        if (!NBODY__TREE_BIT(open, l)) continue;
        for (k = nd->first; k < end; ++k) {
            nbody_real dx = t->bx[k] - p->x[l], dy = t->by[k] - p->y[l], dz = t->bz[k] - p->z[l], inv, w;
            int j = (int)((k - nd->first) % 4);
            if (k == p->self[l]) continue;
            inv = 1 / NBODY__SQRT(nbody__soft_r2(dx, dy, dz, p->eps2));
            w = nbody__tree_weight(t->bm[k], inv, inv * inv * inv);
            nbody__pull(w, dx, dy, dz, &p->b[0][l][j], &p->b[1][l][j], &p->b[2][l][j]);
        }
    }
}

#if NBODY__HAVE_V128
/* the bodies of the group [k, k + 4) a lane adds: before end, not itself (bit j: body k + j) */
static NBODY__FORCEINLINE unsigned nbody__tree_group_ok(size_t k, size_t end, size_t self) {
    unsigned ok = end - k >= 4 ? 15u : (1u << (end - k)) - 1u;
    return self >= k && self - k < 4 ? ok & ~(1u << (self - k)) : ok;
}
/* nbody__v256_weight for 128-bit vectors */
NBODY__I128 nbody__v128 nbody__v128_weight(nbody__v128 m, nbody__v128 inv, nbody__v128 h3) {
    nbody__v128 w = nbody__v128_mul(m, h3);
    unsigned bad = nbody__v128_nan(nbody__v128_sub(w, w));
    return bad ? nbody__v128_select(nbody__v128_lanes(bad), nbody__v128_mul(nbody__v128_mul(nbody__v128_mul(m, inv), inv), inv), w) : w;
}
/* nbody__tree_bucket for the 128-bit levels: a group of 4 bodies is 4 / W vectors (float: one,
   double: two), body first + 4m + j still into partial sum j; the same operations per lane
   (1 / sqrt, no fused multiply-add), so bitwise the generic sums */
static void nbody__tree_bucket_v128(const nbody__kdtree *t, const nbody__tree_node *nd, nbody__tree_packet *p, nbody__tree_mask open) {
    enum { W = NBODY__V128_W, H = 4 / NBODY__V128_W };
    const nbody__v128 e2 = nbody__v128_set1(p->eps2), one = nbody__v128_set1(1);
    size_t k, end = nd->first + nd->count;
    int l, h;
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        nbody__v128 xi, yi, zi, sx[H], sy[H], sz[H];
        if (!NBODY__TREE_BIT(open, l)) continue;
        xi = nbody__v128_set1(p->x[l]); yi = nbody__v128_set1(p->y[l]); zi = nbody__v128_set1(p->z[l]);
        for (h = 0; h < H; ++h) {
            sx[h] = nbody__v128_load(p->b[0][l] + h * W); sy[h] = nbody__v128_load(p->b[1][l] + h * W); sz[h] = nbody__v128_load(p->b[2][l] + h * W);
        }
        for (k = nd->first; k < end; k += 4) {
            unsigned ok = nbody__tree_group_ok(k, end, p->self[l]);
            NBODY__UNROLL for (h = 0; h < H; ++h) {
                size_t b = k + (size_t)(h * W);
                nbody__v128 dx = nbody__v128_sub(nbody__v128_load(t->bx + b), xi), dy = nbody__v128_sub(nbody__v128_load(t->by + b), yi);
                nbody__v128 dz = nbody__v128_sub(nbody__v128_load(t->bz + b), zi), r2, inv, w;
                nbody__v128m on = nbody__v128_lanes((ok >> (h * W)) & ((1u << W) - 1u));
                r2 = nbody__v128_add(nbody__v128_add(nbody__v128_add(nbody__v128_mul(dx, dx), nbody__v128_mul(dy, dy)), nbody__v128_mul(dz, dz)), e2);
                inv = nbody__v128_div(one, nbody__v128_sqrt(r2));
                w = nbody__v128_weight(nbody__v128_load(t->bm + b), inv, nbody__v128_mul(nbody__v128_mul(inv, inv), inv));
                sx[h] = nbody__v128_select(on, nbody__v128_add(sx[h], nbody__v128_mul(w, dx)), sx[h]);
                sy[h] = nbody__v128_select(on, nbody__v128_add(sy[h], nbody__v128_mul(w, dy)), sy[h]);
                sz[h] = nbody__v128_select(on, nbody__v128_add(sz[h], nbody__v128_mul(w, dz)), sz[h]);
            }
        }
        for (h = 0; h < H; ++h) {
            nbody__v128_store(p->b[0][l] + h * W, sx[h]); nbody__v128_store(p->b[1][l] + h * W, sy[h]);
            nbody__v128_store(p->b[2][l] + h * W, sz[h]);
        }
    }
}
#endif
/* a bucket's sums with the walk's code (the generic or the 128-bit levels') */
static void nbody__tree_bucket_at(const nbody__kdtree *t, const nbody__tree_node *nd, nbody__tree_packet *p, nbody__tree_mask open, int walk) {
#if NBODY__HAVE_V128
    if (walk == NBODY__TREE_WALK_V128) { nbody__tree_bucket_v128(t, nd, p, open); return; }
#endif
    (void)walk;
    nbody__tree_bucket(t, nd, p, open);
}

#if NBODY__TREE_AVX2
/* (a0 b0 + a1 b1) + a2 b2, the association the scalar code uses (no FMA: bitwise the same) */
NBODY__I256 nbody__v256 nbody__v256_dot3(nbody__v256 a0, nbody__v256 b0, nbody__v256 a1, nbody__v256 b1, nbody__v256 a2, nbody__v256 b2) {
    return nbody__v256_add(nbody__v256_add(nbody__v256_mul(a0, b0), nbody__v256_mul(a1, b1)), nbody__v256_mul(a2, b2));
}
/* the bucket, the 4 bodies of a group side by side (double: 4 lanes; float keeps the scalar loop) */
static NBODY__TARGET_AVX2 void nbody__tree_bucket_avx2(const nbody__kdtree *t, const nbody__tree_node *nd, nbody__tree_packet *p,
                                                       nbody__tree_mask open) {
#if NBODY__KIND == 2
    size_t k, end = nd->first + nd->count;
    int l;
    if (sizeof(size_t) != 8) { nbody__tree_bucket(t, nd, p, open); return; }
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        __m256d xi, yi, zi, e2, one, sx, sy, sz;
        __m256i self, last;
        if (!NBODY__TREE_BIT(open, l)) continue;
        xi = _mm256_set1_pd(p->x[l]); yi = _mm256_set1_pd(p->y[l]); zi = _mm256_set1_pd(p->z[l]);
        e2 = _mm256_set1_pd(p->eps2); one = _mm256_set1_pd(1);
        self = _mm256_set1_epi64x((long long)p->self[l]); last = _mm256_set1_epi64x((long long)end - 1);
        sx = _mm256_loadu_pd(p->b[0][l]); sy = _mm256_loadu_pd(p->b[1][l]); sz = _mm256_loadu_pd(p->b[2][l]);
        for (k = nd->first; k < end; k += 4) {
            __m256i idx = _mm256_add_epi64(_mm256_set1_epi64x((long long)k), _mm256_set_epi64x(3, 2, 1, 0));
            __m256d ok = _mm256_castsi256_pd(_mm256_andnot_si256(
                _mm256_or_si256(_mm256_cmpeq_epi64(idx, self), _mm256_cmpgt_epi64(idx, last)), _mm256_set1_epi64x(-1)));
            __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(t->bx + k), xi), dy = _mm256_sub_pd(_mm256_loadu_pd(t->by + k), yi);
            __m256d dz = _mm256_sub_pd(_mm256_loadu_pd(t->bz + k), zi);
            __m256d inv = _mm256_div_pd(one, _mm256_sqrt_pd(_mm256_add_pd(nbody__v256_dot3(dx, dx, dy, dy, dz, dz), e2)));
            __m256d w = nbody__v256_weight(_mm256_loadu_pd(t->bm + k), inv, _mm256_mul_pd(_mm256_mul_pd(inv, inv), inv));
            sx = _mm256_blendv_pd(sx, _mm256_add_pd(sx, _mm256_mul_pd(w, dx)), ok);
            sy = _mm256_blendv_pd(sy, _mm256_add_pd(sy, _mm256_mul_pd(w, dy)), ok);
            sz = _mm256_blendv_pd(sz, _mm256_add_pd(sz, _mm256_mul_pd(w, dz)), ok);
        }
        _mm256_storeu_pd(p->b[0][l], sx); _mm256_storeu_pd(p->b[1][l], sy); _mm256_storeu_pd(p->b[2][l], sz);
    }
#else
    nbody__tree_bucket(t, nd, p, open);
#endif
}
/* nbody__tree_visit below for the AVX2 level: distance test and pull fused, W lanes per
   vector (double 4, float 8), groups with no active lane skipped and dx, dy, dz kept in
   registers; the same operations in the same order per lane as the generic path, quadrupole
   term included */
static NBODY__TARGET_AVX2 nbody__tree_mask nbody__tree_visit_avx2(const nbody__kdtree *t, size_t i, nbody__tree_packet *p, nbody__tree_mask act) {
    enum { W = NBODY__V256_W };
    const nbody__tree_node *nd = &t->node[i];
    const nbody_real *q = t->quad && nd->count > 1 ? t->quad + 6 * i : NULL;
    const nbody__v256 cx = nbody__v256_set1(nd->c[0]), cy = nbody__v256_set1(nd->c[1]), cz = nbody__v256_set1(nd->c[2]);
    const nbody__v256 crit2 = nbody__v256_set1(nd->crit2), m = nbody__v256_set1(nd->mass), e2 = nbody__v256_set1(p->eps2);
    const nbody__v256 one = nbody__v256_set1(1);
    nbody__tree_mask open = 0;
    int l;
    for (l = 0; l < NBODY__TREE_LANES; l += W) {
        unsigned ag = (unsigned)(act >> l) & ((1u << W) - 1), accg;   /* this group's lanes */
        nbody__v256 dx, dy, dz, d2;
        if (!ag) continue;
        dx = nbody__v256_sub(cx, nbody__v256_load(p->x + l));
        dy = nbody__v256_sub(cy, nbody__v256_load(p->y + l));
        dz = nbody__v256_sub(cz, nbody__v256_load(p->z + l));
        d2 = nbody__v256_dot3(dx, dx, dy, dy, dz, dz);
        accg = ag & nbody__v256_gt(d2, crit2);
        open |= (nbody__tree_mask)(ag & ~accg) << l;
        if (accg) {
            nbody__v256 on = nbody__v256_lanes(accg), inv = nbody__v256_div(one, nbody__v256_sqrt(nbody__v256_add(d2, e2)));
            nbody__v256 h3 = nbody__v256_mul(nbody__v256_mul(inv, inv), inv), w = nbody__v256_weight(m, inv, h3);
            nbody__v256 ax = nbody__v256_load(p->ax + l), ay = nbody__v256_load(p->ay + l), az = nbody__v256_load(p->az + l);
            nbody__v256 bx = ax, by = ay, bz = az;
            if (q) {
                nbody__v256 q0 = nbody__v256_set1(q[0]), q1 = nbody__v256_set1(q[1]), q2 = nbody__v256_set1(q[2]);
                nbody__v256 q3 = nbody__v256_set1(q[3]), q4 = nbody__v256_set1(q[4]), q5 = nbody__v256_set1(q[5]);
                nbody__v256 h5 = nbody__v256_mul(nbody__v256_mul(h3, inv), inv), h7 = nbody__v256_mul(nbody__v256_mul(h5, inv), inv);
                nbody__v256 sx = nbody__v256_dot3(q0, dx, q1, dy, q2, dz), sy = nbody__v256_dot3(q1, dx, q3, dy, q4, dz);
                nbody__v256 sz = nbody__v256_dot3(q2, dx, q4, dy, q5, dz), t5;
                nbody__v256 rad = nbody__v256_mul(nbody__v256_mul(nbody__v256_set1((nbody_real)7.5), h7), nbody__v256_dot3(dx, sx, dy, sy, dz, sz));
                rad = nbody__v256_sub(rad, nbody__v256_mul(nbody__v256_mul(nbody__v256_set1((nbody_real)1.5), h5), nbody__v256_set1((q[0] + q[3]) + q[5])));
                w = nbody__v256_add(w, rad);
                t5 = nbody__v256_mul(nbody__v256_set1(3), h5);
                bx = nbody__v256_sub(ax, nbody__v256_mul(t5, sx));
                by = nbody__v256_sub(ay, nbody__v256_mul(t5, sy));
                bz = nbody__v256_sub(az, nbody__v256_mul(t5, sz));
            }
            nbody__v256_store(p->ax + l, nbody__v256_select(on, nbody__v256_add(bx, nbody__v256_mul(w, dx)), ax));
            nbody__v256_store(p->ay + l, nbody__v256_select(on, nbody__v256_add(by, nbody__v256_mul(w, dy)), ay));
            nbody__v256_store(p->az + l, nbody__v256_select(on, nbody__v256_add(bz, nbody__v256_mul(w, dz)), az));
        }
    }
    if (open && nd->count <= t->leaf_size) {
        p->work += nd->count * nbody__tree_lanes_in(open);
        nbody__tree_bucket_avx2(t, nd, p, open);
        if (p->nb) nbody__tree_bucket_near(t, nd, p, open);
        return 0;
    }
    return open;
}
/* nbody__tree_lanes_at and nbody__tree_lanes_set for the AVX2 level (64-bit size_t) */
static NBODY__TARGET_AVX2 nbody__tree_mask nbody__tree_lanes_at_avx2(const size_t *next, nbody__tree_mask others, size_t i) {
    nbody__tree_mask at = 0;
    int l;
    for (l = 0; l < NBODY__TREE_LANES; l += 4)
        at |= (nbody__tree_mask)_mm256_movemask_pd(_mm256_castsi256_pd(
                  _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(next + l)), _mm256_set1_epi64x((long long)i)))) << l;
    return at & others;
}
static NBODY__TARGET_AVX2 void nbody__tree_lanes_set_avx2(size_t *next, nbody__tree_mask lanes, size_t i) {
    const __m256i bit = _mm256_set_epi64x(8, 4, 2, 1), vi = _mm256_set1_epi64x((long long)i);
    int l;
    for (l = 0; l < NBODY__TREE_LANES; l += 4) {
        __m256i on = _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x((long long)(lanes >> l)), bit), bit);
        __m256i *q = (__m256i *)(next + l);
        _mm256_storeu_si256(q, _mm256_blendv_epi8(_mm256_loadu_si256(q), vi, on));
    }
}
#endif

/* Look at node i for the lanes in act: lanes that accept it (|x - c|^2 > crit2) add its
   pull, the others must open it. A bucket (at most leaf_size bodies) is never opened: its
   open lanes add its bodies directly. Returns the lanes that must descend. Shared by both
   walks, so they agree bitwise; walk: whose bucket sums (NBODY__TREE_WALK_*).
   Quadrupole term of the softened potential g = (d^2 + eps^2)^(-1/2), d = c - x, with
   second moments S (not trace-free: the softened kernel is not harmonic):
     a = M h3 d - 3 h5 S d - 1.5 h5 tr(S) d + 7.5 h7 (d.S.d) d,   hk = (d^2 + eps^2)^(-k/2). */
static nbody__tree_mask nbody__tree_visit(const nbody__kdtree *t, size_t i, nbody__tree_packet *p, nbody__tree_mask act, int walk) {
    const nbody__tree_node *nd = &t->node[i];
    nbody_real dx[NBODY__TREE_LANES], dy[NBODY__TREE_LANES], dz[NBODY__TREE_LANES], d2[NBODY__TREE_LANES];
    nbody__tree_mask distant, acc, open;
    distant = nbody__tree_dist(nd->c, nd->crit2, p, dx, dy, dz, d2); acc = act & distant; open = act & ~distant;
    if (acc && t->quad && nd->count > 1) {   /* a node of one body (a heap leaf) has no second moments */
        const nbody_real *q = t->quad + 6 * i;
        nbody_real r2[NBODY__TREE_LANES], inv[NBODY__TREE_LANES], h3[NBODY__TREE_LANES];
        int l;
        for (l = 0; l < NBODY__TREE_LANES; ++l) r2[l] = d2[l] + p->eps2;
        nbody__tree_h3(r2, inv, h3);
        for (l = 0; l < NBODY__TREE_LANES; ++l) if (NBODY__TREE_BIT(acc, l)) {
            nbody_real w = nbody__tree_weight(nd->mass, inv[l], h3[l]), h5 = h3[l] * inv[l] * inv[l], h7 = h5 * inv[l] * inv[l];
            nbody__quad_add(q[0], q[1], q[2], q[3], q[4], q[5], q[0] + q[3] + q[5], w, h5, h7, dx[l], dy[l], dz[l],
                            &p->ax[l], &p->ay[l], &p->az[l]);
        }
    } else if (acc) {
        nbody__tree_add(p, acc, nd->mass, dx, dy, dz, d2);
    }
    if (open && nd->count <= t->leaf_size) {
        p->work += nd->count * nbody__tree_lanes_in(open);
        nbody__tree_bucket_at(t, nd, p, open, walk);
        if (p->nb) nbody__tree_bucket_near(t, nd, p, open);
        return 0;
    }
    return open;
}

/* lanes at node i: those in `others` whose next node is i */
static nbody__tree_mask nbody__tree_lanes_at(const size_t *next, nbody__tree_mask others, size_t i) {
    nbody__tree_mask at = 0;
    int l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) at |= (nbody__tree_mask)(next[l] == i) << l;
    return at & others;
}

/* next[l] = i for the lanes l in `lanes` */
static void nbody__tree_lanes_set(size_t *next, nbody__tree_mask lanes, size_t i) {
    int l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) if (NBODY__TREE_BIT(lanes, l)) next[l] = i;
}

/* the generic helpers above, or the AVX2 level's (walk, NBODY__TREE_WALK_*, is a constant in
   each instance of a walk) */
static NBODY__FORCEINLINE nbody__tree_mask nbody__tree_visit_level(const nbody__kdtree *t, size_t i, nbody__tree_packet *p,
                                                                   nbody__tree_mask act, int walk) {
#if NBODY__TREE_AVX2
    if (walk == NBODY__TREE_WALK_AVX2) return nbody__tree_visit_avx2(t, i, p, act);
#endif
    return nbody__tree_visit(t, i, p, act, walk);
}
static NBODY__FORCEINLINE nbody__tree_mask nbody__tree_lanes_at_level(const size_t *next, nbody__tree_mask others, size_t i, int walk) {
#if NBODY__TREE_AVX2
    if (walk == NBODY__TREE_WALK_AVX2 && sizeof(size_t) == 8) return nbody__tree_lanes_at_avx2(next, others, i);
#endif
    (void)walk;
    return nbody__tree_lanes_at(next, others, i);
}
static NBODY__FORCEINLINE void nbody__tree_lanes_set_level(size_t *next, nbody__tree_mask lanes, size_t i, int walk) {
#if NBODY__TREE_AVX2
    if (walk == NBODY__TREE_WALK_AVX2 && sizeof(size_t) == 8) { nbody__tree_lanes_set_avx2(next, lanes, i); return; }
#endif
    (void)walk;
    nbody__tree_lanes_set(next, lanes, i);
}

/* Stackless: each lane's walk is its own next node. The packet visits the earliest of them
   in pre-order: the left child when any lane opened the node, else the skip (every other
   lane's next node is the skip of an ancestor, which is at or after it). The lanes at the
   packet's node (act) are carried along; next[] is written only for lanes that leave
   (accept a node the others open) and read only when the packet skips. */
static NBODY__FORCEINLINE void nbody__tree_walk_stackless_body(const nbody__kdtree *t, nbody__tree_packet *p, int walk) {
    size_t i = 1, size = 2 * t->n, next[NBODY__TREE_LANES];
    nbody__tree_mask live = 0, act;
    int l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) {
        next[l] = 1;
        live |= (nbody__tree_mask)(p->self[l] != NBODY__TREE_NONE) << l;
    }
    act = live;
    p->work = 0;
    do {
        size_t skip = nbody__heap_skip(i);
        nbody__tree_mask open = nbody__tree_visit_level(t, i, p, act, walk);
        p->work += NBODY__TREE_LANES;
        if (open) {               /* the acceptors wait for the skip, the rest go down */
            if (act & ~open) nbody__tree_lanes_set_level(next, act & ~open, skip, walk);
            act = open;
            i = nbody__heap_next(i, size);
        } else {                  /* all go to the skip, where waiting lanes may join */
            i = skip;
            if (live & ~act) act |= nbody__tree_lanes_at_level(next, live & ~act, i, walk);
        }
    } while (i != 1);
}

static NBODY__FORCEINLINE void nbody__tree_walk_stack_body(const nbody__kdtree *t, nbody__tree_packet *p, int walk) {
    size_t stack[NBODY__TREE_STACK];
    nbody__tree_mask mask[NBODY__TREE_STACK], m = 0;
    int sp = 0, l;
    for (l = 0; l < NBODY__TREE_LANES; ++l) m |= (nbody__tree_mask)(p->self[l] != NBODY__TREE_NONE) << l;
    stack[sp] = 1; mask[sp++] = m;
    p->work = 0;
    while (sp > 0) {
        size_t i = stack[--sp];
        size_t c = t->kid ? t->kid[i] : 2 * i;
        m = nbody__tree_visit_level(t, i, p, mask[sp], walk);
        p->work += NBODY__TREE_LANES;
        if (m && c) { stack[sp] = c + 1; mask[sp++] = m; stack[sp] = c; mask[sp++] = m; }   /* left on top */
    }
}

/* a packet's walk, generic, with the 128-bit levels' buckets, or compiled for the AVX2 level */
static void nbody__tree_walk(const nbody__kdtree *t, nbody__tree_packet *p, int stack) {
    if (stack) nbody__tree_walk_stack_body(t, p, NBODY__TREE_WALK_GENERIC); else nbody__tree_walk_stackless_body(t, p, NBODY__TREE_WALK_GENERIC);
}
#if NBODY__HAVE_V128
static void nbody__tree_walk_v128(const nbody__kdtree *t, nbody__tree_packet *p, int stack) {
    if (stack) nbody__tree_walk_stack_body(t, p, NBODY__TREE_WALK_V128); else nbody__tree_walk_stackless_body(t, p, NBODY__TREE_WALK_V128);
}
#endif
#if NBODY__TREE_AVX2
static NBODY__TARGET_AVX2 void nbody__tree_walk_avx2(const nbody__kdtree *t, nbody__tree_packet *p, int stack) {
    if (stack) nbody__tree_walk_stack_body(t, p, NBODY__TREE_WALK_AVX2); else nbody__tree_walk_stackless_body(t, p, NBODY__TREE_WALK_AVX2);
}
#endif
/* a packet's walk at the tree's SIMD level */
static void nbody__tree_walk_packet(const nbody__kdtree *t, nbody__tree_packet *p, int stack) {
#if NBODY__TREE_AVX2
    if (t->walk == NBODY__TREE_WALK_AVX2) { nbody__tree_walk_avx2(t, p, stack); return; }
#endif
#if NBODY__HAVE_V128
    if (t->walk == NBODY__TREE_WALK_V128) { nbody__tree_walk_v128(t, p, stack); return; }
#endif
    nbody__tree_walk(t, p, stack);
}

/* a walked packet's sums into the accelerations: lane l's body b goes to ax[b - o] (o: the
   first body of a slice, else 0); the bucket partial sums are added in one fixed order */
static void nbody__tree_packet_store(const nbody__tree_packet *p, const size_t *body, const nbody__forces *F, size_t o) {
    int l, c;
    for (l = 0; l < NBODY__TREE_LANES; ++l)
        if (body[l] != NBODY__TREE_NONE) {
            nbody_real s[3];
            for (c = 0; c < 3; ++c) s[c] = (p->b[c][l][0] + p->b[c][l][1]) + (p->b[c][l][2] + p->b[c][l][3]);
            F->ax[body[l] - o] = F->G * (p->ax[l] + s[0]); F->ay[body[l] - o] = F->G * (p->ay[l] + s[1]);
            F->az[body[l] - o] = F->G * (p->az[l] + s[2]);
            if (p->nb) p->nb->neighbour_level[body[l] - o] = p->neighbour_level[l];
        }
}

/* lane l of a packet: body i of F (its position), its result to slot (NBODY__TREE_NONE: an
   empty lane), its own tree position self (a leaf item the walk skips; t->n for none) */
static void nbody__tree_packet_lane(nbody__tree_packet *p, size_t *body, int l, const nbody__forces *F, size_t i,
                                    size_t slot, size_t self) {
    body[l] = slot; p->self[l] = self; p->x[l] = p->y[l] = p->z[l] = 0;
    p->gm[l] = 0; p->neighbour_level[l] = 0;
    if (l == 0) p->heavy = 0;
    if (slot != NBODY__TREE_NONE) { p->x[l] = F->x[i]; p->y[l] = F->y[i]; p->z[l] = F->z[i]; }
    p->ax[l] = p->ay[l] = p->az[l] = 0;
}

/* a filled packet walked and its accelerations stored (body[l] - o) */
static void nbody__tree_packet_run(const nbody__kdtree *t, nbody__tree_packet *p, const size_t *body,
                                   const nbody__forces *F, size_t o, int stack) {
    memset(p->b, 0, sizeof p->b);
    nbody__tree_walk_packet(t, p, stack);
    nbody__tree_packet_store(p, body, F, o);
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
        p.eps2 = F->eps2; p.nb = NULL;
        for (l = 0; l < NBODY__TREE_LANES; ++l) {
            size_t j = (size_t)k * NBODY__TREE_LANES + (size_t)l, i;
            if (j < (size_t)n) {
                i = targets ? targets[j] : leaf ? t->items[j].idx : i0 + j;
                nbody__tree_packet_lane(&p, body, l, F, i, i, t->pos[i]);
            } else nbody__tree_packet_lane(&p, body, l, F, 0, NBODY__TREE_NONE, NBODY__TREE_NONE);
        }
        nbody__tree_packet_run(t, &p, body, F, i0, stack);
    }
}

/* test particles [na, n) (not in the tree, built over the active bodies [0, na)): packets in
   body order, each lane's self a position past the last item, so no leaf is skipped */
static void nbody__tree_forces_test(const nbody__kdtree *t, const nbody_desc *d, const nbody__forces *F, size_t na) {
    long long k, nt = (long long)(F->n - na), npk = (nt + NBODY__TREE_LANES - 1) / NBODY__TREE_LANES;
    int stack = d->traversal == NBODY_TRAVERSAL_STACK;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 8) num_threads(nbody__threads(d)) if (nt > 256))
    for (k = 0; k < npk; ++k) {
        nbody__tree_packet p;
        size_t body[NBODY__TREE_LANES];
        int l;
        p.eps2 = F->eps2; p.nb = NULL;
        for (l = 0; l < NBODY__TREE_LANES; ++l) {
            size_t i = na + (size_t)k * NBODY__TREE_LANES + (size_t)l;
            if (i < F->n) nbody__tree_packet_lane(&p, body, l, F, i, i, t->n);
            else nbody__tree_packet_lane(&p, body, l, F, 0, NBODY__TREE_NONE, NBODY__TREE_NONE);
        }
        nbody__tree_packet_run(t, &p, body, F, 0, stack);
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
    for (i = 0; i < 3 * e->n; ++i) {   /* NaN/Inf positions: NaN forces, which the step reports */
        nbody_real v = (i < e->n ? F.x : i < 2 * e->n ? F.y : F.z)[i % e->n];   /* x, y, z: apart in F */
        if (!nbody__isfinite(v)) {
            nbody_real nan = v - v;
            for (i = 0; i < e->n; ++i) F.ax[i] = F.ay[i] = F.az[i] = nan;
            return NBODY_OK;
        }
    }
    if (!c->tree) {
        c->tree = nbody__alloc(&e->desc, sizeof(nbody__kdtree));
        if (!c->tree) return NBODY_ERR_OUT_OF_MEMORY;
        memset(c->tree, 0, sizeof(nbody__kdtree));
    }
    {
        nbody__forces A = F;               /* the tree holds the active bodies only */
        A.n = nbody__n_src(e);
        r = nbody__kdtree_build((nbody__kdtree *)c->tree, &e->desc, F.x, F.y, F.z, F.m, A.n);
        if (r == NBODY_OK) r = nbody__tree_prepare((nbody__kdtree *)c->tree, &e->desc, (size_t)e->desc.leaf_size);
        ((nbody__kdtree *)c->tree)->walk = nbody__tree_walk_of(c->simd);
        if (r == NBODY_OK) nbody__tree_forces((nbody__kdtree *)c->tree, &e->desc, &A);
        if (r == NBODY_OK && A.n < F.n) nbody__tree_forces_test((nbody__kdtree *)c->tree, &e->desc, &F, A.n);
    }
    return r;
}
#define NBODY__TREE_AVAILABLE 1

/* the accelerations of the bodies order[0 .. count) into F->ax[slot[i]], F->ay.., F->az..:
   the sources of the tree first, in leaf order, then the test particles (self past the last
   item, as in nbody__tree_forces_test); a lane's walk is its body's alone, so each body's
   acceleration is the bits of a full evaluation's. nb not NULL: the walks gather the neighbour
   levels too (nbody__tree_bucket_near; the test particles' own level counts as 0: massless,
   they wake nobody) */
static void nbody__tree_forces_list(const nbody__kdtree *t, const nbody_desc *d, const nbody__forces *F, const size_t *order,
                                    const size_t *slot, size_t count, const nbody__tree_near *nb) {
    long long k, npk = ((long long)count + NBODY__TREE_LANES - 1) / NBODY__TREE_LANES;
    int stack = d->traversal == NBODY_TRAVERSAL_STACK;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 2) num_threads(nbody__threads(d)) if (count > 64))
    for (k = 0; k < npk; ++k) {
        nbody__tree_packet p;
        size_t body[NBODY__TREE_LANES];
        int l;
        p.eps2 = F->eps2; p.nb = nb;
        for (l = 0; l < NBODY__TREE_LANES; ++l) {
            size_t j = (size_t)k * NBODY__TREE_LANES + (size_t)l, i;
            if (j < count) {
                i = order[j];
                nbody__tree_packet_lane(&p, body, l, F, i, slot[i], i < t->n ? t->pos[i] : t->n);
                if (nb && i < t->n) {
                    p.gm[l] = F->G * F->m[i];
                    p.heavy |= (nbody__tree_mask)(p.gm[l] > nb->reach_min * F->eps2) << l;
                }
            } else nbody__tree_packet_lane(&p, body, l, F, 0, NBODY__TREE_NONE, NBODY__TREE_NONE);
        }
        nbody__tree_packet_run(t, &p, body, F, 0, stack);
    }
}

/* Which tree TREE's block steps build (nbody__tree_active_forces): 0 the kd-tree of the shared
   steps (median splits along the widest axis, each node's exact radius); 1 the GPU trees' tree
   (nbody_cuda.cu, kernels.cl): the sources sorted stably by nbody__tree_key, laid out in that
   leaf order (nbody__tree_layout) and their nodes computed by nbody__tree_inner (a refit), the
   tree CUDA_TREE and OPENCL_TREE walk (with desc.leaf_size 1, the same walk). On the galaxy
   collision of 2^16 bodies the block steps' energy error at t = 6 is the tree's: with the GPU
   trees' tree TREE ends where CUDA_TREE does (eta 0.05, seeds 1-3: 2.8e-3, 1.8e-3, 9.7e-3
   against 1.3e-2 to 2.0e-2 with the kd-tree), at 1.8 times the wall time (more nodes visited;
   bench/results/treeblock-tree-2026-11-27.md). The kd-tree stays the default: at 4096 bodies
   neither tree ends lower and before the collision the GPU trees' tree heats more. */
static int nbody__kdk_gpu_tree = 0;

/* key and index of a source, sorted by key then index (the GPU builds' stable sort) */
typedef struct nbody__tree_keyed { unsigned long long key; size_t body; } nbody__tree_keyed;
static int nbody__tree_keyed_cmp(const void *a, const void *b) {
    const nbody__tree_keyed *p = (const nbody__tree_keyed *)a, *q = (const nbody__tree_keyed *)b;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return (p->body > q->body) - (p->body < q->body);
}

/* the GPU trees' leaf order of the sources 0 .. na (positions finite) into order[0 .. na): their
   keys in the sources' bounding box, sorted */
static nbody_result nbody__tree_key_order(const nbody_desc *d, const nbody_real *x, const nbody_real *y, const nbody_real *z, size_t na,
                                          unsigned long long *order) {
    nbody__tree_keyed *kv = (nbody__tree_keyed *)nbody__alloc(d, nbody__bytes(na, sizeof(nbody__tree_keyed)));
    nbody_real lo[3], hi[3];
    size_t i;
    if (!kv || na == 0) { nbody__free(d, kv); return NBODY_ERR_OUT_OF_MEMORY; }
    lo[0] = hi[0] = x[0]; lo[1] = hi[1] = y[0]; lo[2] = hi[2] = z[0];
    for (i = 1; i < na; ++i) {
        lo[0] = NBODY__FMIN(lo[0], x[i]); hi[0] = NBODY__FMAX(hi[0], x[i]);
        lo[1] = NBODY__FMIN(lo[1], y[i]); hi[1] = NBODY__FMAX(hi[1], y[i]);
        lo[2] = NBODY__FMIN(lo[2], z[i]); hi[2] = NBODY__FMAX(hi[2], z[i]);
    }
    for (i = 0; i < na; ++i) {
        kv[i].key = nbody__tree_key(x[i], y[i], z[i], lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
        kv[i].body = i;
    }
    qsort(kv, na, sizeof *kv, nbody__tree_keyed_cmp);
    for (i = 0; i < na; ++i) order[i] = kv[i].body;
    nbody__free(d, kv);
    return NBODY_OK;
}

/* TREE's operation for the tree leapfrog's block steps (nbody__active_op): the tree built
   afresh over the sources at y or refitted to them (nbody__tree_refit; kept as it is for
   op->same), then only the active bodies walk it, in leaf order, gathering the neighbour
   levels when asked */
static nbody_result nbody__tree_active_forces(nbody__engine *e, nbody__active_op *op) {
    nbody__cpu *c = (nbody__cpu *)e->impl;
    const nbody_real *y = (const nbody_real *)op->y;
    const size_t *list = op->list;
    nbody__kdtree *t;
    nbody__forces F;
    nbody__tree_near nb;
    size_t n = e->n, na = nbody__n_src(e), q, k, m = 0, count = op->count, *order;
    unsigned long long *bits;
    nbody_result r;
    int finite = 1;
    for (q = 0; op->build && q < 3 * n; ++q) finite = finite && nbody__isfinite(y[q]);   /* a refit checks its leaves */
    if (!c->tree) {
        c->tree = nbody__alloc(&e->desc, sizeof(nbody__kdtree));
        if (!c->tree) return NBODY_ERR_OUT_OF_MEMORY;
        memset(c->tree, 0, sizeof(nbody__kdtree));
    }
    if (!c->slot) {
        size_t words = n / 64 + 1;
        if (nbody__bytes(n, 2 * sizeof(size_t)) == 0 || !(c->slot = (size_t *)nbody__alloc(&e->desc, n * 2 * sizeof(size_t) + words * 8)))
            return NBODY_ERR_OUT_OF_MEMORY;
        for (q = 0; q < n; ++q) c->slot[q] = NBODY__TREE_NONE;
        memset(c->slot + 2 * n, 0, words * 8);
    }
    t = (nbody__kdtree *)c->tree;
    F.x = y; F.y = y + n; F.z = y + 2 * n; F.m = c->m;
    F.ax = op->out; F.ay = op->out + count; F.az = op->out + 2 * count;
    F.n = n; F.G = e->desc.G; F.eps2 = e->desc.softening * e->desc.softening;
    for (q = na; !op->build && q < n; ++q)   /* test particles: not in the tree */
        finite = finite && nbody__isfinite(y[q]) && nbody__isfinite(y[n + q]) && nbody__isfinite(y[2 * n + q]);
    if (op->build && finite && nbody__kdk_gpu_tree) {   /* the GPU trees' tree: the order, then its nodes */
        if ((r = nbody__tree_key_order(&e->desc, F.x, F.y, F.z, na, op->order)) != NBODY_OK ||
            (r = nbody__tree_layout(t, &e->desc, op->order, na, (size_t)e->desc.leaf_size)) != NBODY_OK ||
            (r = nbody__tree_refit(t, &e->desc, F.x, F.y, F.z, F.m, &finite)) != NBODY_OK)
            return r;
        for (k = na; k < n; ++k) op->order[k] = k;
    } else if (op->build && finite) {
        r = nbody__kdtree_build(t, &e->desc, F.x, F.y, F.z, F.m, na);
        if (r == NBODY_OK) r = nbody__tree_prepare(t, &e->desc, (size_t)e->desc.leaf_size);
        if (r != NBODY_OK) return r;
        for (k = 0; k < n; ++k) op->order[k] = k < na ? t->items[k].idx : k;
        t->fit_valid = 1;
    } else if (finite) {               /* the tree of order, laid out anew unless this engine holds it */
        int held = t->fit_valid && t->n == na && t->leaf_size == (size_t)e->desc.leaf_size;
        if (!held && (r = nbody__tree_layout(t, &e->desc, op->order, na, (size_t)e->desc.leaf_size)) != NBODY_OK) return r;
        if (!(held && op->same) && (r = nbody__tree_refit(t, &e->desc, F.x, F.y, F.z, F.m, &finite)) != NBODY_OK) return r;
    }
    if (!finite) {                     /* NaN/Inf positions: NaN forces, which the step reports */
        nbody_real inf = (nbody_real)HUGE_VAL;
        for (k = 0; k < 3 * count; ++k) op->out[k] = inf - inf;
        return NBODY_OK;
    }
    op->wrote = 1;
    t->walk = nbody__tree_walk_of(c->simd);
    order = c->slot + n;
    bits = (unsigned long long *)(c->slot + 2 * n);
    for (q = 0; q < count; ++q) {      /* the active sources in leaf order: a bit an item, read back in order */
        c->slot[list[q]] = q;
        if (list[q] < na) bits[t->pos[list[q]] >> 6] |= 1ULL << (t->pos[list[q]] & 63);
    }
    for (k = 0; k < (na + 63) / 64; ++k) {
        unsigned long long x = bits[k];
        bits[k] = 0;
        for (; x; x &= x - 1) order[m++] = t->items[k * 64 + (size_t)NBODY__CTZ64(x)].idx;
    }
    for (q = 0; q < count; ++q)
        if (list[q] >= na) order[m++] = list[q];
    nb.level = op->level; nb.neighbour_level = op->neighbour_level; nb.reach = op->reach; nb.reach_min = op->reach_min;
    nbody__tree_forces_list(t, &e->desc, &F, order, c->slot, count, op->level && op->neighbour_level ? &nb : NULL);
    op->neighbours = op->level && op->neighbour_level;
    for (q = 0; q < count; ++q) c->slot[list[q]] = NBODY__TREE_NONE;
    return NBODY_OK;
}

/* ---- locally essential trees (the domain-decomposed tree under MPI, >>mpi) ---------------
   Salmon (1991), Warren & Salmon (1993); GADGET-4 and Bonsai exchange them between domains.
   The part of a built tree that a walk from any point of a box needs, found by walking the
   tree against the box: a node every point of the box is beyond the critical distance of
   (its distance to the box > crit) is kept as a leaf every walk accepts (crit2 = -1); a bucket
   some point of the box may open is kept with its bodies; any other node is kept and its
   children visited. A walk of it from a point of the box therefore adds the very terms a
   walk of the whole tree adds, in the same order (bitwise the stack walk of the whole tree:
   tests/test_tree.c): a point that accepts a kept node accepts it in both, and only kept
   nodes are opened. Whether the box is beyond is decided by its point nearest to the node's
   centre of mass against the node's own criterion (its extent and second moments are in
   crit2), with room for the walk's rounding. One block of bytes: a head, the node records (index 0 unused, the
   root at 1, the children of i at kid[i] and kid[i] + 1, none where kid[i] = 0), kid, the
   second moments (6 a node, when the tree has them) and the bucket bodies bx, by, bz, bm
   (padded by 4, as a tree's: bucket sums read whole groups of 4). */
typedef struct nbody__let_head { size_t nodes, bodies, quad, pad; } nbody__let_head;
#define NBODY__LET_ALIGN 64        /* every part and every LET in an exchange starts aligned */
#define NBODY__LET_SELF ((size_t)-2)   /* a walking lane's self in a LET: no body of it */
static size_t nbody__let_round(size_t b) { return (b + NBODY__LET_ALIGN - 1) / NBODY__LET_ALIGN * NBODY__LET_ALIGN; }
/* byte offsets of the node records, kid, second moments and bodies; returns the total */
static size_t nbody__let_layout(size_t nodes, size_t bodies, int quad, size_t off[4]) {
    off[0] = nbody__let_round(sizeof(nbody__let_head));
    off[1] = off[0] + nbody__let_round(nodes * sizeof(nbody__tree_node));
    off[2] = off[1] + nbody__let_round(nodes * sizeof(size_t));
    off[3] = off[2] + (quad ? nbody__let_round(6 * nodes * sizeof(nbody_real)) : 0);
    return off[3] + nbody__let_round(4 * (bodies + 4) * sizeof(nbody_real));
}
/* the squared distance from the box lo = box[0..3), hi = box[3..6) to the point c (0 inside) */
static double nbody__box_dist2(const nbody_real *box, const nbody_real *c) {
    double d2 = 0;
    int k;
    for (k = 0; k < 3; ++k) {
        double below = (double)box[k] - (double)c[k], above = (double)c[k] - (double)box[3 + k];
        double e = below > 0 ? below : above > 0 ? above : 0;
        d2 += e * e;
    }
    return d2;
}

typedef struct nbody__let_out {    /* a LET being written; node NULL: only counted */
    nbody__tree_node *node;
    size_t *kid;
    nbody_real *quad, *bx, *by, *bz, *bm;
    size_t nodes, bodies;
} nbody__let_out;

/* 1 when a walk from every point of the boxes (nbox of them, lo then hi each) accepts the node
   of centre c: the box's nearest point is beyond crit2 by more than the walk's rounding of
   |x - c|^2 (one rounding of each difference, three products, two sums: under 5 units of the
   last place of nbody_real, relative), so that no lane of a walk in float opens a node kept
   whole */
static int nbody__boxes_beyond(const nbody_real *boxes, int nbox, const nbody_real *c, nbody_real crit2) {
    double need = (double)crit2 * (1 + 8 * (double)nbody__eps());
    int b;
    for (b = 0; b < nbox; ++b)
        if (!(nbody__box_dist2(boxes + 6 * b, c) > need)) return 0;
    return 1;
}

/* node i of t, seen from the boxes, as LET node k (its children at o->nodes on, when opened) */
static void nbody__let_emit(const nbody__kdtree *t, const nbody_real *boxes, int nbox, size_t i, size_t k, nbody__let_out *o) {
    const nbody__tree_node *nd = &t->node[i];
    int whole = nbody__boxes_beyond(boxes, nbox, nd->c, nd->crit2);
    size_t kids = 0;
    if (!whole && nd->count > t->leaf_size) { kids = o->nodes; o->nodes += 2; }
    if (o->node) {
        nbody__tree_node *r = &o->node[k];
        *r = *nd;
        o->kid[k] = kids;
        if (whole) r->crit2 = -1;
        if (o->quad) {
            int c;
            for (c = 0; c < 6; ++c) o->quad[6 * k + c] = t->quad[6 * i + c];
        }
        if (!whole && !kids) {
            size_t b = nd->count * sizeof(nbody_real);
            r->first = o->bodies;
            memcpy(o->bx + o->bodies, t->bx + nd->first, b); memcpy(o->by + o->bodies, t->by + nd->first, b);
            memcpy(o->bz + o->bodies, t->bz + nd->first, b); memcpy(o->bm + o->bodies, t->bm + nd->first, b);
        }
    }
    if (!whole && !kids) o->bodies += nd->count;
    if (kids) { nbody__let_emit(t, boxes, nbox, 2 * i, kids, o); nbody__let_emit(t, boxes, nbox, 2 * i + 1, kids + 1, o); }
}
/* the bytes of the LET of the prepared tree t for the union of nbox boxes (a domain's pieces):
   counted (out NULL), or written to out (the count's bytes, aligned to NBODY__LET_ALIGN) */
static NBODY__UNUSED size_t nbody__let_write(const nbody__kdtree *t, const nbody_real *boxes, int nbox, unsigned char *out) {
    nbody__let_out o;
    nbody__let_head h;
    size_t off[4];
    memset(&o, 0, sizeof o);
    o.nodes = 2;
    nbody__let_emit(t, boxes, nbox, 1, 1, &o);
    h.nodes = o.nodes; h.bodies = o.bodies; h.quad = t->quad != NULL; h.pad = 0;
    if (!out) return nbody__let_layout(h.nodes, h.bodies, (int)h.quad, off);
    nbody__let_layout(h.nodes, h.bodies, (int)h.quad, off);
    memset(out, 0, nbody__let_layout(h.nodes, h.bodies, (int)h.quad, off));
    memcpy(out, &h, sizeof h);
    o.node = (nbody__tree_node *)(void *)(out + off[0]);
    o.kid = (size_t *)(void *)(out + off[1]);
    o.quad = h.quad ? (nbody_real *)(void *)(out + off[2]) : NULL;
    o.bx = (nbody_real *)(void *)(out + off[3]); o.by = o.bx + h.bodies + 4; o.bz = o.by + h.bodies + 4; o.bm = o.bz + h.bodies + 4;
    o.nodes = 2; o.bodies = 0;
    nbody__let_emit(t, boxes, nbox, 1, 1, &o);
    return nbody__let_layout(h.nodes, h.bodies, (int)h.quad, off);
}
/* the bounding boxes of the nodes of the prepared tree t at its deepest level L with
   2^L <= min(t->n, max) into out (6 reals a box, lo then hi); returns their number (t->n >= 1).
   They hold every body of t (every leaf of the heap lies at level L or below when 2^L <= n),
   each a compact piece, where one box of a centrally concentrated set with a few outliers
   would cover most of space: the receiver's side of nbody__let_write */
static NBODY__UNUSED int nbody__tree_level_boxes(const nbody__kdtree *t, int max, nbody_real *out) {
    size_t first = 1, i, q;
    int nb = 0, c;
    while (2 * first <= t->n && 2 * first <= (size_t)max) first *= 2;
    for (i = first; i < 2 * first; ++i, ++nb) {
        const nbody__tree_node *r = &t->node[i];
        nbody_real *box = out + 6 * nb;
        for (c = 0; c < 3; ++c) {
            const nbody_real *p = c == 0 ? t->bx : c == 1 ? t->by : t->bz;
            box[c] = box[3 + c] = p[r->first];
            for (q = r->first + 1; q < r->first + r->count; ++q) {
                if (p[q] < box[c]) box[c] = p[q];
                if (p[q] > box[3 + c]) box[3 + c] = p[q];
            }
        }
    }
    return nb;
}
/* a walkable tree over a received LET's bytes (walked with the stack, at the SIMD level walk) */
static NBODY__UNUSED void nbody__let_view(nbody__kdtree *v, unsigned char *bytes, size_t leaf_size, int walk) {
    nbody__let_head h;
    size_t off[4];
    memcpy(&h, bytes, sizeof h);
    nbody__let_layout(h.nodes, h.bodies, (int)h.quad, off);
    memset(v, 0, sizeof *v);
    v->n = h.nodes;                /* nodes (a LET is walked with the stack: kid, not n, shapes it) */
    v->node = (nbody__tree_node *)(void *)(bytes + off[0]);
    v->kid = (const size_t *)(void *)(bytes + off[1]);
    v->quad = h.quad ? (nbody_real *)(void *)(bytes + off[2]) : NULL;
    v->bx = (nbody_real *)(void *)(bytes + off[3]); v->by = v->bx + h.bodies + 4; v->bz = v->by + h.bodies + 4;
    v->bm = v->bz + h.bodies + 4;
    v->leaf_size = leaf_size; v->walk = walk;
}

/* A domain's accelerations: the bodies [0, t->n) of its tree (NULL when it has none) walk it in
   leaf order, the test particles [t->n, F->n) after them, and every body then walks each
   received LET, the terms added in that order (ax[i] of domain body i, G applied). Each
   body's cost is added to cost[i]: its packet's work in all those walks (lane interactions,
   nbody__tree_packet) shared among the packet's bodies, the per-body cost GADGET balances its
   domains by (Springel 2005), counted rather than timed so that other jobs do not move it. */
static NBODY__UNUSED void nbody__tree_forces_domain(const nbody__kdtree *t, const nbody__kdtree *lets, int nl, const nbody_desc *d,
                                      const nbody__forces *F, double *cost) {
    size_t na = t ? t->n : 0;
    long long k, n = (long long)F->n, npk = (n + NBODY__TREE_LANES - 1) / NBODY__TREE_LANES;
    int stack = d->traversal == NBODY_TRAVERSAL_STACK;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 8) num_threads(nbody__threads(d)) if (n > 256))
    for (k = 0; k < npk; ++k) {
        nbody__tree_packet p;
        size_t body[NBODY__TREE_LANES], work = 0, live = 0;
        int l, q;
        p.eps2 = F->eps2; p.nb = NULL;
        for (l = 0; l < NBODY__TREE_LANES; ++l) {
            size_t j = (size_t)k * NBODY__TREE_LANES + (size_t)l;
            body[l] = p.self[l] = NBODY__TREE_NONE; p.x[l] = p.y[l] = p.z[l] = 0;
            if (j < (size_t)n) {
                size_t i = body[l] = j < na ? t->items[j].idx : j;
                p.self[l] = j < na ? t->pos[i] : na;
                p.x[l] = F->x[i]; p.y[l] = F->y[i]; p.z[l] = F->z[i];
            }
            p.ax[l] = p.ay[l] = p.az[l] = 0;
        }
        memset(p.b, 0, sizeof p.b);
        if (t) { nbody__tree_walk_packet(t, &p, stack); work += p.work; }
        for (l = 0; l < NBODY__TREE_LANES; ++l)
            if (p.self[l] != NBODY__TREE_NONE) { p.self[l] = NBODY__LET_SELF; ++live; }
        for (q = 0; q < nl; ++q) { nbody__tree_walk_packet(&lets[q], &p, 1); work += p.work; }
        nbody__tree_packet_store(&p, body, F, 0);
        for (l = 0; cost && l < NBODY__TREE_LANES; ++l)
            if (body[l] != NBODY__TREE_NONE) cost[body[l]] += (double)work / (double)live;
    }
}

/* ======================================================================================
   >>mpi  SLICES AND THE DISTRIBUTED ENGINE (MPI)
   A distributed engine holds a local engine for its slice of the bodies and implements the
   same engine operations with collectives, so that every solver runs unchanged on many
   ranks: f(y) gathers all positions (MPI_Allgatherv) and asks the local engine for the
   forces on its slice against all bodies; linear combinations stay local; the error norm and
   the finiteness check combine every rank's answer (max, and), so all ranks take the same
   step. Buffers hold the rank's bodies only, in the state layout (component c of body
   lo + k at c * count + k); a global range [off, off + len) of a 6n vector maps onto the
   pieces of it this rank owns. Positions are replicated (3n reals on every rank).
   ====================================================================================== */

/* defined below in >>hooks */
static const nbody__engine_ops *nbody__engine_ops_for(nbody_engine engine);


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
    default: nbody__accel_block_range(&F, threads, e->desc.block_size, i0, i0 + m, c->simd); return NBODY_OK;
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
        t->walk = nbody__tree_walk_of(c->simd);   /* the engine's SIMD level, as the whole engine walks */
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

/* TREE, slices of the tree's leaf order: builds the tree of all n bodies from pos (the same
   tree on every rank) and computes the accelerations of the bodies at leaf positions
   [j0, j0 + m), a compact region of space whose packets of neighbours walk nearly the same
   nodes, into out (3m: a_x of those bodies in leaf order, then a_y, then a_z), through acc
   (3n scratch, by body). *finite = 0 (nothing computed) when a position is NaN or Inf;
   *walk_s: the processor seconds of the walk, every thread of this process together (the
   build, the same on every rank, not counted; a machine shared with other jobs does not
   inflate it as it does wall time).
   nbody__cpu_tree_leaf_take then hands every body its acceleration from the gathered outs. */
static NBODY__UNUSED nbody_result nbody__cpu_tree_leaf_slice(nbody__engine *e, nbody__buf pos, size_t j0, size_t m,
                                                            nbody_real *acc, nbody_real *out, int *finite, double *walk_s) {
    nbody__cpu *c = (nbody__cpu *)e->impl;
    const nbody_real *p = (const nbody_real *)pos;
    size_t n = e->n, i;
    nbody__kdtree *t;
    nbody__forces F;
    nbody_result r;
    *finite = 1;
    for (i = 0; i < 3 * n; ++i)
        if (!nbody__isfinite(p[i])) { *finite = 0; return NBODY_OK; }
    if (!c->tree) {
        c->tree = nbody__alloc(&e->desc, sizeof(nbody__kdtree));
        if (!c->tree) return NBODY_ERR_OUT_OF_MEMORY;
        memset(c->tree, 0, sizeof(nbody__kdtree));
    }
    if (!c->targets) {
        c->targets = (size_t *)nbody__alloc(&e->desc, nbody__bytes(n, sizeof(size_t)));
        if (!c->targets) return NBODY_ERR_OUT_OF_MEMORY;
    }
    t = (nbody__kdtree *)c->tree;
    F.x = p; F.y = p + n; F.z = p + 2 * n; F.m = c->m;
    F.ax = acc; F.ay = acc + n; F.az = acc + 2 * n;
    F.n = n; F.G = e->desc.G; F.eps2 = e->desc.softening * e->desc.softening;
    r = nbody__kdtree_build(t, &e->desc, F.x, F.y, F.z, F.m, n);
    if (r == NBODY_OK) r = nbody__tree_prepare(t, &e->desc, (size_t)e->desc.leaf_size);
    if (r != NBODY_OK) return r;
    t->walk = nbody__tree_walk_of(c->simd);
    for (i = 0; i < m; ++i) c->targets[i] = t->items[j0 + i].idx;
    *walk_s = (double)clock();             /* processor time: the work, not other jobs' turns */
    nbody__tree_forces_of(t, &e->desc, &F, c->targets, 0, m);
    *walk_s = ((double)clock() - *walk_s) / (double)CLOCKS_PER_SEC;
    for (i = 0; i < m; ++i) {
        size_t b = c->targets[i];
        out[i] = acc[b]; out[m + i] = acc[n + b]; out[2 * m + i] = acc[2 * n + b];
    }
    return NBODY_OK;
}

/* after nbody__cpu_tree_leaf_slice on every rank and a gather of their outs into all (rank
   k's 3 (first[k + 1] - first[k]) values at 3 first[k]): the accelerations of the bodies
   [lo, lo + count) into a (3 count: a_x, a_y, a_z) */
static NBODY__UNUSED void nbody__cpu_tree_leaf_take(nbody__engine *e, const nbody_real *all, const size_t *first, int size,
                                                   size_t lo, size_t count, nbody_real *a) {
    const nbody__kdtree *t = (const nbody__kdtree *)((nbody__cpu *)e->impl)->tree;
    size_t i;
    int k = 0;
    for (i = 0; i < count; ++i) {
        size_t q = t->pos[lo + i], lo_k, cnt;
        int a0 = 0, a1 = size;             /* the rank whose leaf range holds position q */
        while (a1 - a0 > 1) { k = (a0 + a1) / 2; if (first[k] <= q) a0 = k; else a1 = k; }
        k = a0;
        lo_k = first[k]; cnt = first[k + 1] - lo_k;
        a[i] = all[3 * lo_k + (q - lo_k)];
        a[count + i] = all[3 * lo_k + cnt + (q - lo_k)];
        a[2 * count + i] = all[3 * lo_k + 2 * cnt + (q - lo_k)];
    }
}

/* NBODY_HERMITE on a slice of the sources (the distributed engine): the a, jerk (and snap) of
   `count` targets from the sources S [0, S->n), their sums in double (G not applied) into
   sums (9 rows of count). Target q (body list[q]) has its predicted x v a at tg[q stride ..
   q stride + 9); it is source list[q] - lo of the slice where that is one (its own term left
   out). Tiles of NBODY__HERMITE_TW targets, BLOCK's tile of the engine's SIMD level, against
   chunks of sources, the tasks (tile, chunk) shared among threads and each chunk's sums added
   in chunk order: the same bits on any thread count. */
static NBODY__UNUSED nbody_result nbody__cpu_hermite_slice(nbody__engine *e, const nbody__hermite_src *S, const nbody_real *tg,
                                                          size_t stride, const size_t *list, size_t lo, size_t count,
                                                          double *sums) {
    nbody__cpu *c = (nbody__cpu *)e->impl;
    nbody__hermite_tile_fn tile;
    nbody__hermite_lanes_fn lanes;
    size_t tiles = (count + NBODY__HERMITE_TW - 1) / NBODY__HERMITE_TW, chunk = nbody__hermite_chunk(tiles ? tiles : 1, S->n);
    size_t nchunks = (S->n + chunk - 1) / chunk, need = tiles * nchunks * 9 * NBODY__HERMITE_TW;
    long long t, tasks = (long long)(tiles * nchunks);
    int threads = nbody__threads(&e->desc);
    (void)threads;
    nbody__hermite_kernels_for(c->simd, &tile, &lanes);
    if (need > c->hermite_cap) {
        nbody__free(&e->desc, c->hermite_part);
        c->hermite_part = (double *)nbody__alloc(&e->desc, nbody__bytes(need, sizeof(double)));
        c->hermite_cap = c->hermite_part ? need : 0;
        if (!c->hermite_part) return NBODY_ERR_OUT_OF_MEMORY;
    }
    NBODY__PRAGMA(omp parallel num_threads(threads) if (threads > 1 && (double)count * (double)S->n >= 16384))
    {
        NBODY__PRAGMA(omp for schedule(dynamic, 1))
        for (t = 0; t < tasks; ++t) {
            size_t g = (size_t)t / nchunks, j0 = (size_t)t % nchunks * chunk, j1 = j0 + chunk < S->n ? j0 + chunk : S->n;
            nbody__hermite_tile_in T;
            int l, k;
            for (l = 0; l < NBODY__HERMITE_TW; ++l) {   /* the pads repeat the tile's first target */
                size_t q = g * NBODY__HERMITE_TW + (size_t)l, i;
                const nbody_real *v = tg + stride * (q < count ? q : g * NBODY__HERMITE_TW);
                for (k = 0; k < 9; ++k) T.t[k][l] = k < 6 || S->snap ? v[k] : 0;
                i = q < count ? list[q] : 0;
                /* a slice's own bodies rise with q; others match no source (the tiles skip them) */
                T.idx[l] = q >= count ? (size_t)-1 : i >= lo && i - lo < S->n ? i - lo : (size_t)-2;
            }
            tile(S, j0, j1, &T, c->hermite_part + (size_t)t * 9 * NBODY__HERMITE_TW);
        }
        NBODY__PRAGMA(omp for schedule(static))
        for (t = 0; t < (long long)count; ++t) {
            size_t q = (size_t)t, g = q / NBODY__HERMITE_TW, l = q % NBODY__HERMITE_TW, ch;
            int k;
            for (k = 0; k < 9; ++k) {
                double sum = 0;
                for (ch = 0; ch < nchunks; ++ch) sum += c->hermite_part[((g * nchunks + ch) * 9 + (size_t)k) * NBODY__HERMITE_TW + l];
                sums[(size_t)k * count + q] = sum;
            }
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

/* ---- desc.decompose: the domain-decomposed tree (TREE) --------------------------------------
   Each rank holds the whole state of its own bodies only (every engine buffer's rows of them,
   their indices and masses: O(N/P) a rank) and its bodies are its domain: a box of space cut
   by orthogonal recursive bisection (nbody__dd_split), balanced by each body's walk work
   counted in the step before. At the first evaluation of each step the cuts move (from the
   walks of the step before, so that one step's evaluations are one function of the state:
   implicit stages converge) and the bodies that left the rank's box migrate to their new
   domains with every row of every buffer (an all-to-all of the movers only: a step moves few).
   Each evaluation then builds the tree of the domain's bodies, writes for every other domain
   the locally essential tree (LET, >>tree) of its tree against that domain's bounding boxes,
   exchanges them (an all-to-all), and walks its bodies through its own tree and the LETs it
   received. A body's force is the sum of walks of P trees, each under the opening criterion,
   so its error bound is the one of one tree (not its bits: the trees differ with P).
   The engine operations keep their meaning: a range of a 6n vector is by body index, so an
   upload picks each rank's bodies by index from the caller's array, a download gathers every
   rank's values with their indices (nbody_get_state, checkpoints: a checkpoint of P ranks is
   the one of one process and restarts on any number), and the vector operations run on whole
   components. Left O(N) on every rank: the simulation's copy of the masses and radii (host
   side, by index), and what a caller downloads. */
#define NBODY__DD_BINS 1024        /* histogram bins a level of a cut's search (two levels: 20 bits) */
/* A domain is seen by the others as the bounding boxes of its tree's nodes at one level, at
   most this many, and of its test particles: a domain of a centrally concentrated system has
   outliers whose one bounding box would cover other domains' cores (and make their LETs their
   whole trees) */
#define NBODY__DD_BOXES 16
#define NBODY__DD_GATHER (6 * (NBODY__DD_BOXES + 1) + 2)   /* reals a rank gathers: boxes, counts */

/* an engine buffer of the decomposed tree: comps components of the rank's bodies, component c
   of its body k at p[c * cap + k] (cap: nbody__dd's, the same for every buffer); the buffers
   are listed so that a migration moves the rows of all of them */
typedef struct nbody__dd_buf {
    nbody_real *p;
    size_t comps;
    struct nbody__dd_buf *prev, *next;
} nbody__dd_buf;

typedef struct nbody__dd {
    size_t cap;                    /* rows every per-body array has room for (>= the rank's count) */
    size_t *id;                    /* each body of this rank: its index in the system (the attracting
                                      ones first: nbody__dd_order) */
    nbody_real *m;                 /* each of them: its mass */
    int *dest;                     /* each of them: its domain (while bodies migrate, else NULL) */
    double *cost;                  /* each of them: its walks' work since the cuts last moved
                                      (nbody__tree_forces_domain), then its estimated seconds
                                      (nbody__dd_weights); cost_cap bytes */
    size_t cost_cap;
    nbody__dd_buf bufs;            /* the list of the engine's buffers (a ring through this head) */
    MPI_Datatype index;            /* size_t as bytes */
    int *orb;                      /* the cut tree (nbody__dd_split), heap order: node v shares the
                                      ranks [orb[2v], orb[2v + 1]) and, when that is more than one,
                                      cuts at axis[v] = cut[v] (4 size nodes) */
    int *axis;
    double *cut;
    double *hist;                  /* the cuts' boxes, histograms and spreads: (2 NBODY__DD_BINS + 24) x size */
    double *wtime;                 /* each domain's walks since the cuts last moved, processor
                                      seconds summed over the evaluations */
    size_t *dcount;                /* each domain's bodies, summed over the same evaluations */
    double *wwork;                 /* each domain's walk work (lane interactions), summed likewise */
    double *wbuild;                /* each domain's tree builds, processor seconds, summed likewise */
    unsigned long long epoch;      /* the step attempt the cuts were set for */
    int placed;                    /* cuts set (the first evaluation sets them by count) */
    int broken;                    /* a migration failed half way (nbody__dd_migrate): nothing works */
    int *cnt;                      /* 10 size: bodies sent, received (items), their bytes and
                                      displacements, the same for LETs */
    nbody_real *gather;            /* NBODY__DD_GATHER size: each rank's boxes and flags */
    nbody_real *box;               /* NBODY__DD_BOXES + 1 boxes a domain, lo then hi */
    int *nbox;                     /* each domain's number of boxes */
    unsigned char *let_out, *let_in;
    nbody__kdtree tree, *views;    /* the domain's tree; the received LETs (size) */
    size_t out_cap, in_cap;
    /* this rank's figures of the last evaluation (bench/mpi_scaling.c prints them) */
    size_t domain, let_nodes, let_bodies, moved;   /* moved: bodies it sent at the step's migration */
    unsigned long long bytes_bodies, bytes_let;    /* sent to other ranks: migrating rows, LETs */
    double walk_s, build_s, exchange_s;   /* processor seconds of the walk; wall seconds of the
                                      tree's build and of the rest (cuts, exchanges) */
    double place_s, let_s, wait_s;  /* wall seconds of the parts of the rest: the cuts and the
                                      migration; the LETs written and exchanged; the wait for the
                                      other domains' walks (the all-gather of the walk times) */
} nbody__dd;


typedef struct nbody__dist {
    nbody__engine local;           /* this rank's engine: all n masses, buffers of its slice */
    MPI_Comm comm;                 /* the library's duplicate of the user's communicator */
    MPI_Datatype real;             /* nbody_real as bytes (float, double, long double alike) */
    int rank, size;
    size_t lo, count;              /* this rank's bodies [lo, lo + count) (decompose: count bodies by
                                      index g->id, its domain; [lo, lo + count) at the start) */
    size_t *first;                 /* rank r's bodies [first[r], first[r + 1]) */
    int *counts3, *displs3;        /* 3 * its body count, 3 * its first body (positions) */
    int *counts, *displs;          /* scratch for the gathers of downloads */
    nbody_real *packed;            /* 3n: each rank's [x, y, z] of its slice, rank after rank */
    nbody__buf pos;                /* 3n in the local engine: x, y, z of all bodies */
    nbody_real *tacc;              /* TREE in leaf-order slices: 3n scratch, 3n gathered */
    size_t *wfirst;                /* TREE: rank r walks leaf positions [wfirst[r], wfirst[r + 1]) */
    double *wtime;                 /* each rank's last walk, seconds */
    nbody_real *norms;             /* one real a rank: the error norms gathered */
    nbody__dd *dd;                 /* desc.decompose: the domains (then pos and packed are unused) */
    /* NBODY_HERMITE (nbody__dist_hermite): the active bodies' 24 reals each (predicted x v a,
       then x v a jerk snap at their own time), every rank's partial sums (9 a body each), where
       each rank's active bodies begin in the list (size + 1), and both as MPI types */
    nbody_real *hpack;
    double *hsum;
    size_t hcap, *hfirst;
    MPI_Datatype hrow, hsums;
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

/* p grown to at least bytes (its contents not kept); NULL when out of memory */
static void *nbody__dd_grow(const nbody_desc *d, void *p, size_t *cap, size_t bytes) {
    if (p && bytes <= *cap) return p;
    nbody__free(d, p);
    *cap = 0;
    p = nbody__alloc(d, bytes ? bytes : 1);
    if (p) *cap = bytes;
    return p;
}

/* The domains: orthogonal recursive bisection (Salmon 1991; Dubinski 1996) of the global
   bodies by their estimated cost (g->cost). Node v of the cut tree (heap order, the root 1
   holds the ranks [0, P)) shares its ranks [a, b) between its children [a, m) and [m, b),
   m = a + (b - a) / 2, by a plane across the widest axis of its bodies' bounding box, where
   the cost below reaches (m - a) / (b - a) of the node's: the first cuts of a kd-tree, which
   is what each domain builds (nbody__kdtree_build: the widest axis, the median), so that a
   domain's tree is nearly the subtree that one tree of all bodies has there and the P walks
   cost what one walk costs. (A cut along a space-filling curve crosses the kd-tree's nodes:
   2 ranks at 2^17 walked 13.6 % more than one tree when cut along the Hilbert curve, 2 % when
   cut by this plane.) Each cut is found to 20 bits of the box's extent by two histograms
   summed over the ranks, the second inside the first's bin; a level of the cut tree costs
   three all-reduces (boxes, the two histograms). A cut on the axis of the last step's moves
   half the way to where the costs put it: a cut through a dense core overshot, the bodies
   near it costing more on their new side (2 ranks at 2^16 alternated 4-8 % from balance
   undamped). Every rank gets the same cuts; g->dest[i] becomes body i's domain. Collective. */
static void nbody__dd_orb_ranges(int *orb, size_t v, int a, int b) {
    orb[2 * v] = a; orb[2 * v + 1] = b;
    if (b - a > 1) {
        int m = a + (b - a) / 2;
        nbody__dd_orb_ranges(orb, 2 * v, a, m);
        nbody__dd_orb_ranges(orb, 2 * v + 1, m, b);
    }
}
/* the domain of the point p (x, y, z): down the cut tree */
static int nbody__dd_domain_at(const nbody__dd *g, const double *p) {
    size_t v = 1;
    while (g->orb[2 * v + 1] - g->orb[2 * v] > 1) v = 2 * v + (p[g->axis[v]] >= g->cut[v]);
    return g->orb[2 * v];
}
/* the bin of the histogram h (B bins) in which the cumulative cost, from *before on, reaches
   target; *before becomes the cost below that bin */
static size_t nbody__dd_cut_bin(const double *h, size_t B, double target, double *before) {
    double cum = *before;
    size_t b = 0;
    while (b < B - 1 && cum + h[b] < target) cum += h[b++];
    *before = cum;
    return b;
}
/* a coordinate x as a fraction of the node's extent [lo, lo + w] (0 when w is 0), and a
   fraction's bin of B (clamped) */
static double nbody__dd_unit(double x, double lo, double w) { return w > 0 ? (x - lo) / w : 0; }
static size_t nbody__dd_bin(double u, size_t B) {
    double b = u * (double)B;
    return b <= 0 ? 0 : b >= (double)(B - 1) ? B - 1 : (size_t)b;
}
/* node v of the cut tree has ranks to share (v < 4 size: beyond the leaves every range is empty) */
static int nbody__dd_orb_inner(const nbody__dd *g, size_t v) { return g->orb[2 * v + 1] - g->orb[2 * v] > 1; }
static nbody_result nbody__dd_split(nbody__dist *d, const nbody_real *y, size_t cap) {
    nbody__dd *g = d->dd;
    const size_t B = NBODY__DD_BINS;
    size_t i, first, v, s;
    int *node = g->dest, c;
    for (i = 0; i < d->count; ++i) node[i] = 1;
    for (first = 1; 2 * first <= 4 * (size_t)d->size; first *= 2) {
        /* the nodes at this depth, [first, 2 first): slot s = v - first. Per slot: the box (lo,
           then -hi), two histograms, the axis's low end and extent, the target cost below the
           cut, the cost below the first histogram's bin, that bin, whether the cut is damped, and
           the bodies' count, sum and sum of squares on each axis (from the box's low corner) */
        const size_t cnt = first;
        double *box = g->hist, *h1 = box + 6 * cnt, *h2 = h1 + cnt * B, *lo = h2 + cnt * B, *w = lo + cnt, *target = w + cnt;
        double *before = target + cnt, *bin = before + cnt, *damp = bin + cnt, *mom = damp + cnt;
        int inner = 0;
        for (v = first; v < 2 * first; ++v) inner |= nbody__dd_orb_inner(g, v);
        if (!inner) break;
        for (s = 0; s < 6 * cnt; ++s) box[s] = HUGE_VAL;
        for (i = 0; i < d->count; ++i)
            if ((size_t)node[i] >= first)
                for (c = 0; c < 3; ++c) {
                    double x = (double)y[(size_t)c * cap + i], *b6 = box + 6 * ((size_t)node[i] - first);
                    if (x < b6[c]) b6[c] = x;
                    if (-x < b6[3 + c]) b6[3 + c] = -x;
                }
        if (MPI_Allreduce(MPI_IN_PLACE, box, (int)(6 * cnt), MPI_DOUBLE, MPI_MIN, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
        memset(mom, 0, 7 * cnt * sizeof *mom);
        for (i = 0; i < d->count; ++i)
            if ((size_t)node[i] >= first) {
                double *m7 = mom + 7 * ((size_t)node[i] - first);
                const double *b6 = box + 6 * ((size_t)node[i] - first);
                m7[0] += 1;
                for (c = 0; c < 3; ++c) {
                    double x = (double)y[(size_t)c * cap + i] - b6[c];
                    m7[1 + 2 * c] += x; m7[2 + 2 * c] += x * x;
                }
            }
        if (MPI_Allreduce(MPI_IN_PLACE, mom, (int)(7 * cnt), MPI_DOUBLE, MPI_SUM, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
        for (s = 0; s < cnt; ++s) {
            const double *b6 = box + 6 * s, *m7 = mom + 7 * s;
            double var[3];
            int ax = 0;
            /* the cut goes across the axis of the widest spread (the variance of the node's
               bodies' positions), not the widest extent: a few stragglers set the extent, and
               where the parent's cut falls among them (it wanders in a gap between galaxies as
               the walk times vary) the child's longest side changed from step to step */
            for (c = 0; c < 3; ++c) var[c] = m7[0] > 0 ? (m7[2 + 2 * c] - m7[1 + 2 * c] * m7[1 + 2 * c] / m7[0]) / m7[0] : 0;
            for (c = 1; c < 3; ++c) if (var[c] > var[ax]) ax = c;
            /* the last step's axis while its spread is nearly the widest (0.8 of the standard
               deviation): two nearly equal spreads (a disc seen face-on) would otherwise swap the
               axis from step to step, and each swap moves about half the node's bodies (a
               3000-body collision on 4 ranks moved a quarter of them in a step) */
            c = g->axis[first + s];
            if (g->placed && var[c] >= 0.64 * var[ax]) ax = c;
            damp[s] = g->placed && g->axis[first + s] == ax;   /* the last step's cut, on this axis */
            g->axis[first + s] = ax;
            lo[s] = b6[ax] < HUGE_VAL ? b6[ax] : 0;   /* a node without bodies: any cut */
            w[s] = b6[ax] < HUGE_VAL ? -b6[3 + ax] - b6[ax] : 0;
        }
        memset(h1, 0, 2 * cnt * B * sizeof *h1);
        for (i = 0; i < d->count; ++i)
            if ((size_t)node[i] >= first) {
                s = (size_t)node[i] - first;
                h1[s * B + nbody__dd_bin(nbody__dd_unit((double)y[(size_t)g->axis[node[i]] * cap + i], lo[s], w[s]), B)] += g->cost[i];
            }
        if (MPI_Allreduce(MPI_IN_PLACE, h1, (int)(cnt * B), MPI_DOUBLE, MPI_SUM, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
        for (s = 0; s < cnt; ++s) {
            double total = 0;
            const int *r = g->orb + 2 * (first + s);
            for (i = 0; i < B; ++i) total += h1[s * B + i];
            target[s] = r[1] - r[0] > 1 ? total * (double)((r[1] - r[0]) / 2) / (double)(r[1] - r[0]) : 0;
            before[s] = 0;
            bin[s] = (double)nbody__dd_cut_bin(h1 + s * B, B, target[s], &before[s]);
        }
        for (i = 0; i < d->count; ++i)
            if ((size_t)node[i] >= first) {
                double u;
                s = (size_t)node[i] - first;
                u = nbody__dd_unit((double)y[(size_t)g->axis[node[i]] * cap + i], lo[s], w[s]);
                if ((double)nbody__dd_bin(u, B) == bin[s]) h2[s * B + nbody__dd_bin(u * (double)B - bin[s], B)] += g->cost[i];
            }
        if (MPI_Allreduce(MPI_IN_PLACE, h2, (int)(cnt * B), MPI_DOUBLE, MPI_SUM, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
        for (s = 0; s < cnt; ++s) {
            double cum = before[s];
            const double *h = h2 + s * B;
            size_t q = 0;
            while (q < B && cum + h[q] < target[s]) cum += h[q++];
            if (q < B && cum + h[q] - target[s] < target[s] - cum) ++q;   /* the nearer edge of sub-bin q */
            cum = lo[s] + (bin[s] + (double)q / (double)B) / (double)B * w[s];
            g->cut[first + s] = damp[s] ? 0.5 * (g->cut[first + s] + cum) : cum;
        }
        for (i = 0; i < d->count; ++i) {
            v = (size_t)node[i];
            if (v >= first && nbody__dd_orb_inner(g, v))
                node[i] = (int)(2 * v + ((double)y[(size_t)g->axis[v] * cap + i] >= g->cut[v]));
        }
    }
    for (i = 0; i < d->count; ++i) {   /* the leaf reached: the domain of the position */
        double p[3];
        for (c = 0; c < 3; ++c) p[c] = (double)y[(size_t)c * cap + i];
        node[i] = nbody__dd_domain_at(g, p);
    }
    return NBODY_OK;
}

/* each body's estimated seconds a step into g->cost, by which nbody__dd_split cuts the curve:
   its counted walk work (g->cost, summed over the step's evaluations) at the seconds a unit of
   work took, plus the domains' build time a body. The rate is the mean over all domains
   averaged with this domain's own (the received trees' walks, caches: a rank's unit of work
   may cost more than another's), so that one step's noisy processor time moves the boundaries
   half as far as it asks. With no usable times the work alone; with no work counted (the
   first evaluation, a rank that did not walk) every body weighs 1: the split by count. Every
   rank decides from the same gathered sums. */
static void nbody__dd_weights(nbody__dist *d) {
    nbody__dd *g = d->dd;
    double tt = 0, ww = 0, bb = 0, nn = 0, rate = 1, build = 0;
    int k, work = 1, timed = 1, q = d->rank;
    size_t i;
    for (k = 0; k < d->size; ++k) {
        if (g->dcount[k] > 0 && !(g->wwork[k] > 0 && g->wwork[k] < 1e300)) work = 0;
        if (!(g->wtime[k] >= 0 && g->wtime[k] < 1e30 && g->wbuild[k] >= 0 && g->wbuild[k] < 1e30)) timed = 0;
        tt += g->wtime[k]; ww += g->wwork[k]; bb += g->wbuild[k]; nn += (double)g->dcount[k];
    }
    if (!(work && ww > 0 && nn > 0)) {
        for (i = 0; i < d->count; ++i) g->cost[i] = 1;
        return;
    }
    if (timed && tt > 0) {
        double own = g->wwork[q] > 0 && g->wtime[q] > 0 ? g->wtime[q] / g->wwork[q] : tt / ww;
        rate = 0.5 * (tt / ww + own);
        build = bb / nn;
    }
    for (i = 0; i < d->count; ++i) g->cost[i] = g->cost[i] * rate + build;
}

/* the global bounding box of the positions (x, y, z of the m bodies, stride apart) into box,
   and whether every rank's are finite; collective */
static nbody_result nbody__dd_bounds(nbody__dist *d, const nbody_real *y, size_t m, size_t stride, nbody_real *box, int *finite) {
    nbody__dd *g = d->dd;
    nbody_real mine[8];
    size_t i;
    int k, c, any = 0;
    for (c = 0; c < 8; ++c) mine[c] = 0;
    mine[6] = 1; mine[7] = m > 0;
    for (i = 0; i < m; ++i)
        for (c = 0; c < 3; ++c) {
            nbody_real v = y[(size_t)c * stride + i];
            if (!nbody__isfinite(v)) { mine[6] = 0; continue; }
            if (i == 0 || v < mine[c]) mine[c] = v;
            if (i == 0 || v > mine[3 + c]) mine[3 + c] = v;
        }
    if (MPI_Allgather(mine, 8, d->real, g->gather, 8, d->real, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
    *finite = 1;
    for (k = 0; k < d->size; ++k) {
        const nbody_real *o = g->gather + 8 * k;
        if (o[6] == 0) *finite = 0;
        if (o[7] == 0) continue;
        for (c = 0; c < 3; ++c) {
            if (!any || o[c] < box[c]) box[c] = o[c];
            if (!any || o[3 + c] > box[3 + c]) box[3 + c] = o[3 + c];
        }
        any = 1;
    }
    return NBODY_OK;
}

/* byte counts and displacements of an all-to-all of items of `size` bytes; 0 when over int */
static int nbody__dd_bytes(const int *items, int P, size_t size, int *bytes, int *displs) {
    size_t total = 0;
    int k;
    for (k = 0; k < P; ++k) {
        size_t b = (size_t)items[k] * size;
        if (b > (size_t)INT_MAX || total > (size_t)INT_MAX - b) return 0;
        bytes[k] = (int)b; displs[k] = (int)total; total += b;
    }
    return 1;
}

/* One per-body array a migration moves: *arr, comps components of esize bytes, g->cap rows
   apart; off: where its row lies in a body's packed record */
typedef struct nbody__dd_arr {
    void **arr;
    size_t comps, esize, off;
} nbody__dd_arr;

/* A migration's plan (nbody__dd_migrate): the bodies leaving in the send order (by their new
   domain), how many leave and arrive, the rank's bodies and the rows every array has after it,
   where each new row comes from (src[i] < count: the rank's body src[i]; else the arriving
   body src[i] - count), the bytes of a body's record in the message under way, and scratch:
   the records of those leaving and of those arriving, one component of the new rows */
typedef struct nbody__dd_move {
    size_t *out, *src;
    size_t nout, nin, count, cap, rec;
    unsigned char *send, *recv, *tmp;
} nbody__dd_move;

/* one element of es bytes: the sizes every per-body array has (4, 8) as constants, which the
   compiler moves in one load and store where a memcpy of a variable size is a call an element
   (it made a migration that moves nothing three times slower) */
static void nbody__dd_elem(unsigned char *to, const unsigned char *from, size_t es) {
    if (es == 8) memcpy(to, from, 8);
    else if (es == 4) memcpy(to, from, 4);
    else memcpy(to, from, es);
}

/* the rows of the arrays a[0, n) of the bodies leaving, packed a record a body (each array's
   row at its off), sent to their new domains in one all-to-all and received into mv->recv (a
   body's record after another's, in the order of the ranks they came from). Collective. */
static nbody_result nbody__dd_send_records(nbody__dist *d, nbody__dd_move *mv, nbody__dd_arr *a, size_t n) {
    nbody__dd *g = d->dd;
    int P = d->size, *sc = g->cnt, *rc = sc + P, *sb = rc + P, *sd = sb + P, *rb = sd + P, *rd = rb + P;
    size_t j, c, k;
    for (mv->rec = 0, k = 0; k < n; ++k) { a[k].off = mv->rec; mv->rec += a[k].comps * a[k].esize; }
    for (k = 0; k < n; ++k) {
        const unsigned char *from = (const unsigned char *)*a[k].arr;
        const size_t es = a[k].esize;
        for (j = 0; j < mv->nout; ++j)
            for (c = 0; c < a[k].comps; ++c)
                nbody__dd_elem(mv->send + j * mv->rec + a[k].off + c * es, from + (c * g->cap + mv->out[j]) * es, es);
    }
    if (!nbody__dd_bytes(sc, P, mv->rec, sb, sd) || !nbody__dd_bytes(rc, P, mv->rec, rb, rd)) return NBODY_ERR_UNAVAILABLE;
    if (MPI_Alltoallv(mv->send, sb, sd, MPI_BYTE, mv->recv, rb, rd, MPI_BYTE, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
    g->bytes_bodies += (unsigned long long)(mv->nout * mv->rec);
    return NBODY_OK;
}

/* the new order of the rank's bodies: the attracting ones first (those staying, then those
   arriving), then the test particles likewise, so that the first na rows are the domain's
   tree's bodies; the arriving bodies' indices are the first row of their records */
static void nbody__dd_order(nbody__dist *d, nbody__engine *e, nbody__dd_move *mv) {
    const nbody__dd *g = d->dd;
    size_t nsrc = nbody__n_src(e), k, j, at = 0, id;
    int pass;
    for (pass = 0; pass < 2; ++pass) {
        for (k = 0; k < d->count; ++k)
            if (g->dest[k] == d->rank && (g->id[k] < nsrc) == !pass) mv->src[at++] = k;
        for (j = 0; j < mv->nin; ++j) {
            memcpy(&id, mv->recv + j * mv->rec, sizeof id);
            if ((id < nsrc) == !pass) mv->src[at++] = d->count + j;
        }
    }
}

/* One array of the rank's bodies through a migration, its leavers' and arrivals' rows sent
   (nbody__dd_send_records): each component's new rows (mv->src) gathered in mv->tmp and written
   mv->cap apart (mv->tmp holds one component), in place, or into a new array of mv->cap rows a component that replaces it (a
   rank resizes when its own bodies need it; when some rank does (resize), the ranks agree that
   every one that resizes has the memory, or none moves and *broken is set). Collective when
   resize is set. */
static nbody_result nbody__dd_move_array(nbody__dist *d, const nbody__dd_move *mv, const nbody__dd_arr *a, int resize,
                                         int *broken) {
    const nbody_desc *ds = &d->local.desc;
    const size_t es = a->esize;
    unsigned char *from = (unsigned char *)*a->arr, *to = from;
    const size_t cap = d->dd->cap;
    size_t i, c;
    if (mv->cap != cap) to = (unsigned char *)nbody__alloc(ds, nbody__bytes(a->comps * mv->cap + 1, es));
    if (resize) {                  /* on every rank, whether it resizes or not (each decides for its own bodies) */
        nbody_result r = nbody__mpi_worst(d->comm, to ? NBODY_OK : NBODY_ERR_OUT_OF_MEMORY);
        if (r != NBODY_OK) {
            if (to != from) nbody__free(ds, to);
            *broken = 1;
            return r;
        }
    }
    for (c = 0; c < a->comps; ++c) {
        for (i = 0; i < mv->count; ++i) {
            size_t q = mv->src[i];
            nbody__dd_elem(mv->tmp + i * es, q < d->count ? from + (c * cap + q) * es : mv->recv + (q - d->count) * mv->rec + a->off + c * es,
                           es);
        }
        memcpy(to + c * mv->cap * es, mv->tmp, mv->count * es);
    }
    if (to != from) { nbody__free(ds, from); *a->arr = to; }
    return NBODY_OK;
}

/* how many arrays from a[i] on go in one message: as many as keep a record within limit bytes
   (at least one) */
static size_t nbody__dd_batch(const nbody__dd_arr *a, size_t i, size_t n, size_t limit) {
    size_t k = i + 1, rec = a[i].comps * a[i].esize;
    while (k < n && rec + a[k].comps * a[k].esize <= limit) { rec += a[k].comps * a[k].esize; ++k; }
    return k - i;
}

/* the per-body arrays a migration moves, in order (indices first: the order needs them): into
   a (room for 2 + the buffers), their number */
static size_t nbody__dd_arrays(nbody__dd *g, nbody__dd_arr *a) {
    nbody__dd_buf *q;
    size_t n = 0;
    a[n].arr = (void **)&g->id; a[n].comps = 1; a[n++].esize = sizeof(size_t);
    a[n].arr = (void **)&g->m; a[n].comps = 1; a[n++].esize = sizeof(nbody_real);
    for (q = g->bufs.next; q != &g->bufs; q = q->next) { a[n].arr = (void **)&q->p; a[n].comps = q->comps; a[n++].esize = sizeof(nbody_real); }
    return n;
}

/* The bodies whose domain (g->dest) is another rank's move there: their indices, masses and
   rows of every buffer, packed a record a body and sent in one all-to-all after one of the
   counts (a step moves a few per cent of the bodies: the latency of the messages, not their
   bytes, is the cost). The records of all arrays together may exceed what one array takes
   (the first evaluation moves (P - 1) / P of the bodies from the slices by index): the ranks
   then send the arrays in as few messages as keep every rank's records within the bytes of
   one array of its bodies, so that the migration's scratch stays what one array's would be.
   The arrays are resized (to the rank's bodies and a sixteenth more) when its bodies outgrow
   them or fill less than half, one array after the other (so the rank's memory grows by one
   array at a time, not by a copy of the state): an allocation that fails on a rank then, with
   some arrays resized and others not, leaves the domains unusable (g->broken: every later
   operation fails with NBODY_ERR_OUT_OF_MEMORY). Collective. */
static nbody_result nbody__dd_migrate(nbody__dist *d, nbody__engine *e) {
    nbody__dd *g = d->dd;
    const nbody_desc *ds = &e->desc;
    int P = d->size, k, *sc = g->cnt, *rc = sc + P, broken = 0, agree[3];
    size_t i, n = 0, row = 0, all = 0, most, b;
    const size_t esize = sizeof(size_t) > sizeof(nbody_real) ? sizeof(size_t) : sizeof(nbody_real);
    size_t run[NBODY__DIST_MAX_RANKS];
    nbody__dd_move mv;
    nbody__dd_buf *q;
    nbody__dd_arr *a;
    nbody_result r = NBODY_OK;
    memset(&mv, 0, sizeof mv);
    for (q = g->bufs.next; q != &g->bufs; q = q->next) ++n;
    a = (nbody__dd_arr *)nbody__alloc(ds, (n + 2) * sizeof *a);
    if (a) n = nbody__dd_arrays(g, a);
    for (k = 0; k < P; ++k) sc[k] = 0;
    for (i = 0; i < d->count; ++i) if (g->dest[i] != d->rank) ++sc[g->dest[i]];
    if (MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, d->comm) != MPI_SUCCESS) { nbody__free(ds, a); return NBODY_ERR_DEVICE; }
    for (k = 0; k < P; ++k) { run[k] = mv.nout; mv.nout += (size_t)sc[k]; mv.nin += (size_t)rc[k]; }
    mv.count = d->count - mv.nout + mv.nin;
    mv.cap = mv.count > g->cap || mv.count + mv.count / 16 + 16 < g->cap / 2 ? mv.count + mv.count / 16 + 16 : g->cap;
    for (b = 0; a && b < n; ++b) { all += a[b].comps * a[b].esize; if (a[b].comps * a[b].esize > row) row = a[b].comps * a[b].esize; }
    /* messages this rank needs to keep the records within one array's bytes (g->cap rows) */
    agree[2] = (int)((mv.nout + mv.nin) * all / (g->cap * row + 1) + 1);
    /* a message's record is at most its limit or one array's row; the ranks agree on the most
       messages any needs, whose limit is then this rank's or smaller */
    most = all / (size_t)agree[2] > row ? all / (size_t)agree[2] : row;
    if (!a) r = NBODY_ERR_OUT_OF_MEMORY;
    else if (!nbody__dd_bytes(sc, P, all, g->cnt + 2 * P, g->cnt + 3 * P) || !nbody__dd_bytes(rc, P, all, g->cnt + 2 * P, g->cnt + 3 * P))
        r = NBODY_ERR_UNAVAILABLE;
    if (r == NBODY_OK) {
        mv.out = (size_t *)nbody__alloc(ds, nbody__bytes(mv.nout + 1, sizeof(size_t)));
        mv.src = (size_t *)nbody__alloc(ds, nbody__bytes(mv.count + 1, sizeof(size_t)));
        mv.send = (unsigned char *)nbody__alloc(ds, nbody__bytes(mv.nout + 1, most));
        mv.recv = (unsigned char *)nbody__alloc(ds, nbody__bytes(mv.nin + 1, most));
        mv.tmp = (unsigned char *)nbody__alloc(ds, nbody__bytes(mv.count + 1, esize));
        if (!mv.out || !mv.src || !mv.send || !mv.recv || !mv.tmp) r = NBODY_ERR_OUT_OF_MEMORY;
    }
    /* one all-reduce: the worst result, whether any rank resizes, the most messages any needs */
    agree[0] = (int)r; agree[1] = mv.cap != g->cap;
    if (MPI_Allreduce(MPI_IN_PLACE, agree, 3, MPI_INT, MPI_MAX, d->comm) != MPI_SUCCESS) agree[0] = (int)NBODY_ERR_DEVICE;
    r = (nbody_result)agree[0];
    if (r == NBODY_OK) {
        for (i = 0; i < d->count; ++i) if (g->dest[i] != d->rank) mv.out[run[g->dest[i]]++] = i;
        g->bytes_bodies = 0;
        for (b = 0; b < n && r == NBODY_OK;) {   /* every rank the same batches: the same arrays, the same agree[2] */
            size_t m = nbody__dd_batch(a, b, n, all / (size_t)agree[2]), k2;
            r = nbody__dd_send_records(d, &mv, a + b, m);
            if (r == NBODY_OK && b == 0) nbody__dd_order(d, e, &mv);
            for (k2 = b; k2 < b + m && r == NBODY_OK; ++k2) r = nbody__dd_move_array(d, &mv, a + k2, agree[1], &broken);
            b += m;
        }
        if (r != NBODY_OK) broken = 1;   /* some arrays moved, not all */
    }
    nbody__free(ds, a);
    nbody__free(ds, mv.out); nbody__free(ds, mv.src); nbody__free(ds, mv.send); nbody__free(ds, mv.recv); nbody__free(ds, mv.tmp);
    if (broken) {
        g->broken = 1;
        nbody__log(ds, NBODY_LOG_ERROR, "nbody: desc.decompose: bodies migrating between ranks: %s; the simulation's state is lost",
                   nbody_result_string(r));
    }
    if (r != NBODY_OK) return r;
    g->cap = mv.cap; d->count = mv.count; g->moved = mv.nout;
    return NBODY_OK;
}

/* nbody__dd_place with g->dest allocated (the rank's bodies) */
static nbody_result nbody__dd_place_bodies(nbody__dist *d, nbody__engine *e, const nbody_real *y, size_t cap) {
    nbody__dd *g = d->dd;
    nbody_result r;
    nbody__dd_weights(d);
    if ((r = nbody__dd_split(d, y, cap)) != NBODY_OK) return r;
    memset(g->wtime, 0, (size_t)d->size * sizeof(double));
    memset(g->dcount, 0, (size_t)d->size * sizeof(size_t));
    memset(g->wwork, 0, (size_t)d->size * sizeof(double));
    memset(g->wbuild, 0, (size_t)d->size * sizeof(double));
    g->placed = 1; g->epoch = e->epoch;
    if ((r = nbody__dd_migrate(d, e)) != NBODY_OK) return r;
    /* the costs of the bodies now held, counted from zero by this step's walks */
    g->cost = (double *)nbody__dd_grow(&e->desc, g->cost, &g->cost_cap, nbody__bytes(g->cap, sizeof(double)));
    if (g->cost) memset(g->cost, 0, g->cost_cap);
    return nbody__mpi_worst(d->comm, g->cost ? NBODY_OK : NBODY_ERR_OUT_OF_MEMORY);
}

/* at the first evaluation of a step: the domains cut from this rank's bodies' positions (y,
   g->cap apart) and the last step's costs, each body's domain, the migration. Collective. */
static nbody_result nbody__dd_place(nbody__dist *d, nbody__engine *e, const nbody_real *y) {
    nbody__dd *g = d->dd;
    nbody_result r = NBODY_OK;
    g->dest = (int *)nbody__alloc(&e->desc, nbody__bytes(d->count + 1, sizeof(int)));
    if (!g->cost) {                /* lost to a failed allocation: no costs, the split by count */
        g->cost = (double *)nbody__dd_grow(&e->desc, NULL, &g->cost_cap, nbody__bytes(g->cap, sizeof(double)));
        memset(g->wwork, 0, (size_t)d->size * sizeof(double));
    }
    if (!g->dest || !g->cost) r = NBODY_ERR_OUT_OF_MEMORY;
    if ((r = nbody__mpi_worst(d->comm, r)) == NBODY_OK) r = nbody__dd_place_bodies(d, e, y, g->cap);
    nbody__free(&e->desc, g->dest);
    g->dest = NULL;
    return r;
}

/* the tree of the domain's attracting bodies: the first na of the rank's (nbody__dd_order),
   built from the positions y (g->cap apart) and masses where they are. Local. */
static nbody_result nbody__dd_domain_tree(nbody__dist *d, nbody__engine *e, const nbody_real *y, size_t *na_out) {
    nbody__dd *g = d->dd;
    size_t na = 0, nsrc = nbody__n_src(e);
    nbody_result r = NBODY_OK;
    while (na < d->count && g->id[na] < nsrc) ++na;
    if (na) {
        r = nbody__kdtree_build(&g->tree, &e->desc, y, y + g->cap, y + 2 * g->cap, g->m, na);
        if (r == NBODY_OK) r = nbody__tree_prepare(&g->tree, &e->desc, (size_t)e->desc.leaf_size);
        g->tree.walk = nbody__tree_walk_of(((nbody__cpu *)d->local.impl)->simd);
    }
    *na_out = na;
    return r;
}

/* the box of the positions x, y, z (n apart) of the bodies [i0, i1), lo then hi */
static void nbody__dd_box_of(const nbody_real *x, size_t n, size_t i0, size_t i1, nbody_real *box) {
    size_t q;
    int c;
    for (c = 0; c < 3; ++c) box[c] = box[3 + c] = x[(size_t)c * n + i0];
    for (q = i0 + 1; q < i1; ++q)
        for (c = 0; c < 3; ++c) {
            nbody_real v = x[(size_t)c * n + q];
            if (v < box[c]) box[c] = v;
            if (v > box[3 + c]) box[3 + c] = v;
        }
}

/* this domain as boxes into out (6 reals each); returns their number: those of its tree's nodes
   at one level (nbody__tree_level_boxes), then one of its test particles */
static int nbody__dd_boxes(const nbody__dd *g, const nbody_real *y, size_t nd, size_t na, nbody_real *out) {
    int nb = na ? nbody__tree_level_boxes(&g->tree, NBODY__DD_BOXES, out) : 0;
    if (nd > na) nbody__dd_box_of(y, g->cap, na, nd, out + 6 * nb++);
    return nb;
}

/* every domain's boxes (nbody__dd_boxes) to every rank, then the LETs of this rank's tree for the other
   domains, exchanged (an all-to-all of bytes); g->views the received ones, *nl their number.
   Collective. */
static nbody_result nbody__dd_exchange_lets(nbody__dist *d, nbody__engine *e, const nbody_real *y, size_t nd, size_t na, int *nl) {
    nbody__dd *g = d->dd;
    int P = d->size, k, b, *sb = g->cnt + 6 * P, *sd = sb + P, *rb = sd + P, *rd = rb + P;
    nbody_real mine[NBODY__DD_GATHER];
    size_t total = 0, got = 0;
    nbody_result r = NBODY_OK;
    int nb = nbody__dd_boxes(g, y, nd, na, mine);
    mine[NBODY__DD_GATHER - 2] = (nbody_real)nb; mine[NBODY__DD_GATHER - 1] = 0;
    if (MPI_Allgather(mine, NBODY__DD_GATHER, d->real, g->gather, NBODY__DD_GATHER, d->real, d->comm) != MPI_SUCCESS)
        return NBODY_ERR_DEVICE;
    g->let_nodes = g->let_bodies = 0;
    for (k = 0; k < P; ++k) {
        size_t bytes = 0;
        const nbody_real *o = g->gather + (size_t)NBODY__DD_GATHER * k;
        g->nbox[k] = (int)o[NBODY__DD_GATHER - 2];
        for (b = 0; b < 6 * g->nbox[k]; ++b) g->box[(size_t)6 * (NBODY__DD_BOXES + 1) * k + b] = o[b];
        if (k != d->rank && na && g->nbox[k])
            bytes = nbody__let_write(&g->tree, g->box + (size_t)6 * (NBODY__DD_BOXES + 1) * k, g->nbox[k], NULL);
        if (bytes > (size_t)INT_MAX || total > (size_t)INT_MAX - bytes) r = NBODY_ERR_UNAVAILABLE;
        sb[k] = r == NBODY_OK ? (int)bytes : 0; sd[k] = (int)total; total += bytes;
    }
    if (r == NBODY_OK) {
        g->let_out = (unsigned char *)nbody__dd_grow(&e->desc, g->let_out, &g->out_cap, total);
        if (!g->let_out) r = NBODY_ERR_OUT_OF_MEMORY;
    }
    for (k = 0; k < P && r == NBODY_OK; ++k)
        if (sb[k]) {
            nbody__let_head h;
            nbody__let_write(&g->tree, g->box + (size_t)6 * (NBODY__DD_BOXES + 1) * k, g->nbox[k], g->let_out + sd[k]);
            memcpy(&h, g->let_out + sd[k], sizeof h);
            g->let_nodes += h.nodes - 1; g->let_bodies += h.bodies;
        }
    if ((r = nbody__mpi_worst(d->comm, r)) != NBODY_OK) return r;
    if (MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
    for (k = 0; k < P; ++k) {
        if ((size_t)rb[k] > (size_t)INT_MAX - got) r = NBODY_ERR_UNAVAILABLE;
        rd[k] = (int)got; got += (size_t)rb[k];
    }
    if (r == NBODY_OK) {
        g->let_in = (unsigned char *)nbody__dd_grow(&e->desc, g->let_in, &g->in_cap, got);
        if (!g->let_in) r = NBODY_ERR_OUT_OF_MEMORY;
    }
    if ((r = nbody__mpi_worst(d->comm, r)) != NBODY_OK) return r;
    if (MPI_Alltoallv(g->let_out, sb, sd, MPI_BYTE, g->let_in, rb, rd, MPI_BYTE, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
    g->bytes_let = (unsigned long long)total;
    *nl = 0;
    for (k = 0; k < P; ++k)
        if (rb[k]) nbody__let_view(&g->views[(*nl)++], g->let_in + rd[k], (size_t)e->desc.leaf_size,
                                   nbody__tree_walk_of(((nbody__cpu *)d->local.impl)->simd));
    return NBODY_OK;
}

static void nbody__dd_free(nbody__engine *e, nbody__dd *g) {
    const nbody_desc *ds = &e->desc;
    if (!g) return;
    while (g->bufs.next && g->bufs.next != &g->bufs) {   /* the simulation released them all: defensive */
        nbody__dd_buf *b = g->bufs.next;
        g->bufs.next = b->next;
        nbody__free(ds, b->p); nbody__free(ds, b);
    }
    if (g->index != MPI_DATATYPE_NULL) MPI_Type_free(&g->index);
    nbody__free(ds, g->id); nbody__free(ds, g->m);
    nbody__free(ds, g->orb); nbody__free(ds, g->axis); nbody__free(ds, g->cut); nbody__free(ds, g->hist); nbody__free(ds, g->wtime); nbody__free(ds, g->dcount);
    nbody__free(ds, g->wwork); nbody__free(ds, g->wbuild); nbody__free(ds, g->cost);
    nbody__free(ds, g->cnt); nbody__free(ds, g->gather); nbody__free(ds, g->box); nbody__free(ds, g->nbox);
    nbody__free(ds, g->views);
    nbody__free(ds, g->let_out); nbody__free(ds, g->let_in);
    nbody__kdtree_release(&g->tree, ds);
    nbody__free(ds, g);
}

/* the domains' state of this rank: its bodies [lo, lo + count) until the first evaluation
   moves them to their domains, room for a sixteenth more; what grows with the domain and the
   LETs is allocated by the evaluations */
static nbody_result nbody__dd_alloc(nbody__engine *e, nbody__dist *d) {
    const nbody_desc *ds = &e->desc;
    size_t m = d->count, P = (size_t)d->size, i;
    nbody__dd *g;
    if (d->size > NBODY__DIST_MAX_RANKS) {
        nbody__log(ds, NBODY_LOG_ERROR, "nbody: desc.decompose on %d ranks: at most %d", d->size, NBODY__DIST_MAX_RANKS);
        return NBODY_ERR_UNAVAILABLE;
    }
    g = (nbody__dd *)nbody__alloc(ds, sizeof *g);
    if (!g) return NBODY_ERR_OUT_OF_MEMORY;
    memset(g, 0, sizeof *g);
    g->index = MPI_DATATYPE_NULL;
    g->bufs.next = g->bufs.prev = &g->bufs;
    d->dd = g;
    g->cap = m + m / 16 + 16;
    if (MPI_Type_contiguous((int)sizeof(size_t), MPI_BYTE, &g->index) != MPI_SUCCESS || MPI_Type_commit(&g->index) != MPI_SUCCESS) {
        g->index = MPI_DATATYPE_NULL;
        return NBODY_ERR_DEVICE;
    }
    g->id = (size_t *)nbody__alloc(ds, nbody__bytes(g->cap, sizeof(size_t)));
    g->m = (nbody_real *)nbody__alloc(ds, nbody__bytes(g->cap, sizeof(nbody_real)));
    g->orb = (int *)nbody__alloc(ds, 8 * P * sizeof(int));
    g->axis = (int *)nbody__alloc(ds, 4 * P * sizeof(int));
    g->cut = (double *)nbody__alloc(ds, 4 * P * sizeof(double));
    g->hist = (double *)nbody__alloc(ds, (2 * NBODY__DD_BINS + 24) * P * sizeof(double));
    g->wtime = (double *)nbody__alloc(ds, P * sizeof(double));
    g->dcount = (size_t *)nbody__alloc(ds, P * sizeof(size_t));
    g->wwork = (double *)nbody__alloc(ds, P * sizeof(double));
    g->wbuild = (double *)nbody__alloc(ds, P * sizeof(double));
    g->cost = (double *)nbody__dd_grow(ds, NULL, &g->cost_cap, nbody__bytes(g->cap, sizeof(double)));
    g->cnt = (int *)nbody__alloc(ds, 10 * P * sizeof(int));
    g->gather = (nbody_real *)nbody__alloc(ds, NBODY__DD_GATHER * P * sizeof(nbody_real));
    g->box = (nbody_real *)nbody__alloc(ds, 6 * (NBODY__DD_BOXES + 1) * P * sizeof(nbody_real));
    g->nbox = (int *)nbody__alloc(ds, P * sizeof(int));
    g->views = (nbody__kdtree *)nbody__alloc(ds, P * sizeof(nbody__kdtree));
    if (!g->id || !g->m || !g->orb || !g->axis || !g->cut || !g->hist || !g->wtime || !g->dcount || !g->wwork || !g->wbuild || !g->cost || !g->cnt ||
        !g->gather || !g->box || !g->nbox || !g->views)
        return NBODY_ERR_OUT_OF_MEMORY;
    for (i = 0; i < m; ++i) { g->id[i] = d->lo + i; g->m[i] = 0; }
    memset(g->wtime, 0, P * sizeof(double));
    memset(g->dcount, 0, P * sizeof(size_t));   /* no measurement yet: the first split by count */
    memset(g->wwork, 0, P * sizeof(double));
    memset(g->wbuild, 0, P * sizeof(double));
    memset(g->cost, 0, g->cost_cap);
    memset(g->orb, 0, 8 * P * sizeof(int));   /* nodes beyond the leaves: no ranks */
    memset(g->axis, 0, 4 * P * sizeof(int));
    memset(g->cut, 0, 4 * P * sizeof(double));
    nbody__dd_orb_ranges(g->orb, 1, 0, d->size);
    return NBODY_OK;
}

/* f = [v, a] for this rank's bodies by the domain-decomposed tree (y, f: nbody__dd_buf);
   collective */
static nbody_result nbody__dd_forces(nbody__dist *d, nbody__engine *e, nbody__buf yb, nbody__buf fb) {
    nbody__dd *g = d->dd;
    const nbody__dd_buf *Y = (const nbody__dd_buf *)yb, *Fb = (const nbody__dd_buf *)fb;
    const nbody_real *y;
    nbody_real *f, box[6];
    size_t nd, na = 0, i, cap;
    int finite = 1, nl = 0, k;
    double t0 = MPI_Wtime(), w0, wall, build, build_cpu;
    nbody_result r;
    if ((r = nbody__dd_bounds(d, Y->p, d->count, g->cap, box, &finite)) != NBODY_OK) return r;
    g->place_s = 0;
    if (finite && (!g->placed || e->epoch != g->epoch)) {   /* once a step: its evaluations share the domains */
        g->place_s = MPI_Wtime();
        if ((r = nbody__dd_place(d, e, Y->p)) != NBODY_OK) return r;
        g->place_s = MPI_Wtime() - g->place_s;
    }
    y = Y->p; f = Fb->p; cap = g->cap; nd = d->count;   /* after the migration: the domain's bodies */
    for (k = 0; k < 3; ++k) if (nd) memcpy(f + (size_t)k * cap, y + (size_t)(3 + k) * cap, nd * sizeof(nbody_real));   /* dx/dt = v */
    if (!finite) {                 /* NaN or Inf anywhere (every rank knows): NaN forces, as one process */
        nbody_real inf = (nbody_real)HUGE_VAL, nan = inf - inf;
        for (k = 3; k < 6; ++k) for (i = 0; i < nd; ++i) f[(size_t)k * cap + i] = nan;
        return NBODY_OK;
    }
    build = MPI_Wtime();
    build_cpu = (double)clock();
    r = nbody__dd_domain_tree(d, e, y, &na);
    build_cpu = ((double)clock() - build_cpu) / (double)CLOCKS_PER_SEC;
    g->build_s = MPI_Wtime() - build;
    r = nbody__mpi_worst(d->comm, r);
    if (r != NBODY_OK) return r;
    g->let_s = MPI_Wtime();
    if ((r = nbody__dd_exchange_lets(d, e, y, nd, na, &nl)) != NBODY_OK) return r;
    g->let_s = MPI_Wtime() - g->let_s;
    {   /* the walk reads the rank's bodies and writes their accelerations in place */
        nbody__forces F;
        memset(&F, 0, sizeof F);
        F.x = y; F.y = y + cap; F.z = y + 2 * cap; F.m = g->m;
        F.ax = f + 3 * cap; F.ay = f + 4 * cap; F.az = f + 5 * cap;
        F.n = nd; F.G = e->desc.G; F.eps2 = e->desc.softening * e->desc.softening;
        w0 = (double)clock();      /* processor time: the work, not other jobs' turns */
        wall = MPI_Wtime();
        nbody__tree_forces_domain(na ? &g->tree : NULL, g->views, nl, &e->desc, &F, g->cost);
        g->walk_s = ((double)clock() - w0) / (double)CLOCKS_PER_SEC;
        wall = MPI_Wtime() - wall;
    }
    {   /* every domain's walk time, size, work (its bodies' costs, summed since the cuts
           moved) and build time: the next step's weights (nbody__dd_weights) */
        double mine[4], *all = g->hist, work = 0;
        for (i = 0; i < nd; ++i) work += g->cost[i];
        mine[0] = g->walk_s; mine[1] = (double)nd; mine[2] = work; mine[3] = build_cpu;
        g->wait_s = MPI_Wtime();
        if (MPI_Allgather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
        g->wait_s = MPI_Wtime() - g->wait_s;
        for (k = 0; k < d->size; ++k) {
            g->wtime[k] += all[4 * k]; g->dcount[k] += (size_t)all[4 * k + 1]; g->wwork[k] = all[4 * k + 2];
            g->wbuild[k] += all[4 * k + 3];
        }
    }
    g->domain = nd;
    g->exchange_s = MPI_Wtime() - t0 - wall - g->build_s;
    return NBODY_OK;
}

/* ---- the decomposed tree's buffers (nbody__dd_buf) behind the engine operations ---- */

/* a buffer of len reals (whole components of n: every caller's are) for this rank's bodies, zero */
static nbody_result nbody__dd_buf_alloc(nbody__engine *e, nbody__dist *d, size_t len, nbody__buf *out) {
    nbody__dd *g = d->dd;
    nbody__dd_buf *b = (nbody__dd_buf *)nbody__alloc(&e->desc, sizeof *b);
    if (!b) return NBODY_ERR_OUT_OF_MEMORY;
    b->comps = e->n ? (len + e->n - 1) / e->n : 0;
    b->p = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes(b->comps * g->cap + 1, sizeof(nbody_real)));
    if (!b->p) { nbody__free(&e->desc, b); return NBODY_ERR_OUT_OF_MEMORY; }
    memset(b->p, 0, b->comps * g->cap * sizeof(nbody_real));   /* as every engine's buffers start */
    b->next = g->bufs.next; b->prev = &g->bufs;
    g->bufs.next->prev = b; g->bufs.next = b;
    *out = b;
    return NBODY_OK;
}
static void nbody__dd_buf_release(nbody__engine *e, nbody__buf buf) {
    nbody__dd_buf *b = (nbody__dd_buf *)buf;
    b->prev->next = b->next; b->next->prev = b->prev;
    nbody__free(&e->desc, b->p); nbody__free(&e->desc, b);
}

/* the bodies [b0, b1) of component c of the global range [off, off + len), in the order c */
static int nbody__dd_span(size_t n, size_t off, size_t len, size_t c, size_t *b0, size_t *b1) {
    size_t end = off + len;
    if (!len || c * n >= end || (c + 1) * n <= off) return 0;
    *b0 = off > c * n ? off - c * n : 0;
    *b1 = end < (c + 1) * n ? end - c * n : n;
    return 1;
}

/* every rank passes the same src: each takes its bodies' values by index */
static nbody_result nbody__dd_upload(nbody__dist *d, size_t n, nbody__dd_buf *b, size_t off, const nbody_real *src, size_t len) {
    const nbody__dd *g = d->dd;
    size_t c, k, b0, b1;
    for (c = len ? off / n : 0; c < b->comps && nbody__dd_span(n, off, len, c, &b0, &b1); ++c)
        for (k = 0; k < d->count; ++k) {
            size_t i = g->id[k];
            if (i >= b0 && i < b1) b->p[c * g->cap + k] = src[c * n + i - off];
        }
    return NBODY_OK;
}

/* every rank receives the whole range: component by component, each rank's values of its bodies
   in it with their indices, gathered (MPI_Allgatherv), then put in place by index. The indices
   are gathered once for components of the same bodies. Collective. */
static nbody_result nbody__dd_download(nbody__dist *d, size_t n, nbody_real *dst, const nbody__dd_buf *b, size_t off, size_t len) {
    const nbody__dd *g = d->dd;
    const nbody_desc *ds = &d->local.desc;
    size_t c, k, j, b0, b1, last0 = 1, last1 = 0, mine = 0, total = 0;
    size_t *sel = (size_t *)nbody__alloc(ds, nbody__bytes(d->count + 1, sizeof(size_t)));
    size_t *gid = (size_t *)nbody__alloc(ds, nbody__bytes(n + 1, sizeof(size_t)));
    nbody_real *val = (nbody_real *)nbody__alloc(ds, nbody__bytes(n + 1, sizeof(nbody_real)));
    nbody_result r = sel && gid && val ? NBODY_OK : NBODY_ERR_OUT_OF_MEMORY;
    int q;
    if ((r = nbody__mpi_worst(d->comm, r)) != NBODY_OK) goto done;
    for (c = len ? off / n : 0; c < b->comps && nbody__dd_span(n, off, len, c, &b0, &b1); ++c) {
        if (b0 != last0 || b1 != last1) {   /* this component's bodies: which, and everyone's indices */
            int cnt;
            for (k = 0, mine = 0; k < d->count; ++k) if (g->id[k] >= b0 && g->id[k] < b1) sel[mine++] = k;
            cnt = (int)mine;
            if (MPI_Allgather(&cnt, 1, MPI_INT, d->counts, 1, MPI_INT, d->comm) != MPI_SUCCESS) { r = NBODY_ERR_DEVICE; goto done; }
            for (q = 0, total = 0; q < d->size; ++q) { d->displs[q] = (int)total; total += (size_t)d->counts[q]; }
            for (j = 0; j < mine; ++j) gid[(size_t)d->displs[d->rank] + j] = g->id[sel[j]];
            if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gid, d->counts, d->displs, g->index, d->comm) != MPI_SUCCESS) {
                r = NBODY_ERR_DEVICE; goto done;
            }
            last0 = b0; last1 = b1;
        }
        for (j = 0; j < mine; ++j) val[(size_t)d->displs[d->rank] + j] = b->p[c * g->cap + sel[j]];
        if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, val, d->counts, d->displs, d->real, d->comm) != MPI_SUCCESS) {
            r = NBODY_ERR_DEVICE; goto done;
        }
        for (j = 0; j < total; ++j) dst[c * n + gid[j] - off] = val[j];
    }
done:
    nbody__free(ds, sel); nbody__free(ds, gid); nbody__free(ds, val);
    return r;
}

/* The pieces of the global range [off, off + len) this rank owns: global index
   off + rel .. off + rel + plen is local loc .. loc + plen. With desc.decompose the rank's
   bodies are any, so a range must be whole components (-1 otherwise): a piece is the rank's
   rows of one component (len: its body count). */
typedef struct nbody__piece { size_t rel, loc, len; } nbody__piece;
static int nbody__dist_pieces(const nbody__dist *d, size_t n, size_t off, size_t len, nbody__piece *out, int cap) {
    size_t c, end = off + len;
    int np = 0;
    if (len == 0) return 0;
    if (d->dd) {
        if (off % n || len % n) return -1;
        for (c = off / n; c < end / n && np < cap; ++c, ++np) {
            out[np].rel = c * n - off; out[np].loc = c * d->dd->cap; out[np].len = d->count;
        }
        return np;
    }
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

/* desc.decompose's domains lost to a failed migration (nbody__dd_migrate): every operation fails */
static int nbody__dist_broken(const nbody__dist *d) { return d->dd && d->dd->broken; }

/* the local ops' rows of a global range: a component's rows are count apart (cap with
   desc.decompose) */
static size_t nbody__dist_stride(const nbody__dist *d) { return d->dd ? d->dd->cap : d->count; }

/* a range that is not whole components under desc.decompose (no solver asks for one) */
static nbody_result nbody__dist_refuse_range(const nbody__engine *e, size_t off, size_t len) {
    nbody__log(&e->desc, NBODY_LOG_ERROR, "nbody: desc.decompose: a vector operation on [%lu, %lu), not whole components of n = %lu",
               (unsigned long)off, (unsigned long)(off + len), (unsigned long)e->n);
    return NBODY_ERR_INVALID_ARGUMENT;
}

/* the op's buffers as the local engine's (desc.decompose: nbody__dd_buf's arrays) */
static void nbody__dist_local_bufs(const nbody__dist *d, nbody__lincomb *op) {
    int j;
    if (!d->dd) return;
    if (op->out) op->out = ((nbody__dd_buf *)op->out)->p;
    if (op->y) op->y = ((nbody__dd_buf *)op->y)->p;
    if (op->comp) op->comp = ((nbody__dd_buf *)op->comp)->p;
    for (j = 0; j < op->nk && j < NBODY__MAX_TERMS; ++j)
        if (op->k[j]) op->k[j] = ((nbody__dd_buf *)op->k[j])->p;
}

static nbody_result nbody__dist_alloc(nbody__engine *e, size_t len, nbody__buf *out) {
    nbody__dist *d = nbody__dist_of(e);
    size_t loc = len / e->n * d->count + (len % e->n < d->count ? len % e->n : d->count);
    if (d->dd) return nbody__dd_buf_alloc(e, d, len, out);
    return d->local.ops->alloc(&d->local, loc ? loc : 1, out);
}
static void nbody__dist_release(nbody__engine *e, nbody__buf b) {
    nbody__dist *d = nbody__dist_of(e);
    if (b && d->dd) nbody__dd_buf_release(e, b);
    else if (b) d->local.ops->release(&d->local, b);
}
/* every rank passes the same src: each keeps its pieces */
static nbody_result nbody__dist_upload(nbody__engine *e, nbody__buf dst, size_t off, const nbody_real *src, size_t len) {
    nbody__dist *d = nbody__dist_of(e);
    nbody__piece pc[NBODY__DIST_PIECES];
    nbody_result r = NBODY_OK;
    int i, np;
    if (nbody__dist_broken(d)) return NBODY_ERR_OUT_OF_MEMORY;
    if (d->dd) return nbody__dd_upload(d, e->n, (nbody__dd_buf *)dst, off, src, len);
    np = nbody__dist_pieces(d, e->n, off, len, pc, NBODY__DIST_PIECES);
    for (i = 0; i < np && r == NBODY_OK; ++i) r = d->local.ops->upload(&d->local, dst, pc[i].loc, src + pc[i].rel, pc[i].len);
    return r;
}
/* every rank receives the whole range: per component, each rank's piece, gathered */
static nbody_result nbody__dist_download(nbody__engine *e, nbody_real *dst, nbody__buf src, size_t off, size_t len) {
    nbody__dist *d = nbody__dist_of(e);
    size_t n = e->n, end = off + len, c;
    nbody_result r = NBODY_OK;
    if (nbody__dist_broken(d)) return NBODY_ERR_OUT_OF_MEMORY;
    if (d->dd) return nbody__mpi_worst(d->comm, nbody__dd_download(d, n, dst, (const nbody__dd_buf *)src, off, len));
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
    if (nbody__dist_broken(d)) return NBODY_ERR_OUT_OF_MEMORY;
    if (d->dd) {                   /* the domains need this rank's masses only, by index */
        size_t k;
        for (k = 0; k < d->count; ++k) d->dd->m[k] = m[d->dd->id[k]];
        return NBODY_OK;
    }
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

/* TREE (leaf visit order, no test particles): rank r walks the bodies at the tree's leaf
   positions [wfirst[r], wfirst[r + 1]), a compact region of space, instead of its own bodies,
   which lie anywhere; the accelerations then go to their owners through one more all-gather
   (3n reals, as the positions). A body's walk does not depend on the packet it is in, so the
   forces are those of the plain engine bit for bit, whatever the boundaries, which then move
   by the measured walk times (nbody__dist_rebalance). Collective: every rank gathers. */
static nbody_result nbody__dist_tree_leaf_forces(nbody__dist *d, nbody__engine *e, nbody__buf y, nbody__buf f, nbody_result r) {
    size_t n = e->n, m = d->count, w0 = d->wfirst[d->rank];
    nbody_real *scratch = d->tacc, *all = d->tacc + 3 * n;
    nbody_real *yl = (nbody_real *)y, *fl = (nbody_real *)f;
    int finite = 1, k;
    double walk_s = 0;
    if (r == NBODY_OK)
        r = nbody__cpu_tree_leaf_slice(&d->local, d->pos, w0, d->wfirst[d->rank + 1] - w0, scratch, all + 3 * w0, &finite, &walk_s);
    for (k = 0; k < d->size; ++k) {       /* the gather's counts, from the walk's boundaries */
        d->counts[k] = (int)(3 * (d->wfirst[k + 1] - d->wfirst[k]));
        d->displs[k] = (int)(3 * d->wfirst[k]);
    }
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, d->counts, d->displs, d->real, d->comm) != MPI_SUCCESS &&
        r == NBODY_OK)
        r = NBODY_ERR_DEVICE;
    r = nbody__mpi_worst(d->comm, r);     /* every rank's part is needed: all fail together */
    if (r != NBODY_OK) return r;
    /* the take below reads this walk's boundaries: the next walk's are set after it */
    if (MPI_Allgather(&walk_s, 1, MPI_DOUBLE, d->wtime, 1, MPI_DOUBLE, d->comm) != MPI_SUCCESS) return NBODY_ERR_DEVICE;
    if (m) memcpy(fl, yl + 3 * m, 3 * m * sizeof(nbody_real));   /* dx/dt = v */
    if (!finite) {                         /* NaN/Inf positions (the same on every rank): NaN forces */
        size_t i;
        const nbody_real *p = (const nbody_real *)d->pos;
        nbody_real nan = 0;
        for (i = 0; i < 3 * n && nbody__isfinite(p[i]); ++i) {}
        if (i < 3 * n) nan = p[i] - p[i];
        for (i = 0; i < 3 * m; ++i) fl[3 * m + i] = nan;
        return NBODY_OK;
    }
    nbody__cpu_tree_leaf_take(&d->local, all, d->wfirst, d->size, d->lo, m, fl + 3 * m);
    nbody__dist_rebalance(d->wfirst, d->wtime, d->size, 1);
    return NBODY_OK;
}

static nbody_result nbody__dist_derivative(nbody__engine *e, nbody__buf y, nbody__buf f) {
    nbody__dist *d = nbody__dist_of(e);
    nbody_result r = NBODY_OK;
    int k, c;
    if (nbody__dist_broken(d)) return NBODY_ERR_OUT_OF_MEMORY;
    if (d->dd) return nbody__mpi_worst(d->comm, nbody__dd_forces(d, e, y, f));
    if (d->count) r = d->local.ops->download(&d->local, d->packed + 3 * d->lo, y, 0, 3 * d->count);
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d->packed, d->counts3, d->displs3, d->real, d->comm) != MPI_SUCCESS &&
        r == NBODY_OK)
        r = NBODY_ERR_DEVICE;
    for (k = 0; k < d->size && r == NBODY_OK; ++k) {     /* rank k's [x, y, z] into x[], y[], z[] */
        size_t cnt = d->first[k + 1] - d->first[k];
        for (c = 0; c < 3 && r == NBODY_OK && cnt; ++c)
            r = d->local.ops->upload(&d->local, d->pos, (size_t)c * e->n + d->first[k], d->packed + 3 * d->first[k] + (size_t)c * cnt, cnt);
    }
    if (d->tacc) return nbody__dist_tree_leaf_forces(d, e, y, f, r);
    if (r == NBODY_OK) r = nbody__dist_slice_forces(d, y, f);
    return nbody__mpi_worst(d->comm, r);
}

/* the same lincomb on each owned piece; offsets of out, y, k agree modulo n (component
   boundaries), as they do in every solver */
static nbody_result nbody__dist_local_op(const nbody__dist *d, size_t n, const nbody__lincomb *op, const nbody__piece *p,
                                         nbody__lincomb *lop) {
    size_t gy = op->y_off + p->rel, gk = op->k_off + p->rel, go = op->out_off + p->rel;
    size_t stride = nbody__dist_stride(d), b = p->loc - go / n * stride;   /* the piece's first row */
    if (gy % n != go % n || gk % n != go % n) return NBODY_ERR_INVALID_ARGUMENT;
    *lop = *op;
    lop->out_off = p->loc;
    lop->y_off = gy / n * stride + b;
    lop->k_off = gk / n * stride + b;
    lop->len = p->len;
    return NBODY_OK;
}
static nbody_result nbody__dist_lincomb(nbody__engine *e, const nbody__lincomb *op) {
    nbody__dist *d = nbody__dist_of(e);
    nbody__piece pc[NBODY__DIST_PIECES];
    nbody__lincomb top = *op;
    nbody_result r = NBODY_OK;
    int i, np = nbody__dist_pieces(d, e->n, op->out_off, op->len, pc, NBODY__DIST_PIECES);
    if (nbody__dist_broken(d)) return NBODY_ERR_OUT_OF_MEMORY;
    if (np < 0) return nbody__dist_refuse_range(e, op->out_off, op->len);
    nbody__dist_local_bufs(d, &top);
    for (i = 0; i < np && r == NBODY_OK; ++i) {
        nbody__lincomb lop;
        r = nbody__dist_local_op(d, e->n, &top, &pc[i], &lop);
        if (r == NBODY_OK) r = d->local.ops->lincomb(&d->local, &lop);
    }
    return r;
}
/* max over the pieces, then over the ranks (max is exact: the norm of one process); NaN sticks */
static nbody_result nbody__dist_error_norm(nbody__engine *e, const nbody__lincomb *op, nbody_real atol, nbody_real rtol,
                                           nbody_real *norm) {
    nbody__dist *d = nbody__dist_of(e);
    nbody__piece pc[NBODY__DIST_PIECES];
    nbody__lincomb top = *op;
    nbody_real worst = 0, *all = d->norms;
    nbody_result r = NBODY_OK;
    int i, np = nbody__dist_pieces(d, e->n, op->out_off, op->len, pc, NBODY__DIST_PIECES);
    if (nbody__dist_broken(d)) return NBODY_ERR_OUT_OF_MEMORY;   /* on every rank alike */
    if (np < 0) return nbody__dist_refuse_range(e, op->out_off, op->len);
    nbody__dist_local_bufs(d, &top);
    for (i = 0; i < np && r == NBODY_OK; ++i) {
        nbody__lincomb lop;
        nbody_real v = 0;
        r = nbody__dist_local_op(d, e->n, &top, &pc[i], &lop);
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
    if (nbody__dist_broken(d)) return NBODY_ERR_OUT_OF_MEMORY;   /* on every rank alike */
    if (np < 0) return nbody__dist_refuse_range(e, off, len);
    if (d->dd) b = ((nbody__dd_buf *)b)->p;
    for (i = 0; i < np && r == NBODY_OK && ok; ++i) r = d->local.ops->all_finite(&d->local, b, pc[i].loc, pc[i].len, &ok);
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, d->comm) != MPI_SUCCESS && r == NBODY_OK) r = NBODY_ERR_DEVICE;
    *finite = all;
    return nbody__mpi_worst(d->comm, r);
}

/* ---- NBODY_HERMITE on ranks: the sources split, the partial forces reduced ------------------
   Each rank predicts its own bodies, the active bodies' predicted x v a (and their state at
   their own time, for the host's corrector) go to every rank (an all-gather of the owners'
   rows), each rank sums the forces on all of them from its own bodies (nbody__cpu_hermite_slice),
   and every rank adds the ranks' partial sums in rank order (an all-gather; the same bits on
   every rank, whatever the MPI library's reduction order). Only the active bodies' rows move:
   33 reals a body a step. A body's sum is split by rank, so the steps are one process's to
   rounding, not bitwise. */

/* the scratch of a step with `count` active bodies (collective: all ranks fail together) */
static nbody_result nbody__dist_hermite_scratch(nbody__engine *e, nbody__dist *d, size_t count) {
    nbody_result r = NBODY_OK;
    if (d->hrow == MPI_DATATYPE_NULL &&
        (MPI_Type_contiguous(24, d->real, &d->hrow) != MPI_SUCCESS || MPI_Type_commit(&d->hrow) != MPI_SUCCESS ||
         MPI_Type_contiguous(9, MPI_DOUBLE, &d->hsums) != MPI_SUCCESS || MPI_Type_commit(&d->hsums) != MPI_SUCCESS))
        r = NBODY_ERR_DEVICE;
    if (r == NBODY_OK && !d->hfirst) {
        d->hfirst = (size_t *)nbody__alloc(&e->desc, nbody__bytes((size_t)d->size + 1, sizeof(size_t)));
        if (!d->hfirst) r = NBODY_ERR_OUT_OF_MEMORY;
    }
    if (r == NBODY_OK && count > d->hcap) {
        nbody__free(&e->desc, d->hpack); nbody__free(&e->desc, d->hsum);
        d->hpack = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes(count, 24 * sizeof(nbody_real)));
        d->hsum = (double *)nbody__alloc(&e->desc, nbody__bytes(count * (size_t)d->size, 9 * sizeof(double)));
        d->hcap = d->hpack && d->hsum ? count : 0;
        if (!d->hcap) r = NBODY_ERR_OUT_OF_MEMORY;
    }
    return nbody__mpi_worst(d->comm, r);
}

/* the first entry of the rising list[0 .. count) at or above i */
static size_t nbody__dist_list_at(const size_t *list, size_t count, size_t i) {
    size_t a = 0, b = count;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (list[mid] < i) a = mid + 1;
        else b = mid;
    }
    return a;
}

/* this rank's bodies predicted into op's pred (and pred_acc), then its active bodies' rows
   into hpack (24 reals each, at their place in the list) */
static void nbody__dist_hermite_rows(nbody__engine *e, nbody__dist *d, const nbody__hermite_op *op) {
    nbody__hermite_op lop = *op;
    size_t m = d->count, q;
    const nbody_real *b = (const nbody_real *)op->base, *f = (const nbody_real *)op->force, *hi = (const nbody_real *)op->high;
    const nbody_real *p = (const nbody_real *)op->pred, *pa = (const nbody_real *)op->pred_acc;
    nbody__hermite_predict_fn predict = nbody__hermite_predict_for(((nbody__cpu *)d->local.impl)->simd);
    int threads = nbody__threads(&e->desc);
    (void)threads;
    lop.ticks = op->ticks + d->lo;         /* the slice's bodies, as a whole engine of m */
    NBODY__PRAGMA(omp parallel num_threads(threads) if (threads > 1 && m >= 4 * NBODY__HERMITE_PIECE))
    nbody__hermite_predict_n(m, &lop, predict);
    for (q = d->hfirst[d->rank]; q < d->hfirst[d->rank + 1]; ++q) {
        size_t i = op->list[q] - d->lo;
        nbody_real *row = d->hpack + 24 * q;
        int k;
        for (k = 0; k < 6; ++k) {
            row[k] = p[(size_t)k * m + i];
            row[9 + k] = b[(size_t)k * m + i];
            row[15 + k] = f[(size_t)k * m + i];
        }
        for (k = 0; k < 3; ++k) {
            row[6 + k] = op->order == 6 ? pa[(size_t)k * m + i] : 0;
            row[21 + k] = hi[(size_t)k * m + i];
        }
    }
}

static nbody_result nbody__dist_hermite(nbody__engine *e, const nbody__hermite_op *op) {
    nbody__dist *d = nbody__dist_of(e);
    size_t A = op->count, m = d->count, q;
    nbody__hermite_src S;
    nbody_result r = nbody__dist_hermite_scratch(e, d, A);
    int k, c;
    if (r != NBODY_OK) return r;
    for (k = 0; k <= d->size; ++k) d->hfirst[k] = nbody__dist_list_at(op->list, A, d->first[k]);
    for (k = 0; k < d->size; ++k) {
        d->counts[k] = (int)(d->hfirst[k + 1] - d->hfirst[k]);
        d->displs[k] = (int)d->hfirst[k];
    }
    nbody__dist_hermite_rows(e, d, op);
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d->hpack, d->counts, d->displs, d->hrow, d->comm) != MPI_SUCCESS)
        r = NBODY_ERR_DEVICE;
    S.x = (const nbody_real *)op->pred; S.y = S.x + m; S.z = S.x + 2 * m; S.vx = S.x + 3 * m; S.vy = S.x + 4 * m;
    S.vz = S.x + 5 * m; S.ax = (const nbody_real *)op->pred_acc; S.ay = S.ax + m; S.az = S.ax + 2 * m;
    S.m = ((const nbody__cpu *)d->local.impl)->m + d->lo;
    S.n = op->n_src <= d->lo ? 0 : op->n_src - d->lo < m ? op->n_src - d->lo : m;   /* its sources */
    S.eps2 = e->desc.softening * e->desc.softening; S.snap = op->order == 6;
    if (r == NBODY_OK) r = nbody__cpu_hermite_slice(&d->local, &S, d->hpack, 24, op->list, d->lo, A, d->hsum + 9 * A * (size_t)d->rank);
    if (MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d->hsum, (int)A, d->hsums, d->comm) != MPI_SUCCESS && r == NBODY_OK)
        r = NBODY_ERR_DEVICE;
    if ((r = nbody__mpi_worst(d->comm, r)) != NBODY_OK) return r;
    for (q = 0; q < A; ++q)
        for (c = 0; c < 24; ++c) {
            double sum = 0;
            if (c >= 9) { op->out[(size_t)c * A + q] = d->hpack[24 * q + (size_t)c]; continue; }
            for (k = 0; k < d->size; ++k) sum += d->hsum[((size_t)k * 9 + (size_t)c) * A + q];
            op->out[(size_t)c * A + q] = e->desc.G * (nbody_real)sum;
        }
    return NBODY_OK;
}

/* each rank stores the active bodies it owns (the list and next are the same on every rank) */
static nbody_result nbody__dist_hermite_store(nbody__engine *e, const nbody__hermite_store *op) {
    nbody__dist *d = nbody__dist_of(e);
    size_t q0 = nbody__dist_list_at(op->list, op->count, d->lo), q1 = nbody__dist_list_at(op->list, op->count, d->lo + d->count);
    if (op->commit < 0) return NBODY_ERR_INVALID_ARGUMENT;   /* no ops.hermite_step here: nothing to undo */
    nbody__hermite_store_rows(op, d->count, d->lo, q0, q1, nbody__threads(&e->desc));
    return NBODY_OK;
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
    nbody__free(&e->desc, d->packed); nbody__free(&e->desc, d->norms);
    nbody__free(&e->desc, d->tacc);
    nbody__free(&e->desc, d->wfirst); nbody__free(&e->desc, d->wtime);
    nbody__free(&e->desc, d->hpack); nbody__free(&e->desc, d->hsum); nbody__free(&e->desc, d->hfirst);
    if (d->hrow != MPI_DATATYPE_NULL) MPI_Type_free(&d->hrow);
    if (d->hsums != MPI_DATATYPE_NULL) MPI_Type_free(&d->hsums);
    nbody__dd_free(e, d->dd);
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
    d->comm = MPI_COMM_NULL; d->real = MPI_DATATYPE_NULL; d->hrow = d->hsums = MPI_DATATYPE_NULL;
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
        /* the gathered positions; none with desc.decompose (the domains exchange what they need) */
        d->packed = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes(e->desc.decompose ? 0 : 3 * e->n, sizeof(nbody_real)));
        d->norms = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes((size_t)d->size, sizeof(nbody_real)));
        if (!d->first || !d->counts3 || !d->packed || !d->norms) r = NBODY_ERR_OUT_OF_MEMORY;
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
        d->local.desc = ld; d->local.n = e->desc.decompose ? d->count : e->n;   /* decompose: masses in the domains' state */
        r = d->local.ops->init(&d->local);
        if (r != NBODY_OK) d->local.ops = NULL;
    }
    if (r == NBODY_OK && e->desc.decompose) r = nbody__dd_alloc(e, d);
    else if (r == NBODY_OK) r = d->local.ops->alloc(&d->local, 3 * e->n, &d->pos);
    if (r == NBODY_OK && ld.engine == NBODY_ENGINE_TREE && ld.visit_order == NBODY_ORDER_LEAF && nbody__n_src(e) == e->n &&
        d->size > 1 && !e->desc.decompose) {                     /* slices of the tree's leaf order, see nbody__dist_tree_leaf_forces */
        d->tacc = (nbody_real *)nbody__alloc(&e->desc, nbody__bytes(6 * e->n, sizeof(nbody_real)));
        d->wfirst = (size_t *)nbody__alloc(&e->desc, nbody__bytes((size_t)d->size + 1, sizeof(size_t)));
        d->wtime = (double *)nbody__alloc(&e->desc, nbody__bytes((size_t)d->size, sizeof(double)));
        if (!d->tacc || !d->wfirst || !d->wtime) r = NBODY_ERR_OUT_OF_MEMORY;
        if (r == NBODY_OK)                 /* the first walk: by count, as the bodies are owned */
            memcpy(d->wfirst, d->first, ((size_t)d->size + 1) * sizeof(size_t));
    }
    r = d->comm != MPI_COMM_NULL ? nbody__mpi_worst(d->comm, r) : r;
    if (r != NBODY_OK) nbody__dist_shutdown(e);
    return r;
}

static const nbody__engine_ops nbody__dist_ops = {
    "mpi", nbody__dist_init, nbody__dist_shutdown, nbody__dist_alloc, nbody__dist_release, nbody__dist_upload,
    nbody__dist_download, nbody__dist_set_masses, nbody__dist_derivative, nbody__dist_lincomb, nbody__dist_error_norm,
    nbody__dist_all_finite, NULL, NULL, nbody__dist_hermite, NULL, NULL, nbody__dist_hermite_store, NULL, NULL, NULL, NULL };

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
    iv[15] = desc->decompose;          /* not a checkpoint field (restarts may change it), but alike on every rank */
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

/* ======================================================================================
   >>hooks  ENGINE TABLE AND LIFETIME: the ops table of each engine, start and stop
   ====================================================================================== */

#define NBODY__CPU_ENGINE(label, deriv, hermite, store, active, kick, step) { label, nbody__cpu_init, nbody__cpu_shutdown, \
    nbody__host_alloc, nbody__host_release, nbody__host_upload, nbody__host_download, nbody__cpu_set_masses, deriv, \
    nbody__host_lincomb, nbody__host_error_norm, nbody__host_all_finite, NULL, NULL, hermite, active, kick, \
    store, step, NULL, NULL, NULL }
static const nbody__engine_ops nbody__simple_ops = NBODY__CPU_ENGINE("simple", nbody__simple_derivative, nbody__simple_hermite,
                                                         nbody__host_hermite_store, NULL, NULL, NULL);
static const nbody__engine_ops nbody__openmp_ops = NBODY__CPU_ENGINE("openmp", nbody__openmp_derivative, nbody__openmp_hermite,
                                                         nbody__host_hermite_store, NULL, NULL, NULL);
static const nbody__engine_ops nbody__block_ops = NBODY__CPU_ENGINE("block", nbody__block_derivative, nbody__block_hermite,
                                                         nbody__host_hermite_store, NULL, NULL, nbody__block_hermite_step);
static const nbody__engine_ops nbody__tree_ops = NBODY__CPU_ENGINE("tree", nbody__tree_derivative, NULL, NULL, nbody__tree_active_forces,
                                                                   nbody__host_kick, NULL);

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

/* the engines whose derivative honours desc.n_active */
static int nbody__engine_has_test_particles(nbody_engine e) {
    return e == NBODY_ENGINE_SIMPLE || e == NBODY_ENGINE_OPENMP || e == NBODY_ENGINE_BLOCK || e == NBODY_ENGINE_TREE ||
           e == NBODY_ENGINE_DEFAULT || e == NBODY_ENGINE_OPENCL || e == NBODY_ENGINE_OPENCL_TREE ||
           e == NBODY_ENGINE_CUDA || e == NBODY_ENGINE_CUDA_TREE;
}

/* engine lifetime: start with the masses, stop frees everything */
static nbody_result nbody__engine_start(nbody__engine *e, const nbody_desc *d, size_t n, const nbody_real *m) {
    nbody_result r;
    memset(e, 0, sizeof *e);
    e->ops = d->mpi_comm ? nbody__dist_engine_ops(d) : nbody__engine_ops_for(d->engine);
    if (!e->ops) {
        if (d->mpi_comm && !NBODY__MPI) nbody__log(d, NBODY_LOG_ERROR, "nbody: desc.mpi_comm needs NBODY_WITH_MPI");
        else nbody__log(d, NBODY_LOG_ERROR, "nbody: engine '%s' is not available in this build", nbody_engine_name(d->engine));
        return NBODY_ERR_UNAVAILABLE;
    }
    if (d->n_active > 0 && d->n_active < n && !nbody__engine_has_test_particles(d->engine)) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: engine '%s' has no test particles (n_active)", nbody_engine_name(d->engine));
        e->ops = NULL;
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
   >>steering  STEERING (docs/steering.md): extra forces, hooks, exit conditions, collisions, a change
   of n. Events are decided on the host between accepted steps: a GPU engine hands its
   state back in one download, and takes it back through nbody_set_state when a collision
   changes it. An engine with find_contacts (CUDA, OpenCL) finds the touching and close
   pairs itself: only the pairs come down, the state only when a collision changes it or
   an escape distance is checked. Extra forces on GPU engines: positions, velocities and
   gravity come down, the callback runs on the host, the accelerations go back up, at
   every force evaluation.
   ====================================================================================== */

static int nbody__host_engine(const nbody_sim *s) { return s->eng.ops->alloc == nbody__host_alloc; }

/* the 9n host scratch of a GPU engine, allocated on first use */
static nbody_real *nbody__steer_host(nbody_sim *s) {
    if (!s->steer.host) s->steer.host = (nbody_real *)nbody__alloc(&s->desc, nbody__bytes(s->n, 9 * sizeof(nbody_real)));
    return s->steer.host;
}

static void nbody__steer_free(nbody_sim *s) {
    nbody__free(&s->desc, s->steer.radii);
    nbody__free(&s->desc, s->steer.host);
    if (s->steer.archive) nbody__free(&s->desc, s->steer.archive->path);
    nbody__free(&s->desc, s->steer.archive);
    memset(&s->steer, 0, sizeof s->steer);
}

static nbody_result nbody__extra_force(nbody_sim *s, nbody__buf y, nbody__buf f) {
    size_t n = s->n;
    const nbody_real *Y;
    nbody_real *A;
    nbody_result r = NBODY_OK;
    int host = nbody__host_engine(s);
    if (host) {
        Y = (const nbody_real *)y; A = (nbody_real *)f + 3 * n;
    } else {
        nbody_real *h = nbody__steer_host(s);
        if (!h) return NBODY_ERR_OUT_OF_MEMORY;
        r = s->eng.ops->download(&s->eng, h, y, 0, 6 * n);
        if (r == NBODY_OK) r = s->eng.ops->download(&s->eng, h + 6 * n, f, 3 * n, 3 * n);
        if (r != NBODY_OK) return r;
        Y = h; A = h + 6 * n;
    }
    s->desc.extra_force(n, s->t_stage, Y, Y + n, Y + 2 * n, Y + 3 * n, Y + 4 * n, Y + 5 * n, s->m, A, A + n, A + 2 * n,
                        s->desc.extra_force_user_data);
    if (!host) r = s->eng.ops->upload(&s->eng, f, 3 * n, A, 3 * n);
    return r;
}

static nbody_result nbody__stop(nbody_sim *s, nbody_event_kind kind, size_t i, size_t j, nbody_real dist) {
    s->steer.event.kind = kind; s->steer.event.i = i; s->steer.event.j = j;
    s->steer.event.t = s->t; s->steer.event.distance = dist;
    return NBODY_STOPPED;
}

static int nbody__hook(nbody_sim *s, nbody_step_hook_fn fn) {
    int stop;
    nbody__ptr_store(&s->hook_thread, nbody__thread_tag());
    nbody__flag_set(&s->busy, NBODY__IN_HOOK);   /* the calls a hook may make can enter, from its thread */
    stop = fn(s, s->desc.hook_user_data);
    nbody__flag_set(&s->busy, NBODY__BUSY);
    nbody__ptr_store(&s->hook_thread, NULL);
    return stop;
}

/* positions then velocities (6n) on the host: the state itself on a CPU engine */
static nbody_result nbody__host_state(nbody_sim *s, nbody_real **out) {
    nbody_real *h;
    if (nbody__host_engine(s)) { *out = (nbody_real *)s->y; return NBODY_OK; }
    if (!(h = nbody__steer_host(s))) return NBODY_ERR_OUT_OF_MEMORY;
    *out = h;
    return s->eng.ops->download(&s->eng, h, s->y, 0, 6 * s->n);
}

/* ---- pairs closer than r_i + r_j: sweep and prune. The intervals [x - r, x + r] along the
   axis of widest extent are sorted by their start; each meets only those that start before
   it ends: O(n log n + candidates), direct for a few bodies and a spatial search for many. */
typedef struct nbody__span { nbody_real lo, hi; size_t i; } nbody__span;
typedef struct nbody__pair { size_t i, j; nbody_real d, reach; } nbody__pair;
typedef struct nbody__pairs { nbody__pair *p; size_t n, cap; } nbody__pairs;

static int nbody__span_cmp(const void *a, const void *b) {
    const nbody__span *p = (const nbody__span *)a, *q = (const nbody__span *)b;
    if (p->lo != q->lo) return p->lo < q->lo ? -1 : 1;
    return p->i < q->i ? -1 : (p->i > q->i);
}
static int nbody__pair_cmp(const void *a, const void *b) {
    const nbody__pair *p = (const nbody__pair *)a, *q = (const nbody__pair *)b;
    if (p->i != q->i) return p->i < q->i ? -1 : 1;
    return p->j < q->j ? -1 : (p->j > q->j);
}

static nbody_result nbody__pairs_push(const nbody_desc *d, nbody__pairs *P, nbody__pair pr) {
    if (P->n == P->cap) {
        size_t cap = P->cap ? 2 * P->cap : 16;
        nbody__pair *np = (nbody__pair *)nbody__alloc(d, nbody__bytes(cap, sizeof *np));
        if (!np) return NBODY_ERR_OUT_OF_MEMORY;
        if (P->n) memcpy(np, P->p, P->n * sizeof *np);
        nbody__free(d, P->p);
        P->p = np; P->cap = cap;
    }
    P->p[P->n++] = pr;
    return NBODY_OK;
}

/* every pair i < j with |x_i - x_j| < r_i + r_j (r NULL: r0 for every body), sorted by (i, j) */
static nbody_result nbody__find_pairs(const nbody_desc *d, size_t n, const nbody_real *X, const nbody_real *r,
                                      nbody_real r0, nbody__pairs *out) {
    nbody__span *sp = (nbody__span *)nbody__alloc(d, nbody__bytes(n, sizeof(nbody__span)));
    nbody_real best = -1;
    size_t a, b;
    int axis = 0, c;
    nbody_result res = NBODY_OK;
    if (!sp) return NBODY_ERR_OUT_OF_MEMORY;
    for (c = 0; c < 3; ++c) {
        const nbody_real *q = X + (size_t)c * n;
        nbody_real lo = q[0], hi = q[0];
        for (a = 1; a < n; ++a) { if (q[a] < lo) lo = q[a]; if (q[a] > hi) hi = q[a]; }
        if (hi - lo > best) { best = hi - lo; axis = c; }
    }
    for (a = 0; a < n; ++a) {   /* widened by 32 ulps of |q| + r: rounding never loses a pair */
        nbody_real ra = r ? r[a] : r0, q = X[(size_t)axis * n + a];
        nbody_real w = ra + (NBODY__FABS(q) + ra) * 16 * nbody__eps();
        sp[a].lo = q - w; sp[a].hi = q + w; sp[a].i = a;
    }
    qsort(sp, n, sizeof *sp, nbody__span_cmp);
    for (a = 0; a < n && res == NBODY_OK; ++a)
        for (b = a + 1; b < n && sp[b].lo < sp[a].hi && res == NBODY_OK; ++b) {
            size_t i = sp[a].i < sp[b].i ? sp[a].i : sp[b].i, j = sp[a].i ^ sp[b].i ^ i;
            nbody_real dx = X[j] - X[i], dy = X[n + j] - X[n + i], dz = X[2 * n + j] - X[2 * n + i];
            nbody_real dist = NBODY__SQRT(dx * dx + dy * dy + dz * dz), reach = r ? r[i] + r[j] : 2 * r0;
            if (dist < reach) {
                nbody__pair pr;
                pr.i = i; pr.j = j; pr.d = dist; pr.reach = reach;
                res = nbody__pairs_push(d, out, pr);
            }
        }
    nbody__free(d, sp);
    if (res == NBODY_OK && out->n > 1) qsort(out->p, out->n, sizeof *out->p, nbody__pair_cmp);
    return res;
}

/* The pairs of the state now closer than r_i + r_j (r NULL: r0 for every body). On an
   engine that finds them itself (find_contacts; its radii came with nbody_set_radii) only
   the pairs come back; else on the host state *X, downloaded on first need (*X NULL). */
static nbody_result nbody__contacts(nbody_sim *s, nbody_real **X, const nbody_real *r, nbody_real r0, nbody__pairs *P) {
    nbody_result res;
    if (!nbody__host_engine(s) && s->eng.ops->find_contacts) {
        const nbody__contact *c = NULL;
        size_t k, count = 0;
        res = s->eng.ops->find_contacts(&s->eng, s->y, r != NULL, r0, &c, &count);
        if (res != NBODY_ERR_UNAVAILABLE) {        /* else: too many bodies for it, the host searches */
            for (k = 0; k < count && res == NBODY_OK; ++k) {
                nbody__pair pr;
                pr.i = c[k].i; pr.j = c[k].j; pr.d = c[k].d; pr.reach = c[k].reach;
                res = nbody__pairs_push(&s->desc, P, pr);
            }
            return res;
        }
    }
    if (!*X && (res = nbody__host_state(s, X)) != NBODY_OK) return res;
    return nbody__find_pairs(&s->desc, s->n, *X, r, r0, P);
}

/* the pair that overlaps most (distance - reach smallest) */
static const nbody__pair *nbody__deepest(const nbody__pairs *P) {
    size_t k, best = 0;
    for (k = 1; k < P->n; ++k)
        if (P->p[k].d - P->p[k].reach < P->p[best].d - P->p[best].reach) best = k;
    return &P->p[best];
}

static nbody_result nbody__resize_to(nbody_sim *sim, const nbody_system *in, size_t n_active);

/* Hard spheres: for each approaching pair, the normal relative velocity u (< 0) becomes
   -e u, momentum conserved: v_i += (1+e) u m_j/M n, v_j -= (1+e) u m_i/M n (a massless body
   takes the whole change; two massless ones share it). Merge: j joins i (i < j, so an
   active body stays active): mass sum, mass-weighted position and velocity, radius from the
   volume sum; bodies after j move down by one. */
static nbody_result nbody__resolve(nbody_sim *s, const nbody_real *X, const nbody__pairs *P) {
    nbody_system sys;
    nbody_real *nr = NULL;
    unsigned char *gone = NULL;
    size_t n = s->n, k, na = s->desc.n_active;
    nbody_result r;
    int merge = s->desc.collision == NBODY_COLLISION_MERGE;
    memset(&sys, 0, sizeof sys);
    if ((r = nbody_system_alloc(&sys, n)) != NBODY_OK) return r;
    memcpy(sys.x, X, n * sizeof(nbody_real)); memcpy(sys.y, X + n, n * sizeof(nbody_real));
    memcpy(sys.z, X + 2 * n, n * sizeof(nbody_real)); memcpy(sys.vx, X + 3 * n, n * sizeof(nbody_real));
    memcpy(sys.vy, X + 4 * n, n * sizeof(nbody_real)); memcpy(sys.vz, X + 5 * n, n * sizeof(nbody_real));
    memcpy(sys.m, s->m, n * sizeof(nbody_real));
    sys.t = s->t;
    if (merge) {
        nr = (nbody_real *)nbody__alloc(&s->desc, nbody__bytes(n, sizeof(nbody_real)));
        gone = (unsigned char *)nbody__alloc(&s->desc, n);
        if (!nr || !gone) { r = NBODY_ERR_OUT_OF_MEMORY; goto done; }
        memcpy(nr, s->steer.radii, n * sizeof(nbody_real));
        memset(gone, 0, n);
    }
    for (k = 0; k < P->n; ++k) {
        size_t i = P->p[k].i, j = P->p[k].j;
        nbody_real mi = sys.m[i], mj = sys.m[j], M = mi + mj;
        nbody_real wi = M > 0 ? mi / M : (nbody_real)0.5, wj = M > 0 ? mj / M : (nbody_real)0.5;
        if (merge) {
            if (gone[i] || gone[j]) continue;
            sys.x[i] = wi * sys.x[i] + wj * sys.x[j]; sys.y[i] = wi * sys.y[i] + wj * sys.y[j];
            sys.z[i] = wi * sys.z[i] + wj * sys.z[j];
            sys.vx[i] = wi * sys.vx[i] + wj * sys.vx[j]; sys.vy[i] = wi * sys.vy[i] + wj * sys.vy[j];
            sys.vz[i] = wi * sys.vz[i] + wj * sys.vz[j];
            sys.m[i] = M;
            nr[i] = NBODY__POW(nr[i] * nr[i] * nr[i] + nr[j] * nr[j] * nr[j], (nbody_real)1 / 3);
            gone[j] = 1;
            s->steer.event.merges++;
        } else {
            nbody_real dx = sys.x[j] - sys.x[i], dy = sys.y[j] - sys.y[i], dz = sys.z[j] - sys.z[i];
            nbody_real dist = NBODY__SQRT(dx * dx + dy * dy + dz * dz), u, c;
            if (!(dist > 0)) continue;
            dx /= dist; dy /= dist; dz /= dist;
            u = (sys.vx[j] - sys.vx[i]) * dx + (sys.vy[j] - sys.vy[i]) * dy + (sys.vz[j] - sys.vz[i]) * dz;
            if (u >= 0) continue;                          /* separating already */
            c = (1 + s->desc.restitution) * u;
            sys.vx[i] += c * wj * dx; sys.vy[i] += c * wj * dy; sys.vz[i] += c * wj * dz;
            sys.vx[j] -= c * wi * dx; sys.vy[j] -= c * wi * dy; sys.vz[j] -= c * wi * dz;
            s->steer.event.bounces++;
        }
    }
    if (merge) {
        size_t w = 0, na_new = na;
        nbody_real **f[7];
        int c;
        nbody__fields(&sys, f);
        for (k = 0; k < n; ++k) {
            if (gone[k]) { if (k < na) --na_new; continue; }
            for (c = 0; c < 7; ++c) (*f[c])[w] = (*f[c])[k];
            nr[w++] = nr[k];
        }
        sys.n = w;
        r = nbody__resize_to(s, &sys, na_new);
        if (r == NBODY_OK) r = nbody__set_radii(s, nr);
        sys.n = n;                                         /* for nbody_system_free */
    } else {
        r = nbody__set_state(s, &sys);
    }
done:
    nbody__free(&s->desc, nr);
    nbody__free(&s->desc, gone);
    nbody_system_free(&sys);
    return r;
}

static nbody_result nbody__archive_due(nbody_sim *s);

/* after an accepted step: collisions, exit conditions, the after-step hook, the archive */
static nbody_result nbody__after_step(nbody_sim *s) {
    int collide = s->desc.collision != NBODY_COLLISION_NONE && s->steer.radii;
    nbody_result r = NBODY_OK;
    if (collide || s->desc.stop_distance > 0 || s->desc.escape_distance > 0) {
        nbody_real *X = NULL;          /* the host state, fetched when needed */
        nbody__pairs P;
        memset(&P, 0, sizeof P);
        if (collide) {
            r = nbody__contacts(s, &X, s->steer.radii, 0, &P);
            if (r == NBODY_OK && P.n) {
                if (s->desc.collision == NBODY_COLLISION_STOP) {
                    const nbody__pair *q = nbody__deepest(&P);
                    r = nbody__stop(s, NBODY_EVENT_COLLISION, q->i, q->j, q->d);
                } else {
                    if (!X) r = nbody__host_state(s, &X);
                    if (r == NBODY_OK) r = nbody__resolve(s, X, &P);
                    X = NULL;                                          /* n or the state changed */
                }
            }
            nbody__free(&s->desc, P.p);
            memset(&P, 0, sizeof P);
            if (r != NBODY_OK) return r;
        }
        if (s->desc.escape_distance > 0) {
            nbody_real e2 = s->desc.escape_distance * s->desc.escape_distance;
            size_t i, n = s->n;
            if (!X && (r = nbody__host_state(s, &X)) != NBODY_OK) return r;
            for (i = 0; i < n; ++i) {
                nbody_real d2 = X[i] * X[i] + X[n + i] * X[n + i] + X[2 * n + i] * X[2 * n + i];
                if (d2 > e2) return nbody__stop(s, NBODY_EVENT_ESCAPE, i, 0, NBODY__SQRT(d2));
            }
        }
        if (s->desc.stop_distance > 0) {
            r = nbody__contacts(s, &X, NULL, s->desc.stop_distance / 2, &P);
            if (r == NBODY_OK && P.n) {
                const nbody__pair *q = nbody__deepest(&P);
                r = nbody__stop(s, NBODY_EVENT_CLOSE_ENCOUNTER, q->i, q->j, q->d);
            }
            nbody__free(&s->desc, P.p);
            if (r != NBODY_OK) return r;
        }
    }
    if (s->desc.after_step && nbody__hook(s, s->desc.after_step)) return nbody__stop(s, NBODY_EVENT_HOOK, 0, 0, 0);
    if (s->steer.archive) r = nbody__archive_due(s);
    return r;
}

/* nbody_set_state with another n: a new simulation from the same desc takes over the
   object; the step size, the statistics, the method scalars and the steering state stay */
static nbody_result nbody__resize_to(nbody_sim *sim, const nbody_system *in, size_t n_active) {
    nbody_desc d = sim->desc;
    nbody_sim *ns, tmp;
    nbody_result r;
    d.n_active = n_active >= in->n ? 0 : n_active;
    if ((r = nbody_create(&ns, &d, in)) != NBODY_OK) return r;
    ns->stats = sim->stats;
    ns->stats.t = in->t;
    ns->dt_next = sim->dt_next;
    nbody__state_copy_scalars(ns, sim);
    ns->steer = sim->steer;                        /* event, archive, hook flag */
    ns->progress = sim->progress;                  /* a running nbody_advance keeps reporting */
    ns->steer.radii = NULL; ns->steer.host = NULL; /* n changed: radii back to 0 */
    sim->steer.archive = NULL;
    tmp = *sim; *sim = *ns; *ns = tmp;
    sim->busy = tmp.busy;                          /* the call running on sim holds it */
    sim->hook_thread = tmp.hook_thread;            /* and a hook may be running it */
    ns->busy = NBODY__IDLE;
    ns->hook_thread = NULL;
    nbody_destroy(ns);                             /* the old buffers, engine and radii */
    return NBODY_OK;
}

static nbody_result nbody__resize(nbody_sim *sim, const nbody_system *in) {
    return nbody__resize_to(sim, in, sim->desc.n_active);
}

static nbody_result nbody__set_radii(nbody_sim *sim, const nbody_real *r) {
    size_t i;
    if (!sim) return NBODY_ERR_INVALID_ARGUMENT;
    if (!r) {
        nbody__free(&sim->desc, sim->steer.radii); sim->steer.radii = NULL;
        return sim->eng.ops->set_radii ? sim->eng.ops->set_radii(&sim->eng, NULL) : NBODY_OK;
    }
    for (i = 0; i < sim->n; ++i)
        if (!nbody__isfinite(r[i]) || r[i] < 0)
            return nbody__fail(&sim->desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_set_radii: body %lu: radius %g %s",
                               (unsigned long)i, (double)r[i], nbody__isfinite(r[i]) ? "is negative" : "is not finite");
    if (!sim->steer.radii) {
        sim->steer.radii = (nbody_real *)nbody__alloc(&sim->desc, nbody__bytes(sim->n, sizeof(nbody_real)));
        if (!sim->steer.radii) return NBODY_ERR_OUT_OF_MEMORY;
    }
    memcpy(sim->steer.radii, r, sim->n * sizeof(nbody_real));
    if (sim->eng.ops->set_radii) {     /* the engine detects contacts itself: radii to the device */
        nbody_result res = sim->eng.ops->set_radii(&sim->eng, r);
        if (res != NBODY_OK) {         /* host and engine agree again: no radii */
            nbody__free(&sim->desc, sim->steer.radii); sim->steer.radii = NULL;
            (void)sim->eng.ops->set_radii(&sim->eng, NULL);
            return res;
        }
    }
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_set_radii(nbody_sim *sim, const nbody_real *radii) {
    nbody_result res;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_set_radii: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_set_radii", 1)) < 0) return NBODY_ERR_BUSY;
    res = nbody__archive_flush(sim);                 /* a due record holds the radii before */
    if (res == NBODY_OK) res = nbody__set_radii(sim, radii);
    nbody__leave(sim, e);
    return res;
}

static nbody_result nbody__get_radii(const nbody_sim *sim, nbody_real *r) {
    if (!r) return nbody__fail(&sim->desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_get_radii: r is NULL");
    if (sim->steer.radii) memcpy(r, sim->steer.radii, sim->n * sizeof(nbody_real));
    else memset(r, 0, sim->n * sizeof(nbody_real));
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_get_radii(const nbody_sim *sim, nbody_real *radii) {
    nbody_result res;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_get_radii: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_get_radii", 1)) < 0) return NBODY_ERR_BUSY;
    res = nbody__get_radii(sim, radii);
    nbody__leave(sim, e);
    return res;
}

NBODY__DEF size_t nbody_get_n(const nbody_sim *sim) { return sim ? sim->n : 0; }
NBODY__DEF size_t nbody_get_n_active(const nbody_sim *sim) {
    return !sim ? 0 : sim->desc.n_active ? sim->desc.n_active : sim->n;
}

NBODY__DEF nbody_result nbody_get_event(const nbody_sim *sim, nbody_event *out) {
    if (!sim || !out) return nbody__fail(sim ? &sim->desc : NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_get_event: %s is NULL",
                                         !sim ? "sim" : "out");
    *out = sim->steer.event;
    return NBODY_OK;
}

/* ======================================================================================
   >>diagnostics  DIAGNOSTICS
   ====================================================================================== */

typedef struct nbody__kahan { nbody_real sum, c; } nbody__kahan;
static void nbody__kahan_add(nbody__kahan *k, nbody_real v) { k->sum = nbody__compensated_add(k->sum, v, &k->c); }

NBODY__DEF nbody_result nbody_measure(const nbody_system *s, nbody_real G, nbody_real softening, nbody_invariants *out) {
    nbody__kahan mass = {0, 0}, kin = {0, 0}, pot = {0, 0}, p[3], l[3], c[3];
    nbody_real *rows;
    long long i, n;
    int d;
    if (!out) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_measure: out is NULL");
    if (!nbody__isfinite(G) || G < 0 || !nbody__isfinite(softening) || softening < 0)
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_measure: %s = %g must be finite and >= 0",
                           nbody__isfinite(G) && G >= 0 ? "softening" : "G", (double)(nbody__isfinite(G) && G >= 0 ? softening : G));
    if (nbody__system_refused("nbody_measure", s)) return NBODY_ERR_INVALID_ARGUMENT;
    if (G == 0) G = 1;
    n = (long long)s->n;
    rows = (nbody_real *)NBODY_MALLOC(nbody__bytes(s->n, sizeof(nbody_real)));
    if (!rows) return nbody__fail(NULL, NBODY_ERR_OUT_OF_MEMORY, "nbody: nbody_measure: out of memory for %lu rows", (unsigned long)s->n);
    memset(p, 0, sizeof p); memset(l, 0, sizeof l); memset(c, 0, sizeof c);
    /* potential: each row i sums j > i with its own Kahan sum, rows then added in order, so the
       result does not depend on the thread count */
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 32) if (n > 512))
    for (i = 0; i < n; ++i) {
        nbody__kahan row = {0, 0};
        long long j;
        for (j = i + 1; j < n; ++j) {
            nbody_real dx = s->x[j] - s->x[i], dy = s->y[j] - s->y[i], dz = s->z[j] - s->z[i];
            nbody__kahan_add(&row, s->m[j] / NBODY__SQRT(nbody__soft_r2(dx, dy, dz, softening * softening)));
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
   >>ic  INITIAL CONDITIONS: splitmix64 (Steele, Lea & Flood 2014), integer-only, and arithmetic
   that rounds the same everywhere (below), so a seed gives the same bodies on every platform
   and compiler (docs/determinism.md).
   ====================================================================================== */

/* ---- the initial conditions' arithmetic: the same bits everywhere -----------------------
   Every value the generators compute is built from + - * / and sqrt, which IEEE 754 rounds
   correctly on every platform this library targets (FLT_EVAL_METHOD 0: x86-64 SSE2, ARM64,
   wasm32), in the order written; never from the C library's transcendental functions, whose
   last bits differ between C libraries. Two things could still change a bit: a compiler
   fusing a product with the addition after it (FMA contraction: clang's default, gcc's GNU
   modes, on every ARM64 and any x86 built with -mfma), and excess precision (x87, not a
   target). A product that feeds an addition is therefore rounded on its own through
   nbody__mul_rounded, a volatile store that no compiler may fuse away (C99 5.1.2.3), whatever
   -ffp-contract says; products of products and quotients need nothing. frexp and ldexp are
   exact (they move the exponent), so they give the same bits from any C library. The
   generators run once per body, far from any hot loop, so the stores cost nothing measurable. */
static double nbody__mul_rounded(double a, double b) {
    volatile double p = a * b;
    return p;
}
/* c + z p: one step of Horner's rule, the product rounded first */
static double nbody__horner(double p, double z, double c) { return c + nbody__mul_rounded(z, p); }

/* sin and cos of x, |x| <= 2^20 (the generators' angles are in [0, 2 pi]), as fdlibm computes
   them (Sun Microsystems, 1993): x = k pi/2 + (r + rt) by Cody and Waite's reduction with pi/2
   in parts of 33 bits (k times each is exact) and their rounded tails, a second and third part
   taken only when the first leaves a cancellation (__ieee754_rem_pio2's medium case); then the
   minimax polynomials of __kernel_sin and __kernel_cos on |r| <= pi/4 with the tail rt.
   tests/test_determinism.c measures the largest error against a double-double reference. */
static double nbody__sin_kernel(double r, double rt) {
    const double z = r * r, v = z * r;
    double p = 1.58969099521155010221e-10;
    p = nbody__horner(p, z, -2.50507602534068634195e-08);
    p = nbody__horner(p, z, 2.75573137070700676789e-06);
    p = nbody__horner(p, z, -1.98412698298579493134e-04);
    p = nbody__horner(p, z, 8.33333333332248946124e-03);
    return r - ((nbody__mul_rounded(z, 0.5 * rt - nbody__mul_rounded(v, p)) - rt) -
                nbody__mul_rounded(v, -1.66666666666666324348e-01));
}
static double nbody__cos_kernel(double r, double rt) {
    const double z = r * r, hz = 0.5 * z, w = 1.0 - hz;
    double p = -1.13596475577881948265e-11;
    p = nbody__horner(p, z, 2.08757232129817482790e-09);
    p = nbody__horner(p, z, -2.75573143513906633035e-07);
    p = nbody__horner(p, z, 2.48015872894767294178e-05);
    p = nbody__horner(p, z, -1.38888888888741095749e-03);
    p = nbody__horner(p, z, 4.16666666666666019037e-02);
    /* 1 - z/2 to more than double, then the rest and the tail */
    return w + (((1.0 - w) - hz) + (nbody__mul_rounded(z, z * p) - nbody__mul_rounded(r, rt)));
}
/* the exponent of x (frexp's) */
static int nbody__exponent(double x) { int e; frexp(x, &e); return e; }
/* r - k part with its rounding error: r <- r - k part, returns the tail w (r + w is the
   reduced value so far, minus the tail the next part refines) */
static double nbody__reduce_step(double *r, double k, double part, double tail) {
    const double t = *r, w = k * part;            /* exact */
    *r = t - w;
    return nbody__mul_rounded(k, tail) - ((t - *r) - w);
}
static void nbody__sincos(double x, double *s, double *c) {
    const double t = nbody__mul_rounded(x, 6.36619772367581382433e-01);   /* x 2/pi */
    const double k = (double)(long)(t < 0 ? t - 0.5 : t + 0.5);     /* the nearest integer, by truncation */
    const int ex = nbody__exponent(x);
    double r = x - k * 1.57079632673412561417e+00, w = nbody__mul_rounded(k, 6.07710050650619224932e-11), rh, rt;
    rh = r - w;                                   /* x - k pi/2_1 is exact; then its first tail */
    if (ex - nbody__exponent(rh) > 16) {          /* cancelled: 33 more bits of pi/2 */
        w = nbody__reduce_step(&r, k, 6.07710050630396597660e-11, 2.02226624879595063154e-21);
        rh = r - w;
        if (ex - nbody__exponent(rh) > 49) {      /* and again */
            w = nbody__reduce_step(&r, k, 2.02226624871116645580e-21, 8.47842766036889956997e-32);
            rh = r - w;
        }
    }
    rt = (r - rh) - w;
    {
        const double sr = nbody__sin_kernel(rh, rt), cr = nbody__cos_kernel(rh, rt);
        switch ((long)k & 3) {
        case 0: *s = sr; *c = cr; break;
        case 1: *s = cr; *c = -sr; break;
        case 2: *s = -sr; *c = -cr; break;
        default: *s = -cr; *c = sr; break;
        }
    }
}

/* the cube root of x > 0 (finite): x = f 2^(3e) with f in [1/2, 4) (exact), then Newton's
   y <- (2 y + f / y^2) / 3 from a line through cbrt's ends, the error squaring each time
   (10 %, 1e-2, 1e-4, 1e-8, 1e-16), and a last Newton step written as a correction to y,
   whose own rounding errors are a third of an ulp (tests/test_determinism.c asserts the
   largest error against the C library). */
static double nbody__cbrt(double x) {
    int e, i, shift;
    double f = frexp(x, &e), y;
    shift = ((e % 3) + 3) % 3;                    /* f 2^shift, e - shift a multiple of 3 */
    f = ldexp(f, shift);
    e -= shift;
    y = 0.7 + nbody__mul_rounded(0.23, f);
    for (i = 0; i < 5; ++i) y = (y + y + f / (y * y)) / 3;
    y = y + y * (f / (y * y * y) - 1) / 3;        /* the last step as a small correction: rounds once more, not 4 times */
    return ldexp(y, e / 3);
}

typedef struct nbody__rng { unsigned long long s; } nbody__rng;
static unsigned long long nbody__rng_next(nbody__rng *r) {
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
/* uniform in [0, 1), 53 bits (exact: an integer below 2^53 times a power of 2) */
static double nbody__rng_uniform(nbody__rng *r) { return (double)(nbody__rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static double nbody__rng_range(nbody__rng *r, double a, double b) { return a + nbody__mul_rounded(b - a, nbody__rng_uniform(r)); }

/* a uniformly random direction times radius */
static void nbody__rng_sphere(nbody__rng *r, double radius, double *x, double *y, double *z) {
    double ct = nbody__rng_range(r, -1, 1), phi = nbody__rng_range(r, 0, 6.283185307179586476925);
    double st = sqrt(1 - nbody__mul_rounded(ct, ct)), sp, cp;
    nbody__sincos(phi, &sp, &cp);
    *x = radius * st * cp; *y = radius * st * sp; *z = radius * ct;
}

/* move the centre of mass of bodies [i0, i1) to rest at the origin */
static void nbody__to_com_frame(nbody_system *s, size_t i0, size_t i1) {
    double m = 0, c[6] = {0, 0, 0, 0, 0, 0};
    size_t i;
    for (i = i0; i < i1; ++i) {
        const double mi = (double)s->m[i];
        m += mi;
        c[0] += nbody__mul_rounded(mi, (double)s->x[i]); c[1] += nbody__mul_rounded(mi, (double)s->y[i]);
        c[2] += nbody__mul_rounded(mi, (double)s->z[i]); c[3] += nbody__mul_rounded(mi, (double)s->vx[i]);
        c[4] += nbody__mul_rounded(mi, (double)s->vy[i]); c[5] += nbody__mul_rounded(mi, (double)s->vz[i]);
    }
    if (m <= 0) return;
    for (i = i0; i < i1; ++i) {
        s->x[i] -= (nbody_real)(c[0] / m); s->y[i] -= (nbody_real)(c[1] / m); s->z[i] -= (nbody_real)(c[2] / m);
        s->vx[i] -= (nbody_real)(c[3] / m); s->vy[i] -= (nbody_real)(c[4] / m); s->vz[i] -= (nbody_real)(c[5] / m);
    }
}

static nbody_result nbody__ic_begin(nbody_system *s, size_t n) { return nbody_system_alloc(s, n); }

/* central_fraction (and separation) of the galaxy initial conditions: 1, or 0 and a line */
static int nbody__ic_galaxy_ok(const char *fn, nbody_real central_fraction, nbody_real separation) {
    if (!nbody__isfinite(central_fraction) || central_fraction <= 0 || central_fraction >= 1)
        nbody__log(NULL, NBODY_LOG_ERROR, "nbody: %s: central_fraction = %g must be in (0, 1)", fn, (double)central_fraction);
    else if (!nbody__isfinite(separation) || separation <= 0)
        nbody__log(NULL, NBODY_LOG_ERROR, "nbody: %s: separation = %g must be finite and > 0", fn, (double)separation);
    else
        return 1;
    return 0;
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
        double radius, q, g, v, w, x, y, z;
        do {                       /* 1 / sqrt(u^(-2/3) - 1) = c / sqrt(1 - c^2), c = u^(1/3) */
            double c = nbody__cbrt(nbody__rng_range(&rng, 1e-10, 1));
            radius = c / sqrt(1 - nbody__mul_rounded(c, c));
        } while (!(radius <= 10));
        nbody__rng_sphere(&rng, radius / scale, &x, &y, &z);
        s->x[i] = (nbody_real)x; s->y[i] = (nbody_real)y; s->z[i] = (nbody_real)z;
        do {                       /* von Neumann rejection from q^2 (1 - q^2)^(7/2) */
            q = nbody__rng_uniform(&rng); g = nbody__rng_range(&rng, 0, 0.1);
            w = 1 - nbody__mul_rounded(q, q);
        } while (g > q * q * (w * w * w * sqrt(w)));
        v = q * sqrt(2.0) / sqrt(sqrt(1 + nbody__mul_rounded(radius, radius)));   /* (1 + r^2)^(-1/4) */
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
    double ct, st;
    nbody__sincos(tilt, &st, &ct);
    s->x[i0] = (nbody_real)c[0]; s->y[i0] = (nbody_real)c[1]; s->z[i0] = (nbody_real)c[2];
    s->vx[i0] = (nbody_real)v[0]; s->vy[i0] = (nbody_real)v[1]; s->vz[i0] = (nbody_real)v[2];
    s->m[i0] = (nbody_real)(nstars ? mass * f : mass);
    for (i = i0 + 1; i < i1; ++i) {
        double u = nbody__rng_uniform(rng), rmin2 = nbody__mul_rounded(rmin, rmin);
        double r = sqrt(rmin2 + nbody__mul_rounded(u, nbody__mul_rounded(rmax, rmax) - rmin2));
        double phi = nbody__rng_range(rng, 0, 6.283185307179586476925), h = nbody__rng_range(rng, -0.02, 0.02);
        double enclosed = mass * (f + nbody__mul_rounded(1 - f, u)), speed = sqrt(enclosed / r), sp, cp;
        double px, py, pz = h, wx, wy;
        nbody__sincos(phi, &sp, &cp);
        px = nbody__mul_rounded(r, cp); py = r * sp; wx = -nbody__mul_rounded(speed, sp); wy = speed * cp;
        s->x[i] = (nbody_real)(c[0] + px);
        s->y[i] = (nbody_real)(c[1] + (nbody__mul_rounded(ct, py) - nbody__mul_rounded(st, pz)));
        s->z[i] = (nbody_real)(c[2] + (nbody__mul_rounded(st, py) + nbody__mul_rounded(ct, pz)));
        s->vx[i] = (nbody_real)(v[0] + wx); s->vy[i] = (nbody_real)(v[1] + nbody__mul_rounded(ct, wy));
        s->vz[i] = (nbody_real)(v[2] + nbody__mul_rounded(st, wy));
        s->m[i] = (nbody_real)(mass * (1 - f) / (double)nstars);
    }
}

NBODY__DEF nbody_result nbody_ic_galaxy(nbody_system *s, size_t n, nbody_real central_fraction, unsigned long long seed) {
    static const double zero[3] = {0, 0, 0};
    nbody__rng rng;
    nbody_result r;
    if (!nbody__ic_galaxy_ok("nbody_ic_galaxy", central_fraction, 1)) return NBODY_ERR_INVALID_ARGUMENT;
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
    if (n == 1) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_ic_collision: n = 1; two galaxies need n >= 2");
    if (!nbody__ic_galaxy_ok("nbody_ic_collision", central_fraction, separation)) return NBODY_ERR_INVALID_ARGUMENT;
    if ((r = nbody__ic_begin(s, n)) != NBODY_OK) return r;
    rng.s = seed;
    d = (double)separation; b = d / 4;
    v = sqrt(2.0 * 1.0 / sqrt(nbody__mul_rounded(d, d) + nbody__mul_rounded(b, b))) / 2;       /* each moves at half the parabolic speed */
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

NBODY__DEF nbody_result nbody_ic_outer_solar_system(nbody_system *s) {
    /* barycentric positions (AU) and velocities (AU/day), Applegate et al. 1986 */
    static const double pos[5][3] = {
        {-4.06428567034226e-3, -6.08813756435987e-3, -1.66162304225834e-6},   /* Sun */
        {+3.40546614227466e+0, +3.62978190075864e+0, +3.42386261766577e-2},   /* Jupiter */
        {+6.60801554403466e+0, +6.38084674585064e+0, -1.36145963724542e-1},   /* Saturn */
        {+1.11636331405597e+1, +1.60373479057256e+1, +3.61783279369958e-1},   /* Uranus */
        {-3.01777243405203e+1, +1.91155314998064e+0, -1.53887595621042e-1}};  /* Neptune */
    static const double vel[5][3] = {
        {+6.69048890636161e-6, -6.33922479583593e-6, -3.13202145590767e-9},
        {-5.59797969310664e-3, +5.51815399480116e-3, -2.66711392865591e-6},
        {-4.17354020307064e-3, +3.99723751748116e-3, +1.67206320571441e-5},
        {-3.25884806151064e-3, +2.06438412905916e-3, -2.17699042180559e-5},
        {-2.17471785045538e-4, -3.11361111025884e-3, +3.58344705491441e-5}};
    static const double mass[5] = {1.00000597682, 1. / 1047.355, 1. / 3501.6, 1. / 22869., 1. / 19314.};
    const double k = 0.01720209895;      /* AU/day -> AU per (1/k days) */
    size_t i;
    nbody_result r = nbody__ic_begin(s, 5);
    if (r != NBODY_OK) return r;
    for (i = 0; i < 5; ++i) {
        s->x[i] = (nbody_real)pos[i][0]; s->y[i] = (nbody_real)pos[i][1]; s->z[i] = (nbody_real)pos[i][2];
        s->vx[i] = (nbody_real)(vel[i][0] / k); s->vy[i] = (nbody_real)(vel[i][1] / k); s->vz[i] = (nbody_real)(vel[i][2] / k);
        s->m[i] = (nbody_real)mass[i];
    }
    nbody__to_com_frame(s, 0, 5);
    return NBODY_OK;
}

/* ======================================================================================
   >>orbital  ORBITAL ELEMENTS
   Angles from atan2 of two projections (never acos: no loss near 0 and pi). Kepler's equation
   by Newton steps kept inside a bracket on which it is monotonic.
   ====================================================================================== */

static nbody_real nbody__atan2(nbody_real y, nbody_real x) { return (nbody_real)atan2((double)y, (double)x); }
static nbody_real nbody__sin(nbody_real x) { return sizeof(nbody_real) > sizeof(double) ? (nbody_real)sinl((long double)x) : (nbody_real)sin((double)x); }
static nbody_real nbody__cos(nbody_real x) { return sizeof(nbody_real) > sizeof(double) ? (nbody_real)cosl((long double)x) : (nbody_real)cos((double)x); }

/* eccentric (e < 1) or hyperbolic (e > 1) anomaly of mean anomaly M */
static nbody_real nbody__kepler_anomaly(nbody_real e, nbody_real M) {
    const nbody_real pi = (nbody_real)3.14159265358979323846264338327950288L;
    nbody_real lo, hi, x;
    int it;
    if (e < 1) {
        M = M - 2 * pi * (nbody_real)floor((double)((M + pi) / (2 * pi)));   /* -pi..pi */
        lo = -pi; hi = pi; x = M + (nbody_real)0.85 * e * (M < 0 ? -1 : 1);
    } else {
        lo = M < 0 ? M / (e - 1) : 0; hi = M < 0 ? 0 : M / (e - 1);      /* |e sinh H - H| >= (e - 1) |H| */
        x = (nbody_real)asinh((double)(M / e));
    }
    if (!(x > lo && x < hi)) x = (lo + hi) / 2;
    for (it = 0; it < 200; ++it) {
        nbody_real g = e < 1 ? x - e * nbody__sin(x) - M : e * (nbody_real)sinh((double)x) - x - M;
        nbody_real gp = e < 1 ? 1 - e * nbody__cos(x) : e * (nbody_real)cosh((double)x) - 1, xn;
        if (g == 0) break;
        if (g < 0) lo = x; else hi = x;
        xn = x - g / gp;
        if (!(xn > lo && xn < hi)) xn = lo + (hi - lo) / 2;
        if (xn == x || NBODY__FABS(xn - x) <= nbody__eps() * NBODY__FABS(x) / 2) { x = xn; break; }
        x = xn;
    }
    return x;
}

NBODY__DEF nbody_result nbody_orbit_to_state(nbody_real mu, const nbody_orbit *o, nbody_anomaly anomaly,
                                             nbody_real pos[3], nbody_real vel[3]) {
    nbody_real e, p, f, r, v, cO, sO, ci, si, cu, su, cw, sw, cf, sf, vr, vt;
    if (!o || !pos || !vel) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_to_state: o, pos or vel is NULL");
    if (!nbody__isfinite(mu) || !(mu > 0))
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_to_state: mu = %g must be finite and > 0", (double)mu);
    if ((int)anomaly < 0 || anomaly > NBODY_ANOMALY_MEAN)
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_to_state: anomaly = %d is not an nbody_anomaly", (int)anomaly);
    e = o->e;
    if (!nbody__isfinite(o->a) || !nbody__isfinite(e) || !nbody__isfinite(o->inc) || !nbody__isfinite(o->Omega) ||
        !nbody__isfinite(o->omega) || !nbody__isfinite(anomaly == NBODY_ANOMALY_MEAN ? o->M : o->f))
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_to_state: an element is not finite (a = %g, e = %g, "
                           "inc = %g, Omega = %g, omega = %g, %s = %g)", (double)o->a, (double)e, (double)o->inc, (double)o->Omega,
                           (double)o->omega, anomaly == NBODY_ANOMALY_MEAN ? "M" : "f",
                           (double)(anomaly == NBODY_ANOMALY_MEAN ? o->M : o->f));
    if (!(e >= 0) || e == 1 || (e < 1 && !(o->a > 0)) || (e > 1 && !(o->a < 0)))
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_to_state: e = %g with a = %g: e must be >= 0 and "
                           "not 1 (parabolic), a > 0 for e < 1 and a < 0 for e > 1", (double)e, (double)o->a);
    if (anomaly == NBODY_ANOMALY_MEAN) {
        nbody_real x = nbody__kepler_anomaly(e, o->M);
        f = e < 1 ? 2 * nbody__atan2(NBODY__SQRT(1 + e) * nbody__sin(x / 2), NBODY__SQRT(1 - e) * nbody__cos(x / 2))
                  : 2 * (nbody_real)atan((double)(NBODY__SQRT((e + 1) / (e - 1)) * (nbody_real)tanh((double)(x / 2))));
    } else {
        f = o->f;
    }
    cf = nbody__cos(f); sf = nbody__sin(f);
    if (!(1 + e * cf > 0))                                      /* beyond a hyperbola's asymptotes */
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_to_state: true anomaly %g is beyond the "
                           "asymptotes of a hyperbola of e = %g", (double)f, (double)e);
    p = o->a * (1 - e) * (1 + e);
    r = p / (1 + e * cf);
    v = NBODY__SQRT(mu / p);
    vr = v * e * sf; vt = v * (1 + e * cf);                     /* radial and transverse speeds */
    cO = nbody__cos(o->Omega); sO = nbody__sin(o->Omega); ci = nbody__cos(o->inc); si = nbody__sin(o->inc);
    cw = nbody__cos(o->omega); sw = nbody__sin(o->omega);
    cu = cw * cf - sw * sf; su = sw * cf + cw * sf;             /* u = omega + f */
    {
        nbody_real ux = cO * cu - sO * su * ci, uy = sO * cu + cO * su * ci, uz = su * si;     /* along r */
        nbody_real tx = -cO * su - sO * cu * ci, ty = -sO * su + cO * cu * ci, tz = cu * si;   /* along the motion */
        pos[0] = r * ux; pos[1] = r * uy; pos[2] = r * uz;
        vel[0] = vr * ux + vt * tx; vel[1] = vr * uy + vt * ty; vel[2] = vr * uz + vt * tz;
    }
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_orbit_from_state(nbody_real mu, const nbody_real pos[3], const nbody_real vel[3],
                                               nbody_orbit *out) {
    nbody_real hx, hy, hz, h, nx, ny, nn, r, v2, rv, ex, ey, ez, e, inv, hxy;
    int i;
    if (!pos || !vel || !out) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_from_state: pos, vel or out is NULL");
    if (!nbody__isfinite(mu) || !(mu > 0))
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_from_state: mu = %g must be finite and > 0", (double)mu);
    for (i = 0; i < 3; ++i)
        if (!nbody__isfinite(pos[i]) || !nbody__isfinite(vel[i]))
            return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_from_state: pos[%d] = %g, vel[%d] = %g: not "
                               "finite", i, (double)pos[i], i, (double)vel[i]);
    r = NBODY__SQRT(pos[0] * pos[0] + pos[1] * pos[1] + pos[2] * pos[2]);
    hx = pos[1] * vel[2] - pos[2] * vel[1]; hy = pos[2] * vel[0] - pos[0] * vel[2]; hz = pos[0] * vel[1] - pos[1] * vel[0];
    hxy = NBODY__SQRT(hx * hx + hy * hy);
    h = NBODY__SQRT(hxy * hxy + hz * hz);
    if (!(r > 0) || !(h > 0))                                   /* radial or at the origin */
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_orbit_from_state: %s: no orbital plane",
                           r > 0 ? "radial motion (zero angular momentum)" : "the body is at the origin");
    v2 = vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2];
    rv = pos[0] * vel[0] + pos[1] * vel[1] + pos[2] * vel[2];
    /* e = ((v^2 - mu / r) r - (r.v) v) / mu */
    ex = ((v2 - mu / r) * pos[0] - rv * vel[0]) / mu; ey = ((v2 - mu / r) * pos[1] - rv * vel[1]) / mu;
    ez = ((v2 - mu / r) * pos[2] - rv * vel[2]) / mu;
    e = NBODY__SQRT(ex * ex + ey * ey + ez * ez);
    inv = 2 / r - v2 / mu;
    out->a = inv != 0 ? 1 / inv : (nbody_real)HUGE_VAL;
    out->e = e;
    out->inc = nbody__atan2(hxy, hz);
    nx = -hy; ny = hx; nn = hxy;                                    /* the node line z x h */
    if (nn > 0) {
        out->Omega = nbody__atan2(ny, nx);
        /* omega: from the node to e; f: from e (or the node when e = 0) to r; sines along h */
        out->omega = e > 0 ? nbody__atan2((nx * (ey * hz - ez * hy) + ny * (ez * hx - ex * hz)) / h, (nx * ex + ny * ey))
                           : 0;
    } else {
        out->Omega = 0;
        out->omega = e > 0 ? nbody__atan2(hz > 0 ? ey : -ey, ex) : 0;
        nx = 1; ny = 0;
    }
    if (e > 0) {
        nbody_real cx = ey * pos[2] - ez * pos[1], cy = ez * pos[0] - ex * pos[2], cz = ex * pos[1] - ey * pos[0];
        out->f = nbody__atan2((cx * hx + cy * hy + cz * hz) / h, ex * pos[0] + ey * pos[1] + ez * pos[2]);
    } else {
        nbody_real cx = ny * pos[2], cy = -nx * pos[2], cz = nx * pos[1] - ny * pos[0];
        out->f = nbody__atan2((cx * hx + cy * hy + cz * hz) / h, nx * pos[0] + ny * pos[1]);
    }
    if (e < 1) {
        nbody_real E = nbody__atan2(NBODY__SQRT((1 - e) * (1 + e)) * nbody__sin(out->f), e + nbody__cos(out->f));
        out->M = E - e * nbody__sin(E);
    } else if (e > 1) {
        nbody_real H = (nbody_real)asinh((double)(NBODY__SQRT((e - 1) * (e + 1)) * nbody__sin(out->f) / (1 + e * nbody__cos(out->f))));
        out->M = e * (nbody_real)sinh((double)H) - H;
    } else {
        nbody_real D = (nbody_real)tan((double)(out->f / 2));
        out->a = (nbody_real)HUGE_VAL;
        out->M = D + D * D * D / 3;
    }
    return NBODY_OK;
}

/* mass, position and velocity of body `primary`, or of the centre of mass of bodies [0, upto) */
static int nbody__primary(const nbody_system *s, size_t primary, size_t upto, nbody_real *m, nbody_real c[6]) {
    size_t i, i0 = primary == NBODY_JACOBI ? 0 : primary, i1 = primary == NBODY_JACOBI ? upto : primary + 1;
    int k;
    if (i1 > s->n || i0 >= i1) return 0;
    *m = 0;
    for (k = 0; k < 6; ++k) c[k] = 0;
    for (i = i0; i < i1; ++i) {
        *m += s->m[i];
        c[0] += s->m[i] * s->x[i]; c[1] += s->m[i] * s->y[i]; c[2] += s->m[i] * s->z[i];
        c[3] += s->m[i] * s->vx[i]; c[4] += s->m[i] * s->vy[i]; c[5] += s->m[i] * s->vz[i];
    }
    if (i1 - i0 == 1) {                        /* one body: its own values, exactly */
        c[0] = s->x[i0]; c[1] = s->y[i0]; c[2] = s->z[i0]; c[3] = s->vx[i0]; c[4] = s->vy[i0]; c[5] = s->vz[i0];
        return 1;
    }
    if (!(*m > 0)) return 0;
    for (k = 0; k < 6; ++k) c[k] /= *m;
    return 1;
}

NBODY__DEF nbody_result nbody_add_orbit(nbody_system *s, nbody_real G, nbody_real m, const nbody_orbit *o,
                                        nbody_anomaly anomaly, size_t primary) {
    nbody_system t;
    nbody_real mp, c[6], pos[3], vel[3], **fs[7], **ft[7];
    nbody_result r;
    size_t n;
    int k;
    if (nbody__system_refused("nbody_add_orbit", s)) return NBODY_ERR_INVALID_ARGUMENT;
    if (!nbody__isfinite(G) || !(G > 0) || !nbody__isfinite(m) || m < 0 || !o)
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_add_orbit: %s", !o ? "o is NULL" : "G must be finite and > "
                           "0, m finite and >= 0");
    n = s->n;
    if (!nbody__primary(s, primary, n, &mp, c) || !(mp + m > 0))
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_add_orbit: primary %ld %s", primary == NBODY_JACOBI ? -1L :
                           (long)primary, primary != NBODY_JACOBI && primary >= n ? "is not a body" : "and the new body have no mass");
    if ((r = nbody_orbit_to_state(G * (mp + m), o, anomaly, pos, vel)) != NBODY_OK) return r;
    memset(&t, 0, sizeof t);
    if ((r = nbody_system_alloc(&t, n + 1)) != NBODY_OK) return r;
    nbody__fields(s, fs); nbody__fields(&t, ft);
    for (k = 0; k < 7; ++k) memcpy(*ft[k], *fs[k], n * sizeof(nbody_real));
    t.x[n] = c[0] + pos[0]; t.y[n] = c[1] + pos[1]; t.z[n] = c[2] + pos[2];
    t.vx[n] = c[3] + vel[0]; t.vy[n] = c[4] + vel[1]; t.vz[n] = c[5] + vel[2];
    t.m[n] = m;
    t.t = s->t;
    nbody_system_free(s);
    *s = t;
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_get_orbit(const nbody_system *s, nbody_real G, size_t i, size_t primary, nbody_orbit *out) {
    nbody_real mp, c[6], pos[3], vel[3];
    if (nbody__system_refused("nbody_get_orbit", s)) return NBODY_ERR_INVALID_ARGUMENT;
    if (!nbody__isfinite(G) || !(G > 0) || !out)
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_get_orbit: %s", !out ? "out is NULL" : "G must be finite and > 0");
    if (i >= s->n || i == primary || (primary == NBODY_JACOBI && i == 0) || !nbody__primary(s, primary, i, &mp, c))
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_get_orbit: body %lu about primary %ld: %s",
                           (unsigned long)i, primary == NBODY_JACOBI ? -1L : (long)primary, i >= s->n ? "no such body" :
                           i == primary ? "a body about itself" : "the primary is not a body before it, or has no mass");
    pos[0] = s->x[i] - c[0]; pos[1] = s->y[i] - c[1]; pos[2] = s->z[i] - c[2];
    vel[0] = s->vx[i] - c[3]; vel[1] = s->vy[i] - c[4]; vel[2] = s->vz[i] - c[5];
    return nbody_orbit_from_state(G * (mp + s->m[i]), pos, vel, out);
}

NBODY__DEF nbody_result nbody_move_to_com(nbody_system *s) {
    if (nbody__system_refused("nbody_move_to_com", s)) return NBODY_ERR_INVALID_ARGUMENT;
    nbody__to_com_frame(s, 0, s->n);
    return NBODY_OK;
}

/* ======================================================================================
   >>files  FILES
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

typedef struct nbody__writer { FILE *f; unsigned long long sum; int ok, err, in_place; } nbody__writer;
static void nbody__put(nbody__writer *w, const void *p, size_t len) {
    if (!w->f) return;             /* a rank that does not write */
    if (w->ok && (NBODY_IO_FAULT("write") || fwrite(p, 1, len, w->f) != len)) { w->ok = 0; w->err = errno; }
    w->sum = nbody__fnv1a(w->sum, p, len);
}

/* ---- saving beside: every file the library writes whole (snapshots, CSV, checkpoints) goes
   to "path.tmp" in the same directory, is flushed and synced (nbody__sync_file), closed, and
   renamed over path in one step. On any failure the temporary file is removed and path is
   left as it was: a full disk never costs the previous file. ---- */

/* "path.tmp" in a block from NBODY_MALLOC (NULL: out of memory) */
static char *nbody__tmp_name(const char *path) {
    size_t len = strlen(path);
    char *tmp = (char *)NBODY_MALLOC(len + 5);
    if (tmp) { memcpy(tmp, path, len); memcpy(tmp + len, ".tmp", 5); }
    return tmp;
}

/* an I/O failure on path, with the system's reason */
static nbody_result nbody__io_error(const nbody_desc *log, const char *what, const char *path, int err) {
    return nbody__fail(log, NBODY_ERR_IO, "nbody: %s %s: %s", what, path, err ? strerror(err) : "failed");
}

/* opens the temporary file beside path ("wb" or "w") into w; a path that is a device or a
   pipe is opened itself (nbody__path_kind), a directory or an empty path refused */
static nbody_result nbody__open_beside(const nbody_desc *log, const char *path, const char *tmp, const char *mode,
                                       nbody__writer *w) {
    int kind = path[0] ? nbody__path_kind(path) : 1;
    w->sum = NBODY__FNV_SEED; w->ok = 1; w->err = 0; w->in_place = kind == 2;
    w->f = NULL;
    if (kind == 1)
        return nbody__fail(log, NBODY_ERR_INVALID_ARGUMENT, "nbody: cannot write '%s': %s", path,
                           path[0] ? "it is a directory" : "the path is empty");
    w->f = nbody__fopen(w->in_place ? path : tmp, mode);
    return w->f ? NBODY_OK : nbody__io_error(log, "cannot create", w->in_place ? path : tmp, errno);
}

/* flush, sync, close and rename tmp over path when everything before went well (w->ok and
   r == NBODY_OK); otherwise, or when one of these fails, remove tmp. Returns the result; a
   failure here logs one line: the step, the file, the system's reason, and that path is
   unchanged. */
static nbody_result nbody__finish_beside(const nbody_desc *log, nbody__writer *w, const char *tmp, const char *path,
                                         nbody_result r) {
    const char *failed = w->ok ? NULL : "writing";
    if (w->in_place) {                 /* a device or a pipe: flushed and closed, nothing to rename */
        if (r == NBODY_OK && !failed && fflush(w->f) != 0) { failed = "flushing"; w->err = errno; }
        if (fclose(w->f) != 0 && !failed) { failed = "closing"; w->err = errno; }
        w->f = NULL;
        if (r == NBODY_OK && failed)
            r = nbody__fail(log, NBODY_ERR_IO, "nbody: %s %s: %s", failed, path, w->err ? strerror(w->err) : "failed");
        return r;
    }
    if (r == NBODY_OK && !failed && (NBODY_IO_FAULT("flush") || fflush(w->f) != 0)) { failed = "flushing"; w->err = errno; }
    if (r == NBODY_OK && !failed && (NBODY_IO_FAULT("sync") || !nbody__sync_file(w->f))) { failed = "syncing"; w->err = errno; }
    if ((fclose(w->f) != 0 || NBODY_IO_FAULT("close")) && !failed) { failed = "closing"; w->err = errno; }
    w->f = NULL;
    if (r == NBODY_OK && !failed && (NBODY_IO_FAULT("rename") || nbody__rename(tmp, path) != 0)) {
        failed = "renaming the new file over";
        w->err = errno;
    }
    if (r == NBODY_OK && failed)
        r = nbody__fail(log, NBODY_ERR_IO, "nbody: %s %s: %s; %s is unchanged", failed, failed[0] == 'r' ? path : tmp,
                        w->err ? strerror(w->err) : "failed", path);
    if (r != NBODY_OK) nbody__remove(tmp);
    return r;
}

/* the checks every whole-file writer makes first: path and bodies (one line naming the
   function, the file and the first bad body), then the temporary name beside path */
static nbody_result nbody__writer_start(const char *fn, const char *path, const nbody_system *s, char **tmp) {
    char why[160];
    *tmp = NULL;
    if (!path) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: %s: path is NULL", fn);
    if (nbody__system_fault(s, why, sizeof why))
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: %s %s: %s", fn, path, why);
    if (!(*tmp = nbody__tmp_name(path)))
        return nbody__fail(NULL, NBODY_ERR_OUT_OF_MEMORY, "nbody: %s %s: out of memory for its temporary name", fn, path);
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_save(const char *path, const nbody_system *s) {
    nbody__writer w;
    nbody_real *fields[7];
    unsigned int head[4];
    unsigned long long n64;
    nbody_result r;
    char *tmp;
    int i;
    if ((r = nbody__writer_start("nbody_save", path, s, &tmp)) != NBODY_OK) return r;
    if ((r = nbody__open_beside(NULL, path, tmp, "wb", &w)) != NBODY_OK) { NBODY_FREE(tmp); return r; }
    head[0] = NBODY__SNAP_VERSION; head[1] = 0x01020304u; head[2] = (unsigned int)sizeof(nbody_real); head[3] = 0;
    n64 = (unsigned long long)s->n;
    fields[0] = s->x; fields[1] = s->y; fields[2] = s->z; fields[3] = s->vx; fields[4] = s->vy; fields[5] = s->vz; fields[6] = s->m;
    nbody__put(&w, NBODY__SNAP_MAGIC, 8);
    nbody__put(&w, head, sizeof head);
    nbody__put(&w, &n64, sizeof n64);
    nbody__put(&w, &s->t, sizeof s->t);
    for (i = 0; i < 7; ++i) nbody__put(&w, fields[i], s->n * sizeof(nbody_real));
    n64 = w.sum;
    nbody__put(&w, &n64, sizeof n64);
    r = nbody__finish_beside(NULL, &w, tmp, path, NBODY_OK);
    NBODY_FREE(tmp);
    return r;
}

/* ---- the first bytes the three file kinds share: an 8-byte magic, then u32 version, byte-order
   mark, sizeof(nbody_real) and a fourth word (0; sizeof(int) in checkpoints) ---- */

/* why magic is not `want` (one of the three magics): another kind of file, named with its
   reader, or a foreign one; NULL when it is */
static const char *nbody__magic_fault(const char *magic, const char *want) {
    static const char *const magics[3] = {"NBODYSNP", "NBODYCKP", "NBODYARC"};
    static const char *const kinds[3] = {"a snapshot (read by nbody_load)", "a checkpoint (read by nbody_checkpoint_load)",
                                         "an archive (read by nbody_archive_open)"};
    int k;
    if (memcmp(magic, want, 8) == 0) return NULL;
    for (k = 0; k < 3; ++k)
        if (memcmp(magic, magics[k], 8) == 0) return kinds[k];
    return "not a file of nbody.h (bad magic)";
}

/* why head (version, order mark, real size, fourth word) is not what this build reads;
   NULL when it is */
static const char *nbody__head_fault(const unsigned int head[4], unsigned int version, unsigned int fourth, char *why,
                                     size_t len) {
    if (head[0] != version) snprintf(why, len, "format version %u; this build reads %u", head[0], version);
    else if (head[1] != 0x01020304u) snprintf(why, len, "written on a machine of the other byte order (or damaged)");
    else if (head[2] != sizeof(nbody_real))
        snprintf(why, len, "written with NBODY_REAL of %u bytes; this build reads %u", head[2], (unsigned int)sizeof(nbody_real));
    else if (head[3] != fourth) snprintf(why, len, "damaged header (field %u where %u belongs)", head[3], fourth);
    else return NULL;
    return why;
}

/* ---- reading a snapshot: each refusal is one line "nbody: snapshot PATH: why" ---- */
typedef struct nbody__snap_reader {
    FILE *f;
    const char *path;
    unsigned long long size, sum;      /* file size; checksum of what was read */
} nbody__snap_reader;

static nbody_result nbody__snap_refuse(const nbody__snap_reader *rd, nbody_result r, const char *fmt, ...) {
    char why[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return nbody__fail(NULL, r, "nbody: snapshot %s: %s", rd->path, why);
}

/* len bytes into p, added to the checksum; a short read is an I/O error (the size was checked) */
static nbody_result nbody__snap_read(nbody__snap_reader *rd, void *p, size_t len) {
    if (fread(p, 1, len, rd->f) != len)
        return nbody__snap_refuse(rd, NBODY_ERR_IO, "read failed: %s",
                                  ferror(rd->f) && errno ? strerror(errno) : "the file ended early (changed while read?)");
    rd->sum = nbody__fnv1a(rd->sum, p, len);
    return NBODY_OK;
}

/* the magic, the header and the size against n; *n the number of bodies */
static nbody_result nbody__snap_header(nbody__snap_reader *rd, unsigned long long *n) {
    const unsigned long long least = NBODY__SNAP_HEADER + sizeof(nbody_real) * 8 + 8;   /* one body */
    char magic[8];
    unsigned int head[4];
    const char *fault;
    char why[96];
    nbody_result r;
    double need;
    if (rd->size < 8) return nbody__snap_refuse(rd, NBODY_ERR_FORMAT, "%llu bytes, too short to be a snapshot", rd->size);
    if ((r = nbody__snap_read(rd, magic, 8)) != NBODY_OK) return r;
    if ((fault = nbody__magic_fault(magic, NBODY__SNAP_MAGIC)) != NULL)
        return nbody__snap_refuse(rd, NBODY_ERR_FORMAT, "not a snapshot: %s", fault);
    if (rd->size < NBODY__SNAP_HEADER)
        return nbody__snap_refuse(rd, NBODY_ERR_FORMAT, "truncated: %llu bytes, shorter than its header", rd->size);
    if ((r = nbody__snap_read(rd, head, sizeof head)) != NBODY_OK || (r = nbody__snap_read(rd, n, sizeof *n)) != NBODY_OK)
        return r;
    if ((fault = nbody__head_fault(head, NBODY__SNAP_VERSION, 0, why, sizeof why)) != NULL)
        return nbody__snap_refuse(rd, NBODY_ERR_FORMAT, "%s", fault);
    if (*n == 0) return nbody__snap_refuse(rd, NBODY_ERR_FORMAT, "its header says n = 0 bodies");
    /* the size must match exactly before anything is allocated (in double: n may be huge) */
    need = (double)NBODY__SNAP_HEADER + (double)sizeof(nbody_real) * (1 + 7 * (double)*n) + 8;
    if (rd->size < least || *n > rd->size / (7 * sizeof(nbody_real)) || (double)rd->size != need)
        return nbody__snap_refuse(rd, NBODY_ERR_FORMAT, "%llu bytes, but its header (n = %llu) needs %.0f: %s", rd->size, *n,
                                  need, (double)rd->size < need ? "truncated" : "damaged or with bytes after its end");
    return NBODY_OK;
}

/* the bodies after the header into out (allocated here; left zeroed on failure) */
static nbody_result nbody__snap_bodies(nbody__snap_reader *rd, unsigned long long n, nbody_system *out) {
    nbody_real **fields[7];
    unsigned long long stored, sum;
    nbody_result r;
    char why[160];
    int i;
    if (nbody_system_alloc(out, (size_t)n) != NBODY_OK)
        return nbody__snap_refuse(rd, NBODY_ERR_OUT_OF_MEMORY, "n = %llu bodies do not fit in memory", n);
    nbody__fields(out, fields);
    r = nbody__snap_read(rd, &out->t, sizeof out->t);
    for (i = 0; i < 7 && r == NBODY_OK; ++i) r = nbody__snap_read(rd, *fields[i], out->n * sizeof(nbody_real));
    sum = rd->sum;
    if (r == NBODY_OK && (r = nbody__snap_read(rd, &stored, sizeof stored)) == NBODY_OK && stored != sum)
        r = nbody__snap_refuse(rd, NBODY_ERR_FORMAT, "checksum mismatch over its %llu bytes: the file is damaged", rd->size);
    if (r == NBODY_OK && nbody__system_fault(out, why, sizeof why))    /* a checksum over bad values */
        r = nbody__snap_refuse(rd, NBODY_ERR_FORMAT, "%s", why);
    if (r != NBODY_OK) nbody_system_free(out);
    return r;
}

NBODY__DEF nbody_result nbody_load(const char *path, nbody_system *s) {
    nbody__snap_reader rd;
    nbody_system tmp;
    unsigned long long n = 0;
    nbody__off size;
    nbody_result r;
    if (!path) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_load: path is NULL");
    if (!s) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_load %s: the system to fill is NULL", path);
    rd.path = path; rd.sum = NBODY__FNV_SEED;
    if (!(rd.f = nbody__fopen(path, "rb"))) return nbody__io_error(NULL, "cannot open the snapshot", path, errno);
    if (nbody__fseek(rd.f, 0, SEEK_END) != 0 || (size = nbody__ftell(rd.f)) < 0 || nbody__fseek(rd.f, 0, SEEK_SET) != 0) {
        r = nbody__io_error(NULL, "cannot seek in the snapshot", path, errno);
        fclose(rd.f);
        return r;
    }
    rd.size = (unsigned long long)size;
    memset(&tmp, 0, sizeof tmp);
    r = nbody__snap_header(&rd, &n);
    if (r == NBODY_OK) r = nbody__snap_bodies(&rd, n, &tmp);
    fclose(rd.f);
    if (r == NBODY_OK) *s = tmp;
    return r;
}

NBODY__DEF nbody_result nbody_write_csv(const char *path, const nbody_system *s) {
    nbody__writer w;
    nbody_result r;
    char *tmp;
    size_t i;
    if ((r = nbody__writer_start("nbody_write_csv", path, s, &tmp)) != NBODY_OK) return r;
    if ((r = nbody__open_beside(NULL, path, tmp, "w", &w)) != NBODY_OK) { NBODY_FREE(tmp); return r; }
    if (NBODY_IO_FAULT("write") || fprintf(w.f, "# t = %.17g\ni,x,y,z,vx,vy,vz,m\n", (double)s->t) < 0) w.ok = 0;
    for (i = 0; i < s->n && w.ok; ++i)
        if (NBODY_IO_FAULT("write") ||
            fprintf(w.f, "%lu,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", (unsigned long)i, (double)s->x[i],
                    (double)s->y[i], (double)s->z[i], (double)s->vx[i], (double)s->vy[i], (double)s->vz[i],
                    (double)s->m[i]) < 0)
            w.ok = 0;
    if (!w.ok) w.err = errno;
    r = nbody__finish_beside(NULL, &w, tmp, path, NBODY_OK);
    NBODY_FREE(tmp);
    return r;
}

/* ======================================================================================
   >>checkpoints  CHECKPOINTS
   Layout (native byte order, marked like a snapshot):
     "NBODYCKP" | u32 version | u32 byte-order mark 0x01020304 | u32 sizeof(nbody_real) |
     u32 sizeof(int) | u64 n | int ints[15] | real reals[10] | u64 steps, rejected, force_evals |
     n reals masses | blocks of 6n reals: y, k[0..nk), comp, comp_new (the last two when
     compensated) | the method's state: one record per entry of its field list
     (nbody__*_fields), in the list's order:
         char name[16] (NUL-padded) | u32 kind (0 int, 1 real, 2 buffer, 3 u64, 4 ticks) | u32 count |
         count ints, count reals, count blocks of 6n reals, count u64, or count blocks of n u64
     | u64 FNV-1a 64 checksum of everything before it.
   ints:  engine method order traversal visit_order block_size compensated quadrupole leaf_size
          radau_control whfast_coordinates whfast_corrector stepping (the desc fields that change
          the numbers) | nk f_valid nfields
   reals: G softening dt tolerance dt_min dt_max theta timestep_eta | t dt_next stats.dt
   A load finds each record's field by its name, and refuses a file whose records are not
   exactly the method's fields with their kinds and counts (or hold an int out of its range).
   y_new and ytmp are not saved: every method writes them before reading them in a step.
   ====================================================================================== */

#define NBODY__CKP_MAGIC "NBODYCKP"
#define NBODY__CKP_VERSION 4u         /* 2: leaf_size added to the desc ints; 3: radau_control,
                                         whfast_coordinates, whfast_corrector added, method state by named fields;
                                         4: stepping, timestep_eta, integer fields (kinds 3, 4) */
#define NBODY__CKP_DESC_INTS 13
#define NBODY__CKP_DESC_REALS 8
#define NBODY__CKP_NK NBODY__CKP_DESC_INTS              /* ints after the desc's */
#define NBODY__CKP_F_VALID (NBODY__CKP_DESC_INTS + 1)
#define NBODY__CKP_NFIELDS (NBODY__CKP_DESC_INTS + 2)
#define NBODY__CKP_INTS (NBODY__CKP_DESC_INTS + 3)
#define NBODY__CKP_T NBODY__CKP_DESC_REALS              /* reals after the desc's */
#define NBODY__CKP_DT_NEXT (NBODY__CKP_DESC_REALS + 1)
#define NBODY__CKP_STATS_DT (NBODY__CKP_DESC_REALS + 2)
#define NBODY__CKP_REALS (NBODY__CKP_DESC_REALS + 3)
#define NBODY__CKP_MAX_BUFS (3 + NBODY__MAX_TERMS)
#define NBODY__CKP_NAME 16
#define NBODY__CKP_MAX_FIELDS 64

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
    iv[8] = d->leaf_size; iv[9] = (int)d->radau_control; iv[10] = (int)d->whfast_coordinates;
    iv[11] = d->whfast_corrector; iv[12] = (int)d->stepping;
    rv[0] = d->G; rv[1] = d->softening; rv[2] = d->dt; rv[3] = d->tolerance;
    rv[4] = d->dt_min; rv[5] = d->dt_max; rv[6] = d->theta; rv[7] = d->timestep_eta;
}

/* the simulation's own buffers a checkpoint carries, in file order (the method's follow as
   fields); returns how many */
static int nbody__ckp_buffers(nbody_sim *s, nbody__buf **b) {
    int i, nb = 0;
    b[nb++] = &s->y;
    for (i = 0; i < s->nk; ++i) b[nb++] = &s->k[i];
    if (s->comp) { b[nb++] = &s->comp; b[nb++] = &s->comp_new; }
    return nb;
}

/* a field's record name: its name, NUL-padded */
static void nbody__ckp_field_name(const nbody__field *f, char name[NBODY__CKP_NAME]) {
    size_t len = strlen(f->name);
    memset(name, 0, NBODY__CKP_NAME);
    memcpy(name, f->name, len < NBODY__CKP_NAME - 1 ? len : NBODY__CKP_NAME - 1);
}

static size_t nbody__ckp_scalar_size(const nbody__field *f) {
    return f->kind == NBODY__FIELD_INT ? sizeof(int) : f->kind == NBODY__FIELD_REAL ? sizeof(nbody_real)
         : f->kind == NBODY__FIELD_U64 ? sizeof(unsigned long long) : 0;
}

/* file size for a header, 0 when it cannot be (overflow or counts that are not the method's) */
static unsigned long long nbody__ckp_size(const nbody__ckp_head *h) {
    const unsigned long long fixed = 8 + sizeof h->head + 8 + sizeof h->ints + sizeof h->reals + sizeof h->counts + 8;
    unsigned long long nbuf, per, records = 0, nticks = 0;
    int nk = h->ints[NBODY__CKP_NK], comp = h->ints[6], method = h->ints[1], i;
    const nbody__method_info *m;
    if (method < 0 || method >= NBODY_METHOD_COUNT_ || comp < 0 || comp > 1) return 0;
    if (h->ints[12] < 0 || h->ints[12] >= NBODY_STEPPING_COUNT_) return 0;
    m = nbody__method_row((nbody_method)method, (nbody_stepping)h->ints[12]);
    if (nk != m->nk || h->ints[NBODY__CKP_NFIELDS] != m->nfields || m->nfields > NBODY__CKP_MAX_FIELDS) return 0;
    nbuf = 1 + (unsigned long long)nk + 2 * (unsigned long long)comp;
    for (i = 0; i < m->nfields; ++i) {
        const nbody__field *f = &m->fields[i];
        records += NBODY__CKP_NAME + 8 + (unsigned long long)f->count * nbody__ckp_scalar_size(f);
        if (f->kind == NBODY__FIELD_BUF) nbuf += (unsigned long long)f->count;
        if (f->kind == NBODY__FIELD_TICKS) nticks += (unsigned long long)f->count;
    }
    per = (1 + 6 * nbuf) * sizeof(nbody_real) + nticks * 8;   /* bytes per body */
    if (h->n == 0 || h->n > (0xFFFFFFFFFFFFFFFFULL - fixed - records) / per) return 0;
    return fixed + records + h->n * per;
}

/* one record of the method's state; host: 6n reals of scratch */
static nbody_result nbody__ckp_put_field(nbody__writer *w, nbody_sim *s, const nbody__field *f, nbody_real *host) {
    char name[NBODY__CKP_NAME];
    unsigned int kc[2];
    nbody_result r = NBODY_OK;
    int j;
    nbody__ckp_field_name(f, name);
    kc[0] = (unsigned int)f->kind; kc[1] = (unsigned int)f->count;
    nbody__put(w, name, sizeof name);
    nbody__put(w, kc, sizeof kc);
    if (f->kind == NBODY__FIELD_TICKS) {
        for (j = 0; j < f->count; ++j) nbody__put(w, ((unsigned long long **)nbody__field_at(s, f))[j], s->n * sizeof(unsigned long long));
        return NBODY_OK;
    }
    if (f->kind != NBODY__FIELD_BUF) {
        nbody__put(w, nbody__field_at(s, f), (size_t)f->count * nbody__ckp_scalar_size(f));
        return NBODY_OK;
    }
    for (j = 0; j < f->count && r == NBODY_OK; ++j) {
        r = s->eng.ops->download(&s->eng, host, ((nbody__buf *)nbody__field_at(s, f))[j], 0, s->len);
        if (r == NBODY_OK) nbody__put(w, host, s->len * sizeof(nbody_real));
    }
    return r;
}

static nbody_result nbody__checkpoint_save(const nbody_sim *sim, const char *path) {
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
    h.ints[NBODY__CKP_NK] = s->nk; h.ints[NBODY__CKP_F_VALID] = s->f_valid;
    h.ints[NBODY__CKP_NFIELDS] = s->method->nfields;
    h.reals[NBODY__CKP_T] = s->t; h.reals[NBODY__CKP_DT_NEXT] = s->dt_next; h.reals[NBODY__CKP_STATS_DT] = s->stats.dt;
    h.counts[0] = s->stats.steps; h.counts[1] = s->stats.rejected; h.counts[2] = s->stats.force_evals;
    /* with several ranks every rank gathers each buffer (collective), rank 0 writes */
    w.f = NULL; w.sum = NBODY__FNV_SEED; w.ok = 1; w.err = 0; w.in_place = 0;
    if (nbody__engine_writer(&s->eng)) r = nbody__open_beside(&s->desc, path, tmp, "wb", &w);
    r = nbody__engine_agree(&s->eng, r);
    if (r != NBODY_OK) {
        if (w.f) { fclose(w.f); nbody__remove(tmp); }
        nbody__free(&s->desc, host);
        return r;
    }
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
    for (i = 0; i < s->method->nfields && r == NBODY_OK; ++i) r = nbody__ckp_put_field(&w, s, &s->method->fields[i], host);
    if (w.f) {
        unsigned long long sum = w.sum;
        nbody__put(&w, &sum, sizeof sum);
        r = nbody__finish_beside(&s->desc, &w, tmp, path, r);
    }
    nbody__free(&s->desc, host);
    return nbody__engine_agree(&s->eng, r);
}

NBODY__DEF nbody_result nbody_checkpoint_save(const nbody_sim *sim, const char *path) {
    nbody_result r;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_checkpoint_save: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_checkpoint_save", 1)) < 0) return NBODY_ERR_BUSY;
    r = nbody__checkpoint_save(sim, path);
    nbody__leave(sim, e);
    return r;
}

/* read len bytes, 0 when the file is short */
static int nbody__ckp_get(FILE *f, void *p, size_t len) { return fread(p, 1, len, f) == len; }

/* pass 1: the checksum over the whole file, before anything in it is trusted */
static nbody_result nbody__ckp_verify(const nbody_desc *d, FILE *f, unsigned long long size) {
    unsigned char chunk[4096];
    unsigned long long sum = NBODY__FNV_SEED, left, stored;
    if (size < 16) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint: %llu bytes, too short to be one", size);
        return NBODY_ERR_FORMAT;
    }
    for (left = size - 8; left > 0;) {
        size_t len = left < sizeof chunk ? (size_t)left : sizeof chunk;
        if (!nbody__ckp_get(f, chunk, len)) {
            nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint: truncated at byte %llu of %llu", size - 8 - left, size);
            return NBODY_ERR_FORMAT;
        }
        sum = nbody__fnv1a(sum, chunk, len);
        left -= len;
    }
    if (!nbody__ckp_get(f, &stored, sizeof stored) || stored != sum) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint: checksum mismatch over its %llu bytes: the file is damaged", size);
        return NBODY_ERR_FORMAT;
    }
    return NBODY_OK;
}

/* the header's layout facts against this build's: NBODY_OK, or FORMAT and a line saying which */
static nbody_result nbody__ckp_head_fits(const nbody_desc *d, const char *magic, const nbody__ckp_head *h,
                                         unsigned long long size) {
    const char *fault = nbody__magic_fault(magic, NBODY__CKP_MAGIC);
    char why[96];
    if (fault)
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint: not a checkpoint: %s", fault);
    else if (h->head[3] != sizeof(int) && h->head[0] == NBODY__CKP_VERSION && h->head[1] == 0x01020304u)
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint: written with int of %u bytes; this build has %u", h->head[3],
                   (unsigned)sizeof(int));
    else if ((fault = nbody__head_fault(h->head, NBODY__CKP_VERSION, (unsigned int)sizeof(int), why, sizeof why)) != NULL)
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint: %s", fault);
    else if (nbody__ckp_size(h) != size)
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint: %llu bytes, its header (n = %llu) says %llu", size, h->n,
                   nbody__ckp_size(h));
    else
        return NBODY_OK;
    return NBODY_ERR_FORMAT;
}

/* pass 2: header, the desc check, bodies; *sys allocated here (freed by the caller) */
/* names the desc field (in nbody__ckp_desc's order) that differs from the checkpoint's:
   "nbody: checkpoint field NAME: written with A, the desc has B" (engine, method by name) */
static void nbody__ckp_log_mismatch(const nbody_desc *d, int i, int real, double saved, double asked) {
    static const char *const ints[NBODY__CKP_DESC_INTS] = {"engine", "method", "order", "traversal", "visit_order",
                                                           "block_size", "compensated", "quadrupole", "leaf_size",
                                                           "radau_control", "whfast_coordinates", "whfast_corrector",
                                                           "stepping"};
    static const char *const reals[NBODY__CKP_DESC_REALS] = {"G", "softening", "dt", "tolerance", "dt_min", "dt_max", "theta",
                                                             "timestep_eta"};
    if (!real && i == 0)
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint field engine: written with %s, the desc has %s",
                   nbody_engine_name((nbody_engine)(int)saved), nbody_engine_name((nbody_engine)(int)asked));
    else if (!real && i == 1)
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint field method: written with %s, the desc has %s",
                   nbody_method_name((nbody_method)(int)saved), nbody_method_name((nbody_method)(int)asked));
    else
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint field %s: written with %.17g, the desc has %.17g",
                   real ? reals[i] : ints[i], saved, asked);
}

static nbody_result nbody__ckp_read_head(FILE *f, unsigned long long size, const nbody_desc *d,
                                         nbody__ckp_head *h, nbody_system *sys) {
    char magic[8];
    int iv[NBODY__CKP_DESC_INTS], i;
    nbody_real rv[NBODY__CKP_DESC_REALS], *fields[7];
    nbody_result r;
    if (!nbody__ckp_get(f, magic, 8) || !nbody__ckp_get(f, h->head, sizeof h->head) ||
        !nbody__ckp_get(f, &h->n, sizeof h->n) || !nbody__ckp_get(f, h->ints, sizeof h->ints) ||
        !nbody__ckp_get(f, h->reals, sizeof h->reals) || !nbody__ckp_get(f, h->counts, sizeof h->counts)) {
        nbody__log(d, NBODY_LOG_ERROR, "nbody: checkpoint: %llu bytes, shorter than its header", size);
        return NBODY_ERR_FORMAT;
    }
    if (nbody__ckp_head_fits(d, magic, h, size) != NBODY_OK) return NBODY_ERR_FORMAT;
    for (i = 0; i < NBODY__CKP_REALS; ++i) if (!nbody__isfinite(h->reals[i])) return NBODY_ERR_FORMAT;
    if (!(h->reals[NBODY__CKP_DT_NEXT] > 0) || h->ints[NBODY__CKP_F_VALID] < 0 || h->ints[NBODY__CKP_F_VALID] > 1)
        return NBODY_ERR_FORMAT;
    nbody__ckp_desc(d, iv, rv);
    for (i = 0; i < NBODY__CKP_DESC_INTS; ++i)
        if (iv[i] != h->ints[i]) {
            nbody__ckp_log_mismatch(d, i, 0, (double)h->ints[i], (double)iv[i]);
            return NBODY_ERR_INVALID_ARGUMENT;
        }
    for (i = 0; i < NBODY__CKP_DESC_REALS; ++i)
        if (rv[i] != h->reals[i]) {
            nbody__ckp_log_mismatch(d, i, 1, (double)h->reals[i], (double)rv[i]);
            return NBODY_ERR_INVALID_ARGUMENT;
        }
    if ((r = nbody_system_alloc(sys, (size_t)h->n)) != NBODY_OK) return r;
    fields[0] = sys->m; fields[1] = sys->x; fields[2] = sys->y; fields[3] = sys->z;
    fields[4] = sys->vx; fields[5] = sys->vy; fields[6] = sys->vz;
    for (i = 0; i < 7; ++i) if (!nbody__ckp_get(f, fields[i], sys->n * sizeof(nbody_real))) return NBODY_ERR_FORMAT;
    sys->t = h->reals[NBODY__CKP_T];
    return nbody__system_valid(sys) ? NBODY_OK : NBODY_ERR_FORMAT;
}

/* v[0 .. n) holds each of 0 .. n-1 once; scratch: at least n / 8 + 1 bytes */
static int nbody__is_permutation(const unsigned long long *v, size_t n, void *scratch, size_t bytes) {
    unsigned char *seen = (unsigned char *)scratch;
    size_t i;
    if (bytes < n / 8 + 1) return 0;
    memset(seen, 0, n / 8 + 1);
    for (i = 0; i < n; ++i) {
        if (v[i] >= n || (seen[v[i] / 8] >> (v[i] % 8) & 1)) return 0;
        seen[v[i] / 8] |= (unsigned char)(1u << (v[i] % 8));
    }
    return 1;
}

/* one record of the method's state, into the field its name gives (seen: the fields read so
   far); host: 6n reals of scratch */
static nbody_result nbody__ckp_get_field(FILE *f, nbody_sim *s, unsigned char *seen, nbody_real *host) {
    char name[NBODY__CKP_NAME], want[NBODY__CKP_NAME];
    unsigned int kc[2];
    const nbody__field *fd = NULL;
    nbody_result r = NBODY_OK;
    int i, j;
    if (!nbody__ckp_get(f, name, sizeof name) || !nbody__ckp_get(f, kc, sizeof kc)) return NBODY_ERR_FORMAT;
    for (i = 0; i < s->method->nfields && !fd; ++i) {
        nbody__ckp_field_name(&s->method->fields[i], want);
        if (memcmp(name, want, sizeof name) == 0) fd = &s->method->fields[i];
    }
    if (!fd || seen[fd - s->method->fields] || kc[0] != (unsigned int)fd->kind || kc[1] != (unsigned int)fd->count)
        return NBODY_ERR_FORMAT;
    seen[fd - s->method->fields] = 1;
    if (fd->kind == NBODY__FIELD_INT) {
        int *v = (int *)nbody__field_at(s, fd);
        if (!nbody__ckp_get(f, v, (size_t)fd->count * sizeof(int))) return NBODY_ERR_FORMAT;
        for (j = 0; j < fd->count; ++j) if (v[j] < fd->lo || v[j] > fd->hi) return NBODY_ERR_FORMAT;
    } else if (fd->kind == NBODY__FIELD_U64) {
        if (!nbody__ckp_get(f, nbody__field_at(s, fd), (size_t)fd->count * sizeof(unsigned long long))) return NBODY_ERR_FORMAT;
    } else if (fd->kind == NBODY__FIELD_TICKS) {
        unsigned long long **t = (unsigned long long **)nbody__field_at(s, fd);
        size_t i;
        for (j = 0; j < fd->count; ++j)
            if (!nbody__ckp_get(f, t[j], s->n * sizeof(unsigned long long))) return NBODY_ERR_FORMAT;
        for (i = 0; fd->hi > 0 && i < s->n; ++i)       /* the last array's bound (levels) */
            if (t[fd->count - 1][i] > (unsigned long long)fd->hi) return NBODY_ERR_FORMAT;
        if (fd->hi < 0 && !nbody__is_permutation(t[0], s->n, host, s->len * sizeof(nbody_real))) return NBODY_ERR_FORMAT;
    } else if (fd->kind == NBODY__FIELD_REAL) {
        nbody_real *v = (nbody_real *)nbody__field_at(s, fd);
        if (!nbody__ckp_get(f, v, (size_t)fd->count * sizeof(nbody_real))) return NBODY_ERR_FORMAT;
        for (j = 0; j < fd->count; ++j) if (!nbody__isfinite(v[j])) return NBODY_ERR_FORMAT;
    } else {
        nbody__buf *b = (nbody__buf *)nbody__field_at(s, fd);
        for (j = 0; j < fd->count && r == NBODY_OK; ++j) {
            r = nbody__ckp_get(f, host, s->len * sizeof(nbody_real)) ? NBODY_OK : NBODY_ERR_FORMAT;
            if (r == NBODY_OK) r = s->eng.ops->upload(&s->eng, b[j], 0, host, s->len);
        }
    }
    return r;
}

/* pass 2 continued: a simulation from the bodies, then every other buffer and scalar */
static nbody_result nbody__ckp_restore(FILE *f, const nbody_desc *desc, const nbody__ckp_head *h,
                                       const nbody_system *sys, nbody_sim **out) {
    nbody__buf *bufs[NBODY__CKP_MAX_BUFS];
    nbody_sim *s;
    nbody_real *host;
    int i, nb;
    unsigned char seen[NBODY__CKP_MAX_FIELDS];
    nbody_result r = nbody_create(&s, desc, sys);
    if (r != NBODY_OK) return r;
    if (s->nk != h->ints[NBODY__CKP_NK] || s->method->nfields != h->ints[NBODY__CKP_NFIELDS]) {
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
    memset(seen, 0, sizeof seen);
    for (i = 0; i < s->method->nfields && r == NBODY_OK; ++i) r = nbody__ckp_get_field(f, s, seen, host);
    nbody__free(&s->desc, host);
    r = nbody__engine_agree(&s->eng, r);
    if (r != NBODY_OK) { nbody_destroy(s); return r; }
    s->f_valid = h->ints[NBODY__CKP_F_VALID];
    s->t = h->reals[NBODY__CKP_T];
    s->dt_next = h->reals[NBODY__CKP_DT_NEXT];
    s->stats.dt = h->reals[NBODY__CKP_STATS_DT];
    s->stats.t = s->t;
    s->stats.steps = h->counts[0]; s->stats.rejected = h->counts[1]; s->stats.force_evals = h->counts[2];
    *out = s;
    return NBODY_OK;
}

/* a checkpoint of size bytes at offset base of f (a whole file, or a snapshot archive's record) */
static nbody_result nbody__ckp_load_at(nbody_sim **out, const nbody_desc *desc, FILE *f, nbody__off base, unsigned long long size) {
    nbody__ckp_head h;
    nbody_system sys;
    nbody_desc d = nbody__desc_defaults(desc);
    nbody_result r;
    memset(&sys, 0, sizeof sys);
    r = nbody__fseek(f, base, SEEK_SET) == 0 ? nbody__ckp_verify(&d, f, size) : NBODY_ERR_IO;
    if (r == NBODY_OK) r = nbody__fseek(f, base, SEEK_SET) == 0 ? NBODY_OK : NBODY_ERR_IO;
    if (r == NBODY_OK) r = nbody__ckp_read_head(f, size, &d, &h, &sys);
    r = nbody__mpi_verdict(desc, r);     /* with desc.mpi_comm: every rank read it, or all fail */
    if (r == NBODY_OK) r = nbody__ckp_restore(f, desc, &h, &sys, out);
    nbody_system_free(&sys);
    return r;
}

NBODY__DEF nbody_result nbody_checkpoint_load(nbody_sim **out, const nbody_desc *desc, const char *path) {
    nbody__off end = 0;
    FILE *f;
    nbody_result r;
    if (!out || !desc || !path)
        return nbody__fail(desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_checkpoint_load: %s is NULL", !out ? "out" : !desc ?
                           "desc" : "path");
    if (!nbody__desc_valid(desc)) return NBODY_ERR_INVALID_ARGUMENT;
    /* with desc.mpi_comm every rank reads the file (any number of ranks may have written it) */
    f = nbody__fopen(path, "rb");
    r = f ? NBODY_OK : nbody__io_error(desc, "cannot open the checkpoint", path, errno);
    if (f && (nbody__fseek(f, 0, SEEK_END) != 0 || (end = nbody__ftell(f)) < 0)) r = nbody__io_error(desc, "cannot seek in", path, errno);
    if (r == NBODY_OK) r = nbody__ckp_load_at(out, desc, f, 0, (unsigned long long)end);
    else r = nbody__mpi_verdict(desc, r);   /* the other ranks wait in nbody__ckp_load_at's verdict */
    if (f) fclose(f);
    return r;
}

/* ======================================================================================
   >>archive  SNAPSHOT ARCHIVE
   Layout (native byte order): "NBODYARC" | u32 version | u32 byte-order mark 0x01020304 |
   u32 sizeof(nbody_real) | u32 0, then records, appended one after another:
     "NBODYREC" | real t | u64 n | u64 n_active (0 = all) | u64 has_radii |
     n reals radii (when has_radii) | u64 checkpoint bytes | u64 FNV-1a 64 of the record
     from t through the checkpoint length | the checkpoint (nbody_checkpoint_save's format,
     with its own checksum, verified when the record is loaded).
   nbody_archive_open indexes the records; at a torn or corrupt one (an append cut short by a
   crash, a damaged byte) it counts a damaged stretch (nbody_archive_damaged) and goes on from
   the next record magic whose header checksum verifies, so intact records before and after
   it stay usable. A failed append is cut back where the platform can (nbody__truncate).
   ====================================================================================== */

#define NBODY__ARC_MAGIC "NBODYARC"
#define NBODY__REC_MAGIC "NBODYREC"
#define NBODY__ARC_VERSION 1u

struct nbody_archive {
    char *path;
    size_t count, cap;
    size_t damaged;                /* stretches skipped while indexing (nbody_archive_damaged) */
    nbody__off *offset;            /* of each record's t */
    nbody_real *t;
};

/* copy len bytes from src to the writer, through a small chunk: stdio buffers the files
   anyway, and a stack of 64 KiB (wasm-ld's default, a game's worker thread) must hold it */
static int nbody__arc_copy(nbody__writer *w, FILE *src, unsigned long long len) {
    unsigned char chunk[4096];
    while (len > 0) {
        size_t k = len < sizeof chunk ? (size_t)len : sizeof chunk;
        if (fread(chunk, 1, k, src) != k) return 0;
        nbody__put(w, chunk, k);
        len -= k;
    }
    return w->ok;
}

/* the archive's header at the start of an empty file */
static void nbody__arc_put_head(nbody__writer *w) {
    unsigned int head[4];
    head[0] = NBODY__ARC_VERSION; head[1] = 0x01020304u; head[2] = (unsigned int)sizeof(nbody_real); head[3] = 0;
    nbody__put(w, NBODY__ARC_MAGIC, 8);
    nbody__put(w, head, sizeof head);
}

/* Opens path for appending (created with its header when absent or empty): the writer at the
   end and, in *good, the length of the archive before this append (the length to cut back to
   when the append fails). */
static nbody_result nbody__arc_head(const nbody_desc *log, FILE *f, const char *path, unsigned long long size);
static nbody_result nbody__arc_open_append(const nbody_desc *log, const char *path, nbody__writer *w, nbody__off *good) {
    w->sum = NBODY__FNV_SEED; w->ok = 1; w->err = 0;
    if (!(w->f = nbody__fopen(path, "ab"))) return nbody__io_error(log, "cannot open the archive", path, errno);
    if (nbody__fseek(w->f, 0, SEEK_END) != 0 || (*good = nbody__ftell(w->f)) < 0) {
        nbody__io_error(log, "cannot seek in the archive", path, errno);
        fclose(w->f);
        w->f = NULL;
        return NBODY_ERR_IO;
    }
    if (*good == 0) {
        nbody__arc_put_head(w);
    } else {       /* an existing file must be an archive of this build: a record appended to
                      anything else (a snapshot, a checkpoint) would spoil that file */
        FILE *f = nbody__fopen(path, "rb");
        nbody_result r = f ? nbody__arc_head(log, f, path, (unsigned long long)*good)
                           : nbody__io_error(log, "cannot read the archive", path, errno);
        if (f) fclose(f);
        if (r != NBODY_OK) { fclose(w->f); w->f = NULL; return r; }
    }
    return NBODY_OK;
}

/* ends an append: flushed and synced, or on failure cut back to good bytes (nbody__truncate,
   where the platform has it; elsewhere the torn record stays and nbody_archive_open skips it) */
static nbody_result nbody__arc_close_append(const nbody_desc *log, nbody__writer *w, const char *path, nbody__off good,
                                            nbody_result r) {
    const char *failed = w->ok ? NULL : "writing to";
    if (r == NBODY_OK && !failed && (NBODY_IO_FAULT("flush") || fflush(w->f) != 0)) { failed = "flushing"; w->err = errno; }
    if (r == NBODY_OK && !failed && (NBODY_IO_FAULT("sync") || !nbody__sync_file(w->f))) { failed = "syncing"; w->err = errno; }
    if (r == NBODY_OK && failed) r = nbody__io_error(log, failed, path, w->err);
    if (r != NBODY_OK) {
        int cut = (fflush(w->f), nbody__truncate(w->f, good));
        nbody__log(log, NBODY_LOG_ERROR, "nbody: archive %s: the record was not written; %s", path,
                   cut ? "the archive is back to its previous records" :
                         "a torn record is left at its end (skipped when the archive is read)");
    }
    if (fclose(w->f) != 0 && r == NBODY_OK) r = nbody__io_error(log, "closing", path, errno);
    w->f = NULL;
    return r;
}

static nbody_result nbody__archive_append(const nbody_sim *sim, const char *path) {
    nbody_sim *s = (nbody_sim *)sim;
    nbody__writer w;
    unsigned long long u[3], len;
    size_t plen;
    char *tmp;
    FILE *ck;
    nbody__off end = 0, good = 0;
    nbody_result r;
    if (!sim || !path) return NBODY_ERR_INVALID_ARGUMENT;
    plen = strlen(path);
    if (!(tmp = (char *)nbody__alloc(&s->desc, plen + 9))) return NBODY_ERR_OUT_OF_MEMORY;
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".rec.tmp", 9);
    r = nbody__checkpoint_save(sim, tmp);            /* the record's restart data */
    ck = r == NBODY_OK ? nbody__fopen(tmp, "rb") : NULL;
    if (r == NBODY_OK && (!ck || nbody__fseek(ck, 0, SEEK_END) != 0 || (end = nbody__ftell(ck)) < 0 || nbody__fseek(ck, 0, SEEK_SET) != 0))
        r = nbody__io_error(&s->desc, "cannot read back", tmp, errno);
    if (r == NBODY_OK) r = nbody__arc_open_append(&s->desc, path, &w, &good);
    if (r == NBODY_OK) {
        nbody__put(&w, NBODY__REC_MAGIC, 8);
        w.sum = NBODY__FNV_SEED;
        nbody__put(&w, &s->t, sizeof s->t);
        u[0] = (unsigned long long)s->n; u[1] = (unsigned long long)s->desc.n_active; u[2] = s->steer.radii != NULL;
        nbody__put(&w, u, sizeof u);
        if (s->steer.radii) nbody__put(&w, s->steer.radii, s->n * sizeof(nbody_real));
        len = (unsigned long long)end;
        nbody__put(&w, &len, sizeof len);
        len = w.sum;
        nbody__put(&w, &len, sizeof len);
        if (w.ok && !nbody__arc_copy(&w, ck, (unsigned long long)end)) w.ok = 0;
        r = nbody__arc_close_append(&s->desc, &w, path, good, NBODY_OK);
    }
    if (ck) fclose(ck);
    nbody__remove(tmp);
    nbody__free(&s->desc, tmp);
    return r;
}

NBODY__DEF nbody_result nbody_archive_append(const nbody_sim *sim, const char *path) {
    nbody_result r;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_archive_append: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_archive_append", 1)) < 0) return NBODY_ERR_BUSY;
    r = nbody__archive_append(sim, path);
    nbody__leave(sim, e);
    return r;
}

/* After an accepted step: is a record due? It is written before anything next changes the
   simulation (nbody__archive_flush: the next step, nbody_set_state, nbody_set_radii, a new
   attach or detach, nbody_destroy), so a failed write is reported by a call that has changed
   nothing yet and can be retried. */
static nbody_result nbody__archive_due(nbody_sim *s) {
    nbody__archiver *a = s->steer.archive;
    double now = a->every_wall > 0 ? nbody__wall_seconds() : 0;   /* monotonic: no jump with the calendar clock */
    int due = (a->every_t > 0 && s->t >= a->next_t) || (a->every_steps > 0 && s->stats.steps - a->last_step >= a->every_steps) ||
              (a->every_wall > 0 && now - a->last_wall >= a->every_wall);
    if (!due) return NBODY_OK;
    a->pending = 1;
    a->last_step = s->stats.steps;
    a->last_wall = now;
    if (a->every_t > 0) {
        a->next_t = a->every_t * (nbody_real)(floor((double)(s->t / a->every_t)) + 1);
        while (a->next_t <= s->t) a->next_t += a->every_t;
    }
    return NBODY_OK;
}

/* writes the record that is due, if any (nothing of the simulation changes) */
static nbody_result nbody__archive_flush(nbody_sim *s) {
    nbody_result r;
    if (!s->steer.archive || !s->steer.archive->pending) return NBODY_OK;
    r = nbody__archive_append(s, s->steer.archive->path);
    if (r == NBODY_OK) s->steer.archive->pending = 0;
    return r;
}

static nbody_result nbody__archive_attach(nbody_sim *sim, const char *path, nbody_real every_t,
                                             unsigned long long every_steps, double every_wall) {
    nbody__archiver *a;
    nbody__writer w;
    nbody_result r;
    nbody__off good = 0;
    size_t plen;
    if (!sim) return NBODY_ERR_INVALID_ARGUMENT;
    if (path && (!nbody__isfinite(every_t) || every_t < 0 || !(every_wall >= 0) || every_wall > 1e300 ||
                 (every_t == 0 && every_steps == 0 && every_wall == 0))) {
        nbody__log(&sim->desc, NBODY_LOG_ERROR, "nbody: nbody_archive_attach: every_t = %g, every_steps = %llu, every_wall = "
                   "%g: each must be finite and >= 0, and one of them > 0", (double)every_t, every_steps, every_wall);
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    if ((r = nbody__archive_flush(sim)) != NBODY_OK) return r;   /* the old archive's due record */
    /* the path is tried now (created with its header when absent), not at the first record */
    if (path && (r = nbody__arc_open_append(&sim->desc, path, &w, &good)) != NBODY_OK) return r;
    if (path && (r = nbody__arc_close_append(&sim->desc, &w, path, good, NBODY_OK)) != NBODY_OK) return r;
    if (sim->steer.archive) {
        nbody__free(&sim->desc, sim->steer.archive->path);
        nbody__free(&sim->desc, sim->steer.archive);
        sim->steer.archive = NULL;
    }
    if (!path) return NBODY_OK;
    plen = strlen(path);
    a = (nbody__archiver *)nbody__alloc(&sim->desc, sizeof *a);
    if (!a) return NBODY_ERR_OUT_OF_MEMORY;
    memset(a, 0, sizeof *a);
    if (!(a->path = (char *)nbody__alloc(&sim->desc, plen + 1))) { nbody__free(&sim->desc, a); return NBODY_ERR_OUT_OF_MEMORY; }
    memcpy(a->path, path, plen + 1);
    a->every_t = every_t; a->every_steps = every_steps; a->every_wall = every_wall;
    a->last_step = sim->stats.steps;
    a->last_wall = nbody__wall_seconds();
    if (every_t > 0) {
        a->next_t = every_t * (nbody_real)(floor((double)(sim->t / every_t)) + 1);
        while (a->next_t <= sim->t) a->next_t += every_t;
    }
    sim->steer.archive = a;
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_archive_attach(nbody_sim *sim, const char *path, nbody_real every_t,
                                             unsigned long long every_steps, double every_wall) {
    nbody_result r;
    long e;
    if (!sim) return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_archive_attach: sim is NULL");
    if ((e = nbody__enter(sim, "nbody_archive_attach", 1)) < 0) return NBODY_ERR_BUSY;
    r = nbody__archive_attach(sim, path, every_t, every_steps, every_wall);
    nbody__leave(sim, e);
    return r;
}

NBODY__DEF void nbody_archive_close(nbody_archive *a) {
    if (!a) return;
    NBODY_FREE(a->path); NBODY_FREE(a->offset); NBODY_FREE(a->t); NBODY_FREE(a);
}

static int nbody__arc_push(nbody_archive *a, nbody__off off, nbody_real t) {
    if (a->count == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        nbody__off *no;
        nbody_real *nt;
        if (cap > (size_t)-1 / (sizeof(nbody__off) + sizeof(nbody_real))) return 0;   /* the sizes below fit */
        no = (nbody__off *)NBODY_MALLOC(cap * sizeof(nbody__off));
        nt = (nbody_real *)NBODY_MALLOC(cap * sizeof(nbody_real));
        if (!no || !nt) { NBODY_FREE(no); NBODY_FREE(nt); return 0; }
        if (a->count) { memcpy(no, a->offset, a->count * sizeof *no); memcpy(nt, a->t, a->count * sizeof *nt); }
        NBODY_FREE(a->offset); NBODY_FREE(a->t);
        a->offset = no; a->t = nt; a->cap = cap;
    }
    a->offset[a->count] = off; a->t[a->count] = t;
    a->count++;
    return 1;
}

/* read one record's head from its t on; *ckp_at, *ckp_len locate its checkpoint; radii
   (n values) read into r when r is not NULL. 0 when torn or corrupt. */
static int nbody__arc_record(FILE *f, unsigned long long size, nbody_real *t, unsigned long long *u,
                             nbody_real *r, nbody__off *ckp_at, unsigned long long *ckp_len) {
    unsigned long long sum = NBODY__FNV_SEED, len, stored, k;
    nbody__off at;
    if (!nbody__ckp_get(f, t, sizeof *t) || !nbody__ckp_get(f, u, 3 * sizeof *u)) return 0;
    sum = nbody__fnv1a(sum, t, sizeof *t);
    sum = nbody__fnv1a(sum, u, 3 * sizeof *u);
    if (!nbody__isfinite(*t) || u[0] == 0 || u[1] > u[0] || u[2] > 1 || u[0] > size / sizeof(nbody_real)) return 0;
    for (k = 0; u[2] && k < u[0]; ++k) {
        nbody_real v;
        if (!nbody__ckp_get(f, &v, sizeof v)) return 0;
        sum = nbody__fnv1a(sum, &v, sizeof v);
        if (r) r[k] = v;
    }
    if (!nbody__ckp_get(f, &len, sizeof len)) return 0;
    sum = nbody__fnv1a(sum, &len, sizeof len);
    if (!nbody__ckp_get(f, &stored, sizeof stored) || stored != sum) return 0;
    if ((at = nbody__ftell(f)) < 0 || (unsigned long long)at > size || len > size - (unsigned long long)at) return 0;
    *ckp_at = at; *ckp_len = len;
    return 1;
}

/* the offset of the next record magic at or after from (before end), or -1 */
static nbody__off nbody__arc_find(FILE *f, nbody__off from, nbody__off end) {
    char buf[4096];
    nbody__off at = from;
    size_t got, i;
    while (at + 8 <= end && nbody__fseek(f, at, SEEK_SET) == 0) {
        size_t want = (size_t)(end - at < (nbody__off)sizeof buf ? end - at : (nbody__off)sizeof buf);
        if ((got = fread(buf, 1, want, f)) < 8) return -1;
        for (i = 0; i + 8 <= got; ++i)
            if (memcmp(buf + i, NBODY__REC_MAGIC, 8) == 0) return at + (nbody__off)i;
        at += (nbody__off)(got - 7);          /* a magic across the chunk's end is seen next time */
    }
    return -1;
}

/* the archive's own header (magic, version, order, real size): NBODY_OK, or a line saying why */
static nbody_result nbody__arc_head(const nbody_desc *log, FILE *f, const char *path, unsigned long long size) {
    char magic[8], why[96];
    unsigned int head[4];
    const char *fault;
    if (size < 8 + sizeof head)
        return nbody__fail(log, NBODY_ERR_FORMAT, "nbody: archive %s: %llu bytes, shorter than an archive's header", path, size);
    if (!nbody__ckp_get(f, magic, 8) || !nbody__ckp_get(f, head, sizeof head))
        return nbody__io_error(log, "cannot read the archive", path, errno);
    if ((fault = nbody__magic_fault(magic, NBODY__ARC_MAGIC)) != NULL)
        return nbody__fail(log, NBODY_ERR_FORMAT, "nbody: archive %s: not an archive: %s", path, fault);
    if ((fault = nbody__head_fault(head, NBODY__ARC_VERSION, 0, why, sizeof why)) != NULL)
        return nbody__fail(log, NBODY_ERR_FORMAT, "nbody: archive %s: %s", path, fault);
    return NBODY_OK;
}

NBODY__DEF nbody_result nbody_archive_open(nbody_archive **out, const char *path) {
    nbody_archive *a;
    unsigned long long size, u[3], clen;
    char magic[8];
    nbody__off end, at, pos;
    nbody_real t;
    FILE *f;
    nbody_result r = NBODY_OK;
    if (!out || !path)
        return nbody__fail(NULL, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_archive_open: %s is NULL", !out ? "out" : "path");
    if (!(f = nbody__fopen(path, "rb"))) return nbody__io_error(NULL, "cannot open the archive", path, errno);
    if (nbody__fseek(f, 0, SEEK_END) != 0 || (end = nbody__ftell(f)) < 0 || nbody__fseek(f, 0, SEEK_SET) != 0) {
        r = nbody__io_error(NULL, "cannot seek in the archive", path, errno);
        fclose(f);
        return r;
    }
    size = (unsigned long long)end;
    if ((r = nbody__arc_head(NULL, f, path, size)) != NBODY_OK) { fclose(f); return r; }
    a = (nbody_archive *)NBODY_MALLOC(sizeof *a);
    if (!a) { fclose(f); return nbody__fail(NULL, NBODY_ERR_OUT_OF_MEMORY, "nbody: archive %s: out of memory", path); }
    memset(a, 0, sizeof *a);
    if (!(a->path = (char *)NBODY_MALLOC(strlen(path) + 1))) r = NBODY_ERR_OUT_OF_MEMORY;
    else memcpy(a->path, path, strlen(path) + 1);
    /* each record in turn; at a damaged one (bad magic or header, torn), count it and go on
       from the next record magic whose header checks out */
    for (pos = 8 + 4 * 4; r == NBODY_OK && pos < end;) {
        nbody__off rec = pos + 8;
        if (nbody__fseek(f, pos, SEEK_SET) == 0 && nbody__ckp_get(f, magic, 8) && memcmp(magic, NBODY__REC_MAGIC, 8) == 0 &&
            nbody__arc_record(f, size, &t, u, NULL, &at, &clen)) {
            if (!nbody__arc_push(a, rec, t)) r = NBODY_ERR_OUT_OF_MEMORY;
            pos = at + (nbody__off)clen;
            continue;
        }
        a->damaged++;
        pos = nbody__arc_find(f, pos + 1, end);
        while (pos >= 0 && !(nbody__fseek(f, pos + 8, SEEK_SET) == 0 && nbody__arc_record(f, size, &t, u, NULL, &at, &clen)))
            pos = nbody__arc_find(f, pos + 1, end);
        if (pos < 0) break;
    }
    fclose(f);
    if (r != NBODY_OK) {
        nbody_archive_close(a);
        return nbody__fail(NULL, r, "nbody: archive %s: out of memory for its index", path);
    }
    *out = a;
    return NBODY_OK;
}

NBODY__DEF size_t nbody_archive_count(const nbody_archive *a) { return a ? a->count : 0; }
NBODY__DEF size_t nbody_archive_damaged(const nbody_archive *a) { return a ? a->damaged : 0; }

NBODY__DEF nbody_real nbody_archive_time(const nbody_archive *a, size_t i) {
    nbody_real zero = 0;
    if (!a || i >= a->count) return zero / zero;
    return a->t[i];
}

NBODY__DEF nbody_result nbody_archive_load(const nbody_archive *a, size_t i, const nbody_desc *desc, nbody_sim **out) {
    unsigned long long size, u[3], clen;
    nbody_real t, *radii = NULL;
    nbody_desc d;
    nbody__off end, at;
    FILE *f;
    nbody_result r;
    if (!a || !desc || !out)
        return nbody__fail(desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: nbody_archive_load: %s is NULL", !a ? "the archive" : !desc ? "desc" : "out");
    if (i >= a->count)
        return nbody__fail(desc, NBODY_ERR_INVALID_ARGUMENT, "nbody: archive %s: record %lu is out of range (%lu records)", a->path,
                           (unsigned long)i, (unsigned long)a->count);
    if (!nbody__desc_valid(desc)) return NBODY_ERR_INVALID_ARGUMENT;
    if (!(f = nbody__fopen(a->path, "rb"))) return nbody__io_error(desc, "cannot open the archive", a->path, errno);
    if (nbody__fseek(f, 0, SEEK_END) != 0 || (end = nbody__ftell(f)) < 0 || nbody__fseek(f, a->offset[i], SEEK_SET) != 0) {
        r = nbody__io_error(desc, "cannot seek in the archive", a->path, errno);
        fclose(f);
        return r;
    }
    size = (unsigned long long)end;
    r = NBODY_OK;
    if (!nbody__arc_record(f, size, &t, u, NULL, &at, &clen)) {
        r = nbody__fail(desc, NBODY_ERR_FORMAT, "nbody: archive %s: record %lu is damaged or cut short (changed since it was "
                        "opened?)", a->path, (unsigned long)i);
    } else if (u[2]) {                              /* read again, now into memory */
        radii = (nbody_real *)NBODY_MALLOC(nbody__bytes((size_t)u[0], sizeof(nbody_real)));
        if (!radii) r = nbody__fail(desc, NBODY_ERR_OUT_OF_MEMORY, "nbody: archive %s: out of memory for the radii", a->path);
        else if (nbody__fseek(f, a->offset[i], SEEK_SET) != 0 || !nbody__arc_record(f, size, &t, u, radii, &at, &clen))
            r = nbody__fail(desc, NBODY_ERR_FORMAT, "nbody: archive %s: record %lu changed while it was read", a->path,
                            (unsigned long)i);
    }
    if (r == NBODY_OK) {
        d = *desc;
        d.n_active = (size_t)u[1];                  /* as it was then (merges change it) */
        r = nbody__ckp_load_at(out, &d, f, at, clen);
        if (r == NBODY_OK && radii && (r = nbody_set_radii(*out, radii)) != NBODY_OK) nbody_destroy(*out);
    }
    NBODY_FREE(radii);
    fclose(f);
    return r;
}

/* ======================================================================================
   >>interop  CUDA-OpenGL INTEROP (viewer)
   ====================================================================================== */

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

#if defined(_MSC_VER)
#pragma warning(pop)               /* pushed in >>portability */
#endif
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
