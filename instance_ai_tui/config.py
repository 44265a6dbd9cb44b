"""Settings: a TOML file in the platform config dir, overridden by environment, then flags.

Paths follow the platform convention (XDG on Linux), so ``XDG_CONFIG_HOME`` and
``XDG_DATA_HOME`` move them. Secrets (API keys, passwords) may come from the config file
or the environment; they are never written to the SQLite file, logs or exports.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from .config_file import APP_NAME as APP_NAME
from .config_file import ConfigFileError, read_config_file
from .config_file import config_dir as config_dir
from .config_file import config_path as config_path
from .config_file import data_dir as data_dir
from .config_file import default_db_path as default_db_path


class LimitSettings(BaseModel):
    """Limits on what a model may send (``[model.limits]``; 0 turns one off). Past one, the run ends
    with a model error and nothing over the limit is stored (``runtime.limits``)."""

    max_delta_chars: int = 100_000
    max_tool_args_chars: int = 1_000_000
    max_answer_chars: int = 2_000_000
    max_answer_seconds: float = 600.0
    max_run_chars: int = 8_000_000
    max_run_seconds: float = 3600.0


class ModelSettings(BaseModel):
    name: str | None = None  # None or "demo" -> the offline demo model
    base_url: str | None = None
    api_key: SecretStr | None = None
    first_token_timeout: float = 60.0
    idle_timeout: float = 60.0
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)  # model -> {input, output, cached_input} per 1M
    #: more models offered by /model (besides the model server's own list)
    choices: list[str] = Field(default_factory=list)
    #: context windows (tokens) by model name prefix, beside the built-in table
    context_windows: dict[str, int] = Field(default_factory=dict)
    #: compaction starts when a request takes this share of what the window leaves for it (issue 47)
    compact_threshold: float = Field(default=0.7, ge=0.1, le=0.95)
    #: limits on what the model may send
    limits: LimitSettings = Field(default_factory=LimitSettings)
    #: send the images MCP tools return to the model (a model that refuses them gets placeholders)
    images: bool = True


class RemoteSettings(BaseModel):
    url: str | None = None
    token: SecretStr | None = None
    email: str | None = None
    password: SecretStr | None = None
    #: n8n: the two-factor code of an account with MFA (``--mfa-code``; also ``N8N_MFA_CODE``)
    mfa_code: SecretStr | None = None
    dialect: str | None = None  # "instance-ai" | "n8n" | None (detect)


class UiSettings(BaseModel):
    theme: str = "textual-dark"
    enter_sends: bool = True
    show_tasks: bool = True
    keys: dict[str, str] = Field(default_factory=dict)  # binding id -> key(s)
    #: ring the terminal bell when a card starts waiting for an answer (any thread)
    bell: bool = True
    #: also send a desktop notification (OSC 9) when a card starts waiting
    desktop_notifications: bool = False


_MCP_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class McpServerSettings(BaseModel):
    """One MCP server (``[mcp.servers.NAME]``): a command (stdio) or a ``url`` (Streamable HTTP).

    The server's environment holds only ``env`` and the variables named in ``pass_env`` (plus
    ``PATH`` when ``command`` is a bare name, so it can be found and can find its own
    interpreter); values of ``env`` and ``headers`` are secrets: never logged or exported.
    """

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    #: names of variables copied from the app's own environment (e.g. ``["HOME"]``)
    pass_env: list[str] = Field(default_factory=list)
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    #: a url server's transport: "auto" (Streamable HTTP; the legacy HTTP+SSE one when that is
    #: refused with 404/405), "http" or "sse"
    transport: Literal["auto", "http", "sse"] = "auto"
    #: a url server without an Authorization header: "auto" signs in with OAuth when it answers 401
    #: (a browser opens; tokens kept in the data folder), "off" never
    oauth: Literal["auto", "off"] = "auto"
    enabled: bool = True
    #: offer it the roots (the workspace folder, else the current directory); false: it keeps the
    #: folders of its own command line (a roots-aware server such as server-filesystem replaces them)
    roots: bool = True
    #: "auto": tools with a read-only hint run, the others ask first; "always": every tool asks;
    #: "never": no tool asks (you trust this server's every tool)
    approval: Literal["auto", "always", "never"] = "auto"
    #: tools (their MCP names) that run without asking, whatever their hints
    allow: list[str] = Field(default_factory=list)
    #: tools that always ask first, whatever their hints
    ask: list[str] = Field(default_factory=list)
    #: seconds to start and list the tools
    startup_timeout: float = Field(30.0, gt=0)
    #: seconds one call may take (Esc cancels sooner)
    call_timeout: float = Field(120.0, gt=0)
    #: a result's text beyond this many bytes is cut before it is stored or shown
    max_result_bytes: int = Field(1_000_000, ge=1_000)

    @field_validator("env", "pass_env")
    @classmethod
    def _env_names(cls, value: Any) -> Any:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either command (a stdio server) or url (a Streamable HTTP server)")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.url and (self.args or self.env or self.pass_env or self.cwd):
            raise ValueError("args, env, pass_env and cwd are for a command; a url server takes headers")
        if self.command and (self.headers or self.transport != "auto" or self.oauth != "auto"):
            raise ValueError("headers, transport and oauth are for a url server")
        return self


class McpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: dict[str, McpServerSettings] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in value:
            if not _MCP_NAME.match(name) or "__" in name:
                raise ValueError(f"server name {name!r}: use 1-32 letters, digits, '_' or '-' (no '__')")
        return value


class Settings(BaseModel):
    model: ModelSettings = Field(default_factory=ModelSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    remote: RemoteSettings = Field(default_factory=RemoteSettings)
    ui: UiSettings = Field(default_factory=UiSettings)
    db_path: Path | None = None
    workspace_root: Path | None = None
    n8n_url: str | None = None
    n8n_api_key: SecretStr | None = None
    redis_url: str | None = None

    @property
    def resolved_db_path(self) -> Path:
        return self.db_path or default_db_path()


def _env_overrides(env: dict[str, str]) -> dict[str, Any]:
    model: dict[str, Any] = {}
    if env.get("OPENAI_API_KEY"):
        model["api_key"] = env["OPENAI_API_KEY"]
    if env.get("OPENAI_BASE_URL"):
        model["base_url"] = env["OPENAI_BASE_URL"]
    if env.get("INSTANCE_AI_MODEL"):
        model["name"] = env["INSTANCE_AI_MODEL"]
    out: dict[str, Any] = {"model": model} if model else {}
    if env.get("N8N_URL"):
        out["n8n_url"] = env["N8N_URL"]
    if env.get("N8N_API_KEY"):
        out["n8n_api_key"] = env["N8N_API_KEY"]
    if env.get("INSTANCE_AI_DB"):
        out["db_path"] = env["INSTANCE_AI_DB"]
    if env.get("INSTANCE_AI_WORKSPACE"):
        out["workspace_root"] = env["INSTANCE_AI_WORKSPACE"]
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        elif value is not None:
            out[key] = value
    return out


def load_settings(
    overrides: dict[str, Any] | None = None,
    path: Path | None = None,
    env: dict[str, str] | None = None,
) -> Settings:
    """File, then environment, then ``overrides`` (from flags). A broken file or a value of the
    wrong type is a clear error (``SystemExit`` with the message)."""
    path = path or config_path()
    try:
        data = read_config_file(path)
    except ConfigFileError as exc:
        raise SystemExit(f"instance-ai: {exc}") from None
    data = _merge(data, _env_overrides(dict(os.environ if env is None else env)))
    data = _merge(data, overrides or {})
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise SystemExit(
            f"instance-ai: invalid settings (in {path}, the environment or the flags): {validation_summary(exc)}"
        ) from None


def validation_summary(error: ValidationError, whole: str = "file") -> str:
    """``where: what`` for each problem of ``error`` (``whole`` when it is the entire input),
    joined by "; " (the settings here, the theme files in ``tui.themes``)."""
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item.get("loc", ())) or whole
        message = item.get("msg", "invalid").removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
