"""One configuration idiom: a validated dataclass per engine, a YAML file as an overlay, CLI overrides on top.

    cfg = build_config(SearchO1Config, file="search.yaml", overrides=["max_searches=5", "sampling.temperature=0.2"])

Precedence: the dataclass defaults < `base` (an existing config) < the YAML file < `overrides`. Overrides
are `KEY=VALUE` strings (VALUE read as a YAML scalar or flow collection: `5`, `0.2`, `true`, `[a, b]`,
`{max_tokens: 64}`) or a mapping; dotted keys reach into nested dataclasses (`sampling.temperature`).
A nested dataclass field (e.g. `SamplingParams`) takes a mapping. Unknown keys fail with the key, where
it came from and the keys the config accepts; the dataclass's own `__post_init__` validates values.
`config_to_dict(cfg)` gives the plain mapping back (what a run records, what `--show-config` prints).
A setting renamed in a release stays a clear error for one release: `@renamed(top_k=("k", "documents per
search"))` over the dataclass makes the old key, as a keyword or as a `--set`/YAML key, a ConfigError naming
the new one.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agentic_infer.errors import ConfigError

T = TypeVar("T")


def renamed(**moves: str | tuple[str, str]) -> Callable[[type[T]], type[T]]:
    """Class decorator (above `@dataclass`): `old=new` or `old=(new, what it is)` for each renamed setting."""
    def wrap(cls: type[T]) -> type[T]:
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            for key in kwargs:
                _refuse_renamed(cls, key, "keyword arguments")
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[method-assign]
        cls.__renamed__ = {old: (m, "") if isinstance(m, str) else m for old, m in moves.items()}  # type: ignore[attr-defined]
        return cls

    return wrap


def _refuse_renamed(cls: type, key: str, where: str, prefix: str = "") -> None:
    """A ConfigError when `key` is a renamed setting of `cls` (see `renamed`); else nothing."""
    move = getattr(cls, "__renamed__", {}).get(key)
    if move is None:
        return
    new, what = move
    msg = (f"{where}: {cls.__name__} setting {prefix + key!r} is renamed {prefix + new!r}"
           f"{f' ({what})' if what else ''}: set {prefix + new}=VALUE instead")
    hints = typing.get_type_hints(cls)
    nested = [repr(f"{prefix}{f.name}.{key}") for f in dataclasses.fields(cls)  # the old name in a section
              if (sub := _dataclass_type(hints.get(f.name))) is not None
              and key in {g.name for g in dataclasses.fields(sub)} and new != f"{f.name}.{key}"]
    if nested:
        msg += f"; {prefix + key!r} is now only {' or '.join(nested)}"
    raise ConfigError(msg)


def parse_overrides(items: Sequence[str] | Mapping[str, Any]) -> dict[str, Any]:
    """`["a=1", "b.c=x"]` -> `{"a": 1, "b": {"c": "x"}}` (values parsed as YAML)."""
    import yaml

    flat: dict[str, Any] = {}
    if isinstance(items, Mapping):
        flat = dict(items)
    else:
        for item in items:
            key, sep, value = str(item).partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--set {item!r}: expected KEY=VALUE (e.g. max_searches=5 or sampling.temperature=0.2)")
            try:
                flat[key.strip()] = yaml.safe_load(value) if value.strip() else ""
            except yaml.YAMLError:
                flat[key.strip()] = value
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, last = key.split(".")
        node = nested
        for p in parents:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {key}=...: {p!r} is set to a value and also used as a section")
        node[last] = value
    return nested


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML mapping from `path` (clear errors for a missing file, bad YAML, or a non-mapping)."""
    import yaml

    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"--config {str(p)!r}: no such file; write a YAML mapping of the engine's settings")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"--config {str(p)!r}: not valid YAML ({e})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config {str(p)!r}: holds a {type(data).__name__}; expected a mapping of settings")
    return data


