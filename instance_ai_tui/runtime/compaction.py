"""Compaction: the oldest turns of a thread become an *observations* record (n8n's observational
memory, in one step).

Past a threshold (``Agent(context_threshold=0.7)``: 70 % of what a request may take), after the
tool results of older turns became stubs (``runtime/context.py``), the oldest turns are summarised
by one model call (the *observer*; a transcript longer than the model's window is read in pieces,
one call each, each folding into the record) into notes: what the user wants, decisions, workflow
ids and names, file paths, open questions. Beside the model's notes, the exact identifiers seen in
those turns (ids, names, paths of tool calls and results) are kept as written — a small model's
summary may garble an id, the list does not.

The record is stored with the thread (``Memory.save_observations``; a thread setting) and shown to
the model in the system prompt; its cursor (the last message observed) masks the observed messages
from the model's context. Those messages stay in the store and on screen: compaction only takes
them out of what the model reads. ``/compact [what to keep]`` compacts at once
(``Agent.compact``), with the user's words as an instruction to the observer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from .context import CHARS_PER_TOKEN, STUB_OVER, STUB_SIZE, ContextBudget, wire_chars
from .errors import ModelError
from .messages import Message, now_ms
from .model import ModelAdapter, ModelRequest, answer_text
from .usage import Usage

#: the thread setting (scope ``thread:<id>``) that holds the record
OBSERVATIONS = "observations"
#: at most this many exact identifiers are kept: the first ``FIRST_FACTS`` seen (what the thread
#: started with) and the newest
MAX_FACTS = 80
FIRST_FACTS = 20
#: a tool result shown to the observer keeps this many characters
OBSERVED_RESULT_CHARS = 700

OBSERVER_INSTRUCTIONS = """You compress the older part of a conversation between a user and an assistant \
that works on an n8n automation instance into notes the assistant will read instead of those messages.

Write short markdown bullet points under these headings, keeping every exact value (ids, names, file \
paths, URLs, numbers) exactly as written:
## The user wants
## Decisions and results
## Workflows, ids and names
## Files and paths
## Open questions

Merge the previous notes (if any) with what the new messages add; drop what is no longer true. \
Reply with the notes only."""


class Observations(BaseModel):
    """What the compacted turns of a thread said, and where compaction stopped."""

    #: the observer's notes (markdown)
    text: str = ""
    #: exact identifiers of the compacted turns ("workflow 'Invoice sync' id=wf_8Kq2"), newest last
    facts: list[str] = Field(default_factory=list)
    #: the last message observed (its id and ``created_at``): the model reads only what follows
    through_id: str | None = None
    through_at: int = 0
    #: messages and runs observed so far, and how often the thread was compacted
    messages: int = 0
    runs: list[str] = Field(default_factory=list)
    compactions: int = 0
    updated_at: int = 0

    def block(self) -> str:
        """The system prompt's block of these observations."""
        parts = [
            "## Observations of the earlier conversation",
            "The older part of this conversation was compacted: its messages are no longer in your context, "
            "these notes carry what they said. Use the exact identifiers as written here.",
            "<observations>",
            self.text.strip() or "(no notes)",
        ]
        if self.facts:
            parts += ["", "Exact identifiers seen:", *(f"- {fact}" for fact in self.facts)]
        parts.append("</observations>")
        return "\n".join(parts)


class CompactionResult(BaseModel):
    """One compaction: how many messages (and runs) were observed and what it cost."""

    observations: Observations
    messages: int = 0
    runs: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    #: the observer's call failed: the notes are the extractive fallback (``error`` says why)
    error: str | None = None
    #: nothing to gain: the notes were not smaller than the messages they would replace, so nothing was
    #: saved and those messages stay in the model's context as they were (``observations`` is the old record)
    kept: bool = False
    #: characters of the notes' block in the model's context (of the unsaved notes when ``kept``)
    notes_chars: int = 0


# -- identifiers ----------------------------------------------------------------------------------

_ID_KEY = re.compile(r"(?:^id$|Id$|_id$|^name$|Name$|_name$|^path$|Path$|_path$|^file|^url$|Url$|^title$)")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/(?:[\w.@-]+/)*[\w.@-]+\.[A-Za-z0-9]{1,8}\b")


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str | int | float):
        text = str(value).strip()
        return text if 0 < len(text) <= 120 and "\n" not in text else None
    return None


