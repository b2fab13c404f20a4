/* fuzz_archive.c - libFuzzer harness for the snapshot archive reader: nbody_archive_open,
   nbody_archive_time and nbody_archive_load on every indexed record. Each input is written
   to a scratch file and read; whatever loads is stepped and appended to a second archive,
   so a bad value that slipped through would show as a sanitizer report. The only results
   allowed are OK, FORMAT, IO, OUT_OF_MEMORY and, for a record whose desc differs from the
   defaults, INVALID_ARGUMENT; an index must never hold more records than the file has room
   for. Build and run: make fuzz (with the loaders' harness) or make fuzz-archive. */
#define NBODY_IMPLEMENTATION
#include "../../nbody.h"
#include <stdint.h>
#include <unistd.h>

static char path[64], out[64];

static void one(const uint8_t *data, size_t size) {
    nbody_archive *a = NULL;
    nbody_desc d;
    nbody_result r;
    size_t i, count;
    FILE *f;
    if (!path[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(path, sizeof path, "%s/nbody_fuzz_arc_%ld.in", dir, (long)getpid());
        snprintf(out, sizeof out, "%s/nbody_fuzz_arc_%ld.out", dir, (long)getpid());
    }
    f = fopen(path, "wb");
    if (!f) return;
    if (size) fwrite(data, 1, size, f);
    fclose(f);
    r = nbody_archive_open(&a, path);
    if (r != NBODY_OK) {
        if (r != NBODY_ERR_FORMAT && r != NBODY_ERR_IO && r != NBODY_ERR_OUT_OF_MEMORY) __builtin_trap();
        return;
    }
    count = nbody_archive_count(a);
    if (count > size / 56 + 1 || nbody_archive_damaged(a) > size) __builtin_trap();   /* a record header is 56+ bytes */
    memset(&d, 0, sizeof d);
    for (i = 0; i < count && i < 4; ++i) {
        nbody_sim *sim = NULL;
        nbody_real t = nbody_archive_time(a, i);
        if (!(t == t)) __builtin_trap();                    /* an indexed record has a time */
        r = nbody_archive_load(a, i, &d, &sim);
        if (r == NBODY_OK) {
            remove(out);
            nbody_step(sim);
            nbody_archive_append(sim, out);
            nbody_destroy(sim);
        } else if (r != NBODY_ERR_FORMAT && r != NBODY_ERR_IO && r != NBODY_ERR_OUT_OF_MEMORY &&
                   r != NBODY_ERR_INVALID_ARGUMENT) {
            __builtin_trap();
        }
    }
    nbody_archive_close(a);
}

/* The record headers and the checkpoints inside carry FNV-1a checksums; nearly every
   mutation would stop there. Each input is read as it is, and again with every record's
   header checksum and its checkpoint's trailing checksum recomputed. */
static void fix_sums(uint8_t *b, size_t size) {
    size_t p;
    for (p = 0; p + 8 <= size; ++p) {
        unsigned long long u[3], len, sum;
        size_t h = p + 8, radii, end;
        if (memcmp(b + p, "NBODYREC", 8) != 0) continue;
        if (h + sizeof(nbody_real) + sizeof u > size) return;
        memcpy(u, b + h + sizeof(nbody_real), sizeof u);
        radii = u[2] == 1 && u[0] < size ? (size_t)u[0] * sizeof(nbody_real) : 0;
        end = h + sizeof(nbody_real) + sizeof u + radii;
        if (end + 16 > size) return;
        memcpy(&len, b + end, 8);
        sum = nbody__fnv1a(NBODY__FNV_SEED, b + h, end + 8 - h);
        memcpy(b + end + 8, &sum, 8);
        end += 16;
        if (len >= 16 && len <= size - end) {
            sum = nbody__fnv1a(NBODY__FNV_SEED, b + end, (size_t)len - 8);
            memcpy(b + end + len - 8, &sum, 8);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t fixed[1 << 20];
    one(data, size);
    if (size < 24 || size > sizeof fixed) return 0;
    memcpy(fixed, data, size);
    fix_sums(fixed, size);
    if (memcmp(fixed, data, size) != 0) one(fixed, size);
    return 0;
}
