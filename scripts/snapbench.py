# SPDX-License-Identifier: GPL-2.0-or-later
"""migbench's snapshot-file scenario: snapshots to a local file and restores.

Ours: background snapshot + mapped-ram, mig/src writing (1 writer) or
multifd-channels 2 writers, each with and without direct-io. Each peer
(QEMU 7.2, QEMU 10.0): its background snapshot into exec:cat > FILE
(labelled as the peer), and, where it has mapped-ram (asked over QMP; QEMU
10.0 has it), its background snapshot with mapped-ram into file:FILE, by
its migration thread (PEER-mr-1w) and with multifd-channels 2 (PEER-mr-2w);
a variant a peer refuses is listed as n/a with its reason. Restores, with
the page cache dropped first: ours eagerly and lazily (x-lazy-restore)
from the 2-writer file, each peer from its exec:cat file and from its
mapped-ram file (PEER-mr, PEER-mr-2r with 2 multifd readers); time from
process start to the RESUME event (every destination started with
-incoming defer, its capabilities set, then migrate-incoming), and to full
residency. The disk's sequential direct write and read speeds
(dd) are measured in each round, so every figure can be put against the
hardware.
"""

import os
import statistics
import subprocess
import sys
import time

from migbenchlib.binaries import Refused, set_migration
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


def snapshot(sc, binary, is_peer, vm_args, path, channels=0, direct_io=False, mapped_ram=None):
    """One background snapshot of a fresh guest into @path; the figures.
    @mapped_ram (default: ours yes, a peer no): mapped-ram into file:@path,
    else exec:cat > @path. Refused when the binary will not."""
    if mapped_ram is None:
        mapped_ram = not is_peer
    src = VM(binary, vm_args(binary, is_peer, sc["mem"], sc["append"]), "src")
    try:
        src.wait_line("READY", 300)
        warm = src.line_count()
        for _ in range(sc.get("warmup", 3)):
            src.wait_line("STAT", 30, src.line_count())
        before = _rate(src.lines_since(warm))
        caps = ["background-snapshot"]
        params = {}
        if mapped_ram:
            caps.append("mapped-ram")
            if channels:
                caps.append("multifd")
                params["multifd-channels"] = channels
            if direct_io:
                params["direct-io"] = True
        # migbench --set (x-mapped-ram-integrity=on measures the integrity record).
        if not is_peer and sc.get("ours_params"):
            params.update(sc["ours_params"])
        set_migration(src, "on the source", params, caps)
        if os.path.exists(path):
            os.unlink(path)
        start = src.line_count()
        src.qmp.cmd("migrate", uri=("file:" + path) if mapped_ram else ("exec:cat > " + path))
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


def restore(sc, binary, is_peer, vm_args, path, lazy=False, channels=0, mapped_ram=None):
    """Restores @path into a fresh process: ms to RESUME and to full residency.
    @mapped_ram (default: ours yes, a peer no) as snapshot()'s."""
    if mapped_ram is None:
        mapped_ram = not is_peer
    drop_caches()
    # The snapshot file is cold, not the binary: load it and its libraries again first.
    subprocess.run([binary, "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dst = VM(binary, vm_args(binary, is_peer, sc["mem"], sc["append"], ["-incoming", "defer"]),
             "dst")
    try:
        # Ours reads the stream's mapped-ram header itself; a QEMU is told.
        caps = (["x-lazy-restore"] if lazy else []) + (["multifd"] if channels else []) + \
            (["mapped-ram"] if mapped_ram and is_peer else [])
        set_migration(dst, "on the destination",
                      {"multifd-channels": channels} if channels else {}, caps)
        t_cmd = time.time()
        dst.qmp.cmd("migrate-incoming", uri=("file:" + path) if mapped_ram else ("exec:cat " + path))
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
        # What the process read from the disk until then (the page cache
        # was dropped): a restore that reads far less than the guest's
        # nonzero RAM did not restore it (QEMU 10.0's background snapshot
        # with mapped-ram, seen: its restore reads its device state only).
        read_mib = _read_bytes(dst.proc.pid) / 2**20
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
            "read-MiB": read_mib,
            "stat1/steady": rates[0] / steady if steady else None,
            "stat2/steady": rates[1] / steady if steady else None,
            "fails": sum(1 for _, l in dst.lines_since(0) if l.startswith("FAIL")),
        }
    finally:
        dst.kill()


