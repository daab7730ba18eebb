# SPDX-License-Identifier: GPL-2.0-or-later
"""The scenarios and groups of scripts/migbench (a table, and its generators)."""

UNLIMITED = 100 << 30           # "unlimited" bandwidth both binaries accept

# Scenarios are declarative: add one by adding an entry.
#   mem: -m; append: firmware parameters; params: migrate-set-parameters
#   (both binaries); ours_params: parameters only ours gets, on top of params
#   (QEMU 7.2 lacks them, e.g. zero-page-detection); caps: capabilities to
#   turn on; dst_caps/dst_params: what the destination gets before the
#   source connects (default: the caps in DST_CAPS and, with one of them,
#   the multifd-* params); warmup: STAT lines to see before migrating;
#   after: STAT/PASS lines to see on the destination; kind: precopy|snapshot;
#   quick: overrides for --quick (each run well under a minute); smp: -smp;
#   ours_accel, peer_accel: -accel for our binary, for every peer (the dirty
#   ring; --peer-accel overrides peer_accel); pin_vcpus: always pin
#   these vCPU threads alone on CPU 1 (as --pin does), the rest on CPU 0.
#   Multifd variants are generated below the table (multifd()).
SCENARIOS = {
    "idle": {
        "doc": "2 GiB idle guest (64 MiB written), unlimited bandwidth",
        "mem": "2G", "append": "mode=idle",
        "params": {"max-bandwidth": UNLIMITED},
        "quick": {"mem": "1G"},
    },
    "fill": {
        "doc": "2 GiB guest whose first 1 GiB was written once, then idle; unlimited bandwidth",
        "mem": "2G", "append": "mode=idle mem=1024",
        "params": {"max-bandwidth": UNLIMITED},
        "quick": {"mem": "1G", "append": "mode=idle mem=512"},
    },
    "dirty-random": {
        "doc": "3 GiB guest writing 2 GiB randomly at 220 MB/s; 300 MiB/s, 100 ms downtime",
        "mem": "3G", "append": "mode=dirty mem=2048 rate=220 pattern=random",
        "params": {"max-bandwidth": 300 << 20, "downtime-limit": 100},
        "quick": {"mem": "1G", "append": "mode=dirty mem=512 rate=110 pattern=random",
                  "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100}},
    },
    "dirty-random-xbzrle": {
        "doc": "dirty-random with xbzrle and a 2 GiB cache (the whole written area)",
        "mem": "3G", "append": "mode=dirty mem=2048 rate=220 pattern=random",
        "params": {"max-bandwidth": 300 << 20, "downtime-limit": 100,
                   "xbzrle-cache-size": 2 << 30},
        "caps": ["xbzrle"],
        "quick": {"mem": "1G", "append": "mode=dirty mem=512 rate=110 pattern=random",
                  "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100,
                             "xbzrle-cache-size": 512 << 20}},
    },
    "dirty-random-xbzrle-1g": {
        "doc": "dirty-random with xbzrle and QEMU's 1 GiB cache of the issue's anchor",
        "mem": "3G", "append": "mode=dirty mem=2048 rate=220 pattern=random",
        "params": {"max-bandwidth": 300 << 20, "downtime-limit": 100,
                   "xbzrle-cache-size": 1 << 30},
        "caps": ["xbzrle"],
        "quick": {"mem": "1G", "append": "mode=dirty mem=512 rate=110 pattern=random",
                  "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100,
                             "xbzrle-cache-size": 256 << 20}},
    },
    "dirty-random-150": {
        "doc": "as dirty-random at 150 MB/s",
        "mem": "3G", "append": "mode=dirty mem=2048 rate=150 pattern=random",
        "params": {"max-bandwidth": 300 << 20, "downtime-limit": 100},
        "quick": {"mem": "1G", "append": "mode=dirty mem=512 rate=75 pattern=random",
                  "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100}},
    },
    "dirty-seq": {
        "doc": "3 GiB guest writing 2 GiB sequentially at 220 MB/s; 300 MiB/s, 100 ms",
        "mem": "3G", "append": "mode=dirty mem=2048 rate=220 pattern=seq",
        "params": {"max-bandwidth": 300 << 20, "downtime-limit": 100},
        "quick": {"mem": "1G", "append": "mode=dirty mem=512 rate=110 pattern=seq",
                  "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100}},
    },
    "memuser": {
        "doc": "2 GiB guest sweeping 1.5 GiB in 128 MiB chunks with 200 ms idle (aging)",
        "mem": "2G", "append": "mode=memuser mem=1536 chunk=128 idle_ms=200",
        "params": {"max-bandwidth": 300 << 20, "downtime-limit": 100},
        "quick": {"mem": "1G", "append": "mode=memuser mem=512 chunk=64 idle_ms=200"},
    },
    "dirty-1g": {
        "doc": "1 GiB guest writing 768 MiB randomly at 200 MB/s; max-bandwidth 1 GiB/s",
        "mem": "1G", "append": "mode=dirty mem=768 rate=200 pattern=random",
        "params": {"max-bandwidth": 1 << 30},
        "quick": {"append": "mode=dirty mem=512 rate=200 pattern=random"},
    },
    "snapshot": {
        "doc": "3 GiB guest writing 2 GiB randomly at 150 MB/s: background snapshot vs "
               "precopy into a file (exec:cat > FILE), both to local files",
        "kind": "snapshot", "mem": "3G", "append": "mode=dirty mem=2048 rate=150 pattern=random",
        "nonzero_mib": 2048, "warmup": 3,
        "quick": {"mem": "1G", "append": "mode=dirty mem=512 rate=150 pattern=random",
                  "nonzero_mib": 512},
    },
    "snapshot-file": {
        "doc": "4 GiB guest writing 2 GiB randomly at 150 MB/s: background snapshot to a local "
               "file (ours with mapped-ram: 1 or 2 writers, with and without direct-io) and "
               "restores (ours eager and lazy) against each peer's (exec:cat; mapped-ram where it "
               "has it), with the disk's dd speeds",
        "kind": "snapshot-file", "mem": "4G",
        "append": "mode=dirty mem=2048 rate=150 pattern=random",
        "nonzero_mib": 2048, "warmup": 3,
        "quick": {"mem": "1G", "append": "mode=dirty mem=512 rate=150 pattern=random",
                  "nonzero_mib": 512},
    },
    # libvirt driving the binary (issue 20): scripts/libvirtbench.py.
    "libvirt": {
        "doc": "virsh save, restore (page cache dropped) and migrate --live of a 1 GiB "
               "microvm domain, verify firmware on 768 MiB, two private libvirtds (root)",
        "kind": "libvirt", "mem": "1G", "append": "mode=verify mem=768",
        "quick": {"mem": "256M", "append": "mode=verify mem=64"},
    },
    "stall": {
        "doc": "guest write latency while migrating: 1 GiB guest, 768 MiB random at 100 MB/s",
        "mem": "1G", "append": "mode=dirty mem=768 rate=100 pattern=random",
        "params": {"max-bandwidth": 1 << 30, "downtime-limit": 300},
        "warmup": 3,
        "quick": {"append": "mode=dirty mem=512 rate=100 pattern=random"},
    },
    # The downtime limit is what decides the switchover (issue 16): a working
    # set rewritten faster than a pass, on a link limited only by the host.
    "downtime-limit": {
        "doc": "1 GiB guest writing 768 MiB in order at 400 MB/s; no max-bandwidth, "
               "downtime-limit 100 ms: downtime against the limit and the prediction",
        "mem": "1G", "append": "mode=dirty mem=768 rate=400 pattern=seq",
        "params": {"max-bandwidth": UNLIMITED, "downtime-limit": 100},
        "warmup": 3,
    },
    # A network that survives migration (issue 17): a host client sends 1000
    # datagrams a second to the guest's UDP echo through slirp's hostfwd.
    "net-udpecho": {
        "doc": "512 MiB guest echoing UDP through virtio-net and slirp, 1000 datagrams/s "
               "from the host; 1 GiB/s",
        "mem": "512M", "append": "mode=udpecho port=7",
        "net": {"rate": 1000},
        "params": {"max-bandwidth": 1 << 30, "downtime-limit": 300},
        "warmup": 2,
    },
    # A display whose VRAM is a second dirty-log client beside the migration
    # (issue 18): the guest draws 640x480x32 at 30 fps into a 16 MiB VRAM.
    "display-on": {
        "doc": "1 GiB, 2 vCPUs: CPU 0 draws 640x480x32 at 30 fps on a 16 MiB VRAM (ours "
               "isa-vga on microvm, QEMU 7.2 -M pc -vga std with a VNC viewer), "
               "CPU 1 writes 256 MiB at random at 20 MB/s; 128 MiB/s",
        "mem": "1G", "smp": 2,
        "append": "mode0=draw width=640 height=480 bpp=32 rate=30 "
                  "mode1=dirty mem1=256 rate1=20 pattern1=random",
        "display": "on",
        "params": {"max-bandwidth": 128 << 20, "downtime-limit": 300},
        "warmup": 2,
    },
    # Convergence (issue 16): CPU 0 computes (the innocent vCPU), CPU 1 outruns the link.
    "converge-auto": {
        "doc": "3 GiB, 2 vCPUs: CPU 0 computes, CPU 1 writes 2 GiB randomly at 600 MB/s; "
               "100 MiB/s, 100 ms downtime; auto-converge (QEMU's defaults)",
        "mem": "3G", "smp": 2,
        "append": "mode0=compute mode1=dirty mem=16 mem1=2048 rate1=600 pattern=random",
        # The link must be slower than CPU 1 under dirty tracking, or nothing
        # is forced to converge. On kvm-pvm hosts a tracked guest writing at
        # random keeps only 90-190 MB/s of its 600 (every first write faults),
        # so 300 MiB/s (issue 16's figure, on a host where it kept 400-475)
        # let every binary converge unthrottled.
        "params": {"max-bandwidth": 100 << 20, "downtime-limit": 100},
        "caps": ["auto-converge"], "warmup": 3,
        # The compute vCPU alone on CPU 1: what slows it is the throttle, not the host.
        "pin_vcpus": ["CPU 0/"],
        "quick": {"mem": "1G",
                  "append": "mode0=compute mode1=dirty mem=16 mem1=512 rate1=300 pattern=random",
                  "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100}},
    },
    # Compression and zero pages: mostly-zero 4 GiB guests, idle, unlimited.
    "zero-text-4g": {
        "doc": "4 GiB idle guest: 1 GiB of text (compressible), 3 GiB zero; unlimited",
        "mem": "4G", "append": "mode=idle mem=1024 fill=text",
        "params": {"max-bandwidth": UNLIMITED},
        "quick": {"mem": "1G", "append": "mode=idle mem=256 fill=text"},
    },
    "random-4g": {
        "doc": "4 GiB idle guest: 1 GiB random (incompressible), 3 GiB zero; unlimited",
        "mem": "4G", "append": "mode=idle mem=1024 fill=random",
        "params": {"max-bandwidth": UNLIMITED},
        "quick": {"mem": "1G", "append": "mode=idle mem=256 fill=random"},
    },
    "zero-4g": {
        "doc": "4 GiB idle guest, all zero but the firmware's own pages; unlimited",
        "mem": "4G", "append": "mode=idle mem=1 fill=zero",
        "params": {"max-bandwidth": UNLIMITED},
        "quick": {"mem": "1G"},
    },
    "zeroed-4g": {
        "doc": "4 GiB idle guest that wrote 3 GiB of zeroes (populated zero pages, as freed "
               "memory of a real guest); unlimited",
        "mem": "4G", "append": "mode=idle mem=3072 fill=zeroed",
        "params": {"max-bandwidth": UNLIMITED},
        "quick": {"mem": "1G", "append": "mode=idle mem=768 fill=zeroed"},
    },
}


def postcopy(sc, when, preempt=False, params=None):
    """Scenario @sc switched to postcopy @when ("at-once": as soon as it is active,
    "after-pass-1": at the second dirty sync), optionally with postcopy-preempt."""
    caps = list(sc.get("caps", [])) + ["postcopy-ram"] + (["postcopy-preempt"] if preempt else [])
    out = dict(sc, caps=caps, postcopy=when, params=dict(sc.get("params", {}), **(params or {})))
    out["doc"] = "%s; postcopy%s %s%s" % (sc["doc"], "-preempt" if preempt else "",
                                          when.replace("-", " "),
                                          "".join(", %s %d" % kv for kv in (params or {}).items()))
    if "params" in sc.get("quick", {}):
        out["quick"] = dict(sc["quick"], params=dict(sc["quick"]["params"], **(params or {})))
    return out


def multifd(sc, channels, compression="none"):
    """Scenario @sc with multifd on: @channels channels, @compression (both sides)."""
    mp = {"multifd-channels": channels, "multifd-compression": compression}
    out = dict(sc, caps=list(sc.get("caps", [])) + ["multifd"],
               params=dict(sc.get("params", {}), **mp))
    out["doc"] = "%s; multifd %d channel%s, %s" % (sc["doc"], channels,
                                                   "s" if channels > 1 else "", compression)
    if "params" in sc.get("quick", {}):
        out["quick"] = dict(sc["quick"], params=dict(sc["quick"]["params"], **mp))
    return out


# Postcopy of the seed scenario (dirty-random): at once, after the first pass,
# capped at 300 MiB/s, and a guest writing at twice the bandwidth.
for _when in ("at-once", "after-pass-1"):
    for _pre in (False, True):
        SCENARIOS["postcopy%s-%s" % ("-preempt" if _pre else "", _when)] = \
            postcopy(SCENARIOS["dirty-random"], _when, _pre)
SCENARIOS["postcopy-preempt-bw300"] = postcopy(SCENARIOS["dirty-random"], "at-once", True,
                                               {"max-postcopy-bandwidth": 300 << 20})
SCENARIOS["postcopy-preempt-600"] = postcopy(
    dict(SCENARIOS["dirty-random"], append="mode=dirty mem=2048 rate=600 pattern=random",
         doc="3 GiB guest writing 2 GiB randomly at 600 MB/s; 300 MiB/s, 100 ms downtime",
         quick={"mem": "1G", "append": "mode=dirty mem=512 rate=300 pattern=random",
                "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100}}),
    "after-pass-1", True)

# Several scenarios measured in one invocation, run by run (A B C A B C ...);
# members marked ours-only run our binary alone (the comparison row is ours).
SCENARIOS["converge-dirty-limit"] = dict(
    SCENARIOS["converge-auto"],
    doc="converge-auto with dirty-limit instead (the dirty ring, QEMU 8.1's defaults: "
        "vcpu-dirty-limit 1 MB/s); QEMU 7.2 has no dirty-limit capability (n/a)",
    caps=["dirty-limit"], ours_accel="kvm,dirty-ring-size=4096",
    peer_accel="kvm,dirty-ring-size=4096")

# display-on with nothing refreshing (ours -nographic, QEMU 7.2 without a
# VNC client): what the display costs the migration.
SCENARIOS["display-off"] = dict(
    SCENARIOS["display-on"], display="off",
    doc="as display-on, but no display refresh (ours -nographic, QEMU 7.2 without "
        "a VNC client): the migration's cost of a display")

# Migrations that finish on their own (issue 41): scenarios where QEMU's
# switchover rule (remaining below the throttled rate x the limit) never
# fires. Each is run with the defaults and with the closest setting each
# binary has (auto-converge; dirty-limit where it exists); a run that has not
# completed after give_up_s is cancelled and counted as not completing.
SLO_GIVE_UP_S = 90
SLO_BASE = {
    "slo-verify": {
        "doc": "1 GiB verify guest rewriting 128 MiB (about 128 MiB/s under dirty tracking "
               "here) at the default max-bandwidth (128 MiB/s) and downtime-limit (300 ms)",
        "mem": "1G", "append": "mode=verify mem=128", "params": {},
    },
    "slo-seed-150": {
        "doc": "the seed scenario (dirty-random: 3 GiB, 2 GiB written randomly at 220 MB/s) "
               "at 150 MiB/s, 100 ms downtime",
        "mem": "3G", "append": "mode=dirty mem=2048 rate=220 pattern=random",
        "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100},
    },
    "slo-random-600": {
        "doc": "3 GiB, 2 vCPUs: CPU 0 computes, CPU 1 writes 2 GiB randomly at 600 MB/s; "
               "300 MiB/s, 100 ms downtime",
        "mem": "3G", "smp": 2,
        "append": "mode0=compute mode1=dirty mem=16 mem1=2048 rate1=600 pattern=random",
        "params": {"max-bandwidth": 300 << 20, "downtime-limit": 100},
        "pin_vcpus": ["CPU 0/"],
    },
}
for _name, _sc in SLO_BASE.items():
    _sc = dict(_sc, give_up_s=SLO_GIVE_UP_S, warmup=2)
    SCENARIOS[_name] = _sc
    SCENARIOS[_name + "-auto"] = dict(_sc, caps=["auto-converge"],
                                      doc=_sc["doc"] + "; auto-converge")
    SCENARIOS[_name + "-dl"] = dict(_sc, caps=["dirty-limit"],
                                    ours_accel="kvm,dirty-ring-size=4096",
                                    peer_accel="kvm,dirty-ring-size=4096",
                                    doc=_sc["doc"] + "; dirty-limit (the dirty ring)")

# 100 runs of mixed guests (issue 41): each guest at each downtime-limit,
# ours only, with the defaults (whose policy throttles a stalled guest);
# migbench slo-mixed --runs 9 is 108 runs. slo.py sums them up: downtime never above the
# limit, predicted within 20% of achieved, x-progress never going back.
SLO_MIXED_GUESTS = {
    "verify": {"mem": "1G", "append": "mode=verify mem=128", "params": {}},
    "random": {"mem": "1G", "append": "mode=dirty mem=512 rate=100 pattern=random",
               "params": {"max-bandwidth": 300 << 20}},
    "seq": {"mem": "1G", "append": "mode=dirty mem=512 rate=200 pattern=seq",
            "params": {"max-bandwidth": 1 << 30}},
    "aging": {"mem": "1G", "append": "mode=memuser mem=768 chunk=64 idle_ms=200",
              "params": {"max-bandwidth": 300 << 20}},
}
SLO_MIXED_LIMITS = (50, 100, 300)
for _g, _sc in SLO_MIXED_GUESTS.items():
    for _lim in SLO_MIXED_LIMITS:
        SCENARIOS["slo-mixed-%s-%d" % (_g, _lim)] = dict(
            _sc, doc="slo-mixed: %s, downtime-limit %d ms" % (_g, _lim),
            params=dict(_sc["params"], **{"downtime-limit": _lim}),
            give_up_s=SLO_GIVE_UP_S, warmup=2)

GROUPS = {
    # dirty-limit against auto-converge, run by run: every binary that has
    # dirty-limit (QEMU 10.0 has, QEMU 7.2 has not: n/a in its column).
    "converge": ["converge-auto", "converge-dirty-limit"],
    # issue 41: each slo scenario plain, with auto-converge, with dirty-limit.
    "slo": [n + v for n in SLO_BASE for v in ("", "-auto", "-dl")],
    "slo-mixed": [("slo-mixed-%s-%d" % (g, lim), "ours-only") for g in SLO_MIXED_GUESTS
                  for lim in SLO_MIXED_LIMITS],
    "postcopy": ["postcopy-at-once", "postcopy-preempt-at-once", ("dirty-random", "ours-only")],
    "postcopy-after-pass-1": ["postcopy-after-pass-1", "postcopy-preempt-after-pass-1",
                              ("dirty-random", "ours-only")],
    # The display refreshing with a migration, then the same without a refresh.
    "display": ["display-on", "display-off"],
}

for _base, _variants in (
        ("zero-text-4g", ((1, "none"), (2, "none"), (4, "none"), (2, "zstd"), (2, "zlib"))),
        ("random-4g", ((2, "none"), (2, "zstd"), (2, "zlib"))),
        ("zero-4g", ((2, "none"),)),
        ("zeroed-4g", ((2, "none"),)),
        ("dirty-random", ((2, "zstd"),))):
    for _ch, _comp in _variants:
        SCENARIOS["%s-mfd%d%s" % (_base, _ch, "" if _comp == "none" else "-" + _comp)] = \
            multifd(SCENARIOS[_base], _ch, _comp)


# Live update (issue 38): the VMM replaced under a running guest by
# cpr-transfer, cpr-exec and a plain precopy (scripts/migbenchlib/liveupdate.py).
# CPU 0 verifies 64 MiB and prints a PASS line about every millisecond (the
# console whose silence is timed); CPU 1 dirties the rest of the populated
# area at 100 MB/s. populate: MiB filled at boot (the 16 GiB guest only 4 GiB:
# a precopy holds it twice on this 24 GiB machine).
LIVE_UPDATE_GUESTS = [{"mem": "1G", "populate": 960}, {"mem": "4G", "populate": 4032},
                      {"mem": "16G", "populate": 4096}]
SCENARIOS["live-update"] = {
    "doc": "1, 4 and 16 GiB guests (960 MiB, 4032 MiB, 4 GiB populated), 2 vCPUs, each "
           "updated by cpr-transfer, cpr-exec and a plain precopy over unix: console "
           "gap, STOP to RESUME, total time, peak host memory",
    "kind": "live-update", "mem0": 64,
    "append": "mode0=verify mem0=%(mem0)d mode1=dirty mem1=%(mem1)d rate1=100 pattern1=random",
    "guests": LIVE_UPDATE_GUESTS,
    "quick": {"guests": LIVE_UPDATE_GUESTS[:1]},
}
for _g in LIVE_UPDATE_GUESTS:
    SCENARIOS["live-update-%s" % _g["mem"].lower()] = dict(
        SCENARIOS["live-update"], guests=[_g], quick={},
        doc="live-update's %s guest alone" % _g["mem"])


# TLS (issue 36): the seed scenario at 300 MiB/s and an unlimited 4 GiB one,
# on the main stream alone and with 2 multifd channels, plaintext against
# x509 with verify-peer on both ends (launch.tls_args), for every binary.
def tls(sc):
    out = dict(sc, tls=True)
    out["doc"] = sc["doc"] + "; TLS (x509, verify-peer)"
    return out


for _base in ("dirty-random", "random-4g"):
    SCENARIOS["%s-mfd2" % _base] = SCENARIOS.get("%s-mfd2" % _base) or multifd(SCENARIOS[_base], 2)
    SCENARIOS["%s-tls" % _base] = tls(SCENARIOS[_base])
    SCENARIOS["%s-mfd2-tls" % _base] = tls(SCENARIOS["%s-mfd2" % _base])
GROUPS["tls"] = [n for b in ("dirty-random", "random-4g")
                 for n in (b, b + "-tls", b + "-mfd2", b + "-mfd2-tls")]


# Disks (issue 39). The device alone: the firmware's blkbench (fio-like, no
# verification) on a fresh, fully allocated 1 GiB raw image per run, 2 s of
# warmup then 10 STAT seconds (scripts/migbenchlib/blkbench.py).
def blk(doc, append):
    return {"doc": doc + ": 4 KiB requests on a fresh preallocated 1 GiB raw image, "
                         "cache=none (writeback where O_DIRECT is refused)",
            "kind": "blkbench", "mem": "256M", "append": "mode=blkbench bs=4096 " + append,
            "disk": {"format": "raw", "size": "1G", "prealloc": "full"},
            "warmup": 2, "measure": 10, "quick": {"measure": 3}}


SCENARIOS["blk-seqread-qd1"] = blk("sequential reads, queue depth 1", "rw=read depth=1")
SCENARIOS["blk-randread-qd32"] = blk("random reads, queue depth 32", "rw=randread depth=32")
SCENARIOS["blk-randwrite-qd32"] = blk("random writes, queue depth 32", "rw=randwrite depth=32")
SCENARIOS["blk-seqwrite-qd32"] = blk("sequential writes, queue depth 32", "rw=write depth=32")
GROUPS["blk"] = ["blk-seqread-qd1", "blk-randread-qd32", "blk-randwrite-qd32",
                 "blk-seqwrite-qd32"]

# The seed scenario with a writing disk: CPU 1 does dirty-random's writes
# (2 GiB at 220 MB/s), CPU 0 writes 4 KiB at random at 2000 IOPS (8 in
# flight) over all of a 4 GiB qcow2 image that qemu-img made (blkbench
# addresses any capacity; blkverify's table stops at 32 MiB), shared by
# source and destination. disk-vs-nodisk runs it beside dirty-random
# (ours alone) for the downtime target.
SCENARIOS["disk"] = dict(
    SCENARIOS["dirty-random"],
    doc="dirty-random (CPU 1) plus CPU 0 writing 4 KiB at random at 2000 IOPS, 8 in flight, "
        "to a 4 GiB qcow2 image (qemu-img create), shared storage; 300 MiB/s, 100 ms",
    smp=2, append="mode0=blkbench rw=randwrite bs=4096 depth=8 iops=2000 "
                  "mode1=dirty mem1=2048 rate1=220 pattern1=random",
    disk={"format": "qcow2", "size": "4G"}, warmup=3,
    quick={"mem": "1G", "append": "mode0=blkbench rw=randwrite bs=4096 depth=8 iops=2000 "
                                  "mode1=dirty mem1=512 rate1=110 pattern1=random",
           "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100}})
GROUPS["disk-vs-nodisk"] = ["disk", ("dirty-random", "ours-only")]

# Storage migration without shared storage (issue 40): the seed scenario's
# guest with CPU 0 writing 2000 IOPS at random over a local 4 GiB qcow2
# image that holds 2 GiB of data; the destination exports an empty image
# over NBD and the source mirrors into it, then the RAM moves (as libvirt's
# --copy-storage-all). link_Bps: the bandwidth limit (max-bandwidth) for
# total/ideal; the mirror itself runs unlimited in every binary.
SCENARIOS["storage"] = dict(
    SCENARIOS["disk"], kind="storage",
    doc="disk's guest on a local 4 GiB qcow2 image with 2 GiB of data, mirrored over NBD "
        "(blockdev-mirror sync=full), then precopy; 300 MiB/s for the RAM",
    storage={"size": "4G", "size_bytes": 4 << 30, "data": "2 GiB", "data_bytes": 2 << 30,
             "link_Bps": 300 << 20},
    quick={"mem": "1G", "append": "mode0=blkbench rw=randwrite bs=4096 depth=8 iops=2000 "
                                  "mode1=dirty mem1=512 rate1=110 pattern1=random",
           "storage": {"size": "1G", "size_bytes": 1 << 30, "data": "256 MiB",
                       "data_bytes": 256 << 20, "link_Bps": 150 << 20},
           "params": {"max-bandwidth": 150 << 20, "downtime-limit": 100}})
