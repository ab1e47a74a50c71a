"""Layer 3's footing, the client's side of Spark Connect: ``connect()``, shipping the
worker artifact, reading small files and the timeline through the server.

Every feature (``reader``, ``cdc``, ``table_spec``, ``reverse``, ``table``) builds its
plans on top of these.
"""
