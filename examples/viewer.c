/* viewer.c - a live OpenGL window (GLFW) on a running simulation: the bodies as points
   coloured by speed (colour map in example.h), and an on-screen readout of the engine, the
   method, the wall time per step and the energy drift.
   Keys: SPACE pause, S next engine (the Alea GPU article's 'S': cycles every engine this
   build runs), M next method, R restart, +/- steps per frame, arrows rotate, Q/ESC quit.
   Switching keeps the current state: the new simulation starts where the old one stopped.
   Usage: viewer [--scenario NAME] [--n N] [--engine NAME] [--steps K] [--frames F --screenshot FILE.png]
                 [--keys KEYS] [--interop 0|1] [--context glx|egl] [--offscreen]
          (--frames F quits after F frames; --screenshot saves the last one, needs libpng;
          --keys presses one key of KEYS each frame, e.g. "SM": for tests and recordings)
   The positions live in an OpenGL vertex buffer. On the CPU and OpenCL engines they go
   there through host memory every frame (nbody_get_state, glBufferSubData). Built with
   NBODY_WITH_CUDA and running a CUDA engine, they go there through CUDA-OpenGL interop
   (seed 001): the buffer is registered with CUDA once, and each frame mapped,
   filled on the GPU by nbody_cuda_positions and unmapped, with no round trip through the
   host; the state then comes to the host only every 10th frame, for the energy readout and
   the speed colours. --interop 0 forces the host path (for comparisons); when the OpenGL
   context is not on the CUDA GPU the viewer says so and takes the host path. --context egl
   asks GLFW for an EGL context instead of GLX (X11 only). --offscreen (with --frames; a build
   with -DNBODY_EX_EGL -lEGL, as make does when EGL is installed) draws into an EGL pbuffer
   on the GPU instead of a window: for machines with a GPU and no display.
   Build: cc -O2 -fopenmp -DNBODY_EX_PNG -I. examples/viewer.c -o viewer -lpng -lglfw -lGL -lm
   With CUDA interop: nvcc -O3 -arch=sm_90 -c nbody_cuda.cu -o nbody_cuda.o; then
          cc -O2 -fopenmp -DNBODY_EX_PNG -DNBODY_WITH_CUDA -I. -I$CUDA/include examples/viewer.c
          nbody_cuda.o -o viewer -lpng -lglfw -lGL -L$CUDA/lib64 -lcudart -lstdc++ -lm
          (or: make WITH_CUDA=1 build/viewer) */
#define _POSIX_C_SOURCE 200809L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"
#define GL_GLEXT_PROTOTYPES        /* glGenBuffers & co. (OpenGL 1.5) */
#define GLFW_INCLUDE_GLEXT
#include <GLFW/glfw3.h>
#ifdef NBODY_WITH_CUDA
#include <cuda_runtime.h>
#include <cuda_gl_interop.h>
#endif

#define VIEWER_STATE_EVERY 10      /* frames between host copies of the state on the interop path */

typedef struct viewer {
    const ex_scenario *sc;
    size_t n;
    nbody_desc desc;
    nbody_sim *sim;
    nbody_system s;
    double e0, v_ref, step_ms, drift, spin, tilt;
    int paused, steps_per_frame, failed;
    float *vertices, *colours;
    GLuint vbo;                    /* the positions, 3 floats a body */
    int interop;                   /* 1 = may use CUDA-OpenGL interop (--interop), -1 = it failed */
    int on_gpu;                    /* this frame's positions came through the interop */
#ifdef NBODY_WITH_CUDA
    struct cudaGraphicsResource *res;  /* vbo registered with CUDA, NULL until first used */
#endif
} viewer;

/* a fresh simulation of desc from state s; 0 when nbody_create accepts it */
static int restart(viewer *v, const nbody_desc *desc) {
    nbody_sim *sim;
    if (nbody_create(&sim, desc, &v->s) != NBODY_OK) return -1;
    nbody_destroy(v->sim);
    v->sim = sim;
    v->desc = *desc;
    v->failed = 0;
    return 0;
}

/* the next engine (which = 0) or method (which = 1) after the current one that this build
   runs, keeping the current state */
