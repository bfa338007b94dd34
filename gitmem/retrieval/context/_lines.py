"""How an event or a decision reads on a pack's compact line."""

from __future__ import annotations

from gitmem.memory.decisions import DecisionState, superseded_note
from gitmem.memory.describe import LINE_WIDTH, describe, iso_date, one_line, ref
from gitmem.memory.event import Event
from gitmem.memory.window import DecisionOutline
from gitmem.retrieval.context._branch import BranchMemory
from gitmem.retrieval.context.pack import PackItem

TEXT_WIDTH = LINE_WIDTH  # characters of an event's text on a compact line


def decision_line(state: DecisionState, width: int = TEXT_WIDTH) -> str:
    """A decision with its status, id-less: proposed ones start ``NOT BINDING``."""
    outline = DecisionOutline.of(state, width)
    return with_status(outline, outline.text)


def with_status(decision: DecisionOutline, text: str) -> str:
    """``text`` (the decision described) with the decision's status around it."""
    date = iso_date(decision.time)
    if not decision.active:
        return f"{text} ({superseded_note(decision.superseded_by or '')}; {date})"
    if not decision.binding:
        agent = one_line(decision.agent or "an agent", 60)
        return f"NOT BINDING, proposed by {agent} and not ratified: {text} ({date})"
    how = (
        "ratified " + " ".join(ref(r) for r in decision.ratified_by)
        if decision.ratified_by
        else "recorded by a person"
    )
    return f"{text} (binding, {how}; {date})"


def event_line(
    event: Event, memory: BranchMemory, width: int = TEXT_WIDTH, dated: bool = True
) -> str:
    """``event`` on a compact line: its id, then its decision state or description."""
    state = memory.state(event)
    if state is not None:
        return f"- {ref(event.id)} {decision_line(state, width)}"
    suffix = f" ({iso_date(event.time)})" if dated else ""
    return f"- {ref(event.id)} {describe(event, width)}{suffix}"


def item_of(event: Event, text: str) -> PackItem:
    """The pack item ``text`` that stands for ``event``."""
    return PackItem(event.id, event.type, event.time, text)
