# SPDX-License-Identifier: GPL-2.0-or-later
"""A minimal RFB (VNC) viewer that keeps asking for framebuffer updates.

QEMU refreshes a VGA display only while a display client looks at it; for
a VNC display that is a connected viewer with an update request pending.
migbench's display scenario uses this to make QEMU 7.2 refresh the way a
person watching would (RFB 3.8, security type None, raw encoding, the
server's pixel format). It discards the pixels; it counts the updates.
"""
import socket
import struct
import threading
import time


class RFBError(Exception):
    pass


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise RFBError("the VNC server closed the connection")
        buf += chunk
    return bytes(buf)


class RFBViewer:
    """Connects, handshakes, then a thread requests and reads updates."""

    def __init__(self, host, port, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RFBError("no VNC server at %s:%d" % (host, port))
                time.sleep(0.1)
        self.sock.settimeout(10)
        self._handshake()
        self.updates = 0            # FramebufferUpdate messages read (the thread)
        self.stopping = False
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _handshake(self):
        s = self.sock
        version = _recv_exact(s, 12)
        if not version.startswith(b"RFB 003."):
            raise RFBError("not an RFB server: %r" % version)
        s.sendall(b"RFB 003.008\n")
        n = _recv_exact(s, 1)[0]
        if n == 0:
            (reason_len,) = struct.unpack(">I", _recv_exact(s, 4))
            raise RFBError("VNC server refused: %s" % _recv_exact(s, reason_len).decode())
        if 1 not in _recv_exact(s, n):
            raise RFBError("the VNC server wants authentication")
        s.sendall(b"\x01")
        (result,) = struct.unpack(">I", _recv_exact(s, 4))
        if result != 0:
            raise RFBError("VNC security handshake failed")
        s.sendall(b"\x01")                                  # ClientInit: shared
        self.width, self.height = struct.unpack(">HH", _recv_exact(s, 4))
        pf = _recv_exact(s, 16)
        self.bytes_pp = pf[0] // 8
        (name_len,) = struct.unpack(">I", _recv_exact(s, 4))
        _recv_exact(s, name_len)
        # Raw encoding only, plus DesktopSize so a mode change is a message.
        s.sendall(struct.pack(">BBHii", 2, 0, 2, 0, -223))

    def _request(self, incremental):
        self.sock.sendall(struct.pack(">BBHHHH", 3, incremental, 0, 0, self.width, self.height))

    def _read_update(self):
        s = self.sock
        (msg,) = struct.unpack(">B", _recv_exact(s, 1))
        if msg == 0:
            _, nrects = struct.unpack(">BH", _recv_exact(s, 3))
            for _ in range(nrects):
                x, y, w, h, enc = struct.unpack(">HHHHi", _recv_exact(s, 12))
                if enc == 0:
                    _recv_exact(s, w * h * self.bytes_pp)
                elif enc == -223:
                    self.width, self.height = w, h
                else:
                    raise RFBError("unexpected encoding %d" % enc)
            return True
        if msg == 1:                                        # SetColourMapEntries
            _, _, n = struct.unpack(">BHH", _recv_exact(s, 5))
            _recv_exact(s, n * 6)
        elif msg == 2:                                      # Bell
            pass
        elif msg == 3:                                      # ServerCutText
            _recv_exact(s, 3)
            (n,) = struct.unpack(">I", _recv_exact(s, 4))
            _recv_exact(s, n)
        else:
            raise RFBError("unexpected server message %d" % msg)
        return False

    def _run(self):
        try:
            self._request(0)
            while not self.stopping:
                if self._read_update():
                    self.updates += 1
                    self._request(1)
        except (OSError, RFBError) as e:
            if not self.stopping:
                self.error = e

    def close(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        self.sock.close()
