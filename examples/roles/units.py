"""Unit normaliser: a role that rewrites conclusions, in this one file and nothing else.

Sources spell one quantity many ways ("2,600 MW", "2.6 GW", "2600MW"); a report that
mixes them reads as if it held different figures. This role guards conclusions, as the
fact-checker beside it does, and speaks before every other role that reads them: each
figure of power or energy (W, kW, MW, GW, TW and the same with h) is written with the
largest prefix that leaves at least 1 of it, with its digits exact and nothing rounded
("2,600 MW" becomes "2.6 GW", "950 kW" stays). The rewrite is published with
`Turn.restate`: it supersedes the original, keeps its citations, and is refused unless
the cited sources support every figure it says and it states every fact the original
did; a refused or unneeded rewrite passes the original on unchanged. It asks no model.

    briefroom research "..." --corpus docs/ --roles-dir examples/roles

No other file names this role: the bus routes conclusions through it because it
declares `guards=`, and the team's speaking order places it because it declares
`before=`.
"""

from __future__ import annotations

import re
from decimal import Decimal

from briefroom.agents.base import Role, Turn
from briefroom.protocol.bus import Subscription
from briefroom.protocol.messages import MsgType

# Largest first: the first prefix leaving at least 1 of the unit is the one written.
PREFIXES = (("T", Decimal(10) ** 12), ("G", Decimal(10) ** 9), ("M", Decimal(10) ** 6), ("k", Decimal(10) ** 3),
            ("", Decimal(1)))
SCALE = dict(PREFIXES)
# A figure (thousands separators allowed) and a unit symbol; not part of a longer token.
FIGURE = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s?([TGMk]?)(Wh|W)(?![A-Za-z])")


def spelled(value: Decimal) -> str:
    """Exact digits, no exponent, no trailing decimal zeros."""
    out = format(value.normalize(), "f")
    return out.rstrip("0").rstrip(".") if "." in out else out


def one_spelling(match: re.Match[str]) -> str:
    amount = Decimal(match.group(1).replace(",", "")) * SCALE[match.group(2)]
    if amount == 0:
        return match.group(0)
    prefix, scale = next(((p, s) for p, s in PREFIXES if amount >= s), PREFIXES[-1])
    return f"{spelled(amount / scale)} {prefix}{match.group(3)}"


def normalised(text: str) -> str:
    return FIGURE.sub(one_spelling, text)


def step(turn: Turn) -> None:
    for message in turn.unread_of(MsgType.CONCLUSION):
        text = normalised(message.body.content)
        if text == message.body.content or not message.body.references:
            turn.forward(message)
            continue
        if turn.restate(message, text) is None:
            turn.note(f"kept {message.msg_id} as written: its sources do not bear out {text!r}")
            turn.forward(message)
        else:
            turn.note(f"restated {message.msg_id}: {text}")


ROLE = Role(
    name="unit_normaliser",
    subscriptions=(Subscription(msg_type=MsgType.CONCLUSION),),
    publications=(MsgType.CONCLUSION,),
    guards=(MsgType.CONCLUSION,),
    before=(MsgType.CONCLUSION,),  # every other reader of conclusions, checkers too, sees the rewrite
    step=step,
    budget_tokens=1000,
    description="writes each figure of power or energy in one unit spelling",
)
