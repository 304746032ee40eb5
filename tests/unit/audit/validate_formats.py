#!/usr/bin/python3
"""Validates OCSF and ECS audit events against the upstream schemas.

usage: validate_formats.py ocsf SCHEMA_DIR FILE... [--require UIDS] [--max-errors N]
       validate_formats.py ecs  FIELDS_JSON FILE... [--custom NAMESPACE] [--max-errors N]
       validate_formats.py ocsf-files SCHEMA_DIR CLASS_UID...

ocsf: SCHEMA_DIR is an OCSF schema source tree (ocsf/ocsf-schema at a tag, or
the subset of it under tests/schemas/). Every line of every FILE is one event;
per event it checks:
  - class_uid names a class; category_uid is that class's category;
    type_uid = class_uid * 100 + activity_id; class_name, category_name and
    each *_name sibling of an enum match the schema's captions;
  - every attribute is defined for the class (its own, those of the classes
    it extends up to base_event, and those a profile adds, which count only
    when metadata.profiles lists the profile; the datetime profile adds a
    <name>_dt datetime_t for each timestamp_t), and every attribute of a
    nested object is defined by that object (its own and those of the
    objects it extends, profiles likewise), recursively;
  - required attributes are present (and constraints at_least_one /
    just_one hold), in the event and in each nested object;
  - enum values (*_id) are values the dictionary or the class/object defines;
  - values have their type: string_t (and its subtypes, with their regex and
    max_len), integer_t (32-bit), long_t, float_t, boolean_t, timestamp_t,
    datetime_t, port_t, ip_t, json_t, objects and arrays (is_array); null is
    never a valid value (omit the attribute);
  - a deprecated attribute, object or class is an error too (the schema says
    what to use instead);
  - metadata.profiles names profiles that exist; metadata.version differing
    from the schema's version is a warning.
`unmapped` is free-form (type object) and not looked into.
--require: class_uid[:activity_id] values that must each appear at least once.

ecs: FIELDS_JSON is an extract of ecs_flat.yml (tests/schemas/ecs/, made by
extract_ecs.py). Per event: every leaf field, by its dotted name, is an ECS
field of the right type (keyword/text: string; long/integer: integer;
float/double/scaled_float: number; boolean; ip: an IP address; date: RFC 3339
with at most 3 fractional digits, the precision of an Elasticsearch `date`),
or is under an ECS field of type object/flattened, or under --custom
(default "supervise"); fields ECS marks as arrays are arrays, others are not;
required fields are present; event.kind/category/type/outcome take allowed
values, and each event.type is an expected type of one of the event's
categories and each category has one of its expected types.

ocsf-files: prints the files of SCHEMA_DIR the ocsf check reads for those
classes (to copy the subset a test needs).

Exit 0 when there are no errors, 1 otherwise, 2 on usage errors. One line per
problem on stdout ("FILE:LINE: PATH: message"), a summary on stderr.
"""
import copy
import ipaddress
import json
import os
import re
import sys

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def merge(base, over):
    """Deep merge of attribute definitions: `over` wins, None deletes a key."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


class Ocsf:
    """An OCSF schema source tree, resolved the way the OCSF server does."""

    def __init__(self, root):
        self.root = root
        self.read = set()  # files this instance read (ocsf-files)
        self.version = self._load("version.json")["version"]
        d = self._load("dictionary.json")
        self.dict = d["attributes"]
        self.types = d["types"]["attributes"]
        self.categories = self._load("categories.json")["attributes"]
        self.category_by_uid = {c["uid"]: (name, c) for name, c in self.categories.items()}
        self.profile_names = set()
        pdir = os.path.join(root, "profiles")
        if os.path.isdir(pdir):
            self.profile_names = {f[:-5] for f in os.listdir(pdir) if f.endswith(".json")}
        self._events = {}  # name -> (path, definition); a class's file counts as read once used
        for dirpath, _, files in os.walk(os.path.join(root, "events")):
            for f in files:
                if f.endswith(".json"):
                    path = os.path.join(dirpath, f)
                    with open(path, encoding="utf-8") as fh:
                        raw = json.load(fh)
                    self._events[raw["name"]] = (os.path.relpath(path, root), raw)
        self._classes = {}  # uid -> resolved class
        self._resolved = {}  # event name -> resolved
        self._objects = {}  # object name -> resolved

    def _load(self, rel):
        self.read.add(rel)
        with open(os.path.join(self.root, rel), encoding="utf-8") as f:
            return json.load(f)

    def _attributes(self, raw):
        """A definition's attributes with its $include files merged in."""
        out = {}
        for inc in raw.get("attributes", {}).get("$include", []):
            data = self._load(inc)
            attrs = self._attributes(data)
            if data.get("meta") == "profile":
                for a in attrs.values():
                    a.setdefault("profile", data["name"])
            for k, v in attrs.items():
                out[k] = merge(out.get(k, {}), v)
        for k, v in raw.get("attributes", {}).items():
            if k != "$include":
                out[k] = merge(out.get(k, {}), v)
        return out

    def _add_listed_profiles(self, attrs, profiles):
        # A listed profile that was not $included still adds its attributes
        # (tagged), where the definition has none of its own by that name.
        for p in profiles:
            if p not in self.profile_names:
                continue
            for k, v in self._attributes(self._load(f"profiles/{p}.json")).items():
                if k not in attrs:
                    attrs[k] = merge(v, {"profile": p})

    def _finish(self, attrs):
        # Dictionary definition under the class/object's, and the datetime
        # profile's <name>_dt siblings of every timestamp_t.
        out = {}
        for k, v in attrs.items():
            out[k] = merge(self.dict.get(k, {}), v)
            if k in self.dict and "enum" in self.dict[k] and "enum" in v:
                out[k]["enum"] = merge(self.dict[k]["enum"], v["enum"])
        for k, v in list(out.items()):
            if v.get("type") == "timestamp_t" and k + "_dt" not in out:
                out[k + "_dt"] = {"type": "datetime_t", "profile": "datetime",
                                  "requirement": "optional", "is_array": v.get("is_array", False)}
        return out

    def _resolve_event(self, name):
        if name in self._resolved:
            return self._resolved[name]
        rel, raw = self._events[name]
        self.read.add(rel)
        parent = self._resolve_event(raw["extends"]) if raw.get("extends") else None
        attrs = copy.deepcopy(parent["raw_attrs"]) if parent else {}
        for k, v in self._attributes(raw).items():
            attrs[k] = merge(attrs.get(k, {}), v)
        profiles = list(parent["profiles"]) if parent else []
        profiles += [p for p in raw.get("profiles", []) if p not in profiles]
        category = raw.get("category") or (parent["category"] if parent else "other")
        r = {"name": name, "raw": raw, "raw_attrs": attrs, "profiles": profiles,
             "category": category, "caption": raw.get("caption", name),
             "deprecated": raw.get("@deprecated")}
        self._resolved[name] = r
        return r

    def class_by_uid(self, uid):
        if not self._classes:
            for name, (_, raw) in self._events.items():
                if "uid" not in raw:
                    continue
                category, up = raw.get("category"), raw.get("extends")
                while not category and up in self._events:
                    category, up = self._events[up][1].get("category"), \
                        self._events[up][1].get("extends")
                cat = self.categories.get(category)
                if cat:
                    self._classes[cat["uid"] * 1000 + raw["uid"]] = name
        name = self._classes.get(uid)
        if name is None:
            return None
        r = self._resolve_event(name)
        if "attrs" not in r:
            attrs = copy.deepcopy(r["raw_attrs"])
            self._add_listed_profiles(attrs, r["profiles"])
            r["attrs"] = self._finish(attrs)
            r["category_uid"] = self.categories[r["category"]]["uid"]
            r["category_caption"] = self.categories[r["category"]]["caption"]
        return r

    def object(self, name):
        if name in self._objects:
            return self._objects[name]
        path = f"objects/{name}.json"
        if not os.path.exists(os.path.join(self.root, path)):
            return None
        raw = self._load(path)
        ext = raw.get("extends")
        parent = self.object(ext) if ext and ext != "object" else None
        attrs = copy.deepcopy(parent["raw_attrs"]) if parent else {}
        for k, v in self._attributes(raw).items():
            attrs[k] = merge(attrs.get(k, {}), v)
        profiles = list(parent["profiles"]) if parent else []
        profiles += [p for p in raw.get("profiles", []) if p not in profiles]
        constraints = raw.get("constraints", parent["constraints"] if parent else {})
        r = {"name": name, "raw_attrs": attrs, "profiles": profiles, "constraints": constraints,
             "deprecated": raw.get("@deprecated")}
        self._objects[name] = r
        full = copy.deepcopy(attrs)
        self._add_listed_profiles(full, profiles)
        r["attrs"] = self._finish(full)
        return r

    def base_type(self, t):
        """The primitive type a dictionary type reduces to (string_t, ...)."""
        seen = 0
        while t in self.types and self.types[t].get("type") and seen < 8:
            t = self.types[t]["type"]
            seen += 1
        return t

    def is_object_type(self, t):
        return t is not None and not t.endswith("_t")

    def closure(self, uids):
        """Resolves the classes and every object reachable from them."""
        todo = []
        for uid in uids:
            c = self.class_by_uid(uid)
            if c is None:
                raise SystemExit(f"no class {uid} in {self.root}")
            todo += [a.get("type") for a in c["attrs"].values()]
        seen = set()
        while todo:
            t = todo.pop()
            if not self.is_object_type(t) or t in seen or t == "object":
                continue
            seen.add(t)
            o = self.object(t)  # reads the extends chain too
            if o:
                todo += [a.get("type") for a in o["attrs"].values()]


