#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-migrate-watch.py: scripts/migrate-watch against real migrations.

Each VM has two QMP sockets (a monitor serves one client at a time): the
test drives the VM on one, the watcher polls the other.  A live migration
of a dirtying guest, paced by max-bandwidth to last a few seconds, and a
background snapshot to a file are watched to completion (exit 0, progress
frames, the summary, the fault histogram); a migration that fails exits 1
with its error, a VM killed mid-watch exits 2, and a path or a tcp port
with no listener exits 2 with one clear line.  A migration is watched
over -qmp tcp:HOST:PORT, and one of a libvirt domain (a private libvirtd,
tests/libvirt/lvenv.sh) through libvirt's monitor pass-through (--domain
NAME --connect URI), each to the time left and the summary.  Ours shows x-progress (a percent that
never goes back), the x-converge-policy step in force and the next one,
and the predicted downtime; a guest that outruns the link shows its
steps taken.  QEMU 7.2, when installed, is watched too: it
has none of our x- fields, and none may be missed out loud.

Exit status 77 (a skip) without /dev/kvm, after the checks that need none,
or without libvirt (or root) for the domain's.
Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_PEER.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE, SRC_DIR  # noqa: E402
from analyzevm import PEER, PEER_CPU, kvm_skip_reason  # noqa: E402
import obsvm  # noqa: E402

WATCH = os.path.join(SRC_DIR, 'scripts', 'migrate-watch')
BANDWIDTH = 32 << 20
# x-progress gives a time left once it has three samples of what is left,
# a second apart: a migration paced to last ten seconds shows it.
SLOW_BANDWIDTH = 8 << 20
# test-slo's guest that outruns the link (issue 41): 200 MB/s at random
# over 192 MiB against 40 MiB/s, so it stalls and x-converge-policy acts.
OUTRUN_MEM = '384M'
OUTRUN_APPEND = 'mode=dirty mem=192 rate=200 pattern=random'
OUTRUN_BANDWIDTH = 40 << 20


class Guest(obsvm.Guest):
    def watch(self, *args):
        self.ready()
        return subprocess.Popen(
            [sys.executable, WATCH, self.watch_addr, '--interval', '0.2',
             '--wait', str(DEADLINE)] + list(args),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)


def finish(watcher):
    out, err = watcher.communicate(timeout=DEADLINE)
    return (watcher.returncode, out.decode('utf-8', 'replace'),
            err.decode('utf-8', 'replace'))


class NoListener(unittest.TestCase):
    """No KVM needed: nothing listens where the watcher is pointed."""

    def setUp(self):
        self.tmpdir = tempfile.mkdtemp(prefix='test-migrate-watch-')

    def tearDown(self):
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def refused(self, path, reason):
        p = subprocess.run([sys.executable, WATCH, path],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=DEADLINE)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, b'')
        self.assertEqual(p.stderr.decode(), 'migrate-watch: cannot connect '
                         'to %s: %s\n' % (path, reason))

    def test_absent_socket(self):
        self.refused(os.path.join(self.tmpdir, 'nothing.qmp'),
                     'No such file or directory')

    def test_dead_socket(self):
        # What a VM that died leaves behind: the socket file, no listener.
        path = os.path.join(self.tmpdir, 'dead.qmp')
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()
        self.refused(path, 'Connection refused')

    def test_tcp_refused(self):
        self.refused('tcp:127.0.0.1:%d' % obsvm.free_port(), 'Connection refused')

    def test_bad_address(self):
        p = subprocess.run([sys.executable, WATCH, 'tcp:localhost'],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=DEADLINE)
        self.assertEqual(p.returncode, 2)
        self.assertIn('error: tcp:localhost: not tcp:HOST:PORT\n', p.stderr)
        p = subprocess.run([sys.executable, WATCH, '/x.sock', '--domain', 'd'],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=DEADLINE)
        self.assertEqual(p.returncode, 2)
        self.assertIn('error: give either QMP-ADDRESS or --domain NAME\n', p.stderr)


