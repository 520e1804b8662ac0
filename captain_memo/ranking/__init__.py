"""The ranking pipeline: each stage is a small pure function over a list of candidates."""
