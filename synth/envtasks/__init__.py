"""AgentScaler-style env task synthesis and teacher-free env demonstrations (`agentic synth envtasks`).

    from synth.envtasks import EnvTasksConfig, run_envtasks
    stats = run_envtasks(EnvTasksConfig(out="runs/envtasks", count=200, seed=0, demos=True))

Modules: `sampler` (valid tool-call sequences over the retail tool graph and the real database), `facts` (what
an intent must name, per argument), `templates` (intents per write kind), `reword` (optional LLM rewording),
`verify` (task rows; replay-to-digest and per-argument intent checks), `steps` / `run` (the datatrove
pipeline, resumable, with drop reasons and stats), `demos` (scripted gold tool calls played through the real
env engine: token-exact demonstrations), `stages` (AgentScaler's two training stages as data: BFCL's gold calls,
then the domain). Not covered: domains other than retail.
"""

from synth.envtasks.run import EnvTasksConfig, run_envtasks
from synth.envtasks.sampler import WRITE_KINDS, SampledTask, SamplerConfig, sample_task, task_seed

__all__ = ["WRITE_KINDS", "EnvTasksConfig", "SampledTask", "SamplerConfig", "run_envtasks", "sample_task",
           "task_seed"]
