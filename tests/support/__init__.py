"""Helpers shared by the tests and the benches: the loopback HTTP server, the chat-completions
wire it scripts, and the tool histories many tests build."""
