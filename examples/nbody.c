/* nbody.c - the command-line simulator `nbody`: any scenario, engine and integrator from the
   command line, with snapshots to resume from, CSV and PNG frames, and a progress bar with
   the ETA and the energy drift. `nbody --help` lists the options, `nbody --list` what this
   build offers.
   Build: cc -O2 -fopenmp -DNBODY_EX_PNG -I. examples/nbody.c -o nbody -lpng -lm
          (leave out -DNBODY_EX_PNG and -lpng to build without pictures)
   For mpirun (make build/nbody_mpi): mpicc -O2 -fopenmp -DNBODY_WITH_MPI -I. examples/nbody.c
          -o nbody_mpi -lm; then mpirun -np 4 ./nbody_mpi --engine tree --n 100000: the ranks
          share the bodies (docs/scaling.md), rank 0 prints and writes the files.

   How a run is cut into pieces, and why --resume is exact: the run advances from output
   time to output time (multiples of --snapshot-every, --png-every, --video-every, and t-end),
   each piece landing exactly on its end; in between each method takes its own steps (plain
   steps of --dt without --tolerance). The progress display and Ctrl-C ride on the library's
   heartbeat (desc.progress), which watches and never changes a step; a resumed run starts
   on a piece's end, so it cuts the rest of the run into the same pieces.
   At each --snapshot-every time (and at t-end) the run writes two files: OUT_snap_K.snap,
   the bodies and the time (nbody_save: the portable file for analysis, CSV, other tools),
   and OUT_snap_K.ckpt, a checkpoint (nbody_checkpoint_save: every buffer and scalar of the
   method: the next step size of an adaptive run, the past derivatives of Adams, the step
   counters). --resume takes either. From a checkpoint, with the same options, the run
   continues bit for bit as the run straight through, for every method, adaptive or not.
   From a snapshot it restarts the method from the bodies alone: still bitwise for fixed-step
   methods without history (Euler, midpoint, leapfrog, RK4, ...), only approximately for
   adaptive and multistep runs. */
#define _POSIX_C_SOURCE 200809L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#if defined(_OPENMP) && !defined(NBODY_NO_OPENMP)
#include <omp.h>   /* omp_get_max_threads: the thread count reported */
#endif

typedef struct options {
    const char *scenario, *engine, *method, *resume, *out, *video;
    size_t n;
    double dt, tolerance, theta, t_end, softening, snapshot_every, png_every, video_every;
    int csv, list, help, version, width, fps, threads, order, device, devices;
    unsigned long long seed;
    const char *archive;           /* --archive FILE: snapshots for exact restarts, one file */
    double archive_every;          /* --archive-every T (simulation time) */
} options;

/* under mpirun (built with NBODY_WITH_MPI) every rank runs this program on its share of the
   bodies; rank 0 alone prints and writes snapshots, CSV, pictures and video (checkpoints are
   written by all together) */
static int mpi_rank = 0;
#ifdef NBODY_WITH_MPI
static MPI_Comm mpi_world;
#endif

static void usage(FILE *f) {
    size_t i;
    fprintf(f,
            "usage: nbody [options]      (every option also as --option=value)\n"
            "  --scenario NAME       initial conditions (default collision):\n");
    for (i = 0; i < EX_NSCENARIOS; ++i)
        fprintf(f, "                          %-12s %s (n = %lu)\n", ex_scenarios[i].name, ex_scenarios[i].what,
                (unsigned long)ex_scenarios[i].n);
    fprintf(f,
            "  --n N                 number of bodies (not for figure8, pythagorean, outer)\n"
            "  --engine NAME         simple, openmp, block, tree, cuda, ... (--list; default block)\n"
            "  --method NAME         euler, midpoint, leapfrog, rk4, rkdp, ..., radau, whfast (--list; default leapfrog)\n"
            "  --order K             Adams-Bashforth order 1..5 (--method adams; default 5)\n"
            "  --dt DT               fixed step, or the first step with --tolerance (default: per scenario)\n"
            "  --tolerance TOL       adaptive step control; only for the embedded methods rkck, rkdp,\n"
            "                        rkdverk, rkf, rklc and bs (default 0: fixed steps of --dt)\n"
            "  --theta THETA         tree engines: opening angle in (0, 1.2] (default 0.5)\n"
            "  --softening EPS       Plummer softening (default: per scenario)\n"
            "  --t-end T             simulated time to reach (default: per scenario)\n"
            "  --threads N           CPU threads (default: OpenMP's, OMP_NUM_THREADS)\n"
            "  --device I            GPU engines: the CUDA or OpenCL device index (default 0; --list)\n"
            "  --snapshot-every T    write OUT_snap_K.snap and OUT_snap_K.ckpt (checkpoint) at t = K*T,\n"
            "                        OUT_final.snap and OUT_final.ckpt at t-end\n"
            "  --png-every T         write OUT_frame_K.png (K = 000000, 000001, ...) at t = K*T (needs libpng)\n"
            "  --video FILE.mp4      a video through ffmpeg, a frame at t = K*T for T = --video-every\n"
            "  --video-every T       time between video frames (default: --png-every, else t-end / 300)\n"
            "  --fps N               video frames per second (default 30)\n"
            "  --csv                 also write every snapshot (or only the final state) as CSV\n"
            "  --out PREFIX          file name prefix for outputs (default nbody); folders are created\n"
            "  --size PIXELS         picture height (default 512; width 4/3 of it)\n"
            "  --resume FILE         continue from a checkpoint (.ckpt: exact) or a snapshot (.snap:\n"
            "                        the bodies only); give the same options as the run that wrote it\n"
            "  --archive FILE        append exact-restart snapshots to one archive file (docs/steering.md)\n"
            "  --archive-every T     ... at t = 0 and after each multiple of T (default: t-end / 10)\n"
            "  --resume FILE:K       continue from snapshot K of an archive (exact)\n"
            "  --seed S              random seed of the initial conditions (default 1)\n"
            "  --devices N           devices used by the CUDA and OpenCL engines, from --device on (default 1)\n"
            "  --list                engines, methods and devices available in this build\n"
            "  --version             the nbody.h version\n"
            "  --help                this text\n"
            "Progress: on a terminal a bar redrawn 10 times a second; piped or redirected, one line\n"
            "every 2 seconds. The ETA comes from the rate over the last seconds, \"unknown\" until it is steady.\n"
            "Ctrl-C writes OUT_interrupted.ckpt (and .snap) at the last step and exits with 130;\n"
            "--resume OUT_interrupted.ckpt continues exactly.\n"
            "Exit status: 0 done, 1 the simulation failed, 2 bad arguments, 130 interrupted.\n");
}

