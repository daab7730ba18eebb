#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/migbenchlib/blkbench.py on recorded firmware lines: the
blkbench STAT parsing (one CPU and cpu=N lines beside a dirtying CPU's),
the summary, the virtio-blk arguments of each binary, and the disk
scenarios' table entries. No KVM, no binary."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts"))
from migscenarios import GROUPS, SCENARIOS  # noqa: E402
from migbenchlib import blkbench as bb  # noqa: E402

ONE_CPU = [
    "BLKDEV offered=0x10130006e54 num_max=1024 config=00",
    "READY mode=blkbench rw=randread bs=4096 size_mb=1024 capacity=2097152 depth=32 iops=0",
    "STAT t_ms=1000 iops=38447 kib_s=153791 mb_s=157 lat_avg_us=780 lat_p99_us=4096 "
    "lat_max_us=15932 ios=38452 inflight=32",
    "STAT t_ms=2000 iops=29641 kib_s=118567 mb_s=121 lat_avg_us=1032 lat_p99_us=8192 "
    "lat_max_us=15932 ios=68095 inflight=32",
    "STAT t_ms=2989 iops=38664 kib_s=154658 mb_s=158 lat_avg_us=766 lat_p99_us=4096 "
    "lat_max_us=36126 ios=106361 inflight=32",
    "EXIT code=0",
]

TWO_CPUS = [
    "STAT cpu=1 t_ms=4000 mb=200 rate_mbps=49.9 max_write_us=4272 p99_write_us=0 "
    "writes=12201 slow_writes=10 wakeups=770",
    "STAT cpu=0 t_ms=4000 iops=1427 kib_s=5709 mb_s=5 lat_avg_us=2182 lat_p99_us=8192 "
    "lat_max_us=29565 ios=5661 inflight=4",
    "STAT cpu=0 t_ms=5000 iops=1137 kib_s=4551 mb_s=4 lat_avg_us=2525 lat_p99_us=16384 "
    "lat_max_us=57971 ios=6799 inflight=1",
    # A line the console cut: not a figure.
    "STAT cpu=0 t_ms=6000 iops=15",
    "STAT cpu=0 t_ms=6000 iops=1590 kib_s=6363 mb_s=6 lat_avg_us=1483 lat_p99_us=8192 "
    "lat_max_us=238x",
]


class ParseCase(unittest.TestCase):
    def test_one_cpu(self):
        stats = bb.blk_stats(ONE_CPU)
        self.assertEqual([s["iops"] for s in stats], [38447, 29641, 38664])
        r = bb.blk_summary(stats, "x-")
        self.assertAlmostEqual(r["x-iops"], (38447 + 29641 + 38664) / 3)
        self.assertEqual(r["x-iops-median"], 38447)
        self.assertEqual(r["x-lat-max-us"], 36126)
        self.assertEqual(r["x-lat-p99-us"], 8192)
        self.assertAlmostEqual(r["x-lat-avg-us"], (780 + 1032 + 766) / 3)
        self.assertAlmostEqual(r["x-MBps"], (153791 + 118567 + 154658) / 3 * 1024 / 1e6)

    def test_cpu_filter_and_torn_lines(self):
        stats = bb.blk_stats(TWO_CPUS, 0)
        self.assertEqual([s["iops"] for s in stats], [1427, 1137])
        self.assertEqual(bb.blk_stats(TWO_CPUS, 1), [])
        self.assertEqual(bb.blk_summary(bb.blk_stats(TWO_CPUS, 1)), {})

    def test_no_lines(self):
        self.assertEqual(bb.blk_summary(bb.blk_stats([])), {})


class ArgsCase(unittest.TestCase):
    def test_ours_and_peer(self):
        ours = bb.disk_args(False, "/d/disk.qcow2", "qcow2", "none")
        self.assertEqual(ours, ["-drive", "file=/d/disk.qcow2,format=qcow2,if=none,id=d0,"
                                "cache=none", "-device", "virtio-blk-device,drive=d0"])
        peer = bb.disk_args(True, "/d/disk.raw", "raw", "writeback")
        self.assertIn("virtio-mmio.force-legacy=false", peer)
        self.assertIn("acpi=off", peer)
        self.assertEqual(peer[-4:], ["-drive", "file=/d/disk.raw,format=raw,if=none,id=d0,"
                                     "cache=writeback", "-device", "virtio-blk-device,drive=d0"])

    def test_direct_io_probe_leaves_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertIn(bb.direct_io_ok(d), (True, False))
            self.assertEqual(os.listdir(d), [])
        self.assertFalse(bb.direct_io_ok("/nonexistent-dir-for-blkbench"))


class ScenarioCase(unittest.TestCase):
    def test_blk_scenarios(self):
        for name in GROUPS["blk"]:
            sc = SCENARIOS[name]
            self.assertEqual(sc["kind"], "blkbench")
            self.assertIn("mode=blkbench", sc["append"])
            self.assertEqual(sc["disk"]["size"], "1G")
        self.assertIn("depth=32", SCENARIOS["blk-randwrite-qd32"]["append"])
        self.assertIn("depth=1", SCENARIOS["blk-seqread-qd1"]["append"])

    def test_disk_is_the_seed_plus_a_writer(self):
        sc, seed = SCENARIOS["disk"], SCENARIOS["dirty-random"]
        self.assertEqual(sc["params"], seed["params"])
        self.assertEqual(sc["disk"], {"format": "qcow2", "size": "4G"})
        self.assertIn("mode0=blkbench rw=randwrite bs=4096", sc["append"])
        self.assertIn("iops=2000", sc["append"])
        self.assertIn("mem1=2048 rate1=220 pattern1=random", sc["append"])
        self.assertEqual(sc["smp"], 2)
        self.assertEqual(GROUPS["disk-vs-nodisk"][0], "disk")


if __name__ == "__main__":
    unittest.main()
