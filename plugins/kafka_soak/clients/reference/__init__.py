"""The suite's own apps under test: the reference worker (``worker.py`` with its store and changelog) and the Kafka
Streams app (``streams.py``, built from ``apps/streams``), and both as profiles (``profiles.py``)."""
