# SPDX-License-Identifier: GPL-2.0-or-later
"""How migbench starts and places the VMs: the command line of ours and of
the peer (QEMU 7.2) for a scenario (memory, -append, tracing, networking,
display), the free ports they need, and the pinning of ARCHITECTURE
section 10 for guest-latency figures."""
import atexit
import os
import socket
import sys

from .measure import threads_with_prefix


# The source tree: this file is scripts/migbenchlib/launch.py.
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIRMWARE = os.path.join(TOP, "build", "tests", "guest", "workload.elf")


# The host's tasks moved off CPU 1 by clear_cpu1(): tid -> the mask they had,
# and the unbound workqueues' mask. Owned by clear_cpu1() and restore_cpu1();
# one migbench process runs one VM pair at a time.
_cpu1_saved = {"tasks": {}, "wq": None}
WQ_MASK = "/sys/devices/virtual/workqueue/cpumask"


def clear_cpu1(keep):
    """Leave CPU 1 to the tids in @keep: every other task that may run there
    (other processes, this one, the host's movable kernel threads such as
    kdamond, and unbound workqueues) goes to CPU 0 until restore_cpu1().
    Without it the pinned vCPU was not alone: traced on this host, kdamond
    and other processes' threads took CPU 1 for 4-7 ms while the vCPU was
    runnable, the same stall for every binary. Per-CPU kernel threads
    (ksoftirqd/1, kworker/1:N) cannot move and stay."""
    saved = _cpu1_saved["tasks"]
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir("/proc/%s/task" % pid)
        except OSError:
            continue        # it exited meanwhile
        for tid in map(int, tids):
            if tid in keep:
                continue
            try:
                mask = os.sched_getaffinity(tid)
                if 1 in mask and len(mask) > 1:
                    os.sched_setaffinity(tid, {0})
                    saved.setdefault(tid, mask)
            except OSError:
                pass        # exited, or a per-CPU kernel thread
    try:
        with open(WQ_MASK) as f:
            old = f.read().strip()
        with open(WQ_MASK, "w") as f:
            f.write("1")
        if _cpu1_saved["wq"] is None:
            _cpu1_saved["wq"] = old
    except OSError:
        pass                # not root, or no such knob


