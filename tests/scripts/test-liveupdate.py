#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/migbenchlib/liveupdate.py's figures on made-up console read
times (the pause a guest shows, the switch, the floor before, the cpr-exec
split of one process's console around the STOP), its command lines per
mode, its table cells for refusals and its memory sampling of live
processes. No KVM, no binary."""

import os
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts"))
from migscenarios import SCENARIOS  # noqa: E402
from migbenchlib import liveupdate as lu  # noqa: E402
from migbenchlib.binaries import Refused  # noqa: E402


def ticks(start, end, step):
    """Read times every @step s from @start to before @end."""
    n = int(round((end - start) / step))
    return [start + i * step for i in range(n)]


class FiguresCase(unittest.TestCase):
    def test_two_processes(self):
        # The source prints every ms until 10.0 s, migrate at 9.5 s, STOP
        # at 10.0; the destination from 10.03 s, with a 250 ms hole (its
        # first pass re-faulting memory) at 10.1 s.
        src = ticks(6.0, 10.0005, 0.001)
        dst = ticks(10.03, 10.1, 0.001) + ticks(10.35, 14.0, 0.001)
        f = lu.console_figures(src, dst, 9.5, 10.0005, False)
        self.assertAlmostEqual(f["switch-gap-ms"], 30, delta=1.1)
        self.assertAlmostEqual(f["console-gap-ms"], 251, delta=1.1)
        self.assertAlmostEqual(f["console-gap-at-ms"], 99, delta=1.1)
        self.assertAlmostEqual(f["console-gap-before-ms"], 1, delta=0.1)
        self.assertAlmostEqual(f["total-time-ms"], 530, delta=0.1)

    def test_gap_before_is_the_floor(self):
        src = ticks(6.0, 8.0, 0.001) + ticks(8.02, 10.0, 0.001)
        dst = ticks(10.002, 14.0, 0.001)
        f = lu.console_figures(src, dst, 9.0, 10.0, False)
        self.assertAlmostEqual(f["console-gap-before-ms"], 21, delta=0.1)
        self.assertAlmostEqual(f["console-gap-ms"], 3, delta=0.1)

    def test_silence_while_the_source_runs(self):
        # A precopy: the source falls silent 1 s into the copy, for 900 ms.
        src = ticks(6.0, 10.0, 0.001) + ticks(10.9, 12.0, 0.001)
        dst = ticks(12.05, 16.0, 0.001)
        f = lu.console_figures(src, dst, 9.5, 12.0, False)
        self.assertAlmostEqual(f["console-gap-ms"], 901, delta=1.1)
        self.assertAlmostEqual(f["console-gap-at-ms"], -2000, delta=2)
        self.assertAlmostEqual(f["switch-gap-ms"], 51, delta=1.1)

    def test_gaps_outside_the_window_do_not_count(self):
        # After the destination's SETTLE_S, a hole is not the update's.
        src = ticks(6.0, 10.0, 0.001)
        dst = ticks(10.01, 10.01 + lu.SETTLE_S + 0.5, 0.001)
        dst = [t for t in dst if not 10.01 + lu.SETTLE_S + 0.1 < t < 10.01 + lu.SETTLE_S + 0.4]
        f = lu.console_figures(src, dst, 9.5, 10.0, False)
        self.assertLess(f["console-gap-ms"], 12)

    def test_one_process_split_at_stop(self):
        # cpr-exec: one console. A chunk the source wrote just before its
        # STOP is read 1 ms after it (within READ_LAG_S): still the source's.
        times = ticks(6.0, 9.999, 0.001) + [10.001] + ticks(10.2, 14.0, 0.001)
        f = lu.console_figures(times, times, 9.5, 10.0, True)
        self.assertEqual(lu.first_output(times, 10.0, True), 10.2)
        self.assertAlmostEqual(f["switch-gap-ms"], 199, delta=0.1)
        self.assertAlmostEqual(f["console-gap-ms"], 199, delta=0.1)
        self.assertAlmostEqual(f["console-gap-at-ms"], 0, delta=0.01)
        self.assertAlmostEqual(f["total-time-ms"], 700, delta=0.1)

    def test_nothing_yet(self):
        self.assertIsNone(lu.first_output([], 10.0, False))
        self.assertIsNone(lu.first_output(ticks(6.0, 10.0, 0.001), 10.0, True))


class ArgsCase(unittest.TestCase):
    def setUp(self):
        self.sc = SCENARIOS["live-update"]

    def test_cpr_modes_share_memfd_ram(self):
        g = self.sc["guests"][1]
        for mode in ("cpr-transfer", "cpr-exec"):
            args = lu.guest_args(self.sc, g, "qemu", True, mode)
            self.assertIn("microvm,memory-backend=ram0,aux-ram-share=on", args)
            self.assertIn("memory-backend-memfd,id=ram0,size=4G,share=on", args)
            self.assertEqual(args[args.index("-m") + 1], "4G")
            self.assertEqual(args[args.index("-smp") + 1], "2")

    def test_precopy_is_a_plain_guest(self):
        g = self.sc["guests"][2]
        args = lu.guest_args(self.sc, g, "qemu", False, "precopy")
        self.assertFalse(any("memory-backend" in a for a in args))
        append = args[args.index("-append") + 1]
        # The 16 GiB guest populates 4 GiB: 64 MiB verified, the rest dirtied.
        self.assertIn("mem0=64 ", append)
        self.assertIn("mem1=4032 ", append)

    def test_every_guest_fits(self):
        for g in self.sc["guests"]:
            self.assertLessEqual(g["populate"] + 4, lu._mib(g["mem"]))


class CellsCase(unittest.TestCase):
    def test_missing_feature(self):
        self.assertEqual(lu.na_cell(Refused("its QMP schema has no migration mode cpr-exec", "cpr-exec")),
                         "n/a (no cpr-exec)")

    def test_refusal_keeps_the_binarys_words(self):
        e = Refused("did not start: src: the VM exited (status 1) before its QMP socket "
                    "came up: qemu-system-x86_64: -M microvm,aux-ram-share=on: "
                    "Invalid parameter 'aux-ram-share'")
        self.assertEqual(lu.na_cell(e), "n/a (refused: Invalid parameter 'aux-ram-share')")

    def test_long_refusal_is_cut(self):
        cell = lu.na_cell(Refused("migrate: " + "x" * 200))
        self.assertLessEqual(len(cell), len("n/a (refused: )") + 60)
        self.assertTrue(cell.endswith("...)"))


class ListeningCase(unittest.TestCase):
    def test_bound_is_not_listening(self):
        # A cpr-transfer destination's socket file exists before it listens.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cpr.sock")
            with socket.socket(socket.AF_UNIX) as sk:
                sk.bind(path)
                self.assertFalse(lu._listening(path))
                sk.listen(1)
                self.assertTrue(lu._listening(path))
                self.assertFalse(lu._listening(path + "x"))


class MemoryCase(unittest.TestCase):
    def test_rss_of_live_processes(self):
        class Fake:
            pass
        # A child holding 64 MiB of anonymous memory, resident.
        child = subprocess.Popen([sys.executable, "-c",
                                  "import sys; b = bytearray(64 << 20); "
                                  "b[::4096] = b'x' * (len(b) // 4096); "
                                  "print('up', flush=True); sys.stdin.read()"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self.assertEqual(child.stdout.readline().strip(), b"up")
            mem = lu.HostMemory()
            vm = Fake()
            vm.proc = child
            mem.vms.append(vm)
            self.assertGreaterEqual(mem.rss(), 64)
            mem.start()
            mem.stop()
            self.assertGreaterEqual(mem.peak, mem.base)
        finally:
            child.kill()
            child.communicate()
        # Gone: counted as nothing, not an error.
        self.assertEqual(mem.rss(), 0)

    def test_meminfo(self):
        used, avail = lu.HostMemory.sample()
        self.assertGreater(used, 0)
        self.assertGreater(avail, 0)


if __name__ == "__main__":
    unittest.main()
