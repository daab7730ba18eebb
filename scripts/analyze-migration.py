#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
analyze-migration.py: decode a QEMU-format migration stream file.

    analyze-migration.py -f FILE [-d state|desc|summary|records] [-m] [-x]
                         [--dump-memory DIR] [--strict]

QEMU's own analyze-migration.py takes -f, -d state|desc (state by
default), -m and -x; those keep their meaning here, so a QEMU user's
command lines work unchanged.  summary and records are ours.

Reads a precopy or background-snapshot stream as written by QEMU (7.2 and
later) or by this project's qemu-system-x86_64: the QEVM header, the
configuration section, START/PART/END/FULL sections with their footers,
COMMAND records, EOF and the trailing JSON description ("vmdesc").  The
"ram" section is decoded page by page; every other section is a device
whose layout is known only from the vmdesc, so the vmdesc is located at
the end of the file before the stream is read.  The file is streamed, never
read whole, so multi-GiB streams are fine.

A "mapped-ram" file (QEMU 9.0's layout: the capability is listed in the
configuration section) has no page records: each block of the ram
section's block list is followed by a header giving the file offsets of a
bitmap of the pages present and of the pages themselves, in place; the
stream goes on after the block's pages.  This project's binary ends such a
file with a completion trailer ("MRAMDONE", or "MRAMDONR" with an integrity
record before it, and the stream's start offset in 16 hex digits) after the
vmdesc; a file without one is incomplete.

Output is one JSON document on stdout; errors go to stderr as
"analyze-migration.py: error: WHAT at offset 0xPOS" with exit status 1.
Standard library only.
"""

import argparse
import json
import math
import os
import struct
import sys
import tempfile

from migstream.format import (
    CMD_PACKAGED, CMD_POSTCOPY_ADVISE, COMMAND_NAMES, DEFAULT_PAGE_SIZE, FILE_MAGIC, FILE_VERSION,
    FILE_VERSION_OBSOLETE, INT_TYPE_RE, RAM_SECTION_VERSION, REC_COMMAND,
    REC_CONFIG, REC_END, REC_EOF, REC_FOOTER, REC_FULL, REC_KIND, REC_PART, REC_START,
    REC_SUBSECTION, REC_VMDESC, VMDESC_WINDOW)
from migstream.reader import (
    PROG, Reader, Section, StreamError, locate_vmdesc, oneline, q, read_mapped_ram_trailer, text,
    validate_vmdesc)
from migstream.ram import RamParser
from migstream import integrity
from migstream.output import emit, make_dir, ram_pages, report, write_json


class Analyzer(RamParser):
    def __init__(self, f, size, dump_dir=None, want_records=False):
        self.f = f
        self.size = size
        self.r = None
        self.dump_dir = dump_dir
        self.want_records = want_records

        self.header = None
        self.config = None
        self.vmdesc = None
        self.vmdesc_offset = None
        self.vmdesc_raw = None
        self.vmdesc_problem = None
        self.device_desc = {}
        self.page_size = DEFAULT_PAGE_SIZE
        self.page_size_source = 'default'

        self.sections = {}               # id -> Section
        self.section_order = []
        self.records = []
        self.commands = []
        self.devices = []                # summaries in stream order
        self.state = {}                  # "idstr (instance)" -> state
        self.footers = None              # unknown until the first section
        self.postcopy_advised = False
        self.ignore_shared = False
        self.mapped_ram = False          # the capability is in the stream
        self.trailer = None              # read_mapped_ram_trailer()
        self.stream_start = 0            # file offset of the QEVM header
        self.mapped_problem = None       # StreamError: bad or no trailer
        self.integrity = None            # integrity.read_record(): dict, str (damaged), None

        self.ram_section = None
        self.ram_total = None
        self.blocks = {}
        self.block_order = []
        self.last_block = None
        self.ram_chunks = 0
        self.ram_flushes = 0
        self.ram_bytes = 0

        self.device_desc_used = False
        self.both_array_keys = False
        self.eof_offset = None
        self.vmdesc_in_stream = False
        self.stream_end = None
        self.trailing = 0
        self.errors = []                 # StreamError, non-fatal
        self.warnings = []
        self.fatal = None

    # -- helpers -----------------------------------------------------------

    def soft_error(self, what, offset):
        self.errors.append(StreamError(what, offset))

    def warn(self, what):
        self.warnings.append(what)

    # -- the vmdesc --------------------------------------------------------

    def load_vmdesc(self):
        end = self.trailer['offset'] if self.trailer is not None else None
        if isinstance(self.integrity, dict):
            end = self.integrity['offset']
        found, self.vmdesc_problem = locate_vmdesc(self.f, self.size, end)
        if found is None:
            return
        self.vmdesc_offset, self.vmdesc_raw, self.vmdesc = found
        for dev in self.vmdesc['devices']:
            self.device_desc[(dev['name'], dev['instance_id'])] = dev
        if 'page_size' in self.vmdesc:
            self.page_size = self.vmdesc['page_size']
            self.page_size_source = 'vmdesc'

    # -- top level ---------------------------------------------------------

    def find_start(self):
        """Where the stream starts: at 0, unless the file ends in a
        mapped-ram completion trailer naming another offset that holds a
        QEVM header (a file:PATH,offset=N migration)."""
        self.trailer = read_mapped_ram_trailer(self.f, self.size)
        start = self.trailer['stream_start'] if self.trailer else None
        if start:
            self.f.seek(start)
            if self.f.read(4) == FILE_MAGIC.to_bytes(4, 'big'):
                self.stream_start = start
        self.r = Reader(self.f, self.size, self.stream_start)

    def parse_header(self):
        r = self.r
        base = self.stream_start
        magic = r.be32('file magic')
        if magic != FILE_MAGIC:
            raise StreamError('bad magic 0x%08x (expected 0x%08x "QEVM")'
                              % (magic, FILE_MAGIC), base)
        version = r.be32('file version')
        if version == FILE_VERSION_OBSOLETE:
            raise StreamError('stream version 2 is obsolete and not '
                              'supported', base + 4)
        if version != FILE_VERSION:
            raise StreamError('unsupported stream version %d (expected %d)'
                              % (version, FILE_VERSION), base + 4)
        self.header = {'magic': '0x%08x' % magic, 'version': version}
        if base:
            self.header['offset'] = base

    def run(self):
        self.find_start()
        self.parse_header()
        self.load_vmdesc()
        if self.r.peek(1) == bytes([REC_CONFIG]):
            self.parse_configuration()
        try:
            self.parse_records()
        except StreamError:
            if self.mapped_problem is not None:
                self.errors.append(self.mapped_problem)
            raise
        if self.mapped_problem is not None:
            raise self.mapped_problem

    def parse_records(self):
        r = self.r
        while True:
            if r.at_end():
                self.stream_end = r.tell()
                self.trailing = r.size - self.stream_end
                return
            off = r.tell()
            rtype = r.u8('record type')
            if rtype == REC_EOF:
                self.eof_offset = off
                self.add_record(off, 'eof')
                self.parse_after_eof()
                return
            if rtype in (REC_START, REC_FULL):
                self.parse_section_start_full(rtype, off)
            elif rtype in (REC_PART, REC_END):
                self.parse_section_part_end(rtype, off)
            elif rtype == REC_COMMAND:
                self.parse_command(off)
            elif rtype == REC_VMDESC:
                raise StreamError('vmdesc record (0x06) before EOF', off)
            elif rtype == REC_CONFIG:
                raise StreamError('configuration section in the middle of '
                                  'the stream', off)
            elif rtype == REC_FOOTER:
                raise StreamError('section footer outside a section', off)
            elif rtype == REC_SUBSECTION:
                raise StreamError('subsection outside a device section', off)
            else:
                raise StreamError('unknown record type 0x%02x' % rtype, off)

    def add_record(self, off, kind, sec=None, nbytes=None, **extra):
        if not self.want_records:
            return
        rec = {'offset': off, 'type': kind}
        if sec is not None:
            rec.update({'id': sec.id, 'idstr': sec.idstr,
                        'instance_id': sec.instance_id})
        if nbytes is not None:
            rec['bytes'] = nbytes
        rec.update(extra)
        self.records.append(rec)

    # -- configuration -----------------------------------------------------

    def parse_configuration(self):
        r = self.r
        off = r.tell()
        r.u8('configuration record')
        conf = {'offset': off}
        desc = self.vmdesc.get('configuration') if self.vmdesc else None
        if desc is not None:
            state = self.parse_vmsd(desc, 'configuration')
            name = state.get('name')
            if isinstance(name, str):
                try:
                    name = text(bytes.fromhex(name))
                except ValueError:
                    pass
            conf['machine'] = name
            conf['state'] = state
            caps = state.get('configuration/capabilities', {})
            capabilities = caps.get('capabilities', []) \
                if isinstance(caps, dict) else []
            if isinstance(capabilities, str):
                capabilities = [capabilities]
            conf['capabilities'] = [c for c in capabilities
                                    if isinstance(c, str)]
        else:
            n = r.be32('machine type length')
            if n > 4096:
                raise StreamError('implausible machine type length %d' % n,
                                  off + 1)
            conf['machine'] = text(r.read(n, 'machine type name'))
            while r.peek(1) == bytes([REC_SUBSECTION]):
                self.parse_config_subsection(conf)
        caps = conf.get('capabilities', [])
        if 'mapped-ram' in caps:
            self.mapped_ram = True
            self.check_trailer()
        self.ignore_shared = 'x-ignore-shared' in caps
        self.config = conf

    def check_trailer(self):
        """A mapped-ram stream: its file must end in our completion trailer,
        which must name this stream's start.  A problem is reported once
        the rest of the stream has been read (with the rest, if the stream
        is bad too); with a good trailer the stream ends before it."""
        t = self.trailer
        if t is None:
            self.mapped_problem = StreamError(
                'incomplete mapped-ram file: no completion marker (the file '
                'does not end in "MRAMDONE" or "MRAMDONR" and 16 hex digits)', self.size)
        elif t['stream_start'] is None:
            self.mapped_problem = StreamError(
                'incomplete mapped-ram file: no completion marker (garbled '
                'trailer %s)' % q(t['raw'].decode('latin-1')), t['offset'])
        elif t['stream_start'] != self.stream_start:
            self.mapped_problem = StreamError(
                'the mapped-ram completion marker names a stream at 0x%x, '
                'not this one at 0x%x' % (t['stream_start'],
                                          self.stream_start), t['offset'])
        else:
            # x-mapped-ram-integrity: the record lies between the stream and the trailer.
            self.integrity = integrity.read_record(self.f, t['offset'])
            if isinstance(self.integrity, dict):
                self.r.size = self.integrity['offset']
            else:
                self.r.size = t['offset']
                if self.integrity is not None:
                    self.warn('the mapped-ram integrity record is damaged: %s'
                              % self.integrity)
                elif t['record']:
                    self.warn('the mapped-ram trailer (MRAMDONR) says an integrity '
                              'record precedes it, but there is none')

    def parse_config_subsection(self, conf):
        r = self.r
        off = r.tell()
        r.u8('subsection marker')
        name = r.counted_str('subsection name')
        version = r.be32('subsection version')
        if name == 'configuration/target-page-bits':
            bits = r.be32('target page bits')
            if not 9 <= bits <= 30:
                raise StreamError('implausible target page bits %d' % bits,
                                  off)
            conf['target_page_bits'] = bits
            if self.page_size_source == 'vmdesc':
                if self.page_size != 1 << bits:
                    self.warn('vmdesc page_size %d disagrees with target '
                              'page bits %d' % (self.page_size, bits))
            else:
                self.page_size = 1 << bits
                self.page_size_source = 'configuration'
        elif name == 'configuration/capabilities':
            count = r.be32('capability count')
            caps = []
            for _ in range(count):
                caps.append(r.counted_str('capability name'))
            conf['capabilities'] = caps
        elif name == 'configuration/uuid':
            conf['uuid'] = r.read(16, 'uuid').hex()
        else:
            raise StreamError('unknown configuration subsection %s '
                              '(version %d)' % (q(name), version), off)

    # -- sections ----------------------------------------------------------

    def parse_section_start_full(self, rtype, off):
        r = self.r
        kind = REC_KIND[rtype]
        sid = r.be32('section id')
        idstr = r.counted_str('section idstr')
        instance_id = r.be32('instance id')
        version = r.be32('version id')
        iterative = rtype == REC_START
        sec = self.sections.get(sid)
        if sec is not None:
            if (sec.idstr, sec.instance_id) != (idstr, instance_id) or \
                    sec.iterative != iterative:
                raise StreamError('section id %d reused for %s (was %s)'
                                  % (sid, q(idstr), q(sec.idstr)), off)
        else:
            sec = Section(sid, idstr, instance_id, version, iterative, off)
            self.sections[sid] = sec
            self.section_order.append(sec)
        sec.counts[kind] += 1
        start = r.tell()
        if iterative:
            if (idstr, instance_id) != ('ram', 0):
                raise StreamError('iterative section %s (instance %d) has '
                                  'no known layout' % (q(idstr), instance_id),
                                  off)
            if version != RAM_SECTION_VERSION:
                raise StreamError('unsupported ram section version %d '
                                  '(expected %d)'
                                  % (version, RAM_SECTION_VERSION), off)
            if self.ram_section is not None and self.ram_section is not sec:
                raise StreamError('second ram section', off)
            self.ram_section = sec
            self.parse_ram_chunk()
        else:
            if idstr == 'ram':
                raise StreamError('ram sent as a FULL section', off)
            self.parse_device(sec, off)
        nbytes = r.tell() - start
        sec.bytes += nbytes
        self.add_record(off, kind, sec, nbytes)
        self.parse_footer(sec)

    def parse_section_part_end(self, rtype, off):
        r = self.r
        kind = REC_KIND[rtype]
        sid = r.be32('section id')
        sec = self.sections.get(sid)
        if sec is None:
            raise StreamError('%s record for unknown section id %d'
                              % (kind.upper(), sid), off)
        if not sec.iterative:
            raise StreamError('%s record for non-iterative section %s'
                              % (kind.upper(), q(sec.idstr)), off)
        sec.counts[kind] += 1
        start = r.tell()
        self.parse_ram_chunk()
        nbytes = r.tell() - start
        sec.bytes += nbytes
        self.add_record(off, kind, sec, nbytes)
        self.parse_footer(sec)

    def parse_footer(self, sec):
        r = self.r
        off = r.tell()
        if r.peek(1) == bytes([REC_FOOTER]):
            if self.footers is False:
                raise StreamError('section footer in a stream whose first '
                                  'section had none', off)
            self.footers = True
            r.u8('footer')
            sid = r.be32('footer section id')
            if sid != sec.id:
                raise StreamError('section footer names section %d, '
                                  'expected %d (%s)'
                                  % (sid, sec.id, q(sec.idstr)), off)
        elif self.footers:
            raise StreamError('missing section footer after section %d '
                              '(%s)' % (sec.id, q(sec.idstr)), off)
        else:
            self.footers = False

    def parse_command(self, off):
        r = self.r
        cmd = r.be16('command')
        length = r.be16('command length')
        data = r.read(length, 'command data')
        name = COMMAND_NAMES.get(cmd, 'UNKNOWN')
        entry = {'offset': off, 'cmd': cmd, 'name': name, 'len': length}
        if cmd == CMD_POSTCOPY_ADVISE:
            self.postcopy_advised = True
        elif cmd == CMD_PACKAGED:
            if length != 4:
                raise StreamError('PACKAGED command with length %d' % length,
                                  off)
            # The package (more records) follows inline; it is parsed as
            # part of the ordinary record sequence.
            entry['package_bytes'] = int.from_bytes(data, 'big')
        self.commands.append(entry)
        self.add_record(off, 'command', None, length, cmd=cmd, name=name)

    def parse_after_eof(self):
        r = self.r
        eof_end = r.tell()
        if r.peek(1) == bytes([REC_VMDESC]):
            off = r.tell()
            r.u8('vmdesc record')
            length = r.be32('vmdesc length')
            if length > r.remaining():
                raise StreamError('vmdesc length %d runs past the end of the '
                                  'file' % length, off)
            if self.vmdesc_offset == off:
                r.skip(length, 'vmdesc')
            elif length > VMDESC_WINDOW:
                raise StreamError('vmdesc of %d bytes is too large' % length,
                                  off)
            else:
                raw = r.read(length, 'vmdesc')
                if self.vmdesc is not None and raw != self.vmdesc_raw:
                    raise StreamError('the vmdesc after EOF differs from the '
                                      'one found at 0x%x (used to decode '
                                      'devices)' % self.vmdesc_offset, off)
                if self.vmdesc is None:
                    try:
                        obj = json.loads(raw.decode('utf-8'))
                        validate_vmdesc(obj)
                    except (ValueError, RecursionError) as e:
                        raise StreamError('malformed vmdesc: %s' % e, off)
                    self.vmdesc, self.vmdesc_raw = obj, raw
                self.vmdesc_offset = off
            self.vmdesc_in_stream = True
            self.add_record(off, 'vmdesc', None, length)
        elif self.vmdesc is not None:
            if self.device_desc_used:
                raise StreamError('no vmdesc after EOF, yet one was found at '
                                  '0x%x and used to decode devices'
                                  % self.vmdesc_offset, eof_end)
            # What was found lies in the trailing bytes: not ours.
            self.vmdesc = self.vmdesc_raw = self.vmdesc_offset = None
        self.stream_end = r.tell()
        self.trailing = r.size - self.stream_end

    # -- devices -----------------------------------------------------------

    def parse_device(self, sec, off):
        key = (sec.idstr, sec.instance_id)
        if self.vmdesc is None:
            raise StreamError('device section %s (instance %d) cannot be '
                              'decoded without the vmdesc (%s)'
                              % (q(sec.idstr), sec.instance_id,
                                 self.vmdesc_problem), off)
        desc = self.device_desc.get(key)
        if desc is None:
            raise StreamError('device section %s (instance %d) is not '
                              'described in the vmdesc'
                              % (q(sec.idstr), sec.instance_id), off)
        self.device_desc_used = True
        if 'version' in desc and desc['version'] != sec.version:
            self.soft_error('device %s has version %d in the stream but %d '
                            'in the vmdesc' % (q(sec.idstr), sec.version,
                                               desc['version']), off)
        start = self.r.tell()
        state = self.parse_vmsd(desc, sec.idstr)
        name = '%s (%d)' % key
        if name in self.state:
            raise StreamError('device %s sent twice' % q(name), off)
        self.state[name] = state
        self.devices.append({'name': sec.idstr,
                             'instance_id': sec.instance_id,
                             'version': sec.version,
                             'vmsd_name': desc.get('vmsd_name'),
                             'section_id': sec.id, 'offset': off,
                             'bytes': self.r.tell() - start})

    def parse_vmsd(self, desc, path):
        """Decode one VMState (fields, then the subsections the vmdesc
        lists, in order) into a dict."""
        r = self.r
        out = {}
        arrays = set()
        for fd in desc.get('fields', []):
            name = fd['name']
            fpath = path + '.' + name
            # QEMU writes "array_len" (one entry standing for every element)
            # or "index" (one entry per element), never both; an entry with
            # both is taken to be the single element it is indexed as.
            if 'index' in fd:
                count = 1
                if 'array_len' in fd and not self.both_array_keys:
                    self.both_array_keys = True
                    self.warn('vmdesc field %s has both "index" and '
                              '"array_len" (QEMU writes one or the other); '
                              'taken as one element' % q(fpath))
            else:
                count = fd.get('array_len', 1)
            if count > 1 and count * max(fd['size'], 1) > \
                    r.remaining() + fd['size']:
                raise StreamError('field %s: %d elements of %d bytes run '
                                  'past the end of the file'
                                  % (q(fpath), count, fd['size']), r.tell())
            values = []
            for i in range(count):
                start = r.tell()
                values.append(self.parse_field(fd, fpath))
                used = r.tell() - start
                if i == 0 and used != fd['size']:
                    raise StreamError('field %s: the vmdesc says %d bytes '
                                      'but %d were decoded'
                                      % (q(fpath), fd['size'], used), start)
            if name in out:
                if name not in arrays:
                    out[name] = [out[name]]
                    arrays.add(name)
                out[name].extend(values)
            elif 'array_len' in fd or 'index' in fd:
                out[name] = values
                arrays.add(name)
            else:
                out[name] = values[0]
        for sub in desc.get('subsections', []):
            off = r.tell()
            want = sub['vmsd_name']
            if r.peek(1) != bytes([REC_SUBSECTION]):
                raise StreamError('%s: expected subsection %s'
                                  % (q(path), q(want)), off)
            r.u8('subsection marker')
            name = r.counted_str('subsection name')
            if name != want:
                raise StreamError('%s: subsection %s where the vmdesc has '
                                  '%s' % (q(path), q(name), q(want)), off)
            r.be32('subsection version')
            out[name] = self.parse_vmsd(sub, name)
        return out

    def parse_field(self, fd, fpath):
        r = self.r
        ftype = fd['type']
        size = fd['size']
        if ftype == 'struct':
            return self.parse_vmsd(fd['struct'], fpath)
        if ftype in ('tmp', 'vstruct'):
            return self.parse_vmsd(fd, fpath)
        if ftype == 'capability':
            return r.counted_str('capability')
        raw = r.read(size, 'field ' + fpath)
        m = INT_TYPE_RE.match(ftype)
        if m and int(m.group(2)) == size * 8:
            return int.from_bytes(raw, 'big', signed=not m.group(1))
        if ftype == 'bool' and size == 1:
            return raw[0] != 0
        if ftype == 'timer' and size == 8:
            return int.from_bytes(raw, 'big', signed=True)
        if ftype == 'float64' and size == 8:
            v = struct.unpack('>d', raw)[0]
            return v if math.isfinite(v) else repr(v)
        if ftype == 'nullptr' and raw == b'0':
            return None
        if ftype == 'pci irq state' and size % 4 == 0:
            return [int.from_bytes(raw[i:i + 4], 'big', signed=True)
                    for i in range(0, size, 4)]
        return raw.hex()

    def close(self):
        for blk in self.block_order:
            if blk.fd is not None:
                os.close(blk.fd)
                blk.fd = None

    # -- output ------------------------------------------------------------

    def error_list(self):
        out = [{'message': e.what, 'offset': e.offset} for e in self.errors]
        if self.fatal is not None:
            out.append({'message': self.fatal.what,
                        'offset': self.fatal.offset, 'fatal': True})
        return out

    def summary(self):
        conf = None
        if self.config is not None:
            conf = {k: v for k, v in self.config.items() if k != 'state'}
        d = {'header': self.header,
             'configuration': conf,
             'sections': [s.summary() for s in self.section_order],
             'commands': self.commands,
             'ram': self.ram_summary(),
             'devices': self.devices,
             'eof': self.eof_offset is not None,
             'eof_offset': self.eof_offset,
             'vmdesc': self.vmdesc is not None,
             'vmdesc_offset': self.vmdesc_offset,
             'vmdesc_bytes': (len(self.vmdesc_raw)
                              if self.vmdesc_raw is not None else None),
             'footers': self.footers,
             'file_bytes': self.size,
             'trailing_bytes': self.trailing,
             'mapped_ram': self.mapped_ram_summary(),
             'complete': self.fatal is None,
             'errors': self.error_list(),
             'warnings': self.warnings}
        if self.vmdesc is not None:
            described = set(self.device_desc)
            sent = {(x['name'], x['instance_id']) for x in self.devices}
            missing = sorted(described - sent)
            if missing and self.fatal is None:
                d['devices_not_in_stream'] = ['%s (%d)' % k for k in missing]
        return d

    def mapped_ram_summary(self):
        if not self.mapped_ram:
            return None
        good = self.mapped_problem is None
        blocks = []
        for b in self.block_order:
            m = b.mapped
            if m is None:
                continue
            blocks.append({k: m[k] for k in (
                'name', 'pages', 'pages_present', 'pages_zero',
                'header_offset', 'page_size', 'bitmap_offset', 'bitmap_bytes',
                'pages_offset')})
        return {'complete': good,
                'stream_start': self.stream_start,
                'trailer_offset': self.trailer['offset'] if good else None,
                'integrity': self.integrity_doc(),
                'blocks': blocks,
                'pages_present': sum(b['pages_present'] for b in blocks),
                'pages_zero': sum(b['pages_zero'] for b in blocks)}

    def integrity_doc(self):
        """The record's place and size ("damaged" with why), or None without one."""
        r = self.integrity
        if r is None:
            return None
        if not isinstance(r, dict):
            return {'damaged': r}
        return {'offset': r['offset'],
                'regions': sum(len(b['region_hashes']) for b in r['blocks']),
                'region_pages': integrity.REGION_PAGES,
                'blocks': [b['name'] for b in r['blocks']]}

    def state_doc(self):
        d = {'configuration': None, 'devices': self.state}
        if self.config is not None:
            d['configuration'] = self.config.get('state') or {
                k: v for k, v in self.config.items() if k != 'offset'}
        d['complete'] = self.fatal is None
        d['errors'] = self.error_list()
        return d


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description='Decode a QEMU-format migration stream file and print '
                    'JSON on stdout.',
        epilog='''\
dump modes:
  state    decoded device state (the default, as in QEMU's analyze-
           migration.py): "idstr (instance)" -> {field: value};
           arrays are lists, buffers hex strings, structs objects,
           subsections are keyed by their name; with -m also "ram":
           each block's size and its non-zero pages
  desc     the vmdesc JSON found after EOF, pretty-printed
  summary  header, machine type, per-section record counts and bytes, RAM
           blocks with zero/normal/xbzrle/compressed page counts, pages
           beyond a block's end and distinct pages covered, devices, EOF,
           vmdesc and trailing bytes (default); for a mapped-ram file also
           "mapped_ram": the completion trailer ("complete", the
           "stream_start" it names) and per block the pages present
           (counted as normal pages) and zero (clear in the bitmap), the
           header, bitmap and pages offsets
  records  every top-level record with its offset and payload size

errors:
  Problems with the input are reported on stderr as
  "analyze-migration.py: error: WHAT at offset 0xPOS" and the exit status is
  1.  For state, summary and records the JSON document is printed anyway,
  with what was decoded up to the error, "complete": false and an "errors"
  list; desc prints nothing on error.  A page beyond its block's end or
  for an unknown block is counted and the stream read on (exit status 1
  at the end); everything else stops the analysis.

  Without --strict a stream that ends cleanly between records without an
  EOF record, or has bytes after its end, is accepted (see "eof" and
  "trailing_bytes"); with --strict both are errors.

  A mapped-ram file must end in the completion trailer naming the stream's
  start ("incomplete mapped-ram file: no completion marker" otherwise); its
  block headers are checked (version 1, the page size, the bitmap after the
  header and before the pages, the pages inside the file).

limits:
  Device sections can only be decoded with the vmdesc, which must lie in
  the last 16 MiB of the file.  RDMA and multifd side channels are not
  supported.
''')
    p.add_argument('-f', '--file', required=True,
                   help='migration stream file to read')
    p.add_argument('-d', '--dump', default='state',
                   choices=('state', 'desc', 'summary', 'records'),
                   help='what to print (default: state, as QEMU\'s)')
    p.add_argument('-m', '--memory', action='store_true',
                   help='dump RAM contents as well: with -d state, "ram" '
                        'lists each block\'s non-zero pages as '
                        '"0xOFFSET": hex of the page (final content)')
    p.add_argument('-x', '--extract', action='store_true',
                   help='write state.json and desc.json into the current '
                        'directory instead of printing')
    p.add_argument('--dump-memory', metavar='DIR',
                   help='write each RAM block\'s final content to '
                        'DIR/<block name, "/" -> "_">.bin (sparse, block '
                        'length; XBZRLE and compressed pages are decoded; '
                        'mapped-ram pages are read from their offsets)')
    p.add_argument('--strict', action='store_true',
                   help='also fail on a missing EOF or trailing bytes')
    return p.parse_args(argv)


