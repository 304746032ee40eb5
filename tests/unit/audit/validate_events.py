#!/usr/bin/env python3
"""Validates audit JSON lines against docs/schema/audit-event.schema.json.

usage: validate_events.py SCHEMA FILE... [--require KIND,KIND...]

Every line of every FILE must be one JSON object that the schema accepts.
--require lists event kinds ("file", "exec", "network", "process",
"session:start", "session:end", "session:dropped") that must each appear at
least once, so a test can't pass by emitting nothing. Exit 0 when all is
well, 1 with one message per problem otherwise, 2 on usage errors.
"""
import json
import sys

try:
    import jsonschema
except ImportError:  # python3-jsonschema is in tools/setup
    print("validate_events.py: needs python3-jsonschema (tools/setup installs it)",
          file=sys.stderr)
    sys.exit(2)


def main(argv):
    required = set()
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == "--require":
            required = set(k for k in argv[i + 1].split(",") if k)
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    seen = set()
    problems = 0
    events = 0
    for path in args[1:]:
        with open(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                where = f"{path}:{n}"
                try:
                    event = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as e:
                    print(f"{where}: not a UTF-8 JSON line: {e}")
                    problems += 1
                    continue
                events += 1
                for err in sorted(validator.iter_errors(event), key=str):
                    loc = "/".join(str(p) for p in err.absolute_path)
                    print(f"{where}: /{loc}: {err.message}")
                    problems += 1
                cat = event.get("category")
                seen.add(f"session:{event.get('operation')}" if cat == "session" else cat)
    for kind in sorted(required - seen):
        print(f"no {kind} event in {', '.join(args[1:])}")
        problems += 1
    print(f"{events} events, kinds {sorted(k for k in seen if k)}, {problems} problems",
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
