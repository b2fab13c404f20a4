/* example.h - helpers shared by the example programs; not part of the library.

   The examples need the same few things: the named scenarios (initial conditions with a
   softening, step and view that suit them), a wall clock, a picture of the bodies coloured
   by speed, PNG output and a density render for the terminal. They live here once so that
   each example shows only what it is about. Include it after nbody.h.

   PNG output goes through libpng and is compiled only with -DNBODY_EX_PNG (link -lpng);
   without it ex_write_png() returns -1 and everything else still works. A headless OpenGL
   context (ex_egl_context) is compiled only with -DNBODY_EX_EGL (link -lEGL).

   COLOUR MAP (the article's: "low speed blue, medium green, high red")
       u = |v| / v_ref, clamped to [0, 1], v_ref = the 90th percentile of the speeds in the
       state the run starts from (so a picture's colours mean the same in every frame);
       colour = piecewise-linear through   u = 0    (0.15, 0.30, 1.00)  blue
                                           u = 0.5  (0.15, 1.00, 0.30)  green
                                           u = 1    (1.00, 0.20, 0.10)  red
       Bodies add their light; a pixel's value is 1 - exp(-exposure * sum), so dense regions
       saturate towards white-ish instead of clipping. */
#ifndef NBODY_EXAMPLE_H
#define NBODY_EXAMPLE_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef NBODY_EX_PNG
#include <png.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define EX_FN static __attribute__((unused))
#else
#define EX_FN static
#endif

/* 1 when built with libpng (-DNBODY_EX_PNG) */
EX_FN int ex_have_png(void) {
#ifdef NBODY_EX_PNG
    return 1;
#else
    return 0;
#endif
}

/* ---------------------------------------------------------------- clock and terminal */
EX_FN double ex_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

EX_FN int ex_is_terminal(FILE *f) { return isatty(fileno(f)); }

/* ---------------------------------------------------------------- scenarios */
typedef struct ex_scenario {
    const char *name, *what;
    size_t n;                      /* default body count (figure8, pythagorean: always 3) */
    double softening, dt, t_end;   /* what suits it with leapfrog */
    double view;                   /* half-height of the picture, simulation units */
} ex_scenario;

static const ex_scenario ex_scenarios[] = {
    {"cube", "cold collapse of a uniform cube", 1000, 0.02, 1e-3, 2.0, 1.6},
    {"plummer", "Plummer sphere in equilibrium (Henon units)", 1000, 0.01, 1e-3, 2.0, 1.5},
    {"galaxy", "disc galaxy, central body of 99% of the mass", 2000, 0.01, 5e-4, 1.0, 1.2},
    {"galaxy10", "disc galaxy, central body of 10% of the mass", 2000, 0.01, 1e-3, 3.0, 1.2},
    {"collision", "two disc galaxies with central bodies colliding", 1000, 0.02, 2e-3, 6.0, 2.5},
    {"figure8", "three equal masses on the figure-eight orbit", 3, 0, 1e-3, 6.32591398, 1.3},
    {"pythagorean", "Burrau's problem: masses 3, 4, 5 at rest", 3, 0, 1e-4, 10.0, 4.5},
    {"outer", "Sun and giant planets, 1969 (yr = 2 pi; try --method radau or whfast)", 5, 0, 0.5, 6283.18530718, 35}};
#define EX_NSCENARIOS (sizeof ex_scenarios / sizeof ex_scenarios[0])

EX_FN const ex_scenario *ex_find_scenario(const char *name) {
    size_t i;
    for (i = 0; i < EX_NSCENARIOS; ++i)
        if (strcmp(ex_scenarios[i].name, name) == 0) return &ex_scenarios[i];
    return NULL;
}

EX_FN int ex_fixed_size(const ex_scenario *sc) { return sc->n == 3 || !strcmp(sc->name, "outer"); }
/* the fewest bodies a scenario makes (collision: a galaxy on each side) */
EX_FN size_t ex_min_bodies(const ex_scenario *sc) { return !strcmp(sc->name, "collision") ? 2 : 1; }

