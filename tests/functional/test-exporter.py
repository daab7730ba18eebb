#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-exporter.py: scripts/qemu-mig-exporter scraped as Prometheus would.

One exporter serves two VMs, the source of a live migration on its -qmp
tcp:HOST:PORT and the destination on a unix socket: /metrics is fetched
with urllib before, during and after the migration, every text passes
`promtool check metrics` (Prometheus's own linter), and the values are
those query-migrate gives the test on its own monitor: the status (a
state set with one state on), RAM bytes, progress, the predicted and the
measured downtime phase by phase (the destination's too), the time
left, and query-stats of each vCPU and of the VM. A background snapshot's write-fault latency
histogram comes out as a Prometheus histogram whose buckets add up to
query-migrate's, its _sum query-migrate's fault-latency-sum-ns in seconds
and its _count the +Inf bucket; KVM's histograms in query-stats, which
carry no sum, come without _sum and _count. A monitor
nobody answers on is qemu_up 0. --libvirt exports a domain of a private
libvirtd (tests/libvirt/lvenv.sh) through libvirt's monitor pass-through,
before and after a migration.

Exit status 77 (a skip, said on stderr) without promtool, /dev/kvm, or
libvirt (or root) for the libvirt mode, after the checks that can run.
Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE, SRC_DIR  # noqa: E402
from analyzevm import kvm_skip_reason  # noqa: E402
import obsvm  # noqa: E402

EXPORTER = os.path.join(SRC_DIR, 'scripts', 'qemu-mig-exporter')
PROMTOOL = shutil.which('promtool')
BANDWIDTH = 32 << 20
# x-progress gives a time left once it has three samples of what is left,
# a second apart: a migration paced to last ten seconds shows it.
SLOW_BANDWIDTH = 8 << 20
SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """The samples of a text exposition: {(name, ((label, value), ...)): float}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = SAMPLE_RE.match(line)
        assert m, 'not a sample line: %r' % line
        labels = tuple(sorted(LABEL_RE.findall(m.group(2) or '')))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


class Metrics:
    """One scrape: its text and samples."""

    def __init__(self, text):
        self.text = text
        self.samples = parse(text)

    def get(self, name, **labels):
        """The value of the sample @name with exactly @labels; KeyError if none."""
        return self.samples[(name, tuple(sorted(labels.items())))]

    def has(self, name, **labels):
        return (name, tuple(sorted(labels.items()))) in self.samples

    def matching(self, name, **labels):
        """{labels: value} of the samples of @name that have @labels."""
        return {k[1]: v for k, v in self.samples.items()
                if k[0] == name and all(dict(k[1]).get(a) == b for a, b in labels.items())}

    def state(self, name, vm):
        """The one state of state set @name that is on for @vm."""
        on = [dict(k[1])[name] for k, v in self.samples.items()
              if k[0] == name and dict(k[1]).get('vm') == vm and v == 1]
        assert len(on) == 1, (name, vm, on)
        return on[0]


class Exporter:
    """scripts/qemu-mig-exporter with @args on a free port, until stop()."""

    def __init__(self, *args):
        self.port = obsvm.free_port()
        self.proc = subprocess.Popen([EXPORTER, '--listen', '127.0.0.1:%d' % self.port]
                                     + list(args), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith('qemu-mig-exporter: serving http://'):
            self.proc.kill()
            raise AssertionError('the exporter did not start: %s%s'
                                 % (line, self.proc.stderr.read()))

    def scrape(self, lint=True):
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % self.port,
                                    timeout=DEADLINE) as r:
            text = r.read().decode()
        if lint and PROMTOOL:
            p = subprocess.run([PROMTOOL, 'check', 'metrics'], input=text,
                               capture_output=True, text=True, timeout=DEADLINE)
            assert p.returncode == 0, 'promtool: %s%s\n%s' % (p.stdout, p.stderr, text)
        return Metrics(text)

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


class NoVM(unittest.TestCase):
    """No KVM needed: the arguments, and monitors nobody answers on."""

    def test_arguments(self):
        for args in ([], ['--qmp', 'x.sock', '--libvirt'], ['--qmp', 'tcp:nohost']):
            p = subprocess.run([EXPORTER] + args, capture_output=True, text=True,
                               timeout=DEADLINE)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn('qemu-mig-exporter: error: ', p.stderr)

    def test_down(self):
        tmp = tempfile.mkdtemp(prefix='test-exporter-')
        dead = os.path.join(tmp, 'nothing.qmp')
        tcp = 'tcp:127.0.0.1:%d' % obsvm.free_port()
        exp = Exporter('--qmp', dead, '--qmp', tcp)
        try:
            m = exp.scrape()
            self.assertEqual(m.get('qemu_up', vm=dead), 0)
            self.assertEqual(m.get('qemu_up', vm=tcp), 0)
            self.assertFalse(m.matching('qemu_migration_status'))
        finally:
            exp.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class Scraped(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = kvm_skip_reason()
        if reason:
            raise unittest.SkipTest(reason)

    def setUp(self):
        self.tmpdir = tempfile.mkdtemp(prefix='test-exporter-')
        self.cleanup = []

    def tearDown(self):
        for c in reversed(self.cleanup):
            c()
        if not os.environ.get('VMTEST_KEEP_TMP'):
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def guest(self, name, **kw):
        g = obsvm.Guest(self.tmpdir, name, **kw)
        self.cleanup.append(g.stop)
        return g

    def exporter(self, *args):
        e = Exporter(*args)
        self.cleanup.append(e.stop)
        return e

    def check_stats(self, m, vm, ran):
        """query-stats of the VM and each vCPU, typed by their schema; @ran:
        the guest has run (an incoming one has not)."""
        exits = m.matching('qemu_kvm_vcpu_exits_total', vm=vm)
        self.assertEqual(len(exits), 1, exits)
        self.assertEqual(list(exits.values())[0] > 0, ran)
        self.assertTrue(m.matching('qemu_kvm_vm_mmu_pte_write_total', vm=vm))
        for line in ('# TYPE qemu_kvm_vcpu_halt_wait_seconds_total counter',
                     '# TYPE qemu_kvm_vcpu_halt_wait_hist_seconds histogram'):
            self.assertTrue(line in m.text, line)
        # KVM reports no sum of a histogram's samples: none is made up.
        self.assertTrue(m.matching('qemu_kvm_vcpu_halt_wait_hist_seconds_bucket', vm=vm))
        self.assertFalse(m.matching('qemu_kvm_vcpu_halt_wait_hist_seconds_sum', vm=vm))

    def test_live_migration(self):
        uri = 'unix:' + os.path.join(self.tmpdir, 'mig.sock')
        src = self.guest('src', observer='tcp')
        dst = self.guest('dst', extra=['-incoming', uri])
        exp = self.exporter('--qmp', src.watch_addr, '--qmp', dst.watch_addr)
        m = exp.scrape()
        for vm, g in (('src', src), ('dst', dst)):
            self.assertEqual(m.get('qemu_up', vm=vm), 1)
            self.assertEqual(m.state('qemu_migration_status', vm),
                             g.qmp.cmd('query-migrate').get('status', 'none'))
            self.check_stats(m, vm, g is src)
        src.ready()
        src.qmp.cmd('migrate-set-parameters', **{'max-bandwidth': SLOW_BANDWIDTH})
        src.qmp.cmd('migrate', uri=uri)
        # Scraped once x-progress has a time left (three samples a second apart).
        end = time.monotonic() + DEADLINE
        while 'time-left' not in src.wait_status(('active',)).get('x-progress', {}):
            self.assertLess(time.monotonic(), end)
            time.sleep(0.1)
        m = exp.scrape()
        info = src.qmp.cmd('query-migrate')
        if info['status'] == 'active':      # 64 MiB at 8 MiB/s: it is
            # An estimate, redone every poll: there, and not nothing.
            self.assertGreater(m.get('qemu_migration_time_left_seconds', vm='src'), 0)
            self.assertEqual(m.state('qemu_migration_status', 'src'), 'active')
            self.assertEqual(m.get('qemu_migration_ram_total_bytes', vm='src'),
                             info['ram']['total'])
            self.assertGreater(m.get('qemu_migration_ram_transferred_bytes', vm='src'), 0)
            self.assertGreater(m.get('qemu_migration_ram_remaining_bytes', vm='src'), 0)
            self.assertGreater(m.get('qemu_migration_progress_ratio', vm='src'), 0)
            self.assertLessEqual(m.get('qemu_migration_progress_ratio', vm='src'), 1)
            self.assertGreater(m.get('qemu_migration_throughput_bytes_per_second', vm='src'), 0)
            self.assertIn(m.state('qemu_migration_phase', 'src'), ('first-pass', 'iterating'))
        info = src.wait_status(('completed', 'failed'))
        self.assertEqual(info['status'], 'completed')
        dinfo = dst.wait_status(('completed',))
        m = exp.scrape()
        self.assertEqual(m.state('qemu_migration_status', 'src'), 'completed')
        self.assertEqual(m.state('qemu_migration_phase', 'src'), 'completed')
        self.assertEqual(m.get('qemu_migration_progress_ratio', vm='src'), 1)
        self.assertEqual(m.get('qemu_migration_downtime_seconds', vm='src'),
                         info['downtime'] / 1000)
        self.assertEqual(m.get('qemu_migration_total_time_seconds', vm='src'),
                         info['total-time'] / 1000)
        self.assertEqual(m.get('qemu_migration_ram_transferred_bytes', vm='src'),
                         info['ram']['transferred'])
        self.assertEqual(m.get('qemu_migration_dirty_syncs', vm='src'),
                         info['ram']['dirty-sync-count'])
        # The switchover's phases, the measured total and the prediction.
        xd = info['x-downtime']
        phases = m.matching('qemu_migration_downtime_phase_seconds', vm='src')
        self.assertEqual(len(phases), 6, phases)
        for ph in ('stop-vcpus', 'handover', 'final-sync', 'last-ram', 'device-state',
                   'unattributed'):
            self.assertAlmostEqual(m.get('qemu_migration_downtime_phase_seconds', vm='src',
                                         phase=ph), xd[ph] / 1e6)
        self.assertAlmostEqual(sum(phases.values()), xd['total'] / 1e6)
        self.assertAlmostEqual(m.get('qemu_migration_downtime_measured_seconds', vm='src'),
                               xd['total'] / 1e6)
        self.assertAlmostEqual(m.get('qemu_migration_downtime_expected_seconds', vm='src'),
                               xd['expected'] / 1e6)
        pred = info['x-downtime-predicted']
        self.assertAlmostEqual(m.get('qemu_migration_predicted_downtime_seconds', vm='src'),
                               pred['total'] / 1e6)
        self.assertAlmostEqual(m.get('qemu_migration_predicted_downtime_phase_seconds',
                                     vm='src', phase='last-ram'), pred['last-ram'] / 1e6)
        # The destination's side of the switchover.
        xi = dinfo['x-incoming-downtime']
        for ph in ('last-ram', 'device-state', 'handoff', 'start-vcpus'):
            self.assertAlmostEqual(m.get('qemu_migration_incoming_downtime_phase_seconds',
                                         vm='dst', phase=ph), xi[ph] / 1e6)
        self.assertEqual(dst.qmp.cmd('query-status')['status'], 'running')

    def test_snapshot_histogram(self):
        src = self.guest('snap')
        exp = self.exporter('--qmp', src.watch_addr)
        src.ready()
        # As test-migrate-watch's snapshot: a small fault buffer, paced.
        src.qmp.cmd('migrate-set-parameters', **{
            'max-bandwidth': BANDWIDTH, 'x-background-snapshot-buffer-size': 2 << 20})
        src.qmp.cmd('migrate-set-capabilities', capabilities=[
            {'capability': 'background-snapshot', 'state': True}])
        src.qmp.cmd('migrate', uri='file:' + os.path.join(self.tmpdir, 'snap.mig'))
        info = src.wait_status(('completed', 'failed'))
        self.assertEqual(info['status'], 'completed')
        counts = info['x-background-snapshot']['fault-latency-histogram']
        sum_ns = info['x-background-snapshot']['fault-latency-sum-ns']
        self.assertGreater(sum(counts), 0, 'the guest writes all the time: some faulted')
        # Each fault is counted in the bucket of its whole microseconds, so
        # the sum lies between the lower and the upper edges of the buckets.
        low = sum(c * ((1 << (i - 1)) if i else 0) for i, c in enumerate(counts)) * 1000
        high = sum(c * (1 << i) for i, c in enumerate(counts[:-1])) * 1000
        self.assertGreaterEqual(sum_ns, low)
        if not counts[-1]:
            self.assertLess(sum_ns, high)
        m = exp.scrape()
        name = 'qemu_migration_snapshot_fault_latency_seconds'
        self.assertTrue('# TYPE %s histogram' % name in m.text, name)
        buckets = m.matching(name + '_bucket', vm='snap')
        self.assertEqual(len(buckets), len(counts))
        self.assertEqual(m.get(name + '_bucket', vm='snap', le='+Inf'), sum(counts))
        # The sum is the binary's, in seconds; the count is the +Inf bucket.
        self.assertEqual(m.get(name + '_sum', vm='snap'), sum_ns / 1e9)
        self.assertEqual(m.get(name + '_count', vm='snap'), sum(counts))
        # Bucket i of ours holds [2^(i-1), 2^i) us: le=2^i us, cumulative.
        for i in range(len(counts) - 1):
            self.assertEqual(m.get(name + '_bucket', vm='snap', le=repr((1 << i) / 1e6)),
                             sum(counts[:i + 1]))
        # No ours: the postcopy histograms are absent, not zero.
        self.assertFalse(m.matching('qemu_migration_postcopy_request_latency_seconds_bucket'))


class Libvirt(unittest.TestCase):
    """--libvirt URI: every running domain, through virsh qemu-monitor-command."""

    @classmethod
    def setUpClass(cls):
        reason = kvm_skip_reason() or obsvm.libvirt_skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        cls.dom = obsvm.LibvirtDomain('scraped')

    @classmethod
    def tearDownClass(cls):
        cls.dom.stop()

    def test_domain(self):
        exp = Exporter('--libvirt', self.dom.uri)
        try:
            m = exp.scrape()
            self.assertEqual(m.get('qemu_up', vm='scraped'), 1)
            self.assertEqual(m.state('qemu_migration_status', 'scraped'), 'none')
            self.assertTrue(m.matching('qemu_kvm_vcpu_exits_total', vm='scraped'))
            self.dom.ready()
            self.dom.qmp('migrate-set-parameters', **{'max-bandwidth': BANDWIDTH})
            self.dom.qmp('migrate', uri='exec:cat > /dev/null')
            end = time.monotonic() + DEADLINE
            while self.dom.qmp('query-migrate')['status'] != 'completed':
                self.assertLess(time.monotonic(), end)
                time.sleep(0.2)
            m = exp.scrape()
            self.assertEqual(m.state('qemu_migration_status', 'scraped'), 'completed')
            self.assertEqual(len(m.matching('qemu_migration_downtime_phase_seconds',
                                            vm='scraped')), 6)
            self.assertGreater(m.get('qemu_migration_ram_transferred_bytes', vm='scraped'),
                               64 << 20)
        finally:
            exp.stop()


if __name__ == '__main__':
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    for what, reason in (('promtool checks', None if PROMTOOL else
                          'promtool is not installed (Debian package prometheus)'),
                         ('VMs', kvm_skip_reason()),
                         ('--libvirt', obsvm.libvirt_skip_reason())):
        if reason:
            sys.stderr.write('\n*** SKIP test-exporter %s: %s ***\n' % (what, reason))
            sys.exit(77)
    sys.exit(0)