class OcsfChecker:
    def __init__(self, schema, report):
        self.s = schema
        self.report = report

    def check_event(self, ev):
        s = self.s
        if not isinstance(ev, dict):
            return self.report("", "an event is a JSON object")
        uid = ev.get("class_uid")
        if not is_int(uid):
            return self.report("class_uid", "missing or not an integer")
        cls = s.class_by_uid(uid)
        if cls is None:
            return self.report("class_uid", f"{uid} is no class of OCSF {s.version}")
        if cls["deprecated"]:
            self.report("class_uid", f"class {cls['name']} is deprecated: {cls['deprecated']}")
        if ev.get("category_uid") != cls["category_uid"]:
            self.report("category_uid", f"{ev.get('category_uid')!r}: class {uid} is in "
                        f"category {cls['category_uid']} ({cls['category']})")
        if "class_name" in ev and ev["class_name"] != cls["caption"]:
            self.report("class_name", f"{ev['class_name']!r}, the class is {cls['caption']!r}")
        if "category_name" in ev and ev["category_name"] != cls["category_caption"]:
            self.report("category_name",
                        f"{ev['category_name']!r}, the category is {cls['category_caption']!r}")
        act = ev.get("activity_id")
        if is_int(act) and ev.get("type_uid") != uid * 100 + act:
            self.report("type_uid", f"{ev.get('type_uid')!r}, expected class_uid * 100 + "
                        f"activity_id = {uid * 100 + act}")
        md = ev.get("metadata") if isinstance(ev.get("metadata"), dict) else {}
        profiles = md.get("profiles", [])
        if not isinstance(profiles, list):
            profiles = []
        for p in profiles:
            if p not in s.profile_names:
                self.report("metadata.profiles", f"{p!r} is no profile of OCSF {s.version}")
        if "version" in md and md["version"] != s.version:
            self.report("metadata.version", f"{md['version']!r} declared, validated against "
                        f"{s.version}", warning=True)
        # The schema's class_uid / category_uid enums list only "0": the
        # server generates the rest; checked above against the class instead.
        attrs = dict(cls["attrs"])
        for k in ("class_uid", "category_uid"):
            attrs[k] = {a: b for a, b in attrs[k].items() if a != "enum"}
        self.check_attrs(ev, attrs, {}, set(profiles), "", f"class {cls['name']}")

    def check_attrs(self, obj, attrs, constraints, profiles, where, what):
        for k, v in obj.items():
            path = where + k
            a = attrs.get(k)
            if a is None:
                self.report(path, f"not an attribute of {what}")
                continue
            if a.get("profile") and a["profile"] not in profiles:
                self.report(path, f"an attribute of profile {a['profile']!r}, which "
                            "metadata.profiles does not list")
            if a.get("@deprecated"):
                d = a["@deprecated"]
                self.report(path, f"deprecated since {d.get('since')}: "
                            f"{re.sub('<[^>]+>', '', d.get('message', ''))}")
            if k == "unmapped":
                if not isinstance(v, dict):
                    self.report(path, "not an object")
                continue
            self.check_value(v, a, k, profiles, path, obj)
        for k, a in attrs.items():
            if a.get("requirement") != "required" or k in obj:
                continue
            if a.get("profile") and a["profile"] not in profiles:
                continue
            self.report(where + k, f"required by {what}, missing")
        for kind, names in constraints.items():
            present = [n for n in names if n in obj]
            if kind == "at_least_one" and not present:
                self.report(where.rstrip(".") or "(event)",
                            f"{what} needs at least one of {', '.join(names)}")
            if kind == "just_one" and len(present) != 1:
                self.report(where.rstrip(".") or "(event)",
                            f"{what} needs exactly one of {', '.join(names)}")

    def check_value(self, v, a, name, profiles, path, parent):
        t = a.get("type")
        if a.get("is_array"):
            if not isinstance(v, list):
                return self.report(path, f"not an array (is_array {t})")
            for i, e in enumerate(v):
                self.check_scalar(e, a, t, name, profiles, f"{path}[{i}]", parent)
            return
        self.check_scalar(v, a, t, name, profiles, path, parent)

    def check_scalar(self, v, a, t, name, profiles, path, parent):
        s = self.s
        if v is None:
            return self.report(path, f"null is not a {t} (omit the attribute)")
        if t is None:
            return self.report(path, "has no type in the dictionary")
        if s.is_object_type(t):
            if not isinstance(v, dict):
                return self.report(path, f"not an object ({t})")
            if t == "object":
                return
            o = s.object(t)
            if o is None:
                return self.report(path, f"object {t} is not in {s.root}")
            if o["deprecated"]:
                self.report(path, f"object {t} is deprecated: {o['deprecated']}")
            return self.check_attrs(v, o["attrs"], o["constraints"], profiles, path + ".",
                                    f"object {t}")
        base = s.base_type(t)
        td = s.types.get(t, {})
        ok = {
            "string_t": lambda: isinstance(v, str),
            "integer_t": lambda: is_int(v) and INT32[0] <= v <= INT32[1],
            "long_t": lambda: is_int(v) and INT64[0] <= v <= INT64[1],
            "float_t": lambda: (is_int(v) or isinstance(v, float)),
            "boolean_t": lambda: isinstance(v, bool),
            "json_t": lambda: True,
        }.get(base)
        if ok is None:
            return self.report(path, f"unknown type {t}")
        if not ok():
            return self.report(path, f"{json.dumps(v)[:60]} is not a {t}")
        if isinstance(v, str):
            for d in (td, s.types.get(base, {})):
                if d.get("max_len") and len(v) > d["max_len"]:
                    self.report(path, f"longer than {d['max_len']} ({t})")
            if td.get("regex") and not re.search(td["regex"], v):
                self.report(path, f"{v[:60]!r} does not match the {t} pattern")
        if td.get("range") and is_int(v) and not td["range"][0] <= v <= td["range"][1]:
            self.report(path, f"{v} outside {t} range {td['range']}")
        enum = a.get("enum")
        if enum is not None:
            if str(v) not in enum:
                self.report(path, f"{json.dumps(v)} is not a value of {name} "
                            f"({', '.join(sorted(enum, key=lambda x: (len(x), x)))})")
            else:
                sib = a.get("sibling")
                if sib and sib in parent and str(v) != "99" and \
                        parent[sib] != enum[str(v)].get("caption"):
                    self.report(path[: -len(name)] + sib, f"{parent[sib]!r}, the caption of "
                                f"{name} {v} is {enum[str(v)].get('caption')!r}")


