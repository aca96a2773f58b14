"""`runs/rl/report.md`: every game the RL recipe ran under `out`, its SFT start and each estimator's curves.

    write_report(Path("runs/rl"), plots=Path("runs/rl/frozenlake/report"))

Per game: the stages' times, the demonstrations and SFT, then per estimator and per step the reward, the
share of zero-variance groups, the entropy, RAGEN's echo-trap alarm (`train.core.diagnostics.echo_trap` over
the steps so far; window 3, as the runs are short), RAGEN-2's mutual-information proxy (every `mi_every`
steps), the share of steps in an anchor group of two or more, and the validation success every `val_every`
steps (step 0 = the SFT policy). The held-out comparison (`make rl-eval`, `<game>/heldout/summary.json`) is
added when it exists. PNG plots (matplotlib, `pip install 'agentic-infer[report]'`) go beside the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from train.rl.recipe import RL_ESTIMATORS, STAGE_KEYS

ECHO_WINDOW = 3
PLOTS = (("reward", "mean episode reward (training rollouts)"), ("validation", "validation success"),
         ("diag/zero_std_share", "zero-variance groups"), ("entropy", "token entropy"),
         ("diag/anchor_share", "steps in an anchor group of >= 2"), ("diag/mi", "RAGEN-2 MI proxy (nats)"))


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else ("" if v is None else str(v))


def _stage(game_dir: Path, stage: str) -> dict[str, Any] | None:
    p = game_dir / stage / "done.json"
    return json.loads(p.read_text()) if p.is_file() else None


def _from(rl_stage: dict[str, Any], sft: dict[str, Any]) -> bool:
    """The RL stage trained from this SFT stage: their demos and SFT settings agree (an estimator added by a later
    run is reported; one left from an earlier SFT is not)."""
    keys = (*STAGE_KEYS["demos"], *STAGE_KEYS["sft"])
    return all(rl_stage["settings"].get(k) == sft["settings"].get(k) for k in keys)


def echo_alarms(curve: list[dict[str, Any]], window: int = ECHO_WINDOW) -> list[bool]:
    """Per step: does RAGEN's echo trap fire over the steps up to it."""
    from train.core.diagnostics import echo_trap

    hist, out = [], []
    for c in curve:
        if all(k in c for k in ("diag/group_reward_std", "entropy", "grad_norm")):
            hist.append({"group_reward_std": c["diag/group_reward_std"], "entropy": c["entropy"],
                         "grad_norm": c["grad_norm"]})
        out.append(echo_trap(hist, window=window) is not None)
    return out


