"""Search trees as training data: a tree search's chosen path as per-step SFT rows, its sibling branches as scored
preference pairs in TRL's DPO format, token-exact per step.

    data = tree_data(read_rollouts("runs/lats"), scope="path", margin=0.0)
    write_tree_data("runs/lats-data", data)   # sft/trajectories.jsonl, pairs.jsonl, dropped.jsonl, stats.json
    agentic synth tree-data --in runs/lats --out runs/lats-data [--scope tree] [--margin 0.1] [--keep-incorrect]

Input: the Rollouts of a LATS or RAP (MCTS) run (`agentic eval run --engine lats|rap ...` writes them to
`rollouts.jsonl`): each holds the node table (id, parent, action, visits, value, reward, proposed_by) and every
recorded LLM call (prompt ids, sampled ids, logprobs; `engines/tree/engine.py`).

- **SFT**: one Trajectory per step of the chosen path: the prompt segment of the call that proposed the step's
  action and the model segment of the sample that wrote it, exactly the ids the model conditioned on and sampled.
  A path is not one sequence (each step was conditioned on its own prompt), so each step is its own row. Kept only
  when the search's answer was verified correct (`rewards["correct"] == 1`) unless `keep_incorrect`. These are
  ordinary Trajectory records: `agentic synth export --format tokenized` and `agentic train sft` read them as
  they read any demonstrations.
- **Pairs**: for each parent node (those on the chosen path; with `scope="tree"` every node with two or more
  scored children) the preferred child (scope path: the path's child; scope tree: the best-scored child) against
  each sibling scored lower by more than `margin`. A child's score is its backed-up mean value when the search
  visited it, else its own evaluation (`reward`). A row holds TRL's DPO columns `prompt`, `chosen`, `rejected`
  (text) and `prompt_ids`, `chosen_ids`, `rejected_ids` (the sampled ids; TRL's `DataCollatorForPreference`
  takes these), the node ids (`parent`, `chosen_node`, `rejected_node`), the two scores and visit counts, and
  `metadata["lineage"]`. `agentic train dpo --data pairs.jsonl` (`train.dpo`) trains on the ids columns as they
  are; TRL 1.16's own `DPOTrainer` would tokenize the text columns again (and append EOS).

Every dropped step or pair has a reason (`dropped.jsonl`; counted in `stats.json`): `path_incorrect`,
`path_unverified`, `no_path`, `not_token_exact` (a call without ids: the backend had no tokenizer),
`unscored`, `tie`, `sibling_scored_higher` (scope path: the search's own values disagree with its choice),
`below_margin`, `different_prompt` (the two samples were not conditioned on the same ids), `same_completion`.
Not covered: pairs across depths (a step against a sibling of another step), trees saved with `--save-tree`
(read the run's rollouts instead).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentic_infer.errors import ConfigError
from agentic_infer.runner import iter_jsonl, write_jsonl
from agentic_infer.types import Rollout, Segment, Trajectory

Scope = Literal["path", "tree"]
SCOPES = ("path", "tree")


@dataclass
class TreeData:
    sft: list[Trajectory] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def read_rollouts(path: str | Path) -> Iterator[Rollout]:
    """The Rollouts of a run directory (its `rollouts.jsonl`; the backend its `run.json` names goes into each
    rollout's metadata, for the rows' lineage) or of one JSONL file."""
    path = Path(path)
    file = path / "rollouts.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"--in {path}: no rollouts.jsonl there; pass the --out directory of `agentic eval run "
                          "--engine lats|rap` or a JSONL file of Rollouts")
    run = path / "run.json"
    backend = json.loads(run.read_text()).get("config", {}).get("backend") if path.is_dir() and run.is_file() else None
    for n, rec in iter_jsonl(file, "one Rollout a line"):
        if "trajectories" not in rec or "example_id" not in rec:
            raise ConfigError(f"{file}:{n}: not a Rollout record (keys {sorted(rec)[:8]}); tree data needs the "
                              "rollouts of a tree search")
        rollout = Rollout.from_dict(rec)
        if backend and not rollout.metadata.get("backend"):
            rollout.metadata["backend"] = backend
        yield rollout


def _samples(rollout: Rollout) -> dict[str, tuple[Segment, Segment, str | None]]:
    """(prompt segment, model segment, finish reason) of every recorded sample, by call id."""
    out: dict[str, tuple[Segment, Segment, str | None]] = {}
    for t in rollout.trajectories[1:]:
        if [s.kind for s in t.segments] == ["prompt", "model"]:
            out[t.id] = (t.segments[0], t.segments[1], t.finish_reason)
    if rollout.trajectories:
        segs = rollout.trajectories[0].segments
        for prompt, model in zip(segs, segs[1:]):
            if prompt.kind == "prompt" and model.kind == "model" and "call" in model.metadata:
                out[model.metadata["call"]] = (prompt, model, model.metadata.get("finish"))
    return out


def _score(node: dict[str, Any]) -> float | None:
    """A child's score: its backed-up mean value when visited, else its own evaluation (None: never scored)."""
    if node.get("visits"):
        return float(node["value"])
    return None if node.get("reward") is None else float(node["reward"])


