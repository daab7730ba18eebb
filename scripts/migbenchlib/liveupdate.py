# SPDX-License-Identifier: GPL-2.0-or-later
"""migbench's live-update scenario (issue 38): replace the VMM under a
running guest by cpr-transfer, by cpr-exec and by a plain precopy over a
unix socket, for each guest size of the scenario, each binary in turn.

The guest has two vCPUs: CPU 0 runs the verify workload on a small area
(mem0=, 64 MiB) and prints a PASS line about every millisecond; it is the
console whose silence is timed, and any page lost or misplaced by the
update is a FAIL line. CPU 1 dirties the rest of the populated area at a
steady rate (mode1=dirty), so a precopy has pages to send again and
converges. The whole area is filled with random bytes at boot: it is the
guest's populated RAM ("populated" below; for the 16 GiB guest only part
of its RAM, which is all this machine can hold twice).

The cpr rows map the guest's RAM from a memfd (memory-backend-memfd,
share=on, -machine memory-backend=ram0,aux-ram-share=on, as QEMU 10.0's CPR
documentation shows) so that the new process maps the same memory. The
precopy row is a plain guest (anonymous RAM, as one migrates today): a
precopy over a memfd would fault in every page it reads for zero-page
detection (a read of a memfd hole allocates a page), 16 GiB per process
for the 16 GiB guest.

Each run's figures, all timed on the host:
  console-gap-ms       the longest silence of the guest's console from the
                       migrate command until SETTLE_S after the destination's
                       first output, the source's and the destination's
                       output merged and timed per read of their pipes: the
                       pause as the guest shows it, including its first slow
                       steps on the destination (re-faulting its memory)
  console-gap-at-ms    when that silence began, from the source's last output
                       (0: it is the switch; < 0: while the source still ran;
                       > 0: on the destination)
  switch-gap-ms        the source's last console output to the destination's
                       first (cpr-exec: around the source's STOP, one process)
  console-gap-before-ms  the longest silence in the GAP_BEFORE_S before the
                       migrate command: the floor of the two above
  stop-to-dst-run-ms   the source's STOP event to the destination's RESUME
                       (QMP timestamps); "-" when the destination's monitor
                       came up after its RESUME (cpr-exec reconnects)
  total-time-ms        the migrate command to the destination's first output
  downtime-ms, transferred-MiB  the source's own query-migrate, last seen
  peak-mem-MiB         system-wide used memory (MemTotal - MemAvailable of
                       /proc/meminfo, every MEM_SAMPLE_S) at its peak from
                       before the source starts to the end of the run, less
                       its value before the source started: both processes,
                       their guest RAM (memfd pages count as used) and
                       anything else the host did meanwhile
  peak-mem/ram, peak-mem/populated  that over -m, over the populated MiB
  peak-rss-MiB         the run's processes alone (what other work on the
                       machine cannot inflate): their RssAnon and RssFile
                       and the largest RssShmem (the memfd both map, once),
                       at its peak; peak-rss/populated over the populated MiB
  dst-guest-ok         1 if the destination printed PASS lines for
                       SETTLE_S and no console printed FAIL

A binary that refuses a mode (an option, a parameter, the migrate command)
gets "n/a (refused: MESSAGE)" for that mode; one whose QMP schema has no
such migration mode gets "n/a (no cpr-exec)" (QEMU 10.0). A run that
would exhaust the host's memory is stopped (MEM_GUARD_MIB).
"""
import json
import os
import shutil
import sys
import tempfile
import threading
import time

from migscenarios import UNLIMITED
from qmp import VM, QMP, MonitorGone, QMPError

from .binaries import Refused
from .launch import vm_args
from .report import print_table

MODES = ("cpr-transfer", "cpr-exec", "precopy")
# The destination's console is watched this long after its first output.
SETTLE_S = 3.0
# The console before the migrate command, for the floor of the gap figures.
GAP_BEFORE_S = 3.0
MEM_SAMPLE_S = 0.02
# Below this much MemAvailable the run's VMs are killed (a shared machine).
MEM_GUARD_MIB = 1536
# The longest a boot (filling 4 GiB costs up to 40 s here) or an update may take.
BOOT_S = 300
UPDATE_S = 300
# A chunk of console output read within this long after the source's STOP
# was still the source's (the pipe's reader runs a little behind).
READ_LAG_S = 0.002


