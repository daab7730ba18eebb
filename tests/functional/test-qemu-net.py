#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-qemu-net.py: a guest with virtio-net moves from QEMU into this binary
and back (issue 37), live, over tcp: the workload firmware's udpecho mode
behind -netdev user with a hostfwd rule, microvm with acpi=off (QEMU's
devices then sit where ours do and interrupt through the one IOAPIC) and
QEMU's transport modern (-global virtio-mmio.force-legacy=false, which we
accept as what we always are).

A host client (scripts/netclient.py) sends numbered datagrams to every
VM's hostfwd port; each hop must leave the guest answering, with the reply
count going on from the source's, and no datagram lost outside the hop's
STOP..RESUME window. The same with the guest paused across both hops
(the device's state through ours without running there). QEMU 10.0's
"virtio-mmio@.../virtio-net" and "slirp" sections of a running NIC, loaded
here and saved again, are QEMU's bytes. The transport addresses and
interrupts of three NICs are QEMU's.

All of it again with ACPI (QEMU's default microvm, the *Acpi classes):
QEMU's transports then sit in 24 slots on its second IOAPIC, which ours
emulates (hw/microvm-ioapic2.c), and its "ioapic" 1 section comes back
byte for byte too; and ours -> ours -> ours with ACPI. With the firmware's
irq=1 the guest takes its NIC's interrupts through the second IOAPIC (or,
with ioapic2=off, KVM's at QEMU's GSI 23) and their count must grow on
every side of every hop.

After each hop the guest must print within WAKE_S: a guest halted at the
switchover that never wakes (a PIT tick lost in the PIC's state, fixed in
accel/kvm/kvm-irqchip-state.c) fails here by name.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure), VMTEST_QEMU10 (QEMU 10.0's
binary, default /opt/qemu-10.0/bin/qemu-system-x86_64).
"""

import os
import re
import shutil
import socket
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE, QEMU, SRC_DIR  # noqa: E402
from analyzevm import (  # noqa: E402
    MonitorGone, PEER, VM, need_binary, skip_class_without_kvm, free_port, QEMU10)

sys.path.insert(0, os.path.join(SRC_DIR, 'scripts'))
from netclient import UdpEchoClient  # noqa: E402
from streamrec import StreamRecorder, keep_states  # noqa: E402

MEM_MB = 128
# A STAT line every 250 ms once it runs: each hop waits for the
# destination's first (assert_woke) and for its interrupt count to grow.
APPEND = 'mode=udpecho port=7 report_ms=250'
RATE = 50                       # datagrams per second
WAKE_S = 10                     # no STAT line in this long: a halted vCPU never woken
MACHINE = ('-M', 'microvm,acpi=off', '-global', 'virtio-mmio.force-legacy=false')
NET_SECTION = 'virtio-mmio@00000000feb00e00/virtio-net'
# The guest's READY line: the transport found, how, and the GSI it was told of.
READY_FOUND = 'transport=0xfeb00e00 found=cmdline irq=12'
# QEMU's default: ACPI, the second IOAPIC, 24 slots; the kernel is told nothing.
MACHINE_ACPI = ('-M', 'microvm', '-global', 'virtio-mmio.force-legacy=false')
NET_SECTION_ACPI = 'virtio-mmio@00000000feb02e00/virtio-net'
READY_FOUND_ACPI = 'transport=0xfeb02e00 found=probe irq=0'


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def event_time(ev):
    ts = ev['timestamp']
    return ts['seconds'] + ts['microseconds'] / 1e6


class NetInteropCase(unittest.TestCase):
    machine = MACHINE
    net_section = NET_SECTION
    ready_found = READY_FOUND
    append = APPEND
    irq = False                 # the guest takes rx interrupts (irq=1) and counts them

    @classmethod
    def setUpClass(cls):
        skip_class_without_kvm('test-qemu-net')
        cls.tmp = tempfile.mkdtemp(prefix='qemu-mig-net-')

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.vms = []
        self.ports = []
        self.client = None

    def tearDown(self):
        if self.client:
            self.client.stop()
        for vm in self.vms:
            vm.shutdown()

    def vm(self, binary, name, incoming=False):
        port = free_udp_port()
        args = list(self.machine) + ['-netdev', 'user,id=n0,hostfwd=udp:127.0.0.1:%d-:7' % port,
                                '-device', 'virtio-net-device,netdev=n0']
        if incoming:
            mig = free_port()
            args += ['-incoming', 'tcp:127.0.0.1:%d' % mig]
        vm = VM(self.tmp, '%s%d' % (name, len(self.vms)), mem_mb=MEM_MB, append=self.append,
                binary=binary, extra=args)
        vm.mig_port = mig if incoming else None
        vm.name = '%s (%s)' % (name, binary)
        self.vms.append(vm)
        self.ports.append(port)
        if self.client:
            self.client.ports.append(port)
        return vm

    def status(self, vm):
        try:
            if vm.proc.poll() is None:
                return vm.qmp.cmd('query-status')['status']
        except MonitorGone:
            # It exited between the poll and the command: its log says why.
            vm.proc.wait(timeout=DEADLINE)
        self.fail('%s exited with status %d: %s' % (vm.name, vm.proc.returncode,
                                                    vm.log_tail()))

    def wait_more_echoes(self, n):
        start = self.client.echoes()
        try:
            self.client.wait_echoes(start + n, DEADLINE)
        except TimeoutError as e:
            self.fail('%s; last VM: %s' % (e, self.vms[-1].serial_text()[-400:]))

    def replies(self, vm):
        """The guest's reply counts ("seq=M") seen so far, from its STAT lines' sent=."""
        return [int(m) for m in re.findall(r'STAT [^\n]* sent=(\d+)', vm.serial_text())]

    def migrate_recorded(self, src, dst):
        """Start migrating @src into @dst through a StreamRecorder: a rare
        hang after the hop keeps the very stream @dst took (assert_woke)."""
        dst.stream = os.path.join(self.tmp, '%s.mig' % os.path.basename(dst.serial))
        relay = StreamRecorder(dst.mig_port, dst.stream)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % relay.port)
        return relay

    def hop(self, src, dst_binary, name):
        """Live-migrate @src into a new VM of @dst_binary; returns it, answering."""
        dst = self.vm(dst_binary, name, incoming=True)
        relay = self.migrate_recorded(src, dst)
        end = time.monotonic() + DEADLINE
        while True:
            info = src.qmp.cmd('query-migrate')
            if info.get('status') in ('completed', 'failed', 'cancelled'):
                break
            self.assertLess(time.monotonic(), end, 'migration not done: %s' % info)
            time.sleep(0.05)
        relay.join()
        self.assertEqual(info['status'], 'completed', '%s -> %s: %s; source log: %s; '
                         'destination log: %s' % (src.name, dst.name, info, src.log_tail(),
                                                  dst.log_tail()))
        while self.status(dst) != 'running':
            self.assertLess(time.monotonic(), end, '%s never ran: %s' % (dst.name,
                                                                         dst.log_tail()))
            time.sleep(0.05)
        self.assert_woke(dst, '%s -> %s' % (src.name, dst.name))
        irqs0 = self.irqs(dst)
        self.wait_more_echoes(RATE)     # a second of answers from the destination
        self.assertNotIn('FAIL', dst.serial_text(), dst.name)
        if self.irq:
            # The destination's IOAPIC delivers: the count goes on growing there.
            end = time.monotonic() + WAKE_S
            while self.irqs(dst) <= irqs0:
                self.assertLess(time.monotonic(), end, '%s: no interrupt after %s -> %s (%d)'
                                % (dst.name, src.name, dst.name, irqs0))
                time.sleep(0.2)
        return dst

    def irqs(self, vm):
        """The guest's interrupt count in its last STAT line (irq=1), or -1."""
        counts = re.findall(r'STAT [^\n]* irqs=(\d+)', vm.serial_text())
        return int(counts[-1]) if counts else -1

    def assert_woke(self, dst, hop):
        """The firmware prints a STAT line every 250 ms: none in WAKE_S is a
        halted vCPU never woken (the chips' state, not virtio's)."""
        end = time.monotonic() + WAKE_S
        while 'STAT' not in dst.serial_text():
            if time.monotonic() > end:
                streams = [vm.stream for vm in self.vms if getattr(vm, 'stream', None)]
                kept = keep_states('net', streams, dst)
                self.fail('%s: the guest never ran after %s (a halted vCPU not woken); %s'
                          % (dst.name, hop, kept))
            time.sleep(0.1)

    def roundtrip(self, peer):
        src = self.vm(peer, 'peer')
        ready = src.wait_serial(r'READY [^\n]*\n').group(0)
        self.client = UdpEchoClient(self.ports, RATE)
        self.wait_more_echoes(RATE)
        t0 = time.time()
        ours = self.hop(src, QEMU, 'ours')
        # The guest sees the same device on both: address, interrupt, MAC, queues.
        self.assertIn(self.ready_found, ready, ready)
        back = self.hop(ours, peer, 'peer')
        time.sleep(0.5)
        t1 = time.time()
        s = self.client.summary(t0, t1, settle=0.5)
        # Loss only around the two switchovers: at most a second's worth each.
        self.assertLessEqual(s['net-lost'], 2 * RATE, s)
        self.assertEqual(self.status(back), 'running')
        self.assertNotIn('FAIL', back.serial_text(), back.name)


    def wait_status(self, vm, want):
        end = time.monotonic() + DEADLINE
        while self.status(vm) != want:
            self.assertLess(time.monotonic(), end, '%s: not %s: %s' % (vm.name, want,
                                                                       vm.log_tail()))
            time.sleep(0.05)

    def paused_hop(self, src, dst_binary, name):
        """Migrate paused @src into a new VM of @dst_binary; it stays paused."""
        dst = self.vm(dst_binary, name, incoming=True)
        relay = self.migrate_recorded(src, dst)
        end = time.monotonic() + DEADLINE
        while True:
            info = src.qmp.cmd('query-migrate')
            if info.get('status') in ('completed', 'failed', 'cancelled'):
                break
            self.assertLess(time.monotonic(), end, 'migration not done: %s' % info)
            time.sleep(0.05)
        relay.join()
        self.assertEqual(info['status'], 'completed', '%s -> %s: %s; destination log: %s'
                         % (src.name, dst.name, info, dst.log_tail()))
        self.wait_status(dst, 'paused')
        return dst

    def paused_roundtrip(self, peer):
        """The device's state through ours and back, the guest paused on our side."""
        src = self.vm(peer, 'peer')
        src.wait_serial(r'READY [^\n]*\n')
        self.client = UdpEchoClient(self.ports, RATE)
        self.wait_more_echoes(RATE)
        src.qmp.cmd('stop')
        ours = self.paused_hop(src, QEMU, 'ours')
        back = self.paused_hop(ours, peer, 'peer')
        back.qmp.cmd('cont')
        self.assert_woke(back, 'ours -> QEMU, paused')
        self.wait_more_echoes(RATE)
        self.assertNotIn('FAIL', back.serial_text(), back.name)


