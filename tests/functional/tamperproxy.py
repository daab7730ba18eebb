# SPDX-License-Identifier: GPL-2.0-or-later
"""A loopback tcp forwarder that watches and tampers, for the TLS tests.

Every connection made to it is carried to the destination's port both
ways. It keeps the first CAPTURE bytes each connection's client sent
(what a tcpdump of the port would show) and scans the whole of them for
markers that must never be in the clear. It can cut a connection once a
number of bytes went one way (a handshake cut in the middle), or flip one
byte the client sends at an offset (garbage inside a TLS record).

    p = TamperProxy(dst_port, cut_s2c_after=200)   # or flip_c2s_at=...
    src.migrate('tcp:127.0.0.1:%d' % p.port)
    p.first_bytes()           # [bytes of each connection, in order]
    p.seen(b'QEVM\0\0\0\3')   # whether the marker crossed in the clear
    p.close()
"""

import socket
import threading

CAPTURE = 4096


class TamperProxy:
    def __init__(self, dst_port, cut_s2c_after=None, flip_c2s_at=None, markers=()):
        self.dst_port = dst_port
        self.cut_s2c_after = cut_s2c_after
        self.flip_c2s_at = flip_c2s_at
        self.markers = list(markers)
        self.lock = threading.Lock()
        self.conns = []             # lock: [first bytes], one per connection
        self.found = set()          # lock: markers seen in any client's bytes
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.closing = False
        self.open = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                d = socket.create_connection(('127.0.0.1', self.dst_port))
            except OSError:
                c.close()
                continue
            with self.lock:
                idx = len(self.conns)
                self.conns.append(b'')
                self.open += [c, d]
            threading.Thread(target=self._pump, args=(c, d, idx, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(d, c, idx, False), daemon=True).start()

    def _pump(self, frm, to, idx, c2s):
        total = 0
        tail = b''
        longest = max([len(m) for m in self.markers] + [1])
        try:
            while True:
                data = frm.recv(65536)
                if not data:
                    break
                if c2s:
                    with self.lock:
                        if len(self.conns[idx]) < CAPTURE:
                            self.conns[idx] += data[:CAPTURE - len(self.conns[idx])]
                        window = tail + data
                        for m in self.markers:
                            if m in window:
                                self.found.add(m)
                    tail = window[-(longest - 1):] if longest > 1 else b''
                    if self.flip_c2s_at is not None and total <= self.flip_c2s_at < total + len(data):
                        i = self.flip_c2s_at - total
                        data = data[:i] + bytes([data[i] ^ 0x5a]) + data[i + 1:]
                elif self.cut_s2c_after is not None and total + len(data) >= self.cut_s2c_after:
                    to.sendall(data[:max(0, self.cut_s2c_after - total)])
                    break
                total += len(data)
                to.sendall(data)
        except OSError:
            pass
        # Closed, not only shut down: a TCP socket shut for reading still
        # takes the peer's bytes, so a source writing to it would block for
        # ever once its buffers filled instead of seeing the connection go
        # (what a destination that exits does). The other pump then fails.
        for s in (frm, to):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for s in (frm, to):
            s.close()

    def first_bytes(self):
        with self.lock:
            return list(self.conns)

    def seen(self, marker):
        with self.lock:
            return marker in self.found

    def cut(self):
        """Every connection open now ends, both ways (a broken link); later
        connections are carried again."""
        with self.lock:
            socks, self.open = self.open, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        # The pumps fail on them at once; they are closed here, not leaked.
        for s in socks:
            s.close()

    def close(self):
        self.sock.close()
        with self.lock:
            for s in self.open:
                try:
                    s.close()
                except OSError:
                    pass
