"""The built viewer in headless Chromium: overview numbers, state graph, state panel, filters, screenshot.

    .venv/bin/python -m pytest -q tests/eval/viewer/test_viewer_browser.py

Needs `apt-get install -y graphviz chromium chromium-driver` and `pip install selenium`; without
the browser these tests fail with that message (see conftest.driver).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eval.report import fmt, summarize
from eval.results import read_results
from eval.viewer import BuildReport, ViewerConfig, build_view
from eval.viewer.browser import open_page
from eval.viewer.states import ReadOnlyStore
from stateguard.trace import read_trace

TASK = "six_turn_stale"


class By:
    """Selenium's locator names, spelled out so that this module imports without selenium installed
    (the `driver` fixture then fails every test with the install commands)."""

    CSS_SELECTOR, ID, TAG_NAME, LINK_TEXT = "css selector", "id", "tag name", "link text"


def _arm(driver: Any, name: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f'section.arm[data-arm="{name}"]')


def _click_state(section: Any, node_id: str) -> None:
    """Click a graph node as a user would: on its label (the text sits on top of the box)."""
    section.find_element(By.CSS_SELECTOR, f"svg g#{node_id} text").click()


def _visible_entries(section: Any) -> list[Any]:
    return [
        li for li in section.find_elements(By.CSS_SELECTOR, "ol.timeline > li.entry") if li.is_displayed()
    ]


def test_overview_table_equals_the_run_results(driver: Any, eval_run: Path, eval_view: BuildReport) -> None:
    results = read_results(eval_run)
    expected = {a.arm: a for a in summarize(results, resamples=100).arms}
    open_page(driver, eval_view.index)
    rows = driver.find_elements(By.CSS_SELECTOR, "#bench-table tbody tr")
    assert [r.get_attribute("data-arm") for r in rows] == ["baseline", "stateguard"]
    for row in rows:
        arm = expected[row.get_attribute("data-arm")]
        cells = {
            c.get_attribute("data-field"): c for c in row.find_elements(By.CSS_SELECTOR, "td[data-field]")
        }
        assert cells["accuracy"].text == fmt(arm.accuracy)
        assert cells["dcr"].text == fmt(arm.dcr)
        assert float(cells["accuracy"].get_attribute("data-value")) == pytest.approx(arm.accuracy)
        for field in ("tasks", "turns_scored", "repairs", "manager_calls", "degraded_tasks", "crashed_tasks"):
            assert int(cells[field].text) == getattr(arm, field), field
        assert float(cells["wall_s"].get_attribute("data-value")) == pytest.approx(arm.wall_s)
    for r in results:  # one row per (task, arm), with that result's counts and a link to the task page
        row = driver.find_element(
            By.CSS_SELECTOR, f'#task-table tr[data-task="{r.task_id}"][data-arm="{r.arm}"]'
        )
        cells = {
            c.get_attribute("data-field"): c.text
            for c in row.find_elements(By.CSS_SELECTOR, "td[data-field]")
        }
        assert cells["correct"] == f"{sum(v for v in r.correct.values() if v)}/{len(r.correct)}"
        assert int(cells["repairs"]) == r.repairs and int(cells["stale_states"]) == r.stale_states
        strip = row.find_elements(By.CSS_SELECTOR, ".strip a.t")
        assert [("ok" in a.get_attribute("class")) for a in strip] == [
            r.correct[t] for t in sorted(r.correct)
        ]
    # turns 5 and 6 are where baseline and StateGuard diverge on the stale task: highlighted in both rows
    for name in ("baseline", "stateguard"):
        row = driver.find_element(By.CSS_SELECTOR, f'#task-table tr[data-task="{TASK}"][data-arm="{name}"]')
        assert [
            a.get_attribute("data-turn") for a in row.find_elements(By.CSS_SELECTOR, ".strip a.diverge")
        ] == ["5", "6"]
    link = driver.find_element(By.LINK_TEXT, TASK)
    assert (eval_view.out / link.get_attribute("href").split("/view/", 1)[1]).is_file()


def test_graph_has_one_node_per_state_and_one_edge_per_relation(
    driver: Any, eval_run: Path, eval_view: BuildReport
) -> None:
    arm_dir = eval_run / "tasks" / TASK / "stateguard"
    store = ReadOnlyStore(arm_dir / "states.sqlite")
    states = [store.load(sid) for sid in store.ids()]
    invalid = set(store.invalid_states())
    store.close()
    repaired = {e.payload["state_id"] for e in read_trace(arm_dir / "trace.jsonl") if e.kind == "repair"}
    open_page(driver, eval_view.out / "tasks" / f"{TASK}.html")
    section = _arm(driver, "stateguard")
    nodes = section.find_elements(By.CSS_SELECTOR, "svg g.node.state")
    assert sorted(n.get_attribute("id").split("-", 1)[1] for n in nodes) == sorted(s.id for s in states)
    status = {n.get_attribute("id").split("-", 1)[1]: set(n.get_attribute("class").split()) for n in nodes}
    assert {sid for sid, c in status.items() if "invalidated" in c} == invalid == {"S1", "S2"}
    assert {sid for sid, c in status.items() if "repaired" in c} == repaired == {"S5"}
    edges = section.find_elements(By.CSS_SELECTOR, "svg g.edge.relation")
    drawn = Counter(
        next(c[4:] for c in e.get_attribute("class").split() if c.startswith("rel-")) for e in edges
    )
    stored = Counter(r.type.value for s in states for r in s.relations)
    assert drawn == stored and stored["invalidate"] == 1
    titles = {e.find_element(By.TAG_NAME, "title").get_attribute("textContent") for e in edges}
    assert "S1->S4" in titles  # the Invalidate relation: S4 (revenue redefined) holds it against S1
    assert not _arm(driver, "baseline").find_elements(By.CSS_SELECTOR, "svg")  # no manager, no states


def test_clicking_a_repaired_state_shows_its_evidence(
    driver: Any, eval_run: Path, eval_view: BuildReport
) -> None:
    repair = next(
        e for e in read_trace(eval_run / "tasks" / TASK / "stateguard" / "trace.jsonl") if e.kind == "repair"
    )
    open_page(driver, eval_view.out / "tasks" / f"{TASK}.html")
    section = _arm(driver, "stateguard")
    panel = section.find_element(By.ID, "a1-detail-S5")
    assert not panel.is_displayed()
    _click_state(section, "a1-S5")
    assert panel.is_displayed()
    assert "selected" in section.find_element(By.CSS_SELECTOR, "svg g#a1-S5").get_attribute("class")
    assert [b.text for b in panel.find_elements(By.CSS_SELECTOR, ".badge")] == ["committed", "repaired"]
    assert (
        repair.payload["evidence"] in panel.find_element(By.CSS_SELECTOR, ".repair-evidence .evidence").text
    )
    assert "margin" in panel.find_element(By.CSS_SELECTOR, ".repairs").text  # the variable the hint named
    assert panel.find_element(By.CSS_SELECTOR, "dd.source").text.startswith("step 8")
    _click_state(section, "a1-S1")  # an invalidated state names its cause
    assert not panel.is_displayed()
    assert "invalidated by S4" in section.find_element(By.ID, "a1-detail-S1").text


def test_timeline_filters(driver: Any, eval_run: Path, eval_view: BuildReport) -> None:
    open_page(driver, eval_view.out / "tasks" / f"{TASK}.html")
    section = _arm(driver, "stateguard")
    total = len(_visible_entries(section))
    section.find_element(By.CSS_SELECTOR, ".f-repairs").click()
    shown = _visible_entries(section)
    assert 0 < len(shown) < total
    assert all("repair" in li.get_attribute("data-tags").split() for li in shown)
    kinds = {li.get_attribute("class").split()[1] for li in shown}
    assert {"k-repair", "k-action", "k-hint", "k-step"} <= kinds  # the REPAIR, its hint, the recomputation
    section.find_element(By.CSS_SELECTOR, ".f-repairs").click()
    section.find_element(By.CSS_SELECTOR, '.f-var option[value="margin"]').click()
    shown = _visible_entries(section)
    assert shown and all("margin" in li.get_attribute("data-vars").split() for li in shown)
    table = section.find_element(By.CSS_SELECTOR, 'table.lineage[data-var="margin"]')
    assert (
        table.is_displayed() and len(table.find_elements(By.CSS_SELECTOR, "tbody tr")) == 2
    )  # margin@S2, @S5
    assert "lin-def" in section.find_element(By.CSS_SELECTOR, "svg g#a1-S2").get_attribute("class")
    assert "dim" in section.find_element(By.CSS_SELECTOR, "svg g#a1-S3").get_attribute("class")


def test_rejected_and_rolled_back_are_shown(
    driver: Any, handmade_run: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, facts = handmade_run
    report = build_view(root, out=tmp_path / "view", config=ViewerConfig(jobs=1))
    open_page(driver, report.out / "tasks" / "handmade.html")
    section = _arm(driver, "stateguard")
    node = section.find_element(By.CSS_SELECTOR, f"svg g#a0-{facts['rolled_back']}")
    assert {"abandoned", "rolled-back"} <= set(node.get_attribute("class").split())
    section.find_element(By.CSS_SELECTOR, ".f-rejected").click()
    shown = _visible_entries(section)
    assert len(shown) == 1 and "v-rejected" in shown[0].get_attribute("class")
    shown[0].find_element(By.TAG_NAME, "summary").click()
    assert facts["feedback"] in shown[0].text
    _click_state(section, f"a0-{facts['rolled_back']}")
    detail = section.find_element(By.ID, f"a0-detail-{facts['rolled_back']}")
    assert detail.is_displayed() and "rolled back to checkpoint" in detail.text
    assert len(detail.find_elements(By.CSS_SELECTOR, ".repair-evidence")) == 3


def test_screenshot_of_a_task_page(driver: Any, eval_view: BuildReport, tmp_path: Path) -> None:
    open_page(driver, eval_view.out / "tasks" / f"{TASK}.html", "a1-S5")  # load time: eval/viewer/bench.py
    png = tmp_path / "task_page.png"
    assert driver.save_screenshot(str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not errors, json.dumps(errors)[:500]
