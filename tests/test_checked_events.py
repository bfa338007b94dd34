"""verify's packed record of the events it met (gitmem/memory/checkedevents.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gitmem.memory.checkedevents import CheckedEvents

hex_text = st.text("0123456789abcdef", min_size=0, max_size=70)
usual = st.fixed_dictionaries(
    {
        "size": st.integers(0, 16 << 20),
        "salt": st.binary(min_size=16, max_size=16).map(bytes.hex),
        "digest": st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex()),
    }
)
odd = st.fixed_dictionaries(
    {
        "size": st.one_of(st.integers(-5, 1 << 70), st.text(max_size=3), st.booleans()),
        "salt": st.one_of(hex_text, hex_text.map(str.upper), st.integers()),
        "digest": st.one_of(hex_text, hex_text.map(lambda h: "sha256:" + h), st.none()),
    }
)
events = st.lists(
    st.tuples(
        st.text("0123456789abcdef", min_size=32, max_size=32),
        st.one_of(usual, odd),
        st.booleans(),  # a redaction
        st.sampled_from([("refs/edda/branches/main", "c1"), ("refs/edda/branches/f", "c2")]),
    ),
    max_size=30,
)


@given(events)
def test_what_is_kept_is_what_was_added(added: list[Any]) -> None:
    checked = CheckedEvents()
    first: dict[str, tuple[dict[str, Any], bool, tuple[str, str]]] = {}
    for eid, payload, redaction, (ref, commit) in added:
        envelope = {"id": eid, "type": "redaction" if redaction else "note", "payload": payload}
        assert checked.add(eid, envelope, ref, commit) == (eid not in first)
        first.setdefault(eid, (payload, redaction, (ref, commit)))
    assert sorted(checked) == sorted(first)
    assert len(checked) == len(first)
    for eid, (payload, redaction, place) in first.items():
        assert eid in checked
        assert checked.payload(eid) == payload
        assert checked.where(eid) == place
        kind = "redaction" if redaction else "note"
        assert checked.envelope(eid) == {"id": eid, "type": kind, "payload": payload}
    assert checked.redactions == [eid for eid, (_p, r, _w) in first.items() if r]
    assert "0" * 31 not in checked


def test_a_usual_event_is_a_few_bytes() -> None:
    """The reason for the class: a decoded envelope took ~2 KB an event."""
    import sys

    checked = CheckedEvents()
    payload = {"size": 120, "salt": "ab" * 16, "digest": "sha256:" + "cd" * 32}
    checked.add("e" * 32, {"type": "note", "payload": payload}, "refs/edda/branches/main", "c")
    row = checked._rows["e" * 32]
    assert sys.getsizeof(row) < 100
