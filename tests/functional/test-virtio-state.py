#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-virtio-state.py: malformed virtio device-state sections, on real KVM.

A guest running mode=udpecho on virtio-net (and slirp) is migrated live to a
file.  Its sections are located with scripts/analyze-migration.py's own
parser (the vmdesc at the end of the stream says where every field is), and
copies of the stream are written with fields of the QEMU-layout
"virtio-mmio@00000000feb02e00/virtio-net" or the "slirp" section changed: a
ring outside RAM or misaligned, a queue size that is not a power of two or
too big, a last_avail_idx more than a queue ahead of the used ring in RAM,
status and feature bits that cannot go together, a queue count the device
does not have, the control queue set up, QEMU's filters away from their
defaults, the views of one queue disagreeing.  Each copy loaded with
-incoming file:PATH must make the binary exit with status 1 and one error
line that names the section and the field, without the guest running a
single step.  The unmodified
stream loads and runs, and so do the fields the destination takes as they
come (a MAC, buffers the source had taken and not returned: offered again).

Environment:
  QTEST_QEMU_BINARY  binary under test (default: build/qemu-system-x86_64)
  VMTEST_FIRMWARE    PVH guest (default: build/tests/guest/workload.elf)
  VMTEST_DEADLINE    seconds to wait for any one event (default: 120)

Run: tests/functional/test-virtio-state.py [-v] [TestClass.test_name ...]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import CPU, DEADLINE, FIRMWARE, QEMU  # noqa: E402
from analyzevm import QMP, kvm_skip_reason  # noqa: E402
from streamfields import locate_fields, wait_for  # noqa: E402

MiB = 1 << 20
MEM_MB = 64
FAR_BEYOND_RAM = 1 << 40

# The guest prints a STAT line every 50 ms once it runs: a destination that
# let it run at all before failing would show one.
GUEST_APPEND = 'mode=udpecho port=7 report_ms=50'
NET = 'virtio-mmio@00000000feb02e00/virtio-net'


def vm_args(serial, extra=()):
    return [QEMU, '-M', 'microvm', '-enable-kvm', '-cpu', CPU,
            '-m', '%dM' % MEM_MB, '-nodefaults', '-no-user-config',
            '-nographic', '-serial', 'file:' + serial,
            '-kernel', FIRMWARE, '-append', GUEST_APPEND,
            '-netdev', 'user,id=n0',
            '-device', 'virtio-net-device,netdev=n0'] + list(extra)


def has_stat_line(serial):
    return re.search(r'^STAT ', read_text(serial), re.M) is not None


def read_text(path):
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except OSError:
        return ''


