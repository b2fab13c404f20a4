/* cuda_gl_interop.c - nbody_cuda_positions through CUDA-OpenGL interop, headless.

   An OpenGL context on the NVIDIA GPU with no window or X server (EGL on an EGL device,
   EGL_EXT_platform_device, pbuffer or surfaceless); an OpenGL vertex buffer registered with
   CUDA (cudaGraphicsGLRegisterBuffer), mapped, filled by nbody_cuda_positions, unmapped;
   then read back through OpenGL (glGetBufferSubData) and compared with nbody_get_state's
   positions converted to float: every value bitwise equal, the float after the last body
   untouched. For the dense and the tree CUDA engine, a body count that is no multiple of a
   block, two frames (the mapping is reused after more steps). Also the refusals: a buffer
   one byte short, NULL, a host pointer, and a CPU engine (NBODY_ERR_UNAVAILABLE).
   Built only with CUDA (make test-cuda); skips when no EGL device or no CUDA GPU is there.
   Build: nvcc -O3 -arch=sm_90 -c nbody_cuda.cu && cc -DNBODY_WITH_CUDA -DNBODY_EX_EGL -I. -I$CUDA/include
          tests/cuda_gl_interop.c nbody_cuda.o -o cuda_gl_interop -L$CUDA/lib64 -lcudart
          -lstdc++ -l:libEGL.so.1 -l:libOpenGL.so.0 -lm */
#define _POSIX_C_SOURCE 200809L    /* example.h: clock_gettime, fileno */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include "../examples/example.h"   /* ex_egl_context (built with -DNBODY_EX_EGL) */
#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <cuda_runtime.h>
#include <cuda_gl_interop.h>
#include <string.h>

/* the positions of sim in the buffer vbo through the interop, compared with get_state */
static void frame(nbody_sim *sim, struct cudaGraphicsResource *res, GLuint vbo, size_t n, const char *what) {
    nbody_system s = {0};
    float *back = (float *)malloc((3 * n + 3) * sizeof(float));
    void *dev = NULL;
    size_t bytes = 0, i, bad = 0;
    nbody_result r = NBODY_ERR_DEVICE;
    cudaError_t err = cudaGraphicsMapResources(1, &res, 0);
    CHECK(err == cudaSuccess, "%s: map: %s", what, cudaGetErrorString(err));
    if (err == cudaSuccess) {
        err = cudaGraphicsResourceGetMappedPointer(&dev, &bytes, res);
        CHECK(err == cudaSuccess && bytes >= 12 * n, "%s: mapped pointer: %s, %lu bytes", what, cudaGetErrorString(err),
              (unsigned long)bytes);
        if (err == cudaSuccess) {
            struct cudaPointerAttributes at;
            if (cudaPointerGetAttributes(&at, dev) == cudaSuccess)
                printf("%s: mapped buffer %p, %lu bytes, CUDA memory type %d, device %d\n", what, dev,
                       (unsigned long)bytes, (int)at.type, at.device);
            CHECK(nbody_cuda_positions(sim, dev, 12 * n - 1) == NBODY_ERR_INVALID_ARGUMENT, "%s: one byte short refused", what);
            /* exactly 12 n: the buffer's last float is a guard that must stay untouched */
            r = nbody_cuda_positions(sim, dev, 12 * n);
            CHECK(r == NBODY_OK, "%s: nbody_cuda_positions: %s", what, nbody_result_string(r));
        }
        err = cudaGraphicsUnmapResources(1, &res, 0);
        CHECK(err == cudaSuccess, "%s: unmap: %s", what, cudaGetErrorString(err));
    }
    CHECK(back && nbody_system_alloc(&s, n) == NBODY_OK && nbody_get_state(sim, &s) == NBODY_OK, "%s: get_state", what);
    if (!back || r != NBODY_OK || !s.x) { free(back); nbody_system_free(&s); return; }
    glBindBuffer(GL_ARRAY_BUFFER, vbo);
    glGetBufferSubData(GL_ARRAY_BUFFER, 0, (GLsizeiptr)((3 * n + 3) * sizeof(float)), back);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    CHECK(glGetError() == GL_NO_ERROR, "%s: glGetBufferSubData", what);
    for (i = 0; i < n; ++i) {
        float want[3];
        want[0] = (float)s.x[i]; want[1] = (float)s.y[i]; want[2] = (float)s.z[i];
        if (memcmp(want, back + 3 * i, sizeof want) != 0 && bad++ < 3)
            printf("  body %lu: VBO (%.9g %.9g %.9g), state (%.9g %.9g %.9g)\n", (unsigned long)i, back[3 * i],
                   back[3 * i + 1], back[3 * i + 2], want[0], want[1], want[2]);
    }
    CHECK(bad == 0, "%s: %lu of %lu bodies differ between the VBO and get_state", what, (unsigned long)bad, (unsigned long)n);
    CHECK(back[3 * n] == -7.0f && back[3 * n + 1] == -7.0f && back[3 * n + 2] == -7.0f, "%s: guard after the last body kept", what);
    printf("%s: t = %g, %lu bodies, VBO == (float) get_state: %s\n", what, (double)s.t, (unsigned long)n, bad ? "no" : "yes");
    free(back);
    nbody_system_free(&s);
}

