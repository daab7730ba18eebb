# SPDX-License-Identifier: GPL-2.0-or-later
"""GuestCase: the unittest base of the functional tests that run verify
guests and migrate them (test-ignore-shared, test-migrate-channels,
test-live-update): a temporary directory per class, the VMs a test
started shut down after it, and the waits every such test needs, each
bounded by VMTEST_DEADLINE and failing with the guest's serial output or
the VM's log.

    class MyCase(GuestCase):
        NAME = 'test-my-feature'          # the loud skip's name
        TMP_PREFIX = 'qemu-mig-my-'

        def test_it(self):
            vm = self.keep(VM(self.tmp, 'src', ...), 'src')
            self.wait_passes(vm, 2)
"""
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE  # noqa: E402
from analyzevm import END_STATUSES, QMPError, skip_class_without_kvm  # noqa: E402


class GuestCase(unittest.TestCase):
    NAME = 'functional test'
    TMP_PREFIX = 'qemu-mig-'
    TMP_BASE = None             # a directory for the class's own (None: the default)
    POLL = 0.02

    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm(cls.NAME)
        cls.tmp = tempfile.mkdtemp(prefix=cls.TMP_PREFIX, dir=cls.TMP_BASE)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.vms = []

    def tearDown(self):
        for vm in self.vms:
            vm.shutdown()

    def keep(self, vm, name):
        """@vm, named @name in messages, shut down after the test."""
        vm.name = name
        self.vms.append(vm)
        return vm

    def wait_passes(self, vm, n):
        """@n more verified passes from now, and no FAIL ever."""
        start = vm.serial_text().count('PASS')
        end = time.monotonic() + DEADLINE
        while vm.serial_text().count('PASS') < start + n:
            self.assertLess(time.monotonic(), end, '%s: the guest stalled; serial: %s; log: %s'
                            % (vm.name, vm.serial_text()[-300:], vm.log_tail()))
            self.assertIsNone(vm.proc.poll(), '%s exited: %s' % (vm.name, vm.log_tail()))
            time.sleep(self.POLL)
        self.assertNotIn('FAIL', vm.serial_text(), vm.name)

    def wait_status(self, vm, cmd, statuses, also=None):
        """@cmd's answer once its status is one of @statuses; @also's log goes into a failure."""
        end = time.monotonic() + DEADLINE
        while True:
            # A migration's polls check its x-progress (analyzevm.ProgressCheck).
            info = vm.query_migrate() if cmd == 'query-migrate' else vm.qmp.cmd(cmd)
            if info.get('status') in statuses:
                return info
            self.assertLess(time.monotonic(), end, '%s: %s; log: %s%s' % (
                vm.name, info, vm.log_tail(),
                '; %s: %s' % (also.name, also.log_tail()) if also else ''))
            self.assertIsNone(vm.proc.poll(), '%s exited: %s' % (vm.name, vm.log_tail()))
            time.sleep(self.POLL)

    def wait_migration(self, vm, also=None):
        """query-migrate once the migration ended, however it ended."""
        return self.wait_status(vm, 'query-migrate', END_STATUSES, also)

    def wait_running(self, vm):
        return self.wait_status(vm, 'query-status', ('running',))

    def refused(self, vm, cmd, text, **args):
        """QMP @cmd fails, saying @text."""
        with self.assertRaises(QMPError) as cm:
            vm.qmp.cmd(cmd, **args)
        self.assertIn(text, str(cm.exception))
