#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-block-migration.py: a guest writing to a shared raw image migrates
with it (issue 39), and the image is written by one running process only.

A blkverify guest (blkcase.py) writes numbered, checksummed sectors the
whole time; after each migration the destination writes on with no FAIL,
and the host's check of the image finds every acknowledged write, whole.
QEMU's image locks are on everywhere (/proc/locks shows them):

- every dirty-log mode (get, clear, the dirty ring), multifd, postcopy:
  the destination holds no lock until the switchover, the source none
  after it;
- a destination that dies mid-migration: the source keeps its locks,
  and its guest writes on;
- 'cont' on a source whose migration completed: refused while the
  destination holds the image (QEMU's words), as QEMU refuses it;
- a background snapshot: the source keeps its image and writes on;
- a live update (cpr-transfer, cpr-exec): the old process (or image)
  releases the image, the new one takes it, and the guest writes on.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE.
"""

import importlib.util
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE  # noqa: E402
from analyzevm import free_port  # noqa: E402
from blkcase import BlkGuestCase  # noqa: E402


def _live_update():
    """test-live-update.py's helpers (its name is not a module name)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'test-live-update.py')
    spec = importlib.util.spec_from_file_location('live_update', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


live_update = _live_update()

N = 2048                        # sectors of the image: 1 MiB
# A STAT line every 250 ms: every wait below is for STAT lines, to see the
# guest write (on), which needs no seconds; and fewer writes after a hop
# rewrite fewer of the sectors a lost switchover write went to, so the host
# check sees more of them.
WRITING = 'mode=blkverify depth=8 iops=3000 report_ms=250'
# The write lock's bytes as QEMU takes them ("write" at 101, "unshare write" at 201).
WRITE_BYTES = {101, 201}


def locked_bytes(path):
    """The byte offsets locked on @path by any process (/proc/locks)."""
    st = os.stat(path)
    dev = '%02x:%02x:%d' % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    out = set()
    with open('/proc/locks') as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 8 and fields[-3] == dev:
                out.update(range(int(fields[-2]), int(fields[-1]) + 1))
    return out


class BlockMigration(BlkGuestCase):
    NAME = 'test-block-migration'
    TMP_PREFIX = 'qemu-blkmig-'

    def writing_source(self, name, extra=(), fmt='raw'):
        img = self.image(name, N, fmt)
        src = self.blk_vm('src', img, WRITING, extra)
        src.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_stats(src, 1)
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        return src, img

    def destination(self, img, extra=()):
        port = free_port()
        dst = self.blk_vm('dst', img, WRITING, list(extra) +
                          ['-incoming', 'tcp:127.0.0.1:%d' % port])
        dst.port = port
        dst.qmp.cmd('query-status')
        return dst

    def migrate(self, src_extra=(), dst_extra=(), caps=(), params=None, postcopy=False,
                fmt='raw'):
        """The writing guest to a new process; returns (source, destination, image)."""
        src, img = self.writing_source('m%d' % len(os.listdir(self.tmp)), src_extra, fmt)
        dst = self.destination(img, dst_extra)
        if caps:
            for vm in (src, dst):
                vm.qmp.cmd('migrate-set-capabilities', capabilities=[
                    {'capability': c, 'state': True} for c in caps])
        if params:
            for vm in (src, dst):
                vm.qmp.cmd('migrate-set-parameters', **params)
        # Only the source holds the write lock while the destination waits.
        before = locked_bytes(img)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        if postcopy:
            self.wait_status(src, 'query-migrate', ('active',))
            src.qmp.cmd('migrate-start-postcopy')
        info = self.wait_migration(src, dst)
        self.assertEqual(info['status'], 'completed', '%s; log: %s' % (info, src.log_tail()))
        self.wait_running(dst)
        self.assertTrue(WRITE_BYTES <= before, before)
        if postcopy:
            self.assertGreater(info['ram']['postcopy-bytes'], 0, info)
        return src, dst, img

    def finish(self, src, dst, img):
        """The destination writes on alone, then the image is checked."""
        self.wait_stats(dst, 2)
        src.shutdown()
        self.vms.remove(src)
        # With the source gone, what is locked is the destination's.
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        self.wait_stats(dst, 1)
        self.stop_and_check(dst, img, N)

    def test_dirty_log_modes(self):
        for mode, accel in (('get', 'x-dirty-log=get'), ('clear', 'x-dirty-log=clear'),
                            ('ring', 'dirty-ring-size=4096')):
            with self.subTest(mode=mode):
                args = ['-accel', 'kvm,' + accel]
                src, dst, img = self.migrate(src_extra=args, dst_extra=args)
                self.finish(src, dst, img)

    def test_qcow2(self):
        """A qcow2 image made by qemu-img: the destination reloads its tables at the
        switchover (the source allocated clusters meanwhile); qemu-img check finds no
        error and no leak after."""
        src, dst, img = self.migrate(fmt='qcow2')
        self.finish(src, dst, img)

    def test_multifd(self):
        src, dst, img = self.migrate(caps=('multifd',), params={'multifd-channels': 2})
        self.finish(src, dst, img)

    def test_postcopy(self):
        # A slow link and no downtime to spend: precopy cannot end by itself, the
        # guest keeps dirtying its table of generations, and postcopy takes over.
        src, dst, img = self.migrate(caps=('postcopy-ram',), postcopy=True,
                                     params={'max-bandwidth': 1 << 20, 'downtime-limit': 1})
        self.finish(src, dst, img)

    def test_destination_dies(self):
        """Killed mid-migration: the source keeps its image and writes on."""
        src, img = self.writing_source('dies')
        dst = self.destination(img)
        # As in test_postcopy: it cannot end before the kill.
        src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': 1 << 20, 'downtime-limit': 1})
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        self.wait_status(src, 'query-migrate', ('active',))
        os.kill(dst.proc.pid, signal.SIGKILL)
        dst.proc.wait(timeout=DEADLINE)
        self.vms.remove(dst)
        info = self.wait_migration(src)
        self.assertEqual(info['status'], 'failed', info)
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'running')
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        self.wait_stats(src, 2)
        self.stop_and_check(src, img, N)

    def test_cont_on_completed_source(self):
        """The destination holds the image: the old source may not run its guest again."""
        src, dst, img = self.migrate()
        self.refused(src, 'cont', 'lock')
        self.assertNotEqual(src.qmp.cmd('query-status')['status'], 'running')
        self.finish(src, dst, img)

    def test_pause_before_switchover(self):
        """libvirt's order with disk mirrors: the source stops in pre-switchover
        with its image still its own (locked, written back only at the go), a
        migrate-continue for another state is refused, the right one completes."""
        src, img = self.writing_source('pause')
        dst = self.destination(img)
        src.qmp.cmd('migrate-set-capabilities', capabilities=[
            {'capability': 'pause-before-switchover', 'state': True}])
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        self.wait_status(src, 'query-migrate', ('pre-switchover',))
        self.assertNotEqual(src.qmp.cmd('query-status')['status'], 'running')
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        time.sleep(0.3)
        self.assertEqual(src.qmp.cmd('query-migrate')['status'], 'pre-switchover')
        self.refused(src, 'migrate-continue', 'Migration not in expected state: pre-switchover',
                     state='active')
        src.qmp.cmd('migrate-continue', state='pre-switchover')
        info = self.wait_migration(src, dst)
        self.assertEqual(info['status'], 'completed', info)
        self.wait_running(dst)
        self.finish(src, dst, img)

    def test_postcopy_pause_before_switchover(self):
        """The same pause before postcopy starts (libvirt --postcopy with mirrors)."""
        src, img = self.writing_source('pausepc')
        dst = self.destination(img)
        for vm in (src, dst):
            vm.qmp.cmd('migrate-set-capabilities', capabilities=[
                {'capability': 'postcopy-ram', 'state': True}])
        src.qmp.cmd('migrate-set-capabilities', capabilities=[
            {'capability': 'pause-before-switchover', 'state': True}])
        src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': 1 << 20, 'downtime-limit': 1})
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        self.wait_status(src, 'query-migrate', ('active',))
        src.qmp.cmd('migrate-start-postcopy')
        self.wait_status(src, 'query-migrate', ('pre-switchover',))
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        src.qmp.cmd('migrate-continue', state='pre-switchover')
        info = self.wait_migration(src, dst)
        self.assertEqual(info['status'], 'completed', info)
        self.wait_running(dst)
        self.finish(src, dst, img)

    def test_cancel_in_pre_switchover(self):
        """A cancel while paused gives the guest back, image and all."""
        src, img = self.writing_source('pausecancel')
        dst = self.destination(img)
        src.qmp.cmd('migrate-set-capabilities', capabilities=[
            {'capability': 'pause-before-switchover', 'state': True}])
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        self.wait_status(src, 'query-migrate', ('pre-switchover',))
        src.qmp.cmd('migrate_cancel')
        info = self.wait_migration(src)
        self.assertEqual(info['status'], 'cancelled', info)
        self.wait_status(src, 'query-status', ('running',))
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        # The destination saw its source go (it ends, or the teardown ends it).
        self.wait_stats(src, 2)
        self.stop_and_check(src, img, N)

    def test_background_snapshot(self):
        """The source runs on with its image: nothing to hand over."""
        src, img = self.writing_source('snap')
        src.qmp.cmd('migrate-set-capabilities', capabilities=[
            {'capability': 'background-snapshot', 'state': True}])
        snap = os.path.join(self.tmp, 'snap.mig')
        src.qmp.cmd('migrate', uri='exec:cat > ' + snap)
        info = self.wait_migration(src)
        self.assertEqual(info['status'], 'completed', info)
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'running')
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        self.wait_stats(src, 2)
        self.stop_and_check(src, img, N)



