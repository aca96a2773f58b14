"""The CLI's configuration idiom: an engine's settings from `--config FILE.yaml` and `--set KEY=VALUE`.

    agentic run search-o1 -q "..." --config search.yaml --set max_searches=3 --set sampling.temperature=0.2
    agentic run search-o1 --show-config > search.yaml        # the effective settings, as YAML

Each command keeps only the flags about *what* to run (questions, backend, corpus, output); everything
about *how* the engine runs is its config dataclass (`SearchO1Config`, `TIRConfig`, `DeepConfConfig`,
`LATSOptions`, `RAPOptions`), read through `agentic_infer.config.build_config`: dataclass defaults <
the command's own defaults < the YAML file < `--set`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from agentic_infer.config import build_config, config_to_dict
from agentic_infer.errors import ConfigError

T = TypeVar("T")

ConfigFile = Annotated[Optional[Path], typer.Option(  # noqa: UP007
    "--config", help="YAML file of the engine's settings (see --show-config for every key).")]
Set = Annotated[Optional[list[str]], typer.Option(  # noqa: UP007
    "--set", help="Override one setting: KEY=VALUE, dotted for nested ones (sampling.temperature=0.2); repeatable.")]
ShowConfig = Annotated[bool, typer.Option("--show-config", help="Print the effective settings as YAML and exit.")]


def show_settings(cfg: Any) -> None:
    """Print a config as YAML (what `--show-config` shows) and exit."""
    import yaml

    typer.echo(yaml.safe_dump(config_to_dict(cfg), sort_keys=False, allow_unicode=True), nl=False)
    raise typer.Exit(0)


def RemovedFlag(flag: str, use: str, *, multiple: bool = False) -> Any:  # noqa: N802 (a type alias factory)
    """A hidden option kept for one release so that its old spelling fails naming the new one (`use`)."""
    kind = Optional[list[str]] if multiple else Optional[str]  # noqa: UP007
    return Annotated[kind, typer.Option(flag, hidden=True, help=f"Removed: use {use}.")]


def removed_flags(given: Mapping[str, tuple[Any, str]]) -> None:
    """A ConfigError naming the new spelling for the first removed flag given (`{flag: (value, new spelling)}`)."""
    for flag, (value, use) in given.items():
        if value is not None and value != []:
            raise ConfigError(f"{flag} was removed: use {use} (documents per search are k, sampling top-k is "
                              "sampling.top_k; --show-config prints every engine setting)")


def engine_settings(cls: type[T], config_file: Path | None, sets: list[str] | None, *, show: bool = False,
                    defaults: Mapping[str, Any] | None = None) -> T:
    """`cls` from the command's `defaults`, the YAML file and `--set`; with `show`, print it as YAML and exit."""
    base = build_config(cls, overrides=dict(defaults)) if defaults else None
    cfg = build_config(cls, file=config_file, overrides=sets or [], base=base)
    if show:
        show_settings(cfg)
    return cfg