class ConsoleVM(VM):
    """A VM whose console output is timed per read of its pipe (a byte
    stream, not lines: a line cut by the update is not lost), and whose QMP
    is connected when the caller says (a cpr-transfer destination serves
    its monitor only once the source has sent the cpr state). Its QMP
    socket is @sock_dir/@name-qmp.sock. @chunks is written by the reader
    thread under lines_lock."""

    def __init__(self, binary, args, name, sock_dir):
        self.chunks = []
        path = os.path.join(sock_dir, name + "-qmp.sock")
        # Its whole command line but the binary (cpr-exec-command repeats it).
        self.args = list(args) + ["-qmp", "unix:%s,server=on,wait=off" % path]
        super().__init__(binary, self.args, name, qmp=False)
        self.qmp_path = path    # VM's own is for the QMP it did not start

    def _reader(self):
        fd = self.proc.stdout.fileno()
        pending = b""
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            now = time.monotonic()
            *full, pending = (pending + data).split(b"\n")
            with self.lines_lock:
                self.chunks.append(now)
                self.lines.extend((now, raw.decode(errors="replace").rstrip("\r"))
                                  for raw in full)
        if pending:
            with self.lines_lock:
                self.lines.append((time.monotonic(), pending.decode(errors="replace")))

    def chunk_times(self):
        with self.lines_lock:
            return list(self.chunks)

    def connect_qmp(self, timeout):
        """Connect (retrying for @timeout s while the process lives); the
        process's own words on stderr if it exited instead."""
        try:
            self.qmp = QMP(self.qmp_path, timeout, proc=self.proc)
        except MonitorGone as e:
            raise RuntimeError("%s: %s%s" % (self.name, e, self.said())) from None
        return self.qmp

    def said(self):
        """": LAST STDERR LINE" once the process has exited, else ""."""
        if self.proc.poll() is None:
            return ""
        deadline = time.monotonic() + 2
        while not self.stderr and time.monotonic() < deadline:
            time.sleep(0.01)    # the stderr reader has not seen EOF yet
        lines = self.stderr.decode(errors="replace").strip().splitlines()
        return ": " + lines[-1] if lines else ""


class HostMemory:
    """Memory sampled every MEM_SAMPLE_S by a thread of its own from start()
    to stop(): system-wide used memory (MemTotal - MemAvailable), its peak
    less its value at start(); and the resident memory of the run's VMs
    (@vms), their RssAnon and RssFile summed and the largest RssShmem once
    (the memfd both map is one memory), at its peak: the run's own share,
    whatever else the machine does meanwhile. Kills @vms if MemAvailable
    falls below MEM_GUARD_MIB. @vms is appended to by the run's thread
    before each VM is started; the other fields are written by the
    sampling thread only and read after stop()."""

    def __init__(self):
        self.vms = []
        self.tripped = None     # MemAvailable (MiB) when it ran out
        self.peak = self.base = None
        self.peak_rss = 0
        self._stop = threading.Event()
        self._thread = None

    @staticmethod
    def sample():
        """(used, available) in MiB."""
        vals = {}
        with open("/proc/meminfo") as f:
            for line in f:
                k, v = line.split(":", 1)
                if k in ("MemTotal", "MemAvailable"):
                    vals[k] = int(v.split()[0]) // 1024
        return vals["MemTotal"] - vals["MemAvailable"], vals["MemAvailable"]

    def rss(self):
        """The VMs' resident MiB, the shared memfd counted once."""
        own, shmem = 0, 0
        for vm in list(self.vms):
            try:
                with open("/proc/%d/status" % vm.proc.pid) as f:
                    vals = {k: int(v.split()[0]) for k, v in
                            (line.split(":", 1) for line in f if line.startswith("Rss"))}
            except (OSError, ValueError):
                continue        # exited, or being reaped
            own += vals.get("RssAnon", 0) + vals.get("RssFile", 0)
            shmem = max(shmem, vals.get("RssShmem", 0))
        return (own + shmem) // 1024

    def start(self):
        self.base = self.peak = self.sample()[0]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(MEM_SAMPLE_S):
            used, avail = self.sample()
            self.peak = max(self.peak, used)
            self.peak_rss = max(self.peak_rss, self.rss())
            if avail < MEM_GUARD_MIB and self.tripped is None:
                self.tripped = avail
                for vm in self.vms:
                    if vm.proc.poll() is None:
                        vm.proc.kill()

    def stop(self):
        """Peak less the starting value, MiB (again: the same)."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        return self.peak - self.base


def _mib(size):
    """MiB of "1G", "512M"."""
    n, unit = int(size[:-1]), size[-1].upper()
    return n << 10 if unit == "G" else n if unit == "M" else n >> 20


def guest_args(sc, g, binary, is_peer, mode):
    """The command line of guest @g (a scenario's "guests" entry) for @mode:
    memfd RAM shared with the next process for the cpr modes, plain RAM
    for precopy."""
    append = sc["append"] % {"mem1": g["populate"] - sc["mem0"], "mem0": sc["mem0"]}
    args = vm_args(binary, is_peer, g["mem"], append, ["-smp", "2"])
    if mode != "precopy":
        args[args.index("microvm")] = "microvm,memory-backend=ram0,aux-ram-share=on"
        args += ["-object", "memory-backend-memfd,id=ram0,size=%s,share=on" % g["mem"]]
    return args


def _has_mode(vm, mode):
    """Whether @vm's QMP schema has migration mode @mode (an enum with
    "normal" and it). Asked of the schema: query-migrate-parameters leaves
    cpr-exec-command out while it is unset (QEMU 10.2 as ours)."""
    try:
        schema = vm.qmp.cmd("query-qmp-schema")
    except (QMPError, MonitorGone):
        return True         # let the command itself say
    return any(e.get("meta-type") == "enum" and "normal" in e.get("values", ()) and
               mode in e["values"] for e in schema)


def _refused(what, e):
    """Refused for @what with the binary's own words (QMP's desc or its
    last stderr line) for the table's "n/a (refused: ...)"."""
    text = e.desc if isinstance(e, QMPError) else str(e)
    return Refused("%s: %s" % (what, text), None)


