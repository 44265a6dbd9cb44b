"""Child process of ``test_resume_process``: one agent definition, started or resumed from SQLite.

    python resume_child.py start DB BASE_URL MARKER      -> prints {"run_id", "tool_call_id", "status"}
    python resume_child.py resume DB BASE_URL MARKER RUN_ID TOOL_CALL_ID  -> prints the result
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.checkpoints import StoreCheckpointStore
from instance_ai_tui.runtime.memory import StoreMemory
from instance_ai_tui.runtime.openai_model import OpenAIModel
from instance_ai_tui.runtime.tools import Tool, ToolContext
from instance_ai_tui.store.sqlite import SqliteStore


class Target(BaseModel):
    path: str


def build(store: SqliteStore, base_url: str, marker: Path) -> Agent:
    async def delete(args: Target, ctx: ToolContext) -> str:
        with marker.open("a", encoding="utf-8") as fh:  # a visible side effect, once per execution
            fh.write(args.path + "\n")
        return f"deleted {args.path}"

    tool = Tool("delete_file", "Delete a file.", Target, delete, needs_approval=True)
    model = OpenAIModel("gpt-4o-mini", base_url=base_url, api_key="x", max_retries=0)
    return Agent("main", "You manage files.", model, [tool], memory=StoreMemory(store),
                 checkpoints=StoreCheckpointStore(store))


async def main(argv: list[str]) -> None:
    mode, db, base_url, marker = argv[:4]
    async with SqliteStore(db) as store:
        agent = build(store, base_url, Path(marker))
        if mode == "start":
            result = await agent.generate("Please delete /tmp/report.txt", thread_id="thread-1")
            print(json.dumps({"run_id": result.run_id, "status": result.status,
                              "tool_call_id": result.pending_suspend[0].tool_call_id if result.pending_suspend else None}))
        else:
            run_id, tool_call_id = argv[4:6]
            result = await (await agent.approve(run_id, tool_call_id)).result()
            print(json.dumps({"status": result.status, "text": result.text, "error": result.error,
                              "roles": [m.role for m in result.messages]}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
