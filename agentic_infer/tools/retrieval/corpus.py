"""Corpus readers: turn files in common and published formats into a stream of `Document`s.

`read_corpus(path)` looks at the file (extension, then the first record) and picks a reader:

- JSONL / JSON / Parquet passage records `{id, title, text}` (field names configurable with
  `FieldMap`; Search-R1's `{id, contents}` with `contents = '"Title"\\ntext'` is understood too);
- a directory of plain-text files (one document per file, title = file stem, id = relative path);
- the published multi-hop formats: HotpotQA / 2WikiMultihopQA question records (`context` =
  `[[title, [sentences]], ...]`), MuSiQue question records (`paragraphs` =
  `[{idx, title, paragraph_text, is_supporting}]`), `title -> [sentences]` dicts (HotpotQA corpus
  files), `[{title, text}]` lists, and StrategyQA evidence paragraphs
  (`{title, section, headers, para_index, contents}`, id = `title-para_index`).

Values that should be lists but arrive as Python-literal strings (a wart of some published JSONL
files) are parsed with `json`, then `ast.literal_eval`. Question files yield each distinct
(title, text) paragraph once. `chunk_documents` splits long passages into word windows (the title is
kept on every chunk, ids `docid#i`).

Run: `python -c "from agentic_infer.tools.retrieval.corpus import read_corpus; print(next(iter(read_corpus('x.jsonl'))))"`.
Not covered: recipes for named corpora (`recipes.py`), indexing (`bm25.py`, `dense.py`).
"""

from __future__ import annotations

import ast
import gzip
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError, ParseError
from agentic_infer.runner import iter_jsonl
from agentic_infer.tools.retrieval.base import Document

log = logging.getLogger(__name__)

ID_FIELDS = ("id", "_id", "docid", "doc_id", "pid")
TITLE_FIELDS = ("title",)
TEXT_FIELDS = ("text", "contents", "paragraph_text", "extract", "passage", "body")
TEXT_SUFFIXES = (".txt", ".md", ".rst")

EXPECTED = (
    "expected one of: passage records with a text field ({id, title, text}; text may also be named "
    + "/".join(TEXT_FIELDS[1:])
    + "), HotpotQA/2Wiki questions {_id, context: [[title, [sentences]]]}, MuSiQue questions "
    "{id, paragraphs: [{title, paragraph_text}]}, StrategyQA evidence {title, para_index, contents}, "
    "a JSON dict title -> [sentences] | text | {text}, or a directory of .txt/.md files"
)


@dataclass(frozen=True)
class FieldMap:
    """Field names of passage records; `None` means try the usual names (`ID_FIELDS`, ...)."""

    id: str | None = None
    title: str | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        for name in ("id", "title", "text"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"FieldMap.{name} must be a non-empty field name or None, got {value!r}")


# ----------------------------------------------------------------------------- small helpers


def parse_literal(value: Any, *, what: str = "value") -> Any:
    """Return `value`, or the list/dict it encodes when it is a JSON or Python-literal string."""
    if not isinstance(value, str):
        return value
    s = value.strip()
    if not s or s[0] not in "[{(":
        return value
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError) as e:
        raise ParseError(
            f"{what} is a string that is neither JSON nor a Python literal ({e}): {s[:80]!r}"
        ) from None


def join_sentences(sentences: Iterable[str]) -> str:
    """Join sentence lists: HotpotQA keeps the leading space of each sentence, 2Wiki does not."""
    out = ""
    for s in sentences:
        s = str(s)
        if not out or s[:1].isspace():
            out += s
        else:
            out += " " + s
    return out.strip()


def split_contents(contents: str) -> tuple[str, str]:
    """Split Search-R1 `contents` (`'"Title"\\ntext'`) into (title, text); no title -> ('', contents)."""
    first, sep, rest = contents.partition("\n")
    if sep and len(first) >= 2 and first[0] == first[-1] == '"':
        return first[1:-1], rest
    return "", contents


def _first_present(record: Mapping[str, Any], names: Iterable[str]) -> str | None:
    for n in names:
        if n in record and record[n] is not None:
            return n
    return None


# ----------------------------------------------------------------------------- record kinds


def _is_multihop_question(rec: Mapping[str, Any]) -> bool:
    return "context" in rec or ("paragraphs" in rec and "question" in rec)


