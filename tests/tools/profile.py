#!/usr/bin/env python3
# tests/tools/profile.py -- the heap tool's pictures and pprof file, read by
# their readers
#
# .design: design/heap.txt .heap.flame .heap.pprof .heap.chart
#
# Usage: tests/tools/profile.py CONFIG      e.g. python3 tests/tools/profile.py build
# CONFIG's tests/test_profile must be built: it writes the files from
# profiles made by hand and describes the profiles in expect.txt.
# Covers:
#   flame-xml          every SVG is well-formed XML (Python's parser)
#   flame-tree(-...)   the frames, placed back into a tree by their
#                      geometry, are the stacks merged here (by function,
#                      else module and address): names, values, widths
#                      (value / total of the width), siblings in order,
#                      the total in the subtitle; only frames under 0.1
#                      pixel left out, and as many as the file says
#   flame-labels       a frame's label fits it, cut with "..", none when
#                      fewer than 3 characters fit
#   flame-colours      a function has one colour in every graph
#   flame-escape       & < > " ' and bad bytes in names read back as
#                      themselves (U+FFFD for a bad byte or a control)
#   offline            no address, href, src or url() in any SVG
#   chart-peak(-big)   the peak mark is on the line's top and at the most
#                      bytes of the samples; the axes' ticks put it at its
#                      bytes and time; its label says both
#   chart-thin         200,000 samples: a few points a pixel column
#   chromium-flame     headless Chromium runs the big flame graph's
#                      script: no error, every frame set up
#   chromium-zoom      "#zoom=N": the frame fills the width, its children
#                      scale with it, its callers dim, the rest hide
#   chromium-events    a page holding the SVG sends a frame its events:
#                      hover shows its name and value, a click zooms it
#                      to the full width, "Reset zoom" puts it back
#   chromium-chart     the chart opens with no error
#   pprof-raw(-big)    pprof -raw (pprof itself, built from Debian's Go
#                      sources by .ci/install): sample types and units,
#                      every sample's values and every frame's function,
#                      file, line and address
#   pprof-top          pprof -top: each leaf function's flat bytes and the
#                      total
# A case whose reader is missing (no chromium, no pprof) prints "skip
# NAME: why" and the suite exits 77: never a pass.
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import results  # noqa: E402
from results import result, summary  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
WIDTH, PAD, FRAME, CHAR = 1200.0, 10.0, 16, 7.3
VALUES = ["allocations", "bytes", "peak", "leaked", "temporary"]
skipped = []


def skip(name, why):
    skipped.append(name)
    print("skip %s: %s" % (name, why))


def unhex(word):
    return None if word == "-" else bytes.fromhex(word[1:])


def read_expect(path):
    """The profiles test_profile wrote, by name."""
    profiles, p = {}, None
    for line in open(path, encoding="ascii"):
        w = line.split()
        if w[0] == "profile":
            p = profiles[w[1]] = {"samples": [], "stacks": []}
        elif w[0] == "program":
            p["program"] = unhex(w[1])
        elif w[0] in ("duration", "peak"):
            p[w[0]] = int(w[1])
        elif w[0] == "sample":
            p["samples"].append((int(w[1]), int(w[2])))
        elif w[0] == "stack":
            p["stacks"].append({"values": [int(v) for v in w[1:]], "frames": []})
        elif w[0] == "frame":
            p["stacks"][-1]["frames"].append({
                "address": int(w[1], 16), "function": unhex(w[2]), "file": unhex(w[3]),
                "line": int(w[4]), "module": unhex(w[5])})
    return profiles


def shown(b):
    """A string as the SVG should read back: bad bytes and controls as U+FFFD."""
    return re.sub(r"[\x00-\x1f]", "\ufffd", b.decode("utf-8", "replace"))


def frame_name(f):
    if f["function"] is not None:
        return shown(f["function"])
    if f["module"] is not None:
        return "0x%x in %s" % (f["address"], shown(f["module"]).rsplit("/", 1)[-1])
    return "0x%x" % f["address"]


def frame_key(f):
    """Frames that are one node; its tuple orders siblings as flame.c does."""
    if f["function"] is not None:
        return (0, f["function"], b"", 0)
    return (1, b"", f["module"] or b"", f["address"])


