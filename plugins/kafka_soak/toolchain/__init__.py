"""What a run builds or fetches from outside before it starts: Maven builds into the checkout's cache, and the preflight
that resolves them for a run."""
