/* A full disk never costs a file: every library writer (nbody_save, nbody_write_csv,
   nbody_checkpoint_save, archive appends) is made to fail at each step of its write through
   the NBODY_IO_FAULT test hook (the k-th write, the flush, the fsync, the close, the
   rename), each failure as ENOSPC. Each must return NBODY_ERR_IO with one line carrying the
   system's reason and the file (desc.log where there is a desc; nbody_last_error always), leave the previous file byte for byte as
   it was (it still loads), and leave no temporary file behind. For archives: the failed
   record is cut back (the archive opens with its earlier records, nothing damaged), attach
   to an unwritable path fails at attach, and a record that cannot be written is reported by
   a call that has changed nothing. */
int test_fault(const char *op);
#define NBODY_IO_FAULT(op) test_fault(op)
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#define REL_NAME "write_fail"
#include "rel_util.h"
#include <errno.h>

static const char *fault_op;      /* the step that fails, NULL = none */
static int fault_after;           /* how many of that step succeed first */
static int faults_hit;
int test_fault(const char *op) {
    if (!fault_op || strcmp(op, fault_op) != 0) return 0;
    if (fault_after-- > 0) return 0;
    faults_hit++;
    errno = ENOSPC;
    return 1;
}
static void fault_at(const char *op, int after) { fault_op = op; fault_after = after; faults_hit = 0; }

static int io_lines, reasons;     /* error lines; lines with the system's reason for ENOSPC */
static char io_last[512];
static void on_log(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level != NBODY_LOG_ERROR) return;
    io_lines++;
    if (strstr(msg, strerror(ENOSPC))) reasons++;
    snprintf(io_last, sizeof io_last, "%s", msg);
}

typedef nbody_result (*writer_fn)(const char *path, const nbody_system *s, nbody_sim *sim);
static nbody_result write_snapshot(const char *path, const nbody_system *s, nbody_sim *sim) { (void)sim; return nbody_save(path, s); }
static nbody_result write_csv(const char *path, const nbody_system *s, nbody_sim *sim) { (void)sim; return nbody_write_csv(path, s); }
static nbody_result write_checkpoint(const char *path, const nbody_system *s, nbody_sim *sim) { (void)s; return nbody_checkpoint_save(sim, path); }

/* the old file loads after a failed overwrite (through the writer's own reader) */
static int still_loads(const char *label, const char *path, const nbody_desc *d) {
    nbody_system back = {0};
    nbody_sim *sim = NULL;
    int ok;
    if (strstr(label, "csv")) return 1;        /* no reader: the bytes are compared */
    if (strstr(label, "checkpoint")) {
        ok = nbody_checkpoint_load(&sim, d, path) == NBODY_OK;
        nbody_destroy(sim);
        return ok;
    }
    ok = nbody_load(path, &back) == NBODY_OK;
    nbody_system_free(&back);
    return ok;
}

/* every failure point of one writer over a good file */
static void whole_file_writer(const char *label, writer_fn write, const char *ext) {
    static const char *ops[] = {"write", "write", "write", "flush", "sync", "close", "rename"};
    static const int after[] = {0, 1, 3, 0, 0, 0, 0};
    char path[256], tmp[260];
    nbody_system s = {0}, s2 = {0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    unsigned char *old, *now;
    long old_len = 0, now_len = 0;
    int k, lost = 0, truncated = 0, left = 0, unlogged = 0;
    memset(&d, 0, sizeof d);
    d.log.func = on_log;
    snprintf(path, sizeof path, "build/rel_write_fail_%s.%s", label, ext);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    nbody_ic_plummer(&s, 50, 3);
    nbody_ic_plummer(&s2, 50, 4);               /* the new content: other bodies */
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "%s: create", label);
    fault_at(NULL, 0);
    CHECK(write(path, &s, sim) == NBODY_OK, "%s: the first write", label);
    old = rel_slurp(path, &old_len);
    if (sim) nbody_set_state(sim, &s2);
    for (k = 0; k < (int)(sizeof ops / sizeof ops[0]); ++k) {
        nbody_result r;
        int hit;
        io_lines = reasons = 0;
        fault_at(ops[k], after[k]);
        r = write(path, &s2, sim);
        hit = faults_hit;
        fault_at(NULL, 0);
        CHECK(r == NBODY_ERR_IO && hit == 1, "%s: %s #%d fails: %s", label, ops[k], after[k], nbody_result_string(r));
        now = rel_slurp(path, &now_len);
        if (!now) lost++;
        else if (now_len != old_len || memcmp(now, old, (size_t)old_len) != 0) truncated++;
        if (rel_exists(tmp)) left++;
        if (strstr(label, "checkpoint") && !(reasons == 1 && strstr(io_last, "unchanged"))) unlogged++;
        /* every writer, with a desc or not: nbody_last_error names the file, the reason, and
           that the old file is unchanged */
        if (!strstr(nbody_last_error(), strerror(ENOSPC)) || !strstr(nbody_last_error(), "unchanged") ||
            !strstr(nbody_last_error(), path))
            unlogged++;
        CHECK(still_loads(label, path, &d), "%s: after a failed %s the old file loads", label, ops[k]);
        free(now);
    }
    printf("%s: %d injected failures: %d files lost, %d changed or truncated, %d temporary files left\n", label, k, lost,
           truncated, left);
    CHECK(lost == 0 && truncated == 0 && left == 0, "%s: 0 lost, 0 truncated, 0 left (%d, %d, %d)", label, lost, truncated, left);
    CHECK(unlogged == 0, "%s: every failure logged with the system's reason and the file left unchanged (%d not)", label,
          unlogged);
    CHECK(write(path, &s2, sim) == NBODY_OK, "%s: once the disk has room, the write goes through", label);
    now = rel_slurp(path, &now_len);
    CHECK(now && (now_len != old_len || memcmp(now, old, (size_t)old_len) != 0), "%s: and replaces the file", label);
    free(now); free(old);
    remove(path);
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&s2);
}

