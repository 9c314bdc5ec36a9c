"""Result versions (``treeagent history record``), ``treeagent history``, the DuckDB
``history`` view and the report's change against the previous version, on a real git
repository with a real DVC pipeline and a local directory as the DVC remote. The scored
Parquet files are written directly (no model runs); expected numbers are computed by
hand here."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent.cli import main as cli
from treeagent.pipeline import config
from treeagent.report import changes, db, history, versions
from treeagent.report.cli_history import masked
from treeagent.report.schema import write_scores

ROOT = Path(__file__).resolve().parent.parent
DVC = str(Path(sys.executable).parent / "dvc")
METHODS = ["flat", "treeagent"]
# version 1 and version 2: memagent's model is rebuilt (new revision) and its scores
# change; infmem keeps its revision and its scores
SCORES_V1 = {("memagent", "flat"): [1, 0, 1, 1], ("memagent", "treeagent"): [1, 1, 0, 0],
             ("infmem", "flat"): [0, 0, 1, 1], ("infmem", "treeagent"): [1, 1, 1, 1]}
SCORES_V2 = {**SCORES_V1, ("memagent", "flat"): [1, 1, 1, 1],
             ("memagent", "treeagent"): [0, 1, 0, 0]}
REVISIONS_V1 = {"memagent": "aaaa1111", "infmem": "bbbb2222"}
REVISIONS_V2 = {"memagent": "cccc3333", "infmem": "bbbb2222"}


def run(cmd: list[str], cwd: Path) -> str:
    done = subprocess.run(cmd, cwd=cwd, text=True, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _write_run(project: Path, scores: dict, revisions: dict[str, str]) -> None:
    """The scored files under ``staged/runs`` (the stage copies them to ``runs``),
    models.lock and reports/metrics.json of one run."""
    for (agent, method), values in scores.items():
        rows = [{"example_id": f"ex{i}", "dataset": "json", "task": "lookup", "length": 8192,
                 "agent": agent, "method": method, "model": f"{agent}-model",
                 "model_revision": revisions[agent], "reference": '"x"', "score": float(v)}
                for i, v in enumerate(values)]
        write_scores(pd.DataFrame(rows), project / "staged" / "runs" / agent / method
                     / "scores.parquet")
    (project / "models.lock").write_text("".join(
        f"{a}:\n  model: {a}-model\n  model_id: {a}-model\n  revision: {r}\n  source: local\n"
        for a, r in revisions.items()))
    (project / "reports").mkdir(exist_ok=True)
    (project / "reports" / "metrics.json").write_text(json.dumps(
        {"overall": {f"{a}/{m}": sum(v) / len(v) for (a, m), v in scores.items()}}))


@pytest.fixture(scope="module")
def project_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git + DVC project whose one stage copies ``staged/runs`` to ``runs`` (a DVC
    output, so dvc.lock records it and ``dvc push`` uploads it), made once."""
    root = tmp_path_factory.mktemp("history") / "project"
    root.mkdir()
    run(["git", "init", "-q", "-b", "main"], root)
    run(["git", "config", "user.name", "Test"], root)
    run(["git", "config", "user.email", "test@example.org"], root)
    run([DVC, "init", "-q"], root)
    params = root / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())
    config.set_values(params, {"evaluate.agents": ["memagent", "infmem"],
                               "evaluate.methods": METHODS})
    (root / "dvc.yaml").write_text("stages:\n  scores:\n    cmd: cp -r staged/runs runs\n"
                                   "    deps: [staged]\n    outs: [runs]\n")
    _write_run(root, SCORES_V1, REVISIONS_V1)
    run(["git", "add", "."], root)
    run(["git", "commit", "-q", "-m", "project"], root)
    return root


