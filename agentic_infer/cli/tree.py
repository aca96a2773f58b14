"""`agentic run lats`, `agentic run rap` and `agentic tree view`: tree search from the command line.

    agentic run lats --env game24 --input "1 1 4 6" --set iterations=10 --set n_children=5 --save-tree t.json
    agentic run lats --env qa --input "Who wrote Hamlet?" --gold "William Shakespeare" --json
    agentic run lats --env math --input "What is 17*23?" --gold 391
    agentic run lats --env program --input "Write add(a, b)." --test "assert add(1, 2) == 3"
    agentic run rap --task game24 --input "4 9 10 13" --set budget.tokens=3000
    agentic run rap --task blocksworld --input "the a block is on top of the b block, ..." --goal "..."
    agentic run rap --task gsm8k --input "Tom has 3 apples ..." --gold 7 --set aggregate=deepconf
    agentic tree view t.json --out t.html

The flags say what to search; how is `LATSOptions` / `RAPOptions` (`--config FILE.yaml`, `--set
KEY=VALUE`, `--show-config`): iterations, n_children / n_actions, depth_limit, budget (iterations,
llm_calls, tokens, wall_s), lam, weights, aggregate, feedback, and the actions' sampling
(`--set sampling.temperature=0.5 --set sampling.seed=0 --set sampling.max_tokens=32`).
Feedback is judge-only unless `--set feedback=oracle` (the gold reward then drives and stops the
search); every result says which was used, what it spent, and whether the answer was correct
(scored after the search when a gold answer or checker exists). `--env qa` searches the default
BM25 index over the embedded wiki-vital corpus (built once) unless `--index DIR` is given.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from agentic_infer.cli.app import app, run_app
from agentic_infer.cli.settings import ConfigFile, Set, ShowConfig, engine_settings
from agentic_infer.engines.tree.envs import LATS_ENVS, RAP_ENVS, lats_env_factory, rap_task_factory
from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.corpora import retriever_factory

DEFAULT_BACKEND = "llamacpp://default"
tree_app = typer.Typer(help="Inspect saved search trees.", no_args_is_help=True)
app.add_typer(tree_app, name="tree")

Backend = Annotated[str, typer.Option(help="Backend URI (see `agentic backends`).")]
SaveTree = Annotated[Optional[Path], typer.Option("--save-tree", help="Write the node table as JSON.")]  # noqa: UP007
AsJson = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")]


def _run(engine, example: dict, save_tree: Path | None):
    """One search through the engine, its node table saved when asked; the Rollout."""
    async def go():
        search = engine.search(example)
        try:
            rollout = await engine.rollout(search, await search.run(), example)
        finally:
            await engine.llm.aclose()
        if save_tree is not None:
            search.tree.save(save_tree)
        return rollout

    return asyncio.run(go())


def _print(console: Console, rollout, as_json: bool, save_tree: Path | None) -> None:
    info = rollout.metadata["tree"]
    d = {"engine": rollout.engine, "answer": rollout.answer, "correct": _correct(rollout),
         **{k: v for k, v in info.items() if k != "nodes"}}
    if save_tree is not None:
        d["tree_file"] = str(save_tree)
    if as_json:
        typer.echo(json.dumps(d, default=str))
        return
    spent = info["budget"].get("spent", {})
    console.print(f"[bold]{rollout.engine}[/bold] on {rollout.example['question']!r}  "
                  f"[dim]({info['feedback']} feedback)[/dim]")
    for i, a in enumerate(info["actions"], 1):
        console.print(f"  {i}. {a}", markup=False, highlight=False)
    console.print(f"[bold green]answer:[/bold green] {rollout.answer!r}  correct={d['correct']}  "
                  f"stop={info['stop_reason']}")
    console.print(f"[dim]iterations={spent.get('iterations')} llm_calls={spent.get('llm_calls')} "
                  f"tokens={spent.get('tokens')} wall={spent.get('wall_s', 0):.1f}s nodes={len(info['nodes'])}"
                  + (f" tree={save_tree}" if save_tree else "") + "[/dim]")


def _correct(rollout) -> bool | None:
    c = rollout.rewards.get("correct")
    return None if c is None else c >= 1.0


Gold = Annotated[Optional[str], typer.Option(help="Gold answer (scoring; oracle feedback only with --set feedback=oracle).")]  # noqa: UP007


@run_app.command("lats")
def lats(
    env: Annotated[str, typer.Option(help=f"Environment: {' | '.join(LATS_ENVS)}.")],
    input_text: Annotated[str, typer.Option("--input", "-i", help="The task: puzzle, question or program spec.")],
    backend: Backend = DEFAULT_BACKEND,
    gold: Gold = None,
    index: Annotated[Optional[Path], typer.Option(help="--env qa: index directory (default: wiki-vital BM25).")] = None,  # noqa: UP007
    test: Annotated[Optional[list[str]], typer.Option(help="--env program: a visible test (repeatable).")] = None,  # noqa: UP007
    hidden_test: Annotated[Optional[list[str]], typer.Option(help="--env program: a hidden test, scoring only.")] = None,  # noqa: UP007
    config: ConfigFile = None,
    set_: Set = None,
    show_config: ShowConfig = False,
    save_tree: SaveTree = None,
    as_json: AsJson = False,
) -> None:
    """LATS (MCTS with LM values, self-consistency and reflections) on one task; settings: LATSOptions."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.tree.lats import LATS, LATSOptions

    options = engine_settings(LATSOptions, config, set_, show=show_config)

    console = Console(stderr=as_json)
    if env not in LATS_ENVS:
        raise ConfigError(f"--env {env!r}: choose one of {', '.join(LATS_ENVS)}")
    example = {"question": input_text, "gold": gold, "tests": list(test or []), "hidden_tests": list(hidden_test or [])}
    retriever_for = retriever_factory(index=index, default="wiki-vital",
                                      on_build=lambda m: console.print(f"[dim]{m}[/dim]")) if env == "qa" else None
    environment = lats_env_factory(env, retriever_for=retriever_for)(example)
    engine = LATS(load_llm(backend), lambda _example: environment, options)
    _print(console, _run(engine, {"question": input_text}, save_tree), as_json, save_tree)


