"""The checker's Airflow side: the ``validate`` task that submits ``spark_jobs/validate_soak.py`` and what its driver needs."""
