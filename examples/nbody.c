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
   time to output time (multiples of --snapshot-every and --png-every, and t-end), each
   piece landing exactly on its end. Between them a fixed-step method (no --tolerance)
   takes plain steps of --dt, so the progress bar never changes the trajectory. Adaptive
   runs additionally end a piece at every 1% of t-end, for the progress; a resumed run
   starts on such an end, so it cuts the rest of the run into the same pieces.
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

typedef struct options {
    const char *scenario, *engine, *method, *resume, *out;
    size_t n;
    double dt, tolerance, theta, t_end, softening, snapshot_every, png_every;
    int csv, list, help, width, devices;
    unsigned long long seed;
} options;

/* under mpirun (built with NBODY_WITH_MPI) every rank runs this program on its share of the
   bodies; rank 0 alone prints and writes snapshots, CSV and pictures (checkpoints are written
   by all together) */
static int mpi_rank = 0;
#ifdef NBODY_WITH_MPI
static MPI_Comm mpi_world;
#endif

static void usage(FILE *f) {
    size_t i;
    fprintf(f,
            "usage: nbody [options]\n"
            "  --scenario NAME       initial conditions (default collision):\n");
    for (i = 0; i < EX_NSCENARIOS; ++i)
        fprintf(f, "                          %-12s %s (n = %lu)\n", ex_scenarios[i].name, ex_scenarios[i].what,
                (unsigned long)ex_scenarios[i].n);
    fprintf(f,
            "  --n N                 number of bodies (not for figure8, pythagorean)\n"
            "  --engine NAME         simple, openmp, block, tree, cuda, ... (--list; default block)\n"
            "  --method NAME         euler, midpoint, leapfrog, rk4, rkdp, ... (--list; default leapfrog)\n"
            "  --dt DT               fixed step, or the first step with --tolerance (default: per scenario)\n"
            "  --tolerance TOL       adaptive step control for embedded methods (default 0: fixed step)\n"
            "  --theta THETA         tree opening angle (default 0.5)\n"
            "  --softening EPS       Plummer softening (default: per scenario)\n"
            "  --t-end T             simulated time to reach (default: per scenario)\n"
            "  --snapshot-every T    write OUT_snap_K.snap and OUT_snap_K.ckpt (checkpoint) at t = K*T,\n"
            "                        OUT_final.snap and OUT_final.ckpt at t-end\n"
            "  --png-every T         write OUT_frame_K.png at t = 0, T, 2T, ... (needs libpng)\n"
            "  --csv                 also write every snapshot (or only the final state) as CSV\n"
            "  --out PREFIX          file name prefix for outputs (default nbody)\n"
            "  --size PIXELS         picture height (default 512; width 4/3 of it)\n"
            "  --resume FILE         continue from a checkpoint (.ckpt: exact) or a snapshot (.snap:\n"
            "                        the bodies only); give the same options as the run that wrote it\n"
            "  --seed S              random seed of the initial conditions (default 1)\n"
            "  --devices N           GPUs used by the CUDA engines, from the first (default 1)\n"
            "  --list                engines and methods available in this build\n"
            "  --help                this text\n"
            "Exit status: 0 done, 1 the simulation failed, 2 bad arguments.\n");
}

