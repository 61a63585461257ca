# bench/malloc-workload.py -- a malloc-heavy real program for bench/malloc.sh
# Run with PYTHONMALLOC=malloc so that every object is a malloc call:
# builds and drops large dicts of strings, about 16 million allocation
# events in the default 6 rounds; `malloc-workload.py ROUNDS` runs fewer
# (bench/malloc.sh --instr runs 1 under valgrind).
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
for r in range(rounds):
    d = {}
    for i in range(200000):
        d["key%d" % i] = "value %d %s" % (i, "x" * (i % 50))
    del d