/* a refusal of the options: one line naming the option and the value, exit status 2 */
static int bad(const char *fmt, const char *what) {
    fprintf(stderr, "nbody: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, " (nbody --help lists the options)\n");
    return 2;
}

/* strict numbers: the whole text, finite, in range */
static int parse_real(const char *text, double lo, int lo_open, double *out) {
    char *end;
    double v;
    errno = 0;
    v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v) || v < lo || (lo_open && v == lo)) return 0;
    *out = v;
    return 1;
}

static int parse_count(const char *text, unsigned long long *out) {
    char *end;
    unsigned long long v;
    if (!*text || *text == '-' || *text == '+') return 0;
    errno = 0;
    v = strtoull(text, &end, 10);
    if (*end || errno) return 0;
    *out = v;
    return 1;
}

/* the parsers of option values; *want: what the option takes, for the refusal */
static int count_in(const char *text, unsigned long long lo, unsigned long long hi, unsigned long long *out,
                    const char **want) {
    static char text_of_range[64];
    snprintf(text_of_range, sizeof text_of_range, "a whole number from %llu to %llu", lo, hi);
    *want = text_of_range;
    return parse_count(text, out) && *out >= lo && *out <= hi;
}
static int positive(const char *text, double *out, const char **want) {
    *want = "a finite number > 0";
    return parse_real(text, 0, 1, out);
}
static int not_negative(const char *text, double *out, const char **want) {
    *want = "a finite number >= 0";
    return parse_real(text, 0, 0, out);
}

static int takes_value(const char *a) {
    static const char *const names[] = {"--scenario", "--engine", "--method", "--resume", "--out", "--n", "--seed",
                                        "--size", "--dt", "--tolerance", "--theta", "--t-end", "--softening",
                                        "--snapshot-every", "--png-every", "--threads", "--order", "--device",
                                        "--video", "--video-every", "--fps",
                                        "--archive", "--archive-every", "--devices"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (!strcmp(a, names[i])) return 1;
    return 0;
}

/* GNU long options: --name value and --name=value */
static int parse_args(int argc, char **argv, options *o) {
    int i;
    memset(o, 0, sizeof *o);
    o->scenario = "collision"; o->out = "nbody"; o->seed = 1; o->width = 512; o->fps = 30;
    o->dt = o->t_end = o->softening = o->theta = -1;   /* -1: the scenario's / the default */
    o->order = o->device = -1;
    for (i = 1; i < argc; ++i) {
        char name[64];
        const char *a = argv[i], *eq = strchr(a, '='), *v;
        unsigned long long u = 0;
        int ok = 1, inline_value = 0;
        const char *want = "";
        if (!strncmp(a, "--", 2) && eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            a = name;
            v = eq + 1;
            inline_value = 1;
        } else {
            v = i + 1 < argc ? argv[i + 1] : NULL;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "--list") || !strcmp(a, "--csv") ||
            !strcmp(a, "--version")) {
            if (inline_value) return bad("option %s takes no value", a);
            if (!strcmp(a, "--list")) o->list = 1;
            else if (!strcmp(a, "--csv")) o->csv = 1;
            else if (!strcmp(a, "--version")) o->version = 1;
            else o->help = 1;
            continue;
        }
        if (!strncmp(a, "--", 2) && !takes_value(a)) return bad("unknown option '%s'", argv[i]);
        if (!takes_value(a)) return bad("'%s' is not an option (a value goes after its option: --n 100; --csv, --list take none)", argv[i]);
        /* "--scenario --n 5": the next option is not --scenario's value (--out=--x gives one) */
        if (!v || (!inline_value && !strncmp(v, "--", 2) && strlen(v) > 2)) return bad("%s needs a value", a);
        if (!strcmp(a, "--scenario")) o->scenario = v;
        else if (!strcmp(a, "--engine")) o->engine = v;
        else if (!strcmp(a, "--method")) o->method = v;
        else if (!strcmp(a, "--resume")) o->resume = v;
        else if (!strcmp(a, "--out")) { o->out = v; ok = *v != 0; want = "a file name prefix"; }
        else if (!strcmp(a, "--video")) { o->video = v; ok = *v != 0; want = "a file name"; }
        else if (!strcmp(a, "--archive")) { o->archive = v; ok = *v != 0; want = "a file name"; }
        else if (!strcmp(a, "--n")) { ok = count_in(v, 1, 100000000, &u, &want); o->n = (size_t)u; }
        else if (!strcmp(a, "--seed")) { ok = parse_count(v, &o->seed); want = "a whole number >= 0"; }
        else if (!strcmp(a, "--size")) { ok = count_in(v, 16, 8192, &u, &want); o->width = (int)u; }
        else if (!strcmp(a, "--threads")) { ok = count_in(v, 1, 1000000, &u, &want); o->threads = (int)u; }
        else if (!strcmp(a, "--order")) { ok = count_in(v, 1, 5, &u, &want); o->order = (int)u; }
        else if (!strcmp(a, "--device")) { ok = count_in(v, 0, 1024, &u, &want); o->device = (int)u; }
        else if (!strcmp(a, "--devices")) { ok = count_in(v, 1, 1024, &u, &want); o->devices = (int)u; }
        else if (!strcmp(a, "--fps")) { ok = count_in(v, 1, 240, &u, &want); o->fps = (int)u; }
        else if (!strcmp(a, "--dt")) ok = positive(v, &o->dt, &want);
        else if (!strcmp(a, "--tolerance")) ok = not_negative(v, &o->tolerance, &want);
        else if (!strcmp(a, "--theta")) ok = not_negative(v, &o->theta, &want);
        else if (!strcmp(a, "--t-end")) ok = not_negative(v, &o->t_end, &want);
        else if (!strcmp(a, "--softening")) ok = not_negative(v, &o->softening, &want);
        else if (!strcmp(a, "--snapshot-every")) ok = positive(v, &o->snapshot_every, &want);
        else if (!strcmp(a, "--png-every")) ok = positive(v, &o->png_every, &want);
        else if (!strcmp(a, "--video-every")) ok = positive(v, &o->video_every, &want);
        else if (!strcmp(a, "--archive-every")) ok = positive(v, &o->archive_every, &want);
        if (!ok) {
            fprintf(stderr, "nbody: %s '%s': want %s (nbody --help lists the options)\n", a, v, want);
            return 2;
        }
        if (!inline_value) ++i;
    }
    return 0;
}