def section_bytes(path, idstr, instance=0):
    """The bytes of full section @idstr @instance of the stream at @path,
    between its header (name, instance, version) and its footer."""
    with open(path, 'rb') as f:
        data = f.read()
    name = idstr.encode()
    at = data.find(bytes([len(name)]) + name + instance.to_bytes(4, 'big'))
    assert at > 4, 'no section %s in %s' % (idstr, path)
    section_id = data[at - 4:at]
    start = at + 1 + len(name) + 8
    # The footer (0x7e, section id) followed by the next record's type.
    end = start
    while True:
        end = data.find(b'\x7e' + section_id, end)
        assert end > 0, 'no footer for %s' % idstr
        if data[end + 5:end + 6] in (b'\x00', b'\x01', b'\x02', b'\x03', b'\x04', b'\x06',
                                     b'\x07', b'\x08'):
            return data[start:end]
        end += 1


class TestSectionBytes(NetInteropCase):
    sections = ((NET_SECTION, 0), ('slirp', 0))

    def test_qemu_section_saved_back_identical(self):
        """QEMU 10.0's sections of a running NIC, loaded here (the guest
        paused) and saved again, are QEMU's bytes: every field learned."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        src = self.vm(QEMU10, 'peer')
        src.wait_serial(r'READY [^\n]*\n')
        self.client = UdpEchoClient(self.ports, RATE)
        self.wait_more_echoes(RATE)
        src.qmp.cmd('stop')
        theirs = os.path.join(self.tmp, 'theirs.mig')
        ours_file = os.path.join(self.tmp, 'ours.mig')
        src.migrate(theirs)
        ours = VM(self.tmp, 'bytes-ours', mem_mb=MEM_MB, append=APPEND, binary=QEMU,
                  extra=list(self.machine) + ['-netdev', 'user,id=n0',
                                         '-device', 'virtio-net-device,netdev=n0',
                                         '-incoming', 'exec:cat ' + theirs])
        ours.name = 'ours'
        self.vms.append(ours)
        self.wait_status(ours, 'paused')
        ours.migrate(ours_file)
        for idstr, instance in self.sections:
            a = section_bytes(theirs, idstr, instance)
            b = section_bytes(ours_file, idstr, instance)
            self.assertGreater(len(a), 0, idstr)
            self.assertEqual(a.hex(), b.hex(), idstr)


class TestQemu10Net(NetInteropCase):
    def test_roundtrip(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10)

    def test_paused_roundtrip(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.paused_roundtrip(QEMU10)


class TestQemu72Net(NetInteropCase):
    def test_roundtrip(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.roundtrip(PEER)

    def test_paused_roundtrip(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.paused_roundtrip(PEER)


class AcpiCase(NetInteropCase):
    """QEMU's default microvm: ACPI and the second IOAPIC."""
    machine = MACHINE_ACPI
    net_section = NET_SECTION_ACPI
    ready_found = READY_FOUND_ACPI