/* an archive append that fails is cut back: the archive keeps its records, nothing damaged */
static void archive_appends(void) {
    static const char *ops[] = {"write", "write", "write", "flush", "sync"};
    static const int after[] = {0, 2, 5, 0, 0};
    const char *path = rel_path("append");
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_archive *a = NULL;
    nbody_desc d;
    int k, bad = 0;
    memset(&d, 0, sizeof d);
    d.log.func = on_log;
    remove(path);
    nbody_ic_figure_eight(&s);
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "archive: create");
    if (!sim) return;
    CHECK(nbody_archive_append(sim, path) == NBODY_OK && nbody_step(sim) == NBODY_OK &&
          nbody_archive_append(sim, path) == NBODY_OK, "archive: two records");
    for (k = 0; k < (int)(sizeof ops / sizeof ops[0]); ++k) {
        nbody_result r;
        size_t count = 0, damaged = 9;
        nbody_step(sim);
        fault_at(ops[k], after[k]);
        r = nbody_archive_append(sim, path);
        fault_at(NULL, 0);
        if (nbody_archive_open(&a, path) == NBODY_OK) { count = nbody_archive_count(a); damaged = nbody_archive_damaged(a); }
        nbody_archive_close(a);
        a = NULL;
        if (!(r == NBODY_ERR_IO && count == 2 && damaged == 0)) bad++;
        CHECK(r == NBODY_ERR_IO && count == 2 && damaged == 0, "archive: %s #%d: %s, %lu records, %lu damaged (want io, 2, 0)",
              ops[k], after[k], nbody_result_string(r), (unsigned long)count, (unsigned long)damaged);
    }
    printf("archive: %d injected failures: %d records lost or damaged\n", k, bad);
    CHECK(nbody_archive_append(sim, path) == NBODY_OK && nbody_archive_open(&a, path) == NBODY_OK &&
          nbody_archive_count(a) == 3 && nbody_archive_damaged(a) == 0, "archive: the next append lands after the two");
    nbody_archive_close(a);
    remove(path);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* attach tries the path; a due record that cannot be written fails the next call, which
   changes nothing; once the disk has room the record is written and the run goes on */
static void archive_attached(void) {
    const char *path = rel_path("attached");
    nbody_system s = {0}, before = {0}, after = {0};
    nbody_sim *sim = NULL;
    nbody_archive *a = NULL;
    nbody_desc d;
    nbody_result r;
    memset(&d, 0, sizeof d);
    d.log.func = on_log;
    remove(path);
    nbody_ic_figure_eight(&s);
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "attach: create");
    if (!sim) return;
    io_lines = 0;
    r = nbody_archive_attach(sim, "build/no_such_directory/run.arc", 0, 2, 0);
    CHECK(r == NBODY_ERR_IO && io_lines >= 1 && strstr(io_last, "No such file"), "attach to a missing directory: %s, \"%s\"",
          nbody_result_string(r), io_last);
    CHECK(nbody_step(sim) == NBODY_OK, "attach refused: steps run on without an archive");
    CHECK(nbody_archive_attach(sim, path, 0, 2, 0) == NBODY_OK, "attach: every 2 steps");
    CHECK(nbody_archive_open(&a, path) == NBODY_OK && nbody_archive_count(a) == 0, "attach created an empty archive");
    nbody_archive_close(a);
    CHECK(nbody_step(sim) == NBODY_OK && nbody_step(sim) == NBODY_OK, "two steps: a record is due");
    rel_state(sim, 3, &before);
    fault_at("write", 0);
    r = nbody_step(sim);
    fault_at(NULL, 0);
    rel_state(sim, 3, &after);
    CHECK(r == NBODY_ERR_IO, "the step after a record that cannot be written: %s", nbody_result_string(r));
    CHECK(before.n && after.n && rel_same(&before, &after) && nbody_get_stats(sim).steps == 3,
          "that failed call changed nothing (t = %g, steps %llu)", (double)nbody_get_stats(sim).t,
          nbody_get_stats(sim).steps);
    CHECK(nbody_step(sim) == NBODY_OK && nbody_get_stats(sim).steps == 4, "retried with room: the record, then the step");
    CHECK(nbody_archive_open(&a, path) == NBODY_OK && nbody_archive_count(a) == 1 && nbody_archive_damaged(a) == 0 &&
          nbody_archive_time(a, 0) == before.t, "the record holds the state of its step (t = %g)",
          a ? (double)nbody_archive_time(a, 0) : -1.0);
    nbody_archive_close(a);
    nbody_system_free(&before); nbody_system_free(&after);
    remove(path);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

int main(void) {
    whole_file_writer("snapshot", write_snapshot, "snap");
    whole_file_writer("csv", write_csv, "csv");
    whole_file_writer("checkpoint", write_checkpoint, "ckp");
    archive_appends();
    archive_attached();
    return check_finish();
}
