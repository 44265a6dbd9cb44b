"""instance-ai-tui: a terminal app for Instance AI agents, and the local runtime it embeds."""

__version__ = "0.1.0"
