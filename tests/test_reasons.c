/* Every refusal says why, also where there is no desc to log through. The snapshot functions: nbody_load, nbody_save and nbody_write_csv
   take no desc, so their one line goes to nbody_last_error. Each kind of bad snapshot (missing,
   empty, foreign, a checkpoint or an archive, truncated anywhere, another version, byte order
   or NBODY_REAL, a damaged header, n = 0 or impossibly large, bytes after the end, a flipped
   byte, NaN or negative values under a correct checksum) and each bad argument must give its
   own result and a line naming the file and the reason; the caller's system is left as it was.
   The archive reader and every other function without a desc (bodies, measures, initial
   conditions, orbits, a NULL simulation) name the argument and its value the same way.
   The line is kept per thread: a failure on another thread does not touch this thread's. */
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "check.h"
#define REL_NAME "reasons"
#include "rel_util.h"
#include <errno.h>
#if defined(__unix__) && !defined(__EMSCRIPTEN__)
#include <sys/stat.h>
#endif

/* offsets in a snapshot: magic 8 | u32 version, order mark, real size, reserved | u64 n | t | data | sum */
#define OFF_HEAD 8
#define OFF_N 24
#define OFF_T 32
#define OFF_DATA (OFF_T + (long)sizeof(nbody_real))

static unsigned long long fnv1a(const unsigned char *p, long len) {
    unsigned long long h = 0xCBF29CE484222325ULL;
    long i;
    for (i = 0; i < len; ++i) { h ^= p[i]; h *= 0x100000001B3ULL; }
    return h;
}

/* b with its checksum recomputed (the last 8 bytes), so only the change made is seen */
static void reseal(unsigned char *b, long len) {
    unsigned long long sum = fnv1a(b, len - 8);
    memcpy(b + len - 8, &sum, 8);
}

static int failures_unexplained;

/* loads path into a system marked by a sentinel; expects r and a line with path and every
   word of want (separated by '|'); the system must stay untouched */
static void expect_load(const char *label, const char *path, nbody_result want_r, const char *want) {
    nbody_system s = {0};
    char words[256], *w;
    nbody_result r;
    int ok = 1;
    nbody_load(NULL, NULL);                         /* a known line before: the next must replace it */
    s.n = 12345;                                    /* a sentinel: a failed load leaves it */
    r = nbody_load(path, &s);
    snprintf(words, sizeof words, "%s", want);
    for (w = strtok(words, "|"); w; w = strtok(NULL, "|")) if (!strstr(nbody_last_error(), w)) ok = 0;
    if (path && !strstr(nbody_last_error(), path)) ok = 0;
    CHECK(r == want_r, "%s: %s (want %s)", label, nbody_result_string(r), nbody_result_string(want_r));
    CHECK(ok, "%s: the line says why: \"%s\" (want \"%s\")", label, nbody_last_error(), want);
    CHECK(s.n == 12345 && !s.x, "%s: the system is left as it was", label);
    if (!ok) failures_unexplained++;
    if (r == NBODY_OK && s.n != 12345) nbody_system_free(&s);
}

/* good, changed at offset `at` by `len` bytes of `v` (resealed when asked), written to bad */
static void craft(const unsigned char *good, long len, const char *bad, long at, const void *v, long vlen, int seal) {
    unsigned char *b = (unsigned char *)malloc((size_t)len);
    if (!b) return;
    memcpy(b, good, (size_t)len);
    memcpy(b + at, v, (size_t)vlen);
    if (seal) reseal(b, len);
    rel_spit(bad, b, len);
    free(b);
}

