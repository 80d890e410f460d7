# netcl build. `make` builds build/libnetcl.so, lua/netcl/cdef.lua and the
# build/netcl launcher; `make test` installs what is missing and runs the
# suite on every device; `make check` runs it under ASan+UBSan.
CC      := gcc
JOBS    ?= 2
BUILD   ?= build
OPT     ?= -O2
WERROR  := $(if $(CI),-Werror,)
# NC_CFLAGS are netcl's own; CFLAGS from the command line (luarocks passes
# some) are added after them instead of replacing them
NC_CFLAGS = -std=c11 $(OPT) -g -fPIC -Wall -Wextra $(WERROR) -D_GNU_SOURCE \
           -DCL_TARGET_OPENCL_VERSION=120 -fvisibility=hidden -Isrc -pthread
LDLIBS  += -ldl -lm -lpthread -lz -lpng

# dist/plugin/ is libnetcl_mpi.so's source (built by mpicc where MPI is installed)
SRCS    := $(filter-out src/dist/plugin/%,$(wildcard src/*/*.c src/*/*/*.c))
HDRS    := $(wildcard src/*.h src/*/*.h src/*/*/*.h)
OBJS    := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS)) $(BUILD)/obj/kernels_embed.o
KERNELS := $(wildcard kernels/*.cl)
LIB     := $(BUILD)/libnetcl.so
CDEF    := lua/netcl/cdef.lua
# the public headers, in the order of their cdef sections (spec/cdef_spec.lua reads this list)
CDEF_HEADERS = src/netcl.h src/netcl_ops.h src/netcl_train.h src/netcl_data.h src/netcl_dist.h src/netcl_custom.h
LAUNCH  := $(BUILD)/netcl
MPICC   := $(shell command -v mpicc 2>/dev/null)
MPI_PLUGIN := $(if $(MPICC),$(BUILD)/libnetcl_mpi.so,)

DEB_PKGS := gcc make luajit libluajit-5.1-dev ocl-icd-libopencl1 ocl-icd-opencl-dev \
            opencl-c-headers pocl-opencl-icd clinfo lua-unit libpng-dev zlib1g-dev \
            libreadline-dev dataset-fashion-mnist libopenblas0-pthread luarocks \
            libopenmpi-dev openmpi-bin

.PHONY: all deps test check demo clean bench cdef-check install rock fuzz
all: $(LIB) $(CDEF) $(LAUNCH) $(MPI_PLUGIN)

$(BUILD)/obj/%.o: src/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(NC_CFLAGS) $(CFLAGS) $(LATE_OPT) -c $< -o $@

# kernels/*.cl become C string literals, one table entry per file
$(BUILD)/kernels_embed.c: $(KERNELS) Makefile
	@mkdir -p $(BUILD)
	@{ echo '/* generated from the kernels directory by make; do not edit */'; \
	  echo '#include <stddef.h>'; \
	  echo 'const char *const nc_embedded_kernels[][2] = {'; \
	  for f in $(KERNELS); do \
	    printf '  { "%s",\n' "$$(basename $$f .cl)"; \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $$f; \
	    echo '  },'; \
	  done; \
	  echo '  { NULL, NULL } };'; } > $@

# plain loops in the cpu backend only vectorise at -O3 with GCC 12; it goes
# after CFLAGS so that a caller's -O2 (luarocks passes one) cannot undo it,
# unless OPT itself is given (make check's sanitizer build)
$(BUILD)/obj/backend/cpu/%.o: LATE_OPT := $(if $(filter command line,$(origin OPT)),,-O3)
# sqrt in the fused optimizer loops vectorises only without errno (never read there)
$(BUILD)/obj/backend/cpu/optim.o: NC_CFLAGS += -fno-math-errno
# the float32 row loops (src/backend/cpu/rowf32.h) hold selects that GCC if-converts
# into vector code only when a float compare may not trap; netcl never reads
# the floating-point exception flags, and no value changes
$(BUILD)/obj/backend/cpu/softmax.o $(BUILD)/obj/backend/cpu/loss.o: NC_CFLAGS += -fno-trapping-math

# the cpu's vector direct convolution is a GEMM-like kernel: multiply-adds
# contract into FMAs there, as in the BLAS (its bits are its own either way)
$(BUILD)/obj/backend/cpu/conv_vec.o: NC_CFLAGS += -ffp-contract=fast