static void cycle(viewer *v, int which) {
    int count = which ? (int)NBODY_METHOD_COUNT_ : (int)NBODY_ENGINE_COUNT_, i;
    int current = which ? (int)v->desc.method : (int)v->desc.engine;
    nbody_get_state(v->sim, &v->s);
    for (i = 1; i < count; ++i) {
        nbody_desc d = v->desc;
        int next = (current + i) % count;
        if (next == 0) continue;                       /* "default" is one of the others */
        if (which) d.method = (nbody_method)next;
        else d.engine = (nbody_engine)next;
        if (which == 0 && !nbody_engine_available(d.engine)) continue;
        if (restart(v, &d) == 0) return;
    }
}

static int reset(viewer *v) {
    nbody_system_free(&v->s);
    if (ex_make_scenario(v->sc, &v->s, v->n, 1) != NBODY_OK) return -1;
    v->e0 = ex_energy(&v->s, 1, v->sc->softening);
    v->v_ref = ex_speed_scale(&v->s);
    v->drift = 0;
    return restart(v, &v->desc);
}

static void fetch_state(viewer *v, int drift);

/* a key (GLFW key codes are ASCII for letters, digits and space) */
static void press(GLFWwindow *w, viewer *v, int key) {
    switch (key) {
    case GLFW_KEY_SPACE: v->paused = !v->paused; break;
    case GLFW_KEY_S:
    case GLFW_KEY_M:
        cycle(v, key == GLFW_KEY_M);
        printf("viewer: engine %s, method %s\n", nbody_engine_name(v->desc.engine), nbody_method_name(v->desc.method));
        break;
    case GLFW_KEY_R: if (reset(v) == 0) fetch_state(v, 0); break;
    case GLFW_KEY_EQUAL: case GLFW_KEY_KP_ADD: if (v->steps_per_frame < 1000) v->steps_per_frame *= 2; break;
    case GLFW_KEY_MINUS: case GLFW_KEY_KP_SUBTRACT: if (v->steps_per_frame > 1) v->steps_per_frame /= 2; break;
    case GLFW_KEY_LEFT: v->spin -= 5; break;
    case GLFW_KEY_RIGHT: v->spin += 5; break;
    case GLFW_KEY_UP: v->tilt -= 5; break;
    case GLFW_KEY_DOWN: v->tilt += 5; break;
    case GLFW_KEY_Q: case GLFW_KEY_ESCAPE: if (w) glfwSetWindowShouldClose(w, 1); break;
    default: break;
    }
}

static void on_key(GLFWwindow *w, int key, int scancode, int action, int mods) {
    (void)scancode; (void)mods;
    if (action != GLFW_RELEASE) press(w, (viewer *)glfwGetWindowUserPointer(w), key);
}

static int is_cuda(nbody_engine e) { return e == NBODY_ENGINE_CUDA || e == NBODY_ENGINE_CUDA_TREE; }

#ifdef NBODY_WITH_CUDA
/* the positions into the VBO on the GPU: map, nbody_cuda_positions, unmap (the unmap on
   stream 0 orders the kernel before OpenGL's draw). 0 when done; on the first failure the
   viewer says why and keeps to the host path. */
static int positions_interop(viewer *v) {
    const char *why = NULL;
    cudaError_t err = cudaSuccess;
    void *dst = NULL;
    size_t bytes = 0;
    nbody_result r = NBODY_OK;
    if (!v->res && (err = cudaGraphicsGLRegisterBuffer(&v->res, v->vbo, cudaGraphicsRegisterFlagsWriteDiscard)) != cudaSuccess)
        why = "cudaGraphicsGLRegisterBuffer";
    else if ((err = cudaGraphicsMapResources(1, &v->res, 0)) != cudaSuccess)
        why = "cudaGraphicsMapResources";
    else {
        if ((err = cudaGraphicsResourceGetMappedPointer(&dst, &bytes, v->res)) != cudaSuccess)
            why = "cudaGraphicsResourceGetMappedPointer";
        else if ((r = nbody_cuda_positions(v->sim, dst, bytes)) != NBODY_OK)
            why = "nbody_cuda_positions";
        if (cudaGraphicsUnmapResources(1, &v->res, 0) != cudaSuccess && !why) why = "cudaGraphicsUnmapResources";
    }
    if (!why) return 0;
    fprintf(stderr, "viewer: CUDA-OpenGL interop unavailable (%s: %s): positions go through the host\n", why,
            err != cudaSuccess ? cudaGetErrorString(err) : nbody_result_string(r));
    (void)cudaGetLastError();
    v->interop = -1;
    return -1;
}
#endif

