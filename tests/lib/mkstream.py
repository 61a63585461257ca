#!/usr/bin/env python3
# tests/lib/mkstream.py -- write deterministic synthetic telltale streams
#
# .design: design/stream.txt .stream
#
# Writes a stream exactly as design/stream.txt .stream describes it,
# independently of the C runtime, so that the reader (src/read/eventstream.c,
# eventheader.c, eventindex.c) and
# eventcnv can be tested against a second implementation of the format.
# Every variant is deterministic: the same bytes on every run.
#
# Usage:
#   mkstream.py --variant NAME OUTFILE         write a stream
#   mkstream.py --variant NAME --expect FILE   write what eventcnv should print
#                                              for it (sound variants only)
#   mkstream.py --list                         list the variants
#
# The stream has its own registry: telltale's own events (0x0001-0x0009,
# design/stream.txt .stream.own) in kind 0 "Telltale", and client
# events covering every format letter.  Three threads emit into several
# kinds with interleaved clocks, so a reader must merge the blocks to
# print events in time order; one event has a code not in the registry.
#
# --expect is an oracle: it formats the events in Python as eventcnv's
# default output should look (tests/data/golden/*.out were checked with it).
#
# The format's constants (magics, the byte-order mark, header lengths
# and offsets, the letters' sizes) are gen's eventgen.py of telltale's
# registry (design/registry.txt .gen.wire), asserted against eventcom.h
# when the C builds: run ninja first.  How the fields are laid out and
# encoded is written here, from the design, as the second implementation.

import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "build", "gen", "core"))
import eventgen as wire  # noqa: E402

FLAGS_AT = wire.EVENT_STREAM_FLAGS_AT
HEADER_LENGTH_AT = wire.STREAM_HEADER["header_length"][0]
MARK_AT = wire.STREAM_HEADER["mark"][0]
VERSION_AT = wire.STREAM_HEADER["major"][0]
BLOCK_LEN = wire.EVENT_BLOCK_HEADER_LEN
LENGTH_AT = wire.BLOCK_HEADER["length"][0]      # a block header's fields
BLOCK_FLAGS_AT = wire.BLOCK_HEADER["flags"][0]
CHECK_AT = wire.BLOCK_HEADER["check"][0]

VERSION = (1, 0, 0)
VERSION2 = (2, 0, 0)            # checked blocks: design/stream.txt .stream.check
VERSION3 = (3, 0, 0)            # compact blocks: design/runtime.txt .compact
SESSION = 0x5E551011            # the session id of 2.0 streams


def crc32c(data, crc=0):
    """CRC32C (Castagnoli), as EventCheck: "123456789" gives 0xE3069283."""
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283

KINDS = [
    ("Telltale", "telltale's own events: stream, clock, strings, labels, threads"),
    ("Pool", "per pool: creation, destruction"),
    ("Object", "per object: allocation and freeing"),
    ("User", "events the test defines for itself"),
]

# (code, name, kind, always, retired, format, doc, [(param, doc), ...])
EVENTS = [
    (0x0001, "StreamStart", 0, 1, 0, "UUUS", "the stream began: its format version and the program",
     [("major", "stream format version, major"), ("median", "stream format version, median"),
      ("minor", "stream format version, minor"), ("program", "the program's name")]),
    (0x0002, "StreamEnd", 0, 1, 0, "W", "the stream ended cleanly; nothing follows",
     [("blocks", "blocks written before the one holding this event")]),
    (0x0003, "ClockSync", 0, 1, 0, "WW", "pairs the event clock with the system clocks",
     [("monotonic", "CLOCK_MONOTONIC in nanoseconds"),
      ("realtime", "CLOCK_REALTIME in nanoseconds since the epoch")]),
    (0x0004, "Intern", 0, 1, 0, "WS", "a string was interned; later events refer to it by id",
     [("id", "the string's id"), ("string", "the string")]),
    (0x0005, "Label", 0, 1, 0, "AW", "an address was labelled with an interned string",
     [("address", "the address"), ("id", "the id of the interned label")]),
    (0x0006, "EventsDropped", 0, 1, 0, "UW", "events of a kind were dropped, not recorded",
     [("kind", "the kind's index"), ("count", "how many events were dropped")]),
    (0x0007, "ThreadStart", 0, 1, 0, "UW", "a thread emitted its first event",
     [("thread", "telltale's serial number for the thread"),
      ("osid", "the operating system's id for the thread")]),
    (0x0008, "ThreadName", 0, 1, 0, "US", "a thread's name",
     [("thread", "telltale's serial number for the thread"), ("name", "the name")]),
    (0x0009, "ThreadExit", 0, 1, 0, "U", "a thread exited; its buffers were flushed",
     [("thread", "telltale's serial number for the thread")]),
    (0x0100, "PoolCreate", 1, 1, 0, "PAWS", "a pool was created",
     [("pool", "the pool"), ("base", "its first address"), ("size", "its size in bytes"),
      ("name", "its name")]),
    (0x0101, "PoolDestroy", 1, 1, 0, "A", "a pool was destroyed", [("pool", "the pool")]),
    (0x0102, "ObjectAlloc", 2, 0, 0, "AWU", "an object was allocated",
     [("address", "the object"), ("size", "its size in bytes"), ("align", "its alignment")]),
    (0x0103, "ObjectFree", 2, 0, 0, "AW", "an object was freed",
     [("address", "the object"), ("size", "its size in bytes")]),
    (0x0104, "Measure", 3, 1, 0, "UD", "a measurement",
     [("index", "which one"), ("value", "its value")]),
    (0x0105, "Message", 3, 1, 0, "S", "a message", [("text", "the message")]),
    (0x0106, "Pointers", 3, 1, 0, "PP", "two pointers",
     [("low", "the first"), ("high", "the second")]),
    (0x0107, "OldThing", 3, 0, 1, "W", "an event no longer emitted", [("count", "how many")]),
    (0x0108, "Everything", 3, 1, 0, "PAWUDS", "one of each letter",
     [("p", "a pointer"), ("a", "an address"), ("w", "a word"), ("u", "32 bits"),
      ("d", "a double"), ("s", "a string")]),
    (0x0109, "Tick", 3, 1, 0, "", "an event with no parameters", []),
]

