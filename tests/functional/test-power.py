#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-power.py: the power button, reset and shutdown (issue 42, item 2).
microvm with ACPI has QEMU's generic event device: system_powerdown sends
POWERDOWN and raises its power-down event, the firmware (tests/guest/power.c)
prints POWER BUTTON and powers off through the sleep control register:
SHUTDOWN (guest, guest-shutdown) and the process exits 0, or with
-no-shutdown stays in "shutdown" until system_reset and cont boot the
firmware again. system_reset gives RESET host-qmp-system-reset and a second
READY; -no-reboot makes it SHUTDOWN host-qmp-system-reset; a reset through
the GED's reset register (ged_reset=1) is RESET or, with -no-reboot,
SHUTDOWN guest-reset. acpi=off and -no-acpi: POWERDOWN only, the guest
runs on. A pressed button that the stopped guest has not read yet
migrates (from QEMU 7.2 to ours too).

Every case runs on ours and, when installed, on QEMU 7.2 with the same
firmware, so the events are compared with QEMU's own, not with a memory
of them.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure), VMTEST_PEER (QEMU 7.2).
"""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE, QEMU  # noqa: E402
from analyzevm import PEER, VM, MonitorGone  # noqa: E402
from guestcase import GuestCase  # noqa: E402

APPEND = 'mode=verify mem=8'


def peer_is_qemu():
    """QEMU 7.2 (not ours under its name) is installed."""
    if not os.access(PEER, os.X_OK) or os.path.realpath(PEER) == os.path.realpath(QEMU):
        return False
    out = subprocess.run([PEER, '-version'], capture_output=True, text=True).stdout
    return 'qemu-mig' not in out


class PowerCase(GuestCase):
    NAME = 'test-power'
    TMP_PREFIX = 'qemu-mig-power-'

    def binaries(self):
        """(label, binary) pairs: ours, and QEMU 7.2 when it is there."""
        out = [('ours', None)]
        if peer_is_qemu():
            out.append(('qemu72', PEER))
        elif os.environ.get('VMTEST_FAIL_ON_SKIP') == '1':
            self.fail('QEMU 7.2 (%s) is not installed: the comparison is skipped' % PEER)
        else:
            print('SKIP test-power: QEMU 7.2 (%s) not installed, ours only' % PEER,
                  file=sys.stderr)
        return out

    def start(self, label, binary, name, machine='microvm', append=APPEND, extra=()):
        return self.keep(VM(self.tmp, '%s-%s' % (label, name), machine=machine, mem_mb=64,
                            append=append, binary=binary, extra=list(extra)),
                         '%s-%s' % (label, name))

    def pump(self, vm):
        """Collect the events that came (the client keeps them while it
        reads a reply); a VM that exited left its last ones before EOF."""
        if vm.qmp is None or getattr(vm, 'gone', False):
            return
        try:
            vm.qmp.cmd('query-status')
        except MonitorGone:
            vm.gone = True
            # The command could not go out: what the VM said last is still unread.
            try:
                vm.proc.wait(timeout=DEADLINE)
                for line in vm.qmp.file:
                    msg = json.loads(line)
                    if 'event' in msg:
                        vm.qmp.events.append(msg)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass

    def events(self, vm):
        return [(e['event'], e.get('data')) for e in vm.qmp.events]

    def wait_event(self, vm, name, count=1):
        """The events so far once @count of @name have come."""
        end = time.monotonic() + DEADLINE
        while sum(1 for e in vm.qmp.events if e['event'] == name) < count:
            self.assertLess(time.monotonic(), end, '%s: no %s; events %s; serial %s; log %s' % (
                vm.name, name, self.events(vm), vm.serial_text()[-300:], vm.log_tail()))
            self.pump(vm)
            time.sleep(0.1)
        return self.events(vm)

    def wait_count(self, vm, text, n):
        """Until @text is on the serial line @n times."""
        end = time.monotonic() + DEADLINE
        while vm.serial_text().count(text) < n:
            self.assertLess(time.monotonic(), end, '%s: %r not %d times; serial %s; log %s' % (
                vm.name, text, n, vm.serial_text()[-300:], vm.log_tail()))
            time.sleep(0.05)

    def wait_exit(self, vm):
        try:
            rc = vm.proc.wait(timeout=DEADLINE)
        except Exception:
            self.fail('%s did not exit: %s' % (vm.name, vm.log_tail()))
        vm.qmp.close()
        vm.qmp = None
        return rc

    def test_powerdown(self):
        for label, binary in self.binaries():
            with self.subTest(vm=label):
                vm = self.start(label, binary, 'pd')
                vm.wait_serial(r'PASS n=2 ')
                vm.qmp.cmd('system_powerdown')
                ev = self.wait_event(vm, 'SHUTDOWN')
                self.assertEqual(ev[0], ('POWERDOWN', None), ev)
                self.assertIn(('SHUTDOWN', {'guest': True, 'reason': 'guest-shutdown'}), ev)
                self.assertEqual(self.wait_exit(vm), 0)
                vm.wait_serial(r'^POWER BUTTON$')

    def test_powerdown_no_shutdown(self):
        for label, binary in self.binaries():
            with self.subTest(vm=label):
                vm = self.start(label, binary, 'pdns', extra=['-no-shutdown'])
                vm.wait_serial(r'PASS n=2 ')
                vm.qmp.cmd('system_powerdown')
                ev = self.wait_event(vm, 'STOP')
                self.assertEqual(ev[-2:], [('SHUTDOWN', {'guest': True,
                                                         'reason': 'guest-shutdown'}),
                                           ('STOP', None)], ev)
                st = vm.qmp.cmd('query-status')
                self.assertEqual((st['status'], st['running']), ('shutdown', False))
                # A reboot from there: the firmware boots again.
                # cont right after the reply, as libvirt's reboot does: the reset is done.
                vm.qmp.cmd('system_reset')
                vm.qmp.cmd('cont')
                self.wait_count(vm, 'READY mode=verify', 2)

    def test_reset(self):
        for label, binary in self.binaries():
            with self.subTest(vm=label):
                vm = self.start(label, binary, 'reset')
                vm.wait_serial(r'PASS n=2 ')
                vm.qmp.cmd('system_reset')
                ev = self.wait_event(vm, 'RESET')
                self.assertEqual(ev, [('RESET', {'guest': False,
                                                 'reason': 'host-qmp-system-reset'})])
                self.wait_count(vm, 'READY mode=verify', 2)
                self.assertEqual(vm.qmp.cmd('query-status')['status'], 'running')

    def test_reset_no_reboot(self):
        for label, binary in self.binaries():
            with self.subTest(vm=label):
                vm = self.start(label, binary, 'resetnr', extra=['-no-reboot'])
                vm.wait_serial(r'PASS n=2 ')
                try:
                    vm.qmp.cmd('system_reset')
                except MonitorGone:
                    pass            # it may be gone before the reply
                ev = self.wait_event(vm, 'SHUTDOWN')
                self.assertEqual(ev, [('SHUTDOWN', {'guest': False,
                                                    'reason': 'host-qmp-system-reset'})])
                self.assertEqual(self.wait_exit(vm), 0)

    def test_guest_reset(self):
        for label, binary in self.binaries():
            with self.subTest(vm=label):
                vm = self.start(label, binary, 'greset', append=APPEND + ' ged_reset=1')
                ev = self.wait_event(vm, 'RESET', 2)
                self.assertEqual(ev[:2], [('RESET', {'guest': True,
                                                     'reason': 'guest-reset'})] * 2)
                self.wait_count(vm, 'RESET ged\n', 2)
                # -S: it would be gone before the test's QMP connection otherwise.
                vm = self.start(label, binary, 'gresetnr', append=APPEND + ' ged_reset=1',
                                extra=['-no-reboot', '-S'])
                vm.qmp.cmd('cont')
                ev = self.wait_event(vm, 'SHUTDOWN')
                self.assertEqual(ev, [('RESUME', None),
                                      ('SHUTDOWN', {'guest': True, 'reason': 'guest-reset'})])
                self.assertEqual(self.wait_exit(vm), 0)

    def test_acpi_off(self):
        """acpi=off, and -no-acpi (libvirt's, for a domain without <acpi/>): no button."""
        for label, binary in self.binaries():
            for tag, machine, extra in (('noacpi', 'microvm,acpi=off', []),
                                        ('noacpiopt', 'microvm', ['-no-acpi'])):
                with self.subTest(vm=label, machine=tag):
                    vm = self.start(label, binary, tag, machine=machine, extra=extra)
                    vm.wait_serial(r'PASS n=2 ')
                    # HMP's system_powerdown here, QMP's elsewhere.
                    self.assertEqual(vm.qmp.hmp('system_powerdown'), '')
                    self.wait_event(vm, 'POWERDOWN')
                    n = vm.serial_text().count('PASS')
                    vm.wait_serial(r'PASS n=%d ' % (n + 3))
                    time.sleep(0.5)
                    self.pump(vm)
                    self.assertEqual(self.events(vm), [('POWERDOWN', None)])
                    self.assertNotIn('POWER BUTTON', vm.serial_text())
                    self.assertEqual(vm.qmp.cmd('query-status')['status'], 'running')

    def test_pending_migrates(self):
        """Pressed while stopped, read by the guest only on the destination."""
        for label, binary in self.binaries():
            with self.subTest(vm=label):
                path = os.path.join(self.tmp, label + '-pending.mig')
                src = self.start(label, binary, 'pendsrc')
                src.wait_serial(r'PASS n=2 ')
                src.qmp.cmd('stop')
                src.qmp.cmd('system_powerdown')
                src.migrate(path)
                dst = self.start(label, None, 'penddst',
                                 extra=['-S', '-incoming', 'exec:cat ' + path])
                self.wait_status(dst, 'query-status', ('paused', 'postmigrate'))
                self.assertNotIn('POWER BUTTON', dst.serial_text())
                dst.qmp.cmd('cont')
                ev = self.wait_event(dst, 'SHUTDOWN')
                self.assertIn(('SHUTDOWN', {'guest': True, 'reason': 'guest-shutdown'}), ev)
                self.assertEqual(self.wait_exit(dst), 0)
                dst.wait_serial(r'^POWER BUTTON$')


if __name__ == '__main__':
    unittest.main()
