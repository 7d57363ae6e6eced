"""SlotDiffViewer built in plain Python: rendering, escaping, paging, preview, confirm, cancel."""

from __future__ import annotations

import re
import time

import pytest

from agcore_lab import Agent, AgentSession, MergeStrategy, ScriptedModel, SlotNotFoundError
from agcore_lab.jupyter import SlotDiffViewer
from agcore_lab.jupyter.common.messages import MAX_TEXT_CHARS
from agcore_lab.llm.messages import AssistantMessage, ToolCall

XSS = "<img src=x onerror=alert(1)>"


def _session(*replies: object) -> AgentSession:
    return AgentSession(Agent(name="t", model=ScriptedModel(list(replies))))  # type: ignore[arg-type]


def _forked(right_turn: str = "tell me more", *, left_turn: str | None = None) -> AgentSession:
    """main: hi/hello; alt forked from it with one more turn (and main maybe one too)."""
    session = _session()
    session.submit_turn_sync("hi")
    session.fork_slot_sync("alt", switch=True)
    session.submit_turn_sync(right_turn)
    if left_turn is not None:
        session.switch_slot_sync("main")
        session.submit_turn_sync(left_turn)
    return session


def _text(html_value: str) -> str:
    """The visible text of an HTML fragment (tags dropped; entities kept)."""
    return re.sub(r"<[^>]+>", "", html_value)


def _ids(session: AgentSession, slot: str) -> list[str]:
    return [m.id for m in session.slots[slot].messages]


def test_shows_both_columns_aligned_at_the_fork() -> None:
    session = _forked("tell me more")
    viewer = SlotDiffViewer(session, "main", "alt")
    body = viewer.body_html.value
    assert '<div class="agc-colhead">main</div>' in body
    assert '<div class="agc-colhead">alt</div>' in body
    # Shared prefix folded into one line; the two new messages on the right, blanks on the left.
    assert "2 shared messages before the fork (collapsed)" in body
    assert body.count('class="agc-cell agc-right_only"') == 2
    assert body.count('class="agc-cell agc-empty"') == 2
    assert "agc-shared" not in body
    assert "tell me more" in body and "[scripted] tell me more" in body
    assert '<span class="agc-role agc-role-user">user</span> #2' in body
    assert "main</b> (2 messages)" in viewer.header_html.value
    assert "alt</b> (4 messages)" in viewer.header_html.value
    assert viewer.shared_button.description == "Show shared (2)"
    assert viewer.more_button.disabled


def test_shared_prefix_expands_and_folds() -> None:
    viewer = SlotDiffViewer(_forked(), "main", "alt")
    viewer.shared_button.click()
    body = viewer.body_html.value
    assert body.count('class="agc-cell agc-shared"') == 4  # 2 rows x 2 sides
    assert "collapsed" not in body
    assert viewer.shared_button.description == "Hide shared"
    viewer.shared_button.click()
    assert "agc-shared" not in viewer.body_html.value


def test_message_text_is_escaped_everywhere() -> None:
    session = _forked(XSS)
    viewer = SlotDiffViewer(session, "main", "alt")
    escaped = "&lt;img src=x onerror=alert(1)&gt;"
    assert escaped in viewer.body_html.value
    assert "<img" not in viewer.body_html.value
    assert "<img" not in viewer._repr_html_()
    viewer.merge_button.click()
    assert escaped in viewer.preview_html.value
    assert "<img" not in viewer.preview_html.value
    assert _text(viewer.body_html.value).count(escaped) == 2  # the turn and the echo


def test_changed_messages_have_word_marks() -> None:
    session = _forked("the sky is grey", left_turn="the sky is blue")
    viewer = SlotDiffViewer(session, "main", "alt")
    body = viewer.body_html.value
    assert body.count('class="agc-cell agc-changed"') == 4
    assert "the sky is <del>blue</del>" in body
    assert "the sky is <ins>grey</ins>" in body
    assert viewer.diff.counts["changed"] == 2