def merge(profile, value):
    """The stacks as a tree: {key: [value, name, children]}, and the total."""
    root = [0, "all", {}]
    for stack in profile["stacks"]:
        v = stack["values"][value]
        if v == 0:
            continue
        node = root
        node[0] += v
        for f in reversed(stack["frames"]):
            node = node[2].setdefault(frame_key(f), [0, frame_name(f), {}])
            node[0] += v
    return root


def layout(root):
    """(path of names, value, x, width) of every node, children sorted; and
    how many are narrower than 0.1 pixel (with their subtrees)."""
    total = root[0]
    scale = (WIDTH - 2 * PAD) / total if total else 0
    out, omitted = [], 0
    todo = [(root, (), PAD, 0)]
    while todo:
        node, path, x, depth = todo.pop()
        w = node[0] * scale
        path = path + (node[1],)
        if depth > 0 and w < 0.1:
            omitted += 1 + count(node)
            continue
        out.append((path, node[0], x, w, depth))
        kids = []
        for key in sorted(node[2]):
            kids.append((node[2][key], path, x, depth + 1))
            x += node[2][key][0] * scale
        todo.extend(reversed(kids))
    return out, omitted


def count(node):
    return sum(1 + count(c) for c in node[2].values())


def svg_frames(root):
    frames = []
    for g in root.find(SVG + "g[@id='frames']"):
        r, t = g.find(SVG + "rect"), g.find(SVG + "text")
        title = g.find(SVG + "title").text.split("\n")
        frames.append({"name": title[0], "detail": title[1], "x": float(r.get("x")),
                       "y": float(r.get("y")), "w": float(r.get("width")), "fill": r.get("fill"),
                       "label": t.text or ""})
    return frames


def check_flame(path, profile, value):
    """flame-tree: the frames against the stacks merged here."""
    root = ET.parse(path).getroot()
    frames = svg_frames(root)
    tree = merge(profile, value)
    want, omitted = layout(tree)
    total_text = root.find(SVG + "text[@id='total']").text
    unit = " bytes" if value in (1, 2, 3) else ""
    if ", total %s%s in %d stacks" % ("{:,}".format(tree[0]), unit, len(profile["stacks"])) \
            not in total_text:
        return "subtitle %r, want total %d" % (total_text, tree[0])
    if len(frames) != len(want):
        return "%d frames, want %d" % (len(frames), len(want))
    m = re.search(r"<!-- (\d+) frames narrower", open(path, encoding="utf-8").read())
    if (int(m.group(1)) if m else 0) != omitted:
        return "says %s left out, want %d" % (m and m.group(1), omitted)
    # Place each frame under the frame a row below that spans it.
    base = max(f["y"] for f in frames)
    paths = []
    for n, f in enumerate(frames):
        depth = round((base - f["y"]) / FRAME)
        parent = None
        for p in range(n - 1, -1, -1):
            q = frames[p]
            if round((base - q["y"]) / FRAME) == depth - 1 and \
                    q["x"] <= f["x"] + 0.02 and f["x"] + f["w"] <= q["x"] + q["w"] + 0.02:
                parent = p
                break
        if depth > 0 and parent is None:
            return "frame %d (%s) has no parent under it" % (n, f["name"])
        paths.append((paths[parent] if depth > 0 else ()) + (f["name"],))
        f["depth"] = depth
    for n, (f, (wpath, v, x, w, depth)) in enumerate(zip(frames, want)):
        got_v = int(f["detail"].split(" ")[0].replace(",", ""))
        if paths[n] != wpath or got_v != v or f["depth"] != depth:
            return "frame %d: %r %d, want %r %d" % (n, paths[n], got_v, wpath, v)
        if abs(f["x"] - x) > 0.01 or abs(f["w"] - w) > 0.01:
            return "frame %d %r: x %.2f width %.2f, want %.3f %.3f" % (n, wpath, f["x"], f["w"], x, w)
    # Widths add up: children within their parent, the root the whole width.
    if frames and abs(frames[0]["w"] - (WIDTH - 2 * PAD if tree[0] else 0)) > 0.01:
        return "root width %.2f" % frames[0]["w"]
    return None


