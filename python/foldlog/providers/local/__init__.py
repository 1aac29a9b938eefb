"""The offline model: Gemma 3 270M run by llama.cpp in process (`provider`, `engine`), Gemma's own
chat format (`gemma_chat`), the reply grammar (`tool_grammar`), what the conversation says about the
next reply (`turns`), llama.cpp's log lines (`llama_logs`), and llama-cpp-python's server as a child
process (`server`)."""