BY_NAME = {e[1]: e for e in EVENTS}
BY_CODE = {e[0]: e for e in EVENTS}
UNKNOWN_CODE = 0x0200           # not in the registry: design/stream.txt .stream.unknown

START_CLOCK = 1000000000000
HZ = 2000000000                 # 2 ticks per ns
REALTIME0 = 1700000000123456789  # 2023-11-14T22:13:20.123456789Z
MONOTONIC0 = 5000000000
PID = 4242
PROGRAM = "mkstream"
LONG_STRING = ("telltale-" * 120)[:1023]


class Stream:
    """A stream being built: header fields, then blocks of events."""

    def __init__(self, big=False, psize=8, wsize=8, version=VERSION, hz=HZ,
                 extra_header=b"", sync=True, end=True, many=False, spans=None, compact=False,
                 flags=0):
        self.compact = compact  # blocks in the compact form where they pack
        self.flags = flags      # the header's flags byte (an archive's 2: recovered)
        self.e = ">" if big else "<"
        self.psize, self.wsize = psize, wsize
        self.version, self.hz = version, hz
        self.extra_header = extra_header
        self.sync, self.end = sync, end
        self.many = many        # thousands of events, an address relabelled
        # spans: ([(name, begin, end, beginKey, endKey)], [(name, code, value, key)]),
        # after the header's check from 2.0.1 (design/stream.txt .stream.header.span)
        self.spans = spans
        self.blocks = []        # (thread, kind, seq, [event], pad)
        self.base = 0x7F0000000000 if psize == 8 else 0x40000000

    def addr(self, off):
        return self.base + off

    # Encoding

    def uint(self, size, value):
        mask = (1 << (8 * size)) - 1
        return struct.pack(self.e + {4: "I", 8: "Q"}[size], value & mask)

    def encode(self, ev):
        code, clock, values = ev["code"], ev["clock"], ev["values"]
        if code in BY_CODE:
            fields = b""
            for letter, value in zip(BY_CODE[code][5], values):
                form = wire.LETTERS[letter]["form"]
                if form == "unsigned":
                    fields += self.uint(wire.letter_size(letter, self.psize, self.wsize), value)
                elif form == "double":
                    fields += struct.pack(self.e + "d", value)
                else:
                    fields += value + b"\0"
        else:
            fields = values[0]  # raw bytes
        length = wire.EVENT_HEADER_LEN + len(fields)
        return struct.pack(self.e + "HHQ", code, length, clock) + fields

    def header(self):
        def s(text):
            b = text.encode() if isinstance(text, str) else text
            return struct.pack("<H", len(b)) + b
        var = s(PROGRAM) + s("mkstream synthetic")
        var += struct.pack("<H", len(KINDS))
        for name, doc in KINDS:
            var += s(name) + s(doc)
        var += struct.pack("<H", len(EVENTS))
        for code, name, kind, always, retired, fmt, doc, params in EVENTS:
            var += struct.pack("<HBB", code, kind, always | retired << 1)
            var += s(fmt) + s(name) + s(doc)
            for pname, pdoc in params:
                var += s(pname) + s(pdoc)
        var += self.extra_header
        ext = b""
        if self.spans is not None:
            span_rows, counter_rows = self.spans
            ext = struct.pack("<H", len(span_rows))
            for name, begin, end, bkey, ekey in span_rows:
                ext += s(name) + struct.pack("<HHBB", begin, end, bkey, ekey)
            ext += struct.pack("<H", len(counter_rows))
            for name, code, value, key in counter_rows:
                ext += s(name) + struct.pack("<HBB", code, value, key)
        flags_check = self.v2() and self.version[2] >= 5
        length = wire.EVENT_STREAM_FIXED_LEN + len(var) + (4 if self.v2() else 0) + (len(ext) + 4 if ext else 0) \
            + (4 if flags_check else 0)
        fixed = wire.EVENT_STREAM_MAGIC + struct.pack("<HHH", *self.version)
        fixed += struct.pack(self.e + "H", wire.EVENT_BYTE_ORDER_MARK)
        fixed += struct.pack("<BBBBIQQQQII", self.psize, self.wsize, 1, self.flags, length,
                             self.hz, START_CLOCK, REALTIME0, MONOTONIC0, PID,
                             SESSION if self.v2() else 0)
        assert len(fixed) == wire.EVENT_STREAM_FIXED_LEN
        if self.v2():   # the header's check, flags byte as 0: .stream.header.check
            head = fixed + var
            var += struct.pack("<I", crc32c(head[:FLAGS_AT] + b"\0" + head[FLAGS_AT + 1:]))
        if ext:         # and the spans' own check
            head = fixed + var + ext
            var += ext + struct.pack("<I", crc32c(head[:FLAGS_AT] + b"\0" + head[FLAGS_AT + 1:]))
        if flags_check:  # the flags' own check (2.0.5 on)
            var += struct.pack("<I", crc32c(bytes([self.flags])))
        return fixed + var

    def v2(self):
        return self.version[0] >= 2

    def block_header(self, length, thread, kind, seq, index, session=SESSION, flags=0x10):
        """A block's header; in 2.0, with its check over header and body."""
        if not self.v2():
            return wire.EVENT_BLOCK_MAGIC + struct.pack(self.e + "IIHHQ", length, thread, kind, 0, seq)
        return wire.EVENT_BLOCK_MAGIC + struct.pack(self.e + "IIHHQIII", length, thread, kind, flags, seq,
                                     session, index, 0)

    # The compact form, written from design/stream.txt .compact.encoding
    # alone: a second implementation beside src/decode/eventpack.c.

    def pack(self, events):
        """The compact data of a block's events, or None if it does not
        pack (an unknown code) or is not shorter."""
        raw = b"".join(self.encode(ev) for ev in events)
        out = bytearray(varint(len(raw)))
        index, last, prev = {}, {}, 0
        for ev in events:
            code = ev["code"]
            if code not in BY_CODE:
                return None
            fmt = BY_CODE[code][5]
            types = [{"double": 3, "string": 4}.get(wire.LETTERS[c]["form"])
                     or {4: 1, 8: 2}[wire.letter_size(c, self.psize, self.wsize)] for c in fmt]
            if code in index:
                out.append(index[code])
            else:
                index[code] = len(index)
                out += bytes([0xFF]) + varint(code) + bytes([len(types)] + types)
            out += varint(zigzag(ev["clock"] - prev, 64))
            prev = ev["clock"]
            for i, (t, value) in enumerate(zip(types, ev["values"])):
                if t in (1, 2):
                    bits = 32 if t == 1 else 64
                    value &= (1 << bits) - 1
                    out += varint(zigzag(value - last.get((code, i), 0), bits))
                    last[(code, i)] = value
                elif t == 3:
                    out += struct.pack(self.e + "d", value)
                else:
                    out += varint(len(value)) + value
        return bytes(out) if len(out) < len(raw) else None

    def seal(self, head, body):
        """head with its check filled in (2.0), then body."""
        if not self.v2():
            return head + body
        check = crc32c(bytes(body), crc32c(bytes(head)))
        return head[:CHECK_AT] + struct.pack(self.e + "I", check) + body

    def build(self):
        """The stream's bytes; records each event's and block's offset."""
        out = bytearray(self.header())
        hlen = wire.EVENT_BLOCK_HEADER_LEN if self.v2() else wire.EVENT_BLOCK_HEADER_LEN_1
        for index, block in enumerate(self.blocks):
            thread, kind, seq, events, pad = block["thread"], block["kind"], block["seq"], \
                block["events"], block["pad"]
            block["offset"] = len(out)
            body = bytearray()
            for ev in events:
                ev["offset"] = len(out) + hlen + len(body)
                ev["thread"], ev["kind"], ev["seq"] = thread, kind, seq
                body += self.encode(ev)
            if pad and not self.v2():
                body += b"\0" * pad     # code 0 ends the data: design/stream.txt .stream.block
            packed = self.pack(events) if self.compact else None
            block["compact"] = packed is not None
            if packed is not None:
                for ev in events:       # compact events are known by their block's offset
                    ev["offset"] = block["offset"]
                out += self.seal(self.block_header(hlen + len(packed), thread, kind, seq, index,
                                                   flags=0x30), packed)
                continue
            out += self.seal(self.block_header(hlen + len(body), thread, kind, seq, index), body)
        return bytes(out)


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(d, bits):
    """The zigzag code of the difference d, taken modulo 2**bits as signed"""
    d &= (1 << bits) - 1
    if d >= 1 << (bits - 1):
        d -= 1 << bits
    return 2 * d if d >= 0 else -2 * d - 1


