# SPDX-License-Identifier: GPL-2.0-or-later
"""The integrity record of a mapped-ram file (x-mapped-ram-integrity; layout
in migration/transport/mapped-ram-integrity.h): hex text between the vmdesc and the
completion trailer, then "MRAMINTG" and 16 hex digits of its length.

An implementation independent of the C one: XXH64 from its published
specification, and a decoder that checks what it reads.
"""

import struct

FOOTER_MAGIC = b'MRAMINTG'
FOOTER_SIZE = 24
REGION_PAGES = 16

_M = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P4, P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc, lane):
    return (_rotl((acc + lane * P2) & _M, 31) * P1) & _M


def xxh64(data, seed=0):
    """XXH64 of @data (bytes); slow, for records and tests, not for RAM."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & _M, (seed + P2) & _M, seed, (seed - P1) & _M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = _round(v[k], struct.unpack_from('<Q', data, i + 8 * k)[0])
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for k in range(4):
            h = ((h ^ _round(0, v[k])) * P1 + P4) & _M
    else:
        h = (seed + P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        h ^= _round(0, struct.unpack_from('<Q', data, i)[0])
        h = (_rotl(h, 27) * P1 + P4) & _M
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from('<I', data, i)[0] * P1) & _M
        h = (_rotl(h, 23) * P2 + P3) & _M
        i += 4
    while i < n:
        h ^= (data[i] * P5) & _M
        h = (_rotl(h, 11) * P1) & _M
        i += 1
    h ^= h >> 33
    h = (h * P2) & _M
    h ^= h >> 29
    h = (h * P3) & _M
    h ^= h >> 32
    return h


def encode(stream_start, stream_end, stream_hash, blocks):
    """The file's tail before the trailer: hex text and footer.  @blocks:
    (name, used_length, bitmap_offset, pages_offset, [region hashes])."""
    b = struct.pack('<IIQQQI', 1, REGION_PAGES, stream_start, stream_end, stream_hash,
                    len(blocks))
    for name, used, bitmap, pages, hashes in blocks:
        raw = name.encode()
        b += struct.pack('<B', len(raw)) + raw + struct.pack('<QQQ', used, bitmap, pages)
        b += b''.join(struct.pack('<Q', h) for h in hashes)
    b += struct.pack('<Q', xxh64(b))
    hexed = b.hex().encode()
    return hexed + FOOTER_MAGIC + b'%016x' % len(hexed)


def read_record(f, trailer_offset):
    """The record ending at @trailer_offset, if its footer is there: a dict
    (offset, stream_start, stream_end, stream_hash, blocks: list of dicts
    with name, used_length, bitmap_offset, pages_offset, region_hashes), or
    a string saying what is wrong with it.  None without a footer."""
    if trailer_offset < FOOTER_SIZE:
        return None
    f.seek(trailer_offset - FOOTER_SIZE)
    footer = f.read(FOOTER_SIZE)
    if not footer.startswith(FOOTER_MAGIC):
        return None
    digits = footer[8:]
    if not all(c in b'0123456789abcdef' for c in digits):
        return 'garbled footer %r' % footer
    n = int(digits, 16)
    off = trailer_offset - FOOTER_SIZE - n
    if n == 0 or n % 2 or off < 0:
        return 'footer names %d hex digits, which do not fit' % n
    f.seek(off)
    try:
        b = bytes.fromhex(f.read(n).decode('ascii'))
    except (ValueError, UnicodeDecodeError):
        return 'not hex text'
    if len(b) < 44 or xxh64(b[:-8]) != struct.unpack_from('<Q', b, len(b) - 8)[0]:
        return 'its checksum does not match'
    ver, rp, start, end, shash, nblocks = struct.unpack_from('<IIQQQI', b, 0)
    if ver != 1 or rp != REGION_PAGES or end != off:
        return 'version %d, %d-page regions, stream end 0x%x at 0x%x' % (ver, rp, end, off)
    i, blocks = 36, []
    for _ in range(nblocks):
        if i >= len(b) - 8:
            return 'it ends inside its block list'
        ln = b[i]
        name = b[i + 1:i + 1 + ln].decode('latin-1')
        i += 1 + ln
        if i + 24 > len(b) - 8:
            return 'it ends inside its block list'
        used, bitmap, pages = struct.unpack_from('<QQQ', b, i)
        i += 24
        nreg = -(-used // (REGION_PAGES * 4096))
        if i + 8 * nreg > len(b) - 8:
            return 'it ends inside its block list'
        hashes = list(struct.unpack_from('<%dQ' % nreg, b, i))
        i += 8 * nreg
        blocks.append({'name': name, 'used_length': used, 'bitmap_offset': bitmap,
                       'pages_offset': pages, 'region_hashes': hashes})
    if i != len(b) - 8:
        return '%d bytes follow its last block' % (len(b) - 8 - i)
    return {'offset': off, 'stream_start': start, 'stream_end': end, 'stream_hash': shash,
            'blocks': blocks}