def test_changed_marks_escape_their_text() -> None:
    session = _forked("a <b>bold</b> claim", left_turn="a <i>plain</i> claim")
    body = SlotDiffViewer(session, "main", "alt").body_html.value
    assert "<del>&lt;i&gt;plain&lt;/i&gt;</del>" in body
    assert "<ins>&lt;b&gt;bold&lt;/b&gt;</ins>" in body


def test_tool_calls_are_shown() -> None:
    call = ToolCall(name="search", arguments={"q": "<cats>"})
    session = _session([call], "found them")
    session.submit_turn_sync("hi")  # the unknown tool fails; the model then answers
    session.fork_slot_sync("alt")
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.toggle_shared(True)
    body = viewer.body_html.value
    assert "⚙ search({&quot;q&quot;: &quot;&lt;cats&gt;&quot;})" in body
    assert '<span class="agc-role agc-role-tool">tool</span>' in body
    assert isinstance(session.slots["main"].messages[1], AssistantMessage)


def test_very_long_histories_are_paged() -> None:
    session = _session()
    session.fork_slot_sync("alt")
    slot = session.slots["alt"]
    slot.extend([AssistantMessage(content=f"message {i}") for i in range(25)])
    viewer = SlotDiffViewer(session, "main", "alt", page_size=10)
    body = viewer.body_html.value
    assert body.count("agc-right_only") == 10
    assert "15 earlier rows not shown" in body
    assert "message 24" in body and "message 14" not in body
    assert viewer.more_button.description == "Show more (15 hidden)"
    viewer.more_button.click()
    assert viewer.body_html.value.count("agc-right_only") == 20
    viewer.more_button.click()
    assert viewer.body_html.value.count("agc-right_only") == 25
    assert viewer.more_button.disabled
    assert "not shown" not in viewer.body_html.value


def test_very_long_message_text_is_cut_in_the_view_only() -> None:
    session = _forked("x" * (MAX_TEXT_CHARS + 500))
    body = SlotDiffViewer(session, "main", "alt").body_html.value
    assert "(500 more characters)" in body
    assert "x" * (MAX_TEXT_CHARS + 1) not in body
    assert len(session.slots["alt"].messages[2].text) == MAX_TEXT_CHARS + 500


def test_unknown_slot_raises() -> None:
    with pytest.raises(SlotNotFoundError, match="nope"):
        SlotDiffViewer(_session(), "main", "nope")


def test_merge_shows_a_preview_and_changes_nothing() -> None:
    session = _forked("more please")
    before = {sid: _ids(session, sid) for sid in session.slots}
    viewer = SlotDiffViewer(session, "main", "alt")
    assert not viewer.preview_visible
    viewer.merge_button.click()
    assert viewer.preview_visible
    preview = viewer.preview_html.value
    assert "This will append 2 message(s) from &#x27;alt&#x27; to &#x27;main&#x27;" in preview
    assert "(2 -&gt; 4 messages)" in preview
    assert "Messages to append:" in preview and "more please" in preview
    assert {sid: _ids(session, sid) for sid in session.slots} == before


def test_strategy_picker_updates_the_open_preview() -> None:
    viewer = SlotDiffViewer(_forked(), "main", "alt")
    viewer.merge_button.click()
    viewer.strategy_dropdown.value = MergeStrategy.Replace
    assert "replace the 2 message(s) of &#x27;main&#x27; with the 4" in viewer.preview_html.value
    assert viewer.pending_preview is not None
    assert viewer.pending_preview.strategy is MergeStrategy.Replace
    assert [label for label, _ in viewer.strategy_dropdown.options] == [
        "Append",
        "Replace",
        "Summarize",
    ]


def test_cancel_changes_nothing() -> None:
    session = _forked()
    before = {sid: (_ids(session, sid), session.slots[sid].merge_base) for sid in session.slots}
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.merge_button.click()
    viewer.cancel_button.click()
    assert not viewer.preview_visible
    assert viewer.task is None
    assert "nothing changed" in viewer.status_html.value
    assert viewer.confirm_merge() is None  # no open preview: nothing to confirm
    after = {sid: (_ids(session, sid), session.slots[sid].merge_base) for sid in session.slots}
    assert after == before