def _series(summary: dict[str, Any], key: str, sft_val: float | None) -> tuple[list[int], list[float]]:
    if key == "validation":
        pts = sorted(summary.get("validation", []), key=lambda p: p["step"])
        pairs = ([(0, sft_val)] if sft_val is not None and all(p["step"] != 0 for p in pts) else [])
        pairs += [(p["step"], p["success"]) for p in pts]
    else:
        pairs = [(c["step"], c[key]) for c in summary.get("curve", []) if c.get(key) is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def plot(game: str, rl: dict[str, dict[str, Any]], sft_val: float | None, folder: Path) -> list[Path]:
    """One PNG per diagnostic, every estimator a line."""
    from train.plotting import pyplot

    plt = pyplot()
    if plt is None:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for key, title in PLOTS:
        fig, ax = plt.subplots(figsize=(5, 3))
        drawn = False
        for name, summary in rl.items():
            xs, ys = _series(summary, key, sft_val)
            if xs:
                ax.plot(xs, ys, marker="o", label=name)
                drawn = True
        if drawn:
            ax.set(xlabel="RL step", title=f"{game}: {title}")
            ax.legend()
            fig.tight_layout()
            path = folder / f"{key.replace('diag/', '')}.png"
            fig.savefig(path, dpi=100)
            out.append(path)
        plt.close(fig)
    return out


def game_section(game_dir: Path, root: Path, plots: Path | None) -> list[str]:
    game = game_dir.name
    demos, sft = _stage(game_dir, "demos"), _stage(game_dir, "sft")
    if demos is None or sft is None:
        return [f"## {game}", "", "Not run yet (no finished SFT stage).", ""]
    settings = sft["settings"]
    rl = {st: d["summary"] for st in RL_ESTIMATORS if (d := _stage(game_dir, st)) is not None and _from(d, sft)}
    sv = sft["summary"]["validation"]
    lines = [f"## {game}", "", "| stage | seconds | what |", "|---|---|---|",
             f"| demos | {demos['summary']['seconds']} | {demos['summary']['demos']} solver demonstrations "
             f"(seeds 0..{settings['demo_seeds'] - 1}), {demos['summary']['mean_moves']} moves each |",
             f"| sft | {sft['summary']['seconds']} | {sft['summary']['steps']} steps, loss "
             f"{_num(sft['summary']['train_loss'])}, {sft['summary']['precision']}, "
             f"{sft['summary']['threads']} threads |"]
    for name, s in rl.items():
        lines.append(f"| {name} | {s['seconds']} | {s['steps']} steps x {s['episodes_per_step']} episodes, lr "
                     f"{s['lr']}, γ {s['gamma']}, ω {s['omega']} (γ, ω used by gigpo only) |")
    total = sum(float(x["summary"]["seconds"]) for x in (demos, sft)) + sum(float(s["seconds"]) for s in rl.values())
    lines += ["", f"Total: {total / 60:.1f} min. Validation: seeds {settings['val_seed_start']}.."
              f"{settings['val_seed_start'] + settings['val_size'] - 1}, greedy, every {settings['val_every']} "
              f"steps; step 0 is the SFT start (inside the trainer when the run validated there; the SFT stage's "
              f"own fp32 check: {_num(sv['success'])}).", ""]
    lines += ["### Validation success", "", "| step | " + " | ".join(rl) + " |", "|---|" + "---|" * len(rl)]
    steps = sorted({0} | {p["step"] for s in rl.values() for p in s.get("validation", [])})
    for st in steps:
        cells = []
        for s in rl.values():
            hit = [p["success"] for p in s.get("validation", []) if p["step"] == st]
            cells.append(_num(hit[0]) if hit else (_num(sv["success"]) if st == 0 else ""))
        lines.append(f"| {st} | " + " | ".join(cells) + " |")
    for name, s in rl.items():
        alarms = echo_alarms(s.get("curve", []))
        lines += ["", f"### {name} per step", "",
                  "| step | reward | zero-std groups | rows trained | entropy | echo trap | MI proxy | anchor share | s/step |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for c, alarm in zip(s.get("curve", []), alarms):
            lines.append(f"| {c.get('step')} | {_num(c.get('reward'))} | {_num(c.get('diag/zero_std_share'))} | "
                         f"{_num(c.get('diag/trained_rows'))} | {_num(c.get('entropy'))} | {'ALARM' if alarm else '-'} | {_num(c.get('diag/mi'))} | "
                         f"{_num(c.get('diag/anchor_share'))} | {_num(c.get('step_time'))} |")
        branches = [_num(c["diag/branch_share"]) for c in s.get("curve", []) if "diag/branch_share" in c]
        if branches:
            lines += ["", f"Share of each step's episodes that are branches (forked after a move): {', '.join(branches)}."]
        t = s.get("rollout_timings", {})
        lines += ["", f"Rollout time {_num(t.get('engine_s'))} s of {s['train_s']} s training."]
    held = game_dir / "heldout" / "summary.json"
    if held.is_file():
        h = json.loads(held.read_text())
        lines += ["", "### Held-out seeds", "", h.get("markdown", ""), ""]
    images = plot(game, rl, sv["success"], plots) if plots is not None else []
    lines += ["", *[f"![{p.stem}]({p.relative_to(root).as_posix()})" for p in images], ""]
    return lines


def write_report(root: Path, *, plots: Path | None = None) -> dict[str, Any]:
    """Write `root/report.md` over every game folder under `root` (this game's plots into `plots`)."""
    lines = ["# RL report (`make rl`)", ""]
    for game_dir in sorted(p for p in root.iterdir() if p.is_dir() and (p / "sft").is_dir()):
        lines += game_section(game_dir, root, plots if plots is not None and plots.parent == game_dir
                              else game_dir / "report")
    (root / "report.md").write_text("\n".join(lines), encoding="utf-8")
    return {"report": str(root / "report.md")}


__all__ = ["echo_alarms", "game_section", "write_report"]
