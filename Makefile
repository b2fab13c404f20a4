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

# ---- examples: optional libpng / GLFW (block owned by the examples issue) -------------------
# libpng gives the examples PNG output (-DNBODY_EX_PNG); GLFW + OpenGL the live viewer.
# Examples that cannot be built without them are left out of `make` with a notice.
PNG_LIBS  := $(shell pkg-config --libs libpng 2>/dev/null)
GLFW_LIBS := $(shell pkg-config --libs glfw3 gl 2>/dev/null)
EX_PNG    := $(if $(PNG_LIBS),-DNBODY_EX_PNG $(PNG_LIBS))
EXAMPLES_NEED_PNG := galaxy_collision central_body three_body
EXAMPLE_LIBS_nbody  = $(EX_PNG)
EXAMPLE_LIBS_demo   = $(EX_PNG)
EXAMPLE_LIBS_viewer = $(EX_PNG) $(GLFW_LIBS)
$(foreach e,$(EXAMPLES_NEED_PNG),$(eval EXAMPLE_LIBS_$(e) = $(EX_PNG)))
ifeq ($(PNG_LIBS),)
$(info note: libpng not found (pkg-config libpng): skipping $(EXAMPLES_NEED_PNG); nbody and demo build without pictures)
EXAMPLES := $(filter-out $(patsubst %,$(BUILD)/%,$(EXAMPLES_NEED_PNG)),$(EXAMPLES))
endif
ifeq ($(GLFW_LIBS),)
$(info note: GLFW/OpenGL not found (pkg-config glfw3 gl): skipping the viewer)
EXAMPLES := $(filter-out $(BUILD)/viewer,$(EXAMPLES))
endif
$(patsubst examples/%.c,$(BUILD)/%,$(EXAMPLE_SRCS)): examples/example.h
TEST_SCRIPTS += tests/test_cli.sh tests/test_viewer.sh
test: examples
# ---- end examples block ----

.PHONY: all test demo bench examples clean check-embedded
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
	@sh tests/run.sh tests/compile_matrix.sh $(TEST_SCRIPTS) $(TESTS)

bench: $(BENCHES)
	@for b in $(BENCHES); do ./$$b || exit 1; done

demo: $(BUILD)/demo
	./$(BUILD)/demo

clean:
	rm -rf $(BUILD)
