"""The apps under test of a run's Kafka: a team's, from its profile (with the input formats it declares), or the suite's
reference apps; the subjects a run compares, their instances, and how each instance fared."""
