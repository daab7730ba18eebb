# SPDX-License-Identifier: GPL-2.0-or-later
"""The "ram" section of a migration stream, for analyze-migration.py's
Analyzer: page records (ZERO, PAGE, XBZRLE, compressed, MULTIFD_FLUSH),
the block list (with mapped-ram's per-block headers and bitmaps), and the
optional dump of guest memory to files."""

import os
import zlib

from migstream.format import (
    MAPPED_RAM_ALIGNMENT, MAPPED_RAM_BITMAP_WORD, MAPPED_RAM_HDR_SIZE, MAPPED_RAM_HDR_VERSION,
    RAM_COMPRESS, RAM_CONTINUE, RAM_EOS, RAM_HOOK, RAM_KNOWN_FLAGS, RAM_MEM_SIZE,
    RAM_MULTIFD_FLUSH, RAM_PAGE, RAM_XBZRLE, RAM_ZERO, XBZRLE_ENCODING)
from migstream.reader import PageSet, RamBlock, StreamError, q, safe_filename, xbzrle_apply


class RamParser:
    """Mixed into the Analyzer: uses its reader (self.r), options and error list."""

    def parse_ram_chunk(self):
        """One chunk of the ram section: records up to and including EOS."""
        r = self.r
        ps = self.page_size
        mask = ps - 1
        start = r.tell()
        dumping = self.dump_dir is not None
        while True:
            hoff = r.tell()
            hdr = r.be64('RAM record header')
            flags = hdr & mask
            addr = hdr & ~mask
            kind = flags & ~RAM_CONTINUE
            if kind in (RAM_PAGE, RAM_ZERO, RAM_XBZRLE, RAM_COMPRESS):
                if self.mapped_ram:
                    raise StreamError('RAM page record (flags 0x%x) in a '
                                      'mapped-ram stream, whose pages are '
                                      'in place in the file' % flags, hoff)
                if flags & RAM_CONTINUE:
                    blk = self.last_block
                    if blk is None:
                        raise StreamError('RAM page with CONTINUE but no '
                                          'previous block', hoff)
                else:
                    blk = self.lookup_block(r.counted_str('RAM block id'),
                                            hoff)
                    self.last_block = blk
                data = None
                if kind == RAM_PAGE:
                    if dumping:
                        data = r.read(ps, 'RAM page')
                    else:
                        r.skip(ps, 'RAM page')
                    blk.normal += 1
                elif kind == RAM_ZERO:
                    fill = r.u8('zero page fill byte')
                    blk.zero += 1
                elif kind == RAM_XBZRLE:
                    enc = r.u8('XBZRLE encoding')
                    if enc != XBZRLE_ENCODING:
                        raise StreamError('unknown XBZRLE encoding 0x%02x'
                                          % enc, hoff)
                    n = r.be16('XBZRLE length')
                    if n > ps:
                        raise StreamError('XBZRLE length %d exceeds the page '
                                          'size' % n, hoff)
                    data = r.read(n, 'XBZRLE data')
                    blk.xbzrle += 1
                else:
                    n = r.be32('compressed page length')
                    if n > ps + ps // 64 + 64:
                        raise StreamError('compressed page length %d is '
                                          'implausible' % n, hoff)
                    data = r.read(n, 'compressed page')
                    blk.compressed += 1
                blk.bytes += r.tell() - hoff
                if not blk.known:
                    continue
                if addr + ps > blk.length:
                    blk.beyond += 1
                    self.soft_error('RAM page 0x%x is beyond the end of block '
                                    '%s (length 0x%x)'
                                    % (addr, q(blk.name), blk.length), hoff)
                    continue
                pno = addr // ps
                blk.covered.add(pno)
                if dumping:
                    if kind == RAM_ZERO:
                        self.dump_fill(blk, pno, fill)
                    else:
                        self.dump_page(blk, pno, kind, data, hoff)
            elif kind == RAM_EOS:
                self.ram_chunks += 1
                break
            elif kind == RAM_MEM_SIZE:
                self.parse_ram_block_list(addr, hoff)
            elif kind == RAM_MULTIFD_FLUSH:
                self.ram_flushes += 1
            elif flags & RAM_HOOK:
                raise StreamError('RAM hook record (RDMA) cannot be analyzed',
                                  hoff)
            elif flags & ~RAM_KNOWN_FLAGS:
                raise StreamError('unknown RAM flags 0x%x'
                                  % (flags & ~RAM_KNOWN_FLAGS), hoff)
            else:
                raise StreamError('invalid RAM flag combination 0x%x' % flags,
                                  hoff)
        self.ram_bytes += r.tell() - start

    def lookup_block(self, name, off):
        blk = self.blocks.get(name)
        if blk is None:
            self.soft_error('RAM page for unknown block %s' % q(name), off)
            blk = RamBlock(name, 0, known=False)
            self.blocks[name] = blk
            self.block_order.append(blk)
        return blk

    def parse_ram_block_list(self, total, off):
        r = self.r
        first = self.ram_total is None
        self.ram_total = total
        left = total
        seen = set()
        while left > 0:
            boff = r.tell()
            name = r.counted_str('RAM block id')
            length = r.be64('RAM block length')
            if length > left:
                raise StreamError('RAM block %s (0x%x bytes) overruns the '
                                  'announced total 0x%x'
                                  % (q(name), length, total), boff)
            if name in seen:
                raise StreamError('RAM block %s listed twice' % q(name), boff)
            seen.add(name)
            psize = None
            if self.postcopy_advised:
                # Only present for blocks whose page size differs from the
                # host's; recognised as a power of two >= 4 KiB (the next
                # item is otherwise a block id or a RAM header).
                peek = r.peek(8)
                if len(peek) == 8:
                    v = int.from_bytes(peek, 'big')
                    if v >= 4096 and v & (v - 1) == 0 and v <= 1 << 40:
                        psize = v
                        r.skip(8, 'RAM block page size')
            addr = None
            if self.ignore_shared:
                addr = r.be64('RAM block address')
            mapped = None
            if self.mapped_ram:
                mapped = self.parse_mapped_ram_header(name, length)
            blk = self.blocks.get(name)
            if blk is None or not blk.known:
                if blk is not None:
                    self.block_order.remove(blk)
                if not first and blk is None:
                    self.warn('RAM block %s first listed by a later '
                              'MEM_SIZE record' % q(name))
                blk = RamBlock(name, length)
                self.blocks[name] = blk
                self.block_order.append(blk)
                if self.dump_dir is not None:
                    self.dump_open(blk, boff)
            elif blk.length != length:
                self.warn('RAM block %s resized from 0x%x to 0x%x'
                          % (q(name), blk.length, length))
                blk.length = length
                if blk.fd is not None:
                    os.ftruncate(blk.fd, length)
            blk.page_size = psize
            blk.addr = addr
            if mapped is not None:
                self.mapped_ram_block(blk, mapped)
            left -= length

    # -- mapped-ram --------------------------------------------------------

    def parse_mapped_ram_header(self, name, length):
        """The header after a block list entry of a mapped-ram stream,
        checked as hostile input; returns it as a dict."""
        r = self.r
        ps = self.page_size
        hoff = r.tell()
        version = r.be32('mapped-ram header version')
        page_size = r.be64('mapped-ram page size')
        bitmap_offset = r.be64('mapped-ram bitmap offset')
        pages_offset = r.be64('mapped-ram pages offset')
        hend = r.tell()
        end = r.size                    # the trailer, if any, is not ours
        npages = length // ps
        bitmap_bytes = -(-npages // 64) * MAPPED_RAM_BITMAP_WORD
        if version != MAPPED_RAM_HDR_VERSION:
            raise StreamError('mapped-ram block %s: unsupported header '
                              'version %d (expected %d)'
                              % (q(name), version, MAPPED_RAM_HDR_VERSION),
                              hoff)
        if page_size != ps:
            raise StreamError('mapped-ram block %s has pages of %d bytes, not '
                              '%d (the page size from the %s)'
                              % (q(name), page_size, ps,
                                 self.page_size_source), hoff + 4)
        if bitmap_offset < hend:
            raise StreamError('mapped-ram block %s: its bitmap at 0x%x starts '
                              'before the end of its header (0x%x)'
                              % (q(name), bitmap_offset, hend), hoff + 12)
        if pages_offset + length > end:
            raise StreamError('mapped-ram block %s: its 0x%x bytes of pages at '
                              '0x%x go past the end of the file at 0x%x'
                              % (q(name), length, pages_offset, end),
                              hoff + 20)
        if pages_offset % ps:
            raise StreamError('mapped-ram block %s: its pages at 0x%x are not '
                              'aligned to the %d-byte page size'
                              % (q(name), pages_offset, ps), hoff + 20)
        if bitmap_offset + bitmap_bytes > pages_offset:
            raise StreamError('mapped-ram block %s: its bitmap (%d bytes at '
                              '0x%x) is not before its pages at 0x%x'
                              % (q(name), bitmap_bytes, bitmap_offset,
                                 pages_offset), hoff + 12)
        if pages_offset % MAPPED_RAM_ALIGNMENT:
            self.warn('mapped-ram block %s: its pages at 0x%x are not on a '
                      '1 MiB boundary (QEMU\'s writer always aligns them)'
                      % (q(name), pages_offset))
        return {'name': name, 'header_offset': hoff, 'version': version,
                'page_size': page_size, 'bitmap_offset': bitmap_offset,
                'bitmap_bytes': bitmap_bytes, 'pages_offset': pages_offset,
                'pages': npages, 'next_offset': pages_offset + length}

    def mapped_ram_block(self, blk, m):
        """Count (and dump) a mapped-ram block's pages from its bitmap, then
        go on where the writer put the rest of the block list."""
        ps = self.page_size
        fd = self.f.fileno()
        npages = m['pages']
        dumping = blk.fd is not None
        if dumping and blk.mapped is not None:
            # Listed again: start its dump afresh.
            os.ftruncate(blk.fd, 0)
            os.ftruncate(blk.fd, blk.length)
        present = 0
        stray = False
        page = 0
        off = m['bitmap_offset']
        left = m['bitmap_bytes']
        chunk = 1 << 16                 # bytes of bitmap: 512Ki pages
        while left:
            n = min(chunk, left)
            data = self.pread(fd, n, off, 'mapped-ram bitmap of block %s'
                              % q(blk.name))
            bits = int.from_bytes(data, 'little')
            last = page + n * 8
            if last > npages:
                # Bits past the last page (in the last word) mean nothing.
                keep = npages - page
                if bits >> keep:
                    stray = True
                bits &= (1 << keep) - 1
            present += bits.bit_count()
            if dumping and bits:
                self.dump_mapped_runs(blk, m, page, data, min(last, npages))
            page = last
            off += n
            left -= n
        if stray:
            self.warn('mapped-ram block %s: bits set in its bitmap past its '
                      'last page' % q(blk.name))
        blk.mapped = m
        m['pages_present'] = present
        m['pages_zero'] = npages - present
        blk.normal = present
        blk.zero = npages - present
        blk.bytes = MAPPED_RAM_HDR_SIZE + m['bitmap_bytes'] + present * ps
        self.r.seek(m['next_offset'], 'the block list after mapped-ram '
                    'block %s' % q(blk.name))

    def dump_mapped_runs(self, blk, m, first, bitmap, limit):
        """Copy the present pages named by bitmap (page first at bit 0 of
        its first byte) below page limit into blk's dump."""
        run = None
        for i, byte in enumerate(bitmap):
            base = first + i * 8
            if base >= limit:
                break
            if byte == (0xff if run is not None else 0):
                continue
            for b in range(8):
                pno = base + b
                if pno < limit and byte >> b & 1:
                    if run is None:
                        run = pno
                elif run is not None:
                    self.dump_mapped_copy(blk, m, run, pno - run)
                    run = None
        if run is not None:
            self.dump_mapped_copy(blk, m, run, limit - run)

    def dump_mapped_copy(self, blk, m, pno, count):
        ps = self.page_size
        fd = self.f.fileno()
        step = 256                      # pages per read: 1 MiB of 4 KiB
        while count:
            n = min(step, count)
            src = m['pages_offset'] + pno * ps
            data = self.pread(fd, n * ps, src, 'mapped-ram pages of block %s'
                              % q(blk.name))
            os.pwrite(blk.fd, data, pno * ps)
            pno += n
            count -= n

    def pread(self, fd, n, off, what):
        data = os.pread(fd, n, off)
        if len(data) != n:
            raise StreamError('file truncated: %s needs %d bytes, only %d '
                              'left' % (what, n, len(data)), off)
        return data

    # -- memory dump -------------------------------------------------------

    def dump_open(self, blk, off):
        path = os.path.join(self.dump_dir, safe_filename(blk.name))
        if any(b.fd is not None and b.dump_path == path
               for b in self.block_order if b is not blk):
            raise StreamError('RAM blocks with clashing file names (%s)'
                              % path, off)
        try:
            blk.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            os.ftruncate(blk.fd, blk.length)
        except OSError as e:
            raise StreamError('cannot create %s: %s' % (path, e.strerror),
                              off)
        blk.dump_path = path
        blk.nonzero = PageSet()

    def dump_fill(self, blk, pno, fill):
        if fill == 0:
            if pno in blk.nonzero:
                os.pwrite(blk.fd, bytes(self.page_size), pno * self.page_size)
                blk.nonzero.discard(pno)
        else:
            os.pwrite(blk.fd, bytes([fill]) * self.page_size,
                      pno * self.page_size)
            blk.nonzero.add(pno)

    def dump_page(self, blk, pno, kind, data, off):
        ps = self.page_size
        if kind == RAM_XBZRLE:
            page = bytearray(os.pread(blk.fd, ps, pno * ps).ljust(ps, b'\0'))
            if not xbzrle_apply(page, data):
                raise StreamError('malformed XBZRLE page', off)
            data = bytes(page)
        elif kind == RAM_COMPRESS:
            try:
                data = zlib.decompress(data)
            except zlib.error as e:
                raise StreamError('cannot inflate compressed page: %s' % e,
                                  off)
            if len(data) != ps:
                raise StreamError('compressed page inflates to %d bytes'
                                  % len(data), off)
        os.pwrite(blk.fd, data, pno * ps)
        blk.nonzero.add(pno)

    def ram_summary(self):
        if self.ram_section is None and not self.blocks:
            return None
        ps = self.page_size
        blocks = [b.summary(ps) for b in self.block_order]
        d = {'section_id': self.ram_section.id if self.ram_section else None,
             'page_size': ps, 'page_size_source': self.page_size_source,
             'total_bytes': self.ram_total,
             'total_pages': (self.ram_total // ps
                             if self.ram_total is not None else None),
             'blocks': blocks}
        for key in ('zero_pages', 'normal_pages', 'xbzrle_pages',
                    'compressed_pages', 'pages_beyond_end', 'pages_covered'):
            d[key] = sum(b[key] for b in blocks)
        if self.mapped_ram:
            d['mapped_ram'] = True
        d['chunks'] = self.ram_chunks
        d['multifd_flushes'] = self.ram_flushes
        d['bytes'] = self.ram_bytes
        return d