/* an engine or method by its nbody_engine_name / nbody_method_name; 0 when unknown */
EX_FN int ex_find_engine(const char *name, nbody_engine *e) {
    int i;
    for (i = 1; i < NBODY_ENGINE_COUNT_; ++i)
        if (!strcmp(name, nbody_engine_name((nbody_engine)i))) { *e = (nbody_engine)i; return 1; }
    return 0;
}

EX_FN int ex_find_method(const char *name, nbody_method *m) {
    int i;
    for (i = 1; i < NBODY_METHOD_COUNT_; ++i)
        if (!strcmp(name, nbody_method_name((nbody_method)i))) { *m = (nbody_method)i; return 1; }
    return 0;
}

/* the bodies of a scenario; n = 0 takes its default */
EX_FN nbody_result ex_make_scenario(const ex_scenario *sc, nbody_system *s, size_t n, unsigned long long seed) {
    if (n == 0) n = sc->n;
    if (!strcmp(sc->name, "cube")) return nbody_ic_uniform_cube(s, n, seed);
    if (!strcmp(sc->name, "plummer")) return nbody_ic_plummer(s, n, seed);
    if (!strcmp(sc->name, "galaxy")) return nbody_ic_galaxy(s, n, (nbody_real)0.99, seed);
    if (!strcmp(sc->name, "galaxy10")) return nbody_ic_galaxy(s, n, (nbody_real)0.10, seed);
    if (!strcmp(sc->name, "collision")) return nbody_ic_collision(s, n, (nbody_real)0.9, 3, seed);
    if (!strcmp(sc->name, "figure8")) return nbody_ic_figure_eight(s);
    if (!strcmp(sc->name, "pythagorean")) return nbody_ic_pythagorean(s);
    if (!strcmp(sc->name, "outer")) return nbody_ic_outer_solar_system(s);
    return NBODY_ERR_INVALID_ARGUMENT;
}

EX_FN double ex_energy(const nbody_system *s, double G, double softening) {
    nbody_invariants inv;
    if (nbody_measure(s, (nbody_real)G, (nbody_real)softening, &inv) != NBODY_OK) return NAN;
    return (double)inv.energy;
}

/* relative energy drift of s against the energy e0 it started with */
EX_FN double ex_drift(const nbody_system *s, double G, double softening, double e0) {
    return (ex_energy(s, G, softening) - e0) / fabs(e0);
}

/* ---------------------------------------------------------------- colour map */
EX_FN void ex_colormap(double u, float rgb[3]) {
    static const float stop[3][3] = {{0.15f, 0.30f, 1.00f}, {0.15f, 1.00f, 0.30f}, {1.00f, 0.20f, 0.10f}};
    int i, k;
    float f;
    if (!(u > 0)) u = 0;
    if (u > 1) u = 1;
    k = u < 0.5 ? 0 : 1;
    f = (float)(u * 2 - k);
    for (i = 0; i < 3; ++i) rgb[i] = stop[k][i] + f * (stop[k + 1][i] - stop[k][i]);
}

static int ex__cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* v_ref of the colour map: 90th percentile of the speeds */
EX_FN double ex_speed_scale(const nbody_system *s) {
    double *v = (double *)malloc(s->n * sizeof *v), ref;
    size_t i;
    if (!v) return 1;
    for (i = 0; i < s->n; ++i)
        v[i] = sqrt((double)(s->vx[i] * s->vx[i] + s->vy[i] * s->vy[i] + s->vz[i] * s->vz[i]));
    qsort(v, s->n, sizeof *v, ex__cmp_double);
    ref = v[(s->n * 9) / 10];
    free(v);
    return ref > 0 ? ref : 1;
}

/* the q-quantile (0..1) of the speeds, from at most max_samples bodies taken evenly
   (a frame of a million bodies must not sort them all); 1 when the speeds are all zero */
EX_FN double ex_speed_quantile(const nbody_system *s, double q, size_t max_samples) {
    size_t m = s->n < max_samples ? s->n : max_samples, i, k;
    double *v = (double *)malloc((m ? m : 1) * sizeof *v), ref;
    if (!v || m == 0) { free(v); return 1; }
    for (i = 0; i < m; ++i) {
        k = (size_t)((double)i * (double)s->n / (double)m);
        v[i] = sqrt((double)(s->vx[k] * s->vx[k] + s->vy[k] * s->vy[k] + s->vz[k] * s->vz[k]));
    }
    qsort(v, m, sizeof *v, ex__cmp_double);
    k = (size_t)(q * (double)(m - 1) + 0.5);
    ref = v[k < m ? k : m - 1];
    free(v);
    return ref > 0 ? ref : 1;
}

