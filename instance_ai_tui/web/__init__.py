"""``instance-ai web``: the app in a browser, served by textual-serve.

Each browser tab gets its own app process (``python -m instance_ai_tui`` with the flags given
to ``instance-ai web``), driven through textual-serve's web driver. ``access`` holds the token
check and the origin/host checks (pure, no aiohttp; ``serve`` asks its ``is_loopback`` too);
``server`` the aiohttp application; ``cli`` the sub-command. Nothing else here is imported by the
TUI or the other commands.
"""
