"""The environment every process of the pipeline starts with: Prefect and DVC without
analytics or outbound calls, time for Prefect's temporary API server on a busy machine,
and no Hugging Face hub lookups. Set before Prefect is imported (flows/_common.py,
:func:`treeagent.pipeline.runners.map_on_runner`); a value already set is kept.
"""

from __future__ import annotations

import os

ENV_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "DVC_NO_ANALYTICS": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_OFFLINE": "1",
}
"""Environment every Prefect process of the project starts with (unless set): no
analytics or outbound calls, time for the temporary API server on a busy machine."""


def prefect_environment() -> None:
    """Set :data:`ENV_DEFAULTS` where unset (before Prefect is imported)."""
    for key, value in ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
