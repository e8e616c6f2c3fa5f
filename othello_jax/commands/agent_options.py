"""Placeholder while agents land."""
class AgentOptionError(ValueError):
    pass
