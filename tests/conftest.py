import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import SOURCES  # noqa: E402
from treeagent import tokens  # noqa: E402


@pytest.fixture(scope="session")
def qwen3():
    return tokens.load("qwen3")


@pytest.fixture(scope="session")
def sources():
    return SOURCES
