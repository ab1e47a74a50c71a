"""Which records of a metadata partition a reader wants: exact keys, key prefixes, or every record.

Hudi's readers never decode a whole partition to answer a question about part
of it: they look records up by key (``getRecordsByKeys``: the record index,
one data partition's files) or by key prefix (``getRecordsByKeyPrefixes``:
one column's statistics, whose keys start with the column's hash). HFiles are
sorted by key, so both are found through the block index, decoding only the
data blocks that may hold them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KeySelection:
    """Records whose key is one of ``keys``, starts with one of ``prefixes``, or passes ``where``.

    ``where`` tests keys the reader cannot name beforehand (the partitions a predicate keeps, among
    those the ``files`` partition holds); it scans every cell's key but decodes only the selected values.

    Example::

        KeySelection.of(keys=["region=us"])                         # one partition's files
        KeySelection.of(prefixes=[column_stats_prefix("amount")])   # one column's statistics
        KeySelection.of(where=lambda key: key.startswith("region=e"))
    """

    keys: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()
    where: Callable[[str], bool] | None = field(default=None, compare=False)

    @classmethod
    def of(cls, keys: Iterable[str] = (), prefixes: Iterable[str] = (),
           where: Callable[[str], bool] | None = None) -> KeySelection:
        """A selection of these keys and key prefixes, and of the keys ``where`` accepts."""
        return cls(frozenset(keys), frozenset(prefixes), where)

    def matches(self, key: str) -> bool:
        """Whether the record of ``key`` is selected."""
        return (key in self.keys or any(key.startswith(prefix) for prefix in self.prefixes)
                or (self.where is not None and self.where(key)))

    def encoded(self) -> tuple[list[bytes], list[bytes]]:
        """(keys, prefixes) as the UTF-8 bytes an HFile's rows compare by, sorted."""
        return sorted(k.encode() for k in self.keys), sorted(p.encode() for p in self.prefixes)
