#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-virtio-blk-held.py: a guest stopped by werror=stop migrates with the
writes it has in flight (issue 39; hw/virtio/virtio-blk-held.c).

The blkverify guest (tests/guest/blk.c) writes with 8 requests in flight
on a raw image, werror=stop. The source process's RLIMIT_FSIZE is cut to
half the image: its next writes to the upper half fail (EFBIG), it stops
with status io-error and holds them (then the limit goes: they stay held
until a 'cont'). Migrated while so stopped to a destination, which stays
paused; 'cont' there retries
the held writes and the guest writes on: no FAIL, and the host check of
the image passes after it (every acknowledged write there, none torn or
lost). ours -> ours, QEMU 7.2 and 10.0 -> ours, ours -> QEMU 7.2 and 10.0.

The stream goes through a file (QEMU migrates a VM only once, and the
test reads it): its virtio-blk section must list at least one request.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
import resource
import signal
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzevm import PEER, QEMU10, need_binary  # noqa: E402
from blkcase import SECTOR, BlkGuestCase  # noqa: E402

# The virtio-blk section's head up to its one queue (docs/devel/qemu-interop.md).
HEAD = 12 + 1 + 1 + 2 + 4 + 4 + 57 + 4 + 18
RECORD = 49168


def held_requests(path):
    """(head index, out_num, in_num) of each request in flight in the
    virtio-blk section of the stream at @path (one queue)."""
    with open(path, 'rb') as f:
        data = f.read()
    i = data.find(b'/virtio-blk')
    assert i > 0, 'no virtio-blk section'
    p = i + len('/virtio-blk') + 8 + HEAD     # instance and version, then the head
    reqs = []
    while data[p] == 1:
        reqs.append(struct.unpack_from('<III', data, p + 1))
        p += 1 + RECORD
    assert data[p] == 0, 'list not ended by 0 at %d: %d' % (p, data[p])
    return reqs


class HeldCase(BlkGuestCase):
    NAME = 'test-virtio-blk-held'
    TMP_PREFIX = 'qemu-vblk-held-'

    def stopped_source(self, img, n, binary):
        """A blkverify VM on @img (werror=stop) stopped by EFBIG with writes held."""
        # The limit's EFBIG comes with SIGXFSZ, whose default kills: ignored here.
        old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        try:
            src = self.blk_vm('src', img, 'mode=blkverify depth=8', binary=binary,
                              drive_opts=',werror=stop')
        finally:
            signal.signal(signal.SIGXFSZ, old)
        src.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_stats(src, 1)
        soft, hard = resource.prlimit(src.proc.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(src.proc.pid, resource.RLIMIT_FSIZE, (n * SECTOR // 2, hard))
        self.wait_status(src, 'query-status', ('io-error',))
        ev = [e for e in src.qmp.events if e.get('event') == 'BLOCK_IO_ERROR']
        self.assertTrue(ev, src.qmp.events)
        self.assertEqual(ev[0]['data']['action'], 'stop', ev[0])
        # The limit off again (a migration's exec:cat inherits it): held until a 'cont'.
        resource.prlimit(src.proc.pid, resource.RLIMIT_FSIZE, (soft, hard))
        return src

    def migrate_held(self, src_binary=None, dst_binary=None):
        n = 2048
        img = self.image('held%d' % len(os.listdir(self.tmp)), n)
        src = self.stopped_source(img, n, src_binary)
        # To a file (the requests must be in it), loaded by the destination.
        stream = os.path.join(self.tmp, 'held.mig')
        src.migrate(stream)
        reqs = held_requests(stream)
        self.assertTrue(reqs, 'no request in flight in the stream')
        for index, out_num, in_num in reqs:
            self.assertEqual((out_num, in_num), (2, 1), reqs)     # header and data, status
        src.shutdown()
        self.vms.remove(src)
        # QEMU migrates a VM once: the destination loads that file.
        dst = self.blk_vm('dst', img, 'mode=blkverify depth=8',
                          ['-incoming', 'exec:cat %s' % stream], binary=dst_binary,
                          drive_opts=',werror=stop')
        self.wait_status(dst, 'query-migrate', ('completed',))
        self.wait_status(dst, 'query-status', ('paused', 'postmigrate', 'io-error'))
        # Space here: cont retries what the source held, and the guest writes on.
        dst.qmp.cmd('cont')
        self.wait_running(dst)
        # Every write issued by the first report after the 'cont' (the held ones among
        # them) acknowledged: a held write lost would keep acked_gen below its own for ever.
        issued = int(self.wait_stats(dst, 1)['writes'])
        for _ in range(10):
            last = self.wait_stats(dst, 1)
            if int(last['acked_gen']) >= issued:
                break
        self.assertGreaterEqual(int(last['acked_gen']), issued, last)
        self.stop_and_check(dst, img, n)

    def test_held_ours(self):
        self.migrate_held()

    def test_held_from_qemu(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.migrate_held(src_binary=PEER)

    def test_held_to_qemu(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.migrate_held(dst_binary=PEER)

    def test_held_from_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.migrate_held(src_binary=QEMU10)

    def test_held_to_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.migrate_held(dst_binary=QEMU10)


if __name__ == '__main__':
    unittest.main(verbosity=2)