@pytest.fixture
def project(project_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of :func:`project_template` (its git repository and DVC setup
    included) for this test alone."""
    root = tmp_path / "project"
    shutil.copytree(project_template, root, symlinks=True)
    return root


def _repro(project: Path, scores: dict, revisions: dict[str, str]) -> None:
    _write_run(project, scores, revisions)
    run([DVC, "repro", "-q"], project)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = cli.main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


CHECKOUT_STATE = (["rev-parse", "HEAD"], ["branch", "--show-current"], ["status", "--porcelain"],
                  ["diff", "--cached"], ["stash", "list"])


def _record_two(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for scores, revisions in ((SCORES_V1, REVISIONS_V1), (SCORES_V2, REVISIONS_V2)):
        _repro(project, scores, revisions)
        before = [run(["git", *args], project) for args in CHECKOUT_STATE]
        status, out, err = _cli(capsys, "history", "record", "--project", str(project),
                                "--no-push")
        assert status == 0, err
        assert out.startswith("recorded version"), out
        # the user's checkout is untouched: same HEAD, branch, index and working tree
        assert [run(["git", *args], project) for args in CHECKOUT_STATE] == before


def test_history_lists_every_version_with_its_revisions_and_scores(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _record_two(project, capsys)
    assert run(["git", "branch", "--show-current"], project).strip() == "main"
    assert run(["git", "rev-list", "--count", "results"], project).strip() == "2"

    status, out, err = _cli(capsys, "history", "--project", str(project), "--format", "json")
    assert status == 0, err
    rows = json.loads(out)
    got = {(r["version"], r["agent"], r["method"]): (r["revision"], r["score"], r["n"])
           for r in rows}
    expected = {}
    for number, scores, revisions in ((1, SCORES_V1, REVISIONS_V1),
                                      (2, SCORES_V2, REVISIONS_V2)):
        for (agent, method), values in scores.items():
            expected[(number, agent, method)] = (revisions[agent],
                                                 100 * sum(values) / len(values), len(values))
    assert got == expected
    # memagent/flat: 75% at aaaa1111, then 100% at cccc3333
    assert got[(1, "memagent", "flat")] == ("aaaa1111", 75.0, 4)
    assert got[(2, "memagent", "flat")] == ("cccc3333", 100.0, 4)

    status, out, _ = _cli(capsys, "history", "--project", str(project), "--agent", "infmem",
                          "--method", "flat", "--format", "csv")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "version,commit,recorded,agent,method,model,revision,score,n"
    assert [line.split(",")[0] for line in lines[1:]] == ["1", "2"]
    assert all(line.split(",")[6:] == ["bbbb2222", "50.0", "4"] for line in lines[1:])

    status, out, _ = _cli(capsys, "history", "--project", str(project))
    assert status == 0
    assert len(out.splitlines()) == 1 + 8 and "cccc3333" in out

    # a fresh clone has only origin/results: it lists the same versions, offline
    clone = project.parent / "clone"
    run(["git", "clone", "-q", str(project), str(clone)], project.parent)
    assert run(["git", "branch", "--list", "results"], clone) == ""
    status, out, _ = _cli(capsys, "history", "--project", str(clone), "--format", "json")
    assert status == 0 and json.loads(out) == rows

    # the DuckDB view has the same rows
    con = db.connect(root=project)
    view = con.execute("SELECT version, agent, method, revision, score, n FROM history").fetchall()
    assert {(v, a, m): (r, s, n) for v, a, m, r, s, n in view} == expected
    assert con.execute("SELECT count(*) FROM history_versions").fetchone()[0] == 32


def test_recording_the_same_run_again_adds_no_version(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _repro(project, SCORES_V1, REVISIONS_V1)
    assert _cli(capsys, "history", "record", "--project", str(project), "--no-push")[0] == 0
    status, out, _ = _cli(capsys, "history", "record", "--project", str(project), "--no-push")
    assert status == 0 and out.startswith("unchanged: version 1")
    assert run(["git", "rev-list", "--count", "results"], project).strip() == "1"


def test_no_version_yet_is_one_line_and_success(project: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _cli(capsys, "history", "--project", str(project))
    assert status == 0 and err == ""
    assert len(out.splitlines()) == 1 and "no recorded result version" in out


def test_bad_input_is_one_line_and_exit_2(project: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    status, out, err = _cli(capsys, "history", "--project", str(plain))
    assert (status, out) == (2, "") and len(err.splitlines()) == 1
    assert "not a git repository" in err
    # a project before its first run (no dvc.lock, no scored files) records nothing
    status, _, err = _cli(capsys, "history", "record", "--project", str(project), "--no-push")
    assert status == 2 and len(err.splitlines()) == 1 and "missing" in err
    assert run(["git", "branch", "--list", "results"], project) == ""
    _record_two(project, capsys)
    status, _, err = _cli(capsys, "history", "--project", str(project), "--agent", "nobody")
    assert status == 2 and len(err.splitlines()) == 1 and "--agent nobody" in err


def test_record_pushes_the_outputs_to_the_local_remote(
        project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    run([DVC, "remote", "add", "-d", "--local", "store", str(store)], project)
    _repro(project, SCORES_V1, REVISIONS_V1)
    status, out, err = _cli(capsys, "history", "record", "--project", str(project))
    assert status == 0, err
    assert "pushed" in out and "'store'" in out
    import yaml

    lock = yaml.safe_load((project / "dvc.lock").read_text())
    (out_entry,) = lock["stages"]["scores"]["outs"]
    md5 = out_entry["md5"]  # runs is a folder: <hash>.dir, and each file below it
    assert (store / "files" / "md5" / md5[:2] / md5[2:]).is_file()
    listing = json.loads((store / "files" / "md5" / md5[:2] / md5[2:]).read_text())
    assert len(listing) == 4  # the four scored files
    for entry in listing:
        assert (store / "files" / "md5" / entry["md5"][:2] / entry["md5"][2:]).is_file()
    # the recorded version's dvc.lock is the one whose outputs were pushed
    recorded = run(["git", "show", "results:dvc.lock"], project)
    assert recorded == (project / "dvc.lock").read_text()


def test_no_remote_is_one_line_not_an_error(project: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _repro(project, SCORES_V1, REVISIONS_V1)
    status, out, err = _cli(capsys, "history", "record", "--project", str(project))
    assert status == 0 and err == ""
    assert out.splitlines()[1].startswith("no DVC remote configured: nothing pushed")


def test_unreachable_remote_is_one_line_and_nonzero(
        project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the remote's folder would be\n")
    run([DVC, "remote", "add", "-d", "--local", "broken", str(blocker / "store")], project)
    monkeypatch.setenv("TREEAGENT_TEST_SECRET_TOKEN", "blocker")  # a "secret" in the path
    _repro(project, SCORES_V1, REVISIONS_V1)
    status, out, err = _cli(capsys, "history", "record", "--project", str(project))
    assert status == 1
    assert out.startswith("recorded version 1")  # the version is kept; only the push failed
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: dvc push to remote 'broken' failed")
    assert "Traceback" not in err and "blocker" not in err


def test_masked_hides_url_credentials_and_secret_variables() -> None:
    text = "ERROR: failed to push to https://alice:hunter22@example.org/x (key AKIA12345)"
    out = masked(text, {"AWS_ACCESS_KEY_ID": "AKIA12345", "HOME": "/home/alice"})
    assert "hunter22" not in out and "AKIA12345" not in out
    assert out == "ERROR: failed to push to https://***@example.org/x (key ***)"


def _frame(agent: str, method: str, revision: str, scores: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"dataset": "json", "example_id": k, "agent": agent,
                          "method": method, "model_revision": revision, "score": v}
                         for k, v in scores.items()])


def test_change_delta_and_paired_interval_by_hand() -> None:
    previous = pd.concat([
        _frame("memagent", "flat", "r1", {"a": 0.0, "b": 0.0}),
        _frame("memagent", "treeagent", "r1", {"a": 0.5, "b": 0.5, "c": 0.5}),
        _frame("infmem", "flat", "s1", {"a": 1.0, "b": 0.0})])
    current = pd.concat([
        _frame("memagent", "flat", "r2", {"a": 0.0, "b": 1.0}),
        _frame("memagent", "treeagent", "r2", {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0}),
        _frame("infmem", "flat", "s1", {"a": 1.0, "b": 0.0})])  # unchanged: not listed
    found = {(c.agent, c.method): c for c in changes.changes(previous, current, seed=7)}
    assert set(found) == {("memagent", "flat"), ("memagent", "treeagent")}

    flat = found[("memagent", "flat")]
    # differences 0 and 100 points: mean 50; a bootstrap mean of two pairs is 0, 50 or
    # 100 with probabilities 1/4, 1/2, 1/4, so its 2.5% and 97.5% quantiles are 0 and 100
    assert (flat.old_revision, flat.new_revision) == ("r1", "r2")
    assert (flat.old_score, flat.new_score, flat.delta, flat.n) == (0.0, 50.0, 50.0, 2)
    assert (flat.lo, flat.hi) == (0.0, 100.0)

    tree = found[("memagent", "treeagent")]
    # paired on a, b, c only (d is new): every difference is +50 points, so the interval
    # has zero width; the new score is the mean over its own four examples
    assert (tree.delta, tree.lo, tree.hi, tree.n) == (50.0, 50.0, 50.0, 3)
    assert (tree.old_score, tree.new_score) == (50.0, 75.0)


def test_paired_interval_matches_the_normal_approximation_on_many_examples() -> None:
    rng = np.random.default_rng(3)
    old = rng.uniform(size=400)
    new = np.clip(old + rng.normal(0.05, 0.1, size=400), 0, 1)
    ids = {f"e{i}": v for i, v in enumerate(old)}
    found = changes.changes(_frame("m", "flat", "r1", ids),
                            _frame("m", "flat", "r2", dict(zip(ids, new))), seed=1)
    (c,) = found
    d = 100 * (new - old)
    half = 1.959964 * d.std(ddof=1) / math.sqrt(len(d))
    assert c.delta == pytest.approx(d.mean())
    assert c.lo == pytest.approx(d.mean() - half, abs=0.1 * half)
    assert c.hi == pytest.approx(d.mean() + half, abs=0.1 * half)


def test_report_shows_the_change_against_the_previous_version(
        project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from treeagent.report.render import build_report

    monkeypatch.chdir(project)
    files = [str(p) for p in versions.grid_score_files(project, config.load("params.yaml"))]
    _repro(project, SCORES_V1, REVISIONS_V1)
    build_report(db.load_scores(files), tmp_path / "r0")
    first = (tmp_path / "r0" / "report.md").read_text()
    assert "## Change against the previous version\n\nNo previous result version" in first

    assert _cli(capsys, "history", "record", "--no-push")[0] == 0
    _repro(project, SCORES_V2, REVISIONS_V2)
    for out in ("r1", "r2"):  # before and after recording version 2: the same comparison
        build_report(db.load_scores(files), tmp_path / out)
        if out == "r1":
            assert _cli(capsys, "history", "record", "--no-push")[0] == 0
    text = (tmp_path / "r1" / "report.md").read_text()
    assert text == (tmp_path / "r2" / "report.md").read_text()
    section = text.split("## Change against the previous version")[1].split("\n## ")[0]
    assert "Against version 1 (" in section
    rows = [line for line in section.splitlines() if line.startswith("| MemAgent")]
    # memagent/flat [1,0,1,1] -> [1,1,1,1]: 75 -> 100, delta +25 on 4 pairs;
    # memagent/treeagent [1,1,0,0] -> [0,1,0,0]: 50 -> 25, delta -25; infmem unchanged
    assert len(rows) == 2 and not any("InfMem" in line for line in section.splitlines())
    flat = next(r for r in rows if "| Flat |" in r)
    assert "aaaa1111 → cccc3333" in flat and "75.00 → 100.00" in flat
    assert "| 25.00 |" in flat and flat.endswith("| 4† |")
    html = (tmp_path / "r1" / "index.html").read_text()
    assert 'id="change"' in html


def test_a_project_outside_git_keeps_no_version(tmp_path: Path) -> None:
    with pytest.raises(versions.NotARepository):
        versions.record(tmp_path)
    assert history.create_history(__import__("duckdb").connect(), tmp_path) == []
    assert not os.path.exists(tmp_path / ".git")


def test_the_scheduled_flow_records_its_run(project: Path, tmp_path: Path,
                                            prefect_api: str) -> None:
    """flows/record.py (the deployment's entrypoint): ``dvc repro``, then the version of
    the run it produced (its dvc.lock)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), DO_NOT_TRACK="1",
               PREFECT_API_URL=prefect_api,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    done = subprocess.run([sys.executable, str(ROOT / "flows" / "record.py"), "--project",
                           str(project), "--no-push"], cwd=project, env=env, text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "recorded version 1" in done.stdout + done.stderr
    assert (project / "runs" / "memagent" / "flat" / "scores.parquet").is_file()  # repro ran
    assert run(["git", "rev-list", "--count", "results"], project).strip() == "1"
    assert run(["git", "show", "results:dvc.lock"], project) == (project / "dvc.lock").read_text()


@st.composite
def _paired_versions(draw):
    ids = draw(st.lists(st.sampled_from([f"e{i}" for i in range(12)]), min_size=1,
                        max_size=12, unique=True))
    unit = st.sampled_from([0.0, 0.25, 0.5, 1.0])
    old = {k: draw(unit) for k in ids}
    new = {k: draw(unit) for k in ids if draw(st.booleans()) or k == ids[0]}
    return old, new


@settings(max_examples=60, deadline=None)
@given(_paired_versions())
def test_change_properties(pair) -> None:
    old, new = pair
    a, b = _frame("m", "flat", "r1", old), _frame("m", "flat", "r2", new)
    (fwd,) = changes.changes(a, b, seed=5, resamples=400)
    shared = [k for k in new if k in old]
    assert fwd.n == len(shared)
    assert fwd.delta == pytest.approx(100 * sum(new[k] - old[k] for k in shared) / len(shared))
    assert fwd.new_score == pytest.approx(100 * sum(new.values()) / len(new))
    if fwd.n >= 2:  # an interval of the paired means, inside the range of the differences
        diffs = [100 * (new[k] - old[k]) for k in shared]
        assert min(diffs) - 1e-9 <= fwd.lo <= fwd.hi <= max(diffs) + 1e-9
    else:
        assert math.isnan(fwd.lo) and math.isnan(fwd.hi)
    # the same version against itself: nothing changed; swapped: the delta negates and
    # the interval mirrors (the same resampled pairs)
    assert changes.changes(b, b.assign(model_revision="r2"), seed=5) == []
    if len(new) == len(shared):
        (back,) = changes.changes(b.assign(model_revision="r1"),
                                  a[a["example_id"].isin(list(new))].assign(model_revision="r2"),
                                  seed=5, resamples=400)
        assert back.delta == pytest.approx(-fwd.delta, abs=1e-9)
        if fwd.n >= 2:
            assert (back.lo, back.hi) == (pytest.approx(-fwd.hi, abs=1e-9),
                                          pytest.approx(-fwd.lo, abs=1e-9))
