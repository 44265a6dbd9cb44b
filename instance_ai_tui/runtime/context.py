"""The context budget: how many tokens a model reads, and fitting every request into them.

A model's **window** comes from, in this order: what the model server refused with (a context error
names the real window: ``learned``), what the server reports (``/models`` of vLLM, LM Studio,
llama.cpp's ``/props``, Ollama's ``/api/show``: ``server``), ``model.context_windows`` in the config
(``config``), the table of well-known models below (``table``), else 8 k (``default``).

Tokens are **estimated** (characters / 3.5 plus a few per message; no tokenizer: tiktoken downloads
its files on first use) and the estimate is **corrected** from each answer's real ``usage``: the ratio
of the real prompt tokens to the estimate of the request that was sent (``ContextBudget.calibrate``).

Before every request the history is **fitted** (``fit_request``) to the window less the answer's
``max_tokens`` (or a reserve), the tools' schemas, the system prompt and a small margin, in steps
that each lose less than the next:

1. tool results the model has answered become a stub (tool, arguments, size, how it began), oldest
   first: older turns' first, then this turn's earlier rounds';
2. what the current turn carries that takes over half the room (a 60 k character tool result, a
   long paste) is cut to that half, its head and tail, with a marker saying how much was cut;
3. the oldest turns leave the request (compaction, ``runtime/compaction.py``, should have carried
   what they said into the observations; this is the safety net when it could not);
4. the current turn's oldest rounds the model has answered leave (a long agentic turn);
5. the current turn's biggest messages are cut further;
6. a request that still cannot fit (the instructions and tools alone fill the window) is never
   sent: ``ModelContextExceeded`` says so.

All of this only for a window that is known (learned, reported, configured, or in the table): the 8 k
default of a model nobody knows is a guess, and a request is sent as it is until the server's refusal
teaches the real window (then it is fitted, and the thread compacted, like any other).

Fitting only shapes what is sent: the run's messages, the store and the screen keep everything.
A run's sizes are carried from request to request (``Sizes``: a request is the last one grown at its
end), so fitting a request measures only its new messages (``benchmarks/context_budget.py``).
"""

from __future__ import annotations

import json
import logging
import math
import operator
import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

from ..protocol.usage_words import format_tokens
from .errors import ModelContextExceeded

log = logging.getLogger(__name__)

DEFAULT_WINDOW = 8_192
CHARS_PER_TOKEN = 3.5
#: tokens a message costs besides its text (role, separators of the chat template)
MESSAGE_OVERHEAD = 4
#: a share of the window never planned for: the estimate is an estimate
SAFETY_SHARE = 0.05
#: what the answer gets when no ``max_tokens`` is set: an eighth of the window, 256 to 4,096 tokens
ANSWER_SHARE = 8
ANSWER_MIN, ANSWER_MAX = 256, 4_096
#: real tokens per estimated token assumed until a first answer's usage says (about 2.3 characters
#: a token: what tokenizers make of escaped JSON)
UNCALIBRATED_RATIO = 1.5
#: tool results of older turns longer than this (characters) are stubbed first
STUB_OVER = 600
#: about what a stub takes (characters)
STUB_SIZE = 420
#: what a cut keeps at least (characters)
CUT_MIN = 400

WindowSource = Literal["learned", "server", "config", "table", "default"]
_RANK: dict[str, int] = {"default": 0, "table": 1, "config": 2, "server": 3, "learned": 4}

#: context windows (tokens) of well-known model families, matched by name prefix; the config
#: file's ``model.context_windows`` adds or overrides entries
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576), ("gpt-4o", 128_000), ("gpt-4-turbo", 128_000), ("gpt-4", 8_192),
    ("gpt-5", 400_000), ("gpt-3.5-turbo", 16_385), ("o1", 200_000), ("o3", 200_000), ("o4-mini", 200_000),
    ("claude", 200_000), ("gemini-1.5", 1_000_000), ("gemini-2", 1_000_000), ("llama3.1", 128_000),
    ("llama3.2", 128_000), ("llama3", 8_192), ("qwen2.5", 32_768), ("qwen3", 40_960), ("mistral", 32_768),
    ("mixtral", 32_768), ("deepseek", 128_000), ("phi3", 128_000), ("smollm2", 8_192),
)


