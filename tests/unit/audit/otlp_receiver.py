#!/usr/bin/env python3
"""A tiny OTLP/HTTP logs receiver for the otlp sink's tests.

Every POST to /v1/logs is gunzipped and checked against the OTLP JSON mapping
of opentelemetry/proto/logs/v1/logs.proto (+ common.proto, resource.proto),
written here from the proto: the allowed field names at each level and their
JSON types, 64-bit integers as decimal strings, enums and 32-bit integers as
numbers, nothing unknown; the resource must name host.name and
service.name=supervise. An invalid request gets 400 and is logged as such.

  otlp_receiver.py --out DIR [--port N] [--schedule 200,429,503,...]
                   [--retry-after S] [--partial N]

--schedule gives the status of the first requests in order (then 200); a 429
carries Retry-After: S. Writes DIR/port once listening, DIR/requests.jsonl
(one line per request: time, status, records, seqs, error) and
DIR/records.jsonl (the body of every record of a request answered 2xx).
"""
import argparse
import gzip
import http.server
import json
import os
import re
import socket
import sys
import threading
import time

DEC = re.compile(r"^(0|[1-9][0-9]*)$")
HEX = re.compile(r"^([0-9a-f]{2})*$")

# field: (kind, message or None, repeated)
SCHEMA = {
    "ExportLogsServiceRequest": {"resourceLogs": ("msg", "ResourceLogs", True)},
    "ResourceLogs": {"resource": ("msg", "Resource", False),
                     "scopeLogs": ("msg", "ScopeLogs", True),
                     "schemaUrl": ("string", None, False)},
    "Resource": {"attributes": ("msg", "KeyValue", True),
                 "droppedAttributesCount": ("uint32", None, False)},
    "ScopeLogs": {"scope": ("msg", "InstrumentationScope", False),
                  "logRecords": ("msg", "LogRecord", True),
                  "schemaUrl": ("string", None, False)},
    "InstrumentationScope": {"name": ("string", None, False),
                             "version": ("string", None, False),
                             "attributes": ("msg", "KeyValue", True),
                             "droppedAttributesCount": ("uint32", None, False)},
    "LogRecord": {"timeUnixNano": ("fixed64", None, False),
                  "observedTimeUnixNano": ("fixed64", None, False),
                  "severityNumber": ("enum", None, False),
                  "severityText": ("string", None, False),
                  "body": ("msg", "AnyValue", False),
                  "attributes": ("msg", "KeyValue", True),
                  "droppedAttributesCount": ("uint32", None, False),
                  "flags": ("fixed32", None, False),
                  "traceId": ("hexbytes", None, False),
                  "spanId": ("hexbytes", None, False),
                  "eventName": ("string", None, False)},
    "KeyValue": {"key": ("string", None, False), "value": ("msg", "AnyValue", False)},
    # oneof value
    "AnyValue": {"stringValue": ("string", None, False), "boolValue": ("bool", None, False),
                 "intValue": ("int64", None, False), "doubleValue": ("double", None, False),
                 "arrayValue": ("msg", "ArrayValue", False),
                 "kvlistValue": ("msg", "KeyValueList", False),
                 "bytesValue": ("bytes", None, False)},
    "ArrayValue": {"values": ("msg", "AnyValue", True)},
    "KeyValueList": {"values": ("msg", "KeyValue", True)},
}


def check_scalar(kind, v, path):
    ok = {
        "string": isinstance(v, str),
        "bool": isinstance(v, bool),
        "double": isinstance(v, (int, float)) and not isinstance(v, bool),
        "uint32": isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32,
        "fixed32": isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32,
        "enum": isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 24,
        # OTLP/JSON: 64-bit integers are decimal strings.
        "fixed64": isinstance(v, str) and bool(DEC.match(v)) and int(v) < 2**64,
        "int64": isinstance(v, str) and bool(re.match(r"^-?(0|[1-9][0-9]*)$", v)),
        "hexbytes": isinstance(v, str) and bool(HEX.match(v)),
        "bytes": isinstance(v, str),
    }[kind]
    if not ok:
        raise ValueError(f"{path}: {v!r} is not a valid {kind}")


def check(msg, obj, path):
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: {msg} must be an object")
    fields = SCHEMA[msg]
    for k, v in obj.items():
        if k not in fields:
            raise ValueError(f"{path}: unknown field {k!r} in {msg}")
        kind, sub, repeated = fields[k]
        items = v if repeated else [v]
        if repeated and not isinstance(v, list):
            raise ValueError(f"{path}.{k}: must be an array")
        for i, item in enumerate(items):
            p = f"{path}.{k}[{i}]" if repeated else f"{path}.{k}"
            if kind == "msg":
                check(sub, item, p)
            else:
                check_scalar(kind, item, p)
    if msg == "AnyValue" and len(obj) != 1:
        raise ValueError(f"{path}: AnyValue must set exactly one of its oneof")
    if msg == "KeyValue" and "key" not in obj:
        raise ValueError(f"{path}: KeyValue without key")


