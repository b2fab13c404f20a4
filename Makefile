# nbody.h - build, test, benchmark and demo.
#   make            examples and tests
#   make test       every test; last line "N passed, N failed[, N skipped]"
#   make demo       the galaxy collision, nothing needed but a C compiler
#   make bench      benchmark tables (markdown)
#   make examples   the example programs
#   make help       every target, one line each
#   WITH_OPENCL=1   add the OpenCL engines (-lOpenCL); WITH_CUDA=1 add the CUDA engines (nvcc)
# Sections: variables; build rules; test; bench; demo and examples; sanitizers and fuzzing;
# GPU; MPI; help. Every list a target uses is complete in the variables, so each target has one rule.

# ==== variables =================================================================================
# plain `make` is `make all`, whatever rules come first below
.DEFAULT_GOAL := all
CC      ?= cc
# no -march: the SIMD kernels (portable, AVX2, AVX-512) are all built in and chosen at run
# time (docs/cpu.md); -march=native changes nothing in them
CFLAGS  ?= -O2
WARN    := -std=c99 -Wall -Wextra -pedantic -Werror
NVCC    ?= nvcc
NVFLAGS ?= -O3 -arch=sm_90
BUILD   ?= build

# OpenMP when the compiler has it; the library builds without it
OPENMP := $(shell printf 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
# no FMA contraction of scalar code (clang's default, gcc's GNU modes): the tests compare the
# scalar reference walks bit for bit with the explicit SIMD lanes (docs/tree.md)
FPFLAGS := -ffp-contract=off
ALLFLAGS = $(WARN) $(CFLAGS) $(FPFLAGS) $(OPENMP) -I. $(BACKEND_DEFS)
LIBS     = -lm $(BACKEND_LIBS)
# the float builds (no GPU backends there: those objects are built in double)
FLOAT_FLAGS = $(WARN) $(CFLAGS) $(FPFLAGS) $(OPENMP) -I. -DNBODY_REAL=float

# OpenCL: on by default when CL/cl.h and -lOpenCL both work (WITH_OPENCL=0 forces off);
# kernels.cl is embedded into nbody_cl.h by `make embed`, and make test fails while it is stale
ifeq ($(origin WITH_OPENCL),undefined)
WITH_OPENCL := $(shell printf '\043define CL_TARGET_OPENCL_VERSION 120\n\043include <CL/cl.h>\nint main(void){cl_uint n; return (int)clGetPlatformIDs(0, 0, &n);}\n' | $(CC) -x c - -o /dev/null -lOpenCL >/dev/null 2>&1 && echo 1 || echo 0)
endif

BACKEND_DEFS :=
BACKEND_LIBS :=
BACKEND_OBJS :=
ifeq ($(WITH_OPENCL),1)
BACKEND_DEFS += -DNBODY_WITH_OPENCL
BACKEND_LIBS += -lOpenCL
endif
ifeq ($(WITH_CUDA),1)
BACKEND_DEFS += -DNBODY_WITH_CUDA
BACKEND_OBJS += $(BUILD)/nbody_cuda.o
BACKEND_LIBS += -L$(dir $(shell which $(NVCC)))../lib64 -lcudart -lstdc++
endif
# NCCL: several GPUs in one process (desc.devices > 1 on the CUDA engines).
# make WITH_CUDA=1 WITH_NCCL=1 [NCCL_HOME=dir with include/ and lib/] (a clean build dir:
# nbody_cuda.o does not know the flag changed). Without NCCL_HOME the CUDA toolkit's NCCL.
comma := ,
ifeq ($(WITH_NCCL),1)
NVFLAGS      += -DNBODY_WITH_NCCL $(if $(NCCL_HOME),-I$(NCCL_HOME)/include)
BACKEND_LIBS += $(if $(NCCL_HOME),-L$(NCCL_HOME)/lib -Wl$(comma)-rpath$(comma)$(NCCL_HOME)/lib) -l:libnccl.so.2
endif
# MPI: the distributed engine (desc.mpi_comm, docs/scaling.md), built with mpicc when it and
# mpirun are installed (Open MPI: openmpi-bin libopenmpi-dev); tests/test_mpi.sh runs
# build/mpi_engines under mpirun -np 1..4, and reports the MPI tests as skipped when they are
# absent (failed under NBODY_REQUIRE_MPI=1). build/nbody_mpi: the nbody CLI for mpirun;
# build/mpi_scaling: the ranks x threads benchmark.
MPICC    ?= mpicc
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 && echo 1)
MPIFLAGS  = $(WARN) $(CFLAGS) $(FPFLAGS) $(OPENMP) -I. -DNBODY_WITH_MPI
# CUDA-OpenGL interop: a WITH_CUDA=1 viewer includes CUDA's headers (cuda_gl_interop.h);
# make test-cuda also runs tests/cuda_gl_interop.c (an EGL context on the GPU, libglvnd's
# libEGL + libOpenGL; GL_INTEROP_LIBS overrides)
CUDA_INC        := -isystem $(dir $(shell which $(NVCC) 2>/dev/null))../include
GL_INTEROP_LIBS ?= -l:libEGL.so.1 -l:libOpenGL.so.0

HEADERS      := nbody.h $(wildcard nbody_cl.h)
TEST_SRCS    := $(wildcard tests/test_*.c)
# every tests/test_*.c, and the BLOCK engine's test again in float
TESTS        := $(patsubst tests/%.c,$(BUILD)/%,$(TEST_SRCS)) $(BUILD)/test_block_float
# the core tests again in float and long double, the tree's and hermite's in float, the stall test in both
# (NBODY_REAL)
PRECISION_TESTS := $(BUILD)/test_core_float $(BUILD)/test_core_longdouble $(BUILD)/test_tree_float \
                   $(BUILD)/test_stall_float $(BUILD)/test_stall_longdouble $(BUILD)/test_limits_float \
                   $(BUILD)/test_hermite_float $(BUILD)/test_tree_block_float $(BUILD)/test_sweep_float