/* the library's log: INFO lines (the device an engine runs on) and WARNINGs go to stdout
   and stderr as they come; the last ERROR is kept for the message of a failure */
static char last_error[512];
static void on_log(nbody_log_level level, const char *message, void *user_data) {
    (void)user_data;
    if (level == NBODY_LOG_ERROR) { snprintf(last_error, sizeof last_error, "%s", message); return; }
    fprintf(level == NBODY_LOG_INFO ? stdout : stderr, "%s\n", message);
}
/* the library's reason for the error a call just returned (nbody_last_error: also for the
   functions without a desc, such as nbody_load and nbody_save), without its "nbody: " */
static const char *library_reason(nbody_result res) {
    const char *line = nbody_last_error();
    if (!*line) return nbody_result_string(res);
    return strncmp(line, "nbody: ", 7) == 0 ? line + 7 : line;
}
static void log_quietly(nbody_log_level level, const char *message, void *user_data) {
    if (level == NBODY_LOG_INFO && user_data) snprintf((char *)user_data, 512, "%s", message);
}

/* the CPU threads a run uses */
static int threads_in_use(int asked) {
#if defined(_OPENMP) && !defined(NBODY_NO_OPENMP)
    return asked > 0 ? asked : omp_get_max_threads();
#else
    (void)asked;
    return 1;
#endif
}

static int gpu_engine(nbody_engine e) {
    return e == NBODY_ENGINE_CUDA || e == NBODY_ENGINE_CUDA_TREE || e == NBODY_ENGINE_OPENCL || e == NBODY_ENGINE_OPENCL_TREE;
}
static int tree_engine(nbody_engine e) {
    return e == NBODY_ENGINE_TREE || e == NBODY_ENGINE_CUDA_TREE || e == NBODY_ENGINE_OPENCL_TREE;
}

/* try every engine and method: what nbody_create accepts in this build on this machine */
static void list_available(void) {
    nbody_system s = NBODY_ZERO;
    nbody_sim *sim;
    int i, dev;
    nbody_ic_figure_eight(&s);
    printf("engines:");
    for (i = 1; i < NBODY_ENGINE_COUNT_; ++i) {
        nbody_desc d = NBODY_ZERO;
        d.engine = (nbody_engine)i;
        if (!nbody_engine_available(d.engine) || nbody_create(&sim, &d, &s) != NBODY_OK) continue;
        nbody_destroy(sim);
        printf(" %s", nbody_engine_name(d.engine));
    }
    printf("\nmethods:");
    nbody_system_free(&s);
    nbody_ic_outer_solar_system(&s);   /* a central body: whfast accepts it too */
    for (i = 1; i < NBODY_METHOD_COUNT_; ++i) {
        nbody_desc d = NBODY_ZERO;
        d.method = (nbody_method)i;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) continue;
        nbody_destroy(sim);
        printf(" %s%s", nbody_method_name(d.method), nbody_method_adaptive(d.method) ? "*" : "");
    }
    printf("   (* adaptive: --tolerance)\npictures: %s\nvideo: %s\n", ex_have_png() ? "png (libpng)" : "none (built without libpng)",
           ex_have_ffmpeg() ? "mp4 (ffmpeg)" : "none: " EX_FFMPEG_MISSING);
    for (i = NBODY_ENGINE_CUDA; i <= NBODY_ENGINE_OPENCL; i += NBODY_ENGINE_OPENCL - NBODY_ENGINE_CUDA) {
        for (dev = 0; dev < 16 && nbody_engine_available((nbody_engine)i); ++dev) {
            char info[512] = "";
            nbody_desc d = NBODY_ZERO;
            d.engine = (nbody_engine)i;
            d.device = dev;
            d.log.func = log_quietly;
            d.log.user_data = info;
            if (nbody_create(&sim, &d, &s) != NBODY_OK) break;
            nbody_destroy(sim);
            printf("%s device %d%s%s\n", nbody_engine_name(d.engine), dev, *info ? ": " : "", info);
        }
    }
    nbody_system_free(&s);
}

/* x as the simulation holds a time: every time the run aims at (t-end, output times) is
   rounded to NBODY_REAL first, so that a float build lands on it and compares equal (a double
   t-end of 0.02 is never reached by a float t, which stops at 0.0199999996) */
static double in_real(double x) { return (double)(nbody_real)x; }

/* the first multiple of `every`, as NBODY_REAL holds it, after time t (every <= 0: never);
   +Inf when the multiples near t no longer move t (an interval NBODY_REAL cannot resolve) */
