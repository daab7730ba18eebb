# SPDX-License-Identifier: GPL-2.0-or-later
"""The one QMP client of our scripts and Python tests (stdlib only), and a
VM process helper.

Used by the demo, scripts/migbench (and scripts/migbenchlib), qemu-mig-kvmstat,
migrate-watch, soak, fuzz-corpus, mapped-ram-sweep and the Python tests in
tests/functional (through analyzevm.py or directly). Works with our binary
and with QEMU itself.

How to use it:

    q = QMP("/path/qmp.sock")          # or ("host", port), or a connected socket
    q = QMP(parse_address("tcp:127.0.0.1:4444"))   # QEMU's -qmp spellings
    q = VirshMonitor("domain", "qemu:///system")   # a libvirt domain: cmd() only
    q.cmd("migrate", uri="unix:/tmp/m.sock")   # the return value, or QMPError
    q.hmp("info status")               # human-monitor-command passthrough
    q.request("add-fd", {"opaque": "x"}, fds=[fd])   # the raw reply, fds alongside
    q.close()

Two kinds of failure, kept apart on purpose:
  - QMPError: the monitor answered, with an error (.cls, .desc; str() is
    "COMMAND: DESC"). A caller may treat it as "this binary says no".
  - MonitorGone: the monitor cannot be talked to (nothing listens, it
    closed, it is silent past a timeout, it sent something that is not
    QMP). It is a ConnectionError, so an OSError: a test that skips on
    QMPError ("capability not supported") must not skip when the VM died.

What callers differ in, and choose when they connect:
  - timeout: how long to retry connecting (0: one attempt), and by default
    how long to wait for the greeting;
  - greeting_timeout: a monitor busy with another client accepts the
    connection but greets only when that client leaves;
  - reply_timeout: how long to wait for each reply, None (the default)
    for ever; set_reply_timeout changes it later (migbench bounds its polls
    once the migration starts);
  - proc: the VM process: stop retrying as soon as it has exited;
  - keep_events: events are kept in .events (in arrival order) for callers
    that read them (STOP/RESUME times); a watcher polling for hours skips
    them instead, or its memory grows with every event.
"""

import ctypes
import json
import os
import socket
import subprocess
import tempfile
import threading
import time


PR_SET_PDEATHSIG = 1
# Between connection attempts while the VM creates its socket.
CONNECT_POLL_S = 0.002
# One virsh qemu-monitor-command: libvirtd may be busy with a job.
REPLY_TIMEOUT_VIRSH_S = 30.0


def _die_with_parent():
    # The VM must not outlive the script that started it, however it ends.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 9)


class QMPError(Exception):
    """The monitor answered @command with an error reply."""

    def __init__(self, command, error):
        self.command = command
        self.cls = error.get("class")
        self.desc = error.get("desc")
        super().__init__("%s: %s" % (command, self.desc))


class MonitorGone(ConnectionError):
    """The monitor cannot be talked to; str() is the reason alone (the
    caller names the monitor)."""


