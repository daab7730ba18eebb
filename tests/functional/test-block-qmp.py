#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-block-qmp.py: drives as QMP and HMP show them, and image locks
between our binary and QEMU 7.2.

- query-block, query-named-block-nodes and query-blockstats of a -drive
  (raw, cache=none) and a -blockdev (JSON, read-only) have real content,
  and the same member names as QEMU 7.2's answers for the same drive
  (when QEMU is installed); HMP "info block" has QEMU's shape.
- Locks: while one process has an image with a writing virtio-blk
  device, the other refuses it with QEMU's message ("Failed to get
  \"write\" lock", "Is another process using the image [X]?"), both
  ways; a destination started with -incoming holds no lock on it.
  The cases with a device need -device virtio-blk-device in our binary,
  and are skipped until it has one.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU, SRC_DIR  # noqa: E402
from analyzevm import skip_class_without_kvm  # noqa: E402

sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
from qmp import VM  # noqa: E402

QEMU72 = '/usr/bin/qemu-system-x86_64'
IMG_SIZE = 64 * 1024 * 1024


def base_args(binary):
    args = ['-M', 'microvm', '-nodefaults', '-no-user-config', '-display', 'none', '-S']
    if binary == QEMU:
        args += ['-enable-kvm', '-cpu', CPU, '-m', '64M', '-kernel', FIRMWARE,
                 '-append', 'mode=idle mem=16']
    return args


def locked_bytes(path):
    """The byte offsets locked on @path (any process), from /proc/locks."""
    st = os.stat(path)
    dev = '%02x:%02x:%d' % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    out = set()
    with open('/proc/locks') as f:
        for line in f:
            fields = line.split()
            if ':' in fields[0] and len(fields) >= 8 and fields[-3] == dev:
                start, end = int(fields[-2]), int(fields[-1])
                out.update(range(start, end + 1))
    return out


def ours_has_virtio_blk():
    p = subprocess.run([QEMU] + base_args(QEMU) + ['-device', 'virtio-blk-device,help'],
                       capture_output=True, timeout=DEADLINE)
    return b'is not a valid device model name' not in p.stderr