static double next_multiple(double t, double every) {
    double k;
    int tries;
    if (every <= 0) return HUGE_VAL;
    k = floor(t / every) + 1;
    for (tries = 0; tries < 4; ++tries, ++k)
        if (in_real(k * every) > t) return in_real(k * every);
    return HUGE_VAL;
}

typedef struct run {
    options o;
    const ex_scenario *sc;
    nbody_desc desc;
    nbody_sim *sim;
    nbody_system s;
    double e0, v_ref, t_end, start_wall;
    ex_image img;
    ex_video video;
    unsigned char *rgb;            /* a video frame */
    /* progress */
    int terminal;
    ex_eta eta;
    double last_report, report_every, last_measure, measure_cost, drift;
} run;

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted = 1; }

/* desc.progress: the progress line, and Ctrl-C (cancels the advance at the last step) */
/* rank 0's answer on every rank: a report gets the state (a collective call under MPI) and a
   cancel must stop every rank, so all ranks must agree on when, which their clocks alone
   would not (the callback runs after every step, the same steps on every rank) */
static int all_ranks(int yes) {
#ifdef NBODY_WITH_MPI
    MPI_Bcast(&yes, 1, MPI_INT, 0, mpi_world);
#endif
    return yes;
}

static int on_progress(const nbody_progress_info *p, void *user_data) {
    run *r = (run *)user_data;
    double now = ex_now();
    if (all_ranks(interrupted != 0)) return 1;
    if (!all_ranks(now - r->last_report >= r->report_every)) return 0;
    r->last_report = now;
    /* measuring the energy is O(n^2) too: keep it under a tenth of the run time */
    if (all_ranks(now - r->last_measure >= 10 * r->measure_cost)) {
        if (nbody_get_state(r->sim, &r->s) == NBODY_OK) r->drift = ex_drift(&r->s, r->desc.G, r->desc.softening, r->e0);
        r->measure_cost = ex_now() - now;
        r->last_measure = now;
    }
    ex_progress(stdout, r->terminal, (double)p->t, r->t_end, now - r->start_wall, ex_eta_seconds(&r->eta, (double)p->t, r->t_end),
                r->drift);
    return 0;
}

/* the picture of the state in r->s, with its label */
static void draw(run *r, double t) {
    const float grey[3] = {0.5f, 0.5f, 0.5f};
    char label[128];
    ex_view v = ex_view_whole(&r->img, r->sc->view);
    ex_image_clear(&r->img);
    ex_draw_system(&r->img, &v, &r->s, r->v_ref, (float)(6000.0 / (double)r->s.n * (r->img.h / 512.0) * (r->img.h / 512.0) + 0.3));
    snprintf(label, sizeof label, "%s  N = %lu  T = %.3f", r->sc->name, (unsigned long)r->s.n, t);
    ex_draw_text(&r->img, 10, 10, r->img.h >= 256 ? 2 : 1, label, grey);
}

/* the frame number of time t for the interval `every`: K of t = K * every */
static long frame_number(double t, double every) { return (long)floor(t / every + 0.5); }

/* Every file is written whole or not at all, so a full disk leaves no truncated file and an
   older file of the name as it was: snapshots, CSV and checkpoints by the library (beside,
   flushed, renamed), pictures by ex_write_png (the same in example.h), the video by
   ex_video_close (renamed when ffmpeg finished it). */
static int write_outputs(run *r, double t, int snapshot, int frame, int vframe, int final) {
    char path[4096] = "";
    nbody_result res = NBODY_OK;
    errno = 0;
    if ((res = nbody_get_state(r->sim, &r->s)) != NBODY_OK) goto fail;
    if (snapshot || final) {
        if (final) snprintf(path, sizeof path, "%s_final.snap", r->o.out);
        else snprintf(path, sizeof path, "%s_snap_%06ld.snap", r->o.out, frame_number(t, r->o.snapshot_every));
        if (r->o.snapshot_every > 0) {
            if (mpi_rank == 0 && (res = nbody_save(path, &r->s)) != NBODY_OK) goto fail;
            strcpy(path + strlen(path) - 4, "ckpt");      /* the .snap's name, .ckpt */
            if ((res = nbody_checkpoint_save(r->sim, path)) != NBODY_OK) goto fail;
        }
        if (mpi_rank == 0 && r->o.csv && (final || r->o.snapshot_every > 0)) {
            strcpy(strrchr(path, '.') + 1, "csv");
            if ((res = nbody_write_csv(path, &r->s)) != NBODY_OK) goto fail;
        }
    }
    if (mpi_rank != 0) return 0;          /* pictures and video: rank 0 */
    if (frame || vframe) draw(r, t);
    if (frame) {
        snprintf(path, sizeof path, "%s_frame_%06ld.png", r->o.out, frame_number(t, r->o.png_every));
        if (ex_write_png(&r->img, path, 1.5f) != 0) {
            fprintf(stderr, "\nnbody: cannot write %s: %s\n", path, errno ? strerror(errno) : "libpng failed");
            return 1;
        }
    }
    if (vframe) {
        ex_image_rgb8(&r->img, 1.5f, r->rgb);
        if (ex_video_frame(&r->video, r->rgb) != 0) {
            fprintf(stderr, "\nnbody: ffmpeg stopped taking frames for %s (its message is above)\n", r->o.video);
            return 1;
        }
    }
    return 0;
fail:
    fprintf(stderr, "\nnbody: cannot write %s: %s\n", path, library_reason(res));
    return 1;
}

/* Ctrl-C: the state of the last accepted step as OUT_interrupted.snap and .ckpt */
static int write_interrupted(run *r) {
    char path[4096];
    nbody_result res;
    snprintf(path, sizeof path, "%s_interrupted.snap", r->o.out);
    res = nbody_get_state(r->sim, &r->s);
    if (res == NBODY_OK && mpi_rank == 0) res = nbody_save(path, &r->s);
    snprintf(path, sizeof path, "%s_interrupted.ckpt", r->o.out);
    if (res == NBODY_OK) res = nbody_checkpoint_save(r->sim, path);
    if (res != NBODY_OK) {
        fprintf(stderr, "\nnbody: interrupted at t = %g; cannot write %s: %s\n", (double)r->s.t, path, library_reason(res));
        return 1;
    }
    fprintf(stderr, "\nnbody: interrupted at t = %.9g; the state is in %s (resume: the same options and --resume %s)\n",
            (double)r->s.t, path, path);
    return 130;
}