def check_labels(path):
    for f in svg_frames(ET.parse(path).getroot()):
        chars = math.floor((f["w"] - 6) / CHAR) if f["w"] > 6 else 0
        name = f["name"]
        want = "" if chars < 3 else name if len(name) <= chars else name[:chars - 2] + ".."
        # The width in the file is rounded: at a boundary, either is right.
        alt = math.floor((f["w"] - 6 + 0.01) / CHAR)
        want2 = "" if alt < 3 else name if len(name) <= alt else name[:alt - 2] + ".."
        if f["label"] not in (want, want2):
            return "frame %r %.2f wide: label %r, want %r" % (name, f["w"], f["label"], want)
    return None


def check_colours(*paths):
    colour = {}
    for path in paths:
        for f in svg_frames(ET.parse(path).getroot()):
            if colour.setdefault(f["name"], f["fill"]) != f["fill"]:
                return "%r is %s and %s" % (f["name"], colour[f["name"]], f["fill"])
    if len(set(colour.values())) < len(colour) // 2:
        return "only %d colours for %d functions" % (len(set(colour.values())), len(colour))
    return None


def check_escape(path, profile):
    root = ET.parse(path).getroot()
    names = {f["name"] for f in svg_frames(root)}
    for want in ("parse<T>&", "alloc \"x\" 'y'", "bad\ufffdname\ufffd", "0x7f0000001234 in libz&<>.so.1",
                 "0xdead"):
        if want not in names:
            return "no frame named %r in %r" % (want, sorted(names))
    total = root.find(SVG + "text[@id='total']").text
    if not total.startswith(shown(profile["program"]) + ": "):
        return "subtitle %r" % total
    if root.find(SVG + "text[@id='title']").text != "Bytes & <more>":
        return "title %r" % root.find(SVG + "text[@id='title']").text
    return None


def check_offline(paths):
    for path in paths:
        text = open(path, encoding="utf-8").read().replace('xmlns="http://www.w3.org/2000/svg"', "")
        for pattern in (r"\bhttps?:", r"\b(src|href)\s*=", r"url\(", r"@import", r"\bfetch\("):
            if re.search(pattern, text):
                return "%s has %s" % (os.path.basename(path), pattern)
    return None


def ticks(root, cls, coord):
    """An axis's ticks: (label value, pixel) pairs."""
    return [(float(t.text), float(t.get(coord)) - (4 if coord == "y" else 0))
            for t in root.iter(SVG + "text") if t.get("class") == cls]


def scale_of(pairs):
    (v0, p0), (v1, p1) = pairs[0], pairs[-1]
    return lambda p: v0 + (p - p0) * (v1 - v0) / (p1 - p0)


def check_chart(path, profile):
    root = ET.parse(path).getroot()
    samples = profile["samples"]
    most = max(b for _, b in samples)
    when = next(t for t, b in samples if b == most)
    peak = root.find(SVG + "circle[@id='peak']")
    if int(peak.get("data-bytes")) != most or int(peak.get("data-ns")) != when:
        return "peak %s at %s, want %d at %d" % (peak.get("data-bytes"), peak.get("data-ns"), most, when)
    cx, cy = float(peak.get("cx")), float(peak.get("cy"))
    points = [tuple(map(float, p.split(","))) for p in root.find(SVG + "polyline").get("points").split()]
    top = min(y for _, y in points)
    if abs(top - cy) > 0.01 or not any(abs(x - cx) <= 1 and y == top for x, y in points):
        return "the line's top %.2f is not the mark (%.2f, %.2f)" % (top, cx, cy)
    xunit = re.match(r"time \((.+)\)", root.find(SVG + "text[@id='xname']").text).group(1)
    yunit = re.match(r"heap in use \((.+)\)", root.find(SVG + "text[@id='yname']").text).group(1)
    ns = {"ns": 1, "\u00b5s": 1e3, "ms": 1e6, "s": 1e9}[xunit]
    size = {"bytes": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}[yunit]
    xt, yt = ticks(root, "xtick", "x"), ticks(root, "ytick", "y")
    if len(xt) < 3 or len(yt) < 3 or [v for v, _ in yt] != sorted(v for v, _ in yt):
        return "ticks x %r y %r" % (xt, yt)
    at_bytes, at_ns = scale_of(yt)(cy) * size, scale_of(xt)(cx) * ns
    if abs(at_bytes - most) > most * 0.001 + 1 or abs(at_ns - when) > max(samples)[0] * 0.001 + 1:
        return "the axes put the peak at %.1f bytes, %.1f ns" % (at_bytes, at_ns)
    label = root.find(SVG + "text[@id='peak-label']").text
    if "(%s bytes)" % "{:,}".format(most) not in label or (" at %.4g " % (when / ns)) not in label + " ":
        return "peak label %r" % label
    return None


