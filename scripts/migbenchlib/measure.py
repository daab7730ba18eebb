# SPDX-License-Identifier: GPL-2.0-or-later
"""migbench's measures of one run: CPU of a process and of its threads
(from /proc), the host's steal time, the guest's write latency and rate and
compute speed (from its STAT lines), the latency histograms a binary
reports, and the display refresh figures (x-query-display, syncprobe).
Pure functions of what they read: no state of their own."""
import os
import statistics

from qmp import MonitorGone, QMPError, kv


CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid, tid=None):
    """utime + stime of a process (or one thread) in seconds."""
    path = "/proc/%d/stat" % pid if tid is None else "/proc/%d/task/%d/stat" % (pid, tid)
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError):
        return None


def find_thread(pid, names):
    """tid of the first thread whose comm is in @names."""
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() in names:
                    return int(tid)
    except OSError:
        pass
    return None


def vmm_cpu(pid):
    """CPU seconds of a VM process outside its vCPU threads (which run the guest,
    idle or not): the monitor, the migration and its channel threads. Exited
    threads stay counted in the process total."""
    total = proc_cpu(pid)
    if total is None:
        return None
    for tid in threads_with_prefix(pid, ("CPU ",)):
        c = proc_cpu(pid, tid)
        total -= c or 0
    return total


def threads_with_prefix(pid, prefixes):
    """tids of the threads whose comm starts with one of @prefixes."""
    tids = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                    if f.read().startswith(prefixes):
                        tids.append(int(tid))
            except OSError:
                pass        # the thread exited meanwhile
    except OSError:
        pass
    return tids


def cpu_steal_ms(cpu):
    """Time the host (a hypervisor under this machine) took host CPU @cpu away, ms."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu%d " % cpu):
                return int(line.split()[8]) * 1000 / os.sysconf("SC_CLK_TCK")
    return None


def latency_histogram(info, what):
    """The log2-microsecond latency histogram of @info's x-background-snapshot
    ("fault") or x-postcopy ("request") member, or None."""
    x = info.get("x-background-snapshot" if what == "fault" else "x-postcopy")
    if not x or ("%s-latency-histogram" % what) not in x:
        return None
    return {"what": what, "histogram": x["%s-latency-histogram" % what],
            "p50-us": x["%s-latency-p50-us" % what], "p99-us": x["%s-latency-p99-us" % what],
            "max-us": x["%s-latency-max-us" % what]}


def stat_summary(lines):
    """Worst single write and worst p99 (us) and mean rate over STAT lines
    (those of a writing CPU: a compute CPU's lines have no rate)."""
    stats = [kv(l) for l in lines if l.startswith("STAT") and "rate_mbps=" in l]
    if not stats:
        return None, None, None
    worst = max(int(s.get("max_write_us", 0)) for s in stats)
    p99 = max(int(s.get("p99_write_us", 0)) for s in stats)
    rates = [float(s.get("rate_mbps", 0)) for s in stats]
    return worst, p99, statistics.mean(rates)


def slow_writes(lines):
    """Writes of 100 us or more over STAT lines (the firmware's slow_writes), or None."""
    stats = [kv(l) for l in lines if l.startswith("STAT") and "slow_writes=" in l]
    return sum(int(s["slow_writes"]) for s in stats) if stats else None


def compute_ips(lines):
    """Mean iterations per second of the compute CPU's STAT lines (cpu=0), or None."""
    ips = [float(kv(l)["ips"]) for l in lines if l.startswith("STAT cpu=0 ") and "ips=" in l]
    return statistics.mean(ips) if ips else None


def display_sample(vm):
    try:
        return vm.qmp.cmd("x-query-display")
    except (QMPError, MonitorGone):    # no such command (QEMU 7.2), or gone
        return None


def display_delta(a, b, prefix):
    """Per refresh between two x-query-display samples (ours only)."""
    if not a or not b or b["refreshes"] <= a["refreshes"]:
        return {}
    n = b["refreshes"] - a["refreshes"]
    return {prefix + "refreshes": n,
            prefix + "sync-us-per-refresh": (b["sync-time-us-total"] - a["sync-time-us-total"]) / n,
            prefix + "lines-per-refresh": (b["lines-converted"] - a["lines-converted"]) / n,
            prefix + "surface-allocations": b["surface-allocations"] - a["surface-allocations"]}


def probe_result(r, prefix):
    """syncprobe's figures per refresh, as result keys."""
    if not r:
        return {}
    return {prefix + "refreshes": r["refreshes"], prefix + "sync-us": r["sync-us-per-refresh"],
            **({prefix + "sync-allocs": r["allocations-per-refresh"]}
               if r["allocations-per-refresh"] is not None else {}),
            prefix + "refresh-us": r["refresh-us"],
            **{prefix + "us-in-" + fn: us for fn, us in r["sync-us-by-function"].items()
               if len(r["sync-us-by-function"]) > 1}}
