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
	@sh tests/run.sh tests/compile_matrix.sh $(TESTS)

bench: $(BENCHES)
	@for b in $(BENCHES); do ./$$b || exit 1; done

demo: $(BUILD)/demo
	./$(BUILD)/demo

clean:
	rm -rf $(BUILD)

# ---- reliability: sanitizers, fuzzing, soak (docs/README-reliability.md) ----
# make test-asan   every test under AddressSanitizer + UBSan (+ LeakSanitizer), aborting on the first report
#                  (-Wno-pass-failed: instrumented loops may not vectorise; that is not an error)
# make test-tsan   every test under ThreadSanitizer, clang + libomp with the Archer OMPT tool
# make fuzz        fuzz nbody_load / nbody_checkpoint_load for FUZZ_SECONDS (default 60) from the seed corpus
# make soak        10^6 leapfrog steps: energy bounded, no allocation after create
SAN_CC       ?= clang
FUZZ_SECONDS ?= 60
ARCHER       ?= $(firstword $(wildcard /usr/lib/llvm-*/lib/libarcher.so))
SAN_COMMON   := -O1 -g -fno-omit-frame-pointer -Wno-pass-failed
ASAN_TESTS   := $(patsubst tests/%.c,$(BUILD)/asan/%,$(TEST_SRCS))
TSAN_TESTS   := $(patsubst tests/%.c,$(BUILD)/tsan/%,$(TEST_SRCS))
.PHONY: test-asan test-tsan fuzz soak
test-asan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan CC=$(SAN_CC) \
	    CFLAGS="$(SAN_COMMON) -fsanitize=address,undefined -fno-sanitize-recover=all" $(ASAN_TESTS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    sh tests/run.sh $(ASAN_TESTS)
test-tsan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan CC=$(SAN_CC) CFLAGS="$(SAN_COMMON) -fsanitize=thread" $(TSAN_TESTS)
	@OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" \
	    sh tests/run.sh $(TSAN_TESTS)
$(BUILD)/fuzz_load: tests/fuzz/fuzz_load.c nbody.h | $(BUILD)
	$(SAN_CC) $(SAN_COMMON) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. $< -o $@ -lm
fuzz: $(BUILD)/fuzz_load
	@mkdir -p $(BUILD)/fuzz-corpus && cp tests/fuzz/corpus/* $(BUILD)/fuzz-corpus/
	./$(BUILD)/fuzz_load -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    $(BUILD)/fuzz-corpus
soak: $(BUILD)/test_soak
	./$(BUILD)/test_soak 1000000