static int simulate(run *r) {
    const options *o = &r->o;
    double t = (double)r->s.t;
    nbody_result res = NBODY_OK;
    r->terminal = ex_is_terminal(stdout);
    r->report_every = r->terminal ? 0.1 : 2.0;   /* a bar 10 times a second, or a line every 2 s */
    r->last_report = ex_now();
    r->drift = 0;
    ex_eta_start(&r->eta, t);
    if ((o->png_every > 0 || o->video) &&
        write_outputs(r, t, 0, o->png_every > 0 && in_real(frame_number(t, o->png_every) * o->png_every) == t,
                      o->video && in_real(frame_number(t, o->video_every) * o->video_every) == t, 0))
        return 1;
    while (t < r->t_end) {
        double t_snap = next_multiple(t, o->snapshot_every), t_png = next_multiple(t, o->png_every);
        double t_vid = o->video ? next_multiple(t, o->video_every) : HUGE_VAL;
        double t_next = fmin(fmin(t_snap, t_png), fmin(t_vid, r->t_end)), t_before = t;
        res = nbody_advance(r->sim, (nbody_real)t_next);
        t = (double)nbody_get_stats(r->sim).t;
        if (res != NBODY_OK) break;
        if (!(t > t_before)) {           /* never spin: a piece that does not move t ends the run */
            fprintf(stderr, "nbody: the run does not move past t = %.9g towards %.9g in this precision (NBODY_REAL)\n", t,
                    t_next);
            return 1;
        }
        if (write_outputs(r, t, t == t_snap, t == t_png, t == t_vid, t >= r->t_end)) return 1;
    }
    if (r->terminal) printf("\n");
    if (res == NBODY_ERR_CANCELLED) return write_interrupted(r);
    if (res != NBODY_OK) {
        fprintf(stderr, "nbody: the simulation stopped at t = %g: %s%s%s\n", t, nbody_result_string(res),
                *last_error ? "\n" : "", last_error);
        return 1;
    }
    {
        nbody_stats st = nbody_get_stats(r->sim);
        double wall = ex_now() - r->start_wall;
        nbody_get_state(r->sim, &r->s);
        printf("done: t = %.9g, %llu steps (%llu rejected), %llu force evaluations, %.2f s, %.3g ms/step, dE/E = %+.6e\n",
               (double)st.t, st.steps, st.rejected, st.force_evals, wall, st.steps ? 1e3 * wall / (double)st.steps : 0.0,
               ex_drift(&r->s, r->desc.G, r->desc.softening, r->e0));
    }
    return 0;
}

/* the command-line option behind a desc field named in the library's checkpoint message */
static const char *option_of_field(const char *field) {
    static const char *const map[][2] = {{"engine", "--engine"}, {"method", "--method"}, {"order", "--order"},
                                         {"softening", "--softening"}, {"dt", "--dt"}, {"tolerance", "--tolerance"},
                                         {"theta", "--theta"}, {"threads", "--threads"}, {"device", "--device"},
                                         {"devices", "--devices"}};
    size_t i;
    for (i = 0; i < sizeof map / sizeof map[0]; ++i)
        if (!strcmp(field, map[i][0])) return map[i][1];
    return NULL;
}

/* a refusal by the library (nbody_desc_check, nbody_interval_check): a line naming the option
   and its value, then the library's line (the reason); exit status 2. option NULL: the option
   is read from the desc field that the library's line names ("nbody: desc.theta = 2 ...") */
static int refused_by_library(const char *option, const char *value) {
    char field[32] = "", text[64] = "";
    const char *desc_field = strstr(last_error, "desc.");
    if (!option && desc_field && sscanf(desc_field + 5, "%31[A-Za-z_] = %63[^ ]", field, text) == 2) {
        option = option_of_field(field);
        value = text;
    }
    if (option) fprintf(stderr, "nbody: %s %s refused (nbody --help lists the options)\n", option, value);
    else fprintf(stderr, "nbody: the simulation was refused:\n");
    fprintf(stderr, "%s\n", *last_error ? last_error : "(the library gave no reason)");
    return 2;
}

/* an output interval against the run (nbody_interval_check): 0, or the exit status */
static int check_interval(const run *r, double every, const char *option) {
    char value[64];
    if (every <= 0 || !(r->t_end > (double)r->s.t)) return 0;
    last_error[0] = 0;
    if (nbody_interval_check(&r->desc, r->s.t, (nbody_real)r->t_end, (nbody_real)every, option) == NBODY_OK) return 0;
    snprintf(value, sizeof value, "%g", every);
    return refused_by_library(option, value);
}

/* --resume FILE: a checkpoint makes r->sim (exact restart; desc must match the run that wrote
   it), a snapshot gives r->s; 0, or the exit status */
/* FILE:K: snapshot K of an archive; NBODY_ERR_FORMAT when path is not of that form; *said
   when the refusal is already printed */
static nbody_result resume_archive(run *r, const char *path, int *said) {
    const char *colon = strrchr(path, ':');
    char file[4096];
    unsigned long long k;
    nbody_archive *a;
    nbody_result res;
    if (!colon || (size_t)(colon - path) >= sizeof file || !parse_count(colon + 1, &k)) return NBODY_ERR_FORMAT;
    memcpy(file, path, (size_t)(colon - path));
    file[colon - path] = 0;
    if ((res = nbody_archive_open(&a, file)) != NBODY_OK) return res;
    if (k >= nbody_archive_count(a)) {
        fprintf(stderr, "nbody: --resume %s: index %llu out of range (the archive holds %lu records, 0 to %lu)\n", path, k,
                (unsigned long)nbody_archive_count(a), (unsigned long)nbody_archive_count(a) - 1);
        nbody_archive_close(a);
        *said = 1;
        return NBODY_ERR_INVALID_ARGUMENT;
    }
    res = nbody_archive_load(a, (size_t)k, &r->desc, &r->sim);
    nbody_archive_close(a);
    return res;
}

