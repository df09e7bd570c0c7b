#!/usr/bin/env python3
"""summary.py SKIPFILE [NAME FOCUS JUNIT]...: the counts of `make e2e-k8s-storage`.

For each run (its name, its ginkgo focus regexp and the junit_01.xml
e2e.test wrote), the specs its focus selected: passed, failed (with names), skipped by reason. A spec the
skip list (SKIPFILE: "REGEX # reason" lines) deselects counts under that
reason; one the suite skipped itself counts under the suite's message (e.g.
a capability chainvol does not claim, a test pattern for another volume
type). Specs outside the run's focus (other drivers, other suites, the
specs the backup run does not repeat) are not counted.
The last line is the total: "k8s-storage: N passed, N failed, N skipped".
Exit status 1 if any spec failed or a report is missing.
"""
import collections
import re
import sys
import xml.etree.ElementTree as ET


def skip_list(path):
    out = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        regex, _, reason = line.partition(" # ")
        out.append((re.compile(regex.strip()), reason.strip()))
    return out


def runtime_reason(msg):
    """The suite's own skip message, without per-test details."""
    msg = re.sub(r"^skipped\s*-?\s*", "", msg.strip())
    msg = msg.splitlines()[0] if msg else "no reason given"
    msg = re.sub(r'"chainvol\.csi\.io"|chainvol\.csi\.io', "chainvol", msg)
    return msg[:160]


def main():
    skips, runs = skip_list(sys.argv[1]), sys.argv[2:]
    tot = collections.Counter()
    rc = 0
    for i in range(0, len(runs) - 2, 3):
        name, focus, path = runs[i], re.compile(runs[i + 1]), runs[i + 2]
        try:
            cases = ET.parse(path).getroot().iter("testcase")
        except (OSError, ET.ParseError) as e:
            print(f"[{name}] no report: {e}")
            rc = 1
            continue
        n = collections.Counter()
        failed, reasons = [], collections.Counter()
        for c in cases:
            test = c.get("name", "")
            if not focus.search(test):
                continue
            if c.find("failure") is not None or c.find("error") is not None:
                n["failed"] += 1
                failed.append(test)
            elif (s := c.find("skipped")) is not None:
                n["skipped"] += 1
                listed = next((r for rx, r in skips if rx.search(test)), None)
                reasons[f"skip list: {listed}" if listed else f"suite: {runtime_reason(s.get('message', ''))}"] += 1
            else:
                n["passed"] += 1
        print(f"[{name}] {n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped ({path})")
        for t in failed:
            print(f"  FAILED {t}")
        for r, k in reasons.most_common():
            print(f"  {k:4d} skipped, {r}")
        tot.update(n)
        rc |= 1 if n["failed"] else 0
    print(f"k8s-storage: {tot['passed']} passed, {tot['failed']} failed, {tot['skipped']} skipped")
    return rc


if __name__ == "__main__":
    sys.exit(main())