class Watched(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = kvm_skip_reason()
        if reason:
            raise unittest.SkipTest(reason)

    def setUp(self):
        self.tmpdir = tempfile.mkdtemp(prefix='test-migrate-watch-')
        self.guests = []

    def tearDown(self):
        for g in self.guests:
            g.stop()
        if not os.environ.get('VMTEST_KEEP_TMP'):
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def guest(self, name, **kw):
        g = Guest(self.tmpdir, name, **kw)
        self.guests.append(g)
        return g

    def check_frames(self, out):
        frames = [f for f in out.split('\n\n') if f.startswith('status: ')]
        self.assertTrue(frames, out)
        self.assertIn('RAM [', frames[0])
        self.assertRegex(frames[0], r'sent, .* to send \(RAM 256\.\d MiB\)')
        self.assertNotIn('\x1b', out)       # not a terminal: plain lines

    def check_progress(self, out):
        """Ours: every frame has the progress line, some the predicted
        downtime, and the percent printed never goes back."""
        frames = [f for f in out.split('\n\n') if f.startswith('status: ')]
        shown = []
        for f in frames:
            m = re.search(r'\nprogress: ([\d.]+)%  (setup|first-pass|'
                          r'iterating|stalled|switchover|postcopy)'
                          r'(, about [\d.]+ m?s left|, time left unknown)\n',
                          f)
            self.assertTrue(m, f)
            shown.append(float(m.group(1)))
        self.assertEqual(shown, sorted(shown), 'the percent went back')
        self.assertTrue(any(p > 0 for p in shown), shown)
        self.assertRegex(out, r'\npredicted downtime: [\d.]+[mu]?s, largest '
                         r'(stop-vcpus|handover|final-sync|last-ram|'
                         r'device-state) [\d.]+[mu]?s')
        return frames

    def test_live_migration(self):
        src = self.guest('src')
        dst = self.guest('dst', extra=['-incoming', 'unix:' +
                                       os.path.join(self.tmpdir, 'mig.sock')])
        watcher = src.watch()
        src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': BANDWIDTH})
        src.qmp.cmd('migrate', uri='unix:' + os.path.join(self.tmpdir,
                                                          'mig.sock'))
        rc, out, err = finish(watcher)
        self.assertEqual((rc, err), (0, ''), out)
        self.check_frames(out)
        self.assertRegex(out, r'throughput: [\d.]+ Mbit/s, [\d.]+ \w+/s sent')
        self.assertRegex(out, r'pass \d+   dirty \d+ pages/s   expected '
                         r'downtime \d')
        self.assertIn('dirty log: ', out)
        self.check_progress(out)
        summary = out[out.index('migration completed in '):]
        # The prediction the switchover was decided on; the default policy
        # is announced, and this guest never stalls: no step taken.
        self.assertRegex(summary, r'\npredicted downtime: \S+, largest ')
        self.assertIn('converge step: none   next auto-converge in ', out)
        self.assertNotIn('converge step: auto-converge', out)
        self.assertRegex(summary, r'\ndowntime: \d+ ms\n')
        # RAM: the 256 MiB guest and QEMU's 80 KiB of ROM blocks.
        self.assertRegex(summary, r'\ntransferred: [\d.]+ MiB \(RAM 256\.1 '
                         r'MiB\), [\d.]+ Mbit/s, [\d.]+ MiB/s on average, '
                         r'\d+ passes\n')
        self.assertRegex(summary, r'downtime phases: stop-vcpus \S+, '
                         r'handover \S+, final-sync \S+, last-ram \S+, device-state')
        self.assertEqual(dst.qmp.cmd('query-status')['status'], 'running')

    def test_tcp(self):
        """The same view over -qmp tcp:HOST:PORT, to the time left."""
        src = self.guest('src', observer='tcp')
        watcher = src.watch()
        src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': SLOW_BANDWIDTH})
        src.qmp.cmd('migrate', uri='exec:cat > /dev/null')
        rc, out, err = finish(watcher)
        self.assertEqual((rc, err), (0, ''), out)
        self.check_frames(out)
        frames = self.check_progress(out)
        self.assertTrue(any(re.search(r'\nprogress: [\d.]+%  \S+, about [\d.]+ m?s '
                                      r'left\n', f) for f in frames), out)
        self.assertRegex(out, r'migration completed in .*\ndowntime: \d+ ms\n')

    def test_converge_step(self):
        """A guest that outruns the link stalls: the frames show the next
        step with when, then the step taken with its reason (the one in
        force until the end), and the summary the step. Auto-converge
        may bring it home, or the cancel after it ends it: either way
        the steps were shown."""
        uri = 'unix:' + os.path.join(self.tmpdir, 'mig.sock')
        src = self.guest('src', mem=OUTRUN_MEM, append=OUTRUN_APPEND)
        self.guest('dst', mem=OUTRUN_MEM, append=OUTRUN_APPEND,
                   extra=['-incoming', uri])
        watcher = src.watch()
        # No auto-converge capability: the policy's step needs none, and
        # with it the throttle would start early, before any step.
        src.qmp.cmd('migrate-set-parameters', **{
            'max-bandwidth': OUTRUN_BANDWIDTH, 'downtime-limit': 50,
            'x-converge-policy': ['auto-converge:1', 'cancel:4']})
        src.qmp.cmd('migrate', uri=uri)
        rc, out, err = finish(watcher)
        self.assertIn(rc, (0, 1), out)
        self.assertEqual(err, '', out)
        frames = self.check_progress(out)
        self.assertTrue(any(re.search(r'\nconverge step: none   next '
                                      r'auto-converge in [\d.]+ m?s if '
                                      r'still stalled\n', f) for f in frames),
                        out)
        self.assertTrue(any(re.search(r'\nconverge step: auto-converge '
                                      r'\(stalled [^\n]*\)   next cancel'
                                      r'( in [\d.]+ m?s if still stalled)?\n',
                                      f) for f in frames), out)
        summary = out[out.index('migration '):]
        self.assertRegex(summary, r'\nconverge step: (auto-converge|cancel) '
                         r'\(\S')

    def test_background_snapshot(self):
        src = self.guest('snap')
        watcher = src.watch()
        # A 2 MiB buffer for the guest's write faults: a larger one takes
        # whole huge pages at once and is flushed past max-bandwidth, and
        # the snapshot is over in 250 ms.
        src.qmp.cmd('migrate-set-parameters', **{
            'max-bandwidth': BANDWIDTH,
            'x-background-snapshot-buffer-size': 2 << 20})
        src.qmp.cmd('migrate-set-capabilities', capabilities=[
            {'capability': 'background-snapshot', 'state': True}])
        src.qmp.cmd('migrate', uri='file:' + os.path.join(self.tmpdir,
                                                          'snap.mig'))
        rc, out, err = finish(watcher)
        self.assertEqual((rc, err), (0, ''), out)
        self.check_frames(out)
        self.assertIn('\nsnapshot: ', out)
        summary = out[out.index('migration completed in '):]
        self.assertRegex(summary, r'\nsnapshot: \d+ faults, ')
        # The guest writes all the time: some of its writes faulted.
        self.assertRegex(summary, r'\nwrite-fault latency \(\d+ samples, '
                         r'p50 \S+, p99 \S+, max \S+\)\n +\S+ \|[#.]')
        self.assertNotIn('passes', summary)

    def test_failed_then_gone(self):
        src = self.guest('src')
        watcher = src.watch()
        src.qmp.cmd('migrate', uri='unix:' + os.path.join(self.tmpdir,
                                                          'nobody.sock'))
        rc, out, err = finish(watcher)
        self.assertEqual((rc, err), (1, ''), out)
        self.assertRegex(out, r'migration failed in .*\nerror: .*'
                         r'nobody\.sock')
        # A slow migration, and the VM killed once the watcher saw it.
        # The watcher starts after the migrate: one started on the failed
        # migration would summarise that one.
        src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': 1 << 20})
        src.qmp.cmd('migrate', uri='exec:cat > /dev/null')
        watcher = src.watch()
        line = watcher.stdout.readline()
        while line and not line.startswith(b'status: active'):
            line = watcher.stdout.readline()
        self.assertTrue(line)
        src.proc.kill()
        src.proc.wait()
        rc, out, err = finish(watcher)
        self.assertEqual(rc, 2, out)
        self.assertRegex(err, r'^migrate-watch: the monitor at \S+ went '
                         r'away \(migration active\): .+\n$')

    @unittest.skipUnless(os.access(PEER, os.X_OK), 'no QEMU 7.2 at ' + PEER)
    def test_qemu72(self):
        src = self.guest('peer', binary=PEER, cpu=PEER_CPU)
        watcher = src.watch()
        src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': BANDWIDTH})
        src.qmp.cmd('migrate', uri='exec:cat > /dev/null')
        rc, out, err = finish(watcher)
        self.assertEqual((rc, err), (0, ''), out)
        self.check_frames(out)
        self.assertRegex(out, r'migration completed in .*\ndowntime: \d+ ms'
                         r'\ntransferred: .* passes\n$')
        for ours in ('dirty log', 'phases', 'snapshot', 'latency',
                     'progress', 'converge step', 'predicted'):
            self.assertNotIn(ours, out)


class Domain(unittest.TestCase):
    """--domain NAME --connect URI: a domain of a private libvirtd
    (lvenv.sh), watched through libvirt's monitor pass-through while a
    migration started through it runs to its end."""

    @classmethod
    def setUpClass(cls):
        reason = kvm_skip_reason() or obsvm.libvirt_skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        cls.dom = obsvm.LibvirtDomain('watched')

    @classmethod
    def tearDownClass(cls):
        cls.dom.stop()

    def watch(self, *args):
        return subprocess.Popen(
            [sys.executable, WATCH, '--domain', self.dom.name, '--connect', self.dom.uri,
             '--interval', '0.2', '--wait', str(DEADLINE)] + list(args),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def test_domain(self):
        rc, out, err = finish(self.watch('--once'))
        self.assertEqual((rc, err, out), (0, '', 'status: none\n'))
        self.dom.ready()
        self.dom.qmp('migrate-set-parameters', **{'max-bandwidth': SLOW_BANDWIDTH})
        watcher = self.watch()
        self.dom.qmp('migrate', uri='exec:cat > /dev/null')
        rc, out, err = finish(watcher)
        self.assertEqual((rc, err), (0, ''), out)
        frames = [f for f in out.split('\n\n') if f.startswith('status: active')]
        self.assertTrue(frames, out)
        self.assertRegex(frames[0], r'RAM \[.*sent, .* to send \(RAM 256\.\d MiB\)')
        self.assertTrue(any(re.search(r'\nprogress: [\d.]+%  \S+, about [\d.]+ m?s '
                                      r'left\n', f) for f in frames), out)
        self.assertRegex(out, r'migration completed in .*\ndowntime: \d+ ms\n')

    def test_no_such_domain(self):
        p = subprocess.run([sys.executable, WATCH, '--domain', 'nosuch', '--connect',
                            self.dom.uri], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=DEADLINE)
        self.assertEqual((p.returncode, p.stdout), (2, ''))
        self.assertRegex(p.stderr, r'^migrate-watch: cannot connect to domain nosuch: .*'
                         r'nosuch.*\n$')


if __name__ == '__main__':
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    reason = kvm_skip_reason()
    if reason:
        sys.stderr.write('\n*** SKIP test-migrate-watch migrations: %s ***\n'
                         % reason)
        sys.exit(77)
    reason = obsvm.libvirt_skip_reason()
    if reason:
        sys.stderr.write('\n*** SKIP test-migrate-watch --domain: %s ***\n' % reason)
        sys.exit(77)
    sys.exit(0)
