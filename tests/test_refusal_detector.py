"""Offline refusal detector: contract cases, held-out targets, determinism, weights file, data file."""
from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from workbench.jsonl import read_jsonl
from workbench.judges.offline import OfflineEmbedder, OfflineJudge
from workbench.judges.refusal import (
    CUE_NAMES,
    DEFAULT_REFUSAL_MODEL_PATH,
    EMBEDDING_FEATURES,
    RefusalDetector,
    RefusalModel,
    canonical_head,
    feature_matrix,
    head_ngrams,
    head_text,
    load_refusal_model,
    refusal_cues,
)

ROOT = Path(__file__).resolve().parents[1]
CASES = json.loads((ROOT / "tests" / "cases" / "refusal" / "contract.json").read_text(encoding="utf-8"))["cases"]
RAG_ROWS = read_jsonl(ROOT / "data" / "rag_abstention.jsonl")


@pytest.fixture(scope="module")
def detector() -> RefusalDetector:
    return RefusalDetector(OfflineEmbedder().embed_sync)


def _contract_params() -> list:
    """Every contract case; one the bundled model is known to miss (``known_miss`` says why) is a
    strict expected failure: reported on every run, and the run fails once the model gets it right,
    so the note is then removed rather than left stale."""
    return [pytest.param(c, id=c["id"], marks=pytest.mark.xfail(strict=True, reason=c["known_miss"]))
            if c.get("known_miss") else pytest.param(c, id=c["id"]) for c in CASES]


@pytest.mark.parametrize("case", _contract_params())
def test_contract_cases(detector, case):
    assert detector.is_refusal(case["answer"]) is case["refused"], detector.score(case["answer"])


def test_held_out_rag_split_floor(detector):
    # The fixed test split (never fitted on), at the model's own threshold. Floors, not the
    # figures: the fitting script prints those (95.5% caught, 96.6% of negative-sounding answers
    # left alone on the whole split of 28 authors when this was written). The first round's
    # held-out rows (ids up to 687) are checked on their own so later rows, which get their split
    # from the same hash rule, cannot dilute them; their negative-sounding floor is 0.85 since
    # round 6 (55 of 62: a model fitted on 28 authors flags some of this author's "never ..."
    # facts, which other authors write as false-premise refusals).
    test = [r for r in RAG_ROWS if r["split"] == "test"]
    flagged = detector.scores([r["answer"] for r in test]) >= detector.threshold
    first = [int(r["id"].rsplit("-", 1)[-1]) <= 687 for r in test]

    def share(keep):
        picked = [bool(f) == (r["label"] == "refused") for f, r, one in zip(flagged, test, first) if keep(r, one)]
        return len(picked), sum(picked) / len(picked)

    negative_sounding = ("negative_fact", "source_negative")
    n, caught = share(lambda r, one: one and r["label"] == "refused")
    assert n == 126 and caught >= 0.90
    n, left = share(lambda r, one: one and r["kind"] in negative_sounding)
    assert n == 62 and left >= 0.85
    n, caught = share(lambda r, one: r["label"] == "refused")
    assert n > 1500 and caught >= 0.90
    n, left = share(lambda r, one: r["kind"] in negative_sounding)
    assert n > 900 and left >= 0.93
    n, right = share(lambda r, one: True)
    assert n > 3000 and right >= 0.90


@pytest.fixture(scope="module")
def independent_rows() -> list[dict]:
    """The independent file's rows, read once for this module's tests (not at collection: the file
    is 16 MB, and a run that selects none of these tests should not read it)."""
    return read_jsonl(ROOT / "data" / "rag_abstention_independent.jsonl")


@pytest.fixture(scope="module")
def unseen_authors(independent_rows) -> list[str]:
    """Authors of the independent file no fit has seen: every one of their rows is ``test``."""
    return sorted({r["author"] for r in independent_rows} - {r["author"] for r in independent_rows
                                                             if r["split"] == "fit"})


def test_independent_data_file(independent_rows, unseen_authors):
    # Written by authors who saw neither the detector nor any other row, each given only the
    # labelling rules or a writing brief. An author arrives unseen (every row "test") and may later
    # be promoted into the fit pool, whole, with the RAG file's hash split; never partly.
    rows = independent_rows
    assert len({r["id"] for r in rows}) == len(rows) == len({r["answer"] for r in rows})
    others = RAG_ROWS + read_jsonl(ROOT / "data" / "rag_abstention_chat.jsonl")
    assert not {r["answer"] for r in rows} & {r["answer"] for r in others}
    assert not {r["author"] for r in rows} & {r["author"] for r in RAG_ROWS}
    unseen = set(unseen_authors)
    for r in rows:
        hashed = "test" if hashlib.sha256(r["id"].encode()).digest()[0] % 3 == 0 else "fit"
        assert r["split"] == ("test" if r["author"] in unseen else hashed), r["id"]
    assert len(unseen) >= 16


