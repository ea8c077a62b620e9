"""``python -m analysis.training --out`` on a path it cannot write: exit 2, one line, no files or folders left
behind."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from analysis.training.__main__ import main
from analysis.training.runner import prepare_out


def test_out_under_a_file_is_one_line_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = subprocess.run(
        [sys.executable, "-m", "analysis.training", "retrieval", "--quick", "--out", str(blocker / "a" / "b")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--out: cannot create" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_failed_probe_removes_the_folders_it_created(tmp_path, monkeypatch):
    def refuse(self, data):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "write_bytes", refuse)
    with pytest.raises(ValueError, match=r"^out: cannot write to .*Permission denied"):
        prepare_out(tmp_path / "new" / "deeper")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(SystemExit) as exc:
        main(["retrieval", "--quick", "--out", str(tmp_path / "x")])
    assert exc.value.code == 2 and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("out", ["/proc/self", "/proc/self/sub"], ids=["existing", "to-create"])
def test_a_folder_no_one_can_write_root_included(out):
    """/proc takes no new files or folders whatever the permission bits say, so the refusal holds for root too (as
    CI runs), unlike a chmod-ed folder."""
    with pytest.raises(ValueError, match=r"^out: cannot write to '/proc/self"):
        prepare_out(Path(out))
    assert not Path("/proc/self/sub").exists()


def test_writable_folder_is_created_and_left_empty(tmp_path):
    out = prepare_out(tmp_path / "a" / "b")
    assert out.is_dir() and list(out.iterdir()) == []