$(BUILD)/obj/kernels_embed.o: $(BUILD)/kernels_embed.c
	@mkdir -p $(dir $@)
	$(CC) $(NC_CFLAGS) $(CFLAGS) -c $< -o $@

# -z nodelete: the library owns worker threads, so a host that unloads it
# (LuaJIT does at lua_close) must not unmap code those threads return into.
$(LIB): $(OBJS) Makefile
	$(CC) -shared -Wl,-z,nodelete -o $@ $(OBJS) $(LDFLAGS) $(LDLIBS)

# the mpi backend's plugin: the only object that includes mpi.h, loaded at
# run time so that libnetcl needs no MPI (src/dist/mpi.c)
$(BUILD)/libnetcl_mpi.so: src/dist/plugin/mpi.c $(CDEF_HEADERS)
	$(MPICC) $(NC_CFLAGS) $(CFLAGS) -shared -o $@ $< $(LDFLAGS)

# The FFI declarations: CDEF_HEADERS' cdef sections, in order, minus
# preprocessor lines; spec/cdef_spec.lua fails when they drift apart.
$(CDEF): $(CDEF_HEADERS) Makefile
	@{ echo '-- generated from $(CDEF_HEADERS) by make; do not edit'; \
	  echo 'return [==['; \
	  for h in $(CDEF_HEADERS); do sed -n '/cdef-begin/,/cdef-end/p' $$h | sed -e '/cdef-/d' -e '/^#/d'; done; \
	  echo ']==]'; } > $@

$(LAUNCH): lua/netcl/launcher.sh
	@mkdir -p $(BUILD)
	sed -e "s|@LUADIR@|$(CURDIR)/lua|g" -e "s|@LIBDIR@|$(CURDIR)/$(BUILD)|g" lua/netcl/launcher.sh > $@
	chmod +x $@

deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  mkdir -p $(BUILD); \
	  echo "make deps: installing$$missing (apt's output: $(BUILD)/deps.log)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  if ! { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	         --no-install-recommends $$missing; } > $(BUILD)/deps.log 2>&1; then \
	    tail -20 $(BUILD)/deps.log; echo "make deps: apt-get failed (the whole output is in $(BUILD)/deps.log)"; exit 1; \
	  fi; \
	fi

test: deps
	$(MAKE) -j$(JOBS) all
	luajit spec/run.lua

# ASan+UBSan: the library is rebuilt instrumented and LuaJIT preloads the runtime.
check: deps
	$(MAKE) -j$(JOBS) BUILD=build-asan OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined" all
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  NETCL_LIB=$(CURDIR)/build-asan/libnetcl.so NETCL_TEST_OPENCL=0 luajit spec/run.lua