def _lineage(rollout: Rollout, operator: str, node: int, parents: Sequence[str]) -> dict[str, Any]:
    return {"source": rollout.example_id, "engine": rollout.engine, "operator": operator, "node": node,
            "parents": list(parents), "backend": rollout.metadata.get("backend")}


def _tree(rollout: Rollout) -> dict[str, Any]:
    tree = rollout.metadata.get("tree")
    if not isinstance(tree, dict) or "nodes" not in tree:
        raise ConfigError(f"rollout {rollout.example_id} (engine {rollout.engine!r}) has no search tree in "
                          "metadata['tree']; tree data comes from `--engine lats` or `--engine rap` runs")
    return tree


def _path_nodes(tree: dict[str, Any], nodes: dict[int, dict[str, Any]]) -> list[int]:
    """Node ids from the root's child down to the chosen node ([] when the search chose none)."""
    out, nid = [], tree.get("node")
    while nid is not None and nodes[nid]["parent"] is not None:
        out.append(nid)
        nid = nodes[nid]["parent"]
    return out[::-1]


def _step_trajectory(rollout: Rollout, prompt: Segment, model: Segment, finish: str | None, *, node: int,
                     depth: int, call: str) -> Trajectory:
    t = Trajectory(engine=rollout.engine, example=dict(rollout.example), group_id=rollout.example_id,
                   rewards=dict(rollout.rewards), token_exact=True, answer=rollout.answer,
                   metadata={"tree_step": depth, "node": node, "lineage": _lineage(rollout, "tree_path", node, [call])})
    t.add("prompt", prompt.text, token_ids=list(prompt.token_ids or []))
    t.add("model", model.text, token_ids=list(model.token_ids or []), logprobs=model.logprobs)
    t.finish(finish if finish in ("answer", "length") else "answer")  # type: ignore[arg-type]
    return t


def _exact(*segs: Segment) -> bool:
    return all(s.token_ids for s in segs)


def _path_sft(rollout: Rollout, tree: dict[str, Any], nodes: dict[int, dict[str, Any]], samples: dict,
              keep_incorrect: bool, drop: Any) -> list[Trajectory]:
    path = _path_nodes(tree, nodes)
    correct = rollout.rewards.get("correct")
    if not path:
        drop("no_path", "sft")
        return []
    if correct is None and not keep_incorrect:
        drop("path_unverified", "sft", steps=len(path))
        return []
    if correct is not None and correct < 1.0 and not keep_incorrect:
        drop("path_incorrect", "sft", steps=len(path))
        return []
    out = []
    for depth, nid in enumerate(path):
        calls = nodes[nid].get("proposed_by") or []
        sample = samples.get(calls[0]) if calls else None
        if sample is None or not _exact(sample[0], sample[1]):
            drop("not_token_exact", "sft", node=nid)
            continue
        out.append(_step_trajectory(rollout, *sample, node=nid, depth=depth, call=calls[0]))
    return out


def _pair(rollout: Rollout, parent: int, good: dict[str, Any], bad: dict[str, Any], samples: dict,
          margin: float, drop: Any) -> dict[str, Any] | None:
    where = {"parent": parent, "chosen_node": good["id"], "rejected_node": bad["id"]}
    g, b = _score(good), _score(bad)
    if g is None or b is None:
        return drop("unscored", "pair", **where)
    if g == b:
        return drop("tie", "pair", **where)
    if g < b:
        return drop("sibling_scored_higher", "pair", **where)
    if g - b <= margin:
        return drop("below_margin", "pair", **where)
    gs = samples.get((good.get("proposed_by") or [None])[0])
    bs = samples.get((bad.get("proposed_by") or [None])[0])
    if gs is None or bs is None or not _exact(gs[0], gs[1], bs[0], bs[1]):
        return drop("not_token_exact", "pair", **where)
    if gs[0].token_ids != bs[0].token_ids:
        return drop("different_prompt", "pair", **where)
    if gs[1].token_ids == bs[1].token_ids:
        return drop("same_completion", "pair", **where)
    calls = [good["proposed_by"][0], bad["proposed_by"][0]]
    return {"id": f"{rollout.example_id}:{parent}:{good['id']}>{bad['id']}", "group_id": rollout.example_id, **where,
            "prompt": gs[0].text, "chosen": gs[1].text, "rejected": bs[1].text,
            "prompt_ids": list(gs[0].token_ids), "chosen_ids": list(gs[1].token_ids),
            "rejected_ids": list(bs[1].token_ids), "chosen_score": g, "rejected_score": b,
            "chosen_visits": int(good.get("visits") or 0), "rejected_visits": int(bad.get("visits") or 0),
            "chosen_action": good.get("action"), "rejected_action": bad.get("action"), "depth": good.get("depth"),
            "metadata": {"lineage": _lineage(rollout, "tree_sibling", good["id"], calls)}}


