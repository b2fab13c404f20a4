/* One call at a time on a simulation: a call from inside its own hook that a hook may not
   make (nbody_step, nbody_advance, nbody_destroy) and any call from a second thread while
   the simulation runs get NBODY_ERR_BUSY (nbody_destroy: a log line, nothing freed), and
   change nothing. While a hook runs, the calls a hook may make are refused from any other
   thread (the hook's own still work). The two-thread parts need POSIX threads; elsewhere
   they are skipped. */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "check.h"
#define REL_NAME "busy"
#include "rel_util.h"

static int busy_lines;
static void count_busy(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_ERROR && strstr(msg, "refused")) busy_lines++;
}

/* ---- re-entry from a hook ---- */
typedef struct hook_probe {
    nbody_progress first;          /* called before the hook's own calls (func NULL: none) */
    nbody_result step, advance, get, set;
    int calls;
} hook_probe;

/* on its first run: the calls a hook may not make (refused), then those it may */
static int probing_hook(nbody_sim *sim, void *user) {
    hook_probe *p = (hook_probe *)user;
    nbody_system s = {0};
    if (p->calls++ > 0) return 0;
    if (p->first.func) (void)p->first.func(NULL, p->first.user_data);
    p->step = nbody_step(sim);
    p->advance = nbody_advance(sim, 10);
    nbody_destroy(sim);                     /* refused: the step that runs the hook uses sim */
    if (rel_state(sim, nbody_get_n(sim), &s)) {  /* the hooks' own calls still work */
        p->get = NBODY_OK;
        p->set = nbody_set_state(sim, &s);
        nbody_system_free(&s);
    } else {
        p->get = NBODY_ERR_BUSY;
    }
    return 0;
}

static void reentry_from_hook(void) {
    nbody_system s = {0}, before = {0}, after = {0};
    nbody_sim *sim = NULL, *ref = NULL;
    nbody_desc d;
    hook_probe p;
    memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
    nbody_ic_figure_eight(&s);
    d.after_step = probing_hook;
    d.hook_user_data = &p;
    d.log.func = count_busy;
    busy_lines = 0;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    if (!sim) return;
    CHECK(nbody_step(sim) == NBODY_OK, "the step around the hook succeeds");
    CHECK(p.step == NBODY_ERR_BUSY, "nbody_step from a hook: %s (want busy)", nbody_result_string(p.step));
    CHECK(p.advance == NBODY_ERR_BUSY, "nbody_advance from a hook: %s (want busy)", nbody_result_string(p.advance));
    CHECK(p.get == NBODY_OK && p.set == NBODY_OK, "get_state / set_state from a hook: %s / %s (allowed)",
          nbody_result_string(p.get), nbody_result_string(p.set));
    CHECK(busy_lines == 3, "3 refusals logged (step, advance, destroy): %d", busy_lines);
    /* destroy from the hook freed nothing: the simulation runs on, as one without the hook */
    memset(&d, 0, sizeof d);
    CHECK(nbody_create(&ref, &d, &s) == NBODY_OK && nbody_step(ref) == NBODY_OK, "reference");
    CHECK(nbody_advance(sim, (nbody_real)0.5) == NBODY_OK && nbody_advance(ref, (nbody_real)0.5) == NBODY_OK,
          "the simulation lives on after the refused destroy");
    if (rel_state(sim, 3, &before) && rel_state(ref, 3, &after))
        CHECK(rel_same(&before, &after), "and gives the same state as one never probed");
    nbody_system_free(&before); nbody_system_free(&after);
    nbody_destroy(ref);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* ---- a log function that calls into the simulation: the refusals those calls log (it is
   busy) go to nbody_last_error, not back into the log function (no endless recursion) ---- */
static nbody_sim *logged_sim;
static int log_calls;
static nbody_result log_get;
static void log_and_look(nbody_log_level level, const char *msg, void *user) {
    nbody_system s = {0};
    (void)level; (void)msg; (void)user;
    log_calls++;
    if (nbody_system_alloc(&s, 3) != NBODY_OK) return;
    log_get = nbody_get_state(logged_sim, &s);
    nbody_system_free(&s);
}
static void log_function_calls_back(void) {
    nbody_system s = {0};
    nbody_desc d;
    nbody_result r;
    memset(&d, 0, sizeof d);
    nbody_ic_figure_eight(&s);
    d.log.func = log_and_look;
    CHECK(nbody_create(&logged_sim, &d, &s) == NBODY_OK, "create");
    if (!logged_sim) return;
    log_calls = 0;
    r = nbody_advance(logged_sim, (nbody_real)-1);     /* refused and logged while busy */
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && log_calls == 1, "advance to the past: %s, the log function called %d time(s) "
          "(want 1)", nbody_result_string(r), log_calls);
    CHECK(log_get == NBODY_ERR_BUSY && strstr(nbody_last_error(), "nbody_get_state refused"),
          "its get_state was refused (busy): %s, \"%s\"", nbody_result_string(log_get), nbody_last_error());
    CHECK(nbody_step(logged_sim) == NBODY_OK, "the simulation runs on");
    nbody_destroy(logged_sim);
    nbody_system_free(&s);
}

