"""What the backends and the clients both stand on: reaching Kafka (``kafka_io``), the cluster a run reaches
(``cluster``) and how (``connection``), running a run's processes (``runtime``: local, Docker) and the Docker engine."""
