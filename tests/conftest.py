"""Shared fixtures, and the test suite's layout over pytest-xdist workers.

``make test`` runs ``pytest -n <cores + 1> --dist loadfile``: each test file runs in order
on one worker and shares its module fixtures, and the longest files start first (pytest-xdist's
own order, most tests first, would leave the pipeline files, one to five tests each, to
the end, so it is switched off here); the groups of files in ``_UNITS``, which load the
same heavy libraries in the worker, each go to one worker as one unit
(``pytest_xdist_make_scheduler``). (``--dist loadgroup`` with ``xdist_group`` marks did
not keep a file together with the pytest and pytest-xdist releases this project resolves
to: a file's unmarked tests went to both workers.) A worker's math libraries get its
share of the cores (``OMP_NUM_THREADS``, read by torch in the worker and in the processes
it starts), so two workers on two cores do not spin against each other. SmolLM2 is loaded
once per worker process (``treeagent.llm.models.load_model`` keeps it; the converted
weights are saved once on disk for every later process).
"""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

_WORKERS = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
if _WORKERS and "OMP_NUM_THREADS" not in os.environ:  # before anything imports torch
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(_WORKERS)))

from helpers import SOURCES  # noqa: E402
from treeagent.tokenizers import tokens  # noqa: E402

# The longest files, longest first (measured with ``--durations``; minutes each on 2 cores:
# real pipelines, SmolLM2 end to end, real DVC and Prefect, every mirror file), started
# first so that no worker is left with one of them at the end while the other idles;
# then the files that mostly wait (servers starting and stopping, timeouts), while the
# other worker still has CPU-bound files to run beside them.
_SLOW_FIRST = ("test_pipeline.py", "test_pipeline_rerun.py", "test_plugin_pipeline.py",
               "test_plan.py", "test_agents_smollm2.py", "test_history.py",
               "test_evaluate_shards.py", "test_bench_build.py", "test_bench_sources.py",
               "test_dvc_remote.py", "test_deployment.py", "test_progress.py",
               "test_install_wheel.py",
               "test_runners.py", "test_pipeline_schedule.py", "test_serve.py",
               "test_llm_openai.py", "test_hostile_reliability.py",
               "test_javascript_format.py", "test_llm_transformers.py",
               "test_second_readers.py", "test_js_twin.py", "test_bench_cells.py",
               "test_bench_variety.py", "test_hostile_formats.py", "test_yaml_format.py")

# Files whose tests load the same heavy libraries in the worker run as one unit, on one
# worker, so that one worker pays for them (measured in CPU s a process): SmolLM2 in
# transformers (torch, transformers and the weights, ~5 s), Great Expectations' suites
# (~2.5 s), the flows' Prefect and DVC (~1.5 s), the report's matplotlib and DuckDB
# (~1 s). A unit starts where its first file is in the order above.
_UNITS = {
    "smollm2": ("test_plan.py", "test_agents_smollm2.py", "test_llm_transformers.py",
                "test_cli_run.py", "test_engine_dtype.py", "test_agents_thinking.py"),
    "great-expectations": ("test_bench_build.py", "test_second_readers.py",
                           "test_bench_cells.py", "test_bench_variety.py",
                           "test_bench_splits.py", "test_examples_gate.py", "test_export.py",
                           "test_hostile_artifacts.py", "test_gates.py",
                           "test_bench_validate.py"),
    "prefect-dvc": ("test_agent_setup.py", "test_benchmark_stage_order.py",
                    "test_report_provenance.py", "test_serve_flow.py", "test_dependencies.py",
                    "test_dvc_deps.py"),
    "report": ("test_report.py", "test_report_html.py", "test_report_uncertainty.py",
               "test_report_browser.py", "test_report_match_rate.py",
               "test_report_viewer.py"),
}


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` with each of :data:`_UNITS` handed out as one work unit."""
    if getattr(config.option, "dist", "no") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    unit_of = {name: unit for unit, names in _UNITS.items() for name in names}

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return unit_of.get(path.rsplit("/", 1)[-1], path)

    return UnitScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    # --dist loadfile/loadscope: hand out files in the order below, not by test count
    if getattr(config.option, "dist", "no") in ("loadfile", "loadscope"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(_SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept


@pytest.fixture(scope="session")
def qwen3():
    return tokens.load("qwen3")


@pytest.fixture(scope="session")
def sources():
    return SOURCES


def _run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary folder every process of the run sees: under xdist the controller's,
    the parent of each worker's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def prefect_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Prefect database migrated once for the run (:func:`helpers.migrated_prefect_db`):
    :func:`helpers.seed_prefect_home` copies it into a ``PREFECT_HOME`` before a server
    or a flow's temporary server starts there."""
    from helpers import migrated_prefect_db

    return migrated_prefect_db(_run_folder(tmp_path_factory))


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory, prefect_db: Path):
    """The API URL of one ``prefect server start`` for the whole run, for the stages and
    flows of tests that are not about Prefect's temporary server: a flow run without
    ``PREFECT_API_URL`` starts a temporary server of its own (~10 CPU s each, a fresh
    database migrated every time). Under xdist the first worker that needs it starts it
    for all (in the controller's temporary folder, the parent of each worker's) and the
    controller stops it when the run ends (:func:`pytest_sessionfinish`): one server's
    start and idle CPU instead of one per worker. Services that schedule or trigger runs
    are off (:data:`helpers.IDLE_SERVICES`): the tests that need them start servers of
    their own."""
    from helpers import IDLE_SERVICES, pipeline_env, prefect_server, shared_prefect_server

    if os.environ.get("PYTEST_XDIST_WORKER"):
        run = _run_folder(tmp_path_factory)
        home = run / "prefect-api-home"
        home.mkdir(exist_ok=True)
        yield shared_prefect_server(run, {**pipeline_env(home), **IDLE_SERVICES},
                                    owner=os.getppid(), db=prefect_db)
        return
    home = tmp_path_factory.mktemp("prefect-api")
    with prefect_server({**pipeline_env(home), **IDLE_SERVICES}, home / "server.log",
                        db=prefect_db) as api:
        yield api


@pytest.hookimpl(tryfirst=True)  # before the temporary folders are removed
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The xdist controller stops the run's shared Prefect server (:func:`prefect_api`)."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if os.environ.get("PYTEST_XDIST_WORKER") or factory is None \
            or getattr(factory, "_basetemp", None) is None:
        return
    from helpers import stop_shared_prefect_server

    stop_shared_prefect_server(factory.getbasetemp())
