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
- werror=stop: writes the host refuses (past the process's RLIMIT_FSIZE,
  EFBIG) stop the guest with QEMU's BLOCK_IO_ERROR event and status
  io-error; once the host takes writes again, 'cont' retries the held
  requests and the guest writes on with no write lost.
- blkhostile (tests/guest/blk-bad.c): every case answered as it must be,
  one warning on stderr, nothing written outside the image (its size, a
  sentinel file next to it, and its own bytes are unchanged).
- A live migration ours -> ours over TCP of a writing blkverify guest, the
  image shared by both processes: the destination goes on with no FAIL and
  the host check passes after it. The same from QEMU 7.2 and 10.0 into ours
  and from ours into them (QEMU's transport modern), with QEMU's image
  locks on both sides: each destination takes the image at the switchover
  (test-block-migration has the rest of the handover).

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
import resource
import signal
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU  # noqa: E402
from analyzevm import PEER, QEMU10, need_binary  # noqa: E402
from blkcase import (MAGIC, MASK, MEM_MB, SECTOR, BlkGuestCase, host_check,  # noqa: E402
                     last_gen, sector_sum, stat_lines)


class BlkCase(BlkGuestCase):
    NAME = 'test-virtio-blk'
    TMP_PREFIX = 'qemu-vblk-'

    def test_werror_stop(self):
        n = 2048
        img = self.image('werror', n)
        # The limit's EFBIG comes with SIGXFSZ, whose default kills: ignored
        # here, the VM inherits that, as a host would set it up.
        old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        try:
            vm = self.blk_vm('werror', img, 'mode=blkverify depth=8 iops=3000',
                             drive_opts=',werror=stop')
        finally:
            signal.signal(signal.SIGXFSZ, old)
        vm.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_stats(vm, 1)
        soft, hard = resource.prlimit(vm.proc.pid, resource.RLIMIT_FSIZE)
        # Half the image: the guest's next write to its upper half fails.
        resource.prlimit(vm.proc.pid, resource.RLIMIT_FSIZE, (n * SECTOR // 2, hard))
        self.wait_status(vm, 'query-status', ('io-error',))
        ev = [e for e in vm.qmp.events if e.get('event') == 'BLOCK_IO_ERROR']
        self.assertTrue(ev, vm.qmp.events)
        self.assertEqual(ev[0]['data']['action'], 'stop', ev[0])
        self.assertEqual(ev[0]['data']['operation'], 'write', ev[0])
        stopped = len(vm.serial_text())
        time.sleep(0.5)
        self.assertEqual(len(vm.serial_text()), stopped, 'the guest ran on while stopped')
        # Space again: cont retries what was held.
        resource.prlimit(vm.proc.pid, resource.RLIMIT_FSIZE, (soft, hard))
        vm.qmp.cmd('cont')
        self.wait_running(vm)
        self.wait_stats(vm, 2)
        self.stop_and_check(vm, img, n)

    def test_verify(self):
        n = 2048
        img = self.image('verify', n)
        vm = self.blk_vm('verify', img, 'mode=blkverify depth=8')
        vm.wait_serial(r'READY mode=blkverify[^\n]*\n')
        last = self.wait_stats(vm, 3)
        self.assertGreater(int(last['verified']), 0, last)
        self.assertGreater(int(last['flushes']), 0, last)
        # blkverify's first wave is 8 writes to sectors 0..7 under one kick:
        # merged into one host write (virtio-blk-merge.c), each still counted.
        stats = vm.qmp.cmd('query-blockstats')[0]['stats']
        self.assertGreaterEqual(stats['wr_merged'], 7, stats)
        self.assertGreater(stats['wr_operations'], stats['wr_merged'], stats)
        self.stop_and_check(vm, img, n)

    def test_blkbench(self):
        """blkbench on CPU 0 (64 KiB random writes over 1 MiB) beside a
        dirtying CPU 1: both report, the writes reach the image, and an
        area beyond the disk is refused."""
        n = 2048
        img = self.image('bench', n)
        vm = self.blk_vm('bench', img, 'mode=blkbench rw=randwrite bs=65536 depth=8 size_mb=1 '
                         'mode1=dirty mem1=8 rate1=10 pattern1=random', extra=['-smp', '2'])
        vm.wait_serial(r'READY mode=blkbench rw=randwrite bs=65536 size_mb=1 [^\n]*\n')
        self.wait_stats(vm, 4)
        lines = stat_lines(vm.serial_text())
        disk = [s for s in lines if s.get('cpu') == '0']
        self.assertTrue(disk, vm.serial_text())
        self.assertTrue(any(int(s['iops']) > 0 for s in disk), disk)
        self.assertTrue(all('lat_p99_us' in s and 'kib_s' in s for s in disk), disk)
        self.assertTrue(any(s.get('cpu') == '1' and 'rate_mbps' in s for s in lines), lines)
        vm.shutdown()
        self.vms.remove(vm)
        # Writes of whole blocks inside the area: the image did not grow.
        self.assertEqual(os.path.getsize(img), n * SECTOR)
        big = self.blk_vm('bench-big', img, 'mode=blkbench rw=read size_mb=2')
        big.wait_serial(r'FAIL blkbench-params[^\n]*\n')

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
            # libvirt passes bootindex=1; QEMU 7.2's microvm takes any integer, nothing else.
            (drive, 'virtio-blk-device,drive=d0,bootindex=x',
             "Parameter 'bootindex' expects integer"),
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

    def test_migrate(self):
        self.migrate_writing()

    def test_migrate_from_qemu(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.migrate_writing(src_binary=PEER)

    def test_migrate_to_qemu(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.migrate_writing(dst_binary=PEER)

    def test_migrate_qcow2_from_qemu(self):
        """A qcow2 image QEMU 7.2 wrote to, and its tables, taken over here."""
        need_binary(self, PEER, 'QEMU 7.2')
        self.migrate_writing(src_binary=PEER, fmt='qcow2')

    def test_migrate_qcow2_to_qemu(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.migrate_writing(dst_binary=PEER, fmt='qcow2')

    # QEMU 10.0 offers the same features and sends the same section (version 2, 57 config bytes).
    def test_migrate_from_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.migrate_writing(src_binary=QEMU10)

    def test_migrate_to_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.migrate_writing(dst_binary=QEMU10)

    def test_migrate_qcow2_from_qemu10(self):
        """QEMU 10.0's qcow2 (its own allocation and table writeback) taken over here."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.migrate_writing(src_binary=QEMU10, fmt='qcow2')

    def test_migrate_qcow2_to_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.migrate_writing(dst_binary=QEMU10, fmt='qcow2')

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
