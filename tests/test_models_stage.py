"""DVC reruns exactly the stages of a changed model (docs/pipeline.md, "Rerun when a model
changes"): a project in a temporary folder holds this repository's ``models`` stage and
its evaluate stage's matrix and ``params`` (read from ``dvc.yaml``), the evaluate command
replaced by a stub that logs which stage ran. Two agents read two copies of SmolLM2's
weights; an unchanged model reruns nothing, weights altered in place rerun only their
agent's stages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import installed_or_skip
from treeagent.llm.models import SMOLLM2_GGUF, resolve_model
from treeagent.pipeline import config

installed_or_skip("dvc")

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
STUB = "import sys; open('ran.log', 'a').write(sys.argv[1] + '-' + sys.argv[2] + '\\n')\n"


def _run(cwd: Path, env: dict[str, str], *cmd: str) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, text=True, timeout=300,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}"
    return proc.stdout


def _project(tmp: Path) -> Path:
    repo = tmp / "project"
    (repo / "flows").mkdir(parents=True)
    for name in ("_common.py", "models.py"):
        shutil.copyfile(ROOT / "flows" / name, repo / "flows" / name)
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    models = {k: v for k, v in stages["models"].items() if k != "deps"}
    models["deps"] = ["flows/models.py"]
    evaluate = {"matrix": stages["evaluate"]["matrix"], "params": stages["evaluate"]["params"],
                "cmd": "python stub.py ${item.agent} ${item.method}"}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"models": models,
                                                               "evaluate": evaluate}}))
    (repo / "stub.py").write_text(STUB)
    data = config.preset("demo")
    data["evaluate"]["agents"] = ["memagent", "infmem"]
    data["evaluate"]["methods"] = ["flat", "treeagent"]
    source = resolve_model("smollm2")
    for agent in ("memagent", "infmem"):
        folder = tmp / f"weights-{agent}"
        folder.mkdir()
        shutil.copyfile(source.folder / SMOLLM2_GGUF, folder / SMOLLM2_GGUF)
        data["agents"][agent]["model"] = str(folder)
    (repo / "params.yaml").write_text(yaml.safe_dump(data))
    return repo


def _alter_in_place(path: Path) -> None:
    st = path.stat()
    with path.open("r+b") as f:
        f.seek(st.st_size // 3)
        f.write(b"\x00" * 32)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _ran(repo: Path) -> list[str]:
    log = repo / "ran.log"
    out = sorted(log.read_text().split()) if log.exists() else []
    log.unlink(missing_ok=True)
    return out


def test_a_changed_model_reruns_only_its_agents_stages(tmp_path):
    repo = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "TREEAGENT_"))}
    env.update({"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "DVC_NO_ANALYTICS": "1",
                "TREEAGENT_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"})
    _run(repo, env, "git", "init", "-q")
    _run(repo, env, "dvc", "init", "-q")
    _run(repo, env, "dvc", "repro", "-q")
    assert _ran(repo) == ["infmem-flat", "infmem-treeagent", "memagent-flat",
                          "memagent-treeagent"]
    lock = (repo / "models.lock").read_bytes()

    _run(repo, env, "dvc", "repro", "-q")  # same weights: the lock is rewritten, same bytes
    assert _ran(repo) == [] and (repo / "models.lock").read_bytes() == lock
    status = _run(repo, env, "dvc", "status")
    assert "evaluate@" not in status and "models" in status  # only "always changed"

    _alter_in_place(tmp_path / "weights-infmem" / SMOLLM2_GGUF)
    _run(repo, env, "dvc", "repro", "-q")
    assert _ran(repo) == ["infmem-flat", "infmem-treeagent"]
    after = yaml.safe_load((repo / "models.lock").read_text())
    before = yaml.safe_load(lock)
    assert after["memagent"] == before["memagent"]
    assert after["infmem"]["revision"] != before["infmem"]["revision"]