static void load_reasons(void) {
    const char *path = rel_path("good"), *bad = rel_path("bad"), *ckp = rel_path("ckp"), *arc = rel_path("arc");
    nbody_system s = {0}, back = {0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    unsigned char *good, trash[64];
    long len = 0;
    unsigned int u;
    unsigned long long n;
    nbody_real v;
    char why[64];
    memset(&d, 0, sizeof d);
    nbody_ic_plummer(&s, 5, 1);
    CHECK(nbody_save(path, &s) == NBODY_OK, "save a good snapshot");
    CHECK(nbody_load(path, &back) == NBODY_OK && rel_same(&s, &back), "and it loads back the same");
    nbody_system_free(&back);
    good = rel_slurp(path, &len);
    CHECK(good && len == OFF_DATA + 35 * (long)sizeof(nbody_real) + 8, "its size: %ld", len);
    if (!good) return;

    expect_load("NULL path", NULL, NBODY_ERR_INVALID_ARGUMENT, "path is NULL");
    CHECK(nbody_load(path, NULL) == NBODY_ERR_INVALID_ARGUMENT && strstr(nbody_last_error(), "NULL") &&
          strstr(nbody_last_error(), path), "NULL system: \"%s\"", nbody_last_error());
    remove(bad);
    expect_load("missing", bad, NBODY_ERR_IO, strerror(ENOENT));
    expect_load("a directory", "build", NBODY_ERR_IO, "build");
    rel_spit(bad, good, 0);
    expect_load("empty", bad, NBODY_ERR_FORMAT, "0 bytes|too short");
    memset(trash, 'x', sizeof trash);
    rel_spit(bad, trash, sizeof trash);
    expect_load("foreign", bad, NBODY_ERR_FORMAT, "not a snapshot|bad magic");
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK && nbody_checkpoint_save(sim, ckp) == NBODY_OK &&
          nbody_archive_append(sim, arc) == NBODY_OK, "a checkpoint and an archive of the same bodies");
    nbody_destroy(sim);
    expect_load("a checkpoint", ckp, NBODY_ERR_FORMAT, "a checkpoint|nbody_checkpoint_load");
    expect_load("an archive", arc, NBODY_ERR_FORMAT, "an archive|nbody_archive_open");
    rel_spit(bad, good, 20);
    expect_load("cut in the header", bad, NBODY_ERR_FORMAT, "20 bytes|shorter than its header");
    rel_spit(bad, good, len - 3);
    snprintf(why, sizeof why, "%ld bytes|needs %ld|truncated", len - 3, len);
    expect_load("cut in the data", bad, NBODY_ERR_FORMAT, why);
    rel_spit(bad, good, OFF_DATA);
    expect_load("cut after the header", bad, NBODY_ERR_FORMAT, "truncated");
    {
        unsigned char *longer = (unsigned char *)calloc(1, (size_t)len + 4);
        if (longer) { memcpy(longer, good, (size_t)len); rel_spit(bad, longer, len + 4); free(longer); }
        expect_load("bytes after the end", bad, NBODY_ERR_FORMAT, "after its end");
    }
    u = 7;
    craft(good, len, bad, OFF_HEAD, &u, 4, 0);
    expect_load("version", bad, NBODY_ERR_FORMAT, "format version 7|reads 1");
    u = 0x04030201u;
    craft(good, len, bad, OFF_HEAD + 4, &u, 4, 0);
    expect_load("byte order", bad, NBODY_ERR_FORMAT, "other byte order");
    u = sizeof(nbody_real) == 4 ? 8 : 4;
    snprintf(why, sizeof why, "NBODY_REAL of %u bytes|reads %u", u, (unsigned)sizeof(nbody_real));
    craft(good, len, bad, OFF_HEAD + 8, &u, 4, 0);
    expect_load("NBODY_REAL of another size", bad, NBODY_ERR_FORMAT, why);
    u = 5;
    craft(good, len, bad, OFF_HEAD + 12, &u, 4, 0);
    expect_load("reserved field", bad, NBODY_ERR_FORMAT, "damaged header|field 5");
    n = 0;
    craft(good, len, bad, OFF_N, &n, 8, 0);
    expect_load("n = 0", bad, NBODY_ERR_FORMAT, "n = 0");
    n = 1ULL << 60;
    craft(good, len, bad, OFF_N, &n, 8, 0);
    expect_load("n = 2^60", bad, NBODY_ERR_FORMAT, "n = 1152921504606846976|needs");
    n = 6;
    craft(good, len, bad, OFF_N, &n, 8, 0);
    expect_load("n one too many", bad, NBODY_ERR_FORMAT, "n = 6|truncated");
    trash[0] = good[OFF_DATA + 3] ^ 0x10;
    craft(good, len, bad, OFF_DATA + 3, trash, 1, 0);
    expect_load("a flipped byte", bad, NBODY_ERR_FORMAT, "checksum mismatch|damaged");
    v = (nbody_real)NAN;
    craft(good, len, bad, OFF_DATA + (6 * 5 + 2) * (long)sizeof(nbody_real), &v, sizeof v, 1);
    expect_load("NaN mass under a good checksum", bad, NBODY_ERR_FORMAT, "body 2: m = |not finite");
    v = -1;
    craft(good, len, bad, OFF_DATA + (6 * 5 + 4) * (long)sizeof(nbody_real), &v, sizeof v, 1);
    expect_load("negative mass under a good checksum", bad, NBODY_ERR_FORMAT, "body 4: m = -1 is negative");
    v = (nbody_real)INFINITY;
    craft(good, len, bad, OFF_DATA + 1 * (long)sizeof(nbody_real), &v, sizeof v, 1);
    expect_load("Inf position under a good checksum", bad, NBODY_ERR_FORMAT, "body 1: x = inf");
    craft(good, len, bad, OFF_T, &v, sizeof v, 1);
    expect_load("Inf time under a good checksum", bad, NBODY_ERR_FORMAT, "t = inf is not finite");
    printf("nbody_load: %d refusals without their reason\n", failures_unexplained);
    free(good);
    nbody_system_free(&s);
    remove(path); remove(bad); remove(ckp); remove(arc);
}

