#!/usr/bin/env python3
# tests/tools/html.py -- eventcnv --format html, drawn by headless Chromium
#
# .design: design/export.txt .export.html .export.html.big
#
# Usage: tests/tools/html.py CONFIG [--big EVENTS]   e.g. python3 tests/tools/html.py build
# CONFIG's eventcnv and examples/pool must be built (bench/spanlog, for
# the big log, is built by ninja).  Exits 77 (skipped) if there is no
# chromium (Debian's, .ci/install).  --big runs html-big alone.
# Covers:
#   html-data          the page's data as the page decoded it (#dump):
#                      every event of the log on its thread's track, in
#                      order, with its time and kind, and its fields
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
#   html-search        #search=worker counts the events whose name or
#                      fields hold it, as eventcnv's text has them
#   html-big           10 M events with 1 M spans (bench/spanlog): loaded
#                      in 10 s at most (issue 32 asks 5; the margin is for
#                      a loaded machine), 500 MB of JS heap at most, redrawn
#                      at zooms 1 to 10^7 in 150 ms each at most (asked:
#                      50); events per thread as eventcnv --summary counts
#                      them, spans per thread as spanlog wrote them, the
#                      overlapping spans past 64 lanes said to be folded,
#                      a search finding spanlog's every "needle",
#                      and a screenshot with marks.  tests/tools/html.py CONFIG --big N
#                      runs it alone (bench/run)
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
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


def unescape(text):
    """A text element's content as Chromium's --dump-dom writes it (the
    html module is not to be had here: this file is html.py)"""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", "\u00a0").replace("&amp;", "&")


def page_meta(page):
    """The page's meta element: where its data is, and the names."""
    text = open(page, encoding="utf-8").read()
    start = text.index('<script id="meta" type="application/json">') + 42
    return json.loads(text[start:text.index("</script>", start)])


def page_dump(page):
    """What the page decoded from its data (#dump): per track its events
    (time, name, kind, fields as the page shows them) and spans, every
    span and every counter point."""
    r = chromium("--dump-dom", "file://" + page + "#dump")
    m = re.search(r'<pre id="dump">(.*?)</pre>', r.stdout.decode("utf-8", "replace"), re.S)
    return json.loads(unescape(m.group(1))) if m else None


def check_data(eventcnv, log, d):
    """Every event of the log on its thread's track, in order, with the
    time, name, kind and fields eventcnv's text shows."""
    lines = subprocess.run([eventcnv, log], stdout=subprocess.PIPE).stdout.decode().splitlines()
    events = [json.loads(line) for line in subprocess.run(
        [eventcnv, "--format", "jsonl", log], stdout=subprocess.PIPE).stdout.decode().splitlines()]
    if d is None:
        return "the page dumped nothing"
    want = {}
    for e, line in zip(events, lines):
        words = line.split(None, 5)
        want.setdefault(e["thread"], []).append(
            [e["elapsed_ns"], e["event"], e["kind"], words[5] if len(words) > 5 else ""])
    got = {int(re.match(r"T(\d+)", t["name"]).group(1)): t["events"] for t in d["tracks"]}
    if sorted(got) != sorted(want):
        return "threads %r, want %r" % (sorted(got), sorted(want))
    for thread in want:
        for n, (g, w) in enumerate(zip(got[thread], want[thread])):
            if g != w:
                return "T%d event %d: %r, want %r" % (thread, n, g, w)
        if len(got[thread]) != len(want[thread]):
            return "T%d: %d events, want %d" % (thread, len(got[thread]), len(want[thread]))
    return None


def check_counters(eventcnv, log, d, attrs, meta):
    got = sorted((c[0], c[1], c[2]) for c in d["counters"])
    trace = json.loads(subprocess.run([eventcnv, "--format", "chrome", log],
                                      stdout=subprocess.PIPE).stdout.decode())
    want = sorted((e["name"], round(e["ts"] * 1000), list(e["args"].values())[0])
                  for e in trace["traceEvents"] if e.get("ph") == "C")
    if not want:
        return "the example's log has no counter events"
    if got != want:
        return "counter points %r, want the Chrome export's %r" % (got[:4], want[:4])
    if attrs.get("counters") != str(len(meta["counters"])):
        return "%s counter lines drawn, want %d" % (attrs.get("counters"), len(meta["counters"]))
    return None


def check_spans(eventcnv, log, d, attrs):
    """Each span as the Chrome export has it: on its thread (ph X) or
    async (ph b), the same times, and its key in its parameter's form;
    the page drew bars.  design/export.txt .export.span.thread"""
    got = sorted((s[0], s[1], s[2], s[3], s[4]) for s in d["spans"])
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


