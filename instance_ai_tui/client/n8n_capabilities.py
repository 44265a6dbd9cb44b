"""What an n8n instance can do, read where n8n's own frontend reads it (issue 27).

* ``GET /rest/module-settings`` → ``data["instance-ai"]`` (n8n 2.41 ``instance-ai.module.js``
  ``settings()``): ``enabled``, ``localGatewayDisabled``, ``browserUseEnabled``, ``proxyEnabled``,
  ``cloudManaged``, ``setupCompleted``, ``sandboxEnabled``, ``workflowBuilderAvailable``, ...
* ``GET /rest/instance-ai/browser/status`` → ``{connected, connectedAt, toolCategories}``; 403
  "Browser Use is disabled" unless browser use is on (the frontend's ``fetchBrowserStatus``).

The credentials card offers "n8n sets it up" (``credentialAutoSetup``) only when both say it can
work: n8n answers that choice with ``needsBrowserSetup`` and its agent then needs a connected
browser (``InstanceAiCredentialSetup.vue``: the setup choice is shown only with browser
credential setup enabled, and the auto setup is sent once the browser is connected). A value
this client could not read stays ``None`` ("unknown") and a card treats it as "cannot".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class InstanceCapabilities:
    """The instance's Instance AI switches (``None``: not read)."""

    enabled: bool | None = None
    local_gateway_disabled: bool | None = None
    browser_use_enabled: bool | None = None
    browser_connected: bool | None = None
    setup_completed: bool | None = None
    sandbox_enabled: bool | None = None
    workflow_builder_available: bool | None = None
    proxy_enabled: bool | None = None
    cloud_managed: bool | None = None

    @property
    def credential_auto_setup(self) -> bool:
        """Whether "n8n sets up the credential" can work now (browser use on and a browser connected)."""
        return bool(self.browser_use_enabled) and bool(self.browser_connected)

    def why_no_auto_setup(self) -> str:
        """The reason "n8n sets it up" is not offered, in words for the card."""
        if self.browser_use_enabled is None:
            return "this client could not read whether the instance has browser use"
        if not self.browser_use_enabled:
            return "browser use is off on this n8n instance"
        if not self.browser_connected:
            return "no browser is connected to n8n (connect one in n8n's web UI)"
        return ""

    @classmethod
    def from_module_settings(cls, data: Any, browser: Any = None) -> InstanceCapabilities:
        """From ``/rest/module-settings``' ``data`` and ``browser/status``' ``data`` (either may be absent)."""
        module = data.get("instance-ai") if isinstance(data, dict) else None
        module = module if isinstance(module, dict) else {}

        def flag(name: str) -> bool | None:
            value = module.get(name)
            return value if isinstance(value, bool) else None

        connected = browser.get("connected") if isinstance(browser, dict) else None
        browser_use = flag("browserUseEnabled")
        return cls(
            enabled=flag("enabled"),
            local_gateway_disabled=flag("localGatewayDisabled"),
            browser_use_enabled=browser_use,
            browser_connected=connected if isinstance(connected, bool) else (False if browser_use is False else None),
            setup_completed=flag("setupCompleted"),
            sandbox_enabled=flag("sandboxEnabled"),
            workflow_builder_available=flag("workflowBuilderAvailable"),
            proxy_enabled=flag("proxyEnabled"),
            cloud_managed=flag("cloudManaged"),
        )
