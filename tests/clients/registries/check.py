#!/usr/bin/env python3
"""tests/clients/registries/check.py -- four registries in one process and one log.

.design: design/tests.txt .test.registries

Usage: python3 tests/clients/registries/check.py BUILD

Runs BUILD/tests/registries/app (tests/clients/registries/app.c), whose program,
shared library, static library and plugin each emit into a registry of
their own, generated on its own, with clashing codes and names, and
checks what every reader shows:

  return       the log of a program that returned (its plugin loaded twice:
               the second time its kinds and events are plugin#2's): every event of every
               registry, each under its own registry's kind and name, with
               its fields (tag says whose it is), exactly as many as were
               emitted, in jsonl, csv, SQLite, Chrome's JSON, CTF (read by
               babeltrace2), text,
               --count and an archive of the log; --list names every
               registry's events; the traceback names both Work events
  kill         the same for a program killed by SIGKILL, its log
               recovered from its live file
  exit         exit() from one thread while the others emit into every
               registry, 8 times: exit status 7, and a log eventcnv reads
               whole, every registry's events in it
  record-off   TELLTALE_RECORD=all,-cache:Lookup: no cache event, and
               every other registry's as before
  gdb          the gdb extension, on the program stopped before alloc's
               Work goes off: its kinds are every registry's, by their
               own names, and "telltale off alloc:Pool" turns alloc's kind
               Pool off and the program's kind Pool not
  old          a program compiled against telltale's headers and gen of
               before registries had sources (stream 3.0.5, from git), run
               with this libtelltale.so: its events, in its registry, all
               read back
  same-name    a plugin whose registry is named alloc, as the shared
               library's is: refused, said on stderr at each of its two
               loads, its events not
               recorded; the program runs on and every other registry's
               events are as before
  later        TELLTALE_CONTROL=all,-plugin:Plug names a registry that joins
               after the session began: none of its events, no warning
  filter-plain TELLTALE_FILTER="Work seq<10": a plain name reaches every
               registry's Work (alloc's and app's), no other event
  output-off   alloc turned its own kind Work's output off with the API:
               its Work events after that are not in the log, the
               program's Work events, of a kind of the same name, are
               (checked in every run)

Each case prints "ok NAME" or "FAIL NAME: why"; the last line counts them.
"""

import csv
import re
import io
import json
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile

TAGS = {"app": 1, "alloc": 2, "cache": 3, "plugin": 4}
EVENTS = {   # registry -> events, with the check of each one's fields
    "app": ["AppJob", "Work"],
    "alloc": ["AllocBlock", "Work"],
    "cache": ["CacheHit"],
    "plugin": ["PluginCall"],
}

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
from results import result as report, summary  # noqa: E402
import mkstream  # noqa: E402


def expected(counts, cache=True, plugin=True):
    """(registry, event) -> the set of (thread, seq) emitted and output"""
    t, n, p, after = counts["threads"], counts["events"], counts["plugin_threads"], counts["after"]
    want = {}
    pairs = {(s, q) for s in range(t) for q in range(n)}
    want[("app", "AppJob")] = set(pairs)
    want[("app", "Work")] = set(pairs) | {(9, q) for q in range(after)}
    want[("alloc", "AllocBlock")] = set(pairs)
    want[("alloc", "Work")] = set(pairs)   # its after-quiet ones are output off
    want[("cache", "CacheHit")] = set(pairs) if cache else set()
    want[("plugin", "PluginCall")] = ({(10 + s, q) for s in range(p) for q in range(n)}
                                      | {(12, q) for q in range(counts["again"])}
                                      if plugin else set())
    return want


def whose(kind, event):
    """The registry and event a reader's kind and event name say: the
    kind is REGISTRY:Kind (more than one registry besides telltale's),
    and the event is its own name, or REGISTRY:Name where an earlier
    registry had the name"""
    if ":" not in kind:
        return None, None
    reg = kind.split(":", 1)[0]
    if ":" in event:
        ereg, ename = event.split(":", 1)
        if ereg != reg:
            return None, None
        return reg.split("#")[0], ename
    return reg.split("#")[0], event   # plugin#2: the plugin loaded again


