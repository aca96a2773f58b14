"""The pipeline's filter step: `FilterStep` applies one filter of `synth.pipeline.filters.FILTERS` by name,
counts every reason as `dropped_<reason>` and sends dropped records with their reason to an exclusion writer.

    FilterStep("correct", options={"metric": "em"}, exclusion_folder="OUT/dropped")

Not covered: the filters themselves (plain functions in `synth.pipeline.filters`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import Any

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from agentic_infer.errors import ConfigError
from synth.pipeline.filters import Result, get_filter
from synth.pipeline.records import doc_example, doc_trajectory, groups
from synth.pipeline.writers import exclusion_writer


class FilterStep(PipelineStep):
    """One filter of `synth.pipeline.filters.FILTERS` by name with its options; dropped records go to
    `exclusion_writer` (datatrove's exclusion-writer mechanism: `metadata["filter_reason"]` + a writer) and
    every reason is counted as `dropped_<reason>`."""

    type = "🔻 - FILTER"

    def __init__(self, name: str, *, options: Mapping[str, Any] | None = None, exclusion_folder: str | None = None,
                 label: str | None = None):
        self.name = label or f"filter:{name}"
        super().__init__()
        self.spec = get_filter(name)
        self.opts = dict(options or {})
        sig = inspect.signature(self.spec.fn)
        takes = [p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        bad = sorted(set(self.opts) - {p.name for p in takes})
        if bad:
            raise ConfigError(f"filter {name!r}: unknown option(s) {bad}; it takes {[p.name for p in takes]}")
        self.exclusion_folder = exclusion_folder

    def _decide(self, data: DocumentsPipeline) -> Iterator[tuple[Document, Result]]:
        scope, fn = self.spec.scope, self.spec.fn
        if scope == "trajectory":
            for doc in data or ():
                yield doc, fn(doc_trajectory(doc), **self.opts)
        elif scope == "group":
            for g in groups(data or ()):
                yield from zip(g, fn([doc_trajectory(d) for d in g], **self.opts))
        elif scope == "dataset":
            gs = list(groups(data or ()))
            for g, res in zip(gs, fn([[doc_trajectory(d) for d in g] for g in gs], **self.opts)):
                for d in g:
                    yield d, res
        else:
            check = fn(**self.opts)
            for doc in data or ():
                text = doc_example(doc).get("question", "") if self.spec.text == "question" else doc.text
                yield doc, check(str(text or doc.text))

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        writer = exclusion_writer(self.exclusion_folder, self.name.replace(":", "_")) if self.exclusion_folder else None
        try:
            for doc, res in self._decide(data):
                self.stat_update("total")
                keep, reason = (res if isinstance(res, tuple) else (res, None))
                if keep:
                    self.stat_update("forwarded")
                    yield doc
                    continue
                self.stat_update("dropped", f"dropped_{reason or 'unspecified'}")
                if writer is not None:
                    doc.metadata["filter_reason"] = reason
                    writer.write(doc, rank)
        finally:
            if writer is not None:
                writer.close()


__all__ = ["FilterStep"]
