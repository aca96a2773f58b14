"""The configuration idiom: dataclass defaults < YAML file < KEY=VALUE overrides, validated, with clear errors."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from agentic_infer.config import build_config, config_to_dict, parse_overrides, renamed
from agentic_infer.errors import ConfigError
from agentic_infer.types import SamplingParams


@dataclass(frozen=True)
class DemoConfig:
    max_searches: int = 10
    dialect: str = "search_o1"
    stops: tuple[str, ...] = ()
    sampling: SamplingParams = field(default_factory=SamplingParams)
    rid_sampling: SamplingParams | None = None

    def __post_init__(self) -> None:
        if self.max_searches < 0:
            raise ConfigError(f"DemoConfig.max_searches={self.max_searches}: must be >= 0")


def test_layers_and_nested_dataclasses(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("max_searches: 3\nsampling:\n  temperature: 0.2\n  max_tokens: 64\nstops: [a, b]\n")
    cfg = build_config(DemoConfig, file=f, overrides=["max_searches=5", "sampling.top_p=0.5",
                                                      "rid_sampling={max_tokens: 32}"])
    assert cfg.max_searches == 5 and cfg.stops == ("a", "b")  # the override beats the file
    assert cfg.sampling == SamplingParams(temperature=0.2, max_tokens=64, top_p=0.5)  # file and override merge
    assert cfg.rid_sampling == SamplingParams(max_tokens=32)
    assert build_config(DemoConfig, base=cfg, overrides={"dialect": "search_r1"}).sampling.top_p == 0.5
    assert config_to_dict(cfg)["sampling"]["temperature"] == 0.2 and config_to_dict(cfg)["stops"] == ["a", "b"]
    assert build_config(DemoConfig) == DemoConfig()


def test_a_plain_string_for_a_tuple_of_strings_is_its_comma_separated_items():
    assert build_config(DemoConfig, overrides=["stops=grpo"]).stops == ("grpo",)  # not ("g", "r", "p", "o")
    assert build_config(DemoConfig, overrides=["stops=a, b,"]).stops == ("a", "b")
    assert build_config(DemoConfig, overrides=['stops=[",", ";"]']).stops == (",", ";")  # a YAML list is taken as is


def test_errors_name_the_key_the_source_and_the_fix(tmp_path):
    with pytest.raises(ConfigError, match=r"--set: unknown setting 'max_search' for DemoConfig; it takes max_searches"):
        build_config(DemoConfig, overrides=["max_search=3"])
    with pytest.raises(ConfigError, match=r"unknown setting 'sampling.temp'.*sampling.temperature"):
        build_config(DemoConfig, overrides=["sampling.temp=0"])
    f = tmp_path / "bad.yaml"
    f.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="holds a list; expected a mapping"):
        build_config(DemoConfig, file=f)
    with pytest.raises(ConfigError, match="no such file"):
        build_config(DemoConfig, file=tmp_path / "none.yaml")
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_overrides(["max_searches"])
    with pytest.raises(ConfigError, match="max_searches=-1: must be >= 0"):  # the dataclass validates values
        build_config(DemoConfig, overrides=["max_searches=-1"])
    with pytest.raises(ConfigError, match="SamplingParams.temperature=-1"):
        build_config(DemoConfig, overrides=["sampling.temperature=-1"])


def test_wrong_base_class_and_source_name():
    @dataclass(frozen=True)
    class Other:
        x: int = 1

    with pytest.raises(ConfigError, match="a Other was given where DemoConfig is expected"):
        build_config(DemoConfig, base=Other())
    with pytest.raises(ConfigError, match="keyword arguments: unknown setting 'y'"):
        build_config(DemoConfig, overrides={"y": 1}, source="keyword arguments")


def test_a_partial_nested_override_keeps_the_nested_default():
    @dataclass(frozen=True)
    class Engine:
        sampling: SamplingParams = SamplingParams(max_tokens=2048, temperature=0.7, top_p=0.8)

    cfg = build_config(Engine, overrides=["sampling.temperature=0.2"])
    assert cfg.sampling == SamplingParams(max_tokens=2048, temperature=0.2, top_p=0.8)


@renamed(depth=("k", "documents per search"), temp="sampling.temperature")
@dataclass(frozen=True)
class Tool:
    k: int = 3
    sampling: SamplingParams = SamplingParams()


@dataclass(frozen=True)
class Outer:
    tool: Tool = Tool()


def test_a_renamed_setting_names_the_new_key_wherever_it_is_given(tmp_path):
    (tmp_path / "c.yaml").write_text("tool:\n  depth: 2\n")
    for make in (lambda: Tool(depth=2), lambda: build_config(Tool, overrides=["depth=2"])):
        with pytest.raises(ConfigError, match="'depth' is renamed 'k' \\(documents per search\\): set k=VALUE"):
            make()
    with pytest.raises(ConfigError, match="--config .*'tool.depth' is renamed 'tool.k'"):  # nested, from a file
        build_config(Outer, file=tmp_path / "c.yaml")
    with pytest.raises(ConfigError, match="'tool.temp' is renamed 'tool.sampling.temperature'") as e:
        build_config(Outer, overrides=["tool.temp=0.1"])
    assert "is now only" not in str(e.value)  # no sampling field of that name to point at
    assert build_config(Outer, overrides=["tool.k=2"]).tool.k == 2 and Tool(k=4).k == 4


def test_yaml_1_1_exponent_without_a_dot_is_still_a_float():
    """PyYAML reads `5e-5` as a string (YAML 1.1 needs a dot); a float setting takes the number it means."""
    @dataclass
    class Opt:
        lr: float = 1.0
        floor: float | None = None
        name: str = "x"

    opt = build_config(Opt, overrides=["lr=5e-5", "floor=1e-3", "name=2e-1"])
    assert opt.lr == 5e-5 and opt.floor == 1e-3 and opt.name == "2e-1"
