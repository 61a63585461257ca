#!/usr/bin/env python3
# tests/tools/merge.py -- several logs on one timeline: eventcnv a.log b.log ...
#
# .design: design/export.txt .export.merge
#
# Usage: tests/tools/merge.py CONFIG      e.g. python3 tests/tools/merge.py build/san
# CONFIG's eventcnv and examples/pool, and build/libtelltale-malloc.so,
# must be built.
#
# The logs are real: the allocation recorder (tools/replay/record) on a
# shell that runs children, which write OUT.log.PID each, and the pool
# example run twice.  Each log read alone is the oracle.
# Covers:
#   merge-jsonl        the merged JSON lines are every log's, ordered by
#                      time_ns (ties: the order the logs were given, then
#                      each log's own), each with its own pid and program
#   merge-text         each line as the log's own line, but ELAPSED since
#                      the earliest start and PROGRAM[PID] after WALLCLOCK
#   merge-chrome       one pid per process, each named (by its last image:
#                      an image's log and the one it exec'd are one process),
#                      ts per track never going back, and every event of
#                      every log
#   merge-sqlite       the event, thread and process tables keep processes
#                      apart (pid columns; a thread serial in each)
#   merge-spans        two runs of the example: --spans prints each log's
#                      table under its name; chrome pairs the spans of each
#                      process apart (two PoolLife spans per pid)
#   merge-registries   logs with different registries: chrome takes them,
#                      sqlite refuses them (one database, one registry)
#   merge-ctf          ctf takes one FILE: a usage error
#   merge-unreadable   with an empty log (a child killed before its first
#                      block leaves one), a log cut in its header and a
#                      missing one among them, every form (text, jsonl,
#                      csv, chrome, html, sqlite, --count, --summary,
#                      --header, --resync) shows what the readable logs
#                      show, names each other one on stderr, and exits 1
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N
# failed"; exits 1 if any failed, 77 if the logs cannot be made here.

import decimal
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from results import result, summary  # noqa: E402


