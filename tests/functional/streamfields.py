# SPDX-License-Identifier: GPL-2.0-or-later
"""Where each field of a migration stream's device sections lies, for the
tests that write corrupted copies of a good stream (test-virtio-state.py,
test-vga-state.py): scripts/analyze-migration.py's own parser, noting the
offset of every scalar field it reads."""

import importlib.util
import os
import sys
import time

from analyzetest import ANALYZE, DEADLINE


def _load_analyzer():
    """scripts/analyze-migration.py as a module (its name has dashes)."""
    sys.path.insert(0, os.path.dirname(ANALYZE))
    spec = importlib.util.spec_from_file_location('analyze_migration', ANALYZE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


analyze_migration = _load_analyzer()


class FieldLocator(analyze_migration.Analyzer):
    """The analyzer, noting where each scalar field of each device section
    lies: fields[(idstr, instance, path)] is a list of (offset, size, value),
    one per occurrence (the elements of an array of structs, in order)."""

    def __init__(self, f, size):
        super().__init__(f, size)
        self.fields = {}
        self._device = None

    def parse_device(self, sec, off):
        self._device = (sec.idstr, sec.instance_id)
        try:
            return super().parse_device(sec, off)
        finally:
            self._device = None

    def parse_field(self, fd, fpath):
        start = self.r.tell()
        value = super().parse_field(fd, fpath)
        if fd['type'] not in ('struct', 'tmp', 'vstruct') and self._device:
            key = self._device + (fpath,)
            self.fields.setdefault(key, []).append((start, fd['size'], value))
        return value


def locate_fields(path):
    """FieldLocator.fields of the stream file at @path."""
    with open(path, 'rb') as f:
        loc = FieldLocator(f, os.fstat(f.fileno()).st_size)
        loc.run()
    return loc.fields


def wait_for(what, pred, proc=None):
    """Polls @pred until true; fails if @proc exits or DEADLINE passes."""
    end = time.monotonic() + DEADLINE
    while not pred():
        if proc is not None and proc.poll() is not None:
            raise AssertionError('the VM exited (status %d) waiting for %s'
                                 % (proc.returncode, what))
        if time.monotonic() > end:
            raise AssertionError('no %s after %ds' % (what, DEADLINE))
        time.sleep(0.05)