def test_unseen_authors_floor(detector, independent_rows, unseen_authors):
    # The authors no fit has seen, at the model's own threshold. Floors per author and overall,
    # under the figures the fitting script prints as unseen_authors_test (authors 223-238 when this
    # was written: 96.1% caught and 97.6% of negative-sounding answers left alone overall, the
    # issue's targets being 95% and 95%; the weakest author 91.9% caught (author-232), the weakest
    # negative-sounding share 85/90 (author-236)).
    unseen = set(unseen_authors)
    rows = [r for r in independent_rows if r["author"] in unseen]
    flagged = detector.scores([r["answer"] for r in rows]) >= detector.threshold
    for author in [None, *unseen_authors]:
        mine = [(f, r) for f, r in zip(flagged, rows) if author in (None, r["author"])]
        caught = [f for f, r in mine if r["label"] == "refused"]
        left = [not f for f, r in mine if r["kind"] in ("negative_fact", "source_negative")]
        assert len(caught) >= 140 and len(left) >= 80, author
        assert sum(caught) / len(caught) >= (0.95 if author is None else 0.90), author
        assert sum(left) / len(left) >= (0.96 if author is None else 0.92), author


def test_chat_data_file():
    rows = read_jsonl(ROOT / "data" / "rag_abstention_chat.jsonl")
    assert {r["label"] for r in rows} == {"refused", "answered"} and len({r["answer"] for r in rows}) == len(rows)
    for r in rows:
        expected = "test" if hashlib.sha256(r["id"].encode()).digest()[0] % 3 == 0 else "fit"
        assert r["split"] == expected, r["id"]
    assert not {r["answer"] for r in rows} & {r["answer"] for r in RAG_ROWS}


def test_second_reading_file():
    # Two readers labelled 600 independent answers again from the answer alone: every id is an
    # independent row, both readers labelled the same ids, and the labels are the file's two.
    rows = read_jsonl(ROOT / "data" / "rag_abstention_second_reading.jsonl")
    independent = {r["id"] for r in read_jsonl(ROOT / "data" / "rag_abstention_independent.jsonl")}
    by_reader: dict[str, list[str]] = {}
    for r in rows:
        assert r["label"] in ("refused", "answered") and r["id"] in independent, r
        by_reader.setdefault(r["reader"], []).append(r["id"])
    assert len(by_reader) == 2
    first, second = by_reader.values()
    assert len(first) == len(set(first)) == 600 and set(first) == set(second)


def test_offline_judge_uses_the_detector():
    judge = OfflineJudge()
    assert asyncio.run(judge.is_refusal("Nothing in these pages answers that.")) is True
    assert asyncio.run(judge.is_refusal("Trials do not renew into paid plans.")) is False
    assert 0.0 <= asyncio.run(judge.refusal_score("I have no source for that.")) <= 1.0
    assert asyncio.run(judge.refusal_score("")) == 1.0


def test_deterministic_and_batch_equals_single(detector):
    answers = [c["answer"] for c in CASES]
    batch = detector.scores(answers)
    assert np.array_equal(batch, detector.scores(answers))
    assert np.allclose(batch, [detector.score(a) for a in answers])
    assert ((batch >= 0) & (batch <= 1)).all()
    assert detector.scores([]).shape == (0,)


def test_empty_answer_is_a_refusal_without_the_model(detector):
    assert head_text("") == "" and head_text("  \n ") == ""
    assert detector.score("") == 1.0 and detector.is_refusal("\n")
    assert feature_matrix([""], detector.embed)[0, :EMBEDDING_FEATURES].tolist() == [0.0] * EMBEDDING_FEATURES


def test_head_reads_the_first_sentences_only():
    long = "Refunds take 30 days. Plans renew yearly. Support is open daily. " + "I don't know. " * 20
    assert "i don't know" not in head_text(long)
    cues = dict(zip(CUE_NAMES, refusal_cues("I don't know.")))
    assert cues["dont_know"] == 1.0 and cues["first_dont_know"] == 1.0 and cues["has_number"] == 0.0