# tests written as shell scripts: the command-line tool, the viewer, README.md and docs/*.md
# (links resolve, README stays short, pages speak to users), the docs' code compiled
TEST_SCRIPTS := tests/msvc_constructs.sh tests/tracked_files.sh tests/test_cli.sh tests/test_cli_sweep.sh tests/test_viewer.sh tests/test_docs.sh tests/compile_docs.sh tests/test_mpi.sh
# the command-line tool again in float (NBODY_REAL): tests/test_cli.sh runs its checks of
# landing on t-end and of refusals on it too
CLI_FLOAT    := $(BUILD)/nbody_float
# the same bits on every platform: tests/test_determinism.c natively, under qemu-aarch64, node
# and Wine, hashes compared (builds the cross programs below with the tools installed)
TEST_SCRIPTS += tests/test_platforms.sh
# the distributed engine's test program (run by tests/test_mpi.sh), when MPI is installed
MPI_TESTS    := $(if $(HAVE_MPI),$(BUILD)/mpi_engines $(BUILD)/mpi_domains $(BUILD)/mpi_hermite)
BENCH_SRCS   := $(wildcard bench/bench_*.c)
BENCHES      := $(patsubst bench/%.c,$(BUILD)/%,$(BENCH_SRCS)) $(BUILD)/bench_cpu_float
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLES     := $(patsubst examples/%.c,$(BUILD)/%,$(EXAMPLE_SRCS)) $(if $(HAVE_MPI),$(BUILD)/nbody_mpi)

# examples: libpng gives them PNG output (-DNBODY_EX_PNG); GLFW + OpenGL the live viewer.
# Examples that cannot be built without them are left out of `make` with a notice.
PNG_LIBS  := $(shell pkg-config --libs libpng 2>/dev/null)
GLFW_LIBS := $(shell pkg-config --libs glfw3 gl 2>/dev/null)
EX_PNG    := $(if $(PNG_LIBS),-DNBODY_EX_PNG $(PNG_LIBS))
EXAMPLES_NEED_PNG := galaxy_collision central_body three_body
EXAMPLES_NEED_PNG += planetesimals galaxy_merger arcade star_cluster
EXAMPLE_LIBS_nbody  = $(EX_PNG)
EXAMPLE_LIBS_demo   = $(EX_PNG)
EXAMPLE_LIBS_viewer = $(EX_PNG) $(GLFW_LIBS)
$(foreach e,$(EXAMPLES_NEED_PNG),$(eval EXAMPLE_LIBS_$(e) = $(EX_PNG)))
ifeq ($(WITH_CUDA),1)
EXAMPLE_LIBS_viewer += $(CUDA_INC)
endif
# the viewer's --offscreen (an EGL pbuffer, no window) when EGL is there
EXAMPLE_LIBS_viewer += $(shell pkg-config --exists egl 2>/dev/null && echo -DNBODY_EX_EGL `pkg-config --libs egl`)
ifeq ($(PNG_LIBS),)
$(info note: libpng not found (pkg-config libpng): skipping $(EXAMPLES_NEED_PNG); nbody and demo build without pictures)
EXAMPLES := $(filter-out $(patsubst %,$(BUILD)/%,$(EXAMPLES_NEED_PNG)),$(EXAMPLES))
endif
ifeq ($(GLFW_LIBS),)
$(info note: GLFW/OpenGL not found (pkg-config glfw3 gl): skipping the viewer)
EXAMPLES := $(filter-out $(BUILD)/viewer,$(EXAMPLES))
endif

# make bench: the CPU tables (the article's Table 2, the BLOCK kernels, thread scaling) in double
# and float, then per enabled GPU backend its tables (dense against N beside the CPU BLOCK
# engine: Table 3; the work-group / block size sweeps: Tables 5-7), sized to take a few
# minutes on 2 cores. BENCH_N: the CPU tables' largest N; BENCH_OPENCL_N: OpenCL's largest
# dense N; BENCH_GPU: "quick" or "" (full sizes) for CUDA. bench_tree and bench_methods (long)
# run on their own: make build/bench_tree && ./build/bench_tree.
BENCH_N        ?= 32768
BENCH_OPENCL_N ?= 4096
BENCH_GPU      ?= quick
BENCH_RUN      := bench_cpu bench_cpu_float
ifeq ($(WITH_OPENCL),1)
BENCH_RUN      += bench_opencl bench_opencl_float
endif
ifeq ($(WITH_CUDA),1)
BENCH_RUN      += bench_gpu bench_gpu_float
endif
BENCH_ARGS_bench_cpu          = $(BENCH_N)
BENCH_ARGS_bench_cpu_float    = $(BENCH_N)
BENCH_ARGS_bench_opencl       = $(BENCH_OPENCL_N)
BENCH_ARGS_bench_opencl_float = $(BENCH_OPENCL_N)
BENCH_ARGS_bench_gpu          = $(BENCH_GPU)
BENCH_ARGS_bench_gpu_float    = $(BENCH_GPU)

# sanitizers and fuzzing (docs/reliability.md)
SAN_CC       ?= clang
FUZZ_SECONDS ?= 60
ARCHER       ?= $(firstword $(wildcard /usr/lib/llvm-*/lib/libarcher.so))
# every SIMD level is built in (test_block and test_simd run each one the CPU has);
# -ffp-contract=off: the same rounding as the main build (gcc in ISO C mode does not fuse
# a*b+c, clang does by default), which the bitwise comparisons with scalar references need;
# -Wno-pass-failed: instrumented loops may not vectorise; that is not an error
SAN_COMMON   := -O1 -g -fno-omit-frame-pointer -Wno-pass-failed -ffp-contract=off
# make test-asan builds with gcc: its instrumented -O1 build of a test program takes about 40 %
# of clang's CPU time (15 s against 33-38 s on the 2-core CI machine, where that build was most
# of the suite's time; docs/platforms.md), with the same checks (gcc's undefined group lacks
# float-cast-overflow, so it is named). TSan and the fuzzers stay on clang (Archer, libFuzzer).
# The programs link LLVM's OpenMP runtime (libomp-14-dev; it has libgomp's entry points), the
# one the clang build had: LeakSanitizer reports blocks that libgomp itself keeps at exit
# (test_tree: 83 blocks allocated inside libgomp), which libomp does not (without libomp the
# programs get libgomp, and those reports fail the run)
ASAN_CC      ?= gcc
ASAN_FLAGS   := -O1 -g -fno-omit-frame-pointer -ffp-contract=off -fsanitize=address,undefined,float-cast-overflow \
                -fno-sanitize-recover=all -DNBODY_TEST_QUICK
