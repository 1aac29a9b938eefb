"""The ``foldlog`` command line (entry point :func:`foldlog.cli.main.main`)."""
