"""The Scala-free stack: provisioning and launchers for Spark Connect (with and
without Hudi, local or on a standalone cluster), MinIO, Kafka and PostgreSQL,
as local processes or, where a Docker engine answers, as containers."""
