"""tests/lib/results.py -- the lines every Python test script prints: "ok
NAME" or "FAIL NAME: why" per case, then "N passed, N failed"."""

passed = failed = 0


def result(name, why, detail=""):
    """Count and print one case: why is empty when it passed; detail, if
    any, follows a pass in brackets (as tests/lib/results.sh's ok)."""
    global passed, failed
    if why:
        failed += 1
        print("FAIL %s: %s" % (name, why))
    else:
        passed += 1
        print("ok %s%s" % (name, " (%s)" % detail if detail else ""))


def summary():
    """Print the counts; the exit status: 1 if any case failed."""
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
