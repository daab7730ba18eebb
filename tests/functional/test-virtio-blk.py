#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-virtio-blk.py: -device virtio-blk-device on a raw image (issue 39).

- blkverify (tests/guest/blk.c) writes numbered, checksummed sectors and
  reads them back with several requests in flight: no FAIL, and afterwards
  the host checks the image against the last STAT line's acked_gen (every
  write up to it was acknowledged, write g went to sector (g - 1) % N):
  every sector holds a valid sector of its own number whose generation is
  at least the last acknowledged one that went there.
- The options QEMU refuses, refused with QEMU 7.2's words.
- blkhostile (tests/guest/blk-bad.c): every case answered as it must be,
  one warning on stderr, nothing written outside the image (its size, a
  sentinel file next to it, and its own bytes are unchanged).
- A live migration ours -> ours over TCP of a writing blkverify guest, the
  image shared by both processes: the destination goes on with no FAIL and
  the host check passes after it. The same from QEMU 7.2 and 10.0 into ours
  and from ours into them (QEMU's transport modern). The image locks are off on
  both sides: handing the image over (locks, activation) is the block
  layer's and the migration's, not this device's.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
import re
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU  # noqa: E402
from analyzevm import PEER, PEER_CPU, QEMU10, VM, free_port, need_binary  # noqa: E402
from guestcase import GuestCase  # noqa: E402

SECTOR = 512
MAGIC = 0x31544b5342564c42      # tests/guest/vblk.h's VBLK_MAGIC
MASK = (1 << 64) - 1
MEM_MB = 64


def sector_sum(words):
    return sum(w * (2 * i + 1) for i, w in enumerate(words[:63])) & MASK


def last_gen(s, n, acked):
    """The last generation up to @acked written to sector @s of @n (0: none)."""
    if acked < s + 1:
        return 0
    return s + 1 + n * ((acked - (s + 1)) // n)


def host_check(path, n, acked):
    """Problems with the image at @path after a blkverify of @n sectors that
    reported @acked (a list of strings, empty when it is right)."""
    bad = []
    with open(path, 'rb') as f:
        data = f.read(n * SECTOR)
    for s in range(n):
        raw = data[s * SECTOR:(s + 1) * SECTOR]
        want = last_gen(s, n, acked)
        if raw == bytes(SECTOR):
            if want:
                bad.append('sector %d: zero, but generation %d was acknowledged' % (s, want))
            continue
        w = struct.unpack('<64Q', raw)
        if w[0] != MAGIC or w[1] != s or w[63] != sector_sum(w):
            bad.append('sector %d: torn or misplaced (magic %#x, sector %d)' % (s, w[0], w[1]))
        elif w[2] < want or (w[2] - 1) % n != s:
            bad.append('sector %d: generation %d, acknowledged %d' % (s, w[2], want))
        if len(bad) > 10:
            break
    return bad


def stat_lines(text):
    """The whole STAT lines of @text (the serial file may end inside one)."""
    return [dict(kv.split('=', 1) for kv in line.split()[1:] if '=' in kv)
            for line in re.findall(r'^(STAT [^\n]*)\n', text, re.M)]


class BlkCase(GuestCase):
    NAME = 'test-virtio-blk'
    TMP_PREFIX = 'qemu-vblk-'

    def image(self, name, sectors):
        """A zero raw image of @sectors and a sentinel file beside it."""
        path = os.path.join(self.tmp, name + '.raw')
        with open(path, 'wb') as f:
            f.truncate(sectors * SECTOR)
        with open(path + '.sentinel', 'wb') as f:
            f.write(os.urandom(4096))
        return path

    def blk_vm(self, name, img, append, extra=(), binary=None):
        drive = 'file=%s,format=raw,if=none,id=d0' % img
        args = ['-global', 'virtio-mmio.force-legacy=false']
        args += ['-drive', drive, '-device', 'virtio-blk-device,drive=d0'] + list(extra)
        return self.keep(VM(self.tmp, name, mem_mb=MEM_MB, append=append, extra=args,
                            binary=binary, cpu=PEER_CPU if binary else None), name)

    def wait_stats(self, vm, n):
        """@n more STAT lines from now, and no FAIL."""
        start = len(stat_lines(vm.serial_text()))
        end = time.monotonic() + DEADLINE
        while len(stat_lines(vm.serial_text())) < start + n:
            self.assertNotIn('FAIL', vm.serial_text(), vm.name)
            self.assertLess(time.monotonic(), end, '%s: no STAT; serial: %s; log: %s'
                            % (vm.name, vm.serial_text()[-300:], vm.log_tail()))
            self.assertIsNone(vm.proc.poll(), '%s exited: %s' % (vm.name, vm.log_tail()))
            time.sleep(self.POLL)
        self.assertNotIn('FAIL', vm.serial_text(), vm.name)
        return stat_lines(vm.serial_text())[-1]

    def stop_and_check(self, vm, img, n):
        """Stops @vm, then the host check of @img with its last acked_gen."""
        vm.qmp.cmd('stop')
        last = stat_lines(vm.serial_text())[-1]
        vm.shutdown()
        self.vms.remove(vm)
        acked = int(last['acked_gen'])
        self.assertGreater(acked, n // 4, 'too few writes to check much: %s' % last)
        self.assertEqual(host_check(img, n, acked), [])
        return last

    def test_verify(self):
        n = 2048
        img = self.image('verify', n)
        vm = self.blk_vm('verify', img, 'mode=blkverify depth=8')
        vm.wait_serial(r'READY mode=blkverify[^\n]*\n')
        last = self.wait_stats(vm, 3)
        self.assertGreater(int(last['verified']), 0, last)
        self.assertGreater(int(last['flushes']), 0, last)
        self.stop_and_check(vm, img, n)

    def test_bad_options(self):
        img = self.image('opts', 64)
        drive = ['-drive', 'file=%s,format=raw,if=none,id=d0' % img]
        cases = [
            ([], 'virtio-blk-device', 'drive property not set'),
            ([], 'virtio-blk-device,drive=nope',
             "Property 'virtio-blk-device.drive' can't find value 'nope'"),
            (drive + ['-device', 'virtio-blk-device,drive=d0'], 'virtio-blk-device,drive=d0',
             "Drive 'd0' is already in use by another device"),
            (drive, 'virtio-blk-device,drive=d0,foo=1',
             "Property 'virtio-blk-device.foo' not found"),
            (drive, 'virtio-blk-device,drive=d0,num-queues=0',
             'num-queues property must be larger than 0'),
            (drive, 'virtio-blk-device,drive=d0,logical_block_size=1000',
             "Property .logical_block_size doesn't take value '1000', it's not a power of 2"),
            (drive, 'virtio-blk-device,drive=d0,logical_block_size=256',
             "Property .logical_block_size doesn't take value 256 (minimum: 512, "
             "maximum: 2097152)"),
            (drive, 'virtio-blk-device,drive=d0,logical_block_size=4096,physical_block_size=512',
             'logical_block_size > physical_block_size not supported'),
        ]
        for pre, dev, msg in cases:
            args = [QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU, '-m', '%dM' % MEM_MB,
                    '-nodefaults', '-display', 'none', '-kernel', FIRMWARE] + pre + \
                ['-device', dev]
            p = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=DEADLINE)
            self.assertEqual(p.returncode, 1, (dev, p.stderr))
            self.assertIn(msg, p.stderr, dev)

    def test_hostile(self):
        n = 256
        img = self.image('hostile', n)
        with open(img + '.sentinel', 'rb') as f:
            sentinel = f.read()
        vm = self.blk_vm('hostile', img, 'mode=blkhostile')
        m = vm.wait_serial(r'DONE blkhostile cases=\d+ failed=(\d+)\n')
        self.assertEqual(m.group(1), '0', vm.serial_text())
        vm.shutdown()
        self.vms.remove(vm)
        warnings = [line for line in vm.log_tail().splitlines() if 'warning' in line]
        self.assertEqual(len(warnings), 1, vm.log_tail())
        self.assertIn('virtio-blk-device', warnings[0])
        self.assertEqual(os.path.getsize(img), n * SECTOR)
        with open(img, 'rb') as f:
            self.assertEqual(f.read(), bytes(n * SECTOR), 'the image was written')
        with open(img + '.sentinel', 'rb') as f:
            self.assertEqual(f.read(), sentinel)

    def migrate_writing(self, src_binary=None, dst_binary=None):
        """A writing blkverify guest from @src_binary to @dst_binary (None:
        ours) over TCP on one image; the destination writes on, the image
        passes the host check."""
        n = 2048
        img = self.image('mig%d' % len(os.listdir(self.tmp)), n)
        append = 'mode=blkverify depth=8 iops=3000'
        src = self.blk_vm('src', img, append, binary=src_binary)
        src.wait_serial(r'READY mode=blkverify[^\n]*\n')
        before = int(self.wait_stats(src, 2)['writes'])
        port = free_port()
        # Image locks on: the destination takes them only at the switchover.
        dst = self.blk_vm('dst', img, append, ['-incoming', 'tcp:127.0.0.1:%d' % port],
                          binary=dst_binary)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % port)
        info = self.wait_migration(src, dst)
        self.assertEqual(info['status'], 'completed', '%s; log: %s' % (info, src.log_tail()))
        self.wait_running(dst)
        src.shutdown()
        self.vms.remove(src)
        last = self.wait_stats(dst, 3)
        self.assertGreater(int(last['writes']), before, 'the destination writes on')
        self.stop_and_check(dst, img, n)

    def test_migrate(self):
        self.migrate_writing()

    def test_migrate_from_qemu(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.migrate_writing(src_binary=PEER)

    def test_migrate_to_qemu(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.migrate_writing(dst_binary=PEER)

    # QEMU 10.0 offers the same features and sends the same section (version 2, 57 config bytes).
    def test_migrate_from_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.migrate_writing(src_binary=QEMU10)

    def test_migrate_to_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.migrate_writing(dst_binary=QEMU10)

    def test_host_check_catches(self):
        """The check itself: a good image passes, each kind of damage is found."""
        n, acked = 8, 11
        img = os.path.join(self.tmp, 'hand.raw')

        def sector(s, gen):
            w = [MAGIC, s, gen] + [(gen * 7 + i) & MASK for i in range(3, 63)]
            return struct.pack('<64Q', *(w + [sector_sum(w + [0])]))

        good = [sector(s, last_gen(s, n, acked)) for s in range(n)]
        damaged = {
            'lost': (1, sector(1, 1)),                  # generation 9 was acknowledged
            'zero': (2, bytes(SECTOR)),
            'torn': (3, good[3][:256] + sector(3, 12)[256:]),   # half of a later write
            'misplaced': (4, sector(5, 6)),
        }
        for what, (s, raw) in [('none', (0, good[0]))] + list(damaged.items()):
            with open(img, 'wb') as f:
                f.write(b''.join(raw if i == s else good[i] for i in range(n)))
            bad = host_check(img, n, acked)
            if what == 'none':
                self.assertEqual(bad, [])
            else:
                self.assertEqual(len(bad), 1, (what, bad))
                self.assertIn('sector %d' % s, bad[0], what)


if __name__ == '__main__':
    unittest.main(verbosity=2)
