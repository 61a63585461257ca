#!/usr/bin/env python3
# tests/tools/spans.py -- spans and counters: from the registry to every reader
#
# .design: design/registry.txt .reg.span
#
# Usage: tests/tools/spans.py CONFIG      e.g. python3 tests/tools/spans.py build/san
# CONFIG's eventcnv and examples/pool must be built.
#
# A synthetic 2.0.1 stream (mkstream.py, with spans in its header) whose
# spans are paired here, independently, by a plain reading of the rule
# (.export.span.pair): begins and ends on three threads, a key opened twice
# before its end (the inner closes first), an end that closes nothing, a
# span left open, an event that ends one span and begins another, and
# a begin and an end whose keys are parameters of different letters.
# Covers:
#   spans-stats        eventcnv --spans: count, unfinished, min, median,
#                      p99 and max of each span, against the pairing here
#   spans-list         eventcnv --list names each span and counter
#   spans-chrome       the Trace Event Format's rules (every B closed by
#                      the next E on its track, no E without a B, ts not
#                      going back on a track), then every slice against
#                      the pairing, and every counter event against the
#                      events that set it (NaN left out)
#   spans-sqlite       the span, registry_span and registry_counter tables
#   old-log            a 2.0.0 stream (no spans) reads as before: --spans
#                      says there are none, the exports have none
#   damaged            a byte flipped in the spans is refused, as a
#                      damaged header is
#   example-*          the pool example's own spans and counters
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N
# failed"; exits 1 if any failed.

import decimal
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mkstream  # noqa: E402
from mkstream import ev  # noqa: E402

CODE = {e[1]: e[0] for e in mkstream.EVENTS}
# (name, begin, end, beginKey, endKey): ObjectAlloc's address (A) and
# ObjectFree's (A); PoolCreate's pool (P) and PoolDestroy's (A); Step:
# each Measure ends the step of its index (U) and begins the next.
SPANS = [("ObjectLife", CODE["ObjectAlloc"], CODE["ObjectFree"], 0, 0),
         ("PoolLife", CODE["PoolCreate"], CODE["PoolDestroy"], 0, 0),
         ("Step", CODE["Measure"], CODE["Measure"], 0, 0)]
COUNTERS = [("Size", CODE["ObjectAlloc"], 1, 0xFF),
            ("Value", CODE["Measure"], 1, 0)]

from results import result, summary  # noqa: E402


def build(spans=True):
    """A stream with many spans; returns (bytes, events in time order)."""
    rnd = random.Random(12)
    st = mkstream.Stream(version=(2, 0, 1) if spans else mkstream.VERSION2,
                         spans=(SPANS, COUNTERS) if spans else None)
    a = st.addr
    clock = [1000]

    def tick():
        clock[0] += rnd.randint(1, 50) * 2      # 2 ticks a ns: whole ns
        return clock[0]

    blocks = {}
    order = []

    def put(thread, kind, e):
        blocks.setdefault((thread, kind), []).append(e)
        order.append((e, thread))

    put(1, 0, ev("StreamStart", tick(), *st.version, mkstream.PROGRAM))
    for t in (1, 2, 3):
        put(t, 0, ev("ThreadStart", tick(), t, 7000 + t))
    put(1, 1, ev("PoolCreate", tick(), a(0x100), a(0x100), 4096, "p"))
    live = []
    for i in range(3000):
        t = rnd.randint(1, 3)
        r = rnd.random()
        if r < 0.45 or not live:
            addr = a(0x10000 + rnd.randint(0, 400) * 16)   # keys reused: some opened twice
            put(t, 2, ev("ObjectAlloc", tick(), addr, rnd.randint(1, 100), 8))
            live.append(addr)
        elif r < 0.9:
            addr = live.pop(rnd.randrange(len(live)))
            put(t, 2, ev("ObjectFree", tick(), addr, 0))
        elif r < 0.93:
            put(t, 2, ev("ObjectFree", tick(), a(0x900000 + i), 0))     # closes nothing
        else:
            d = rnd.choice([0.5, 2.0, float("nan"), -1.0])
            put(t, 3, ev("Measure", tick(), rnd.randint(0, 2), d))
    put(2, 1, ev("PoolDestroy", tick(), a(0x100)))
    for t in (2, 3):
        put(t, 0, ev("ThreadExit", tick(), t))
    put(1, 0, ev("StreamEnd", tick(), 0))
    st.blocks = []
    end = blocks.pop((1, 0))
    for (thread, kind), events in sorted(blocks.items()):
        st.blocks.append({"thread": thread, "kind": kind, "seq": len(st.blocks),
                          "events": events, "pad": 0})
    st.blocks.append({"thread": 1, "kind": 0, "seq": len(st.blocks), "events": end, "pad": 0})
    return st.build(), order


