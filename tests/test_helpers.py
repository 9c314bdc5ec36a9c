"""The suite's own process helpers (tests/helpers.py) where a mistake costs time unseen."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import group_running

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_group_whose_leader_exited_unreaped_is_not_running() -> None:
    """The leader is a zombie until this process reaps it: ``killpg(group, 0)`` still
    succeeds then, and a stop that trusted it waited out its whole grace period."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while _state(proc.pid) != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, 0)  # what the old check saw: the group "exists"
        assert not group_running(proc.pid)
    finally:
        proc.wait()
    assert not group_running(proc.pid)  # reaped: no such group at all


def test_a_group_with_a_live_process_is_running() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)
    try:
        assert group_running(proc.pid)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
