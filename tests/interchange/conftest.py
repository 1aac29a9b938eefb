from tests.cli.cli_testlib import corpus, seed_v0_lines

__all__ = ["corpus", "seed_v0_lines"]