ASAN_OMP     ?= $(firstword $(wildcard /usr/lib/llvm-*/lib/libomp.so))
ASAN_LIBS     = -lm $(BACKEND_LIBS) $(if $(ASAN_OMP),-L$(dir $(ASAN_OMP)) -lomp -Wl$(comma)-rpath$(comma)$(dir $(ASAN_OMP)))
ASAN_TESTS   := $(patsubst tests/%.c,$(BUILD)/asan/%,$(TEST_SRCS))
# suites that run two programs at a time start the longest ones first, so that both end
# together: $(call slow_first,PROGRAMS,SUFFIX)
# (the order: the programs' times natively, under Wine and under qemu-aarch64, docs/platforms.md;
# test_hermite and test_tree_block take the longest under Wine and qemu)
SLOW_TESTS   := test_tree test_sweep test_hermite test_opencl_devices test_opencl_devices_float test_opencl_float test_opencl \
                test_tree_block test_block test_block_float test_hermite_float test_tree_block_float test_reasons \
                test_methods test_core test_whfast test_orbital test_steer
slow_first    = $(foreach t,$(SLOW_TESTS),$(filter %/$(t)$(2),$(1))) $(filter-out $(foreach t,$(SLOW_TESTS),%/$(t)$(2)),$(1))
TSAN_TESTS   := $(patsubst tests/%.c,$(BUILD)/tsan/%,$(TEST_SRCS))
# make test's order: the programs and scripts that take longest natively first; test_mpi.sh
# last, when the other slot runs the suite's tail: its ranks (up to 4 on the 2 cores) wait for
# each other at every step, and a program beside them on the cores stretches every wait
NATIVE_SLOW  := compile_docs.sh simd_levels.sh compile_matrix.sh test_sweep test_platforms.sh msvc_constructs.sh \
                test_opencl_devices_float test_opencl_devices test_opencl_float test_tree test_opencl test_tree_float \
                test_python.sh test_sweep_float test_cli.sh
NATIVE_LAST  := test_mpi.sh
native_first  = $(foreach t,$(NATIVE_SLOW),$(filter %/$(t),$(1))) \
                $(filter-out $(foreach t,$(NATIVE_SLOW) $(NATIVE_LAST),%/$(t)),$(1)) $(foreach t,$(NATIVE_LAST),$(filter %/$(t),$(1)))

.PHONY: all test demo bench bench-tables examples clean check-embedded embed
.PHONY: test-asan test-tsan fuzz fuzz-load fuzz-load-half fuzz-archive fuzz-archive-half soak test-cuda bench-cuda test-cuda-gl help web test-web
.PHONY: bench-dispatch mpi bench-mpi plot-orbital bench-omp-small test-windows python bench-python test-arm64 test-wasm build-arm64 build-wasm build-asan

# ==== build rules ===============================================================================
all: examples $(CLI_FLOAT) $(TESTS) $(PRECISION_TESTS) $(MPI_TESTS)

$(BUILD):
	mkdir -p $(BUILD)

$(BUILD)/test_%: tests/test_%.c tests/check.h tests/every_method.h tests/hermite_engine.h tests/tree_active.h $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $< $(BACKEND_OBJS) -o $@ $(LIBS)

# the test programs that use only the public API (no nbody__ name) are compiled against the
# header's declarations (-DNBODY_TEST_LINKED) and linked with one object of the implementation
# a build (tests/nbody_impl.c): the implementation, most of a test program's compile time, is
# compiled once a build instead of once a program; natively, under the sanitizers, for
# Windows, aarch64 and wasm alike (docs/platforms.md). The same library code is tested: the
# implementation object is compiled with the program's own flags
LINKED        := busy cli_eta core limits progress reasons reproducible stall steer
LINKED_TESTS   = $(patsubst %,$(BUILD)/test_%,$(LINKED))
$(BUILD)/nbody_impl.o: tests/nbody_impl.c $(HEADERS) | $(BUILD)
	$(CC) $(ALLFLAGS) -c $< -o $@
$(LINKED_TESTS): $(BUILD)/test_%: tests/test_%.c tests/check.h tests/rel_util.h examples/example.h $(HEADERS) $(BUILD)/nbody_impl.o $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) -DNBODY_TEST_LINKED $< $(BUILD)/nbody_impl.o $(BACKEND_OBJS) -o $@ $(LIBS)

$(BUILD)/%: examples/%.c $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $< $(BACKEND_OBJS) -o $@ $(LIBS) $(EXAMPLE_LIBS_$*)

$(BUILD)/bench_%: bench/bench_%.c $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $< $(BACKEND_OBJS) -o $@ $(LIBS)

# the OpenCL float programs include their double sources
$(BUILD)/test_opencl_float: tests/test_opencl.c
$(BUILD)/test_opencl_devices_float: tests/test_opencl_devices.c
$(BUILD)/bench_opencl_float: bench/bench_opencl.c
$(BUILD)/bench_clsym_float: bench/bench_clsym.c
$(patsubst examples/%.c,$(BUILD)/%,$(EXAMPLE_SRCS)): examples/example.h

# other precisions (NBODY_REAL)
$(BUILD)/test_core_float: tests/test_core.c tests/check.h $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) -DNBODY_REAL=float $< $(BACKEND_OBJS) -o $@ $(LIBS)

$(BUILD)/test_tree_float: tests/test_tree.c tests/check.h $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) -DNBODY_REAL=float $< $(BACKEND_OBJS) -o $@ $(LIBS)

$(BUILD)/test_core_longdouble: tests/test_core.c tests/check.h $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) $(FPFLAGS) $(OPENMP) -I. "-DNBODY_REAL=long double" $< -o $@ -lm

$(BUILD)/test_block_float: tests/test_block.c tests/check.h $(HEADERS) | $(BUILD)
	$(CC) $(FLOAT_FLAGS) $< -o $@ -lm

$(BUILD)/test_stall_float: tests/test_stall.c tests/check.h $(HEADERS) | $(BUILD)
	$(CC) $(FLOAT_FLAGS) $< -o $@ -lm

$(BUILD)/test_limits_float: tests/test_limits.c tests/check.h $(HEADERS) | $(BUILD)
	$(CC) $(FLOAT_FLAGS) $< -o $@ -lm

