# SPDX-License-Identifier: GPL-2.0-or-later
"""Minimal QMP client and VM process helper for our scripts (stdlib only).

Used by the demo, scripts/migbench and scripts/kvm_stat. Works with our
binary and with QEMU itself.
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


def _die_with_parent():
    # The VM must not outlive the script that started it, however it ends.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 9)


class QMPError(Exception):
    pass


class QMP:
    """One negotiated QMP connection over a unix or tcp socket."""

    def __init__(self, address, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                if isinstance(address, tuple):
                    self.sock = socket.create_connection(address, timeout=5)
                else:
                    self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        self.sock.connect(address)
                    except OSError:
                        self.sock.close()
                        raise
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.002)
        # A monitor busy with another client accepts the connection but
        # sends no greeting until that client leaves: do not wait forever.
        self.sock.settimeout(max(timeout, 1.0))
        self.file = self.sock.makefile("rwb")
        self.events = []
        try:
            greeting = self._read()
        except socket.timeout:
            self.sock.close()
            raise QMPError("no QMP greeting from %s (monitor busy?)" % (address,))
        if "QMP" not in greeting:
            raise QMPError("bad greeting: %r" % greeting)
        self.sock.settimeout(None)
        self.cmd("qmp_capabilities")

    def _read(self):
        line = self.file.readline()
        if not line:
            raise QMPError("QMP connection closed")
        return json.loads(line)

    def cmd(self, name, **args):
        req = {"execute": name}
        if args:
            req["arguments"] = args
        self.file.write((json.dumps(req) + "\n").encode())
        self.file.flush()
        while True:
            msg = self._read()
            if "event" in msg:
                self.events.append(msg)
                continue
            if "error" in msg:
                raise QMPError("%s: %s" % (name, msg["error"]["desc"]))
            return msg["return"]

    def hmp(self, line):
        return self.cmd("human-monitor-command", **{"command-line": line})

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


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
