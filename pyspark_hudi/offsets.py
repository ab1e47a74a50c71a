"""Where a stream of a table's commits stands: the range times of its completed write commits.

Apart from the stream reader (:mod:`pyspark_hudi.stream`, Spark 4's streaming API), so that the rule is read and
tested on any Spark line.
"""

from __future__ import annotations

from hudi_connect.core.executor.file_access import LocalFileAccess
from hudi_connect.core.format.timeline import EARLIEST_TIME, range_time
from hudi_connect.reader.table_reader import TableReader


def latest_commit_time(path: str, start: str = EARLIEST_TIME, max_files: int | None = None) -> str:
    """The range time of the table's last completed write commit (``start`` before its first); with
    ``max_files``, of the last of the commits after ``start`` whose written files total at most that many (at
    least one commit: a commit is never split)."""
    view = TableReader(LocalFileAccess(), path).view
    by_completion = view.properties.ranges_by_completion
    after = sorted((range_time(c, by_completion=by_completion), c) for c in view.timeline().write_commits()
                   if c.is_completed and range_time(c, by_completion=by_completion) > start)
    if not after:
        return start
    if max_files is None:
        return after[-1][0]
    metadata = view.commit_metadata([c for _, c in after])
    taken, files = after[0][0], 0
    for time, commit in after:
        files += len(metadata[commit].write_stats) if commit in metadata else 0
        if files > max_files and time != after[0][0]:
            break
        taken = time
    return taken
