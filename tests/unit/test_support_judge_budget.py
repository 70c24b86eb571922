"""The Writer's support check fits its budget: a check of many long sentences that does
not fit is asked in halves, and a sentence whose check alone does not fit keeps code's
checks only, logged; the run goes on (a six-part recording ended on it)."""

from __future__ import annotations

import re
from types import SimpleNamespace

from briefroom.agents.writer import support_judge
from briefroom.errors import MustKeepOverBudget
from briefroom.events import Fallback
from briefroom.records import Claim
from briefroom.report.verify import SupportReview
from briefroom.runlog import RunLog

SOURCE = "Azure grew fastest among the large providers, by 31 percent."


class BudgetTurn:
    """A Writer turn whose budget holds the check of `fits` sentences at most; its model
    finds unsupported every sentence that says "slowest"."""

    def __init__(self, fits: int):
        self.fits, self.asked = fits, []
        self.worker, self.round = "writer", 1
        self.ctx = SimpleNamespace(log=RunLog(None))

    def ask(self, task: str, schema: type, **_: object) -> SupportReview:
        shown = re.findall(r"^(s\d+): (.*)$", task, flags=re.M)
        if len(shown) > self.fits or any("enormous" in text for _, text in shown):
            raise MustKeepOverBudget(f"must-keep context needs {len(task)} tokens but the role's input budget is 10")
        self.asked.append([sid for sid, _ in shown])
        return schema.model_validate({"verdicts": [
            {"sentence_id": sid, "verdict": "unsupported" if "slowest" in text else "supported", "reason": "it says"}
            for sid, text in shown]})


def claims(*texts: str) -> list[Claim]:
    return [Claim(text=t, source_ids=["S1"]) for t in texts]


def test_a_check_that_does_not_fit_is_asked_in_halves_and_each_verdict_keeps_its_sentence():
    turn = BudgetTurn(fits=2)
    said = claims("Azure grew fastest.", "Azure grew slowest.", "Azure led the providers.",
                  "Azure grew 31 percent.", "Azure was slowest of all.")
    found = support_judge(turn, {"S1": SOURCE})(said)  # type: ignore[arg-type]
    assert sorted(found) == [1, 4]
    assert turn.asked == [["s1", "s2"], ["s1"], ["s1", "s2"]]  # 5 -> 2 + 3 -> 2 + (1 + 2)
    assert not [e for e in turn.ctx.log.events if isinstance(e, Fallback)]


def test_a_sentence_whose_check_alone_does_not_fit_keeps_codes_checks_and_is_logged():
    turn = BudgetTurn(fits=16)
    found = support_judge(turn, {"S1": SOURCE})(  # type: ignore[arg-type]
        claims("Azure grew slowest.", "An enormous sentence about Azure.", "Azure grew fastest."))
    assert found == {0: "it says"}
    (fallback,) = [e for e in turn.ctx.log.events if isinstance(e, Fallback)]
    assert "not judged" in fallback.reason and "must-keep context" in fallback.reason
