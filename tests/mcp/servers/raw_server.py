"""A hand-rolled stdio MCP server that answers ``tools/call`` badly: ``python raw_server.py MODE``.

It answers ``initialize`` and ``tools/list`` properly (one tool, ``probe``); a call of ``probe``
is answered per MODE: ``garbage`` (a line that is not JSON-RPC), ``latin1`` (a JSON line with
bytes that are not UTF-8), ``once`` (the process dies; it starts only once: every start is
counted in the file named by the second argument, and a second one fails), ``ok`` (a proper
result). Written by hand, not with the SDK, because
the SDK's servers protect their stdout from exactly this.
"""

from __future__ import annotations

import json
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
out = sys.stdout.buffer
if len(sys.argv) > 2:
    with open(sys.argv[2], "a") as starts:
        starts.write("started\n")
    with open(sys.argv[2]) as starts:
        if MODE == "once" and len(starts.readlines()) > 1:
            print("raw_server: the license was already used (refusing to start again)", file=sys.stderr)
            sys.exit(1)


def send(message: dict[str, object]) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


for line in sys.stdin.buffer:
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    print(f"raw_server got {method}", file=sys.stderr, flush=True)
    if rid is None:
        continue  # a notification
    if method == "initialize":
        version = request["params"]["protocolVersion"]
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw", "version": "1"},
                },
            }
        )
    elif method == "tools/list":
        tool = {"name": "probe", "description": "Answers badly.", "inputSchema": {"type": "object"}}
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}})
    elif method == "tools/call" and MODE == "garbage":
        out.write(b"<html>502 Bad Gateway</html>\n")
        out.flush()
    elif method == "tools/call" and MODE == "latin1":
        text = b'{"content": [{"type": "text", "text": "caf\xe9"}], "isError": false}'
        out.write(b'{"jsonrpc": "2.0", "id": ' + str(rid).encode() + b', "result": ' + text + b"}\n")
        out.flush()
    elif method == "tools/call" and MODE == "once":
        os._exit(1)
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "fine"}], "isError": False}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}})
