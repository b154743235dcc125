# Thin front door over CMake. `make demo` and `make check` work on a fresh
# Debian 12 machine as root: they install what is missing first.
BUILD ?= build
WERROR ?= ON
JOBS ?= 2

.PHONY: all deps configure build install demo check bench clean format

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DPGT_WERROR=$(WERROR) > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

install: build
	cmake --install $(BUILD)

demo: install
	@scripts/demo.sh

check: install
	@scripts/check.sh $(BUILD)

bench: install
	@scripts/bench.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD) $(BUILD).configure.log .demo
