"""`captain-memo mcp`: the memory served to coding agents over the Model Context Protocol (stdio).

tools.py names the tools, their JSON schemas and the argument checks; service.py runs them over one
engine kept warm for the session; workspace.py turns the client's roots into a project and branch;
render.py writes results as text for a model; server.py is the only module that speaks the SDK
(sdk.py imports the parts of it that server.py uses, and nothing more).
"""
