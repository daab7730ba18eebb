#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-virtio-state.py: malformed virtio device-state sections, on real KVM.

A guest running mode=udpecho on virtio-net (and slirp) is migrated live to a
file.  Its sections are located with scripts/analyze-migration.py's own
parser (the vmdesc at the end of the stream says where every field is), and
copies of the stream are written with one field of the "virtio-mmio",
"virtio-net" or "slirp" section changed: a ring outside RAM or misaligned,
a queue size that is not a power of two or too big, indices further apart
than the queue or apart at all (a saved queue holds no buffer in flight),
status and feature bits that cannot go together, a queue count the device
does not have.  Each copy loaded with -incoming file:PATH must make the
binary exit with status 1 and one error line that names the section and
the field, without the guest running a single step.  The unmodified
stream loads and runs, and so do the fields the destination takes as they
come (a MAC, a device broken on the source).  Indices or a ring that
disagree with the rings in the stream's RAM are what a guest that wrote
its own rings looks like at the destination: the guest's to break, not
its migration's, so those load and run with the NIC broken (one warning
naming the device and the field).

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
        """(offset, size, value) of the index-th occurrence of the field."""
        key = (idstr, 0, idstr + '.' + path)
        self.assertIn(key, self.fields, 'the stream has no %s' % (key,))
        return self.fields[key][index]

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

    def refused(self, name, section, path, index, value, message):
        """The copy with section's field path[index] = value must not
        load: status 1, one error line that names the section and holds
        message, and no guest output."""
        copy = self.corrupt(name, [(section, path, index, value)])
        self.expect_refused_copy(name, copy, section, message)

    def expect_refused_copy(self, name, copy, section, message):
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

    def mmio_refused(self, name, path, index, value, message):
        self.refused(name, 'virtio-mmio', path, index, value, message)

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

    def finish(self, qmp, proc, warning=None):
        """quit; stderr empty, or (warning) one line: the NIC loaded
        broken, naming the device and holding warning."""
        qmp.cmd('quit')
        qmp.close()
        _, err = proc.communicate(timeout=DEADLINE)
        self.assertEqual(proc.returncode, 0)
        err = err.decode('utf-8', 'replace').strip()
        if warning is None:
            self.assertEqual(err, '')
            return
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, 'not one warning line: %s' % err)
        self.assertIn('warning: virtio-net-device at 0xfeb00000: at load, '
                      'the rings in guest RAM disagree: ', lines[0])
        self.assertIn(warning, lines[0])
        self.assertIn('device marked broken until the driver resets it',
                      lines[0])

    def expect_loaded_broken(self, name, changes, warning):
        """The copy loads and the guest runs on, its NIC broken."""
        qmp, proc = self.expect_loaded(name, changes)
        self.finish(qmp, proc, warning)

    # -- the good stream and what is taken as it comes ---------------------

    def test_good_stream_loads(self):
        qmp, proc = self.expect_loaded('good', [])
        self.finish(qmp, proc)

    def test_any_mac_is_taken(self):
        mac = [0x52, 0x54, 0x00, 0xab, 0xcd, 0xef]
        qmp, proc = self.expect_loaded('mac', [('virtio-net', 'mac', i, b)
                                               for i, b in enumerate(mac)])
        out = qmp.cmd('human-monitor-command',
                      **{'command-line': 'info network'})
        self.assertIn('macaddr=52:54:00:ab:cd:ef', out)
        self.finish(qmp, proc)

    def test_broken_on_source_loads_broken(self):
        # Broken there, broken here, without a second warning (finish()
        # checks that stderr stays empty).
        qmp, proc = self.expect_loaded('broken',
                                       [('virtio-mmio', 'dev.broken', 0, 1)])
        self.finish(qmp, proc)

    # -- refused -----------------------------------------------------------

    def test_ring_outside_ram(self):
        self.mmio_refused('desc-far', 'vq.desc_addr', 0, FAR_BEYOND_RAM,
                          'queue 0: descriptor ring 0x10000000000+0x1000 is '
                          'outside guest RAM')
        # The used ring's first 8 bytes would be RAM's, the rest beyond it.
        self.mmio_refused('used-end', 'vq.used_addr', 1, MEM_MB * MiB - 8,
                          'queue 1: device ring 0x3fffff8+0x806 is outside '
                          'guest RAM')
        # On the transport's own registers.
        self.mmio_refused('avail-mmio', 'vq.avail_addr', 1, 0xfeb00000,
                          'queue 1: driver ring 0xfeb00000+0x206 is outside '
                          'guest RAM')

    def test_ring_misaligned(self):
        odd = self.value('virtio-mmio', 'vq.avail_addr', 1) + 1
        self.mmio_refused('avail-odd', 'vq.avail_addr', 1, odd,
                          'queue 1: driver ring at 0x%x is not 2-byte aligned'
                          % odd)

    def test_queue_size(self):
        for num, msg in ((100, 'queue 0: size 100 is not a power of two'),
                         (0, 'queue 0: size 0 is not a power of two'),
                         (512, 'queue 0: size 512 is above the maximum 256')):
            self.mmio_refused('num-%d' % num, 'vq.num', 0, num, msg)

    def test_indices_impossible_for_the_size(self):
        used = self.value('virtio-mmio', 'vq.used_idx', 1)
        last = (used + 257) & 0xffff
        self.mmio_refused('last-avail', 'vq.last_avail_idx', 1, last,
                          'queue 1: last_avail_idx %d is not used_idx %d (257 '
                          'buffers in flight' % (last, used))
        # Used beyond what was taken: taken - used wraps to 65535.
        taken = self.value('virtio-mmio', 'vq.last_avail_idx', 0)
        used = (taken + 1) & 0xffff
        self.mmio_refused('used-ahead', 'vq.used_idx', 0, used,
                          'queue 0: last_avail_idx %d is not used_idx %d (65535 '
                          'buffers in flight' % (taken, used))

    # Found by the hostile round of 2026-12-06: each of the next three
    # loaded and left a NIC that never moved again, without a word.  The
    # first is refused (the stream's own fields disagree); the other two
    # now load with the NIC broken and a warning (below).

    def test_one_buffer_in_flight(self):
        # A saved queue holds no buffer in flight (the source rewinds
        # them), so one more taken than returned is a changed field, even
        # within the queue size.
        taken = self.value('virtio-mmio', 'vq.last_avail_idx', 0)
        used = self.value('virtio-mmio', 'vq.used_idx', 0)
        self.assertEqual(taken, used)
        self.mmio_refused('one-in-flight', 'vq.last_avail_idx', 0,
                          (taken + 1) & 0xffff,
                          'queue 0: last_avail_idx %d is not used_idx %d (1 '
                          'buffers in flight' % ((taken + 1) & 0xffff, used))

    # -- loaded broken: the rings in guest RAM are the guest's ------------
    #
    # The stream's own fields agree with each other; only the rings the
    # stream's RAM put in guest memory disagree, which is also what a guest
    # that wrote used->idx (or posted a chain that loops) looks like.  The
    # source would break the NIC at its next kick; the destination loads it
    # broken, and the migration goes through.

    def test_indices_moved_together(self):
        used1 = self.value('virtio-mmio', 'vq.used_idx', 1)
        used_addr1 = self.value('virtio-mmio', 'vq.used_addr', 1)
        for name, delta in (('both-ahead', 1), ('both-behind', -1)):
            idx = (used1 + delta) & 0xffff
            self.expect_loaded_broken(
                name, [('virtio-mmio', 'vq.last_avail_idx', 1, idx),
                       ('virtio-mmio', 'vq.used_idx', 1, idx)],
                'queue 1: used_idx %d, but the device ring at 0x%x in guest '
                'RAM says %d' % (idx, used_addr1, used1))

    def test_used_ring_moved(self):
        # The receive queue's device ring moved onto its driver ring (in
        # RAM, aligned): the guest posted buffers there, so the idx found
        # is ahead of the device's.
        used = self.value('virtio-mmio', 'vq.used_idx', 0)
        avail0 = self.value('virtio-mmio', 'vq.avail_addr', 0)
        self.assertEqual(avail0 % 4, 0, 'the driver ring is not 4-byte aligned')
        self.expect_loaded_broken(
            'used-on-avail', [('virtio-mmio', 'vq.used_addr', 0, avail0)],
            'queue 0: used_idx %d, but the device ring at 0x%x in guest RAM '
            'says' % (used, avail0))

    def test_status_and_features(self):
        features = self.value('virtio-mmio', 'dev.guest_features')
        # The running driver's: ACKNOWLEDGE, DRIVER, FEATURES_OK, DRIVER_OK.
        self.assertEqual(self.value('virtio-mmio', 'dev.status'), 0x0f)
        self.mmio_refused('no-version-1', 'dev.guest_features', 0,
                          features & 0xffffffff,
                          'FEATURES_OK without VIRTIO_F_VERSION_1')
        self.mmio_refused('unoffered', 'dev.guest_features', 0, features | 1,
                          'include 0x1, which this device does not offer')
        self.mmio_refused('driver-ok-early', 'dev.status', 0, 0x07,
                          'DRIVER_OK without FEATURES_OK')
        self.mmio_refused('needs-reset-bit', 'dev.status', 0, 0x4f,
                          'invalid status 0x4f')
        self.mmio_refused('isr', 'isr', 0, 4, 'invalid InterruptStatus 0x4')

    def test_queue_count(self):
        self.mmio_refused('one-queue', 'num_queues', 0, 1,
                          '1 queues in the stream, the device has 2')
        self.mmio_refused('17-queues', 'num_queues', 0, 17,
                          "field 'vq' count 17 exceeds the maximum 16")

    def test_net_and_slirp(self):
        self.refused('link-status', 'virtio-net', 'status', 0, 3,
                     'status 0x3 is not 0x1')
        self.refused('slirp-len', 'slirp', 'len', 0, 4097,
                     "field 'buf' count 4097 exceeds the maximum 4096")


if __name__ == '__main__':
    unittest.main(verbosity=2)
