"""The distill recipe's `report.md`: what each stage did (SFT and GRPO: at which resolved precision) and how long it
took, the data per source, the SFT loss
curve and the GRPO stage's reward, zero-std share and entropy per step (tables, and PNG plots beside the report
when matplotlib is installed: `pip install 'agentic-infer[report]'`).

    write_report(settings, summaries, out / "report.md", plots=out / "report")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEMOS_TEXT = {"plain": "scripted Search-o1 demonstrations", "coa": "teacher-free Chain-of-Agents runs (afm dialect)",
              "atom": "scripted demonstrations as Atom-Searcher's atomic thoughts (atom_searcher dialect)"}


def _what(s: Any, summaries: dict[str, dict[str, Any]]) -> dict[str, str]:
    """stage -> what it did, in stage order."""
    data, filt = summaries.get("data", {}), summaries.get("filter", {})
    sft, grpo = summaries.get("sft", {}), summaries.get("grpo", {})
    rs = data.get("rejection_sampling", {})
    timings = grpo.get("rollout_timings", {})
    return {
        "data": f"{data.get('verified')} verified rows: {DEMOS_TEXT[s.demos]} (plain prompt, top-{s.k} "
                f"raw passages cut to {s.passage_chars} chars) + {rs.get('kept', 0)} of {rs.get('samples', 0)} "
                f"rejection-sampled rollouts of the base on {rs.get('questions', 0)} questions; dev-overlap questions "
                f"dropped: {data.get('dev_overlap_dropped')} (checked against {data.get('dev_questions_checked')} "
                "dev questions)",
        "filter": f"{filt.get('rows')} rows ({filt.get('rejection_sampled_rows', 0)} sampled), {filt.get('tokens')} "
                  f"tokens (mean {filt.get('mean_row_tokens')}, max {filt.get('max_row_tokens')} <= {s.max_length}); "
                  f"dropped {filt.get('dropped')}",
        "sft": f"{sft.get('mode')}, precision {sft.get('precision')}, {sft.get('threads')} threads: "
               f"{sft.get('steps')} steps (batch {s.sft_batch} x accum {s.sft_grad_accum}, lr {s.sft_lr}, "
               f"{s.sft_epochs} epochs), train loss {_num(sft.get('train_loss'))}, {sft.get('tokens_per_s')} tokens/s",
        "grpo": f"{grpo.get('steps')} steps x {grpo.get('generations')} rollouts on {grpo.get('questions')} questions, "
                f"reward {grpo.get('reward')}, precision {grpo.get('precision')}; "
                f"rollouts {_num(timings.get('engine_s'))} s of {_num(grpo.get('train_s'))} s",
        "gguf": f"{summaries.get('gguf', {}).get('gguf')} (SFT-only: {sft.get('gguf')})",
        "expert": _expert(summaries.get("expert", {})),
    }


def _expert(e: dict[str, Any]) -> str:
    if not e.get("questions", 1):
        return "skipped (expert_questions=0)"
    rs = e.get("sampling", {})
    head = (f"sampled the SFT policy {rs.get('samples', 0)} times on {rs.get('questions', 0)} train questions, "
            f"{rs.get('kept', 0)} verified correct kept ({e.get('rows', 0)} rows within max_length)")
    if not e.get("trained"):
        return head + "; no correct sample, so no retraining (no expert policy)"
    return head + f"; SFT from the SFT weights: {e.get('steps')} steps, loss {_num(e.get('train_loss'))} -> {e.get('gguf')}"


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def plot(summaries: dict[str, dict[str, Any]], folder: Path) -> list[Path]:
    """sft_loss.png and grpo.png (when there is something to plot and matplotlib is installed)."""
    from train.plotting import pyplot

    plt = pyplot()
    if plt is None:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    hist = [h for h in summaries.get("sft", {}).get("history", []) if h.get("loss") is not None]
    if hist:
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot([h["step"] for h in hist], [h["loss"] for h in hist], marker=".")
        ax.set(xlabel="optimizer step", ylabel="SFT loss", title="SFT loss")
        fig.tight_layout()
        fig.savefig(folder / "sft_loss.png", dpi=100)
        plt.close(fig)
        out.append(folder / "sft_loss.png")
    curve = summaries.get("grpo", {}).get("curve", [])
    if curve:
        fig, ax = plt.subplots(figsize=(5, 3))
        steps = [c.get("step") for c in curve]
        for key, label in (("reward", "reward"), ("entropy", "entropy"), ("frac_reward_zero_std", "zero-std groups")):
            ax.plot(steps, [c.get(key) for c in curve], marker="o", label=label)
        ax.set(xlabel="GRPO step", title="GRPO")
        ax.legend()
        fig.tight_layout()
        fig.savefig(folder / "grpo.png", dpi=100)
        plt.close(fig)
        out.append(folder / "grpo.png")
    return out


def write_report(s: Any, summaries: dict[str, dict[str, Any]], path: Path, *, plots: Path | None = None
                 ) -> dict[str, Any]:
    """Write `path` (markdown) and the plots into `plots`; returns their paths."""
    what = _what(s, summaries)
    lines = [f"# Distill report ({'quick' if s.quick else 'full'} recipe)", "",
             "| stage | seconds | what |", "|---|---|---|"]
    for stage, text in what.items():
        lines.append(f"| {stage} | {summaries.get(stage, {}).get('seconds', '')} | {text} |")
    total = sum(float(summaries.get(st, {}).get("seconds") or 0) for st in what)
    lines += ["", f"Total: {total / 60:.1f} min (stages run in this invocation and earlier ones).", "",
              "## Data per source", "", "| file | questions | verified | rejected | dev overlap |",
              "|---|---|---|---|---|"]
    for name, v in summaries.get("data", {}).get("sources", {}).items():
        lines.append(f"| {name} | {v['questions']} | {v['verified']} | {v['rejected']} | {v['dev_overlap_dropped']} |")
    rs = summaries.get("data", {}).get("rejection_sampling", {})
    lines += ["", f"Rejection sampling: {rs}"]
    origin = summaries.get("sft", {}).get("data_lineage", {})
    if origin:
        lines += ["", f"SFT data `{origin.get('data')}` (sha256 {str(origin.get('sha256'))[:12]}): {origin.get('rows')} "
                      f"rows from {origin.get('sources')} source questions; by operator {origin.get('by_operator')}, "
                      f"by engine {origin.get('by_engine')}"]
    hist = summaries.get("sft", {}).get("history", [])
    lines += ["", "## SFT loss (per logged step)", "", "| step | loss | lr | grad norm | token accuracy |",
              "|---|---|---|---|---|"]
    lines += [f"| {h.get('step')} | {_num(h.get('loss'))} | {_num(h.get('learning_rate'))} | "
              f"{_num(h.get('grad_norm'))} | {_num(h.get('mean_token_accuracy'))} |" for h in hist]
    curve = summaries.get("grpo", {}).get("curve", [])
    atr = any("rewards/atr/mean" in c for c in curve)  # the atom dialect logs the ATR (weight 0 unless grpo_atr)
    lines += ["", "## GRPO (per step)", "",
              "| step | reward | reward std | format | answer |" + (" ATR |" if atr else "") + " EM | searched | searches | "
              "entropy | zero-std groups | loss |", "|---|---|---|---|---|" + ("---|" if atr else "") + "---|---|---|---|---|---|"]
    answer = f"rewards/{s.answer_reward}/mean"
    for c in curve:
        lines.append(f"| {c.get('step')} | {_num(c.get('reward'))} | {_num(c.get('reward_std'))} | "
                     f"{_num(c.get('rewards/format/mean'))} | {_num(c.get(answer))} | "
                     + (f"{_num(c.get('rewards/atr/mean'))} | " if atr else "") + f"{_num(c.get('rewards/em/mean'))} | "
                     f"{_num(c.get('diag/tool_call_rate'))} | {_num(c.get('diag/tool_calls'))} | {_num(c.get('entropy'))} | "
                     f"{_num(c.get('frac_reward_zero_std', c.get('diag/zero_std_share')))} | {_num(c.get('loss'))} |")
    images = plot(summaries, plots) if plots is not None else []
    if images:
        lines += ["", *[f"![{p.stem}]({p.relative_to(path.parent).as_posix()})" for p in images]]
    lines += ["", f"Policy: `{summaries.get('gguf', {}).get('gguf')}`; evaluate it with `make distill-eval`.", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return {"report": str(path), "plots": [str(p) for p in images]}
