# SPDX-License-Identifier: GPL-2.0-or-later
"""
streamrec.py: what a rare hang after a hop leaves behind to replay it.

StreamRecorder relays one migration connection and keeps the bytes the
source sent (a live source cannot send them again); keep_states() copies
that stream and saves the hung destination's own state beside it, in
$VMTEST_SAVE_DIR, so that both can be diffed (scripts/analyze-migration.py
-d state) and loaded again. Used by test-qemu-interop's SoakHalting and by
test-qemu-net's hops.
"""

import os
import shutil
import socket
import threading
import time

from analyzetest import DEADLINE
from analyzevm import MonitorGone


class StreamRecorder:
    """A one-connection TCP relay to 127.0.0.1:@port that keeps in @path
    what the source sent."""

    def __init__(self, port, path):
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self.run, args=(port, path), daemon=True)
        self.thread.start()

    def run(self, port, path):
        conn, _ = self.listener.accept()
        self.listener.close()
        with conn, socket.create_connection(('127.0.0.1', port)) as dst, open(path, 'wb') as out:
            back = threading.Thread(target=self.pump, args=(dst, conn, None), daemon=True)
            back.start()
            self.pump(conn, dst, out)
            back.join(DEADLINE)

    @staticmethod
    def pump(src, dst, out):
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if out:
                    out.write(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def join(self):
        self.thread.join(DEADLINE)


def wait_migrated(vm):
    end = time.monotonic() + DEADLINE
    while True:
        info = vm.qmp.cmd('query-migrate')
        if info.get('status') in ('completed', 'failed', 'cancelled'):
            return info
        if time.monotonic() > end:
            raise AssertionError('saving the hung state: not done: %s' % info)
        time.sleep(0.05)


def keep_states(tag, streams, dst):
    """Copy @streams (what @dst took, last, and what the VMs before it
    took) and save the hung @dst's state (stopped first) into
    $VMTEST_SAVE_DIR, named after @tag; returns what was kept, for the
    failure message."""
    where = os.environ.get('VMTEST_SAVE_DIR')
    if not where:
        return 'states not kept (VMTEST_SAVE_DIR unset)'
    os.makedirs(where, exist_ok=True)
    stamp = '%s-%s-%d' % (tag, time.strftime('%Y%m%d-%H%M%S'), os.getpid())
    kept = []
    try:
        for i, stream in enumerate(streams):
            kept.append(os.path.join(where, '%s-stream%d.mig' % (stamp, i)))
            shutil.copyfile(stream, kept[-1])
        hung = os.path.join(where, stamp + '-hung.mig')
        dst.qmp.cmd('stop')
        dst.qmp.cmd('migrate', uri='exec:cat > ' + hung)
        info = wait_migrated(dst)
        if info.get('status') != 'completed':
            return 'kept %s; saving the hung state failed: %s' % (kept, info)
        kept.append(hung)
    except (OSError, AssertionError, MonitorGone) as e:
        return 'keeping the states failed: %s (kept %s)' % (e, kept)
    return 'kept: %s' % ' '.join(kept)
