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
Ours -> ours also with num-queues=2 (each request then carries its queue's
index; the firmware drives queue 0 only, so the held ones are all on it).

Held reads (rerror=stop), ours -> ours: the source's disk is the image
served by qemu-nbd through blkdebug, every read after the first failing
with EIO; the guest's second read stops it with the read held. The destination
opens the image itself: 'cont' retries the read, blkverify checks its
data, and the writer sweeps the disk again (a read never completed keeps
its slot and its sector busy: the writer would stop there).

The stream goes through a file (QEMU migrates a VM only once, and the
test reads it): its virtio-blk section must list at least one request.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzevm import PEER, QEMU10, need_binary  # noqa: E402
from analyzetest import DEADLINE  # noqa: E402
from blkcase import SECTOR, BlkGuestCase  # noqa: E402

# The virtio-blk section's head (docs/devel/qemu-interop.md): transport,
# status, ISR, queue_sel, features, then the config's length (be32).
CONFIG_LEN = 12 + 1 + 1 + 2 + 4
QUEUE = 18                  # num, align, desc, last_avail_idx
RECORD = 49168
WRITE = (2, 1)              # out_num, in_num: header and data, status
READ = (1, 2)               # header; data and status

# qemu-nbd's blkdebug rule for the held reads: from the first read on, every
# read fails with EIO in the block-status step of qemu-nbd's sparse read, which
# sends an error reply. A failing read itself (iotype read) makes qemu-nbd 7.2
# drop the connection, and the migration's flush fails after it.
READ_EIO = ('[inject-error]\nevent = "read_aio"\niotype = "block-status"\nerrno = "5"\n'
            'once = "off"\n')


def held_requests(path):
    """The queue count and the (queue, head index, out_num, in_num) of each
    request in flight in the virtio-blk section of the stream at @path."""
    with open(path, 'rb') as f:
        data = f.read()
    i = data.find(b'/virtio-blk')
    assert i > 0, 'no virtio-blk section'
    p = i + len('/virtio-blk') + 8 + CONFIG_LEN   # instance and version, then the head
    p += 4 + struct.unpack_from('>I', data, p)[0]
    queues = struct.unpack_from('>I', data, p)[0]
    p += 4 + QUEUE * queues
    reqs = []
    while data[p] == 1:
        p += 1
        queue = 0
        if queues > 1:      # the queue's index before each record
            queue = struct.unpack_from('>I', data, p)[0]
            p += 4
        reqs.append((queue,) + struct.unpack_from('<III', data, p))
        p += RECORD
    assert data[p] == 0, 'list not ended by 0 at %d: %d' % (p, data[p])
    return queues, reqs


class HeldCase(BlkGuestCase):
    NAME = 'test-virtio-blk-held'
    TMP_PREFIX = 'qemu-vblk-held-'

    def stopped_source(self, img, n, binary, device_opts=''):
        """A blkverify VM on @img (werror=stop) stopped by EFBIG with writes held."""
        # The limit's EFBIG comes with SIGXFSZ, whose default kills: ignored here.
        old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        try:
            src = self.blk_vm('src', img, 'mode=blkverify depth=8', binary=binary,
                              drive_opts=',werror=stop', device_opts=device_opts)
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

    def migrate_held(self, src_binary=None, dst_binary=None, device_opts='', queues=1):
        n = 2048
        img = self.image('held%d' % len(os.listdir(self.tmp)), n)
        src = self.stopped_source(img, n, src_binary, device_opts)
        # To a file (the requests must be in it), loaded by the destination.
        stream = os.path.join(self.tmp, 'held.mig')
        src.migrate(stream)
        count, reqs = held_requests(stream)
        self.assertEqual(count, queues)
        self.assertTrue(reqs, 'no request in flight in the stream')
        for queue, index, out_num, in_num in reqs:
            # The firmware (tests/guest/virtio-blk.c) sets up and drives queue 0 only.
            self.assertEqual((queue, out_num, in_num), (0,) + WRITE, reqs)
        src.shutdown()
        self.vms.remove(src)
        # QEMU migrates a VM once: the destination loads that file.
        dst = self.blk_vm('dst', img, 'mode=blkverify depth=8',
                          ['-incoming', 'exec:cat %s' % stream], binary=dst_binary,
                          drive_opts=',werror=stop', device_opts=device_opts)
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

    def test_held_ours_two_queues(self):
        self.migrate_held(device_opts=',num-queues=2', queues=2)

    def failing_reads(self, img):
        """qemu-nbd serving @img with every read failing: the process and
        the nbd: file name of its export."""
        need_binary(self, shutil.which('qemu-nbd') or '/usr/bin/qemu-nbd', 'qemu-nbd')
        cfg = os.path.join(self.tmp, 'read-eio.cfg')
        with open(cfg, 'w') as f:
            f.write(READ_EIO)
        sock = os.path.join(self.tmp, 'nbd.sock')
        log = open(os.path.join(self.tmp, 'qemu-nbd.log'), 'wb')
        self.addCleanup(log.close)
        nbd = subprocess.Popen(['qemu-nbd', '-f', 'raw', '-x', 'd0', '-k', sock, '-t',
                                'blkdebug:%s:%s' % (cfg, img)], stdout=log, stderr=log)
        self.addCleanup(nbd.wait)
        self.addCleanup(nbd.kill)
        end = time.monotonic() + DEADLINE
        while not os.path.exists(sock):
            self.assertIsNone(nbd.poll(), 'qemu-nbd exited')
            self.assertLess(time.monotonic(), end, 'no qemu-nbd socket')
            time.sleep(self.POLL)
        return nbd, 'nbd:unix:%s:exportname=d0' % sock

    def test_held_read_ours(self):
        n = 2048
        img = self.image('read', n)
        nbd, export = self.failing_reads(img)
        src = self.blk_vm('src', img, 'mode=blkverify depth=8', file=export,
                          drive_opts=',rerror=stop')
        src.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_status(src, 'query-status', ('io-error',))
        ev = [e for e in src.qmp.events if e.get('event') == 'BLOCK_IO_ERROR']
        self.assertTrue(ev, src.qmp.events)
        self.assertEqual((ev[0]['data']['action'], ev[0]['data']['operation']),
                         ('stop', 'read'), ev[0])
        stream = os.path.join(self.tmp, 'held.mig')
        src.migrate(stream)
        count, reqs = held_requests(stream)
        self.assertIn(READ, [r[2:] for r in reqs], 'no read held in the stream: %s' % reqs)
        for r in reqs:
            self.assertIn(r[2:], (READ, WRITE), reqs)
        src.shutdown()
        self.vms.remove(src)
        nbd.terminate()
        nbd.wait(DEADLINE)
        # The destination reads the image itself, without errors.
        dst = self.blk_vm('dst', img, 'mode=blkverify depth=8',
                          ['-incoming', 'exec:cat %s' % stream], drive_opts=',rerror=stop')
        self.wait_status(dst, 'query-migrate', ('completed',))
        self.wait_status(dst, 'query-status', ('paused', 'postmigrate', 'io-error'))
        dst.qmp.cmd('cont')
        self.wait_running(dst)
        # The held read returned what was written (else blkverify FAILs), and it
        # freed its slot: the writer gets past its sector, a whole sweep further.
        first = int(self.wait_stats(dst, 1)['writes'])
        for _ in range(20):
            last = self.wait_stats(dst, 1)
            if int(last['writes']) > first + n:
                break
        self.assertGreater(int(last['writes']), first + n, last)
        self.assertGreater(int(last['verified']), 0, last)
        self.stop_and_check(dst, img, n)

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
