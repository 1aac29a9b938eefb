"""The event log layer: the `Session` façade over the core's log (``session``), the frozen
views it hands out (``frozen``), the request's wire messages (``wire``) and token counting
(``tokens``). Everything above it — compaction, the agent, the CLI — reads and writes the log
through a `Session`."""