def pair(order):
    """The spans, paired by the rule: per (span, key) a stack; an event
    that ends a span closes the innermost first, then may begin one.
    Returns {name: [(begin_ns, end_ns or None, begin_thread, key,
    end_thread, on_thread)]} and {name: unopened}.  on_thread: it ended
    on its begin thread while the latest-begun of the spans open that
    began there, or was left open (.export.span.thread)."""
    out = {s[0]: [] for s in SPANS}
    unopened = {s[0]: 0 for s in SPANS}
    stacks, threads, ids = {}, {}, [0]
    for seq, (e, thread) in enumerate(order):
        ns = (e["clock"] - mkstream.START_CLOCK) // 2
        for name, begin, end, bkey, ekey in SPANS:
            if e["code"] == end:
                stack = stacks.get((name, e["values"][ekey]), [])
                if stack:
                    b = stack.pop()
                    on_stack = threads[b[1]]
                    on = thread == b[1] and on_stack[-1] == b[3]
                    on_stack.remove(b[3])
                    out[name].append((b[0], ns, b[1], b[2], thread, on))
                else:
                    unopened[name] += 1
        for name, begin, end, bkey, ekey in SPANS:
            if e["code"] == begin:
                ids[0] += 1
                threads.setdefault(thread, []).append(ids[0])
                stacks.setdefault((name, e["values"][bkey]), []).append((ns, thread, e["values"][bkey],
                                                                         ids[0]))
    for (name, key), stack in stacks.items():
        for b in stack:
            out[name].append((b[0], None, b[1], b[2], None, True))
    return out, unopened


