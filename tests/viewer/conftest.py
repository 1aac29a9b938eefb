from tests.cli.cli_testlib import corpus

__all__ = ["corpus"]