def _start(binary, args, name, tmp, mem):
    vm = ConsoleVM(binary, args, name, tmp)
    mem.vms.append(vm)
    return vm


def _boot(vm, mode=None):
    """Connect, check that it has migration mode @mode (else Refused: no
    @mode, before the long boot), wait for both CPUs' READY and
    GAP_BEFORE_S of output."""
    try:
        vm.connect_qmp(30)
    except RuntimeError as e:
        if vm.proc.poll() is None:
            raise
        raise _refused("did not start", e) from None
    if mode and not _has_mode(vm, mode):
        raise Refused("its QMP schema has no migration mode %s" % mode, mode)
    vm.qmp.set_reply_timeout(60)
    vm.wait_line("READY mode=dirty cpu=1", BOOT_S)
    time.sleep(GAP_BEFORE_S)


def _poll(vm, until, seen=None):
    """query-migrate on @vm until its status is one of @until (or UPDATE_S
    passes); the last reply, kept in @seen too as it comes (MonitorGone
    when the process went: an exec)."""
    deadline = time.monotonic() + UPDATE_S
    while True:
        info = vm.qmp.cmd("query-migrate")
        if not isinstance(info, dict):
            raise MonitorGone("not a query-migrate reply: %.60r" % info)
        if seen is not None:
            seen.clear()
            seen.update(info)
        if info.get("status") in until:
            return info
        if time.monotonic() > deadline:
            raise RuntimeError("the update is still %s after %d s" % (info.get("status"), UPDATE_S))
        time.sleep(0.01)


def _listening(path):
    """Whether a unix socket bound to @path listens (/proc/net/unix's
    SO_ACCEPTCON flag): the socket file exists from bind(), but a connect
    before listen() is refused. Connecting to find out is no way: the
    destination takes the first connection as its channel."""
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            fields = line.split()
            if len(fields) >= 8 and fields[7] == path and int(fields[3], 16) & 0x10000:
                return True
    return False


def _wait_listening(dst, path):
    """Until @dst listens on @path; Refused with its words if it exits."""
    deadline = time.monotonic() + 60
    while not _listening(path):
        if dst.proc.poll() is not None:
            raise _refused("the destination exited", dst.said().lstrip(": "))
        if time.monotonic() > deadline:
            raise RuntimeError("the destination did not listen on %s in 60 s" % path)
        time.sleep(0.001)


