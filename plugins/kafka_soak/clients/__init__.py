"""The clients of a run's Kafka: the apps under test (a team's, from its profile, or the suite's reference apps), the
runtimes their instances run on, how each instance fared, and the confluent-kafka helpers every client shares."""
