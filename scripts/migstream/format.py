# SPDX-License-Identifier: GPL-2.0-or-later
"""Constants of QEMU's migration stream format (migration/stream/savevm.c, ram.c)."""

import re

FILE_MAGIC = 0x5145564d           # "QEVM"
FILE_VERSION = 3
FILE_VERSION_OBSOLETE = 2

# Record types (first byte of every top-level record).
REC_EOF = 0x00
REC_START = 0x01
REC_PART = 0x02
REC_END = 0x03
REC_FULL = 0x04
REC_SUBSECTION = 0x05
REC_VMDESC = 0x06
REC_CONFIG = 0x07
REC_COMMAND = 0x08
REC_FOOTER = 0x7e

REC_KIND = {REC_START: 'start', REC_PART: 'part', REC_END: 'end',
            REC_FULL: 'full'}

COMMAND_NAMES = {
    0: 'INVALID', 1: 'OPEN_RETURN_PATH', 2: 'PING', 3: 'POSTCOPY_ADVISE',
    4: 'POSTCOPY_LISTEN', 5: 'POSTCOPY_RUN', 6: 'POSTCOPY_RAM_DISCARD',
    7: 'PACKAGED', 8: 'ENABLE_COLO', 9: 'POSTCOPY_RESUME',
    10: 'RECV_BITMAP', 11: 'SWITCHOVER_START',
}
CMD_POSTCOPY_ADVISE = 3
CMD_PACKAGED = 7

# RAM record flags (low bits of each be64 header in the "ram" payload).
RAM_ZERO = 0x02
RAM_MEM_SIZE = 0x04
RAM_PAGE = 0x08
RAM_EOS = 0x10
RAM_CONTINUE = 0x20
RAM_XBZRLE = 0x40
RAM_HOOK = 0x80
RAM_COMPRESS = 0x100
RAM_MULTIFD_FLUSH = 0x200
RAM_KNOWN_FLAGS = (RAM_ZERO | RAM_MEM_SIZE | RAM_PAGE | RAM_EOS |
                   RAM_CONTINUE | RAM_XBZRLE | RAM_HOOK | RAM_COMPRESS |
                   RAM_MULTIFD_FLUSH)
RAM_SECTION_VERSION = 4
XBZRLE_ENCODING = 0x01

# mapped-ram (QEMU 9.0's file layout): after each block list entry, a
# header (be32 version, be64 page size, be64 bitmap offset, be64 pages
# offset; absolute file positions); the bitmap holds one bit per page in
# host little-endian unsigned longs.
MAPPED_RAM_HDR_VERSION = 1
MAPPED_RAM_HDR_SIZE = 28
MAPPED_RAM_BITMAP_WORD = 8
MAPPED_RAM_ALIGNMENT = 1 << 20    # where the writer puts a block's pages
# Ours: the completion trailer at the very end of a mapped-ram file,
# "MRAMDONE" and 16 lowercase hex digits (the stream's start in the file);
# "MRAMDONR" when an integrity record lies before it (x-mapped-ram-integrity).
MAPPED_RAM_TRAILER_MAGIC = b'MRAMDONE'
MAPPED_RAM_TRAILER_MAGIC_RECORD = b'MRAMDONR'
MAPPED_RAM_TRAILER_SIZE = 24

DEFAULT_PAGE_SIZE = 4096
VMDESC_WINDOW = 16 << 20        # the vmdesc must lie in the last 16 MiB
VMDESC_MAX_PARSE_TRIES = 16
MAX_DESC_DEPTH = 64
MAX_ARRAY_LEN = 1 << 24
MAX_ERRORS_SHOWN = 20

INT_TYPE_RE = re.compile(r'^(u?)int(8|16|32|64)(?: (?:equal|le))?$')
