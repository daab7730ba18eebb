#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-live-update.py: live update with cpr-transfer (issue 38), as QEMU
10.0's CPR documentation spells it: the new process starts with -incoming
given twice (a JSON cpr channel on a unix socket, and the main channel),
waits for the old one's memory, and the old one's migrate (mode
cpr-transfer, channels main and cpr) hands it over. A running verify guest
in a shared memfd (aux-ram-share=on for the devices' RAM) must go on in
the new process with no FAIL, its RAM never copied (no dirty sync, a few
KiB of stream); the old process can then neither run, reset nor migrate
it, and may quit. Every failure gives the guest back to the old process,
untouched: a new process that refuses the memory (another size) or the
state (other devices), one that never hangs up (migrate_cancel), and the
refusals in QEMU's words. A hostile cpr state makes the new process exit
with a clear error. The wire is checked too: the fds cross beside the
state, one per RAM block.

cpr-exec (QEMU 10.2's spelling, from QMP and HMP): the same process
executes cpr-exec-command, keeps its PID and the guest's memory, and its
QMP socket comes back at the same path; a binary that is missing or
refuses its options is found before the guest stops; a new binary that
fails after the exec (another size, other devices) executes the old one
again, which takes the guest back.

A guest behind -netdev user with hostfwd rules (udp and tcp) keeps
answering a host client's datagrams across either update and after the
old process quits: the bound sockets cross with the memory.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import array
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU  # noqa: E402
from analyzevm import QMP, VM  # noqa: E402
from guestcase import GuestCase  # noqa: E402

MEM_MB = 128
APPEND = 'mode=verify mem=32'


def memfd_args(mem_mb=MEM_MB, aux=True, vga=False):
    machine = 'microvm,memory-backend=ram0' + (',aux-ram-share=on' if aux else '')
    return (['-M', machine, '-object',
             'memory-backend-memfd,id=ram0,size=%dM,share=on' % mem_mb] +
            (['-device', 'isa-vga'] if vga else []))


def unix_addr(path):
    return {'transport': 'socket', 'type': 'unix', 'path': path}


class CprCase(GuestCase):
    NAME = 'test-live-update'
    TMP_PREFIX = 'qemu-mig-cpr-'

    def setUp(self):
        super().setUp()
        self.n = len(os.listdir(self.tmp))
        self.cpr_sock = os.path.join(self.tmp, 'cpr%d.sock' % self.n)
        self.main_sock = os.path.join(self.tmp, 'main%d.sock' % self.n)

    def vm(self, name, extra, mem_mb=MEM_MB, connect=True, append=APPEND):
        return self.keep(VM(self.tmp, '%s%d-%d' % (name, self.n, len(self.vms)),
                            machine='microvm', mem_mb=mem_mb, append=append, extra=extra,
                            connect=connect), name)

    def source(self, **kw):
        src = self.vm('src', memfd_args(**kw))
        self.wait_passes(src, 2)
        src.qmp.cmd('migrate-set-parameters', mode='cpr-transfer')
        return src

    def new_process(self, mem_mb=MEM_MB, **kw):
        """Started as QEMU's documentation shows; its QMP comes up only after the handover."""
        cpr = {'channel-type': 'cpr', 'addr': unix_addr(self.cpr_sock)}
        extra = memfd_args(mem_mb=mem_mb, **kw) + ['-incoming', json.dumps(cpr),
                                                   '-incoming', 'unix:' + self.main_sock]
        dst = self.vm('dst', extra, mem_mb=mem_mb, connect=False)
        self.wait_path(dst, self.cpr_sock)
        return dst

    def channels(self):
        return [{'channel-type': 'main', 'addr': unix_addr(self.main_sock)},
                {'channel-type': 'cpr', 'addr': unix_addr(self.cpr_sock)}]

    def wait_path(self, vm, path):
        end = time.monotonic() + DEADLINE
        while not os.path.exists(path):
            self.assertLess(time.monotonic(), end, 'no %s: %s' % (path, vm.log_tail()))
            self.assertIsNone(vm.proc.poll(), '%s exited: %s' % (vm.name, vm.log_tail()))
            time.sleep(self.POLL)

    def wait_exit(self, vm):
        try:
            return vm.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.fail('%s did not exit: %s' % (vm.name, vm.log_tail()))

    def assert_guest_back(self, src, info):
        """A failed update: the old process runs its guest on, as before."""
        self.assertEqual(info['status'], 'failed', info)
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'running')
        self.wait_passes(src, 3)

    def update(self, src, dst):
        src.qmp.cmd('migrate', channels=self.channels())
        info = self.wait_migration(src)
        self.assertEqual(info['status'], 'completed', '%s; new process: %s'
                         % (info, dst.log_tail()))
        dst.connect_qmp()
        self.wait_running(dst)
        return info


class TestUpdate(CprCase):
    def test_update_and_quit(self):
        """The guest goes on in the new process; its RAM was never copied."""
        src = self.source(vga=True)
        dst = self.new_process(vga=True)
        info = self.update(src, dst)
        self.wait_passes(dst, 3)
        ram = info['ram']
        self.assertEqual(ram['dirty-sync-count'], 0, ram)
        self.assertEqual(ram['normal'], 0, ram)
        self.assertLess(ram['transferred'], 256 * 1024, ram)
        # The old process holds the guest's memory, but the guest is not its own.
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'postmigrate')
        for cmd, args in (('cont', {}), ('system_reset', {}),
                          ('migrate', {'uri': 'exec:cat > /dev/null'})):
            self.refused(src, cmd, 'The guest runs in the new process now', **args)
        src.shutdown()
        self.wait_passes(dst, 3)
        self.assert_clock_went_on(dst)

    def assert_clock_went_on(self, vm):
        """The guest times each pass by its TSC: across the update no pass took
        longer than the whole test could have (a TSC that jumped or went back
        reads as an absurd pass)."""
        us = [int(u) for u in re.findall(r'PASS n=\d+ ms=\d+ us=(\d+)', vm.serial_text())]
        self.assertTrue(us)
        self.assertLess(max(us), DEADLINE * 1e6, 'a pass of %d us' % max(us))

    def test_defer_and_the_same_qmp_path(self):
        """QEMU's order with -incoming defer: migrate on the old process first (the new
        one's monitor comes up once it has the memory), then migrate-incoming on the new
        one. The new process also serves the old one's QMP path: a client that reconnects
        there after the update finds the guest."""
        src = self.source()
        cpr = {'channel-type': 'cpr', 'addr': unix_addr(self.cpr_sock)}
        dst = self.vm('dst', memfd_args() + ['-incoming', json.dumps(cpr), '-incoming', 'defer',
                                             '-qmp', 'unix:%s,server=on,wait=off' % src.qmp_path],
                      connect=False)
        self.wait_path(dst, self.cpr_sock)
        src.qmp.cmd('migrate', channels=self.channels())
        dst.connect_qmp()
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'running')   # not yet
        dst.qmp.cmd('migrate-incoming', uri='unix:' + self.main_sock)
        self.assertEqual(self.wait_migration(src)['status'], 'completed')
        self.wait_running(dst)
        self.wait_passes(dst, 3)
        again = QMP(src.qmp_path, dst.proc)
        try:
            self.assertEqual(again.cmd('query-status')['status'], 'running')
            self.assertEqual(again.cmd('query-migrate')['status'], 'completed')
        finally:
            again.close()

    def test_hmp_mode(self):
        """migrate_set_parameter mode from HMP, as QEMU's, and info shows it."""
        src = self.vm('src', memfd_args())
        src.qmp.cmd('human-monitor-command', **{'command-line':
                                                'migrate_set_parameter mode cpr-transfer'})
        out = src.qmp.cmd('human-monitor-command',
                          **{'command-line': 'info migrate_parameters'})
        self.assertIn('mode: cpr-transfer', out)
        self.assertEqual(src.qmp.cmd('query-migrate-parameters')['mode'], 'cpr-transfer')
        self.wait_passes(src, 2)
        dst = self.new_process()
        self.update(src, dst)
        self.wait_passes(dst, 3)


