"""Units shared by ranking, the store and the front ends. A module of its own so the command line's
thin path can use them without importing the record classes."""

DAY = 86_400.0  # seconds; ages and Tide's clock are counted in days
