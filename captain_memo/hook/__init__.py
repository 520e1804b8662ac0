"""`captain-memo hook`: the prompt hook a coding agent runs before each prompt (prompt_hook.py)."""