/* this frame's positions into the VBO, through the interop when it can, else from v->s */
static void positions(viewer *v) {
    size_t i;
    v->on_gpu = 0;
#ifdef NBODY_WITH_CUDA
    if (v->interop == 1 && is_cuda(v->desc.engine) && positions_interop(v) == 0) { v->on_gpu = 1; return; }
#endif
    for (i = 0; i < v->s.n; ++i) {
        float *p = v->vertices + 3 * i;
        p[0] = (float)v->s.x[i]; p[1] = (float)v->s.y[i]; p[2] = (float)v->s.z[i];
    }
    glBindBuffer(GL_ARRAY_BUFFER, v->vbo);
    glBufferSubData(GL_ARRAY_BUFFER, 0, (GLsizeiptr)(v->s.n * 3 * sizeof(float)), v->vertices);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
}

/* the state on the host, and what is measured from it: the colours, now and then the drift */
static void fetch_state(viewer *v, int drift) {
    size_t i;
    double target;
    nbody_get_state(v->sim, &v->s);
    /* the colour scale follows the speeds: their 90th percentile, smoothed (a quarter of the
       way each time) so that colours do not flicker, and a merger that heats up shifts the
       scale instead of saturating every body to red */
    target = ex_speed_quantile(&v->s, 0.9, 4096);
    v->v_ref += 0.25 * (target - v->v_ref);
    for (i = 0; i < v->s.n; ++i) ex_colormap(ex_speed(&v->s, i) / v->v_ref, v->colours + 3 * i);
    if (drift) v->drift = ex_drift(&v->s, 1, v->sc->softening, v->e0);
}

/* advance steps_per_frame steps, timing them; the state comes to the host every frame on
   the host path, every VIEWER_STATE_EVERY frames on the interop path */
static void advance(viewer *v, long frame) {
    double t0 = ex_now();
    int i, every = frame % VIEWER_STATE_EVERY == 0;
    for (i = 0; i < v->steps_per_frame && !v->failed; ++i)
        if (nbody_step(v->sim) != NBODY_OK) v->failed = 1;
    v->step_ms = 1e3 * (ex_now() - t0) / v->steps_per_frame;
    if (every || !(v->interop == 1 && is_cuda(v->desc.engine))) fetch_state(v, every);
}

static void text_cell(int x, int y, int scale, void *user) { (void)user; glRecti(x, y, x + scale, y + scale); }