def test_source_that_tells_a_negative_is_not_a_silent_source():
    told = dict(zip(CUE_NAMES, refusal_cues("The hotel's page says breakfast is not included in the rate.")))
    silent = dict(zip(CUE_NAMES, refusal_cues("The hotel's pages don't mention breakfast.")))
    assert told["source_silent"] == 0.0 and told["source_attribution"] == 1.0
    assert silent["source_silent"] == 1.0


def test_weights_file_is_checked(tmp_path):
    spec = json.loads(DEFAULT_REFUSAL_MODEL_PATH.read_text(encoding="utf-8"))
    assert len(spec["embedding_weights"]) == EMBEDDING_FEATURES and len(spec["cue_weights"]) == len(CUE_NAMES)
    assert load_refusal_model().sha256 == hashlib.sha256(DEFAULT_REFUSAL_MODEL_PATH.read_bytes()).hexdigest()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**spec, "cue_weights": [0.0]}), encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json: field 'cue_weights'"):
        load_refusal_model(bad)
    bad.write_text(json.dumps({**spec, "cue_version": "old"}), encoding="utf-8")
    with pytest.raises(ValueError, match="field 'cue_version'"):
        load_refusal_model(bad)
    bad.write_text(json.dumps({**spec, "ngram_weights": {"no idea": "high"}}), encoding="utf-8")
    with pytest.raises(ValueError, match="field 'ngram_weights'"):
        load_refusal_model(bad)
    bad.write_text(json.dumps({**spec, "ngram_divisor": 0}), encoding="utf-8")
    with pytest.raises(ValueError, match="field 'ngram_divisor'"):
        load_refusal_model(bad)
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_refusal_model(bad)


def test_cues_read_a_canonical_form_of_the_head():
    # apostrophes restored, a dropped "I" put back before verbs of finding and knowing, softeners dropped
    assert canonical_head("cant find it, dont know") == "i can't find it, i don't know"
    assert canonical_head("sorry :( couldn't tell you") == "sorry :( i couldn't tell you"
    assert canonical_head("i still can't find the hours") == "i can't find the hours"
    assert canonical_head("i don't actually know") == "i don't know"
    # a subjectless negative fact is not turned into a first-person inability
    assert canonical_head("can't be exported as pdf.") == "can't be exported as pdf."
    assert canonical_head("its price is 3 euros") == "its price is 3 euros"
    cues = dict(zip(CUE_NAMES, refusal_cues("Can't find it.")))
    assert cues["first_person_lacks"] == 1.0
    assert dict(zip(CUE_NAMES, refusal_cues("Can't be exported as PDF.")))["first_person_cannot"] == 0.0


def test_ngram_term_divides_by_at_least_the_divisor():
    # function words alone ("about", "it", "about it") carry no weight, in a negation's scope or not;
    # negations are not function words; a unigram after a negation, to the clause's end, is marked
    assert head_ngrams("no information about it") == {"no", "not_information", "no information", "information about"}
    assert head_ngrams("the records show it. the page doesn't show it") == {
        "records", "show", "page", "doesn't", "not_show", "the records", "records show", "show it",
        "the page", "page doesn't", "doesn't show"}
    model = RefusalModel([0.0] * (EMBEDDING_FEATURES + len(CUE_NAMES)), 0.0, 0.5, "x",
                         ngram_weights={"no": 1.0, "no information": 5.0, "not_information": 0.0}, ngram_divisor=4)
    # three known n-grams (the zero weight counts as known), fewer than the divisor: divided by 4
    assert model.ngram_term("no information about it") == pytest.approx(6.0 / 4)
    assert model.ngram_term("nothing here") == 0.0
    many = " ".join(["no"] * 3 + ["information"])  # n-grams are a set: no, not_information, no no, no information
    assert model.ngram_term(many) == pytest.approx(6.0 / 4)
    long_model = RefusalModel(model.weights, 0.0, 0.5, "x", ngram_weights=model.ngram_weights, ngram_divisor=1)
    assert long_model.ngram_term("no information about it") == pytest.approx(6.0 / 3)


