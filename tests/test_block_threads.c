/* BLOCK called from several of the program's own threads at once (not OpenMP threads): every
   evaluation the same bits as one thread's, whoever runs it. In MinGW-w64 builds with GCC's
   OpenMP the symmetric schedule runs on the library's worker set (NBODY__SYM_POOL,
   docs/platforms.md) and a call made while another thread's evaluation holds the set runs an
   OpenMP region instead: checked as it happens (two threads evaluating over and over, the set's
   job count saying how many calls it took) and with the set held by the test (no job handed to
   it, the region's bits). Then, where tests/block_dll.c was built as a DLL next to this program
   (make test-windows), the set's threads end when the library is unloaded with FreeLibrary and
   a second load works. */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#if defined(_WIN32)
#include <windows.h>
#define THREADS_HERE 1
#elif (defined(__unix__) || defined(__APPLE__)) && !defined(__EMSCRIPTEN__)
#include <pthread.h>
#define THREADS_HERE 1
#else
#define THREADS_HERE 0
#endif

#define N 3000      /* above NBODY__BLOCK_PARALLEL_N: two threads share each evaluation */
#define CALLERS 2
#define ROUNDS 12

/* BLOCK's accelerations with `threads` threads (laid out x[n], y[n], z[n]); NULL on failure */
CHECK_UNUSED static nbody_real *accel(const nbody_system *s, int threads) {
    nbody_desc d;
    nbody_real *a = (nbody_real *)malloc(3 * s->n * sizeof *a);
    memset(&d, 0, sizeof d);
    d.engine = NBODY_ENGINE_BLOCK; d.threads = threads; d.softening = (nbody_real)0.01;
    if (a && nbody_accelerations(&d, s, a, a + s->n, a + 2 * s->n) != NBODY_OK) { free(a); a = NULL; }
    return a;
}
CHECK_UNUSED static int same(const nbody_real *a, const nbody_real *b, size_t n) { return a && b && memcmp(a, b, 3 * n * sizeof *a) == 0; }

/* the worker set's job count (how many evaluations it has run); 0 where there is none */
CHECK_UNUSED static long long set_jobs(void) {
#if NBODY__SYM_POOL
    return nbody__count_load(&nbody__pool.job);
#else
    return 0;
#endif
}

typedef struct caller {
    const nbody_system *s;
    const nbody_real *ref;
    volatile long long *go;
    int differ, failed;
} caller;

/* ROUNDS evaluations on two threads each, compared with the one-thread reference */
CHECK_UNUSED static void caller_run(caller *c) {
    int r;
    nbody__count_add(c->go, 1);
    while (nbody__count_load(c->go) < CALLERS) {}   /* start together */
    for (r = 0; r < ROUNDS; ++r) {
        nbody_real *a = accel(c->s, 2);
        if (!a) ++c->failed;
        else if (!same(a, c->ref, c->s->n)) ++c->differ;
        free(a);
    }
}

#if THREADS_HERE
#if defined(_WIN32)
typedef HANDLE thread_id;
static DWORD WINAPI caller_main(void *arg) { caller_run((caller *)arg); return 0; }
static int thread_start(thread_id *t, caller *c) { return (*t = CreateThread(NULL, 0, caller_main, c, 0, NULL)) != NULL; }
static void thread_join(thread_id t) { WaitForSingleObject(t, INFINITE); CloseHandle(t); }
#else
typedef pthread_t thread_id;
static void *caller_main(void *arg) { caller_run((caller *)arg); return NULL; }
static int thread_start(thread_id *t, caller *c) { return pthread_create(t, NULL, caller_main, c) == 0; }
static void thread_join(thread_id t) { pthread_join(t, NULL); }
#endif

/* CALLERS threads of the program's own, each evaluating its own bodies ROUNDS times at once */
static void concurrent_callers(void) {
    nbody_system s[CALLERS];
    nbody_real *ref[CALLERS];
    caller c[CALLERS];
    thread_id t[CALLERS];
    volatile long long go = 0;
    long long jobs;
    int k, started = 1, up[CALLERS];
    memset(s, 0, sizeof s);
    for (k = 0; k < CALLERS; ++k) {
        CHECK(nbody_ic_plummer(&s[k], N, 11u + (unsigned)k) == NBODY_OK, "bodies %d", k);
        ref[k] = accel(&s[k], 1);
        c[k].s = &s[k]; c[k].ref = ref[k]; c[k].go = &go; c[k].differ = c[k].failed = 0;
    }
    CHECK(ref[0] && ref[1], "one-thread references");
    jobs = set_jobs();
    for (k = 0; k < CALLERS; ++k) started &= up[k] = thread_start(&t[k], &c[k]);
    CHECK(started, "threads started");
    if (!started) nbody__count_add(&go, CALLERS);   /* the started ones need not wait for the others */
    for (k = 0; k < CALLERS; ++k)
        if (up[k]) thread_join(t[k]);
    if (started) {
        jobs = set_jobs() - jobs;
        for (k = 0; k < CALLERS; ++k)
            CHECK(!c[k].failed && !c[k].differ, "caller %d: %d of %d evaluations failed, %d differ bitwise from one thread's",
                  k, c[k].failed, ROUNDS, c[k].differ);
        /* the set took some calls; the others ran while it was held, as OpenMP regions */
        CHECK(jobs >= 0 && jobs <= CALLERS * ROUNDS, "the worker set ran %lld of %d evaluations", jobs, CALLERS * ROUNDS);
        printf("worker set: %lld of %d evaluations (NBODY__SYM_POOL %d), the others OpenMP regions\n", jobs,
               CALLERS * ROUNDS, NBODY__SYM_POOL);
    }
    for (k = 0; k < CALLERS; ++k) { free(ref[k]); nbody_system_free(&s[k]); }
}
#endif

