"""The widgets of the app: the conversation, cards, panels, the prompt and the status line."""