def test_confirm_merges_in_the_background_and_refreshes() -> None:
    session = _forked("more please")
    alt_ids = _ids(session, "alt")
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.merge_button.click()
    assert _ids(session, "main") == alt_ids[:2]  # still unchanged after the preview
    viewer.confirm_button.click()
    assert viewer.task is not None
    assert viewer.task.wait(10)
    assert _ids(session, "main") == alt_ids
    assert viewer.last_error is None
    assert not viewer.preview_visible
    assert "Merged &#x27;alt&#x27; into &#x27;main&#x27; (append)" in viewer.status_html.value
    assert "now has 4 messages" in viewer.status_html.value
    # The view was refreshed: everything is shared now, no right-only rows left.
    assert viewer.diff.identical and viewer.diff.fork_index == 4
    assert "agc-right_only" not in viewer.body_html.value
    # Nothing is left to merge: the button says so and stays disabled.
    assert viewer.merge_button.disabled and viewer.nothing_to_merge
    assert viewer.merge_button.description == "Nothing to merge"
    # A reload that finds nothing new (the view's own poller) keeps the outcome readable.
    viewer.refresh()
    assert "now has 4 messages" in viewer.status_html.value
    session.switch_slot_sync("main")
    session.submit_turn_sync("and then?")  # news: the summary replaces it
    viewer.refresh()
    assert "2 only left" in viewer.status_html.value  # the turn and its reply


def test_confirm_uses_the_previewed_strategy() -> None:
    session = _forked()
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.preview_merge(MergeStrategy.Replace)
    assert viewer.strategy_dropdown.value is MergeStrategy.Replace
    task = viewer.confirm_merge()
    assert task is not None and task.wait(10)
    assert _ids(session, "main") == _ids(session, "alt")
    assert "(replace)" in viewer.status_html.value


def test_confirm_does_not_block_the_callback() -> None:
    def slow_summary(_messages: object) -> str:
        return "summary"

    session = _forked()
    session.agent.model = ScriptedModel([slow_summary], latency=0.5)
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.preview_merge(MergeStrategy.Summarize)
    main_before = _ids(session, "main")
    task = viewer.confirm_merge()
    assert task is not None
    # The click returned before the (0.5 s) model call finished.
    assert not task.done
    assert viewer.confirm_button.disabled and viewer.merge_button.disabled
    assert "Merging" in viewer.status_html.value
    assert _ids(session, "main") == main_before
    assert task.wait(10)
    main_after = session.slots["main"].messages
    assert len(main_after) == len(main_before) + 1
    assert main_after[-1].text == "[Summary of slot 'alt'] summary"


def test_cancel_stops_a_running_merge() -> None:
    session = _forked()
    session.agent.model = ScriptedModel(["never used"], latency=0.5)
    before = {sid: (_ids(session, sid), session.slots[sid].merge_base) for sid in session.slots}
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.preview_merge(MergeStrategy.Summarize)
    task = viewer.confirm_merge()
    assert task is not None and not task.done
    assert not viewer.cancel_button.disabled
    viewer.cancel_button.click()
    assert task.wait(10)
    assert repr(task) == "<BackgroundTask cancelled>"
    assert "Merge cancelled." in viewer.status_html.value
    assert viewer.last_error is None and not viewer.preview_visible
    assert not viewer.merge_button.disabled
    time.sleep(0.7)  # past the model's answer time: the merge never happened
    after = {sid: (_ids(session, sid), session.slots[sid].merge_base) for sid in session.slots}
    assert after == before


