#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-vga-state.py: the "vbe" section of a real stream, changed field by
field, loaded with -incoming file:PATH.

An idle guest with -device isa-vga is migrated to a file.  Its "vbe"
fields are located with scripts/analyze-migration.py's parser (the vmdesc
says where each one is).  Copies with one nonsense value (an unknown ID,
an unsupported bpp, a bank past VRAM, a DAC state no port write makes, an
enabled mode whose registers the clamp would change) must make the
destination exit with status 1 and an error naming the vbe field.  One
copy sets a valid 8 bpp mode and a red palette entry 0 over the source's
all-zero VRAM: it loads, and its screendump is byte-exact (a P6 of
640x480 red pixels), which checks the load, the recomputed mode and the
conversion end to end without a guest that draws.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU  # noqa: E402
from analyzevm import QMP, kvm_skip_reason  # noqa: E402
from streamfields import locate_fields, wait_for  # noqa: E402

APPEND = 'mode=idle mem=16 seconds=600'
VRAM = 16 << 20
XRES, YRES, BPP, ENABLE, BANK, VIRT_WIDTH, VIRT_HEIGHT = 1, 2, 3, 4, 5, 6, 7


def vm_args(extra):
    return [QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU, '-m', '64M',
            '-nodefaults', '-no-user-config', '-display', 'none',
            '-serial', 'null', '-kernel', FIRMWARE, '-append', APPEND,
            '-device', 'isa-vga,id=vga0'] + list(extra)


class VGAState(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = kvm_skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        cls.tmpdir = tempfile.mkdtemp(prefix='test-vga-state-')
        cls.stream = os.path.join(cls.tmpdir, 'good.mig')
        sock = os.path.join(cls.tmpdir, 'src.qmp')
        proc = subprocess.Popen(
            vm_args(['-qmp', 'unix:%s,server=on,wait=off' % sock]),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        qmp = QMP(sock, proc)
        try:
            qmp.cmd('migrate', uri='file:' + cls.stream)
            wait_for('the migration', lambda: qmp.cmd('query-migrate').get(
                'status') in ('completed', 'failed'), proc)
            assert qmp.cmd('query-migrate')['status'] == 'completed'
        finally:
            qmp.cmd('quit')
            qmp.close()
            proc.wait(timeout=DEADLINE)
        cls.fields = locate_fields(cls.stream)

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get('VMTEST_KEEP_TMP'):
            shutil.rmtree(cls.tmpdir, ignore_errors=True)

    def copy(self, name, changes):
        """The good stream with each (field, index, value) written over."""
        out = os.path.join(self.tmpdir, name + '.mig')
        shutil.copyfile(self.stream, out)
        with open(out, 'r+b') as f:
            for path, index, value in changes:
                key = ('vbe', 0, 'vbe.' + path)
                self.assertIn(key, self.fields)
                off, size, _ = self.fields[key][index]
                f.seek(off)
                f.write(value.to_bytes(size, 'big'))
        return out

    def refused(self, name, changes, message):
        proc = subprocess.Popen(vm_args(['-incoming', 'file:' +
                                         self.copy(name, changes)]),
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        _, err = proc.communicate(timeout=DEADLINE)
        err = err.decode('utf-8', 'replace')
        self.assertEqual(proc.returncode, 1, '%s: status %d: %s'
                         % (name, proc.returncode, err))
        self.assertIn('vbe: ' + message, err, name)

    def test_unknown_id(self):
        self.refused('id', [('regs', 0, 0x1234)], 'invalid ID 0x1234')

    def test_unsupported_bpp(self):
        self.refused('bpp', [('regs', BPP, 4)], 'unsupported bpp 4')

    def test_bank_past_vram(self):
        self.refused('bank', [('regs', BANK, 0x100)], 'bank 256 past VRAM')

    def test_dac_sub_index(self):
        self.refused('dacsub', [('dac_sub_index', 0, 3)],
                     'invalid DAC state (sub-index 3')

    def test_dac_state(self):
        self.refused('dacstate', [('dac_state', 0, 1)], 'invalid DAC state')

    def test_enabled_mode_past_limits(self):
        # XRES 0 is what the clamp turns into 8: no source sends it.
        self.refused('xres0', [('regs', ENABLE, 1)],
                     'register 1 is 0x0, outside the mode\'s limits (0x8)')
        self.refused('huge', [('regs', ENABLE, 1), ('regs', XRES, 16000),
                              ('regs', YRES, 12000), ('regs', BPP, 32),
                              ('regs', VIRT_WIDTH, 16000),
                              ('regs', VIRT_HEIGHT, VRAM // 64000)],
                     'register 2 is 0x2ee0, outside the mode\'s limits')

    def test_valid_mode_screendump(self):
        changes = [('regs', ENABLE, 0x41), ('regs', XRES, 640),
                   ('regs', YRES, 480), ('regs', BPP, 8),
                   ('regs', VIRT_WIDTH, 640),
                   ('regs', VIRT_HEIGHT, VRAM // 640),
                   ('palette', 0, 0x3f), ('palette', 1, 0), ('palette', 2, 0)]
        sock = os.path.join(self.tmpdir, 'dst.qmp')
        proc = subprocess.Popen(
            vm_args(['-incoming', 'file:' + self.copy('valid', changes),
                     '-qmp', 'unix:%s,server=on,wait=off' % sock]),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        qmp = QMP(sock, proc)
        try:
            wait_for('the load', lambda: qmp.cmd('query-status')['status']
                     == 'running', proc)
            out = os.path.join(self.tmpdir, 'red.ppm')
            qmp.cmd('screendump', filename=out)
            with open(out, 'rb') as f:
                got = f.read()
            self.assertEqual(got, b'P6\n640 480\n255\n' +
                             b'\xff\x00\x00' * (640 * 480))
        finally:
            qmp.cmd('quit')
            qmp.close()
            proc.wait(timeout=DEADLINE)


if __name__ == '__main__':
    unittest.main()
