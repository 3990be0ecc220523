"""The checker's Airflow side, not the checker: the ``validate`` task (``validate.ValidateOperator``) that submits
``spark_jobs/validate_soak.py`` to Spark, and what its spark-submit needs (Spark's Kafka source, ``spark_kafka``; the
driver JVM's class-data archive, ``class_data``). The checker itself (the topics read, each contract's frames, the
Great Expectations suites, the verdict) is ``spark_jobs/``, which runs in Spark and imports nothing from here."""
