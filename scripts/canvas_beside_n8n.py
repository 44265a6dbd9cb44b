"""The canvas beside n8n's editor: a few corpus workflows imported into a real n8n, the editor's canvas
screenshotted in Chromium, and ``instance-ai workflow show`` of the same workflow (by its id, from that
n8n) written next to it; the loop workflow is executed in the editor first, so its drawing carries the run.

    python scripts/canvas_beside_n8n.py OUT_DIR [--width 160] [--keep]

Needs the real n8n (``python scripts/n8n_peer.py install``), Chromium (``/usr/bin/chromium``) and the
``playwright`` package (its Python client only: the system Chromium is used). Writes ``OUT_DIR/<name>.png``
(the editor, 1440x900), ``OUT_DIR/<name>.txt`` (the terminal drawing) and ``OUT_DIR/index.json``. ``--keep``
leaves n8n running and prints how to reach it (to try the TUI on the same workflows).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import n8n_peer  # noqa: E402

CORPUS = ROOT / "tests" / "workflow_corpus"
#: what each shows: AI sub-nodes, a Switch with a loop and error outputs, sticky notes and disabled
#: nodes, a loop that runs (executed here), a research agent with shared sub-nodes and a loop
CHOSEN = [
    "enescingoz__Chat_with_OpenAI_Assistant_by_adding_a_memory",
    "enescingoz__Auto_Categorise_Outlook_Emails_with_AI",
    "zie619__1633_Manual_Stickynote_Automation_Webhook",
    "n8n__Workflow_loop",
    "enescingoz__Open_Deep_Research_AI_Powered_Autonomous_Research_Workflow",
]
RUN = {"n8n__Workflow_loop"}
NODE_KEYS = ("id", "name", "type", "typeVersion", "position", "parameters", "disabled", "onError", "notes",
             "notesInFlow", "alwaysOutputData", "executeOnce", "retryOnFail", "continueOnFail", "webhookId")


def importable(name: str) -> dict[str, Any]:
    data = json.loads((CORPUS / f"{name}.json").read_text())
    data = data.get("data", data) if isinstance(data, dict) else data
    nodes = [{k: n[k] for k in NODE_KEYS if k in n} for n in data["nodes"]]
    return {"name": data.get("name") or name, "nodes": nodes, "connections": data["connections"],
            "settings": {"executionOrder": "v1"}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=160)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    peer = n8n_peer.N8nPeer(model_url="http://127.0.0.1:9/v1").start()
    index: list[dict[str, Any]] = []
    try:
        api = httpx.Client(base_url=f"{peer.url}/api/v1", headers={"X-N8N-API-KEY": peer.api_key}, timeout=60)
        ids = {}
        for name in CHOSEN:
            response = api.post("/workflows", json=importable(name))
            if response.status_code >= 300:
                raise SystemExit(f"n8n did not import {name}: {response.status_code} {response.text[:300]}")
            ids[name] = response.json()["id"]
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{peer.url}/signin")
            page.get_by_label("Email").fill(peer.email)
            page.get_by_label("Password").fill(peer.password)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url("**/home/**", timeout=60_000)
            for name in CHOSEN:
                page.goto(f"{peer.url}/workflow/{ids[name]}")
                page.wait_for_selector(".vue-flow__node", timeout=60_000)
                time.sleep(2)
                if name in RUN:
                    page.locator("[data-test-id=\"execute-workflow-button\"]").first.click()
                    deadline = time.monotonic() + 60
                    while time.monotonic() < deadline:
                        done = api.get("/executions", params={"workflowId": ids[name]}).json().get("data", [])
                        if done and done[0].get("stoppedAt"):
                            break
                        time.sleep(1)
                    time.sleep(2)
                page.keyboard.press("1")  # zoom to fit, as the editor's own shortcut
                time.sleep(1)
                page.screenshot(path=str(args.out / f"{name}.png"))
                env = {**{k: v for k, v in os.environ.items() if not k.startswith(("N8N_", "INSTANCE_AI_"))},
                       "N8N_PASSWORD": peer.password, "XDG_CONFIG_HOME": str(args.out / ".config"),
                       "XDG_DATA_HOME": str(args.out / ".data")}
                shown = subprocess.run(
                    [sys.executable, "-m", "instance_ai_tui", "workflow", "show", ids[name], "--url", peer.url,
                     "--email", peer.email, "--width", str(args.width)],
                    env=env, capture_output=True, text=True, timeout=180, check=False)
                # the port is new at every run: written as PORT, so two runs differ only where the drawing does
                text = (shown.stdout + shown.stderr).replace(peer.url, "http://127.0.0.1:PORT")
                (args.out / f"{name}.txt").write_text(text)
                index.append({"name": name, "id": ids[name], "png": f"{name}.png", "txt": f"{name}.txt",
                              "show_rc": shown.returncode})
                print(f"# {name}: {ids[name]} (workflow show rc={shown.returncode})", file=sys.stderr)
            browser.close()
        (args.out / "index.json").write_text(json.dumps({"n8n": n8n_peer.N8N_VERSION, "workflows": index}, indent=1))
        if args.keep:
            print(json.dumps(peer.info()))
            print("n8n stays up; stop it with kill", peer.process.pid if peer.process else "?", file=sys.stderr)
            while True:
                time.sleep(3600)
    finally:
        if not args.keep:
            peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