class TestFailures(CprCase):
    def test_new_process_other_size(self):
        """Another -m: the new process refuses the memory and exits; the old runs on."""
        src = self.source()
        dst = self.new_process(mem_mb=MEM_MB * 2)
        src.qmp.cmd('migrate', channels=self.channels())
        self.assertNotEqual(self.wait_exit(dst), 0)
        self.assertIn("cpr: RAM block 'ram0' is %d bytes in the old process"
                      % (MEM_MB << 20), dst.log_tail())
        info = self.wait_migration(src)
        self.assertIn('the new process took the memory but does not listen on the main '
                      'channel', info.get('error-desc', ''))
        self.assert_guest_back(src, info)
        # Nothing was destroyed: a good new process takes the guest after that.
        self.cpr_sock += '.2'
        self.main_sock += '.2'
        self.update(src, self.new_process())

    def test_new_process_other_devices(self):
        """The new process lacks the old one's VGA: it refuses the state; the old runs on."""
        src = self.source(vga=True)
        dst = self.new_process(vga=False)
        src.qmp.cmd('migrate', channels=self.channels())
        info = self.wait_migration(src)
        self.assertNotEqual(self.wait_exit(dst), 0)
        self.assertIn('Unknown ramblock "vga.vram"', dst.log_tail())
        # Whichever the old process notices first: the refusal on the return path, or the hang-up.
        self.assertRegex(info.get('error-desc', ''), 'the destination (closed the connection|'
                         'failed to load)')
        self.assert_guest_back(src, info)

    def test_cancel_while_new_process_starts(self):
        """A new process that takes the fds but never hangs up: migrate_cancel gives
        the guest back. The fds cross beside the state, one per RAM block."""
        src = self.source()
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(self.cpr_sock)
        srv.listen(1)
        got = {}

        def take():
            conn, _ = srv.accept()
            fds = array.array('i')
            data, anc, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(64 * fds.itemsize))
            for level, typ, payload in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
            got['data'], got['fds'], got['conn'] = data, list(fds), conn

        t = threading.Thread(target=take)
        t.start()
        src.qmp.cmd('migrate', channels=self.channels())
        t.join(DEADLINE)
        self.assertIn('data', got)
        self.assertEqual(got['data'][:8], b'QMIGCPR1')
        count = struct.unpack('>I', got['data'][12:16])[0]
        self.assertEqual(len(got['fds']), count)
        self.assertGreaterEqual(count, 1)
        for fd in got['fds']:
            self.assertTrue(os.readlink('/proc/self/fd/%d' % fd).startswith('/memfd:'))
            os.close(fd)
        time.sleep(0.3)
        self.assertEqual(src.qmp.cmd('query-migrate')['status'], 'setup')
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'running')
        src.qmp.cmd('migrate_cancel')
        info = self.wait_migration(src)
        self.assertEqual(info['status'], 'cancelled', info)
        self.wait_passes(src, 3)
        got['conn'].close()
        srv.close()

    def test_refusals(self):
        """QEMU's words; the guest runs on after each."""
        src = self.vm('src', memfd_args(aux=False))
        self.wait_passes(src, 1)
        self.refused(src, 'migrate', "a 'cpr' channel is for migrate-set-parameters mode "
                     "cpr-transfer", channels=self.channels())
        src.qmp.cmd('migrate-set-parameters', mode='cpr-transfer')
        self.refused(src, 'migrate', "missing 'cpr' migration channel",
                     uri='unix:' + self.main_sock)
        tcp = {'transport': 'socket', 'type': 'inet', 'host': '127.0.0.1', 'port': '1'}
        self.refused(src, 'migrate', 'bad cpr channel address; must be unix',
                     channels=[self.channels()[0], {'channel-type': 'cpr', 'addr': tcp}])
        self.refused(src, 'migrate', 'is not compatible with CPR. share=on is required for '
                     'memory-backend objects, and aux-ram-share=on is required.',
                     channels=self.channels())
        for cap, what in (('postcopy-ram', 'postcopy'), ('multifd', 'multifd'),
                          ('background-snapshot', 'background snapshot')):
            src.qmp.cmd('migrate-set-capabilities',
                        capabilities=[{'capability': cap, 'state': True}])
            self.refused(src, 'migrate', 'Cannot use %s with CPR' % what,
                         channels=self.channels())
            src.qmp.cmd('migrate-set-capabilities',
                        capabilities=[{'capability': cap, 'state': False}])
        # No shared memory at all: -m alone.
        plain = self.vm('plain', [])
        plain.qmp.cmd('migrate-set-parameters', mode='cpr-transfer')
        self.refused(plain, 'migrate', 'is not compatible with CPR', channels=self.channels())
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'running')
        self.wait_passes(src, 2)


