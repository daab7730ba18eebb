# SPDX-License-Identifier: GPL-2.0-or-later
"""migbench's snapshot-file scenario: snapshots to a local file and restores.

Ours: background snapshot + mapped-ram, mig/src writing (1 writer) or
multifd-channels 2 writers, each with and without direct-io. The peer (QEMU
7.2): its background snapshot into exec:cat > FILE. Restores, with the page
cache dropped first: ours eagerly and lazily (x-lazy-restore) from the
2-writer file, the peer from its own file; time from process start to the
RESUME event (both started with -incoming defer, then migrate-incoming),
and to full residency. The disk's sequential direct write and read speeds
(dd) are measured in each round, so every figure can be put against the
hardware.
"""

import os
import statistics
import subprocess
import sys
import time

from qmp import VM, kv

SNAP_DIR = "/var/tmp"
# Ours: (label, multifd channels (0 = mig/src writes), direct-io).
OURS_VARIANTS = (("mr-1w", 0, False), ("mr-2w", 2, False), ("mr-1w-dio", 0, True),
                 ("mr-2w-dio", 2, True))
RESTORE_FROM = "mr-2w"


def _dd(args):
    out = subprocess.run(["dd"] + args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         check=True).stderr.decode()
    # "... copied, 0.81 s, 1.3 GB/s": bytes / seconds.
    last = out.strip().splitlines()[-1]
    nbytes = int(last.split()[0])
    secs = float(last.split("copied,")[1].split()[0])
    return nbytes / secs / 1e6


def disk_speeds(mib=2048):
    """Sequential O_DIRECT write and read MB/s of SNAP_DIR's disk."""
    path = os.path.join(SNAP_DIR, "migbench-dd-%d" % os.getpid())
    try:
        w = _dd(["if=/dev/zero", "of=" + path, "bs=4M", "count=%d" % (mib // 4),
                 "oflag=direct", "conv=fdatasync"])
        r = _dd(["if=" + path, "of=/dev/null", "bs=4M", "iflag=direct"])
    finally:
        if os.path.exists(path):
            os.unlink(path)
    return w, r


def drop_caches():
    subprocess.run(["sync"], check=True)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        print("snapbench: cannot drop the page cache (not root): restores may read from it",
              file=sys.stderr)


def _rate(lines):
    rates = [float(kv(l).get("rate_mbps", 0)) for _, l in lines if l.startswith("STAT")]
    return statistics.mean(rates) if rates else None


def _caps(vm, names):
    vm.qmp.cmd("migrate-set-capabilities",
               capabilities=[{"capability": c, "state": True} for c in names])


def snapshot(sc, binary, is_peer, vm_args, path, channels=0, direct_io=False):
    """One background snapshot of a fresh guest into @path; the figures."""
    src = VM(binary, vm_args(binary, is_peer, sc["mem"], sc["append"]), "src")
    try:
        src.wait_line("READY", 300)
        warm = src.line_count()
        for _ in range(sc.get("warmup", 3)):
            src.wait_line("STAT", 30, src.line_count())
        before = _rate(src.lines_since(warm))
        caps = ["background-snapshot"]
        if not is_peer:
            caps.append("mapped-ram")
            if channels:
                caps.append("multifd")
                src.qmp.cmd("migrate-set-parameters", **{"multifd-channels": channels})
            if direct_io:
                src.qmp.cmd("migrate-set-parameters", **{"direct-io": True})
            # migbench --set (x-mapped-ram-integrity=on measures the integrity record).
            if sc.get("ours_params"):
                src.qmp.cmd("migrate-set-parameters", **sc["ours_params"])
        _caps(src, caps)
        if os.path.exists(path):
            os.unlink(path)
        start = src.line_count()
        src.qmp.cmd("migrate", uri=("exec:cat > " + path) if is_peer else ("file:" + path))
        while True:
            info = src.qmp.cmd("query-migrate")
            if info.get("status") in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.05)
        if info["status"] != "completed":
            raise RuntimeError("snapshot %s: %s" % (info["status"], info.get("error-desc")))
        try:
            src.wait_line("STAT", 30, src.line_count())
        except TimeoutError:
            pass
        during = _rate(src.lines_since(start))
        st = os.stat(path)
        bg = info.get("x-background-snapshot") or {}
        return {
            "wall-ms": info["total-time"],
            "file-MiB": st.st_size / 2**20,
            "file-alloc-MiB": st.st_blocks * 512 / 2**20,
            "alloc/nonzero-RAM": st.st_blocks * 512 / (sc["nonzero_mib"] * 2**20),
            "write-MBps": sc["nonzero_mib"] * 2**20 / 1e6 / (info["total-time"] / 1000.0),
            "guest-rate-kept": during / before if before and during else None,
            "fault-p99-us": bg.get("fault-latency-p99-us"),
            "fault-max-us": bg.get("fault-latency-max-us"),
        }
    finally:
        src.kill()


