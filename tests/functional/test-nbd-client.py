#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""test-nbd-client: the nbd client row (block/nbd*.c) under a mirror, as a
storage migration's source uses it (issue 40). The source's disk is a
sparse 256 MiB raw image holding 8 MiB of data; each destination exports
an empty image of the same size.

- Our destination (nbd-server-start, nbd-server-add writable): drive-mirror
  with target nbd:unix:PATH:exportname=d0, format=raw, mode=existing, as
  libvirt without -blockdev names it; READY after copying the data only
  (the job's len), cancelled after ready; the images are identical and
  the destination holds about the data (the holes were not written).
- QEMU 7.2 as the destination: blockdev-add driver=nbd (server.type=unix,
  export) and blockdev-mirror sync=full into it; identical images.
- TLS: our destination's export with tls-creds (x509, scripts/tlscerts.py;
  skipped without certtool); blockdev-add driver=nbd without tls-creds is
  refused in the server's words, with a client's tls-creds it mirrors.
- The destination killed while the mirror copies (rate-limited): the job
  ends with BLOCK_JOB_COMPLETED carrying an error within the deadline, the
  source still answers and its image is what it was; a second mirror to a
  new destination then succeeds.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
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
from qmp import VM, QMPError  # noqa: E402
import tlscerts  # noqa: E402

QEMU72 = '/usr/bin/qemu-system-x86_64'
SIZE = 256 << 20
DATA = [(i * (32 << 20), 1 << 20) for i in range(8)]       # 8 MiB in 1 MiB runs


def base_args(binary):
    args = ['-M', 'microvm', '-nodefaults', '-no-user-config', '-display', 'none', '-S']
    if binary == QEMU:
        args += ['-enable-kvm', '-cpu', CPU, '-m', '64M', '-kernel', FIRMWARE,
                 '-append', 'mode=idle mem=16']
    return args


class NbdClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-nbd-client')
        if not shutil.which('qemu-img'):
            raise unittest.SkipTest('qemu-img (qemu-utils) is needed')
        cls.dir = tempfile.mkdtemp(prefix='test-nbd-client-')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        name = self._testMethodName
        self.src = os.path.join(self.dir, name + '-src.raw')
        self.dst = os.path.join(self.dir, name + '-dst.raw')
        self.sock = os.path.join(self.dir, name + '.sock')
        with open(self.src, 'wb') as f:
            f.truncate(SIZE)
            for off, length in DATA:
                f.seek(off)
                f.write(os.urandom(length))
        self.make_dst(self.dst)

    def make_dst(self, path):
        with open(path, 'wb') as f:
            f.truncate(SIZE)

    def start(self, binary, image, name, *extra):
        vm = VM(binary, base_args(binary) + ['-drive', 'file=%s,if=none,id=d0,format=raw' % image]
                + list(extra), name=name)
        self.addCleanup(vm.kill)
        return vm

    def export(self, vm, sock):
        vm.qmp.cmd('nbd-server-start', addr={'type': 'unix', 'data': {'path': sock}})
        vm.qmp.cmd('nbd-server-add', device='d0', writable=True)

    def wait_event(self, vm, name):
        end = time.monotonic() + DEADLINE
        while True:
            for ev in vm.qmp.events:
                if ev['event'] == name:
                    return ev['data']
            self.assertLess(time.monotonic(), end, '%s: no %s; events %s'
                            % (vm.name, name, [e['event'] for e in vm.qmp.events]))
            vm.qmp.cmd('query-status')      # reads the events that came
            time.sleep(0.05)

    def identical(self, src, dst):
        r = subprocess.run(['qemu-img', 'compare', '-q', '-f', 'raw', '-F', 'raw', src, dst],
                           capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def mirror_to_ready(self, src_vm, job_args):
        src_vm.qmp.cmd(job_args.pop('command'), **job_args)
        ready = self.wait_event(src_vm, 'BLOCK_JOB_READY')
        # Only the data crossed: the holes read as zeroes at both ends.
        self.assertEqual(ready['len'], sum(length for _, length in DATA), ready)
        src_vm.qmp.cmd('block-job-cancel', device='m0')
        done = self.wait_event(src_vm, 'BLOCK_JOB_COMPLETED')
        self.assertNotIn('error', done, done)

    def test_to_ours_drive_mirror(self):
        dst_vm = self.start(QEMU, self.dst, 'dst', '-device', 'virtio-blk-device,drive=d0')
        self.export(dst_vm, self.sock)
        src_vm = self.start(QEMU, self.src, 'src', '-device', 'virtio-blk-device,drive=d0')
        self.mirror_to_ready(src_vm, {
            'command': 'drive-mirror', 'job-id': 'm0', 'device': 'd0',
            'target': 'nbd:unix:%s:exportname=d0' % self.sock, 'format': 'raw',
            'mode': 'existing', 'sync': 'full'})
        dst_vm.qmp.cmd('nbd-server-stop')
        self.identical(self.src, self.dst)
        self.assertLessEqual(os.stat(self.dst).st_blocks * 512, 2 * sum(n for _, n in DATA))

    @unittest.skipUnless(os.access(QEMU72, os.X_OK), 'QEMU 7.2 not installed')
    def test_to_qemu72_blockdev_mirror(self):
        dst_vm = self.start(QEMU72, self.dst, 'qemu')
        self.export(dst_vm, self.sock)
        src_vm = self.start(QEMU, self.src, 'src', '-device', 'virtio-blk-device,drive=d0')
        src_vm.qmp.cmd('blockdev-add', **{'driver': 'raw', 'node-name': 't0',
                                          'file': {'driver': 'nbd', 'export': 'd0',
                                                   'server': {'type': 'unix',
                                                              'path': self.sock}}})
        self.mirror_to_ready(src_vm, {'command': 'blockdev-mirror', 'job-id': 'm0',
                                      'device': 'd0', 'target': 't0', 'sync': 'full'})
        src_vm.qmp.cmd('blockdev-del', **{'node-name': 't0'})
        dst_vm.qmp.cmd('nbd-server-stop')
        self.identical(self.src, self.dst)

    def test_tls(self):
        if not tlscerts.certtool():
            self.skipTest('certtool is missing (Debian package gnutls-bin)')
        dirs = tlscerts.make_cert_dirs(os.path.join(self.dir, 'certs'))
        dst_vm = self.start(QEMU, self.dst, 'dst', '-object',
                            'tls-creds-x509,id=tls0,endpoint=server,dir=%s' % dirs['server'])
        dst_vm.qmp.cmd('nbd-server-start', addr={'type': 'unix', 'data': {'path': self.sock}},
                       **{'tls-creds': 'tls0'})
        dst_vm.qmp.cmd('nbd-server-add', device='d0', writable=True)
        src_vm = self.start(QEMU, self.src, 'src', '-object',
                            'tls-creds-x509,id=tls0,endpoint=client,dir=%s' % dirs['client'])
        node = {'driver': 'raw', 'node-name': 't0',
                'file': {'driver': 'nbd', 'export': 'd0',
                         'server': {'type': 'unix', 'path': self.sock}}}
        with self.assertRaises(QMPError) as e:
            src_vm.qmp.cmd('blockdev-add', **node)
        self.assertIn('TLS', str(e.exception))
        node['file']['tls-creds'] = 'tls0'
        src_vm.qmp.cmd('blockdev-add', **node)
        self.mirror_to_ready(src_vm, {'command': 'blockdev-mirror', 'job-id': 'm0',
                                      'device': 'd0', 'target': 't0', 'sync': 'full'})
        src_vm.qmp.cmd('blockdev-del', **{'node-name': 't0'})
        dst_vm.qmp.cmd('nbd-server-stop')
        self.identical(self.src, self.dst)

    def test_bad_server_objects(self):
        """blockdev-add driver=nbd with a server object that cannot work is
        refused with a message, creates no node, and the VM goes on."""
        src_vm = self.start(QEMU, self.src, 'src')
        missing = os.path.join(self.dir, 'nobody-listens.sock')
        bad = [
            ({'type': 'unix'}, 'path'),
            ({'type': 'carrier-pigeon', 'path': self.sock}, 'carrier-pigeon'),
            ({'type': 'inet', 'host': '127.0.0.1', 'port': 'not-a-port'}, 'not-a-port'),
            ({'type': 'unix', 'path': missing}, missing),
            ({'type': 'inet', 'host': '127.0.0.1'}, 'port'),
        ]
        for server, word in bad:
            with self.subTest(server=server):
                with self.assertRaises(QMPError) as e:
                    src_vm.qmp.cmd('blockdev-add', **{'driver': 'nbd', 'node-name': 't0',
                                                      'export': 'd0', 'server': server})
                self.assertIn(word, str(e.exception))
                names = [n['node-name'] for n in src_vm.qmp.cmd('query-named-block-nodes')]
                self.assertNotIn('t0', names)
        self.assertEqual(src_vm.qmp.cmd('query-status')['status'], 'prelaunch')

    def test_destination_of_another_size(self):
        """A destination export smaller or larger than the source disk: the
        mirror is refused before it writes anything."""
        for size in (SIZE // 2, SIZE * 2):
            with self.subTest(size=size):
                dst = os.path.join(self.dir, 'size-%d.raw' % size)
                with open(dst, 'wb') as f:
                    f.truncate(size)
                sock = self.sock + '.%d' % size
                dst_vm = self.start(QEMU, dst, 'dst-%d' % size)
                self.export(dst_vm, sock)
                src_vm = self.start(QEMU, self.src, 'src-%d' % size)
                src_vm.qmp.cmd('blockdev-add', **{'driver': 'raw', 'node-name': 't0',
                                                  'file': {'driver': 'nbd', 'export': 'd0',
                                                           'server': {'type': 'unix',
                                                                      'path': sock}}})
                with self.assertRaises(QMPError) as e:
                    src_vm.qmp.cmd('blockdev-mirror', **{'job-id': 'm0', 'device': 'd0',
                                                         'target': 't0', 'sync': 'full'})
                self.assertIn('size', str(e.exception))
                self.assertEqual(src_vm.qmp.cmd('query-block-jobs'), [])
                with self.assertRaises(QMPError):
                    src_vm.qmp.cmd('drive-mirror', **{'job-id': 'm1', 'device': 'd0',
                                                      'target': 'nbd:unix:%s:exportname=d0'
                                                      % sock, 'format': 'raw',
                                                      'mode': 'existing', 'sync': 'full'})
                self.assertEqual(os.stat(dst).st_blocks, 0)
                src_vm.kill()
                dst_vm.kill()

    def test_destination_killed(self):
        before = os.path.join(self.dir, 'before.raw')
        shutil.copyfile(self.src, before)
        dst_vm = self.start(QEMU, self.dst, 'dst')
        self.export(dst_vm, self.sock)
        src_vm = self.start(QEMU, self.src, 'src', '-device', 'virtio-blk-device,drive=d0')
        src_vm.qmp.cmd('drive-mirror', **{'job-id': 'm0', 'device': 'd0',
                                          'target': 'nbd:unix:%s:exportname=d0' % self.sock,
                                          'format': 'raw', 'mode': 'existing', 'sync': 'full',
                                          'speed': 1 << 20})
        time.sleep(0.5)
        dst_vm.kill()
        done = self.wait_event(src_vm, 'BLOCK_JOB_COMPLETED')
        self.assertIn('error', done, done)
        self.assertEqual(src_vm.qmp.cmd('query-block-jobs'), [])
        self.assertEqual(src_vm.qmp.cmd('query-status')['status'], 'prelaunch')
        self.identical(before, self.src)

        # A retry into a new destination succeeds.
        dst2 = os.path.join(self.dir, 'dst2.raw')
        self.make_dst(dst2)
        sock2 = self.sock + '.2'
        dst_vm2 = self.start(QEMU, dst2, 'dst2')
        self.export(dst_vm2, sock2)
        src_vm.qmp.events.clear()
        self.mirror_to_ready(src_vm, {
            'command': 'drive-mirror', 'job-id': 'm0', 'device': 'd0',
            'target': 'nbd:unix:%s:exportname=d0' % sock2, 'format': 'raw',
            'mode': 'existing', 'sync': 'full'})
        dst_vm2.qmp.cmd('nbd-server-stop')
        self.identical(self.src, dst2)


if __name__ == '__main__':
    unittest.main(verbosity=2)
