# SPDX-License-Identifier: GPL-2.0-or-later
"""One run of migbench's storage scenario (issue 40): a guest whose disk is
local to the source moves with it, the way libvirt's `virsh migrate --live
--copy-storage-all` drives QEMU, the same QMP for every binary:

  destination  nbd-server-start (unix socket), block-export-add of its
               empty image (writable), -S so that it runs only when told
  source       blockdev-add of an nbd client node, blockdev-mirror
               sync=full into it; BLOCK_JOB_READY (polled: query-block-jobs)
  both         the RAM's precopy (the seed scenario's parameters), the
               source with pause-before-switchover
  source       in pre-switchover (guest stopped): block-job-cancel (after
               READY the mirror copies what is left and ends COMPLETED, no
               pivot), job-dismiss, migrate-continue
  destination  nbd-server-stop (then it could run: libvirt's 'cont', not
               sent here so that its image stays comparable)

The NBD connection goes through a relay of this process (splice, no
copy through Python) that counts its bytes: the disk's bytes on the wire,
the same way for every binary. Figures: total time (mirror start to the
destination running), mirror-to-ready time, NBD bytes against the image's
allocated data plus what the guest wrote during the mirror, downtime, the
guest's disk IOPS and worst latency from the mirror's start to the end,
and afterwards `qemu-img check` of the destination and `qemu-img compare`
with the source (both stopped): a run whose copy differs is refused."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from qmp import VM

from .binaries import Refused, set_migration
from .blkbench import blk_stats, blk_summary, direct_io_ok
from .launch import vm_args

STALL_S = 120


class SpliceRelay:
    """A unix-socket listener at @front that connects each client to @back
    and moves bytes both ways with splice(2) through a pipe; bytes counts
    what went each way (to_back: the source's requests and written data)."""

    def __init__(self, front, back):
        self.back = back
        self.bytes_to_back = 0
        self.bytes_to_front = 0
        self.lock = threading.Lock()
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(front)
        self.srv.listen(4)
        self.threads = []
        self.closing = False
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self.threads.append(t)

    def _accept(self):
        while not self.closing:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                b.connect(self.back)
            except OSError:
                c.close()
                continue
            for src, dst, up in ((c, b, True), (b, c, False)):
                t = threading.Thread(target=self._pump, args=(src, dst, up), daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, src, dst, up):
        r, w = os.pipe()
        try:
            while True:
                n = os.splice(src.fileno(), w, 1 << 20)
                if n <= 0:
                    break
                with self.lock:
                    if up:
                        self.bytes_to_back += n
                    else:
                        self.bytes_to_front += n
                while n:
                    n -= os.splice(r, dst.fileno(), n)
        except OSError:
            pass
        finally:
            os.close(r)
            os.close(w)
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.closing = True
        self.srv.close()


def note(msg):
    print("   " + msg, file=sys.stderr, flush=True)


def qemu_img(*args, timeout=600):
    try:
        return subprocess.run(["qemu-img"] + list(args), check=True, capture_output=True,
                              timeout=timeout, text=True).stdout
    except FileNotFoundError:
        raise RuntimeError("the storage scenario needs qemu-img and qemu-io (qemu-utils)")


def make_source_image(directory, spec):
    """A qcow2 image of spec["size"] with spec["data"] written in two runs of
    different bytes (allocated, not zero) and holes between: what the mirror
    copies is the data, not the size."""
    path = os.path.join(directory, "src.qcow2")
    qemu_img("create", "-q", "-f", "qcow2", path, spec["size"])
    half = spec["data_bytes"] // 2
    gap = spec["size_bytes"] // 2
    cmds = ["-c", "write -P 0x5a 0 %d" % half, "-c", "write -P 0xa5 %d %d" % (gap, half)]
    subprocess.run(["qemu-io", "-f", "qcow2"] + cmds + [path], check=True, capture_output=True,
                   timeout=900)
    return path


def drive_args(is_peer, path, cache, name):
    """The image as -blockdev nodes (file, then qcow2 named @name) and a
    virtio-blk device on it: node names for blockdev-mirror and the export."""
    direct = "on" if cache == "none" else "off"
    args = ["-blockdev", "driver=file,filename=%s,node-name=%s-file,cache.direct=%s"
            % (path, name, direct),
            "-blockdev", "driver=qcow2,file=%s-file,node-name=%s" % (name, name),
            "-device", "virtio-blk-device,drive=%s" % name]
    if is_peer:
        args = ["-machine", "acpi=off", "-global", "virtio-mmio.force-legacy=false"] + args
    return args


def wait_job(vm, job, want, timeout):
    """Polls query-block-jobs until @job is ready (@want "ready") or gone
    from the list; its last entry."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        jobs = {j["device"]: j for j in vm.qmp.cmd("query-block-jobs")}
        j = jobs.get(job)
        if j is None:
            return last
        last = j
        if want == "ready" and j.get("ready"):
            return j
        time.sleep(0.05)
    raise RuntimeError("block job %s: not %s in %d s (%s)" % (job, want, timeout, last))


def poll_migration(vm, statuses, timeout=900):
    deadline = time.monotonic() + timeout
    while True:
        info = vm.qmp.cmd("query-migrate")
        if info.get("status") in statuses:
            return info
        if time.monotonic() > deadline:
            raise RuntimeError("migration not %s in %d s: %s" % (statuses, timeout, info))
        time.sleep(0.02)


def wait_concluded(vm, job, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for j in vm.qmp.cmd("query-jobs"):
            if j["id"] == job and j["status"] in ("concluded", "null"):
                return j
        if not any(j["id"] == job for j in vm.qmp.cmd("query-jobs")):
            return None
        time.sleep(0.02)
    raise RuntimeError("block job %s did not conclude in %d s" % (job, timeout))


def run_storage(sc, binary, is_peer, log):
    spec = sc["storage"]
    parent = os.environ.get("MIGBENCH_DISK_DIR", "/var/tmp")
    d = tempfile.mkdtemp(prefix="migbench-storage-", dir=parent)
    src = dst = relay = None
    try:
        cache = "none" if direct_io_ok(d) else "writeback"
        t_img = time.monotonic()
        src_img = make_source_image(d, spec)
        dst_img = os.path.join(d, "dst.qcow2")
        qemu_img("create", "-q", "-f", "qcow2", dst_img, spec["size"])
        note("images ready in %.1f s (%s of data in %s)"
             % (time.monotonic() - t_img, spec["data"], spec["size"]))
        nbd_sock = os.path.join(d, "nbd.sock")
        relay_sock = os.path.join(d, "relay.sock")
        mig_sock = os.path.join(d, "mig.sock")
        accel = sc.get("_accel") or sc.get("peer_accel" if is_peer else "ours_accel")
        smp = ["-smp", str(sc["smp"])] if sc.get("smp") else []
        src = VM(binary, vm_args(binary, is_peer, sc["mem"], sc["append"],
                                 smp + drive_args(is_peer, src_img, cache, "disk0"),
                                 accel=accel), "src")
        src.wait_line("READY", 300)
        warm_start = src.line_count()
        for _ in range(sc.get("warmup", 3)):
            src.wait_line("STAT", 30, src.line_count())
        dst = VM(binary, vm_args(binary, is_peer, sc["mem"], sc["append"],
                                 smp + ["-S", "-incoming", "defer"] +
                                 drive_args(is_peer, dst_img, cache, "disk0"), accel=accel),
                 "dst")
        src.qmp.set_reply_timeout(STALL_S)
        dst.qmp.set_reply_timeout(STALL_S)
        params = (sc.get("params") if is_peer else
                  sc.get("ours_params", sc.get("params"))) or {}
        set_migration(src, "on the source", params, ["pause-before-switchover"])
        try:
            dst.qmp.cmd("nbd-server-start",
                        addr={"type": "unix", "data": {"path": nbd_sock}})
            reply = dst.qmp.request("block-export-add", {"type": "nbd", "id": "exp0",
                                                         "node-name": "disk0", "name": "disk0",
                                                         "writable": True})
            if "error" in reply:
                raise RuntimeError("block-export-add: %s" % reply["error"].get("desc"))
        except Exception as e:
            raise Refused("at the destination's NBD export: %s" % e)
        relay = SpliceRelay(relay_sock, nbd_sock)
        before = [l for _, l in src.lines_since(warm_start)]
        io_start = src.line_count()
        t0 = time.monotonic()
        try:
            src.qmp.cmd("blockdev-add", driver="nbd", **{"node-name": "mirror0"},
                        server={"type": "unix", "path": relay_sock}, export="disk0")
            src.qmp.cmd("blockdev-mirror", **{"job-id": "mirror0", "device": "disk0",
                                              "target": "mirror0", "sync": "full",
                                              "auto-dismiss": False})
        except Exception as e:
            raise Refused("at the source's mirror: %s" % e)
        job = wait_job(src, "mirror0", "ready", 900)
        t_ready = time.monotonic()
        note("mirror ready in %.1f s, %.0f MiB over NBD" % (t_ready - t0, relay.bytes_to_back / 2**20))
        nbd_at_ready = relay.bytes_to_back
        dst.qmp.cmd("migrate-incoming", uri="unix:" + mig_sock)
        src.qmp.cmd("migrate", uri="unix:" + mig_sock)
        info = poll_migration(src, ("pre-switchover", "completed", "failed", "cancelled"))
        if info["status"] != "pre-switchover":
            raise RuntimeError("migration %s before pre-switchover: %s"
                               % (info["status"], info.get("error-desc")))
        t_ram = time.monotonic()
        note("RAM sent in %.1f s; the source stopped in pre-switchover"
             % (t_ram - t_ready))
        # The guest stopped: the mirror copies what is left and ends (after
        # READY a cancel completes the copy and leaves the source as it is).
        src.qmp.cmd("block-job-cancel", device="mirror0")
        end = wait_concluded(src, "mirror0", 300)
        if end and end.get("error"):
            raise RuntimeError("mirror ended with an error: %s" % end["error"])
        try:
            src.qmp.cmd("job-dismiss", id="mirror0")
        except Exception:
            pass
        t_mirror_end = time.monotonic()
        note("mirror ended in %.2f s" % (t_mirror_end - t_ram))
        src.qmp.cmd("migrate-continue", state="pre-switchover")
        info = poll_migration(src, ("completed", "failed", "cancelled"))
        if info["status"] != "completed":
            raise RuntimeError("migration %s: %s" % (info["status"], info.get("error-desc")))
        dst.qmp.cmd("nbd-server-stop")
        # The destination could run now ('cont', as libvirt does next): the
        # end of the measure. It is not run, so that its image stays the
        # source's for the comparison below.
        t_end = time.monotonic()
        during = [l for _, l in src.lines_since(io_start)]
        nbd_bytes = relay.bytes_to_back
        written = sum(s.get("kib_s", 0) * 1024 for s in blk_stats(during, 0))
        res = {
            "total-time-ms": (t_end - t0) * 1000,
            "mirror-ready-ms": (t_ready - t0) * 1000,
            "ram-migration-ms": (t_ram - t_ready) * 1000,
            "switchover-ms": (t_end - t_ram) * 1000,
            "mirror-end-ms": (t_mirror_end - t_ram) * 1000,
            "downtime-ms": info.get("downtime"),
            "nbd-MiB": nbd_bytes / 2**20,
            "nbd-MiB-at-ready": nbd_at_ready / 2**20,
            "nbd-MiB-from-dst": relay.bytes_to_front / 2**20,
            "data-MiB": spec["data_bytes"] / 2**20,
            "guest-written-MiB": written / 2**20,
            "nbd/(data+written)": nbd_bytes / max(spec["data_bytes"] + written, 1),
            "ram-MiB": info.get("ram", {}).get("transferred", 0) / 2**20,
            "transferred-MiB": (nbd_bytes + info.get("ram", {}).get("transferred", 0)) / 2**20,
            "passes": info.get("ram", {}).get("dirty-sync-count", 0),
            "job-len-MiB": (job or {}).get("len", 0) / 2**20,
        }
        res.update(blk_summary(blk_stats(before, 0), "guest-io-before-"))
        res.update(blk_summary(blk_stats(during, 0), "guest-io-during-"))
        link = spec.get("link_Bps")
        if link:
            ideal = (spec["data_bytes"] + res["ram-MiB"] * 2**20) / link
            res["total/ideal"] = (t_end - t0) / ideal
        # Both quit cleanly: their images closed (caches written back), unlocked.
        for vm in (src, dst):
            try:
                vm.qmp.cmd("quit")
            except Exception:
                pass
            try:
                vm.proc.wait(60)
            except subprocess.TimeoutExpired:
                vm.kill()
        src = dst = None
        out = qemu_img("check", "-f", "qcow2", dst_img)
        res["dst-check-ok"] = 1 if "No errors" in out else 0
        cmp = subprocess.run(["qemu-img", "compare", "-f", "qcow2", "-F", "qcow2", src_img,
                              dst_img], capture_output=True, text=True, timeout=900)
        res["dst-identical"] = 1 if cmp.returncode == 0 else 0
        if cmp.returncode != 0:
            raise RuntimeError("the destination's image differs from the source's: %s"
                               % (cmp.stdout + cmp.stderr).strip())
        return res
    except (OSError, RuntimeError) as e:
        # Which process went away, and what it said.
        why = []
        for vm in (src, dst):
            if vm and vm.proc.poll() is not None:
                time.sleep(0.2)
                why.append("%s exited %s: %s" % (vm.name, vm.proc.returncode,
                                                 vm.stderr.decode(errors="replace").strip()[-400:]))
        raise RuntimeError("; ".join([str(e)] + why)) from e
    finally:
        if relay:
            relay.close()
        for vm in (src, dst):
            if vm:
                vm.kill()
        shutil.rmtree(d, ignore_errors=True)