def kernel_threads_named(comm):
    """pids of the tasks whose comm is exactly @comm."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/comm" % pid) as f:
                if f.read().strip() == comm:
                    found.append(int(pid))
        except OSError:
            pass            # not a pid, or it exited meanwhile
    return found


def restore_cpu1():
    """Give back what clear_cpu1() took (atexit too: a migbench that dies
    must not leave the host on one core)."""
    for tid, mask in _cpu1_saved["tasks"].items():
        try:
            os.sched_setaffinity(tid, mask)
        except OSError:
            pass
    _cpu1_saved["tasks"].clear()
    if _cpu1_saved["wq"] is not None:
        try:
            with open(WQ_MASK, "w") as f:
                f.write(_cpu1_saved["wq"])
        except OSError:
            pass
        _cpu1_saved["wq"] = None


atexit.register(restore_cpu1)


def vcpu_preemptions(pid, tids):
    """Times the kernel took CPU from these threads while they could run
    (nonvoluntary context switches). With CPU 1 cleared, what is left is
    the VM's own PIT worker at the guest's 1 kHz tick (about a thousand in
    a 3 s migration) and per-CPU kernel work; thousands more, or a jump,
    say another task got onto CPU 1."""
    n = 0
    for tid in tids:
        try:
            with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
                for line in f:
                    if line.startswith("nonvoluntary_ctxt_switches:"):
                        n += int(line.split()[1])
        except OSError:
            pass
    return n


def pin_threads(src, dst, vcpus=("CPU ",)):
    """ARCHITECTURE section 10's pinning for guest-latency figures: the source's
    vCPU threads (those whose name starts with one of @vcpus) alone on CPU 1,
    every other thread of both processes (the destination's vCPUs included)
    on CPU 0. Threads made later inherit the mask of the thread that makes
    them (the main thread, the migration thread)."""
    vcpu_tids = set(threads_with_prefix(src.proc.pid, tuple(vcpus)))
    if not vcpu_tids:
        raise RuntimeError("--pin: no 'CPU N/KVM' thread in the source (thread names off?)")
    for vm in (src, dst):
        if vm is None:
            continue
        for tid in os.listdir("/proc/%d/task" % vm.proc.pid):
            try:
                os.sched_setaffinity(int(tid), {1} if vm is src and int(tid) in vcpu_tids else {0})
            except OSError:
                pass        # the thread exited meanwhile
    # The kernel's PIT worker of the source VM ("kvm-pit/PID") injects the
    # timer ticks the halted guest waits for: moved to a busy CPU 0 it woke
    # the vCPU up to 300 ms late (the guest kept 65-80 MB/s of 100).
    clear_cpu1(vcpu_tids | set(kernel_threads_named("kvm-pit/%d" % src.proc.pid)))
    return vcpu_tids


def vm_args(binary, is_peer, mem, append, extra=(), accel=None):
    cpu = "host,-arch-capabilities" if is_peer else "host"
    args = ["-M", "microvm"] + (["-accel", accel] if accel else ["-enable-kvm"]) + ["-cpu", cpu, "-m", mem, "-nodefaults",
            "-no-user-config", "-nographic", "-serial", "stdio", "-kernel", FIRMWARE,
            "-append", append]
    if is_peer:
        # Names QEMU's threads ("live_migration") so its migration thread can be found.
        args += ["-name", "bench,debug-threads=on"]
    return args + list(extra)


# Traces this process wrote: with the pid in the name, no two runs of one
# process (or of two) share a trace file. Process-wide on purpose (not per
# scenario: the members of a group and their copies per run share DIR).
_trace_seq = [0]


def trace_args(sc, is_peer):
    """-trace for our source when --trace DIR was given: DIR/SCENARIO-PID-N.trace."""
    if is_peer or not sc.get("_trace_dir"):
        return []
    _trace_seq[0] += 1
    path = os.path.join(sc["_trace_dir"], "%s-%d-%d.trace" % (sc["_name"], os.getpid(), _trace_seq[0]))
    print("   trace: %s" % path, file=sys.stderr, flush=True)
    return ["-trace", "file=" + path]


# One set of certificates per migbench process, made on first use (certtool).
_tls_dir = [None]


def tls_args(sc, endpoint):
    """-object tls-creds-x509 for a TLS scenario's @endpoint ("client" on the
    source, "server" on the destination, verify-peer on), id tls0; the same
    for every binary."""
    if not sc.get("tls"):
        return []
    if _tls_dir[0] is None:
        sys.path.insert(0, os.path.join(TOP, "scripts"))
        import tempfile
        import tlscerts
        if not tlscerts.certtool():
            raise RuntimeError("TLS scenarios need certtool (Debian package gnutls-bin)")
        _tls_dir[0] = tlscerts.make_cert_dirs(tempfile.mkdtemp(prefix="migbench-tls-"))["both"]
    return ["-object", "tls-creds-x509,id=tls0,dir=%s,endpoint=%s,verify-peer=on"
            % (_tls_dir[0], endpoint)]


# The migration parameters of a TLS scenario on each end (a unix: URI has no
# host name: the certificate's, localhost, is named).
TLS_SRC_PARAMS = {"tls-creds": "tls0", "tls-hostname": "localhost"}
TLS_DST_PARAMS = {"tls-creds": "tls0"}


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def net_args(is_peer, port):
    """A virtio-net device on user networking, the guest's UDP port 7 at 127.0.0.1:@port.
    QEMU 7.2's virtio-mmio is legacy unless told, and puts the transport on
    the command line only without ACPI."""
    args = ["-netdev", "user,id=n0,hostfwd=udp:127.0.0.1:%d-:7" % port,
            "-device", "virtio-net-device,netdev=n0"]
    if is_peer:
        args = ["-machine", "acpi=off", "-global", "virtio-mmio.force-legacy=false"] + args
    return args


def display_args(disp, is_peer, args, vnc_port=None):
    """A VGA display: "on" refreshes, "off" only exists. Ours is isa-vga on
    microvm and refreshes at 30 Hz unless -nographic. QEMU 7.2's isa-vga on
    microvm never syncs its VRAM's dirty log under KVM (its display would
    not change), so the peer is -M pc -vga std, and it refreshes only while
    a display client looks: a VNC display with rfbviewer asking for updates."""
    if not disp:
        return args
    if is_peer:
        args = list(args)
        args[args.index("microvm")] = "pc"
        args += ["-vga", "std"]
        if disp == "on" and vnc_port:
            args += ["-vnc", "127.0.0.1:%d" % (vnc_port - 5900)]
        return args
    args = args + ["-device", "isa-vga"]
    if disp == "on":
        args.remove("-nographic")
        args += ["-monitor", "none"]
    return args


def free_vnc_port():
    """A free TCP port of 5900 + N, for QEMU's -vnc :N."""
    for port in range(5990, 6100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sk:
            try:
                sk.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free VNC port in 5990-6099")