static void draw(viewer *v, int width, int height) {
    double aspect = (double)width / (height > 0 ? height : 1), half = v->sc->view;
    char line[256];
    positions(v);
    glViewport(0, 0, width, height);
    glClearColor(0, 0, 0, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    glMatrixMode(GL_PROJECTION);
    glLoadIdentity();
    glOrtho(-half * aspect, half * aspect, -half, half, -100, 100);
    glMatrixMode(GL_MODELVIEW);
    glLoadIdentity();
    glRotated(v->tilt, 1, 0, 0);
    glRotated(v->spin, 0, 1, 0);
    glEnable(GL_BLEND);
    glBlendFunc(GL_ONE, GL_ONE);                        /* bodies add their light */
    glPointSize(v->s.n > 20000 ? 1.0f : 2.0f);
    glEnableClientState(GL_VERTEX_ARRAY);
    glEnableClientState(GL_COLOR_ARRAY);
    glBindBuffer(GL_ARRAY_BUFFER, v->vbo);
    glVertexPointer(3, GL_FLOAT, 0, NULL);             /* offset 0 in the VBO */
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    glColorPointer(3, GL_FLOAT, 0, v->colours);
    glDrawArrays(GL_POINTS, 0, (GLsizei)v->s.n);
    glDisableClientState(GL_VERTEX_ARRAY);
    glDisableClientState(GL_COLOR_ARRAY);
    /* the readout, in pixels, y down */
    glMatrixMode(GL_PROJECTION);
    glLoadIdentity();
    glOrtho(0, width, height, 0, -1, 1);
    glMatrixMode(GL_MODELVIEW);
    glLoadIdentity();
    glDisable(GL_BLEND);
    glColor3f(0.85f, 0.85f, 0.85f);
    snprintf(line, sizeof line, "%s  N %lu  ENGINE %s  METHOD %s  T %.3f", v->sc->name, (unsigned long)v->s.n,
             nbody_engine_name(v->desc.engine), nbody_method_name(v->desc.method), (double)nbody_get_stats(v->sim).t);
    ex_text_cells(line, 10, 10, 3, text_cell, NULL);
    snprintf(line, sizeof line, "STEP %.2f MS  X%d  DE/E %+.2E  VBO %s%s", v->step_ms, v->steps_per_frame, v->drift,
             v->on_gpu ? "CUDA INTEROP" : "HOST COPY", v->failed ? "  FAILED (R RESTARTS)" : v->paused ? "  PAUSED" : "");
    ex_text_cells(line, 10, 32, 3, text_cell, NULL);
    ex_text_cells("SPACE PAUSE  S ENGINE  M METHOD  R RESTART  +- SPEED  ARROWS ROTATE  Q QUIT", 10, height - 20, 2,
                  text_cell, NULL);
}

/* the back buffer as a PNG (OpenGL's rows run bottom-up) */
static int screenshot(const char *path, int width, int height) {
    unsigned char *rgb = (unsigned char *)malloc((size_t)width * (size_t)height * 3), *flipped;
    int y, r = -1;
    if (!rgb) return -1;
    flipped = (unsigned char *)malloc((size_t)width * (size_t)height * 3);
    if (flipped) {
        glPixelStorei(GL_PACK_ALIGNMENT, 1);
        glReadBuffer(GL_BACK);
        glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, rgb);
        for (y = 0; y < height; ++y)
            memcpy(flipped + (size_t)y * (size_t)width * 3, rgb + (size_t)(height - 1 - y) * (size_t)width * 3, (size_t)width * 3);
        r = ex_write_png_rgb8(path, width, height, flipped);
    }
    free(rgb);
    free(flipped);
    return r;
}

static void on_glfw_error(int code, const char *text) { fprintf(stderr, "viewer: GLFW error %d: %s\n", code, text); }

/* the OpenGL context: a GLFW window (egl: GLFW's EGL instead of GLX), or offscreen an EGL
   pbuffer of the same size on the GPU that is CUDA device cuda_device (no window system:
   for GPU machines without a display; *win stays NULL). 0 when made. */
static int open_context(GLFWwindow **win, int offscreen, int egl, int cuda_device) {
    *win = NULL;
    if (offscreen) {
#ifdef NBODY_EX_EGL
        if (ex_egl_context(960, 720, cuda_device, stdout) == 0) return 0;
#endif
        (void)cuda_device;
        fprintf(stderr, "viewer: cannot make an offscreen OpenGL context (EGL)\n");
        return -1;
    }
    glfwSetErrorCallback(on_glfw_error);
    if (!glfwInit()) {
        const char *display = getenv("DISPLAY"), *wayland = getenv("WAYLAND_DISPLAY");
        fprintf(stderr, "viewer: cannot open a window: %s.\n"
                        "  Run it under a virtual X server:  xvfb-run -a %s\n"
                        "  or draw without a window (a GPU with EGL):  viewer --offscreen --frames 300 --screenshot shot.png\n",
                (display && *display) || (wayland && *wayland) ? "GLFW cannot initialise on this display"
                                                               : "there is no display (DISPLAY is not set)",
                "viewer [options]");
        return -1;
    }
    if (egl) glfwWindowHint(GLFW_CONTEXT_CREATION_API, GLFW_EGL_CONTEXT_API);
    if (!(*win = glfwCreateWindow(960, 720, "nbody.h viewer", NULL, NULL))) {
        fprintf(stderr, "viewer: cannot open an OpenGL window\n");
        glfwTerminate();
        return -1;
    }
    glfwMakeContextCurrent(*win);
    glfwSwapInterval(1);
    return 0;
}

