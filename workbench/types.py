"""Frozen value types shared by every layer of the workbench.

Nothing here does I/O. A metric that has nothing to score returns ``None``, never 0 or NaN.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# Label tasks and their allowed values, first value = the "positive" class: from the task registry.
from workbench.tasks import TASK_NAMES as TASKS  # noqa: F401  (re-exported)
from workbench.tasks import TASK_VALUES  # noqa: F401  (re-exported)

Quadrant = Literal["pass", "faithful_irrelevant", "relevant_unfaithful", "fail", "abstained", "unscored"]


@dataclass(frozen=True)
class QuadrantCell:
    """One cell of the faithfulness x relevance quadrant, as every table and chart shows it.

    ``meaning`` is the one-line reading, ``route`` the backlog the work goes to (``""`` for
    none), ``color`` the chart colour, ``share`` whether the cell's share gets an interval (the
    four cells of the plot; ``abstained`` and ``unscored`` are not on it).
    """

    name: str
    meaning: str
    route: str
    color: str
    share: bool = True


#: The quadrant cells in the contract's order (``summary.json`` ``quadrant``); the one definition.
QUADRANT_CELLS: tuple[QuadrantCell, ...] = (
    QuadrantCell("pass", "faithful and relevant", "", "#2e7d32"),
    QuadrantCell("faithful_irrelevant", "grounded but off the question", "retrieval backlog", "#1565c0"),
    QuadrantCell("relevant_unfaithful", "on topic but not grounded", "generation backlog", "#8e24aa"),
    QuadrantCell("fail", "neither", "both backlogs", "#c62828"),
    QuadrantCell("abstained", "the answer refused", "see abstention", "#546e7a", share=False),
    QuadrantCell("unscored", "a score is missing", "see errors", "#9e9e9e", share=False),
)
QUADRANTS: tuple[str, ...] = tuple(cell.name for cell in QUADRANT_CELLS)


@dataclass(frozen=True)
class Passage:
    """One retrieved (or corpus) passage."""

    id: str
    text: str
    source: str | None = None
    score: float | None = None


@dataclass(frozen=True)
class EvalItem:
    """One row of an eval set: a question, the RAG system's answer and what it retrieved.

    ``answerable`` is ``False`` when the correct output is a refusal. ``gold_context_ids`` is
    ``None`` when the eval set gives no gold passages (retrieval is then not scored).
    ``line`` is the 1-based line (or CSV row) the item came from, for error messages.
    """

    id: str
    question: str
    answer: str
    contexts: tuple[Passage, ...]
    reference: str | None = None
    gold_context_ids: tuple[str, ...] | None = None
    answerable: bool = True
    line: int | None = None


@dataclass(frozen=True)
class Claim:
    """An atomic claim decomposed from an answer; ``citations`` are ids cited next to it."""

    index: int
    text: str
    citations: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClaimVerdict:
    """A judge's verdict on one claim against the passages.

    ``quote`` is the span the judge says supports the claim (``None`` for NONE).
    ``quote_found`` is filled in code (never by the judge): ``True`` when the quote was located in
    a passage, ``False`` when the judge invented it, ``None`` when there was no quote.
    ``score`` is the judge's continuous support score in [0, 1].
    ``quote_hallucinated`` is True when the judge said supported with a quote that is not in any passage.
    When the quote is found, ``quote`` is the passage's own text for it (a genuine substring) and
    ``judge_quote`` what the judge wrote.
    """

    claim: str
    supported: bool
    score: float
    quote: str | None = None
    quote_found: bool | None = None
    passage_id: str | None = None
    reason: str = ""
    match_score: float | None = None
    quote_hallucinated: bool = False
    error: str | None = None
    judge_quote: str | None = None

    def to_record(self) -> dict:
        record = {
            "text": self.claim,
            "supported": self.supported,
            "quote": self.quote,
            "quote_found": self.quote_found,
            "passage_id": self.passage_id,
            "score": self.score,
            "reason": self.reason,
        }
        if self.judge_quote is not None and self.judge_quote != self.quote:
            record["judge_quote"] = self.judge_quote
        return record


@dataclass(frozen=True)
class ContextVerdict:
    """A judge's verdict on whether one retrieved passage is useful for answering the question."""

    passage_id: str
    relevant: bool
    score: float
    reason: str = ""
    error: str | None = None


