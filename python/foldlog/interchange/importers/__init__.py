"""Importers: one module per foreign transcript format, each with ``convert(path, …) ->
list[Conversation]`` (registered in `foldlog.interchange.FORMATS`)."""
