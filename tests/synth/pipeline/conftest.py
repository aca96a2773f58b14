import json

import pytest


def write_nq(path, n):
    """A tiny NQ-open file (`{question, answer: [...]}`): question i has the answer `a{i % 3}`."""
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"question": f"What is item number {i} called in the list?", "answer": [f"a{i % 3}"]})
                    + "\n")
    return path


@pytest.fixture
def nq_file(tmp_path):
    return write_nq(tmp_path / "nq.jsonl", 6)