def question_paragraphs(rec: Mapping[str, Any]) -> list[Document]:
    """The paragraphs of one HotpotQA / 2Wiki / MuSiQue question, in order, with `is_supporting`.

    Ids are `<question id>-<i>`. HotpotQA and 2Wiki mark a paragraph supporting when its title
    appears in `supporting_facts`; MuSiQue has an `is_supporting` flag per paragraph. 2Wiki records
    that carry only `evidences` (no `context`) have no paragraphs and yield [].
    """
    qid = str(rec.get("_id", rec.get("id", "")))
    docs: list[Document] = []
    if "paragraphs" in rec and "context" not in rec:
        paragraphs = parse_literal(rec["paragraphs"], what=f"question {qid!r} paragraphs")
        for i, p in enumerate(paragraphs or []):
            if not isinstance(p, Mapping) or "paragraph_text" not in p:
                raise ConfigError(
                    f"question {qid!r}: MuSiQue paragraph {i} must be a dict with title and paragraph_text, got {str(p)[:80]!r}"
                )
            idx = p.get("idx", i)
            docs.append(
                Document(
                    id=f"{qid}-{idx}",
                    title=str(p.get("title", "")),
                    text=str(p["paragraph_text"]).strip(),
                    metadata={"question_id": qid, "is_supporting": bool(p.get("is_supporting", False))},
                )
            )
        return docs
    context = parse_literal(rec.get("context"), what=f"question {qid!r} context")
    if not context:
        return []
    facts = parse_literal(rec.get("supporting_facts") or [], what=f"question {qid!r} supporting_facts")
    gold_titles = {str(f[0]) for f in facts if isinstance(f, (list, tuple)) and f}
    if isinstance(context, Mapping):  # {"title": [...], "sentences": [[...]]} (HF datasets layout)
        context = list(zip(context.get("title", []), context.get("sentences", []), strict=True))
    for i, item in enumerate(context):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ConfigError(
                f"question {qid!r}: context item {i} must be [title, [sentences]], got {str(item)[:80]!r}"
            )
        title, sentences = item
        text = sentences if isinstance(sentences, str) else join_sentences(sentences)
        docs.append(
            Document(
                id=f"{qid}-{i}",
                title=str(title),
                text=text,
                metadata={"question_id": qid, "is_supporting": str(title) in gold_titles},
            )
        )
    return docs


def _strategyqa_doc(rec: Mapping[str, Any]) -> Document:
    # The questions' `evidence` lists cite paragraphs as "title-para_index", so that is the id; a
    # row id some redistributions add (e.g. "strategy_0") is kept as metadata.
    title = str(rec["title"])
    doc_id = f"{title}-{rec['para_index']}"
    meta = {k: rec[k] for k in ("section", "headers", "para_index") if k in rec}
    if "id" in rec:
        meta["row_id"] = rec["id"]
    return Document(id=doc_id, title=title, text=str(rec["contents"]).strip(), metadata=meta)


def _passage_doc(rec: Mapping[str, Any], fields: FieldMap, *, default_id: str, where: str) -> Document:
    text_f = fields.text or _first_present(rec, TEXT_FIELDS)
    if text_f is None or text_f not in rec:
        raise ConfigError(
            f"{where}: no text field (looked for {fields.text or '/'.join(TEXT_FIELDS)}; "
            f"fields present: {sorted(rec)[:12]}); pass the field name (e.g. --text-field) or {EXPECTED}"
        )
    text = str(rec[text_f])
    title_f = fields.title or _first_present(rec, TITLE_FIELDS)
    if title_f is not None and title_f in rec:
        title = str(rec[title_f] or "")
    elif text_f == "contents":
        title, text = split_contents(text)
    else:
        title = ""
    id_f = fields.id or _first_present(rec, ID_FIELDS)
    doc_id = str(rec[id_f]) if id_f is not None and id_f in rec else default_id
    used = {text_f, title_f, id_f}
    meta = {k: v for k, v in rec.items() if k not in used}
    return Document(id=doc_id, title=title, text=text.strip(), metadata=meta)


def records_to_documents(
    records: Iterable[Any],
    *,
    fields: FieldMap | None = None,
    source: str = "corpus",
    dedup_questions: bool = True,
) -> Iterator[Document]:
    """Convert records (dicts) of any supported kind into documents; the kind is set by the first."""
    fields = fields or FieldMap()
    kind: str | None = None
    seen: set[tuple[str, str]] = set()
    n_without = 0
    for i, rec in enumerate(records):
        where = f"{source} record {i}"
        if not isinstance(rec, Mapping):
            raise ConfigError(f"{where} is a {type(rec).__name__}, not an object; {EXPECTED}")
        if kind is None:
            if _is_multihop_question(rec):
                kind = "question"
            elif {"title", "para_index", "contents"} <= rec.keys():
                kind = "strategyqa"
            else:
                kind = "passage"
            log.debug("%s: reading as %s records", source, kind)
        if kind == "question":
            if not _is_multihop_question(rec):
                if "question" in rec:  # 2Wiki rows with only `evidences`: no paragraphs to read
                    n_without += 1
                    continue
                raise ConfigError(f"{where} has no context/paragraphs field although earlier records did")
            for doc in question_paragraphs(rec):
                key = (doc.title, doc.text)
                if dedup_questions and key in seen:
                    continue
                seen.add(key)
                yield Document(doc.id, doc.title, doc.text, {"question_id": doc.metadata["question_id"]})
        elif kind == "strategyqa":
            yield _strategyqa_doc(rec)
        else:
            yield _passage_doc(rec, fields, default_id=str(i), where=where)
    if n_without:
        log.info("%s: %d question records have no paragraphs (no context field); skipped", source, n_without)