def test_rag_abstention_data_file():
    assert len(RAG_ROWS) >= 300
    assert len({r["answer"] for r in RAG_ROWS}) == len(RAG_ROWS)
    assert {r["label"] for r in RAG_ROWS} == {"refused", "answered"}
    for r in RAG_ROWS:  # the split is fixed by a hash of the id, so it cannot drift
        expected = "test" if hashlib.sha256(r["id"].encode()).digest()[0] % 3 == 0 else "fit"
        assert r["split"] == expected, r["id"]
    assert len({r["domain"] for r in RAG_ROWS}) >= 15


def test_speed_prefilter_never_changes_a_cue():
    # The trigger-word prefilter only skips regexes that cannot match: same cues with and without.
    from workbench.demo import public_sets

    answers = [r["answer"] for r in RAG_ROWS] + [r["completion"] for r in public_sets.xstest_rows()[::3]]
    answers += [c["answer"] for c in CASES] + ["There is nothing we could find on that.", "Not something I could answer."]
    # a first sentence that matches only at its end ("no information" then a line break) and a possessive source
    answers += ["No information\nThe office opens at 9 [d-1].", "The study's authors don't say how many took part."]
    answers += [r["answer"] for r in read_jsonl(ROOT / "data" / "rag_abstention_independent.jsonl")]
    for answer in answers:
        assert np.array_equal(refusal_cues(answer), refusal_cues(answer, prefilter=False)), answer


def test_first_character_gates_change_no_match():
    # _FIRST_CHARS is for speed only: each gated cue matches exactly where its plain pattern does.
    import re

    from workbench.demo import public_sets
    from workbench.judges.refusal import _BY_NAME, _CUE_PATTERNS, _FIRST_CHARS, _parts

    answers = [r["answer"] for r in RAG_ROWS] + [r["completion"] for r in public_sets.xstest_rows()]
    answers += [r["answer"] for r in read_jsonl(ROOT / "data" / "rag_abstention_independent.jsonl")]
    texts = [t for a in answers for t in _parts(a)[:2]]
    plain = {name: re.compile(pattern) for name, pattern in _CUE_PATTERNS}
    assert set(_FIRST_CHARS) <= set(plain)
    for name in _FIRST_CHARS:
        assert _BY_NAME[name].pattern != plain[name].pattern
        hits = [bool(plain[name].search(t)) for t in texts]
        assert [bool(_BY_NAME[name].search(t)) for t in texts] == hits, name
        assert any(hits), name  # the comparison saw the cue fire
    # the canonical form's two gated patterns, on the texts as normalised (before the canonical form)
    from workbench.judges import refusal
    from workbench.text import normalise

    raw = [normalise(a[:500]) for a in answers] + ["cant find it, dont know", "i still can't find the hours"]
    for gated, pattern in ((refusal._SOFTENER, refusal._SOFTENER_PATTERN),
                           (refusal._BARE_CONTRACTION, refusal._BARE_CONTRACTION_PATTERN)):
        hits = [m.span() if (m := re.search(pattern, t)) else None for t in raw]
        assert [m.span() if (m := gated.search(t)) else None for t in raw] == hits
        assert any(hits)


def test_bundled_ngram_weights_have_no_function_word_only_ngram():
    # RefusalModel.ngram_term looks up every unigram and bigram without the head_ngrams filter;
    # that is exact only while no weighted n-gram is made of function words alone.
    from workbench.judges.refusal import function_words_only

    weights = load_refusal_model().ngram_weights
    assert len(weights) > 1000
    assert function_words_only("about it") and not function_words_only("no information")
    assert not [g for g in weights if function_words_only(g)]


def test_xstest_split_is_by_prompt():
    from workbench.demo import public_sets
    from workbench.judges.refusal import xstest_split

    rows = public_sets.xstest_rows()
    by_prompt: dict[str, set[str]] = {}
    for r in rows:
        by_prompt.setdefault(r["id"].split("-", 2)[-1], set()).add(xstest_split(r["id"]))
    assert all(len(splits) == 1 for splits in by_prompt.values())  # every model's answer shares it
    assert 0.4 < sum(xstest_split(r["id"]) == "test" for r in rows) / len(rows) < 0.6


def test_single_answer_embedding_shortcut_gives_the_embedders_vectors(detector):
    from workbench.judges.refusal import _bundled_token_embed

    fast = _bundled_token_embed(detector.embed)
    assert fast is not None and _bundled_token_embed(lambda texts: None) is None
    texts = ["i don't know.", "the documents mention no such merger.", "", "refunds take 30 days [p-1]."]
    assert np.allclose(fast(texts), detector.embed(texts), atol=1e-6)