@run_app.command("rap")
def rap(
    task: Annotated[str, typer.Option(help="game24 | gsm8k | blocksworld.")],
    input_text: Annotated[str, typer.Option("--input", "-i", help="Puzzle, question, or initial blocks state.")],
    goal: Annotated[Optional[str], typer.Option(help="--task blocksworld: the goal facts.")] = None,  # noqa: UP007
    gold: Gold = None,
    backend: Backend = DEFAULT_BACKEND,
    config: ConfigFile = None,
    set_: Set = None,
    show_config: ShowConfig = False,
    save_tree: SaveTree = None,
    as_json: AsJson = False,
) -> None:
    """RAP (LLM world model + MCTS + RAP-Aggregation) on one task; settings: RAPOptions."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.tree.rap import RAP, RAPOptions

    console = Console(stderr=as_json)
    if task not in RAP_ENVS:
        raise ConfigError(f"--task {task!r}: choose one of {', '.join(RAP_ENVS)}")
    options = engine_settings(RAPOptions, config, set_, show=show_config)
    t = rap_task_factory(task)({"question": input_text, "gold": gold, "goal": goal})
    engine = RAP(load_llm(backend), lambda _example: t, options)
    _print(console, _run(engine, {"question": input_text}, save_tree), as_json, save_tree)


@tree_app.command("view")
def view(
    file: Annotated[Path, typer.Argument(help="A tree JSON written by --save-tree.")],
    out: Annotated[Optional[Path], typer.Option(help="HTML file to write (default: FILE with .html).")] = None,  # noqa: UP007
) -> None:
    """Render a saved search tree as one self-contained HTML file."""
    from agentic_infer.engines.tree.table import Tree
    from agentic_infer.engines.tree.viewer import render_html

    tree = Tree.load(file)
    target = out if out is not None else file.with_suffix(".html")
    target.write_text(render_html(tree), encoding="utf-8")
    typer.echo(f"wrote {target} ({len(tree.nodes)} nodes, {tree.feedback} feedback)")
