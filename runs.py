"""A run's life on disk: its folder under TOOLOOP_RUNS, and landing the chosen attempt's changes.

Each run gets a folder of its own (`folder()`), holding one copy of the workspace per attempt
(changes.copy). At the end `land()` applies the chosen attempt's change set to the workspace.

Left out on purpose: keeping runs' folders forever (only the KEEP_RUNS newest stay).
"""

import re
import shutil
import tempfile
import time
from pathlib import Path

import changes
from tools import Settings


def land(workspace: Path, source: Path, settings: Settings, code: int, check: str | None,
         folder: Path) -> tuple[list, list[str], str]:
    """Apply the run's change set to the user's workspace, if it may land: without a check, the one
    attempt's, unless the run was interrupted (or crashed: the code is still 130); with one, only
    the passing attempt's, as its check saw it. Returns (changes applied, why others were not, a
    line that says where the attempts' files are)."""
    if not any(folder.iterdir()):  # the run ended before its first attempt began
        folder.rmdir()
        return [], [], "no attempt began: the workspace is as it was"
    if code == 130 or (check and code != 0) or not source.is_dir():
        what = "the run was interrupted" if code == 130 else "no attempt passed the check" if check else "the run failed"
        return [], [], f"{what}: the workspace is as it was; the attempts' files are in {folder}"
    try:
        landed, refused = changes.apply(changes.diff(workspace, source), source, workspace,
                                        {str(path.relative_to(workspace)) for path in settings.named})
    except OSError as error:
        return [], [f"error: cannot apply the changes ({error})"], f"the run's files are in {source}"
    chosen = f"{source.name.removesuffix('.check').replace('-', ' ')} passed the check; " if check else ""
    return landed, refused, f"{chosen}the run's files are kept in {folder}"


KEEP_RUNS = 20  # the newest runs' folders kept under TOOLOOP_RUNS
RUN_NAME = re.compile(r"\d{8}-\d{6}-\w{8}")  # what runs_folder names them: the time the run began


def folder(runs: Path) -> Path:
    """A new folder for this run's attempts, under `runs` (TOOLOOP_RUNS, default ~/.cache/tooloop/runs).
    Each holds whole copies of a workspace, so only the KEEP_RUNS newest stay: older runs' folders
    go as a run begins. Nothing else in `runs` is touched."""
    runs.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=runs))
    kept = sorted(path for path in runs.iterdir() if RUN_NAME.fullmatch(path.name) and not path.is_symlink())
    for old in kept[:-KEEP_RUNS]:
        shutil.rmtree(old, ignore_errors=True)
    return folder
