"""The agents module the real-server tests ship (written to ``mylab/agents.py`` in a temp dir).

``bank``: ``transfer`` needs approval and never expires; ``quick``: the same, expiring after
0.5 s. Every run of the tool body appends ``<to> <amount>`` to the file named by
``AGCORE_TEST_TOOL_LOG``, so a test can count runs across processes. The model sends money to
the last word of the user's text ("send 100 to r7" -> ``to="r7"``).
"""

SOURCE = '''
import os

from agcore_lab import Agent, ScriptedModel, Tool, ToolCall, ToolMessage, UserMessage


def transfer(to: str, amount: int) -> str:
    """Move money."""
    with open(os.environ["AGCORE_TEST_TOOL_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{to} {amount}\\n")
    return f"sent {amount} to {to}"


def script(messages):
    last = messages[-1]
    if isinstance(last, UserMessage):
        return ToolCall(name="transfer", arguments={"to": last.text.split()[-1], "amount": 100})
    return "done" if isinstance(last, ToolMessage) and not last.is_error else "refused"


def make(name, timeout):
    tool = Tool.from_function(transfer, requires_approval=True, approval_timeout=timeout)
    return Agent(name=name, model=ScriptedModel(script), tools=[tool])


AGENTS = [make("bank", None), make("quick", 0.5)]
'''
