#!/usr/bin/env python3
"""Run `supervise doctor --json` and check what it says about this kernel.

usage: doctor_expect.py SUPERVISE KEY=VALUE...
  KEY is `host.<field>` (doctor's `host` object: landlock_abi=2,
  bpf_lsm_active=false) or `check.<id>` (a host line's value: check.floor=mount
  namespace) or `feature.<id>` (a policy line's backend: feature.backend=host).
  Values compare as JSON where they parse (2, false), else as strings.
Prints every check line, then each expectation; exit 1 when one fails. Used by
the guests of the kernel matrix (tests/vm/CMakeLists.txt): where a kernel
lacks a feature, doctor must say so.
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = subprocess.run([sys.argv[1], "doctor", "--json"], capture_output=True, text=True)
    doc = json.loads(out.stdout)
    for c in doc["checks"]:
        print(f"doctor: {c['id']:26} {c['status']:8} {c['value']}: {c['detail']}")
    tables = {
        "host": doc["host"],
        "check": {c["id"]: c["value"] for c in doc["checks"]},
        "feature": {f["id"]: f["backend"] for f in doc["features"]},
    }
    failed = 0
    for arg in sys.argv[2:]:
        key, _, want = arg.partition("=")
        table, _, name = key.partition(".")
        try:
            want = json.loads(want)
        except ValueError:
            pass
        got = tables.get(table, {}).get(name, "<absent>")
        ok = got == want
        failed += not ok
        print(f"doctor_expect: {'ok  ' if ok else 'FAIL'} {key}: want {want!r}, got {got!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
