"""Import from the browser (#23.7): drop a JSONL file, see the detected format and per-record
errors, land on an imported trajectory. Real Chromium, PostgreSQL."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotations.models import Trajectory
from tests.browser.conftest import login
from tests.factories import CanonicalTrajectoryFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_drop_a_file_see_results_per_record_and_open_one(browser_page, live_server, expert) -> None:  # type: ignore[no-untyped-def]
    page = browser_page
    first = CanonicalTrajectoryFactory()
    second = CanonicalTrajectoryFactory()
    lines = [json.dumps(first), "{not json", json.dumps({"nonsense": 1}), json.dumps(second)]
    body = "\n".join(lines) + "\n"
    login(page, live_server, expert.username)
    page.goto(f"{live_server.url}/review/")
    page.click("nav a:has-text('Import')")
    expect(page.locator("h1")).to_have_text("Import trajectories")

    # Submitting without a file: a 400 naming the field, the form still there.
    page.click("#import-run")
    expect(page.locator("#error-file")).to_contain_text("file: choose or drop a file")

    # Drop the file on the zone, as a browser's drag and drop delivers it.
    page.evaluate(
        """(text) => {
            const data = new DataTransfer();
            data.items.add(new File([text], "rollouts.jsonl", {type: "application/json"}));
            const zone = document.getElementById("rv-drop");
            const init = {dataTransfer: data, bubbles: true, cancelable: true};
            zone.dispatchEvent(new DragEvent("dragover", init));
            zone.dispatchEvent(new DragEvent("drop", init));
        }""",
        body,
    )
    expect(page.locator("#import-name")).to_contain_text("rollouts.jsonl")
    page.fill("input[name=task_type]", "swe-bugfix")
    page.click("#import-run")
    expect(page.locator("#import-summary")).to_contain_text("2 imported")
    expect(page.locator("#import-summary")).to_contain_text("2 rejected")
    rows = page.locator("tr.import-row")
    expect(rows).to_have_count(4)
    expect(rows.nth(0)).to_contain_text("openai")
    expect(rows.nth(1)).to_contain_text("rejected")
    expect(rows.nth(1).locator("td").first).to_have_text("2")
    expect(rows.nth(2)).to_contain_text("rejected")
    assert rows.nth(1).locator("td").nth(4).inner_text().strip()  # says why
    assert rows.nth(2).locator("td").nth(4).inner_text().strip()

    stored = Trajectory.objects.filter(external_id__in=[first["id"], second["id"]])
    assert stored.count() == 2 and all(t.imported_by_id == expert.pk for t in stored)
    page.click("#import-open")
    expect(page.locator("section.rv-step").first).to_be_visible()
    assert page.url.endswith(f"/review/trajectories/{stored.get(external_id=first['id']).pk}/")
    assert page.errors == []  # type: ignore[attr-defined]