def _switch_transfer(sc, g, binary, is_peer, tmp, mem):
    """cpr-transfer: the destination starts with a cpr channel and blocks in
    its startup until the source's migrate sends the cpr state, so its QMP
    is connected only after the migrate."""
    args = guest_args(sc, g, binary, is_peer, "cpr-transfer")
    src = _start(binary, args, "src", tmp, mem)
    _boot(src, "cpr-transfer")
    try:
        src.qmp.cmd("migrate-set-parameters", mode="cpr-transfer")
    except QMPError as e:
        raise _refused("migrate-set-parameters", e)
    cpr_path, main_path = os.path.join(tmp, "cpr.sock"), os.path.join(tmp, "main.sock")
    cpr = {"channel-type": "cpr", "addr": {"transport": "socket", "type": "unix", "path": cpr_path}}
    main = {"channel-type": "main", "addr": {"transport": "socket", "type": "unix",
                                             "path": main_path}}
    dst = _start(binary, args + ["-incoming", json.dumps(cpr), "-incoming", "unix:" + main_path],
                 "dst", tmp, mem)
    _wait_listening(dst, cpr_path)
    t_mig = time.monotonic()
    try:
        src.qmp.cmd("migrate", channels=[main, cpr])
    except QMPError as e:
        raise _refused("migrate", e)
    dst.connect_qmp(UPDATE_S)
    info = _poll(src, ("completed", "failed", "cancelled"))
    return src, dst, t_mig, info, src.qmp.events


def _switch_exec(sc, g, binary, is_peer, tmp, mem):
    """cpr-exec (QEMU 10.2's spelling): the source writes its state to a
    file and execs cpr-exec-command under the same PID; the monitor
    connection closes at the exec and is made again on the same path."""
    args = guest_args(sc, g, binary, is_peer, "cpr-exec")
    src = _start(binary, args, "src", tmp, mem)
    _boot(src, "cpr-exec")
    state = os.path.join(tmp, "vm.state")
    try:
        src.qmp.cmd("migrate-set-parameters", **{
            "mode": "cpr-exec",
            "cpr-exec-command": [binary] + src.args + ["-incoming", "file:" + state]})
    except QMPError as e:
        raise _refused("migrate-set-parameters", e)
    old = src.qmp
    t_mig = time.monotonic()
    info = {}
    try:
        old.cmd("migrate", uri="file:" + state)
    except QMPError as e:
        raise _refused("migrate", e)
    # The exec may come before a poll sees "completed" (the last reply seen
    # is kept). A monitor connection that survives the exec (its fd kept)
    # shows the new process's guest running on it instead.
    try:
        _poll(src, ("completed", "failed", "cancelled"), info)
        if info["status"] != "completed":
            return src, src, t_mig, info, old.events
        deadline = time.monotonic() + UPDATE_S
        while old.cmd("query-status").get("status") != "running":
            if time.monotonic() > deadline:
                raise RuntimeError("completed, but no exec in %d s" % UPDATE_S)
            time.sleep(0.005)
        after = old.cmd("query-migrate")
        if after.get("status") == "failed":     # the old process took the guest back
            raise RuntimeError("cpr-exec failed: %s" % after.get("error-desc"))
        return src, src, t_mig, info, old.events
    except (MonitorGone, AttributeError):       # AttributeError: a reply that is not a dict
        pass
    old.close()
    src.connect_qmp(UPDATE_S)
    return src, src, t_mig, dict(info, status="completed"), old.events


def _switch_precopy(sc, g, binary, is_peer, tmp, mem):
    """A plain precopy over a unix socket, default capabilities, bandwidth
    unlimited (a local update has no link to spare)."""
    args = guest_args(sc, g, binary, is_peer, "precopy")
    src = _start(binary, args, "src", tmp, mem)
    _boot(src)
    main_path = os.path.join(tmp, "main.sock")
    dst = _start(binary, args + ["-incoming", "unix:" + main_path], "dst", tmp, mem)
    _wait_listening(dst, main_path)
    dst.connect_qmp(60)
    src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": UNLIMITED})
    t_mig = time.monotonic()
    try:
        src.qmp.cmd("migrate", uri="unix:" + main_path)
    except QMPError as e:
        raise _refused("migrate", e)
    info = _poll(src, ("completed", "failed", "cancelled"))
    return src, dst, t_mig, info, src.qmp.events