/* With the worker set held (as by another thread's evaluation in flight), a call runs the
   OpenMP region: no job handed to the set, the same bits; released, the set takes the next */
static void set_held(void) {
#if NBODY__SYM_POOL
    nbody_system s;
    nbody_real *ref, *held, *after;
    long long jobs;
    memset(&s, 0, sizeof s);
    CHECK(nbody_ic_plummer(&s, N, 5) == NBODY_OK, "bodies");
    ref = accel(&s, 1);
    (void)nbody__count_add(&nbody__pool.busy, 1);   /* what nbody__sym_pool_run takes */
    jobs = set_jobs();
    held = accel(&s, 2);
    CHECK(set_jobs() == jobs, "an evaluation while the set is held handed it %lld job(s) (want 0)", set_jobs() - jobs);
    CHECK(same(held, ref, s.n), "the OpenMP region's evaluation differs bitwise from one thread's");
    (void)nbody__count_add(&nbody__pool.busy, -1);
    after = accel(&s, 2);
    CHECK(set_jobs() == jobs + 1, "the set, released, ran %lld job(s) (want 1)", set_jobs() - jobs);
    CHECK(nbody__pool.workers == 1, "workers %d (want 1 for two threads: the caller is the other)", nbody__pool.workers);
    CHECK(same(after, ref, s.n), "the worker set's evaluation differs bitwise from one thread's");
    free(ref); free(held); free(after);
    nbody_system_free(&s);
#else
    /* not a skip: this build has no worker set to test (make test-windows runs these checks) */
    printf("the worker set: not in this build (MinGW-w64 builds with GCC's OpenMP only, NBODY__SYM_POOL)\n");
#endif
}

#if defined(_WIN32)
/* tests/block_dll.c, built as block_dll.dll next to this program (make test-windows) */
typedef int (*dll_eval_fn)(size_t n, unsigned seed, int threads, nbody_real *out);
typedef int (*dll_workers_fn)(void **handles, int max);
static int dll_dir(char *path, size_t size) {   /* this program's directory, with the separator */
    DWORD len = GetModuleFileNameA(NULL, path, (DWORD)size);
    while (len > 0 && path[len - 1] != '\\' && path[len - 1] != '/') --len;
    path[len] = 0;
    return len > 0 && len + 16 < size;
}
/* load, evaluate on two threads (the set's worker created), unload: the worker's thread ends */
static void dll_unload(void) {
    char path[1024];
    nbody_system s;
    nbody_real *ref, *got = NULL;
    int load;
    memset(&s, 0, sizeof s);
    if (!dll_dir(path, sizeof path)) { CHECK(0, "this program's directory"); return; }
    strcat(path, "block_dll.dll");
    if (GetFileAttributesA(path) == INVALID_FILE_ATTRIBUTES) {
        check_skip(NULL, "block_dll.dll is not next to this program (make test-windows builds it)");
        return;
    }
    CHECK(nbody_ic_plummer(&s, N, 7) == NBODY_OK, "bodies");
    ref = accel(&s, 1);
    got = (nbody_real *)malloc(3 * s.n * sizeof *got);
    for (load = 0; load < 2 && got; ++load) {   /* twice: a library loaded again starts its set again */
        HMODULE lib = LoadLibraryA(path);
        dll_eval_fn eval = lib ? (dll_eval_fn)(void (*)(void))GetProcAddress(lib, "block_dll_eval") : NULL;
        dll_workers_fn workers = lib ? (dll_workers_fn)(void (*)(void))GetProcAddress(lib, "block_dll_workers") : NULL;
        void *h[8];
        int nh = 0, k, ended = 1;
        double t0;
        CHECK(lib && eval && workers, "load %d: block_dll.dll and its functions", load);
        if (!(lib && eval && workers)) { if (lib) FreeLibrary(lib); break; }
        CHECK(eval(s.n, 7, 2, got) == 0 && same(got, ref, s.n), "load %d: the DLL's two-thread evaluation differs from one thread's", load);
        nh = workers(h, 8);
        CHECK(nh == 1, "load %d: the DLL's worker set has %d thread(s) (want 1)", load, nh);
        t0 = nbody__wall_seconds();
        CHECK(FreeLibrary(lib), "load %d: FreeLibrary", load);
        t0 = nbody__wall_seconds() - t0;
        for (k = 0; k < nh; ++k) {
            ended &= WaitForSingleObject(h[k], 5000) == WAIT_OBJECT_0;
            CloseHandle(h[k]);
        }
        CHECK(ended, "load %d: the worker set's threads end after FreeLibrary", load);
        printf("load %d: FreeLibrary took %.1f ms\n", load, t0 * 1e3);
    }
    free(ref); free(got);
    nbody_system_free(&s);
}
#endif

int main(void) {
#if THREADS_HERE
    concurrent_callers();
#else
    check_skip(NULL, "several callers at once: no threads here");
#endif
    set_held();
#if defined(_WIN32)
    dll_unload();
#else
    printf("the worker set's end at FreeLibrary: Windows builds only (make test-windows)\n");
#endif
    return check_finish();
}
