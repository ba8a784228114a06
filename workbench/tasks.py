"""The label tasks: one frozen record per task, from which every task list is derived.

The CLI choices (``judge --task``, ``labels add --tasks``), the app's options (Label and Data
pages), the judging dispatch (``calibration.judging``), the agreement report's fixed tasks, the
thresholds a calibration writes, the fields a unit's text hash covers and the guidelines' task
list (checked by a test) all come from :data:`REGISTRY`. Adding a task means adding one record
here (plus its judging function and its guidelines section, which tests demand).

Pure data, stdlib only: importing this module costs nothing (the CLI reads it for ``--help``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

UnitKind = Literal["claim", "answer", "passage"]
UNIT_KINDS: tuple[str, ...] = ("claim", "answer", "passage")
#: Label-page keys: key 1 is the task's positive value, key 2 the other, in every task.
LABEL_KEYS: tuple[str, str] = ("1", "2")


@dataclass(frozen=True)
class Task:
    """One label task.

    Attributes:
        name: the task's name in every file, table and option (``claim_support``).
        unit: what one unit is: a ``claim`` of an answer, the whole ``answer``, or one retrieved
            ``passage`` (one unit per passage, ``claim_index`` = its rank from 0).
        values: the two allowed values, positive first (category order of every confusion matrix).
        prompt: name of the LLM judge's prompt template that decides the verdict
            (``workbench/judges/prompts/<prompt>_v<N>.txt``).
        method: the judge/metric the judging dispatch calls for this task (resolved by name in
            ``calibration.judging.TASK_JUDGES``; this module imports no judge).
        hashed_fields: item fields besides the question and the unit's own text that a label on
            this task depends on (``store.versions.text_hash``): ``answer``, ``passages``, ``reference``.
        needs_reference: units are made only for items with a reference answer.
        default: ``labels add`` (and the app's Data page) make units for it unless told otherwise.
        report_rank: position in the agreement report's fixed task list (the ``agreement --json``
            contract); ``None``: listed only when the store has units for it.
        threshold_key: the ``thresholds.json`` key a calibration of its judge score writes;
            ``None``: not calibrated to a threshold.
        evidence: the Label page shows the passages (with the judge's quote) next to the unit.
    """

    name: str
    unit: UnitKind
    values: tuple[str, str]
    prompt: str
    method: str
    hashed_fields: tuple[str, ...] = ()
    needs_reference: bool = False
    default: bool = False
    report_rank: int | None = None
    threshold_key: str | None = None
    evidence: bool = False

    @property
    def positive(self) -> str:
        """The positive value (the first of ``values``)."""
        return self.values[0]

    @property
    def negative(self) -> str:
        """The other value."""
        return self.values[1]

    @property
    def keys(self) -> dict[str, str]:
        """Label-page key -> value: ``{"1": positive, "2": negative}``."""
        return dict(zip(LABEL_KEYS, self.values))


REGISTRY: tuple[Task, ...] = (
    Task("claim_support", "claim", ("supported", "unsupported"), prompt="verify", method="verify_claim",
         hashed_fields=("answer", "passages"), default=True, report_rank=0, threshold_key="claim_support",
         evidence=True),
    Task("answer_faithfulness", "answer", ("faithful", "unfaithful"), prompt="verify", method="faithfulness",
         hashed_fields=("passages",), default=True, report_rank=2, threshold_key="faithfulness", evidence=True),
    Task("answer_relevance", "answer", ("relevant", "not_relevant"), prompt="reverse_questions",
         method="answer_relevance", default=True, report_rank=1, threshold_key="answer_relevance"),
    Task("abstention", "answer", ("refused", "answered"), prompt="refusal", method="is_refusal", default=True,
         report_rank=3),
    Task("context_relevance", "passage", ("relevant", "not_relevant"), prompt="context_relevance",
         method="judge_context"),
    Task("answer_correctness", "answer", ("correct", "incorrect"), prompt="verify", method="answer_correctness",
         hashed_fields=("reference",), needs_reference=True),
)

#: name -> task record, in registry order.
BY_NAME: dict[str, Task] = {task.name: task for task in REGISTRY}
#: Every task name, in registry order.
TASK_NAMES: tuple[str, ...] = tuple(BY_NAME)
#: name -> its two values, positive first.
TASK_VALUES: dict[str, tuple[str, str]] = {task.name: task.values for task in REGISTRY}
#: The tasks ``labels add`` makes units for by default.
DEFAULT_TASKS: tuple[str, ...] = tuple(task.name for task in REGISTRY if task.default)
#: The tasks the agreement report always lists, in the contract's order.
REPORT_TASKS: tuple[str, ...] = tuple(task.name for task in sorted(
    (t for t in REGISTRY if t.report_rank is not None), key=lambda t: t.report_rank or 0))


def get(name: str) -> Task:
    """The task called ``name``; ``KeyError`` listing the known tasks otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}: expected one of {', '.join(TASK_NAMES)}") from None


def tasks_of_unit(kind: str) -> tuple[str, ...]:
    """Names of the tasks whose unit is ``kind`` (``claim``, ``answer`` or ``passage``), registry order."""
    return tuple(task.name for task in REGISTRY if task.unit == kind)


def by_threshold_key() -> dict[str, str]:
    """``thresholds.json`` key -> task name, for the tasks whose judge score is calibrated."""
    return {task.threshold_key: task.name for task in REGISTRY if task.threshold_key}
