/* test_large_files.c - 64-bit file offsets: a snapshot archive whose last record starts past
   2 GiB is indexed, loaded bit for bit and appended to (long is 32 bits on Windows, so plain
   fseek/ftell stop at 2 GiB there; 32-bit POSIX needs 64-bit off_t). The file is sparse:
   the test writes a first record through the library, then a record whose checkpoint is a
   2.25 GiB hole (a seek past the end, one byte written), then the library appends a real
   record behind it; a few kilobytes reach the disk where the filesystem keeps holes. Skipped,
   with the reason, only where the filesystem refuses a file that large. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"

#define PATH "build/large_archive.tmp"
#define HOLE ((nbody__off)9 << 28)     /* 2.25 GiB of checkpoint that is never read */

/* appends a record head claiming a HOLE-byte checkpoint (archive layout: >>archive), then
   the hole itself: 1 done, 0 the seek past 2 GiB failed (the library's 64-bit seek: a
   failure, seeking past the end is always allowed), -1 the filesystem refused the write */
static int append_hole_record(nbody_real t, unsigned long long n) {
    FILE *f = nbody__fopen(PATH, "r+b");
    unsigned long long u[3], len = (unsigned long long)HOLE, sum = NBODY__FNV_SEED;
    int r;
    if (!f) return -1;
    u[0] = n; u[1] = 0; u[2] = 0;
    sum = nbody__fnv1a(sum, &t, sizeof t);
    sum = nbody__fnv1a(sum, u, sizeof u);
    sum = nbody__fnv1a(sum, &len, sizeof len);
    r = nbody__fseek(f, 0, SEEK_END) == 0 && fwrite(NBODY__REC_MAGIC, 1, 8, f) == 8 && fwrite(&t, sizeof t, 1, f) == 1 &&
        fwrite(u, sizeof u, 1, f) == 1 && fwrite(&len, sizeof len, 1, f) == 1 && fwrite(&sum, sizeof sum, 1, f) == 1 ? 1 : -1;
    if (r == 1 && nbody__fseek(f, HOLE - 1, SEEK_CUR) != 0) r = 0;
    if (r == 1 && fputc(0, f) != 0) r = -1;
    if (fclose(f) != 0 && r == 1) r = -1;
    return r;
}

static nbody__off file_size(const char *path) {
    FILE *f = nbody__fopen(path, "rb");
    nbody__off size = -1;
    if (f && nbody__fseek(f, 0, SEEK_END) == 0) size = nbody__ftell(f);
    if (f) fclose(f);
    return size;
}

/* the state of a simulation equals another's, bit for bit */
static int same_state(nbody_sim *a, nbody_sim *b, size_t n) {
    nbody_system sa, sb;
    int same;
    memset(&sa, 0, sizeof sa); memset(&sb, 0, sizeof sb);
    if (nbody_system_alloc(&sa, n) != NBODY_OK || nbody_system_alloc(&sb, n) != NBODY_OK) return 0;
    same = nbody_get_state(a, &sa) == NBODY_OK && nbody_get_state(b, &sb) == NBODY_OK && sa.t == sb.t &&
           memcmp(sa.x, sb.x, n * sizeof(nbody_real)) == 0 && memcmp(sa.vz, sb.vz, n * sizeof(nbody_real)) == 0;
    nbody_system_free(&sa); nbody_system_free(&sb);
    return same;
}

int main(void) {
    nbody_system s;
    nbody_desc d;
    nbody_sim *sim = NULL, *back = NULL;
    nbody_archive *a = NULL;
    nbody__off size;
    const size_t n = 32;
    int k;
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
    nbody__remove(PATH);
    CHECK(nbody_ic_plummer(&s, n, 3) == NBODY_OK, "initial conditions");
    d.softening = (nbody_real)0.05; d.dt = (nbody_real)0.01;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    if (!sim) return check_finish();
    for (k = 0; k < 3; ++k) nbody_step(sim);
    CHECK(nbody_archive_append(sim, PATH) == NBODY_OK, "first record");
    k = append_hole_record((nbody_real)0.5, n);
    CHECK(k != 0, "nbody__fseek moves 2.25 GiB past the end of a file");
    if (k < 0) {
        check_skip(NULL, "the filesystem refuses a sparse file past 2 GiB (" PATH ")");
    } else if (k > 0) {
        for (k = 0; k < 3; ++k) nbody_step(sim);
        CHECK(nbody_archive_append(sim, PATH) == NBODY_OK, "a record appended past 2 GiB");
        size = file_size(PATH);
        CHECK(size > HOLE && size > ((nbody__off)1 << 31), "the archive is %.0f bytes, past 2 GiB", (double)size);
        CHECK(nbody_archive_open(&a, PATH) == NBODY_OK, "open the archive");
        if (a) {
            CHECK(nbody_archive_count(a) == 3, "3 records indexed, the last past 2 GiB: %lu", (unsigned long)nbody_archive_count(a));
            CHECK(nbody_archive_count(a) == 3 && a->offset[2] > ((nbody__off)1 << 31), "the last record starts at %.0f",
                  nbody_archive_count(a) == 3 ? (double)a->offset[2] : -1.0);
            CHECK(nbody_archive_time(a, 2) == nbody_get_stats(sim).t, "its time");
            CHECK(nbody_archive_load(a, 2, &d, &back) == NBODY_OK, "load the record past 2 GiB");
            CHECK(back && same_state(back, sim, n), "its state is the simulation's, bit for bit");
            nbody_destroy(back);
            nbody_archive_close(a);
        }
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
    nbody__remove(PATH);
    return check_finish();
}
