"""What the server's JVM knows of storage that its Python workers do not.

A Spark server configured the usual Hadoop way (``spark.hadoop.fs.s3a.access.key``, ``fs.gs.*``,
``fs.azure.*``) reads ``hoodie.properties`` and Parquet through its JVM, while the workers that read Hudi's
log files and timeline see only their environment. When a worker then fails to reach storage, the
:class:`~hudi_connect.core.errors.StorageAccessError` it raised is completed here with the storage settings the
server's configuration holds (their names only, never their values) and what to set instead.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from hudi_connect.core.errors import HudiConnectError, StorageAccessError

# Hadoop settings with a meaning for the workers, by storage, and the environment that carries it there
HADOOP_SETTINGS: dict[str, str] = {
    "fs.s3a.access.key": "AWS_ACCESS_KEY_ID", "fs.s3a.secret.key": "AWS_SECRET_ACCESS_KEY",
    "fs.s3a.session.token": "AWS_SESSION_TOKEN", "fs.s3a.endpoint": "AWS_ENDPOINT_URL",
    "fs.s3a.endpoint.region": "AWS_REGION", "fs.s3a.path.style.access": "AWS_S3_ADDRESSING_STYLE=path",
    "fs.s3a.assumed.role.arn": "AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE, or a profile's role_arn",
    "fs.s3a.aws.credentials.provider": "AWS's default chain (a role for the hosts)",
    "fs.gs.auth.service.account.json.keyfile": "GOOGLE_APPLICATION_CREDENTIALS",
    "google.cloud.auth.service.account.json.keyfile": "GOOGLE_APPLICATION_CREDENTIALS",
    "fs.gs.storage.root.url": "STORAGE_EMULATOR_HOST",
    "fs.azure.account.auth.type": "AZURE_STORAGE_ACCOUNT_KEY, or AZURE_CLIENT_ID/AZURE_TENANT_ID/"
                                  "AZURE_CLIENT_SECRET",
    "fs.azure.account.oauth2.client.id": "AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET",
}


def hadoop_only_settings(spark: SparkSession) -> dict[str, str]:
    """The settings of :data:`HADOOP_SETTINGS` that the server's configuration sets (``spark.hadoop.*``), each
    with what carries it to the workers."""
    found = {}
    for key, carrier in HADOOP_SETTINGS.items():
        try:
            value = spark.conf.get(f"spark.hadoop.{key}", None)
        except Exception:  # a conf the server will not show: nothing to say about it
            continue
        if value:
            found[key] = carrier
    return found


def with_server_settings(refusal: StorageAccessError, spark: SparkSession) -> StorageAccessError:
    """``refusal`` with the storage settings only the server's JVM has, if there are any."""
    settings = hadoop_only_settings(spark)
    if not settings:
        return refusal
    listed = "; ".join(f"spark.hadoop.{key} (for the workers: {carrier})" for key, carrier in settings.items())
    completed = StorageAccessError.__new__(StorageAccessError)  # the message is whole already
    HudiConnectError.__init__(completed, f"{refusal}. The server's configuration sets, for its JVM only: {listed}")
    completed.path, completed.reason = refusal.path, refusal.reason
    return completed