class QMP:
    """One negotiated QMP connection (see the module's doc for the options).

    Not thread-safe: one thread sends a command and reads its reply; .events
    is written by that thread only."""

    def __init__(self, address, timeout=30.0, *, greeting_timeout=None,
                 reply_timeout=None, proc=None, keep_events=True):
        self.keep_events = keep_events
        self.events = []
        if isinstance(address, socket.socket):
            self.sock = address
        else:
            self.sock = self._connect(address, timeout, proc)
        self.file = self.sock.makefile("rwb")
        self.sock.settimeout(greeting_timeout if greeting_timeout is not None
                             else max(timeout, 1.0))
        try:
            greeting = self._read()
        except socket.timeout:
            self.close()
            raise MonitorGone("no QMP greeting after %g s (another client "
                              "holds this monitor?)" % self.sock.gettimeout())
        except MonitorGone:
            self.close()
            raise
        if "QMP" not in greeting:
            self.close()
            raise MonitorGone("not a QMP monitor (greeting %.60r)" % greeting)
        self.sock.settimeout(reply_timeout)
        try:
            self.cmd("qmp_capabilities")
        except (QMPError, MonitorGone):
            self.close()
            raise

    @staticmethod
    def _connect(address, timeout, proc):
        """A connected socket to @address, retried for @timeout seconds; the
        last error (its reason) once they are over or @proc has exited."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if isinstance(address, tuple):
                    return socket.create_connection(address, timeout=5)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(address)
                except OSError:
                    sock.close()
                    raise
                return sock
            except OSError as e:
                if proc is not None and proc.poll() is not None:
                    raise MonitorGone("the VM exited (status %d) before its QMP "
                                      "socket came up" % proc.returncode) from e
                if time.monotonic() > deadline:
                    raise MonitorGone(e.strerror or str(e)) from e
                time.sleep(CONNECT_POLL_S)

    def set_reply_timeout(self, secs):
        """Wait at most @secs for each reply from now on (None: forever)."""
        self.sock.settimeout(secs)

    def _read(self):
        """The next message that is not an event (events kept or skipped)."""
        while True:
            try:
                line = self.file.readline()
            except socket.timeout:
                raise
            except OSError as e:
                raise MonitorGone(e.strerror or str(e)) from e
            if not line:
                raise MonitorGone("connection closed")
            try:
                msg = json.loads(line)
            except ValueError:
                raise MonitorGone("not JSON: %.60r" % line) from None
            if "event" not in msg:
                return msg
            if self.keep_events:
                self.events.append(msg)

    def request(self, name, args=None, fds=()):
        """Send @name with @args (and @fds over SCM_RIGHTS, as libvirt passes
        add-fd's); the raw reply, "return" or "error"."""
        req = {"execute": name}
        if args:
            req["arguments"] = args
        data = (json.dumps(req) + "\n").encode()
        try:
            if fds:
                socket.send_fds(self.sock, [data], list(fds))
            else:
                self.file.write(data)
                self.file.flush()
            return self._read()
        except socket.timeout:
            raise MonitorGone("no reply to %s in %g s" % (name, self.sock.gettimeout())) from None
        except MonitorGone:
            raise
        except OSError as e:
            raise MonitorGone(e.strerror or str(e)) from e

    def cmd(self, name, **args):
        """@name's return value; QMPError if the monitor refused it."""
        reply = self.request(name, args)
        if "error" in reply:
            raise QMPError(name, reply["error"])
        return reply.get("return")

    def hmp(self, line):
        return self.cmd("human-monitor-command", **{"command-line": line})

    def close(self):
        for f in (self.file, self.sock):
            try:
                f.close()
            except OSError:
                pass


def parse_address(text):
    """A monitor address as QEMU's -qmp spells it, for QMP(): "unix:PATH"
    or a bare PATH (a unix socket), "tcp:HOST:PORT" (HOST may be
    [v6addr]); a chardev's options after a comma (",server=on") are
    ignored. ValueError if it is none of these."""
    addr = text.split(",", 1)[0]
    if addr.startswith("tcp:"):
        host, sep, port = addr[4:].rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError("%s: not tcp:HOST:PORT" % text)
        return (host.strip("[]") or "localhost", int(port))
    if addr.startswith("unix:"):
        addr = addr[5:]
    if not addr or ":" in addr.split("/", 1)[0]:
        raise ValueError("%s: not unix:PATH or tcp:HOST:PORT" % text)
    return addr


class VirshMonitor:
    """QMP to a libvirt domain through its monitor pass-through (`virsh
    qemu-monitor-command`): libvirt holds the domain's monitor, so this is
    the only way in. Same cmd() as QMP's, one virsh run a command; no
    events (libvirt keeps them). Every failure to get a reply (virsh
    missing, the domain gone, libvirtd down) is MonitorGone.

    libvirt taints a domain that is sent commands this way ("custom-monitor"
    in its log): harmless for queries, but say so to operators."""

    def __init__(self, domain, uri=None, reply_timeout=REPLY_TIMEOUT_VIRSH_S):
        self.domain = domain
        self.uri = uri
        self.reply_timeout = reply_timeout
        self.events = []

    def virsh(self, *args):
        argv = ["virsh", "-q"] + (["-c", self.uri] if self.uri else []) + list(args)
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=self.reply_timeout)
        except FileNotFoundError as e:
            raise MonitorGone("virsh is not installed") from e
        except subprocess.TimeoutExpired as e:
            raise MonitorGone("virsh gave no answer in %g s" % self.reply_timeout) from e
        if p.returncode:
            raise MonitorGone((p.stderr.strip() or "virsh failed").replace("\n", " "))
        return p.stdout

    def request(self, name, args=None):
        req = {"execute": name}
        if args:
            req["arguments"] = args
        out = self.virsh("qemu-monitor-command", self.domain, json.dumps(req))
        try:
            return json.loads(out)
        except ValueError:
            raise MonitorGone("virsh: not JSON: %.60r" % out) from None

    def cmd(self, name, **args):
        reply = self.request(name, args)
        if "error" in reply:
            raise QMPError(name, reply["error"])
        return reply.get("return")

    def close(self):
        pass


def libvirt_domains(uri=None):
    """The names of the active domains (running or paused: a migrated one
    is paused) of libvirt at @uri (virsh's default connection if None);
    MonitorGone if libvirt cannot be asked."""
    out = VirshMonitor(None, uri).virsh("list", "--name")
    return [line.strip() for line in out.splitlines() if line.strip()]


class VM:
    """A VMM process with a QMP socket and its serial lines collected."""

    def __init__(self, binary, args, name="vm", qmp=True, env=None):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="qemu-mig-%s-" % name)
        self.qmp_path = os.path.join(self.dir, "qmp.sock")
        argv = [binary] + list(args)
        if qmp:
            argv += ["-qmp", "unix:%s,server=on,wait=off" % self.qmp_path]
        self.lines = []
        self.lines_lock = threading.Lock()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env,
                                     preexec_fn=_die_with_parent)
        # Wall clock once the binary was exec'ed (Popen returns after exec): "process start".
        self.started = time.time()
        self.stderr = b""
        threading.Thread(target=self._reader, daemon=True).start()
        threading.Thread(target=self._err_reader, daemon=True).start()
        self.qmp = QMP(self.qmp_path) if qmp else None

    def _reader(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\r\n")
            with self.lines_lock:
                self.lines.append((time.monotonic(), line))

    def _err_reader(self):
        self.stderr = self.proc.stderr.read()

    def wait_line(self, prefix, timeout=60.0, start=0):
        """Index and text of the first line at or after @start with @prefix."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lines_lock:
                for i in range(start, len(self.lines)):
                    if self.lines[i][1].startswith(prefix):
                        return i, self.lines[i][1]
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError("%s: no line starting with %r (stderr: %s)" %
                                   (self.name, prefix, self.stderr.decode(errors="replace")))
            time.sleep(0.02)

    def line_count(self):
        with self.lines_lock:
            return len(self.lines)

    def lines_since(self, start):
        with self.lines_lock:
            return list(self.lines[start:])

    def kill(self):
        if self.qmp:
            self.qmp.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        try:
            for f in os.listdir(self.dir):
                os.unlink(os.path.join(self.dir, f))
            os.rmdir(self.dir)
        except OSError:
            pass


def kv(line):
    """key=value pairs of a workload line as a dict of strings."""
    out = {}
    for tok in line.split()[1:]:
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out