def check_search(eventcnv, log, page, word):
    """#search=WORD: the search box's count of events whose name or
    fields hold WORD, against eventcnv's text"""
    want = 0
    for line in subprocess.run([eventcnv, log], stdout=subprocess.PIPE).stdout.decode().splitlines():
        words = line.split(None, 5)
        want += word in words[4] or (len(words) > 5 and word in words[5])
    r = chromium("--virtual-time-budget=20000", "--dump-dom", "file://" + page + "#search=" + word)
    m = re.search(r'data-found="(\d+)"', r.stdout.decode("utf-8", "replace"))
    if not want:
        return "no event of the log has %r" % word
    if not m or int(m.group(1)) != want:
        return "the page found %s events with %r, want %d" % (m and m.group(1), word, want)
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
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--big"):
        sys.stderr.write("usage: tests/tools/html.py CONFIG [--big EVENTS]\n")
        return 2
    CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
    if CHROMIUM is None:
        print("skip html: no chromium (Debian's chromium: .ci/install)")
        return 77
    config = os.path.abspath(sys.argv[1])
    eventcnv = os.path.join(config, "eventcnv")
    tmp = tempfile.mkdtemp(prefix="html-test.")
    try:
        if len(sys.argv) == 4:   # bench/run: the big case alone
            big(config, eventcnv, tmp, int(sys.argv[3]))
        else:
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
    d = None if why else page_dump(page)
    meta = None if why else page_meta(page)
    result("html-data", why or check_data(eventcnv, logs[0], d))
    result("html-offline", why or check_offline(page))
    attrs, console = body(page)
    result("html-example", why or drew(attrs, console))
    result("html-counters", why or (d is None and "no dump") or check_counters(eventcnv, logs[0], d, attrs, meta))
    result("html-spans", why or (d is None and "no dump") or check_spans(eventcnv, logs[0], d, attrs))
    result("html-search", why or check_search(eventcnv, logs[0], page, "worker"))
    png = os.path.join(tmp, "pool.png")
    chromium("--screenshot=" + png, "file://" + page)
    result("html-pixels", check_pixels(png) if os.path.exists(png) else "no screenshot")

    if d is not None:
        events = d["tracks"][0]["events"]
        t = events[len(events) // 10][0]
        attrs, console = body(page, (t - 2000, t + 2000))
        result("html-zoom", drew(attrs, console))

    both = os.path.join(tmp, "both.html")
    why = make_html(eventcnv, both, *logs)
    if not why:
        m = page_meta(both)
        tproc = sorted(t["proc"] for t in m["tracks"])
        cproc = [c["proc"] for c in m["counters"]]
        pids = set(re.findall(r"^pool\[(\d+)\]$", "\n".join(m["procs"]), re.M))
        if len(pids) != 2 or len(m["tracks"]) != 4 or tproc != [0, 0, 1, 1]:
            why = "processes %r, tracks %r" % (m["procs"], m["tracks"])
        elif sorted(set(cproc)) != [0, 1] or len(m["counters"]) != 2 * len(meta["counters"]):
            why = "counters %r: want each process's apart" % (m["counters"],)
        elif sorted(set(r["proc"] for r in m["rows"])) != [0, 1]:
            why = "span rows of processes %r" % sorted(set(r["proc"] for r in m["rows"]))
        elif "<title>telltale: pool, pool</title>" not in open(both).read():
            why = "the title does not name both programs"
        else:
            why = drew(*body(both))
    result("html-merge", why)

    attrs, console = body(page, size="800,600")
    why = drew(attrs, console)
    result("html-800x600", why or (attrs.get("overflow") != "0" and "the page is %s pixels wider than the window"
                                   % attrs.get("overflow")))
    big(config, eventcnv, tmp, BIG)


# The big case's limits: issue 32 asks for 5 s to load, 500 MB of heap
# and 50 ms a redraw; times get a margin for a loaded 2-core machine, the
# heap, which the load does not change, none.
BIG, LOAD_MS, HEAP_MB, DRAW_MS = 10000000, 10000, 500, 150


def big(config, eventcnv, tmp, events):
    """html-big: a log of EVENTS events with a tenth as many spans
    (bench/spanlog), exported, loaded in Chromium (#bench: redraws at
    zooms of 1 to 10^7), with its load time, heap and redraws measured
    and its counts per thread checked against eventcnv's and spanlog's
    own; and a screenshot of it."""
    spanlog = os.path.join(config, "bench", "spanlog")
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    # not among ninja's defaults: built, or brought up to date
    subprocess.run(["ninja", "-C", top, os.path.relpath(spanlog, top)], stdout=subprocess.PIPE)
    if not os.path.exists(spanlog):
        result("html-big", "no %s: build it (ninja)" % spanlog)
        return
    log, page = os.path.join(tmp, "big.log"), os.path.join(tmp, "big.html")
    r = subprocess.run([spanlog, str(events), "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=dict(os.environ, TELLTALE_FILE=log))
    made = {m[0]: (int(m[1]), int(m[2])) for m in
            re.findall(r"^spanlog (\d+): (\d+) events (\d+) spans$", r.stdout.decode(), re.M)}
    summary_text = subprocess.run([eventcnv, "--summary", log], stdout=subprocess.PIPE).stdout.decode()
    threads = {int(m[1]): int(m[0]) for m in re.findall(r"^\s+(\d+) T(\d+)$",
               summary_text.split("threads", 1)[1].split("kinds", 1)[0], re.M)}
    spans_text = subprocess.run([eventcnv, "--spans", log], stdout=subprocess.PIPE).stdout.decode()
    closed = re.search(r"^ObjectLife\s+(\d+)\s+(\d+)", spans_text, re.M)
    started = time.monotonic()
    why = make_html(eventcnv, page, log)
    convert = time.monotonic() - started
    if why:
        result("html-big", why)
        return
    r = chromium("--enable-precise-memory-info", "--dump-dom", "file://" + page + "#bench")
    out = r.stdout.decode("utf-8", "replace")
    m = re.search(r"<body([^>]*)>", out)
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', m.group(1))) if m else {}
    m = re.search(r'<pre id="bench">(.*?)</pre>', out, re.S)
    bench = json.loads(unescape(m.group(1))) if m else {}
    draws = bench.get("draws", [])
    slowest = max((ms for _, ms in draws), default=None)
    print("html-big: %d events, %d spans: %.1f MB page made in %.1f s; loaded in %s ms, %s MB of JS heap"
          " (and %s MB of typed arrays); redraws %s ms at zooms %s; a search of every event %s ms"
          % (bench.get("events", 0), bench.get("spans", 0), os.path.getsize(page) / 1e6, convert,
             attrs.get("loadms"), attrs.get("heapmb"), attrs.get("arraymb"),
             [ms for _, ms in draws], [z for z, _ in draws], bench.get("searchms")))
    sys.stdout.flush()
    dropped = re.search(r"^dropped\s+(\d+)", summary_text, re.M)
    counts = {int(re.match(r"T(\d+)", c[0]).group(1)): c for c in bench.get("counts", [])}
    if attrs.get("errors") != "0" or not bench:
        why = "the page failed: %r %s" % (attrs, [line for line in r.stderr.decode().splitlines() if "CONSOLE" in line][:2])
    elif int(attrs.get("loadms", "1e9")) > LOAD_MS:
        why = "loaded in %s ms, more than %d" % (attrs.get("loadms"), LOAD_MS)
    elif "heapmb" not in attrs or int(attrs["heapmb"]) > HEAP_MB:
        why = "%s MB of heap, more than %d" % (attrs.get("heapmb"), HEAP_MB)
    elif len(draws) < 6 or slowest > DRAW_MS:
        why = "redraws %r: want at least 6 zooms, each within %d ms" % (draws, DRAW_MS)
    elif not dropped or dropped.group(1) != "0" or len(made) != 4:
        why = "the log is not all there: %r, %r" % (dropped and dropped.group(0), made)
    elif {k: c[1] for k, c in counts.items()} != threads:
        why = "events per thread %r, want eventcnv --summary's %r" % ({k: c[1] for k, c in counts.items()}, threads)
    elif sorted(c[2] + c[3] for c in counts.values() if c[2] + c[3] > 0) != sorted(s for _, s in made.values()):
        why = "spans per thread %r, want spanlog's %r" % (counts, made)
    elif not closed or int(closed.group(1)) != bench.get("spans") or int(closed.group(2)) != 0:
        why = "%s spans, want eventcnv --spans' %s" % (bench.get("spans"), closed and closed.group(0))
    elif not all(c[3] > 0 and c[2] > 0 for c in counts.values() if c[1] > 1000):
        why = "want spans on each thread and async ones: %r" % counts
    elif bench.get("needles") != sum(len(range(0, (e - 200) // 20, 10000)) for e, _ in made.values()):
        why = "the search found %s needles, want spanlog's %r" % (bench.get("needles"), made)
    elif int(attrs.get("folded", "0")) <= 0 or "folded" not in bench.get("head", ""):
        why = "100 overlapping spans a thread: the page should say what it folded: %r" % bench.get("head")
    if not why:
        png = os.path.join(tmp, "big.png")
        chromium("--screenshot=" + png, "file://" + page)
        if not os.path.exists(png):
            why = "no screenshot"
        else:
            coloured = sum(1 for row in png_pixels(png)[30:] for rgb in row[190:] if hue(rgb) is not None)
            if coloured < 2000:
                why = "the screenshot has only %d coloured pixels" % coloured
    result("html-big", why)


if __name__ == "__main__":
    sys.exit(main())