@dataclass(frozen=True)
class FaithfulnessResult:
    """Faithfulness of one answer: supported claims / all claims; ``None`` when there are no claims."""

    score: float | None
    verdicts: tuple[ClaimVerdict, ...] = ()
    n_quotes: int = 0
    n_quote_hallucinated: int = 0


@dataclass(frozen=True)
class RelevanceResult:
    """Answer relevance: mean cosine of reverse questions to the real question; ``None`` if none."""

    score: float | None
    questions: tuple[tuple[str, float], ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Interval:
    """A confidence interval; ``low``/``high`` are ``None`` when it cannot be computed."""

    low: float | None
    high: float | None
    level: float = 0.95

    def as_list(self) -> list[float | None]:
        return [self.low, self.high]


@dataclass(frozen=True)
class Unit:
    """One thing a human or judge labels.

    ``unit_id`` is ``"<task>:<item_id>:<claim_index>"`` for claims and ``"<task>:<item_id>"`` for
    answer-level tasks (``claim_index`` is then ``None``). That is the unit's *slot*; a later
    version of the slot's text (``workbench.store.versions``) gets ``"<slot id>@<hash prefix>"``.
    ``text_hash`` is the hash of the text labelled, set by the store (``None`` before storing);
    it takes no part in equality.
    """

    unit_id: str
    task: str
    item_id: str
    claim_index: int | None
    text: str
    text_hash: str | None = field(default=None, compare=False)

    @staticmethod
    def make_id(task: str, item_id: str, claim_index: int | None = None) -> str:
        return f"{task}:{item_id}" if claim_index is None else f"{task}:{item_id}:{claim_index}"


@dataclass(frozen=True)
class Label:
    """One human label row (append-only log); the latest row per (unit, annotator) is current."""

    unit_id: str
    task: str
    annotator: str
    value: str
    note: str | None = None
    created_at: str | None = None


@dataclass(frozen=True)
class Judgment:
    """A judge's verdict on one unit, with the judge fingerprint and its continuous score."""

    unit_id: str
    task: str
    judge: str
    value: str
    score: float | None = None
    quote: str | None = None
    quote_found: bool | None = None
    repeat: int = 0
    error: str | None = None
    created_at: str | None = None


@dataclass(frozen=True)
class JudgeUsage:
    """Cost ledger of a judge over a run."""

    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Thresholds:
    """Pass thresholds for the quadrant; ``source`` says where they came from."""

    faithfulness: float = 0.85
    answer_relevance: float = 0.70
    claim_support: float | None = None
    source: str = "default"
    judge: str | None = None


# -- the records of one scored item (``items.jsonl``) ----------------------------------------------


@dataclass(frozen=True)
class RetrievalResult:
    """Recall@k, precision@k and MRR of one ranked retrieval list against its gold ids."""

    k: int
    recall_at_k: float
    precision_at_k: float
    mrr: float

    def to_record(self) -> dict[str, int | float]:
        return {"k": self.k, "recall_at_k": self.recall_at_k, "precision_at_k": self.precision_at_k, "mrr": self.mrr}


@dataclass(frozen=True)
class CitationCheck:
    """One citation: ``in_corpus`` is ``None`` when no corpus was given and the id was not
    retrieved (existence unknown); ``supports`` is ``None`` when the cited text is unavailable
    or the judge call failed (``error`` says which)."""

    id: str
    sentence: str
    in_corpus: bool | None
    retrieved: bool
    supports: bool | None
    error: str | None = None

    def to_record(self) -> dict[str, str | bool | None]:
        return {"id": self.id, "in_corpus": self.in_corpus, "retrieved": self.retrieved, "supports": self.supports}


@dataclass(frozen=True)
class CorrectnessResult:
    """Claim-level correctness against the reference; ``similarity`` is an optional cosine."""

    precision: float | None
    recall: float | None
    f1: float | None
    tp: int = 0
    fp: int = 0
    fn: int = 0
    similarity: float | None = None

    def to_record(self) -> dict[str, int | float | None]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1, "tp": self.tp, "fp": self.fp,
                "fn": self.fn, "similarity": self.similarity}


