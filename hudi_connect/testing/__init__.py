"""The hudi-connect test harness: provisioning, service launchers and pytest fixtures.

Load the fixtures in your own suite with ``-p hudi_connect.testing.plugin``
(or ``pytest_plugins = ["hudi_connect.testing.plugin"]`` in a conftest).
"""