/* the writers refuse bad arguments with the function, the file and the body named, and an
   unwritable place with the system's reason; nothing is created */
static void write_reasons(void) {
    typedef nbody_result (*writer)(const char *, const nbody_system *);
    static const writer fns[2] = {nbody_save, nbody_write_csv};
    static const char *names[2] = {"nbody_save", "nbody_write_csv"};
    const char *path = rel_path("written");
    nbody_system s = {0}, empty = {0};
    int k;
    nbody_ic_plummer(&s, 4, 2);
    for (k = 0; k < 2; ++k) {
        remove(path);
        CHECK(fns[k](NULL, &s) == NBODY_ERR_INVALID_ARGUMENT && strstr(nbody_last_error(), names[k]) &&
              strstr(nbody_last_error(), "path is NULL"), "%s(NULL): \"%s\"", names[k], nbody_last_error());
        CHECK(fns[k](path, NULL) == NBODY_ERR_INVALID_ARGUMENT && strstr(nbody_last_error(), path) &&
              strstr(nbody_last_error(), "system is NULL"), "%s(path, NULL): \"%s\"", names[k], nbody_last_error());
        CHECK(fns[k](path, &empty) == NBODY_ERR_INVALID_ARGUMENT && strstr(nbody_last_error(), "empty"),
              "%s of an empty system: \"%s\"", names[k], nbody_last_error());
        s.vy[3] = (nbody_real)NAN;
        CHECK(fns[k](path, &s) == NBODY_ERR_INVALID_ARGUMENT && strstr(nbody_last_error(), names[k]) &&
              strstr(nbody_last_error(), path) && strstr(nbody_last_error(), "body 3: vy = "),
              "%s of a NaN body: \"%s\"", names[k], nbody_last_error());
        s.vy[3] = 0;
        CHECK(!rel_exists(path), "%s: nothing written", names[k]);
        CHECK(fns[k]("build/no_such_dir/x.snap", &s) == NBODY_ERR_IO &&
              strstr(nbody_last_error(), "build/no_such_dir/x.snap.tmp") && strstr(nbody_last_error(), strerror(ENOENT)),
              "%s to a missing directory: \"%s\"", names[k], nbody_last_error());
        CHECK(fns[k](path, &s) == NBODY_OK && rel_exists(path), "%s of good bodies", names[k]);
    }
    remove(path);
    nbody_system_free(&s);
}

/* r is a refusal and the line holds every '|'-separated word of want */
static void expect_line(const char *label, nbody_result r, nbody_result want_r, const char *want) {
    char words[256], *w;
    int ok = 1;
    snprintf(words, sizeof words, "%s", want);
    for (w = strtok(words, "|"); w; w = strtok(NULL, "|")) if (!strstr(nbody_last_error(), w)) ok = 0;
    CHECK(r == want_r && ok, "%s: %s, \"%s\" (want %s, \"%s\")", label, nbody_result_string(r), nbody_last_error(),
          nbody_result_string(want_r), want);
}

