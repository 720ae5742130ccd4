"""What the tutorial notebooks find, checked against what the sandbox planted: checks for the
tests, kept out of the notebooks' story (nbval checks the cells whose output is the point)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"

#: Run after notebook 02: its hand-found SMS outage and bounce spike, and `find_incidents`'s rows,
#: against the incidents the sandbox planted.
AGAINST_PLANTED = """
import json
planted = {incident["name"]: incident for incident in sb.incidents}
sms, mail = planted["sms-provider-outage"], planted["email-bounce-spike"]
checks = {
    "outage provider": provider == sms["provider_id"],
    "outage error code": code == sms["error_code"],
    "outage start within 10 min": pd.Timedelta(0) <= started - pd.Timestamp(sms["start"]) <= pd.Timedelta("10min"),
    "outage end within 10 min": pd.Timedelta(0) <= pd.Timestamp(sms["end"]) - ended <= pd.Timedelta("10min"),
    "outage failed sends": len(outage_details) == sms["failures"],
    "outage notifications": hit_notifications["notification_id"].nunique() == sms["notifications"],
    "outage subscribers": hit_jobs["subscriber_id"].nunique() == sms["subscribers"],
    "bounce domain": bounce_domain == mail["domain"],
    "bounce error code": bounce_code == mail["error_code"],
    "bounces in the planted window": bool(spike["created_at"].between(pd.Timestamp(mail["start"]), pd.Timestamp(mail["end"]) + pd.Timedelta("2min")).all()),
    "bounces": len(spike) == mail["failures"],
    "bounce notifications": spike["notification_id"].nunique() == mail["notifications"],
    "one row per planted incident": len(incidents) == len(sb.incidents) and all(
        len(incidents[(incidents["kind"] == i["kind"]) & (incidents["provider_id"] == i["provider_id"])]) == 1
        for i in sb.incidents),
}
print(json.dumps({name: bool(ok) for name, ok in checks.items()}))
"""


def test_the_incident_notebook_finds_what_was_planted(tmp_path):
    notebook = nbformat.read(NOTEBOOKS / "02_incident_investigation.ipynb", as_version=4)
    stop = notebook.cells.pop()  # sb.stop(): the checks need the sandbox
    assert stop.source.strip() == "sb.stop()"
    notebook.cells += [nbformat.v4.new_code_cell(AGAINST_PLANTED), stop]
    NotebookClient(
        notebook, timeout=600, resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    printed = "".join(o.get("text", "") for o in notebook.cells[-2].outputs)
    checks = json.loads(printed)
    assert checks and all(checks.values()), checks


def test_every_committed_figure_has_a_static_picture_for_github_and_nbviewer():
    # those views do not run plotly.js: a figure without a picture shows as nothing there
    figures = 0
    for path in sorted(NOTEBOOKS.glob("[0-9]*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if "application/vnd.plotly.v1+json" in data:
                    figures += 1
                    assert data.get("image/svg+xml", "").lstrip().startswith("<svg"), path.name
    assert figures >= 8