def _read_bytes(pid):
    """Bytes process @pid had the storage layer read (/proc/PID/io), or 0."""
    try:
        with open("/proc/%d/io" % pid) as f:
            return next(int(l.split()[1]) for l in f if l.startswith("read_bytes:"))
    except (OSError, StopIteration):
        return 0


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
    na = {}             # variant label -> why it did not run ("n/a (no mapped-ram)")
    disk = []
    pid = os.getpid()
    ours = [r for r in runners if not r[2]][0]
    peers = [r for r in runners if r[2]]

    def attempt(label, table, what, fn):
        """@fn()'s figures into @table[@label]; a Refused variant goes to na once."""
        if label in na:
            return None
        print("run %d/%d %s %s ..." % (i + 1, runs, what, label), file=sys.stderr, flush=True)
        try:
            r = fn()
        except Refused as e:
            na[label] = "n/a (no %s)" % e.feature if e.feature else "n/a (refused: %s)" % e
            print("   %s" % na[label], file=sys.stderr, flush=True)
            return None
        table.setdefault(label, []).append(r)
        if "wall-ms" in r:
            print("   %.0f ms, %.0f MB/s" % (r["wall-ms"], r["write-MBps"]), file=sys.stderr,
                  flush=True)
        else:
            print("   running %.0f ms, resident %.0f ms" % (r["to-running-ms"],
                                                           r["to-resident-ms"]),
                  file=sys.stderr, flush=True)
        return r

    for i in range(runs):
        print("run %d/%d: disk speed (dd, O_DIRECT) ..." % (i + 1, runs), file=sys.stderr,
              flush=True)
        disk.append(disk_speeds())
        print("   write %.0f MB/s, read %.0f MB/s" % disk[-1], file=sys.stderr, flush=True)
        files = {}
        for label, ch, dio in OURS_VARIANTS:
            path = os.path.join(SNAP_DIR, "migbench-%d-%s.snap" % (pid, label))
            if attempt(label, snaps, "snapshot ours", lambda: snapshot(
                    sc, ours[1], False, vm_args, path, ch, dio)):
                files[label] = path
        for plab, binary, _ in peers:
            # Its exec:cat stream (as QEMU 7.2 can), then mapped-ram where it has it.
            for label, mr, ch in ((plab, False, 0), (plab + "-mr-1w", True, 0),
                                  (plab + "-mr-2w", True, 2)):
                path = os.path.join(SNAP_DIR, "migbench-%d-%s.snap" % (pid, label))
                if attempt(label, snaps, "snapshot", lambda: snapshot(
                        sc, binary, True, vm_args, path, ch, False, mr)):
                    files[label] = path
        for name, lazy, ch in (("eager", False, 0), ("eager-2r", False, 2), ("lazy", True, 0)):
            if RESTORE_FROM in files:
                attempt("ours-" + name, rests, "restore", lambda: restore(
                    sc, ours[1], False, vm_args, files[RESTORE_FROM], lazy, ch))
        for plab, binary, _ in peers:
            mr_file = files.get(plab + "-mr-1w") or files.get(plab + "-mr-2w")
            for label, src, mr, ch in ((plab, files.get(plab), False, 0),
                                       (plab + "-mr", mr_file, True, 0),
                                       (plab + "-mr-2r", mr_file, True, 2)):
                if src:
                    attempt(label, rests, "restore", lambda: restore(
                        sc, binary, True, vm_args, src, False, ch, mr))
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
    _print_na([lab for lab in na if not lab.endswith(("-mr", "-mr-2r")) and
               not lab.startswith("ours-")], na)
    # Ours against each peer's exec:cat snapshot (what every QEMU can do).
    peer_wall = {p: _median([r["wall-ms"] for r in snaps.get(p, [])]) for p, _, _ in peers}
    for label, rs in snaps.items():
        w = _median([r["wall-ms"] for r in rs])
        print("  %-16s write %.2fx the disk's speed%s" % (
            label, _median([r["write-MBps"] for r in rs]) / dw,
            "".join(", wall %.2fx %s's" % (w / pw, p) for p, pw in peer_wall.items()
                    if pw and not label.startswith(p))))
    _print("snapshot-file: restore (page cache dropped), medians of %d" % runs,
           list(rests.items()), ["to-running-ms", "to-resident-ms", "read-MiB", "stat1/steady",
                                 "stat2/steady", "fails"])
    _print_na([lab for lab in na if lab.endswith(("-mr", "-mr-2r")) or lab.startswith("ours-")],
              na)
    seq_read_ms = sc["nonzero_mib"] * 2**20 / 1e6 / dr * 1000
    peer_run = {p: _median([r["to-running-ms"] for r in rests.get(p, [])]) for p, _, _ in peers}
    for label, rs in rests.items():
        read = _median([r.get("read-MiB") for r in rs])
        if read is not None and read < sc["nonzero_mib"] / 2:
            print("  %-16s WARNING: read %.0f MiB of the disk for %d MiB of nonzero RAM: its "
                  "RAM was not restored, its times are not a restore's" % (label, read,
                                                                          sc["nonzero_mib"]))
    for label, rs in rests.items():
        run_ms = _median([r["to-running-ms"] for r in rs])
        print("  %-16s resident %.2fx the sequential read of %d MiB (%.0f ms)%s" % (
            label, _median([r["to-resident-ms"] for r in rs]) / seq_read_ms, sc["nonzero_mib"],
            seq_read_ms, "".join(", running %.3fx %s's" % (run_ms / pr, p)
                                 for p, pr in peer_run.items()
                                 if pr and not label.startswith(p))))
    return {"disk-MBps": {"write": dw, "read": dr}, "snapshots": snaps, "restores": rests,
            "n/a": na}


def _print_na(labels, na):
    for label in labels:
        print("%-18s %s" % (label, na[label]))
