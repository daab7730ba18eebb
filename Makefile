# SPDX-License-Identifier: GPL-2.0-or-later
# Forwards to meson/ninja in build/; configures with defaults on first use.
BUILD := build
.PHONY: all check check-unit check-functional check-fuzz fuzz sweep interop-soak disk-soak storage-soak demo bench clean distclean
FUZZ_SECONDS ?= 60
SWEEP_MUTANTS ?= 10000
SWEEP_SEED ?= 1

all: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(BUILD)/build.ninja:
	./configure

# Two at a time: the unit, fuzz and script tests (no guest, no timing) and
# the functional tests that measure nothing run in pairs, first; a test
# that measures a duration, rate or latency is is_parallel: false in its
# meson.build, so it runs alone, after them (tests/functional/meson.build
# says which and why).
check: all
	meson test -C $(BUILD) --print-errorlogs --num-processes 2

check-unit: all
	meson test -C $(BUILD) --suite unit --print-errorlogs

check-functional: all
	meson test -C $(BUILD) --suite functional --print-errorlogs --num-processes 1

check-fuzz: all
	meson test -C $(BUILD) --suite fuzz --print-errorlogs --num-processes 1

# Every fuzz target for FUZZ_SECONDS each (libFuzzer with ./configure --enable-fuzzing),
# the paused stream cut at every byte (make check cuts the inside of long records sparsely).
fuzz: all
	./scripts/fuzz-run --build $(BUILD) --seconds $(FUZZ_SECONDS) --full-sweep --all

# Mutants of a mapped-ram file with the integrity record, each restored (not in make check).
sweep: all
	./scripts/mapped-ram-sweep --mutants $(SWEEP_MUTANTS) --seed $(SWEEP_SEED) --quiet

# Every direction and mode with QEMU 7.2 and 10.0, SOAK_RUNS times each (issue 37: 20).
SOAK_RUNS ?= 20
interop-soak: all
	./scripts/interop-soak --build $(BUILD) --runs $(SOAK_RUNS)

# A guest writing to a shared image, DISK_SOAK_HOPS live migrations (issue 39: 200).
DISK_SOAK_HOPS ?= 200
disk-soak: all
	./scripts/disk-soak --build $(BUILD) --hops $(DISK_SOAK_HOPS)

# A writing guest moved with its disk (NBD + mirror), STORAGE_SOAK_HOPS times (issue 40: 100).
STORAGE_SOAK_HOPS ?= 100
storage-soak: all
	./scripts/storage-soak --build $(BUILD) --hops $(STORAGE_SOAK_HOPS)

demo: all
	./scripts/demo

bench: all
	./scripts/migbench idle --quick

clean:
	ninja -C $(BUILD) clean

distclean:
	rm -rf $(BUILD)
