"""The front door (issue #34): ``from hudi_connect import ...`` gives every public class, function and error."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import hudi_connect
from hudi_connect.core.errors import HudiConnectError

HARNESS = ("hudi_connect_stack", "hudi_connect_stack.testing", "hudi_connect_stack.local", "hudi_connect.demo")
ENTRY_PACKAGES = ("hudi_connect.cdc", "hudi_connect.reverse", "hudi_connect.table_spec")
# what the entry packages export for their own plumbing or tests, not for users (RFC-64's split helpers, CDC's
# inference cases)
INTERNAL = {"CdcInferenceCase", "CdcSplit", "infer_splits", "CheckpointStore", "ColumnRange", "FileGroup",
            "ListingCounts", "PartitionDescriptor", "ReadingMode", "TableId", "balanced_splits", "to_spark"}


def _library_modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(hudi_connect.__path__, "hudi_connect.")
            if not m.name.startswith(HARNESS) and not m.name.endswith("__main__")]


def test_every_name_in_all_is_there() -> None:
    assert sorted(hudi_connect.__all__) == hudi_connect.__all__
    assert all(hasattr(hudi_connect, name) for name in hudi_connect.__all__)


def test_every_error_of_the_hierarchy_is_exported() -> None:
    errors = {cls for name in _library_modules()
              for _, cls in inspect.getmembers(importlib.import_module(name), inspect.isclass)
              if issubclass(cls, HudiConnectError) and not cls.__name__.startswith("_")}
    assert {cls.__name__ for cls in errors} <= set(hudi_connect.__all__)


def test_the_entry_packages_public_names_are_at_the_front_door() -> None:
    for package in ENTRY_PACKAGES:
        exported = set(importlib.import_module(package).__all__) - INTERNAL
        assert exported <= set(hudi_connect.__all__), (package, exported - set(hudi_connect.__all__))