/* nbody_archive_open says why it refuses a file; nbody_archive_load names a record out of range */
static void archive_reasons(void) {
    const char *arc = rel_path("arc2"), *snap = rel_path("snap2"), *bad = rel_path("bad2");
    nbody_system s = {0};
    nbody_sim *sim = NULL, *back = NULL;
    nbody_archive *a = NULL;
    nbody_desc d;
    unsigned char *good;
    long len = 0;
    unsigned int u;
    memset(&d, 0, sizeof d);
    remove(arc);
    nbody_ic_figure_eight(&s);
    CHECK(nbody_save(snap, &s) == NBODY_OK && nbody_create(&sim, &d, &s) == NBODY_OK &&
          nbody_archive_append(sim, arc) == NBODY_OK, "an archive of one record");
    nbody_destroy(sim);
    CHECK(nbody_archive_open(&a, NULL) == NBODY_ERR_INVALID_ARGUMENT && strstr(nbody_last_error(), "path is NULL"),
          "archive_open(NULL): \"%s\"", nbody_last_error());
    remove(bad);
    CHECK(nbody_archive_open(&a, bad) == NBODY_ERR_IO && strstr(nbody_last_error(), bad) &&
          strstr(nbody_last_error(), strerror(ENOENT)), "a missing archive: \"%s\"", nbody_last_error());
    CHECK(nbody_archive_open(&a, snap) == NBODY_ERR_FORMAT && strstr(nbody_last_error(), snap) &&
          strstr(nbody_last_error(), "a snapshot (read by nbody_load)"), "a snapshot as an archive: \"%s\"", nbody_last_error());
    good = rel_slurp(arc, &len);
    if (good) {
        rel_spit(bad, good, 10);
        CHECK(nbody_archive_open(&a, bad) == NBODY_ERR_FORMAT && strstr(nbody_last_error(), "10 bytes"),
              "a 10-byte archive: \"%s\"", nbody_last_error());
        u = 9;
        memcpy(good + 8, &u, 4);
        rel_spit(bad, good, len);
        CHECK(nbody_archive_open(&a, bad) == NBODY_ERR_FORMAT && strstr(nbody_last_error(), "format version 9"),
              "an archive of another version: \"%s\"", nbody_last_error());
        free(good);
    }
    {   /* an archive record appended to a snapshot would spoil it: refused, the file unchanged */
        unsigned char *before = rel_slurp(snap, &len), *after;
        long len2 = 0;
        nbody_system back = {0};
        CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
        expect_line("append to a snapshot", nbody_archive_append(sim, snap), NBODY_ERR_FORMAT, "not an archive|a snapshot");
        expect_line("attach to a snapshot", nbody_archive_attach(sim, snap, 1, 0, 0), NBODY_ERR_FORMAT, "not an archive");
        after = rel_slurp(snap, &len2);
        CHECK(before && after && len2 == len && memcmp(before, after, (size_t)len) == 0 && nbody_load(snap, &back) == NBODY_OK,
              "the snapshot is unchanged and loads");
        nbody_system_free(&back);
        free(before); free(after);
        nbody_destroy(sim);
    }
    a = NULL;
    CHECK(nbody_archive_open(&a, arc) == NBODY_OK && nbody_archive_count(a) == 1, "the good archive opens");
    d.log.func = NULL;
    CHECK(nbody_archive_load(a, 3, &d, &back) == NBODY_ERR_INVALID_ARGUMENT && strstr(nbody_last_error(), "record 3") &&
          strstr(nbody_last_error(), "out of range (1 records)"), "record 3 of 1: \"%s\"", nbody_last_error());
    CHECK(nbody_archive_load(a, 0, &d, &back) == NBODY_OK, "record 0 loads");
    nbody_destroy(back);
    nbody_archive_close(a);
    nbody_system_free(&s);
    remove(arc); remove(snap); remove(bad);
}

