"""Real MCP servers written with the ``mcp`` SDK, for the MCP tests (issue 28).

Run as a script for a stdio server::

    python tests/support/mcp_servers.py tools     # lookup (read-only), write_note, slow, crash, media, env_keys, big, grow, whoami
    python tests/support/mcp_servers.py fail      # writes to stderr and exits 3 before answering

``MCP_TEST_PID_FILE`` (when the config names it) gets the server's PID, so a test can check
that no process is left; ``MCP_TEST_LOG`` gets one line per call (what the server did); a file
at ``MCP_TEST_REFUSE_IF`` makes the next start fail (a server that cannot come back).
``http_app()`` is the same ``tools`` server as a Streamable HTTP ASGI app (``serve_asgi``).
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ImageContent, ResourceLink, TextContent, ToolAnnotations

SCRIPT = Path(__file__).resolve()


def stdio_config(kind: str = "tools", **extra: Any) -> dict[str, Any]:
    """A ``[mcp.servers.NAME]`` table running this script with the interpreter of the tests."""
    return {"command": sys.executable, "args": [str(SCRIPT), kind], **extra}


def make_venv(folder: Path) -> Path:
    """A plain ``python -m venv`` (no pip) whose only third-party packages are the ``mcp`` SDK's
    (a ``.pth`` naming the site-packages that hold it): its ``bin/python`` is a symlink to the base
    interpreter, which has no ``mcp`` of its own unless it was installed there. Returns that python."""
    import subprocess

    import mcp

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                           check=True, capture_output=True, text=True).stdout.strip()
    packages = Path(mcp.__file__).resolve().parents[1]
    Path(found, "sdk.pth").write_text(f"{packages}\n", encoding="utf-8")
    return python


def _log(line: str) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


class _Server(MCPServer):
    """The SDK's server, with ``needs_task`` declared as a tool that runs only as an MCP task
    (``execution.taskSupport = "required"``: the decorator has no parameter for it)."""

    #: how many listed-only tools to add (``MCP_TEST_FILLERS``: a server with thousands of tools)
    fillers = int(os.environ.get("MCP_TEST_FILLERS", "0") or 0)

    async def list_tools(self) -> list[Any]:
        from mcp_types import Tool, ToolExecution

        tools = await super().list_tools()
        tools = [t.model_copy(update={"execution": ToolExecution(task_support="required")}) if t.name == "needs_task"
                 else t for t in tools]
        schema = {"type": "object", "properties": {"id": {"type": "string", "description": "which one"}}}
        return tools + [Tool(name=f"widget_{i:05d}", description=f"Adjust widget number {i} of the gizmo panel.",
                             input_schema=schema) for i in range(self.fillers)]


def build_server(label: str = "tools") -> Any:
    server = _Server(label, instructions="Test tools for instance-ai.")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def needs_task() -> str:
        """A tool that runs only as an MCP task (a client that does not run tasks cannot call it)."""
        return "it ran without a task"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def create_github_issue(title: str) -> str:
        """Open an issue in a GitHub repository (a tool a search should find among thousands)."""
        return f"issue opened: {title}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo_env(name: str) -> dict[str, Any]:
        """The value of one of the server's environment variables (a server that echoes its secrets)."""
        return {"name": name, "value": os.environ.get(name, ""), "said": f"{name} is {os.environ.get(name, '')}"}

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(key: str) -> str:
        """Look a key up in the test table (read-only)."""
        _log(f"lookup {key}")
        return f"{label}: the value of {key} is 42"

    @server.tool()
    def write_note(text: str) -> str:
        """Write a note (changes things: asks first)."""
        _log(f"write_note {text}")
        return f"note saved: {text}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def slow(steps: int, ctx: Context) -> str:
        """Count slowly, reporting progress at each step."""
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1} of {steps}")
            _log(f"slow step {step + 1}")
            await asyncio.sleep(0.3)  # the scenario: a slow tool
        _log("slow done")
        return f"counted to {steps}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def crash(reason: str = "boom") -> str:
        """Exit the server process in the middle of the call."""
        print(f"crashing on purpose: {reason}", file=sys.stderr, flush=True)
        os._exit(7)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def media() -> list[Any]:
        """An image, a resource link and some JSON."""
        png = base64.b64encode(b"\x89PNG" + b"\0" * 2044).decode()
        return [TextContent(type="text", text="a chart"), ImageContent(type="image", data=png, mime_type="image/png"),
                ResourceLink(type="resource_link", name="report", uri="file:///tmp/report.csv", mime_type="text/csv")]

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def env_keys() -> str:
        """The names of the server's environment variables."""
        return ",".join(sorted(os.environ))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def big(size: int) -> str:
        """A text of ``size`` bytes."""
        return "x" * size

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def hang() -> str:
        """Never answers (a call that hangs)."""
        _log("hang started")
        await asyncio.Event().wait()
        return "never"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool called ``name`` and tell the client its tools changed."""

        def added() -> str:
            return f"{name} works"

        server.add_tool(added, name=name, description="A tool added while the server runs.",
                        annotations=ToolAnnotations(read_only_hint=True))
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def whoami() -> dict[str, Any]:
        """The server's process id, label and interpreter (``sys.prefix``: a venv's folder in a venv)."""
        return {"pid": os.getpid(), "label": label, "prefix": sys.prefix}

    return server


def http_app(label: str = "http", *, json_response: bool = False) -> Any:
    """The tools server as a Streamable HTTP ASGI app (path ``/mcp``; ``json_response``: answers as
    one JSON body instead of an event stream)."""
    return build_server(label).streamable_http_app(streamable_http_path="/mcp", json_response=json_response)


def sse_app(label: str = "sse") -> Any:
    """The tools server on the legacy HTTP+SSE transport (``GET /sse``, ``POST /messages/``)."""
    return build_server(label).sse_app()


def recording(app: Any, seen: list[dict[str, str]]) -> Any:
    """``app`` behind an ASGI wrapper that appends each HTTP request's headers to ``seen``."""

    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await app(scope, receive, send)

    return wrapper


def main(argv: list[str]) -> None:
    kind = argv[1] if len(argv) > 1 else "tools"
    pid_file = os.environ.get("MCP_TEST_PID_FILE")
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
    refuse = os.environ.get("MCP_TEST_REFUSE_IF")
    if refuse and os.path.exists(refuse):
        print(f"refusing to start: {refuse} exists", file=sys.stderr, flush=True)
        sys.exit(4)
    if kind == "fail":
        print("starting the fail server", file=sys.stderr)
        print("error: MCP_TEST_TOKEN is not set; cannot log in", file=sys.stderr, flush=True)
        sys.exit(3)
    build_server(os.environ.get("MCP_TEST_LABEL", kind)).run("stdio")


if __name__ == "__main__":
    main(sys.argv)
