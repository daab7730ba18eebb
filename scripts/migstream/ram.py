# SPDX-License-Identifier: GPL-2.0-or-later
"""The "ram" section of a migration stream, for analyze-migration.py's
Analyzer: page records (ZERO, PAGE, XBZRLE, compressed, MULTIFD_FLUSH),
the block list, and the optional dump of guest memory to files."""

import os
import zlib

from migstream.format import (
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
            left -= length

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
        d['chunks'] = self.ram_chunks
        d['multifd_flushes'] = self.ram_flushes
        d['bytes'] = self.ram_bytes
        return d
