#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-cpu-subsections.py: the vCPU state that only QEMU's optional "cpu"
subsections carry (issue 37) survives QEMU 10.0 -> ours -> QEMU 10.0,
QEMU 7.2 -> ours -> QEMU 7.2 and ours -> ours.

The guest runs mode=verify with cpustate= (tests/guest/cpustate.c): x87
pointers, AVX-512 registers, a TSC deadline, MISC_ENABLE, TSC_ADJUST and
KVM's PV MSRs, checked by the guest after every pass (a lost state is a
FAIL line and the guest exits). For each source:

- the source saves the paused guest to a file;
- ours loads it, the guest verifies on (two passes after the move, so at
  least one check ran on our side), and ours saves it again;
- the "cpu" subsections we send are QEMU's layout (the vmdescs in
  docs/devel/qemu-vmdesc/) and hold the values the source sent, each of
  them (the guest writes these states once, so nothing moves);
- the source binary loads our stream and the guest verifies on there too.

QEMU 7.2 reads AVX and AVX-512 registers as 0 on this kind of host (its
own round trip loses them; docs/devel/qemu-interop.md): its guest sets
up no AVX-512. A host without AVX-512 or PV features runs with fewer
states (the CPUSTATE line says which), never with none.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE;
VMTEST_QEMU10 (default /opt/qemu-10.0/bin/qemu-system-x86_64) and
VMTEST_PEER (QEMU 7.2, default /usr/bin/qemu-system-x86_64).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE, QEMU, SRC_DIR, analyze  # noqa: E402
from analyzevm import PEER, PEER_CPU, VM, skip_class_without_kvm  # noqa: E402

QEMU10 = os.environ.get('VMTEST_QEMU10', '/opt/qemu-10.0/bin/qemu-system-x86_64')
VMDESC_DIR = os.path.join(SRC_DIR, 'docs', 'devel', 'qemu-vmdesc')
COMPARE = os.path.join(SRC_DIR, 'scripts', 'vmdesc-compare.py')
ALL = 'x87,avx512,tscdl,misc,tscadj,pv,shadow'
# The subsections the guest's states make QEMU send, by cpustate word.
SUBS = {
    'x87': ['cpu/fpop_ip_dp'],
    'avx512': ['cpu/avx512'],
    'tscdl': ['cpu/msr_tscdeadline'],
    'misc': ['cpu/msr_ia32_misc_enable'],
    'tscadj': ['cpu/msr_tsc_adjust'],
    'pv': ['cpu/async_pf_msr', 'cpu/async_pf_int_msr', 'cpu/async_pv_eoi_msr',
           'cpu/steal_time_msr', 'cpu/poll_control_msr'],
}


def cpu_state(path):
    rc, doc, err = analyze(path, '-d', 'state')
    if rc != 0 or doc is None:
        raise AssertionError('analyze-migration -d state %s: %s' % (path, err[-500:]))
    return doc['devices']['cpu (0)']


class CpuSubsections(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-cpu-subsections')
        cls.tmp = tempfile.mkdtemp(prefix='cpusub-')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def passes_after(self, vm, n):
        """Wait for n PASS lines on vm's serial line; no FAIL among them."""
        end = time.monotonic() + DEADLINE
        while len(re.findall(r'^PASS ', vm.serial_text(), re.M)) < n:
            self.assertNotIn('FAIL', vm.serial_text())
            self.assertIsNone(vm.proc.poll(), 'guest exited: %s; log: %s'
                              % (vm.serial_text()[-300:], vm.log_tail()))
            self.assertLess(time.monotonic(), end, 'no PASS: %s' % vm.serial_text()[-300:])
            time.sleep(0.05)
        self.assertNotIn('FAIL', vm.serial_text())

    def save_source(self, binary, cpu, states, out):
        """Run the guest with cpustate=states on binary; save it to out. The states set up."""
        vm = VM(self.tmp, 'src', mem_mb=64, binary=binary, cpu=cpu,
                append='mode=verify mem=16 cpustate=' + states)
        try:
            line = vm.wait_serial(r'^CPUSTATE [^\n]*\n').group(0).split()
            self.passes_after(vm, 2)
            vm.qmp.cmd('stop')
            vm.migrate(out)
        finally:
            vm.shutdown()
        return [w for w in line[1:] if '=' not in w and not w.startswith('no-')]

    def load(self, binary, cpu, src, out, name):
        """Load src into binary, let the guest verify on, save to out (if given)."""
        vm = VM(self.tmp, name, mem_mb=64, binary=binary, cpu=cpu, append='x',
                extra=['-incoming', 'exec:cat ' + src])
        try:
            end = time.monotonic() + DEADLINE
            while vm.qmp.cmd('query-status')['status'] != 'paused':
                self.assertLess(time.monotonic(), end, 'incoming migration did not end: %s'
                                % vm.log_tail())
                self.assertIsNone(vm.proc.poll(), 'load failed: %s' % vm.log_tail())
                time.sleep(0.05)
            vm.qmp.cmd('cont')
            self.passes_after(vm, 2)
            if out:
                vm.qmp.cmd('stop')
                vm.migrate(out)
        finally:
            vm.shutdown()

    def round_trip(self, binary, cpu, states, vmdesc):
        tag = os.path.basename(vmdesc or 'ours')
        a, b = self.path(tag + '-src.mig'), self.path(tag + '-ours.mig')
        have = self.save_source(binary, cpu, states, a)
        for w in ('x87', 'tscdl', 'misc'):
            self.assertIn(w, have, 'the guest could not set up %s' % w)
        self.load(QEMU, None, a, b, 'dst')
        if vmdesc:
            p = subprocess.run([sys.executable, COMPARE, '--sections', 'cpu,cpu_common', b,
                                os.path.join(VMDESC_DIR, vmdesc)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=DEADLINE)
            self.assertEqual(p.returncode, 0, p.stdout.decode())
        sa, sb = cpu_state(a), cpu_state(b)
        expect = [s for w in have for s in SUBS.get(w, [])] + ['cpu/tsc_khz']
        for name in expect:
            self.assertIn(name, sa, 'the source did not send %s' % name)
            self.assertEqual(sb.get(name), sa[name], name)
        self.assertEqual(sorted(k for k in sb if k.startswith('cpu/')),
                         sorted(k for k in sa if k.startswith('cpu/')))
        for field in ('env.fpregs', 'env.fpus_vmstate', 'env.fptag_vmstate', 'env.xstate_bv'):
            self.assertEqual(sb[field], sa[field], field)
        if binary != QEMU:
            self.load(binary, cpu, b, None, 'back')

    def test_qemu10(self):
        if not os.access(QEMU10, os.X_OK):
            self.skipTest('no QEMU 10.0 at %s' % QEMU10)
        self.round_trip(QEMU10, PEER_CPU, ALL, 'cpu-subsections-qemu-10.0.json')

    def test_qemu72(self):
        if not os.access(PEER, os.X_OK):
            self.skipTest('no QEMU 7.2 at %s' % PEER)
        self.round_trip(PEER, PEER_CPU, ALL.replace('avx512,', ''),
                        'cpu-subsections-qemu-7.2.json')

    def test_ours(self):
        self.round_trip(QEMU, PEER_CPU, ALL, None)


if __name__ == '__main__':
    unittest.main(verbosity=2)
