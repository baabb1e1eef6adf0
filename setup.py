"""The optional C loops of ndcg_plugin.arrays.speedups; everything else is declared in pyproject.toml.

``optional=True``: where the extension cannot be built (no C compiler), the install goes on
without it and the package computes the same numbers with numpy."""
from setuptools import Extension, setup

SOURCES = ["ndcg_plugin/arrays/_speedups.c", "ndcg_plugin/arrays/_speedups_rows.c",
           "ndcg_plugin/arrays/_speedups_ranks.c"]
setup(ext_modules=[Extension("ndcg_plugin.arrays._speedups", SOURCES, depends=["ndcg_plugin/arrays/_speedups.h"],
                             optional=True)])