class TestHostileState(CprCase):
    def feed(self, payload, fds=()):
        """A fake old process that sends @payload (and @fds) to a new process."""
        dst = self.new_process()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.cpr_sock)
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', fds))] if fds else []
        s.sendmsg([payload], anc)
        s.close()
        status = self.wait_exit(dst)
        self.assertEqual(status, 1, dst.log_tail())     # an error, not a signal
        return dst.log_tail()

    def test_bad_magic(self):
        self.assertIn('cpr state: not a cpr state (bad magic)', self.feed(b'X' * 64))

    def test_truncated(self):
        self.assertIn('closed it after 8 bytes of the cpr state', self.feed(b'QMIGCPR1'))

    def test_entries_without_fds(self):
        name = b'ram0'
        body = struct.pack('>QIH', MEM_MB << 20, 5, len(name)) + name
        hdr = b'QMIGCPR1' + struct.pack('>III', 1, 1, len(body))
        self.assertIn('cpr state: 1 entries, but 0 fds came with them', self.feed(hdr + body))

    def test_too_many_entries(self):
        hdr = b'QMIGCPR1' + struct.pack('>III', 1, 1000, 0)
        self.assertIn('1000 fds, more than the 64', self.feed(hdr))

    def test_wrong_fd_kind(self):
        """A name the new process takes, with an fd of the wrong size: refused before use."""
        name = b'ram0'
        body = struct.pack('>QIH', MEM_MB << 20, 5, len(name)) + name
        hdr = b'QMIGCPR1' + struct.pack('>III', 1, 1, len(body))
        with open(os.path.join(self.tmp, 'small'), 'wb+') as f:
            f.truncate(4096)
            log = self.feed(hdr + body, fds=[f.fileno()])
        self.assertIn("cpr: RAM block 'ram0' is 4096 bytes in the old process", log)


