import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared real-data folder; CI must have it, so a missing folder fails loudly."""
    path = Path(os.environ.get("HIERBENCH_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.fail(f"shared data folder {path} not found; set HIERBENCH_SHARED_DATA")
    os.environ["HIERBENCH_SHARED_DATA"] = str(path)
    return path