/* the functions without a desc, and NULL simulations */
static void descless_reasons(void) {
    nbody_system s = {0}, t = {0}, empty = {0};
    nbody_invariants inv;
    nbody_orbit o;
    nbody_real pos[3] = {0, 0, 0}, vel[3] = {0, 1, 0}, radii[3] = {0, -2, 0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    memset(&d, 0, sizeof d); memset(&o, 0, sizeof o);
    nbody_ic_figure_eight(&s);
    nbody_system_alloc(&t, 2);
    expect_line("system_alloc(NULL)", nbody_system_alloc(NULL, 3), NBODY_ERR_INVALID_ARGUMENT, "nbody_system_alloc|s is NULL");
    expect_line("system_alloc n = 0", nbody_system_alloc(&empty, 0), NBODY_ERR_INVALID_ARGUMENT, "nbody_system_alloc|n = 0");
    expect_line("system_alloc n = max", nbody_system_alloc(&empty, (size_t)-1), NBODY_ERR_INVALID_ARGUMENT, "too large");
    expect_line("system_copy 3 into 2", nbody_system_copy(&t, &s), NBODY_ERR_INVALID_ARGUMENT, "nbody_system_copy|differ in n");
    expect_line("measure G = NaN", nbody_measure(&s, (nbody_real)NAN, 0, &inv), NBODY_ERR_INVALID_ARGUMENT, "nbody_measure|G = nan");
    expect_line("measure softening -1", nbody_measure(&s, 1, -1, &inv), NBODY_ERR_INVALID_ARGUMENT, "softening = -1");
    s.vz[2] = (nbody_real)INFINITY;
    expect_line("measure Inf body", nbody_measure(&s, 1, 0, &inv), NBODY_ERR_INVALID_ARGUMENT, "nbody_measure|body 2: vz = inf");
    expect_line("move_to_com Inf body", nbody_move_to_com(&s), NBODY_ERR_INVALID_ARGUMENT, "nbody_move_to_com|body 2: vz = inf");
    s.vz[2] = 0;
    expect_line("ic_plummer n = 0", nbody_ic_plummer(&empty, 0, 1), NBODY_ERR_INVALID_ARGUMENT, "n = 0");
    expect_line("ic_galaxy fraction 2", nbody_ic_galaxy(&empty, 100, 2, 1), NBODY_ERR_INVALID_ARGUMENT,
                "nbody_ic_galaxy|central_fraction = 2");
    expect_line("ic_collision n = 1", nbody_ic_collision(&empty, 1, (nbody_real)0.2, 10, 1), NBODY_ERR_INVALID_ARGUMENT, "n = 1");
    expect_line("ic_collision separation NaN", nbody_ic_collision(&empty, 100, (nbody_real)0.2, (nbody_real)NAN, 1),
                NBODY_ERR_INVALID_ARGUMENT, "separation = nan");
    o.a = 1; o.e = 1;
    expect_line("orbit e = 1", nbody_orbit_to_state(1, &o, NBODY_ANOMALY_TRUE, pos, vel), NBODY_ERR_INVALID_ARGUMENT,
                "nbody_orbit_to_state|e = 1");
    o.e = 0;
    expect_line("orbit mu = -1", nbody_orbit_to_state(-1, &o, NBODY_ANOMALY_TRUE, pos, vel), NBODY_ERR_INVALID_ARGUMENT, "mu = -1");
    expect_line("orbit at the origin", nbody_orbit_from_state(1, pos, vel, &o), NBODY_ERR_INVALID_ARGUMENT, "at the origin");
    expect_line("add_orbit primary 99", nbody_add_orbit(&s, 1, 0, &o, NBODY_ANOMALY_TRUE, 99), NBODY_ERR_INVALID_ARGUMENT,
                "nbody_add_orbit|primary 99|not a body");
    expect_line("get_orbit about itself", nbody_get_orbit(&s, 1, 1, 1, &o), NBODY_ERR_INVALID_ARGUMENT, "about itself");
    expect_line("step(NULL)", nbody_step(NULL), NBODY_ERR_INVALID_ARGUMENT, "nbody_step: sim is NULL");
    expect_line("create(NULL out)", nbody_create(NULL, &d, &s), NBODY_ERR_INVALID_ARGUMENT, "nbody_create: out is NULL");
    expect_line("checkpoint_load(NULL desc)", nbody_checkpoint_load(&sim, NULL, "x.ckp"), NBODY_ERR_INVALID_ARGUMENT,
                "nbody_checkpoint_load: desc is NULL");
    expect_line("desc_check(NULL)", nbody_desc_check(NULL, &s), NBODY_ERR_INVALID_ARGUMENT, "desc is NULL");
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    expect_line("get_state into 2 of 3", nbody_get_state(sim, &t), NBODY_ERR_INVALID_ARGUMENT, "out has n = 2|3 bodies");
    expect_line("set_radii -2", nbody_set_radii(sim, radii), NBODY_ERR_INVALID_ARGUMENT, "body 1: radius -2 is negative");
    s.m[0] = -1;
    expect_line("set_state m = -1", nbody_set_state(sim, &s), NBODY_ERR_INVALID_ARGUMENT, "body 0: m = -1 is negative");
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&t);
}

