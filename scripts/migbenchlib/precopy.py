# SPDX-License-Identifier: GPL-2.0-or-later
"""One precopy (or postcopy) run of migbench: a source and a destination of
one binary, the scenario's parameters and capabilities set on both, the
migration polled every 50 ms, and the run's figures (time, bytes, passes,
CPU, guest latency, downtime as the guest sees it, network and display
figures when the scenario has them)."""
import json
import os
import sys
import time

import netclient
import rfbviewer
import syncprobe
from qmp import VM, MonitorGone, QMPError, kv

from .binaries import Refused, set_migration  # noqa: F401 (Refused: migbench's)
from .blkbench import Disk, blk_stats, blk_summary
from .launch import display_args, free_udp_port, free_vnc_port, net_args, pin_threads, \
    restore_cpu1, tls_args, trace_args, vcpu_preemptions, vm_args, TLS_DST_PARAMS, \
    TLS_SRC_PARAMS
from .measure import compute_ips, cpu_steal_ms, display_delta, display_sample, find_thread, \
    latency_histogram, probe_result, proc_cpu, slow_writes, stat_summary, threads_with_prefix, \
    vmm_cpu
from .series import SERIES_KEY, Series


# What the destination must have too before the source connects (QEMU
# checks multifd and the channel count and compression of each channel).
DST_CAPS = ("multifd", "postcopy-ram", "postcopy-preempt")
DST_PARAM_PREFIX = "multifd-"
# Multifd channel threads of the source: QEMU 7.2's "multifdsend_N" (with
# debug-threads=on), QEMU 10.0's "mig/src/send_N", ours "mig/mfd-send/N"
# (comm is cut at 15 characters).
MFD_SEND_PREFIXES = ("multifdsend", "mig/src/send", "mig/mfd-send")
# The source's migration thread: QEMU 7.2's, QEMU 10.0's; ours.
PEER_MIG_THREADS = ("live_migration", "mig/src/main")
OURS_MIG_THREADS = ("mig/src",)
# A migration whose status and bytes do not move for this long has hung.
STALL_S = 60