SWITCH = {"cpr-transfer": _switch_transfer, "cpr-exec": _switch_exec,
          "precopy": _switch_precopy}


def _wall(e):
    return e["timestamp"]["seconds"] + e["timestamp"]["microseconds"] / 1e6


def _max_gap(times, lo, hi):
    """The longest interval between consecutive @times within [@lo, @hi]
    and when it began, s; (0, None) without two times there."""
    ts = [t for t in times if lo <= t <= hi]
    return max(((b - a, a) for a, b in zip(ts, ts[1:])), default=(0, None))


def first_output(dst_times, stop, same):
    """The destination's first console output (monotonic s), or None yet:
    its first chunk, or with @same (one process, cpr-exec) the first chunk
    read READ_LAG_S after the source's STOP at @stop."""
    if same:
        return next((t for t in dst_times if t > stop + READ_LAG_S), None)
    return dst_times[0] if dst_times else None


def console_figures(src_times, dst_times, t_mig, stop, same):
    """The console figures of one update from the read times of the
    source's and the destination's output (the same list with @same),
    the migrate command's time @t_mig and the source's STOP @stop, all
    monotonic s. Read once the destination has printed for SETTLE_S."""
    first = first_output(dst_times, stop, same)
    last = max((t for t in src_times if t < first), default=None)
    merged = sorted(set(src_times) | set(dst_times))
    gap, gap_at = _max_gap(merged, t_mig, first + SETTLE_S)
    return {
        "console-gap-ms": gap * 1000,
        # Where it began against the switch: < 0 while the source ran.
        "console-gap-at-ms": (gap_at - last) * 1000
        if gap_at is not None and last is not None else None,
        "switch-gap-ms": (first - last) * 1000 if last is not None else None,
        "console-gap-before-ms": _max_gap(merged, t_mig - GAP_BEFORE_S, t_mig)[0] * 1000,
        "total-time-ms": (first - t_mig) * 1000,
    }


def run_update(sc, g, mode, binary, is_peer, log):
    """One update of guest @g by @mode; its figures (see the module's doc)."""
    tmp = tempfile.mkdtemp(prefix="migbench-lu-")
    mem = HostMemory()
    src = dst = None
    # Host wall clock less monotonic: QMP events carry the wall clock.
    mono_off = time.time() - time.monotonic()
    mem.start()
    try:
        try:
            src, dst, t_mig, info, src_events = SWITCH[mode](sc, g, binary, is_peer, tmp, mem)
        except TimeoutError as e:
            raise RuntimeError(str(e)) from None
        if info.get("status") != "completed":
            raise RuntimeError("migration %s: %s" % (info.get("status"), info.get("error-desc")))
        stop = [_wall(e) - mono_off for e in src_events if e["event"] == "STOP"]
        if not stop:
            raise RuntimeError("the source sent no STOP event")
        same = src is dst       # cpr-exec: one process, one console
        deadline = time.monotonic() + 120
        while True:
            first = first_output(dst.chunk_times(), stop[-1], same)
            if first is not None:
                break
            if time.monotonic() > deadline or dst.proc.poll() is not None:
                raise RuntimeError("the destination's guest printed nothing%s" % dst.said())
            time.sleep(0.01)
        time.sleep(max(0, first + SETTLE_S - time.monotonic()))
        if mem.tripped is not None:
            raise RuntimeError("stopped: MemAvailable fell to %d MiB" % mem.tripped)
        dst.qmp.cmd("query-status")     # the events it sent meanwhile
        resume = [_wall(e) - mono_off for e in dst.qmp.events if e["event"] == "RESUME"]
        res = console_figures(src.chunk_times(), dst.chunk_times(), t_mig, stop[-1], same)
        lines = dst.lines_since(0)
        passes = [t for t, l in lines if t >= first and l.startswith("PASS cpu=0")]
        failed = any("FAIL" in l for vm in {src, dst} for _, l in vm.lines_since(0))
        peak = mem.stop()
        res.update({
            "stop-to-dst-run-ms": (resume[-1] - stop[-1]) * 1000 if resume else None,
            "downtime-ms": info.get("downtime"),
            "transferred-MiB": info.get("ram", {}).get("transferred", 0) / 2**20
            if "ram" in info else None,
            "peak-mem-MiB": peak,
            "peak-mem/ram": peak / _mib(g["mem"]),
            "peak-mem/populated": peak / g["populate"],
            "peak-rss-MiB": mem.peak_rss,
            "peak-rss/populated": mem.peak_rss / g["populate"],
            "dst-guest-ok": 1 if len(passes) >= 2 and not failed else 0,
        })
        return res
    finally:
        mem.stop()
        for vm in (src, dst):
            if vm is not None:
                vm.kill()
        for vm in mem.vms:      # one that failed before it was returned
            vm.kill()
        shutil.rmtree(tmp, ignore_errors=True)
        log.write(json.dumps({"binary": binary, "mode": mode, "mem": g["mem"]}) + "\n")


