"""The command line: main.py parses and dispatches; each subcommand lives in cli/commands/<name>.py.
Imports nothing, so the warm `recall` path loads only what it uses."""