EX_FN double ex_speed(const nbody_system *s, size_t i) {
    return sqrt((double)(s->vx[i] * s->vx[i] + s->vy[i] * s->vy[i] + s->vz[i] * s->vz[i]));
}

/* ---------------------------------------------------------------- a 3x5 bitmap font
   Enough for labels and readouts (digits, capitals, a little punctuation; lower case is
   drawn as upper case). Each glyph is 5 rows of 3 bits, 4 = left column, 1 = right. */
static const char ex__font_chars[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ.,:-+=%/()_!?[]<>|*";
static const unsigned char ex__font_rows[][5] = {
    {7,5,5,5,7},{2,6,2,2,7},{7,1,7,4,7},{7,1,3,1,7},{5,5,7,1,1},{7,4,7,1,7},{7,4,7,5,7},{7,1,1,2,2},
    {7,5,7,5,7},{7,5,7,1,7},{2,5,7,5,5},{6,5,6,5,6},{3,4,4,4,3},{6,5,5,5,6},{7,4,6,4,7},{7,4,6,4,4},
    {3,4,5,5,3},{5,5,7,5,5},{7,2,2,2,7},{1,1,1,5,2},{5,5,6,5,5},{4,4,4,4,7},{5,7,7,5,5},{6,5,5,5,5},
    {2,5,5,5,2},{6,5,6,4,4},{2,5,5,6,3},{6,5,6,5,5},{3,4,2,1,6},{7,2,2,2,2},{5,5,5,5,7},{5,5,5,5,2},
    {5,5,7,7,5},{5,5,2,5,5},{5,5,2,2,2},{7,1,2,4,7},{0,0,0,0,2},{0,0,0,2,4},{0,2,0,2,0},{0,0,7,0,0},
    {0,2,7,2,0},{0,7,0,7,0},{5,1,2,4,5},{1,1,2,4,4},{1,2,2,2,1},{4,2,2,2,4},{0,0,0,0,7},{2,2,2,0,2},
    {6,1,2,0,2},{3,2,2,2,3},{6,2,2,2,6},{1,2,4,2,1},{4,2,1,2,4},{2,2,2,2,2},{0,5,2,5,0}};

/* the 3-bit row (0 = top) of character c; 0 for a space or an unknown character */
EX_FN int ex_glyph_row(char c, int row) {
    const char *p;
    if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    p = c ? strchr(ex__font_chars, c) : NULL;
    return p ? ex__font_rows[p - ex__font_chars][row] : 0;
}

/* calls plot(x, y, user) for every lit cell of text, cells of size `scale`, top-left at (x, y)
   in a y-down pixel frame; characters advance by 4 cells */
EX_FN void ex_text_cells(const char *text, int x, int y, int scale, void (*plot)(int, int, int, void *), void *user) {
    int i, row, col;
    for (i = 0; text[i]; ++i)
        for (row = 0; row < 5; ++row)
            for (col = 0; col < 3; ++col)
                if (ex_glyph_row(text[i], row) & (4 >> col)) plot(x + (4 * i + col) * scale, y + row * scale, scale, user);
}

/* ---------------------------------------------------------------- headless OpenGL (EGL) */
#ifdef NBODY_EX_EGL
#define EGL_NO_X11                 /* the EGL device platform needs no X11 headers */
#include <EGL/egl.h>
#include <EGL/eglext.h>
#ifndef EGL_CUDA_DEVICE_NV
#define EGL_CUDA_DEVICE_NV 0x323A
#endif
/* An OpenGL (compatibility profile) context with a width x height pbuffer, current on this
   thread, with no window and no X server: EGL on an EGL device (EGL_EXT_platform_device).
   cuda_device >= 0 takes the EGL device that is that CUDA device (EGL_NV_device_cuda) when
   the driver says which one is, else the first that initialises. Names what it got on log.
   0 on success. Link -lEGL (libglvnd's libEGL.so.1). */
EX_FN int ex_egl_context(int width, int height, int cuda_device, FILE *log) {
    PFNEGLQUERYDEVICESEXTPROC query_devices = (PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
    PFNEGLQUERYDEVICEATTRIBEXTPROC query_attrib = (PFNEGLQUERYDEVICEATTRIBEXTPROC)eglGetProcAddress("eglQueryDeviceAttribEXT");
    PFNEGLGETPLATFORMDISPLAYEXTPROC platform_display =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    static const EGLint config_attribs[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
                                            EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_NONE};
    EGLint pbuffer_attribs[] = {EGL_WIDTH, 0, EGL_HEIGHT, 0, EGL_NONE};
    EGLDeviceEXT devices[16];
    EGLint count = 0, i, nconfigs = 0;
    EGLDisplay dpy = EGL_NO_DISPLAY;
    EGLConfig config;
    EGLSurface surface;
    EGLContext ctx;
    pbuffer_attribs[1] = width;
    pbuffer_attribs[3] = height;
    if (!query_devices || !platform_display || !query_devices(16, devices, &count) || count == 0) {
        fprintf(log, "no EGL devices (EGL_EXT_device_enumeration)\n");
        return -1;
    }
    for (i = 0; i < count && dpy == EGL_NO_DISPLAY; ++i) {
        EGLAttrib cuda = -1;
        EGLint major, minor;
        EGLDisplay d;
        if (cuda_device >= 0 && query_attrib && query_attrib(devices[i], EGL_CUDA_DEVICE_NV, &cuda) && cuda != cuda_device)
            continue;
        d = platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], NULL);
        if (d != EGL_NO_DISPLAY && eglInitialize(d, &major, &minor)) {
            fprintf(log, "EGL %d.%d on device %d of %d (CUDA device %ld), vendor %s\n", major, minor, (int)i, (int)count,
                    (long)cuda, eglQueryString(d, EGL_VENDOR));
            dpy = d;
        }
    }
    if (dpy == EGL_NO_DISPLAY || !eglBindAPI(EGL_OPENGL_API)) return -1;
    if (!eglChooseConfig(dpy, config_attribs, &config, 1, &nconfigs) || nconfigs < 1) return -1;
    surface = eglCreatePbufferSurface(dpy, config, pbuffer_attribs);
    ctx = eglCreateContext(dpy, config, EGL_NO_CONTEXT, NULL);
    if (surface == EGL_NO_SURFACE || ctx == EGL_NO_CONTEXT || !eglMakeCurrent(dpy, surface, surface, ctx)) return -1;
    return 0;
}
#endif