class TestExec(CprCase):
    def exec_vm(self, vga=False, append=APPEND):
        vm = self.vm('exec', memfd_args(vga=vga), append=append)
        self.wait_passes(vm, 2)
        self.state = os.path.join(self.tmp, 'state%d' % self.n)
        return vm

    def new_argv(self, vm, replace=None):
        """The same command line, with -incoming of the state file (and @replace applied)."""
        args = list(vm.args)
        for old, new in (replace or {}).items():
            args = [new if a == old else a for a in args if not (a == old and new is None)]
        return args + ['-incoming', 'file:' + self.state]

    def reconnect(self, vm):
        """The exec closed the QMP socket; the image that runs the guest listens on the same
        path (a new image that fails closes it again before it executes the old binary)."""
        vm.qmp.close()
        vm.qmp = None
        end = time.monotonic() + DEADLINE
        while True:
            self.assertLess(time.monotonic(), end, vm.log_tail())
            self.assertIsNone(vm.proc.poll(), vm.log_tail())   # the same process throughout
            try:
                vm.qmp = QMP(vm.qmp_path, vm.proc)
                if vm.qmp.cmd('query-migrate').get('status') == 'completed' and \
                        vm.qmp.cmd('query-status')['status'] == 'running':
                    return
            except Exception:       # the image went away under us: the next one listens soon
                pass
            if vm.qmp is not None:
                vm.qmp.close()
                vm.qmp = None
            time.sleep(0.05)

    def exec_update(self, vm, argv):
        before = vm.serial_text().count('PASS')
        vm.qmp.cmd('migrate-set-parameters', mode='cpr-exec', **{'cpr-exec-command': argv})
        vm.qmp.cmd('migrate', uri='file:' + self.state)
        self.reconnect(vm)
        self.wait_passes(vm, 3)
        # One console: the new image appended to what the old one wrote.
        self.assertGreater(vm.serial_text().count('PASS'), before)
        self.assertTrue(vm.serial_text().startswith('READY'), vm.serial_text()[:200])

    def test_exec_update(self):
        """QMP: the process becomes the new binary, the guest runs on in the same memory."""
        vm = self.exec_vm(vga=True)
        self.exec_update(vm, self.new_argv(vm))
        self.assertEqual(vm.qmp.cmd('query-migrate')['status'], 'completed')
        TestUpdate.assert_clock_went_on(self, vm)
        # And once more: the updated process updates again.
        self.exec_update(vm, self.new_argv(vm))

    def test_exec_hmp(self):
        """HMP, as QEMU 10.2's documentation: migrate_set_parameter, migrate -d file:."""
        vm = self.exec_vm(append='mode=verify')
        hmp = lambda line: vm.qmp.cmd('human-monitor-command', **{'command-line': line})
        hmp('migrate_set_parameter mode cpr-exec')
        hmp('migrate_set_parameter cpr-exec-command ' + ' '.join(self.new_argv(vm)))
        self.assertIn('cpr-exec-command: ' + ' '.join(self.new_argv(vm)),
                      hmp('info migrate_parameters'))
        hmp('migrate -d file:' + self.state)
        self.reconnect(vm)
        self.wait_passes(vm, 3)

    def assert_not_executed(self, vm, text):
        info = self.wait_migration(vm)
        self.assertEqual(info['status'], 'failed', info)
        self.assertIn(text, info.get('error-desc', ''))
        self.assertEqual(vm.qmp.cmd('query-status')['status'], 'running')
        self.wait_passes(vm, 3)

    def test_exec_missing_binary(self):
        vm = self.exec_vm()
        vm.qmp.cmd('migrate-set-parameters', mode='cpr-exec',
                   **{'cpr-exec-command': ['/nonexistent/qemu-system-x86_64']})
        vm.qmp.cmd('migrate', uri='file:' + self.state)
        self.assert_not_executed(vm, "cpr-exec: cannot execute '/nonexistent/qemu-system-x86_64'")

    def test_exec_bad_options(self):
        vm = self.exec_vm()
        vm.qmp.cmd('migrate-set-parameters', mode='cpr-exec',
                   **{'cpr-exec-command': self.new_argv(vm) + ['-bogus-option']})
        vm.qmp.cmd('migrate', uri='file:' + self.state)
        self.assert_not_executed(vm, 'refused to start (exit status 1)')
        self.assertFalse(os.path.exists(self.state))     # nothing stopped, nothing written

    def rolled_back(self, vm, argv):
        vm.qmp.cmd('migrate-set-parameters', mode='cpr-exec', **{'cpr-exec-command': argv})
        vm.qmp.cmd('migrate', uri='file:' + self.state)
        self.reconnect(vm)
        self.wait_passes(vm, 3)
        self.assertIn('the old binary takes the guest back', vm.log_tail())

    def test_exec_rollback_other_size(self):
        """The new binary refuses the memory after the exec: the old one takes the guest back."""
        vm = self.exec_vm()
        self.rolled_back(vm, self.new_argv(vm, {
            'memory-backend-memfd,id=ram0,size=%dM,share=on' % MEM_MB:
            'memory-backend-memfd,id=ram0,size=%dM,share=on' % (MEM_MB * 2),
            '%dM' % MEM_MB: '%dM' % (MEM_MB * 2)}))
        self.assertIn("cpr: RAM block 'ram0' is", vm.log_tail())
        # The process it became can update again, to a good binary this time.
        self.exec_update(vm, self.new_argv(vm))

    def test_exec_rollback_other_devices(self):
        """The new binary lacks the VGA and refuses the state: the old one takes it back."""
        vm = self.exec_vm(vga=True)
        self.rolled_back(vm, self.new_argv(vm, {'-device': None, 'isa-vga': None}))
        self.assertIn('Unknown ramblock "vga.vram"', vm.log_tail())

    def test_exec_refusals(self):
        vm = self.exec_vm()
        vm.qmp.cmd('migrate-set-parameters', mode='cpr-exec')
        self.refused(vm, 'migrate', 'cpr-exec: set the cpr-exec-command parameter first',
                     uri='file:' + self.state)
        vm.qmp.cmd('migrate-set-parameters', **{'cpr-exec-command': self.new_argv(vm)})
        self.refused(vm, 'migrate', 'cpr-exec: the main channel must be a file',
                     uri='unix:' + self.main_sock)
        self.refused(vm, 'migrate', "a 'cpr' channel is for migrate-set-parameters mode "
                     "cpr-transfer", channels=self.channels())
        self.refused(vm, 'migrate-set-parameters', "'mode'", mode='cpr-bogus')
        out = vm.qmp.cmd('human-monitor-command',
                         **{'command-line': 'migrate_set_parameter mode cpr-bogus'})
        self.assertIn("Parameter 'mode' does not accept value 'cpr-bogus'", out)
        self.assertEqual(vm.qmp.cmd('query-migrate-parameters')['mode'], 'cpr-exec')
        self.wait_passes(vm, 2)

    def start_fails(self, args, env=None, pass_fds=()):
        """@args on our binary: it must exit 1 (a clear error, not a signal); its stderr."""
        full = [QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU, '-nodefaults',
                '-display', 'none', '-kernel', FIRMWARE] + args
        out = subprocess.run(full, capture_output=True, text=True, timeout=DEADLINE,
                             env=dict(os.environ, **(env or {})), pass_fds=pass_fds)
        self.assertEqual(out.returncode, 1, out.stderr)
        return out.stderr

    def test_bad_startup_input(self):
        """aux-ram-share takes on/off; a cpr-exec state variable that names no fd, or
        an fd that holds no cpr state, ends the start with a clear error."""
        self.assertIn('aux-ram-share', self.start_fails(['-M', 'microvm,aux-ram-share=maybe']))
        self.assertIn('QEMU_MIG_CPR_EXEC_STATE=junk names no inherited fd', self.start_fails(
            ['-incoming', 'defer'], env={'QEMU_MIG_CPR_EXEC_STATE': 'junk'}))
        fd = os.memfd_create('not-a-cpr-state', 0)
        try:
            os.write(fd, b'junk' * 8)
            self.assertIn('cpr state: not a cpr state (bad magic)', self.start_fails(
                ['-incoming', 'defer'], env={'QEMU_MIG_CPR_EXEC_STATE': str(fd)},
                pass_fds=(fd,)))
        finally:
            os.close(fd)


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class EchoClient:
    """Sends a datagram every 20 ms to the guest's hostfwd port and counts the echoes."""

    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(0.02)
        self.port, self.count, self.stopping = port, 0, False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        i = 0
        while not self.stopping:
            self.sock.sendto(b'seq=%d' % i, ('127.0.0.1', self.port))
            i += 1
            try:
                if self.sock.recv(2048):
                    self.count += 1
            except socket.timeout:
                pass

    def wait_more(self, test, n):
        start, end = self.count, time.monotonic() + DEADLINE
        while self.count < start + n:
            test.assertLess(time.monotonic(), end, 'no echoes: %d then %d' % (start, self.count))
            time.sleep(0.02)

    def stop(self):
        self.stopping = True
        self.thread.join()
        self.sock.close()


