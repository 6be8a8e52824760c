"""LeRobotDatasets on the Hugging Face Hub: a dataset id resolved to a local folder
(downloaded into the Hugging Face cache), and a written dataset pushed and tagged with its
codebase version, through ``huggingface_hub``; one-line errors offline or without access."""

from __future__ import annotations

import os
from pathlib import Path

from robot_rl.data.lerobot_format import CODEBASE_VERSION, EXTRA, LeRobotFormatError


def _hub():
    try:
        import huggingface_hub
    except ImportError as err:
        raise LeRobotFormatError(f"the Hugging Face Hub needs huggingface_hub: {EXTRA}") from err
    return huggingface_hub


def looks_like_repo_id(text: str) -> bool:
    parts = str(text).split("/")
    return len(parts) == 2 and all(parts) and not str(text).startswith((".", "~"))


def resolve_dataset(repo_or_dir: str, revision: str | None = None) -> Path:
    """A local folder as it is (it wins over a Hub repository of the same name), else the Hub
    dataset ``user/name`` downloaded into the Hugging Face cache (``snapshot_download``)."""
    path = Path(repo_or_dir).expanduser()
    if path.exists() or not looks_like_repo_id(repo_or_dir):
        if not path.is_dir():
            raise LeRobotFormatError(f"no LeRobotDataset folder at {path}")
        return path
    hub = _hub()
    try:
        local = hub.snapshot_download(repo_or_dir, repo_type="dataset", revision=revision)
    except Exception as err:  # offline, unknown repository, no access: one line
        raise LeRobotFormatError(
            f"cannot download the Hub dataset {repo_or_dir}: {type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}"
        ) from err
    return Path(local)


def push_dataset(root: str | os.PathLike, repo_id: str, *, private: bool = False) -> str:
    """Upload a written dataset to the Hub dataset ``repo_id`` and tag it with the codebase
    version (LeRobot's loader picks the revision by that tag). Returns the repository's URL."""
    if not looks_like_repo_id(repo_id):
        raise LeRobotFormatError(f"--push wants a Hub dataset id user/name, got {repo_id!r}")
    hub = _hub()
    api = hub.HfApi()
    try:
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(repo_id=repo_id, folder_path=str(root), repo_type="dataset")
        api.create_tag(repo_id, tag=CODEBASE_VERSION, repo_type="dataset", exist_ok=True)
    except Exception as err:
        raise LeRobotFormatError(
            f"cannot push to the Hub dataset {repo_id}: {type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}"
        ) from err
    return str(url)