def _pairs(rollout: Rollout, tree: dict[str, Any], nodes: dict[int, dict[str, Any]], samples: dict, scope: Scope,
           margin: float, drop: Any) -> list[dict[str, Any]]:
    children: dict[int, list[dict[str, Any]]] = {}
    for n in nodes.values():
        if n["parent"] is not None:
            children.setdefault(n["parent"], []).append(n)
    if scope == "path":
        chosen = [(nodes[nid]["parent"], nodes[nid]) for nid in _path_nodes(tree, nodes)]
    else:
        chosen = []
        for parent, kids in sorted(children.items()):
            scored = [k for k in kids if _score(k) is not None]
            if len(scored) >= 2:
                chosen.append((parent, max(scored, key=lambda k: (_score(k), -k["id"]))))
    out = []
    for parent, good in chosen:
        for bad in children.get(parent, []):
            if bad["id"] != good["id"] and (row := _pair(rollout, parent, good, bad, samples, margin, drop)):
                out.append(row)
    return out


def tree_data(rollouts: Iterable[Rollout], *, scope: Scope = "path", margin: float = 0.0,
              keep_incorrect: bool = False) -> TreeData:
    """The SFT steps and preference pairs of tree-search rollouts, with every drop's reason (module docstring)."""
    if scope not in SCOPES:
        raise ConfigError(f"scope={scope!r}: choose 'path' (the chosen path's siblings) or 'tree' (every node)")
    if not margin >= 0:
        raise ConfigError(f"margin={margin!r}: must be >= 0 (a pair needs chosen_score - rejected_score > margin)")
    t0, data, n = time.perf_counter(), TreeData(), 0
    for rollout in rollouts:
        n += 1
        tree = _tree(rollout)
        nodes = {int(x["id"]): x for x in tree["nodes"]}
        samples = _samples(rollout)

        def drop(reason: str, kind: str, source: str = rollout.example_id, **where: Any) -> None:
            data.dropped.append({"source": source, "kind": kind, "reason": reason, **where})

        data.sft += _path_sft(rollout, tree, nodes, samples, keep_incorrect, drop)
        data.pairs += _pairs(rollout, tree, nodes, samples, scope, margin, drop)
    seconds = time.perf_counter() - t0
    data.stats = {"step": "tree_data", "rollouts": n, "scope": scope, "margin": margin,
                  "keep_incorrect": keep_incorrect, "sft_steps": len(data.sft),
                  "sft_rollouts": len({t.group_id for t in data.sft}), "pairs": len(data.pairs),
                  "dropped": {f"{k}/{r}": c for (k, r), c in sorted(Counter(
                      (d["kind"], d["reason"]) for d in data.dropped).items())},
                  "seconds": round(seconds, 3), "ms_per_rollout": round(1000 * seconds / max(n, 1), 3)}
    return data


def write_tree_data(out: str | Path, data: TreeData, *, overwrite: bool = False) -> Path:
    """`out/sft/trajectories.jsonl`, `out/pairs.jsonl`, `out/dropped.jsonl`, `out/stats.json` (refuses to replace)."""
    out = Path(out)
    if (out / "stats.json").exists() and not overwrite:
        raise ConfigError(f"{out / 'stats.json'} exists; choose another --out or pass --overwrite (nothing was written)")
    (out / "sft").mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "sft" / "trajectories.jsonl", (t.to_json() for t in data.sft))
    write_jsonl(out / "pairs.jsonl", data.pairs)
    write_jsonl(out / "dropped.jsonl", data.dropped)
    (out / "stats.json").write_text(json.dumps(data.stats, indent=2), encoding="utf-8")
    return out
