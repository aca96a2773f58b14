"""Engines: the agent loop and its configurations (Search-o1, TIR), DeepConf, judges, tree search."""