/* ---------------------------------------------------------------- pictures */
typedef struct ex_image { int w, h; float *light; } ex_image;   /* 3 floats a pixel, additive */

/* a window on the x-y plane drawn into the pixel rectangle (px, py, pw, ph) */
typedef struct ex_view { double cx, cy, half; int px, py, pw, ph; } ex_view;

EX_FN int ex_image_alloc(ex_image *im, int w, int h) {
    im->w = w; im->h = h;
    im->light = (float *)calloc((size_t)w * (size_t)h * 3, sizeof(float));
    return im->light ? 0 : -1;
}
EX_FN void ex_image_free(ex_image *im) { free(im->light); im->light = NULL; }
EX_FN void ex_image_clear(ex_image *im) { memset(im->light, 0, (size_t)im->w * (size_t)im->h * 3 * sizeof(float)); }

EX_FN ex_view ex_view_whole(const ex_image *im, double half) {
    ex_view v;
    v.cx = v.cy = 0; v.half = half; v.px = v.py = 0; v.pw = im->w; v.ph = im->h;
    return v;
}

/* add light at world point (x, y), shared bilinearly between the four nearest pixels */
EX_FN void ex_plot(ex_image *im, const ex_view *v, double x, double y, const float rgb[3], float weight) {
    double scale = v->ph / (2 * v->half);
    double fx = v->px + v->pw / 2.0 + (x - v->cx) * scale - 0.5, fy = v->py + v->ph / 2.0 - (y - v->cy) * scale - 0.5;
    int ix = (int)floor(fx), iy = (int)floor(fy), dx, dy, c;
    float ax = (float)(fx - ix), ay = (float)(fy - iy);
    if (!(fx > v->px - 1 && fx < v->px + v->pw && fy > v->py - 1 && fy < v->py + v->ph)) return;
    for (dy = 0; dy < 2; ++dy)
        for (dx = 0; dx < 2; ++dx) {
            int X = ix + dx, Y = iy + dy;
            float w = weight * (dx ? ax : 1 - ax) * (dy ? ay : 1 - ay);
            if (X < v->px || Y < v->py || X >= v->px + v->pw || Y >= v->py + v->ph) continue;
            for (c = 0; c < 3; ++c) im->light[((size_t)Y * (size_t)im->w + (size_t)X) * 3 + (size_t)c] += w * rgb[c];
        }
}

