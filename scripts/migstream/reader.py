# SPDX-License-Identifier: GPL-2.0-or-later
"""Reading a stream: errors with offsets, the bounded reader, RAM page sets,
the vmdesc (finding and validating it), the mapped-ram completion trailer,
XBZRLE pages, sections."""

import json
import struct

from .format import (DEFAULT_PAGE_SIZE, MAPPED_RAM_TRAILER_MAGIC,
                     MAPPED_RAM_TRAILER_MAGIC_RECORD, MAPPED_RAM_TRAILER_SIZE,
                     MAX_ARRAY_LEN, MAX_DESC_DEPTH, VMDESC_MAX_PARSE_TRIES, VMDESC_WINDOW)

PROG = 'analyze-migration.py'


class StreamError(Exception):
    """A problem with the input, reported with the stream offset."""

    def __init__(self, what, offset=None):
        super().__init__(what)
        self.what = what
        self.offset = offset

    def line(self):
        if self.offset is None:
            return oneline('%s: error: %s' % (PROG, self.what))
        return oneline('%s: error: %s at offset 0x%x'
                       % (PROG, self.what, self.offset))


class Reader:
    """Sequential big-endian reader over a file, with a private buffer.
    Positions are file offsets; the stream may start at @start and may end
    before the end of the file (size: the end of the stream's bytes)."""

    CHUNK = 1 << 20

    def __init__(self, f, size, start=0):
        self.f = f
        self.size = size
        self.buf = b''
        self.pos = 0            # index into buf
        self.base = start       # file offset of buf[0]

    def tell(self):
        return self.base + self.pos

    def remaining(self):
        return self.size - self.tell()

    def _fill(self, n, what):
        rest = self.buf[self.pos:]
        self.base += self.pos
        self.pos = 0
        want = n - len(rest)
        if want > self.size - self.base - len(rest):
            raise StreamError('stream truncated: %s needs %d bytes, only %d '
                              'left' % (what, n, self.size - self.base),
                              self.base)
        # Others (the vmdesc locator) may move the file position: seek.
        self.f.seek(self.base + len(rest))
        data = self.f.read(max(want, self.CHUNK))
        self.buf = rest + data
        if len(self.buf) < n:
            raise StreamError('stream truncated: %s needs %d bytes, only %d '
                              'left' % (what, n, len(self.buf)), self.base)

    def read(self, n, what):
        if len(self.buf) - self.pos < n:
            self._fill(n, what)
        p = self.pos
        self.pos = p + n
        return self.buf[p:p + n]

    def skip(self, n, what):
        if len(self.buf) - self.pos >= n:
            self.pos += n
            return
        target = self.tell() + n
        if target > self.size:
            raise StreamError('stream truncated: %s needs %d bytes, only %d '
                              'left' % (what, n, self.remaining()),
                              self.tell())
        self.base = target
        self.buf = b''
        self.pos = 0

    def seek(self, target, what):
        """Go forward to file offset target (never back: hostile offsets
        must not make the parse loop)."""
        here = self.tell()
        if target < here:
            raise StreamError('%s at 0x%x lies before the current position'
                              % (what, target), here)
        self.skip(target - here, what)

    def peek(self, n):
        """Up to n bytes ahead (fewer at the end of the file)."""
        if len(self.buf) - self.pos < n:
            try:
                self._fill(n, 'peek')
            except StreamError:
                pass
        return self.buf[self.pos:self.pos + n]

    def at_end(self):
        return self.tell() >= self.size

    def u8(self, what):
        if self.pos >= len(self.buf):
            self._fill(1, what)
        v = self.buf[self.pos]
        self.pos += 1
        return v

    def be16(self, what):
        return int.from_bytes(self.read(2, what), 'big')

    def be32(self, what):
        return int.from_bytes(self.read(4, what), 'big')

    def be64(self, what):
        if len(self.buf) - self.pos < 8:
            self._fill(8, what)
        v = struct.unpack_from('>Q', self.buf, self.pos)[0]
        self.pos += 8
        return v

    def counted_str(self, what):
        n = self.u8(what + ' length')
        return text(self.read(n, what))