def run(eventcnv, *args):
    return subprocess.run([eventcnv] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def jsonl(eventcnv, *logs):
    r = run(eventcnv, "--format", "jsonl", *logs)
    return r.returncode, [json.loads(line) for line in r.stdout.decode().splitlines()]


def images(logs):
    """logs with each pid's images in the order they ran: OUT.PID.exec1,
    OUT.PID.exec2, ..., then OUT.PID, the image that exec'd last"""
    def order(log):
        m = re.search(r"\.exec(\d+)$", log)
        return (re.sub(r"\.exec\d+$", "", log), int(m.group(1)) if m else 1 << 30)
    return sorted(logs, key=order)


def seconds(ns):
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return "%s%d.%09d" % (sign, ns // 10**9, ns % 10**9)


def check_jsonl(eventcnv, logs):
    alone = []
    for i, log in enumerate(logs):
        rc, events = jsonl(eventcnv, log)
        if rc != 0:
            return "%s alone: exit %d" % (log, rc)
        alone += [(e["time_ns"], i, n, e) for n, e in enumerate(events)]
    want = [e for _, _, _, e in sorted(alone, key=lambda x: x[:3])]
    rc, got = jsonl(eventcnv, *logs)
    if rc != 0:
        return "merged: exit %d" % rc
    if len(got) != len(want):
        return "%d events, want %d" % (len(got), len(want))
    for n, (g, w) in enumerate(zip(got, want)):
        w = dict(w, seq=n, elapsed_ns=w["time_ns"] - min(x[0] - x[3]["elapsed_ns"] for x in alone))
        if g != w:
            return "event %d:\n  got  %r\n  want %r" % (n, g, w)
    return None


def check_text(eventcnv, logs):
    origin = None
    lines = []
    for log in logs:
        r = run(eventcnv, "--format", "jsonl", log)
        events = [json.loads(line) for line in r.stdout.decode().splitlines()]
        text = run(eventcnv, log).stdout.decode().splitlines()
        for e, line in zip(events, text):
            start = e["time_ns"] - e["elapsed_ns"]
            origin = start if origin is None else min(origin, start)
            lines.append((e["time_ns"], e, line))
    lines.sort(key=lambda x: x[0])      # stable: the logs' order, then each log's
    width = max(len("%s[%d]" % (e["program"], e["pid"])) for _, e, _ in lines)
    want = []
    for t, e, line in lines:
        elapsed, wall, rest = line.split(None, 2)
        tag = "%s[%d]" % (e["program"], e["pid"])
        want.append("%15s %s %-*s %s" % (seconds(t - origin), wall, width, tag, rest))
    r = run(eventcnv, *logs)
    got = r.stdout.decode().splitlines()
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.decode()[:300])
    if len(got) != len(want):
        return "%d lines, want %d" % (len(got), len(want))
    for g, w in zip(got, want):
        if g != w:
            return "\n  got  %s\n  want %s" % (g, w)
    return None


def check_chrome(eventcnv, logs, spans=False):
    r = run(eventcnv, "--format", "chrome", *logs)
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.decode()[:300])
    doc = json.loads(r.stdout, parse_float=decimal.Decimal)
    pids, named, last, opened, instants, slices = set(), {}, {}, {}, {}, {}
    for n, e in enumerate(doc["traceEvents"]):
        pids.add(e["pid"])
        if e["ph"] == "M":
            if e["name"] == "process_name":
                named[e["pid"]] = e["args"]["name"]
            continue
        if e["pid"] not in named:
            return "element %d: pid %d before its process_name" % (n, e["pid"])
        if e["ph"] == "C":
            continue
        track = (e["pid"], e["tid"])
        if e["ph"] == "i":
            if track in last and e["ts"] < last[track]:
                return "element %d: ts goes back on %r" % (n, track)
            last[track] = e["ts"]
            instants[e["pid"]] = instants.get(e["pid"], 0) + 1
        elif (e["ph"] == "X" and "bind_id" not in e) or e["ph"] == "b":
            slices[(e["pid"], e["name"])] = slices.get((e["pid"], e["name"]), 0) + 1
        elif e["ph"] == "e":
            opened[(e["pid"], e["id"])] = opened.get((e["pid"], e["id"]), 0) + 1
    if any(v != 1 for v in opened.values()):
        return "an async slice's id ends twice: %r" % [k for k, v in opened.items() if v != 1][:3]
    want = {}
    for log in images(logs):            # a pid's last image names it
        rc, events = jsonl(eventcnv, log)
        pid = events[0]["pid"]
        want[pid] = (events[0]["program"], want.get(pid, (None, 0))[1] + len(events))
    got = {pid: (named.get(pid), instants.get(pid, 0)) for pid in pids}
    if got != want:
        return "processes (program, events) %r, want %r" % (got, want)
    if spans:
        for pid in want:
            if slices.get((pid, "PoolLife")) != 2:
                return "pid %d has %r PoolLife slices, want 2" % (pid, slices.get((pid, "PoolLife")))
    return None


def check_sqlite(eventcnv, logs, tmp):
    db = os.path.join(tmp, "merged.db")
    r = run(eventcnv, "--format", "sqlite", "-o", db, *logs)
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.decode()[:300])
    con = sqlite3.connect(db)
    want_events, want_threads, want_procs = {}, set(), set()
    for log in logs:
        rc, events = jsonl(eventcnv, log)
        pid = events[0]["pid"]
        want_events[pid] = want_events.get(pid, 0) + len(events)
        want_procs.add((pid, events[0]["program"]))
        want_threads |= {(pid, e["thread"], e["tid"]) for e in events if e["tid"] is not None}
    got = dict(con.execute("SELECT pid, count(*) FROM event GROUP BY pid"))
    if got != want_events:
        return "events by pid %r, want %r" % (got, want_events)
    got = set(con.execute("SELECT pid, program FROM process"))
    if got != want_procs:
        return "process table %r, want %r" % (got, want_procs)
    got = set(con.execute("SELECT pid, thread, tid FROM thread WHERE tid IS NOT NULL"))
    if got != want_threads:
        return "thread table %r, want %r" % (sorted(got), sorted(want_threads))
    order = [row[0] for row in con.execute("SELECT time_ns FROM event ORDER BY seq")]
    if order != sorted(order):
        return "seq is not in time order"
    return None


