#!/usr/bin/env python3
# tests/tools/heaphtml.py -- telltale-heap --html, drawn by headless Chromium
# and checked against the text report of the same log
#
# .design: design/heap.txt .heap.html
#
# Usage: tests/tools/heaphtml.py CONFIG      e.g. python3 tests/tools/heaphtml.py build
# CONFIG's heap must be built; the log is recorded with build/'s recorder
# from tests/clients/heap_target.c (TELLTALE_STACKS=16), as tests/tools/heap.sh does.
# Covers:
#   html-runs          the page's script runs to its end in Chromium, no
#                      console error, and names nothing outside itself
#   html-summary       its summary's figures are the text report's
#                      (allocations, bytes, frees, peak, leaked, temporary)
#   html-bottom-up     its bottom-up tree's first level is the call sites,
#                      each with the text report's allocations (inclusive
#                      and exclusive the same), bytes and temporaries
#   html-callers       "#open": each site's callers drawn below it, their
#                      allocations adding up to the site's
#   html-top-down      the top-down tree's roots hold every allocation, and
#                      the leak's site is below main with its 231 bytes
#   html-chart         the memory chart and the allocations chart stack the
#                      top sites by peak, as the text report's list
#                      (bigBlocks, plantedLeak), then the rest; each site's
#                      allocations over time add up to the report's
#   html-sizes         the sizes are the text report's SIZES rows
#   html-flame         the flame graph is there, as a data: URL of flame.c's
#                      SVG
# Without chromium the suite prints "skip" and exits 77: never a pass.

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import results  # noqa: E402
from results import result, summary  # noqa: E402


def unescape(s):
    """HTML's escapes undone (the stdlib's html module is shadowed by
    tests/tools/html.py)"""
    for a, b in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&#39;", "'"), ("&amp;", "&")):
        s = s.replace(a, b)
    return s


def chromium(exe, path, hash_=""):
    r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                        "--v=0", "--dump-dom", "file://" + path + hash_],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    console = [line for line in r.stderr.decode("utf-8", "replace").splitlines()
               if "CONSOLE" in line]
    return r.stdout.decode("utf-8", "replace"), console


def section(text, title):
    """The lines of a text report's section, up to a blank line."""
    out, on = [], False
    for line in text.splitlines():
        if line.startswith(title):
            on = True
        elif on and line == "":
            break
        elif on:
            out.append(line)
    return out


def sites(text, title):
    """{site name: value} of a text report's list."""
    got = {}
    for line in section(text, title):
        m = re.match(r"\s*(\d+)\s+[\d.]+%  (.*)$", line)
        if m:
            got[m.group(2)] = int(m.group(1))
    return got


def total_calls(text):
    """The summary's allocations."""
    return int(re.search(r"^  allocations  (\d+) call", text, re.M).group(1))