class LiveUpdateWithDisk(live_update.CprCase, BlkGuestCase):
    NAME = 'test-block-migration'
    TMP_PREFIX = 'qemu-blkmig-cpr-'

    def test_cpr_transfer(self):
        """The new process takes the image at the handover; the guest writes on there."""
        img = self.image('cpr', N)
        disk = ['-global', 'virtio-mmio.force-legacy=false',
                '-drive', 'file=%s,format=raw,if=none,id=d0' % img,
                '-device', 'virtio-blk-device,drive=d0']
        src = self.vm('src', live_update.memfd_args() + disk, append=WRITING)
        src.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_stats(src, 1)
        src.qmp.cmd('migrate-set-parameters', mode='cpr-transfer')
        cpr = {'channel-type': 'cpr', 'addr': live_update.unix_addr(self.cpr_sock)}
        dst = self.vm('dst', live_update.memfd_args() + disk +
                      ['-incoming', json.dumps(cpr), '-incoming', 'unix:' + self.main_sock],
                      connect=False, append=WRITING)
        self.wait_path(dst, self.cpr_sock)
        self.update(src, dst)
        self.wait_stats(dst, 2)
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        src.qmp.cmd('quit')
        self.stop_and_check(dst, img, N)

    def test_cpr_exec(self):
        """The exec'd image takes the image at the end of its load; the guest writes on."""
        img = self.image('exec', N)
        disk = ['-global', 'virtio-mmio.force-legacy=false',
                '-drive', 'file=%s,format=raw,if=none,id=d0' % img,
                '-device', 'virtio-blk-device,drive=d0']
        vm = self.vm('exec', live_update.memfd_args() + disk, append=WRITING)
        vm.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_stats(vm, 1)
        state = os.path.join(self.tmp, 'exec-state')
        vm.qmp.cmd('migrate-set-parameters', mode='cpr-exec',
                   **{'cpr-exec-command': vm.args + ['-incoming', 'file:' + state]})
        vm.qmp.cmd('migrate', uri='file:' + state)
        live_update.TestExec.reconnect(self, vm)
        self.wait_stats(vm, 2)
        self.assertTrue(WRITE_BYTES <= locked_bytes(img), locked_bytes(img))
        self.stop_and_check(vm, img, N)


if __name__ == '__main__':
    unittest.main(verbosity=2)
