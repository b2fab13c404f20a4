# nbody.h - build, test, benchmark and demo.
#   make            examples and tests
#   make test       every test; last line "N passed, N failed[, N skipped]"
#   make demo       the galaxy collision, nothing needed but a C compiler
#   make bench      benchmark tables (markdown)
#   make examples   the example programs
#   WITH_OPENCL=1   add the OpenCL engines (-lOpenCL); WITH_CUDA=1 add the CUDA engines (nvcc)
CC      ?= cc
CFLAGS  ?= -O2 -march=native
WARN    := -std=c99 -Wall -Wextra -pedantic -Werror
NVCC    ?= nvcc
NVFLAGS ?= -O3 -arch=sm_90
BUILD   ?= build

# OpenMP when the compiler has it; the library builds without it
OPENMP := $(shell printf 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
ALLFLAGS = $(WARN) $(CFLAGS) $(OPENMP) -I. $(BACKEND_DEFS)
LIBS     = -lm $(BACKEND_LIBS)

# ---- OpenCL: on by default when CL/cl.h and -lOpenCL both work (WITH_OPENCL=0 forces off);
# kernels.cl is embedded into nbody_cl.h by `make embed`, and make test fails while it is stale
ifeq ($(origin WITH_OPENCL),undefined)
WITH_OPENCL := $(shell printf '\043define CL_TARGET_OPENCL_VERSION 120\n\043include <CL/cl.h>\nint main(void){cl_uint n; return (int)clGetPlatformIDs(0, 0, &n);}\n' | $(CC) -x c - -o /dev/null -lOpenCL >/dev/null 2>&1 && echo 1 || echo 0)
endif
$(BUILD)/test_opencl_float: tests/test_opencl.c
$(BUILD)/bench_opencl_float: bench/bench_opencl.c
# ---- end OpenCL block

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

TEST_SRCS    := $(wildcard tests/test_*.c)
TESTS        := $(patsubst tests/%.c,$(BUILD)/%,$(TEST_SRCS))
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLES     := $(patsubst examples/%.c,$(BUILD)/%,$(EXAMPLE_SRCS))
BENCH_SRCS   := $(wildcard bench/bench_*.c)
BENCHES      := $(patsubst bench/%.c,$(BUILD)/%,$(BENCH_SRCS))
HEADERS      := nbody.h $(wildcard nbody_cl.h)

.PHONY: all test demo bench examples clean check-embedded embed
all: examples $(TESTS)

$(BUILD):
	mkdir -p $(BUILD)

$(BUILD)/nbody_cuda.o: nbody_cuda.cu nbody.h | $(BUILD)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(BUILD)/test_%: tests/test_%.c tests/check.h $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $< $(BACKEND_OBJS) -o $@ $(LIBS)

$(BUILD)/%: examples/%.c $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $< $(BACKEND_OBJS) -o $@ $(LIBS) $(EXAMPLE_LIBS_$*)

$(BUILD)/bench_%: bench/bench_%.c $(HEADERS) $(BACKEND_OBJS) | $(BUILD)
	$(CC) $(ALLFLAGS) $< $(BACKEND_OBJS) -o $@ $(LIBS)

examples: $(EXAMPLES)

test: $(TESTS)
	@sh tests/run.sh tests/compile_matrix.sh tests/embedded_check.sh $(TESTS)

bench: $(BENCHES)
	@for b in $(BENCHES); do ./$$b || exit 1; done

demo: $(BUILD)/demo
	./$(BUILD)/demo

clean:
	rm -rf $(BUILD)

# ---- OpenCL: regenerate / check the embedded kernels
embed:
	sh tools/embed_kernels.sh kernels.cl nbody_cl.h
check-embedded:
	@sh tests/embedded_check.sh
