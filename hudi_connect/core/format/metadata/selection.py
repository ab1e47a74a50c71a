"""Which records of a metadata partition a reader wants: exact keys, key prefixes, or every record.

Hudi's readers never decode a whole partition to answer a question about part
of it: they look records up by key (``getRecordsByKeys``: the record index,
one data partition's files) or by key prefix (``getRecordsByKeyPrefixes``:
one column's statistics, whose keys start with the column's hash). HFiles are
sorted by key, so both are found through the block index, decoding only the
data blocks that may hold them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class KeySelection:
    """Records whose key is one of ``keys`` or starts with one of ``prefixes``.

    Example::

        KeySelection.of(keys=["region=us"])                         # one partition's files
        KeySelection.of(prefixes=[column_stats_prefix("amount")])   # one column's statistics
    """

    keys: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()

    @classmethod
    def of(cls, keys: Iterable[str] = (), prefixes: Iterable[str] = ()) -> KeySelection:
        """A selection of these keys and key prefixes."""
        return cls(frozenset(keys), frozenset(prefixes))

    def matches(self, key: str) -> bool:
        """Whether the record of ``key`` is selected."""
        return key in self.keys or any(key.startswith(prefix) for prefix in self.prefixes)

    def encoded(self) -> tuple[list[bytes], list[bytes]]:
        """(keys, prefixes) as the UTF-8 bytes an HFile's rows compare by, sorted."""
        return sorted(k.encode() for k in self.keys), sorted(p.encode() for p in self.prefixes)