def _walk(value: Any, out: list[str], depth: int = 0) -> None:
    """Identifiers of a JSON value: an object's id with its name (the value itself, or the items of a
    list in it: a list of workflows), keys that name things (``*Id``, ``*name``, ``path``, ``url``) a
    little deeper; never the insides of a workflow (its nodes' ids would crowd out what matters)."""
    if depth > 3 or len(out) > 40:
        return
    if isinstance(value, dict):
        ident, name = _scalar(value.get("id")), _scalar(value.get("name"))
        workflow = isinstance(value.get("nodes"), list) or "active" in value
        if ident and name and depth <= 2:
            out.append(f"{'workflow' if workflow else 'item'} {name!r} id={ident}")
        if workflow:
            return
        for key, item in value.items():
            if key in ("id", "name") and ident and name:
                continue
            text = _scalar(item)
            if text is not None and _ID_KEY.search(str(key)):
                out.append(f"{key}={text}")
            elif isinstance(item, dict | list):
                _walk(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value[:50]:
            _walk(item, out, depth + 1)


def identifiers(messages: Sequence[Message]) -> list[str]:
    """The exact identifiers of ``messages``: ids and names of tool calls' arguments and of JSON tool
    results (a workflow's name with its id), file paths the user or assistant wrote."""
    out: list[str] = []
    for m in messages:
        found: list[str] = []
        if m.role == "assistant" and m.tool_calls:
            for call in m.tool_calls:
                _walk(call.arguments, found)
        elif m.role == "tool":
            value: Any = m.result
            if value is None:
                try:
                    value = json.loads(m.text)
                except ValueError:
                    value = None
            if value is not None:
                _walk(value, found)
        if m.role in ("user", "assistant"):
            found += [f"path {p}" for p in _PATH.findall(m.text)[:10]]
        out.extend(found[:40])
    seen: dict[str, None] = {}
    for fact in out:
        seen.setdefault(fact, None)
    return list(seen)


def merge_facts(old: Sequence[str], new: Sequence[str]) -> list[str]:
    """Old facts then new ones, each once (in the order first seen), at most ``MAX_FACTS``: the first
    ``FIRST_FACTS`` and the newest."""
    merged = list(dict.fromkeys([*old, *new]))
    if len(merged) <= MAX_FACTS:
        return merged
    return merged[:FIRST_FACTS] + merged[len(merged) - (MAX_FACTS - FIRST_FACTS):]


# -- the observer ---------------------------------------------------------------------------------


def transcript_lines(messages: Sequence[Message]) -> list[str]:
    """The observed messages as the observer reads them (tool results shortened)."""
    lines: list[str] = []
    names: dict[str, str] = {}
    for m in messages:
        if m.role == "user":
            lines.append(f"User: {m.text.strip()}")
        elif m.role == "assistant":
            if m.text.strip():
                lines.append(f"Assistant: {m.text.strip()}")
            for call in m.tool_calls or ():
                names[call.id] = call.name
                args = json.dumps(call.arguments, ensure_ascii=False)
                lines.append(f"Assistant called {call.name}({args[:400]})")
        elif m.role == "tool":
            text = m.text.strip()
            short = text if len(text) <= OBSERVED_RESULT_CHARS else (
                text[:OBSERVED_RESULT_CHARS] + f" … [{len(text):,} characters in all]")
            tool = m.tool_name or names.get(m.tool_call_id or "", "a tool")
            lines.append(f"Result of {tool}{' (error)' if m.is_error else ''}: {short}")
    return lines


def _pieces(lines: Sequence[str], limit_chars: int) -> list[str]:
    """``lines`` joined into pieces of at most ``limit_chars`` (a longer line is cut)."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        if len(line) > limit_chars:
            line = line[: limit_chars - 40] + " … [cut]"
        if current and size + len(line) + 1 > limit_chars:
            pieces.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        pieces.append("\n".join(current))
    return pieces


def _clean(text: str) -> str:
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    return text.strip()


def extractive_notes(messages: Sequence[Message], previous: str) -> str:
    """Notes without a model: the previous notes and what each user message asked (shortened)."""
    asked = [" ".join(m.text.split())[:200] for m in messages if m.role == "user" and m.text.strip()]
    lines = [previous.strip()] if previous.strip() else []
    lines += [f"- The user asked: {text}" for text in asked[-20:]]
    return "\n".join(lines)


async def observe(
    model: ModelAdapter,
    budget: ContextBudget,
    previous: Observations | None,
    messages: Sequence[Message],
    *,
    keep: str = "",
    max_tokens: int | None = None,
) -> tuple[str, Usage, str | None]:
    """The observer's notes for ``previous`` + ``messages``: one model call per piece of transcript
    that fits the model's window (usually one). Returns ``(notes, usage, error)``; when a call fails
    the notes are the extractive fallback and ``error`` says why."""
    notes = previous.text if previous else ""
    usage = Usage()
    answer = max_tokens or max(256, min(1_024, budget.window // 4))
    instructions = OBSERVER_INSTRUCTIONS
    if keep.strip():
        instructions += f"\n\nThe user asked to keep in particular: {keep.strip()[:500]}"
    # what one call may carry, in characters: the window less the answer, the instructions, a margin
    # and room for the notes so far (the notes are kept to a quarter of the window)
    room_tokens = budget.window - answer - int(budget.window * 0.1) - 64
    room_chars = int(room_tokens / max(budget.ratio, 0.5) * CHARS_PER_TOKEN) - len(instructions)
    notes_cap = max(400, room_chars // 4)
    piece_chars = max(600, room_chars - notes_cap - 200)
    for piece in _pieces(transcript_lines(messages), piece_chars):
        prompt = (f"Previous notes:\n{notes[:notes_cap] if notes else '(none)'}\n\n"
                  f"New messages:\n{piece}\n\nWrite the updated notes.")
        request = ModelRequest(messages=[{"role": "system", "content": instructions},
                                         {"role": "user", "content": prompt}],
                               params={"max_tokens": answer})
        try:
            text, used = await answer_text(model, request)
        except ModelError as exc:
            return extractive_notes(messages, notes), usage, str(exc)
        usage = usage + used
        written = _clean(text)
        if written:
            notes = written[:notes_cap]
        else:
            notes = extractive_notes([], notes)
    return notes, usage, None


def replaced_chars(previous: Observations | None, messages: Sequence[Message], stubbed: bool) -> int:
    """Characters the model reads of the observations so far and of ``messages`` (as the request carries
    them: with ``stubbed``, a big tool result as its stub, as ``fit_request`` sends older results)."""
    chars = len(previous.block()) if previous is not None else 0
    for m in messages:
        wire = m.to_openai()
        if wire is None:
            continue
        size = wire_chars(wire)
        chars += STUB_SIZE if stubbed and m.role == "tool" and size > STUB_OVER else size
    return chars


def settle(previous: Observations | None, record: Observations, messages: Sequence[Message], *,
           stubbed: bool, usage: Usage, error: str | None, must: bool = False) -> CompactionResult:
    """The result of observing ``messages`` into ``record``: ``kept`` when the notes would not make the
    context smaller than the messages (and old notes) they replace — then the caller saves nothing and
    forgets nothing (a compaction never makes a thread's context bigger). With ``must`` (the history
    holds as many messages as memory reads: unobserved, the oldest would leave the context unseen) the
    notes are saved whatever their size."""
    runs = list(dict.fromkeys(m.run_id for m in messages if m.run_id))
    notes = len(record.block())
    kept = not must and notes >= replaced_chars(previous, messages, stubbed=stubbed)
    return CompactionResult(observations=(previous or Observations()) if kept else record, messages=len(messages),
                            runs=runs, usage=usage, error=error, kept=kept, notes_chars=notes)


def new_observations(previous: Observations | None, notes: str, messages: Sequence[Message]) -> Observations:
    """The record after observing ``messages`` (in order; not empty) on top of ``previous``."""
    last = messages[-1]
    known = list(previous.runs) if previous else []
    runs = list(dict.fromkeys(m.run_id for m in messages if m.run_id))
    return Observations(
        text=notes,
        facts=merge_facts(previous.facts if previous else [], identifiers(messages)),
        through_id=last.id,
        through_at=max(last.created_at, previous.through_at if previous else 0),
        messages=(previous.messages if previous else 0) + len(messages),
        runs=[*known, *[r for r in runs if r not in known]][-500:],
        compactions=(previous.compactions if previous else 0) + 1,
        updated_at=now_ms(),
    )
