# SPDX-License-Identifier: GPL-2.0-or-later
"""The cost of a display refresh's dirty-log sync, measured from outside.

Both binaries are measured the same way: perf uprobes on the functions a
refresh calls to learn (and re-arm) which VRAM pages changed, on the main
thread, and on libc's allocators while one of them runs.

  QEMU 7.2: graphic_hw_update -> vga_update_display -> ...
            memory_region_snapshot_and_clear_dirty (KVM_GET_DIRTY_LOG of
            the VRAM's slots, the snapshot, KVM_CLEAR_DIRTY_LOG)
  ours:     graphic_hw_update -> console_sync_dirty (KVM_GET_DIRTY_LOG of
            the VRAM slot, handed to the display's bitmap, then one
            KVM_CLEAR_DIRTY_LOG of the pages KVM reported)

Per refresh: the time inside those functions, the allocations made inside
them, and the whole graphic_hw_update. A probe hit costs a trap, the same
for both: one function each. Needs root (perf probe, tracefs).
"""
import os
import re
import signal
import subprocess
import tempfile
import time

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
ALLOCATORS = ("malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc")
SYNC_FUNCS = {
    "qemu": ("memory_region_snapshot_and_clear_dirty",),
    "ours": ("console_sync_dirty",),
}
REFRESH_FUNC = "graphic_hw_update"


class ProbeError(Exception):
    pass


def _perf(args, check=True):
    r = subprocess.run(["perf"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if check and r.returncode:
        raise ProbeError("perf %s: %s" % (" ".join(args), r.stderr.strip()[-400:]))
    return r.stdout


def _mount_tracefs():
    if not os.path.exists("/sys/kernel/tracing/uprobe_events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"],
                       stderr=subprocess.DEVNULL)


class SyncProbe:
    """Probes for one binary ("qemu" or "ours"), removed by close()."""

    def __init__(self, binary, kind, allocs=True):
        """@allocs: probe libc's allocators too. Every thread's calls trap
        then, the migration's included: leave them out while measuring
        anything else about the process."""
        _mount_tracefs()
        self.group = "mb%s%d" % (kind, os.getpid())
        self.sync_funcs = SYNC_FUNCS[kind]
        self.events = []
        self.rec = None
        try:
            for i, fn in enumerate(self.sync_funcs):
                self._add(binary, "sync%d" % i, fn)
                self._add(binary, "sync%dr" % i, fn + "%return")
            self._add(binary, "hwupd", REFRESH_FUNC)
            self._add(binary, "hwupdr", REFRESH_FUNC + "%return")
            for fn in ALLOCATORS if allocs else ():
                self._add(LIBC, "a_" + fn, fn)
            self.allocs = allocs
        except ProbeError:
            self.close()
            raise

    def _add(self, binary, name, spec):
        _perf(["probe", "-q", "-x", binary, "-a", "%s:%s=%s" % (self.group, name, spec)])
        # perf names a return probe NAME__return.
        self.events.append("%s:%s%s" % (self.group, name,
                                        "__return" if spec.endswith("%return") else ""))

    def close(self):
        """Stops a recording still running and removes the probes."""
        if self.rec and self.rec.poll() is None:
            self.rec.kill()
            self.rec.wait()
            self.tmp.cleanup()
        if self.events:
            _perf(["probe", "-q", "-d", self.group + ":*"], check=False)
            self.events = []

    def measure(self, pid, seconds):
        """Per refresh on @pid's main thread over @seconds: a dict, or None if it never refreshed."""
        self.start(pid)
        time.sleep(seconds)
        return self.stop()

    def start(self, pid):
        """Records @pid's probe hits until stop()."""
        self.pid = pid
        self.tmp = tempfile.TemporaryDirectory()
        self.data = os.path.join(self.tmp.name, "perf.data")
        args = ["perf", "record", "-q", "-o", self.data, "-p", str(pid)]
        for e in self.events:
            args += ["-e", e]
        self.rec = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    universal_newlines=True)
        # perf attaches in well under a second; hits before that are not counted.
        time.sleep(0.5)
        if self.rec.poll() is not None:
            raise ProbeError("perf record: %s" % self.rec.stderr.read().strip()[-400:])

    def stop(self):
        """What start() recorded, per refresh (see measure)."""
        self.rec.send_signal(signal.SIGINT)
        try:
            self.rec.wait(30)
        except subprocess.TimeoutExpired:
            self.rec.kill()
            self.rec.wait()
        self.rec = None
        try:
            out = _perf(["script", "-i", self.data, "--ns", "-F", "tid,time,event"])
        finally:
            self.tmp.cleanup()
        return self._summarise(self.pid, out)

    def _summarise(self, pid, out):
        line_re = re.compile(r"^\s*(\d+)\s+([\d.]+):\s+%s:(\S+?):?\s*$" % re.escape(self.group))
        refreshes, sync_ns, alloc, refresh_ns = 0, 0, 0, 0
        by_func = [0.0] * len(self.sync_funcs)
        in_sync, sync_t0, upd_t0 = None, 0.0, None
        for l in out.splitlines():
            m = line_re.match(l)
            if not m or int(m.group(1)) != pid:
                continue
            t, ev = float(m.group(2)), m.group(3)
            if ev.endswith("__return"):
                ev = ev[:-len("__return")]
            if ev == "hwupd":
                refreshes += 1
                upd_t0 = t
            elif ev == "hwupdr" and upd_t0 is not None:
                refresh_ns += (t - upd_t0) * 1e9
                upd_t0 = None
            elif ev.startswith("a_"):
                alloc += in_sync is not None
            elif ev.endswith("r"):
                if in_sync == ev[:-1]:
                    sync_ns += (t - sync_t0) * 1e9
                    by_func[int(in_sync[len("sync"):])] += (t - sync_t0) * 1e9
                    in_sync = None
            else:
                in_sync, sync_t0 = ev, t
        if not refreshes:
            return None
        return {"refreshes": refreshes,
                "sync-us-per-refresh": sync_ns / refreshes / 1000,
                "allocations-per-refresh": alloc / refreshes if self.allocs else None,
                "refresh-us": refresh_ns / refreshes / 1000,
                "sync-us-by-function": {fn: ns / refreshes / 1000
                                        for fn, ns in zip(self.sync_funcs, by_func)}}
