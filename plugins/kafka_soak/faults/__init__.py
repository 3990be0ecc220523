"""The faults: the program (what changes at which step), its fault kinds (one module each, ``kinds/``), its schedule,
and the mapped task that applies each step."""
