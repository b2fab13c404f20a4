#!/bin/sh
# Builds and runs tests/cuda_gl_interop.c (CUDA-OpenGL interop through EGL) when the EGL and
# OpenGL headers and libraries are there. A bare GPU machine with only the CUDA toolkit has
# neither: the test is then reported as skipped with the reason (nothing else depends on it),
# and fails instead under NBODY_REQUIRE_VIEWER=1.
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
absent() {
    if [ "$NBODY_REQUIRE_VIEWER" = 1 ]; then echo "FAIL (required by NBODY_REQUIRE_VIEWER) $*"; echo "RESULT 0 1 0"; exit 1; fi
    echo "SKIP $*"; echo "RESULT 0 0 1"; exit 0
}
probe=$(mktemp -d); trap 'rm -rf "$probe"' EXIT
printf '#include <EGL/egl.h>\n#include <GL/gl.h>\nint main(void){return (int)eglGetError() + (int)glGetError();}\n' > "$probe/p.c"
${CC:-cc} "$probe/p.c" -o "$probe/p" -l:libEGL.so.1 -l:libOpenGL.so.0 >/dev/null 2>&1 ||
    absent "cuda_gl_interop: no EGL/OpenGL headers or libraries (Debian: libegl-dev libopengl-dev)"
$MAKE --no-print-directory WITH_CUDA=1 "$BUILD/cuda_gl_interop" >"$probe/log" 2>&1 ||
    { cat "$probe/log"; echo "FAIL cuda_gl_interop does not build"; echo "RESULT 0 1 0"; exit 1; }
exec "./$BUILD/cuda_gl_interop"