def ev(name_or_code, clock, *values):
    code = BY_NAME[name_or_code][0] if isinstance(name_or_code, str) else name_or_code
    vals = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
    return {"code": code, "clock": START_CLOCK + clock, "values": vals}


def scenario(st):
    """The events of the sound stream: threads 1-3, kinds 0-3, interleaved."""
    a = st.addr
    ones = (1 << 64) - 1
    blocks = []

    def block(thread, kind, events, pad=0):
        blocks.append({"thread": thread, "kind": kind, "seq": len(blocks), "events": events,
                       "pad": pad})

    t1 = [ev("StreamStart", 0, *(st.version if st.v2() else VERSION), PROGRAM)]
    if st.sync:
        t1.append(ev("ClockSync", 0, MONOTONIC0, REALTIME0))
    t1 += [ev("ThreadStart", 100, 1, 7001),
           ev("ThreadName", 200, 1, "main"),
           ev("Intern", 3000, 1, "main pool"),
           ev("Label", 3020, a(0x1000), 1)]
    block(1, 0, t1)                                                  # seq 0
    block(1, 1, [ev("PoolCreate", 3010, a(0x1000), a(0x1000), 65536, "main pool"),
                 ev("PoolDestroy", 9000, a(0x1000))])                # seq 1
    block(2, 0, [ev("ThreadStart", 500, 2, 7002),
                 ev("ThreadName", 600, 2, b"worker \"1\"\t\x01\\\xc3\xa9")])  # seq 2
    block(2, 2, [ev("ObjectAlloc", 4000, a(0x1040), 32, 8),
                 ev("ObjectAlloc", 4200, a(0x1060), 48, 16),
                 ev("ObjectFree", 4400, a(0x1040), 32)])             # seq 3
    block(3, 2, [ev("ObjectAlloc", 4100, a(0x2000), 8, 8),
                 ev("ObjectAlloc", 4200, a(0x2010), 8, 8),           # ties with seq 3
                 ev(UNKNOWN_CODE, 4300, b"\x01\x02\x03\x04\x05\x06\x07\x08"),
                 ev("ObjectFree", 4500, a(0x2000), 8)])              # seq 4
    inf = float("inf")
    block(1, 3, [ev("Measure", 5000, 0, 0.0),
                 ev("Measure", 5001, 1, -0.0),
                 ev("Measure", 5002, 2, float("nan")),
                 ev("Measure", 5003, 3, inf),
                 ev("Measure", 5004, 4, -inf),
                 ev("Measure", 5005, 5, 0.1),
                 ev("Measure", 5006, 6, 1e300),
                 ev("Measure", 5007, 7, 5e-324),
                 ev("Measure", 5008, 8, -123456.789),
                 ev("Measure", 5009, 9, 1.7976931348623157e308),
                 ev("Message", 5010, ""),
                 ev("Message", 5011, LONG_STRING),
                 ev("Pointers", 5012, 0, ones),
                 ev("Everything", 5013, 0xDEADBEEF, a(0x1000), ones, 0xFFFFFFFF, 2.5,
                    "all letters"),
                 ev("Tick", 5014),
                 ev("OldThing", 5015, 7)], pad=5)                     # seq 5
    block(2, 2, [ev("ObjectAlloc", 4600, a(0x1080), 64, 8),
                 ev("ObjectFree", 4700, a(0x1060), 48)])             # seq 6
    block(3, 0, [ev("ThreadStart", 450, 3, 7003),
                 ev("ThreadExit", 8000, 3)])                         # seq 7
    block(2, 0, [ev("EventsDropped", 8500, 2, 3),
                 ev("ThreadExit", 8600, 2)])                         # seq 8
    if st.many:   # more events than eventcnv formats in one batch, and
        # an address relabelled between them: each line shows the label
        # of its moment (design/tools.txt .eventcnv.text)
        for i in range(6):
            clock = 10000 + i * 100000
            block(1, 0, [ev("Intern", clock, 10 + i, "pool %d" % i),
                         ev("Label", clock + 1, a(0x1040), 10 + i)])
            block(2, 2, [ev("ObjectAlloc", clock + 2 + j, a(0x1040), j, 8) for j in range(2500)])
    last = []
    if st.sync:   # 2 ms after the first: design/runtime.txt .sol.clock
        last.append(ev("ClockSync", 4000000, MONOTONIC0 + 2000000, REALTIME0 + 2000000))
    if st.end:
        last.append(ev("StreamEnd", 4000100, len(blocks)))
    if last:
        block(1, 0, last)                                            # seq 9
    st.blocks = blocks


