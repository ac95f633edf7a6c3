"""Tools from Model Context Protocol servers: what a server is (spec), how its tools are named
for the model (names), what a result becomes (content), the connections on a background event
loop (link, hub), and the tool the agent loop calls (tool)."""