static int bad(const char *fmt, const char *what) {
    fprintf(stderr, "nbody: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n(nbody --help lists the options)\n");
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

static int takes_value(const char *a) {
    static const char *const names[] = {"--scenario", "--engine", "--method", "--resume", "--out", "--n", "--seed",
                                        "--size", "--dt", "--tolerance", "--theta", "--t-end", "--softening",
                                        "--snapshot-every", "--png-every", "--devices"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (!strcmp(a, names[i])) return 1;
    return 0;
}

static int parse_args(int argc, char **argv, options *o) {
    int i;
    memset(o, 0, sizeof *o);
    o->scenario = "collision"; o->out = "nbody"; o->seed = 1; o->width = 512;
    o->dt = o->t_end = o->softening = -1;   /* -1: the scenario's */
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long u = 0;
        int ok = 1, takes = 1;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { o->help = 1; takes = 0; }
        else if (!strcmp(a, "--list")) { o->list = 1; takes = 0; }
        else if (!strcmp(a, "--csv")) { o->csv = 1; takes = 0; }
        else if (!takes_value(a)) return bad("unknown option '%s'", a);
        else if (!v) return bad("option %s needs a value", a);
        else if (!strcmp(a, "--scenario")) o->scenario = v;
        else if (!strcmp(a, "--engine")) o->engine = v;
        else if (!strcmp(a, "--method")) o->method = v;
        else if (!strcmp(a, "--resume")) o->resume = v;
        else if (!strcmp(a, "--out")) o->out = v;
        else if (!strcmp(a, "--n")) { ok = parse_count(v, &u) && u >= 1 && u <= 100000000ULL; o->n = (size_t)u; }
        else if (!strcmp(a, "--seed")) ok = parse_count(v, &o->seed);
        else if (!strcmp(a, "--size")) { ok = parse_count(v, &u) && u >= 16 && u <= 8192; o->width = (int)u; }
        else if (!strcmp(a, "--dt")) ok = parse_real(v, 0, 1, &o->dt);
        else if (!strcmp(a, "--tolerance")) ok = parse_real(v, 0, 0, &o->tolerance);
        else if (!strcmp(a, "--theta")) ok = parse_real(v, 0, 0, &o->theta);
        else if (!strcmp(a, "--t-end")) ok = parse_real(v, 0, 0, &o->t_end);
        else if (!strcmp(a, "--softening")) ok = parse_real(v, 0, 0, &o->softening);
        else if (!strcmp(a, "--snapshot-every")) ok = parse_real(v, 0, 1, &o->snapshot_every);
        else if (!strcmp(a, "--png-every")) ok = parse_real(v, 0, 1, &o->png_every);
        else if (!strcmp(a, "--devices")) { ok = parse_count(v, &u) && u >= 1 && u <= 1024; o->devices = (int)u; }
        if (!ok) {
            fprintf(stderr, "nbody: bad value '%s' for %s\n(nbody --help lists the options)\n", v, a);
            return 2;
        }
        i += takes;
    }
    return 0;
}

/* try every engine and method: what nbody_create accepts in this build on this machine */
static void list_available(void) {
    nbody_system s = {0};
    nbody_sim *sim;
    int i;
    nbody_ic_figure_eight(&s);
    printf("engines:");
    for (i = 1; i < NBODY_ENGINE_COUNT_; ++i) {
        nbody_desc d = {0};
        d.engine = (nbody_engine)i;
        if (!nbody_engine_available(d.engine) || nbody_create(&sim, &d, &s) != NBODY_OK) continue;
        nbody_destroy(sim);
        printf(" %s", nbody_engine_name(d.engine));
    }
    printf("\nmethods:");
    for (i = 1; i < NBODY_METHOD_COUNT_; ++i) {
        nbody_desc d = {0};
        d.method = (nbody_method)i;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) continue;
        nbody_destroy(sim);
        printf(" %s", nbody_method_name(d.method));
    }
    printf("\npictures: %s\n", ex_have_png() ? "png (libpng)" : "none (built without libpng)");
    nbody_system_free(&s);
}

/* the k-th multiple of `every` after time t (every <= 0: never) */
static double next_multiple(double t, double every) {
    double k;
    if (every <= 0) return HUGE_VAL;
    k = floor(t / every + 1e-9) + 1;
    return k * every;
}

typedef struct run {
    options o;
    const ex_scenario *sc;
    nbody_desc desc;
    nbody_sim *sim;
    nbody_system s;
    double e0, v_ref, t_end, start_wall;
    ex_image img;
} run;

