"""Shared fixtures: the reference data beside the repository (../shared/data, or the directory
named by NDCG_PLUGIN_SHARED_DATA). Tests that need it skip, saying why, when it is absent."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("NDCG_PLUGIN_SHARED_DATA", ROOT.parent / "shared" / "data"))
EXAMPLES = ROOT / "benchmarks_data"


def shared_file(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data {path} is absent (set NDCG_PLUGIN_SHARED_DATA to the shared/data "
                    f"folder with the trec_eval test suite and MS MARCO files)")
    return path


@pytest.fixture
def trec_eval_dir() -> Path:
    return shared_file("trec_eval")
