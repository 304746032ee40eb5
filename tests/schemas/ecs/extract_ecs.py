#!/usr/bin/python3
"""Extracts what validate_formats.py needs from an ECS ecs_flat.yml.

usage: extract_ecs.py ECS_FLAT_YML VERSION SOURCE > ecs-VERSION.json

For every field of ecs_flat.yml (none is left out): its type, whether ECS
expects an array (normalize: array), whether it is required, and its allowed
values (with each event.category value's expected_event_types). The
descriptions, examples and the rest are dropped: the file shrinks from
0.7-1.3 MB to ~100 KB and the validator needs no YAML parser. `source` and
`sha256` name the input, so the extract can be regenerated and compared.
Needs python3-yaml (Debian; tools/setup installs it).
"""
import hashlib
import json
import sys

import yaml


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, version, source = argv
    with open(path, "rb") as f:
        data = f.read()
    flat = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    fields = {}
    for name in sorted(flat):
        d = flat[name]
        f = {"type": d["type"], "array": "array" in (d.get("normalize") or [])}
        if d.get("required"):
            f["required"] = True
        if d.get("allowed_values"):
            f["allowed"] = {v["name"]: v.get("expected_event_types") for v in d["allowed_values"]}
        fields[name] = f
    out = {"ecs_version": version, "source": source,
           "sha256": hashlib.sha256(data).hexdigest(), "fields": fields}
    json.dump(out, sys.stdout, indent=0, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