/* every body as a point coloured by speed (v_ref from ex_speed_scale) */
EX_FN void ex_draw_system(ex_image *im, const ex_view *v, const nbody_system *s, double v_ref, float weight) {
    size_t i;
    float rgb[3];
    for (i = 0; i < s->n; ++i) {
        ex_colormap(ex_speed(s, i) / v_ref, rgb);
        ex_plot(im, v, (double)s->x[i], (double)s->y[i], rgb, weight);
    }
}

/* a segment, as points a third of a pixel apart */
EX_FN void ex_draw_line(ex_image *im, const ex_view *v, double x0, double y0, double x1, double y1,
                        const float rgb[3], float weight) {
    double len = hypot(x1 - x0, y1 - y0) * v->ph / (2 * v->half);
    int steps = (int)(len * 3) + 1, k;
    if (steps > 100000) steps = 100000;
    for (k = 0; k < steps; ++k) {
        double f = (k + 0.5) / steps;
        ex_plot(im, v, x0 + f * (x1 - x0), y0 + f * (y1 - y0), rgb, weight / 3);
    }
}

typedef struct ex__text_ctx { ex_image *im; const float *rgb; } ex__text_ctx;
static void ex__text_plot(int x, int y, int scale, void *user) {
    ex__text_ctx *c = (ex__text_ctx *)user;
    int X, Y, k;
    for (Y = y; Y < y + scale && Y < c->im->h; ++Y)
        for (X = x; X < x + scale && X < c->im->w; ++X)
            for (k = 0; k < 3 && X >= 0 && Y >= 0; ++k) c->im->light[((size_t)Y * (size_t)c->im->w + (size_t)X) * 3 + (size_t)k] += 4 * c->rgb[k];
}

/* a label in the picture, top-left at pixel (x, y) */
EX_FN void ex_draw_text(ex_image *im, int x, int y, int scale, const char *text, const float rgb[3]) {
    ex__text_ctx c;
    c.im = im; c.rgb = rgb;
    ex_text_cells(text, x, y, scale, ex__text_plot, &c);
}

/* ---------------------------------------------------------------- files written whole
   A file is written beside its final name (PATH.tmp, as the library writes its files),
   flushed to the disk, and renamed over PATH only when every byte is there: a full disk or a
   failed write leaves no truncated file and the old PATH as it was (rename() within one
   folder replaces a file atomically).
   write(part, ctx) writes the whole file at part and returns 0 on success; errno tells why not. */
typedef int (*ex_file_writer)(const char *part, void *ctx);
EX_FN int ex_write_whole(const char *path, ex_file_writer write, void *ctx) {
    char part[4200];
    int err;
    if ((size_t)snprintf(part, sizeof part, "%s.tmp", path) >= sizeof part) { errno = ENAMETOOLONG; return -1; }
    errno = 0;
    if (write(part, ctx) == 0 && rename(part, path) == 0) return 0;
    err = errno;
    remove(part);
    errno = err;
    return -1;
}

/* the end of writing to f: everything flushed and on the disk, then closed; 0 when all of it
   got there (a full disk shows here at the latest) */
EX_FN int ex_close_synced(FILE *f) {
    int ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0, err = errno;
    if (fclose(f) != 0) return -1;
    errno = err;
    return ok ? 0 : -1;
}

