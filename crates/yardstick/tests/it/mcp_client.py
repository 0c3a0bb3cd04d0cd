"""An MCP client written with the official Python SDK (`pip install mcp`), not by yardstick:
it lists the tools of a yardstick MCP server and calls each one with real arguments, checking
the answers. Run by crates/yardstick/tests/it/mcp.rs.

    python mcp_client.py CONFIG_JSON

CONFIG_JSON: {"transport": "stdio", "command": [...], or "transport": "http", "url": ...,
"headers": {...}; "runs": [A, B] (oldest first), "benchmark": NAME, "spec": YAML,
"bad_spec": YAML}. Prints one `ok TOOL: what` line per checked call and, last,
`CHECKED N calls over TRANSPORT`; exits 1 at the first failed check.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = {
    "benchmark_contracts",
    "validate_spec",
    "list_runs",
    "get_run",
    "compare_runs",
    "gate_run",
    "trend",
    "query_facts",
}
# The tools listed with an output schema (yardstick_server::mcp::WITH_OUTPUT_SCHEMA): the others'
# answers are large documents whose schemas stay out of tools/list.
WITH_OUTPUT_SCHEMA = {"validate_spec", "list_runs", "trend", "query_facts"}


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


class Checker:
    def __init__(self, session, cfg):
        self.s = session
        self.cfg = cfg
        self.calls = 0

    async def call(self, name, args, *, error=False):
        # The SDK validates structured content against the tool's output schema itself (and
        # raises when it does not conform).
        r = await self.s.call_tool(name, args)
        self.calls += 1
        texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
        check(texts and texts[0].strip(), f"{name}: no text summary: {r}")
        if error:
            check(r.is_error, f"{name}({args}): expected a tool error, got {texts[:1]}")
            return None, texts[0]
        check(not r.is_error, f"{name}({args}): tool error: {texts}")
        check(isinstance(r.structured_content, dict), f"{name}: no structured content")
        # The JSON text block says the same as the structured content.
        check(
            any(_json_or_none(t) == r.structured_content for t in texts[1:]),
            f"{name}: no text block with the structured content as JSON",
        )
        return r.structured_content, texts[0]

    def ok(self, name, what):
        print(f"ok {name}: {what}", flush=True)

    async def run(self):
        cfg = self.cfg
        a, b = cfg["runs"]
        init = await self.s.initialize()
        check(init.server_info.name == "yardstick", f"server name {init.server_info.name}")

        tools = (await self.s.list_tools()).tools
        names = {t.name for t in tools}
        check(names == TOOLS, f"tools listed: {sorted(names)}")
        for t in tools:
            check(t.input_schema.get("type") == "object", f"{t.name}: input schema {t.input_schema}")
            if t.name in WITH_OUTPUT_SCHEMA:
                check(t.output_schema and t.output_schema.get("type") == "object", f"{t.name}: output schema")
            else:
                check(t.output_schema is None, f"{t.name}: a large output schema in tools/list")
            check(t.description, f"{t.name}: no description")
        props = {t.name: set(t.input_schema.get("properties", {})) for t in tools}
        check({"benchmark", "metric", "statistic"} <= props["trend"], f"trend inputs {props['trend']}")
        check("sql" in props["query_facts"], "query_facts takes sql")
        print(f"ok tools/list: {len(tools)} tools with input schemas, {len(WITH_OUTPUT_SCHEMA)} with output schemas", flush=True)

        # The contract.
        c, summary = await self.call("benchmark_contracts", {})
        rules = [r["id"] for r in c["rules"]]
        check("trials-replicates" in rules and len(rules) >= 30, f"rules {rules}")
        check([t["name"] for t in c["templates"]] == ["serve", "train", "micro", "full"], "templates")
        check(c["schema"].get("$schema"), "the spec's JSON Schema")
        check("validation rules" in summary, summary)
        self.ok("benchmark_contracts", f"{len(rules)} rules")

        # Validation: a good spec, and a bad one flagged with its rule id.
        v, _ = await self.call("validate_spec", {"spec": cfg["spec"]})
        check(v["valid"] is True, f"the good spec: {v}")
        v, summary = await self.call("validate_spec", {"spec": cfg["bad_spec"], "name": "bad.yaml"})
        check(v["valid"] is False, "the bad spec is invalid")
        got = [d["rule"] for d in v["files"][0]["diagnostics"]]
        check("trials-replicates" in got, f"rules flagged: {got}")
        check(v["files"][0]["file"] == "bad.yaml", "the name given")
        check("INVALID" in summary and "trials-replicates" in summary, summary)
        self.ok("validate_spec", f"bad spec flagged {got}")

        # Runs.
        p, summary = await self.call("list_runs", {})
        ids = [r["run_id"] for r in p["runs"]]
        check(ids == [b, a], f"list_runs ids {ids}, want newest first {[b, a]}")
        check(a in summary and b in summary, summary)
        p, _ = await self.call("list_runs", {"limit": 1, "name": cfg["benchmark"], "label": "team=inference"})
        check([r["run_id"] for r in p["runs"]] == [b] and p["next_offset"] == 1, f"page 1: {p}")
        p, _ = await self.call("list_runs", {"name": "no-such-benchmark"})
        check(p["runs"] == [], "no runs of another benchmark")
        await self.call("list_runs", {"limit": 0}, error=True)
        self.ok("list_runs", f"ids {ids}, paging, filters, a refused limit")

        d, summary = await self.call("get_run", {"id": a})
        check(d["run"]["run_id"] == a and d["run"]["name"] == cfg["benchmark"], f"get_run {d['run']}")
        check(d["manifest"] and d["spec"] and d["points"] and d["replicates"], "run detail")
        check(cfg["benchmark"] in summary, summary)
        d, _ = await self.call("get_run", {"id": b[:20]})
        check(d["run"]["run_id"] == b, "a unique prefix")
        _, text = await self.call("get_run", {"id": "01JNOSUCHRUN"}, error=True)
        check("no run" in text, text)
        self.ok("get_run", f"name {cfg['benchmark']}, prefix, unknown id refused")

        # Comparison and gate.
        cmp, _ = await self.call("compare_runs", {"a": a, "b": b})
        check(cmp["baseline_run"] == a and cmp["candidate_run"] == b, "compare ids")
        check(cmp["metrics"], "compared metrics")
        await self.call("compare_runs", {"a": a, "b": "01JNOSUCHRUN"}, error=True)
        self.ok("compare_runs", f"{len(cmp['metrics'])} metrics")

        g, summary = await self.call("gate_run", {"id": b, "baseline": a})
        check(g["verdict"] in ("PASS", "WARN", "INCONCLUSIVE", "FAIL"), f"verdict {g.get('verdict')}")
        check(g["comparison"]["baseline_run"] == a and g["confirm_run"] is None, "gate baseline")
        check(g["verdict"] in summary, summary)
        _, text = await self.call("gate_run", {"id": b}, error=True)
        check("baseline" in text, f"no stored baseline: {text}")
        self.ok("gate_run", f"verdict {g['verdict']}; no stored baseline refused")

        # Trend.
        t, _ = await self.call(
            "trend", {"benchmark": cfg["benchmark"], "metric": "ttft_ms", "statistic": "p50"}
        )
        check(len(t["series"]) == 1, f"series {t['series']}")
        pts = [p["run_id"] for p in t["series"][0]["points"]]
        check(pts == [a, b], f"trend points {pts}")
        check(t["unit"] == "ms", "unit")
        self.ok("trend", f"points {pts}")

        # SQL: rows, and writes refused (the runs are still there after).
        q, summary = await self.call("query_facts", {"sql": "SELECT run_id, name FROM runs ORDER BY run_id;"})
        check(q["columns"] == ["run_id", "name"], f"columns {q['columns']}")
        check([r[0] for r in q["rows"]] == sorted([a, b]), f"rows {q['rows']}")
        check("2 rows" in summary, summary)
        q, _ = await self.call(
            "query_facts",
            {"sql": "SELECT COUNT(*) AS n FROM facts WHERE metric = 'ttft_ms' AND replicate = -1"},
        )
        check(q["rows"][0][0] > 0, "aggregate facts")
        for bad in ["DELETE FROM runs", "DROP TABLE facts", "INSERT INTO baselines VALUES (1)", "  ; "]:
            await self.call("query_facts", {"sql": bad}, error=True)
        q, _ = await self.call("query_facts", {"sql": "SELECT COUNT(*) FROM runs"})
        check(q["rows"][0][0] == 2, "the runs are still there")
        self.ok("query_facts", "rows, aggregate facts, 4 writes and empty statements refused")

        # An argument a tool does not take is refused, not ignored.
        try:
            r = await self.s.call_tool("get_run", {"id": a, "nosuch": 1})
            self.calls += 1
            check(r.is_error, "an unknown argument is refused")
        except Exception as e:  # a JSON-RPC invalid-params error is a refusal too
            self.calls += 1
            check("nosuch" in str(e) or "unknown" in str(e).lower(), f"refusal: {e}")
        self.ok("get_run", "unknown argument refused")


def _json_or_none(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


async def main():
    cfg = json.loads(sys.argv[1])
    if cfg["transport"] == "stdio":
        params = StdioServerParameters(command=cfg["command"][0], args=cfg["command"][1:])
        ctx = stdio_client(params)
    else:
        import httpx2

        client = httpx2.AsyncClient(headers=cfg.get("headers") or {}, timeout=60)
        ctx = streamable_http_client(cfg["url"], http_client=client)
    async with ctx as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            checker = Checker(session, cfg)
            await checker.run()
    print(f"CHECKED {checker.calls} calls over {cfg['transport']}", flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Failed as e:
        print(f"FAILED: {e}", flush=True)
        sys.exit(1)
