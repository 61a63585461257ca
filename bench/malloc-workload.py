# bench/malloc-workload.py -- a malloc-heavy real program for bench/malloc.sh
# Run with PYTHONMALLOC=malloc so that every object is a malloc call:
# builds and drops large dicts of strings, about 16 million allocation
# events.
for r in range(6):
    d = {}
    for i in range(200000):
        d["key%d" % i] = "value %d %s" % (i, "x" * (i % 50))
    del d