# The oracle: what eventcnv prints.  See EventFormat in src/decode/eventformat.c.

def utf8_char(b, i):
    """The character of valid UTF-8 at b[i] (a byte >= 0x80), by Python's
    strict decoder (no overlong forms, surrogates or code points past
    U+10FFFF), or None."""
    n = 2 if 0xC0 <= b[i] < 0xE0 else 3 if 0xE0 <= b[i] < 0xF0 else 4 if 0xF0 <= b[i] < 0xF8 else 0
    try:
        return b[i:i + n].decode("utf-8") if n and i + n <= len(b) else None
    except UnicodeDecodeError:
        return None


def escape(b):
    """An S field as eventcnv shows it: valid UTF-8 as itself but C1
    controls; other bytes outside printable ASCII in octal
    (design/export.txt .export.text)."""
    out = []
    i = 0
    while i < len(b):
        c = b[i]
        ch = chr(c)
        i += 1
        u = utf8_char(b, i - 1) if c >= 0x80 else None
        if u is not None and ord(u) >= 0xA0:
            out.append(u)
            i += len(u.encode("utf-8")) - 1
        elif ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif c < 0x20 or c >= 0x7F:
            out.append("\\%03o" % c)
        else:
            out.append(ch)
    return "".join(out)


def fmt_double(d):
    if d != d:
        return "nan"
    if d in (float("inf"), float("-inf")):
        return "inf" if d > 0 else "-inf"
    return "%.17g" % d