class TestNet(CprCase):
    def setUp(self):
        super().setUp()
        self.udp, self.tcp = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
        self.client = None

    def tearDown(self):
        if self.client:
            self.client.stop()
        super().tearDown()

    def net_args(self):
        return memfd_args() + ['-netdev', 'user,id=n0,hostfwd=udp:127.0.0.1:%d-:7,'
                               'hostfwd=tcp:127.0.0.1:%d-:22' % (self.udp, self.tcp),
                               '-device', 'virtio-net-device,netdev=n0']

    def net_vm(self, name, extra, connect=True):
        return self.vm(name, extra, connect=connect, append='mode=udpecho port=7')

    def tcp_port_answers(self):
        with socket.create_connection(('127.0.0.1', self.tcp), timeout=5):
            return True

    def test_transfer_keeps_hostfwd(self):
        src = self.net_vm('src', self.net_args())
        self.client = EchoClient(self.udp)
        self.client.wait_more(self, 10)
        src.qmp.cmd('migrate-set-parameters', mode='cpr-transfer')
        cpr = {'channel-type': 'cpr', 'addr': unix_addr(self.cpr_sock)}
        dst = self.net_vm('dst', self.net_args() + ['-incoming', json.dumps(cpr), '-incoming',
                                                    'unix:' + self.main_sock], connect=False)
        self.wait_path(dst, self.cpr_sock)
        self.update(src, dst)
        self.client.wait_more(self, 20)
        src.shutdown()
        self.client.wait_more(self, 20)
        self.assertTrue(self.tcp_port_answers())
        self.assertNotIn('FAIL', dst.serial_text())

    def test_exec_keeps_hostfwd(self):
        vm = self.net_vm('exec', self.net_args())
        self.client = EchoClient(self.udp)
        self.client.wait_more(self, 10)
        state = os.path.join(self.tmp, 'net-state%d' % self.n)
        vm.qmp.cmd('migrate-set-parameters', mode='cpr-exec',
                   **{'cpr-exec-command': vm.args + ['-incoming', 'file:' + state]})
        vm.qmp.cmd('migrate', uri='file:' + state)
        TestExec.reconnect(self, vm)
        self.client.wait_more(self, 20)
        self.assertTrue(self.tcp_port_answers())
        self.assertNotIn('FAIL', vm.serial_text())


if __name__ == '__main__':
    unittest.main(verbosity=2)