def test_errors_are_shown_inline_and_nothing_changes() -> None:
    session = _forked()
    before = {sid: _ids(session, sid) for sid in session.slots}

    def broken(_messages: object) -> str:
        raise RuntimeError("model exploded <b>")

    session.agent.model = ScriptedModel([broken])
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.preview_merge("summarize")
    task = viewer.confirm_merge()
    assert task is not None and task.wait(10)
    assert isinstance(viewer.last_error, Exception)
    error = viewer.error_html.value
    assert "agcore:" in error and "model exploded &lt;b&gt;" in error
    assert "Merge failed; nothing changed." in viewer.status_html.value
    assert {sid: _ids(session, sid) for sid in session.slots} == before
    assert not viewer.merge_button.disabled


def test_stale_preview_is_shown_again_instead_of_merging() -> None:
    session = _forked()
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.merge_button.click()
    session.switch_slot_sync("alt")
    session.submit_turn_sync("one more turn")  # the slots change behind the preview
    main_before = _ids(session, "main")
    assert viewer.confirm_merge() is None
    assert "changed since the preview" in viewer.status_html.value
    assert "append 4 message(s)" in viewer.preview_html.value
    assert _ids(session, "main") == main_before
    task = viewer.confirm_merge()  # confirming the new preview works
    assert task is not None and task.wait(10)
    assert _ids(session, "main") == _ids(session, "alt")


def test_refresh_reads_the_slots_again_and_reports_missing_ones() -> None:
    session = _forked()
    viewer = SlotDiffViewer(session, "main", "alt")
    session.merge_slot_sync("alt", into="main")
    assert "agc-right_only" in viewer.body_html.value  # not yet re-read
    viewer.refresh_button.click()
    assert "agc-right_only" not in viewer.body_html.value
    assert "no differences after the fork" in viewer.body_html.value
    del session.slots["alt"]
    viewer.refresh()
    assert isinstance(viewer.last_error, SlotNotFoundError)
    assert "agcore: no slot &#x27;alt&#x27;" in viewer.error_html.value
    # The view says its subject is gone and offers no merge.
    assert viewer.gone is not None and "Gone:" in viewer.header_html.value
    assert viewer.merge_button.disabled and viewer.strategy_dropdown.disabled
    assert viewer.preview_merge() is None and not viewer.preview_visible


def test_reprs() -> None:
    viewer = SlotDiffViewer(_forked(), "main", "alt")
    assert repr(viewer) == (
        "SlotDiffViewer('main' vs 'alt': 2 shared, 0 equal, 0 changed, 0 only left, 2 only right)"
    )
    page = viewer._repr_html_()
    assert page.startswith("<style>") and "var(--jp-layout-color1" in page
    assert "agc-right_only" in page and "<button" not in page
    assert "agc-view" in viewer._dom_classes


