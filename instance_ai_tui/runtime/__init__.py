"""The agent runtime: the seed's AgentRuntime in Python, speaking OpenAI's chat-completions wire format.

Its API is in its modules (import from them): ``agent`` (``Agent``, ``AgentStream``), ``model`` (the
``ModelAdapter`` protocol, model chunks and errors), ``openai_model`` and ``scripted`` (adapters), ``tools``,
``chunks`` (what a run streams), ``state`` (``RunResult``), ``messages``, ``checkpoints``, ``memory``,
``usage``, ``limits`` and ``errors``.
"""