class BlockQmp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-block-qmp')
        cls.dir = tempfile.mkdtemp(prefix='test-block-qmp-')
        cls.img = os.path.join(cls.dir, 'a.img')
        cls.img2 = os.path.join(cls.dir, 'b.img')
        for p in (cls.img, cls.img2):
            with open(p, 'wb') as f:
                f.truncate(IMG_SIZE)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def start(self, binary, *extra, name='vm'):
        vm = VM(binary, base_args(binary) + list(extra), name=name)
        self.addCleanup(vm.kill)
        return vm

    def drive_args(self):
        blockdev = ('{"driver":"raw","node-name":"n1","read-only":true,'
                    '"file":{"driver":"file","filename":"%s"}}' % self.img2)
        return ['-drive', 'file=%s,if=none,id=d0,format=raw,cache=none' % self.img,
                '-blockdev', blockdev]

    def test_queries(self):
        vm = self.start(QEMU, *self.drive_args())
        blocks = vm.qmp.cmd('query-block')
        self.assertEqual(len(blocks), 1)
        b = blocks[0]
        self.assertEqual(b['device'], 'd0')
        self.assertEqual(b['type'], 'unknown')
        self.assertTrue(b['removable'])     # no device took it
        ins = b['inserted']
        self.assertEqual(ins['file'], self.img)
        self.assertEqual(ins['drv'], 'raw')
        self.assertFalse(ins['ro'])
        self.assertTrue(ins['node-name'].startswith('#block'))
        self.assertEqual(ins['cache'], {'writeback': True, 'direct': True, 'no-flush': False})
        self.assertEqual(ins['image']['virtual-size'], IMG_SIZE)
        self.assertEqual(ins['image']['format'], 'raw')
        self.assertEqual(ins['detect_zeroes'], 'off')

        nodes = vm.qmp.cmd('query-named-block-nodes')
        by_name = {n['node-name']: n for n in nodes}
        self.assertIn('n1', by_name)
        self.assertTrue(by_name['n1']['ro'])
        self.assertEqual(by_name['n1']['file'], self.img2)
        self.assertEqual(len(nodes), 4)     # two formats over two files
        self.assertEqual(sorted(n['drv'] for n in nodes), ['file', 'file', 'raw', 'raw'])

        stats = vm.qmp.cmd('query-blockstats')
        self.assertEqual([s['device'] for s in stats], ['d0'])
        self.assertEqual(stats[0]['node-name'], ins['node-name'])
        self.assertEqual(stats[0]['stats']['rd_operations'], 0)
        self.assertEqual(stats[0]['parent']['stats']['wr_bytes'], 0)
        self.assertEqual(len(vm.qmp.cmd('query-blockstats', **{'query-nodes': True})), 4)

        hmp = vm.qmp.hmp('info block')
        self.assertRegex(hmp, r'^d0 \(#block\d+\): %s \(raw\)\r?\n'
                              r'    Removable device: not locked, tray closed\r?\n'
                              r'    Cache mode:       writeback, direct\r?\n'
                         % re.escape(self.img))

    @unittest.skipUnless(os.access(QEMU72, os.X_OK), 'QEMU 7.2 not installed')
    def test_same_members_as_qemu(self):
        ours = self.start(QEMU, *self.drive_args(), name='ours')
        theirs = self.start(QEMU72, *self.drive_args(), name='qemu')
        for cmd in ('query-block', 'query-named-block-nodes', 'query-blockstats'):
            a, b = ours.qmp.cmd(cmd), theirs.qmp.cmd(cmd)
            self.assertEqual(len(a), len(b), cmd)
            for x, y in zip(a, b):
                self.assertEqual(sorted(x), sorted(y), cmd)
                for k in ('inserted', 'image', 'cache', 'stats'):
                    if k in x:
                        self.assertEqual(sorted(x[k]), sorted(y[k]), '%s %s' % (cmd, k))
        # Ours opens files first, then formats: QEMU lists the top nodes first, as we do.
        self.assertEqual([n['drv'] for n in ours.qmp.cmd('query-named-block-nodes')],
                         [n['drv'] for n in theirs.qmp.cmd('query-named-block-nodes')])

    def test_incoming_holds_no_lock(self):
        vm = self.start(QEMU, '-drive', 'file=%s,if=none,id=d0,format=raw' % self.img,
                        '-incoming', 'defer')
        vm.qmp.cmd('query-status')
        self.assertEqual(locked_bytes(self.img), set())
        vm.kill()
        vm = self.start(QEMU, '-drive', 'file=%s,if=none,id=d0,format=raw' % self.img)
        vm.qmp.cmd('query-status')
        # A drive no device took: the "consistent read" byte only, as QEMU 7.2.
        self.assertEqual(locked_bytes(self.img), {100})

    def refused(self, binary, img):
        """@binary started on @img with a writing device: its exit status and stderr."""
        args = base_args(binary) + ['-drive', 'file=%s,if=none,id=d0,format=raw' % img,
                                    '-device', 'virtio-blk-device,drive=d0']
        p = subprocess.run([binary] + args, capture_output=True, timeout=DEADLINE)
        return p.returncode, p.stderr.decode()

    def holder(self, binary, img):
        vm = self.start(binary, '-drive', 'file=%s,if=none,id=d0,format=raw' % img,
                        '-device', 'virtio-blk-device,drive=d0', name='holder')
        vm.qmp.cmd('query-status')
        self.assertEqual(locked_bytes(img), {100, 101, 201})
        return vm

    @unittest.skipUnless(os.access(QEMU72, os.X_OK), 'QEMU 7.2 not installed')
    def test_locks_against_qemu(self):
        if not ours_has_virtio_blk():
            self.skipTest('no virtio-blk-device in this binary yet')
        for holder, other in ((QEMU, QEMU72), (QEMU72, QEMU)):
            vm = self.holder(holder, self.img)
            status, err = self.refused(other, self.img)
            self.assertEqual(status, 1, err)
            self.assertIn('Failed to get "write" lock', err)
            self.assertIn('Is another process using the image [%s]?' % self.img, err)
            vm.kill()
            deadline = time.monotonic() + DEADLINE
            while locked_bytes(self.img) and time.monotonic() < deadline:
                time.sleep(0.05)


if __name__ == '__main__':
    unittest.main()
