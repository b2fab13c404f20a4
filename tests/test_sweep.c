/* The desc sweep: every numeric field of nbody_desc set to each of {0, -1, tiny, huge, NaN,
   Inf, the type's max} (integers: {0, -1, 1, 10^6, the type's min, the type's max}), one
   field at a time, with every CPU engine and every method (the OpenCL engines too where a
   device answers, with three methods: they are slow to start). Each case creates a
   simulation of 8 bodies, takes 3 steps and advances 0.01 further (a progress callback
   cancels after 2000 steps), and must give a defined result: OK with a finite state, or an
   error; a refusal (INVALID_ARGUMENT, UNAVAILABLE) must log an ERROR line. Never a crash,
   a hang, NBODY_ERR_BUSY, or a result outside nbody_result.
   The cases run in forked children (POSIX), one child per (field, value) with an alarm, two
   children at a time; a child that crashes or hangs is run again case by case to name the
   case. Pointer fields (allocator, log, hooks, extra_force, mpi_comm) are not swept: any
   non-NULL value there is a caller's promise. Prints the counts.
   make test runs it twice: as built (double, the OpenCL engines included) and with
   NBODY_REAL=float and SWEEP_CPU_ONLY (the CPU engines: the limits that depend on the
   precision, in seconds; starting OpenCL in each forked group takes minutes, and the OpenCL
   engines in float run in test_opencl_float). */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__unix__) || defined(__APPLE__)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#define HAVE_FORK 1
#else
#define HAVE_FORK 0
#endif

typedef enum kind { K_INT, K_REAL, K_SIZE, K_DOUBLE } kind;
typedef struct field { const char *name; size_t offset, size; kind k; } field;
#define F(member, k) {#member, offsetof(nbody_desc, member), sizeof(((nbody_desc *)0)->member), k}
static const field fields[] = {
    F(engine, K_INT), F(method, K_INT), F(order, K_INT), F(G, K_REAL), F(softening, K_REAL), F(dt, K_REAL),
    F(tolerance, K_REAL), F(dt_min, K_REAL), F(dt_max, K_REAL), F(theta, K_REAL), F(traversal, K_INT),
    F(visit_order, K_INT), F(block_size, K_INT), F(threads, K_INT), F(device, K_INT), F(compensated, K_INT),
    F(quadrupole, K_INT), F(leaf_size, K_INT), F(progress.interval, K_DOUBLE), F(n_active, K_SIZE),
    F(extra_force_velocity_free, K_INT), F(collision, K_INT), F(restitution, K_REAL), F(stop_distance, K_REAL),
    F(escape_distance, K_REAL), F(radau_control, K_INT), F(simd, K_INT), F(devices, K_INT),
    F(whfast_coordinates, K_INT), F(whfast_corrector, K_INT), F(stepping, K_INT), F(timestep_eta, K_REAL)};
#define NFIELDS ((int)(sizeof fields / sizeof fields[0]))
#define NVALUES 7
static const char *value_names[NVALUES] = {"0", "-1", "tiny", "huge", "NaN", "Inf", "max"};

static nbody_real real_value(int v) {
    nbody_real zero = 0;
    switch (v) {
    case 0: return 0;
    case 1: return -1;
    case 2: return sizeof(nbody_real) == sizeof(float) ? (nbody_real)FLT_MIN : (nbody_real)DBL_MIN;
    case 3: return (nbody_real)1e30;
    case 4: return zero / zero;
    case 5: return 1 / zero;
    default: return sizeof(nbody_real) == sizeof(float) ? (nbody_real)FLT_MAX : (nbody_real)DBL_MAX;
    }
}
static long long int_value(int v) {
    static const long long vals[NVALUES] = {0, -1, 1, 1000000, INT_MIN, INT_MAX, INT_MAX};
    return vals[v];
}

/* a desc with field f set to value v; 0 when the value does not exist for the type (NaN and
   Inf of an integer: the same as min and max, counted once) */
