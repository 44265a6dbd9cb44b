"""The process big workflows are laid out in, so the app's keys keep answering meanwhile.

A layout of thousands of nodes is up to a second of pure Python: in a thread it holds the interpreter
lock, and every key the person presses waits for it (measured: 200 ms median, 2.6 s worst while 5,000
nodes were laid out). Here it runs in one worker process (``python -m`` this module), started the first
time a big workflow is shown (never for small ones) and kept for the next. The app talks to it over its
stdin/stdout with the event loop's own pipes (nothing blocks the loop), one request at a time: a
length-prefixed pickle each way. What crosses is plain data in small pickles (``protocol.workflow_wire``),
made and read a piece at a time with the loop let in between, so no single step holds it long.

If the worker cannot be started or stops (killed, out of memory), the layout is made in a thread as
before and the reason is kept in ``last_failure``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import pickle
import signal
import struct
import sys
from typing import Any, BinaryIO

from ...protocol.workflow_graph import Workflow
from ...protocol.workflow_layout import Detail, Layout, layout_workflow
from ...protocol.workflow_wire import LayoutReader, workflow_parts
from ...protocol.workflow_wire import lay_out as lay_out_here

#: the most a message either way may be (a 5,000-node layout is ~0.7 MB)
MAX_MESSAGE = 512 * 1024 * 1024
_LENGTH = struct.Struct("!Q")

#: why the last layout was not made in the worker ("" when it was)
last_failure = ""
#: layouts made in the worker process so far (tests and the benchmark read it)
laid_out_in_worker = 0
#: whether a request is with the worker now
busy = False


class _Worker:
    """One worker process and the loop its pipes belong to."""

    def __init__(self, proc: asyncio.subprocess.Process, loop: asyncio.AbstractEventLoop) -> None:
        self.proc = proc
        self.loop = loop
        self.lock = asyncio.Lock()

    async def ask(self, request: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.write(_LENGTH.pack(len(data)) + data)
        await self.proc.stdin.drain()
        (length,) = _LENGTH.unpack(await self.proc.stdout.readexactly(_LENGTH.size))
        if length > MAX_MESSAGE:
            raise OSError(f"the layout process answered {length} bytes (at most {MAX_MESSAGE})")
        return pickle.loads(await self.proc.stdout.readexactly(length))  # our own child's pickles

    def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)


_worker: _Worker | None = None


def running() -> bool:
    """Whether a worker process is up."""
    return _worker is not None and _worker.proc.returncode is None


def pid() -> int | None:
    return _worker.proc.pid if _worker is not None else None


def shutdown() -> None:
    """Stop the worker process (at exit; when it broke)."""
    global _worker
    worker, _worker = _worker, None
    if worker is not None:
        worker.stop()


atexit.register(shutdown)


async def stop() -> None:
    """Stop the worker process and wait for it, while its event loop still runs (the canvas, when it
    is unmounted: its pipes are closed with the loop they belong to)."""
    global _worker
    worker = _worker
    if worker is None or worker.loop is not asyncio.get_running_loop():
        return
    _worker = None
    if worker.proc.stdin is not None:
        worker.proc.stdin.close()
    worker.stop()
    with contextlib.suppress(TimeoutError, ProcessLookupError):
        await asyncio.wait_for(worker.proc.wait(), 5)


async def _started() -> _Worker:
    global _worker
    loop = asyncio.get_running_loop()
    if _worker is not None and (_worker.loop is not loop or _worker.proc.returncode is not None):
        shutdown()  # another event loop's (its pipes cannot be used here), or it stopped
    if _worker is None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", __name__, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,  # never onto the app's screen; failures come as answers
            limit=MAX_MESSAGE)
        _worker = _Worker(proc, loop)
    return _worker


async def lay_out(workflow: Workflow, detail: Detail, status_row: bool) -> Layout:
    """``workflow``'s layout, made in the worker process (in a thread if the worker fails)."""
    global last_failure, laid_out_in_worker, busy
    parts = []
    for part in workflow_parts(workflow):
        parts.append(part)
        await asyncio.sleep(0)
    try:
        worker = await _started()
        async with worker.lock:
            busy = True
            try:
                ok, answer = await worker.ask((parts, int(detail), status_row))
            finally:
                busy = False
        if not ok:
            raise OSError(answer)
    except (OSError, EOFError, asyncio.IncompleteReadError, pickle.PickleError) as exc:
        code = _worker.proc.returncode if _worker is not None else None
        last_failure = (f"the layout process stopped ({type(exc).__name__}: {exc}"
                        f"{f'; exit code {code}' if code is not None else ''}); laid out here instead")
        shutdown()
        return await asyncio.to_thread(layout_workflow, workflow, detail, status_row=status_row)
    last_failure = ""
    laid_out_in_worker += 1
    reader = LayoutReader(workflow)
    for chunk in answer:
        reader.feed(chunk)
        await asyncio.sleep(0)
    return reader.layout()


# --------------------------------------------------------------------------- the worker's side


def _read(stream: BinaryIO, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            return None
        data += more
    return data


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Answer layout requests until the app closes the pipe."""
    while True:
        head = _read(stdin, _LENGTH.size)
        if head is None:
            return
        (length,) = _LENGTH.unpack(head)
        body = _read(stdin, length) if length <= MAX_MESSAGE else None
        if body is None:
            return
        try:
            parts, detail, status_row = pickle.loads(body)  # the app's own pickles
            answer: tuple[bool, Any] = (True, lay_out_here(parts, detail, status_row))
        except Exception as exc:  # noqa: BLE001 - the app gets every failure as its answer
            answer = (False, f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(_LENGTH.pack(len(data)) + data)
        stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