def fieldsWhy(reg, event, f):
    """Why an event's fields are not what the program emitted, or None"""
    if f.get("tag") != TAGS[reg]:
        return "tag %r, not %d" % (f.get("tag"), TAGS[reg])
    s, q = f.get("thread"), f.get("seq")
    if event == "AppJob" and f.get("name") != "job-%s-%s" % (s, q):
        return "name %r" % f.get("name")
    if event == "AllocBlock" and f.get("size") != q * 16:
        return "size %r for seq %r" % (f.get("size"), q)
    if event == "CacheHit" and abs(float(f.get("ratio")) - q / 4) > 1e-9:
        return "ratio %r for seq %r" % (f.get("ratio"), q)
    if event == "PluginCall" and f.get("self") in (None, "0x0", 0):
        return "self %r" % f.get("self")
    return None


def compare(rows, want):
    """rows: (kind, event, fields) of the client events.  Why they are not
    exactly want, or None."""
    got = {k: set() for k in want}
    for kind, event, f in rows:
        reg, ev = whose(kind, event)
        if reg is None or (reg, ev) not in want:
            return "an event shown as kind %r, event %r" % (kind, event)
        why = fieldsWhy(reg, ev, f)
        if why:
            return "%s %s: %s" % (kind, event, why)
        key = (f["thread"], f["seq"])
        if key in got[(reg, ev)]:
            return "%s %s thread %s seq %s twice" % (reg, ev, key[0], key[1])
        got[(reg, ev)].add(key)
    for k in want:
        if got[k] != want[k]:
            return "%s %s: %d events, %d emitted (%d missing, %d extra)" % (
                k[0], k[1], len(got[k]), len(want[k]), len(want[k] - got[k]), len(got[k] - want[k]))
    return None


def cnv(build, *args, text=True):
    return subprocess.run([os.path.join(build, "eventcnv")] + list(args), capture_output=True,
                          text=text, timeout=300)


def jsonlRows(build, log):
    r = cnv(build, "--format", "jsonl", log)
    if r.returncode not in (0, 1):
        raise RuntimeError("eventcnv --format jsonl: exit %d: %s" % (r.returncode, r.stderr[:300]))
    rows = []
    for line in r.stdout.splitlines():
        e = json.loads(line)
        # EventsFiltered ends a filtered block, under the block's kind
        if e["kind"] != "Telltale" and e["event"] != "EventsFiltered":
            rows.append((e["kind"], e["event"], e["fields"]))
    return rows