def nodes(dom, box):
    """The first-level nodes of a tree: (name, [six numbers], inner html)."""
    start = dom.find('id="%s"' % box)
    end = dom.find("<h2>", start)
    part = dom[start:end]
    out = []
    depth, i = 0, 0
    for m in re.finditer(r"<details[^>]*>|</details>", part):
        if m.group(0).startswith("<details"):
            if depth == 0:
                i = m.start()
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                node = part[i:m.end()]
                summ = re.search(r"<summary>(.*?)</summary>", node).group(1)
                nums = [int(x.replace(",", "")) for x in re.findall(r'class="num v\d">([\d,]+)<', summ)]
                name = unescape(re.search(r'class="name">(.*?)<', summ).group(1))
                out.append((name, nums, node[node.find("</summary>") + 10:]))
    return out


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: tests/tools/heaphtml.py CONFIG\n")
        return 2
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    heap = os.path.join(os.path.abspath(sys.argv[1]), "heap")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("skip html: no chromium (Debian's chromium: .ci/install)")
        return 77
    tmp = tempfile.mkdtemp(prefix="heaphtml-test.")
    try:
        cases(top, heap, exe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


def cases(top, heap, exe, tmp):
    target, log, page = (os.path.join(tmp, n) for n in ("target", "a.log", "a.html"))
    subprocess.run(["cc", "-O0", "-g", "-fno-omit-frame-pointer",
                    os.path.join(top, "tests", "clients", "heap_target.c"), "-o", target], check=True)
    env = dict(os.environ, TELLTALE_STACKS="16", TELLTALE_FILE=log,
               LD_PRELOAD=os.path.join(top, "build", "libtelltale-malloc.so"))
    subprocess.run([target, "1"], env=env, check=True)
    text = subprocess.run([heap, log], stdout=subprocess.PIPE, check=True).stdout.decode()
    r = subprocess.run([heap, "--html", "-o", page, log], stderr=subprocess.PIPE)
    if r.returncode != 0:
        result("html-runs", "exit %d: %s" % (r.returncode, r.stderr.decode()[:300]))
        return
    source = open(page, encoding="utf-8").read()
    dom, console = chromium(exe, page)
    why = None
    if console or 'data-ready="1"' not in dom:
        why = "console %r, ready %s" % (console[:3], 'data-ready="1"' in dom)
    for pattern in (r"\bhttps?://(?!www\.w3\.org/2000/svg)", r"\bsrc\s*=", r"url\(", r"\bfetch\("):
        if re.search(pattern, source):
            why = "the page has %s" % pattern
    result("html-runs", why)
    if why:
        return

    # html-summary
    want = {k: " ".join(l.split()[1:]) for l in section(text, "SUMMARY") for k in [l.split()[0]]}
    rows = dict(re.findall(r'<tr data-key="([^"]+)"><td>[^<]*</td><td>([^<]*)</td>', dom))
    why = None
    for key, word in (("allocations", "allocations"), ("frees", "frees"), ("peak heap", "peak"),
                      ("leaked", "leaked"), ("temporary", "temporary")):
        ints = lambda t: [int(x) for x in re.findall(r"(?<![\d.])\d+(?![\d.])", t.replace(",", ""))]  # noqa: E731
        mine, theirs = ints(rows.get(key, "")), ints(want.get(word, ""))
        if not mine or mine[:2] != theirs[:2]:
            why = "%s: page %r, report %r" % (key, rows.get(key), want.get(word))
    result("html-summary", why)

    # html-bottom-up
    bottom = nodes(dom, "bottom-up")
    allocs = sites(text, "MOST ALLOCATIONS")
    bytes_ = sites(text, "MOST BYTES ALLOCATED")
    temps = sites(text, "MOST TEMPORARY ALLOCATIONS")
    got = {n: v for n, v, _ in bottom}
    why = None
    if set(got) != set(allocs):
        why = "sites %r, report %r" % (sorted(got), sorted(allocs))
    else:
        for name, v in got.items():
            if v[0] != allocs[name] or v[1] != allocs[name] or v[2] != bytes_.get(name) \
                    or v[5] != temps.get(name, 0):
                why = "%s: %r; report %d allocations, %s bytes, %d temporary" % (
                    name, v, allocs[name], bytes_.get(name), temps.get(name, 0))
    result("html-bottom-up", why)

    # html-callers
    opened, _ = chromium(exe, page, "#open")
    why = None
    for name, v, inner in nodes(opened, "bottom-up"):
        callers = [int(x.replace(",", "")) for x in
                   re.findall(r'<summary><span class="num v0">([\d,]+)<', inner)]
        if not callers or sum(callers[:1]) != v[0] or "main" not in inner:
            why = "%s (%d): callers %r" % (name, v[0], callers[:4])
    result("html-callers", why)

    # html-top-down
    down = nodes(opened, "top-down")
    total = int(want["allocations"].split()[0])
    why = None
    if sum(v[0] for _, v, _ in down) != total:
        why = "roots hold %d allocations, report %d" % (sum(v[0] for _, v, _ in down), total)
    elif not re.search(r'data-name="main[^"]*">', opened):
        why = "no main below the roots"
    result("html-top-down", why)

    # html-chart
    peaks = list(sites(text, "MOST BYTES LIVE AT THE PEAK"))
    why = None
    for box in ("chart", "chart-allocations"):
        part = dom[dom.find('id="%s"' % box):]
        part = part[:part.find("</svg>")]
        legend = [unescape(x) for x in re.findall(r'<text[^>]*class="legend"[^>]*>([^<]*)<', part)]
        polys = part.count('class="series"')
        if legend != peaks + ["everything else"] or polys != len(legend):
            why = "%s: legend %r (%d areas), report %r" % (box, legend, polys, peaks)
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>',
                                source, re.S).group(1))
    m = len(data["series"]["names"])
    counts = [sum(r[m + 1 + k] for r in data["series"]["rows"]) for k in range(m + 1)]
    want_counts = [allocs[n] for n in data["series"]["names"]] + [total_calls(text)]
    if counts != want_counts:
        why = "allocations over time by series %r, report %r" % (counts, want_counts)
    result("html-chart", why)

    # html-sizes
    want_sizes = [l.split() for l in section(text, "SIZES")[1:]]
    got_sizes = [[c.replace(",", "") for c in re.findall(r"<td>([^<]*)</td>", row)[:3]]
                 for row in re.findall(r'<tr class="size">(.*?)</tr>', dom)]
    result("html-sizes", None if want_sizes == got_sizes and want_sizes
           else "page %r, report %r" % (got_sizes, want_sizes))

    # html-flame
    m = re.search(r'<object id="flame-graph" type="image/svg\+xml"[^>]*data="data:image/svg\+xml;base64,([^"]+)"', source)
    why = "no flame graph"
    if m:
        import base64
        svg = base64.b64decode(m.group(1)).decode("utf-8", "replace")
        why = None if svg.startswith("<?xml") and "plantedLeak" in svg and "manySmall" in svg \
            else "its SVG: %r" % svg[:120]
    result("html-flame", why)


if __name__ == "__main__":
    sys.exit(main())