static int set_field(nbody_desc *d, int f, int v) {
    char *p = (char *)d + fields[f].offset;
    if (fields[f].k == K_REAL) { nbody_real x = real_value(v); memcpy(p, &x, sizeof x); return 1; }
    if (fields[f].k == K_DOUBLE) { double x = (double)real_value(v); if (v == 6) x = DBL_MAX; memcpy(p, &x, sizeof x); return 1; }
    if (v == 5) return 0;
    if (fields[f].k == K_SIZE) {
        size_t x = v == 1 ? (size_t)-1 : v == 4 ? SIZE_MAX >> 16 : v == 6 ? SIZE_MAX : (size_t)int_value(v);
        memcpy(p, &x, sizeof x);
        return 1;
    }
    {
        int x = (int)int_value(v);
        if (fields[f].size != sizeof(int)) return 0;
        memcpy(p, &x, sizeof x);
        return 1;
    }
}

/* what a group of cases found; a child writes it to a pipe */
typedef struct tally {
    long cases, ok, refused, unlogged, errors, undefined, not_finite_ok;
    char first_bad[160];
} tally;

static int error_lines;
static void count_errors(nbody_log_level level, const char *msg, void *user) {
    (void)msg; (void)user;
    if (level == NBODY_LOG_ERROR) error_lines++;
}
static int cancel_late(const nbody_progress_info *info, void *user) {
    (void)user;
    return info->steps >= 2000 || info->elapsed > 1.0;
}

static void note_bad(tally *t, const char *what, nbody_engine e, nbody_method m, int f, int v, nbody_result r) {
    if (t->first_bad[0]) return;
    snprintf(t->first_bad, sizeof t->first_bad, "%s: %s=%s on %s/%s: %s", what, fields[f].name, value_names[v],
             nbody_engine_name(e), nbody_method_name(m), nbody_result_string(r));
}

static int all_finite(const nbody_system *s) {
    size_t i;
    for (i = 0; i < s->n; ++i)
        if (!isfinite((double)s->x[i]) || !isfinite((double)s->vx[i]) || !isfinite((double)s->y[i]) ||
            !isfinite((double)s->vy[i]) || !isfinite((double)s->z[i]) || !isfinite((double)s->vz[i]))
            return 0;
    return 1;
}

static int defined_result(nbody_result r) { return (int)r >= 0 && r <= NBODY_STOPPED; }   /* BUSY is not expected */