def checkLog(build, tmp, name, log, want):
    rows = jsonlRows(build, log)
    report(name + "/jsonl", compare(rows, want))
    counts = {}
    for kind, event, _ in rows:
        counts[(kind, event)] = counts.get((kind, event), 0) + 1

    def sameCounts(other):
        mine = {k: v for k, v in other.items() if k[0] != "Telltale"}
        if mine != counts:
            diff = sorted(set(mine.items()) ^ set(counts.items()))[:4]
            return "counts differ from jsonl's: %s" % diff
        return None

    # csv: the same rows
    r = cnv(build, "--format", "csv", log)
    crow = [(row["kind"], row["event"], json.loads(row["fields"]))
            for row in csv.DictReader(io.StringIO(r.stdout)) if row["kind"] != "Telltale"]
    report(name + "/csv", compare(crow, want))

    # SQLite: per kind and event, and one table per event, named as shown
    db = os.path.join(tmp, name + ".db")
    r = cnv(build, "--format", "sqlite", "-o", db, log)
    try:
        con = sqlite3.connect(db)
        got = {(k, e): c for k, e, c in
               con.execute("SELECT kind, name, count(*) FROM event GROUP BY kind, name")}
        tables = {e: t for e, t in con.execute("SELECT name, tbl FROM registry_event")}
        why = sameCounts(got)
        for (kind, event), n in counts.items():
            t = tables.get(event)
            if why is None and (t is None or
                                con.execute('SELECT count(*) FROM "%s"' % t.replace('"', '""'))
                                .fetchone()[0] != n):
                why = "table of %s does not hold its %d events" % (event, n)
        con.close()
    except sqlite3.Error as err:
        why = "sqlite: %s (eventcnv: %s)" % (err, r.stderr[:200])
    report(name + "/sqlite", why)

    # Chrome's JSON: name, cat (the kind) and args
    r = cnv(build, "--format", "chrome", log)
    try:
        trace = json.loads(r.stdout)
        crows = [(e["cat"], e["name"], e["args"]) for e in trace["traceEvents"]
                 if e.get("ph") == "i" and e.get("cat") not in (None, "Telltale")]
        report(name + "/chrome", compare(crows, want))
    except (ValueError, KeyError) as err:
        report(name + "/chrome", "not a trace: %s" % err)

    # text and --count: the same counts
    r = cnv(build, log)
    tcounts = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[3] != "Telltale":
            tcounts[(parts[3], parts[4])] = tcounts.get((parts[3], parts[4]), 0) + 1
    report(name + "/text", sameCounts(tcounts))
    r = cnv(build, "--count", log)
    ccounts = {}
    for line in r.stdout.splitlines():
        n, event = line.split()
        ccounts[event] = int(n)
    byEvent = {}
    for (kind, event), n in counts.items():
        byEvent[event] = byEvent.get(event, 0) + n
    report(name + "/count", None if all(ccounts.get(e) == n for e, n in byEvent.items())
           else "--count %s, jsonl %s" % (ccounts, byEvent))

    # CTF, as babeltrace2 reads it: each event class by the name the log
    # shows, with its fields (CTF has no kind: whose it is by the name)
    ctf = os.path.join(tmp, name + ".ctf")
    r = cnv(build, "--format", "ctf", "-o", ctf, log)
    byName = {}
    for kind, event, _ in rows:
        byName[event] = kind
    try:
        bt = subprocess.run(["babeltrace2", ctf], capture_output=True, text=True, timeout=300)
        brows = []
        for line in bt.stdout.splitlines():
            m = re.match(r"\[[^]]*\] \([^)]*\) [^ ]+ ([^ ]+): \{[^}]*\}, \{ (.*) \}$", line)
            if m is None or m.group(1) not in byName:
                continue
            f = {}
            for k, v in re.findall(r'(\w+) = ("(?:[^"\\]|\\.)*"|[^,]+)', m.group(2)):
                f[k] = v[1:-1] if v.startswith('"') else (float(v) if "." in v or "e" in v
                                                          else int(v, 0))
            if "self" in f:
                f["self"] = hex(f["self"])
            brows.append((byName[m.group(1)], m.group(1), f))
        why = None if bt.returncode == 0 else "babeltrace2: exit %d: %s" % (bt.returncode, bt.stderr[-300:])
        report(name + "/ctf", why or compare(brows, want))
    except FileNotFoundError:
        report(name + "/ctf", "babeltrace2 is not installed (.ci/install installs it)")

    # an archive of the log reads as the log
    archive = os.path.join(tmp, name + ".tt")
    r = cnv(build, "--format", "telltale", "--zstd", "-o", archive, log)
    if r.returncode not in (0, 1):
        report(name + "/archive", "eventcnv --format telltale: exit %d: %s" % (r.returncode, r.stderr[:300]))
    else:
        report(name + "/archive", compare(jsonlRows(build, archive), want))


OLD = "17ff468"     # telltale before registries had sources (stream 3.0.5)


def oldCase(build, tmp, top):
    """Why a program built against the older headers does not log, or None"""
    d = os.path.join(tmp, "old")
    os.makedirs(os.path.join(d, "out"))
    for f in ("src/event/event.h", "src/event/eventcom.h", "src/event/eventapi.h",
              "src/plinth/plinth.h", "src/plinth/plinthclock.h", "gen", "eventdef.h"):
        r = subprocess.run(["git", "-C", top, "show", "%s:%s" % (OLD, f)], capture_output=True)
        if r.returncode != 0:
            return "git show %s:%s: %s" % (OLD, f, r.stderr.decode()[:200])
        with open(os.path.join(d, os.path.basename(f) if f != "gen" else "gen.py"), "wb") as out:
            out.write(r.stdout)
    steps = [[sys.executable, os.path.join(d, "gen.py"), "--core", os.path.join(d, "eventdef.h"),
              "--out", os.path.join(d, "out"), os.path.join(top, "tests/clients/registries/old_eventdef.h")],
             ["gcc", "-std=c11", "-O2", "-I", d, "-I", os.path.join(d, "out"), "-o",
              os.path.join(d, "old"), os.path.join(top, "tests/clients/registries/old.c"),
              os.path.join(d, "out", "eventgen.c"), "-L", build, "-l:libtelltale.so",
              "-Wl,-rpath," + build, "-lpthread"],
             [os.path.join(d, "old")]]
    for step in steps:
        r = subprocess.run(step, cwd=d, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, TELLTALE_FILE="old.log"))
        if r.returncode != 0 or (step[0].endswith("old") and r.stderr):
            return "%s: exit %d: %s" % (os.path.basename(step[0]), r.returncode, r.stderr[:300])
    rows = [(k, e, f) for k, e, f in jsonlRows(build, os.path.join(d, "old.log"))]
    got = sorted((f["thread"], f["seq"]) for k, e, f in rows
                 if k == "Tick" and e == "OldTick" and f["text"] == "tick-%d-%d" % (f["thread"], f["seq"]))
    want = sorted((s, q) for s in range(2) for q in range(3000))
    if got != want or len(rows) != len(want):
        return "%d OldTick events read back, %d emitted (%d rows)" % (len(got), len(want), len(rows))
    return None