def seconds(ns):
    return "%d.%09d" % (ns // 10**9, ns % 10**9)


def stats_lines(spans, unopened):
    width = max([4] + [len(s[0]) for s in SPANS])
    lines = ["%-*s %10s %10s %15s %15s %15s %15s" % (width, "span", "count", "unfinished",
                                                     "min (s)", "median (s)", "p99 (s)", "max (s)")]
    for name, *_ in SPANS:
        d = sorted(e - b for b, e, *_ in spans[name] if e is not None)
        n = len(d)
        unfinished = sum(1 for s in spans[name] if s[1] is None)
        if n:
            figs = [seconds(d[0]), seconds(d[-(-n // 2) - 1]), seconds(d[-(-n * 99 // 100) - 1]),
                    seconds(d[-1])]
        else:
            figs = ["-"] * 4
        lines.append("%-*s %10d %10d %15s %15s %15s %15s" % (width, name, n, unfinished, *figs))
    for name, *_ in SPANS:
        if unopened[name]:
            end = [e[1] for e in mkstream.EVENTS if e[0] == [s for s in SPANS if s[0] == name][0][2]][0]
            lines.append("%s: %d %s event%s closed no open span" % (name, unopened[name], end,
                                                                   "" if unopened[name] == 1 else "s"))
    return lines


def run(eventcnv, *args):
    return subprocess.run([eventcnv] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def check_chrome_rules(doc):
    """The Trace Event Format's rules as readers apply them: the complete
    slices (ph X) of a thread nest; each async slice (ph b) has one end
    (ph e) of its id and name, not before it; each flow (bind_id) has
    one mark out and one in; instants are on threads.  Returns (why,
    slices, counters); slices: (name, begin, end, args, on_thread,
    begin tid, end tid)."""
    slices, counters, by_track, async_, flows = [], [], {}, {}, {}
    for n, e in enumerate(doc["traceEvents"]):
        ph = e.get("ph")
        if ph == "M":
            continue
        if not isinstance(e.get("ts"), (int, decimal.Decimal)):
            return "element %d: ts %r" % (n, e.get("ts")), None, None
        if ph == "C":
            if not isinstance(e.get("args"), dict) or len(e["args"]) != 1:
                return "element %d: a counter without one value" % n, None, None
            counters.append(e)
        elif ph == "X":
            if "bind_id" in e:
                if e["dur"] != 0 or not (e.get("flow_in") or e.get("flow_out")):
                    return "element %d: a flow mark %r" % (n, e), None, None
                flows.setdefault(e["bind_id"], []).append(e)
                continue
            by_track.setdefault((e["pid"], e["tid"]), []).append(e)
            slices.append((e["name"], e["ts"], e["ts"] + e["dur"], e["args"], True, e["tid"], e["tid"]))
        elif ph in ("b", "e"):
            async_.setdefault((e["pid"], e["id"]), []).append(e)
        elif ph != "i":
            return "element %d: ph %r" % (n, ph), None, None
    for track, xs in by_track.items():
        xs.sort(key=lambda e: (e["ts"], -e["dur"]))
        ends = []
        for e in xs:
            while ends and ends[-1] <= e["ts"]:
                ends.pop()
            if ends and e["ts"] + e["dur"] > ends[-1]:
                return "slices overlap without nesting on track %r at %s" % (track, e["ts"]), None, None
            ends.append(e["ts"] + e["dur"])
    for key, pair_ in async_.items():
        if len(pair_) != 2 or pair_[0]["ph"] != "b" or pair_[1]["ph"] != "e" \
           or pair_[0]["name"] != pair_[1]["name"] or pair_[1]["ts"] < pair_[0]["ts"]:
            return "async id %r: %r" % (key, pair_), None, None
        b, e = pair_
        slices.append((b["name"], b["ts"], e["ts"], dict(b["args"], **e["args"]), False, b["tid"], e["tid"]))
        if b["tid"] != e["tid"]:
            marks = flows.pop(b["id"], [])
            if sorted((m.get("flow_out", False), m["tid"], m["ts"]) for m in marks) != \
               sorted([(True, b["tid"], b["ts"]), (False, e["tid"], e["ts"])]):
                return "async id %r: flow marks %r" % (key, marks), None, None
    if flows:
        return "flows of no async slice: %r" % list(flows)[:3], None, None
    return None, slices, counters


def check_chrome(path, spans, order):
    with open(path) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    why, slices, counters = check_chrome_rules(doc)
    if why:
        return why
    last_ns = (max(e["clock"] for e, _ in order) - mkstream.START_CLOCK) // 2
    got = sorted((name, int(b * 1000), int(e * 1000), args.get("unfinished", False), on, bt,
                  bt if args.get("unfinished") else et) for name, b, e, args, on, bt, et in slices)
    want = sorted((name, s[0], s[1] if s[1] is not None else last_ns, s[1] is None, s[5], s[2],
                   s[4] if s[4] is not None else s[2])
                  for name in spans for s in spans[name])
    if got != want:
        diff = [x for x in got if x not in want][:3] + ["/"] + [x for x in want if x not in got][:3]
        return "%d slices, want %d: %r" % (len(got), len(want), diff)
    if not any(s[4] for s in slices) or all(s[4] for s in slices):
        return "want spans both on threads and async"
    keys = [args["key"] for name, b, e, args, on, bt, et in slices if name == "Step"]
    if not keys or not all(isinstance(k, int) for k in keys):
        return "Step's keys (U) are not numbers: %r" % keys[:3]
    keys = [args["key"] for name, b, e, args, on, bt, et in slices if name == "ObjectLife"]
    if not all(isinstance(k, str) and k.startswith("0x") for k in keys):
        return "ObjectLife's keys (A) are not hex: %r" % keys[:3]
    want_c = []
    for e, _ in order:
        for name, code, value, key in COUNTERS:
            if e["code"] == code and e["values"][value] == e["values"][value]:   # not NaN
                track = name if key == 0xFF else "%s[0x%x]" % (name, e["values"][key])
                want_c.append((track, (e["clock"] - mkstream.START_CLOCK) // 2,
                               float(e["values"][value])))
    got_c = [(c["name"], int(c["ts"] * 1000), float(list(c["args"].values())[0])) for c in counters]
    if sorted(got_c) != sorted(want_c):
        return "%d counter events, want %d: %r" % (len(got_c), len(want_c), got_c[:3])
    return None


def check_sqlite(path, spans):
    db = sqlite3.connect(path)
    rows = db.execute("SELECT name, begin_ns, end_ns, duration_ns, begin_thread, end_thread,"
                      " key FROM span").fetchall()
    got = sorted((n, b - mkstream.REALTIME0, None if e is None else e - mkstream.REALTIME0, d, bt, et,
                  k & (2**64 - 1)) for n, b, e, d, bt, et, k in rows)
    want = sorted((name, s[0], s[1], None if s[1] is None else s[1] - s[0], s[2], s[4], s[3])
                  for name in spans for s in spans[name])
    if got != want:
        return "%d spans, want %d; first differences %r / %r" % (
            len(got), len(want), [x for x in got if x not in want][:2], [x for x in want if x not in got][:2])
    reg = db.execute("SELECT name, begin, end, begin_key, end_key FROM registry_span").fetchall()
    if sorted(reg) != sorted([("ObjectLife", "ObjectAlloc", "ObjectFree", "address", "address"),
                              ("PoolLife", "PoolCreate", "PoolDestroy", "pool", "pool"),
                              ("Step", "Measure", "Measure", "index", "index")]):
        return "registry_span %r" % reg
    reg = db.execute("SELECT name, event, value, key FROM registry_counter").fetchall()
    if sorted(reg) != [("Size", "ObjectAlloc", "size", None), ("Value", "Measure", "value", "index")]:
        return "registry_counter %r" % reg
    return None


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: tests/tools/spans.py CONFIG\n")
        return 2
    config = os.path.abspath(sys.argv[1])
    eventcnv = os.path.join(config, "eventcnv")
    tmp = tempfile.mkdtemp(prefix="spans-test.")
    try:
        cases(eventcnv, config, tmp)
    finally:
        subprocess.run(["rm", "-rf", tmp])
    return summary()


def cases(eventcnv, config, tmp):
    data, order = build()
    log = os.path.join(tmp, "spans.tt")
    with open(log, "wb") as f:
        f.write(data)
    spans, unopened = pair(order)
    assert all(spans[n] for n in spans) and unopened["ObjectLife"] > 0
    assert any(s[1] is None for s in spans["ObjectLife"])

    r = run(eventcnv, "--spans", log)
    want = "\n".join(stats_lines(spans, unopened)) + "\n"
    result("spans-stats", r.returncode != 0 and "exit %d: %s" % (r.returncode, r.stderr.decode())
           or (r.stdout.decode() != want and "got\n%s\nwant\n%s" % (r.stdout.decode(), want)))

    r = run(eventcnv, "--list", log)
    out = r.stdout.decode()
    result("spans-list", None if r.returncode == 0
           and "span ObjectLife: from ObjectAlloc to ObjectFree, paired by address\n" in out
           and "span PoolLife: from PoolCreate to PoolDestroy, paired by pool\n" in out
           and "counter Size: size of ObjectAlloc\n" in out
           and "counter Value: value of Measure, one per index\n" in out
           else "exit %d, list:\n%s" % (r.returncode, out[-600:]))

    r = run(eventcnv, "--format", "chrome", "-o", log + ".json", log)
    result("spans-chrome", ("exit %d: %s" % (r.returncode, r.stderr.decode())) if r.returncode
           else check_chrome(log + ".json", spans, order))

    r = run(eventcnv, "--format", "sqlite", "-o", log + ".db", log)
    result("spans-sqlite", ("exit %d: %s" % (r.returncode, r.stderr.decode())) if r.returncode
           else check_sqlite(log + ".db", spans))

    # The same events in a 2.0.0 stream: no spans, read as before.
    old, _ = build(spans=False)
    with open(log + ".old", "wb") as f:
        f.write(old)
    r = run(eventcnv, "--spans", log + ".old")
    why = None
    if r.returncode != 0 or r.stdout != b"no spans: the stream's registry declares none\n":
        why = "--spans: exit %d: %r" % (r.returncode, r.stdout[:200])
    r = run(eventcnv, "--format", "chrome", log + ".old")
    if not why and (r.returncode != 0 or b'"cat":"span"' in r.stdout or b'"ph":"C"' in r.stdout):
        why = "chrome: exit %d, or slices or counters without spans" % r.returncode
    r1, r2 = run(eventcnv, log + ".old"), run(eventcnv, log)
    if not why and (r1.returncode != 0 or r1.stdout.replace(b"major=2 median=0 minor=0", b"")
                    != r2.stdout.replace(b"major=2 median=0 minor=1", b"")):
        why = "the events of the 2.0.0 stream differ from the 2.0.1 one's"
    result("old-log", why)

    # A byte of a span's name flipped: the spans' check fails.
    at = data.index(b"ObjectLife")
    bad = data[:at] + b"X" + data[at + 1:]
    with open(log + ".bad", "wb") as f:
        f.write(bad)
    r = run(eventcnv, "--spans", log + ".bad")
    result("damaged", None if r.returncode == 1 and b"header damaged" in r.stderr
           else "exit %d: %r" % (r.returncode, r.stderr[:300]))

    example(eventcnv, config, tmp)


def example(eventcnv, config, tmp):
    """The pool example declares spans and counters: its log carries them."""
    log = os.path.join(tmp, "pool.log")
    env = dict(os.environ, TELLTALE_FILE=log)
    p = subprocess.run([os.path.join(config, "examples", "pool")], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        result("example-run", "exit %d: %s" % (p.returncode, p.stderr.decode()[-300:]))
        return
    r = run(eventcnv, "--format", "jsonl", log)
    events = [json.loads(line) for line in r.stdout.decode().splitlines()]
    spans = {"ArenaLife": ("ArenaCreate", "ArenaDestroy", "arena"),
             "PoolLife": ("PoolCreate", "PoolDestroy", "pool"),
             "ObjectLife": ("PoolAlloc", "PoolFree", "addr")}
    counts = {}
    for name, (begin, end, key) in spans.items():
        stacks, done = {}, []
        for e in events:
            if e["event"] == end and stacks.get(e["fields"][key]):
                done.append(e["elapsed_ns"] - stacks[e["fields"][key]].pop())
            if e["event"] == begin:
                stacks.setdefault(e["fields"][key], []).append(e["elapsed_ns"])
        counts[name] = (len(done), sum(len(s) for s in stacks.values()), min(done), max(done))
    r = run(eventcnv, "--spans", log)
    got = {}
    for line in r.stdout.decode().splitlines()[1:]:
        f = line.split()
        got[f[0]] = (int(f[1]), int(f[2]), round(float(f[3]) * 1e9), round(float(f[6]) * 1e9))
    result("example-spans", None if r.returncode == 0 and got == counts
           else "exit %d: got %r, want %r" % (r.returncode, got, counts))
    r = run(eventcnv, "--format", "chrome", log)
    doc = json.loads(r.stdout, parse_float=decimal.Decimal)
    why, slices, counters = check_chrome_rules(doc)
    if not why:
        verify = [e for e in events if e["event"] == "PoolVerify"]
        live = [c for c in counters if c["name"].startswith("PoolLive[")]
        if len(slices) != sum(c[0] + c[1] for c in counts.values()):
            why = "%d slices, want %d" % (len(slices), sum(c[0] + c[1] for c in counts.values()))
        elif [c["args"]["live"] for c in live] != [e["fields"]["live"] for e in verify]:
            why = "PoolLive counter events %r, PoolVerify events %r" % (live, verify)
    result("example-chrome", why)


if __name__ == "__main__":
    sys.exit(main())
