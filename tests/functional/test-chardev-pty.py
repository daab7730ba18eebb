#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-chardev-pty.py: the character devices an operator touches, driven
as libvirt and a person at a terminal drive them (issue 42, item 1).

- pty: `-serial pty` and `-chardev pty,id=X` with `-serial chardev:X` or
  `-device isa-serial,chardev=X` print QEMU's "char device redirected to
  /dev/pts/N (label L)" line on stdout, as QEMU 7.2 (libvirt finds the
  slave by it in the domain's log), query-chardev says "pty:/dev/pts/N"; the guest runs on while
  nobody has the slave open and while a reader has it open but does not
  read; a reader gets the guest's PASS lines, and another after it.
- mux, through a real terminal (pexpect): `-serial mon:stdio` and
  `-chardev stdio,id=c,mux=on -mon chardev=c -serial chardev:c`, and
  `-nographic` with no monitor (QEMU makes that mon:stdio): the
  guest's lines, typing more than the guest reads, C-a h (QEMU's help),
  C-a c to the HMP monitor (banner, `info status`), C-a c back to the
  guest's lines, C-a x ("QEMU: Terminated", exit status 0).
- QEMU's short-form booleans: `-qmp unix:S,server,nowait` and the same on
  -monitor and -serial do not wait for a client (the bug: start-up
  blocked) and say nothing, as QEMU 7.2; `-chardev socket,...,server,
  nowait,nodelay` does not wait either and prints QEMU 7.2's deprecation
  warnings.
- `-daemonize -D FILE`: the daemon's stderr goes to FILE (QEMU's
  "terminating on signal 15" lands there).

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import os
import re
import select
import shutil
import signal
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

REDIRECT_RE = re.compile(r'^char device redirected to (/dev/pts/\d+) \(label (\S+)\)$')
# Endless PASS lines, about one a millisecond.
APPEND = 'mode=verify mem=64'


def vm_args(*extra, append=APPEND):
    return [QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU, '-m', '256M',
            '-nodefaults', '-no-user-config', '-display', 'none',
            '-kernel', FIRMWARE, '-append', append] + list(extra)


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError('the VM ignored SIGTERM')


def stop_and_close(proc):
    stop(proc)
    for f in (proc.stdout, proc.stderr):
        if f:
            f.close()


def read_redirects(proc, count):
    """The first @count lines of @proc's stdout, each a redirect line:
    {label: slave path}."""
    found = {}
    for _ in range(count):
        ready, _, _ = select.select([proc.stdout], [], [], DEADLINE)
        if not ready:
            raise AssertionError('no "char device redirected" line on stdout')
        line = proc.stdout.readline().decode().rstrip('\n')
        m = REDIRECT_RE.match(line)
        if not m:
            raise AssertionError('not QEMU\'s redirect line: %r' % line)
        found[m.group(2)] = m.group(1)
    return found


def read_until(fd, want, count=1):
    """Bytes from @fd until @want was seen @count times."""
    data = b''
    end = time.monotonic() + DEADLINE
    while data.count(want) < count:
        left = end - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        if not ready:
            raise AssertionError('%r not seen %d times: %r' % (want, count, data[-300:]))
        data += os.read(fd, 65536)
    return data


def open_slave(path):
    return os.open(path, os.O_RDWR | os.O_NOCTTY)


