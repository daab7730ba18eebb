# SPDX-License-Identifier: GPL-2.0-or-later
# Forwards to meson/ninja in build/; configures with defaults on first use.
BUILD := build
.PHONY: all check check-unit check-functional demo bench clean distclean

all: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(BUILD)/build.ninja:
	./configure

check: all
	meson test -C $(BUILD) --print-errorlogs --num-processes 1

check-unit: all
	meson test -C $(BUILD) --suite unit --print-errorlogs

check-functional: all
	meson test -C $(BUILD) --suite functional --print-errorlogs --num-processes 1

demo: all
	./scripts/demo

bench: all
	./scripts/migbench idle --quick

clean:
	ninja -C $(BUILD) clean

distclean:
	rm -rf $(BUILD)
