#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-incoming-fd.py: -incoming fd:N on descriptors that lead nowhere back.

A stream recorded with OPEN_RETURN_PATH and a PING in it (as a tcp:
source's stream has them) is loaded from an inherited fd that is not a
socket: a regular file opened for reading and writing, and a FIFO opened
for both. The destination has no way back to the source there, so it
must write nothing into that fd (neither into the file, whose unread
bytes would be overwritten, nor into the FIFO, where it would read its
own messages back as stream bytes), and the load must succeed as the
stream is whole. The parent's side of the FIFO keeps its blocking mode.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure).
"""

import fcntl
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU, SRC_DIR  # noqa: E402
from analyzevm import skip_class_without_kvm  # noqa: E402

sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
from qmp import QMP  # noqa: E402

MEM = '64M'
APPEND = 'mode=verify mem=16'
QEMU_VM_COMMAND = 0x08
MIG_CMD_OPEN_RETURN_PATH = 1
MIG_CMD_PING = 2


def vm_args(*extra):
    return [QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU, '-m', MEM,
            '-nodefaults', '-no-user-config', '-display', 'none',
            '-kernel', FIRMWARE, '-append', APPEND] + list(extra)


def wait_status(q, proc, want):
    """Polls query-status until it is one of @want; the status."""
    end = time.monotonic() + DEADLINE
    while True:
        st = q.cmd('query-status')['status']
        if st in want:
            return st
        if proc.poll() is not None or time.monotonic() > end:
            raise AssertionError('status %s, not one of %s' % (st, want))
        time.sleep(0.05)


def record_stream(tmp):
    """A whole stream of a stopped guest, from a file: migration."""
    path = os.path.join(tmp, 'good.mig')
    qmp_path = os.path.join(tmp, 'src.sock')
    src = subprocess.Popen(vm_args('-qmp', 'unix:%s,server=on,wait=off' % qmp_path),
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    try:
        q = QMP(qmp_path, proc=src)
        q.cmd('stop')
        q.cmd('migrate', uri='file:' + path)
        end = time.monotonic() + DEADLINE
        while q.cmd('query-migrate').get('status') != 'completed':
            if time.monotonic() > end:
                raise AssertionError('the recording migration did not complete')
            time.sleep(0.05)
        q.close()
    finally:
        src.kill()
        src.communicate()
    with open(path, 'rb') as f:
        return f.read()


def with_return_path(stream):
    """@stream with OPEN_RETURN_PATH and a PING before its EOF (the vmdesc follows it)."""
    for off in range(len(stream) - 5, 0, -1):
        n = struct.unpack('>I', stream[off + 1:off + 5])[0]
        if stream[off] == 0x06 and n == len(stream) - off - 5 and stream[off - 1] == 0:
            eof = off - 1
            break
    else:
        raise AssertionError('no vmdesc after an EOF in the recorded stream')
    cmds = (struct.pack('>BHH', QEMU_VM_COMMAND, MIG_CMD_OPEN_RETURN_PATH, 0) +
            struct.pack('>BHHI', QEMU_VM_COMMAND, MIG_CMD_PING, 4, 0x1234))
    return stream[:eof] + cmds + stream[eof:]


def load_from_fd(tmp, fd, name):
    """Starts a paused destination on -incoming fd:@fd; waits for the load."""
    qmp_path = os.path.join(tmp, name + '.sock')
    dst = subprocess.Popen(vm_args('-S', '-incoming', 'fd:%d' % fd,
                                   '-qmp', 'unix:%s,server=on,wait=off' % qmp_path),
                           pass_fds=[fd], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        q = QMP(qmp_path, proc=dst)
        st = wait_status(q, dst, ('paused', 'running', 'postmigrate'))
        q.close()
    finally:
        dst.kill()
        _, err = dst.communicate()
    return st, err.decode(errors='replace')


class IncomingFd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-incoming-fd')
        cls.tmp = tempfile.mkdtemp(prefix='qemu-mig-incoming-fd-')
        cls.stream = with_return_path(record_stream(cls.tmp))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_regular_file_read_write(self):
        path = os.path.join(self.tmp, 'rw.mig')
        with open(path, 'wb') as f:
            f.write(self.stream)
        fd = os.open(path, os.O_RDWR)
        try:
            st, err = load_from_fd(self.tmp, fd, 'file')
        finally:
            os.close(fd)
        self.assertEqual(st, 'paused', err)
        with open(path, 'rb') as f:
            self.assertEqual(f.read(), self.stream,
                             'the destination wrote into the stream it was reading')

    def test_fifo_both_ways(self):
        path = os.path.join(self.tmp, 'fifo')
        os.mkfifo(path)
        fd = os.open(path, os.O_RDWR)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        extra = []

        def feed():
            # Another opener writes the stream, then reads what is left in
            # the FIFO once the load is over: the destination's own writes.
            w = os.open(path, os.O_WRONLY)
            view = memoryview(self.stream)
            while view:
                view = view[os.write(w, view):]
            os.close(w)

        t = threading.Thread(target=feed)
        t.start()
        try:
            st, err = load_from_fd(self.tmp, fd, 'fifo')
            t.join(DEADLINE)
            self.assertFalse(t.is_alive(), 'the stream was not all read')
            os.set_blocking(fd, False)
            try:
                extra.append(os.read(fd, 65536))
            except BlockingIOError:
                pass
            os.set_blocking(fd, True)
            self.assertEqual(fcntl.fcntl(fd, fcntl.F_GETFL), flags,
                             'the shared description lost its blocking mode')
        finally:
            os.close(fd)
        self.assertEqual(st, 'paused', err)
        self.assertEqual(b''.join(extra), b'',
                         'the destination wrote its return path into the FIFO')


if __name__ == '__main__':
    unittest.main()