# ----------------------------------------------------------------------------- file readers


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _base_suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _json_records(data: Any, path: Path) -> Iterable[Any]:
    """Records of a whole-file JSON value: a list, or a dict keyed by title/id."""
    if isinstance(data, list):
        return data
    if isinstance(data, Mapping):
        if "data" in data and isinstance(data["data"], list):
            return data["data"]
        return (_keyed_record(k, v, path) for k, v in data.items())
    raise ConfigError(f"{path}: top-level JSON is a {type(data).__name__}; {EXPECTED}")


def _keyed_record(key: str, value: Any, path: Path) -> dict[str, Any]:
    if isinstance(value, str):
        return {"id": key, "title": key, "text": value}
    if isinstance(value, list):  # HotpotQA corpus: title -> [sentences]
        return {"id": key, "title": key, "text": join_sentences(value)}
    if isinstance(value, Mapping):
        rec = dict(value)
        rec.setdefault("title", key)
        if not any(f in rec for f in ID_FIELDS):
            rec["id"] = key
        return rec
    raise ConfigError(f"{path}: value of key {key!r} is a {type(value).__name__}; {EXPECTED}")


def iter_parquet(path: Path, *, batch_size: int = 4096) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(f"reading {path} needs pyarrow: pip install pyarrow") from None
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=batch_size):
        yield from batch.to_pylist()


def iter_text_dir(path: Path, *, suffixes: tuple[str, ...] = TEXT_SUFFIXES) -> Iterator[Document]:
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)
    if not files:
        raise ConfigError(f"directory {path} holds no {'/'.join(suffixes)} files; {EXPECTED}")
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace").strip()
        rel = p.relative_to(path).with_suffix("").as_posix()
        yield Document(id=rel, title=p.stem, text=text, metadata={"path": str(p)})


def read_corpus(
    spec: str | Path, *, fields: FieldMap | None = None, chunk_words: int | None = None
) -> Iterator[Document]:
    """Documents of the corpus at `spec` (a file or a directory); the format is detected.

    Raises `ConfigError` (naming the expected fields) when the path is missing or the format is
    not one of those listed in the module docstring. `chunk_words` splits long passages.
    """
    path = Path(spec).expanduser()
    if not path.exists():
        raise ConfigError(f"corpus {str(spec)!r} does not exist; give a file or directory path ({EXPECTED})")
    if path.is_dir():
        docs: Iterable[Document] = iter_text_dir(path)
    else:
        suffix = _base_suffix(path)
        if suffix in (".jsonl", ".ndjson"):
            records: Iterable[Any] = (rec for _, rec in iter_jsonl(path, "one JSON object per line"))
        elif suffix == ".json":
            with _open_text(path) as f:
                try:
                    data = json.load(f)
                except json.JSONDecodeError as e:
                    raise ParseError(
                        f"{path}: not valid JSON ({e}); use .jsonl for one object per line"
                    ) from None
            records = _json_records(data, path)
        elif suffix == ".parquet":
            records = iter_parquet(path)
        elif suffix in TEXT_SUFFIXES:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            records = [{"id": path.stem, "title": path.stem, "text": text}]
        else:
            raise ConfigError(
                f"corpus {str(spec)!r}: unknown file type {suffix or '(none)'!r}; use .jsonl, .json, .parquet "
                f"(optionally .gz) or a directory of text files"
            )
        docs = records_to_documents(records, fields=fields, source=str(path))
    if chunk_words:
        docs = chunk_documents(docs, max_words=chunk_words)
    return iter(docs)


# ----------------------------------------------------------------------------- chunking


def chunk_documents(docs: Iterable[Document], *, max_words: int, overlap: int = 0) -> Iterator[Document]:
    """Split passages longer than `max_words` words into windows of at most `max_words` words.

    Each chunk keeps the title and gets id `docid#i` (i from 0) and metadata `parent`, `chunk`;
    passages that fit stay whole under their own id. `overlap` words are repeated between windows.
    """
    if not isinstance(max_words, int) or max_words < 1:
        raise ConfigError(f"chunk size must be a positive number of words, got {max_words!r}")
    if not isinstance(overlap, int) or not 0 <= overlap < max_words:
        raise ConfigError(f"chunk overlap must be in [0, {max_words}), got {overlap!r}")
    step = max_words - overlap
    for doc in docs:
        words = doc.text.split()
        if len(words) <= max_words:
            yield doc
            continue
        starts = range(0, max(len(words) - overlap, 1), step)
        for i, start in enumerate(starts):
            meta = {**doc.metadata, "parent": doc.id, "chunk": i}
            yield Document(f"{doc.id}#{i}", doc.title, " ".join(words[start : start + max_words]), meta)
