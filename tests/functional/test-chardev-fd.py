#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-chardev-fd.py: chardevs on fds the parent opened, the way libvirt
starts QEMU 7.2.

libvirt opens the QMP socket and the serial log itself and passes them:
  -chardev socket,id=charmonitor,fd=N,server=on,wait=off
  -mon chardev=charmonitor,id=monitor,mode=control
  -add-fd set=0,fd=M,opaque=serial0-source
  -chardev file,id=charserial0,path=/dev/fdset/0,append=on
The binary is started with exactly that (fds passed by Popen's pass_fds):
QMP answers on the inherited listening socket, for one client after
another, and the guest's READY line lands in the log after what it held.
A connected socket without server=on is a monitor too.  append=on keeps
a file's content with and without an fd set (even when the parent did
not open the fd O_APPEND), and without it the file is truncated.
Refused with an error naming the problem: an fd that is not open, one
that is not a socket, fd= with path=, an empty set, an O_RDONLY fd in a
set opened for writing, and -add-fd of an fd that is not open.

QMP add-fd, remove-fd and query-fdsets, as libvirt uses them: the fd
passed with add-fd (SCM_RIGHTS) joins a set (a new one with the lowest
free id, or the one named), query-fdsets lists -add-fd's set and these
(highest id first, as QEMU), remove-fd closes only fds of the named set,
and a set in use by the serial chardev stays listed once emptied. QEMU's
errors: no fd with add-fd (or a negative set, the fd then closed), an
unknown set, an unknown fd.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU, SRC_DIR  # noqa: E402
from analyzevm import skip_class_without_kvm  # noqa: E402

sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
from qmp import QMP  # noqa: E402

APPEND = 'mode=idle mem=16'
OLD = b'line written before the VM started\n'


def vm_args(*extra, paused=False):
    return ([QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU, '-m', '64M',
             '-nodefaults', '-no-user-config', '-display', 'none',
             '-kernel', FIRMWARE, '-append', APPEND]
            + (['-S'] if paused else []) + list(extra))


def monitor_args(fd, server=True):
    chardev = 'socket,id=charmonitor,fd=%d' % fd
    if server:
        chardev += ',server=on,wait=off'
    return ['-chardev', chardev, '-mon', 'chardev=charmonitor,id=monitor,mode=control']


def serial_args(path, append):
    chardev = 'file,id=charserial0,path=' + path + (',append=on' if append else '')
    return ['-chardev', chardev, '-serial', 'chardev:charserial0']


def start(args, pass_fds=()):
    return subprocess.Popen(args, pass_fds=pass_fds, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop(proc):
    """SIGTERM, as libvirt stops a VM it gave up on; the stderr seen."""
    if proc.poll() is not None and proc.stderr.closed:
        return ''
    if proc.poll() is None:
        proc.terminate()
    try:
        _, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError('the VM ignored SIGTERM: %s' % err.decode())
    return err.decode()


def wait_ready(proc, path):
    """The content of @path once the guest's READY line is in it."""
    end = time.monotonic() + DEADLINE
    while True:
        with open(path, 'rb') as f:
            data = f.read()
        if b'READY ' in data and data.endswith(b'\n'):
            return data
        if proc.poll() is not None:
            raise AssertionError('the VM exited: %s' % proc.stderr.read().decode())
        if time.monotonic() > end:
            raise AssertionError('no READY from the guest in %s: %r' % (path, data))
        time.sleep(0.05)


def listening_socket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)
    return s



def quit_and_wait(q, proc):
    """quit over @q, close it, and wait for @proc: its exit status."""
    q.cmd('quit')
    q.file.close()
    q.close()
    proc.communicate(timeout=DEADLINE)
    return proc.returncode


def vm_fd_target(proc, fd):
    """What fd @fd of the VM is (a path), or None when it is not open."""
    try:
        return os.readlink('/proc/%d/fd/%d' % (proc.pid, fd))
    except FileNotFoundError:
        return None


def vm_fds_on(proc, path):
    """The VM's fds open on @path."""
    fds = []
    for name in os.listdir('/proc/%d/fd' % proc.pid):
        if vm_fd_target(proc, int(name)) == path:
            fds.append(int(name))
    return sorted(fds)