class TestSectionBytesAcpi(AcpiCase, TestSectionBytes):
    # The second IOAPIC's registers come back as QEMU sent them.
    sections = ((NET_SECTION_ACPI, 0), ('slirp', 0), ('ioapic', 1))


class TestQemu10NetAcpi(AcpiCase):
    def test_roundtrip(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10)

    def test_paused_roundtrip(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.paused_roundtrip(QEMU10)


class TestQemu72NetAcpi(AcpiCase):
    def test_roundtrip(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.roundtrip(PEER)

    def test_paused_roundtrip(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.paused_roundtrip(PEER)


class TestOursNetAcpi(AcpiCase):
    def test_roundtrip(self):
        """ours -> ours -> ours, live, with ACPI."""
        self.roundtrip(QEMU)


class TestPlacement(NetInteropCase):
    def test_same_slots_as_qemu(self):
        """Three NICs: the same addresses and interrupts on both binaries (acpi=off)."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        lines = {}
        for binary in (QEMU10, QEMU):
            args = list(MACHINE)
            for i in range(3):
                args += ['-netdev', 'user,id=n%d' % i,
                         '-device', 'virtio-net-device,netdev=n%d' % i]
            vm = VM(self.tmp, 'place%d' % len(self.vms), mem_mb=MEM_MB,
                    append='mode=verify mem=16', binary=binary, extra=args)
            self.vms.append(vm)
            vm.ready()
            time.sleep(0.2)
            mem = os.path.join(self.tmp, 'place.ram')
            self.assertTrue(vm.pmemsave(mem, MEM_MB << 20))
            with open(mem, 'rb') as f:
                m = re.search(rb'mode=verify mem=16[ -~]*', f.read())
            self.assertIsNotNone(m, binary)
            lines[binary] = m.group(0).decode()
        self.assertEqual(lines[QEMU10], lines[QEMU])
        self.assertIn('virtio_mmio.device=512@0xfeb00e00:12 virtio_mmio.device=512@0xfeb00c00:11 '
                      'virtio_mmio.device=512@0xfeb00a00:10', lines[QEMU])


class IrqCase(AcpiCase):
    """The guest routes its NIC's interrupt through the second IOAPIC."""
    append = APPEND + ' irq=1'
    irq = True


class TestNetAcpiIrq(IrqCase):
    """Interrupts delivered after every hop, QEMU -> ours -> QEMU and ours -> ours."""
    def test_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10)

    def test_qemu72(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.roundtrip(PEER)

    def test_ours(self):
        self.roundtrip(QEMU)


class TestNetIoapic2OffIrq(IrqCase):
    """ACPI without the second IOAPIC: QEMU's DSDT puts slot 7 on GSI 23 of
    KVM's IOAPIC. The guest is told so (the DSDT is QEMU's alone) and takes
    its interrupts there on both sides of every hop."""
    machine = ('-M', 'microvm,ioapic2=off', '-global', 'virtio-mmio.force-legacy=false')
    net_section = NET_SECTION
    ready_found = 'transport=0xfeb00e00 found=probe irq=0'
    append = APPEND + ' irq=gsi:23'

    def test_qemu10(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10)


class TestPlacementAcpi(AcpiCase):
    def test_same_slots_as_qemu(self):
        """With ACPI, three NICs: the guest probes the 24 slots upwards and
        finds the same NIC at the same address on both. (QEMU's microvm
        creates no NIC for -nic: "requested NIC ... was not created".)"""
        need_binary(self, QEMU10, 'QEMU 10.0')
        found = {}
        for binary in (QEMU10, QEMU):
            args = list(self.machine)
            for i in range(3):
                args += ['-netdev', 'user,id=n%d' % i,
                         '-device', 'virtio-net-device,netdev=n%d' % i]
            vm = VM(self.tmp, 'place%d' % len(self.vms), mem_mb=MEM_MB, append=self.append,
                    binary=binary, extra=args)
            self.vms.append(vm)
            ready = vm.wait_serial(r'READY [^\n]*\n').group(0)
            found[binary] = re.search(r'mac=\S+ transport=\S+ found=\S+ irq=\S+',
                                      ready).group(0)
        self.assertEqual(found[QEMU10], found[QEMU])
        # Three transports from slot 23 down: the lowest, 0xfeb02a00, is the third NIC.
        self.assertIn('mac=52:54:00:12:34:58 transport=0xfeb02a00 found=probe irq=0',
                      found[QEMU])


if __name__ == '__main__':
    unittest.main(verbosity=2)
