"""The load: the generator that produces a run's input records per its data contract, and its process."""