def known_window(name: str, overrides: Mapping[str, int] | None = None) -> tuple[int, WindowSource] | None:
    """The window of model ``name`` from the config's overrides or the table (longest prefix of the
    name's last path part first), with where it came from; None when neither knows it."""
    low = name.strip().lower()
    short = low.split("/")[-1]
    tables: list[tuple[WindowSource, Sequence[tuple[str, int]]]] = [
        ("config", sorted((overrides or {}).items(), key=lambda kv: -len(kv[0]))), ("table", KNOWN_WINDOWS)]
    for source, table in tables:
        for prefix, size in table:
            if short.startswith(prefix.lower()) or low == prefix.lower():
                return int(size), source
    return None


class ContextBudget:
    """One model's window and how this runtime's token estimate compares with its tokenizer.

    Shared by every run of the model (the adapter holds it: ``budget_of``); learned facts (the
    window a server refused with, the ratio) last as long as the adapter."""

    def __init__(self, model: str, *, window: int | None = None, source: WindowSource | None = None,
                 overrides: Mapping[str, int] | None = None) -> None:
        self.model = model
        if window is not None:
            self.window, self.source = int(window), source or "config"
        else:
            known = known_window(model, overrides)
            self.window, self.source = known if known else (DEFAULT_WINDOW, "default")
        #: real tokens per estimated token (from ``usage``); 1.0 until the first answer
        self.ratio = 1.0
        self.calibrated = False
        #: whether the server was asked for the window (``/models``) yet, and the store for a window a
        #: refusal taught in an earlier process
        self.probed = False
        self.recalled = False

    def __repr__(self) -> str:
        return f"ContextBudget({self.model!r}, window={self.window} ({self.source}), ratio={self.ratio:.2f})"

    # -- the window ------------------------------------------------------------------------------

    def set_window(self, tokens: int, source: WindowSource) -> bool:
        """Take ``tokens`` as the window when ``source`` outranks (or equals) what is known; a window
        learned from a refusal only ever shrinks. True when the window changed."""
        if tokens <= 0 or _RANK[source] < _RANK[self.source]:
            return False
        if source == "learned" and self.source == "learned" and tokens >= self.window:
            return False
        changed = tokens != self.window
        self.window, self.source = int(tokens), source
        return changed

    def answer_reserve(self, params: Mapping[str, Any]) -> int:
        """Tokens kept for the answer: the request's ``max_tokens`` / ``max_completion_tokens``, else an
        eighth of the window (256 to 4,096)."""
        for key in ("max_completion_tokens", "max_tokens") if params else ():
            value = params.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return max(ANSWER_MIN, min(ANSWER_MAX, self.window // ANSWER_SHARE))

    def available(self, params: Mapping[str, Any]) -> int:
        """Tokens a request (system prompt, tools, messages) may take."""
        return self.window - self.answer_reserve(params) - math.ceil(self.window * SAFETY_SHARE)

    # -- estimates -------------------------------------------------------------------------------

    def tokens(self, raw: float) -> int:
        """Corrected tokens of a raw estimate (``raw_tokens``); before the first answer said how the
        model counts, a pessimistic ``UNCALIBRATED_RATIO`` (JSON counts denser than prose)."""
        return math.ceil(raw * (self.ratio if self.calibrated else max(self.ratio, UNCALIBRATED_RATIO)))

    @property
    def effective_ratio(self) -> float:
        return self.ratio if self.calibrated else max(self.ratio, UNCALIBRATED_RATIO)

    def calibrate(self, raw: float, real: int) -> None:
        """A request estimated at ``raw`` raw tokens was ``real`` tokens to the model's tokenizer."""
        if raw < 50 or real <= 0:
            return  # too small to say anything (a chat template's own tokens dominate)
        seen = min(3.0, max(0.5, real / raw))
        # pessimistic: a request counted higher than we thought raises the ratio at once; lower ones
        # lower it slowly (a single ratio for prose, JSON and per-message overhead is never exact)
        if not self.calibrated or seen > self.ratio:
            self.ratio = seen
        else:
            self.ratio = 0.8 * self.ratio + 0.2 * seen
        self.calibrated = True


def raw_tokens(chars: int, messages: int = 0) -> float:
    """The uncorrected estimate: characters / 3.5 plus a few tokens per message."""
    return chars / CHARS_PER_TOKEN + MESSAGE_OVERHEAD * messages


_BUDGETS: weakref.WeakKeyDictionary[Any, ContextBudget] = weakref.WeakKeyDictionary()


def budget_of(model: Any) -> ContextBudget:
    """The budget of a model adapter: its own ``context`` (``OpenAIModel`` has one, with the config's
    windows), else one kept beside it for as long as it lives."""
    own = getattr(model, "context", None)
    if isinstance(own, ContextBudget):
        return own
    try:
        budget = _BUDGETS.get(model)
        if budget is None:
            budget = _BUDGETS[model] = ContextBudget(str(getattr(model, "name", "model")))
        return budget
    except TypeError:  # an adapter that cannot be weakly referenced: a budget per call (still right)
        return ContextBudget(str(getattr(model, "name", "model")))


async def probe_window(model: Any, budget: ContextBudget) -> None:
    """Ask the model server for the window once (``probe_context_window`` of the adapter; failures and
    silence leave what is known)."""
    if budget.probed:
        return
    budget.probed = True
    probe = getattr(model, "probe_context_window", None)
    if probe is None:
        return
    try:
        import asyncio

        async with asyncio.timeout(5.0):
            found = await probe()
    except Exception:  # noqa: BLE001 - a server that does not say is a server that does not say
        return
    if isinstance(found, int) and found > 0:
        budget.set_window(found, "server")


def model_key(model: Any) -> str:
    """Which model a learned window belongs to: the server's address and the model's name."""
    return f"{getattr(model, 'base_url', '') or getattr(model, 'where', '')} {model.name}"


async def recall_window(memory: Any, model: Any, budget: ContextBudget) -> None:
    """A window a refusal taught an earlier process (``memory.get_learned_window``), once per adapter."""
    if budget.recalled or memory is None:
        return
    budget.recalled = True
    recall = getattr(memory, "get_learned_window", None)
    if recall is not None:
        found = await recall(model_key(model))
        if found:
            budget.set_window(found, "learned")


async def keep_window(memory: Any, model: Any, budget: ContextBudget) -> None:
    """Keep a window a refusal taught (``memory.save_learned_window``): a restart need not learn it again."""
    keep = getattr(memory, "save_learned_window", None)
    if keep is not None and budget.source == "learned":
        try:
            await keep(model_key(model), budget.window)
        except Exception:  # a store that cannot keep it costs one more refusal later
            log.warning("could not store the window learned for model %s", model.name, exc_info=True)


def learn_from_refusal(budget: ContextBudget, exc: ModelContextExceeded, fit: Fit) -> None:
    """What a refusal teaches: the real window (when the server says it, else a little less than what
    was sent with its answer's reserve), and the request's real size in tokens."""
    if exc.requested:
        budget.calibrate(fit.raw, exc.requested)
    if exc.window:
        budget.set_window(exc.window, "learned")
    else:
        budget.set_window(max(256, int((fit.tokens + (fit.window - fit.available)) * 0.8)), "learned")


# -- sizes of messages ------------------------------------------------------------------------------


def wire_chars(message: Mapping[str, Any]) -> int:
    """Characters of a chat message as the model reads them (content, tool calls, their ids)."""
    content = message.get("content")
    if isinstance(content, str):
        chars = len(content)
    elif isinstance(content, list):
        chars = 0
        for part in content:
            if isinstance(part, dict):
                if part.get("type") == "text":
                    chars += len(str(part.get("text", "")))
                else:
                    chars += 3_000  # an image: providers count some hundreds to a thousand tokens
    else:
        chars = 0
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                chars += len(str(fn.get("name", ""))) + len(str(fn.get("arguments", ""))) + 12
    if message.get("role") == "tool":
        chars += len(str(message.get("tool_call_id", "")))
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str):
        chars += len(reasoning)
    return chars


class Sizes:
    """Characters of a run's requests, carried from one request to the next (the message list hands
    out the same dict for a message each time). Held by a run; holds the dicts of its last request, so
    their ids are not reused while it compares them."""

    __slots__ = ("_epoch", "_last", "_peak", "_stubs", "_tools", "_user")

    def __init__(self) -> None:
        self._stubs: dict[int, tuple[Mapping[str, Any], dict[str, Any], int]] = {}
        self._tools: tuple[Sequence[Mapping[str, Any]], int] | None = None
        self._last: tuple[list[Mapping[str, Any]], list[int], list[int], list[int]] | None = None
        #: index of the last user message after message 0 in ``_last`` (-1: none), the most characters
        #: of one message from there (from message 1 when there is none) to the end, and what the message
        #: list said of ``_last`` (``MessageList.wire_epoch``)
        self._user = -1
        self._peak = 0
        self._epoch: object = None

    def measure(self, messages: Sequence[Mapping[str, Any]], epoch: object = None,
                ) -> tuple[list[int], list[int], list[int], int, int]:
        """``(chars, cum, saving, turn, peak)`` of a request's messages: characters per message;
        ``cum[i]``, the characters of messages 1 to i-1; ``saving[i]``, what stubbing the big tool results
        among them would save; where the current turn begins: the index of the last user message (1 past
        a leading system message when there is none); and the most characters of one message of that
        turn (message 0 left out). Message 0 (the system message, built anew for every request) is
        measured each time; the rest is carried over from the previous request for the messages it
        shares (the same dicts at the same places: a run's requests grow at their end), so a request
        costs a look-up per new message, not a walk over the history.

        ``epoch`` is what the message list says of ``messages`` (``MessageList.wire_epoch``): the same
        epoch as the previous request's means they only grew at their end since, and not even the
        shared messages are compared (None: they are, one by one)."""
        n = len(messages)
        last = self._last
        keep = 1
        if last is not None:
            before = last[0]
            upto = min(len(before), n)
            if epoch is not None and epoch == self._epoch and upto == len(before):
                keep = upto
            elif upto > 1 and before[upto - 1] is messages[upto - 1] and all(
                    map(operator.is_, islice(before, 1, upto), islice(messages, 1, upto))):
                keep = upto
        self._epoch = epoch
        user, peak = -1, 0  # (the lists handed out before are read by their caller only until its next request)
        if keep > 1 and last is not None and keep == len(last[0]):  # the last request and more: grown in place
            listed, chars, cum, saving = last
            user, peak = self._user, self._peak
        elif keep > 1 and last is not None:
            chars, cum, saving = last[1][:keep], last[2][: keep + 1], last[3][: keep + 1]
            listed = list(last[0][:keep])
            user = self._user if self._user < keep else next(
                (i for i in range(keep - 1, 0, -1) if messages[i].get("role") == "user"), -1)
            peak = max(islice(chars, max(user, 1), None), default=0)
        else:
            chars, cum, saving, listed = [0], [0, 0], [0, 0], [messages[0]] if n else []
        # the sizes of the last request's dicts, for a request that is not it grown (alive in ``last``:
        # an id found is the same dict); nothing kept per message beyond the last request
        known = {id(m): c for m, c in zip(last[0], last[1], strict=True)} \
            if last is not None and keep < len(last[0]) else {}
        if n:  # (a new dict each request: a system message of its text alone is its length)
            head = messages[0]
            text = head.get("content")
            chars[0] = len(text) if type(text) is str and len(head) == 2 and head.get("role") == "system" \
                else wire_chars(head)
            listed[0] = head
        total, saved = cum[-1], saving[-1]
        for index in range(keep, n):
            message = messages[index]
            size = known.get(id(message)) if known else None
            if size is None:
                size = wire_chars(message)
            chars.append(size)
            listed.append(message)
            total += size
            role = message.get("role")
            if size > STUB_OVER and role == "tool":
                saved += size - STUB_SIZE
            cum.append(total)
            saving.append(saved)
            if role == "user":
                user, peak = index, size
            elif size > peak:
                peak = size
        if not n:
            self._last, self._epoch = None, None
            return [], [0], [0], 0, 0
        self._last = (listed, chars, cum, saving)
        self._user, self._peak = user, peak
        role = messages[0].get("role")
        turn = user if user > 0 else 0 if role == "user" else 1 if role == "system" else 0
        return chars, cum, saving, turn, peak

    def stub(self, message: Mapping[str, Any], tool_name: str, arguments: str) -> tuple[dict[str, Any], int]:
        """The stub of a tool result and its size, made once per message."""
        hit = self._stubs.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1], hit[2]
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        stub = {**message, "content": stub_text(tool_name, arguments, text)}
        chars = wire_chars(stub)
        self._stubs[id(message)] = (message, stub, chars)
        return stub, chars

    def tools_chars(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Characters of the tools' schemas (measured again only when the list is another one with
        other content)."""
        known = self._tools
        if known is not None and (known[0] is tools or known[0] == tools):
            return known[1]
        chars = len(json.dumps(tools, ensure_ascii=False, separators=(",", ":"))) if tools else 0
        self._tools = (tools, chars)
        return chars


# -- fitting -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Fit:
    """What fitting made of a request."""

    #: the messages to send (the system message first, when there is one)
    messages: list[dict[str, Any]]
    #: corrected token estimate of the request (messages and tools; the answer not included)
    tokens: int
    #: raw (uncorrected) estimate of the same, for calibration against the real ``usage``
    raw: float
    #: tokens the request may take (``ContextBudget.available``)
    available: int
    window: int
    #: tool results of older turns that became stubs, turns left out, messages of this turn cut
    stubbed: int = 0
    dropped: int = 0
    cut: int = 0
    #: the request's tokens were the older turns' big tool results stubs and this turn's giants cut
    #: to half the room (what compaction looks at: stubs come first, turns are summarised only past
    #: the threshold after them), and of that the older turns' part
    pressure: int = 0
    history: int = 0
    #: the person's own message of this turn was cut to fit: ``(characters sent, characters written)``
    #: (said to them: ``context-compacted`` with reason ``cut``)
    user_cut: tuple[int, int] | None = None

    @property
    def share(self) -> float:
        """How full the window is with this request (0..1)."""
        return self.tokens / self.window if self.window else 0.0


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stub_text(tool_name: str, arguments: str, content: str) -> str:
    """What the model keeps of an older turn's tool result."""
    args = _one_line(arguments[:400], 160) if arguments and arguments not in ("{}", "") else ""
    return (f"[older result of {tool_name or 'a tool'}({args}) left out of the context: {len(content):,} "
            f"characters; it began: {_one_line(content[:600], 240)}]")