# libFuzzer on the file readers (IDX, CIFAR, PNG) and, through an embedded
# LuaJIT, on netcl.load and netcl.tensor: the library rebuilt by clang with
# the fuzzer's coverage and ASan+UBSan, the harnesses in spec/fuzz/, seeds
# in spec/fuzz/corpus/; FUZZ_SECONDS per target (CI runs a short one). A
# finding stops with the crashing input in build-fuzz/.
FUZZ_SECONDS ?= 60
# clang, or the versioned one PoCL brings (Debian installs no plain `clang` without recommends)
FUZZ_CC ?= $(shell command -v clang 2>/dev/null || command -v clang-15 2>/dev/null || echo clang)
fuzz: deps
	$(MAKE) -j$(JOBS) BUILD=build-fuzz CC=$(FUZZ_CC) WERROR= \
	  OPT="-O1 -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined" build-fuzz/libnetcl.so
	$(FUZZ_CC) -g -fsanitize=fuzzer,address,undefined -Isrc spec/fuzz/fuzz_readers.c -Lbuild-fuzz -lnetcl \
	  -Wl,-rpath,$(CURDIR)/build-fuzz -o build-fuzz/fuzz_readers
	@for r in idx cifar png; do \
	  mkdir -p build-fuzz/corpus-$$r build-fuzz/findings-$$r; \
	  echo "fuzz: $$r for $(FUZZ_SECONDS) s"; \
	  NETCL_FUZZ_READER=$$r NETCL_NO_OPENCL=1 UBSAN_OPTIONS=halt_on_error=1 build-fuzz/fuzz_readers \
	    -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
	    -artifact_prefix=build-fuzz/findings-$$r/ build-fuzz/corpus-$$r spec/fuzz/corpus/$$r \
	    > build-fuzz/fuzz-$$r.log 2>&1 || { tail -40 build-fuzz/fuzz-$$r.log; echo "fuzz: $$r found a problem"; exit 1; }; \
	  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build-fuzz/fuzz-$$r.log | tr '\n' ' '; echo; \
	done
	$(FUZZ_CC) -g -fsanitize=fuzzer,address,undefined -I/usr/include/luajit-2.1 spec/fuzz/fuzz_lua.c -lluajit-5.1 \
	  -Lbuild-fuzz -lnetcl -Wl,-rpath,$(CURDIR)/build-fuzz -o build-fuzz/fuzz_lua
	@for t in load:checkpoint tensor:table; do k=$${t%%:*}; c=$${t##*:}; \
	  mkdir -p build-fuzz/corpus-$$k build-fuzz/findings-$$k; \
	  echo "fuzz: netcl.$$k for $(FUZZ_SECONDS) s"; \
	  NETCL_FUZZ_LUA=$$k NETCL_FUZZ_ROOT=$(CURDIR) NETCL_LIB=$(CURDIR)/build-fuzz/libnetcl.so NETCL_NO_OPENCL=1 \
	    UBSAN_OPTIONS=halt_on_error=1 ASAN_OPTIONS=detect_leaks=0 build-fuzz/fuzz_lua \
	    -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
	    -artifact_prefix=build-fuzz/findings-$$k/ build-fuzz/corpus-$$k spec/fuzz/corpus/$$c \
	    > build-fuzz/fuzz-$$k.log 2>&1 || { tail -40 build-fuzz/fuzz-$$k.log; echo "fuzz: netcl.$$k found a problem"; exit 1; }; \
	  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build-fuzz/fuzz-$$k.log | tr '\n' ' '; echo; \
	done

# the Fashion-MNIST CNN: --quick (1 epoch, >= 88%) by default; FULL=1 runs
# the full default (>= 91%); DEMO_ARGS adds flags (e.g. DEMO_ARGS="--device opencl:0")
demo: deps
	$(MAKE) -j$(JOBS) all
	$(LAUNCH) examples/fashion_mnist.lua $(if $(FULL),,--quick) $(DEMO_ARGS)

bench: deps
	$(MAKE) -j$(JOBS) all
	$(LAUNCH) examples/bench/run.lua

# Installs the Lua modules, the library and the launcher (luarocks' "make"
# build type calls this with its tree's directories: rockspec/).
INST_LUADIR ?= /usr/local/share/lua/5.1
INST_LIBDIR ?= /usr/local/lib/lua/5.1
INST_BINDIR ?= /usr/local/bin
install: all
	cd lua && find netcl -name '*.lua' -exec install -D -m 644 {} "$(INST_LUADIR)/{}" \;
	install -D -m 755 $(LIB) "$(INST_LIBDIR)/libnetcl.so"
	$(if $(MPI_PLUGIN),install -D -m 755 $(MPI_PLUGIN) "$(INST_LIBDIR)/libnetcl_mpi.so")
	@mkdir -p "$(INST_BINDIR)"
	sed -e "s|@LUADIR@|$(INST_LUADIR)|g" -e "s|@LIBDIR@|$(INST_LIBDIR)|g" lua/netcl/launcher.sh > "$(INST_BINDIR)/netcl"
	chmod 755 "$(INST_BINDIR)/netcl"

# a self-contained source rock of the working tree's tracked files:
# `luarocks install ROCK_DIR/netcl-scm-1.src.rock` builds and installs it
# anywhere, with no checkout and no network
ROCK_DIR ?= $(BUILD)
rock:
	@set -e; stage=$$(mktemp -d); \
	git ls-files | tar czf $$stage/netcl-scm-1.tar.gz --transform 's,^,netcl/,' -T -; \
	sed -e "s|url = \"git+file:///netcl\",.*|url = \"file://$$stage/netcl-scm-1.tar.gz\", dir = \"netcl\",|" \
	  rockspec/netcl-scm-1.rockspec > $$stage/netcl-scm-1.rockspec; \
	mkdir -p $(ROCK_DIR); out=$$(cd $(ROCK_DIR) && pwd); \
	(cd $$stage && luarocks pack netcl-scm-1.rockspec >/dev/null && mv netcl-scm-1.src.rock "$$out/"); \
	rm -rf $$stage; echo "$$out/netcl-scm-1.src.rock"

clean:
	rm -rf build build-asan build-fuzz $(CDEF)