def na_cell(e):
    """The table's cell for a binary that cannot run a mode."""
    if e.feature:
        return "n/a (no %s)" % e.feature
    why = str(e).split(": ")[-1].strip()
    return "n/a (refused: %s)" % (why if len(why) <= 60 else why[:57] + "...")


def run_live_update(sc, runners, runs, progress, log):
    """Every guest of @sc by every mode with every runner, run by run; the
    tables printed; ({mem: {mode: {label: [figures]}}}, n/a, failed)."""
    guests = sc["guests"]
    results = {g["mem"]: {m: {lab: [] for lab, _, _ in runners} for m in MODES} for g in guests}
    na = {}         # {mode: {label: cell}}: a refusal holds for every size
    failed = {}
    for i in range(runs):
        for gi, g in enumerate(guests):
            for mode in MODES:
                for lab, binary, is_peer in runners:
                    key = "%s %s %s" % (g["mem"], mode, lab)
                    if lab in na.get(mode, {}) or key in failed:
                        continue
                    progress.say("run %d/%d %s %s %s ..." % (i + 1, runs, g["mem"], mode, lab))
                    try:
                        r = run_update(sc, g, mode, binary, is_peer, log)
                    except Refused as e:
                        na.setdefault(mode, {})[lab] = na_cell(e)
                        print("migbench: %s (%s): %s: %s" % (key, binary, na_cell(e), e),
                              file=sys.stderr, flush=True)
                        # This mode's runs of this binary still to come, all sizes.
                        progress.skip((runs - i - 1) * len(guests) + len(guests) - gi - 1)
                        progress.run_done()
                        continue
                    except (RuntimeError, ConnectionError, QMPError) as e:
                        failed[key] = "%s (%s) run %d: %s" % (key, binary, i + 1, e)
                        print("migbench: " + failed[key], file=sys.stderr, flush=True)
                        progress.skip(runs - i - 1)
                        progress.run_done()
                        continue
                    results[g["mem"]][mode][lab].append(r)
                    progress.say("   console gap %.1f ms, switch %.1f ms, total %.0f ms, "
                                 "peak %.0f MiB" % (r["console-gap-ms"], r["switch-gap-ms"] or -1,
                                                    r["total-time-ms"], r["peak-mem-MiB"]))
                    progress.run_done()
    labels = [lab for lab, _, _ in runners]
    for g in guests:
        for mode in MODES:
            table_sc = {"doc": "%s guest (%d MiB populated), %s" % (g["mem"], g["populate"], mode),
                        "mem": g["mem"] + (" (memfd, share=on)" if mode != "precopy" else ""),
                        "append": sc["append"] % {"mem1": g["populate"] - sc["mem0"],
                                                  "mem0": sc["mem0"]},
                        "params": {"mode": mode} if mode != "precopy" else
                        {"max-bandwidth": UNLIMITED}}
            name = "%s %s %s" % (sc["_name"], g["mem"], mode)
            if not any(results[g["mem"]][mode].values()):
                # print_table lists the metrics the runs had: there are none.
                print("\n== %s: %s\n   %s" % (name, table_sc["doc"], "; ".join(
                    "%s %s" % (lab, na.get(mode, {}).get(lab, "failed")) for lab in labels)))
                continue
            print_table(name, table_sc, results[g["mem"]][mode], labels, na.get(mode))
    return results, na, failed
