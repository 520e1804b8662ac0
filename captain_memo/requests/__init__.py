"""The JSON edge: every request (command line, service socket, editor, agent tools) checked into a
request record here and run against a Memo (operations.py)."""
