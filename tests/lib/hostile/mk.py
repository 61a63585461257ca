#!/usr/bin/env python3
"""tests/lib/hostile/mk.py -- the hostile inputs of tests/tools/hostile.sh, each the
smallest that shows its case, made from tests/lib/mkstream.py's streams

Usage: mk.py NAME OUT EVENTCNV|PID
  v3-zstd-sound  mkstream's v3 archived with --zstd, its major made 3 again
                 and its header's check made again: blocks flagged zstd with
                 real frames, damage in 3.0, sound in 4.0 (.zstd.damage)
  hostile-strings  mkstream's v2 whose program name and a string field hold
                 ESC, BEL, DEL, C1 and invalid UTF-8 (.export.text)
  zstd-bomb      mkstream's v3 archived, and 8 blocks of 64 KiB more whose
                 zstd frames expand to 64 MiB of sound events (.zstd.held)
  follow-damage  mkstream's v2-flip (a damaged block) as the log of PID, a
                 process running since before it (.eventcnv.follow.damage);
                 the last argument is PID, not EVENTCNV
  clock-limits   mkstream's v2 with a wall time 1 us short of 2^63 ns: its
                 events' times are past it (.export.time)
"""

import os
import struct
import subprocess
import sys
import tempfile
import time

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
    return reseal_header(data, lambda d: struct.pack_into("<H", d, 8, 3))


def reseal_header(data, change):
    """data changed by change(data), the header's checks made again: each
    place in the header that holds the check of all before it, byte 19 as
    0 (the registry's and the spans': .stream.header.check), is found
    before the change and made again after it"""
    length = struct.unpack_from("<I", data, 20)[0]
    def whole(d, at):
        return crc32c(bytes(d[:19]) + b"\0" + bytes(d[20:at]))
    places = [at for at in range(64, length - 3)
              if struct.unpack_from("<I", data, at)[0] == whole(data, at)]
    change(data)
    for at in places:
        struct.pack_into("<I", data, at, whole(data, at))
    return data


def clock_limits(eventcnv):
    """mkstream's v2, its header's wall time 1 us short of 2^63 ns, so
    that its events' times are past it"""
    data = mkstream("v2")
    return reseal_header(data, lambda d: struct.pack_into("<Q", d, 40, (1 << 63) - 1000))


def reseal_blocks(data):
    """every block's check made again"""
    for pos, length, _ in list(blocks(data)):
        data[pos:pos + length] = seal(bytearray(data[pos:pos + length]))
    return data


# Same lengths as what they replace: ESC, BEL, DEL, C1's CSI, a byte
# that is never UTF-8, an overlong NUL, a UTF-16 surrogate.
HOSTILE_PROGRAM = b"\x1b[2J\xff\xc0\x80\x07"   # for "mkstream"
HOSTILE_STRING = b"\xed\xa0\x80\x1b[1m\xc2\x9b\x7f"[:9]  # for "main pool"


def hostile_strings(eventcnv):
    """mkstream's v2, its program name and a string field holding
    control bytes and invalid UTF-8, every check made again"""
    data = mkstream("v2")
    assert len(HOSTILE_PROGRAM) == len(b"mkstream") and len(HOSTILE_STRING) == len(b"main pool")
    def change(d):
        d[:] = d.replace(b"mkstream", HOSTILE_PROGRAM).replace(b"main pool", HOSTILE_STRING)
    return reseal_blocks(reseal_header(data, change))


def follow_damage(pid):
    """mkstream's v2-flip (a block damaged, StreamEnd after it), its
    header's pid PID and its CLOCK_MONOTONIC start now: a log of a
    program still running, for --follow"""
    def change(d):
        struct.pack_into("<Q", d, 48, time.monotonic_ns())
        struct.pack_into("<I", d, 56, int(pid))
    return reseal_header(mkstream("v2-flip"), change)


def rle_frame(byte, size):
    """a zstd frame of size copies of byte, made of RLE blocks of 128 KiB
    (RFC 8878: single segment, its content size said in 8 bytes)"""
    frame = struct.pack("<IB", 0xFD2FB528, 0xE0) + struct.pack("<Q", size)
    left = size
    while left > 0:
        n = min(left, 128 << 10)
        left -= n
        frame += (int(left == 0) | 1 << 1 | n << 3).to_bytes(3, "little") + bytes([byte])
    return frame


def zstd_bomb(eventcnv, blocks_added=8):
    """mkstream's v3 archived with --zstd, and blocks_added blocks more,
    each a zstd frame of 64 MiB of 0x0C bytes (events of an unknown code
    0x0C0C, 3084 bytes long: sound, so held) padded to 64 KiB by a
    skippable frame, so that each is within EVENT_ZSTD_RATIO_MAX:
    together they would expand to 512 MiB (.zstd.held)"""
    with tempfile.TemporaryDirectory() as d:
        log, archive = os.path.join(d, "v3.tt"), os.path.join(d, "v3.zst")
        open(log, "wb").write(mkstream("v3"))
        subprocess.run([eventcnv, "--format", "telltale", "--zstd", "-o", archive, log],
                       check=True, stderr=subprocess.DEVNULL)
        data = bytearray(open(archive, "rb").read())
    pos, length, flags = list(blocks(data))[-1]
    head = bytearray(data[pos:pos + 36])
    seq, index = struct.unpack_from("<Q", head, 16)[0], struct.unpack_from("<I", head, 28)[0]
    frame = rle_frame(0x0C, (64 << 20) // 3084 * 3084)   # whole events
    pad = (64 << 10) - len(frame) - 8
    frame += struct.pack("<II", 0x184D2A50, pad) + bytes(pad)
    for i in range(1, blocks_added + 1):
        block = bytearray(head) + frame
        struct.pack_into("<I", block, 4, len(block))
        struct.pack_into("<H", block, 14, (flags & ~COMPACT) | ZSTD)
        struct.pack_into("<Q", block, 16, seq + i)
        struct.pack_into("<I", block, 28, index + i)
        data += seal(block)
    return data


MAKERS = {
    "zstd-bomb": zstd_bomb,
    "follow-damage": follow_damage,
    "hostile-strings": hostile_strings,
    "clock-limits": clock_limits,
    "v3-zstd-sound": v3_zstd_sound,
}

if __name__ == "__main__":
    name, out, tool = sys.argv[1], sys.argv[2], sys.argv[3]
    open(out, "wb").write(MAKERS[name](tool))
