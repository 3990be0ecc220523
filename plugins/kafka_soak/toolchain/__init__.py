"""What a run builds or fetches from outside before it starts: Maven builds into the checkout's cache (the preflight that
asks for them for a run is the Airflow side's, ``kafka_soak.preflight``)."""