/* the writers never replace what is not a regular file: a directory or an empty path is
   refused, a device is written in place (a rename beside would replace the device node) */
static void writers_and_special_files(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    memset(&d, 0, sizeof d);
    nbody_ic_figure_eight(&s);
    expect_line("save to a directory", nbody_save("build", &s), NBODY_ERR_INVALID_ARGUMENT, "build|is a directory");
    expect_line("csv to an empty path", nbody_write_csv("", &s), NBODY_ERR_INVALID_ARGUMENT, "the path is empty");
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    expect_line("checkpoint to a directory", nbody_checkpoint_save(sim, "build"), NBODY_ERR_INVALID_ARGUMENT, "is a directory");
#if defined(__unix__) && !defined(__EMSCRIPTEN__)
    {
        struct stat st;
        CHECK(nbody_write_csv("/dev/null", &s) == NBODY_OK && nbody_save("/dev/null", &s) == NBODY_OK &&
              nbody_checkpoint_save(sim, "/dev/null") == NBODY_OK, "csv, snapshot, checkpoint to /dev/null: %s", nbody_last_error());
        CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null is still a device");
        if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
            expect_line("save to /dev/full", nbody_save("/dev/full", &s), NBODY_ERR_IO, "/dev/full|No space left");
            CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "/dev/full is still a device");
        }
        CHECK(!rel_exists("/dev/null.tmp") && !rel_exists("/dev/full.tmp"), "no temporary file beside a device");
    }
#endif
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* a line from a desc-taking function lands in nbody_last_error as well as in desc.log */
static char hook_line[512];
static void keep_line(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_ERROR) snprintf(hook_line, sizeof hook_line, "%s", msg);
}
static void same_line_as_the_hook(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    memset(&d, 0, sizeof d);
    nbody_ic_figure_eight(&s);
    d.theta = 7;
    d.log.func = keep_line;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && strstr(hook_line, "desc.theta = 7") &&
          strcmp(hook_line, nbody_last_error()) == 0, "desc.log and nbody_last_error carry the same line: \"%s\" / \"%s\"",
          hook_line, nbody_last_error());
    d.log.func = NULL;
    d.theta = 0;
    d.dt = -1;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && strstr(nbody_last_error(), "desc.dt = -1"),
          "without desc.log the line is still kept: \"%s\"", nbody_last_error());
    nbody_system_free(&s);
}

#if REL_PTHREADS
static void *fail_elsewhere(void *arg) {
    (void)arg;
    nbody_load("build/rel_reasons_elsewhere_missing.snap", NULL);
    return (void *)(strstr(nbody_last_error(), "elsewhere") ? arg : NULL);
}
#endif

/* another thread's failure leaves this thread's line alone */
static void per_thread(void) {
#if REL_PTHREADS
    pthread_t th;
    void *seen = NULL;
    int token = 0;
    nbody_load(NULL, NULL);
    CHECK(strstr(nbody_last_error(), "path is NULL") != NULL, "this thread's line: \"%s\"", nbody_last_error());
    CHECK(pthread_create(&th, NULL, fail_elsewhere, &token) == 0 && pthread_join(th, &seen) == 0, "a second thread");
    CHECK(seen == &token, "the second thread reads its own line");
    CHECK(strstr(nbody_last_error(), "path is NULL") != NULL, "this thread's line is unchanged: \"%s\"", nbody_last_error());
#else
    check_skip(NULL, "the line per thread: no POSIX threads here");
#endif
}

int main(void) {
    CHECK(nbody_last_error() && nbody_last_error()[0] == 0, "no error yet: \"%s\"", nbody_last_error());
    load_reasons();
    write_reasons();
    archive_reasons();
    descless_reasons();
    writers_and_special_files();
    same_line_as_the_hook();
    per_thread();
    return check_finish();
}