RFC3339_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})$")


class EcsChecker:
    def __init__(self, fields, custom, report):
        self.f = fields["fields"]
        self.version = fields.get("ecs_version")
        self.custom = custom
        self.report = report
        # Fields whose sub-fields are free: ECS object/flattened fields.
        self.open = {n for n, d in self.f.items() if d["type"] in ("object", "flattened")}

    def flatten(self, obj, prefix, out):
        for k, v in obj.items():
            name = prefix + k
            d = self.f.get(name)
            if isinstance(v, dict) and not (d and d["type"] in ("object", "flattened",
                                                                 "geo_point")):
                self.flatten(v, name + ".", out)
            elif isinstance(v, list) and v and all(isinstance(e, dict) for e in v) and \
                    not (d and d["type"] in ("object", "flattened")):
                for e in v:  # nested: each element's fields under the same names
                    self.flatten(e, name + ".", out)
            else:
                out.append((name, v))

    def check_event(self, ev):
        if not isinstance(ev, dict):
            return self.report("", "an event is a JSON object")
        leaves = []
        self.flatten(ev, "", leaves)
        names = {n for n, _ in leaves}
        for name, v in leaves:
            if name == self.custom or name.startswith(self.custom + "."):
                continue
            d = self.f.get(name)
            if d is None:
                parent = next((p for p in self.open if name.startswith(p + ".")), None)
                if parent is None:
                    self.report(name, f"no such ECS field (and not under {self.custom}.*)")
                continue
            if v is None:
                continue  # Elasticsearch: null means no value
            if isinstance(v, list):
                if not d["array"]:
                    self.report(name, "an array, ECS expects one value")
                for e in v:
                    self.check_type(name, d, e)
            else:
                if d["array"]:
                    self.report(name, "ECS expects an array")
                self.check_type(name, d, v)
        for name, d in self.f.items():
            if d.get("required") and name not in names:
                self.report(name, "required by ECS, missing")
        self.check_categorization(ev)
        if isinstance(ev.get("ecs"), dict) and ev["ecs"].get("version") != self.version:
            self.report("ecs.version", f"{ev['ecs'].get('version')!r} declared, validated "
                        f"against {self.version}", warning=True)

    def check_type(self, name, d, v):
        t = d["type"]
        if t in ("keyword", "constant_keyword", "wildcard", "text", "match_only_text"):
            ok = isinstance(v, str)
        elif t in ("long", "integer", "short", "byte"):
            ok = is_int(v)
        elif t in ("float", "double", "scaled_float", "half_float"):
            ok = is_int(v) or isinstance(v, float)
        elif t == "boolean":
            ok = isinstance(v, bool)
        elif t == "ip":
            try:
                ipaddress.ip_address(v)
                ok = True
            except (ValueError, TypeError):
                ok = False
        elif t == "date":
            ok = isinstance(v, str) and bool(RFC3339_MS.match(v))
            if not ok:
                return self.report(name, f"{json.dumps(v)[:60]}: an ECS date is RFC 3339 with "
                                   "at most 3 fractional digits (Elasticsearch date: ms)")
        else:
            ok = True  # geo_point, nested, object: shape checked by flatten
        if not ok:
            self.report(name, f"{json.dumps(v)[:60]} is not of ECS type {t}")
        allowed = d.get("allowed")
        if allowed is not None and isinstance(v, str) and v not in allowed:
            self.report(name, f"{v!r} is not an allowed value ({', '.join(sorted(allowed))})")

    def check_categorization(self, ev):
        e = ev.get("event") if isinstance(ev.get("event"), dict) else {}
        cats = e.get("category", [])
        types = e.get("type", [])
        cats = cats if isinstance(cats, list) else [cats]
        types = types if isinstance(types, list) else [types]
        expected = self.f.get("event.category", {}).get("allowed", {})
        if not cats or not types:
            return
        for t in types:
            if not any(t in (expected.get(c) or []) for c in cats):
                self.report("event.type", f"{t!r} is an expected type of none of the "
                            f"categories {cats}")
        for c in cats:
            if c in expected and not any(t in (expected[c] or []) for t in types):
                self.report("event.category", f"{c!r} has none of its expected types "
                            f"({', '.join(expected[c])}) in event.type {types}")


