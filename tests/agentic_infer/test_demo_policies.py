"""What `make demo` runs and says: the base alone with a how-to-train hint, or base and trained side by side."""

from __future__ import annotations

from agentic_infer import demo


def test_without_a_trained_policy_the_base_runs_alone_and_the_hint_says_how_to_get_one(tmp_path):
    missing = tmp_path / "policy.gguf"
    assert demo.policies(None, None, trained=missing) == [("base", "llamacpp://default", False)]
    assert "make distill" in demo.NO_POLICY_HINT and "45 minutes" in demo.NO_POLICY_HINT


def test_with_a_trained_policy_both_run_on_the_same_questions(tmp_path):
    gguf = tmp_path / "policy.gguf"
    gguf.write_bytes(b"GGUF")
    plan = demo.policies(None, None, trained=gguf)
    assert plan == [("base", "llamacpp://default", False), ("trained", f"llamacpp://{gguf.resolve()}", True)]
    assert demo.policies(None, str(gguf), trained=tmp_path / "none") == [("trained", f"llamacpp://{gguf.resolve()}",
                                                                           True)]
    assert demo.policies("openai://h:1/v1", None, trained=gguf) == [("chosen", "openai://h:1/v1", False)]


def test_side_by_side_shows_each_policys_answer_per_question():
    from rich.console import Console

    from agentic_infer.types import Trajectory, Usage

    console = Console(record=True, width=200)
    runs = {"base": [Trajectory(answer="Lyon", usage=Usage(tool_calls=1))],
            "trained": [Trajectory(answer="Paris", usage=Usage(tool_calls=2))]}
    demo.side_by_side(console, ["Capital of France?"], runs)
    text = console.export_text()
    assert "Lyon" in text and "Paris" in text and "1 searches" in text and "2 searches" in text