$(BUILD)/test_hermite_float: tests/test_hermite.c tests/check.h $(HEADERS) | $(BUILD)
	$(CC) $(FLOAT_FLAGS) $< -o $@ -lm

$(BUILD)/test_tree_block_float: tests/test_tree_block.c tests/check.h $(HEADERS) | $(BUILD)
	$(CC) $(FLOAT_FLAGS) $< -o $@ -lm

# the desc sweep in float on the CPU engines (tests/test_sweep.c says why not OpenCL)
$(BUILD)/test_sweep_float: tests/test_sweep.c tests/check.h $(HEADERS) | $(BUILD)
	$(CC) $(FLOAT_FLAGS) -DSWEEP_CPU_ONLY $< -o $@ -lm

$(BUILD)/test_stall_longdouble: tests/test_stall.c tests/check.h $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) $(FPFLAGS) $(OPENMP) -I. "-DNBODY_REAL=long double" $< -o $@ -lm

$(BUILD)/nbody_float: examples/nbody.c examples/example.h $(HEADERS) | $(BUILD)
	$(CC) $(FLOAT_FLAGS) $< -o $@ -lm $(EX_PNG)

$(BUILD)/bench_cpu_float: bench/bench_cpu.c $(HEADERS) | $(BUILD)
	$(CC) $(FLOAT_FLAGS) $< -o $@ -lm

# the CUDA tree's domains emulated on the CPU: sizes of their locally essential trees
$(BUILD)/emulate_let: bench/emulate_let.c $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) $(FPFLAGS) $(OPENMP) -I. $< -o $@ -lm

# the CUDA tree emulated on the CPU: terms per body and errors (bench/emulate_gpu_tree.c)
$(BUILD)/emulate_gpu_tree: bench/emulate_gpu_tree.c $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) $(FPFLAGS) $(OPENMP) -I. $< -o $@ -lm

clean:
	rm -rf $(BUILD)

# ==== test ======================================================================================
# every test program and script; the examples are built too (the script tests run them)
# tests/simd_levels.sh: the fault, tree and reproducibility tests again at each SIMD level
# TEST_JOBS programs at a time, the longest first (NATIVE_SLOW: their order in docs/platforms.md's
# measurements), so that the two cores stay busy to the end: most programs keep one core busy
test: examples $(CLI_FLOAT) $(TESTS) $(PRECISION_TESTS) $(MPI_TESTS) python
	@BUILD=$(BUILD) MAKE="$(MAKE)" NBODY_TEST_JOBS=$(TEST_JOBS) sh tests/run.sh $(call native_first,tests/compile_matrix.sh tests/embedded_check.sh $(TEST_SCRIPTS) $(TESTS) $(PRECISION_TESTS) tests/simd_levels.sh tests/test_python.sh)

