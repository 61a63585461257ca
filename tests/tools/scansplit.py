#!/usr/bin/env python3
"""tests/tools/scansplit.py -- --count and --summary split over threads say what one thread says

.design: design/tools.txt .eventcnv.scan.split

Usage: scansplit.py CONFIG [EVENTS]     e.g. scansplit.py build/san

Makes a log of EVENTS events (default 1,000,000: 36 MB, past the size
that splits, in ranges of 12 MB on 3 threads) with build/bench/bench,
raw and compact, and copies of the raw one changed where a split scan
could go wrong: a byte flipped in a block in each part of the file, at
the block where each part starts, an event's length broken under a
sound check, a block zeroed from a page on (a hole), the file cut short
in its last part, a "TTBK" in events' data just past where the second
part starts (its block's check made anew), and a sound block inside a
repeated one across that place, so that the second part's thread
starts inside a block the walk passes.  Each is read with
CONFIG/eventcnv --count and --summary, --jobs 1, 2 and 3: the output,
the messages and the exit status must be the same.  Prints "ok NAME"
or "FAIL NAME: why" per case, then "N passed, N failed".
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from results import result, summary  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                'build', 'gen', 'core'))
import eventgen as wire  # noqa: E402

MAGIC = wire.EVENT_BLOCK_MAGIC
BLOCK_LEN = wire.EVENT_BLOCK_HEADER_LEN
CHECK_AT = wire.BLOCK_HEADER["check"][0]
INDEX_AT = wire.BLOCK_HEADER["index"][0]
HEADER_LENGTH_AT = wire.STREAM_HEADER["header_length"][0]


def crc_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


TABLE = crc_table()


def crc32c(data):
    """CRC32C, as EventCheck"""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def restamp(log, at):
    """the check of the block at offset at, made anew (EventBlockCheck)"""
    length = struct.unpack_from("<I", log, at + 4)[0]
    block = bytearray(log[at:at + length])
    block[CHECK_AT:CHECK_AT + 4] = b"\0\0\0\0"
    struct.pack_into("<I", log, at + CHECK_AT, crc32c(block))


def blocks(log):
    """the offsets and lengths of the log's blocks, in file order"""
    pos = struct.unpack_from("<I", log, HEADER_LENGTH_AT)[0]
    found = []
    while pos + BLOCK_LEN <= len(log) and log[pos:pos + 4] == MAGIC:
        length = struct.unpack_from("<I", log, pos + 4)[0]
        found.append((pos, length))
        pos += length
    return found


def nominal(log, parts, i):
    """where part i of parts starts, as eventscan.c cuts a file"""
    first = struct.unpack_from("<I", log, HEADER_LENGTH_AT)[0]
    return first + (len(log) - first) * i // parts


def block_at(log, offset):
    """the block holding offset"""
    for at, length in blocks(log):
        if at <= offset < at + length:
            return at, length
    raise ValueError("no block at %d" % offset)


def event_after(log, at, offset):
    """the first event at or after offset in the block at at, of at least 16 bytes"""
    length = struct.unpack_from("<I", log, at + 4)[0]
    pos = at + BLOCK_LEN
    while pos < at + length:
        n = struct.unpack_from("<H", log, pos + 2)[0]
        if pos >= offset and n >= 16:
            return pos
        pos += n
    raise ValueError("no event after %d" % offset)


def flip(log, offset):
    log[offset] ^= 0x5A


def broken_length(log, offset):
    """an event's length made 13 in a block whose check is made anew"""
    at, _ = block_at(log, offset)
    e = event_after(log, at, offset)
    struct.pack_into("<H", log, e + 2, 13)
    restamp(log, at)


def hole(log, offset):
    """a block's data zeroed from a page of the file on, as a death leaves it"""
    at, length = block_at(log, offset)
    page = (at + BLOCK_LEN + 4095) // 4096 * 4096
    log[page:at + length] = bytes(at + length - page)


def fake_magic(log, offset):
    """"TTBK" in an event's values just past offset, the block's check made anew"""
    at, _ = block_at(log, offset)
    e = event_after(log, at, offset)
    log[e + 12:e + 16] = MAGIC
    restamp(log, at)


def inner_block(log):
    """a block repeated (the index of the one before it), holding a sound
    copy of the next block, across where part 2 of 2 starts: the walk
    skips it, the part's thread starts inside it.  Returns the new log."""
    found = blocks(log)
    guess = nominal(log, 2, 1) + 40000
    k = max(i for i, (at, _) in enumerate(found) if at <= guess) - 1
    prev_at, prev_len = found[k]
    b = prev_at + prev_len
    y_at, y_len = found[k + 1]
    y = bytes(log[y_at:y_at + y_len])
    first = struct.unpack_from("<I", log, HEADER_LENGTH_AT)[0]
    base = first + (len(log) + BLOCK_LEN + y_len - first) // 2
    pad = 2 * (base - b) + 300
    x = bytearray(log[prev_at:prev_at + BLOCK_LEN]) + bytes(pad) + y
    struct.pack_into("<I", x, 4, len(x))
    out = bytearray(log[:b]) + x + log[b:]
    restamp(out, b)
    start = nominal(out, 2, 1)
    assert b < start < b + BLOCK_LEN + pad, "the copy must lie past the second part's start"
    return out


