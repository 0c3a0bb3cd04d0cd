"""An OTLP/HTTP receiver written with the official OpenTelemetry protobuf package
(`pip install opentelemetry-proto`), not by yardstick: it decodes every export POSTed to
/v1/metrics and /v1/traces and appends it, as JSON (protobuf's JSON mapping), to a file.
Run by crates/yardstick/tests/it/otlp.rs.

    python otlp_receiver.py OUT_JSONL

Prints `port N` once it listens on 127.0.0.1; each line of OUT_JSONL is
{"path": ..., "content_type": ..., "authorization": ..., "export": {...}}. A body that does not decode is answered
400 and written as {"path": ..., "error": ...}.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]
KINDS = {
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        kind = KINDS.get(self.path)
        if kind is None:
            self.send_response(404)
            self.end_headers()
            return
        request, response = kind
        line = {
            "path": self.path,
            "content_type": self.headers.get("Content-Type"),
            "authorization": self.headers.get("Authorization"),
        }
        try:
            msg = request()
            msg.ParseFromString(body)
            line["export"] = MessageToDict(msg)
            status, answer = 200, response().SerializeToString()
        except Exception as e:  # noqa: BLE001 - any decode failure is the sender's
            line["error"] = str(e)
            status, answer = 400, b""
        with open(OUT, "a") as f:
            f.write(json.dumps(line) + "\n")
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"port {server.server_address[1]}", flush=True)
server.serve_forever()
