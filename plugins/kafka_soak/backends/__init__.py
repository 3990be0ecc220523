"""Kafka: a run's cluster provisioned by its backend (``registry``: ``local``, ``docker``, ``external``, each with its
capabilities), its quotas set and measured, and a broker version matrix of such clusters fanned out."""