typedef struct ex__png_job { int w, h; const unsigned char *rgb; } ex__png_job;
static int ex__write_png_part(const char *part, void *ctx) {
#ifdef NBODY_EX_PNG
    const ex__png_job *job = (const ex__png_job *)ctx;
    png_image img;
    FILE *f = fopen(part, "wb");
    int ok;
    if (!f) return -1;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)job->w; img.height = (png_uint_32)job->h;
    img.format = PNG_FORMAT_RGB;
    ok = png_image_write_to_stdio(&img, f, 0, job->rgb, job->w * 3, NULL) != 0;
    if (!ok && !errno) errno = EIO;
    return ex_close_synced(f) == 0 && ok ? 0 : -1;
#else
    (void)part; (void)ctx;
    return -1;
#endif
}

/* write 8-bit RGB rows (top row first) as a PNG, whole or not at all (ex_write_whole);
   0 on success, -1 on failure (errno says why) or without libpng */
EX_FN int ex_write_png_rgb8(const char *path, int w, int h, const unsigned char *rgb) {
    ex__png_job job;
    if (!ex_have_png()) return -1;
    job.w = w; job.h = h; job.rgb = rgb;
    return ex_write_whole(path, ex__write_png_part, &job);
}


/* the light tone-mapped to 8-bit RGB rows, top row first (1 - exp(-exposure * light)) */
EX_FN void ex_image_rgb8(const ex_image *im, float exposure, unsigned char *bytes) {
    size_t i, count = (size_t)im->w * (size_t)im->h * 3;
    for (i = 0; i < count; ++i) bytes[i] = (unsigned char)(255.0f * (1.0f - expf(-exposure * im->light[i])) + 0.5f);
}

/* tone-map the light to 8 bits (1 - exp(-exposure * light)) and write it as a PNG */
EX_FN int ex_write_png(const ex_image *im, const char *path, float exposure) {
    size_t count = (size_t)im->w * (size_t)im->h * 3;
    unsigned char *bytes = (unsigned char *)malloc(count);
    int r;
    if (!bytes) return -1;
    ex_image_rgb8(im, exposure, bytes);
    r = ex_write_png_rgb8(path, im->w, im->h, bytes);
    free(bytes);
    return r;
}

/* ---------------------------------------------------------------- terminal */
/* the bodies' density on a cols x rows character grid spanning 2*half vertically (a cell
   is about twice as tall as wide); with ansi, coloured by the mean speed in each cell
   through the colour map */
EX_FN void ex_print_density(FILE *out, const nbody_system *s, double half, double v_ref, int cols, int rows, int ansi) {
    static const char ramp[] = " .:-=+*#%@";
    double *count = (double *)calloc((size_t)cols * (size_t)rows * 2, sizeof(double));
    double sy = rows / (2.0 * half), sx = 2 * sy;   /* cells per unit */
    size_t i;
    int r, c;
    if (!count) return;
    for (i = 0; i < s->n; ++i) {
        int X = (int)floor(cols / 2.0 + (double)s->x[i] * sx), Y = (int)floor(rows / 2.0 - (double)s->y[i] * sy);
        if (X < 0 || Y < 0 || X >= cols || Y >= rows) continue;
        count[(Y * cols + X) * 2] += 1;
        count[(Y * cols + X) * 2 + 1] += ex_speed(s, i);
    }
    for (r = 0; r < rows; ++r) {
        for (c = 0; c < cols; ++c) {
            double k = count[(r * cols + c) * 2];
            int level = k <= 0 ? 0 : 1 + (int)(log2(k) * 1.3);
            if (level > 9) level = 9;
            if (ansi && level > 0) {
                float rgb[3];
                ex_colormap(count[(r * cols + c) * 2 + 1] / k / v_ref, rgb);
                fprintf(out, "\033[38;2;%d;%d;%dm%c", (int)(255 * rgb[0]), (int)(255 * rgb[1]), (int)(255 * rgb[2]), ramp[level]);
            } else {
                fputc(ramp[level], out);
            }
        }
        fputs(ansi ? "\033[0m\n" : "\n", out);
    }
    free(count);
}

/* The time left, from the rate (simulated time per wall second) over a sliding window of
   the last few seconds, leaving out the first EX_ETA_WARMUP_S seconds of a run (start-up,
   first touch of memory, GPU tuning, a tree's first builds). The window keeps samples at
   least EX_ETA_GAP_S apart. An estimate is given only when it is meaningful: the window spans
   a second or more, t moved in both of its halves, and the rates of the two halves agree
   within a factor of 2; otherwise it is unknown (< 0). A run whose rate still changes (an
   adaptive method finding its step, a collapse) reads "unknown" instead of a figure that a
   few slow first steps would blow up a million times. */
