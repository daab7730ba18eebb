# SPDX-License-Identifier: GPL-2.0-or-later
"""One run's time series for --json and --plot (scripts/migplot.py draws
it): the query-migrate polls, the guest's STAT lines and the STOP/RESUME
events, downsampled to at most SERIES_POINTS rows each."""
import time

from qmp import kv


# The per-run time series goes into the result under this key; the tables skip it.
SERIES_KEY = "series"
# At most this many polls (and STAT lines) per run in the series.
SERIES_POINTS = 400
# query-migrate members a poll keeps: (column, path in the reply).
POLL_FIELDS = (("status", ("status",)), ("remaining", ("ram", "remaining")),
               ("transferred", ("ram", "transferred")), ("mbps", ("ram", "mbps")),
               ("passes", ("ram", "dirty-sync-count")),
               ("expected-downtime", ("expected-downtime",)),
               ("faults", ("x-background-snapshot", "faults")),
               ("fault-p99-us", ("x-background-snapshot", "fault-latency-p99-us")),
               ("requests", ("ram", "postcopy-requests")),
               ("request-p99-us", ("x-postcopy", "request-latency-p99-us")))
# STAT keys a guest sample keeps (tests/guest/stat.c), numbers.
STAT_FIELDS = ("rate_mbps", "max_write_us", "p99_write_us", "slow_writes", "ips")


def _dig(d, path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def downsample(n, limit, keep=()):
    """Indices of at most about @limit of range(@n): the first, the last, those
    in @keep (where something changes) and an even spread of the others."""
    if n <= limit:
        return list(range(n))
    keep = sorted(set(keep) | {0, n - 1})
    if len(keep) >= limit:
        keep = keep[::-(-len(keep) // limit)] + [n - 1]
    step = n / max(limit - len(keep), 1)
    return sorted(set(keep) | {int(i * step) for i in range(limit - len(keep))})


class Series:
    """One run's time series for --json and --plot: each query-migrate poll and
    the guest's STAT lines, in seconds since the migrate command (@t0, host
    monotonic, taken with the wall clock @wall0 that QMP events carry)."""

    def __init__(self, t0, wall0):
        self.t0, self.wall0 = t0, wall0
        self.polls = []
        self.marks = {}

    def poll(self, info):
        self.polls.append([round(time.monotonic() - self.t0, 3)] +
                          [_dig(info, path) for _, path in POLL_FIELDS])

    def mark(self, name):
        self.marks[name] = round(time.monotonic() - self.t0, 3)

    def _columns(self, rows, names):
        """Columns of @rows by name, without those that are never set."""
        cols = {}
        for j, name in enumerate(names):
            col = [r[j] for r in rows]
            if any(v is not None for v in col):
                cols[name] = col
        return cols

    def finish(self, sides, latency=None, switchover=True):
        """The series as a dict; @sides: (name, VM, first line index) whose STAT
        lines and STOP/RESUME events to keep; @latency: a final histogram;
        @switchover: whether the source's last STOP is one (not in a background
        snapshot, whose only STOP is the moment it starts tracking writes)."""
        def changed(j):
            return [i for i in range(1, len(self.polls))
                    if self.polls[i][j] != self.polls[i - 1][j]]
        keep = changed(1) + changed(5)
        keep += [i - 1 for i in keep]
        rows = [self.polls[i] for i in downsample(len(self.polls), SERIES_POINTS, keep)]
        out = {"polls": self._columns(rows, ["t"] + [n for n, _ in POLL_FIELDS])}
        stats, events = [], []
        for side, vm, start in sides:
            for mono, line in vm.lines_since(start):
                if line.startswith("STAT"):
                    v = kv(line)
                    if not any(k in v for k in STAT_FIELDS):
                        continue    # a drawing or networking CPU's line
                    stats.append([round(mono - self.t0, 3), side, int(v.get("cpu", 0))] +
                                 [float(v[k]) if k in v else None for k in STAT_FIELDS])
            for e in vm.qmp.events:
                if e["event"] in ("STOP", "RESUME"):
                    ts = e["timestamp"]["seconds"] + e["timestamp"]["microseconds"] / 1e6
                    events.append([round(ts - self.wall0, 3), side, e["event"]])
        stats.sort()
        stats = [stats[i] for i in downsample(len(stats), SERIES_POINTS)]
        out["guest"] = self._columns(stats, ("t", "side", "cpu") + STAT_FIELDS)
        out["events"] = sorted(events)
        stops = [t for t, side, ev in events if side == "src" and ev == "STOP"]
        if stops and switchover:
            out["switchover-s"] = stops[-1]
        out.update(self.marks)
        if latency:
            out["latency"] = latency
        return out