static int resume(run *r, int *from_checkpoint) {
    const char *path = r->o.resume;
    nbody_result res;
    int said = 0;
    last_error[0] = 0;
    errno = 0;
    res = resume_archive(r, path, &said);
    if (said) return 2;
    if (res == NBODY_ERR_FORMAT || res == NBODY_ERR_IO) res = nbody_checkpoint_load(&r->sim, &r->desc, path);
    *from_checkpoint = res == NBODY_OK;
    if (res == NBODY_ERR_FORMAT) res = nbody_load(path, &r->s);     /* not a checkpoint: a snapshot? */
    if (res == NBODY_OK) return 0;
    if (res == NBODY_ERR_INVALID_ARGUMENT) {
        char field[32] = "", saved[128] = "", asked[128] = "";
        const char *opt;
        if (sscanf(last_error, "nbody: checkpoint field %31[A-Za-z_]: written with %127[^,], the desc has %127s", field, saved,
                   asked) == 3 && (opt = option_of_field(field)) != NULL)
            fprintf(stderr, "nbody: --resume %s: cannot resume: it was written with %s %s, this run has %s %s: give the options "
                            "of the run that wrote it\n", path, opt, saved, opt, asked);
        else if (*field)
            fprintf(stderr, "nbody: --resume %s: cannot resume: its %s is %s, this run's is %s\n", path, field, saved, asked);
        else
            fprintf(stderr, "nbody: --resume %s: cannot resume: the checkpoint was written with other options\n", path);
    } else if (res == NBODY_ERR_FORMAT && strstr(nbody_last_error(), "a checkpoint (") && *last_error) {
        /* the snapshot reader saw a checkpoint: the checkpoint reader's reason is the one */
        fprintf(stderr, "nbody: --resume %s: cannot resume: %s\n", path, last_error + 7);
    } else {
        fprintf(stderr, "nbody: --resume %s: cannot resume: %s\n", path, library_reason(res));
    }
    return res == NBODY_ERR_OUT_OF_MEMORY || res == NBODY_ERR_DEVICE ? 1 : 2;
}

/* the bodies of a resumed run must be those of the scenario the options name: the masses
   never change in a run, so they tell */
static int same_masses(const nbody_system *a, const nbody_system *b) {
    size_t i;
    if (a->n != b->n) return 0;
    for (i = 0; i < a->n; ++i)
        if (a->m[i] != b->m[i]) return 0;
    return 1;
}

/* the initial state: a scenario, or a checkpoint / snapshot to resume from */
static int initial_state(run *r) {
    nbody_result res;
    nbody_system first = NBODY_ZERO;
    int rc, from_checkpoint = 0;
    if (r->o.resume && (rc = resume(r, &from_checkpoint)) != 0) return rc;
    /* the scenario's start: the run's bodies, and the reference for drift and colours also
       when resuming, so that a resumed run reports the same numbers as the run it continues.
       A snapshot says how many bodies; a checkpoint is sized by the options, like its run. */
    res = ex_make_scenario(r->sc, &first, r->o.resume && !from_checkpoint && !r->o.n ? r->s.n : r->o.n, r->o.seed);
    if (res != NBODY_OK && (!r->o.resume || from_checkpoint || r->o.n)) {
        fprintf(stderr, "nbody: cannot make scenario %s: %s\n", r->sc->name, nbody_result_string(res));
        return res == NBODY_ERR_INVALID_ARGUMENT ? 2 : 1;
    }
    if (res != NBODY_OK) first = r->s;
    r->e0 = ex_energy(&first, r->desc.G, r->desc.softening);
    r->v_ref = ex_speed_scale(&first);
    if (!r->o.resume) {
        r->s = first;
        return 0;
    }
    if (from_checkpoint && (nbody_system_alloc(&r->s, first.n) != NBODY_OK || nbody_get_state(r->sim, &r->s) != NBODY_OK)) {
        fprintf(stderr, "nbody: --resume %s: cannot resume: it holds another number of bodies than --scenario %s%s\n",
                r->o.resume, r->sc->name, r->o.n ? " with --n" : "");
        nbody_system_free(&first);
        return 2;
    }
    if (first.x != r->s.x && !same_masses(&first, &r->s)) {
        fprintf(stderr, "nbody: --resume %s: cannot resume: its %lu bodies are not those of --scenario %s%s (other masses): "
                        "give the --scenario%s of the run that wrote it\n", r->o.resume, (unsigned long)r->s.n, r->sc->name,
                r->o.n ? " --n" : "", r->o.n ? " and --n" : "");
        nbody_system_free(&first);
        return 2;
    }
    printf("resuming at t = %g from %s %s\n", (double)r->s.t, from_checkpoint ? "the checkpoint (exact)" : "the snapshot (bodies only)",
           r->o.resume);
    if (first.x != r->s.x) nbody_system_free(&first);
    return 0;
}

/* mkdir -p of the folder part of path (the text up to the last '/'); 0 on success */
static int make_folders(const char *path) {
    char dir[4096];
    size_t i, len;
    const char *slash = strrchr(path, '/');
    if (!slash) return 0;
    len = (size_t)(slash - path);
    if (len == 0 || len >= sizeof dir) return len == 0 ? 0 : -1;
    memcpy(dir, path, len);
    dir[len] = 0;
    for (i = 1; i <= len; ++i)
        if (dir[i] == '/' || dir[i] == 0) {
            char c = dir[i];
            dir[i] = 0;
            if (mkdir(dir, 0777) != 0 && errno != EEXIST) return -1;
            dir[i] = c;
        }
    return 0;
}

