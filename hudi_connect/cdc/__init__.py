"""RFC-51 change data capture computed as Spark plans, on any Connect server."""

from hudi_connect.cdc.cases import CdcInferenceCase, CdcSplit, infer_splits
from hudi_connect.cdc.query import ChangeFormat, ChangeQuery

__all__ = ["CdcInferenceCase", "CdcSplit", "ChangeFormat", "ChangeQuery", "infer_splits"]