def check_unreadable(eventcnv, logs, tmp):
    """logs, and others that cannot be read among them, in every form"""
    empty, cut, missing = (os.path.join(tmp, name) for name in ("e.log.999999", "cut.log", "no.log"))
    open(empty, "wb").close()
    with open(logs[0], "rb") as f, open(cut, "wb") as g:
        g.write(f.read(200))
    bad = {empty: "offset 0: empty file", cut: "offset 20: header length", missing: "No such file"}
    given = logs[:1] + [empty] + logs[1:2] + [cut, missing] + logs[2:]
    forms = [[], ["--format", "jsonl"], ["--format", "csv"], ["--format", "chrome"], ["--count"],
             ["--summary"], ["--header"], ["--resync"], ["--format", "html", "-o", "OUT"],
             ["--format", "sqlite", "-o", "OUT"]]
    for n, form in enumerate(forms):
        outs = []
        for files in (logs, given):
            out = os.path.join(tmp, "out%d.%d" % (n, len(files)))
            args = [out if a == "OUT" else a for a in form]
            r = run(eventcnv, *(args + files))
            if "OUT" in form and form[1] == "sqlite":
                con = sqlite3.connect(out)
                outs.append(list(con.execute("SELECT * FROM event ORDER BY seq")))
                con.close()
            elif "OUT" in form:
                with open(out, "rb") as f:
                    outs.append(f.read())
            else:
                outs.append(r.stdout)
        name = " ".join(form) or "text"
        if r.returncode != 1:
            return "%s: exit %d, want 1: %s" % (name, r.returncode, r.stderr.decode()[:300])
        if outs[0] != outs[1]:
            return "%s: the readable logs' output is not what they show alone" % name
        for path, why in bad.items():
            if ("eventcnv: %s: %s" % (path, why)).encode() not in r.stderr:
                return "%s: %s not named on stderr (%r): %s" % (name, path, why, r.stderr.decode()[:300])
    return None


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: tests/tools/merge.py CONFIG\n")
        return 2
    config = os.path.abspath(sys.argv[1])
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    eventcnv = os.path.join(config, "eventcnv")
    tmp = tempfile.mkdtemp(prefix="merge-test.")
    try:
        # A shell and its children, each writing OUT.log.PID.
        out = os.path.join(tmp, "r.log")
        # The recorder is not what is tested: the gcc build's, which a
        # program loads without a sanitizer's runtime.
        env = dict(os.environ, TELLTALE_PRELOAD=os.path.join(top, "build", "libtelltale-malloc.so"))
        env.pop("LD_PRELOAD", None)
        p = subprocess.run([os.path.join(top, "tools", "replay", "record"), out, "--",
                            "sh", "-c", "ls / >/dev/null; (ls /; ls /tmp) | cat >/dev/null"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # The logs that read whole alone: each, an image that exec'd another too (.sol.exec).
        logs = [f for f in [out] + sorted(glob.glob(out + ".*"))
                if run(eventcnv, f).returncode == 0]
        if p.returncode != 0 or len(logs) < 3:
            print("skip merge: the recorder made %d whole logs (exit %d): %s"
                  % (len(logs), p.returncode, p.stderr.decode()[-200:]))
            return 77
        result("merge-jsonl", check_jsonl(eventcnv, logs))
        result("merge-text", check_text(eventcnv, logs))
        result("merge-chrome", check_chrome(eventcnv, logs))
        result("merge-sqlite", check_sqlite(eventcnv, logs, tmp))

        pools = []
        for n in (1, 2):
            pool = os.path.join(tmp, "pool%d.log" % n)
            subprocess.run([os.path.join(config, "examples", "pool")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=dict(os.environ, TELLTALE_FILE=pool))
            pools.append(pool)
        r = run(eventcnv, "--spans", *pools)
        out1, out2 = (run(eventcnv, "--spans", p).stdout.decode() for p in pools)
        want = "==> %s <==\n%s\n==> %s <==\n%s" % (pools[0], out1, pools[1], out2)
        why = None
        if r.returncode != 0 or r.stdout.decode() != want:
            why = "exit %d:\n%s\nwant\n%s" % (r.returncode, r.stdout.decode(), want)
        result("merge-spans", why or check_chrome(eventcnv, pools, spans=True))

        r = run(eventcnv, "--format", "sqlite", "-o", os.path.join(tmp, "x.db"), pools[0], logs[0])
        why = check_chrome(eventcnv, [pools[0], logs[0]])
        if not why and (r.returncode != 1 or b"different registries" not in r.stderr):
            why = "sqlite of two registries: exit %d: %s" % (r.returncode, r.stderr.decode()[:200])
        result("merge-registries", why)

        r = run(eventcnv, "--format", "ctf", "-o", os.path.join(tmp, "t.ctf"), *logs)
        result("merge-ctf", None if r.returncode == 2 and b"takes one FILE" in r.stderr
               else "exit %d: %s" % (r.returncode, r.stderr.decode()[:200]))
        result("merge-unreadable", check_unreadable(eventcnv, logs, tmp))
    finally:
        subprocess.run(["rm", "-rf", tmp])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
