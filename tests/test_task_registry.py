"""The task registry (``workbench.tasks``) is the one task list: everything else is derived from it,
and every task goes the whole way: added, judged, labelled, agreed on and calibrated."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from workbench import store, tasks, types
from workbench.calibration import judging, labelling
from workbench.calibration.agreement import CALIBRATED, REPORT_TASKS, calibrate_task
from workbench.cli import labels as cli_labels
from workbench.cli import main
from workbench.judges.prompts import PROMPT_NAMES
from workbench.store.versions import TASK_FIELDS

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------
# the records


def test_each_task_has_two_values_positive_first_and_keys_1_and_2():
    assert len(tasks.REGISTRY) == len(set(tasks.TASK_NAMES)) == 6
    for task in tasks.REGISTRY:
        assert len(set(task.values)) == 2
        assert task.positive == task.values[0] and task.negative == task.values[1]
        assert task.keys == {"1": task.positive, "2": task.negative}
        assert task.unit in tasks.UNIT_KINDS
        assert task.prompt in PROMPT_NAMES, f"{task.name}: no prompt template {task.prompt!r}"
        assert set(task.hashed_fields) <= {"answer", "passages", "reference"}
    with pytest.raises(KeyError, match="expected one of claim_support"):
        tasks.get("nonsense")


def test_old_names_are_the_registry():
    assert types.TASK_VALUES is tasks.TASK_VALUES
    assert types.TASKS == tasks.TASK_NAMES
    assert list(TASK_FIELDS) == list(tasks.TASK_NAMES)
    assert labelling.DEFAULT_TASKS == ("claim_support", "answer_faithfulness", "answer_relevance", "abstention")
    assert (labelling.CLAIM_TASK, labelling.PASSAGE_TASK) == ("claim_support", "context_relevance")
    # the agreement --json contract's fixed tasks and the thresholds.json keys, in their contract order
    assert REPORT_TASKS == ("claim_support", "answer_relevance", "answer_faithfulness", "abstention")
    assert CALIBRATED == {"faithfulness": "answer_faithfulness", "answer_relevance": "answer_relevance",
                          "claim_support": "claim_support"}


def test_judging_dispatch_covers_every_task():
    assert judging.JUDGED_TASKS == tasks.TASK_NAMES
    assert {task.method for task in tasks.REGISTRY} == set(judging.TASK_JUDGES)


def test_cli_choices_are_the_registry():
    judge_task = next(p for p in main.get_command(None, "judge").params if p.name == "tasks")
    assert tuple(judge_task.type.choices) == tasks.TASK_NAMES
    assert cli_labels.parse_tasks(",".join(tasks.TASK_NAMES)) == tasks.TASK_NAMES
    add = cli_labels.labels.commands["add"]
    tasks_option = next(p for p in add.params if p.name == "tasks")
    assert tasks_option.default == (",".join(tasks.DEFAULT_TASKS),)
    for name in tasks.TASK_NAMES:
        assert name in tasks_option.help


def test_guidelines_list_every_task_with_its_values_in_registry_order():
    text = (ROOT / "labels" / "guidelines.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\w+) — `(\w+)` / `(\w+)`$", text, flags=re.MULTILINE)
    assert [(name, (pos, neg)) for name, pos, neg in headings] == list(tasks.TASK_VALUES.items())


def test_quadrant_cells_are_defined_once():
    from workbench.metrics.quadrant import SHARE_CELLS
    from workbench.reports.charts import QUADRANT_COLORS
    from workbench.reports.console import QUADRANT_ROUTES
    from workbench.reports.tables import QUADRANT_MEANING

    names = tuple(cell.name for cell in types.QUADRANT_CELLS)
    assert types.QUADRANTS == names
    assert tuple(QUADRANT_ROUTES) == tuple(QUADRANT_COLORS) == tuple(QUADRANT_MEANING) == names
    assert SHARE_CELLS == ("pass", "faithful_irrelevant", "relevant_unfaithful", "fail")


# ------------------------------------------------------------------------------------------
# every task, the whole way, with the offline judge


def _eval_set(path: Path) -> Path:
    """16 items with two passages and a reference each; answers cycle through a refusal, a correct
    and supported answer, a wrong one and an off-topic one, so every task sees both values."""
    rows = []
    for i in range(16):
        passages = [{"id": f"p{i}a", "text": f"The museum in town {i} opened in {1900 + i}. It has {i + 3} rooms."},
                    {"id": f"p{i}b", "text": "The weather in the region is mild and rainy in spring."}]
        answer = ["I don't know; the documents do not say.",
                  f"The museum in town {i} opened in {1900 + i}. It has {i + 3} rooms.",
                  f"The museum in town {i} opened in 1850 and has a rooftop garden.",
                  "The weather in the region is mild and rainy in spring."][i % 4]
        rows.append({"id": f"q{i}", "question": f"When did the museum in town {i} open?", "answer": answer,
                     "contexts": passages, "reference": f"The museum in town {i} opened in {1900 + i}."})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _human_labels(db_path: Path, task: tasks.Task, out: Path) -> Path:
    """Two annotators: ``ann`` mostly follows the judge (both classes guaranteed), ``bob`` agrees
    with ``ann`` except on every fifth unit."""
    with store.open_db(db_path, create=False) as db:
        units = store.list_units(db, task=task.name)
        judged = {j.unit_id: j.value for j in store.list_judgments(db) if j.task == task.name and j.error is None}
    ann = [judged.get(u.unit_id) or task.negative for u in units]
    for value in task.values:  # at least three units of each class
        if ann.count(value) < 3:
            other = [i for i, v in enumerate(ann) if v != value][:3]
            for i in other:
                ann[i] = value
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["task", "item_id", "claim_index", "annotator", "value"])
        for index, (unit, value) in enumerate(zip(units, ann)):
            index_text = "" if unit.claim_index is None else unit.claim_index
            writer.writerow([task.name, unit.item_id, index_text, "ann", value])
            flipped = task.negative if value == task.positive else task.positive
            writer.writerow([task.name, unit.item_id, index_text, "bob", flipped if index % 5 == 4 else value])
    return out


@pytest.mark.parametrize("task", tasks.REGISTRY, ids=lambda t: t.name)
def test_every_task_is_added_judged_labelled_agreed_on_and_calibrated(task, tmp_path, monkeypatch):
    for name in ("WORKBENCH_JUDGE", "WORKBENCH_MODEL", "WORKBENCH_EMBEDDING_MODEL", "WORKBENCH_DB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    runner = CliRunner()
    db = tmp_path / "store.db"

    def run(*args: str) -> str:
        result = runner.invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    added = run("labels", "add", str(_eval_set(tmp_path / "eval.jsonl")), "--db", str(db), "--judge", "offline",
                "--tasks", task.name)
    made = re.search(rf"units: \d+ new \({task.name} (\d+)\)", added)
    assert made, added
    n_units = int(made.group(1))
    assert n_units == {"claim": n_units, "answer": 16, "passage": 32}[task.unit] and n_units >= 12

    # refusals are not scored for faithfulness (an error by design), hence --max-failed
    summary = json.loads(run("judge", "--db", str(db), "--judge", "offline", "--task", task.name, "--json",
                             "--max-failed", "0.5"))
    assert list(summary["judged"]) == [task.name]
    errors = (summary.get("errors") or {}).get(task.name, 0)
    assert summary["judged"][task.name] + errors == n_units and errors <= n_units // 4

    labels_file = _human_labels(db, task, tmp_path / "labels.csv")
    imported = run("labels", "import", str(labels_file), "--db", str(db))
    assert f"imported {2 * n_units} labels" in imported and task.name in imported

    report = json.loads(run("agreement", "--db", str(db), "--json", "--n-boot", "50"))
    block = report[task.name]
    assert block, f"{task.name} missing from the agreement report"
    fingerprint = summary["judge"]
    assert fingerprint in block["judges"]
    assert block["judges"][fingerprint]["n"] >= 10
    assert block["human"]["n"] >= 10 and len(block["human"]["pairwise_kappa"]) == 1  # ann vs bob

    with store.open_db(db, create=False) as opened:
        entry, note = calibrate_task(opened, task.name, fingerprint, rng=np.random.default_rng(0), n_boot=50)
    assert entry is not None, note
    assert 0.0 <= entry["threshold"] <= 1.0 and entry["n"] >= 10
    if task.threshold_key:  # the thresholds.json keys go through the command too
        payload = json.loads(run("calibrate", "--db", str(db), "--json", "--n-boot", "50",
                                 "--out", str(tmp_path / "thresholds.json")))
        assert payload[task.threshold_key]["threshold"] == entry["threshold"]
        assert json.loads((tmp_path / "thresholds.json").read_text())[task.threshold_key] == payload[task.threshold_key]
