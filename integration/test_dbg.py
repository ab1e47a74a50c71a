import uuid

from integration.differential.session import Tally, check_seed


def test_dbg(spark, plain_spark, tmp_path):
    tally = Tally()
    check_seed(spark, plain_spark, lambda: str(tmp_path / uuid.uuid4().hex[:8]), 58, 4, tally)
    print(tally.report(0, "1.2"))
