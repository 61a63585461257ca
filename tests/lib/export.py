#!/usr/bin/env python3
# tests/lib/export.py -- eventcnv's export formats against an oracle and their readers
#
# .design: design/export.txt .export
#
# Usage: tests/lib/export.py make OUT                   write the test stream
#        tests/lib/export.py make-many OUT              the same and 30000 more events
#        tests/lib/export.py CHECK FILE [KIND|EVENT...]  check FILE, eventcnv's output
#   for the test stream, with --kind/--event naming those kinds and events
#   if given.  CHECK is jsonl, csv, sqlite, chrome or ctf, with -many
#   for the stream of make-many.  Prints nothing and exits 0
#   if FILE is right, else prints why and exits 1.
#
# The test stream is mkstream.py's sound 2.0 stream (every letter, three
# threads, labels, an unknown code) with one more block of the hard
# values: strings with control bytes and invalid UTF-8, and words on
# either side of 2^53.  The oracle is mkstream.py's model of the events,
# not eventcnv's output: each record is checked against the event it
# should be, field by field, after the format's own reader (json, csv)
# has parsed it.

import codecs
import csv
import decimal
import json
import subprocess
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mkstream  # noqa: E402
from mkstream import ev  # noqa: E402

HARD_STRINGS = [
    b"\xff\xfe bad \xc3 lone \xed\xa0\x80 surrogate \xe0\x80\xaf overlong",
    b"ctl \x00"[:-1] + b"\x01\x1b[0m\x7f \"q\" \\ \n\r\t end",
    b"ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
    b"\xd0\xbf\xd1\x80\xd0\xb8 \xe6\x97\xa5\xe6\x9c\xac c1 \xc2\x85 nbsp \xc2\xa0 big \xf4\x90\x80\x80 cut \xe2\x82",
]
BIG_WORDS = [(1 << 53) - 1, 1 << 53, (1 << 53) + 1, (1 << 64) - 1]


def build(many=False):
    st = mkstream.Stream(version=mkstream.VERSION2)
    mkstream.scenario(st)
    a = st.addr
    if many:    # 30000 more events, so that a CTF stream has several packets
        for t in (1, 2, 3):
            for b in range(10):
                evs = [ev("ObjectAlloc", 10000 + (b * 1000 + i) * 3 + t, a(0x10000 + i * 16), i, t)
                       for i in range(1000)]
                st.blocks.insert(len(st.blocks) - 1, {"thread": t, "kind": 2,
                                                      "seq": len(st.blocks), "events": evs,
                                                      "pad": 0})
        # a thread serial far from the others: writers index threads by hash
        st.blocks.insert(len(st.blocks) - 1, {"thread": 4000000000, "kind": 3,
                                              "seq": len(st.blocks), "pad": 0,
                                              "events": [ev("Tick", 7000), ev("Tick", 7001)]})
    events = [ev("Message", 6000 + i, s) for i, s in enumerate(HARD_STRINGS)]
    events += [ev("Everything", 6100 + i, a(0x1000), a(0x1000), w, i, 1.5, "w")
               for i, w in enumerate(BIG_WORDS)]
    st.blocks.insert(len(st.blocks) - 1, {"thread": 1, "kind": 3, "seq": len(st.blocks),
                                          "events": events, "pad": 0})
    return st


codecs.register_error("each-byte", lambda e: ("\ufffd" * (e.end - e.start), e.end))


def json_string(b):
    """What a JSON reader makes of eventcnv's string for bytes b: each
    byte of invalid UTF-8 is U+FFFD, a sequence cut by the string's end
    one a byte too (design/export.txt .export.json)."""
    return b.decode("utf-8", errors="each-byte")


