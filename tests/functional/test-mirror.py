#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-mirror.py: the mirror job with our binary (issue 40), driven as
libvirt drives it for a storage migration.

A blkverify guest (blkcase.py) writes numbered, checksummed sectors the
whole time. The target is a node made by blockdev-add (or a file opened
by drive-mirror mode=existing); the mirror copies while the guest writes
until BLOCK_JOB_READY; query-block-jobs, query-jobs and "info block-jobs"
answer in QEMU's shape; the guest writes on while the job is ready; then
the VM stops and block-job-cancel ends the job with BLOCK_JOB_COMPLETED
(a ready mirror's cancel, as QEMU reports it). The target then equals the
source (qemu-img compare) and passes the host's check of every
acknowledged write. job-complete instead switches the drive to the
target under the writing guest (a pivot), which then holds every write.
sync=top between two qcow2 overlays of one base
copies only the overlay's data (qemu-img map of the target).

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE.
"""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE  # noqa: E402
from blkcase import BlkGuestCase, host_check  # noqa: E402

N = 8192                        # sectors of the image: 4 MiB
WRITING = 'mode=blkverify depth=8 iops=3000'
# QEMU 7.2's BlockJobInfo members for a running mirror (no error).
BLOCK_JOB_INFO = {'type', 'device', 'len', 'offset', 'busy', 'paused', 'speed', 'io-status',
                  'ready', 'status', 'auto-finalize', 'auto-dismiss'}
JOB_INFO = {'id', 'type', 'status', 'current-progress', 'total-progress'}


class Mirror(BlkGuestCase):
    NAME = 'test-mirror'
    TMP_PREFIX = 'qemu-mirror-'

    def wait_event(self, vm, name, job='m0'):
        """The first event @name of job @job, waiting for it (and its data)."""
        end = time.monotonic() + DEADLINE
        while True:
            for ev in vm.qmp.events:
                data = ev.get('data', {})
                if ev['event'] == name and job in (data.get('device'), data.get('id')):
                    return data
            self.assertLess(time.monotonic(), end, '%s: no %s; events %s; log: %s'
                            % (vm.name, name, [e['event'] for e in vm.qmp.events],
                               vm.log_tail()))
            vm.qmp.cmd('query-status')      # reads the events that came
            time.sleep(self.POLL)

    def statuses(self, vm, job='m0'):
        return [e['data']['status'] for e in vm.qmp.events
                if e['event'] == 'JOB_STATUS_CHANGE' and e['data']['id'] == job]

    def compare(self, a, b, fa, fb):
        p = subprocess.run(['qemu-img', 'compare', '-f', fa, '-F', fb, a, b],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def mirror_writing(self, fmt, start, copy_mode=None, pivot=False):
        """A writing guest on a @fmt image mirrored by @start(vm, target
        path); ready, written on, stopped, cancelled: the target checked.
        With @pivot, job-complete instead, the guest running."""
        src_img = self.image('src-%s-%s' % (fmt, copy_mode), N, fmt)
        dst_img = self.image('dst-%s-%s' % (fmt, copy_mode), N, fmt)
        vm = self.blk_vm('m-%s' % fmt, src_img, WRITING)
        vm.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_stats(vm, 1)
        start(vm, dst_img)
        ready = self.wait_event(vm, 'BLOCK_JOB_READY')
        self.assertEqual(ready['type'], 'mirror')
        self.assertEqual(set(ready), {'type', 'device', 'len', 'offset', 'speed'})

        jobs = vm.qmp.cmd('query-block-jobs')
        self.assertEqual(len(jobs), 1, jobs)
        self.assertEqual(set(jobs[0]), BLOCK_JOB_INFO, jobs[0])
        self.assertEqual((jobs[0]['type'], jobs[0]['device'], jobs[0]['status'],
                          jobs[0]['ready'], jobs[0]['io-status']),
                         ('mirror', 'm0', 'ready', True, 'ok'), jobs[0])
        self.assertGreater(jobs[0]['len'], 0)
        info = vm.qmp.cmd('query-jobs')
        self.assertEqual(set(info[0]), JOB_INFO, info)
        self.assertEqual((info[0]['id'], info[0]['type'], info[0]['status']),
                         ('m0', 'mirror', 'ready'))
        hmp = vm.qmp.hmp('info block-jobs')
        self.assertRegex(hmp, r'^Type mirror, device m0: Completed \d+ of \d+ bytes, '
                         r'speed limit 0 bytes/s')
        if pivot:
            return self.pivot_writing(vm, src_img, dst_img, fmt)

        # Ready, and the guest writes on: the job follows.
        self.wait_stats(vm, 2)
        vm.qmp.cmd('stop')
        vm.qmp.cmd('block-job-cancel', device='m0')
        done = self.wait_event(vm, 'BLOCK_JOB_COMPLETED')
        self.assertNotIn('error', done, done)
        self.wait_event(vm, 'JOB_STATUS_CHANGE')
        end = time.monotonic() + DEADLINE
        while 'null' not in self.statuses(vm):
            self.assertLess(time.monotonic(), end, self.statuses(vm))
            vm.qmp.cmd('query-status')
            time.sleep(self.POLL)
        self.assertEqual(self.statuses(vm), ['created', 'running', 'ready', 'waiting',
                                             'pending', 'concluded', 'null'])
        self.assertFalse([e for e in vm.qmp.events if e['event'] == 'BLOCK_JOB_CANCELLED'])
        self.assertEqual(vm.qmp.cmd('query-block-jobs'), [])
        last = self.stop_and_check(vm, src_img, N)
        self.compare(src_img, dst_img, fmt, fmt)
        if fmt == 'raw':
            self.assertEqual(host_check(dst_img, N, int(last['acked_gen'])), [])

    def test_blockdev_mirror_raw(self):
        def start(vm, dst):
            vm.qmp.cmd('blockdev-add', **{'driver': 'raw', 'node-name': 't0',
                                          'file': {'driver': 'file', 'filename': dst}})
            # Slow at first: the guest's writes race the first pass.
            vm.qmp.cmd('blockdev-mirror', **{'job-id': 'm0', 'device': 'd0',
                                             'target': 't0', 'sync': 'full',
                                             'speed': 64 * 1024})
            time.sleep(1)
            job = vm.qmp.cmd('query-block-jobs')[0]
            self.assertEqual((job['status'], job['speed']), ('running', 64 * 1024), job)
            self.assertGreater(job['offset'], 0, job)
            vm.qmp.cmd('block-job-set-speed', device='m0', speed=0)
        self.mirror_writing('raw', start)

    def pivot_writing(self, vm, src_img, dst_img, fmt):
        """job-complete of a ready mirror under a writing guest: the drive
        switches to the target (query-block names it), the guest writes on
        there, and the target alone holds every acknowledged write."""
        vm.qmp.cmd('job-complete', id='m0')
        done = self.wait_event(vm, 'BLOCK_JOB_COMPLETED')
        self.assertNotIn('error', done, done)
        self.assertEqual(done['offset'], done['len'], done)
        inserted = [b['inserted'] for b in vm.qmp.cmd('query-block') if b['device'] == 'd0']
        self.assertEqual(inserted[0]['file'], dst_img, inserted)
        self.assertEqual(inserted[0]['node-name'], 't0', inserted)
        # Its drive's write lock moved with it: qemu-img may read the old image now.
        p = subprocess.run(['qemu-img', 'info', '-f', fmt, src_img], capture_output=True,
                           text=True, timeout=DEADLINE)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.wait_stats(vm, 2)
        self.stop_and_check(vm, dst_img, N)

    def test_blockdev_mirror_pivot(self):
        """blockdev-mirror, then job-complete (virsh blockcopy --pivot);
        replaces names the source's node, which completion replaces."""
        def start(vm, dst):
            vm.qmp.cmd('blockdev-add', **{'driver': 'raw', 'node-name': 't0',
                                          'file': {'driver': 'file', 'filename': dst}})
            node = vm.qmp.cmd('query-block')[0]['inserted']['node-name']
            vm.qmp.cmd('blockdev-mirror', **{'job-id': 'm0', 'device': 'd0',
                                             'target': 't0', 'sync': 'full',
                                             'replaces': node})
        self.mirror_writing('raw', start, pivot=True)

    def test_blockdev_mirror_qcow2_write_blocking(self):
        def start(vm, dst):
            vm.qmp.cmd('blockdev-add', **{'driver': 'qcow2', 'node-name': 't0',
                                          'file': {'driver': 'file', 'filename': dst}})
            vm.qmp.cmd('blockdev-mirror', **{'job-id': 'm0', 'device': 'd0',
                                             'target': 't0', 'sync': 'full',
                                             'copy-mode': 'write-blocking'})
        self.mirror_writing('qcow2', start, 'write-blocking')

    def test_drive_mirror_existing(self):
        def start(vm, dst):
            vm.qmp.cmd('drive-mirror', **{'job-id': 'm0', 'device': 'd0', 'target': dst,
                                          'format': 'raw', 'mode': 'existing',
                                          'sync': 'full'})
        self.mirror_writing('raw', start, 'drive')

    def test_blockdev_mirror_top(self):
        """sync=top from a qcow2 overlay of a raw base full of data into an
        overlay of the same base: only what the guest wrote in the overlay
        (its first half) is copied, and the chains read the same."""
        base = os.path.join(self.tmp, 'base.raw')
        with open(base, 'wb') as f:
            f.write(os.urandom(N * 512))
        imgs = []
        for name in ('top-src', 'top-dst'):
            path = os.path.join(self.tmp, name + '.qcow2')
            subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-b', base, '-F', 'raw',
                            path], check=True, timeout=DEADLINE)
            imgs.append(path)
        src, dst = imgs
        vm = self.blk_vm('top', src, WRITING + ' sectors=%d' % (N // 2))
        vm.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_stats(vm, 1)
        vm.qmp.cmd('blockdev-add', **{'driver': 'qcow2', 'node-name': 't0',
                                      'file': {'driver': 'file', 'filename': dst}})
        vm.qmp.cmd('blockdev-mirror', **{'job-id': 'm0', 'device': 'd0', 'target': 't0',
                                         'sync': 'top'})
        self.wait_event(vm, 'BLOCK_JOB_READY')
        self.wait_stats(vm, 1)
        vm.qmp.cmd('stop')
        vm.qmp.cmd('block-job-cancel', device='m0')
        done = self.wait_event(vm, 'BLOCK_JOB_COMPLETED')
        self.assertNotIn('error', done, done)
        vm.shutdown()
        self.vms.remove(vm)
        self.compare(src, dst, 'qcow2', 'qcow2')
        # The target's own layer holds only the guest's half.
        p = subprocess.run(['qemu-img', 'map', '--output=json', dst], capture_output=True,
                           text=True, check=True, timeout=DEADLINE)
        own = [e for e in json.loads(p.stdout) if e['depth'] == 0 and e['data']]
        self.assertTrue(own, p.stdout)
        self.assertLessEqual(max(e['start'] + e['length'] for e in own), N // 2 * 512,
                             p.stdout)

    def test_quit_while_copying(self):
        """quit with a slow mirror running: the process ends at once and cleanly."""
        src_img = self.image('quit-src', N)
        dst_img = self.image('quit-dst', N)
        vm = self.blk_vm('quit', src_img, WRITING)
        vm.wait_serial(r'READY mode=blkverify[^\n]*\n')
        self.wait_stats(vm, 1)
        vm.qmp.cmd('drive-mirror', **{'job-id': 'm0', 'device': 'd0', 'target': dst_img,
                                      'format': 'raw', 'mode': 'existing', 'sync': 'full',
                                      'speed': 4096})
        time.sleep(0.5)
        self.assertEqual(vm.qmp.cmd('query-block-jobs')[0]['status'], 'running')
        start = time.monotonic()
        vm.shutdown()
        self.vms.remove(vm)
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(vm.proc.returncode, 0, vm.log_tail())

    def test_refusals(self):
        src_img = self.image('ref-src', 64)
        vm = self.blk_vm('ref', src_img, WRITING)
        cases = [
            ('blockdev-mirror', {'device': 'd0', 'target': 'nope', 'sync': 'full'},
             "Cannot find device='nope' nor node-name='nope'"),
            ('drive-mirror', {'device': 'd0', 'target': src_img + '.x', 'sync': 'full'},
             'mode=existing'),
            ('block-job-cancel', {'device': 'nope'}, "Block job 'nope' not found"),
            ('blockdev-mirror', {'device': 'd0', 'target': 't1', 'sync': 'full',
                                 'replaces': 'nope'}, "Node name 'nope' not found"),
            ('blockdev-mirror', {'device': 'd0', 'target': 't1', 'sync': 'full',
                                 'replaces': 't1'},
             "Cannot replace 't1' by a node mirrored from"),
            ('drive-mirror', {'device': 'd0', 'target': src_img + '.x', 'sync': 'full',
                              'format': 'raw', 'mode': 'existing', 'replaces': 't1'},
             'a node-name must be provided when replacing a named node'),
        ]
        vm.qmp.cmd('blockdev-add', **{'driver': 'raw', 'node-name': 't1',
                                      'file': {'driver': 'file',
                                               'filename': self.image('ref-t1', 64)}})
        for cmd, args, want in cases:
            with self.subTest(cmd=cmd):
                r = vm.qmp.request(cmd, args)
                self.assertIn('error', r, r)
                self.assertIn(want, r['error']['desc'])
        self.assertEqual(vm.qmp.hmp('info block-jobs').strip(), 'No active jobs')


if __name__ == '__main__':
    unittest.main(verbosity=2)
