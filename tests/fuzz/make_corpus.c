/* make_corpus.c - writes the seed corpus for fuzz_load into the directory given (valid
   snapshots and checkpoints of small n, truncated copies and a bad magic), and with a second
   directory the one for fuzz_archive (archives of one and three records, one with radii
   and a merge that changed n, a torn one, one with a damaged first record). */
#define NBODY_IMPLEMENTATION
#include "../../nbody.h"
#include <stdio.h>
#include <stdlib.h>

static char name[512];
static const char *at(const char *dir, const char *file) { snprintf(name, sizeof name, "%s/%s", dir, file); return name; }

/* copy the first `keep` bytes of src to dst, optionally flipping byte `flip` (-1 none) */
static void variant(const char *dir, const char *src, const char *dst, long keep, long flip) {
    FILE *f = fopen(at(dir, src), "rb");
    unsigned char buf[1 << 16];
    long n;
    if (!f) return;
    n = (long)fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (keep >= 0 && keep < n) n = keep;
    if (flip >= 0 && flip < n) buf[flip] ^= 0xFF;
    f = fopen(at(dir, dst), "wb");
    if (f) { fwrite(buf, 1, (size_t)n, f); fclose(f); }
}

static void archives(const char *dir) {
    nbody_system s;
    nbody_sim *sim;
    nbody_desc d;
    nbody_real r[5] = {0.01f, 0.02f, 0.01f, 0.03f, 0.01f};
    memset(&d, 0, sizeof d);
    memset(&s, 0, sizeof s);
    nbody_ic_figure_eight(&s);
    if (nbody_create(&sim, &d, &s) == NBODY_OK) {
        remove(at(dir, "arc_fig8_1"));
        nbody_archive_append(sim, at(dir, "arc_fig8_1"));
        remove(at(dir, "arc_fig8_3"));
        nbody_archive_append(sim, at(dir, "arc_fig8_3"));
        nbody_step(sim);
        nbody_archive_append(sim, at(dir, "arc_fig8_3"));
        nbody_step(sim);
        nbody_archive_append(sim, at(dir, "arc_fig8_3"));
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
    nbody_ic_plummer(&s, 5, 3);
    d.collision = NBODY_COLLISION_MERGE;
    if (nbody_create(&sim, &d, &s) == NBODY_OK) {
        nbody_set_radii(sim, r);
        remove(at(dir, "arc_radii"));
        nbody_archive_append(sim, at(dir, "arc_radii"));
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
    variant(dir, "arc_fig8_3", "arc_torn", 2000, -1);
    variant(dir, "arc_fig8_3", "arc_damaged_first", -1, 40);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "tests/fuzz/corpus";
    if (argc > 2) archives(argv[2]);
    nbody_system s;
    nbody_sim *sim;
    nbody_desc d;
    memset(&d, 0, sizeof d);
    memset(&s, 0, sizeof s);
    nbody_ic_plummer(&s, 1, 1); nbody_save(at(dir, "snap_n1"), &s); nbody_system_free(&s);
    nbody_ic_figure_eight(&s); nbody_save(at(dir, "snap_fig8"), &s);
    if (nbody_create(&sim, &d, &s) == NBODY_OK) {
        nbody_checkpoint_save(sim, at(dir, "ckp_fig8_t0"));
        nbody_advance(sim, (nbody_real)0.01);
        nbody_checkpoint_save(sim, at(dir, "ckp_fig8_t001"));
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
    nbody_ic_plummer(&s, 5, 3); nbody_save(at(dir, "snap_plummer5"), &s);
    if (nbody_create(&sim, &d, &s) == NBODY_OK) { nbody_checkpoint_save(sim, at(dir, "ckp_plummer5")); nbody_destroy(sim); }
    nbody_system_free(&s);
    variant(dir, "snap_fig8", "snap_truncated", 100, -1);
    variant(dir, "snap_fig8", "snap_badmagic", -1, 0);
    variant(dir, "ckp_fig8_t001", "ckp_truncated", 300, -1);
    variant(dir, "ckp_fig8_t001", "ckp_badmagic", -1, 3);
    variant(dir, "ckp_fig8_t001", "ckp_badsum", -1, 200);
    return 0;
}
