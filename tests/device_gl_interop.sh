#!/bin/sh
# The CUDA-OpenGL interop on a GPU machine that has the NVIDIA driver and CUDA but no OpenGL
# development files and no display (the H100 device of docs/gpu.md). Run from
# the repository root; everything it needs beyond the driver is carried in and named by:
#   GL   folder of libglvnd .deb files (libegl1 libglvnd0 libopengl0 libgl1 libglx0),
#        unpacked into / (apt-get download on a Debian/Ubuntu machine)
#   INC  folder of headers: GL/gl.h GL/glext.h KHR/ EGL/ GLFW/glfw3.h png.h pngconf.h pnglibconf.h
#   XB   xb.tar.xz: xb/bin/Xvfb, xb/bin/xkbcomp, xb/xkb (keymaps), xb/dri/swrast_dri.so (Xvfb's
#        own GLX provider) and xb/lib (their libraries, libglfw.so.3, libpng16.so.16)
#   OUT  where logs and screenshots go
# 1. make test-cuda-gl: tests/cuda_gl_interop.c on an EGL context of the GPU, then again
#    under compute-sanitizer memcheck.
# 2. The real viewer (WITH_CUDA, cuda engine) --offscreen, an EGL pbuffer on the GPU: a
#    screenshot with the positions through the interop, one with --interop 0 (host copy),
#    the two compared pixel by pixel below the readout.
# 3. The viewer in a GLFW window under Xvfb with NVIDIA's GLX (__GLX_VENDOR_LIBRARY_NAME=nvidia,
#    Xvfb allowing indirect GLX), then with GLFW's EGL on X11.
GL=${GL:-.gl}; INC=${INC:-.glinc}; XB=${XB:-xb.tar.xz}; OUT=${OUT:-/tmp/out}
CUDA=$(dirname "$(dirname "$(command -v nvcc)")")
mkdir -p "$OUT"
for f in "$GL"/*.deb; do dpkg -x "$f" /; done
ldconfig
j=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$j" ] && export __EGL_VENDOR_LIBRARY_FILENAMES="$j"
nvidia-smi -L
echo "== 1. interop test (EGL)"
make WITH_OPENCL=0 CFLAGS="-O2 -march=native -isystem $INC" test-cuda-gl 2>&1 | tee "$OUT/interop.log"
echo "== 1b. under compute-sanitizer memcheck"
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 build/cuda_gl_interop >"$OUT/sanitizer.log" 2>&1
echo "compute-sanitizer exit $?"; tail -n 6 "$OUT/sanitizer.log"

# the carried libraries the machine lacks (only those: its own stay first)
X=/tmp/xb
tar xJf "$XB" -C /tmp || exit 1
mkdir -p /tmp/xl
for l in "$X"/lib/*; do ldconfig -p | grep -q "^[[:space:]]*$(basename "$l") " || cp "$l" /tmp/xl/; done

echo "== 2. the viewer offscreen (EGL pbuffer on the GPU)"
cc -std=c99 -Wall -Wextra -pedantic -Werror -O2 -fopenmp -DNBODY_EX_PNG -DNBODY_EX_EGL -DNBODY_WITH_CUDA -I. \
    -isystem "$INC" -isystem "$CUDA/include" examples/viewer.c build/nbody_cuda.o -o build/viewer_cuda \
    -L"$X/lib" -Wl,-rpath-link,"$X/lib" -l:libglfw.so.3 -l:libpng16.so.16 -l:libGL.so.1 -l:libEGL.so.1 \
    -L"$CUDA/lib64" -lcudart -lstdc++ -lm || { echo "viewer does not build"; exit 1; }
run_viewer() { # interop 0|1, screenshot, more options
    m=$1; shot=$2; shift 2
    LD_LIBRARY_PATH=/tmp/xl:$CUDA/lib64 timeout 120 build/viewer_cuda --scenario collision --n 20000 --engine cuda \
        --frames 21 --interop "$m" --screenshot "$shot" "$@" 2>&1
}
run_viewer 1 "$OUT/offscreen_interop.png" --offscreen
run_viewer 0 "$OUT/offscreen_host.png" --offscreen
python3 - "$OUT/offscreen_interop.png" "$OUT/offscreen_host.png" <<'PY'
import sys
import numpy as np
from PIL import Image
a, b = (np.asarray(Image.open(p).convert("RGB")).astype(int) for p in sys.argv[1:3])
# rows 0..59 hold the readout (step time, VBO path), the last 30 the key help
body = (slice(60, a.shape[0] - 30), slice(None))
lit = int((a[body].sum(axis=2) > 0).sum())
diff = int((np.abs(a[body] - b[body]).sum(axis=2) > 0).sum())
print("screenshots %dx%d: %d lit pixels below the readout, %d pixels differ between interop and host copy"
      % (a.shape[1], a.shape[0], lit, diff))
PY

echo "== 3. the viewer in a window under Xvfb"
mkdir -p /usr/lib/x86_64-linux-gnu/dri
[ -f /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so ] || cp "$X/dri/swrast_dri.so" /usr/lib/x86_64-linux-gnu/dri/
[ -x /usr/bin/xkbcomp ] || cp "$X/bin/xkbcomp" /usr/bin/xkbcomp
LD_LIBRARY_PATH=/tmp/xl "$X/bin/Xvfb" :7 +iglx -screen 0 1024x768x24 -nolisten tcp -xkbdir "$X/xkb" >"$OUT/xvfb.log" 2>&1 &
xpid=$!
sleep 3
for ctx in glx egl; do
    DISPLAY=:7 __GLX_VENDOR_LIBRARY_NAME=nvidia run_viewer 1 "$OUT/window_interop.png" --context $ctx && break
done
kill "$xpid"
