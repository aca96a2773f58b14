"""The typer app objects; command modules attach themselves to these."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="agentic",
    help="Agentic LLM reasoning at inference time: backends, tools, engines, evals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
index_app = typer.Typer(help="Build search indexes over corpora.", no_args_is_help=True)
serve_app = typer.Typer(help="Serve tools over HTTP.", no_args_is_help=True)
run_app = typer.Typer(help="Run an engine on questions.", no_args_is_help=True)
synth_app = typer.Typer(help="Build datasets from agents: pipelines, demonstrations, fuzzed QA, exports.",
                        no_args_is_help=True)
train_app = typer.Typer(help="Distill trajectories into a policy: SFT and GRPO-family RL on TRL.",
                        no_args_is_help=True)

app.add_typer(index_app, name="index")
app.add_typer(serve_app, name="serve")
app.add_typer(run_app, name="run")
app.add_typer(synth_app, name="synth")
app.add_typer(train_app, name="train")