def run(eventcnv, args):
    p = subprocess.run([eventcnv] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
    return p.returncode, p.stdout, p.stderr


def same(eventcnv, name, path, expect=None):
    """--count and --summary of path on 1, 2 and 3 threads alike"""
    for what in ("--count", "--summary"):
        one = run(eventcnv, ["--jobs", "1", what, path])
        why = ""
        for jobs in ("2", "3"):
            got = run(eventcnv, ["--jobs", jobs, what, path])
            if got != one:
                why = "--jobs %s %s differs from --jobs 1: exit %d, %r against exit %d, %r" % (
                    jobs, what, got[0], (got[1] + got[2])[-300:], one[0], (one[1] + one[2])[-300:])
                break
        if not why and expect is not None and what == "--count" and one[1] != expect:
            why = "--count is not the undamaged log's: %r" % one[1][-300:]
        result("%s %s" % (name, what), why,
               "exit %d, %d problems" % (one[0], one[2].count(b"\n")) if not why else "")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cfg = sys.argv[1]
    events = sys.argv[2] if len(sys.argv) > 2 else "1000000"
    eventcnv = os.path.join(cfg, "eventcnv")
    bench = os.path.join("build", "bench", "bench")
    if not os.access(bench, os.X_OK) or not os.access(eventcnv, os.X_OK):
        print("SKIP: needs %s and %s (ninja)" % (bench, eventcnv))
        return 77
    tmp = tempfile.mkdtemp(prefix="scansplit.")
    try:
        raw = os.path.join(tmp, "raw.log")
        compact = os.path.join(tmp, "compact.log")
        subprocess.run([bench, "--case", "enabled", "--count", events, "--file", raw], check=True)
        env = dict(os.environ, TELLTALE_COMPACT="1")
        subprocess.run([bench, "--case", "enabled", "--count", events, "--file", compact],
                       check=True, env=env)
        same(eventcnv, "raw", raw)
        same(eventcnv, "compact", compact)
        with open(raw, "rb") as f:
            log = bytearray(f.read())
        expect = run(eventcnv, ["--jobs", "1", "--count", raw])[1]
        cases = []
        for parts, i in ((2, 0), (2, 1), (3, 1), (3, 2)):
            at = nominal(log, parts, i) + 100000 if i > 0 else len(log) // 4
            cases.append(("flip-%d-%d" % (i, parts), lambda l, a=at: flip(l, a)))
        for parts, i in ((2, 1), (3, 1), (3, 2)):
            at, _ = block_at(log, nominal(log, parts, i))
            after = blocks(log)[[b for b, _ in blocks(log)].index(at) + 1][0]
            cases.append(("header-%d-%d" % (i, parts), lambda l, a=after: flip(l, a + 8)))
            cases.append(("magic-%d-%d" % (i, parts), lambda l, a=after: flip(l, a)))
        cases.append(("length-0", lambda l: broken_length(l, len(l) // 5)))
        cases.append(("length-1-2", lambda l: broken_length(l, nominal(l, 2, 1) + 200000)))
        cases.append(("hole-1-2", lambda l: hole(l, nominal(l, 2, 1) + 300000)))
        cases.append(("hole-1-3", lambda l: hole(l, nominal(l, 3, 1) + 300000)))
        cases.append(("two-flips", lambda l: (flip(l, nominal(l, 3, 1) + 50000),
                                              flip(l, nominal(l, 3, 2) + 50000))))
        for name, change in cases:
            damaged = bytearray(log)
            change(damaged)
            path = os.path.join(tmp, name + ".log")
            with open(path, "wb") as f:
                f.write(damaged)
            same(eventcnv, name, path)
            os.unlink(path)
        path = os.path.join(tmp, "cut.log")
        with open(path, "wb") as f:
            f.write(log[:nominal(log, 3, 2) + 100000])
        same(eventcnv, "cut", path)
        damaged = bytearray(log)
        fake_magic(damaged, nominal(damaged, 2, 1))
        fake_magic(damaged, nominal(damaged, 3, 2))
        path = os.path.join(tmp, "fake-magic.log")
        with open(path, "wb") as f:
            f.write(damaged)
        same(eventcnv, "fake-magic", path, expect)
        path = os.path.join(tmp, "inner-block.log")
        with open(path, "wb") as f:
            f.write(inner_block(log))
        same(eventcnv, "inner-block", path)
        # A range's thread whose read fails: the walk reads its bytes
        # itself, so nothing is lost and nothing said; the walk's own
        # failure is said.  (The build configuration only: preloading
        # into a sanitizer's program is refused.)
        shim = os.path.join(cfg, "tests", "preadfail.so")
        if os.path.basename(cfg.rstrip("/")) == "build":
            env = dict(os.environ, LD_PRELOAD=os.path.abspath(shim))
            one = run(eventcnv, ["--jobs", "1", "--count", raw])
            p = subprocess.run([eventcnv, "--jobs", "2", "--count", raw], env=env, timeout=600,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            result("read-fails-in-range", None if (p.returncode, p.stdout, p.stderr) == one else
                   "exit %d, %r%r against exit %d, %r" % (p.returncode, p.stdout[-200:],
                                                          p.stderr[-300:], one[0], one[1][-200:]))
            env["PREADFAIL"] = "first"
            p = subprocess.run([eventcnv, "--jobs", "2", "--count", raw], env=env, timeout=600,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            result("read-fails-in-walk", None if b"Input/output error" in p.stderr else
                   "exit %d, the walk's failed read not said: %r" % (p.returncode, p.stderr[-300:]))
    finally:
        shutil.rmtree(tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
