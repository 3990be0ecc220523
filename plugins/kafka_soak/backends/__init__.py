"""Kafka: a run's cluster provisioned by its backend (``local``, ``docker``, ``external``), reached through a ``kafka``
Airflow connection, its quotas set and measured, and a broker version matrix of such clusters."""