#define EX_ETA_WARMUP_S 1.0
#define EX_ETA_GAP_S 0.25
#define EX_ETA_SAMPLES 16
typedef struct ex_eta { double wall0, wall[EX_ETA_SAMPLES], t[EX_ETA_SAMPLES]; int count, first; } ex_eta;

EX_FN void ex_eta_start_at(ex_eta *e, double now) { e->wall0 = now; e->count = e->first = 0; }
EX_FN void ex_eta_start(ex_eta *e, double t) { (void)t; ex_eta_start_at(e, ex_now()); }

/* the i-th sample of the window, oldest first */
static double ex__eta_wall(const ex_eta *e, int i) { return e->wall[(e->first + i) % EX_ETA_SAMPLES]; }
static double ex__eta_t(const ex_eta *e, int i) { return e->t[(e->first + i) % EX_ETA_SAMPLES]; }

/* the seconds left to t_end at wall time now with the run at t; < 0: unknown */
EX_FN double ex_eta_seconds_at(ex_eta *e, double now, double t, double t_end) {
    double span, r1, r2, rate;
    int mid, last;
    if (now - e->wall0 < EX_ETA_WARMUP_S) return -1;
    if (e->count == 0 || now - ex__eta_wall(e, e->count - 1) >= EX_ETA_GAP_S) {
        if (e->count == EX_ETA_SAMPLES) e->first = (e->first + 1) % EX_ETA_SAMPLES;
        else ++e->count;
        e->wall[(e->first + e->count - 1) % EX_ETA_SAMPLES] = now;
        e->t[(e->first + e->count - 1) % EX_ETA_SAMPLES] = t;
    }
    last = e->count - 1;
    mid = last / 2;
    span = now - ex__eta_wall(e, 0);
    if (e->count < 3 || span < 1 || !(t < t_end)) return t < t_end ? -1 : 0;
    r1 = (ex__eta_t(e, mid) - ex__eta_t(e, 0)) / (ex__eta_wall(e, mid) - ex__eta_wall(e, 0));
    r2 = (t - ex__eta_t(e, mid)) / (now - ex__eta_wall(e, mid));
    if (!(r1 > 0 && r2 > 0) || r1 > 2 * r2 || r2 > 2 * r1) return -1;
    rate = (t - ex__eta_t(e, 0)) / span;
    return (t_end - t) / rate;
}
EX_FN double ex_eta_seconds(ex_eta *e, double t, double t_end) { return ex_eta_seconds_at(e, ex_now(), t, t_end); }

/* a duration for people: "42 s", "17 min", "3.5 h", "12 d", "> 1 year", "unknown" (< 0) */
EX_FN void ex_format_duration(double seconds, char *text, size_t size) {
    if (!(seconds >= 0)) snprintf(text, size, "unknown");
    else if (seconds < 100) snprintf(text, size, "%.0f s", seconds);
    else if (seconds < 6000) snprintf(text, size, "%.0f min", seconds / 60);
    else if (seconds < 48 * 3600.0) snprintf(text, size, "%.1f h", seconds / 3600);
    else if (seconds < 365 * 86400.0) snprintf(text, size, "%.0f d", seconds / 86400);
    else snprintf(text, size, "> 1 year");
}

/* one progress line: on a terminal a bar redrawn in place ('\r'), otherwise a plain line
   (a log stays one line per report); eta < 0: not known yet; drift NaN: not shown */
EX_FN void ex_progress(FILE *out, int terminal, double t, double t_end, double elapsed, double eta, double drift) {
    double frac = t_end > 0 ? t / t_end : 1;
    char eta_text[32], drift_text[32] = "";
    if (frac > 1) frac = 1;
    ex_format_duration(eta, eta_text, sizeof eta_text);
    if (drift == drift) snprintf(drift_text, sizeof drift_text, "  dE/E = %+.3e", drift);
    if (terminal) {
        char bar[31];
        int i, full = (int)(frac * 30);
        for (i = 0; i < 30; ++i) bar[i] = i < full ? '#' : '.';
        bar[30] = 0;
        fprintf(out, "\r[%s] %3.0f%%  t = %-9.4g ETA %8s%s ", bar, 100 * frac, t, eta_text, drift_text);
    } else {
        fprintf(out, "t = %.6g  %.0f%%  elapsed %.1f s  ETA %s%s\n", t, 100 * frac, elapsed, eta_text, drift_text);
    }
    fflush(out);
}

