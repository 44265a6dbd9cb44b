"""``instance-ai workflow show|list`` as a person runs it, piped (plain text, no escape codes): the demo
instance (seeded, and a workflow the demo agent built into the SQLite file), errors in words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from instance_ai_tui.protocol.workflow_graph import parse_workflow

from .workflow_corpus import CORPUS, corpus_json, corpus_names

BUILD = "every morning send the weather forecast to Slack"


def cli(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "N8N_", "INSTANCE_AI_"))}
    env.update({"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")})
    return subprocess.run([sys.executable, "-m", "instance_ai_tui", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_list_and_show_the_seeded_demo_instance_without_creating_a_database(tmp_path: Path) -> None:
    db = tmp_path / "never.sqlite3"
    listed = cli(tmp_path, "workflow", "list", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    assert "wf-102  Lead intake  (3 nodes)" in listed.stdout
    shown = cli(tmp_path, "workflow", "show", "wf-102", "--db", str(db), "--width", "120")
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout
    lines = shown.stdout.splitlines()
    assert lines[0] == "Lead intake · wf-102 · 3 nodes"
    assert "│⚡ Webhook" in shown.stdout and "───▶┤▪ Edit Fields (Set)" in shown.stdout
    compact = cli(tmp_path, "workflow", "show", "wf-102", "--compact", "--db", str(db))
    assert compact.returncode == 0 and len(compact.stdout.splitlines()) < len(lines)
    piped = cli(tmp_path, "workflow", "show", "wf-102", "--db", str(db))  # piped: 80 columns
    assert max(cell_len(line) for line in piped.stdout.splitlines()) <= 80
    assert not db.exists()


def test_show_a_file_exported_from_n8n_in_any_width(tmp_path: Path) -> None:
    """A real template (246 nodes with its sticky notes) drawn from its file: no line wider than asked,
    zoomed out then cut into labelled bands, or cropped with a note; bad files say what is wrong."""
    path = CORPUS / "zie619__1897_Webhook_Filter_Sync_Webhook.json"
    for width in (60, 80, 200):
        shown = cli(tmp_path, "workflow", "show", str(path), "--width", str(width))
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert max(cell_len(line) for line in lines) <= width
        head = " ".join(shown.stdout.split("\n\n")[0].split())
        assert head.startswith("Realtime Notion Todoist 2-way Sync Template · k9abwUyVzl7OCsAl · 174 nodes · file")
        assert "── band 1/" in shown.stdout and "zoomed out" in shown.stdout
    cropped = cli(tmp_path, "workflow", "show", str(path), "--width", "80", "--crop")
    assert "cropped: columns 0–79 of" in cropped.stdout and "── band" not in cropped.stdout
    assert len(cropped.stdout.splitlines()) < len(shown.stdout.splitlines())
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    refused = cli(tmp_path, "workflow", "show", str(bad))
    assert refused.returncode == 1 and "is not JSON" in refused.stderr and "Traceback" not in refused.stderr
    bad.write_text('{"name": "x"}', encoding="utf-8")
    refused = cli(tmp_path, "workflow", "show", str(bad))
    assert refused.returncode == 1 and "holds no workflow" in refused.stderr
    missing = cli(tmp_path, "workflow", "show", str(tmp_path / "nope.json"))
    assert missing.returncode == 1 and "no file" in missing.stderr


def test_show_zooms_out_further_before_it_cuts_into_bands(tmp_path: Path) -> None:
    """A 7-node template is 105 columns zoomed out: at 80 columns it was cut into two bands, a reader
    joining lines across them. Zoomed out further (names cut shorter) it is 79 columns: one drawing, said
    in a note; every node's name there (cut, never two alike)."""
    from instance_ai_tui.cli.workflow import fit
    from instance_ai_tui.protocol.workflow_draw import shown_names
    from instance_ai_tui.protocol.workflow_layout import Detail, layout_workflow

    path = CORPUS / "enescingoz__Extract_personal_data_with_self_hosted_LLM_Mistral_NeMo.json"
    shown = cli(tmp_path, "workflow", "show", str(path), "--width", "80")
    assert shown.returncode == 0, shown.stderr
    assert "── band" not in shown.stdout
    assert "zoomed out further to fit 80 columns" in " ".join(shown.stdout.split())
    assert max(cell_len(line) for line in shown.stdout.splitlines()) <= 80
    workflow = parse_workflow(corpus_json(path.stem))
    assert fit(workflow, 80).detail is Detail.TIGHT
    cut = shown_names(layout_workflow(workflow, Detail.TIGHT))
    for node in workflow.nodes:
        assert cut.get(node.name, node.name) in shown.stdout, node.name


