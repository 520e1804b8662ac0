"""The kinds of memory. On their own so a command's parser can offer them without importing the
record classes (dataclasses imports inspect: ~5 ms of a warm `remember`)."""

KINDS = ("memory", "skill", "observation")
