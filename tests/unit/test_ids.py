"""Time-ordered ids: string order is creation order, unique across threads and forks."""

from __future__ import annotations

import os
import re
import threading

import pytest

from agcore_lab.ids import id_text, new_id, new_id_value

_FORMAT = re.compile(r"^msg_[0-9a-hjkmnp-tv-z]{17}$")


def test_ids_sort_in_the_order_they_were_made() -> None:
    made = [new_id("msg") for _ in range(5_000)]
    assert made == sorted(made) and len(set(made)) == len(made)
    assert all(_FORMAT.match(i) for i in made)


def test_ids_from_many_threads_are_unique() -> None:
    out: list[list[str]] = [[] for _ in range(4)]
    threads = [
        threading.Thread(target=lambda b=b: b.extend(new_id("msg") for _ in range(2_000)))
        for b in out
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for batch in out for i in batch]
    assert len(set(every)) == len(every)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_repeat_its_parents_random_tails() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its tails must not be the parent's next ones
        os.write(write, ",".join(new_id("msg")[-4:] for _ in range(50)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 10_000).decode().split(",")
    parent = [new_id("msg")[-4:] for _ in range(50)]
    assert child != parent


def test_an_id_kept_as_a_number_is_an_id_of_the_same_generator() -> None:
    # A recorder keeps a call's id as its number until the text is asked for: the text has
    # new_id's form and takes its place in new_id's order, before and after.
    before = new_id("msg")
    value = new_id_value()
    after = new_id("msg")
    text = id_text("msg", value)
    assert _FORMAT.match(text) and before < text < after
    assert id_text("call", value) == "call_" + text.split("_", 1)[1]
    assert value >> 20 <= int(after.split("_")[1][:13].translate(_DIGITS), 32)


_DIGITS = str.maketrans("0123456789abcdefghjkmnpqrstvwxyz", "0123456789abcdefghijklmnopqrstuv")
