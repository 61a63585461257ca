#!/usr/bin/env python3
"""bench/malloc-bytes.py -- where a recorder log's bytes go, field by field

.design: design/recorder.txt .malloc.zstd.floor

Usage: bench/malloc-bytes.py LOG [EVENTCNV]   (EVENTCNV: build/eventcnv)

Models the compact encoding (.compact.encoding) of LOG's events: a tag
byte, the clock's zigzag varint difference from the previous event, each
integer field's from the same field of the same event before (addresses,
sizes and stack ids of the allocation events apart, the rest together),
over one thread's events as if in one block; then each field's bytes
alone through zstd -3, which shows what an encoding that kept columns
apart could reach with zstd, and what no encoding of that field can go
below.  Needs the zstd command.  Slow (csv through Python: about 20 s a
million events): meant for perl-sized logs.
"""
import collections
import csv
import json
import subprocess
import sys

ALLOC = {"Malloc", "MallocAt", "Calloc", "CallocAt", "Realloc", "ReallocAt",
         "Free", "FreeSized", "ReallocMove"}
ADDRESS = {"result", "pointer", "old"}


def zig(d):
    return d << 1 if d >= 0 else ((-d) << 1) - 1


def varint(v, out):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def main():
    log = sys.argv[1]
    eventcnv = sys.argv[2] if len(sys.argv) > 2 else "build/eventcnv"
    text = subprocess.run([eventcnv, "--format", "csv", log], capture_output=True, text=True).stdout
    cols = collections.defaultdict(bytearray)
    clock = {}
    last = {}
    tags = {}
    n = 0
    for row in csv.reader(text.splitlines()):
        if row[0] == "seq":
            continue
        n += 1
        thread, event = row[3], row[9]
        t = int(row[2])
        varint(zig(t - clock.get(thread, 0)), cols["clock"])
        clock[thread] = t
        cols["tag"].append(tags.setdefault(event, len(tags) & 0xFF))
        before = last.setdefault((thread, event), {})
        for k, v in (json.loads(row[10]) if row[10] else {}).items():
            if isinstance(v, str) and v.startswith("0x"):
                v = int(v, 16)
            if not isinstance(v, int):
                continue
            col = ("address" if k in ADDRESS else k) if event in ALLOC else "other"
            varint(zig(v - before.get(k, 0)), cols[col])
            before[k] = v
    if n == 0:
        sys.exit("bench/malloc-bytes.py: no events in " + log)
    total = sum(len(c) for c in cols.values())
    print("%s: %d events, compact model %.2f bytes an event" % (log, n, total / n))
    print("%-8s %8s %12s" % ("field", "compact", "zstd -3 alone"))
    ztotal = 0
    for k, c in sorted(cols.items(), key=lambda kv: -len(kv[1])):
        z = len(subprocess.run(["zstd", "-3", "-c"], input=bytes(c), capture_output=True).stdout)
        ztotal += z
        print("%-8s %8.2f %12.2f" % (k, len(c) / n, z / n))
    print("%-8s %8.2f %12.2f" % ("all", total / n, ztotal / n))


main()