def chromium(*args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--enable-logging=stderr", "--v=0", "--window-size=1200,700"] + list(args)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


def dom(path, hash_=""):
    """The document after its script ran, and the console's errors."""
    r = chromium("--dump-dom", "file://" + path + hash_)
    console = [line for line in r.stderr.decode("utf-8", "replace").splitlines()
               if "CONSOLE" in line and ("Uncaught" in line or "rror" in line)]
    text = r.stdout.decode("utf-8", "replace")
    if "parsererror" in text or "error on line" in text:
        console.append("XML error: " + text[:300])
    return text, console


def check_chromium_flame(path):
    text, console = dom(path)
    if console:
        return "console: %s" % console[0]
    m = re.search(r'data-frames="(\d+)"', text)
    want = len(svg_frames(ET.parse(path).getroot()))
    if not m or int(m.group(1)) != want:
        return "the script set up %s frames, want %d" % (m and m.group(1), want)
    if text.count("data-w=") != want:
        return "%d frames with data-w, want %d" % (text.count("data-w="), want)
    return None


def check_zoom(path):
    frames = svg_frames(ET.parse(path).getroot())
    k = next(n for n, f in enumerate(frames) if f["name"] == "parse<T>&")
    text, console = dom(path, "#zoom=%d" % k)
    if console:
        return "console: %s" % console[0]
    after = []
    for g in re.findall(r"<g([^>]*)>\s*<title>([^<]*)</title>\s*<rect([^>]*)>", text):
        cls = dict(re.findall(r'([\w-]+)="([^"]*)"', g[0])).get("class", "")
        rect = dict(re.findall(r'([\w-]+)="([^"]*)"', g[2]))
        after.append((cls, g[1].split("\n")[0], float(rect["x"]), float(rect["width"])))
    if len(after) != len(frames):
        return "%d frames after zooming, want %d" % (len(after), len(frames))
    z, f = after[k], frames[k]
    scale = (WIDTH - 2 * PAD) / f["w"]
    if abs(z[2] - PAD) > 0.01 or abs(z[3] - (WIDTH - 2 * PAD)) > 0.01 or "hide" in z[0]:
        return "the zoomed frame is at %.2f, %.2f wide" % (z[2], z[3])
    for (cls, name, x, w), f0 in zip(after, frames):
        inside = f0["y"] <= f["y"] and f0["x"] >= f["x"] - 0.01 and f0["x"] + f0["w"] <= f["x"] + f["w"] + 0.01
        below = f0["y"] > f["y"] and f0["x"] <= f["x"] + 0.01 and f0["x"] + f0["w"] >= f["x"] + f["w"] - 0.01
        if inside and (abs(w - f0["w"] * scale) > 0.02 or "hide" in cls):
            return "%r inside: %.2f wide, want %.2f" % (name, w, f0["w"] * scale)
        if below and "dim" not in cls:
            return "%r below is not dimmed: %r" % (name, cls)
        if not inside and not below and "hide" not in cls:
            return "%r is not hidden" % name
    return None


HARNESS = """<!DOCTYPE html><html><body>
<object id="o" type="image/svg+xml" data="%s" width="1200" height="200"></object>
<script>
document.getElementById('o').addEventListener('load', function () {
  var b = document.body;
  try {
    var d = this.contentDocument, g = d.getElementById('frames').children[%d];
    g.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
    b.setAttribute('data-details', d.getElementById('details').textContent);
    g.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    b.setAttribute('data-zoomed', g.querySelector('rect').getAttribute('width'));
    d.getElementById('unzoom').dispatchEvent(new MouseEvent('click', {bubbles: true}));
    b.setAttribute('data-unzoomed', g.querySelector('rect').getAttribute('width'));
  } catch (e) { b.setAttribute('data-error', String(e)); }
});
</script></body></html>
"""


def check_events(path):
    """chromium-events: a page holds the SVG and sends its frame events."""
    frames = svg_frames(ET.parse(path).getroot())
    k = next(n for n, f in enumerate(frames) if f["name"] == "parse<T>&")
    page = os.path.join(os.path.dirname(path), "events.html")
    with open(page, "w", encoding="utf-8") as out:
        out.write(HARNESS % (os.path.basename(path), k))
    r = chromium("--allow-file-access-from-files", "--dump-dom", "file://" + page)
    m = re.search(r"<body([^>]*)>", r.stdout.decode("utf-8", "replace"))
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', m.group(1))) if m else {}
    want = "%s: %s" % (frames[k]["name"], frames[k]["detail"])
    if "error" in attrs or attrs.get("details", "").replace("&lt;", "<").replace("&gt;", ">") \
            .replace("&amp;", "&") != want:
        return "hover: %r, want details %r" % (attrs, want)
    if attrs.get("zoomed") != "%.2f" % (WIDTH - 2 * PAD) or attrs.get("unzoomed") != "%.2f" % frames[k]["w"]:
        return "click: %r, want %.2f wide zoomed, %.2f after Reset zoom" % (
            attrs, WIDTH - 2 * PAD, frames[k]["w"])
    return None


def check_chromium_chart(path):
    text, console = dom(path)
    if console:
        return "console: %s" % console[0]
    if 'id="peak"' not in text:
        return "no peak in the document"
    return None


def pprof_raw(pprof, path):
    """pprof -raw: the sample types, the samples (values, location ids) and
    the locations (address, function, file, line), as bytes."""
    r = subprocess.run([pprof, "-raw", "-symbolize=none", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        raise ValueError("pprof -raw: exit %d: %s" % (r.returncode, r.stderr.decode()[:300]))
    lines = r.stdout.split(b"\n")
    i = lines.index(b"Samples:")
    types = lines[i + 1].decode().split()
    samples, locations = [], {}
    i += 2
    while not lines[i].startswith(b"Locations"):
        values, _, ids = lines[i].partition(b":")
        samples.append(([int(v) for v in values.split()], [int(n) for n in ids.split()]))
        i += 1
    for line in lines[i + 1:]:
        m = re.match(rb"\s+(\d+): 0x([0-9a-f]+)(?: M=\d+)?(?: (.*) (\S*):(\d+) s=\d+)?\s*$", line)
        if m:
            locations[int(m.group(1))] = (int(m.group(2), 16), m.group(3), m.group(4), int(m.group(5) or 0))
        elif line.startswith(b"Mappings"):
            break
    return types, samples, locations


def check_pprof_raw(pprof, path, profile):
    types, samples, locations = pprof_raw(pprof, path)
    want_types = ["%s/%s" % (n, u) for n, u in zip(VALUES, ["count", "bytes", "bytes", "bytes", "count"])]
    if [t.replace("[dflt]", "") for t in types] != want_types or types[1] != "bytes/bytes[dflt]":
        return "sample types %r" % types
    # pprof merges samples of the same stack (the big profile has some):
    # compare the sums by stack of addresses.
    want, got, frames = {}, {}, {}
    for stack in profile["stacks"]:
        if any(stack["values"]):
            key = tuple(f["address"] for f in stack["frames"])
            want[key] = [a + b for a, b in zip(want.get(key, [0] * 5), stack["values"])]
            for f in stack["frames"]:
                frames.setdefault(f["address"], f)
    for values, ids in samples:
        key = tuple(locations[i][0] for i in ids)
        got[key] = [a + b for a, b in zip(got.get(key, [0] * 5), values)]
    if got != want:
        diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
        return "%d stacks differ, e.g. %r: %r, want %r" % (len(diff), diff[0], got.get(diff[0]),
                                                          want.get(diff[0]))
    for i, (address, function, file, line) in locations.items():
        f = frames.get(address)
        if f is None:
            return "location %d at 0x%x is no frame's" % (i, address)
        w = (f["function"], f["file"] or b"", f["line"]) if f["function"] is not None else (None, None, 0)
        if (function, file, line) != w:
            return "location %d: %r, want %r" % (i, locations[i], w)
    return None


def check_pprof_top(pprof, path, profile):
    r = subprocess.run([pprof, "-top", "-symbolize=none", "-sample_index=bytes", "-nodecount=100", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out = r.stdout.decode("utf-8", "replace")
    total = sum(s["values"][1] for s in profile["stacks"])
    if r.returncode != 0 or "of %dB total" % total not in out:
        return "exit %d, want a total of %dB: %s" % (r.returncode, total, (out + r.stderr.decode())[:400])
    flat = {}
    for s in profile["stacks"]:
        leaf = s["frames"][0]
        if leaf["function"] is not None and s["values"][1]:
            name = leaf["function"].decode("utf-8", "replace")
            flat[name] = flat.get(name, 0) + s["values"][1]
    for name, v in flat.items():
        if "\ufffd" in name or "\x01" in name:
            continue
        if not re.search(r"^\s*%dB\s.*\s%s$" % (v, re.escape(name)), out, re.M):
            return "no flat %dB for %r in:\n%s" % (v, name, out)
    return None


def find_pprof(top):
    built = os.path.join(top, "build", "pprof", "pprof")
    return built if os.access(built, os.X_OK) else shutil.which("pprof")


def main():
    global CHROMIUM
    if len(sys.argv) != 2:
        sys.stderr.write("usage: tests/tools/profile.py CONFIG\n")
        return 2
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    config = os.path.abspath(sys.argv[1])
    program = os.path.join(config, "tests", "test_profile")
    if not os.access(program, os.X_OK):
        result("test_profile", "no %s: build it (ninja)" % program)
        return summary()
    tmp = tempfile.mkdtemp(prefix="profile-test.")
    try:
        r = subprocess.run([program, "--out", tmp],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            result("test_profile", "exit %d:\n%s" % (r.returncode, r.stdout.decode()[-2000:]))
            return summary()
        cases(top, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not skipped:
        return summary()
    print("skipped (not passed): %s" % " ".join(skipped))
    print("%d passed, %d failed, %d skipped" % (results.passed, results.failed, len(skipped)))
    return 1 if results.failed else 77


def cases(top, tmp):
    global CHROMIUM
    p = read_expect(os.path.join(tmp, "expect.txt"))
    small, big = p["small"], p["big"]
    f = lambda name: os.path.join(tmp, name)  # noqa: E731
    svgs = [f(n) for n in sorted(os.listdir(tmp)) if n.endswith(".svg")]
    why = None
    for path in svgs:
        try:
            ET.parse(path)
        except ET.ParseError as e:
            why = "%s: %s" % (os.path.basename(path), e)
    result("flame-xml", why)
    if why:
        return
    result("flame-tree", check_flame(f("flame-bytes.svg"), small, 1))
    result("flame-tree-allocations", check_flame(f("flame-allocations.svg"), small, 0))
    result("flame-tree-big", check_flame(f("flame-big.svg"), big, 1))
    result("flame-tree-empty", check_flame(f("flame-empty.svg"), {"stacks": []}, 3))
    result("flame-labels", check_labels(f("flame-bytes.svg")) or check_labels(f("flame-big.svg")))
    result("flame-colours", check_colours(f("flame-bytes.svg"), f("flame-allocations.svg")))
    result("flame-escape", check_escape(f("flame-bytes.svg"), small))
    result("offline", check_offline(svgs))
    result("chart-peak", check_chart(f("chart.svg"), small))
    result("chart-peak-big", check_chart(f("chart-big.svg"), big))
    points = len(ET.parse(f("chart-big.svg")).getroot().find(SVG + "polyline").get("points").split())
    result("chart-thin", None if points <= 4 * 1000 else "%d points for 1000 pixels" % points)

    CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
    if CHROMIUM is None:
        for name in ("chromium-flame", "chromium-zoom", "chromium-events", "chromium-chart"):
            skip(name, "no chromium (Debian's chromium: .ci/install)")
    else:
        result("chromium-flame", check_chromium_flame(f("flame-big.svg")))
        result("chromium-zoom", check_zoom(f("flame-bytes.svg")))
        result("chromium-events", check_events(f("flame-bytes.svg")))
        result("chromium-chart", check_chromium_chart(f("chart-big.svg")))

    pprof = find_pprof(top)
    if pprof is None:
        for name in ("pprof-raw", "pprof-raw-big", "pprof-top"):
            skip(name, "no pprof (built into build/pprof by .ci/install from Debian's Go sources)")
    else:
        result("pprof-raw", check_pprof_raw(pprof, f("profile.pb.gz"), small))
        result("pprof-raw-big", check_pprof_raw(pprof, f("profile-big.pb.gz"), big))
        result("pprof-top", check_pprof_top(pprof, f("profile.pb.gz"), small))


if __name__ == "__main__":
    sys.exit(main())