static void engine(nbody_engine e, size_t n) {
    nbody_system s = {0};
    nbody_desc d = {0};
    nbody_sim *sim = NULL, *cpu = NULL;
    struct cudaGraphicsResource *res = NULL;
    float *fill = (float *)malloc((3 * n + 3) * sizeof(float)), host[3];
    GLuint vbo = 0;
    size_t i;
    char what[64];
    int k;
    cudaError_t err;
    snprintf(what, sizeof what, "%s n=%lu", nbody_engine_name(e), (unsigned long)n);
    d.engine = e;
    d.softening = (nbody_real)0.01;
    d.dt = (nbody_real)1e-3;
    if (!fill || nbody_ic_plummer(&s, n, 3) != NBODY_OK || nbody_create(&sim, &d, &s) != NBODY_OK) {
        CHECK(0, "%s: create", what);
        free(fill);
        nbody_system_free(&s);
        return;
    }
    for (i = 0; i < 3 * n + 3; ++i) fill[i] = -7.0f;
    glGenBuffers(1, &vbo);
    glBindBuffer(GL_ARRAY_BUFFER, vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)((3 * n + 3) * sizeof(float)), fill, GL_DYNAMIC_DRAW);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    err = cudaGraphicsGLRegisterBuffer(&res, vbo, cudaGraphicsRegisterFlagsNone);
    CHECK(err == cudaSuccess, "%s: cudaGraphicsGLRegisterBuffer: %s", what, cudaGetErrorString(err));
    for (k = 0; k < 2 && err == cudaSuccess; ++k) {
        for (i = 0; i < 5; ++i) CHECK(nbody_step(sim) == NBODY_OK, "%s: step", what);
        frame(sim, res, vbo, n, what);
    }
    /* refusals change nothing */
    CHECK(nbody_cuda_positions(sim, NULL, 12 * n) == NBODY_ERR_INVALID_ARGUMENT, "%s: NULL refused", what);
    CHECK(nbody_cuda_positions(NULL, fill, 12 * n) == NBODY_ERR_INVALID_ARGUMENT, "%s: NULL sim refused", what);
    host[0] = 5.0f;
    CHECK(n == 1 || nbody_cuda_positions(sim, host, sizeof host) == NBODY_ERR_INVALID_ARGUMENT, "%s: small refused", what);
    CHECK(nbody_cuda_positions(sim, fill, 12 * n) == NBODY_ERR_INVALID_ARGUMENT && fill[0] == -7.0f,
          "%s: a host pointer refused, nothing written", what);
    d.engine = NBODY_ENGINE_BLOCK;
    if (nbody_create(&cpu, &d, &s) == NBODY_OK) {
        void *dev = NULL;
        CHECK(cudaMalloc(&dev, 12 * n) == cudaSuccess, "cudaMalloc");
        CHECK(nbody_cuda_positions(cpu, dev, 12 * n) == NBODY_ERR_UNAVAILABLE, "%s: a CPU engine: unavailable", what);
        cudaFree(dev);
        nbody_destroy(cpu);
    }
    if (res) cudaGraphicsUnregisterResource(res);
    glDeleteBuffers(1, &vbo);
    nbody_destroy(sim);
    nbody_system_free(&s);
    free(fill);
}

int main(void) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        check_skip("NBODY_REQUIRE_CUDA", "no CUDA device");
        return check_finish();
    }
    if (ex_egl_context(16, 16, 0, stdout) != 0) {
        check_skip("NBODY_REQUIRE_GL_INTEROP", "no OpenGL context through EGL on the GPU");
        return check_finish();
    }
    printf("OpenGL %s, %s, %s\n", (const char *)glGetString(GL_VERSION), (const char *)glGetString(GL_VENDOR),
           (const char *)glGetString(GL_RENDERER));
    engine(NBODY_ENGINE_CUDA, 1000);
    engine(NBODY_ENGINE_CUDA, 4099);
    engine(NBODY_ENGINE_CUDA_TREE, 1000);
    return check_finish();
}
