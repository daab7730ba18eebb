#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-qemu-interop.py: a running guest moves from QEMU into this binary and
back (issue 37), with QEMU 7.2 (Debian's) and QEMU 10.0 (bookworm-backports,
scripts/install-qemu10.sh) as the other end.

Every hop is a live precopy over tcp with QMP's migrate, both ends started
alike (-M microvm -cpu host,-arch-capabilities -nodefaults, the workload
firmware in verify mode): the guest must verify on after each hop with no
FAIL. A paused guest's RAM must arrive byte-identical (pmemsave on both
ends). A stream from a QEMU whose machine differs is refused, and the
destination never runs it. A guest drawing into isa-vga's VBE framebuffer
(mode=draw) keeps drawing after each hop, and our "vga" section and RAM
blocks have QEMU's layout.

Environment: QTEST_QEMU_BINARY, VMTEST_FIRMWARE, VMTEST_DEADLINE,
VMTEST_FAIL_ON_SKIP (a skip is a failure), VMTEST_QEMU10 (QEMU 10.0's
binary, default /opt/qemu-10.0/bin/qemu-system-x86_64).
"""

import filecmp
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE, QEMU  # noqa: E402
from analyzevm import PEER, VM, need_binary, MonitorGone, free_port, QEMU10  # noqa: E402
from guestcase import GuestCase  # noqa: E402
from streamrec import StreamRecorder, keep_states  # noqa: E402

MEM_MB = 128
APPEND = 'mode=verify mem=32'
# verify rewrites its 32 MiB every pass, so each mode has pages to send again.
DIRTY = APPEND
VGA = ('-device', 'isa-vga')
# rate=0: frames back to back, no HLT between them. Paced at 30 fps the guest
# halts for PIT ticks, and a halted guest slept on after a hop into ours once
# in 20 soak runs (QEMU 7.2, run 13; docs/devel/qemu-interop.md, "What is
# left"): SoakHalting soaks that; these tests are about isa-vga's state.
DRAW = 'mode=draw width=640 height=480 bpp=32 rate=0'
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts')


def ram_diff(a, b):
    """The 4 KiB pages where two RAM dumps differ (the first few)."""
    pages = []
    with open(a, 'rb') as fa, open(b, 'rb') as fb:
        off = 0
        while len(pages) < 8:
            x, y = fa.read(4096), fb.read(4096)
            if not x and not y:
                break
            if x != y:
                pages.append(hex(off))
            off += 4096
    return 'pages ' + ', '.join(pages)


def ram_blocks(path):
    """The (name, bytes) of each RAM block a stream's RAM section lists, in order
    (its first section; the stream's setup part, no capabilities)."""
    with open(path, 'rb') as f:
        data = f.read(1 << 16)
    assert data[:8] == b'QEVM\0\0\0\3', path
    i = 8
    if data[i] == 0x07:                         # the configuration section
        i += 5 + int.from_bytes(data[i + 1:i + 5], 'big')
    assert data[i] == 0x01, 'no section start at %d' % i
    i += 5
    name = data[i + 1:i + 1 + data[i]]
    assert name == b'ram', name
    i += 1 + data[i] + 8
    total = int.from_bytes(data[i:i + 8], 'big') & ~0xfff
    i += 8
    blocks = []
    while total > 0:
        n = data[i]
        block = data[i + 1:i + 1 + n].decode()
        size = int.from_bytes(data[i + 1 + n:i + 9 + n], 'big')
        blocks.append((block, size))
        total -= size
        i += 9 + n
    return blocks


class InteropCase(GuestCase):
    NAME = 'test-qemu-interop'
    TMP_PREFIX = 'qemu-mig-interop-'
    POLL = 0.05

    def vm(self, binary, name, incoming=False, mem_mb=MEM_MB, extra=(), append=None):
        args = list(extra)
        port = None
        if incoming:
            port = free_port()
            args += ['-incoming', 'tcp:127.0.0.1:%d' % port]
        vm = self.keep(VM(self.tmp, '%s%d' % (name, len(self.vms)), mem_mb=mem_mb,
                          append=append or APPEND, binary=binary, extra=args),
                       '%s (%s)' % (name, binary))
        vm.port = port
        return vm

    def status(self, vm):
        """query-status, or a failure that says why the VM is gone."""
        if vm.proc.poll() is not None:
            self.fail('%s exited with status %d: %s' % (vm.name, vm.proc.returncode, vm.log_tail()))
        return vm.qmp.cmd('query-status')['status']

    def wait_end(self, src, dst):
        return self.wait_migration(src, also=dst)

    def total_frames(self, vm):
        """The draw guest's frame count in its last STAT line (0 before one), and no FAIL."""
        text = vm.serial_text()
        self.assertNotIn('FAIL', text, '%s: %s' % (vm.name, text[-300:]))
        counts = re.findall(r'^STAT [^\n]*total_frames=(\d+)[^\n]*\n', text, re.M)
        return int(counts[-1]) if counts else 0

    def wait_frames(self, vm):
        """The draw guest's frame count grows between two STAT lines from now: it
        draws on (on a new destination the first line may still count only the
        source's frames)."""
        start = self.total_frames(vm) or None
        end = time.monotonic() + DEADLINE
        while True:
            total = self.total_frames(vm)
            if start is None and total:
                start = total
            elif start is not None and total > start:
                return
            self.assertLess(time.monotonic(), end, '%s: no new frames; serial: %s; log: %s'
                            % (vm.name, vm.serial_text()[-300:], vm.log_tail()))
            self.assertIsNone(vm.proc.poll(), '%s exited: %s' % (vm.name, vm.log_tail()))
            time.sleep(0.05)

    def destination(self, src, binary, name, extra=(), caps=(), params=None, append=None):
        """A VM of @binary listening on dst.port for @src's stream. With @caps,
        they and @params go to both ends, the destination's before it listens
        (-incoming defer: QEMU 10.0 wants multifd and preempt set first)."""
        if not caps:
            return self.vm(binary, name, incoming=True, extra=extra, append=append)
        dst = self.vm(binary, name, extra=list(extra) + ['-incoming', 'defer'], append=append)
        dst.port = free_port()
        for vm in (dst, src):
            vm.qmp.cmd('migrate-set-capabilities',
                       capabilities=[{'capability': c, 'state': True} for c in caps])
            if params:
                vm.qmp.cmd('migrate-set-parameters', **params)
        dst.qmp.cmd('migrate-incoming', uri='tcp:127.0.0.1:%d' % dst.port)
        return dst

    def hop(self, src, dst_binary, name, extra=(), caps=(), params=None, postcopy=False,
            append=None, settle=None):
        """Live-migrate @src into a new VM of @dst_binary; returns it, running.
        @caps and @params go to both ends, the destination's before it listens
        (-incoming defer: QEMU 10.0 wants multifd and preempt set first).
        @settle(dst) waits for the guest to go on (default: two verify passes)."""
        dst = self.destination(src, dst_binary, name, extra, caps, params, append)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        if postcopy:
            end = time.monotonic() + DEADLINE
            while src.qmp.cmd('query-migrate').get('status') not in ('active', 'completed',
                                                                      'failed'):
                self.assertLess(time.monotonic(), end)
                time.sleep(0.02)
            src.qmp.cmd('migrate-start-postcopy')
        info = self.wait_end(src, dst)
        self.assertEqual(info['status'], 'completed', '%s -> %s: %s; source log: %s; '
                         'destination log: %s' % (src.name, dst.name, info, src.log_tail(),
                                                  dst.log_tail()))
        end = time.monotonic() + DEADLINE
        while self.status(dst) != 'running':
            self.assertLess(time.monotonic(), end, '%s never ran: %s' % (dst.name, dst.log_tail()))
            time.sleep(0.05)
        if settle:
            settle(dst)
        else:
            self.wait_passes(dst, 2)
        return dst

    def vga_roundtrip(self, peer):
        """The draw guest, isa-vga with VBE at 640x480x32, QEMU -> ours -> QEMU:
        frames go on after each hop. QEMU's stream has no VBE state, so our
        display is dark after the first hop (the guest draws on into VRAM)."""
        src = self.vm(peer, 'peer', extra=VGA, append=DRAW)
        self.wait_frames(src)
        ours = self.hop(src, QEMU, 'ours', VGA, append=DRAW, settle=self.wait_frames)
        back = self.hop(ours, peer, 'peer', VGA, append=DRAW, settle=self.wait_frames)
        self.assertEqual(back.qmp.cmd('query-status')['status'], 'running')

    def vga_layout(self, peer):
        """A paused draw guest saved by @peer and by us: the same "vga" section
        layout and the same RAM blocks in the same order (an 8 MiB vga.vram
        right after microvm.ram, before the ROMs)."""
        streams = []
        for binary, name in ((peer, 'peer'), (QEMU, 'ours')):
            vm = self.vm(binary, name, extra=VGA, append=DRAW)
            vm.qmp.cmd('stop')
            path = os.path.join(self.tmp, '%s-vga.mig' % name)
            vm.migrate(path)
            vm.shutdown()
            streams.append(path)
        out = subprocess.run([sys.executable, os.path.join(SCRIPTS, 'vmdesc-compare.py'),
                              '--sections', 'vga'] + streams, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        blocks = []
        for path in streams:
            out = subprocess.run([sys.executable, os.path.join(SCRIPTS, 'analyze-migration.py'),
                                  '-f', path, '-d', 'desc'], capture_output=True, text=True,
                                 check=True)
            desc = json.loads(out.stdout)
            self.assertIn('vga', [d['name'] for d in desc['devices']])
            blocks.append(ram_blocks(path))
        self.assertEqual(blocks[0], blocks[1])
        self.assertEqual(blocks[1][:2], [('microvm.ram', MEM_MB << 20), ('vga.vram', 8 << 20)])

    def roundtrip(self, peer, extra=(), append=None, **mode):
        src = self.vm(peer, 'peer', extra=extra, append=append)
        src.ready()
        self.wait_passes(src, 2)
        ours = self.hop(src, QEMU, 'ours', extra, **mode)
        back = self.hop(ours, peer, 'peer', extra, **mode)
        self.assertEqual(back.qmp.cmd('query-status')['status'], 'running')

    def paused_ram(self, peer, first_ours, caps=(), params=None):
        """A paused guest's RAM arrives byte-identical, in either direction
        (@caps and @params on both ends, set before the destination listens)."""
        src = self.vm(QEMU if first_ours else peer, 'src')
        src.ready()
        self.wait_passes(src, 1)
        src.qmp.cmd('stop')
        dst = self.destination(src, peer if first_ours else QEMU, 'dst', (), caps, params)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        info = self.wait_end(src, dst)
        self.assertEqual(info['status'], 'completed', '%s; destination: %s'
                         % (info, dst.log_tail()))
        end = time.monotonic() + DEADLINE
        while self.status(dst) == 'inmigrate':
            self.assertLess(time.monotonic(), end, dst.log_tail())
            time.sleep(0.05)
        self.assertEqual(dst.qmp.cmd('query-status')['status'], 'paused')
        a, b = os.path.join(self.tmp, 'src.ram'), os.path.join(self.tmp, 'dst.ram')
        size = MEM_MB << 20
        self.assertTrue(src.pmemsave(a, size) and dst.pmemsave(b, size))
        self.assertTrue(filecmp.cmp(a, b, shallow=False), 'RAM differs after the move: %s'
                        % ram_diff(a, b))
        # And it runs on from there.
        dst.qmp.cmd('cont')
        self.wait_passes(dst, 2)


class TestQemu72(InteropCase):
    def test_roundtrip(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.roundtrip(PEER)

    def test_paused_ram_from_qemu(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.paused_ram(PEER, first_ours=False)

    def test_vga_roundtrip(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.vga_roundtrip(PEER)

    def test_vga_layout(self):
        need_binary(self, PEER, 'QEMU 7.2')
        self.vga_layout(PEER)


class TestQemu10(InteropCase):
    def test_roundtrip(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10)

    def test_vga_roundtrip(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.vga_roundtrip(QEMU10)

    def test_vga_layout(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.vga_layout(QEMU10)

    def test_roundtrip_smp2(self):
        """Two vCPUs (the second waits for its SIPI): both vCPUs' sections each way."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10, ('-smp', '2'))

    def test_roundtrip_acpi_off(self):
        """acpi=off: no acpi-ged, no ACPI ROM blocks, one IOAPIC, on both."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10, ('-M', 'microvm,acpi=off'))

    def test_multifd_zstd(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10, append=DIRTY, caps=['multifd'],
                       params={'multifd-channels': 2, 'multifd-compression': 'zstd'})

    def test_paused_ram_multifd_zstd_to_qemu(self):
        """The guest's random pages go as zstd frames of raw blocks: QEMU
        10.0's decoder must place every byte of them."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.paused_ram(QEMU10, first_ours=True, caps=['multifd'],
                        params={'multifd-channels': 2, 'multifd-compression': 'zstd'})

    def test_paused_ram_multifd_zlib_to_qemu(self):
        """Random pages switch our deflate streams to level 0 (stored
        blocks) and back: QEMU 10.0's inflate must place every byte."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.paused_ram(QEMU10, first_ours=True, caps=['multifd'],
                        params={'multifd-channels': 2, 'multifd-compression': 'zlib'})

    def test_xbzrle(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10, append=DIRTY, caps=['xbzrle'],
                       params={'max-bandwidth': 64 << 20, 'downtime-limit': 300})

    def test_postcopy(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10, append=DIRTY, caps=['postcopy-ram'],
                       params={'max-bandwidth': 32 << 20}, postcopy=True)

    def test_postcopy_preempt(self):
        """Requested pages on the preempt channel, each page once (a QEMU
        destination fails on a second copy), both ways."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.roundtrip(QEMU10, append=DIRTY, caps=['postcopy-ram', 'postcopy-preempt'],
                       params={'max-bandwidth': 32 << 20}, postcopy=True)

    def mapped_ram_file(self, writer, reader, lazy=False):
        """A mapped-ram snapshot file of a running guest, written by @writer, restored by @reader."""
        path = os.path.join(self.tmp, 'snap-%d' % len(self.vms))
        src = self.vm(writer, 'writer', append=DIRTY)
        src.ready()
        self.wait_passes(src, 1)
        src.qmp.cmd('migrate-set-capabilities',
                    capabilities=[{'capability': 'mapped-ram', 'state': True}])
        src.migrate(path, uri='file:' + path)
        src.shutdown()
        extra = ['-incoming', 'defer']
        if lazy:
            extra = ['-global', 'migration.x-lazy-restore=on'] + extra
        dst = self.vm(reader, 'reader', extra=extra, append=DIRTY)
        dst.qmp.cmd('migrate-set-capabilities',
                    capabilities=[{'capability': 'mapped-ram', 'state': True}])
        dst.qmp.cmd('migrate-incoming', uri='file:' + path)
        # The writer's guest was running: the restored one runs on by itself.
        end = time.monotonic() + DEADLINE
        while self.status(dst) != 'running':
            self.assertLess(time.monotonic(), end, 'restore not done: %s; %s'
                            % (dst.qmp.cmd('query-migrate'), dst.log_tail()))
            time.sleep(0.05)
        self.wait_passes(dst, 2)

    def test_mapped_ram_from_qemu(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.mapped_ram_file(QEMU10, QEMU)

    def test_mapped_ram_from_qemu_lazy(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.mapped_ram_file(QEMU10, QEMU, lazy=True)

    def test_mapped_ram_to_qemu(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.mapped_ram_file(QEMU, QEMU10)

    def test_paused_ram_from_qemu(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.paused_ram(QEMU10, first_ours=False)

    def test_paused_ram_to_qemu(self):
        need_binary(self, QEMU10, 'QEMU 10.0')
        self.paused_ram(QEMU10, first_ours=True)


class SoakHalting(InteropCase):
    """A guest that halts for each PIT tick, through three live hops
    (QEMU 10.0 -> ours -> QEMU 10.0 -> ours). It slept on after a hop now
    and then: QEMU's stream can show IRQ0 in service that the vCPU never
    took (docs/devel/qemu-interop.md, "What is left"), which ours now
    delivers again. In make check, and soaked by scripts/interop-soak;
    each hop goes through a StreamRecorder, so that a hang keeps the
    stream the destination took and its hung state (keep_states)."""

    def test_roundtrip_halting_guest(self):
        """A guest that halts for each PIT tick (mode=idle) wakes on after each hop."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        src = self.vm(QEMU10, 'peer', append='mode=idle')
        src.wait_serial(r'STAT[^\n]*\n[^\n]*STAT[^\n]*\n')
        vm = src
        for hop, (binary, name) in enumerate(((QEMU, 'ours'), (QEMU10, 'peer'), (QEMU, 'ours'))):
            dst = self.vm(binary, name, incoming=True, append='mode=idle')
            stream = os.path.join(self.tmp, 'hop%d.mig' % hop)
            relay = StreamRecorder(dst.port, stream)
            vm.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % relay.port)
            info = self.wait_end(vm, dst)
            relay.join()
            self.assertEqual(info['status'], 'completed', info)
            end = time.monotonic() + DEADLINE
            while self.status(dst) != 'running':
                self.assertLess(time.monotonic(), end, '%s never ran' % dst.name)
                time.sleep(0.05)
            # A STAT line a second: two of them, or the guest sleeps on a lost tick.
            end = time.monotonic() + 10
            while dst.serial_text().count('STAT') < 2:
                if time.monotonic() > end:
                    kept = keep_states('halting', [stream], dst)
                    self.fail('%s: the halted guest never woke: %s; %s'
                              % (dst.name, dst.serial_text()[-200:], kept))
                time.sleep(0.1)
            vm = dst


class TestRefusals(InteropCase):
    def test_other_ram_size(self):
        """QEMU with another -m: refused by the RAM section, and the destination never runs."""
        need_binary(self, QEMU10, 'QEMU 10.0')
        src = self.vm(QEMU10, 'peer', mem_mb=MEM_MB * 2)
        src.ready()
        dst = self.vm(QEMU, 'ours', incoming=True)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % dst.port)
        info = self.wait_end(src, dst)
        self.assertEqual(info['status'], 'failed', info)
        end = time.monotonic() + DEADLINE
        while 'microvm.ram' not in dst.log_tail():
            self.assertLess(time.monotonic(), end, 'destination said nothing: %s'
                            % dst.log_tail())
            time.sleep(0.05)
        self.assertIn('Length mismatch', dst.log_tail())
        try:
            self.assertNotEqual(dst.qmp.cmd('query-status')['status'], 'running')
        except (OSError, MonitorGone):
            pass                # it exited after the refusal, as QEMU's destination does
        self.assertEqual(src.qmp.cmd('query-status')['status'], 'running')


def load_tests(loader, tests, pattern):
    """Every test class."""
    suite = unittest.TestSuite()
    for cls in (TestQemu72, TestQemu10, TestRefusals, SoakHalting):
        suite.addTests(loader.loadTestsFromTestCase(cls))
    return suite


if __name__ == '__main__':
    unittest.main(verbosity=2)
