"""`captain-memo mcp`: the memory served to coding agents over the Model Context Protocol (stdio).

tools.py names the tools, their words, annotations and output schemas (what each takes is declared
once, in requests/tool_arguments.py, which makes its input schema and checks its calls);
memory_calls.py runs them on the store's engine, served or in this process; workspace.py turns
the client's roots into a project and branch; render.py writes results as text for a model;
mcp_server.py is the only module that speaks the SDK (sdk.py imports the parts of it that
mcp_server.py uses, and nothing more).
"""