/* the outputs' folder exists (created) and takes a file: checked before the first step */
static int check_writable(const char *path_prefix, const char *what) {
    char probe[4200];
    FILE *f;
    if (make_folders(path_prefix) != 0) {
        fprintf(stderr, "nbody: cannot create the folder of %s %s: %s\n", what, path_prefix, strerror(errno));
        return 2;
    }
    snprintf(probe, sizeof probe, "%s.nbody-write-test", path_prefix);
    if (!(f = fopen(probe, "wb"))) {
        fprintf(stderr, "nbody: cannot write %s %s: %s\n", what, probe, strerror(errno));
        return 2;
    }
    fclose(f);
    remove(probe);
    return 0;
}

/* fixed steps of --dt: a method without step control, or an embedded one without --tolerance */
static int fixed_steps(const options *o, nbody_method m) { return !nbody_method_adaptive(m) || o->tolerance <= 0; }

/* every option against the others, before anything runs */
static int validate(run *r) {
    const options *o = &r->o;
    nbody_engine e = r->desc.engine ? r->desc.engine : NBODY_ENGINE_BLOCK;
    nbody_method m = r->desc.method ? r->desc.method : NBODY_LEAPFROG;
    char text[640];
    /* the range of theta, a tolerance against the method and NBODY_REAL, the threads: the
       library's (nbody_desc_check in setup); here what only the command line means */
    if (o->theta == 0)
        return bad("--theta 0: %s", "the library reads 0 as its default (0.5); for exact forces take a direct engine (block)");
    if (o->theta >= 0 && !tree_engine(e)) {
        snprintf(text, sizeof text, "--theta applies to the tree engines (tree, cuda-tree, opencl-tree), not to %s", nbody_engine_name(e));
        return bad("%s", text);
    }
    if (o->order >= 0 && m != NBODY_ADAMS) return bad("--order is the order of --method adams, not of %s", nbody_method_name(m));
    if (o->device >= 0 && !gpu_engine(e)) return bad("--device picks the GPU of the cuda and opencl engines, not of %s", nbody_engine_name(e));
    if (o->devices > 0 && !gpu_engine(e)) return bad("--devices is the GPU count of the cuda and opencl engines, not of %s", nbody_engine_name(e));
    if (o->video_every > 0 && !o->video) return bad("%s needs --video FILE", "--video-every");
    if (o->archive_every > 0 && !o->archive) return bad("%s needs --archive FILE", "--archive-every");
    if (fixed_steps(o, m) && in_real(r->t_end + r->desc.dt) == in_real(r->t_end)) {
        snprintf(text, sizeof text, "--dt %g with --t-end %g: near t-end a step that small no longer moves t in this "
                 "precision (NBODY_REAL): the run would never end", (double)r->desc.dt, r->t_end);
        return bad("%s", text);
    }
    if (o->video && o->resume && access(o->video, F_OK) == 0) {
        snprintf(text, sizeof text, "--video %.300s exists: a resumed run would replace it (the video of the run before) "
                 "with its own frames; give another file name or remove it", o->video);
        return bad("%s", text);
    }
    if (o->video && !ex_video_name_ok(o->video))
        return bad("--video %s: the file name must end in .mp4, .mov or .mkv (ffmpeg picks the container by it)", o->video);
    if (o->video && !ex_have_ffmpeg()) return bad("--video: %s", EX_FFMPEG_MISSING);
    if ((o->snapshot_every > 0 || o->png_every > 0 || o->csv) && check_writable(o->out, "the outputs")) return 2;
    if (o->video && check_writable(o->video, "the video")) return 2;
    return 0;
}

