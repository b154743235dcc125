# Thin front door over CMake.
#  - `make install`: builds and installs the extension alone with the
#    server's headers (cmake, a C++20 compiler, postgresql-server-dev and
#    libxxhash-dev; no test tools, no apt-get). PG_CONFIG=/path/to/pg_config
#    picks the server; works as any user who can write its directories.
#  - `make demo` and `make check` work on a fresh Debian 12 machine as root:
#    they install what is missing first (scripts/install-deps.sh).
#  - `make deb`: the Debian package postgresql-15-pg-trickle (and its
#    -dbgsym), smoke-tested and checked by lintian when it is installed.
#  - `make installcheck`: pg_regress against a running server (PGHOST,
#    PGPORT, PGUSER), the extension installed there.
BUILD ?= build
EXT_BUILD ?= build-ext
WERROR ?= ON
JOBS ?= 2
PG_CONFIG ?=
PG_CONFIG_ARG = $(if $(PG_CONFIG),-DPG_CONFIG=$(PG_CONFIG))

.PHONY: all deps demo-deps configure build install-all ext install installcheck demo check bench deb clean format

all: ext

deps:
	@scripts/install-deps.sh

demo-deps:
	@scripts/install-deps.sh --runtime

# The extension alone, logs in $(EXT_BUILD).log.
ext:
	@scripts/build-ext.sh $(EXT_BUILD) $(JOBS) $(PG_CONFIG_ARG)

install: ext
	@cmake --install $(EXT_BUILD) > $(EXT_BUILD).install.log
	@echo "pg_trickle installed into $$(sed -n 's|^-- [A-Za-z-]*: \(.*\)/pg_trickle.so$$|\1|p' $(EXT_BUILD).install.log) ($$(grep -cE 'Installing|Up-to-date' $(EXT_BUILD).install.log) files; list in $(EXT_BUILD).install.log)"

# Everything (extension, tests, harnesses, benchmarks) with -Werror.
configure: deps
	cmake -S . -B $(BUILD) -DPGT_WERROR=$(WERROR) $(PG_CONFIG_ARG) > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

install-all: build
	cmake --install $(BUILD)

# pg_regress's tests against a running server with pg_trickle installed
# (`make install`), as PGXS's installcheck: libpq's PGHOST, PGPORT and
# PGUSER (a superuser) name it; database contrib_regression.
installcheck:
	@scripts/run-regress.sh --installcheck $(EXT_BUILD)/installcheck \
	  "$$($(or $(PG_CONFIG),pg_config) --bindir)" \
	  "$$(dirname "$$(dirname "$$($(or $(PG_CONFIG),pg_config) --pgxs)")")"

demo: demo-deps install
	@scripts/demo.sh

check: install-all
	@scripts/check.sh $(BUILD)

bench: install-all
	@scripts/bench.sh $(BUILD)

deb: ext
	@scripts/make-deb.sh $(EXT_BUILD)

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD) $(EXT_BUILD) $(BUILD).configure.log $(EXT_BUILD).log $(EXT_BUILD).install.log .demo *.deb
