"""A reader of workflow drawings: it follows the characters, as a person does, and says which connections
it sees. It knows only the characters and where the boxes are (the names written in them); nothing of the
layout's routes.

From each output port (``├`` on a box's right border; the n-th from the top is output n) it moves right and
follows the line: straight on along ``─``/``┄`` and over a label's letters (also a single space between
two words: ``──3 items──▶``), round a corner, into every branch of a junction (``┬ ┴ ├ ┤``), and
**straight on** through a crossing ``┼``. It arrives when it enters an arrow ``▶`` whose right neighbour is
a box's left border: that box's input (the digit inside the border on that row, ``1``/``2``…, else the
first). From a sub-node's top port (``┴`` on its top
border) it moves up and arrives on a ``┬`` of another box's bottom border: the port's label follows the
``┬`` run (``model``, ``tool``…).

A line that stops in an empty cell, runs into a box anywhere else than a port, or enters a cell whose
character has no arm towards where it came from is a defect, reported in ``ReadBack.defects``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from instance_ai_tui.protocol.workflow_draw import ARMS, STUB

_U, _D, _L, _R = 1, 2, 4, 8
_STEP = {_U: (0, -1), _D: (0, 1), _L: (-1, 0), _R: (1, 0)}
_BACK = {_U: _D, _D: _U, _L: _R, _R: _L}
_CROSSING = "┼"


@dataclass
class ReadBack:
    #: (source, output port, target, input index) of main-like connections
    main: set[tuple[str, int, str, int]] = field(default_factory=set)
    #: (source, target, port label) of sub-node connections
    ai: set[tuple[str, str, str]] = field(default_factory=set)
    defects: list[str] = field(default_factory=list)


def read_drawing(chars: list[list[str]], boxes: Mapping[str, tuple[int, int, int, int]]) -> ReadBack:
    """Read the connections drawn in ``chars`` (rows of cells) among ``boxes`` (name -> x, y, w, h)."""
    height = len(chars)
    width = len(chars[0]) if chars else 0
    owner: dict[tuple[int, int], str] = {}
    for name, (x, y, w, h) in boxes.items():
        for yy in range(y, y + h):
            for xx in range(x, x + w):
                owner[(xx, yy)] = name

    def at(x: int, y: int) -> str:
        return chars[y][x] if 0 <= y < height and 0 <= x < width else " "

    out = ReadBack()
    for name, (x, y, w, h) in boxes.items():
        port = 0
        for row in range(y + 1, y + h - 1):
            if at(x + w - 1, row) == "├":
                _follow(out, chars, at, owner, boxes, name, ("main", port), x + w, row, _R)
                port += 1
        for col in range(x + 1, x + w - 1):
            if at(col, y) == "┴":
                _follow(out, chars, at, owner, boxes, name, ("ai", 0), col, y - 1, _U)
    return out


def _follow(out: ReadBack, chars: list[list[str]], at: object, owner: Mapping[tuple[int, int], str],
            boxes: Mapping[str, tuple[int, int, int, int]], source: str, kind: tuple[str, int],
            x: int, y: int, direction: int) -> None:
    get = at  # type: ignore[assignment]
    seen: set[tuple[int, int, int]] = set()
    todo = [(x, y, direction)]
    while todo:
        cx, cy, d = todo.pop()
        if (cx, cy, d) in seen:
            continue
        seen.add((cx, cy, d))
        ch = get(cx, cy)  # type: ignore[operator]
        where = f"{source} port {kind}: ({cx},{cy}) {ch!r}"
        if (cx, cy) in owner:
            target = owner[(cx, cy)]
            _bx, by, _bw, bh = boxes[target]
            if d == _U and cy == by + bh - 1 and ch == "┬":
                label_x = cx
                while get(label_x, cy) == "┬":  # type: ignore[operator]
                    label_x += 1
                label = ""
                while get(label_x, cy) not in ("─", "┬", "╯", " "):  # type: ignore[operator]
                    label += get(label_x, cy)  # type: ignore[operator]
                    label_x += 1
                out.ai.add((source, target, label))
            else:
                out.defects.append(f"runs into the box of {target}: {where}")
            continue
        if ch == "▶":
            if d != _R:
                out.defects.append(f"enters an arrow from the side: {where}")
                continue
            target = owner.get((cx + 1, cy))
            if target is None or boxes[target][0] != cx + 1:
                out.defects.append(f"an arrow into nothing: {where}")
                continue
            digit = get(cx + 2, cy)  # type: ignore[operator]
            index = int(digit) - 1 if digit.isdigit() and get(cx + 3, cy) == " " else 0  # type: ignore[operator]
            if kind[0] != "main":
                out.defects.append(f"a sub-node's line ends in an arrow: {where}")
                continue
            out.main.add((source, kind[1], target, index))
            continue
        if ch == STUB and (cx, cy) == (x, y):
            continue  # an output nothing is connected to
        arms = ARMS.get(ch)
        if arms is None:
            if ch == " " and d in (_L, _R) and _between_letters(get, cx, cy, d):  # type: ignore[arg-type]
                nx, ny = _STEP[d]  # the space between two words of a label on the line ("3 items")
                todo.append((cx + nx, cy + ny, d))
                continue
            if ch in (" ", "") or d in (_U, _D):
                out.defects.append(f"the line stops: {where}")
                continue
            nx, ny = _STEP[d]  # a label's letter: the line goes on under it
            todo.append((cx + nx, cy + ny, d))
            continue
        if not arms & _BACK[d]:
            out.defects.append(f"the line breaks: {where}")
            continue
        if ch == _CROSSING:
            nexts = [d]
        else:
            nexts = [a for a in (_U, _D, _L, _R) if arms & a and a != _BACK[d]]
        for a in nexts:
            nx, ny = _STEP[a]
            todo.append((cx + nx, cy + ny, a))


def _letter(ch: str) -> bool:
    return ch not in (" ", "", "▶", STUB) and ch not in ARMS


def _between_letters(get: object, x: int, y: int, d: int) -> bool:
    """A single space with a letter on both sides, along the way the line goes."""
    at = get  # type: ignore[assignment]
    step = _STEP[d][0]
    return _letter(at(x - step, y)) and _letter(at(x + step, y))  # type: ignore[operator]
