/* fuzz_load.c - libFuzzer harness for the two file readers, nbody_load and
   nbody_checkpoint_load. Each input is written to a scratch file and read by both; whatever
   loads is then used (measured, stepped, saved again) so a bad value that slipped through
   would show as a sanitizer report. Build and run: make fuzz (60 s) or make fuzz-long. */
#define NBODY_IMPLEMENTATION
#include "../../nbody.h"
#include <stdint.h>
#include <unistd.h>

static char path[64], out[64];

/* read `data` as a file through both loaders */
static void one(const uint8_t *data, size_t size) {
    nbody_system s;
    nbody_sim *sim = NULL;
    nbody_desc d;
    nbody_invariants inv;
    nbody_result r;
    FILE *f;
    if (!path[0]) {
        /* a RAM disk where there is one: the files are rewritten on every input */
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(path, sizeof path, "%s/nbody_fuzz_%ld.in", dir, (long)getpid());
        snprintf(out, sizeof out, "%s/nbody_fuzz_%ld.out", dir, (long)getpid());
    }
    f = fopen(path, "wb");
    if (!f) return;
    if (size) fwrite(data, 1, size, f);
    fclose(f);

    memset(&s, 0, sizeof s);
    r = nbody_load(path, &s);
    if (r == NBODY_OK) {
        nbody_measure(&s, 1, 0, &inv);
        if (nbody_save(out, &s) != NBODY_OK) __builtin_trap();
        nbody_system_free(&s);
    } else if (r != NBODY_ERR_FORMAT && r != NBODY_ERR_IO && r != NBODY_ERR_OUT_OF_MEMORY) {
        __builtin_trap();                          /* only these are allowed */
    }

    memset(&d, 0, sizeof d);                       /* the corpus checkpoints use the defaults */
    r = nbody_checkpoint_load(&sim, &d, path);
    if (r == NBODY_OK) {
        nbody_step(sim);
        nbody_checkpoint_save(sim, out);
        nbody_destroy(sim);
    } else if (r != NBODY_ERR_FORMAT && r != NBODY_ERR_IO && r != NBODY_ERR_OUT_OF_MEMORY &&
               r != NBODY_ERR_INVALID_ARGUMENT) {
        __builtin_trap();
    }
}

/* Each input is read as it is, and again with its last 8 bytes replaced by the right
   checksum: otherwise nearly every mutation stops at the checksum and the parser behind it
   is never reached. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t fixed[1 << 20];
    unsigned long long sum;
    one(data, size);
    if (size < 16 || size > sizeof fixed) return 0;
    memcpy(fixed, data, size);
    sum = nbody__fnv1a(NBODY__FNV_SEED, fixed, size - 8);
    memcpy(fixed + size - 8, &sum, 8);
    one(fixed, size);
    return 0;
}