class VirtioState(unittest.TestCase):
    tmpdir = None
    stream = None
    fields = None

    @classmethod
    def setUpClass(cls):
        reason = kvm_skip_reason()
        if reason:
            sys.stderr.write('\n*** SKIP test-virtio-state: %s ***\n' % reason)
            raise unittest.SkipTest(reason)
        cls.tmpdir = tempfile.mkdtemp(prefix='test-virtio-state-')
        cls.stream = os.path.join(cls.tmpdir, 'good.mig')
        cls.make_stream(cls.stream)
        cls.fields = locate_fields(cls.stream)

    @classmethod
    def tearDownClass(cls):
        if cls.tmpdir and not os.environ.get('VMTEST_KEEP_TMP'):
            shutil.rmtree(cls.tmpdir, ignore_errors=True)

    @classmethod
    def make_stream(cls, path):
        """A live migration of the running udpecho guest to file:PATH, so
        that the destination would start the guest after the load."""
        serial = os.path.join(cls.tmpdir, 'src.serial')
        sock = os.path.join(cls.tmpdir, 'src.qmp')
        log = open(os.path.join(cls.tmpdir, 'src.log'), 'wb')
        qmp_arg = ['-qmp', 'unix:%s,server=on,wait=off' % sock]
        proc = subprocess.Popen(vm_args(serial, qmp_arg),
                                stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
        qmp = None
        try:
            qmp = QMP(sock, proc)
            wait_for('a STAT line from the source guest',
                     lambda: has_stat_line(serial), proc)
            qmp.cmd('migrate', uri='file:' + path)
            wait_for('the migration to complete',
                     lambda: qmp.cmd('query-migrate').get('status') in
                     ('completed', 'failed', 'cancelled'), proc)
            info = qmp.cmd('query-migrate')
            if info.get('status') != 'completed':
                raise AssertionError('migration to %s: %s' % (path, info))
        finally:
            if qmp is not None:
                try:
                    qmp.cmd('quit')
                except Exception:       # already gone
                    pass
                qmp.close()
            try:
                proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()

    # -- helpers -----------------------------------------------------------

    def field(self, idstr, path, index=0):
        """(offset, size, value) of the index-th occurrence of the field;
        the virtio-net section's are inside its one field "virtio", and a
        subsection's are named by the subsection."""
        for key in ((idstr, 0, idstr + '.' + path), (idstr, 0, idstr + '.virtio.' + path),
                    (idstr, 0, path)):
            if key in self.fields:
                return self.fields[key][index]
        self.fail('the stream has no %s in %s' % (path, idstr))

    def value(self, idstr, path, index=0):
        return self.field(idstr, path, index)[2]

    def corrupt(self, name, changes):
        """A copy of the good stream with each (idstr, path, index, value)
        of changes written over its field (big endian, as VMState has it)."""
        out = os.path.join(self.tmpdir, 'copy-' + name + '.mig')
        shutil.copyfile(self.stream, out)
        with open(out, 'r+b') as f:
            for idstr, path, index, value in changes:
                off, size, _ = self.field(idstr, path, index)
                f.seek(off)
                f.write(value.to_bytes(size, 'big'))
        return out

    def load(self, path, name, qmp=False):
        """A destination on path: (proc, its serial file, QMP or None)."""
        serial = os.path.join(self.tmpdir, name + '.dst.serial')
        extra = ['-incoming', 'file:' + path]
        sock = None
        if qmp:
            sock = os.path.join(self.tmpdir, name + '.dst.qmp')
            extra += ['-qmp', 'unix:%s,server=on,wait=off' % sock]
        proc = subprocess.Popen(vm_args(serial, extra),
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        return proc, serial, (QMP(sock, proc) if qmp else None)

    def refused(self, name, changes, message, section=NET):
        """The copy with changes must not load: status 1, one error line
        that names the section and holds message, and no guest output."""
        copy = self.corrupt(name, changes)
        proc, serial, _ = self.load(copy, name)
        try:
            _, err = proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail('%s: neither loaded nor refused' % name)
        err = err.decode('utf-8', 'replace')
        lines = [x for x in err.splitlines() if x.strip()]
        # A crash is a negative status (a signal) or 128 + signal.
        self.assertEqual(proc.returncode, 1, '%s: exit status %d: %s'
                         % (name, proc.returncode, err))
        self.assertEqual(len(lines), 1, '%s: not one error line: %s'
                         % (name, err))
        self.assertIn("of device '%s'" % section, lines[0], name)
        self.assertIn(message, lines[0], name)
        self.assertEqual(read_text(serial), '', '%s: the guest ran' % name)

    def net(self, path, index, value):
        return (NET, path, index, value)

    def ring(self, queue, which, addr):
        """Every view of queue's ring which ('desc', 'avail' or 'used')
        moved to addr: QEMU's layout holds each address two or three times."""
        changes = [self.net('virtio_mmio/state.mq.' + which, 2 * queue, addr & 0xffffffff),
                   self.net('virtio_mmio/state.mq.' + which, 2 * queue + 1, addr >> 32)]
        if which == 'desc':
            changes.append(self.net('vq.desc', queue, addr))
        else:
            changes.append(self.net('virtio/virtqueues.rings.' + which, queue, addr))
        return changes

    def expect_loaded(self, name, changes):
        """The copy loads, the guest runs on (STAT lines), nothing on
        stderr; returns the QMP connection (the caller quits)."""
        path = self.corrupt(name, changes)
        proc, serial, qmp = self.load(path, name, qmp=True)
        try:
            wait_for('the guest to run after the load',
                     lambda: has_stat_line(serial), proc)
            self.assertEqual(qmp.cmd('query-status')['status'], 'running')
            return qmp, proc
        except Exception:
            proc.kill()
            proc.wait()
            raise

    def finish(self, qmp, proc):
        """quit; stderr empty."""
        qmp.cmd('quit')
        qmp.close()
        _, err = proc.communicate(timeout=DEADLINE)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(err.decode('utf-8', 'replace').strip(), '')

    # -- the good stream and what is taken as it comes ---------------------

    def test_good_stream_loads(self):
        qmp, proc = self.expect_loaded('good', [])
        self.finish(qmp, proc)

    def test_any_mac_is_taken(self):
        mac = [0x52, 0x54, 0x00, 0xab, 0xcd, 0xef]
        qmp, proc = self.expect_loaded('mac', [self.net('mac', i, b)
                                               for i, b in enumerate(mac)])
        out = qmp.cmd('human-monitor-command',
                      **{'command-line': 'info network'})
        self.assertIn('macaddr=52:54:00:ab:cd:ef', out)
        self.finish(qmp, proc)

    def test_buffer_in_flight_is_offered_again(self):
        # QEMU sends no used index (it is the ring's, in RAM): one more
        # taken than the ring says returned is a buffer the source held,
        # offered again here.
        taken = self.value(NET, 'vq.last_avail_idx', 0)
        qmp, proc = self.expect_loaded('one-in-flight',
                                       [self.net('vq.last_avail_idx', 0, (taken + 1) & 0xffff)])
        self.finish(qmp, proc)

    # -- refused -----------------------------------------------------------

    def test_ring_outside_ram(self):
        self.refused('desc-far', self.ring(0, 'desc', FAR_BEYOND_RAM),
                     'queue 0: descriptor ring 0x10000000000+0x1000 is outside guest RAM')
        # The used ring's first 8 bytes would be RAM's, the rest beyond it.
        self.refused('used-end', self.ring(1, 'used', MEM_MB * MiB - 8),
                     'queue 1: device ring 0x3fffff8+0x806 is outside guest RAM')
        # On the transport's own registers.
        self.refused('avail-mmio', self.ring(1, 'avail', 0xfeb02e00),
                     'queue 1: driver ring 0xfeb02e00+0x206 is outside guest RAM')

    def test_ring_misaligned(self):
        odd = self.value(NET, 'virtio/virtqueues.rings.avail', 1) + 1
        self.refused('avail-odd', self.ring(1, 'avail', odd),
                     'queue 1: driver ring at 0x%x is not 2-byte aligned' % odd)

    def test_views_disagree(self):
        desc = self.value(NET, 'vq.desc', 0)
        self.refused('desc-views', [self.net('vq.desc', 0, desc + 0x1000)],
                     "queue 0: the core's and the transport's views differ")
        self.refused('num-views', [self.net('vq.num', 0, 128)],
                     "queue 0: the core's and the transport's views differ")

    def test_queue_size(self):
        for num, msg in ((128 + 1, 'queue 0: size 129 is not a power of two'),
                         (512, 'queue 0: size 512 is above the maximum 256')):
            self.refused('num-%d' % num, [self.net('vq.num', 0, num),
                                          self.net('virtio_mmio/state.mq.num', 0, num)], msg)

    def test_last_avail_beyond_the_queue(self):
        taken = self.value(NET, 'vq.last_avail_idx', 1)
        last = (taken + 257) & 0xffff
        self.refused('last-avail', [self.net('vq.last_avail_idx', 1, last)],
                     'queue 1: last_avail_idx %d is more than a queue (256) ahead' % last)

    def test_status_and_features(self):
        features = self.value(NET, 'virtio/64bit_features.features')
        # The running driver's: ACKNOWLEDGE, DRIVER, FEATURES_OK, DRIVER_OK.
        self.assertEqual(self.value(NET, 'status'), 0x0f)
        self.refused('no-version-1',
                     [self.net('virtio/64bit_features.features', 0, features & 0xffffffff)],
                     'FEATURES_OK without VIRTIO_F_VERSION_1')
        self.refused('unoffered',
                     [self.net('virtio/64bit_features.features', 0, features | 1),
                      self.net('features_lo', 0, (features | 1) & 0xffffffff)],
                     'include 0x1, which this device does not offer')
        self.refused('features-halves',
                     [self.net('features_lo', 0, (features | 1) & 0xffffffff)],
                     'and their low word')
        self.refused('driver-ok-early', [self.net('status', 0, 0x07)],
                     'DRIVER_OK without FEATURES_OK')
        self.refused('needs-reset-bit', [self.net('status', 0, 0x4f)], 'invalid status 0x4f')
        self.refused('isr', [self.net('isr', 0, 4)], 'invalid InterruptStatus 0x4')
        self.refused('legacy', [self.net('guest_page_shift', 0, 12)], 'guest_page_shift 12')

    def test_queue_count(self):
        # One queue fewer: the 18 bytes read next are the MAC and on, which
        # the bounds after them catch.
        self.refused('one-queue', [self.net('num_queues', 0, 2)],
                     "field 'mac_table' count")
        self.refused('4-queues', [self.net('num_queues', 0, 4)],
                     "field 'vq' count 4 exceeds the maximum 3")
        self.refused('ctrl-queue-ready', [self.net('virtio_mmio/state.mq.ready', 2, 1)],
                     'queue 2 is set up in the stream, but the device has 2 queues')

    def test_net_fields(self):
        self.refused('link-status', [self.net('net_status', 0, 3)], 'status 0x3 is not 0x1')
        self.refused('promisc-off', [self.net('promisc', 0, 0)], 'promisc (off)')
        self.refused('allmulti', [self.net('allmulti', 0, 1)], 'allmulti')
        self.refused('mergeable', [self.net('mergeable_rx_bufs', 0, 1)], 'mergeable_rx_bufs')
        self.refused('mac-table', [self.net('mac_table_len', 0, 1)],
                     "field 'mac_table' count 1 exceeds the maximum 0")

    def test_slirp(self):
        self.refused('slirp-guestfwd', [('slirp', 'data', 0, 42 << (130 * 8))],
                     "slirp state of netdev 'n0' holds guestfwd sockets", section='slirp')


if __name__ == '__main__':
    unittest.main(verbosity=2)
