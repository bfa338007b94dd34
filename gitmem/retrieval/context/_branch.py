"""What the tiers of a pack read of the branch, fetched once through its window."""

from __future__ import annotations

from collections.abc import Sequence

from gitmem.memory.decisions import DecisionState
from gitmem.memory.describe import visible
from gitmem.memory.event import Event
from gitmem.memory.window import BranchWindow, DecisionOutline

HIDDEN_TYPES = frozenset({"redaction"})  # never shown as hits or history
LEARNING_TYPES = ("mistake", "learning", "pattern")
# what a pack reads whole through a window; the rest is the active decisions, the
# newest checkpoint, the learnings about the files in play, pin targets and the
# recent sessions
WINDOW_TYPES = ("pin", "unpin", "capsule_open", "capsule_close")


class CapsuleCounts:
    """Events per capsule of the branch, asked of the window for the few
    capsules a pack shows (``get`` as a dict's)."""

    def __init__(self, window: BranchWindow) -> None:
        self.window = window
        self.known: dict[str, int] = {}

    def get(self, capsule: str, default: int = 0) -> int:
        if capsule not in self.known:
            self.known[capsule] = self.window.capsule_counts([capsule]).get(capsule, 0)
        return self.known[capsule] or default


class BranchMemory:
    """What the tiers read of the branch, fetched once through its window
    (:mod:`gitmem.memory.window`): ``events`` holds the pins, unpins and
    capsule events, the newest checkpoint, the learnings about the files in
    play and the targets of pins; ``hidden`` (ids of the branch's invisible
    events), ``counts`` (events per capsule) and ``book`` (decision states,
    decoded only when asked for) cover the whole branch.
    """

    def __init__(self, window: BranchWindow, paths: Sequence[str]) -> None:
        self.window = window
        chosen = window.of_types(WINDOW_TYPES)
        chosen += window.newest("checkpoint", 1)
        chosen += window.touching(LEARNING_TYPES, paths)
        targets = {
            str(e.field("target", "")).removeprefix("summary:")
            for e in chosen
            if e.type == "pin" and visible(e)
        }
        chosen += window.by_ids(targets)
        unique = {event.id: event for event in chosen}
        self.events = sorted(unique.values(), key=lambda e: e.order_key)
        self.by_id = unique
        self.hidden = window.hidden()
        self.counts = CapsuleCounts(window)  # capsule id -> events
        self.book = window.book()  # the window's: a search's supersession marks read it too
        self.closes: dict[str, Event] = {}  # capsule id -> close
        for event in self.events:
            if event.type == "capsule_close":
                target = str(event.field("capsule", "") or event.capsule or "")
                self.closes.setdefault(target, event)

    def outlines(self) -> list[DecisionOutline]:
        """Every decision of the branch, outlined, in event order."""
        return self.book.outlines()

    def state(self, event: Event) -> DecisionState | None:
        """The decision state of ``event`` (None: not a decision of the branch)."""
        return self.book.state(event)

    def is_open(self, capsule_id: str) -> bool:
        return capsule_id not in self.closes

    def showable(self, event: Event) -> bool:
        """Visible, not a hidden type, and not pointing at a redacted event."""
        if not visible(event) or event.type in HIDDEN_TYPES:
            return False
        target = event.field("target")
        return not (isinstance(target, str) and target.removeprefix("summary:") in self.hidden)
