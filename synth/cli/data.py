"""`agentic synth demos | coa | export | tree-data`: cold-start SFT data from gold decompositions (plain, or
Chain-of-Agents runs linearised into AFM trajectories), exports for trainers, and training data from search trees.

    agentic synth demos --task musique --data ../shared/data/multihop/musique_train_100.json --out demos/
    agentic synth coa --task musique --data ../shared/data/multihop/musique_train_100.json --out coa/
    agentic synth coa ... --executor slurm --tasks 4     # demos and coa: the questions in blocks on ray / slurm
    agentic synth export --in demos/ --format tokenized --out demos/sft.jsonl
    agentic synth tree-data --in runs/lats-game24 --out tree-data/ [--scope tree] [--margin 0.1]

Each command is thin: it validates its options, calls one library function (`synth.blocks.run_build` for demos
and coa, `synth.export.export`, `synth.trees.tree_data`) and prints a one-line summary; every output
directory holds `stats.json`. `agentic synth fuzzqa` is in `synth_fuzzqa.py`. Bad input is one line on stderr and exit code 2 (see `agentic_infer.cli`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentic_infer.cli.app import synth_app
from agentic_infer.cli.settings import RemovedFlag, removed_flags
from agentic_infer.errors import ConfigError
from synth.cli.pipeline import Executor, Tasks, Workers


def _ints(spec: str, name: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in spec.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--{name} {spec!r}: expected integers separated by commas, e.g. 3,5") from None
    if not values:
        raise ConfigError(f"--{name} {spec!r}: give at least one integer")
    return values


@synth_app.command("demos")
def demos(
    task: Annotated[str, typer.Option(help="Eval task whose loader reads --data (musique, hotpotqa, 2wiki).")],
    data: Annotated[Path, typer.Option(help="Question file with decompositions or supporting facts.")],
    out: Annotated[Path, typer.Option(help="Output directory: trajectories.jsonl + stats.json.")],
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    tokenizer: Annotated[str, typer.Option(help="Tokenizer + chat template: 'default' (embedded GGUF), a .gguf "
                                                "or a local HF directory.")] = "default",
    backend: Annotated[str | None, typer.Option(help="Take tokenizer and template from this backend URI "
                                                     "instead of --tokenizer.")] = None,
    k: Annotated[str, typer.Option("--k", help="Documents per search to vary (DemoOptions.ks), comma-separated.")] = "3,5",
    top_k: RemovedFlag("--top-k", "--k") = None,
    wordings: Annotated[str, typer.Option(help="Query wordings: subq,title.")] = "subq,title",
    variants: Annotated[int, typer.Option(help="At most this many variants per question.")] = 4,
    corpus: Annotated[str, typer.Option(help="question (its own paragraphs) | pooled (all loaded questions).")]
    = "question",
    overwrite: Annotated[bool, typer.Option(help="Replace an existing trajectories.jsonl.")] = False,
    executor: Executor = "local", tasks: Tasks = 1, workers: Workers = 1,
) -> None:
    """Demonstrations from gold decompositions, run through the real Search-o1 engine and verified."""
    from synth.blocks import BuildSpec, run_build
    from synth.demos import DemoOptions

    removed_flags({"--top-k": (top_k, "--k (documents per search)")})
    options = DemoOptions(wordings=tuple(w.strip() for w in wordings.split(",") if w.strip()),
                          ks=_ints(k, "k"), max_variants=variants, corpus=corpus)
    spec = BuildSpec("demos", task, str(data), options, limit=limit, tokenizer=tokenizer, backend=backend)
    stats = run_build(spec, out, _executor(executor, tasks, workers), overwrite=overwrite)
    Console(stderr=True).print(
        f"demos: {stats['kept']} verified from {stats['questions']} questions ({stats['variants_tried']} variants "
        f"tried, rejected {stats['rejected']}, no plan {stats['no_plan']}); {stats['demos_per_min']} demos/min "
        f"-> {out}/trajectories.jsonl")


def _executor(kind: str, tasks: int, workers: int):
    from agentic_infer.executors import ExecutorConfig

    return ExecutorConfig(kind=kind, tasks=tasks, workers=workers)


@synth_app.command("coa")
def coa(
    task: Annotated[str, typer.Option(help="Eval task whose loader reads --data (musique, hotpotqa, 2wiki).")],
    data: Annotated[Path, typer.Option(help="Question file with decompositions or supporting facts.")],
    out: Annotated[Path, typer.Option(help="Output directory: trajectories.jsonl, dropped.jsonl, stats.json.")],
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    k: Annotated[int, typer.Option("--k", help="Documents per search.")] = 3,
    corpus: Annotated[str, typer.Option(help="question (its own paragraphs) | pooled (all loaded questions).")]
    = "question",
    tokenizer: Annotated[str, typer.Option(help="Tokenizer + chat template: 'default' (embedded GGUF), a .gguf "
                                                "or a local HF directory.")] = "default",
    backend: Annotated[str | None, typer.Option(help="Take tokenizer and template from this backend URI "
                                                     "instead of --tokenizer.")] = None,
    mode: Annotated[str, typer.Option(help="teacher-free (roles from the gold decomposition) | llm (a model per "
                                           "role: --role-backend).")] = "teacher-free",
    role_backend: Annotated[str | None, typer.Option(help="Backend URI of every role in --mode llm.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing trajectories.jsonl.")] = False,
    executor: Executor = "local", tasks: Tasks = 1, workers: Workers = 1,
) -> None:
    """Chain-of-Agents runs (a LangGraph role graph) linearised into AFM trajectories, progressively filtered."""
    from synth.blocks import BuildSpec, run_build
    from synth.coa import CoAOptions

    if (mode == "llm") != (role_backend is not None):
        raise ConfigError(f"--mode {mode} --role-backend {role_backend!r}: the llm mode needs --role-backend URI, "
                          "the teacher-free mode takes none")
    spec = BuildSpec("coa", task, str(data), CoAOptions(k=k, corpus=corpus, mode=mode), limit=limit,
                     tokenizer=tokenizer, backend=backend, role_backend=role_backend)
    s = run_build(spec, out, _executor(executor, tasks, workers), overwrite=overwrite)
    Console(stderr=True).print(
        f"coa: {s['kept']} kept of {s['built']} runs from {s['questions']} questions ({s['kept_with_reflection']} "
        f"with a reflection; dropped {s['dropped'] or 'none'}; no plan {s['no_plan'] or 'none'}); "
        f"{s['ms_per_row']} ms/row -> {out}/trajectories.jsonl")


@synth_app.command("export")
def export(
    src: Annotated[Path, typer.Option("--in", help="Directory with trajectories.jsonl (or trajectories/*.jsonl), "
                                                  "or a JSONL file.")],
    fmt: Annotated[str, typer.Option("--format", help="messages | tokenized | verl-sft | verl-rl")],
    out: Annotated[Path, typer.Option(help="Output file (.jsonl, or .parquet; verl formats are parquet).")],
    max_length: Annotated[int | None, typer.Option(help="Cut tokenized rows to N tokens.")] = None,
    allow_inexact: Annotated[bool, typer.Option(help="Export re-encoded (token_exact=False) trajectories.")] = False,
    ability: Annotated[str, typer.Option(help="verl-rl `ability` column.")] = "qa",
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out.")] = False,
    append_eos: Annotated[str, typer.Option(help="Tokenized rows: a trainable end-of-turn token after a "
                                                 "finished answer (finished | eos | none), as `agentic train sft`.")
                          ] = "finished",
    eos_token_id: Annotated[int | None, typer.Option(help="The end-of-turn token id (default: --tokenizer's).")] = None,
    tokenizer: Annotated[str, typer.Option(help="Tokenizer whose end-of-turn id tokenized rows end with: 'default' "
                                                "(embedded GGUF), a .gguf or a local HF directory.")] = "default",
) -> None:
    """Export trajectories as chat messages, tokenized SFT rows, verl multi-turn SFT or verl RL parquet."""
    from synth.export import export as run_export

    stats = run_export(src, fmt, out, max_length=max_length, allow_inexact=allow_inexact, ability=ability,
                       overwrite=overwrite, eos_token_id=eos_token_id, tokenizer=tokenizer,
                       append_eos=None if append_eos == "none" else append_eos)  # type: ignore[arg-type]
    stats_path = out.parent / "stats.json"
    merged = json.loads(stats_path.read_text()) if stats_path.is_file() else {}
    merged.setdefault("exports", []).append(stats)
    stats_path.write_text(json.dumps(merged, indent=2), encoding="utf-8")
    Console(stderr=True).print(f"export: {stats['rows']} {fmt} rows from {stats['trajectories']} trajectories -> {out}")


@synth_app.command("tree-data")
def tree_data(
    src: Annotated[Path, typer.Option("--in", help="Run directory of `agentic eval run --engine lats|rap` "
                                                  "(its rollouts.jsonl), or a JSONL file of Rollouts.")],
    out: Annotated[Path, typer.Option(help="Output directory: sft/trajectories.jsonl, pairs.jsonl, dropped.jsonl, "
                                           "stats.json.")],
    scope: Annotated[str, typer.Option(help="path: pairs at the chosen path's nodes | tree: at every node with two "
                                            "or more scored children.")] = "path",
    margin: Annotated[float, typer.Option(help="A pair needs chosen_score - rejected_score > MARGIN.")] = 0.0,
    keep_incorrect: Annotated[bool, typer.Option(help="SFT steps from paths whose answer was not verified "
                                                      "correct too.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing output directory's files.")] = False,
) -> None:
    """A tree search's chosen path as per-step SFT trajectories and its siblings as DPO preference pairs."""
    from synth.trees import read_rollouts, write_tree_data
    from synth.trees import tree_data as build

    if (out / "stats.json").exists() and not overwrite:
        raise ConfigError(f"{out / 'stats.json'} exists; choose another --out or pass --overwrite (nothing was written)")
    data = build(read_rollouts(src), scope=scope, margin=margin, keep_incorrect=keep_incorrect)  # type: ignore[arg-type]
    write_tree_data(out, data, overwrite=overwrite)
    s = data.stats
    Console(stderr=True).print(
        f"tree-data: {s['sft_steps']} SFT steps from {s['sft_rollouts']} of {s['rollouts']} rollouts, {s['pairs']} "
        f"pairs; dropped {sum(s['dropped'].values())} ({', '.join(f'{k} {v}' for k, v in s['dropped'].items()) or 'none'})"
        f" -> {out}")