def restore(sc, binary, is_peer, vm_args, path, lazy=False, channels=0):
    """Restores @path into a fresh process: ms to RESUME and to full residency."""
    drop_caches()
    # The snapshot file is cold, not the binary: load it and its libraries again first.
    subprocess.run([binary, "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dst = VM(binary, vm_args(binary, is_peer, sc["mem"], sc["append"], ["-incoming", "defer"]),
             "dst")
    try:
        if lazy:
            _caps(dst, ["x-lazy-restore"])
        if channels:
            _caps(dst, ["multifd"])
            dst.qmp.cmd("migrate-set-parameters", **{"multifd-channels": channels})
        t_cmd = time.time()
        dst.qmp.cmd("migrate-incoming", uri=("exec:cat " + path) if is_peer else ("file:" + path))
        deadline = time.monotonic() + 300
        while not any(e["event"] == "RESUME" for e in dst.qmp.events):
            info = dst.qmp.cmd("query-migrate")
            if info.get("status") == "failed" or time.monotonic() > deadline:
                raise RuntimeError("restore failed: %s" % info.get("error-desc"))
            time.sleep(0.002)
        ev = next(e for e in dst.qmp.events if e["event"] == "RESUME")
        # From the exec of the binary (Popen's return), not from Python's fork before it.
        t_spawn = dst.started
        running = ev["timestamp"]["seconds"] + ev["timestamp"]["microseconds"] / 1e6 - t_spawn
        resumed_at = dst.line_count()
        resident = running
        if lazy:
            while True:
                x = dst.qmp.cmd("query-migrate").get("x-lazy-restore", {})
                if x.get("status") == "resident":
                    resident = t_cmd - t_spawn + x["time-to-resident-ms"] / 1000.0
                    break
                if x.get("status") == "failed" or time.monotonic() > deadline:
                    raise RuntimeError("lazy restore did not finish: %s" % x)
                time.sleep(0.01)
        # STAT 1 and 2 after RESUME (while pages arrive, for a lazy restore), then 3-5.
        rates = []
        at = resumed_at
        for _ in range(5):
            at, line = dst.wait_line("STAT", 30, at)
            rates.append(float(kv(line).get("rate_mbps", 0)))
            at += 1
        steady = statistics.mean(rates[2:])
        return {
            "to-running-ms": running * 1000,
            "to-resident-ms": resident * 1000,
            "stat1/steady": rates[0] / steady if steady else None,
            "stat2/steady": rates[1] / steady if steady else None,
            "fails": sum(1 for _, l in dst.lines_since(0) if l.startswith("FAIL")),
        }
    finally:
        dst.kill()


def _median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def _print(title, rows, keys):
    print("\n== %s" % title)
    print("%-14s" % "" + "".join("%22s" % k for k in keys))
    for label, runs in rows:
        cells = []
        for k in keys:
            m = _median([r.get(k) for r in runs])
            cells.append("%22s" % ("-" if m is None else ("%.3g" % m if m < 100 else "%.0f" % m)))
        print("%-14s" % label + "".join(cells))


def run_snapshot_file(sc, runners, runs, vm_args, log):
    """The whole scenario: @runs rounds of every variant; prints medians and ratios."""
    snaps = {}
    rests = {}
    disk = []
    pid = os.getpid()
    ours = [r for r in runners if not r[2]][0]
    peer = [r for r in runners if r[2]]
    for i in range(runs):
        print("run %d/%d: disk speed (dd, O_DIRECT) ..." % (i + 1, runs), file=sys.stderr,
              flush=True)
        disk.append(disk_speeds())
        print("   write %.0f MB/s, read %.0f MB/s" % disk[-1], file=sys.stderr, flush=True)
        files = {}
        for label, ch, dio in OURS_VARIANTS:
            path = os.path.join(SNAP_DIR, "migbench-%d-%s.snap" % (pid, label))
            print("run %d/%d ours %s ..." % (i + 1, runs, label), file=sys.stderr, flush=True)
            r = snapshot(sc, ours[1], False, vm_args, path, ch, dio)
            snaps.setdefault(label, []).append(r)
            print("   %.0f ms, %.0f MB/s" % (r["wall-ms"], r["write-MBps"]), file=sys.stderr,
                  flush=True)
            files[label] = path
        for label, binary, _ in peer:
            path = os.path.join(SNAP_DIR, "migbench-%d-peer.snap" % pid)
            print("run %d/%d peer background snapshot ..." % (i + 1, runs), file=sys.stderr,
                  flush=True)
            r = snapshot(sc, binary, True, vm_args, path)
            snaps.setdefault("qemu-7.2", []).append(r)
            print("   %.0f ms" % r["wall-ms"], file=sys.stderr, flush=True)
            files["qemu-7.2"] = path
        for name, lazy, ch in (("eager", False, 0), ("eager-2r", False, 2), ("lazy", True, 0)):
            print("run %d/%d restore ours %s ..." % (i + 1, runs, name), file=sys.stderr,
                  flush=True)
            r = restore(sc, ours[1], False, vm_args, files[RESTORE_FROM], lazy, ch)
            rests.setdefault("ours-" + name, []).append(r)
            print("   running %.0f ms, resident %.0f ms" % (r["to-running-ms"],
                                                           r["to-resident-ms"]),
                  file=sys.stderr, flush=True)
        for label, binary, _ in peer:
            print("run %d/%d restore peer ..." % (i + 1, runs), file=sys.stderr, flush=True)
            r = restore(sc, binary, True, vm_args, files["qemu-7.2"])
            rests.setdefault("qemu-7.2", []).append(r)
            print("   running %.0f ms" % r["to-running-ms"], file=sys.stderr, flush=True)
        for path in files.values():
            os.unlink(path)
    dw = statistics.median(d[0] for d in disk)
    dr = statistics.median(d[1] for d in disk)
    print("\n== snapshot-file: disk (dd, O_DIRECT, 2 GiB): write %.0f MB/s, read %.0f MB/s"
          % (dw, dr))
    _print("snapshot-file: background snapshot of %s (%s), medians of %d"
           % (sc["mem"], sc["append"], runs), list(snaps.items()),
           ["wall-ms", "write-MBps", "file-alloc-MiB", "alloc/nonzero-RAM", "guest-rate-kept",
            "fault-p99-us", "fault-max-us"])
    peer_wall = _median([r["wall-ms"] for r in snaps.get("qemu-7.2", [])])
    for label, rs in snaps.items():
        w = _median([r["wall-ms"] for r in rs])
        print("  %-12s write %.2fx the disk's speed%s" % (
            label, _median([r["write-MBps"] for r in rs]) / dw,
            ", wall %.2fx QEMU 7.2's" % (w / peer_wall) if peer_wall and label != "qemu-7.2"
            else ""))
    _print("snapshot-file: restore (page cache dropped), medians of %d" % runs,
           list(rests.items()), ["to-running-ms", "to-resident-ms", "stat1/steady",
                                 "stat2/steady", "fails"])
    seq_read_ms = sc["nonzero_mib"] * 2**20 / 1e6 / dr * 1000
    peer_run = _median([r["to-running-ms"] for r in rests.get("qemu-7.2", [])])
    for label, rs in rests.items():
        run_ms = _median([r["to-running-ms"] for r in rs])
        print("  %-14s resident %.2fx the sequential read of %d MiB (%.0f ms)%s" % (
            label, _median([r["to-resident-ms"] for r in rs]) / seq_read_ms, sc["nonzero_mib"],
            seq_read_ms, ", running %.3fx QEMU 7.2's" % (run_ms / peer_run)
            if peer_run and label != "qemu-7.2" else ""))
    return {"disk-MBps": {"write": dw, "read": dr}, "snapshots": snaps, "restores": rests}