def text(raw):
    return raw.decode('utf-8', errors='backslashreplace')


def q(name, limit=64):
    """A name from the stream, quoted and shortened for a message."""
    if len(name) > limit:
        name = name[:limit] + '...'
    return '"%s"' % name


def oneline(msg):
    """Escape control characters so that a message stays on one line."""
    return ''.join(c if c.isprintable() else '\\x%02x' % ord(c)
                   if ord(c) < 0x100 else '\\u%04x' % ord(c) for c in msg)


class PageSet:
    """A set of page numbers: a bitmap allocated in chunks on first use,
    so that a hostile block length cannot make us allocate it all."""

    SHIFT = 16
    MASK = (1 << SHIFT) - 1

    def __init__(self):
        self.chunks = {}
        self.count = 0

    def add(self, n):
        """Add page n; True if it was not in the set before."""
        c = self.chunks.get(n >> self.SHIFT)
        if c is None:
            c = self.chunks[n >> self.SHIFT] = bytearray(1 << (self.SHIFT - 3))
        i = n & self.MASK
        bit = 1 << (i & 7)
        if c[i >> 3] & bit:
            return False
        c[i >> 3] |= bit
        self.count += 1
        return True

    def __contains__(self, n):
        c = self.chunks.get(n >> self.SHIFT)
        if c is None:
            return False
        i = n & self.MASK
        return bool(c[i >> 3] & (1 << (i & 7)))

    def discard(self, n):
        c = self.chunks.get(n >> self.SHIFT)
        if c is None:
            return
        i = n & self.MASK
        bit = 1 << (i & 7)
        if c[i >> 3] & bit:
            c[i >> 3] &= ~bit
            self.count -= 1


class RamBlock:
    def __init__(self, name, length, known=True):
        self.name = name
        self.length = length
        self.known = known
        self.page_size = None        # postcopy: only if sent
        self.addr = None             # x-ignore-shared: guest address
        self.zero = 0
        self.normal = 0
        self.xbzrle = 0
        self.compressed = 0
        self.beyond = 0
        self.bytes = 0
        self.covered = PageSet()
        self.fd = None
        self.dump_path = None
        self.nonzero = None          # pages written with data (dump only)
        self.mapped = None           # mapped-ram: header and bitmap counts

    def summary(self, page_size):
        d = {'name': self.name}
        if self.known:
            d['length'] = self.length
            d['pages'] = self.length // page_size
        else:
            d['length'] = None
            d['unknown'] = True
        # A mapped-ram block's bitmap accounts for every page: present
        # (normal) or zero.
        covered = self.covered.count if self.mapped is None else \
            self.length // page_size
        d.update({'zero_pages': self.zero, 'normal_pages': self.normal,
                  'xbzrle_pages': self.xbzrle,
                  'compressed_pages': self.compressed,
                  'pages_beyond_end': self.beyond,
                  'pages_covered': covered,
                  'bytes': self.bytes})
        if self.page_size is not None:
            d['page_size'] = self.page_size
        if self.addr is not None:
            d['addr'] = self.addr
        return d


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def validate_vmsd(desc, where, depth=0):
    """Check the shape of one VMSD description (recursively)."""
    if depth > MAX_DESC_DEPTH:
        raise ValueError('%s: nested too deeply' % where)
    if not isinstance(desc, dict):
        raise ValueError('%s: not an object' % where)
    fields = desc.get('fields', [])
    if not isinstance(fields, list):
        raise ValueError('%s: "fields" is not a list' % where)
    for i, fd in enumerate(fields):
        fwhere = '%s.fields[%d]' % (where, i)
        if not isinstance(fd, dict):
            raise ValueError('%s: not an object' % fwhere)
        if not isinstance(fd.get('name'), str):
            raise ValueError('%s: no "name"' % fwhere)
        if not isinstance(fd.get('type'), str):
            raise ValueError('%s: no "type"' % fwhere)
        size = fd.get('size')
        if not is_int(size) or size < 0:
            raise ValueError('%s: bad "size"' % fwhere)
        alen = fd.get('array_len')
        if alen is not None and (not is_int(alen) or not
                                 0 <= alen <= MAX_ARRAY_LEN):
            raise ValueError('%s: bad "array_len"' % fwhere)
        idx = fd.get('index')
        if idx is not None and not is_int(idx):
            raise ValueError('%s: bad "index"' % fwhere)
        if fd['type'] == 'struct':
            if 'struct' not in fd:
                raise ValueError('%s: struct without "struct"' % fwhere)
            validate_vmsd(fd['struct'], fwhere, depth + 1)
        elif fd['type'] in ('tmp', 'vstruct'):
            validate_vmsd(fd, fwhere, depth + 1)
    subs = desc.get('subsections', [])
    if not isinstance(subs, list):
        raise ValueError('%s: "subsections" is not a list' % where)
    for i, sd in enumerate(subs):
        swhere = '%s.subsections[%d]' % (where, i)
        if not isinstance(sd, dict) or not isinstance(sd.get('vmsd_name'),
                                                      str):
            raise ValueError('%s: no "vmsd_name"' % swhere)
        validate_vmsd(sd, swhere, depth + 1)


