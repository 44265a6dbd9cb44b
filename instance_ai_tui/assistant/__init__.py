"""The Instance AI layer: orchestrator, sub-agents, plan/tasks, ask-user, built-in tools, the run
manager (one run per thread, cancel, confirm) and runtime chunks -> protocol events.

Entry point: ``assistant.service.InstanceAI`` (implements ``service_api.AssistantService``).
Modules: ``run_manager`` (runs, confirmations, cancel, crash sweep), ``mapping`` (chunks ->
events), ``emitter`` (ordered, batched publishing), ``confirmations`` (cards and confirm bodies),
``orchestrator`` (the agent), ``tools/`` (plan, delegate, ask-user, files, n8n), ``history``
(the messages endpoint), ``models`` (model selection), ``demo`` (the offline demo model) and
``demo_instance`` (its in-memory n8n), ``workspace`` (confined file operations), ``n8n_client``
(the n8n public API).
"""
