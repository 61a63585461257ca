#!/usr/bin/env python3
# tests/html.py -- eventcnv --format html, drawn by headless Chromium
#
# .design: design/telemetry.txt .export.html
#
# Usage: tests/html.py CONFIG      e.g. python3 tests/html.py build
# CONFIG's eventcnv and examples/pool must be built (bench/bench, for a
# log of a million events, is built if it is not).  Exits
# 77 (skipped) if there is no chromium (Debian's, .ci/install).
# Covers:
#   html-data          the page's data, parsed here: every event of the
#                      log with its time, thread and kind, and its fields
#                      as eventcnv's text line shows them
#   html-offline       one file: no address, no src or href, no fetch
#   html-example       Chromium runs the page on the example's log with no
#                      error and says it drew (data-drawn)
#   html-pixels        the screenshot shows it: marks in several kind
#                      colours, and the long bars of ObjectLife spans
#   html-zoom          a narrow #view draws too, with no error
#   html-counters      the counters' points are the Chrome export's (name
#                      and key, time, value), and each draws a line
#   html-merge         two logs: a track per thread of each process,
#                      grouped by process; counters and spans per
#                      process; the title names both programs
#   html-spans         each span as the Chrome export has it: on its
#                      thread or async, its times and its key's form
#   html-800x600       at 800x600 with a scroll bar nothing is cut off on
#                      the right
#   html-1m            a million events: no error, and all of them drawn
#                      (thinned to a mark a pixel) in under a second
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import result, summary  # noqa: E402


def chromium(*args, size="1100,520"):
    """Headless Chromium's output, with its console on stderr."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
           "--enable-logging=stderr", "--v=0", "--window-size=" + size] + list(args)
    if size != "800,600":   # at 800x600, with its scroll bar, as a reader sees it
        cmd.insert(4, "--hide-scrollbars")
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)


def body(page, view=None, size="1100,520"):
    """The body's data-* attributes after the page ran, and the console's
    errors."""
    url = "file://" + page + ("#view=%d,%d" % view if view else "")
    r = chromium("--dump-dom", url, size=size)
    m = re.search(r"<body([^>]*)>", r.stdout.decode("utf-8", "replace"))
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', m.group(1))) if m else {}
    console = [line for line in r.stderr.decode("utf-8", "replace").splitlines()
               if "CONSOLE" in line and ("Uncaught" in line or "rror" in line)]
    return attrs, console


def drew(attrs, console):
    if console:
        return "console: %s" % console[0]
    if attrs.get("errors") != "0":
        return "errors %r" % attrs.get("errors")
    if int(attrs.get("drawn", "0")) <= 0:
        return "it drew nothing: %r" % attrs
    return None


def png_pixels(path):
    """The RGB(A) rows of an 8-bit PNG: a reader of the filters, by zlib."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    assert depth == 8 and colour in (2, 6), (depth, colour)
    bpp = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return rows


def hue(rgb):
    r, g, b = (v / 255 for v in rgb)
    hi, lo = max(r, g, b), min(r, g, b)
    if hi - lo < 0.25:
        return None     # grey: text, grid, background
    if hi == r:
        h = (g - b) / (hi - lo) % 6
    elif hi == g:
        h = (b - r) / (hi - lo) + 2
    else:
        h = (r - g) / (hi - lo) + 4
    return int(h * 60) // 20     # 18 buckets


def page_data(page):
    text = open(page, encoding="utf-8").read()
    start = text.index('<script id="data" type="application/json">') + 42
    return json.loads(text[start:text.index("</script>", start)]), text


def check_data(eventcnv, log, page):
    d, text = page_data(page)
    lines = subprocess.run([eventcnv, log], stdout=subprocess.PIPE).stdout.decode().splitlines()
    events = [json.loads(line) for line in subprocess.run(
        [eventcnv, "--format", "jsonl", log], stdout=subprocess.PIPE).stdout.decode().splitlines()]
    ev = d["ev"]
    if len(ev) != 5 * len(events):
        return "%d values, want 5 for each of %d events" % (len(ev), len(events))
    for n, (e, line) in enumerate(zip(events, lines)):
        t, track, name, kind, fields = ev[5 * n:5 * n + 5]
        words = line.split(None, 5)
        want_track = "T%d" % e["thread"] + (" " + e["thread_name"] if e["thread_name"] else "")
        got = (t, d["names"][name], d["kinds"][kind], fields)
        want = (e["elapsed_ns"], e["event"], e["kind"], words[5] if len(words) > 5 else "")
        if got != want:
            return "event %d: %r, want %r" % (n, got, want)
        if not d["tracks"][track].startswith("T%d" % e["thread"]):
            return "event %d: track %r, want %r" % (n, d["tracks"][track], want_track)
    return None