def run_precopy(sc, binary, is_peer, log):
    tmp = "/tmp/migbench-%d-%d.sock" % (os.getpid(), int(time.time() * 1000) % 100000)
    # migbench --source: one binary is every run's source, and the binary
    # under test (ours or a peer) is only the destination.
    src_binary, src_is_peer = sc.get("_source") or (binary, is_peer)
    accel = sc.get("_accel") or sc.get("peer_accel" if is_peer else "ours_accel")
    smp = ["-smp", str(sc["smp"])] if sc.get("smp") else []
    net = sc.get("net")
    ports = (free_udp_port(), free_udp_port()) if net else None
    disp = sc.get("display")
    vnc_port = free_vnc_port() if disp == "on" and is_peer else None
    if sc.get("_source") and disp:
        raise RuntimeError("--source does not measure the display")
    src_accel = accel if (src_binary, src_is_peer) == (binary, is_peer) else \
        sc.get("peer_accel" if src_is_peer else "ours_accel")
    # Shared storage: one image, opened by the source and the destination.
    disk = Disk(sc["disk"]) if sc.get("disk") else None
    src = VM(src_binary, display_args(disp, src_is_peer, vm_args(
        src_binary, src_is_peer, sc["mem"], sc["append"], smp + trace_args(sc, src_is_peer) +
        tls_args(sc, "client") + (net_args(src_is_peer, ports[0]) if net else []) +
        (disk.args(src_is_peer) if disk else []), accel=src_accel), vnc_port), "src")
    dst = None
    client = None
    viewer = probe = None
    try:
        src.wait_line("READY", 300)
        if vnc_port:
            viewer = rfbviewer.RFBViewer("127.0.0.1", vnc_port)
        if net:
            # Both ports: whichever guest runs answers (the destination's
            # slirp holds what comes before its guest starts, bounded).
            client = netclient.UdpEchoClient(ports, net["rate"])
            client.wait_echoes(net["rate"], 30)
            # Host CPU per echoed datagram at the steady rate, before any
            # migration: the VMM's threads without the vCPUs, and the whole process.
            v0, p0, e0, t_cpu = vmm_cpu(src.proc.pid), proc_cpu(src.proc.pid), client.echoes(), \
                time.monotonic()
            time.sleep(net.get("cpu_s", 3))
            pkts = max(client.echoes() - e0, 1)
            net_cpu = {"net-pps": pkts / (time.monotonic() - t_cpu),
                       "net-vmm-cpu-us-per-pkt": (vmm_cpu(src.proc.pid) - v0) * 1e6 / pkts,
                       "net-cpu-us-per-pkt": (proc_cpu(src.proc.pid) - p0) * 1e6 / pkts}
        if sc.get("_pin") or sc.get("pin_vcpus"):
            pin_threads(src, None, sc.get("pin_vcpus", ("CPU ",)))
        warm_start = src.line_count()
        # A verify guest reports passes (PASS), the others STAT lines.
        warm_line = "PASS" if "mode=verify" in sc["append"] else "STAT"
        for _ in range(sc.get("warmup", 2)):
            src.wait_line(warm_line, 60, src.line_count())
        dst = VM(binary, display_args(disp, is_peer, vm_args(
            binary, is_peer, sc["mem"], sc["append"], smp + ["-incoming", "defer"] +
            tls_args(sc, "server") + (net_args(is_peer, ports[1]) if net else []) +
            (disk.args(is_peer) if disk else []), accel)),
            "dst")
        pinned = ()
        if sc.get("_pin") or sc.get("pin_vcpus"):
            pinned = pin_threads(src, dst, sc.get("pin_vcpus", ("CPU ",)))
        # A monitor that stops answering must fail the run, not hang it.
        src.qmp.set_reply_timeout(STALL_S)
        dst.qmp.set_reply_timeout(STALL_S)
        params = (sc.get("params") if src_is_peer else
                  sc.get("ours_params", sc.get("params"))) or {}
        caps = sc.get("caps", [])
        dst_caps = sc.get("dst_caps", [c for c in caps if c in DST_CAPS])
        dst_params = sc.get("dst_params", {k: v for k, v in params.items()
                                           if dst_caps and k.startswith(DST_PARAM_PREFIX)})
        if sc.get("tls"):
            params = dict(params, **TLS_SRC_PARAMS)
            dst_params = dict(dst_params, **TLS_DST_PARAMS)
        # The destination first, and before it listens (-incoming defer, then
        # migrate-incoming): QEMU 10.0 refuses multifd and postcopy-preempt
        # set after its listener exists. Every binary is driven the same way.
        set_migration(dst, "on the destination", dst_params, dst_caps)
        set_migration(src, "on the source", params, caps)
        try:
            dst.qmp.cmd("migrate-incoming", uri="unix:" + tmp)
        except (QMPError, MonitorGone) as e:
            raise Refused("at migrate-incoming: %s" % e)
        before = [l for _, l in src.lines_since(warm_start)]
        mig_names = PEER_MIG_THREADS if src_is_peer else OURS_MIG_THREADS
        mfd = "multifd" in caps
        mfd_cpu = {}            # tid -> CPU seconds when last seen alive
        src_cpu0, dst_cpu0 = proc_cpu(src.proc.pid), proc_cpu(dst.proc.pid)
        src_vmm0, dst_vmm0 = vmm_cpu(src.proc.pid), vmm_cpu(dst.proc.pid)
        disp_res = {}
        if disp == "on":
            # The refresh's dirty-log sync with the guest drawing, then the
            # same while the migration tracks the same VRAM pages: uprobes
            # on both binaries (syncprobe), and our own counters.
            # The allocators' probes trap in every thread: only before the
            # migration, lest they slow it (its device save 10x, seen).
            kind = "qemu" if is_peer else "ours"
            probe = syncprobe.SyncProbe(binary, kind)
            d0 = None if is_peer else display_sample(src)
            disp_res = probe_result(probe.measure(src.proc.pid, 2), "display-")
            d1 = None if is_peer else display_sample(src)
            disp_res.update(display_delta(d0, d1, "display-own-"))
            probe.close()
            probe = syncprobe.SyncProbe(binary, kind, allocs=False)
            probe.start(src.proc.pid)
        mig_start = src.line_count()
        steal0 = cpu_steal_ms(1)
        preempt0 = vcpu_preemptions(src.proc.pid, pinned)
        t0 = time.monotonic()
        mig_wall = time.time()
        series = Series(t0, mig_wall)
        try:
            src.qmp.cmd("migrate", uri="unix:" + tmp)
        except (QMPError, MonitorGone) as e:
            raise Refused("at migrate: %s" % e)
        mig = {"tid": None, "cpu": None}
        first_pass_bytes = None
        progress, progress_t = None, t0
        switch = sc.get("postcopy")        # None, "at-once" or "after-pass-1"
        switched_at = None                 # destination line count at the switch
        throttle_max, dirty_limited = 0, False
        last_expected = None               # expected-downtime, the last seen while active
        pct_last, pct_back = None, 0       # ours: x-progress.percent, times it went back

        def sample():
            # The threads end with the migration: keep their last sample.
            if mig["tid"] is None:
                mig["tid"] = find_thread(src.proc.pid, mig_names)
            if mig["tid"] is not None:
                c = proc_cpu(src.proc.pid, mig["tid"])
                mig["cpu"] = c if c is not None else mig["cpu"]
            for tid in threads_with_prefix(src.proc.pid, MFD_SEND_PREFIXES) if mfd else ():
                c = proc_cpu(src.proc.pid, tid)
                if c is not None:
                    mfd_cpu[tid] = c

        while True:
            sample()
            try:
                info = src.qmp.cmd("query-migrate")
            except OSError as e:    # socket.timeout included
                raise RuntimeError("source monitor did not answer query-migrate: %s" % e)
            series.poll(info)
            pct = info.get("x-progress", {}).get("percent")
            if pct is not None:
                pct_back += pct_last is not None and pct < pct_last
                pct_last = pct
            # Bytes when the second dirty sync shows: about the end of the first pass.
            if first_pass_bytes is None and info.get("ram", {}).get("dirty-sync-count", 0) >= 2:
                first_pass_bytes = info["ram"]["transferred"]
            if switch and switched_at is None and info.get("status") == "active" and (
                    switch == "at-once" or first_pass_bytes is not None):
                src.qmp.cmd("migrate-start-postcopy")
                series.mark("postcopy-start-s")
                switched_at = dst.line_count()
            throttle_max = max(throttle_max, info.get("cpu-throttle-percentage", 0))
            if info.get("status") == "active" and "expected-downtime" in info:
                last_expected = info["expected-downtime"]
            if "dirty-limit-ring-full-time" in info:
                dirty_limited = True
            if info.get("status") in ("completed", "failed", "cancelled"):
                break
            now = time.monotonic()
            p = (info.get("status"), info.get("ram", {}).get("transferred"))
            if p != progress:
                progress, progress_t = p, now
            elif now - progress_t > STALL_S:
                raise RuntimeError("migration stuck in %s at %s bytes for %d s" %
                                   (p[0], p[1], STALL_S))
            # slo scenarios: QEMU's rule may never switch over; say so and stop.
            give_up = sc.get("give_up_s", 600)
            if now - t0 > give_up:
                passes = info.get("ram", {}).get("dirty-sync-count", 0)
                try:
                    src.qmp.cmd("migrate_cancel")
                except (QMPError, MonitorGone, OSError):
                    pass
                raise RuntimeError("migration did not complete in %d s (%d passes)" %
                                   (give_up, passes))
            time.sleep(0.05)
        wall = time.monotonic() - t0
        if probe:
            disp_res.update(probe_result(probe.stop(), "display-during-"))
            if not is_peer:
                disp_res.update(display_delta(d1, display_sample(src), "display-own-during-"))
            if viewer and viewer.error:
                raise RuntimeError("the VNC viewer failed: %s" % viewer.error)
        steal = cpu_steal_ms(1) - steal0 if steal0 is not None else None
        preempted = vcpu_preemptions(src.proc.pid, pinned) - preempt0
        sample()                # the threads may still be there, 50 ms later
        mig_cpu = mig["cpu"]
        src_cpu = proc_cpu(src.proc.pid) - src_cpu0
        dst_cpu = proc_cpu(dst.proc.pid) - dst_cpu0
        src_vmm = vmm_cpu(src.proc.pid) - src_vmm0
        dst_vmm = vmm_cpu(dst.proc.pid) - dst_vmm0
        during = [l for _, l in src.lines_since(mig_start)]
        if info["status"] != "completed":
            raise RuntimeError("migration %s: %s" % (info["status"], info.get("error-desc")))
        # The destination guest must keep working: more lines, no FAIL.
        dst_start = dst.line_count()
        want = "PASS" if "mode=verify" in sc["append"] else "STAT"
        ok = True
        try:
            i, _ = dst.wait_line(want, 60, dst_start)
            dst.wait_line(want, 60, i + 1)
        except TimeoutError:
            ok = False
        ok = ok and not any(l.startswith("FAIL") for _, l in dst.lines_since(0))
        ram = info["ram"]
        bw, bp99, brate = stat_summary(before)
        dw, dp99, drate = stat_summary(during)
        res = {
            "total-time-ms": info["total-time"], "setup-time-ms": info.get("setup-time", 0),
            "downtime-ms": info.get("downtime", 0), "transferred-MiB": ram["transferred"] / 2**20,
            "passes": ram["dirty-sync-count"], "throughput-mbps": ram["mbps"],
            "src-cpu-s": src_cpu, "dst-cpu-s": dst_cpu, "mig-thread-cpu-s": mig_cpu,
            "src-cpu-s-per-GiB": src_cpu / max(ram["transferred"] / 2**30, 1e-9),
            # Per GiB of guest RAM: zero pages cost CPU but send few bytes.
            "src-cpu-s-per-GiB-ram": src_cpu / max(ram["total"] / 2**30, 1e-9),
            "dst-cpu-s-per-GiB-ram": dst_cpu / max(ram["total"] / 2**30, 1e-9),
            # Without the vCPU threads (an idle guest still spins its vCPU here):
            # what migrating costs each side, per GiB of guest RAM.
            "src-vmm-cpu-ms-per-GiB-ram": src_vmm * 1000 / max(ram["total"] / 2**30, 1e-9),
            "dst-vmm-cpu-ms-per-GiB-ram": dst_vmm * 1000 / max(ram["total"] / 2**30, 1e-9),
            "guest-max-write-us-before": bw, "guest-p99-write-us-before": bp99,
            "guest-max-write-us-during": dw, "guest-p99-write-us-during": dp99,
            "guest-writes-over-100us-during": slow_writes(during),
            "guest-rate-MBps-before": brate, "guest-rate-MBps-during": drate,
            "dst-guest-ok": 1 if ok else 0, "wall-s": wall,
            # The pinned vCPU's host CPU taken by the hypervisor below us
            # during the migration: stalls no VMM can avoid.
            "host-steal-ms-cpu1": steal,
            "after-pass-1-MiB": (ram["transferred"] - (first_pass_bytes or ram["transferred"]))
                                / 2**20,
        }
        if pinned:
            # How often the pinned vCPU lost CPU 1 while it could run
            # (launch.vcpu_preemptions says what is expected).
            res["vcpu-preempted"] = preempted
        if mfd:
            res["mfd-threads"] = len(mfd_cpu)
            res["mfd-threads-cpu-s"] = sum(mfd_cpu.values()) if mfd_cpu else None
            # QEMU 7.2 counts a multifd page as 4 KiB before compression: with
            # compression its multifd and transferred bytes are not wire bytes.
            if "multifd-bytes" in ram:
                res["multifd-MiB"] = ram["multifd-bytes"] / 2**20
            if not mfd_cpu:
                print("   warning: multifd on but no %s* thread seen: multifd not used?" %
                      "*/".join(MFD_SEND_PREFIXES), file=sys.stderr, flush=True)
        # Downtime as the guest sees it, for either binary: the source's STOP
        # to the destination's RESUME (QEMU 7.2's downtime field is not that in
        # postcopy). Both events carry the host's wall clock.
        dst.qmp.cmd("query-status")
        stop = [e for e in src.qmp.events if e["event"] == "STOP"]
        resume = [e for e in dst.qmp.events if e["event"] == "RESUME"]
        if stop and resume:
            def ts(e):
                return e["timestamp"]["seconds"] + e["timestamp"]["microseconds"] / 1e6
            res["stop-to-dst-run-ms"] = (ts(resume[-1]) - ts(stop[-1])) * 1000
        res.update(disp_res)
        if client:
            res.update(net_cpu)
            # The echoes from a second before the migration to now (the
            # destination answered at least two STAT periods since).
            down = (ts(stop[-1]), ts(resume[-1])) if stop and resume else (None, None)
            res.update(client.summary(mig_wall - 1.0, time.time(), *down))
            if res.get("net-max-gap-ms") is not None and res.get("stop-to-dst-run-ms"):
                res["net-gap-minus-downtime-ms"] = (res["net-max-gap-ms"] -
                                                    res["stop-to-dst-run-ms"])
        xi = dst.qmp.cmd("query-migrate").get("x-incoming-downtime")
        if xi:
            # The destination's side of the switchover (ours only). Its
            # handoff and start-vcpus come after its EOF, so after the source's
            # last byte: they add to the source's phases without overlap.
            res["dst-switchover-ms"] = xi["total"] / 1000
            res["dst-device-state-ms"] = xi["device-state"] / 1000
            res["dst-start-vcpus-ms"] = (xi["handoff"] + xi["start-vcpus"]) / 1000
            xdt = info.get("x-downtime")
            if xdt and res.get("stop-to-dst-run-ms"):
                named = (xdt["total"] - xdt["unattributed"] + xi["handoff"] + xi["start-vcpus"])
                res["stop-to-dst-run-attributed-%"] = min(
                    100, named / 10 / res["stop-to-dst-run-ms"])
        if switch:
            dinfo = dst.qmp.cmd("query-migrate")
            pw, pp99, prate = stat_summary([l for _, l in dst.lines_since(switched_at or 0)])
            res["postcopy-requests"] = ram.get("postcopy-requests")
            res["postcopy-MiB"] = ram.get("postcopy-bytes", 0) / 2**20
            res["guest-rate-MBps-postcopy"] = prate
            res["guest-max-write-us-postcopy"] = pw
            res["guest-p99-write-us-postcopy"] = pp99
            res["guest-rate-kept-%"] = prate * 100 / brate if prate and brate else None
            xp = dinfo.get("x-postcopy")
            if xp:
                res["request-p50-us"] = xp["request-latency-p50-us"]
                res["request-p99-us"] = xp["request-latency-p99-us"]
                res["request-max-us"] = xp["request-latency-max-us"]
            if "postcopy-latency" in dinfo:
                res["request-mean-us"] = dinfo["postcopy-latency"] / 1000
        if sc.get("smp"):
            # The compute CPU undisturbed, and over the migration's second
            # half (where the throttles are strongest).
            # Undisturbed: the best second before the migration (the first
            # reports after pinning may still share a core).
            ib = max((float(kv(l)["ips"]) for l in before
                      if l.startswith("STAT cpu=0 ") and "ips=" in l), default=None)
            half = [l for _, l in src.lines_since(mig_start + (len(during) // 2))]
            idur = compute_ips(half)
            res["compute-ips-before"] = ib
            res["compute-ips-during"] = idur
            res["compute-kept-%"] = idur * 100 / ib if ib and idur else None
            res["throttle-max-%"] = throttle_max
            res["dirty-limited"] = 1 if dirty_limited else 0
        if disk:
            # The guest's disk (blkbench on CPU 0) before and during the
            # migration: what the switchover and the dirty tracking cost it.
            res.update(blk_summary(blk_stats(before, 0), "guest-io-before-"))
            res.update(blk_summary(blk_stats(during, 0), "guest-io-during-"))
            res["o-direct"] = 1 if disk.cache == "none" else 0
        if last_expected is not None and not switch:
            # The last expected-downtime seen while active (polled every 50 ms).
            res["expected-downtime-ms"] = last_expected
        if sc.get("params", {}).get("downtime-limit") and not switch:
            res["downtime/limit"] = info.get("downtime", 0) / sc["params"]["downtime-limit"]
        xdt = info.get("x-downtime")
        if xdt and xdt.get("expected"):
            # Ours: the prediction made when the switchover was decided.
            res["downtime/predicted"] = xdt["total"] / xdt["expected"]
            res["predicted-downtime-ms"] = xdt["expected"] / 1000
        if pct_last is not None:
            res["progress-went-back"] = pct_back
        xp = info.get("x-progress")
        if xp:
            # The policy step in force at the end: 0 none, then the policy's order.
            res["policy-steps"] = 0 if xp.get("step", "none") == "none" else 1
        if xdt:
            res["downtime-attributed-%"] = (xdt["total"] - xdt["unattributed"]) * 100 / max(
                xdt["total"], 1)
            # Ours: the stop (devices drained) and the images' handover.
            for ph in ("stop-vcpus", "handover", "final-sync", "last-ram", "device-state"):
                res["downtime-%s-ms" % ph] = xdt.get(ph, 0) / 1000
        xb = info.get("xbzrle-cache")
        if xb:
            res["xbzrle-pages"] = xb["pages"]
            res["xbzrle-MiB"] = xb["bytes"] / 2**20
            res["xbzrle-cache-miss"] = xb["cache-miss"]
            res["xbzrle-overflow"] = xb["overflow"]
        xd = info.get("x-dirty-log")
        if xd:
            res["x-sync-ms-per-GiB"] = xd["sync-time-us-total"] / 1000 / max(
                ram["transferred"] / 2**30, 1e-9)
            res["x-clears"] = xd["clears"]
        # The destination's view of the page requests: what its guest waited.
        res[SERIES_KEY] = series.finish((("src", src, warm_start), ("dst", dst, 0)),
                                        latency_histogram(dinfo, "request") if switch else None)
        log.write(json.dumps({"binary": binary, "info": info}) + "\n")
        return res
    finally:
        restore_cpu1()
        if client:
            client.stop()
        if viewer:
            viewer.close()
        if probe:
            probe.close()
        src.kill()
        if dst:
            dst.kill()
        if disk:
            disk.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
