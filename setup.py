"""The optional C loops of ndcg_plugin.speedups; everything else is declared in pyproject.toml.

``optional=True``: where the extension cannot be built (no C compiler), the install goes on
without it and the package computes the same numbers with numpy."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("ndcg_plugin._speedups", ["ndcg_plugin/_speedups.c", "ndcg_plugin/_speedups_rows.c",
                                                        "ndcg_plugin/_speedups_ranks.c"],
                             depends=["ndcg_plugin/_speedups.h"], optional=True)])