@dataclass(frozen=True)
class ReverseQuestion:
    """A question written from the answer alone and its cosine similarity (in [-1, 1]) to the real question."""

    question: str
    similarity: float

    def to_record(self) -> dict[str, str | float]:
        return {"question": self.question, "similarity": self.similarity}


def passage_judgment_record(verdict: ContextVerdict) -> dict[str, str | bool | float]:
    """The ``items.jsonl`` form of one passage judgment (``context_judgments``): id, relevant, score."""
    return {"id": verdict.passage_id, "relevant": verdict.relevant, "score": verdict.score}


@dataclass(frozen=True)
class ItemScore:
    """Everything ``workbench score`` found on one item; :meth:`to_record` is its ``items.jsonl`` line.

    A metric left out or with nothing to score is ``None`` (lists are empty). ``abstained`` is
    ``None`` when no refusal check ran or it failed. ``errors`` holds one message per failed
    judge call (the affected metric is ``None``); ``notes`` the recorded input truncations, and is
    ``None`` only on the record of an item whose scoring raised (that record has no ``notes`` key).
    ``gold_context_ids`` is the item's gold passages, kept for the summary's judge-vs-gold kappa
    and not written. The quote tallies of the summary (:attr:`n_quotes`,
    :attr:`n_quote_hallucinated`) are counted from ``claims``.
    """

    id: str
    faithfulness: float | None = None
    answer_relevance: float | None = None
    quadrant: str = "unscored"
    claims: tuple[ClaimVerdict, ...] = ()
    reverse_questions: tuple[ReverseQuestion, ...] = ()
    abstained: bool | None = None
    answerable: bool = True
    retrieval: RetrievalResult | None = None
    citations: tuple[CitationCheck, ...] = ()
    context_precision: float | None = None
    context_precision_id_based: float | None = None
    context_judgments: tuple[ContextVerdict, ...] = ()
    context_recall: float | None = None
    reference_statements: tuple[ClaimVerdict, ...] = ()
    correctness: CorrectnessResult | None = None
    diagnosis: str = "insufficient_data"
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] | None = ()
    gold_context_ids: tuple[str, ...] = ()

    @property
    def n_quotes(self) -> int:
        """Claims whose verdict carries a quote."""
        return sum(1 for c in self.claims if c.quote)

    @property
    def n_quote_hallucinated(self) -> int:
        """Claims judged supported with a quote found in no passage."""
        return sum(1 for c in self.claims if c.quote_hallucinated)

    def to_record(self) -> dict[str, object]:
        """The ``items.jsonl`` record (the contract's keys, in its order; internal fields left out)."""
        record: dict[str, object] = {
            "id": self.id,
            "faithfulness": self.faithfulness,
            "answer_relevance": self.answer_relevance,
            "quadrant": self.quadrant,
            "claims": [c.to_record() for c in self.claims],
            "reverse_questions": [q.to_record() for q in self.reverse_questions],
            "abstained": self.abstained,
            "answerable": self.answerable,
            "retrieval": self.retrieval.to_record() if self.retrieval else None,
            "citations": [c.to_record() for c in self.citations],
            "context_precision": self.context_precision,
            "context_precision_id_based": self.context_precision_id_based,
            "context_judgments": [passage_judgment_record(v) for v in self.context_judgments],
            "context_recall": self.context_recall,
            "reference_statements": [v.to_record() for v in self.reference_statements],
            "correctness": self.correctness.to_record() if self.correctness else None,
            "diagnosis": self.diagnosis,
            "errors": list(self.errors),
        }
        if self.notes is not None:
            record["notes"] = list(self.notes)
        return record