def find_desc(f, size):
    """(vmdesc, None) or (None, error line) for the stream in @f."""
    try:
        an = Analyzer(f, size)
        an.find_start()
        an.parse_header()
        t = an.trailer
        found, problem = locate_vmdesc(
            f, size, t['offset'] if t is not None else None)
    except StreamError as e:
        return None, e.line()
    if found is None:
        return None, oneline('%s: error: %s' % (PROG, problem))
    return found[2], None


def analyze_stream(args, f, size, dump_dir):
    an = Analyzer(f, size, dump_dir=dump_dir,
                  want_records=args.dump == 'records')
    try:
        an.run()
        if args.strict:
            if an.eof_offset is None:
                raise StreamError('stream ends without EOF', an.stream_end)
            if an.trailing:
                raise StreamError('%d bytes of trailing garbage'
                                  % an.trailing, an.stream_end)
    except StreamError as e:
        an.fatal = e
    except OSError as e:
        an.fatal = StreamError('I/O error: %s' % e.strerror,
                               an.r.tell() if an.r else None)
    finally:
        an.close()
    return an


def run(args):
    try:
        f = open(args.file, 'rb')
    except OSError as e:
        print('%s: error: cannot open %s: %s' % (PROG, args.file, e.strerror),
              file=sys.stderr)
        return 1
    with f, tempfile.TemporaryDirectory(prefix='analyze-migration.') as tmp:
        size = os.fstat(f.fileno()).st_size
        if args.dump == 'desc' and not args.extract:
            desc, problem = find_desc(f, size)
            if desc is None:
                print(problem, file=sys.stderr)
                return 1
            emit(desc)
            return 0

        dump_dir = args.dump_memory
        if dump_dir and not make_dir(dump_dir):
            return 1
        if args.memory and not dump_dir:
            dump_dir = tmp
        an = analyze_stream(args, f, size, dump_dir)
        state = an.state_doc()
        if args.memory:
            state['ram'] = ram_pages(an.block_order)

        if args.extract:
            # QEMU's -x: the state and the description as two files.
            desc, problem = find_desc(f, size)
            if not write_json('state.json', state):
                return 1
            if desc is None:
                print(problem, file=sys.stderr)
                return 1
            if not write_json('desc.json', desc):
                return 1
        elif args.dump == 'state':
            emit(state)
        elif args.dump == 'records':
            emit({'records': an.records, 'complete': an.fatal is None,
                  'errors': an.error_list()})
        else:
            emit(an.summary())
    return report(an)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except BrokenPipeError:
        # Output cut short (e.g. piped into head): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as e:      # never a traceback on bad input
        if os.environ.get('ANALYZE_MIGRATION_DEBUG'):
            raise
        print('%s: error: internal error (%s: %s); set '
              'ANALYZE_MIGRATION_DEBUG=1 for a traceback'
              % (PROG, type(e).__name__, e), file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