def _until(condition: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_stale_a_merge_made_in_another_cell_is_seen_without_refresh() -> None:
    # The stale case of the issue: after Run All the viewer still offered "Merge" and its
    # preview said "append 0 message(s)" under a header with the old counts.
    session = _forked("more please")
    viewer = SlotDiffViewer(session, "main", "alt", watch=0.02)
    try:
        assert not viewer.merge_button.disabled
        assert "main</b> (2 messages)" in viewer.header_html.value
        session.merge_slot_sync("alt", into="main")  # elsewhere: the view is not told
        assert _until(lambda: viewer.merge_button.disabled)
        assert viewer.nothing_to_merge and viewer.merge_button.description == "Nothing to merge"
        assert "main</b> (4 messages)" in viewer.header_html.value
        assert "agc-right_only" not in viewer.body_html.value
        assert viewer.preview_merge() is None and not viewer.preview_visible
        assert "Nothing to merge" in viewer.status_html.value
        assert "append 0" not in viewer.preview_html.value
    finally:
        viewer.close()


def test_stale_an_open_preview_closes_when_the_merge_happened_elsewhere() -> None:
    session = _forked("more please")
    viewer = SlotDiffViewer(session, "main", "alt", watch=0.02)
    try:
        assert viewer.preview_merge() is not None and viewer.preview_visible
        session.merge_slot_sync("alt", into="main")
        assert _until(lambda: not viewer.preview_visible)
        assert viewer.confirm_merge() is None  # nothing left to confirm
        assert _ids(session, "main") == _ids(session, "alt")
    finally:
        viewer.close()


def test_stale_a_deleted_slot_makes_the_view_say_it_is_gone() -> None:
    session = _forked()
    viewer = SlotDiffViewer(session, "main", "alt", watch=0.02)
    try:
        del session.slots["alt"]
        assert _until(lambda: viewer.gone is not None)
        assert "Gone:" in viewer.header_html.value and "alt" in viewer.header_html.value
        assert viewer.merge_button.disabled and viewer.strategy_dropdown.disabled
    finally:
        viewer.close()
    # Closed: the watch stopped (no more redraws of a closed widget).
    assert viewer._poller is not None and viewer._poller._future.cancelled()


def test_replace_preview_keeps_tool_calls() -> None:
    # The Replace preview used to drop a tool call, showing an empty "assistant" item.
    session = _session()
    session.submit_turn_sync("hi")
    session.fork_slot_sync("alt", switch=True)
    call = ToolCall(name="transfer", arguments={"to": "u12", "amount": 2}, id="c1")
    session.slots["alt"].messages.append(AssistantMessage(content=None, tool_calls=[call]))
    viewer = SlotDiffViewer(session, "main", "alt", watch=None)
    preview = viewer.preview_merge(MergeStrategy.Replace)
    assert preview is not None
    shown = viewer.preview_html.value
    assert "The new history" in shown
    assert "⚙ transfer(" in shown and "&quot;amount&quot;: 2" in shown


def test_short_messages_take_one_line_and_long_ones_keep_their_block() -> None:
    body = SlotDiffViewer(_forked("tell me more"), "main", "alt").body_html.value
    # Short: role label and text inside one line element of the cell.
    assert (
        '<div class="agc-line"><span class="agc-meta"><span class="agc-role agc-role-user">'
        'user</span> #2</span> <span class="agc-text">tell me more</span></div>'
    ) in body
    # Long: the role on its own line, the text in a block under it.
    long_turn = "a long question " * 10  # 160 characters: more than one line
    body = SlotDiffViewer(_forked(long_turn), "main", "alt").body_html.value
    cell = body[body.index("a long question") - 200 : body.index("a long question")]
    assert '<div class="agc-meta"><span class="agc-role agc-role-user">user</span> #2</div>' in cell
    assert '<div class="agc-text">' in cell and "agc-line" not in cell
    multi = _forked("first line\nsecond line")
    body = SlotDiffViewer(multi, "main", "alt").body_html.value
    assert '<div class="agc-text">first line\nsecond line</div>' in body  # a block, not a line


def test_a_lone_short_tool_call_stays_on_the_row_line() -> None:
    session = _session([ToolCall(name="search", arguments={"q": "cats"})], "found them")
    session.submit_turn_sync("hi")  # the unknown tool fails; the model then answers
    session.fork_slot_sync("alt")
    viewer = SlotDiffViewer(session, "main", "alt")
    viewer.toggle_shared(True)
    body = viewer.body_html.value
    line = body[body.index('<span class="agc-role agc-role-assistant">') :]
    line = line[: line.index("</div>")]
    assert '<span class="agc-tools">⚙ search({&quot;q&quot;: &quot;cats&quot;})</span>' in line


def test_the_header_is_one_summary_line_without_zero_counts() -> None:
    viewer = SlotDiffViewer(_forked("tell me more"), "main", "alt")
    header = _text(viewer.header_html.value)
    assert header == "main (2 messages) ⟷ alt (4 messages) · 2 shared · 2 only in alt"
    assert viewer.header_html.value.count("<div") == 1 and "<br" not in viewer.header_html.value
    changed = SlotDiffViewer(_forked("tell me more", left_turn="tell me less"), "main", "alt")
    assert _text(changed.header_html.value).endswith("· 2 shared · 2 changed")
    same = SlotDiffViewer(_forked("hi"), "main", "main")
    assert _text(same.header_html.value).endswith("no differences")