def build_config(cls: type[T], *, file: str | Path | None = None, overrides: Sequence[str] | Mapping[str, Any] = (),
                 base: T | None = None, source: str = "--set") -> T:
    """`cls` built from its defaults, `base`, the YAML `file` and `overrides` (see module docstring);
    `source` names where the overrides came from in error messages ("--set", "--opt", "keyword arguments")."""
    if base is not None and not isinstance(base, cls):
        raise ConfigError(f"{source}: a {type(base).__name__} was given where {cls.__name__} is expected; "
                          f"pass a {cls.__name__} (or plain settings)")
    values = config_to_dict(base) if base is not None else _defaults(cls)
    layers = [(read_config_file(file), f"--config {file}")] if file is not None else []
    layers.append((parse_overrides(overrides), source))
    for layer, where in layers:
        values = merge_settings(values, layer)
        _check_keys(cls, layer, where)
    return _build(cls, values, cls.__name__)


def config_to_dict(cfg: Any) -> Any:
    """A config dataclass as plain data (nested dataclasses as mappings, tuples as lists)."""
    def plain(v: Any) -> Any:
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, Mapping):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(cfg)


def _defaults(cls: type) -> dict[str, Any]:
    """The fields' own defaults as plain data, so that a partial nested override (`sampling.top_p`) keeps
    the rest of a nested default (e.g. an engine's default `SamplingParams`)."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = config_to_dict(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = config_to_dict(f.default_factory())
    return out


def merge_settings(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """`a` with `b` on top, nested mappings merged key by key."""
    out = dict(a)
    for k, v in b.items():
        out[k] = merge_settings(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def _dataclass_type(tp: Any) -> type | None:
    """The dataclass inside a field type (`X`, `X | None`, `Optional[X]`), else None."""
    if dataclasses.is_dataclass(tp):
        return tp
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        found = [a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)]
        return found[0] if len(found) == 1 else None
    return None


def _takes_float(tp: Any) -> bool:
    """The field is a float (`float`, `float | None`), not also a str."""
    args = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
    return float in args and str not in args


def _takes_str_tuple(tp: Any) -> bool:
    """The field is a tuple of strings (`tuple[str, ...]`), so a comma-separated string means its items."""
    return typing.get_origin(tp) is tuple and typing.get_args(tp)[:1] == (str,)


def _yaml_float(text: str) -> float | str:
    """A number YAML 1.1 reads as a string (`5e-5`: no dot) as the float it means; other text unchanged."""
    try:
        return float(text)
    except ValueError:
        return text


def _check_keys(cls: type, layer: Mapping[str, Any], where: str, prefix: str = "") -> None:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    for key, value in layer.items():
        _refuse_renamed(cls, key, where, prefix)
        if key not in names:
            raise ConfigError(f"{where}: unknown setting {prefix + key!r} for {cls.__name__}; "
                              f"it takes {', '.join(prefix + n for n in names)}")
        sub = _dataclass_type(hints.get(key))
        if sub is not None and isinstance(value, Mapping):
            _check_keys(sub, value, where, prefix + key + ".")


def _build(cls: type[T], values: Mapping[str, Any], where: str) -> T:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in values or not f.init:
            continue
        v = values[f.name]
        sub = _dataclass_type(hints.get(f.name))
        if sub is not None and isinstance(v, Mapping):
            v = _build(sub, v, f"{where}.{f.name}")
        elif isinstance(v, list) and typing.get_origin(hints.get(f.name)) is tuple:
            v = tuple(v)
        elif isinstance(v, str) and _takes_str_tuple(hints.get(f.name)):
            v = tuple(part.strip() for part in v.split(",") if part.strip())  # `--set estimators=grpo,gigpo`
        elif isinstance(v, str) and _takes_float(hints.get(f.name)):
            v = _yaml_float(v)
        kwargs[f.name] = v
    try:
        return cls(**kwargs)
    except TypeError as e:  # a wrong type deep inside a constructor
        raise ConfigError(f"{where}: {e}") from None
