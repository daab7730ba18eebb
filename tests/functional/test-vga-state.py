#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-vga-state.py: the "vga" section (QEMU's layout, v2) of a real stream,
changed field by field, loaded with -incoming file:PATH.

An idle guest with -device isa-vga is migrated to a file.  Its "vga"
fields are located with scripts/analyze-migration.py's parser (the vmdesc
says where each one is).  Copies with one nonsense value (is_vbe_vmstate
not 0, an unsupported bpp, a bank past VRAM, another VRAM's bank mask, a
DAC state no port write makes, an enabled mode whose registers the clamp
would change or whose start and line offset are not the mode's) must make
the destination exit with status 1 and an error naming the vga field.
One copy sets a valid 8 bpp mode and a red palette entry 0 over the
source's all-zero VRAM, with nonsense in the VGA registers we do not
emulate: it loads, and its screendump is byte-exact (a P6 of 640x480 red
pixels).  One copy has QEMU's kind of VBE fields (no Bochs ID, a mode's
bits set): it loads with VBE off, so the screendump is the placeholder.

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
VRAM = 8 << 20                  # isa-vga's default, QEMU's
XRES, YRES, BPP, ENABLE, BANK, VIRT_WIDTH, VIRT_HEIGHT = 1, 2, 3, 4, 5, 6, 7
# 640x480 at 8 bpp as our source sends it: line offset 640, start 0.
MODE_640X480X8 = [('vbe_regs', ENABLE, 0x41), ('vbe_regs', XRES, 640),
                  ('vbe_regs', YRES, 480), ('vbe_regs', BPP, 8),
                  ('vbe_regs', VIRT_WIDTH, 640),
                  ('vbe_regs', VIRT_HEIGHT, VRAM // 640),
                  ('vbe_line_offset', 0, 640), ('vbe_start_addr', 0, 0)]


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
                key = ('vga', 0, 'vga.' + path)
                self.assertIn(key, self.fields)
                off, size, _ = self.fields[key][index]
                f.seek(off)
                if isinstance(value, bytes):        # a buffer's first bytes
                    self.assertLessEqual(len(value), size)
                    f.write(value)
                else:
                    f.write(value.to_bytes(size, 'big'))
        return out

    def refused(self, name, changes, message, prefix='vga: '):
        proc = subprocess.Popen(vm_args(['-incoming', 'file:' +
                                         self.copy(name, changes)]),
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        _, err = proc.communicate(timeout=DEADLINE)
        err = err.decode('utf-8', 'replace')
        self.assertEqual(proc.returncode, 1, '%s: status %d: %s'
                         % (name, proc.returncode, err))
        self.assertIn(prefix + message, err, name)

    def test_is_vbe_vmstate(self):
        # QEMU refuses it too ("0 != 1", "Failed to load vga:is_vbe_vmstate").
        self.refused('isvbe', [('is_vbe_vmstate', 0, 1)],
                     "device 'vga': Failed to load vga:is_vbe_vmstate: 0 != 1", prefix='')

    def test_unsupported_bpp(self):
        self.refused('bpp', [('vbe_regs', BPP, 4)], 'unsupported VBE bpp 4')

    def test_bank_past_vram(self):
        self.refused('bank', [('vbe_regs', BANK, 0x80)], 'VBE bank 128 past VRAM')

    def test_bank_mask(self):
        self.refused('mask', [('vbe_bank_mask', 0, 0xff)],
                     'VBE bank mask 0xff is not this VRAM\'s (0x7f: 8 MiB)')

    def test_dac_sub_index(self):
        self.refused('dacsub', [('dac_sub_index', 0, 3)],
                     'invalid DAC state (sub-index 3')

    def test_dac_state(self):
        self.refused('dacstate', [('dac_state', 0, 1)], 'invalid DAC state')

    def test_enabled_mode_past_limits(self):
        # XRES 0 is what the clamp turns into 8: no source sends it.
        self.refused('xres0', [('vbe_regs', ENABLE, 1)],
                     'VBE register 1 is 0x0, outside the mode\'s limits (0x8)')
        self.refused('huge', [('vbe_regs', ENABLE, 1), ('vbe_regs', XRES, 16000),
                              ('vbe_regs', YRES, 12000), ('vbe_regs', BPP, 32),
                              ('vbe_regs', VIRT_WIDTH, 16000),
                              ('vbe_regs', VIRT_HEIGHT, VRAM // 64000)],
                     'VBE register 2 is 0x2ee0, outside the mode\'s limits')

    def test_start_and_line_offset(self):
        self.refused('line', MODE_640X480X8 + [('vbe_line_offset', 0, 641)],
                     'VBE start 0x0 and line offset 641 do not match the mode\'s (0x0, 640)')
        self.refused('start', MODE_640X480X8 + [('vbe_start_addr', 0, 4)],
                     'VBE start 0x4 and line offset 640 do not match')

    def screendump(self, name, changes):
        """The good stream with @changes, loaded: its screendump's bytes."""
        sock = os.path.join(self.tmpdir, 'dst.qmp')
        proc = subprocess.Popen(
            vm_args(['-incoming', 'file:' + self.copy(name, changes),
                     '-qmp', 'unix:%s,server=on,wait=off' % sock]),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        qmp = QMP(sock, proc)
        try:
            wait_for('the load', lambda: qmp.cmd('query-status')['status']
                     == 'running', proc)
            out = os.path.join(self.tmpdir, name + '.ppm')
            qmp.cmd('screendump', filename=out)
            with open(out, 'rb') as f:
                return f.read()
        finally:
            qmp.cmd('quit')
            qmp.close()
            proc.wait(timeout=DEADLINE)

    def test_qemu_vbe_fields(self):
        # As QEMU's isa-vga sends them: bytes of no meaning, no Bochs ID.
        garbage = [('vbe_regs', 0, 0), ('vbe_regs', ENABLE, 0x41),
                   ('vbe_regs', XRES, 0xc900), ('vbe_regs', YRES, 0x1d42),
                   ('vbe_regs', BPP, 0x55a1), ('vbe_regs', VIRT_HEIGHT, 0xd730),
                   ('vbe_index', 0, 0x3f), ('vbe_start_addr', 0, 490916128),
                   ('vbe_line_offset', 0, 21921), ('vbe_bank_mask', 0, 0)]
        self.assertEqual(self.screendump('qemu', garbage),
                         b'P6\n640 480\n255\n' + b'\x00' * (640 * 480 * 3))

    def test_valid_mode_screendump(self):
        # The VGA registers we do not emulate are read and ignored.
        ignored = [('latch', 0, 0xdeadbeef), ('cr_index', 0, 0x11),
                   ('ar_flip_flop', 0, 1), ('bank_offset', 0, 0x10000)]
        changes = MODE_640X480X8 + ignored + [
            ('palette', 0, b'\x3f\x00\x00')]
        self.assertEqual(self.screendump('valid', changes),
                         b'P6\n640 480\n255\n' + b'\xff\x00\x00' * (640 * 480))

if __name__ == '__main__':
    unittest.main()
