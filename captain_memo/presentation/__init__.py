"""How a memory and a hit are shown, for every front end alike (the CLI, the editor, the MCP server).

``words``: the small pieces of text (an age, a count, an id, the marks of a hit) and the
explanation of a score, over the JSON forms; light enough for the command line's thin client.
``chunks``: where in a memory the matching chunk sits (its heading path, its lines) and the lines
that hold the query's words. ``views``: the JSON of a recall, a hit and a memory as front ends
receive it (doc/json.md). ``text``: the lines a person or a model reads.

No front end owns any of it and none renders a memory its own way, so a fix here shows everywhere.
"""