class ChardevFd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-chardev-fd')
        cls.tmpdir = tempfile.mkdtemp(prefix='test-chardev-fd-')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmpdir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmpdir, name)

    def old_file(self, name):
        path = self.path(name)
        with open(path, 'wb') as f:
            f.write(OLD)
        return path

    def test_libvirt_command_line(self):
        sock_path = self.path('monitor.sock')
        lsock = listening_socket(sock_path)
        log = self.old_file('serial.log')
        log_fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        mon_fd = lsock.fileno()
        proc = start(vm_args(*monitor_args(mon_fd),
                             '-add-fd', 'set=0,fd=%d,opaque=serial0-source' % log_fd,
                             *serial_args('/dev/fdset/0', append=True)),
                     pass_fds=(mon_fd, log_fd))
        # libvirt closes its copies once QEMU runs: the VM holds its own.
        lsock.close()
        os.close(log_fd)
        try:
            data = wait_ready(proc, log)
            self.assertTrue(data.startswith(OLD), data)
            self.assertIn(b'READY ', data[len(OLD):])
            # One client after another, as with path=.
            for _ in range(2):
                q = QMP(sock_path, timeout=DEADLINE)
                self.assertEqual(q.cmd('query-status')['status'], 'running')
                q.file.close()
                q.close()
            q = QMP(sock_path, timeout=DEADLINE)
            self.assertEqual(quit_and_wait(q, proc), 0)
        finally:
            stop(proc)
        # The socket file is libvirt's: the VM did not create it, so it stays.
        self.assertTrue(os.path.exists(sock_path))

    def test_connected_socket_monitor(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        proc = start(vm_args(*monitor_args(theirs.fileno(), server=False), paused=True),
                     pass_fds=(theirs.fileno(),))
        theirs.close()
        try:
            q = QMP(ours, DEADLINE, reply_timeout=DEADLINE)
            self.assertEqual(q.cmd('query-status')['status'], 'prelaunch')
        finally:
            ours.close()
            stop(proc)

    def test_append_and_truncate(self):
        # (fd set or path, open flags of the parent's fd, append=on): whether OLD stays.
        cases = [(True, os.O_WRONLY, True, True),
                 (True, os.O_WRONLY, False, False),
                 (False, None, True, True),
                 (False, None, False, False)]
        for i, (fdset, flags, append, kept) in enumerate(cases):
            with self.subTest(fdset=fdset, append=append):
                log = self.old_file('append%d.log' % i)
                fds = ()
                if fdset:
                    fd = os.open(log, flags)
                    fds = (fd,)
                    args = (['-add-fd', 'set=3,fd=%d' % fd]
                            + serial_args('/dev/fdset/3', append))
                else:
                    args = serial_args(log, append)
                proc = start(vm_args(*args), pass_fds=fds)
                for fd in fds:
                    os.close(fd)
                try:
                    data = wait_ready(proc, log)
                finally:
                    stop(proc)
                self.assertEqual(data.startswith(OLD), kept, data)
                self.assertIn(b'READY ', data)

    def refused(self, args, want, pass_fds=()):
        r = subprocess.run(vm_args(*args, paused=True), pass_fds=pass_fds,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=DEADLINE)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 1, err)
        self.assertIn(want, err)
        return err

    def test_refusals(self):
        # Not passed, and too high for any fd the binary opens for itself.
        free = 1000
        self.refused(monitor_args(free), 'fd=%d: not an open file descriptor' % free)
        self.refused(['-add-fd', 'set=0,fd=%d' % free] + serial_args('/dev/fdset/0', True),
                     'fd=%d: not an open file descriptor' % free)

        r, w = os.pipe()
        try:
            self.refused(monitor_args(r), 'fd=%d: not a socket' % r, pass_fds=(r,))
        finally:
            os.close(r)
            os.close(w)

        self.refused(['-chardev', 'socket,id=m,fd=5,path=%s' % self.path('x.sock'),
                      '-mon', 'chardev=m,mode=control'],
                     'cannot also have path, host or port')

        self.refused(serial_args('/dev/fdset/0', True),
                     "Could not open '/dev/fdset/0': No such file or directory")

        log = self.old_file('readonly.log')
        ro = os.open(log, os.O_RDONLY)
        try:
            self.refused(['-add-fd', 'set=0,fd=%d' % ro] + serial_args('/dev/fdset/0', True),
                         "Could not open '/dev/fdset/0': Permission denied", pass_fds=(ro,))
        finally:
            os.close(ro)
        with open(log, 'rb') as f:
            self.assertEqual(f.read(), OLD)

    def error_desc(self, reply):
        self.assertIn('error', reply)
        self.assertEqual(reply['error']['class'], 'GenericError', reply)
        return reply['error']['desc']

    def test_qmp_fdsets(self):
        sock_path = self.path('fdsets.sock')
        log = self.old_file('fdsets.log')
        log_fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        proc = start(vm_args('-qmp', 'unix:%s,server=on,wait=off' % sock_path,
                             '-add-fd', 'set=0,fd=%d,opaque=serial0-source' % log_fd,
                             *serial_args('/dev/fdset/0', append=True), paused=True),
                     pass_fds=(log_fd,))
        os.close(log_fd)
        files = [self.old_file('fdsets%d' % i) for i in range(4)]
        try:
            q = QMP(sock_path, timeout=DEADLINE)
            schema = {e['name'] for e in q.cmd('query-qmp-schema') if e['meta-type'] == 'command'}
            self.assertTrue({'add-fd', 'remove-fd', 'query-fdsets'} <= schema)

            sets = q.cmd('query-fdsets')
            self.assertEqual(len(sets), 1, sets)
            self.assertEqual(sets[0]['fdset-id'], 0)
            [cmdline] = sets[0]['fds']
            self.assertEqual(cmdline['opaque'], 'serial0-source')
            self.assertEqual(vm_fd_target(proc, cmdline['fd']), log)

            self.assertEqual(self.error_desc(q.request('add-fd', {'opaque': 'x'})),
                             'No file descriptor supplied via SCM_RIGHTS')

            # No id: the lowest free one (0 is -add-fd's). The fd listed is the VM's.
            added = []
            for i, args in enumerate([{'opaque': 'rdonly:' + files[0]},
                                      {'fdset-id': 1, 'opaque': 'rdwr:' + files[1]},
                                      {'fdset-id': 1}]):
                fd = os.open(files[i], os.O_RDWR if i else os.O_RDONLY)
                try:
                    reply = q.request('add-fd', args, fds=[fd])
                finally:
                    os.close(fd)
                info = reply['return']
                self.assertEqual(info['fdset-id'], 1, reply)
                self.assertEqual(vm_fd_target(proc, info['fd']), files[i])
                added.append(info['fd'])

            # A negative set is refused and the fd that came with it closed.
            fd = os.open(files[3], os.O_RDONLY)
            try:
                reply = q.request('add-fd', {'fdset-id': -1}, fds=[fd])
            finally:
                os.close(fd)
            self.assertEqual(self.error_desc(reply),
                             "Parameter 'fdset-id' expects a non-negative value")
            self.assertEqual(vm_fds_on(proc, files[3]), [])

            want_set1 = {'fdset-id': 1, 'fds': [{'fd': added[0], 'opaque': 'rdonly:' + files[0]},
                                                {'fd': added[1], 'opaque': 'rdwr:' + files[1]},
                                                {'fd': added[2]}]}
            want_set0 = {'fdset-id': 0, 'fds': [cmdline]}
            self.assertEqual(q.cmd('query-fdsets'), [want_set1, want_set0])

            # Errors: an unknown set, an unknown fd, an fd of another set (left open).
            self.assertEqual(self.error_desc(q.request('remove-fd', {'fdset-id': 7})),
                             "File descriptor named 'fdset-id:7' not found")
            self.assertEqual(self.error_desc(q.request('remove-fd', {'fdset-id': 7, 'fd': 3})),
                             "File descriptor named 'fdset-id:7, fd:3' not found")
            self.assertEqual(self.error_desc(q.request('remove-fd',
                                                       {'fdset-id': 1, 'fd': 9999})),
                             "File descriptor named 'fdset-id:1, fd:9999' not found")
            self.assertEqual(self.error_desc(q.request('remove-fd',
                                                       {'fdset-id': 1, 'fd': cmdline['fd']})),
                             "File descriptor named 'fdset-id:1, fd:%d' not found"
                             % cmdline['fd'])
            self.assertEqual(vm_fd_target(proc, cmdline['fd']), log)
            self.assertIn('error', q.request('remove-fd', {'fdset-id': 'one'}))

            q.cmd('remove-fd', **{'fdset-id': 1, 'fd': added[1]})
            self.assertEqual(vm_fds_on(proc, files[1]), [])
            want_set1['fds'].pop(1)
            self.assertEqual(q.cmd('query-fdsets'), [want_set1, want_set0])

            # The sets are shared by all monitors: the next client sees them too.
            q.file.close()
            q.close()
            q = QMP(sock_path, timeout=DEADLINE)
            self.assertEqual(q.cmd('query-fdsets'), [want_set1, want_set0])

            # A whole set: its fds closed and the set gone.
            q.cmd('remove-fd', **{'fdset-id': 1})
            self.assertEqual(vm_fds_on(proc, files[0]) + vm_fds_on(proc, files[2]), [])
            self.assertEqual(q.cmd('query-fdsets'), [want_set0])
            # -add-fd's set, in use by the serial chardev: listed empty.
            q.cmd('remove-fd', **{'fdset-id': 0, 'fd': cmdline['fd']})
            self.assertIsNone(vm_fd_target(proc, cmdline['fd']))
            self.assertEqual(q.cmd('query-fdsets'), [{'fdset-id': 0, 'fds': []}])
            # The chardev still writes through its duplicate.
            q.cmd('cont')
            data = wait_ready(proc, log)
            self.assertTrue(data.startswith(OLD), data)
            self.assertEqual(quit_and_wait(q, proc), 0)
        finally:
            stop(proc)


if __name__ == '__main__':
    prog = unittest.main(exit=False)
    result = prog.result
    if not result.wasSuccessful():
        sys.exit(1)
    # Nothing ran (no /dev/kvm): 77 makes meson report SKIP, not OK.
    sys.exit(77 if result.skipped and not result.testsRun else 0)