static void help(FILE *f) {
    size_t i;
    fprintf(f, "usage: viewer [options]      a live OpenGL window on a running simulation\n"
               "options:\n"
               "  --scenario NAME      initial conditions (default collision):");
    for (i = 0; i < EX_NSCENARIOS; ++i) fprintf(f, " %s", ex_scenarios[i].name);
    fprintf(f, "\n"
               "  --n N                number of bodies (default: the scenario's)\n"
               "  --engine NAME        simple, openmp, block, tree, cuda, opencl, ... (default block)\n"
               "  --steps K            steps per frame (default 2)\n"
               "  --frames F           quit after F frames\n"
               "  --screenshot FILE    save the last frame as a PNG (with --frames; needs libpng)\n"
               "  --keys KEYS          press one key of KEYS each frame, e.g. SM (tests, recordings)\n"
               "  --interop 0|1        CUDA engines: positions to OpenGL on the GPU (1, default) or via the host\n"
               "  --context glx|egl    how GLFW makes the window's OpenGL context (default glx)\n"
               "  --offscreen          no window: draw into an EGL pbuffer (with --frames; GPU machines)\n"
               "  --help               this text\n"
               "keys:\n"
               "  SPACE                pause / run\n"
               "  S                    next engine this build runs (keeps the state)\n"
               "  M                    next method (keeps the state)\n"
               "  R                    restart the scenario\n"
               "  + / -                double / halve the steps per frame\n"
               "  arrows               rotate the view\n"
               "  Q, ESC               quit\n"
               "colours: speed, blue slow, green medium, red fast; the scale follows the 90th percentile\n"
               "of the speeds, smoothed over frames, so a merger heating up does not saturate to red.\n"
               "Without a display: xvfb-run -a viewer ..., or viewer --offscreen --frames F --screenshot F.png\n");
}

/* a refused option value: one line naming it */
static int refuse(const char *option, const char *value, const char *want) {
    fprintf(stderr, "viewer: %s '%s': want %s (viewer --help explains the options)\n", option, value, want);
    return 2;
}

/* the whole number text is, or 0 when it is not one (or out of range) */
static size_t whole_number(const char *text) {
    char *end;
    unsigned long long v;
    if (*text < '0' || *text > '9') return 0;
    errno = 0;
    v = strtoull(text, &end, 10);
    return *end || errno || v > 100000000ULL ? 0 : (size_t)v;
}

/* the library's log: warnings as they come; the last error is kept for the reason of a failure */
static char last_error[512];
static void on_log(nbody_log_level level, const char *message, void *user_data) {
    (void)user_data;
    if (level == NBODY_LOG_ERROR) snprintf(last_error, sizeof last_error, "%s", message);
    else if (level == NBODY_LOG_WARNING) fprintf(stderr, "%s\n", message);
}

static int usage(void) {
    fprintf(stderr, "usage: viewer [--scenario NAME] [--n N] [--engine NAME] [--steps K] [--frames F] [--screenshot FILE.png]\n"
                    "              [--keys KEYS] [--interop 0|1] [--context glx|egl] [--offscreen] [--help]\n"
                    "(viewer --help explains the options and the keys)\n");
    return 2;
}

int main(int argc, char **argv) {
    static viewer v;
    const char *shot = NULL, *keys = "";
    long frames = 0, frame;
    int i, rc = 0, egl = 0, offscreen = 0;
    GLFWwindow *win;
    v.sc = ex_find_scenario("collision");
    v.steps_per_frame = 2;
    v.tilt = -30;
    v.interop = 1;
    v.desc.engine = NBODY_ENGINE_BLOCK;
    for (i = 1; i < argc; i += 2) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(stdout); return 0; }
        if (!strcmp(a, "--offscreen")) { offscreen = 1; --i; continue; }   /* a flag without a value */
        if (!val) return usage();
        if (!strcmp(a, "--scenario")) { if (!(v.sc = ex_find_scenario(val))) return usage(); }
        else if (!strcmp(a, "--n")) { if ((v.n = whole_number(val)) == 0) return refuse("--n", val, "a whole number >= 1"); }
        else if (!strcmp(a, "--steps")) v.steps_per_frame = atoi(val);
        else if (!strcmp(a, "--frames")) frames = atol(val);
        else if (!strcmp(a, "--screenshot")) shot = val;
        else if (!strcmp(a, "--keys")) keys = val;
        else if (!strcmp(a, "--engine")) { if (!ex_find_engine(val, &v.desc.engine)) return usage(); }
        else if (!strcmp(a, "--interop") && (!strcmp(val, "0") || !strcmp(val, "1"))) v.interop = atoi(val);
        else if (!strcmp(a, "--context") && (!strcmp(val, "glx") || !strcmp(val, "egl"))) egl = val[0] == 'e';
        else return usage();
    }
    if (v.steps_per_frame < 1 || frames < 0 || (ex_fixed_size(v.sc) && v.n > 0) || (offscreen && !frames)) return usage();
