"""Immutable views of recorded history: what `derive_messages()` and `events` hand out.

Callers cannot change recorded history through them: mappings and lists refuse writes. They
stay JSON-serialisable and compare equal to plain dicts and lists (they subclass them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, overload

from foldlog.errors import ImmutableHistoryError, MessageIndexError

if TYPE_CHECKING:
    from foldlog import _core


class FrozenDict(dict[str, Any]):
    """A read-only dict."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ImmutableHistoryError("recorded history is immutable: copy it (dict(m)) to change a message")

    __setitem__ = _refuse
    __delitem__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse
    __ior__ = _refuse

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A read-only list."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ImmutableHistoryError("recorded history is immutable: copy it (list(x)) to change it")

    __setitem__ = _refuse
    __delitem__ = _refuse
    __iadd__ = _refuse
    __imul__ = _refuse
    append = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    clear = _refuse
    sort = _refuse
    reverse = _refuse

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """Deeply frozen copy of a JSON value."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList([freeze(v) for v in value])
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of recorded history: every mapping (`FrozenDict`, or any
    read-only mapping) becomes a ``dict`` and every other collection (list, tuple, read-only
    sequence) a ``list``; strings, numbers, booleans and None are kept. Public as
    ``foldlog.thaw``: ``foldlog.thaw(session.derive_messages())``."""
    if isinstance(value, Mapping):
        return {str(k): thaw(v) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | bytearray):
        return [thaw(v) for v in value]  # lists, tuples, read-only sequences (wire messages)
    return value


class EventsView(Sequence[Mapping[str, Any]]):
    """The log's events as read-only mappings (``type``, ``seq``, ``time``, ``data``, …)."""

    def __init__(self, core: _core.Log) -> None:
        self._core = core

    def __len__(self) -> int:
        return len(self._core)

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Mapping[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self._core))
            if step == 1:
                return tuple(freeze(e) for e in self._core.events(start, max(start, stop)))
            return tuple(self[i] for i in range(start, stop, step))
        return freeze(self._core.event(index))  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        n = len(self._core)
        for start in range(0, n, 4096):
            yield from (freeze(e) for e in self._core.events(start, min(n, start + 4096)))

    def types(self) -> list[str]:
        """Event types in seq order (no data decoded)."""
        return self._core.kinds()

    def plain(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Events ``start..stop`` as plain dicts decoded afresh: not frozen (a one-pass reader,
        `foldlog.log.grammar.reader`, skips that copy) and shared with nothing recorded."""
        return self._core.events(start, stop)


class MessageSequence(Sequence[Mapping[str, Any]]):
    """Messages of the log, as a read-only sequence whose items become Python objects only when
    read (`Session.derive_messages`, a request's messages): counting, planning and building
    request bodies never create them. A message read twice is the same `FrozenDict`.

    It compares equal to any sequence (list, tuple, another view) holding equal messages, is
    unhashable like the messages themselves, and slices (step 1) to a view of its own (other
    steps: to a `FrozenList` of the messages).
    """

    __slots__ = ("_items", "_start", "_stop")

    #: messages built per call to the core while iterating
    CHUNK = 1024

    def __init__(self, items: _core.MessageItems, start: int = 0, stop: int | None = None) -> None:
        self._items = items
        self._start = start
        self._stop = len(items) if stop is None else stop

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Mapping[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        n = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step == 1:
                return MessageSequence(self._items, self._start + start, self._start + max(start, stop))
            # a read-only list, so that it still compares equal to the list sliced the same way
            return FrozenList(self[i] for i in range(start, stop, step))
        i = index.__index__()
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise MessageIndexError(f"message index {index} out of range ({n} messages)")
        return self._items.item(self._start + i)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        for start in range(self._start, self._stop, self.CHUNK):
            yield from self._items.items(start, min(self._stop, start + self.CHUNK))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes | bytearray):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageSequence({list(self)!r})"

    def __copy__(self) -> MessageSequence:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> MessageSequence:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # a snapshot of the log cannot travel without its log: the messages go as a tuple
        return (tuple, (tuple(self),))

    def media_indexes(self) -> list[int]:
        """Indexes of the messages that reference media (a block with a ``media`` key), found by
        the core without building the messages: none, in O(events appended since it was last
        asked), when no event of the log may hold a reference."""
        return [i - self._start for i in self._items.media_indexes(self._start, self._stop)]

    def block_indexes(self) -> list[int]:
        """Indexes of the messages whose content is a list of blocks (the others hold text
        only), found without building the messages."""
        return [i - self._start for i in self._items.block_indexes(self._start, self._stop)]