def check_counters(eventcnv, log, page, attrs):
    d, _ = page_data(page)
    got = [(d["counters"][d["ct"][i]], d["ct"][i + 1], d["ct"][i + 2])
           for i in range(0, len(d["ct"]), 3)]
    trace = json.loads(subprocess.run([eventcnv, "--format", "chrome", log],
                                      stdout=subprocess.PIPE).stdout.decode())
    want = [(e["name"], round(e["ts"] * 1000), list(e["args"].values())[0])
            for e in trace["traceEvents"] if e.get("ph") == "C"]
    if not want:
        return "the example's log has no counter events"
    if got != want:
        return "counter points %r, want the Chrome export's %r" % (got[:4], want[:4])
    if attrs.get("counters") != str(len(d["counters"])):
        return "%s counter lines drawn, want %d" % (attrs.get("counters"), len(d["counters"]))
    return None


def check_spans(eventcnv, log, page, attrs):
    """Each span as the Chrome export has it: on its thread (ph X) or
    async (ph b), the same times, and its key in its parameter's form;
    the page drew bars.  design/telemetry.txt .export.span.thread"""
    d, _ = page_data(page)
    sp = d["sp"]
    got = sorted((d["spans"][sp[i]], sp[i + 3], sp[i + 4], sp[i + 2] >= 0, sp[i + 6])
                 for i in range(0, len(sp), 9))
    trace = json.loads(subprocess.run([eventcnv, "--format", "chrome", log],
                                      stdout=subprocess.PIPE).stdout.decode())
    ev, want = trace["traceEvents"], []
    ends = {e["id"]: e for e in ev if e.get("ph") == "e"}
    for e in ev:
        key = e.get("args", {}).get("key")
        key = key if isinstance(key, str) else str(key)
        if e.get("ph") == "X" and e.get("cat") == "span" and "bind_id" not in e:
            want.append((e["name"], round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), True, key))
        elif e.get("ph") == "b":
            want.append((e["name"], round(e["ts"] * 1000), round(ends[e["id"]]["ts"] * 1000), False, key))
    want.sort()
    if not want or got != want:
        return "spans %r, want the Chrome export's %r" % (got[:3], want[:3])
    if not any(w[3] for w in want):
        return "no span of the example is on its thread"
    if int(attrs.get("bars", "0")) <= 0:
        return "no span drawn: %r" % attrs
    return None


def check_offline(page):
    text = open(page, encoding="utf-8").read()
    for pattern in (r"\bhttps?:", r"\b(src|href)\s*=", r"\bfetch\(", r"XMLHttpRequest", r"@import"):
        if re.search(pattern, text):
            return "the page has %s" % pattern
    return None


def check_pixels(png):
    rows = png_pixels(png)
    colours, runs = {}, 0
    for y, row in enumerate(rows[30:], 30):
        run, last = 0, None
        for x, rgb in enumerate(row[190:], 190):
            h = hue(rgb)
            if h is not None:
                colours[h] = colours.get(h, 0) + 1
            run = run + 1 if h is not None and rgb == last else 0
            last = rgb
            if run == 200:
                runs += 1
    coloured = sum(colours.values())
    if coloured < 500:
        return "only %d coloured pixels" % coloured
    if len([h for h, c in colours.items() if c >= 10]) < 4:
        return "fewer than 4 colours: %r" % colours
    if runs < 5:
        return "no long bars (spans): %d runs of 200 pixels" % runs
    return None


