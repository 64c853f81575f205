"""The test tiers themselves: a missing shared data folder skips a test on a developer's
machine and fails it under CI=true."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import DATA_DIR, require_data


def test_missing_data_skips_outside_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="shared data folder"):
        require_data(tmp_path / "absent")


@pytest.mark.parametrize("ci", ["true", "TRUE", "1"])
def test_missing_data_fails_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="CI=true needs it"):
        require_data(tmp_path / "absent")


def test_present_data_is_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert require_data(tmp_path) == tmp_path
    assert DATA_DIR.name == "data" and DATA_DIR.parent.name == "shared"
