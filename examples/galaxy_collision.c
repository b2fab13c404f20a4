/* galaxy_collision.c - the article's headline run: two disc galaxies, each around a central
   body of 90% of its mass, fall into each other (nbody_ic_collision). Writes one PNG frame
   every 0.05 time units, bodies coloured by speed (blue slow, green medium, red fast: the
   colour map in example.h), and joins them into an MP4 when ffmpeg is on the PATH.
   Usage: galaxy_collision [N [T_END [OUTDIR]]]     (defaults 2000, 6, collision_frames)
   Build: cc -O2 -fopenmp -DNBODY_EX_PNG -I. examples/galaxy_collision.c -o galaxy_collision -lpng -lm */
#define _POSIX_C_SOURCE 200809L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"
#include <sys/stat.h>
#include <errno.h>

int main(int argc, char **argv) {
    const ex_scenario *sc = ex_find_scenario("collision");
    const char *dir = argc > 3 ? argv[3] : "collision_frames";
    long n = argc > 1 ? atol(argv[1]) : 2000;
    double t_end = argc > 2 ? atof(argv[2]) : sc->t_end, e0, v_ref, start = ex_now(), last_report = -1;
    int terminal = ex_is_terminal(stdout);
    ex_eta eta;
    const double frame_dt = 0.05;
    const float white[3] = {0.6f, 0.6f, 0.6f};
    nbody_system s = NBODY_ZERO;
    nbody_desc desc = NBODY_ZERO;
    nbody_sim *sim;
    ex_image img;
    char path[4096], label[64];
    int k, frames = (int)ceil(t_end / frame_dt - 1e-9);
    if (n < 2 || !(t_end > 0) || t_end > 1e5) { fprintf(stderr, "usage: galaxy_collision [N >= 2 [T_END > 0 [OUTDIR]]]\n"); return 2; }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) { fprintf(stderr, "galaxy_collision: cannot create %s: %s\n", dir, strerror(errno)); return 1; }
    if (ex_make_scenario(sc, &s, (size_t)n, 1) != NBODY_OK || ex_image_alloc(&img, 960, 720) != 0) return 1;
    desc.softening = (nbody_real)sc->softening;
    desc.dt = (nbody_real)sc->dt;
    if (nbody_create(&sim, &desc, &s) != NBODY_OK) return 1;
    e0 = ex_energy(&s, 1, sc->softening);
    v_ref = ex_speed_scale(&s);
    ex_eta_start(&eta, 0);
    for (k = 0; k <= frames; ++k) {
        ex_view v = ex_view_whole(&img, sc->view);
        if (nbody_advance(sim, (nbody_real)fmin(t_end, k * frame_dt)) != NBODY_OK || nbody_get_state(sim, &s) != NBODY_OK) {
            fprintf(stderr, "galaxy_collision: the simulation failed at t = %g\n", (double)nbody_get_stats(sim).t);
            return 1;
        }
        ex_image_clear(&img);
        ex_draw_system(&img, &v, &s, v_ref, (float)(8000.0 / (double)n + 0.3));
        snprintf(label, sizeof label, "T = %.2f  N = %ld", (double)s.t, n);
        ex_draw_text(&img, 12, 12, 3, label, white);
        snprintf(path, sizeof path, "%s/frame_%06d.png", dir, k);
        if (ex_write_png(&img, path, 1.5f) != 0) { fprintf(stderr, "galaxy_collision: cannot write %s\n", path); return 1; }
        /* the bar on a terminal, else a line every 2 s and the last frame */
        if (ex_now() - last_report >= (terminal ? 0.1 : 2.0) || k == frames) {
            ex_progress(stdout, terminal, (double)s.t, t_end, ex_now() - start, ex_eta_seconds(&eta, (double)s.t, t_end),
                        ex_drift(&s, 1, sc->softening, e0));
            last_report = ex_now();
        }
    }
    if (terminal) printf("\n");
    printf("wrote %d frames %s/frame_000000.png ...\n", frames + 1, dir);
    if (system("command -v ffmpeg >/dev/null 2>&1") == 0) {
        snprintf(path, sizeof path, "ffmpeg -loglevel error -y -framerate 30 -i '%s/frame_%%06d.png' -pix_fmt yuv420p '%s/collision.mp4'", dir, dir);
        printf("%s\n", system(path) == 0 ? "wrote the movie collision.mp4 beside the frames" : "ffmpeg failed");
    } else {
        printf("no ffmpeg on the PATH: frames only (ffmpeg -framerate 30 -i %s/frame_%%06d.png -pix_fmt yuv420p collision.mp4)\n", dir);
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
    ex_image_free(&img);
    return 0;
}