def validate_vmdesc(vmdesc):
    if not isinstance(vmdesc, dict):
        raise ValueError('not an object')
    ps = vmdesc.get('page_size', DEFAULT_PAGE_SIZE)
    if not is_int(ps) or ps < 512 or ps & (ps - 1):
        raise ValueError('bad "page_size"')
    devs = vmdesc.get('devices')
    if not isinstance(devs, list):
        raise ValueError('no "devices" list')
    for i, dev in enumerate(devs):
        where = 'devices[%d]' % i
        if not isinstance(dev, dict) or not isinstance(dev.get('name'), str):
            raise ValueError('%s: no "name"' % where)
        if not is_int(dev.get('instance_id')):
            raise ValueError('%s: no "instance_id"' % where)
        if 'version' in dev and not is_int(dev['version']):
            raise ValueError('%s: bad "version"' % where)
        validate_vmsd(dev, where)
    if 'configuration' in vmdesc:
        validate_vmsd(vmdesc['configuration'], 'configuration')


def read_mapped_ram_trailer(f, size):
    """The completion trailer a mapped-ram file ends with ("MRAMDONE", or
    "MRAMDONR" with an integrity record before it; 16 lowercase hex digits:
    the stream's start offset).  None if the file does not end in a magic;
    else a dict with "offset" (of the trailer), "raw" (its 24 bytes),
    "record" (True for MRAMDONR) and "stream_start" (None when the digits
    are garbled or name an offset that cannot hold a stream before the
    trailer)."""
    if size < MAPPED_RAM_TRAILER_SIZE:
        return None
    off = size - MAPPED_RAM_TRAILER_SIZE
    f.seek(off)
    raw = f.read(MAPPED_RAM_TRAILER_SIZE)
    if len(raw) != MAPPED_RAM_TRAILER_SIZE or \
            raw[:8] not in (MAPPED_RAM_TRAILER_MAGIC, MAPPED_RAM_TRAILER_MAGIC_RECORD):
        return None
    digits = raw[len(MAPPED_RAM_TRAILER_MAGIC):]
    start = None
    if all(c in b'0123456789abcdef' for c in digits):
        start = int(digits, 16)
        if start + 8 > off:             # not even a header before it
            start = None
    return {'offset': off, 'raw': raw, 'stream_start': start,
            'record': raw[:8] == MAPPED_RAM_TRAILER_MAGIC_RECORD}


