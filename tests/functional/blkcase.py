# SPDX-License-Identifier: GPL-2.0-or-later
"""
blkcase.py: the blkverify guest's side of the functional tests
(test-virtio-blk, test-block-migration): its image, the VM with the disk,
its STAT lines, and the host's check of the image afterwards.

blkverify (tests/guest/blk.c) writes numbered, checksummed sectors with
several requests in flight; write g goes to sector (g - 1) % N, and each
STAT line's acked_gen says every write up to it was acknowledged. After
the guest stops, every sector must hold a valid sector of its own number
whose generation is at least the last acknowledged one that went there:
a lost or torn write fails the check.
"""

import os
import re
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzetest import DEADLINE  # noqa: E402
from analyzevm import PEER_CPU, VM, free_port  # noqa: E402
from guestcase import GuestCase  # noqa: E402

SECTOR = 512
MAGIC = 0x31544b5342564c42      # tests/guest/vblk.h's VBLK_MAGIC
MASK = (1 << 64) - 1
MEM_MB = 64


def sector_sum(words):
    return sum(w * (2 * i + 1) for i, w in enumerate(words[:63])) & MASK


def last_gen(s, n, acked):
    """The last generation up to @acked written to sector @s of @n (0: none)."""
    if acked < s + 1:
        return 0
    return s + 1 + n * ((acked - (s + 1)) // n)


def host_check(path, n, acked):
    """Problems with the image at @path after a blkverify of @n sectors that
    reported @acked (a list of strings, empty when it is right)."""
    bad = []
    with open(path, 'rb') as f:
        data = f.read(n * SECTOR)
    for s in range(n):
        raw = data[s * SECTOR:(s + 1) * SECTOR]
        want = last_gen(s, n, acked)
        if raw == bytes(SECTOR):
            if want:
                bad.append('sector %d: zero, but generation %d was acknowledged' % (s, want))
            continue
        w = struct.unpack('<64Q', raw)
        if w[0] != MAGIC or w[1] != s or w[63] != sector_sum(w):
            bad.append('sector %d: torn or misplaced (magic %#x, sector %d)' % (s, w[0], w[1]))
        elif w[2] < want or (w[2] - 1) % n != s:
            bad.append('sector %d: generation %d, acknowledged %d' % (s, w[2], want))
        if len(bad) > 10:
            break
    return bad


def stat_lines(text):
    """The whole STAT lines of @text (the serial file may end inside one)."""
    return [dict(kv.split('=', 1) for kv in line.split()[1:] if '=' in kv)
            for line in re.findall(r'^(STAT [^\n]*)\n', text, re.M)]


class BlkGuestCase(GuestCase):
    NAME = 'test-virtio-blk'
    TMP_PREFIX = 'qemu-vblk-'

    def image(self, name, sectors, fmt='raw'):
        """A zero image of @sectors (raw, or qcow2 made by qemu-img as a user
        would) and a sentinel file beside it."""
        path = os.path.join(self.tmp, '%s.%s' % (name, fmt))
        if fmt == 'raw':
            with open(path, 'wb') as f:
                f.truncate(sectors * SECTOR)
        else:
            subprocess.run(['qemu-img', 'create', '-q', '-f', fmt, path, str(sectors * SECTOR)],
                           check=True, timeout=DEADLINE)
        with open(path + '.sentinel', 'wb') as f:
            f.write(os.urandom(4096))
        return path

    def blk_vm(self, name, img, append, extra=(), binary=None, drive_opts='', file=None,
               device_opts=''):
        """A VM of @binary (None: ours) with @img as its virtio-blk disk
        (its format from its name: .raw or .qcow2), opened as @file when
        given (an nbd: export of it, say)."""
        fmt = os.path.splitext(img)[1][1:]
        drive = 'file=%s,format=%s,if=none,id=d0' % (file or img, fmt) + drive_opts
        args = ['-global', 'virtio-mmio.force-legacy=false']
        args += ['-drive', drive, '-device', 'virtio-blk-device,drive=d0' + device_opts]
        args += list(extra)
        return self.keep(VM(self.tmp, name, mem_mb=MEM_MB, append=append, extra=args,
                            binary=binary, cpu=PEER_CPU if binary else None), name)

    def wait_stats(self, vm, n):
        """@n more STAT lines from now, and no FAIL."""
        start = len(stat_lines(vm.serial_text()))
        end = time.monotonic() + DEADLINE
        while len(stat_lines(vm.serial_text())) < start + n:
            self.assertNotIn('FAIL', vm.serial_text(), vm.name)
            self.assertLess(time.monotonic(), end, '%s: no STAT; serial: %s; log: %s'
                            % (vm.name, vm.serial_text()[-300:], vm.log_tail()))
            self.assertIsNone(vm.proc.poll(), '%s exited: %s' % (vm.name, vm.log_tail()))
            time.sleep(self.POLL)
        self.assertNotIn('FAIL', vm.serial_text(), vm.name)
        return stat_lines(vm.serial_text())[-1]

    def stop_and_check(self, vm, img, n):
        """Stops @vm, then the host check of @img with its last acked_gen."""
        vm.qmp.cmd('stop')
        last = stat_lines(vm.serial_text())[-1]
        vm.shutdown()
        self.vms.remove(vm)
        acked = int(last['acked_gen'])
        self.assertGreater(acked, n // 4, 'too few writes to check much: %s' % last)
        if img.endswith('.qcow2'):
            # qemu-img's own check (no error, no leak), then the guest's data as raw.
            p = subprocess.run(['qemu-img', 'check', img], capture_output=True, text=True,
                               timeout=DEADLINE)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            raw = img + '.raw'
            subprocess.run(['qemu-img', 'convert', '-f', 'qcow2', '-O', 'raw', img, raw],
                           check=True, timeout=DEADLINE)
            img = raw
        self.assertEqual(host_check(img, n, acked), [])
        return last

    def migrate_writing(self, src_binary=None, dst_binary=None, fmt='raw'):
        """A writing blkverify guest from @src_binary to @dst_binary (None:
        ours) over TCP on one image; the destination writes on, the image
        passes the host check."""
        n = 2048
        img = self.image('mig%d' % len(os.listdir(self.tmp)), n, fmt)
        # A STAT line every 250 ms: the waits below are for STAT lines, and
        # what they wait for (writes before the hop, writes after it) does not
        # need seconds. Fewer writes after the hop rewrite fewer sectors a lost
        # switchover write went to, so the host check sees more of them.
        append = 'mode=blkverify depth=8 iops=3000 report_ms=250'
        src = self.blk_vm('src', img, append, binary=src_binary)
        src.wait_serial(r'READY mode=blkverify[^\n]*\n')
        before = int(self.wait_stats(src, 2)['writes'])
        port = free_port()
        # Image locks on: the destination takes them only at the switchover.
        dst = self.blk_vm('dst', img, append, ['-incoming', 'tcp:127.0.0.1:%d' % port],
                          binary=dst_binary)
        src.qmp.cmd('migrate', uri='tcp:127.0.0.1:%d' % port)
        info = self.wait_migration(src, dst)
        self.assertEqual(info['status'], 'completed', '%s; log: %s' % (info, src.log_tail()))
        self.wait_running(dst)
        src.shutdown()
        self.vms.remove(src)
        last = self.wait_stats(dst, 3)
        self.assertGreater(int(last['writes']), before, 'the destination writes on')
        self.stop_and_check(dst, img, n)