#ifndef NBODY_EX_EGL
    if (offscreen) { fprintf(stderr, "viewer: --offscreen needs a build with EGL (-DNBODY_EX_EGL -lEGL)\n"); return 2; }
#endif
    if (shot && !ex_have_png()) { fprintf(stderr, "viewer: --screenshot needs a build with libpng\n"); return 2; }
    v.desc.method = NBODY_LEAPFROG;
    v.desc.softening = (nbody_real)v.sc->softening;
    v.desc.dt = (nbody_real)v.sc->dt;
    if (v.n && v.n < ex_min_bodies(v.sc)) {
        fprintf(stderr, "viewer: --n %lu: scenario %s needs at least %lu bodies\n", (unsigned long)v.n, v.sc->name,
                (unsigned long)ex_min_bodies(v.sc));
        return 2;
    }
    v.desc.log.func = on_log;
    if (reset(&v) != 0) {
        fprintf(stderr, "viewer: cannot start the simulation of %s with %lu bodies%s%s\n", v.sc->name,
                (unsigned long)(v.n ? v.n : v.sc->n), *last_error ? ": " : "", last_error);
        return 1;
    }
    v.vertices = (float *)malloc(v.s.n * 3 * sizeof(float));
    v.colours = (float *)malloc(v.s.n * 3 * sizeof(float));
    if (!v.vertices || !v.colours) return 1;
    if (open_context(&win, offscreen, egl, v.desc.device) != 0) return 1;
    if (win) {
        glfwSetWindowUserPointer(win, &v);
        glfwSetKeyCallback(win, on_key);
    }
    printf("viewer: OpenGL %s on %s\n", (const char *)glGetString(GL_VERSION), (const char *)glGetString(GL_RENDERER));
    glGenBuffers(1, &v.vbo);
    glBindBuffer(GL_ARRAY_BUFFER, v.vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(v.s.n * 3 * sizeof(float)), NULL, GL_STREAM_DRAW);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    fetch_state(&v, 0);
    for (frame = 0; !win || !glfwWindowShouldClose(win); ++frame) {
        int w = 960, h = 720;
        if (frame < (long)strlen(keys)) press(win, &v, keys[frame]);   /* scripted keys, one a frame */
        if (!v.paused && !v.failed) advance(&v, frame);
        if (win) glfwGetFramebufferSize(win, &w, &h);
        draw(&v, w, h);
        if (frames && frame + 1 >= frames) {
            if (shot && (rc = screenshot(shot, w, h)) != 0) fprintf(stderr, "viewer: cannot write %s\n", shot);
            else if (shot) printf("viewer: wrote %s (%dx%d) after %ld frames, t = %g, positions by %s\n", shot, w, h, frame + 1,
                                  (double)nbody_get_stats(v.sim).t, v.on_gpu ? "CUDA-OpenGL interop" : "host copy");
            break;
        }
        if (win) {
            glfwSwapBuffers(win);
            glfwPollEvents();
        }
    }
#ifdef NBODY_WITH_CUDA
    if (v.res) cudaGraphicsUnregisterResource(v.res);
#endif
    glDeleteBuffers(1, &v.vbo);
    if (win) {
        glfwDestroyWindow(win);
        glfwTerminate();
    }
    nbody_destroy(v.sim);
    nbody_system_free(&v.s);
    free(v.vertices);
    free(v.colours);
    return rc ? 1 : 0;
}