static int write_outputs(run *r, double t, int snapshot, int frame, int final) {
    char path[4096] = "";
    nbody_result res = NBODY_OK;
    if ((res = nbody_get_state(r->sim, &r->s)) != NBODY_OK) goto fail;
    if (snapshot || final) {
        long k = (long)floor(t / r->o.snapshot_every + 0.5);
        if (final) snprintf(path, sizeof path, "%s_final.snap", r->o.out);
        else snprintf(path, sizeof path, "%s_snap_%06ld.snap", r->o.out, k);
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
    if (frame && mpi_rank == 0) {
        const float grey[3] = {0.5f, 0.5f, 0.5f};
        char label[128];
        ex_view v = ex_view_whole(&r->img, r->sc->view);
        snprintf(path, sizeof path, "%s_frame_%06ld.png", r->o.out, (long)floor(t / r->o.png_every + 0.5));
        ex_image_clear(&r->img);
        ex_draw_system(&r->img, &v, &r->s, r->v_ref, (float)(6000.0 / (double)r->s.n + 0.3));
        snprintf(label, sizeof label, "%s  N = %lu  T = %.3f", r->sc->name, (unsigned long)r->s.n, t);
        ex_draw_text(&r->img, 10, 10, 2, label, grey);
        if (ex_write_png(&r->img, path, 1.5f) != 0) { fprintf(stderr, "\nnbody: cannot write %s\n", path); return 1; }
    }
    return 0;
fail:
    fprintf(stderr, "\nnbody: cannot write %s: %s\n", path, nbody_result_string(res));
    return 1;
}

/* rank 0's answer on every rank: the progress report gets the state (a collective call),
   so all ranks must agree on when, which their clocks alone would not */
static int all_ranks(int yes) {
#ifdef NBODY_WITH_MPI
    MPI_Bcast(&yes, 1, MPI_INT, 0, mpi_world);
#endif
    return yes;
}

static int simulate(run *r) {
    const options *o = &r->o;
    int terminal = ex_is_terminal(stdout), fixed = o->tolerance <= 0;
    double t = (double)r->s.t, last_report = -1, report_every = terminal ? 0.1 : 2.0, drift = 0, measure_cost = 0;
    double progress_every = fixed ? 0 : r->t_end / 100;
    nbody_result res = NBODY_OK;
    if (o->png_every > 0 && write_outputs(r, t, 0, 1, 0)) return 1;
    while (t < r->t_end) {
        double t_snap = next_multiple(t, o->snapshot_every), t_png = next_multiple(t, o->png_every);
        double t_next = fmin(fmin(t_snap, t_png), fmin(r->t_end, next_multiple(t, progress_every)));
        while (res == NBODY_OK && t < t_next) {
            /* a plain step takes exactly dt and is what nbody_advance would take as long as it
               does not have to be shortened to land on t_next (nbody.h's clipping rule) */
            nbody_real h = r->desc.dt, left = (nbody_real)t_next - (nbody_real)t;
            if (fixed && h < left && left - h >= h * (nbody_real)1e-8) res = nbody_step(r->sim);
            else res = nbody_advance(r->sim, (nbody_real)t_next);
            t = (double)nbody_get_stats(r->sim).t;
            /* measuring the energy is O(n^2) too: keep it under a tenth of the run time */
            if (all_ranks(ex_now() - last_report >= fmax(report_every, 10 * measure_cost) || t >= r->t_end)) {
                double t0 = ex_now();
                if (nbody_get_state(r->sim, &r->s) == NBODY_OK) drift = ex_drift(&r->s, r->desc.G, r->desc.softening, r->e0);
                measure_cost = ex_now() - t0;
                ex_progress(stdout, terminal, t, r->t_end, ex_now() - r->start_wall, drift);
                last_report = ex_now();
            }
        }
        if (res != NBODY_OK) break;
        if (write_outputs(r, t, t == t_snap, t == t_png, t >= r->t_end)) return 1;
    }
    if (terminal) printf("\n");
    if (res != NBODY_OK) {
        fprintf(stderr, "nbody: the simulation stopped at t = %g: %s\n", t, nbody_result_string(res));
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

/* --resume FILE: a checkpoint makes r->sim (exact restart; desc must match the run that wrote
   it), a snapshot gives r->s; 0, or the exit status */
static int resume(run *r, int *from_checkpoint) {
    const char *path = r->o.resume;
    nbody_result res = nbody_checkpoint_load(&r->sim, &r->desc, path);
    *from_checkpoint = res == NBODY_OK;
    if (res == NBODY_ERR_FORMAT) res = nbody_load(path, &r->s);     /* not a checkpoint: a snapshot? */
    if (res == NBODY_OK) return 0;
    if (res == NBODY_ERR_INVALID_ARGUMENT)
        fprintf(stderr, "nbody: cannot resume from %s: the checkpoint was written with other options (engine, method, "
                        "dt, tolerance, softening, theta): give the same options as that run\n", path);
    else if (res == NBODY_ERR_FORMAT)
        fprintf(stderr, "nbody: cannot resume from %s: neither a checkpoint nor a snapshot (or corrupted)\n", path);
    else
        fprintf(stderr, "nbody: cannot resume from %s: %s\n", path, nbody_result_string(res));
    return res == NBODY_ERR_OUT_OF_MEMORY || res == NBODY_ERR_DEVICE ? 1 : 2;
}

/* the initial state: a scenario, or a checkpoint / snapshot to resume from */
static int initial_state(run *r) {
    nbody_result res;
    nbody_system first = {0};
    int rc, from_checkpoint = 0;
    if (r->o.resume && (rc = resume(r, &from_checkpoint)) != 0) return rc;
    /* the scenario's start: the run's bodies, and the reference for drift and colours also
       when resuming, so that a resumed run reports the same numbers as the run it continues.
       A snapshot says how many bodies; a checkpoint is sized by the options, like its run. */
    res = ex_make_scenario(r->sc, &first, r->o.resume && !from_checkpoint ? r->s.n : r->o.n, r->o.seed);
    if (res != NBODY_OK && (!r->o.resume || from_checkpoint)) {
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
        fprintf(stderr, "nbody: cannot resume from %s: it holds another number of bodies than --scenario %s%s\n",
                r->o.resume, r->sc->name, r->o.n ? " with --n" : "");
        nbody_system_free(&first);
        return 2;
    }
    printf("resuming at t = %g from %s %s\n", (double)r->s.t, from_checkpoint ? "the checkpoint (exact)" : "the snapshot (bodies only)",
           r->o.resume);
    if (first.x != r->s.x) nbody_system_free(&first);
    return 0;
}

static int setup(run *r) {
    const options *o = &r->o;
    nbody_result res;
    int rc;
    if (!(r->sc = ex_find_scenario(o->scenario))) return bad("unknown scenario '%s'", o->scenario);
    if (o->n && ex_fixed_size(r->sc)) return bad("--n cannot be set: scenario %s always has 3 bodies", r->sc->name);
    if (o->n == 1 && !strcmp(r->sc->name, "collision")) return bad("%s needs at least 2 bodies", "collision");
    if (o->engine && !ex_find_engine(o->engine, &r->desc.engine)) return bad("unknown engine '%s' (see --list)", o->engine);
    if (o->method && !ex_find_method(o->method, &r->desc.method)) return bad("unknown method '%s' (see --list)", o->method);
    if (o->png_every > 0 && !ex_have_png()) return bad("%s: this nbody was built without libpng", "--png-every");
    r->desc.dt = (nbody_real)(o->dt > 0 ? o->dt : r->sc->dt);
    r->desc.softening = (nbody_real)(o->softening >= 0 ? o->softening : r->sc->softening);
    r->desc.tolerance = (nbody_real)o->tolerance;
    r->desc.theta = (nbody_real)o->theta;
    r->desc.G = 1;
    r->desc.devices = o->devices;
#ifdef NBODY_WITH_MPI
    r->desc.mpi_comm = &mpi_world;
#endif
    r->t_end = o->t_end >= 0 ? o->t_end : r->sc->t_end;
    if ((rc = initial_state(r)) != 0) return rc;
    if ((double)r->s.t > r->t_end) {
        fprintf(stderr, "nbody: the snapshot is at t = %g, past --t-end %g\n", (double)r->s.t, r->t_end);
        return 2;
    }
    if (o->png_every > 0 && ex_image_alloc(&r->img, o->width * 4 / 3, o->width) != 0) return 1;
    res = r->sim ? NBODY_OK : nbody_create(&r->sim, &r->desc, &r->s);
    if (res == NBODY_ERR_UNAVAILABLE) {
        fprintf(stderr, "nbody: engine %s with method %s is not available in this build or on this machine (see --list)\n",
                nbody_engine_name(r->desc.engine), nbody_method_name(r->desc.method));
        return 2;
    }
    if (res != NBODY_OK) {
        fprintf(stderr, "nbody: cannot start the simulation: %s\n", nbody_result_string(res));
        return res == NBODY_ERR_INVALID_ARGUMENT ? 2 : 1;
    }
    printf("nbody %s: %s, n = %lu, engine %s, method %s, dt %g%s, softening %g, t = %g -> %g\n", nbody_version_string(),
           r->sc->name, (unsigned long)r->s.n, nbody_engine_name(r->desc.engine ? r->desc.engine : NBODY_ENGINE_BLOCK),
           nbody_method_name(r->desc.method ? r->desc.method : NBODY_LEAPFROG), (double)r->desc.dt,
           o->tolerance > 0 ? " (adaptive)" : "", (double)r->desc.softening, (double)r->s.t, r->t_end);
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
    else if (rc == 0 && r.o.list) list_available();
    else if (rc == 0) {
        r.start_wall = ex_now();
        rc = setup(&r);
        if (rc == 0) rc = simulate(&r);
        nbody_destroy(r.sim);
        nbody_system_free(&r.s);
        ex_image_free(&r.img);
    }
#ifdef NBODY_WITH_MPI
    if (rc != 0 && ranks > 1) MPI_Abort(mpi_world, rc);   /* a rank that stops alone stops all */
    MPI_Finalize();
#endif
    return rc;
}
