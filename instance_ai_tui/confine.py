"""One confinement for every folder this program shares: the workspace and the local gateway.

A path is resolved *openat-style*: one component at a time, each opened with ``O_NOFOLLOW``
relative to the descriptor of the folder above it, starting at a descriptor of the root. A
symlink met on the way is read (``readlink``) and its target walked the same way, so a link
may point anywhere *inside* the root but never out of it, and a link swapped in between a
check and an open cannot redirect us (the open refuses to follow it). Loops end after
:data:`MAX_SYMLINKS` links with a clear error.

Only regular files are opened (a FIFO, device or socket is refused before it is opened, and
files are opened ``O_NONBLOCK`` so a swapped-in FIFO cannot block a worker). A file with more
than one hard link may be a file from outside the folder linked in: :meth:`ConfinedRoot.open_file`
refuses it unless the caller asked the person first (``hard_links=True``).

Listing and searching walk the folder by descriptors too; an entry that cannot be shown (a
symlink loop, a folder that cannot be read) is skipped with a *note* (:class:`Walk.notes`) instead
of failing the whole listing or search; a link leading outside is left out without one (its
name is not shown to the agent at all).

This module is a leaf: it imports nothing of this package, so that ``client/`` (the gateway)
and ``assistant/`` (the workspace) share it without crossing a layer. Its methods block: callers
run them in a worker thread. Errors are raised through the ``error`` factory each caller gives,
so that each keeps its own exception type (``WorkspaceError``, the gateway's ``ToolFailure``).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: symbolic links followed while resolving one path (as the kernel's own limit)
MAX_SYMLINKS = 40

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC
O_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _O_CLOEXEC


class ConfinementError(Exception):
    """The default error: a path that cannot be used inside the root; the message says why."""


class LinkLoop(Exception):
    """Internal: resolving a path met more than :data:`MAX_SYMLINKS` links."""


class Outside(Exception):
    """Internal: a path or a link leads outside the root."""


@dataclass(slots=True)
class Target:
    """A resolved path: an open descriptor of its folder and its last name (``None``: the folder itself)."""

    dir_fd: int
    name: str | None
    parts: tuple[str, ...]  # components below the root (after following links)

    @property
    def display(self) -> str:
        return "/".join(self.parts) or "."

    def close(self) -> None:
        os.close(self.dir_fd)


@dataclass(frozen=True, slots=True)
class Entry:
    """One listed entry: its folder's descriptor (valid while the walk runs), its name, the path shown
    (as the person knows it, through links) and its stat (a link's target's, never the link's)."""

    dir_fd: int
    name: str
    display: str
    st: os.stat_result
    is_link: bool


@dataclass(slots=True)
class Walk:
    """What a walk skipped, one line per entry, for the person and the agent to read."""

    notes: list[str] = field(default_factory=list)
    limit: int = 50

    def note(self, text: str) -> None:
        if len(self.notes) < self.limit:
            self.notes.append(text)
        elif len(self.notes) == self.limit:
            self.notes.append("[... more entries were skipped]")


def kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_fd(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of the open file ``fd``, which is closed."""
    chunks: list[bytes] = []
    size = 0
    with os.fdopen(fd, "rb", closefd=True) as fh:
        while size < limit:
            chunk = fh.read(min(1 << 20, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks)


def read_text(fd: int, limit: int) -> tuple[str, bool] | None:
    """The text of the first ``limit`` bytes of the open file ``fd`` (closed; bad UTF-8 replaced) and whether
    there was more; ``None`` for a binary file (a NUL byte in its first 8 KiB)."""
    data = read_fd(fd, limit + 1)
    if b"\x00" in data[:8192]:
        return None
    return data[:limit].decode("utf-8", errors="replace"), len(data) > limit


def compile_pattern(query: str, is_regex: bool, case_sensitive: bool, error: Callable[[str], Exception],
                    max_length: int | None = None) -> Any:
    """A model's search text (or regular expression) compiled on the ``regex`` engine, for
    :func:`matching_lines`; a pattern that cannot be compiled (or nests too deep) raises ``error``."""
    import regex  # type: ignore[import-untyped,unused-ignore]  # (loads with the first search)

    if max_length is not None and len(query) > max_length:
        raise error(f"search query is longer than {max_length} characters")
    try:
        return regex.compile(query if is_regex else regex.escape(query),
                             regex.V0 if case_sensitive else regex.V0 | regex.IGNORECASE)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise error(f"invalid regular expression: {exc}") from None


def matching_lines(pattern: Any, text: str, deadline: float) -> Iterator[tuple[int, str]]:
    """The number and text (stripped, at most 300 characters) of each line of ``text`` that ``pattern`` finds in.
    The search runs with a time budget, releasing the GIL: ``TimeoutError`` once ``time.monotonic()`` passes
    ``deadline``, so that a catastrophic pattern such as (a+)+$ can neither hang the search nor stall the app."""
    for number, line in enumerate(text.splitlines(), 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        if pattern.search(line, timeout=remaining, concurrent=True):
            yield number, line.strip()[:300]


class ConfinedRoot:
    """Paths below ``root``. ``noun`` names the folder in messages ("the workspace", "the shared
    folder"); ``error`` builds the exception each refusal raises."""

    def __init__(
        self,
        root: Path | str,
        *,
        noun: str = "the folder",
        error: Callable[[str], Exception] = ConfinementError,
        skipped_dirs: frozenset[str] = frozenset(),
    ) -> None:
        self.root = Path(root).expanduser().resolve()
        self.noun = noun
        self.error = error
        self.skipped_dirs = skipped_dirs

    # ----------------------------------------------------------------- paths
    def components(self, path: str) -> list[str]:
        if not isinstance(path, str):
            raise self.error("path must be a string")
        if "\x00" in path:
            raise self.error("path contains a NUL byte")
        raw = path.strip() or "."
        if raw.startswith("/"):
            normalized = Path(os.path.normpath(raw))
            if not normalized.is_relative_to(self.root):
                raise self.error(f"'{path}' is outside {self.noun}; refused")
            raw = normalized.relative_to(self.root).as_posix()
        return [p for p in raw.split("/") if p not in ("", ".")]

    def open_root(self) -> int:
        try:
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _O_CLOEXEC)
        except OSError as exc:
            raise self.error(f"cannot open {self.noun}: {exc.strerror}") from None

    def resolve(self, path: str, *, create_parents: bool = False) -> Target:
        """Walk ``path`` below the root one component at a time (see the module docstring)."""
        try:
            return self._resolve(path, create_parents)
        except LinkLoop:
            raise self.error(f"'{path}': too many levels of symbolic links (a link loop?); refused") from None
        except Outside as exc:
            if exc.args and exc.args[0] == "link":
                raise self.error(f"'{path}' is a symlink that points outside {self.noun}; refused") from None
            raise self.error(f"'{path}' is outside {self.noun}; refused") from None

    def _resolve(self, path: str, create_parents: bool) -> Target:
        pending: deque[str] = deque(self.components(path))
        stack: list[int] = [self.open_root()]
        parts: list[str] = []
        links = 0

        def follow(name: str) -> None:
            nonlocal links
            links += 1
            if links > MAX_SYMLINKS:
                raise LinkLoop
            target = os.readlink(name, dir_fd=stack[-1])
            if target.startswith("/"):
                absolute = Path(os.path.normpath(target))
                if not absolute.is_relative_to(self.root):
                    raise Outside("link")
                while len(stack) > 1:
                    os.close(stack.pop())
                parts.clear()
                target = absolute.relative_to(self.root).as_posix()
            pending.extendleft(reversed([p for p in target.split("/") if p not in ("", ".")]))

        try:
            while pending:
                name = pending.popleft()
                if name == "..":
                    if not parts:
                        raise Outside("link" if links else "path")
                    os.close(stack.pop())
                    parts.pop()
                    continue
                if not pending:  # the last component: resolve links, do not open
                    try:
                        st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
                    except FileNotFoundError:
                        st = None
                    if st is not None and stat.S_ISLNK(st.st_mode):
                        follow(name)
                        continue
                    fd = stack.pop()
                    for other in stack:
                        os.close(other)
                    stack.clear()
                    return Target(fd, name, (*parts, name))
                try:
                    fd = os.open(name, O_DIR, dir_fd=stack[-1])
                except FileNotFoundError:
                    if not create_parents:
                        raise self.error(f"'{'/'.join((*parts, name))}' does not exist") from None
                    try:
                        os.mkdir(name, 0o777, dir_fd=stack[-1])
                    except FileExistsError:
                        pass
                    pending.appendleft(name)
                    continue
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    if stat.S_ISLNK(os.stat(name, dir_fd=stack[-1], follow_symlinks=False).st_mode):
                        follow(name)
                        continue
                    raise self.error(f"'{'/'.join((*parts, name))}' is a file, not a folder") from None
                stack.append(fd)
                parts.append(name)
            fd = stack.pop()
            for other in stack:
                os.close(other)
            stack.clear()
            return Target(fd, None, tuple(parts))
        except OSError as exc:
            raise self.error(f"cannot open '{path}': {exc.strerror}") from None
        finally:
            for fd in stack:
                os.close(fd)

    def open_folder(self, path: str) -> Target:
        """``path`` as an open folder descriptor (``name`` is ``None``)."""
        target = self.resolve(path)
        if target.name is None:
            return target
        try:
            st = os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            target.close()
            raise self.error(f"'{target.display}' does not exist") from None
        if not stat.S_ISDIR(st.st_mode):
            target.close()
            raise self.error(f"'{target.display}' is a file, not a folder")
        try:
            fd = os.open(target.name, O_DIR, dir_fd=target.dir_fd)
        except OSError as exc:
            raise self.error(f"cannot open '{target.display}': {exc.strerror}") from None
        finally:
            target.close()
        return Target(fd, None, target.parts)

    def stat_file(self, dir_fd: int, name: str, display: str) -> os.stat_result:
        """The stat of the regular file ``name`` in ``dir_fd`` (not followed); anything else is refused."""
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise self.error(f"'{display}' does not exist") from None
        except OSError as exc:
            raise self.error(f"cannot read '{display}': {exc.strerror}") from None
        if stat.S_ISDIR(st.st_mode):
            raise self.error(f"'{display}' is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise self.error(f"'{display}' is {kind_of(st.st_mode)}, not a regular file; refused")
        return st

    def hard_link_problem(self, display: str, nlink: int) -> str:
        return f"'{display}' has {nlink} hard links (it may be a file from outside {self.noun})"

    def open_file(self, dir_fd: int, name: str, display: str, limit: int | None = None, *,
                  hard_links: bool = False) -> tuple[int, os.stat_result]:
        """An open descriptor of the regular file ``name`` in ``dir_fd``; anything else is refused before
        opening. ``hard_links``: the person allowed a file with more than one link."""
        st = self.stat_file(dir_fd, name, display)
        try:
            fd = os.open(name, O_READ, dir_fd=dir_fd)
        except OSError as exc:
            raise self.error(f"cannot read '{display}': {exc.strerror}") from None
        opened = os.fstat(fd)
        problem = None
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            problem = f"'{display}' changed while it was being opened; refused"
        elif opened.st_nlink > 1 and not hard_links:
            problem = self.hard_link_problem(display, opened.st_nlink) + "; refused"
        elif limit is not None and opened.st_size > limit:
            problem = f"'{display}' is {opened.st_size} bytes; the limit is {limit}"
        if problem:
            os.close(fd)
            raise self.error(problem)
        return fd, opened

    # ----------------------------------------------------------------- walking
    def walk(self, dir_fd: int, parts: tuple[str, ...], recursive: bool, walk: Walk) -> Iterator[Entry]:
        """Each entry below ``dir_fd`` (folders first, then by name). A symlink is shown by its own name with
        its target's stat, only when the target is inside the root, and is never descended into; an entry
        that cannot be shown is skipped with a note in ``walk``."""
        try:
            with os.scandir(dir_fd) as it:
                names = [(e.name, e.is_symlink()) for e in it]
        except OSError as exc:
            if not parts:
                raise self.error(f"cannot list '.': {exc.strerror}") from None
            walk.note(f"'{'/'.join(parts)}' skipped: cannot list it ({exc.strerror})")
            return
        rows: list[tuple[str, bool, os.stat_result]] = []
        for name, is_link in names:
            display = "/".join((*parts, name))
            try:
                if is_link:
                    target = self._resolve(display, False)
                    try:
                        if target.name is None:
                            st = os.fstat(target.dir_fd)
                        else:
                            st = os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False)
                    finally:
                        target.close()
                else:
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except LinkLoop:
                walk.note(f"'{display}' skipped: a symlink loop (too many levels of symbolic links)")
                continue
            except (Outside, FileNotFoundError):
                continue  # a link leading outside stays invisible (as before); a dangling link or one removed
            except OSError as exc:
                walk.note(f"'{display}' skipped: {exc.strerror}")
                continue
            except Exception as exc:  # noqa: BLE001 - the caller's own error type, from resolve
                walk.note(f"'{display}' skipped: {exc}")
                continue
            if stat.S_ISDIR(st.st_mode) and name in self.skipped_dirs:
                continue
            rows.append((name, is_link, st))
        rows.sort(key=lambda r: (not stat.S_ISDIR(r[2].st_mode), r[0].lower()))
        for name, is_link, st in rows:
            display = "/".join((*parts, name))
            yield Entry(dir_fd, name, display, st, is_link)
            if recursive and stat.S_ISDIR(st.st_mode) and not is_link:
                try:
                    child = os.open(name, O_DIR, dir_fd=dir_fd)
                except OSError:
                    continue  # replaced since it was listed
                try:
                    yield from self.walk(child, (*parts, name), True, walk)
                finally:
                    os.close(child)

    def walk_files(self, dir_fd: int, parts: tuple[str, ...], owned: list[int], walk: Walk) -> Iterator[Entry]:
        """The regular files below ``dir_fd`` (recursive), each with a folder descriptor kept open (listed
        in ``owned``, for the caller to close) for the reads that follow; a symlinked file is given with
        its target's folder and name, and the path the person knows."""
        for entry in self.walk(dir_fd, parts, False, walk):
            if entry.is_link:
                if not stat.S_ISREG(entry.st.st_mode):
                    continue  # linked folders are not descended into
                try:
                    resolved = self._resolve(entry.display, False)
                except Exception:  # noqa: BLE001 - changed since it was listed
                    continue
                owned.append(resolved.dir_fd)
                if resolved.name is not None:
                    yield Entry(resolved.dir_fd, resolved.name, entry.display, entry.st, True)
            elif stat.S_ISDIR(entry.st.st_mode):
                try:
                    child = os.open(entry.name, O_DIR, dir_fd=entry.dir_fd)
                except OSError:
                    continue
                owned.append(child)
                yield from self.walk_files(child, (*parts, entry.name), owned, walk)
            elif stat.S_ISREG(entry.st.st_mode):
                yield entry
