"""tau-bench's retail domain (as AgentScaler frames it): a real orders/products/users database, 16 tools, a
policy, an instruction-following or simulated user, and a verdict on the end state, the writes and the outputs.

    from agentic_infer.envs import make_env
    env = make_env("retail", task_row)       # or RetailEnv(task_row, data_dir=..., user="llm", user_backend=llm)
    gold = replay(task_row["actions"])       # the gold end state; WRITE_TOOLS: the tools that change the DB

Files: db.py (tables, copy on write), tools.py (the tools), user.py (the user side), verify.py (the checks),
env.py (RetailEnv, replay). Not covered: tau-bench's airline domain.
"""

from agentic_infer.envs.registry import EnvSpec, register_env
from agentic_infer.envs.retail.env import RetailEnv, replay
from agentic_infer.envs.retail.tools import TOOLS, WRITE_TOOLS

register_env(EnvSpec(
    name="retail",
    description="tau-bench retail: authenticate a customer, then look up, cancel, modify, return or exchange "
                "orders against a real database under a written policy",
    make=RetailEnv,
    tools=tuple(sorted(TOOLS)),
    task_format="{id, user_id, instruction, actions: [{name, kwargs}], outputs: [str], annotator} "
                "(a line of retail_tasks_{train,dev}.jsonl)",
    reward="1.0 iff the end database equals the gold replay's (canonical), the successful writes equal the gold's, "
           "and every output is stated; else 0.0",
    default_files=("tools/tau_retail_db/retail_tasks_dev.jsonl",),
))

__all__ = ["TOOLS", "WRITE_TOOLS", "RetailEnv", "replay"]
