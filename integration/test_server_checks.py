"""The servers are what they claim: the Hudi one is set up for Hudi, the plain
one has no Hudi at all and says so loudly, and neither talks without the token."""

from __future__ import annotations

import pytest
from hudi_connect_stack.endpoints import TOKEN_HEADER
from pyspark.sql import SparkSession

from hudi_connect.client.server import connect, require_hudi_server
from hudi_connect.core.errors import ServerMisconfiguredError


def test_plain_server_is_rejected_for_hudi_with_a_clear_message(plain_spark: SparkSession) -> None:
    assert plain_spark.range(5).count() == 5
    with pytest.raises(ServerMisconfiguredError, match=r"HoodieSparkSessionExtension.*zero rows"):
        require_hudi_server(plain_spark)


def test_plain_server_has_no_hudi_jar(plain_spark: SparkSession, tmp_path: object) -> None:
    with pytest.raises(Exception, match=r"(?i)hudi"):
        plain_spark.read.format("hudi").load("/nonexistent").collect()


def test_hudi_server_passes_the_check(spark: SparkSession) -> None:
    require_hudi_server(spark)


def test_server_refuses_a_client_without_the_token(hudi_server_url: str) -> None:
    without_token = hudi_server_url.split(f";{TOKEN_HEADER}=")[0]
    session = connect(without_token)
    with pytest.raises(Exception, match=r"UNAUTHENTICATED|x-hudi-connect-token"):
        session.range(1).collect()
    wrong = connect(f"{without_token};{TOKEN_HEADER}=wrong")
    with pytest.raises(Exception, match=r"UNAUTHENTICATED|x-hudi-connect-token"):
        wrong.range(1).collect()
