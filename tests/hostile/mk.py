#!/usr/bin/env python3
"""tests/hostile/mk.py -- the hostile inputs of tests/hostile.sh, each the
smallest that shows its case, made from tests/mkstream.py's streams

Usage: mk.py NAME OUT EVENTCNV
  v3-zstd-sound  mkstream's v3 archived with --zstd, its major made 3 again
                 and its header's check made again: blocks flagged zstd with
                 real frames, damage in 3.0, sound in 4.0 (.zstd.damage)
"""

import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from mkstream import crc32c  # noqa: E402

COMPACT, ZSTD = 0x20, 0x40


def mkstream(variant):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.tt")
        subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "mkstream.py"),
                        "--variant", variant, path], check=True)
        return bytearray(open(path, "rb").read())


def blocks(data):
    """(offset, length, flags) of each block, in file order"""
    pos = struct.unpack_from("<I", data, 20)[0]
    while pos + 36 <= len(data) and data[pos:pos + 4] == b"TTBK":
        length, = struct.unpack_from("<I", data, pos + 4)
        flags, = struct.unpack_from("<H", data, pos + 14)
        yield pos, length, flags
        pos += length


def seal(block):
    """the block with its check made again"""
    block[32:36] = bytes(4)
    block[32:36] = struct.pack("<I", crc32c(bytes(block)))
    return block


def v3_zstd_sound(eventcnv):
    """mkstream's v3 archived with --zstd, then said to be 3.0 again"""
    with tempfile.TemporaryDirectory() as d:
        log, archive = os.path.join(d, "v3.tt"), os.path.join(d, "v3.zst")
        open(log, "wb").write(mkstream("v3"))
        subprocess.run([eventcnv, "--format", "telltale", "--zstd", "-o", archive, log],
                       check=True, stderr=subprocess.DEVNULL)
        data = bytearray(open(archive, "rb").read())
    assert any(flags & ZSTD for _, _, flags in blocks(data))
    struct.pack_into("<H", data, 8, 3)
    end = struct.unpack_from("<I", data, 16 + 4)[0] - 4    # the header's check: no spans
    head = bytes(data[:19]) + b"\0" + bytes(data[20:end])
    struct.pack_into("<I", data, end, crc32c(head))
    return data


MAKERS = {
    "v3-zstd-sound": v3_zstd_sound,
}

if __name__ == "__main__":
    name, out, tool = sys.argv[1], sys.argv[2], sys.argv[3]
    open(out, "wb").write(MAKERS[name](tool))