class ChardevPty(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-chardev-pty')
        cls.tmpdir = tempfile.mkdtemp(prefix='test-chardev-pty-')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmpdir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmpdir, name)

    def start(self, *extra, append=APPEND, qmp=True, stdout=subprocess.PIPE):
        sock = self.path('qmp-%d.sock' % time.monotonic_ns())
        args = vm_args(*extra, append=append)
        if qmp:
            args += ['-qmp', 'unix:%s,server=on,wait=off' % sock]
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=stdout,
                                stderr=subprocess.PIPE)
        self.addCleanup(stop_and_close, proc)
        return proc, sock

    def check_pty(self, extra, label):
        proc, sock = self.start(*extra)
        slave = read_redirects(proc, 1)[label]
        q = QMP(sock, proc=proc)
        self.addCleanup(q.close)
        devs = {d['label']: d for d in q.cmd('query-chardev')}
        self.assertEqual(devs[label]['filename'], 'pty:' + slave)
        self.assertTrue(devs[label]['frontend-open'])

        # Nobody has the slave open: the guest's output is dropped, the guest runs on.
        time.sleep(1)
        self.assertEqual(q.cmd('query-status')['status'], 'running')

        fd = open_slave(slave)
        try:
            data = read_until(fd, b'\nPASS ', 3)
            self.assertRegex(data.decode(errors='replace'), r'PASS n=\d+')
            # Open but not read: the guest and the monitor must not block on it.
            time.sleep(2)
            t0 = time.monotonic()
            self.assertEqual(q.cmd('query-status')['status'], 'running')
            self.assertLess(time.monotonic() - t0, 1.0)
            read_until(fd, b'\nPASS ', 3)
        finally:
            os.close(fd)
        # The first reader gone, a second one gets the lines too.
        time.sleep(1.5)
        fd = open_slave(slave)
        try:
            read_until(fd, b'\nPASS ', 3)
        finally:
            os.close(fd)
        self.assertEqual(q.cmd('query-status')['status'], 'running')

    def test_serial_pty(self):
        self.check_pty(['-serial', 'pty'], 'serial0')

    def test_chardev_pty(self):
        self.check_pty(['-chardev', 'pty,id=charserial0', '-serial', 'chardev:charserial0'],
                       'charserial0')

    def test_isa_serial_pty(self):
        # libvirt's spelling.
        self.check_pty(['-chardev', 'pty,id=charserial0',
                        '-device', 'isa-serial,chardev=charserial0,id=serial0'],
                       'charserial0')

    def test_pty_input(self):
        # Input through the slave reaches the guest's UART: the HMP monitor on a pty.
        proc, _ = self.start('-monitor', 'pty', append='mode=idle mem=16')
        slave = read_redirects(proc, 1)['compat_monitor0']
        fd = open_slave(slave)
        try:
            read_until(fd, b'(qemu) ')
            os.write(fd, b'info status\r')
            read_until(fd, b'VM status: running')
        finally:
            os.close(fd)

    def mux(self, *extra, nodefaults=True):
        import pexpect
        args = [a for a in vm_args(*extra) if nodefaults or a != '-nodefaults']
        child = pexpect.spawn(args[0], args[1:], timeout=DEADLINE)
        self.addCleanup(child.close, force=True)
        child.expect(r'PASS n=\d+')
        # More than the UART's FIFO, to a guest that never reads it: the
        # escapes below must still get through.
        child.send('a' * 200)
        child.send('\x01h')
        child.expect_exact('C-a c    switch between console and monitor')
        child.expect_exact('C-a C-a  sends C-a')
        child.send('\x01c')
        child.expect_exact("monitor - type 'help' for more information")
        child.expect_exact('(qemu) ')
        child.send('info status\r')
        child.expect_exact('VM status: running')
        child.expect_exact('(qemu) ')
        child.send('\x01c')
        # Back on the guest's console: its lines keep coming.
        child.expect(r'PASS n=\d+')
        child.expect(r'PASS n=\d+')
        child.send('\x01x')
        child.expect_exact('QEMU: Terminated')
        child.expect(pexpect.EOF)
        child.close()
        self.assertEqual(child.exitstatus, 0)

    def test_serial_mon_stdio(self):
        self.mux('-serial', 'mon:stdio')

    def test_chardev_mux(self):
        self.mux('-chardev', 'stdio,id=c,mux=on', '-mon', 'chardev=c', '-serial', 'chardev:c')

    def test_nographic(self):
        # QEMU's -nographic without a monitor: mon:stdio.
        self.mux('-nographic', nodefaults=False)

    def test_mux_query_chardev(self):
        proc, sock = self.start('-chardev', 'null,id=c,mux=on', '-mon', 'chardev=c',
                                '-serial', 'chardev:c')
        q = QMP(sock, proc=proc)
        self.addCleanup(q.close)
        devs = {d['label']: d['filename'] for d in q.cmd('query-chardev')}
        self.assertEqual(devs['c'], 'mux')
        self.assertEqual(devs['c-base'], 'null')

    def test_short_form_booleans(self):
        qmp, mon = self.path('short-qmp.sock'), self.path('short-mon.sock')
        ser, chd = self.path('short-serial.sock'), self.path('short-chardev.sock')
        legacy = ['-qmp', 'unix:%s,server,nowait' % qmp,
                  '-monitor', 'unix:%s,server,nowait' % mon,
                  '-serial', 'unix:%s,server,nowait' % ser]
        chardev = 'socket,id=c,path=%s,server,nowait,nodelay' % chd
        proc = subprocess.Popen(vm_args(*legacy, '-chardev', chardev,
                                        '-mon', 'chardev=c,mode=control'),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        self.addCleanup(stop_and_close, proc)
        # No client anywhere, yet it starts: QMP answers on both monitors.
        for path in (qmp, chd):
            q = QMP(path, proc=proc)
            self.assertEqual(q.cmd('query-status')['status'], 'running')
            q.close()
        stop(proc)
        err = proc.stderr.read().decode()
        prefix = 'qemu-system-x86_64: -chardev %s: warning: ' % chardev
        want = ''.join('%sshort-form boolean option \'%s\' deprecated\n'
                       'Please use %s instead\n' % (prefix, short, full)
                       for short, full in (('server', 'server=on'), ('nowait', 'wait=off'),
                                           ('nodelay', 'nodelay=on')))
        self.assertTrue(err.startswith(want), err)
        # QEMU 7.2 says nothing about the legacy -qmp/-monitor/-serial forms.
        self.assertEqual(err.count('deprecated'), 3, err)

    def wait_log(self, log, pattern, more_than):
        end = time.monotonic() + DEADLINE
        while True:
            try:
                with open(log, errors='replace') as f:
                    text = f.read()
            except FileNotFoundError:
                text = ''
            if len(re.findall(pattern, text, re.M)) > more_than:
                return text
            self.assertLess(time.monotonic(), end, 'no %r in %s: %r' % (pattern, log, text))
            time.sleep(0.1)

    def test_chardev_logfile(self):
        """libvirt's <log file=...>: logfile= keeps every byte, read by
        nobody (a pty without a reader) or through a mux; logappend=on
        appends, the default truncates; a log that cannot be opened is
        refused before anything starts."""
        log = self.path('serial.log')
        with open(log, 'w') as f:
            f.write('an old run\n')
        proc, _ = self.start('-chardev', 'pty,id=charserial0,logfile=%s,logappend=off' % log,
                             '-device', 'isa-serial,chardev=charserial0,id=serial0')
        text = self.wait_log(log, r'^PASS n=\d+ ', 1)
        self.assertTrue(text.startswith('READY '), text[:200])
        stop_and_close(proc)
        with open(log) as f:
            first = f.read()
        # stdout is nobody's here: a pipe nobody reads would fill and block
        # the vCPU in its write, as it blocks QEMU's.
        proc, _ = self.start('-chardev', 'stdio,id=c0,mux=on,logfile=%s,logappend=on' % log,
                             '-serial', 'chardev:c0', qmp=False, stdout=subprocess.DEVNULL)
        # The first run was killed mid-line, so this READY need not start one.
        text = self.wait_log(log, r'READY mode=', 1)
        self.assertTrue(text.startswith(first), 'logappend=on did not append')
        stop_and_close(proc)
        r = subprocess.run(vm_args('-chardev', 'null,id=s0,logfile=/nonexistent-dir/s.log',
                                   '-serial', 'chardev:s0'),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Could not open '/nonexistent-dir/s.log': No such file or directory",
                      r.stderr.decode())

    def test_daemonize_logfile(self):
        log, pidfile = self.path('daemon.log'), self.path('daemon.pid')
        with open(log, 'w') as f:
            f.write('an old run\n')
        proc = subprocess.run(vm_args('-daemonize', '-pidfile', pidfile, '-D', log),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=DEADLINE)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(pidfile) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + DEADLINE
        while os.path.exists(pidfile) and time.monotonic() < end:
            time.sleep(0.05)
        with open(log) as f:
            text = f.read()
        # Truncated as QEMU's -D does, then the daemon's stderr.
        self.assertEqual(text, 'qemu-system-x86_64: terminating on signal 15\n')

    def test_logfile_refused(self):
        proc = subprocess.run(vm_args('-D', '/nonexistent-dir/x.log'),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=DEADLINE)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr.decode(),
                         'qemu-system-x86_64: -D /nonexistent-dir/x.log: Error opening '
                         'logfile /nonexistent-dir/x.log: No such file or directory\n')


if __name__ == '__main__':
    prog = unittest.main(exit=False)
    result = prog.result
    if not result.wasSuccessful():
        sys.exit(1)
    # Nothing ran (no /dev/kvm): 77 makes meson report SKIP, not OK.
    sys.exit(77 if result.skipped and not result.testsRun else 0)