def run(kind, schema_arg, files, opts):
    problems = {"errors": 0, "warnings": 0}
    state = {"where": ""}
    limit = opts.get("max_errors", 1000)

    def report(path, msg, warning=False):
        problems["warnings" if warning else "errors"] += 1
        if problems["errors"] + problems["warnings"] <= limit:
            print(f"{state['where']}: {path}: {'warning: ' if warning else ''}{msg}")

    if kind == "ocsf":
        schema = Ocsf(schema_arg)
        checker = OcsfChecker(schema, report)
        label = f"OCSF {schema.version}"
    else:
        with open(schema_arg, encoding="utf-8") as f:
            fields = json.load(f)
        checker = EcsChecker(fields, opts.get("custom", "supervise"), report)
        label = f"ECS {fields.get('ecs_version')}"
    events = 0
    seen = set()
    for path in files:
        with open(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                state["where"] = f"{path}:{n}"
                try:
                    ev = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as e:
                    report("", f"not a UTF-8 JSON line: {e}")
                    continue
                events += 1
                checker.check_event(ev)
                if kind == "ocsf" and isinstance(ev, dict):
                    seen.add(str(ev.get("class_uid")))
                    seen.add(f"{ev.get('class_uid')}:{ev.get('activity_id')}")
    state["where"] = ", ".join(files)
    for r in opts.get("require", []):
        if r not in seen:
            report("", f"no event of {r}")
    print(f"{label}: {events} events, {problems['errors']} errors, "
          f"{problems['warnings']} warnings", file=sys.stderr)
    return 1 if problems["errors"] else 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    kind, schema_arg, rest = argv[0], argv[1], argv[2:]
    if kind == "ocsf-files":
        s = Ocsf(schema_arg)
        s.closure([int(u) for u in rest])
        for rel in sorted(s.read):
            print(rel)
        return 0
    if kind not in ("ocsf", "ecs"):
        print(__doc__, file=sys.stderr)
        return 2
    opts = {}
    files = []
    i = 0
    while i < len(rest):
        if rest[i] == "--require":
            opts["require"] = [r for r in rest[i + 1].split(",") if r]
            i += 2
        elif rest[i] == "--custom":
            opts["custom"] = rest[i + 1]
            i += 2
        elif rest[i] == "--max-errors":
            opts["max_errors"] = int(rest[i + 1])
            i += 2
        else:
            files.append(rest[i])
            i += 1
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    return run(kind, schema_arg, files, opts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
