"""Anthropic's Messages API: the provider (`provider`), its request body with cache breakpoints
(`body`) and its stream reader (`stream`)."""
