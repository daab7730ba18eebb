#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-qcow2-cmdline.py: qcow2 images on our binary's command line, beside QEMU 7.2.

- Refusals: images qemu-img made, each with one header field broken
  (version, cluster size, encryption, unknown feature, refcount width,
  backing name, L1 size, the corrupt bit), given to both binaries as
  `-drive file=X,if=none,id=d0`: both exit with status 1 and the same
  message. With readonly=on, the corrupt image opens in both.
- A drive of a qcow2 image with a relative raw backing name: the format
  probed, the chain opened, query-block and query-named-block-nodes say
  so as QEMU does (drv, backing_file, backing_file_depth, virtual-size).
- Locks: while one binary has the qcow2 drive, the other one refuses it
  with QEMU's message, both ways.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE.
"""

import os
import shutil
import struct
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
SIZE = 64 * 1024 * 1024

# (name, [(offset, struct format, value)]): one broken field each.
BROKEN = [
    ('version-4', [(4, '>I', 4)]),
    ('cluster-bits-22', [(20, '>I', 22)]),
    ('aes', [(32, '>I', 1)]),
    ('unknown-incompatible', [(72, '>Q', 1 << 40)]),
    ('refcount-order-7', [(96, '>I', 7)]),
    ('backing-name-too-long', [(8, '>Q', 0x200), (16, '>I', 2000)]),
    ('l1-too-small', [(36, '>I', 0)]),
    ('corrupt', [(72, '>Q', 2)]),
]


def base_args(binary):
    args = ['-M', 'microvm', '-nodefaults', '-no-user-config', '-display', 'none', '-S']
    if binary == QEMU:
        args += ['-enable-kvm', '-cpu', CPU, '-m', '64M', '-kernel', FIRMWARE,
                 '-append', 'mode=idle mem=16']
    return args


def locked(path):
    """Whether any process holds a lock on @path (from /proc/locks)."""
    st = os.stat(path)
    dev = '%02x:%02x:%d' % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    with open('/proc/locks') as f:
        return any(line.split()[-3] == dev for line in f if len(line.split()) >= 8)


@unittest.skipUnless(shutil.which('qemu-img'), 'qemu-img not installed (qemu-utils)')
class Qcow2Cmdline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-qcow2-cmdline')
        cls.dir = tempfile.mkdtemp(prefix='test-qcow2-cmdline-')
        cls.good = os.path.join(cls.dir, 'good.qcow2')
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', cls.good, str(SIZE)],
                       check=True)
        with open(os.path.join(cls.dir, 'base.raw'), 'wb') as f:
            f.write(bytes(range(256)) * 4096)
        cls.top = os.path.join(cls.dir, 'top.qcow2')
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-u', '-b', 'base.raw',
                        '-F', 'raw', 'top.qcow2', str(SIZE)], check=True, cwd=cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def broken(self, name, patches):
        path = os.path.join(self.dir, name + '.qcow2')
        with open(self.good, 'rb') as f:
            data = bytearray(f.read())
        for off, fmt, val in patches:
            struct.pack_into(fmt, data, off, val)
        with open(path, 'wb') as f:
            f.write(data)
        return path

    def start_and_stop(self, binary, drive):
        """@binary with @drive: its exit status and stderr (0 if it came up and was stopped)."""
        p = subprocess.Popen([binary] + base_args(binary) +
                             ['-drive', drive, '-qmp', 'stdio'],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            out, err = p.communicate(b'{"execute":"qmp_capabilities"}\n'
                                     b'{"execute":"quit"}\n', timeout=DEADLINE)
        finally:
            p.kill()
        return p.returncode, err.decode()

    @unittest.skipUnless(os.access(QEMU72, os.X_OK), 'QEMU 7.2 not installed')
    def test_refusals_as_qemu(self):
        for name, patches in BROKEN:
            path = self.broken(name, patches)
            drive = 'file=%s,if=none,id=d0' % path
            ours = self.start_and_stop(QEMU, drive)
            theirs = self.start_and_stop(QEMU72, drive)
            self.assertEqual(ours[0], 1, '%s: %s' % (name, ours[1]))
            self.assertEqual(theirs[0], 1, '%s: %s' % (name, theirs[1]))
            self.assertEqual(ours[1].splitlines()[0], theirs[1].splitlines()[0], name)
        # The corrupt bit only keeps writers out.
        path = self.broken('corrupt', dict(BROKEN)['corrupt'])
        for binary in (QEMU, QEMU72):
            status, err = self.start_and_stop(binary, 'file=%s,if=none,id=d0,readonly=on'
                                              % path)
            self.assertEqual(status, 0, err)

    def test_backing_chain_query(self):
        vms = [(QEMU, 'ours')]
        if os.access(QEMU72, os.X_OK):
            vms.append((QEMU72, 'qemu'))
        answers = []
        for binary, name in vms:
            vm = VM(binary, base_args(binary) + ['-drive', 'file=%s,if=none,id=d0' % self.top],
                    name=name)
            self.addCleanup(vm.kill)
            block = vm.qmp.cmd('query-block')[0]['inserted']
            nodes = vm.qmp.cmd('query-named-block-nodes')
            answers.append((block, sorted(n['drv'] for n in nodes)))
            vm.kill()
        for block, drvs in answers:
            self.assertEqual(block['drv'], 'qcow2')
            self.assertEqual(block['backing_file'], os.path.join(self.dir, 'base.raw'))
            self.assertEqual(block['backing_file_depth'], 1)
            self.assertEqual(block['image']['format'], 'qcow2')
            self.assertEqual(block['image']['virtual-size'], SIZE)
            self.assertEqual(drvs, ['file', 'file', 'qcow2', 'raw'])

    @unittest.skipUnless(os.access(QEMU72, os.X_OK), 'QEMU 7.2 not installed')
    def test_format_specific_as_qemu(self):
        """query-block's cluster-size, dirty-flag and format-specific (qcow2's
        header: compat, lazy refcounts, refcount width, compression) as QEMU
        7.2 gives them, image by image."""
        images = {'v3': [], 'v2': ['-o', 'compat=0.10'],
                  'lazy': ['-o', 'lazy_refcounts=on'],
                  'rc64': ['-o', 'refcount_bits=64,cluster_size=4096']}
        # (compression_type=zstd images are refused here: no zstd clusters.)
        for name, opts in images.items():
            path = os.path.join(self.dir, 'fs-%s.qcow2' % name)
            subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2'] + opts + [path, str(SIZE)],
                           check=True, timeout=DEADLINE)
            answers = []
            for binary in (QEMU, QEMU72):
                vm = VM(binary, base_args(binary) + ['-drive', 'file=%s,if=none,id=d0,readonly=on'
                                                     % path], name='fs-%s' % name)
                self.addCleanup(vm.kill)
                image = vm.qmp.cmd('query-block')[0]['inserted']['image']
                answers.append({k: image.get(k) for k in ('cluster-size', 'dirty-flag',
                                                           'format-specific')})
                vm.kill()
            self.assertIsNotNone(answers[1]['format-specific'], name)
            self.assertEqual(answers[0], answers[1], name)

    def test_blockdev_backing_as_libvirt_gives_it(self):
        """libvirt's -blockdev names the backing node itself, or null for none: the
        header's backing name is then not opened (QEMU 7.2 answers alike)."""
        storage = '{"driver":"file","filename":"%s","node-name":"s0"}'
        base = ('{"driver":"file","filename":"%s","node-name":"b0"}'
                % os.path.join(self.dir, 'base.raw'))
        cases = [
            # (the -blockdev arguments, the node names query-named-block-nodes lists)
            ([storage % self.top,
              '{"driver":"qcow2","node-name":"f0","file":"s0","backing":null}'],
             ['f0', 's0']),
            ([base, '{"driver":"raw","node-name":"r0","file":"b0"}', storage % self.top,
              '{"driver":"qcow2","node-name":"f0","file":"s0","backing":"r0"}'],
             ['b0', 'f0', 'r0', 's0']),
        ]
        binaries = [QEMU] + ([QEMU72] if os.access(QEMU72, os.X_OK) else [])
        for args, names in cases:
            for binary in binaries:
                extra = []
                for a in args:
                    extra += ['-blockdev', a]
                vm = VM(binary, base_args(binary) + extra, name='bd')
                self.addCleanup(vm.kill)
                nodes = vm.qmp.cmd('query-named-block-nodes')
                self.assertEqual(sorted(n['node-name'] for n in nodes), names, binary)
                top = [n for n in nodes if n['node-name'] == 'f0'][0]
                self.assertEqual(top['backing_file_depth'], 0 if len(names) == 2 else 1,
                                 (binary, top))
                vm.kill()
        out = subprocess.run([QEMU] + base_args(QEMU) + [
            '-blockdev', storage % self.top,
            '-blockdev', '{"driver":"qcow2","node-name":"f0","file":"s0","backing":"nope"}'],
            capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("Could not open backing file: Cannot find device='nope' nor "
                      "node-name='nope'", out.stderr)

    @unittest.skipUnless(os.access(QEMU72, os.X_OK), 'QEMU 7.2 not installed')
    def test_locks_against_qemu(self):
        drive = 'file=%s,if=none,id=d0' % self.good
        for holder, other in ((QEMU, QEMU72), (QEMU72, QEMU)):
            vm = VM(holder, base_args(holder) + ['-drive', drive], name='holder')
            self.addCleanup(vm.kill)
            vm.qmp.cmd('query-status')
            status, err = self.start_and_stop(other, drive)
            self.assertEqual(status, 1, err)
            self.assertIn('Failed to get "write" lock', err)
            self.assertIn('Is another process using the image [%s]?' % self.good, err)
            vm.kill()
            deadline = time.monotonic() + DEADLINE
            while locked(self.good) and time.monotonic() < deadline:
                time.sleep(0.05)


if __name__ == '__main__':
    unittest.main()