def main():
    global CHROMIUM
    if len(sys.argv) != 2:
        sys.stderr.write("usage: tests/html.py CONFIG\n")
        return 2
    CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
    if CHROMIUM is None:
        print("skip html: no chromium (Debian's chromium: .ci/install)")
        return 77
    config = os.path.abspath(sys.argv[1])
    eventcnv = os.path.join(config, "eventcnv")
    tmp = tempfile.mkdtemp(prefix="html-test.")
    try:
        cases(config, eventcnv, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


def make_html(eventcnv, page, *logs):
    r = subprocess.run([eventcnv, "--format", "html", "-o", page] + list(logs),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return None if r.returncode == 0 else "exit %d: %s" % (r.returncode, r.stderr.decode()[:300])


def cases(config, eventcnv, tmp):
    logs = []
    for n in (1, 2):
        log = os.path.join(tmp, "pool%d.log" % n)
        subprocess.run([os.path.join(config, "examples", "pool")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=dict(os.environ, TELLTALE_FILE=log))
        logs.append(log)
    page = os.path.join(tmp, "pool.html")
    why = make_html(eventcnv, page, logs[0])
    result("html-data", why or check_data(eventcnv, logs[0], page))
    result("html-offline", why or check_offline(page))
    attrs, console = body(page)
    result("html-example", why or drew(attrs, console))
    result("html-counters", why or check_counters(eventcnv, logs[0], page, attrs))
    result("html-spans", why or check_spans(eventcnv, logs[0], page, attrs))
    png = os.path.join(tmp, "pool.png")
    chromium("--screenshot=" + png, "file://" + page)
    result("html-pixels", check_pixels(png) if os.path.exists(png) else "no screenshot")

    d, _ = page_data(page)
    t = d["ev"][5 * (len(d["ev"]) // 10)]
    attrs, console = body(page, (t - 2000, t + 2000))
    result("html-zoom", drew(attrs, console))

    both = os.path.join(tmp, "both.html")
    why = make_html(eventcnv, both, *logs)
    if not why:
        d, _ = page_data(both)
        pids = set(re.findall(r"^pool\[(\d+)\]$", "\n".join(d["procs"]), re.M))
        if len(pids) != 2 or len(d["tracks"]) != 4 or sorted(d["tproc"]) != [0, 0, 1, 1]:
            why = "processes %r, tracks %r of %r" % (d["procs"], d["tracks"], d["tproc"])
        elif sorted(set(d["cproc"])) != [0, 1] or len(d["counters"]) != 2 * len(page_data(page)[0]["counters"]):
            why = "counters %r of processes %r: want each process's apart" % (d["counters"], d["cproc"])
        elif sorted(set(d["sp"][1::9])) != [0, 1]:
            why = "spans of processes %r" % sorted(set(d["sp"][1::9]))
        elif "<title>telltale: pool, pool</title>" not in open(both).read():
            why = "the title does not name both programs"
        else:
            why = drew(*body(both))
    result("html-merge", why)

    attrs, console = body(page, size="800,600")
    why = drew(attrs, console)
    result("html-800x600", why or (attrs.get("overflow") != "0" and "the page is %s pixels wider than the window"
                                   % attrs.get("overflow")))

    bench = os.path.join(config, "bench", "bench")
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.exists(bench):   # not among ninja's defaults
        subprocess.run(["ninja", "-C", top, os.path.relpath(bench, top)], stdout=subprocess.PIPE)
    if not os.path.exists(bench):
        result("html-1m", "no %s: build it (ninja)" % bench)
        return
    big = os.path.join(tmp, "big.log")
    subprocess.run([bench, "--case", "enabled", "--count", "1000000", "--file", big],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    bigpage = os.path.join(tmp, "big.html")
    why = make_html(eventcnv, bigpage, big)
    if not why:     # all of it: one mark a pixel at most (thinning)
        attrs, console = body(bigpage)
        why = drew(attrs, console)
        if not why and int(attrs.get("drawms", "99999")) >= 1000:
            why = "drawing took %s ms" % attrs.get("drawms")
        print("html-1m: %s bytes, drawn in %s ms, first drawn %s ms after the page was asked for"
              % (os.path.getsize(bigpage), attrs.get("drawms"), attrs.get("loadms")))
    result("html-1m", why)


if __name__ == "__main__":
    sys.exit(main())