/* ---------------------------------------------------------------- video through ffmpeg
   Frames go as raw RGB bytes down a pipe into ffmpeg (H.264, yuv420p: plays everywhere);
   nothing here encodes video. Width and height must be even. ffmpeg writes the video beside
   its name (NAME.tmp.mp4 for NAME.mp4: ffmpeg picks the container by the extension), and
   ex_video_close renames it over NAME only when ffmpeg finished it: a full disk or a failed
   run leaves no broken video and an older NAME as it was. */
#define EX_FFMPEG_MISSING "ffmpeg is not installed (it is the package 'ffmpeg': apt-get install ffmpeg, dnf install ffmpeg, brew install ffmpeg)"
EX_FN int ex_have_ffmpeg(void) { return system("ffmpeg -version >/dev/null 2>&1") == 0; }

typedef struct ex_video { FILE *pipe; int w, h; long frames; char path[4096], part[4200]; } ex_video;

/* path with ".tmp" before its extension (the extension of the file name, not of a folder) */
static int ex__video_part_name(const char *path, char *part, size_t size) {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t stem = dot && dot > (slash ? slash + 1 : path) ? (size_t)(dot - path) : strlen(path);
    return (size_t)snprintf(part, size, "%.*s.tmp%s", (int)stem, path, path + stem) < size ? 0 : -1;
}

/* 1 when ffmpeg can write H.264 into the container that path's extension names */
EX_FN int ex_video_name_ok(const char *path) {
    static const char *const ext[] = {".mp4", ".mov", ".mkv"};
    size_t i, len = strlen(path);
    for (i = 0; i < sizeof ext / sizeof ext[0]; ++i)
        if (len > 4 && !strcmp(path + len - 4, ext[i]) && path[len - 5] != '/') return 1;
    return 0;
}

/* 0 on success; the path is quoted for the shell and given as file:PATH (a name may start
   with '-' or hold a ':') */
EX_FN int ex_video_open(ex_video *v, const char *path, int w, int h, int fps) {
    char cmd[16384], quoted[8400];
    size_t i, k = 0;
    v->pipe = NULL;
    if (strlen(path) >= sizeof v->path || ex__video_part_name(path, v->part, sizeof v->part) != 0) return -1;
    strcpy(v->path, path);
    for (i = 0; v->part[i] && k + 5 < sizeof quoted; ++i) {    /* 'a'\''b' */
        if (v->part[i] == '\'') { memcpy(quoted + k, "'\\''", 4); k += 4; } else quoted[k++] = v->part[i];
    }
    quoted[k] = 0;
    v->w = w; v->h = h; v->frames = 0;
    snprintf(cmd, sizeof cmd, "ffmpeg -xerror -loglevel error -y -f rawvideo -pix_fmt rgb24 -s %dx%d -r %d -i - "
             "-c:v libx264 -pix_fmt yuv420p -movflags +faststart 'file:%s'", w, h, fps, quoted);
    v->pipe = popen(cmd, "w");
    return v->pipe ? 0 : -1;
}

EX_FN int ex_video_frame(ex_video *v, const unsigned char *rgb) {
    size_t bytes = (size_t)v->w * (size_t)v->h * 3;
    if (!v->pipe || fwrite(rgb, 1, bytes, v->pipe) != bytes) return -1;
    v->frames++;
    return 0;
}

/* 0 when ffmpeg wrote the whole video and it is in place under its name; else the partial
   file is removed */
EX_FN int ex_video_close(ex_video *v) {
    int st;
    if (!v->pipe) return -1;
    st = pclose(v->pipe);
    v->pipe = NULL;
    if (st == 0 && rename(v->part, v->path) == 0) return 0;
    remove(v->part);
    return -1;
}


#endif