static void run_case(tally *t, nbody_engine e, nbody_method m, int f, int v) {
    nbody_system s = {0}, got = {0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    nbody_result r;
    int k;
    memset(&d, 0, sizeof d);
    d.engine = e; d.method = m; d.softening = (nbody_real)0.01;
    d.log.func = count_errors;
    d.progress.func = cancel_late;
    if (!set_field(&d, f, v)) return;
    t->cases++;
    error_lines = 0;
    nbody_ic_plummer(&s, 8, 7);
    r = nbody_create(&sim, &d, &s);
    if (r == NBODY_ERR_INVALID_ARGUMENT || r == NBODY_ERR_UNAVAILABLE) {
        t->refused++;
        if (error_lines == 0) { t->unlogged++; note_bad(t, "refused without a log line", e, m, f, v, r); }
    } else if (!defined_result(r)) {
        t->undefined++;
        note_bad(t, "undefined result", e, m, f, v, r);
    } else if (r != NBODY_OK) {
        t->errors++;
    }
    if (r == NBODY_OK) {
        for (k = 0; k < 3 && r == NBODY_OK; ++k) r = nbody_step(sim);
        if (r == NBODY_OK) r = nbody_advance(sim, nbody_get_stats(sim).t + (nbody_real)0.01);
        if (!defined_result(r)) { t->undefined++; note_bad(t, "undefined result", e, m, f, v, r); }
        else if (r == NBODY_OK || r == NBODY_STOPPED) {
            t->ok++;
            nbody_system_alloc(&got, nbody_get_n(sim));
            if (nbody_get_state(sim, &got) != NBODY_OK || !all_finite(&got)) {
                t->not_finite_ok++;
                note_bad(t, "OK with a NaN/Inf state", e, m, f, v, r);
            }
            nbody_system_free(&got);
        } else {
            t->errors++;
            if (r == NBODY_ERR_INVALID_ARGUMENT && error_lines == 0) {
                t->unlogged++;
                note_bad(t, "refused without a log line", e, m, f, v, r);
            }
        }
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
}

static nbody_engine engines[6];
static int nengines, ncpu_engines;
static const nbody_method gpu_methods[] = {NBODY_LEAPFROG, NBODY_RK4, NBODY_RKDP};

static void run_group(tally *t, int f, int v, int only) {
    int e, m, c = 0;
    for (e = 0; e < nengines; ++e) {
        int gpu = e >= ncpu_engines, nm = gpu ? 3 : NBODY_METHOD_COUNT_ - 1;
        for (m = 0; m < nm; ++m, ++c)
            if (only < 0 || only == c) run_case(t, engines[e], gpu ? gpu_methods[m] : (nbody_method)(m + 1), f, v);
    }
}
static int group_size(void) { return ncpu_engines * (NBODY_METHOD_COUNT_ - 1) + (nengines - ncpu_engines) * 3; }

#if HAVE_FORK
/* the group (or one case of it) in a child under an alarm, its tally back through a pipe:
   child_start forks it, child_end waits for it: 0 done (t filled), 1 crashed, 2 hung. Two
   children run at a time (the groups are independent; most of a group is one core's work) */
typedef struct child { pid_t pid; int fd; } child;
static child child_start(int f, int v, int only, unsigned seconds) {
    child c = {-1, -1};
    int fd[2];
    if (pipe(fd) != 0) return c;
    fflush(stdout);
    c.pid = fork();
    if (c.pid == 0) {
        tally t;
        memset(&t, 0, sizeof t);
        close(fd[0]);
        alarm(seconds);
        run_group(&t, f, v, only);
        if (write(fd[1], &t, sizeof t) != (ssize_t)sizeof t) _exit(3);
        _exit(0);
    }
    close(fd[1]);
    c.fd = fd[0];
    return c;
}
static int child_end(child c, tally *t) {
    int status = 0;
    memset(t, 0, sizeof *t);
    if (c.fd < 0) return 1;
    if (c.pid < 0 || read(c.fd, t, sizeof *t) != (ssize_t)sizeof *t) memset(t, 0, sizeof *t);
    close(c.fd);
    if (c.pid < 0) return 1;
    waitpid(c.pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? 2 : 1;
}
static int in_child(tally *t, int f, int v, int only, unsigned seconds) { return child_end(child_start(f, v, only, seconds), t); }

#ifndef SWEEP_CPU_ONLY
/* does the engine run here? asked in a child, so the parent never starts OpenCL before fork */
static int engine_runs(nbody_engine e) {
    int fd[2], status = 0;
    pid_t pid;
    char ok = 0;
    if (!nbody_engine_available(e) || pipe(fd) != 0) return 0;
    pid = fork();
    if (pid == 0) {
        nbody_system s = {0};
        nbody_sim *sim = NULL;
        nbody_desc d;
        memset(&d, 0, sizeof d);
        d.engine = e;
        nbody_ic_figure_eight(&s);
        ok = nbody_create(&sim, &d, &s) == NBODY_OK;
        if (write(fd[1], &ok, 1) != 1) _exit(1);
        _exit(0);
    }
    close(fd[1]);
    if (read(fd[0], &ok, 1) != 1) ok = 0;
    close(fd[0]);
    waitpid(pid, &status, 0);
    return ok;
}
#endif
#endif

int main(void) {
#if HAVE_FORK
    tally all, t;
    long crashes = 0, hangs = 0, groups = 0;
    int f, v, e, g, k;
    double t0 = nbody__wall_seconds();
    memset(&all, 0, sizeof all);
    engines[0] = NBODY_ENGINE_SIMPLE; engines[1] = NBODY_ENGINE_OPENMP; engines[2] = NBODY_ENGINE_BLOCK;
    engines[3] = NBODY_ENGINE_TREE;
    nengines = ncpu_engines = 4;
#ifndef SWEEP_CPU_ONLY
    for (e = NBODY_ENGINE_OPENCL; e <= NBODY_ENGINE_OPENCL_TREE; ++e) {
        if (engine_runs((nbody_engine)e)) engines[nengines++] = (nbody_engine)e;
        else check_skip("NBODY_REQUIRE_OPENCL", nbody_engine_available((nbody_engine)e)
                        ? "an OpenCL engine in the sweep: no OpenCL device answers" : "an OpenCL engine in the sweep: built without NBODY_WITH_OPENCL");
    }
#else
    (void)e;
#endif
    for (g = 0; g < NFIELDS * NVALUES; g += 2) {
        child next = {-1, -1}, now = child_start(g / NVALUES, g % NVALUES, -1, 60);
        if (g + 1 < NFIELDS * NVALUES) next = child_start((g + 1) / NVALUES, (g + 1) % NVALUES, -1, 60);
        for (k = g; k < g + 2 && k < NFIELDS * NVALUES; ++k) {
            int how = child_end(k == g ? now : next, &t), c;
            f = k / NVALUES; v = k % NVALUES;
            groups++;
            if (how != 0) {                       /* name the cases: each alone */
                for (c = 0; c < group_size(); ++c) {
                    int one = in_child(&t, f, v, c, 10);
                    if (one == 1) { crashes++; printf("CRASH %s=%s case %d\n", fields[f].name, value_names[v], c); }
                    if (one == 2) { hangs++; printf("HANG %s=%s case %d\n", fields[f].name, value_names[v], c); }
                    if (one == 0) { all.cases += t.cases; all.ok += t.ok; all.refused += t.refused; all.errors += t.errors;
                                    all.unlogged += t.unlogged; all.undefined += t.undefined; all.not_finite_ok += t.not_finite_ok; }
                }
                continue;
            }
            all.cases += t.cases; all.ok += t.ok; all.refused += t.refused; all.errors += t.errors;
            all.unlogged += t.unlogged; all.undefined += t.undefined; all.not_finite_ok += t.not_finite_ok;
            if (t.first_bad[0]) printf("BAD %s\n", t.first_bad);
        }
    }
    printf("sweep (NBODY_REAL of %d bytes): %d fields x %d values x (%d CPU engines x %d methods + %d OpenCL engines x 3 methods) = %ld cases "
           "(integer fields have no NaN/Inf: %ld combinations skipped), %.1f s\n",
           (int)sizeof(nbody_real), NFIELDS, NVALUES, ncpu_engines, NBODY_METHOD_COUNT_ - 1, nengines - ncpu_engines, all.cases,
           (long)NFIELDS * NVALUES * group_size() - all.cases, nbody__wall_seconds() - t0);
    printf("sweep: %ld ran OK (finite state), %ld refused at create (each with a log line: %ld without), %ld other errors, "
           "%ld crashes, %ld hangs, %ld undefined results, %ld OK with a NaN/Inf state\n",
           all.ok, all.refused, all.unlogged, all.errors, crashes, hangs, all.undefined, all.not_finite_ok);
    CHECK(crashes == 0, "%ld crashes", crashes);
    CHECK(hangs == 0, "%ld hangs past the bound", hangs);
    CHECK(all.unlogged == 0, "%ld refusals without a log line", all.unlogged);
    CHECK(all.undefined == 0, "%ld undefined results", all.undefined);
    CHECK(all.not_finite_ok == 0, "%ld OK results with a NaN/Inf state", all.not_finite_ok);
    CHECK(all.cases > 10000, "the sweep ran (%ld cases)", all.cases);
#else
    check_skip(NULL, "the desc sweep needs fork() (POSIX)");
#endif
    return check_finish();
}