# ==== python ====================================================================================
# The package nbodyh (docs/python.md) installed into a venv under $(BUILD) with what its tests
# and examples use; rebuilt only when its sources change. tests/test_python.sh runs pytest there.
# The engines follow the C build's switches: CUDA with WITH_CUDA=1, OpenCL as WITH_OPENCL.
PYTHON  ?= python3
PYENV   := $(BUILD)/pyenv
PY_SRCS := nbody.h $(wildcard nbody_cl.h) nbody_cuda.cu setup.py pyproject.toml $(wildcard python/nbodyh/*.py python/nbodyh/*.c)
python: $(PYENV)/.installed
$(PYENV)/.installed: $(PY_SRCS) | $(BUILD)
	@test -x $(PYENV)/bin/python || $(PYTHON) -m venv $(PYENV)
	$(PYENV)/bin/python -m pip install -q --disable-pip-version-check numpy pytest setuptools wheel matplotlib tqdm
	NBODYH_WITH_CUDA=$(if $(filter 1,$(WITH_CUDA)),1,0) NBODYH_WITH_OPENCL=$(WITH_OPENCL) \
	    $(PYENV)/bin/python -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall .
	@touch $@

# 10^6 leapfrog steps: energy bounded, no allocation after create
soak: $(BUILD)/test_soak
	./$(BUILD)/test_soak 1000000

# OpenCL: regenerate / check the embedded program (nbody.h's shared formulas, then kernels.cl)
embed:
	sh tools/embed_kernels.sh kernels.cl nbody_cl.h nbody_cl.h nbody.h
check-embedded:
	@sh tests/embedded_check.sh

# ==== other platforms: the suite cross-built, run under an emulator (docs/determinism.md) =====
# make test-arm64   every test program built for aarch64 (gcc, OpenMP), run under qemu-aarch64
# make test-wasm    every test program built for wasm32 (emscripten, no threads), run under node
# (tests/run.sh's NBODY_TEST_RUNNER runs them). The OpenCL tests are left out: no OpenCL there;
# and test_determinism, which make test runs on all four platforms (tests/test_platforms.sh:
# natively, under qemu-aarch64, node and Wine, its hashes compared), is not run again here
CROSS_SRCS    := $(filter-out tests/test_opencl% tests/test_determinism.c,$(TEST_SRCS))
# NBODY_TEST_QUICK: tests/test_block.c leaves out its largest systems there (every kernel path
# still runs; the native build runs them all), test_tree its million bodies, test_tree_block and
# test_hermite run three checks on smaller systems (docs/platforms.md); TEST_JOBS programs
# at a time (node and qemu run a program on one core), the longest first
CROSS_FLAGS    = $(WARN) $(CFLAGS) $(FPFLAGS) -I. -DNBODY_TEST_QUICK
TEST_JOBS     ?= 2
CROSS_DEPS    := tests/check.h tests/every_method.h nbody.h
ARM64_CC      ?= aarch64-linux-gnu-gcc
ARM64_SYSROOT ?= /usr/aarch64-linux-gnu
ARM64_RUN     ?= qemu-aarch64 -L $(ARM64_SYSROOT)
# test_tree is left out under qemu: 50 s of CPU natively even without the million bodies that
# NBODY_TEST_QUICK leaves out (12347- and 20000-body direct references), 10-20 times that
# emulated; it runs natively, under Wine and under node. test_sweep (14280 cases, 35 s of CPU
# natively) runs natively only: it needs fork(), which Windows and emscripten lack, and is too
# slow emulated
ARM64_SKIP    := tests/test_tree.c tests/test_sweep.c
ARM64_TESTS   := $(patsubst tests/%.c,$(BUILD)/arm64/%,$(filter-out $(ARM64_SKIP),$(CROSS_SRCS))) $(BUILD)/arm64/test_block_float
# emscripten (Debian's needs its node modules on NODE_PATH); NODERAWFS: the tests' files on
# the real file system; the heap grows as a test needs; -msimd128: the SIMD128 level is built
# in and tested beside the portable loop (node runs wasm SIMD)
EMCC          ?= emcc
EMCC_ENV      ?= NODE_PATH=/usr/share/nodejs
NODE_RUN      ?= node --no-experimental-fetch
WASM_LDFLAGS  := -msimd128 -sALLOW_MEMORY_GROWTH=1 -sNODERAWFS=1 -sEXIT_RUNTIME=1
WASM_SKIP     := tests/test_sweep.c
WASM_TESTS    := $(patsubst tests/%.c,$(BUILD)/wasm/%.js,$(filter-out $(WASM_SKIP),$(CROSS_SRCS))) $(BUILD)/wasm/test_block_float.js

$(BUILD)/arm64/test_%: tests/test_%.c $(CROSS_DEPS)
	@mkdir -p $(@D)
	$(ARM64_CC) $(CROSS_FLAGS) -fopenmp $< -o $@ -lm
# (LINKED_TESTS: one implementation object a platform, above)
ARM64_LINKED  := $(patsubst %,$(BUILD)/arm64/test_%,$(LINKED))
$(BUILD)/arm64/nbody_impl.o: tests/nbody_impl.c $(CROSS_DEPS)
	@mkdir -p $(@D)
	$(ARM64_CC) $(CROSS_FLAGS) -fopenmp -c $< -o $@
$(ARM64_LINKED): $(BUILD)/arm64/test_%: tests/test_%.c $(CROSS_DEPS) tests/rel_util.h examples/example.h $(BUILD)/arm64/nbody_impl.o
	$(ARM64_CC) $(CROSS_FLAGS) -fopenmp -DNBODY_TEST_LINKED $< $(BUILD)/arm64/nbody_impl.o -o $@ -lm
WASM_LINKED   := $(patsubst %,$(BUILD)/wasm/test_%.js,$(LINKED))
$(BUILD)/wasm/nbody_impl.o: tests/nbody_impl.c $(CROSS_DEPS)
	@mkdir -p $(@D)
	$(EMCC_ENV) $(EMCC) $(CROSS_FLAGS) -msimd128 -c $< -o $@
$(WASM_LINKED): $(BUILD)/wasm/test_%.js: tests/test_%.c $(CROSS_DEPS) tests/rel_util.h examples/example.h $(BUILD)/wasm/nbody_impl.o
	$(EMCC_ENV) $(EMCC) $(CROSS_FLAGS) -DNBODY_TEST_LINKED $< $(BUILD)/wasm/nbody_impl.o -o $@ $(WASM_LDFLAGS) -lm
$(BUILD)/arm64/test_block_float: tests/test_block.c $(CROSS_DEPS)
	@mkdir -p $(@D)
	$(ARM64_CC) $(CROSS_FLAGS) -fopenmp -DNBODY_REAL=float $< -o $@ -lm
$(BUILD)/wasm/test_%.js: tests/test_%.c $(CROSS_DEPS)
	@mkdir -p $(@D)
	$(EMCC_ENV) $(EMCC) $(CROSS_FLAGS) $< -o $@ $(WASM_LDFLAGS) -lm
$(BUILD)/wasm/test_block_float.js: tests/test_block.c $(CROSS_DEPS)
	@mkdir -p $(@D)
	$(EMCC_ENV) $(EMCC) $(CROSS_FLAGS) -DNBODY_REAL=float $< -o $@ $(WASM_LDFLAGS) -lm

# no OpenCL, MPI or GL there: those requirements of CI's native run do not apply
CROSS_ENV     := NBODY_REQUIRE_OPENCL= NBODY_REQUIRE_MPI= NBODY_REQUIRE_VIEWER=
# the programs of a suite built without running them (CI builds them at a low priority while
# the Windows programs run: those wait on the wineserver, the cores idle; .ci/run)
build-arm64: $(ARM64_TESTS)
build-wasm: $(WASM_TESTS)
test-arm64: $(ARM64_TESTS)
	@$(CROSS_ENV) NBODY_TEST_JOBS=$(TEST_JOBS) NBODY_TEST_RUNNER="$(ARM64_RUN)" sh tests/run.sh $(call slow_first,$(ARM64_TESTS))
	@echo "not run under qemu-aarch64 (its time): $(notdir $(ARM64_SKIP))"
test-wasm: $(WASM_TESTS)
	@$(CROSS_ENV) NBODY_TEST_JOBS=$(TEST_JOBS) NBODY_TEST_RUNNER="$(NODE_RUN)" sh tests/run.sh $(call slow_first,$(WASM_TESTS),.js)
	@echo "not run under node (needs fork): $(notdir $(WASM_SKIP))"

# ==== bench =====================================================================================
bench: bench-tables

bench-tables: $(addprefix $(BUILD)/,$(BENCH_RUN))
	@$(foreach b,$(BENCH_RUN),./$(BUILD)/$(b) $(BENCH_ARGS_$(b)) &&) true

# BLOCK from a plain -O2 build (run-time SIMD dispatch) beside a -O2 -march=native build
bench-dispatch:
	@sh bench/bench_dispatch.sh

# docs/orbital_energy.png: abs(dE/E) against time, outer solar system, from build/solar_system's
# data (gnuplot; a few minutes for 10^6 years); a few bodies built with and without -fopenmp
plot-orbital: $(BUILD)/solar_system
	@sh bench/orbital_plot.sh

bench-omp-small:
	@sh bench/orbital_openmp.sh

# ==== demo and examples =========================================================================
examples: $(EXAMPLES)

demo: $(BUILD)/demo
	./$(BUILD)/demo

# make web: the browser demo (examples/web/: two galaxies colliding in a canvas) in
# $(BUILD)/web/, nbody.h compiled to WebAssembly with SIMD128 by emscripten (Debian's finds its
# node modules in /usr/share/nodejs); make test-web checks it in headless Chromium
EMCC      ?= emcc
WEB_FLAGS  = -std=c99 -Wall -Wextra -pedantic -O3 -msimd128 -ffp-contract=off -DNBODY_REAL=float -I. \
             -sEXPORTED_RUNTIME_METHODS=UTF8ToString -sENVIRONMENT=web
web: $(BUILD)/web/index.html
$(BUILD)/web/index.html: examples/web/index.html examples/web/galaxies.c $(HEADERS)
	@mkdir -p $(BUILD)/web
	NODE_PATH=$${NODE_PATH:-/usr/share/nodejs} $(EMCC) $(WEB_FLAGS) examples/web/galaxies.c -o $(BUILD)/web/galaxies.js
	cp examples/web/index.html $@
test-web: web
	BUILD=$(BUILD) sh tests/test_web.sh

# ==== sanitizers and fuzzing (docs/reliability.md) ==============================================
# make test-asan   every test under AddressSanitizer + UBSan (+ LeakSanitizer), aborting on the first report
#                  (NBODY_TEST_QUICK: test_block and test_tree without their largest systems, as
#                  under emulation)
# make test-tsan   every test under ThreadSanitizer, clang + libomp with the Archer OMPT tool
# make fuzz        fuzz nbody_load / nbody_checkpoint_load and the archive reader, FUZZ_SECONDS (default 60) in all
# (two programs at a time, TEST_JOBS: many of them run on one core most of the time)
build-asan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan CC=$(ASAN_CC) CFLAGS="$(ASAN_FLAGS)" LIBS="$(ASAN_LIBS)" $(ASAN_TESTS)
test-asan: build-asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) \
	    NBODY_TEST_JOBS=$(TEST_JOBS) sh tests/run.sh $(call slow_first,$(ASAN_TESTS))

test-tsan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan CC=$(SAN_CC) CFLAGS="$(SAN_COMMON) -fsanitize=thread" $(TSAN_TESTS)
	@OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" \
	    sh tests/run.sh $(TSAN_TESTS)

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c nbody.h | $(BUILD)
	$(SAN_CC) $(SAN_COMMON) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. $< -o $@ -lm

# make fuzz splits FUZZ_SECONDS between the two harnesses (make -j2 fuzz: side by side, each on
# a core, so the run takes half of FUZZ_SECONDS); fuzz-load and fuzz-archive give one harness
# the whole time (make fuzz-archive FUZZ_SECONDS=1200: the long run)
FUZZ_FLAGS = -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
fuzz: fuzz-load-half fuzz-archive-half

fuzz-load fuzz-load-half: $(BUILD)/fuzz_load
	@mkdir -p $(BUILD)/fuzz-corpus && cp tests/fuzz/corpus/* $(BUILD)/fuzz-corpus/
	./$(BUILD)/fuzz_load -max_total_time=$(if $(findstring half,$@),$$(( ($(FUZZ_SECONDS) + 1) / 2 )),$(FUZZ_SECONDS)) \
	    $(FUZZ_FLAGS) $(BUILD)/fuzz-corpus

fuzz-archive fuzz-archive-half: $(BUILD)/fuzz_archive
	@mkdir -p $(BUILD)/fuzz-corpus-archive && cp tests/fuzz/corpus_archive/* $(BUILD)/fuzz-corpus-archive/
	./$(BUILD)/fuzz_archive -max_total_time=$(if $(findstring half,$@),$$(( $(FUZZ_SECONDS) / 2 )),$(FUZZ_SECONDS)) \
	    $(FUZZ_FLAGS) $(BUILD)/fuzz-corpus-archive

# ==== GPU: CUDA engines (nvcc and an NVIDIA GPU) ================================================
$(BUILD)/nbody_cuda.o: nbody_cuda.cu nbody.h | $(BUILD)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(BUILD)/nbody_cuda_float.o: nbody_cuda.cu nbody.h | $(BUILD)
	$(NVCC) $(NVFLAGS) -DNBODY_REAL=float -c $< -o $@

$(BUILD)/cuda_engines: tests/cuda_engines.c tests/check.h tests/every_method.h tests/hermite_engine.h tests/tree_active.h $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $< $(BACKEND_OBJS) -o $@ $(LIBS)

$(BUILD)/cuda_engines_float: tests/cuda_engines.c tests/check.h tests/every_method.h tests/hermite_engine.h tests/tree_active.h $(HEADERS) $(BUILD)/nbody_cuda_float.o | $(BUILD)
	$(CC) $(ALLFLAGS) -DNBODY_REAL=float $< $(BUILD)/nbody_cuda_float.o -o $@ $(LIBS)

$(BUILD)/bench_gpu_float: bench/bench_gpu.c $(HEADERS) $(BUILD)/nbody_cuda_float.o | $(BUILD)
	$(CC) $(ALLFLAGS) -DNBODY_REAL=float $< $(BUILD)/nbody_cuda_float.o -o $@ $(LIBS)

$(BUILD)/cuda_gl_interop: tests/cuda_gl_interop.c tests/check.h $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $(CUDA_INC) -DNBODY_EX_EGL $< $(BACKEND_OBJS) -o $@ $(LIBS) $(GL_INTEROP_LIBS)

test-cuda:
	$(MAKE) WITH_CUDA=1 $(BUILD)/cuda_engines $(BUILD)/cuda_engines_float
	@sh tests/run.sh $(BUILD)/cuda_engines $(BUILD)/cuda_engines_float
	@$(MAKE) --no-print-directory test-cuda-gl

# the interop test needs EGL and OpenGL headers, which a bare GPU machine (CUDA toolkit only)
# lacks: then it is reported as skipped with the reason, after the engine tests have run, and
# fails only under NBODY_REQUIRE_VIEWER=1 (tests/cuda_gl_interop.sh)
test-cuda-gl:
	@CC="$(CC)" MAKE="$(MAKE)" BUILD=$(BUILD) sh tests/run.sh tests/cuda_gl_interop.sh

bench-cuda:
	$(MAKE) WITH_CUDA=1 $(BUILD)/bench_gpu $(BUILD)/bench_gpu_float
	./$(BUILD)/bench_gpu_float $(BENCH_ARGS)
	./$(BUILD)/bench_gpu $(BENCH_ARGS)

$(BUILD)/cuda_multi: tests/cuda_multi.c tests/check.h tests/hermite_engine.h $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $(CUDA_INC) $< $(BACKEND_OBJS) -o $@ $(LIBS)

$(BUILD)/cuda_multi_float: tests/cuda_multi.c tests/check.h tests/hermite_engine.h $(HEADERS) $(BUILD)/nbody_cuda_float.o | $(BUILD)
	$(CC) $(ALLFLAGS) $(CUDA_INC) -DNBODY_REAL=float $< $(BUILD)/nbody_cuda_float.o -o $@ $(LIBS)

$(BUILD)/multigpu: bench/multigpu.c $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $(CUDA_INC) $< $(BACKEND_OBJS) -o $@ $(LIBS)

$(BUILD)/multigpu_float: bench/multigpu.c $(HEADERS) $(BUILD)/nbody_cuda_float.o | $(BUILD)
	$(CC) $(ALLFLAGS) $(CUDA_INC) -DNBODY_REAL=float $< $(BUILD)/nbody_cuda_float.o -o $@ $(LIBS)

# the dense engine's two multi-GPU designs (all-gather + one-sided, split symmetric + reduce-scatter)
$(BUILD)/gpusplit: bench/gpusplit.c $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $< $(BACKEND_OBJS) -o $@ $(LIBS)

$(BUILD)/gpusplit_float: bench/gpusplit.c $(HEADERS) $(BUILD)/nbody_cuda_float.o | $(BUILD)
	$(CC) $(ALLFLAGS) -DNBODY_REAL=float $< $(BUILD)/nbody_cuda_float.o -o $@ $(LIBS)

# the distributed engine with one GPU a rank (mpirun -np 2 build/mpi_cuda)
$(BUILD)/mpi_cuda: tests/mpi_engines.c tests/check.h tests/mpi_check.h $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(MPICC) $(MPIFLAGS) $(BACKEND_DEFS) $< $(BACKEND_OBJS) -o $@ -lm $(BACKEND_LIBS)

# ==== MPI: the distributed engine (mpicc; docs/scaling.md) ======================================
mpi: $(BUILD)/mpi_engines $(BUILD)/mpi_domains $(BUILD)/mpi_hermite $(BUILD)/nbody_mpi $(BUILD)/mpi_scaling

$(BUILD)/mpi_engines: tests/mpi_engines.c tests/check.h tests/mpi_check.h $(HEADERS) | $(BUILD)
	$(MPICC) $(MPIFLAGS) $< -o $@ -lm

$(BUILD)/mpi_domains: tests/mpi_domains.c tests/check.h tests/mpi_check.h $(HEADERS) | $(BUILD)
	$(MPICC) $(MPIFLAGS) $< -o $@ -lm

$(BUILD)/mpi_hermite: tests/mpi_hermite.c tests/check.h tests/mpi_check.h tests/hermite_engine.h $(HEADERS) | $(BUILD)
	$(MPICC) $(MPIFLAGS) $< -o $@ -lm

$(BUILD)/nbody_mpi: examples/nbody.c examples/example.h $(HEADERS) | $(BUILD)
	$(MPICC) $(MPIFLAGS) $< -o $@ -lm

$(BUILD)/mpi_scaling: bench/mpi_scaling.c $(HEADERS) | $(BUILD)
	$(MPICC) $(MPIFLAGS) $< -o $@ -lm

$(BUILD)/bench_hermite_mpi: bench/bench_hermite.c $(HEADERS) | $(BUILD)
	$(MPICC) $(MPIFLAGS) $< -o $@ -lm

bench-mpi: $(BUILD)/mpi_scaling
	sh bench/mpi_scaling.sh

# nbodyh's advance against the same run from C (bench/python_ref.c, compiled by the script with
# the extension's flags), a no-op callback's cost, REBOUND when installed (pip install rebound),
# with --install the install time and wheel size: bench/results/python.md
bench-python: python
	$(PYENV)/bin/python bench/python_bench.py

# ==== Windows: the test suite cross-built with MinGW-w64 and run under Wine (docs/platforms.md) ==
# make test-windows   every tests/test_*.c and the precision builds as Windows programs
# (x86_64-w64-mingw32-gcc, static so that the OpenMP builds start under Wine), run by
# tests/run.sh through NBODY_TEST_RUNNER=wine in a fresh WINEPREFIX under $(WIN_BUILD), then
# tests/simd_levels.sh the same way, WIN_TEST_JOBS programs at a time, the longest first (a
# program under Wine waits for the wineserver most of its time, its CPU idle: the OpenMP ones
# wait at every fork and join; docs/platforms.md); last line "N passed, N failed[, N skipped]". No OpenCL,
# MPI, GL or Python there: those tests report skipped. The shell-script tests that read the
# sources run once, in make test; docs/platforms.md lists them.
WIN_CC      ?= x86_64-w64-mingw32-gcc
WINE        ?= wine
WIN_BUILD   := $(BUILD)/windows
WIN_TEST_JOBS ?= 4
# NBODY_TEST_QUICK as under emulation: Wine runs the same x86 code as Linux, so test_block's
# largest systems and test_tree's million bodies (the native build runs them) test nothing new
WIN_FLAGS    = $(WARN) $(CFLAGS) $(FPFLAGS) -fopenmp -static -I. -DNBODY_TEST_QUICK
# not built for Windows: the OpenCL tests (no OpenCL under MinGW-w64 here) and test_cli_eta
# (the command-line tool's examples/example.h is POSIX: fsync, isatty) and test_sweep (fork).
# test_determinism is not run again: make test runs it under Wine (tests/test_platforms.sh).
# The tree runs once, in double at the best level: test_tree_float (40 s of CPU under Wine,
# the float build of the same code; natively in make test) is left out, and so is the portable
# level's test_tree in tests/simd_levels.sh. What is Windows' own in the tree (the widths of
# its integer types: long has 32 bits there) is the same code in both precisions.
WIN_SKIP    := tests/test_opencl.c tests/test_opencl_float.c tests/test_opencl_devices.c \
               tests/test_opencl_devices_float.c tests/test_cli_eta.c tests/test_sweep.c
WIN_TESTS   := $(patsubst tests/%.c,$(WIN_BUILD)/%.exe,$(filter-out $(WIN_SKIP) tests/test_determinism.c,$(TEST_SRCS))) \
               $(patsubst $(BUILD)/%,$(WIN_BUILD)/%.exe,$(BUILD)/test_block_float $(filter-out %/test_sweep_float %/test_tree_float,$(PRECISION_TESTS)))
WIN_REAL_test_core_float       := -DNBODY_REAL=float
WIN_REAL_test_core_longdouble  := "-DNBODY_REAL=long double"
WIN_REAL_test_tree_float       := -DNBODY_REAL=float
WIN_REAL_test_stall_float      := -DNBODY_REAL=float
WIN_REAL_test_stall_longdouble := "-DNBODY_REAL=long double"
WIN_REAL_test_block_float      := -DNBODY_REAL=float
WIN_REAL_test_limits_float     := -DNBODY_REAL=float
WIN_REAL_test_hermite_float    := -DNBODY_REAL=float
WIN_REAL_test_tree_block_float := -DNBODY_REAL=float
win_src = tests/$(patsubst %_float,%,$(patsubst %_longdouble,%,$(1))).c

$(WIN_BUILD):
	mkdir -p $(WIN_BUILD)

# (LINKED_TESTS: one implementation object, above; test_cli_eta is not built for Windows)
WIN_LINKED  := $(patsubst %,$(WIN_BUILD)/test_%.exe,$(filter-out cli_eta,$(LINKED)))
$(WIN_BUILD)/nbody_impl.o: tests/nbody_impl.c $(HEADERS) | $(WIN_BUILD)
	$(WIN_CC) $(WIN_FLAGS) -c $< -o $@
$(WIN_LINKED): $(WIN_BUILD)/%.exe: tests/%.c $(wildcard tests/*.h) $(HEADERS) $(WIN_BUILD)/nbody_impl.o | $(WIN_BUILD)
	$(WIN_CC) $(WIN_FLAGS) -DNBODY_TEST_LINKED $< $(WIN_BUILD)/nbody_impl.o -o $@ -lm

.SECONDEXPANSION:
$(WIN_BUILD)/%.exe: $$(call win_src,$$*) $(wildcard tests/*.h) $(HEADERS) | $(WIN_BUILD)
	$(WIN_CC) $(WIN_FLAGS) $(WIN_REAL_$*) $< -o $@ -lm

# tests/test_block_threads.c loads the library from this DLL and unloads it (FreeLibrary): the
# end of BLOCK's worker set there (docs/platforms.md)
$(WIN_BUILD)/block_dll.dll: tests/block_dll.c $(HEADERS) | $(WIN_BUILD)
	$(WIN_CC) $(WIN_FLAGS) -shared $< -o $@ -lm

test-windows: $(WIN_TESTS) $(WIN_BUILD)/block_dll.dll
	@WINEPREFIX=$(abspath $(WIN_BUILD))/wineprefix WINEDEBUG=-all $(WINE) wineboot -i >/dev/null 2>&1 || true
	@WINEPREFIX=$(abspath $(WIN_BUILD))/wineprefix WINEDEBUG=-all NBODY_TEST_RUNNER="$(WINE)" NBODY_TEST_EXE=.exe \
	    NBODY_REQUIRE_OPENCL= NBODY_REQUIRE_MPI= NBODY_REQUIRE_VIEWER= BUILD=$(WIN_BUILD) NBODY_TEST_JOBS=$(WIN_TEST_JOBS) \
	    sh tests/run.sh $(call slow_first,$(WIN_TESTS),.exe) tests/simd_levels.sh
	@echo "not built for Windows (docs/platforms.md): $(notdir $(WIN_SKIP))"

# ==== help ======================================================================================
help:
	@echo 'make                 the examples and the tests (= make all); nothing is run'
	@echo 'make test            build and run every test; last line "N passed, N failed[, N skipped]"'
	@echo 'make demo            build and run the galaxy collision in the terminal'
	@echo 'make web             the browser demo (emscripten): build/web/index.html; make test-web checks it in headless Chromium'
	@echo 'make python          the Python package nbodyh in a venv (build/pyenv); docs/python.md'
	@echo 'make bench-python    nbodyh against C and REBOUND (bench/python_bench.py)'
	@echo 'make examples        the example programs (build/nbody, build/viewer, ...)'
	@echo 'make bench           benchmark tables (markdown, a few minutes)'
	@echo 'make test-asan       every test under AddressSanitizer + UBSan'
	@echo 'make test-tsan       every test under ThreadSanitizer'
	@echo 'make test-arm64      every test built for aarch64 and run under qemu-aarch64'
	@echo 'make test-wasm       every test built for wasm32 (emscripten) and run under node'
	@echo 'make build-wasm       the programs of test-wasm built, not run (so build-arm64, build-asan)'
	@echo 'make fuzz            fuzz the snapshot, checkpoint and archive readers (FUZZ_SECONDS=60 in all)'
	@echo 'make fuzz-archive    fuzz the archive reader alone (FUZZ_SECONDS=1200 for the long run)'
	@echo 'make soak            10^6 leapfrog steps: bounded energy, no allocation'
	@echo 'make test-cuda       the CUDA engine tests (nvcc and an NVIDIA GPU)'
	@echo 'make bench-cuda      the CUDA benchmarks'
	@echo 'make bench-dispatch  BLOCK with run-time SIMD dispatch beside a -march=native build'
	@echo 'make plot-orbital    docs/orbital_energy.png from build/solar_system (gnuplot, minutes)'
	@echo 'make bench-omp-small 3 and 5 bodies built with and without -fopenmp: wall times and ratio'
	@echo 'make mpi             the MPI programs (mpicc): build/mpi_engines, build/nbody_mpi, build/mpi_scaling'
	@echo 'make bench-mpi       the ranks x threads benchmark (mpirun)'
	@echo 'make WITH_CUDA=1 WITH_NCCL=1 build/cuda_multi   several GPUs in one process (NCCL)'
	@echo 'make embed           regenerate nbody_cl.h from kernels.cl and nbody.h; make check-embedded checks it'
	@echo 'make clean           remove build/'
	@echo 'variables: CC, CFLAGS (default -O2), BUILD (default build), WITH_OPENCL=0/1, WITH_CUDA=1, WITH_NCCL=1, MPICC'
