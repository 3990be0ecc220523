"""What the Airflow side and the checker's Spark job share: the run directory's files (``rundir``), the data contracts
and their anomalies (``contracts``), a Kafka connection's settings for Java clients (``java_client``) and the topics'
offsets (``offsets``). ``validate.ValidateOperator`` ships this package to Spark as one zip (``--py-files``), where a
cluster's driver and executors have no checkout: its modules import nothing of the project outside it, and nothing
but the standard library and confluent-kafka (``tests/unit/airflow_side/test_package.py`` checks)."""
