/* central_body.c - the article's two galaxies side by side: the same disc of stars around a
   central body holding 99% of the mass (left: the stars just orbit, fastest near the
   centre) and 10% (right: the disc's own gravity takes over, it flies apart and gathers
   into clumps). nbody_ic_galaxy for both, one frame every 0.05 time units coloured by
   speed (colour map in example.h; each panel scaled to its own initial speeds).
   Usage: central_body [N [T_END [OUTDIR]]]          (defaults 2000, 3, central_frames)
   Build: cc -O2 -fopenmp -DNBODY_EX_PNG -I. examples/central_body.c -o central_body -lpng -lm */
#define _POSIX_C_SOURCE 200809L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"
#include <sys/stat.h>
#include <errno.h>

typedef struct panel { const char *label; const ex_scenario *sc; nbody_system s; nbody_sim *sim; double v_ref; } panel;

int main(int argc, char **argv) {
    const char *dir = argc > 3 ? argv[3] : "central_frames";
    long n = argc > 1 ? atol(argv[1]) : 2000;
    double t_end = argc > 2 ? atof(argv[2]) : 3.0;
    const double frame_dt = 0.05;
    const float white[3] = {0.6f, 0.6f, 0.6f};
    panel p[2];
    ex_image img;
    char path[4096], label[64];
    int k, i, frames = (int)ceil(t_end / frame_dt - 1e-9), terminal = ex_is_terminal(stdout);
    double start = ex_now(), last_report = -1;
    ex_eta eta;
    if (n < 2 || !(t_end > 0) || t_end > 1e5) { fprintf(stderr, "usage: central_body [N >= 2 [T_END > 0 [OUTDIR]]]\n"); return 2; }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) { fprintf(stderr, "central_body: cannot create %s: %s\n", dir, strerror(errno)); return 1; }
    if (ex_image_alloc(&img, 1280, 640) != 0) return 1;
    memset(p, 0, sizeof p);
    p[0].label = "CENTRAL BODY 99%"; p[0].sc = ex_find_scenario("galaxy");
    p[1].label = "CENTRAL BODY 10%"; p[1].sc = ex_find_scenario("galaxy10");
    for (i = 0; i < 2; ++i) {
        nbody_desc desc = NBODY_ZERO;
        desc.softening = (nbody_real)p[i].sc->softening;
        desc.dt = (nbody_real)p[0].sc->dt;            /* the smaller step of the two, for both */
        if (ex_make_scenario(p[i].sc, &p[i].s, (size_t)n, 7) != NBODY_OK || nbody_create(&p[i].sim, &desc, &p[i].s) != NBODY_OK) return 1;
        p[i].v_ref = ex_speed_scale(&p[i].s);
    }
    ex_eta_start(&eta, 0);
    for (k = 0; k <= frames; ++k) {
        ex_image_clear(&img);
        for (i = 0; i < 2; ++i) {
            ex_view v = ex_view_whole(&img, p[i].sc->view);
            v.pw = img.w / 2; v.px = i * v.pw;
            if (nbody_advance(p[i].sim, (nbody_real)fmin(t_end, k * frame_dt)) != NBODY_OK || nbody_get_state(p[i].sim, &p[i].s) != NBODY_OK) {
                fprintf(stderr, "central_body: the simulation failed\n");
                return 1;
            }
            ex_draw_system(&img, &v, &p[i].s, p[i].v_ref, (float)(6000.0 / (double)n + 0.3));
            ex_draw_text(&img, v.px + 12, 12, 3, p[i].label, white);
        }
        snprintf(label, sizeof label, "T = %.2f", (double)p[0].s.t);
        ex_draw_text(&img, 12, img.h - 27, 3, label, white);
        snprintf(path, sizeof path, "%s/frame_%06d.png", dir, k);
        if (ex_write_png(&img, path, 1.5f) != 0) { fprintf(stderr, "central_body: cannot write %s\n", path); return 1; }
        if (ex_now() - last_report >= (terminal ? 0.1 : 2.0) || k == frames) {   /* bar, or a line every 2 s */
            ex_progress(stdout, terminal, (double)p[0].s.t, t_end, ex_now() - start, ex_eta_seconds(&eta, (double)p[0].s.t, t_end), NAN);
            last_report = ex_now();
        }
    }
    if (terminal) printf("\n");
    printf("wrote %d frames %s/frame_000000.png ...\n", frames + 1, dir);
    for (i = 0; i < 2; ++i) { nbody_destroy(p[i].sim); nbody_system_free(&p[i].s); }
    ex_image_free(&img);
    return 0;
}
