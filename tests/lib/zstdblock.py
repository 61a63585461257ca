#!/usr/bin/env python3
"""tests/lib/zstdblock.py -- damage one zstd block of an archive, for tests/tools/eventcnv.sh

.design: design/stream.txt .zstd.reader

Usage: zstdblock.py MODE N IN OUT
  The Nth (1, 2, ...) block of IN whose flags say zstd, in file order,
  is damaged by MODE and the stream written to OUT:
    flip     one bit of its data flipped; its check left as it was
    garbage  its data all zero bytes (not a zstd frame), check made again
    huge     its data a zstd frame header that claims 2^40 bytes, check
             made again: a hostile block that would have the reader
             allocate a terabyte
Prints the block's offset.  Streams of this machine's byte order only.
"""

import struct
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from mkstream import crc32c  # noqa: E402

ZSTD = 0x40


def main():
    mode, n, src, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    data = bytearray(open(src, "rb").read())
    pos = struct.unpack_from("<I", data, 20)[0]
    while pos + 36 <= len(data):
        length, = struct.unpack_from("<I", data, pos + 4)
        flags, = struct.unpack_from("<H", data, pos + 14)
        if flags & ZSTD:
            n -= 1
            if n == 0:
                break
        pos += length
    else:
        sys.exit("zstdblock.py: no such zstd block")
    if mode == "flip":
        data[pos + 36 + length // 2 - 18] ^= 0x10
    else:
        if mode == "garbage":
            body = bytes(length - 36)
        elif mode == "huge":
            # magic, frame header: 8-byte content size, single segment
            body = b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + struct.pack("<Q", 1 << 40)
            body += bytes(length - 36 - len(body))
        else:
            sys.exit("zstdblock.py: unknown mode " + mode)
        data[pos + 36:pos + length] = body
        data[pos + 32:pos + 36] = bytes(4)
        data[pos + 32:pos + 36] = struct.pack("<I", crc32c(bytes(data[pos:pos + length])))
    open(dst, "wb").write(data)
    print(pos)


if __name__ == "__main__":
    main()