static int setup(run *r) {
    const options *o = &r->o;
    nbody_result res;
    int rc;
    if (!(r->sc = ex_find_scenario(o->scenario))) return bad("--scenario %s: unknown scenario (nbody --help lists them)", o->scenario);
    if (o->n && ex_fixed_size(r->sc)) return bad("--n cannot be set: scenario %s always has 3 bodies", r->sc->name);
    if (o->n && o->n < ex_min_bodies(r->sc)) {
        char text[128];
        snprintf(text, sizeof text, "--n %lu: scenario %s needs at least %lu bodies", (unsigned long)o->n, r->sc->name,
                 (unsigned long)ex_min_bodies(r->sc));
        return bad("%s", text);
    }
    if (o->engine && !ex_find_engine(o->engine, &r->desc.engine)) return bad("--engine %s: unknown engine (see --list)", o->engine);
    if (o->method && !ex_find_method(o->method, &r->desc.method)) return bad("--method %s: unknown method (see --list)", o->method);
    if (o->png_every > 0 && !ex_have_png()) return bad("%s: this nbody was built without libpng", "--png-every");
    r->desc.dt = (nbody_real)(o->dt > 0 ? o->dt : r->sc->dt);
    r->desc.softening = (nbody_real)(o->softening >= 0 ? o->softening : r->sc->softening);
    r->desc.tolerance = (nbody_real)o->tolerance;
    r->desc.theta = (nbody_real)(o->theta > 0 ? o->theta : 0);
    r->desc.order = o->order > 0 ? o->order : 0;
    r->desc.threads = o->threads;
    r->desc.device = o->device > 0 ? o->device : 0;
    r->desc.G = 1;
    r->desc.devices = o->devices;
#ifdef NBODY_WITH_MPI
    r->desc.mpi_comm = &mpi_world;
#endif
    r->desc.log.func = on_log;
    r->desc.progress.func = on_progress;
    r->desc.progress.user_data = r;
    r->desc.progress.interval = 0;               /* every step: Ctrl-C is answered at once */
    r->t_end = in_real(o->t_end >= 0 ? o->t_end : r->sc->t_end);
    if (o->video && o->video_every <= 0) r->o.video_every = o->png_every > 0 ? o->png_every : r->t_end / 300;
    if (o->archive && o->archive_every <= 0) r->o.archive_every = r->t_end / 10;
    if ((rc = validate(r)) != 0) return rc;
    if ((rc = initial_state(r)) != 0) return rc;
    if ((double)r->s.t > r->t_end) {
        fprintf(stderr, "nbody: the snapshot is at t = %g, past --t-end %g\n", (double)r->s.t, r->t_end);
        return 2;
    }
    if ((rc = check_interval(r, o->snapshot_every, "--snapshot-every")) != 0 ||
        (rc = check_interval(r, o->png_every, "--png-every")) != 0 ||
        (rc = check_interval(r, o->video ? o->video_every : 0, "--video-every")) != 0 ||
        (rc = check_interval(r, o->archive ? o->archive_every : 0, "--archive-every")) != 0)
        return rc;
    last_error[0] = 0;
    if (!r->sim && nbody_desc_check(&r->desc, &r->s) == NBODY_ERR_INVALID_ARGUMENT) return refused_by_library(NULL, NULL);
    if ((o->png_every > 0 || o->video) && ex_image_alloc(&r->img, (o->width * 4 / 3) & ~1, o->width & ~1) != 0) return 1;
    res = r->sim ? NBODY_OK : nbody_create(&r->sim, &r->desc, &r->s);
    if (res == NBODY_ERR_UNAVAILABLE) {
        fprintf(stderr, "nbody: engine %s with method %s is not available in this build or on this machine (see --list)%s%s\n",
                nbody_engine_name(r->desc.engine), nbody_method_name(r->desc.method), *last_error ? "\n" : "", last_error);
        return 2;
    }
    if (res != NBODY_OK) {
        fprintf(stderr, "nbody: cannot start the simulation: %s%s%s\n", nbody_result_string(res), *last_error ? "\n" : "", last_error);
        return res == NBODY_ERR_INVALID_ARGUMENT ? 2 : 1;
    }
    if (o->archive) {                      /* the start (when not resumed), then every T */
        res = o->resume ? NBODY_OK : nbody_archive_append(r->sim, o->archive);
        if (res == NBODY_OK && o->archive_every > 0)   /* 0: a run of length 0, the start alone */
            res = nbody_archive_attach(r->sim, o->archive, (nbody_real)o->archive_every, 0, 0);
        if (res != NBODY_OK) {
            fprintf(stderr, "nbody: cannot write the archive %s: %s%s%s\n", o->archive, nbody_result_string(res),
                    *last_error ? "\n" : "", last_error);
            return 1;
        }
    }
    if (o->video && mpi_rank == 0) {
        r->rgb = (unsigned char *)malloc((size_t)r->img.w * (size_t)r->img.h * 3);
        if (!r->rgb || ex_video_open(&r->video, o->video, r->img.w, r->img.h, o->fps) != 0) {
            fprintf(stderr, "nbody: cannot start ffmpeg for %s\n", o->video);
            return 1;
        }
    }
    {
        nbody_engine e = r->desc.engine ? r->desc.engine : NBODY_ENGINE_BLOCK;
        char where[64];
        if (gpu_engine(e)) snprintf(where, sizeof where, "device %d", r->desc.device);
        else snprintf(where, sizeof where, "CPU, %d thread%s, SIMD %s", threads_in_use(o->threads),
                      threads_in_use(o->threads) == 1 ? "" : "s", nbody_simd_name(r->sim));
        printf("nbody %s: %s, n = %lu, engine %s (%s), method %s, dt %g%s, softening %g, t = %g -> %g\n",
               nbody_version_string(), r->sc->name, (unsigned long)r->s.n, nbody_engine_name(e), where,
               nbody_method_name(r->desc.method ? r->desc.method : NBODY_LEAPFROG), (double)r->desc.dt,
               o->tolerance > 0 ? " (adaptive)" : "", (double)r->desc.softening, (double)r->s.t, r->t_end);
    }
    if (o->video) printf("video: %s, %dx%d, a frame every %g time units, %d fps (ffmpeg)\n", o->video, r->img.w, r->img.h,
                         r->o.video_every, o->fps);
    return 0;
}

int main(int argc, char **argv) {
    static run r;
    int rc;
#ifdef NBODY_WITH_MPI
    int ranks = 1;
    MPI_Init(&argc, &argv);
    mpi_world = MPI_COMM_WORLD;
    MPI_Comm_rank(mpi_world, &mpi_rank);
    MPI_Comm_size(mpi_world, &ranks);
    if (mpi_rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;
#endif
    rc = parse_args(argc, argv, &r.o);
    if (rc == 0 && r.o.help) usage(stdout);
    else if (rc == 0 && r.o.version) printf("nbody %s (nbody.h)\n", nbody_version_string());
    else if (rc == 0 && r.o.list) list_available();
    else if (rc == 0) {
        r.start_wall = ex_now();
        signal(SIGPIPE, SIG_IGN);          /* a dead ffmpeg is an error from fwrite, not a kill */
        signal(SIGINT, on_sigint);         /* answered at the next step (desc.progress) */
        rc = setup(&r);
        if (rc == 0) rc = simulate(&r);
        if (r.o.video && r.video.pipe && ex_video_close(&r.video) != 0 && rc == 0) {
            fprintf(stderr, "nbody: ffmpeg failed to write %s\n", r.o.video);
            rc = 1;
        }
        if (rc == 0 && r.o.video) printf("wrote %s: %ld frames\n", r.o.video, r.video.frames);
        nbody_destroy(r.sim);
        nbody_system_free(&r.s);
        ex_image_free(&r.img);
        free(r.rgb);
    }
#ifdef NBODY_WITH_MPI
    if (rc != 0 && ranks > 1) MPI_Abort(mpi_world, rc);   /* a rank that stops alone stops all */
    MPI_Finalize();
#endif
    return rc;
}
