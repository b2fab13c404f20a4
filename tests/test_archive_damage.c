/* A bad byte never empties an archive: every single-byte corruption (each byte of the
   first record inverted, and each byte of the second record's header) of a two-record
   archive must give either NBODY_ERR_FORMAT from nbody_archive_open (the archive's own
   header), or OK with the damage counted by nbody_archive_damaged whenever a record was
   dropped, and the intact record still indexed and loadable. A record whose checkpoint body
   is damaged stays indexed and its load gives NBODY_ERR_FORMAT. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#define REL_NAME "archive_damage"
#include "rel_util.h"
#include <errno.h>

/* the offset of the second "NBODYREC" in the file */
static long second_record(const unsigned char *b, long len) {
    long i, seen = 0;
    for (i = 0; i + 8 <= len; ++i)
        if (memcmp(b + i, "NBODYREC", 8) == 0 && ++seen == 2) return i;
    return -1;
}

static char last_error[512];
static void keep_error(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_ERROR) snprintf(last_error, sizeof last_error, "%s", msg);
}

/* a refused checkpoint says why: missing (the system's reason), not a checkpoint, written
   with another NBODY_REAL (the sizes named), damaged (checksum) */
static void checkpoint_reasons(void) {
    const char *ckp = rel_path("reasons_ckp"), *snap = rel_path("reasons_snap"), *other = rel_path("reasons_other");
    nbody_system s = {0};
    nbody_sim *sim = NULL, *back = NULL;
    nbody_desc d;
    unsigned char *b;
    unsigned long long sum;
    unsigned int fake;
    char want[128];
    long len = 0;
    nbody_result r;
    memset(&d, 0, sizeof d);
    d.log.func = keep_error;
    nbody_ic_figure_eight(&s);
    nbody_save(snap, &s);
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK && nbody_checkpoint_save(sim, ckp) == NBODY_OK, "a checkpoint");
    nbody_destroy(sim);
    remove(other);
    r = nbody_checkpoint_load(&back, &d, other);
    CHECK(r == NBODY_ERR_IO && strstr(last_error, strerror(ENOENT)), "missing: %s, \"%s\"", nbody_result_string(r), last_error);
    r = nbody_checkpoint_load(&back, &d, snap);
    CHECK(r == NBODY_ERR_FORMAT && strstr(last_error, "not a checkpoint"), "a snapshot: \"%s\"", last_error);
    b = rel_slurp(ckp, &len);
    if (b && len > 40) {
        fake = sizeof(nbody_real) == 8 ? 4 : 8;        /* sizeof(nbody_real) is the header's third u32 */
        memcpy(b + 16, &fake, 4);
        sum = nbody__fnv1a(NBODY__FNV_SEED, b, (size_t)len - 8);
        memcpy(b + len - 8, &sum, 8);
        rel_spit(other, b, len);
        r = nbody_checkpoint_load(&back, &d, other);
        snprintf(want, sizeof want, "NBODY_REAL of %u bytes; this build reads %u", fake, (unsigned)sizeof(nbody_real));
        CHECK(r == NBODY_ERR_FORMAT && strstr(last_error, want), "another precision: \"%s\"", last_error);
        b[len / 2] ^= 1;
        rel_spit(other, b, len);
        r = nbody_checkpoint_load(&back, &d, other);
        CHECK(r == NBODY_ERR_FORMAT && strstr(last_error, "checksum"), "a damaged byte: \"%s\"", last_error);
    }
    free(b);
    remove(ckp); remove(snap); remove(other);
    nbody_system_free(&s);
}

int main(void) {
    const char *path = rel_path("good"), *bad = rel_path("bad");
    nbody_system s = {0};
    nbody_sim *sim = NULL, *back = NULL;
    nbody_desc d;
    nbody_real t1;
    unsigned char *good;
    long len = 0, rec2, i;
    int silent = 0, empties = 0, lost_second = 0, tried = 0, format = 0, dropped = 0, body_hits = 0, body_refused = 0;
    checkpoint_reasons();
    memset(&d, 0, sizeof d);
    remove(path);
    nbody_ic_figure_eight(&s);
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    if (!sim) return check_finish();
    nbody_archive_append(sim, path);
    nbody_step(sim);
    nbody_archive_append(sim, path);
    t1 = nbody_get_stats(sim).t;
    nbody_destroy(sim);
    good = rel_slurp(path, &len);
    rec2 = good ? second_record(good, len) : -1;
    CHECK(good && rec2 > 24, "a two-record archive (%ld bytes, second record at %ld)", len, rec2);
    if (!good || rec2 <= 24) return check_finish();
    /* bytes 24 .. rec2 + 56: the first record whole, and the second record's header */
    for (i = 24; i < rec2 + 56 && i < len; ++i) {
        nbody_archive *a = NULL;
        nbody_result r;
        size_t count, damaged;
        good[i] ^= 0xFF;
        rel_spit(bad, good, len);
        good[i] ^= 0xFF;
        tried++;
        r = nbody_archive_open(&a, bad);
        if (r == NBODY_ERR_FORMAT) { format++; continue; }
        if (r != NBODY_OK) { silent++; continue; }
        count = nbody_archive_count(a);
        damaged = nbody_archive_damaged(a);
        if (count == 0) empties++;
        if (count < 2 && damaged == 0) silent++;
        if (count < 2) dropped++;
        /* the intact record is there: the second, unless the flip was in its own header */
        if (i < rec2 && !(count >= 1 && nbody_archive_time(a, count - 1) == t1)) lost_second++;
        if (i < rec2 && count == 2) {              /* a flip in the first checkpoint's body */
            body_hits++;
            if (nbody_archive_load(a, 0, &d, &back) == NBODY_ERR_FORMAT) body_refused++;
            else nbody_destroy(back);
            back = NULL;
        }
        if (i < rec2 && count >= 1 && nbody_archive_load(a, count - 1, &d, &back) == NBODY_OK) nbody_destroy(back);
        else if (i < rec2) lost_second++;
        back = NULL;
        nbody_archive_close(a);
    }
    printf("%d single-byte flips: %d dropped a record (each counted as damaged), %d silent, %d emptied the archive, "
           "%d lost the intact record, %d in a checkpoint body (%d refused at load)\n",
           tried, dropped, silent, empties, lost_second, body_hits, body_refused);
    CHECK(silent == 0, "no flip drops a record silently (%d did)", silent);
    CHECK(empties == 0, "no flip empties the archive (%d did)", empties);
    CHECK(lost_second == 0, "the intact second record survives every flip in the first (%d lost it)", lost_second);
    CHECK(body_hits > 0 && body_refused == body_hits, "a damaged checkpoint body is refused at load (%d of %d)", body_refused,
          body_hits);
    CHECK(format == 0, "flips after the archive's header never make the archive unreadable (%d did)", format);
    free(good);
    remove(path);
    remove(bad);
    nbody_system_free(&s);
    return check_finish();
}
