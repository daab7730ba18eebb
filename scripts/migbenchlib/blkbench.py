# SPDX-License-Identifier: GPL-2.0-or-later
"""Disks in migbench (issue 39): the image every binary gets and the
virtio-blk arguments for it, one "blkbench" run (the firmware's
mode=blkbench measuring the device alone, no migration), and the figures
of its STAT lines, which the "disk" precopy scenario reads too.

The image is made afresh for every run, in one temporary directory on one
filesystem for every binary; cache=none where that filesystem takes
O_DIRECT, else writeback, the same for every binary."""
import os
import shutil
import statistics
import subprocess
import tempfile

from qmp import VM, kv

from .launch import vm_args


def direct_io_ok(directory):
    """True if a file in @directory opens with O_DIRECT (tmpfs refuses it)."""
    fd = None
    path = os.path.join(directory, ".odirect-probe")
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR | getattr(os, "O_DIRECT", 0), 0o600)
        return hasattr(os, "O_DIRECT")
    except OSError:
        return False
    finally:
        if fd is not None:
            os.close(fd)
        if os.path.exists(path):
            os.unlink(path)


def make_image(directory, fmt, size, prealloc=None):
    """A new image by qemu-img (Debian's qemu-utils) in @directory: its path."""
    path = os.path.join(directory, "disk." + fmt)
    cmd = ["qemu-img", "create", "-q", "-f", fmt]
    if prealloc:
        cmd += ["-o", "preallocation=" + prealloc]
    try:
        subprocess.run(cmd + [path, size], check=True, capture_output=True, timeout=600)
    except FileNotFoundError:
        raise RuntimeError("disk scenarios need qemu-img (Debian package qemu-utils)")
    except subprocess.CalledProcessError as e:
        raise RuntimeError("qemu-img create failed: %s" % e.stderr.decode(errors="replace"))
    # A preallocation still in the page cache would be written back during
    # the measurement of whichever binary comes next: on the disk first.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def disk_args(is_peer, path, fmt, cache):
    """-drive and a virtio-blk-device on it. QEMU's virtio-mmio is legacy
    unless told (the firmware drives version 2 only) and puts the
    transport on the command line only without ACPI, as for virtio-net."""
    args = ["-drive", "file=%s,format=%s,if=none,id=d0,cache=%s" % (path, fmt, cache),
            "-device", "virtio-blk-device,drive=d0"]
    if is_peer:
        args = ["-machine", "acpi=off", "-global", "virtio-mmio.force-legacy=false"] + args
    return args


class Disk:
    """A scenario's image ({"format", "size", "prealloc"}) in a fresh temporary
    directory (--disk-dir's parent, default /var/tmp: a disk, not tmpfs),
    removed by close()."""

    def __init__(self, spec, parent=None):
        self.dir = tempfile.mkdtemp(prefix="migbench-disk-",
                                    dir=parent or os.environ.get("MIGBENCH_DISK_DIR", "/var/tmp"))
        try:
            self.fmt = spec.get("format", "raw")
            self.cache = "none" if direct_io_ok(self.dir) else "writeback"
            self.path = make_image(self.dir, self.fmt, spec.get("size", "1G"),
                                   spec.get("prealloc"))
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def args(self, is_peer):
        return disk_args(is_peer, self.path, self.fmt, self.cache)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def blk_stats(lines, cpu=None):
    """The blkbench STAT lines among @lines (text; of CPU @cpu when given, as
    'cpu=N' says with several CPUs) as dicts of ints."""
    out = []
    for line in lines:
        if not line.startswith("STAT") or "lat_max_us=" not in line:
            continue
        d = kv(line)
        if cpu is not None and d.get("cpu") != str(cpu):
            continue
        try:
            out.append({k: int(v) for k, v in d.items()})
        except ValueError:
            continue        # a torn line (the console cut mid-line)
    return out


def blk_summary(stats, prefix=""):
    """Figures of blkbench STAT dicts: mean and median iops, mean MB/s and
    average latency, worst p99 and worst single latency; {} without any."""
    if not stats:
        return {}
    iops = [s["iops"] for s in stats]
    return {
        prefix + "iops": statistics.mean(iops),
        prefix + "iops-median": statistics.median(iops),
        prefix + "MBps": statistics.mean(s.get("kib_s", 0) * 1024 / 1e6 for s in stats),
        prefix + "lat-avg-us": statistics.mean(s.get("lat_avg_us", 0) for s in stats),
        prefix + "lat-p99-us": max(s.get("lat_p99_us", 0) for s in stats),
        prefix + "lat-max-us": max(s.get("lat_max_us", 0) for s in stats),
    }


def run_blkbench(sc, binary, is_peer, log):
    """One VM of @binary running the firmware's blkbench on a fresh image:
    the scenario's warmup STAT lines skipped, then its measure lines read."""
    disk = Disk(sc.get("disk", {}))
    vm = None
    try:
        accel = sc.get("_accel") or sc.get("peer_accel" if is_peer else "ours_accel")
        vm = VM(binary, vm_args(binary, is_peer, sc["mem"], sc["append"], disk.args(is_peer),
                                accel=accel), "blk")
        try:
            vm.wait_line("READY", 120)
            start = vm.line_count()
            for _ in range(sc.get("warmup", 2)):
                start = vm.wait_line("STAT", 30, start)[0] + 1
            end = start
            for _ in range(sc.get("measure", 10)):
                end = vm.wait_line("STAT", 30, end)[0] + 1
        except TimeoutError as e:
            raise RuntimeError(str(e))
        lines = [l for _, l in vm.lines_since(start)][:end - start]
        fails = [l for _, l in vm.lines_since(0) if l.startswith("FAIL")]
        if fails:
            raise RuntimeError("guest: %s" % fails[0])
        res = blk_summary(blk_stats(lines))
        res["o-direct"] = 1 if disk.cache == "none" else 0
        log.write("%s %s %s\n" % (binary, disk.cache, " | ".join(lines)))
        return res
    finally:
        if vm:
            vm.kill()
        disk.close()