def expect(st):
    # An event stamped before the one before it in its thread and kind
    # is shown at that one's time (design/stream.txt .stream.order.back).
    shown, latest = {}, {}
    for b in sorted(st.blocks, key=lambda b: b["seq"]):
        for e in b["events"]:
            if e["code"] in BY_CODE:
                key = (b["thread"], b["kind"])
                shown[id(e)] = max(e["clock"], latest.get(key, e["clock"]))
                latest[key] = shown[id(e)]
    events = [e for b in st.blocks for e in b["events"] if e["code"] in BY_CODE]
    events.sort(key=lambda e: (shown[id(e)], e["seq"], e["offset"]))
    hz = st.hz
    syncs = sorted((e for e in events if e["code"] == 0x0003), key=lambda e: e["clock"])
    if len(syncs) >= 2:
        ticks = syncs[-1]["clock"] - syncs[0]["clock"]
        ns = syncs[-1]["values"][0] - syncs[0]["values"][0]
        if ticks > 0 and ns >= 1000000:
            hz = ticks * 10**9 // ns or hz
    kind_width = max(len(k[0]) for k in KINDS)
    name_width = max(len(e[1]) for e in EVENTS)
    mask_p = (1 << (8 * st.psize)) - 1
    mask_w = (1 << (8 * st.wsize)) - 1
    interns, labels = {}, {}
    lines = []
    for e in events:
        code, name, kind, always, retired, fmt, doc, params = BY_CODE[e["code"]]
        delta = shown[id(e)] - START_CLOCK
        neg = delta < 0
        delta = abs(delta)
        if hz:
            sec, ns = delta // hz, (delta % hz) * 10**9 // hz
        else:
            sec, ns = divmod(delta, 10**9)
        elapsed = "%s%d.%09d" % ("-" if neg else "", sec, ns)
        total = sec * 10**9 + ns
        real = REALTIME0 - total if neg else REALTIME0 + total
        sod = real // 10**9 % 86400
        wall = "%02d:%02d:%02d.%09d" % (sod // 3600, sod // 60 % 60, sod % 60, real % 10**9)
        thread = "T%d" % e["thread"]
        line = "%15s %s %-3s %-*s " % (elapsed, wall, thread, kind_width, KINDS[e["kind"]][0])
        if not fmt:
            lines.append(line + name)
            continue
        line += "%-*s" % (name_width, name)
        values = list(e["values"])
        if code == 0x0004:
            interns[values[0] & mask_w] = values[1]
        elif code == 0x0005:
            labels[values[0] & mask_p] = values[1] & mask_w
        for letter, (pname, _), value in zip(fmt, params, values):
            if letter == "P":
                text = "0x%x" % (value & mask_p)
            elif letter == "A":
                text = "0x%x" % (value & mask_p)
                lid = labels.get(value & mask_p)
                if lid is not None and lid in interns:
                    text += "[%s]" % escape(interns[lid])
            elif letter == "W":
                text = "%d" % (value & mask_w)
            elif letter == "U":
                text = "%d" % (value & 0xFFFFFFFF)
            elif letter == "D":
                text = fmt_double(value)
            else:
                text = '"%s"' % escape(value)
            line += " %s=%s" % (pname, text)
        lines.append(line)
    return "".join(l + "\n" for l in lines)


# Variants.  Each returns (bytes, Stream, note); note says what is wrong
# with a corrupt one and where.

def sound(**kw):
    st = Stream(**kw)
    scenario(st)
    return st


def mutated(mutate, **kw):
    st = sound(**kw)
    data = bytearray(st.build())
    note = mutate(st, data)
    return bytes(data), st, note


def variant(name):
    plain = {
        "basic": {},
        "big": {"big": True},
        "ptr32": {"psize": 4, "wsize": 4},
        "big32": {"big": True, "psize": 4, "wsize": 4},
        "minor": {"version": (1, 0, 9), "extra_header": b"newer minor field"},
        "noend": {"end": False},
        "hz0sync": {"hz": 0},
        "hz0": {"hz": 0, "sync": False},
        "v2": {"version": VERSION2},
        "v2-big32": {"version": VERSION2, "big": True, "psize": 4, "wsize": 4},
        "v2-noend": {"version": VERSION2, "end": False},
        "v2-many": {"version": VERSION2, "many": True},
        "v3": {"version": VERSION3, "compact": True},
        "v3-big32": {"version": VERSION3, "compact": True, "big": True, "psize": 4, "wsize": 4},
        "v3-raw": {"version": VERSION3},
        "v3-noend": {"version": VERSION3, "compact": True, "end": False},
        # archives whose log's live file was recovered into them (flags 2,
        # .zstd.live): before 4.0.5 no check covers the flag; from it, one does
        "v4-recovered-old": {"version": (4, 0, 4), "compact": True, "end": False, "flags": 2,
                             "spans": ([], [])},
        "v4-recovered": {"version": (4, 0, 5), "compact": True, "end": False, "flags": 2,
                         "spans": ([], [])},
    }
    if name in plain:
        st = sound(**plain[name])
        return st.build(), st, "sound"

    def block_of(st, seq):
        return next(b for b in st.blocks if b["seq"] == seq)

    def event_of(st, seq, i):
        return block_of(st, seq)["events"][i]

    if name == "v3-back":
        # sound, but thread 2's Object events step back in time twice:
        # inside block seq 3, and from seq 3 to seq 6 (a recorder's
        # StackFrames stamped after the ReallocMove it precedes did so;
        # design/stream.txt .stream.order.back)
        st = sound(version=VERSION3)
        event_of(st, 3, 1)["clock"] = START_CLOCK + 3900
        event_of(st, 6, 0)["clock"] = START_CLOCK + 4300
        return st.build(), st, "sound"

    def put16(st, data, off, value):
        data[off:off + 2] = struct.pack(st.e + "H", value)

    def m_trunc_header(st, data):
        del data[40:]
        return "truncated at 40 bytes, inside the fixed header"

    def m_trunc_registry(st, data):
        cut = block_of(st, 0)["offset"] - 10
        del data[cut:]
        return "truncated at %d, inside the registry: header length runs past end" % cut

    def m_huge_header(st, data):
        data[HEADER_LENGTH_AT:HEADER_LENGTH_AT + 4] = struct.pack("<I", 0xFFFFFF00)
        return "header length 0xFFFFFF00 at offset 20"

    def m_huge_block(st, data):
        off = block_of(st, 3)["offset"]
        data[off + LENGTH_AT:off + LENGTH_AT + 4] = struct.pack(st.e + "I", 0xFFFFFF00)
        return "block seq 3 at %d has length 0xFFFFFF00" % off

    def m_bad_magic(st, data):
        data[0:8] = b"TELLTAIL"
        return "file magic TELLTAIL"

    def m_bad_bom(st, data):
        data[MARK_AT:MARK_AT + 2] = b"\x03\x04"
        return "byte-order mark 03 04 at offset 14"

    def m_version5(st, data):
        data[VERSION_AT:VERSION_AT + 6] = struct.pack("<HHH", 5, 0, 0)
        return "version 5.0.0 at offset 8"

    def m_median1(st, data):
        data[VERSION_AT:VERSION_AT + 6] = struct.pack("<HHH", 1, 1, 0)
        return "version 1.1.0 at offset 8"

    def m_trunc_block(st, data):
        off = st.blocks[-1]["offset"]
        del data[off + 30:]
        return "last block at %d cut 30 bytes in" % off

    def m_trunc_block_header(st, data):
        off = st.blocks[-1]["offset"]
        del data[off + 10:]
        return "last block header at %d cut 10 bytes in" % off

    def m_bad_block_magic(st, data):
        off = block_of(st, 2)["offset"]
        data[off:off + 4] = b"TTBX"
        return "block seq 2 at %d has magic TTBX" % off

    def m_event_overrun(st, data):
        e = event_of(st, 5, 2)
        put16(st, data, e["offset"] + 2, 0x0FFF)
        return "event at %d (seq 5, third) has length 4095" % e["offset"]

    def m_short_event(st, data):
        e = event_of(st, 3, 1)
        put16(st, data, e["offset"] + 2, 4)
        return "event at %d (seq 3, second) has length 4" % e["offset"]

    def m_bad_string(st, data):
        e = event_of(st, 2, 1)
        end = e["offset"] + len(st.encode(e)) - 1
        data[end] = ord("!")
        return "event at %d (seq 2, ThreadName) string has no NUL" % e["offset"]

    def m_block_kind(st, data):
        off = block_of(st, 4)["offset"]
        put16(st, data, off + 12, 9)
        return "block seq 4 at %d has kind 9" % off

    # 2.0: every block is checked (.stream.check).

    def m2_zero_code(st, data):
        e = event_of(st, 3, 1)
        data[e["offset"]:e["offset"] + 2] = b"\0\0"
        return "event at %d (seq 3, second) has code 0: its block's check fails" % e["offset"]

    def m2_flip(st, data):
        e = event_of(st, 5, 3)
        data[e["offset"] + 13] ^= 0x04
        return "one bit of an event at %d (seq 5) flipped" % e["offset"]

    def m2_missing(st, data):
        b, n = block_of(st, 4), block_of(st, 5)
        del data[b["offset"]:n["offset"]]
        return "block seq 4 at %d removed" % b["offset"]

    def m2_dup(st, data):
        b, n = block_of(st, 3), block_of(st, 4)
        data[n["offset"]:n["offset"]] = data[b["offset"]:n["offset"]]
        return "block seq 3 at %d again at %d" % (b["offset"], n["offset"])

    def m2_reorder(st, data):
        b5, b6, b7 = block_of(st, 5), block_of(st, 6), block_of(st, 7)
        five = bytes(data[b5["offset"]:b6["offset"]])
        six = bytes(data[b6["offset"]:b7["offset"]])
        data[b5["offset"]:b7["offset"]] = six + five
        return "blocks seq 5 and 6 swapped"

    def m2_dup_cut(st, data):
        b3, b4 = block_of(st, 3), block_of(st, 4)
        data += data[b3["offset"]:b3["offset"] + (b4["offset"] - b3["offset"]) // 2]
        return "the first half of block seq 3 appended at the end"

    def m4_flags_flip(st, data):
        data[FLAGS_AT] ^= wire.EVENT_ARCHIVE_RECOVERED
        return "the recovered flag (offset 19) set in an archive whose flags' check says none"

    def m2_header_flip(st, data):
        data[100] ^= 0x04
        return "one bit of the registry (offset 100) flipped"

    def m2_foreign(st, data):
        body = st.encode(ev("ObjectAlloc", 4800, st.addr(0x3000), 16, 8))
        head = st.block_header(BLOCK_LEN + len(body), 2, 2, 10, 10, session=0x0BADF00D)
        data += st.seal(head, body)
        return "a block of another session appended"

    def m2_cut(st, data):
        b = block_of(st, 5)
        e = event_of(st, 5, 4)
        del data[e["offset"] + 5:]
        return "cut inside the fifth event of block seq 5 at %d" % b["offset"]

    # 3.0: compact blocks (.compact).

    def reseal(st, data, b):
        """block b's check made again over what data holds now"""
        off = b["offset"]
        length = struct.unpack_from(st.e + "I", data, off + LENGTH_AT)[0]
        data[off + CHECK_AT:off + CHECK_AT + 4] = b"\0\0\0\0"
        check = crc32c(bytes(data[off:off + length]))
        data[off + CHECK_AT:off + CHECK_AT + 4] = struct.pack(st.e + "I", check)

    def compact_block(st, seq):
        b = block_of(st, seq)
        assert b["compact"], "block seq %d is not compact" % seq
        return b

    def m3_flip(st, data):
        b = compact_block(st, 5)
        data[b["offset"] + BLOCK_LEN + 9] ^= 0x04
        return "one bit of compact block seq 5 at %d flipped" % b["offset"]

    def m3_cut(st, data):
        b = compact_block(st, 5)
        length = struct.unpack_from(st.e + "I", data, b["offset"] + LENGTH_AT)[0]
        del data[b["offset"] + length - 3:]
        return "compact block seq 5 at %d cut 3 bytes short, at the end of the log" % b["offset"]

    def m3_bad_tag(st, data):
        b = compact_block(st, 3)
        # the second event's tag: after the raw size, the first
        # definition and event, which the decoder would read; the
        # tag found by decoding: the byte that follows the first event
        off = b["offset"] + BLOCK_LEN
        data[off + tag_offset(st, b)] = 0x7E
        reseal(st, data, b)
        return "compact block seq 3 at %d: its second event's tag names an undefined code, " \
               "check made again" % b["offset"]

    def tag_offset(st, b):
        """offset of the second event's tag in a compact block's data"""
        one = st.pack(b["events"][:1])
        return len(one)

    def marked(st, data, b, flags):
        """block b's flags made flags, its check made again; its offset"""
        off = b["offset"]
        data[off + BLOCK_FLAGS_AT:off + BLOCK_FLAGS_AT + 2] = struct.pack(st.e + "H", flags)
        reseal(st, data, b)
        return off

    def m2_compact(st, data):
        off = marked(st, data, block_of(st, 3), 0x30)
        return "block seq 3 at %d of a 2.0 stream marked compact, check made again" % off

    def m3_zstd(st, data):
        off = marked(st, data, compact_block(st, 3), 0x70)
        return "compact block seq 3 at %d of a 3.0 stream marked zstd, check made again" % off

    corrupt = {
        "v3-zstd-flag": m3_zstd,
        "v3-flip": m3_flip,
        "v3-cut": m3_cut,
        "v3-bad-tag": m3_bad_tag,
        "v2-compact-flag": m2_compact,
        "v2-zero-code": m2_zero_code,
        "v2-flip": m2_flip,
        "v2-missing": m2_missing,
        "v2-dup": m2_dup,
        "v2-foreign": m2_foreign,
        "v2-reorder": m2_reorder,
        "v2-dup-cut": m2_dup_cut,
        "v2-header-flip": m2_header_flip,
        "v4-flags-flip": m4_flags_flip,
        "v2-cut": m2_cut,
        "trunc-header": m_trunc_header,
        "trunc-registry": m_trunc_registry,
        "bad-magic": m_bad_magic,
        "huge-header": m_huge_header,
        "huge-block": m_huge_block,
        "bad-bom": m_bad_bom,
        "version5": m_version5,
        "median1": m_median1,
        "trunc-block": m_trunc_block,
        "trunc-block-header": m_trunc_block_header,
        "bad-block-magic": m_bad_block_magic,
        "event-overrun": m_event_overrun,
        "short-event": m_short_event,
        "bad-string": m_bad_string,
        "block-kind": m_block_kind,
    }
    if name in corrupt:
        kw = {"version": VERSION2} if name.startswith("v2") else {}
        if name.startswith("v3"):
            kw = {"version": VERSION3, "compact": True}
        if name.startswith("v4"):
            kw = {"version": (4, 0, 5), "compact": True, "end": False, "spans": ([], [])}
        return mutated(corrupt[name], **kw)
    if name == "empty":
        return b"", None, "an empty file"
    raise KeyError(name)


VARIANTS = ["basic", "big", "ptr32", "big32", "minor", "noend", "hz0sync", "hz0",
            "trunc-header", "trunc-registry", "bad-magic", "bad-bom", "huge-header", "huge-block", "version5", "median1",
            "trunc-block", "trunc-block-header", "bad-block-magic", "event-overrun",
            "short-event", "bad-string", "block-kind", "empty",
            "v2", "v2-big32", "v2-noend", "v2-many", "v2-zero-code", "v2-flip", "v2-missing", "v2-dup",
            "v2-foreign", "v2-cut", "v2-reorder", "v2-dup-cut", "v2-header-flip",
            "v2-compact-flag", "v3", "v3-big32", "v3-raw", "v3-zstd-flag", "v3-flip", "v3-cut", "v3-bad-tag",
            "v3-back", "v3-noend", "v4-recovered-old", "v4-recovered", "v4-flags-flip"]


def main():
    parser = argparse.ArgumentParser(description="Write a deterministic synthetic telltale stream.")
    parser.add_argument("--variant", default="basic", help="which stream (see --list)")
    parser.add_argument("--expect", metavar="FILE",
                        help="write eventcnv's expected output instead of the stream")
    parser.add_argument("--list", action="store_true", help="list the variants")
    parser.add_argument("--note", action="store_true",
                        help="say on stderr what is wrong with a corrupt variant")
    parser.add_argument("outfile", nargs="?")
    args = parser.parse_args()
    if args.list:
        print("\n".join(VARIANTS))
        return 0
    if args.variant not in VARIANTS:
        parser.error("unknown variant %r; try --list" % args.variant)
    data, st, note = variant(args.variant)
    if args.note:
        sys.stderr.write("%s: %s\n" % (args.variant, note))
    if args.expect:
        if note != "sound":
            parser.error("--expect needs a sound variant")
        with open(args.expect, "w") as f:
            f.write(expect(st))
        return 0
    if not args.outfile:
        parser.error("OUTFILE is required")
    with open(args.outfile, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
