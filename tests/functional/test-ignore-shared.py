#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-ignore-shared.py: the x-ignore-shared capability (issue 38's first
step). Both ends map the guest's RAM from one file
(memory-backend-file,share=on as -machine memory-backend), so the stream
leaves that RAM out: a live precopy over tcp must carry far less than the
guest's size, and the verify firmware must go on with no FAIL on the
destination, which found its memory in the file. Between two of ours, and
with QEMU 10.0 both ways (skipped loudly without it). Refused: a
destination whose RAM is not that shared file (the pages would never
come), and the capability on one end only.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure), VMTEST_QEMU10 (QEMU 10.0's
binary, default /opt/qemu-10.0/bin/qemu-system-x86_64).
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE, QEMU  # noqa: E402
from analyzevm import VM, MonitorGone, need_binary, free_port, QEMU10  # noqa: E402
from guestcase import GuestCase  # noqa: E402

MEM_MB = 128
# verify rewrites its 32 MiB every pass: without the capability all of it goes again.
APPEND = 'mode=verify mem=32'
CAP = [{'capability': 'x-ignore-shared', 'state': True}]


class IgnoreSharedCase(GuestCase):
    NAME = 'test-ignore-shared'
    TMP_PREFIX = 'qemu-mig-ignshared-'
    # /dev/shm when there is one: the file is the guest's RAM.
    TMP_BASE = '/dev/shm' if os.path.isdir('/dev/shm') else None

    def setUp(self):
        super().setUp()
        self.ram = os.path.join(self.tmp, '%s.ram' % self.id().split('.')[-1])

    def vm(self, binary, name, incoming=False, ram=None, share='on', cap=True, caps=()):
        """A verify guest whose RAM is the file @ram (default: the test's one)."""
        extra = ['-object', 'memory-backend-file,id=m,size=%dM,mem-path=%s,share=%s'
                 % (MEM_MB, ram or self.ram, share)]
        if incoming:
            extra += ['-incoming', 'defer']
        vm = self.keep(VM(self.tmp, '%s%d' % (name, len(self.vms)),
                          machine='microvm,memory-backend=m', mem_mb=MEM_MB, append=APPEND,
                          binary=binary, extra=extra), '%s (%s)' % (name, binary))
        if cap:
            vm.qmp.cmd('migrate-set-capabilities', capabilities=CAP + [
                {'capability': c, 'state': True} for c in caps])
        if incoming:
            vm.port = free_port()
            vm.qmp.cmd('migrate-incoming', uri='tcp:127.0.0.1:%d' % vm.port)
        return vm

    def hop(self, src_binary, dst_binary, caps=()):
        """A running guest from @src_binary to @dst_binary over the shared file,
        @caps on at both ends with x-ignore-shared."""
        src = self.vm(src_binary, 'src', caps=caps)
        self.wait_passes(src, 2)
        dst = self.vm(dst_binary, 'dst', incoming=True, caps=caps)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        info = self.wait_migration(src, also=dst)
        self.assertEqual(info['status'], 'completed', '%s -> %s: %s; source log: %s; '
                         'destination log: %s' % (src.name, dst.name, info, src.log_tail(),
                                                  dst.log_tail()))
        self.wait_running(dst)
        self.wait_passes(dst, 3)
        # The RAM stayed in the file: only the firmware block and the devices went.
        self.assertLess(info['ram']['transferred'], 4 << 20, info)
        self.assertLess(info['ram'].get('multifd-bytes', 0), 4 << 20, info)
        return info

    def refused_load(self, dst, text):
        """The destination said @text and never ran the guest."""
        end = time.monotonic() + DEADLINE
        while text not in dst.log_tail():
            self.assertLess(time.monotonic(), end, 'destination said nothing of %r: %s'
                            % (text, dst.log_tail()))
            time.sleep(0.05)
        try:
            self.assertNotEqual(dst.qmp.cmd('query-status')['status'], 'running')
        except (OSError, MonitorGone):
            pass                # it exited after the refusal, as QEMU's destination does


class TestOurs(IgnoreSharedCase):
    def test_shared_file(self):
        info = self.hop(QEMU, QEMU)
        # query-migrate counts only what it sends: the 64 KiB firmware and three 4 KiB ACPI blobs.
        self.assertEqual(info['ram']['total'], (64 + 3 * 4) << 10, info)

    def test_shared_file_multifd(self):
        """Multifd's channels send pages from the same tracker: the file stays out."""
        self.hop(QEMU, QEMU, caps=('multifd',))

    def test_destination_not_shared(self):
        """The source leaves the file out; a destination with private RAM would run
        the guest on empty memory: refused, and the source runs on."""
        src = self.vm(QEMU, 'src')
        self.wait_passes(src, 1)
        dst = self.vm(QEMU, 'dst', incoming=True, ram=self.ram + '.other', share='off')
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        self.wait_migration(src, also=dst)
        self.refused_load(dst, "x-ignore-shared: no page of RAM block 'm' arrived")
        self.wait_running(src)
        self.wait_passes(src, 2)

    def test_capability_on_source_only(self):
        src = self.vm(QEMU, 'src')
        self.wait_passes(src, 1)
        dst = self.vm(QEMU, 'dst', incoming=True, ram=self.ram + '.other', cap=False)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        self.wait_migration(src, also=dst)
        self.refused_load(dst, 'Capability x-ignore-shared is off, but received capability is on')

    def test_not_with_mapped_ram(self):
        vm = self.vm(QEMU, 'src')
        with self.assertRaisesRegex(Exception, 'not supported with mapped-ram'):
            vm.qmp.cmd('migrate-set-capabilities',
                       capabilities=[{'capability': 'mapped-ram', 'state': True}])


class TestQemu10(IgnoreSharedCase):
    def test_from_qemu(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.hop(QEMU10, QEMU)

    def test_to_qemu(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.hop(QEMU, QEMU10)


if __name__ == '__main__':
    unittest.main(verbosity=2)