def attrs(kvs):
    out = {}
    for kv in kvs:
        v = kv.get("value", {})
        out[kv["key"]] = next(iter(v.values())) if v else None
    return out


def validate(req):
    check("ExportLogsServiceRequest", req, "$")
    records = []
    if len(req.get("resourceLogs", [])) != 1:
        raise ValueError("want exactly one ResourceLogs")
    rl = req["resourceLogs"][0]
    ra = attrs(rl.get("resource", {}).get("attributes", []))
    if not ra.get("host.name"):
        raise ValueError("resource without host.name")
    if ra.get("service.name") != "supervise":
        raise ValueError(f"resource service.name {ra.get('service.name')!r}")
    for sl in rl.get("scopeLogs", []):
        if sl.get("scope", {}).get("name") != "supervise":
            raise ValueError("scope name is not supervise")
        for lr in sl.get("logRecords", []):
            for f in ("timeUnixNano", "observedTimeUnixNano", "severityNumber", "body"):
                if f not in lr:
                    raise ValueError(f"log record without {f}")
            if "stringValue" not in lr["body"]:
                raise ValueError("body is not a stringValue")
            event = json.loads(lr["body"]["stringValue"])
            a = attrs(lr.get("attributes", []))
            if "seq" in event and a.get("supervise.seq") != str(event["seq"]):
                raise ValueError(f"supervise.seq {a.get('supervise.seq')!r} != {event['seq']}")
            records.append((lr, event, a))
    return ra, records


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--schedule", default="")
    ap.add_argument("--retry-after", default="1")
    ap.add_argument("--partial", type=int, default=0)
    ap.add_argument("--no-check", action="store_true",
                    help="answer 200 at once, check and log nothing (throughput runs)")
    args = ap.parse_args()
    schedule = [int(s) for s in args.schedule.split(",") if s]
    lock = threading.Lock()
    state = {"n": 0}
    reqlog = open(os.path.join(args.out, "requests.jsonl"), "a", buffering=1)
    reclog = open(os.path.join(args.out, "records.jsonl"), "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def setup(self):
            super().setup()
            # Headers and body go in two writes: without NODELAY, Nagle and
            # the client's delayed ACK hold the second for ~40 ms (a Go
            # collector sets it by default).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self):
            t = time.time()
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if args.no_check:
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
                return
            error = None
            records = []
            try:
                if self.path != "/v1/logs":
                    raise ValueError(f"path {self.path}")
                if self.headers.get("Content-Type") != "application/json":
                    raise ValueError(f"Content-Type {self.headers.get('Content-Type')}")
                if self.headers.get("Content-Encoding") != "gzip":
                    raise ValueError("not gzip")
                if not self.headers.get("User-Agent", "").startswith("supervise/"):
                    raise ValueError(f"User-Agent {self.headers.get('User-Agent')}")
                _, records = validate(json.loads(gzip.decompress(body)))
            except Exception as e:  # noqa: BLE001 - any fault is the test's failure
                error = f"{type(e).__name__}: {e}"
            with lock:
                state["n"] += 1
                n = state["n"]
                status = 400 if error else (schedule[n - 1] if n <= len(schedule) else 200)
                seqs = [ev.get("seq") for _, ev, _ in records]
                reqlog.write(json.dumps({"n": n, "t": t, "status": status, "records": len(records),
                                         "seqs": seqs, "error": error,
                                         "auth": self.headers.get("Authorization"),
                                         "took": time.time() - t}) + "\n")
                if 200 <= status < 300:
                    for lr, ev, a in records:
                        reclog.write(json.dumps({"event": ev, "attributes": a,
                                                 "body": lr["body"]["stringValue"],
                                                 "severityNumber": lr["severityNumber"],
                                                 "timeUnixNano": lr["timeUnixNano"]}) + "\n")
            resp = b"{}"
            if status == 200 and args.partial:
                resp = json.dumps({"partialSuccess": {"rejectedLogRecords": str(args.partial),
                                                      "errorMessage": "test"}}).encode()
            if status != 200:
                resp = json.dumps({"code": 3, "message": error or "scheduled"}).encode()
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", args.retry_after)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(resp)))
            self.end_headers()
            self.wfile.write(resp)

    # A test killed by its timeout runs no destructor: go with it.
    parent = os.getppid()

    def orphaned():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=orphaned, daemon=True).start()

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    tmp = os.path.join(args.out, "port.tmp")
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, os.path.join(args.out, "port"))
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
