#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-nbd-server.py: the NBD server (nbd/) driven by QMP and used by
QEMU's own clients (qemu-img, qemu-io from qemu-utils) and by a small
client written here for what those never send.

- An -incoming destination's drive exported writable over a unix socket
  (nbd-server-add) and over TCP (block-export-add on a -blockdev node):
  qemu-img info sees its size; qemu-io writes a pattern and reads it
  back; qemu-img map reports the holes of the sparse image (base:allocation
  block status) and the data just written; qemu-img compare finds the
  export and the image file identical; a qcow2 node's unallocated
  clusters are holes too.
- qemu-img convert with 16 requests in flight, out of order, into the
  export: the export and the image file equal the source.
- With tls-creds, a client without TLS is refused and qemu-io with the
  CA's client certificate writes and reads (certificates from
  scripts/tlscerts.py; skipped without certtool).
- A wrong export name is qemu-img's error; a read-only export refuses a
  write.
- Hostile clients: garbage instead of options, a request with a bad
  magic, a write past the end, a read of 64 MiB, an unknown command: the
  server answers an error or drops that client, the VM lives on and
  query-block-exports still answers; a well-behaved client still works.
- nbd-server-remove refuses (mode safe) an export in use and cuts its
  client off (mode hard); nbd-server-stop closes every client and a new
  server starts on the same socket.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU, SRC_DIR  # noqa: E402
from analyzevm import free_port, skip_class_without_kvm  # noqa: E402

sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
from qmp import VM, QMPError  # noqa: E402
import tlscerts  # noqa: E402

IMG_SIZE = 64 * 1024 * 1024
OPTS_MAGIC = 0x49484156454f5054
REP_MAGIC = 0x0003e889045565a9
REQ_MAGIC = 0x25609513
SIMPLE_MAGIC = 0x67446698
STRUCT_MAGIC = 0x668e33ef
EINVAL, ENOSPC, EPERM = 22, 28, 1


def qmp(vm, command, **args):
    """A command whose arguments include 'name' (which QMP.cmd takes for itself)."""
    reply = vm.qmp.request(command, args)
    if 'error' in reply:
        raise QMPError(command, reply['error'])
    return reply.get('return')


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=DEADLINE)


class Client:
    """A bare NBD client: the handshake by NBD_OPT_GO, then raw requests."""

    def __init__(self, path, name='d0', structured=False):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(DEADLINE)
        self.s.connect(path)
        hello = self.recv(18)
        assert hello[:16] == b'NBDMAGICIHAVEOPT', hello
        self.s.sendall(struct.pack('>I', 3))
        if structured:
            self.option(8)
            assert self.reply()[0] == 1
        n = name.encode()
        self.option(7, struct.pack('>I', len(n)) + n + struct.pack('>H', 0))
        while True:
            typ, data = self.reply()
            if typ == 3 and struct.unpack('>H', data[:2])[0] == 0:
                self.size = struct.unpack('>Q', data[2:10])[0]
            if typ != 3:
                assert typ == 1, 'GO refused: %#x %r' % (typ, data)
                break

    def recv(self, n):
        buf = b''
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError('server closed after %d of %d bytes' % (len(buf), n))
            buf += chunk
        return buf

    def option(self, opt, payload=b''):
        self.s.sendall(struct.pack('>QII', OPTS_MAGIC, opt, len(payload)) + payload)

    def reply(self):
        magic, _, typ, length = struct.unpack('>QIII', self.recv(20))
        assert magic == REP_MAGIC
        return typ, self.recv(length)

    def request(self, typ, offset=0, length=0, flags=0, payload=b'', magic=REQ_MAGIC):
        self.s.sendall(struct.pack('>IHHQQI', magic, flags, typ, 7, offset, length) + payload)

    def simple_reply(self):
        magic, err, cookie = struct.unpack('>IIQ', self.recv(16))
        assert magic == SIMPLE_MAGIC and cookie == 7, (hex(magic), cookie)
        return err

    def closed(self):
        """Whether the server closed the connection (EOF within the deadline)."""
        try:
            return self.s.recv(1) == b''
        except ConnectionResetError:
            return True

    def close(self):
        self.s.close()


class NbdServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-nbd-server')
        if not shutil.which('qemu-img') or not shutil.which('qemu-io'):
            raise unittest.SkipTest('qemu-img and qemu-io (qemu-utils) are needed')
        cls.dir = tempfile.mkdtemp(prefix='test-nbd-server-')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.img = os.path.join(self.dir, '%s.img' % self._testMethodName)
        with open(self.img, 'wb') as f:
            f.truncate(IMG_SIZE)
        self.sock = os.path.join(self.dir, '%s.sock' % self._testMethodName)

    def start(self, *extra):
        args = ['-M', 'microvm', '-nodefaults', '-no-user-config', '-display', 'none', '-S',
                '-enable-kvm', '-cpu', CPU, '-m', '64M', '-kernel', FIRMWARE,
                '-append', 'mode=idle mem=16'] + list(extra)
        vm = VM(QEMU, args, name='nbd')
        self.addCleanup(vm.kill)
        return vm

    def start_unix(self, *extra, writable=True):
        vm = self.start('-drive', 'file=%s,if=none,id=d0,format=raw' % self.img, *extra)
        vm.qmp.cmd('nbd-server-start', addr={'type': 'unix', 'data': {'path': self.sock}})
        vm.qmp.cmd('nbd-server-add', device='d0', writable=writable)
        return vm, 'nbd+unix:///d0?socket=%s' % self.sock

    def check_ok(self, p):
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn('failed', p.stdout + p.stderr)

    def test_incoming_unix(self):
        """Write, read, map and compare through an -incoming destination's export."""
        # The destination's disk has its device too, as libvirt starts it.
        vm, url = self.start_unix('-device', 'virtio-blk-device,drive=d0', '-incoming', 'defer')
        info = json.loads(run('qemu-img', 'info', '--output=json', url).stdout)
        self.assertEqual(info['virtual-size'], IMG_SIZE)
        self.check_ok(run('qemu-io', '-f', 'raw', url, '-c', 'write -P 0xab 0 64k',
                          '-c', 'read -P 0xab 0 64k', '-c', 'write -z 1M 1M',
                          '-c', 'write -f -P 0xcd 8M 4k', '-c', 'discard 16M 64k',
                          '-c', 'flush'))
        m = json.loads(run('qemu-img', 'map', '--output=json', '-f', 'raw', url).stdout)
        self.assertTrue(any(e['start'] == 0 and e['data'] for e in m), m)
        self.assertTrue(any(e['start'] <= 8 << 20 < e['start'] + e['length'] and e['data']
                            for e in m), m)
        holes = [e for e in m if not e['data'] and e['zero']]
        self.assertGreater(sum(e['length'] for e in holes), IMG_SIZE // 2, m)
        p = run('qemu-img', 'compare', '-U', '-f', 'raw', '-F', 'raw', self.img, url)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(self.img, 'rb') as f:
            self.assertEqual(f.read(65536), b'\xab' * 65536)
        self.assertEqual(vm.qmp.cmd('query-block-exports'),
                         [{'id': 'd0', 'type': 'nbd', 'node-name': vm.qmp.cmd(
                             'query-block')[0]['inserted']['node-name'],
                           'shutting-down': False}])
        # The export's backend is not a drive of its own; the device keeps the drive.
        blocks = vm.qmp.cmd('query-block')
        self.assertEqual(len(blocks), 1)
        self.assertIn('virtio', blocks[0]['qdev'])

    def test_parallel_convert(self):
        """qemu-img convert with 16 requests in flight, out of order: every byte lands."""
        src = os.path.join(self.dir, 'src.img')
        with open(src, 'wb') as f:
            f.truncate(IMG_SIZE)
            for i in range(0, IMG_SIZE - (2 << 20), 3 << 20):
                f.seek(i)
                f.write(os.urandom(1 << 20) + bytes(64 << 10) + os.urandom(300 << 10))
        vm, url = self.start_unix('-incoming', 'defer')
        p = run('qemu-img', 'convert', '-n', '-W', '-m', '16', '-f', 'raw', '-O', 'raw',
                src, url)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = run('qemu-img', 'compare', '-f', 'raw', '-F', 'raw', src, url)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        vm.qmp.cmd('nbd-server-stop')
        p = run('qemu-img', 'compare', '-U', '-f', 'raw', '-F', 'raw', src, self.img)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_tcp_block_export_add_qcow2(self):
        """block-export-add of a qcow2 -blockdev node over TCP; holes from its L2 tables."""
        qcow = os.path.join(self.dir, 'b.qcow2')
        p = run('qemu-img', 'create', '-q', '-f', 'qcow2', qcow, '64M')
        self.assertEqual(p.returncode, 0, p.stderr)
        port = free_port()
        vm = self.start('-blockdev', 'driver=qcow2,node-name=n0,file.driver=file,'
                        'file.filename=%s' % qcow, '-incoming', 'defer')
        vm.qmp.cmd('nbd-server-start', addr={'type': 'inet', 'data': {
            'host': '127.0.0.1', 'port': str(port)}}, **{'max-connections': 4})
        qmp(vm, 'block-export-add', type='nbd', id='e0', writable=True, name='disk',
            **{'node-name': 'n0'})
        url = 'nbd://127.0.0.1:%d/disk' % port
        self.check_ok(run('qemu-io', '-f', 'raw', url, '-c', 'write -P 0x5a 1M 128k',
                          '-c', 'read -P 0x5a 1M 128k', '-c', 'read -P 0 0 1M'))
        m = json.loads(run('qemu-img', 'map', '--output=json', '-f', 'raw', url).stdout)
        data = [(e['start'], e['length']) for e in m if e['data']]
        self.assertEqual(data, [(1 << 20, 128 << 10)], m)
        with self.assertRaises(QMPError) as e:
            qmp(vm, 'block-export-add', type='nbd', id='e0', name='x', **{'node-name': 'n0'})
        self.assertIn("'e0' is already in use", str(e.exception))
        with self.assertRaises(QMPError) as e:
            qmp(vm, 'block-export-add', type='nbd', id='e1', **{'node-name': 'nope'})
        self.assertIn("Cannot find device='nope' nor node-name='nope'", str(e.exception))
        # qemu-io has gone, but its connection's thread may still be ending: safe mode waits.
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                vm.qmp.cmd('block-export-del', id='e0')
                break
            except QMPError as e:
                if 'still in use' not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.assertEqual(vm.qmp.cmd('query-block-exports'), [])
        vm.qmp.cmd('nbd-server-stop')
        vm.qmp.cmd('quit')
        vm.proc.wait(timeout=DEADLINE)
        p = run('qemu-img', 'check', qcow)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = run('qemu-io', '-f', 'qcow2', '-c', 'read -P 0x5a 1M 128k', qcow)
        self.check_ok(p)

    def test_tls(self):
        """tls-creds: a client without TLS is refused, qemu-io with the CA's client works."""
        if not tlscerts.certtool():
            self.skipTest('certtool is missing (Debian package gnutls-bin)')
        dirs = tlscerts.make_cert_dirs(os.path.join(self.dir, 'certs'))
        port = free_port()
        vm = self.start('-drive', 'file=%s,if=none,id=d0,format=raw' % self.img,
                        '-object', 'tls-creds-x509,id=tls0,endpoint=server,dir=%s'
                        % dirs['server'])
        with self.assertRaises(QMPError) as e:
            vm.qmp.cmd('nbd-server-start', addr={'type': 'inet', 'data': {
                'host': '127.0.0.1', 'port': str(port)}}, **{'tls-creds': 'nope'})
        vm.qmp.cmd('nbd-server-start', addr={'type': 'inet', 'data': {
            'host': '127.0.0.1', 'port': str(port)}}, **{'tls-creds': 'tls0'})
        vm.qmp.cmd('nbd-server-add', device='d0', writable=True)
        p = run('qemu-img', 'info', 'nbd://127.0.0.1:%d/d0' % port)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('TLS', p.stderr)
        opts = ('driver=raw,file.driver=nbd,file.server.type=inet,file.server.host=127.0.0.1,'
                'file.server.port=%d,file.export=d0,file.tls-creds=tls0' % port)
        obj = 'tls-creds-x509,id=tls0,endpoint=client,dir=%s' % dirs['client']
        self.check_ok(run('qemu-io', '--object', obj, '--image-opts', opts,
                          '-c', 'write -P 0x77 0 64k', '-c', 'read -P 0x77 0 64k'))
        m = json.loads(run('qemu-img', 'map', '--output=json', '--object', obj,
                           '--image-opts', opts).stdout)
        self.assertTrue(m[0]['data'] and m[-1]['zero'], m)
        with open(self.img, 'rb') as f:
            self.assertEqual(f.read(65536), b'\x77' * 65536)

    def test_refusals(self):
        """A wrong name, a read-only export, QMP's refusals."""
        vm, url = self.start_unix(writable=False)
        p = run('qemu-img', 'info', 'nbd+unix:///nope?socket=%s' % self.sock)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('nope', p.stderr)
        p = run('qemu-io', '-f', 'raw', url, '-c', 'write 0 4k')
        self.assertIn('Permission denied', p.stdout + p.stderr)
        c = Client(self.sock)
        c.request(1, 0, 4, payload=b'abcd')
        self.assertEqual(c.simple_reply(), EPERM)
        c.close()
        with self.assertRaises(QMPError):
            vm.qmp.cmd('nbd-server-start', addr={'type': 'unix', 'data': {'path': self.sock}})
        with self.assertRaises(QMPError) as e:
            vm.qmp.cmd('nbd-server-add', device='d0')
        self.assertIn("already has export named 'd0'", str(e.exception))
        vm.qmp.cmd('nbd-server-stop')
        with self.assertRaises(QMPError) as e:
            vm.qmp.cmd('nbd-server-start', addr={'type': 'unix', 'data': {'path': 'x'}},
                       **{'tls-authz': 'authz0'})
        self.assertIn("only when 'tls-creds' is set", str(e.exception))
        with self.assertRaises(QMPError) as e:
            vm.qmp.cmd('nbd-server-add', device='d0')
        self.assertIn('NBD server not running', str(e.exception))

    def test_hostile_clients(self):
        """Garbage and malformed requests end that client or get an error, nothing more."""
        vm, url = self.start_unix()
        # Garbage where the client's flags and options belong.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(DEADLINE)
        s.connect(self.sock)
        s.recv(18)
        s.sendall(b'\x00\x00\x00\x03' + os.urandom(4096))
        try:
            self.assertEqual(s.recv(65536), b'')
        except ConnectionResetError:
            pass
        s.close()
        # Malformed requests in transmission.
        c = Client(self.sock)
        self.assertEqual(c.size, IMG_SIZE)
        c.request(1, IMG_SIZE - 2, 4, payload=b'wxyz')          # write past the end
        self.assertEqual(c.simple_reply(), ENOSPC)
        c.request(0, 0, 64 << 20)                               # read above 32 MiB
        self.assertEqual(c.simple_reply(), EINVAL)
        c.request(0, (1 << 64) - 512, 1024)                     # offset + length overflows
        self.assertEqual(c.simple_reply(), EINVAL)
        c.request(42, 0, 1)                                     # unknown command
        self.assertEqual(c.simple_reply(), EINVAL)
        c.request(1, 0, 4, flags=0x8000, payload=b'abcd')       # unknown flag
        self.assertEqual(c.simple_reply(), EINVAL)
        c.request(7, 0, 4096)                                   # block status, no context
        self.assertEqual(c.simple_reply(), EINVAL)
        c.request(0, 0, 4)                                      # still in step
        self.assertEqual(c.simple_reply(), 0)
        self.assertEqual(c.recv(4), b'\0\0\0\0')
        c.request(0, 0, 4, magic=0x12345678)                    # framing: the client goes
        self.assertTrue(c.closed())
        c.close()
        c = Client(self.sock, structured=True)
        c.request(1, 0, 64 << 20)                               # a write payload above 32 MiB
        self.assertTrue(c.closed())
        c.close()
        self.assertEqual(len(vm.qmp.cmd('query-block-exports')), 1)
        self.assertEqual(vm.qmp.cmd('query-status')['status'], 'prelaunch')
        self.check_ok(run('qemu-io', '-f', 'raw', url, '-c', 'write -P 0x11 0 4k',
                          '-c', 'read -P 0x11 0 4k'))

    def test_remove_and_stop(self):
        """Safe removal refused while in use, hard removal and stop cut clients off."""
        vm, url = self.start_unix()
        c = Client(self.sock)
        with self.assertRaises(QMPError) as e:
            qmp(vm, 'nbd-server-remove', name='d0')
        self.assertIn('still in use', str(e.exception))
        qmp(vm, 'nbd-server-remove', name='d0', mode='hard')
        self.assertTrue(c.closed())
        c.close()
        self.assertEqual(vm.qmp.cmd('query-block-exports'), [])
        with self.assertRaises(QMPError):
            vm.qmp.cmd('block-export-del', id='d0')
        vm.qmp.cmd('nbd-server-add', device='d0', writable=True)
        c = Client(self.sock)
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)     # mid-handshake
        idle.settimeout(DEADLINE)
        idle.connect(self.sock)
        self.assertEqual(idle.recv(18)[:8], b'NBDMAGIC')         # its thread runs
        vm.qmp.cmd('nbd-server-stop')
        self.assertTrue(c.closed())
        self.assertEqual(idle.recv(1), b'')
        c.close()
        idle.close()
        self.assertEqual(vm.qmp.cmd('query-block-exports'), [])
        vm.qmp.cmd('nbd-server-start', addr={'type': 'unix', 'data': {'path': self.sock}})
        qmp(vm, 'block-export-add', type='nbd', id='again', writable=True,
            **{'node-name': 'd0'})
        self.check_ok(run('qemu-io', '-f', 'raw', url, '-c', 'read -P 0 0 4k'))


if __name__ == '__main__':
    unittest.main(verbosity=2)
