# SPDX-License-Identifier: GPL-2.0-or-later
"""A host-side UDP client for the firmware's mode=udpecho (migbench's network
scenarios): it sends numbered datagrams ("c=N") at a steady rate to one or
more loopback ports (the hostfwd ports of a migration's source and
destination, so whichever guest runs answers) and records when each echo
("seq=M c=N") came back, on the wall clock the QMP events use."""

import socket
import threading
import time


class UdpEchoClient:
    def __init__(self, ports, rate):
        self.ports = list(ports)
        self.rate = rate
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.sent = {}          # N -> wall time sent (sender thread)
        self.echoed = {}        # N -> wall time of its first echo (receiver thread)
        self.late = 0           # echoes of an N seen before (a duplicate or a queued copy)
        self.lock = threading.Lock()
        self.running = True
        self.threads = [threading.Thread(target=self._send_loop, daemon=True),
                        threading.Thread(target=self._recv_loop, daemon=True)]
        for t in self.threads:
            t.start()

    def _send_loop(self):
        start = time.monotonic()
        n = 0
        while self.running:
            n += 1
            due = start + n / self.rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            msg = b"c=%d" % n
            with self.lock:
                self.sent[n] = time.time()
            for p in self.ports:
                try:
                    self.sock.sendto(msg, ("127.0.0.1", p))
                except OSError:
                    pass        # a port nobody listens on yet: ICMP errors come back

    def _recv_loop(self):
        while self.running:
            try:
                data, _ = self.sock.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                continue        # ECONNREFUSED from a port that is not bound
            now = time.time()
            n = None
            for tok in data.split():
                if tok.startswith(b"c="):
                    try:
                        n = int(tok[2:])
                    except ValueError:
                        pass
            if n is None:
                continue
            with self.lock:
                if n in self.echoed:
                    self.late += 1
                else:
                    self.echoed[n] = now

    def echoes(self):
        with self.lock:
            return len(self.echoed)

    def wait_echoes(self, count, timeout):
        deadline = time.monotonic() + timeout
        while self.echoes() < count:
            if time.monotonic() > deadline:
                raise TimeoutError("udp client: %d of %d echoes in %d s" %
                                   (self.echoes(), count, timeout))
            time.sleep(0.05)

    def stop(self):
        self.running = False
        for t in self.threads:
            t.join()
        self.sock.close()

    def summary(self, t_from, t_to, down_from=None, down_to=None, settle=1.0):
        """Over the datagrams sent in [t_from, t_to] (wall clock): how many
        never came back, how many of those were sent outside the downtime
        window [down_from, down_to] (widened by the longest round trip seen),
        and the longest time without a new echo (an echo of a higher N than
        any before) between t_from and t_to."""
        with self.lock:
            sent = {n: t for n, t in self.sent.items() if t_from <= t <= t_to - settle}
            echoed = dict(self.echoed)
        lost = [n for n in sent if n not in echoed]
        rtts = sorted(echoed[n] - t for n, t in sent.items() if n in echoed)
        rtt_max = rtts[-1] if rtts else 0
        outside = lost
        if down_from is not None and down_to is not None:
            outside = [n for n in lost if not (down_from - rtt_max <= sent[n] <= down_to)]
        times, top = [], 0
        for n in sorted(echoed, key=lambda k: echoed[k]):
            if n > top:
                top = n
                if t_from <= echoed[n] <= t_to:
                    times.append(echoed[n])
        gaps = [b - a for a, b in zip(times, times[1:])]
        return {
            "net-sent": len(sent),
            "net-lost": len(lost),
            "net-lost-outside-downtime": len(outside),
            "net-late": self.late,
            "net-max-gap-ms": max(gaps) * 1000 if gaps else None,
            "net-rtt-p50-ms": rtts[len(rtts) // 2] * 1000 if rtts else None,
            "net-rtt-max-ms": rtt_max * 1000 if rtts else None,
        }
