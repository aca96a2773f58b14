"""Demonstrations from gold decompositions (teacher-free cold-start SFT data); see `synth/demos/build.py`.

    agentic synth demos --task musique --data ../shared/data/multihop/musique_train_100.json --out demos/
"""

from synth.demos.build import (
           DemoOptions,
           DemoResult,
           build_demo,
           build_demos,
           script,
           variants,
           verify_demo,
           write_demos,
)
from synth.demos.plans import GoldPlan, Hop, gold_plan
from synth.demos.scripted import RecordingRetriever, ScriptedPolicy, ScriptedRid, Vocab

__all__ = ["DemoOptions", "DemoResult", "GoldPlan", "Hop", "RecordingRetriever", "ScriptedPolicy", "ScriptedRid",
           "Vocab", "build_demo", "build_demos", "gold_plan", "script", "variants", "verify_demo",
           "write_demos"]
