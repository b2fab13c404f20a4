/* galaxies.c - the browser demo: two disc galaxies collide, live, in a <canvas>
   (examples/web/index.html draws what these functions hand it, every animation frame).
   nbody.h compiled to WebAssembly with SIMD128: the BLOCK engine at the simd128 level, float,
   leapfrog with a fixed step, one thread (a page's main thread).
   Build: make web   (emcc -O3 -msimd128 -DNBODY_REAL=float -I. examples/web/galaxies.c
   -o build/web/galaxies.js ...; then open build/web/index.html through any web server) */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <emscripten.h>

static nbody_sim *sim;
static nbody_system state;

/* a new collision of n bodies (two galaxies, each around a central body of 90 % of its
   mass, 3 apart: the collision scenario of the other examples); 0 when it runs */
EMSCRIPTEN_KEEPALIVE int web_start(int n) {
    nbody_desc d = NBODY_ZERO;
    if (sim) nbody_destroy(sim);
    sim = NULL;
    nbody_system_free(&state);
    if (n < 2 || nbody_ic_collision(&state, (size_t)n, 0.9f, 3, 1) != NBODY_OK) return 1;
    d.engine = NBODY_ENGINE_BLOCK;
    d.method = NBODY_LEAPFROG;
    d.softening = 0.02f;
    d.dt = 2e-3f;
    d.threads = 1;
    return nbody_create(&sim, &d, &state) != NBODY_OK;
}
/* k steps; 0 when they ran */
EMSCRIPTEN_KEEPALIVE int web_step(int k) {
    int i;
    for (i = 0; i < k; ++i)
        if (nbody_step(sim) != NBODY_OK) return 1;
    return 0;
}
/* the state the page draws (web_x, web_y), copied once a frame, not once a step */
EMSCRIPTEN_KEEPALIVE int web_state(void) { return nbody_get_state(sim, &state) != NBODY_OK; }
EMSCRIPTEN_KEEPALIVE const float *web_x(void) { return state.x; }
EMSCRIPTEN_KEEPALIVE const float *web_y(void) { return state.y; }
EMSCRIPTEN_KEEPALIVE int web_n(void) { return (int)state.n; }
EMSCRIPTEN_KEEPALIVE double web_t(void) { return state.t; }
EMSCRIPTEN_KEEPALIVE const char *web_engine(void) { return nbody_engine_name(NBODY_ENGINE_BLOCK); }
EMSCRIPTEN_KEEPALIVE const char *web_simd(void) { return nbody_simd_name(sim); }