@pytest.mark.parametrize("name", corpus_names())
def test_every_corpus_drawing_fits_80_columns(name: str) -> None:
    from instance_ai_tui.cli.workflow import fit

    fitted = fit(parse_workflow(corpus_json(name)), 80)
    assert max(cell_len("".join(chars).rstrip()) for chars, _ in fitted.lines) <= 80


def test_show_a_workflow_the_demo_agent_built(tmp_path: Path) -> None:
    db = tmp_path / "ai.sqlite3"
    built = cli(tmp_path, "run", "--model", "demo", "--db", str(db), "--approve", "all", BUILD)
    assert built.returncode == 0, built.stderr[-2000:]
    shown = cli(tmp_path, "workflow", "show", "wf-104", "--db", str(db), "--width", "120")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].startswith("Weather to Slack · wf-104 · 3 nodes")
    for name in ("Schedule Trigger", "OpenWeatherMap", "Slack"):
        assert name in shown.stdout


def test_unknown_workflow_and_bad_arguments_say_so(tmp_path: Path) -> None:
    missing = cli(tmp_path, "workflow", "show", "wf-999", "--db", str(tmp_path / "x.sqlite3"))
    assert missing.returncode == 1
    assert "instance-ai workflow:" in missing.stderr and "wf-999 not found" in missing.stderr
    assert "Traceback" not in missing.stderr
    no_action = cli(tmp_path, "workflow")
    assert no_action.returncode == 2 and "show" in no_action.stderr


def test_bands_are_cut_between_boxes_and_none_is_a_sliver(tmp_path: Path) -> None:
    """Cut every 80 columns, this 161-column template gave a last band of one column (a box's right edge:
    "╮ │ ╯") and both cuts went through boxes. The bands are as few as the width allows, none wider than
    it, and over the corpus the cuts go between boxes where they can."""
    from instance_ai_tui.cli.workflow import band_starts, fit
    from instance_ai_tui.protocol.workflow_layout import layout_workflow

    def crossed(layout: object, starts: list[int]) -> int:
        boxes = layout.boxes.values()  # type: ignore[attr-defined]
        return sum(1 for c in starts[1:] for b in boxes if b.x < c < b.x + b.w)

    path = CORPUS / "enescingoz__AI_Agent_to_chat_with_Supabase_PostgreSQL_DB.json"
    shown = cli(tmp_path, "workflow", "show", str(path), "--width", "80")
    assert shown.returncode == 0, shown.stderr
    assert "── band 3/3" in shown.stdout and "columns 160–160" not in shown.stdout
    total_crossed = 0
    for name in corpus_names():
        workflow = parse_workflow(corpus_json(name))
        layout = layout_workflow(workflow, fit(workflow, 80).detail)
        if layout.width <= 80:
            continue
        starts = band_starts(layout, 80)
        ends = [*starts[1:], layout.width]
        assert starts[0] == 0 and len(starts) == -(-layout.width // 80), name
        assert all(0 < end - start <= 80 for start, end in zip(starts, ends, strict=True)), name
        assert min(end - start for start, end in zip(starts, ends, strict=True)) >= 20, name
        total_crossed += crossed(layout, starts)
        if name.startswith("enescingoz__AI_Agent_to_chat_with_Supabase"):
            assert crossed(layout, starts) == 0
    assert total_crossed <= 110  # 273 boxes were cut when bands were cut every 80 columns