def cut_text(text: str, keep: int) -> str:
    """``text`` cut to about ``keep`` characters: its head and tail around a marker."""
    if len(text) <= keep:
        return text
    keep = max(CUT_MIN, keep)
    head = keep * 2 // 3
    tail = max(0, keep - head - 80)
    gone = len(text) - head - tail
    marker = f"\n[… {gone:,} characters cut here to fit the model's context …]\n"
    return text[:head] + marker + (text[-tail:] if tail else "")


def keep_of(text: str, keep: int) -> int:
    """The characters of ``text`` that ``cut_text(text, keep)`` keeps (its head and tail)."""
    if len(text) <= keep:
        return len(text)
    keep = max(CUT_MIN, keep)
    head = keep * 2 // 3
    return head + max(0, keep - head - 80)


def fit_request(
    messages: list[dict[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    budget: ContextBudget,
    params: Mapping[str, Any],
    sizes: Sizes,
    *,
    tools_chars: int | None = None,
    epoch: object = None,
) -> Fit:
    """``messages`` (OpenAI chat format, system message first) fitted to ``budget`` with ``tools``
    and the answer's reserve. The dicts given are never changed (stubs and cuts are new dicts).
    Raises ``ModelContextExceeded`` when even the cut request cannot fit.

    The work is measuring the new messages (``Sizes``; ``epoch``: ``MessageList.wire_epoch`` of
    ``messages``, which spares comparing the messages the previous request had) plus what must be
    left out, each step counting its characters as it goes (never the whole request again)."""
    available = budget.available(params)
    ratio = budget.effective_ratio
    t_chars = sizes.tools_chars(tools) if tools_chars is None else tools_chars
    chars, cum, saving, turn_start, peak = sizes.measure(messages, epoch)
    count = len(messages)
    first = chars[0] if chars else 0
    total = t_chars + first + cum[-1]
    has_system = count > 0 and messages[0].get("role") == "system"
    start = 1 if has_system else 0
    turn = turn_start if turn_start > start else start
    low = start or 1  # (cum and saving leave message 0 out: the system message, or the first message)
    # (raw_tokens and budget.tokens written out: this runs before every model call)
    raw = total / CHARS_PER_TOKEN + MESSAGE_OVERHEAD * count
    tokens = math.ceil(raw * ratio)
    # a message of this turn takes at most half of what the request may take (the rest is for the
    # instructions and the conversation so far)
    share_chars = int(available / 2 / ratio * CHARS_PER_TOKEN)
    lead = start == 0 and turn > 0
    stub_saving = saving[turn] - saving[low]
    if lead and first > STUB_OVER and messages[0].get("role") == "tool":
        stub_saving += first - STUB_SIZE
    # (none of this turn's messages over the share, the usual case: nothing to sum)
    cap_saving = 0 if (peak if turn else max(peak, first)) <= share_chars else sum(
        size - share_chars for size in islice(chars, turn, None) if size > share_chars)
    pressure = math.ceil(((total - stub_saving - cap_saving) / CHARS_PER_TOKEN + MESSAGE_OVERHEAD * count) * ratio) \
        if stub_saving or cap_saving else tokens
    history = math.ceil(((cum[turn] - cum[low] + (first if lead else 0) - stub_saving) / CHARS_PER_TOKEN
                         + MESSAGE_OVERHEAD * (turn - start)) * ratio) if turn > start else 0
    # the characters the request may carry (the inverse of ``raw_tokens`` and the ratio)
    if budget.source == "default" or (tokens <= available
                                      and total <= (available / ratio - MESSAGE_OVERHEAD * count) * CHARS_PER_TOKEN):
        # (a guessed window, the 8 k default, leaves nothing out: the server says whether it fits, and
        # its refusal teaches the real window; fitting to a guess would lose what a bigger one holds)
        return Fit(messages, tokens, raw, available, budget.window, 0, 0, 0, pressure, history)
    out = list(messages)
    sizes_now = list(chars)

    def over() -> float:
        return budget.tokens(raw_tokens(total, count)) - available

    user_cut: tuple[int, int] | None = None

    def cut_to(index: int, keep: int) -> None:
        nonlocal total, user_cut
        m = out[index]
        text = str(m.get("content", ""))
        new = {**m, "content": cut_text(text, keep)}
        if index == turn and m.get("role") == "user":  # (cut again: still out of what was written)
            user_cut = (keep_of(text, keep), user_cut[1] if user_cut else len(text))
        out[index] = new
        size = wire_chars(new)
        total += size - sizes_now[index]
        sizes_now[index] = size

    stubbed = dropped = cut = 0
    # 1. big tool results the model has answered already -> stubs, oldest first: older turns', then
    #    this turn's earlier rounds' (the latest round's results are what the model is about to read)
    answered = turn
    for index in range(len(out) - 1, turn, -1):
        if out[index].get("role") == "assistant":
            answered = index
            break
    calls: dict[str, tuple[str, str]] = {}
    # (over() <= 0 while total stays under this: the count does not change in this step)
    limit = (available / ratio - MESSAGE_OVERHEAD * count) * CHARS_PER_TOKEN - 1
    for index in range(start, answered):
        if total <= limit:
            break
        m = out[index]
        role = m.get("role")
        if role == "assistant":
            for call in m.get("tool_calls") or ():
                fn = call.get("function") or {}
                calls[str(call.get("id", ""))] = (str(fn.get("name", "")), str(fn.get("arguments", "")))
        elif role == "tool" and sizes_now[index] > STUB_OVER:
            name, arguments = calls.get(str(m.get("tool_call_id", "")), ("", ""))
            stub, size = sizes.stub(m, name, arguments)
            out[index] = stub
            total += size - sizes_now[index]
            sizes_now[index] = size
            stubbed += 1
    # 2. this turn's giants (over half of the room) are cut to that half
    for index in range(turn, len(out)):
        if over() <= 0:
            break
        if sizes_now[index] > max(share_chars, CUT_MIN + 200) and isinstance(out[index].get("content"), str):
            cut_to(index, max(CUT_MIN, share_chars))
            cut += 1
    # 3. the oldest turns leave (whole turns: from the start to the next user message), found in one
    #    walk and taken out in one slice
    if over() > 0 and turn > start:
        end = start
        while end < turn and over() > 0:
            nxt = end + 1
            while nxt < turn and out[nxt].get("role") != "user":
                nxt += 1
            total -= sum(sizes_now[end:nxt])
            count -= nxt - end
            end = nxt
        del out[start:end]
        del sizes_now[start:end]
        turn -= end - start
        dropped += end - start
    # 4. this turn's oldest answered rounds leave (an assistant's tool calls with their results: a long
    #    agentic turn of many small calls); the user's message and the latest round stay
    if over() > 0:
        rounds = [i for i in range(turn + 1, len(out)) if out[i].get("role") == "assistant"]
        if len(rounds) > 1:
            end = first = rounds[0]
            for index in rounds[1:]:
                if over() <= 0:
                    break
                total -= sum(sizes_now[end:index])
                count -= index - end
                end = index
            del out[first:end]
            del sizes_now[first:end]
            dropped += end - first
    # 5. this turn's biggest messages are cut further to their head and tail
    uncut: set[int] = set()  # (messages whose size is not their text: a call's arguments, reasoning)
    while over() > 0:
        candidates = [i for i in range(turn, len(out)) if sizes_now[i] > CUT_MIN + 200 and i not in uncut
                      and isinstance(out[i].get("content"), str)]
        if not candidates:
            break
        biggest = max(candidates, key=lambda i: sizes_now[i])
        excess_chars = math.ceil(over() / ratio * CHARS_PER_TOKEN) + 120
        keep = max(CUT_MIN, sizes_now[biggest] - excess_chars)
        if keep >= sizes_now[biggest] - 100:  # cannot shrink it meaningfully any more
            break
        if len(out[biggest]["content"]) <= keep:  # cutting its text would leave it as it is: for ever
            uncut.add(biggest)
            continue
        cut_to(biggest, keep)
        cut += 1
    raw = raw_tokens(total, count)
    tokens = budget.tokens(raw)
    if tokens > available:
        system_tokens = budget.tokens(raw_tokens(sizes_now[0], 1)) if has_system else 0
        tools_tokens = budget.tokens(raw_tokens(t_chars))
        head = (f"the request does not fit {budget.model!r}'s context of {format_tokens(budget.window)} tokens "
                f"even cut down: the instructions take ~{format_tokens(system_tokens)}, the tools' schemas "
                f"~{format_tokens(tools_tokens)} and the answer {format_tokens(budget.answer_reserve(params))} of it")
        call = _biggest_call(out[turn:])
        call_tokens = budget.tokens(raw_tokens(len(call[1]))) if call is not None else 0
        if call is not None and call_tokens * 4 > available:
            # (what does not fit is the model's own call: its arguments are no text a cut can shorten)
            name, arguments = call
            head += (f"; the model's call of {name or 'a tool'} carries "
                     f"~{format_tokens(call_tokens)} tokens of arguments "
                     f"({len(arguments):,} characters), which cannot be cut; ask for it in smaller steps (a part "
                     "per call), or use a model with a larger context")
        else:
            head += "; use a model with a larger context (or set its real one in model.context_windows)"
        raise ModelContextExceeded(head, window=budget.window, requested=tokens, sent=False)
    return Fit(out, tokens, raw, available, budget.window, stubbed, dropped, cut, pressure, history, user_cut)


def _biggest_call(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    """The name and arguments of the model's tool call with the longest arguments among ``messages``."""
    best: tuple[str, str] | None = None
    for m in messages:
        for call in (m.get("tool_calls") or ()) if m.get("role") == "assistant" else ():
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                arguments = str(fn.get("arguments", ""))
                if best is None or len(arguments) > len(best[1]):
                    best = (str(fn.get("name", "")), arguments)
    return best


# -- what a server's refusal says ----------------------------------------------------------------------

_WINDOW_PATTERNS = (
    # OpenAI, vLLM, llama-cpp-python, Groq, DeepSeek: "maximum context length is 8192 tokens"
    re.compile(r"maximum context length (?:is|of) (\d[\d,]*) tokens", re.I),
    # llama.cpp server: "request (4476 tokens) exceeds the available context size (4096 tokens)"
    re.compile(r"available context size \((\d[\d,]*) tokens\)", re.I),
    # llama-cpp-python (internal): "Requested tokens (2600) exceed context window of 2048"
    re.compile(r"exceed(?:s|ed)? (?:the )?context window of (\d[\d,]*)", re.I),
    # LM Studio: "the model is loaded with context length of only 4096 tokens"
    re.compile(r"context length of only (\d[\d,]*) tokens", re.I),
    # Mistral: "too large for model with 32768 maximum context length"
    re.compile(r"model with (\d[\d,]*) maximum context length", re.I),
    # Anthropic (OpenAI-compatible endpoint): "prompt is too long: 210000 tokens > 200000 maximum"
    re.compile(r"tokens > (\d[\d,]*) maximum", re.I),
)
_REQUESTED_PATTERNS = (
    re.compile(r"\((\d[\d,]*) in the messages", re.I),
    re.compile(r"(?:resulted in|you requested|your request has|request \() ?(\d[\d,]*) (?:input )?tokens", re.I),
    re.compile(r"Requested tokens \((\d[\d,]*)\)", re.I),
    re.compile(r"prompt is too long: (\d[\d,]*) tokens", re.I),
    re.compile(r"Prompt contains (\d[\d,]*) tokens", re.I),
)
_CONTEXT_WORDS = re.compile(
    r"context[ _](?:length|window|size)[ _](?:exceeded|of)|maximum context length|exceeds? (?:the )?(?:available )?"
    r"context|context (?:size|window) (?:has been )?exceeded|prompt is too long|input length exceeds|"
    r"too large for model with|reduce the length of the (?:messages|prompt)|exceed_context_size",
    re.I)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def context_refusal(message: str, body: Any = None) -> tuple[int | None, int | None] | None:
    """Whether a server's refusal is about the context, with the window and the request's size when it
    says them: ``(window, requested)``; None when it is about something else.

    Knows OpenAI's ``context_length_exceeded`` (code or wording; vLLM, llama-cpp-python, Groq and
    DeepSeek use it too), llama.cpp's ``exceed_context_size_error`` (with ``n_ctx`` and
    ``n_prompt_tokens``), LM Studio's, Mistral's and Anthropic's wordings."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    fields = inner if isinstance(inner, dict) else {}
    code = str(fields.get("code") or "") + " " + str(fields.get("type") or "")
    text = message or ""
    if "context_length_exceeded" not in code and "exceed_context_size" not in code and not _CONTEXT_WORDS.search(text):
        return None
    window: int | None = None
    requested: int | None = None
    n_ctx = fields.get("n_ctx")
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
        window = n_ctx
    n_prompt = fields.get("n_prompt_tokens")
    if isinstance(n_prompt, int) and not isinstance(n_prompt, bool) and n_prompt > 0:
        requested = n_prompt
    if window is None:
        for pattern in _WINDOW_PATTERNS:
            found = pattern.search(text)
            if found:
                window = _number(found.group(1))
                break
    if requested is None:
        for pattern in _REQUESTED_PATTERNS:
            found = pattern.search(text)
            if found:
                requested = _number(found.group(1))
                break
    return window, requested
