# SPDX-License-Identifier: GPL-2.0-or-later
"""One run of migbench's snapshot scenario: a background snapshot or a
precopy into a file, of one source, and its figures (time, file size, CPU,
the guest's latency and rate before, during and after, write faults)."""
import json
import os
import time

from migscenarios import UNLIMITED
from qmp import VM

from .binaries import set_migration
from .launch import pin_threads, restore_cpu1, trace_args, vm_args
from .measure import find_thread, latency_histogram, proc_cpu, slow_writes, stat_summary
from .series import SERIES_KEY, Series


def run_snapshot(sc, binary, is_peer, log, variant):
    """One snapshot into a file: variant "bg" (background-snapshot) or "file" (precopy)."""
    path = "/tmp/migbench-%d-%s.snap" % (os.getpid(), variant)
    accel = sc.get("_accel")
    src = VM(binary, vm_args(binary, is_peer, sc["mem"], sc["append"], trace_args(sc, is_peer),
                             accel=accel), "src")
    try:
        src.wait_line("READY", 300)
        if sc.get("_pin"):
            pin_threads(src, None)
        warm_start = src.line_count()
        for _ in range(sc.get("warmup", 2)):
            src.wait_line("STAT", 30, src.line_count())
        params = sc.get("params") if is_peer else sc.get("ours_params", sc.get("params"))
        # Refused (a feature this binary lacks) leaves the run to migbench.
        set_migration(src, "on the source", params, ["background-snapshot"] if variant == "bg"
                      else [])
        if variant != "bg":
            # Precopy into a file: no network, so no bandwidth limit.
            src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": UNLIMITED})
        before = [l for _, l in src.lines_since(warm_start)]
        # QEMU 7.2's thread names, then QEMU 10.0's; ours.
        mig_names = ("live_migration", "bg_snapshot", "mig/src/main", "mig/snapshot") \
            if is_peer else ("mig/src",)
        src_cpu0 = proc_cpu(src.proc.pid)
        mig_start = src.line_count()
        t0 = time.monotonic()
        series = Series(t0, time.time())
        src.qmp.cmd("migrate", uri="exec:cat > " + path)
        mig_tid, mig_cpu = None, None
        throttle_max, dirty_limited = 0, False
        while True:
            if mig_tid is None:
                mig_tid = find_thread(src.proc.pid, mig_names)
            if mig_tid is not None:
                c = proc_cpu(src.proc.pid, mig_tid)
                mig_cpu = c if c is not None else mig_cpu
            info = src.qmp.cmd("query-migrate")
            series.poll(info)
            throttle_max = max(throttle_max, info.get("cpu-throttle-percentage", 0))
            if "dirty-limit-ring-full-time" in info:
                dirty_limited = True
            if info.get("status") in ("completed", "failed", "cancelled"):
                break
            if time.monotonic() - t0 > 600:
                raise RuntimeError("snapshot did not finish in 600 s")
            time.sleep(0.05)
        wall = time.monotonic() - t0
        src_cpu = proc_cpu(src.proc.pid) - src_cpu0
        # The guest's own lines during the snapshot (and one period after it).
        try:
            src.wait_line("STAT", 30, src.line_count())
        except TimeoutError:
            pass
        during = [l for _, l in src.lines_since(mig_start)]
        # Three more seconds of a background snapshot's guest (a precopy's
        # source is paused now): it may leave costs behind (split huge pages).
        after_start = src.line_count()
        try:
            for _ in range(3 if variant == "bg" else 0):
                src.wait_line("STAT", 30, src.line_count())
        except TimeoutError:
            pass
        after = [l for _, l in src.lines_since(after_start)]
        if info["status"] != "completed":
            raise RuntimeError("snapshot %s: %s" % (info["status"], info.get("error-desc")))
        size = os.path.getsize(path)
        bw, bp99, brate = stat_summary(before)
        dw, dp99, drate = stat_summary(during)
        aw, _, arate = stat_summary(after)
        res = {
            "total-time-ms": info["total-time"], "downtime-ms": info.get("downtime", 0),
            "file-MiB": size / 2**20,
            "file/nonzero-RAM": size / (sc["nonzero_mib"] * 2**20),
            "passes": info["ram"]["dirty-sync-count"],
            "src-cpu-s": src_cpu, "mig-thread-cpu-s": mig_cpu,
            "guest-rate-MBps-before": brate, "guest-rate-MBps-during": drate,
            "guest-rate-kept": (drate / brate) if brate and drate is not None else None,
            "guest-max-write-us-during": dw, "guest-p99-write-us-during": dp99,
            "guest-writes-over-100us-during": slow_writes(during),
            "guest-rate-kept-after": (arate / brate) if brate and arate is not None else None,
            "guest-max-write-us-after": aw,
            "wall-s": wall,
        }
        bg = info.get("x-background-snapshot")
        if bg:
            res["faults"] = bg["faults"]
            res["fault-p99-us"] = bg["fault-latency-p99-us"]
            res["fault-max-us"] = bg["fault-latency-max-us"]
            if "buffer-size" in bg:
                res["buffer-MiB"] = bg["buffer-size"] / 2**20
                res["buffer-peak-MiB"] = bg["buffer-peak"] / 2**20
            if "small-faults" in bg:
                res["small-faults"] = bg["small-faults"]
        src.qmp.cmd("query-status")     # collects the events sent meanwhile
        res[SERIES_KEY] = series.finish((("src", src, warm_start),),
                                        latency_histogram(info, "fault"), variant != "bg")
        log.write(json.dumps({"binary": binary, "variant": variant, "info": info}) + "\n")
        return res
    finally:
        restore_cpu1()
        src.kill()
        if os.path.exists(path):
            os.unlink(path)
