"""The assistant's tools: orchestration (plan, delegate, ask-user) and domain tools (files, n8n)."""
