"""`agentic index build` (corpus -> index directory) and `agentic search` (query a local index).

    agentic index build --corpus wiki-vital --out indexes/wiki
    agentic index build --corpus ../shared/data/multihop/2wiki_corpus_6k.json --kind hybrid --out idx/2wiki
    agentic search "capital of Australia" --index indexes/wiki --topk 3 [--json]

`--corpus` takes a recipe name (wiki-vital, multihop-pooled) or a file / directory in any format
`read_corpus` understands. Bad input raises ConfigError: one line on stderr, exit code 2.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agentic_infer.cli.app import app, index_app
from agentic_infer.errors import ConfigError

_STAGE_LABEL = {
    "corpus": "reading corpus", "tokenize": "tokenizing", "index": "building BM25 matrix",
    "embed": "embedding passages", "save": "saving",
}


@index_app.command("build")
def index_build(
    corpus: Annotated[str, typer.Option(help="Recipe (wiki-vital, multihop-pooled) or corpus file/directory.")],
    out: Annotated[Path, typer.Option(help="Output index directory (must not exist or be empty).")],
    kind: Annotated[str, typer.Option(help="bm25 | dense | hybrid")] = "bm25",
    chunk_words: Annotated[int | None, typer.Option(help="Split passages longer than N words.")] = None,
    text_field: Annotated[str | None, typer.Option(help="Text field of JSONL/Parquet records.")] = None,
    title_field: Annotated[str | None, typer.Option(help="Title field of records.")] = None,
    id_field: Annotated[str | None, typer.Option(help="Id field of records.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing index at --out.")] = False,
) -> None:
    """Build a BM25, dense or hybrid index of a corpus and print a summary."""
    from agentic_infer.tools.retrieval.corpus import FieldMap
    from agentic_infer.tools.retrieval.index import KINDS, build_index

    if kind not in KINDS:
        raise ConfigError(f"--kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if chunk_words is not None and chunk_words < 1:
        raise ConfigError(f"--chunk-words must be a positive number of words, got {chunk_words}")
    console = Console(stderr=True)
    fields = FieldMap(id=id_field, title=title_field, text=text_field)
    t0 = time.perf_counter()
    with console.status("starting", spinner="dots") as status:

        def progress(stage: str, done: int, total: int | None) -> None:
            label = _STAGE_LABEL.get(stage, stage)
            counted = f" {done:,}/{total:,}" if total else (f" {done:,}" if done else "")
            status.update(f"{label}{counted}  [dim]{time.perf_counter() - t0:.1f}s[/dim]")

        idx = build_index(corpus, kind=kind, out=out, chunk_words=chunk_words, fields=fields,
                          overwrite=overwrite, progress=progress)
    meta = idx.meta or {}
    c = meta.get("corpus", {})
    table = Table(title=f"{kind} index built", show_header=False)
    table.add_row("corpus", str(c.get("name")))
    table.add_row("passages", f"{c.get('n_docs', 0):,}" + (f" (skipped {c['n_skipped_empty']} empty)"
                                                           if c.get("n_skipped_empty") else ""))
    if "bm25" in meta:
        table.add_row("vocabulary", f"{meta['bm25'].get('vocab_size', 0):,} terms")
    if "dense" in meta:
        table.add_row("encoder", f"{meta['dense'].get('model')} (dim {meta['dense'].get('dim')})")
    table.add_row("size on disk", _human_size(_dir_size(Path(out))))
    table.add_row("time", f"{meta.get('build', {}).get('total_s', 0):.1f}s")
    table.add_row("output", str(Path(out).resolve()))
    Console().print(table)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="The search query.")],
    index: Annotated[Path, typer.Option(help="Index directory built by `agentic index build`.")],
    topk: Annotated[int, typer.Option(help="Number of results.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of {id, title, text, score}.")] = False,
) -> None:
    """Search a local index and print the top passages."""
    from agentic_infer.tools.retrieval.index import load_index

    if topk < 1:
        raise ConfigError(f"--topk must be a positive integer, got {topk}")
    idx = load_index(index)
    hits = idx.search([query], topk)[0]
    if as_json:
        typer.echo(json.dumps([h.to_dict() for h in hits], ensure_ascii=False))
        return
    if not hits:
        typer.echo("no results")
        return
    table = Table("#", "score", "title", "text", "id")
    for i, h in enumerate(hits, 1):
        text = h.text if len(h.text) <= 160 else h.text[:157] + "..."
        table.add_row(str(i), f"{h.score:.3f}", h.title, text, h.id)
    Console().print(table)


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"
