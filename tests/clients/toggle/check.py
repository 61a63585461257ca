#!/usr/bin/env python3
"""tests/clients/toggle/check.py -- the log holds exactly the Done events emitted
while Job's output was on, and every Pulse.

Usage: check.py EVENTCNV LOG EXPECT [killed]

EXPECT is tests/clients/toggle/client.c's: per worker, its count, then per event
its epoch and whether it raced a change.  Output is on at an even epoch.
An event that raced may be there or not; any other is there exactly when
its epoch is even.  killed: the program was killed, so the event after a
worker's last mark may be there too, and eventcnv says it recovered the
log (exit 0 all the same).  Prints what is wrong and exits 1, or a
summary and exits 0.
design/tests.txt .test.toggle
"""
import array
import json
import subprocess
import sys

STEPS_MAX = 4 << 20
WORKERS = 4


def main():
    eventcnv, log, expect = sys.argv[1:4]
    killed = sys.argv[4:5] == ["killed"]
    seen = {}
    with open(expect, "rb") as f:
        for w in range(1, WORKERS + 1):
            count = int.from_bytes(f.read(8), "little")
            marks = array.array("I")
            marks.frombytes(f.read(4 * STEPS_MAX))
            seen[w] = marks[:count]
    run = subprocess.run([eventcnv, "--format", "jsonl", log], capture_output=True, text=True)
    if run.returncode != 0:
        print("eventcnv exit %d: %s" % (run.returncode, run.stderr.strip()[:400]))
        return 1
    done = {w: {} for w in seen}
    pulses = {w: 0 for w in seen}
    for line in run.stdout.splitlines():
        e = json.loads(line)
        name = e.get("event")
        if name == "Done":
            f = e["fields"]
            d = done[f["worker"]]
            d[f["seq"]] = d.get(f["seq"], 0) + 1
        elif name == "Pulse":
            pulses[e["fields"]["worker"]] += 1
    bad = []
    raced = logged = 0
    for w, marks in seen.items():
        d = done[w]
        for seq, mark in enumerate(marks):
            ep, race = mark >> 1, mark & 1
            n = d.get(seq, 0)
            if n > 1:
                bad.append("worker %d seq %d is in the log %d times" % (w, seq, n))
            if race:
                raced += 1
            elif ep % 2 == 0 and n == 0:
                bad.append("worker %d seq %d, emitted while on (epoch %d), is missing" % (w, seq, ep))
            elif ep % 2 == 1 and n != 0:
                bad.append("worker %d seq %d, emitted while off (epoch %d), is in the log" % (w, seq, ep))
            logged += n
        extra = [s for s in d if s >= len(marks) + (1 if killed else 0)]
        if extra:
            bad.append("worker %d: %d events it never recorded" % (w, len(extra)))
        if pulses[w] != len(marks) // 64 and not (killed and abs(pulses[w] - len(marks) // 64) <= 1):
            bad.append("worker %d: %d Pulse events, not %d" % (w, pulses[w], len(marks) // 64))
    if bad:
        print("%d wrong, e.g. %s" % (len(bad), "; ".join(bad[:5])))
        return 1
    total = sum(len(m) for m in seen.values())
    print("%d events, %d in the log, %d raced a change" % (total, logged, raced))
    return 0


if __name__ == "__main__":
    sys.exit(main())
