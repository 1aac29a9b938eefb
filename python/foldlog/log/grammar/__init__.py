"""The log's grammar: the event types (`kinds`), the conversation's shared types (`types`), the
one writer of every event kind (`writer`) and the one typed reader (`reader`, with its records in
`records`). Event type strings are spelled here and in the Rust core only
(``tests/api/test_grammar.py``)."""
