"""The wire protocol: event and API models, and the event -> agent-tree reducer.

This package imports nothing else of ours.
"""
