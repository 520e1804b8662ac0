"""Where memories come from: note and skill folders, git history, typed observations.

Importing this package is free; each module loads what it needs when called.
"""
