"""The hudi-connect test harness: provisioning, service launchers and pytest fixtures.

Load the fixtures in your own suite with ``-p hudi_connect_stack.testing.plugin``
(or ``pytest_plugins = ["hudi_connect_stack.testing.plugin"]`` in a conftest).
"""
