"""The faults: the toggle program (what changes at which step), its schedule, and the mapped task that applies each step."""
