"""The HTTP family: OpenAI-compatible chat completions over httpx (the client, DeepSeek, OpenAI),
server-sent events, the retry schedule, and the chunk assembler of the chat-completions stream."""
