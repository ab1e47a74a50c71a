"""``HudiTable``: writes and table services through a Hudi Connect server."""

from hudi_connect.table.hudi_table import HistoryEntry, HudiTable

__all__ = ["HistoryEntry", "HudiTable"]
