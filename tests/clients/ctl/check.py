#!/usr/bin/env python3
"""tests/clients/ctl/check.py -- what tests/clients/ctl/client.c served, against a log.

Usage: check.py EVENTCNV LOG COUNTS WANT [killed]

COUNTS is the client's: per worker (4) a u64, the requests it served,
each Request(worker, seq, size) with size (seq * 2654435761) % 8192 and a
Remark(worker, seq, tag) after every 8th.  WANT says which must be in the
log, each exactly once and no other:
  all        every Request and Remark
  none       no Request; every Remark
  filtered   the Requests of size >= 4096 and the Remarks tagged "big"
             (filters "Request size>=4096" and "Remark tag==big")
killed: the program was killed, its live file recovered: events after
the last block a filter wrote were never filtered, so with filtered the
others may be there too, once at most.  Prints a summary, or what is
wrong and exits 1.
design/tests.txt .test.ctl
"""
import json
import subprocess
import sys


def main():
    eventcnv, log, counts, want = sys.argv[1:5]
    killed = sys.argv[5:6] == ["killed"]
    with open(counts, "rb") as f:
        served = [int.from_bytes(f.read(8), "little") for _ in range(4)]
    run = subprocess.run([eventcnv, "--format", "jsonl", log], capture_output=True, text=True)
    if run.returncode != 0:
        print("eventcnv exit %d: %s" % (run.returncode, run.stderr.strip()[:400]))
        return 1
    seen = {}
    filtered = 0
    for line in run.stdout.splitlines():
        e = json.loads(line)
        name = e.get("event")
        if name in ("Request", "Remark"):
            key = (name, e["fields"]["worker"], e["fields"]["seq"])
            seen[key] = seen.get(key, 0) + 1
        elif name == "EventsFiltered":
            filtered += e["fields"]["count"]
    bad = []
    expected = 0
    for w in range(1, 5):
        for seq in range(served[w - 1]):
            big = (seq * 2654435761) % 8192 >= 4096
            for name, exists in (("Request", True), ("Remark", seq % 8 == 7)):
                if not exists:
                    continue
                must = {"all": True, "none": name == "Remark", "filtered": big}[want]
                n = seen.pop((name, w, seq), 0)
                if n > 1:
                    bad.append("%s %d/%d is there %d times" % (name, w, seq, n))
                elif must and n == 0:
                    bad.append("%s %d/%d is missing" % (name, w, seq))
                elif not must and n == 1 and not (killed and want == "filtered"):
                    bad.append("%s %d/%d should not be there" % (name, w, seq))
                expected += must
    # Events past what a worker noted: at most the one it was emitting at a kill.
    extra = [k for k in seen if not (killed and k[2] == served[k[1] - 1])]
    if extra:
        bad.append("%d events never served, e.g. %s" % (len(extra), extra[0]))
    if bad:
        print("%d wrong, e.g. %s" % (len(bad), "; ".join(bad[:5])))
        return 1
    print("%d served, %d expected in the log, %d filtered out" % (sum(served), expected, filtered))
    return 0


if __name__ == "__main__":
    sys.exit(main())
