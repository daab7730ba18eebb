#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-usdt.py: the USDT probes at the trace points, as bpftrace sees them.

- The binary's probe notes (readelf -n, .note.stapsdt) name exactly the
  trace points -trace help lists, all of provider "qemu", each with a
  semaphore (so that an unattached probe costs a branch).
- `bpftrace -l 'usdt:BINARY:*'` lists exactly them too.
- A live migration between two of our instances, the source without
  -trace (its probes fire only because bpftrace attached, through their
  semaphores): bpftrace counts and prints migration_state and
  migration_pass in the source, and they are what the QMP events say
  (MIGRATION's statuses in order, MIGRATION_PASS's pass numbers) and
  what query-migrate says (dirty-sync-count).

Exit status 77 (a skip, said on stderr) when the binary has no probes
(built without sys/sdt.h: Debian's systemtap-sdt-dev), when bpftrace is
missing or the kernel refuses its probes (the error is printed), or
without /dev/kvm for the migration; each after the checks that can run.
Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE, QEMU  # noqa: E402
from analyzevm import kvm_skip_reason  # noqa: E402
import obsvm  # noqa: E402

BPFTRACE = shutil.which('bpftrace')
BINARY = os.path.realpath(QEMU)
BANDWIDTH = 32 << 20
# Why bpftrace could not attach here, once a test found out (None: it could).
refused = []


def trace_points():
    out = subprocess.run([QEMU, '-trace', 'help'], capture_output=True, text=True,
                         check=True, timeout=DEADLINE).stdout
    return sorted(l for l in out.splitlines() if l)


def probe_notes():
    """[(provider, name, semaphore address)] of the binary's stapsdt notes."""
    out = subprocess.run(['readelf', '-n', BINARY], capture_output=True, text=True,
                         check=True, timeout=DEADLINE).stdout
    return re.findall(r'Provider: (\S+)\n\s+Name: (\S+)\n\s+Location: \S+, Base: \S+, '
                      r'Semaphore: (0x[0-9a-f]+)', out)


def semaphore(pid, name):
    """The value of probe @name's semaphore in process @pid: how many
    tracers the kernel counts as attached to it (read in /proc/PID/mem)."""
    addr = int([a for _, n, a in probe_notes() if n == name][0], 16)
    with open('/proc/%d/maps' % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == BINARY and \
                    int(fields[2], 16) == 0:
                base = int(fields[0].split('-')[0], 16)
                break
        else:
            raise AssertionError('%s is not mapped in %d' % (BINARY, pid))
    if addr < base:                 # a position-independent binary
        addr += base
    with open('/proc/%d/mem' % pid, 'rb') as f:
        f.seek(addr)
        return int.from_bytes(f.read(2), sys.byteorder)


def no_probes_reason():
    if not shutil.which('readelf'):
        return 'readelf is missing (Debian package binutils)'
    if not probe_notes():
        return ('%s has no USDT probes (built without sys/sdt.h: install systemtap-sdt-dev '
                'and configure again)' % BINARY)
    return None


def bpftrace_skip_reason():
    if not BPFTRACE:
        return 'bpftrace is not installed (Debian package bpftrace)'
    if os.geteuid() != 0:
        return 'bpftrace needs root'
    return refused[0] if refused else None


class Notes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = no_probes_reason()
        if reason:
            raise unittest.SkipTest(reason)

    def test_notes(self):
        notes = probe_notes()
        self.assertEqual({p for p, _, _ in notes}, {'qemu'})
        self.assertEqual(sorted({n for _, n, _ in notes}), trace_points())
        # One semaphore per name, shared by every site of that name.
        sema = {}
        for _, name, addr in notes:
            self.assertNotEqual(int(addr, 16), 0, name)
            self.assertEqual(sema.setdefault(name, addr), addr, name)
        self.assertEqual(len(set(sema.values())), len(sema))

    def test_bpftrace_list(self):
        if bpftrace_skip_reason():
            self.skipTest(bpftrace_skip_reason())
        p = subprocess.run([BPFTRACE, '-l', 'usdt:%s:*' % BINARY], capture_output=True,
                           text=True, timeout=DEADLINE)
        self.assertEqual(p.returncode, 0, p.stderr)
        # bpftrace warns on stderr about arguments it cannot parse: none.
        self.assertNotIn('Parse error', p.stderr)
        listed = sorted({l.rsplit(':', 1)[1] for l in p.stdout.splitlines()
                         if l.startswith('usdt:%s:qemu:' % BINARY)})
        self.assertEqual(listed, trace_points())


class Bpftrace:
    """bpftrace running @program (JSON output), its lines collected."""

    def __init__(self, program):
        self.proc = subprocess.Popen([BPFTRACE, '-f', 'json', '-e', program],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.msgs = []
        self.stderr = None          # bpftrace's, once it has exited
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            self.msgs.append(msg)

    def wait_attached(self, pid, names):
        """None once the probes @names are attached in @pid, else why not
        (bpftrace's error). bpftrace says "attached_probes" before it
        attaches: the semaphores the kernel counts up tell when it has."""
        end = time.monotonic() + DEADLINE
        while self.proc.poll() is None and time.monotonic() < end:
            if all(semaphore(pid, n) for n in names):
                return None
            time.sleep(0.05)
        self.stop()
        return 'bpftrace could not attach: %s' % self.stderr.strip()

    def stop(self):
        if self.stderr is not None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)     # prints its maps, then exits
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(DEADLINE)
        self.stderr = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()

    def printed(self):
        return ''.join(m['data'] for m in self.msgs if m.get('type') == 'printf').splitlines()

    def maps(self):
        out = {}
        for m in self.msgs:
            if m.get('type') == 'map':
                out.update(m['data'])
        return out


class Counted(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = no_probes_reason() or bpftrace_skip_reason() or kvm_skip_reason()
        if reason:
            raise unittest.SkipTest(reason)

    def setUp(self):
        self.tmpdir = tempfile.mkdtemp(prefix='test-usdt-')

    def tearDown(self):
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def test_migration(self):
        uri = 'unix:' + os.path.join(self.tmpdir, 'mig.sock')
        src = obsvm.Guest(self.tmpdir, 'src')
        dst = obsvm.Guest(self.tmpdir, 'dst', extra=['-incoming', uri])
        bt = None
        try:
            src.ready()
            pid = src.proc.pid
            bt = Bpftrace(
                'usdt:%(bin)s:qemu:migration_state /pid == %(pid)d/ {'
                ' printf("state %%s %%s\\n", str(arg0), str(arg1)); @states = count(); }'
                ' usdt:%(bin)s:qemu:migration_pass /pid == %(pid)d/ {'
                ' printf("pass %%d %%d %%d\\n", arg0, arg1, arg2); @passes = count(); }'
                % {'bin': BINARY, 'pid': pid})
            # Nothing attached yet: an unattached probe has its semaphore at 0.
            self.assertEqual(semaphore(pid, 'migration_state'), 0)
            why = bt.wait_attached(pid, ('migration_state', 'migration_pass'))
            if why:
                # The kernel refuses uprobes here: said loudly at the end.
                refused.append(why)
                self.skipTest(why)
            src.qmp.cmd('migrate-set-capabilities', capabilities=[
                {'capability': 'events', 'state': True}])
            src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': BANDWIDTH})
            src.qmp.cmd('migrate', uri=uri)
            info = src.wait_status(('completed', 'failed'))
            self.assertEqual(info['status'], 'completed')
            # The completed event may come just after query-migrate saw it.
            end = time.monotonic() + DEADLINE
            while not any(e['event'] == 'MIGRATION' and e['data']['status'] == 'completed'
                          for e in src.qmp.events):
                self.assertLess(time.monotonic(), end, src.qmp.events)
                src.qmp.cmd('query-status')
            bt.stop()
            # Detached: the trace points cost a branch again.
            self.assertEqual(semaphore(pid, 'migration_state'), 0)
        finally:
            if bt:
                bt.stop()
            src.stop()
            dst.stop()
        lines = bt.printed()
        states = [l.split()[1:] for l in lines if l.startswith('state ')]
        passes = [int(l.split()[1]) for l in lines if l.startswith('pass ')]
        events = [e['data']['status'] for e in src.qmp.events if e['event'] == 'MIGRATION']
        pass_events = [e['data']['pass'] for e in src.qmp.events
                       if e['event'] == 'MIGRATION_PASS']
        self.assertEqual([to for _, to in states], events, lines)
        self.assertEqual(states[0][0], 'none')
        for (_, to), (frm, _) in zip(states, states[1:]):
            self.assertEqual(frm, to, states)       # each from where the last went
        self.assertEqual(passes, pass_events, lines)
        self.assertEqual(len(passes), info['ram']['dirty-sync-count'])
        self.assertGreater(len(passes), 1)
        self.assertEqual(bt.maps(), {'@states': len(states), '@passes': len(passes)})


if __name__ == '__main__':
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    for what, reason in (('probes', no_probes_reason()),
                         ('bpftrace', bpftrace_skip_reason()),
                         ('migration', kvm_skip_reason())):
        if reason:
            sys.stderr.write('\n*** SKIP test-usdt %s: %s ***\n' % (what, reason))
            sys.exit(77)
    sys.exit(0)
