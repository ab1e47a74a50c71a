"""``HudiTable``: writes and table services through a Hudi Connect server."""

from hudi_connect.core.format.history import HistoryEntry
from hudi_connect.table.hudi_table import HudiTable

__all__ = ["HistoryEntry", "HudiTable"]