def locate_vmdesc(f, size, also_end=None):
    """Find the vmdesc record (0x00 EOF, 0x06, be32 length, JSON) near the
    end of the file.  Returns ((offset of the 0x06 byte, JSON bytes, parsed
    object) or None, a note saying why nothing usable was found).

    The JSON text never contains a NUL or a 0x06 byte, so a candidate is
    the two bytes 00 06 followed by a length that keeps the record inside
    the file, a '{' right after the length and a '}' as its last byte.
    Candidates are tried from the end of the file backwards; one that ends
    exactly at the end of the file, or at also_end (where a mapped-ram
    file's completion trailer starts), is preferred."""
    ends = {size} if also_end is None else {size, also_end}
    start = max(0, size - VMDESC_WINDOW)
    f.seek(start)
    tail = f.read(size - start)
    found = []
    problem = None
    tries = 0
    hi = len(tail)
    while tries < VMDESC_MAX_PARSE_TRIES:
        p = tail.rfind(b'\x00\x06', 0, hi)
        if p < 0:
            break
        hi = p + 1
        q6 = p + 1                              # the 0x06 byte
        if q6 + 5 > len(tail) or start + p < 8:
            continue
        length = int.from_bytes(tail[q6 + 1:q6 + 5], 'big')
        end = q6 + 5 + length
        if length < 2 or end > len(tail):
            continue
        if tail[q6 + 5] != 0x7b or tail[end - 1] != 0x7d:   # '{' ... '}'
            continue
        tries += 1
        raw = tail[q6 + 5:end]
        try:
            obj = json.loads(raw.decode('utf-8'))
        except (ValueError, RecursionError) as e:
            problem = problem or ('the vmdesc at 0x%x is not valid JSON: %s'
                                  % (start + q6, e))
            continue
        try:
            validate_vmdesc(obj)
        except ValueError as e:
            problem = problem or ('the vmdesc at 0x%x is malformed: %s'
                                  % (start + q6, e))
            continue
        found.append((start + q6, raw, obj))
        if start + end in ends:
            break
    if not found:
        return None, problem or ('no vmdesc record found in the last %d MiB '
                                 'of the file' % (VMDESC_WINDOW >> 20))
    for cand in found:
        if cand[0] + 5 + len(cand[1]) in ends:
            return cand, None
    return found[0], None


def xbzrle_apply(page, enc):
    """Apply an XBZRLE delta to page (a bytearray) in place.

    The encoding alternates a zero run (bytes unchanged) and a non-zero
    run (count, then that many new bytes); both counts are ULEB128 of at
    most two bytes.  Returns False if the encoding is malformed."""
    i = 0
    d = 0
    n = len(enc)
    first = True
    while i < n:
        for run in (0, 1):
            if n - i < 2:
                return False
            count = enc[i]
            if count & 0x80:
                if enc[i + 1] & 0x80:
                    return False
                count = (count & 0x7f) | (enc[i + 1] << 7)
                i += 2
            else:
                i += 1
            if run == 0:
                if count == 0 and not first:
                    return False
                first = False
                d += count
                if d > len(page):
                    return False
            else:
                if count == 0 or d + count > len(page) or i + count > n:
                    return False
                page[d:d + count] = enc[i:i + count]
                d += count
                i += count
    return True


def safe_filename(name):
    s = name.replace('/', '_').replace('\0', '_')
    if s in ('', '.', '..'):
        s = '_' + s
    return s + '.bin'


class Section:
    def __init__(self, sid, idstr, instance_id, version, iterative, offset):
        self.id = sid
        self.idstr = idstr
        self.instance_id = instance_id
        self.version = version
        self.iterative = iterative
        self.offset = offset
        self.counts = {'start': 0, 'part': 0, 'end': 0, 'full': 0}
        self.bytes = 0

    def summary(self):
        d = {'id': self.id, 'idstr': self.idstr,
             'instance_id': self.instance_id, 'version': self.version,
             'type': 'iterative' if self.iterative else 'full',
             'offset': self.offset, 'bytes': self.bytes}
        if self.iterative:
            d.update({k: self.counts[k] for k in ('start', 'part', 'end')})
        return d