def sameName(build, tmp, top):
    """A plugin.so whose registry is named alloc; its path, or None"""
    d = os.path.join(tmp, "same")
    os.makedirs(os.path.join(d, "out"))
    with open(os.path.join(top, "tests/clients/registries/plugin_eventdef.h")) as f:
        text = f.read().replace('#define EVENT_REGISTRY_NAME "plugin"', '#define EVENT_REGISTRY_NAME "alloc"')
    with open(os.path.join(d, "plugin_eventdef.h"), "w") as f:
        f.write(text)
    so = os.path.join(d, "plugin.so")
    for step in ([sys.executable, os.path.join(top, "gen"), "--core", os.path.join(top, "eventdef.h"),
                  "--out", os.path.join(d, "out"), os.path.join(d, "plugin_eventdef.h")],
                 ["gcc", "-std=c11", "-O2", "-fPIC", "-shared", "-I", os.path.join(build, "include"),
                  "-I", os.path.join(d, "out"), "-I", os.path.join(top, "tests/clients/registries"), "-o", so,
                  os.path.join(top, "tests/clients/registries/plugin.c"), os.path.join(d, "out", "eventgen.c"),
                  "-L", build, "-l:libtelltale.so", "-Wl,-rpath," + build, "-lpthread"]):
        r = subprocess.run(step, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return None, "%s: %s" % (os.path.basename(step[0]), r.stderr[:300])
    return so, None


def kindsPast(build, log):
    """A log whose registries have more kinds than a reader takes, as an
    older runtime wrote: churn's log with copies of the plugin's last
    registry block under new numbers, then a block of the last of them.
    The reader must say both, not crash (it did)."""
    with open(log, "rb") as f:
        d = bytearray(f.read())
    blocks, pos = [], d.find(b"TTBK")
    while 0 <= pos < len(d) - 36:
        length, = struct.unpack_from("<I", d, pos + 4)
        blocks.append((pos, length))
        pos += length
    kind = lambda b: struct.unpack_from("<H", d, b[0] + 12)[0]
    regs = [b for b in blocks if kind(b) == 0xFFFF]
    last = struct.unpack_from("<H", d, regs[-1][0] + 36)[0] if regs else None
    calls = [b for b in blocks if kind(b) >> 8 == last]
    if not calls:
        return "no plugin registry block and block of its events in %s" % log
    index = max(struct.unpack_from("<I", d, b[0] + 28)[0] for b in blocks)

    def copy(b, number=None, kind=None):
        nonlocal index
        block = bytearray(d[b[0]:b[0] + b[1]])
        if number is not None:
            struct.pack_into("<H", block, 36, number)
        if kind is not None:
            struct.pack_into("<H", block, 12, kind)
        index += 1
        struct.pack_into("<II", block, 28, index, 0)
        struct.pack_into("<I", block, 32, mkstream.crc32c(bytes(block)))
        return block
    more = bytearray()
    for n in range(last + 1, last + 11):
        more += copy(regs[-1], number=n)
    more += copy(calls[-1], kind=(last + 10) << 8 | kind(calls[-1]) & 0xFF)
    past = log + ".past"
    with open(past, "wb") as f:
        f.write(d[:pos] + more)
    r = cnv(build, "--count", past)
    if r.returncode != 1 or "more than a reader takes (256)" not in r.stderr \
            or "(registry %d, kind %d) is in no registry of the stream" % (
                last + 10, kind(calls[-1]) & 0xFF) not in r.stderr:
        return "eventcnv exit %d: %s" % (r.returncode, r.stderr[-400:])
    return None


def run(build, tmp, name, mode, env=None, plugin=None, extra=()):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    e = dict(os.environ)
    e.update({"TELLTALE_FILE": "r.log"})
    e.update(env or {})
    p = subprocess.run([os.path.join(build, "tests", "registries", "app"), "counts",
                        plugin or os.path.join(build, "tests", "registries", "plugin.so"), mode]
                       + list(extra),
                       cwd=d, env=e, capture_output=True, text=True, timeout=120)
    with open(os.path.join(d, "counts")) as f:
        counts = json.load(f)
    return p, d, counts


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    with tempfile.TemporaryDirectory() as tmp:
        p, d, counts = run(build, tmp, "return", "return")
        report("return/run", None if p.returncode == 0 and p.stderr == "" else
               "exit %d: %s" % (p.returncode, p.stderr[:300]))
        checkLog(build, tmp, "return", os.path.join(d, "r.log"), expected(counts))

        # --list: each registry's events, under their names in the log
        r = cnv(build, "--list", os.path.join(d, "r.log"))
        names = {"AppJob": "app:Job", "AllocBlock": "alloc:Pool", "CacheHit": "cache:Lookup",
                 "PluginCall": "plugin:Plug", "Work": "alloc:Work", "app:Work": "app:Work"}
        listed = {}
        for line in r.stdout.splitlines():   # event CODE NAME: kind KIND, ...
            parts = line.split()
            if len(parts) >= 5 and parts[0] == "event" and parts[3] == "kind":
                listed[parts[2].rstrip(":")] = parts[4].rstrip(",")
        missing = ["%s (%s)" % (n, k) for n, k in names.items() if listed.get(n) != k]
        report("return/list", "missing %s" % missing if missing else None)

        # the traceback: both registries' Work, told apart by tag
        with open(os.path.join(d, "dump.txt")) as f:
            dump = f.read()
        report("return/traceback", None if re.search(r" app:Work +Work +tag=1 thread=9 ", dump)
               and re.search(r" alloc:Work +Work +tag=2 thread=9 ", dump)
               else "dump.txt: %s" % dump[:400])

        # the gdb extension
        top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
        g = subprocess.run(["gdb", "-batch", "-nx", "-x", os.path.join(top, "tools", "gdb", "telltale.py"),
                            "-ex", "break allocQuiet", "-ex", "run", "-ex", "telltale kinds",
                            "-ex", "telltale off alloc:Pool", "-ex", "telltale kinds",
                            "--args", os.path.join(build, "tests", "registries", "app"),
                            os.path.join(tmp, "gdb.counts"),
                            os.path.join(build, "tests", "registries", "plugin.so"), "return"],
                           cwd=tmp, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, TELLTALE_FILE=os.path.join(tmp, "gdb.log")))
        listings = g.stdout.split("registries ")[1:]
        def state(listing, kind):
            for line in listing.splitlines():
                parts = line.split()
                if len(parts) >= 4 and parts[1] == kind:
                    return parts[2], parts[3]
            return None
        why = None
        if len(listings) != 2:
            why = "no two kinds listings: %s" % (g.stdout + g.stderr)[-400:]
        else:
            for kind in ("alloc:Work", "app:Work", "app:Job", "cache:Lookup", "alloc:Pool", "app:Pool"):
                if state(listings[0], kind) != ("on", "on"):
                    why = "before: %s is %s" % (kind, state(listings[0], kind))
            if why is None and (state(listings[1], "alloc:Pool") != ("on", "off")
                                or state(listings[1], "app:Pool") != ("on", "on")):
                why = "after 'telltale off alloc:Pool': alloc:Pool %s, app:Pool %s" % (
                    state(listings[1], "alloc:Pool"), state(listings[1], "app:Pool"))
        report("gdb", why)

        report("old", oldCase(build, tmp, top))

        so, why = sameName(build, tmp, top)
        if so is not None:
            p, d, counts = run(build, tmp, "samename", "return", plugin=so)
            said = p.stderr.count("telltale: registry 'alloc' of %s is not recorded: another "
                                  "registry in this process has its name" % so)
            why = ("exit %d, said %d times: %s" % (p.returncode, said, p.stderr[:300])
                   if p.returncode != 0 or said != 2 else   # once at each load
                   compare(jsonlRows(build, os.path.join(d, "r.log")), expected(counts, plugin=False)))
        report("same-name", why)

        p, d, counts = run(build, tmp, "kill", "kill")
        report("kill/run", None if p.returncode == -9 and os.path.exists(os.path.join(d, "r.log.live"))
               else "exit %d, live file %s" % (p.returncode, os.path.exists(os.path.join(d, "r.log.live"))))
        checkLog(build, tmp, "kill", os.path.join(d, "r.log"), expected(counts))

        why = None
        for i in range(8):
            d = os.path.join(tmp, "exit%d" % i)
            os.makedirs(d)
            p = subprocess.run([os.path.join(build, "tests", "registries", "app"), "counts",
                                os.path.join(build, "tests", "registries", "plugin.so"), "exit"],
                               cwd=d, env=dict(os.environ, TELLTALE_FILE="r.log"),
                               capture_output=True, text=True, timeout=120)
            r = cnv(build, "--count", os.path.join(d, "r.log"))
            shown = {l.split()[1] for l in r.stdout.splitlines() if len(l.split()) == 2}
            if p.returncode != 7 or r.returncode != 0 or r.stderr or not {"AppJob", "AllocBlock", "CacheHit"} <= shown:
                why = "run %d: exit %d (%s); eventcnv exit %d: %s" % (
                    i, p.returncode, p.stderr[:200], r.returncode, r.stderr[:300])
                break
        report("exit", why)

        p, d, counts = run(build, tmp, "later", "return", {"TELLTALE_CONTROL": "all,-plugin:Plug"})
        report("later", "stderr: %s" % p.stderr[:300] if p.stderr or p.returncode != 0 else
               compare(jsonlRows(build, os.path.join(d, "r.log")), expected(counts, plugin=False)))

        p, d, counts = run(build, tmp, "filterplain", "return", {"TELLTALE_FILTER": "Work seq<10"})
        want = expected(counts)
        for k in (("app", "Work"), ("alloc", "Work")):
            want[k] = {(t, q) for t, q in want[k] if q < 10}
        report("filter-plain", "stderr: %s" % p.stderr[:300] if p.stderr or p.returncode != 0 else
               compare(jsonlRows(build, os.path.join(d, "r.log")), want))

        p, d, counts = run(build, tmp, "recordoff", "return", {"TELLTALE_RECORD": "all,-cache:Lookup"})
        report("record-off/run", None if p.returncode == 0 and p.stderr == "" else
               "exit %d: %s" % (p.returncode, p.stderr[:300]))
        report("record-off/jsonl", compare(jsonlRows(build, os.path.join(d, "r.log")),
                                            expected(counts, cache=False)))

        # churn: the plugin's registry blocks go into the log while the
        # writer thread writes the workers' blocks; no block may land
        # inside another (.sol.writer.one), and every event is read.
        # Three runs: one in two failed before.  Then past the kinds a
        # process may join in its life (.reg.many): each load refused
        # is said, and the log still reads whole.
        def churn(name, loads):
            p, d, counts = run(build, tmp, name, "churn", {"TELLTALE_WRITER": "async"},
                               extra=[str(loads)])
            r = cnv(build, "--count", os.path.join(d, "r.log"))
            got = {}
            for line in r.stdout.splitlines():
                if len(line.split()) == 2:
                    n, event = line.split()
                    event = "PluginCall" if event.endswith("PluginCall") else event
                    got[event] = got.get(event, 0) + int(n)
            refused = p.stderr.count("telltale: registry 'plugin' of ")
            said = p.stderr.count("254 registries and 256 kinds in a process's life")
            want = {"app:Work": sum(counts["work"]), "PluginCall": counts["loads"] - refused}
            # the log says what it lacks (RegistryRefused), as eventcnv's end
            told = "" if refused == 0 else (
                "the program refused registry 'plugin' of " if refused == 1 else
                "the program refused %d registries (the first: 'plugin' of " % refused)
            why = ("exit %d: %s" % (p.returncode, p.stderr[:300]) if p.returncode != 0
                   or said != refused or len(p.stderr.splitlines()) != refused
                   else "eventcnv exit %d: %s" % (r.returncode, r.stderr[:300])
                   if r.returncode != 0 or (r.stderr if refused == 0 else
                                            len(r.stderr.splitlines()) != 1 or told not in r.stderr)
                   else None if all(got.get(k) == n for k, n in want.items())
                   else "counted %r, emitted %r" % ({k: got.get(k) for k in want}, want))
            return why, refused

        why = None
        for i in range(3):
            why, refused = churn("churn%d" % i, 24)
            why = why or (refused != 0 and "refused %d of 24 loads" % refused)
            if why:
                break
        report("churn", why)
        why, refused = churn("churn-past", 40)
        report("churn-past", why or (refused == 0 and "none of 40 loads refused"))
        report("reader-kinds-past", kindsPast(build, os.path.join(tmp, "churn0", "r.log")))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