#if REL_PTHREADS
/* ---- a second thread: the first sits inside nbody_advance (in its progress callback, which
   the library calls with the simulation busy) until the second has tried everything ---- */
typedef struct rendezvous {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inside, done;
} rendezvous;

static int wait_inside(const nbody_progress_info *info, void *user) {
    rendezvous *z = (rendezvous *)user;
    (void)info;
    pthread_mutex_lock(&z->mu);
    z->inside = 1;
    pthread_cond_broadcast(&z->cv);
    while (!z->done) pthread_cond_wait(&z->cv, &z->mu);
    pthread_mutex_unlock(&z->mu);
    return 0;
}

/* a second thread that runs one call on sim (t_end > 0: nbody_advance, else nbody_step) and
   sits inside it, in z's wait, until finish_inside */
typedef struct runner { nbody_sim *sim; double t_end; nbody_result r; pthread_t th; } runner;
static void *run_call(void *arg) {
    runner *a = (runner *)arg;
    a->r = a->t_end > 0 ? nbody_advance(a->sim, (nbody_real)a->t_end) : nbody_step(a->sim);
    return NULL;
}

static void start_inside(runner *a, rendezvous *z) {
    pthread_mutex_init(&z->mu, NULL);
    pthread_cond_init(&z->cv, NULL);
    z->inside = z->done = 0;
    pthread_create(&a->th, NULL, run_call, a);
    pthread_mutex_lock(&z->mu);
    while (!z->inside) pthread_cond_wait(&z->cv, &z->mu);
    pthread_mutex_unlock(&z->mu);
}

static void finish_inside(runner *a, rendezvous *z) {
    pthread_mutex_lock(&z->mu);
    z->done = 1;
    pthread_cond_broadcast(&z->cv);
    pthread_mutex_unlock(&z->mu);
    pthread_join(a->th, NULL);
    pthread_mutex_destroy(&z->mu);
    pthread_cond_destroy(&z->cv);
}