def oracle(st):
    """The records eventcnv should write, in order, as Python values."""
    st.build()                  # sets each event's seq and offset
    events = [e for b in st.blocks for e in b["events"] if e["code"] in mkstream.BY_CODE]
    events.sort(key=lambda e: (e["clock"], e["seq"], e["offset"]))
    hz = st.hz
    syncs = [e for e in events if e["code"] == 0x0003]
    if len(syncs) >= 2:
        ticks = syncs[-1]["clock"] - syncs[0]["clock"]
        ns = syncs[-1]["values"][0] - syncs[0]["values"][0]
        if ticks > 0 and ns >= 1000000:
            hz = ticks * 10**9 // ns or hz
    mask_p = (1 << (8 * st.psize)) - 1
    mask_w = (1 << (8 * st.wsize)) - 1
    interns, labels, threads = {}, {}, {}
    out = []
    for seq, e in enumerate(events):
        code, name, kind, _, _, fmt, _, params = mkstream.BY_CODE[e["code"]]
        delta = e["clock"] - mkstream.START_CLOCK
        sign = -1 if delta < 0 else 1
        delta = abs(delta)
        elapsed = sign * (delta // hz * 10**9 + (delta % hz) * 10**9 // hz)
        values = list(e["values"])
        if code == 0x0004:
            interns[values[0] & mask_w] = values[1]
        elif code == 0x0005:
            labels[values[0] & mask_p] = values[1] & mask_w
        elif code == 0x0007:
            threads.setdefault(values[0], {})["tid"] = values[1]
        elif code == 0x0008:
            threads.setdefault(values[0], {})["name"] = values[1]
        fields, lab, raw = {}, {}, {}
        for letter, (pname, _), value in zip(fmt, params, values):
            if mkstream.wire.LETTERS[letter]["form"] == "unsigned":   # as wide as its field
                raw[pname] = value & ((1 << 8 * mkstream.wire.letter_size(letter, st.psize, st.wsize)) - 1)
            else:
                raw[pname] = value
            if letter in "PA":
                fields[pname] = "0x%x" % (value & mask_p)
                lid = labels.get(value & mask_p)
                if lid is not None and lid in interns:
                    lab[pname] = json_string(interns[lid])
            elif letter == "W":
                v = value & mask_w
                fields[pname] = str(v) if v > 2**53 else v
            elif letter == "U":
                fields[pname] = value & 0xFFFFFFFF
            elif letter == "D":
                fields[pname] = value if math.isfinite(value) else \
                    ("nan" if value != value else "inf" if value > 0 else "-inf")
            else:
                fields[pname] = json_string(value)
        t = threads.get(e["thread"], {})
        rec = {"seq": seq, "time_ns": mkstream.REALTIME0 + elapsed, "elapsed_ns": elapsed,
               "thread": e["thread"], "tid": t.get("tid"),
               "thread_name": json_string(t["name"]) if "name" in t else None,
               "pid": mkstream.PID, "program": mkstream.PROGRAM,
               "kind": mkstream.KINDS[e["kind"]][0], "event": name, "fields": fields}
        if lab:
            rec["labels"] = lab
        rec["raw"] = raw        # the values themselves, for SQLite
        out.append(rec)
    return out


def same(got, want):
    """Equal, with doubles compared bit for bit (-0.0 is not 0.0)."""
    if isinstance(want, float) or isinstance(got, float):
        return isinstance(got, (int, float)) and \
            math.copysign(1, got) == math.copysign(1, want) and float(got) == want
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and \
            all(same(got[k], want[k]) for k in want)
    return type(got) is type(want) and got == want


def compare(records, want):
    want = [{k: v for k, v in w.items() if k != "raw"} for w in want]
    if len(records) != len(want):
        return "%d records, want %d" % (len(records), len(want))
    for got, w in zip(records, want):
        if not same(got, w):
            return "record %d:\n  got  %r\n  want %r" % (w["seq"], got, w)
    return None


def check_jsonl(path, want):
    records = []
    with open(path, "rb") as f:
        data = f.read()
    data.decode("utf-8")        # strict: the file is UTF-8 throughout
    for n, line in enumerate(data.split(b"\n")[:-1], 1):
        try:
            records.append(json.loads(line))
        except ValueError as e:
            return "line %d is not JSON: %s" % (n, e)
    if not data.endswith(b"\n"):
        return "the last line has no newline"
    return compare(records, want)


def check_csv(path, want):
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        raw = f.read()
    if not raw.endswith("\r\n"):
        return "rows do not end with CRLF"
    rows = list(csv.reader(raw.splitlines(keepends=True), strict=True))
    header = ["seq", "time_ns", "elapsed_ns", "thread", "tid", "thread_name", "pid", "program",
              "kind", "event", "fields", "labels"]
    if rows[0] != header:
        return "header %r" % rows[0]
    records = []
    for row in rows[1:]:
        if len(row) != len(header):
            return "row %r has %d cells" % (row, len(row))
        r = dict(zip(header, row))
        rec = {k: int(r[k]) for k in ("seq", "time_ns", "elapsed_ns", "thread", "pid")}
        rec["tid"] = int(r["tid"]) if r["tid"] else None
        # a text cell holds what a JSON string would between its quotes
        rec["thread_name"] = json.loads('"%s"' % r["thread_name"]) if r["thread_name"] else None
        rec.update(program=r["program"], kind=r["kind"], event=r["event"],
                   fields=json.loads(r["fields"]))
        if r["labels"]:
            rec["labels"] = json.loads(r["labels"])
        records.append(rec)
    return compare(records, want)


def sqlite_json(db, sql):
    """Rows of sql, as the sqlite3 command's -json mode gives them;
    strings keep their bytes (surrogateescape)."""
    out = subprocess.run(["sqlite3", "-json", db, sql], check=True, stdout=subprocess.PIPE).stdout
    return json.loads(out.decode("utf-8", errors="surrogateescape") or "[]")


def int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def check_sqlite(path, want):
    """The event table and each event's table, by the sqlite3 command.
    design/export.txt .export.sqlite"""
    rows = sqlite_json(path, "SELECT seq, time_ns, thread, kind, name FROM event ORDER BY seq")
    w = [{"seq": r["seq"], "time_ns": r["time_ns"], "thread": r["thread"], "kind": r["kind"],
          "name": r["event"]} for r in want]
    if rows != w:
        return "event table:\n  got  %r\n  want %r" % (rows[:3], w[:3])
    tables = {n: t for n, t in (tuple(r.values()) for r in sqlite_json(
        path, "SELECT name, tbl FROM registry_event"))}
    by_seq = {r["seq"]: r for r in want}
    for name, table in tables.items():
        for row in sqlite_json(path, 'SELECT * FROM "%s" ORDER BY seq' % table):
            r = by_seq.get(row.pop("seq"))
            if r is None or r["event"] != name:
                return "%s has a row that is not a %s event" % (table, name)
            expect = {}
            for k, v in r["raw"].items():
                if isinstance(v, bytes):    # valid UTF-8: bad bytes as U+FFFD
                    row[k] = row[k].encode("utf-8", errors="surrogateescape")
                    v = json_string(v).encode("utf-8")
                elif isinstance(v, float):
                    v = None if v != v else v    # NaN is NULL in SQLite
                else:
                    v = int64(v)
                expect[k] = v
            if row != expect:
                return "%s seq %d:\n  got  %r\n  want %r" % (table, r["seq"], row, expect)
    return None


def check_chrome(path, want):
    """The Trace Event Format's rules (JSON Object Format), then each
    instant event against the oracle.  design/export.txt .export.chrome"""
    with open(path, "rb") as f:
        try:
            doc = json.loads(f.read().decode("utf-8"), parse_float=decimal.Decimal)
        except ValueError as e:
            return "not JSON: %s" % e
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return "no traceEvents array"
    if doc.get("displayTimeUnit") not in (None, "ms", "ns"):
        return "displayTimeUnit %r" % doc.get("displayTimeUnit")
    last, named, instants = {}, {}, []
    process_names = []
    for n, e in enumerate(doc["traceEvents"]):
        if not isinstance(e, dict):
            return "element %d is not an object" % n
        ph = e.get("ph")
        if ph not in ("i", "M"):
            return "element %d has ph %r" % (n, ph)
        if not isinstance(e.get("name"), str):
            return "element %d has no name" % n
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            return "element %d lacks an integer pid or tid" % n
        if e["pid"] != mkstream.PID:
            return "element %d has pid %r" % (n, e["pid"])
        if ph == "M":
            args = e.get("args")
            if e["name"] == "process_name":
                process_names.append(args.get("name"))
            elif e["name"] == "thread_name":
                if not isinstance(args.get("name"), str):
                    return "element %d: thread_name without a name" % n
                named[e["tid"]] = args["name"]
            elif e["name"] == "thread_sort_index":
                if not isinstance(args.get("sort_index"), int):
                    return "element %d: thread_sort_index without an integer" % n
            else:
                return "element %d: metadata %r" % (n, e["name"])
            continue
        if e.get("s") != "t" or not isinstance(e.get("cat"), str) or \
                not isinstance(e.get("args"), dict):
            return "element %d: an instant event without scope t, cat or args" % n
        ts = e.get("ts")
        if not isinstance(ts, (int, decimal.Decimal)):
            return "element %d: ts %r is not a number" % (n, ts)
        key = (e["pid"], e["tid"])
        if key in last and ts < last[key]:
            return "element %d: ts %s goes back on thread %d (from %s)" % (n, ts, e["tid"], last[key])
        last[key] = ts
        if e["tid"] not in named:
            return "element %d: thread %d has no thread_name before its events" % (n, e["tid"])
        instants.append(e)
    if process_names != [mkstream.PROGRAM]:
        return "process_name %r" % process_names
    if named.get(1) != "main":
        return "thread 1 is named %r" % named.get(1)
    if len(instants) != len(want):
        return "%d instant events, want %d" % (len(instants), len(want))
    for e, w in zip(instants, want):
        args = dict(w["fields"])
        if "labels" in w:
            args["labels"] = w["labels"]
        got = {"name": e["name"], "cat": e["cat"], "tid": e["tid"],
               "ns": e["ts"] * 1000, "args": e["args"]}
        exp = {"name": w["event"], "cat": w["kind"], "tid": w["thread"],
               "ns": w["elapsed_ns"], "args": args}
        if got["ns"] != exp["ns"]:
            return "seq %d: ts %s, want %d ns" % (w["seq"], e["ts"], w["elapsed_ns"])
        got["ns"] = exp["ns"]
        for k, v in got["args"].items():    # back from Decimal
            if isinstance(v, decimal.Decimal):
                got["args"][k] = float(v)
        if not same(got, exp):
            return "seq %d:\n  got  %r\n  want %r" % (w["seq"], got, exp)
    return None


def check_ctf(path, want, every):
    """Every event as babeltrace2 reads it (its Python bindings, bt2),
    thread by thread in order, against the oracle: the name, the time in
    ns since the epoch, every field's value, and its packet's context:
    its kind's name, its thread's OS id and the thread's latest name in
    the log (every event, unfiltered), 0 and "" if none.
    design/export.txt .export.ctf, .export.ctf.thread"""
    import bt2
    final = {}
    for w in every:
        t = final.setdefault(w["thread"], [0, ""])
        if w["tid"] is not None:
            t[0] = w["tid"]
        if w["thread_name"] is not None:
            t[1] = w["thread_name"]
    got = {}
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        thread = int(ev.packet.context_field["thread"])
        fields = {}
        for k, v in ev.payload_field.items():
            if isinstance(v, bt2._RealFieldConst):
                fields[k] = float(v)
            elif isinstance(v, bt2._StringFieldConst):
                fields[k] = str(v).encode("utf-8", errors="surrogateescape")
            else:
                fields[k] = int(v)
        ns = msg.default_clock_snapshot.ns_from_origin
        context = ev.packet.context_field
        kind = context["kind"].labels
        name = str(context["thread_name"]).encode("utf-8", errors="surrogateescape")
        got.setdefault(thread, []).append((ev.name, ns, fields, kind, int(context["tid"]),
                                           json_string(name)))
    exp = {}
    for w in want:
        fields = {}
        for k, v in w["raw"].items():
            fields[k] = v      # strings keep their bytes in CTF
        exp.setdefault(w["thread"], []).append((w["event"], w["time_ns"], fields, [w["kind"]],
                                                *final[w["thread"]]))
    if sorted(got) != sorted(exp):
        return "threads %r, want %r" % (sorted(got), sorted(exp))
    for thread in exp:
        if len(got[thread]) != len(exp[thread]):
            return "thread %d: %d events, want %d" % (thread, len(got[thread]), len(exp[thread]))
        for g, e in zip(got[thread], exp[thread]):
            if g[:2] != e[:2] or g[3:] != e[3:] or not same(g[2], e[2]) and not nan_same(g[2], e[2]):
                return "thread %d:\n  got  %r\n  want %r" % (thread, g, e)
    return None


def nan_same(a, b):
    """same, but NaN equals NaN"""
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
            continue
        if not same(x, y):
            return False
    return True


def main():
    if len(sys.argv) == 3 and sys.argv[1] in ("make", "make-many"):
        with open(sys.argv[2], "wb") as f:
            f.write(build(sys.argv[1] == "make-many").build())
        return 0
    if len(sys.argv) < 3:
        sys.stderr.write("usage: export.py CHECK FILE [KIND|EVENT...]\n")
        return 2
    check, path, only = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    many = check.endswith("-many")     # the stream of make-many
    check = check[:-5] if many else check
    every = oracle(build(many))
    want = [r for r in every if not only or r["kind"] in only or r["event"] in only]
    if check == "ctf":
        why = check_ctf(path, want, every)
    else:
        why = {"jsonl": check_jsonl, "csv": check_csv, "sqlite": check_sqlite,
               "chrome": check_chrome}[check](path, want)
    if why:
        print(why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