static void second_thread(void) {
    nbody_system s = {0}, before = {0}, got = {0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    rendezvous z;
    runner a;
    nbody_real radii[3] = {0, 0, 0};
    nbody_result r1, r2, r3, r4, r5, r6;
    memset(&d, 0, sizeof d);
    nbody_ic_figure_eight(&s);
    d.progress.func = wait_inside;
    d.progress.user_data = &z;
    d.log.func = count_busy;
    busy_lines = 0;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    if (!sim) return;
    nbody_system_alloc(&got, 3);
    a.sim = sim; a.t_end = 0.01;
    start_inside(&a, &z);
    rel_state(sim, 3, &before);                /* refused too: before stays empty */
    r1 = nbody_step(sim);
    r2 = nbody_advance(sim, 1);
    r3 = nbody_set_state(sim, &s);
    r4 = nbody_get_state(sim, &got);
    r5 = nbody_set_radii(sim, radii);
    r6 = nbody_checkpoint_save(sim, "test_busy.ckp");
    nbody_destroy(sim);                        /* refused: the first thread is inside */
    finish_inside(&a, &z);
    CHECK(before.n == 0, "get_state from the second thread refused");
    CHECK(r1 == NBODY_ERR_BUSY && r2 == NBODY_ERR_BUSY, "step / advance from a second thread: %s / %s",
          nbody_result_string(r1), nbody_result_string(r2));
    CHECK(r3 == NBODY_ERR_BUSY && r4 == NBODY_ERR_BUSY && r5 == NBODY_ERR_BUSY && r6 == NBODY_ERR_BUSY,
          "set_state, get_state, set_radii, checkpoint_save from a second thread: %s %s %s %s", nbody_result_string(r3),
          nbody_result_string(r4), nbody_result_string(r5), nbody_result_string(r6));
    CHECK(busy_lines == 8, "each refusal logged once: %d lines (want 8)", busy_lines);
    CHECK(a.r == NBODY_OK && nbody_get_stats(sim).t == (nbody_real)0.01, "the first thread's advance: %s, t = %g",
          nbody_result_string(a.r), (double)nbody_get_stats(sim).t);
    CHECK(nbody_step(sim) == NBODY_OK, "once it returned, the simulation takes calls again");
    remove("test_busy.ckp");
    nbody_destroy(sim);
    nbody_system_free(&got);
    nbody_system_free(&s);
}

/* ---- a hook running on one thread: the calls a hook may make are its own thread's only;
   from another thread they are refused while it runs (the hook waits first for that thread's
   calls) ---- */
static void hook_on_another_thread(void) {
    nbody_system s = {0}, got = {0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    hook_probe g;
    rendezvous z;
    runner a;
    nbody_real radii[3] = {0, 0, 0};
    nbody_result r[7];
    int k, refused = 0;
    memset(&d, 0, sizeof d); memset(&g, 0, sizeof g);
    nbody_ic_figure_eight(&s);
    g.first.func = wait_inside;
    g.first.user_data = &z;
    d.after_step = probing_hook;
    d.hook_user_data = &g;
    d.log.func = count_busy;
    busy_lines = 0;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    if (!sim) return;
    nbody_system_alloc(&got, 3);
    a.sim = sim; a.t_end = 0;
    start_inside(&a, &z);
    /* the other thread sits inside its after_step hook: every call from here is refused,
       those a hook may make included */
    r[0] = nbody_get_state(sim, &got);
    r[1] = nbody_set_state(sim, &s);
    r[2] = nbody_set_radii(sim, radii);
    r[3] = nbody_get_radii(sim, radii);
    r[4] = nbody_checkpoint_save(sim, "test_busy_hook.ckp");
    r[5] = nbody_archive_append(sim, "test_busy_hook.arc");
    r[6] = nbody_step(sim);
    nbody_destroy(sim);
    finish_inside(&a, &z);
    for (k = 0; k < 7; ++k) refused += r[k] == NBODY_ERR_BUSY;
    CHECK(refused == 7, "get_state, set_state, set_radii, get_radii, checkpoint_save, archive_append, step from another "
          "thread during a hook: %d of 7 refused (%s %s %s %s %s %s %s)", refused, nbody_result_string(r[0]),
          nbody_result_string(r[1]), nbody_result_string(r[2]), nbody_result_string(r[3]), nbody_result_string(r[4]),
          nbody_result_string(r[5]), nbody_result_string(r[6]));
    CHECK(busy_lines == 11, "each refusal logged once: %d lines (want 11: 8 from this thread, 3 from the hook)", busy_lines);
    CHECK(g.step == NBODY_ERR_BUSY && g.advance == NBODY_ERR_BUSY && g.set == NBODY_OK,
          "the hook's own step / advance / set_state: %s / %s / %s", nbody_result_string(g.step), nbody_result_string(g.advance),
          nbody_result_string(g.set));
    CHECK(!rel_exists("test_busy_hook.ckp") && !rel_exists("test_busy_hook.arc"), "nothing was written");
    CHECK(g.get == NBODY_OK, "the hook's own get_state still works: %s", nbody_result_string(g.get));
    CHECK(a.r == NBODY_OK && nbody_get_stats(sim).steps == 1, "the step around the hook: %s, %llu steps",
          nbody_result_string(a.r), nbody_get_stats(sim).steps);
    CHECK(nbody_get_state(sim, &got) == NBODY_OK && got.t == nbody_get_stats(sim).t,
          "after the hook, this thread's calls go through again");
    remove("test_busy_hook.ckp"); remove("test_busy_hook.arc");
    nbody_destroy(sim);
    nbody_system_free(&got);
    nbody_system_free(&s);
}
#endif

int main(void) {
    reentry_from_hook();
    log_function_calls_back();
#if REL_PTHREADS
    second_thread();
    hook_on_another_thread();
#else
    check_skip(NULL, "two threads on one simulation: no POSIX threads here");
#endif
    CHECK(strcmp(nbody_result_string(NBODY_ERR_BUSY), "unknown result") != 0, "NBODY_ERR_BUSY has a name");
    return check_finish();
}
