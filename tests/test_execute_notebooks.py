"""`tools/execute_notebooks.py`: a re-run that draws the same figure writes the same SVG."""

import importlib.util
import re
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "execute_notebooks.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("execute_notebooks", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _svg(uid: str, title: str) -> str:
    """An SVG in plotly's shape: its ids carry a random ``uid``."""
    return (
        f'<svg><defs id="defs-{uid}"><clipPath id="clip{uid}xyplot"/></defs>'
        f'<g clip-path="url(#clip{uid}xyplot)"/><g class="legend{uid}"/>'
        f'<g id="topdefs-{uid}"/><text>{title}</text></svg>'
    )


def test_the_same_drawing_gets_the_same_ids_whatever_plotly_drew(tool):
    first, again = tool.stable_ids(_svg("1a2b3c", "sent")), tool.stable_ids(_svg("9f8e7d", "sent"))
    assert first == again
    assert "1a2b3c" not in first
    assert first.count('id="defs-') == 1 and first.count("url(#clip") == 1


def test_two_drawings_keep_ids_of_their_own(tool):
    sent, failed = (
        tool.stable_ids(_svg("1a2b3c", "sent")),
        tool.stable_ids(_svg("1a2b3c", "failed")),
    )
    assert sent.split('"')[1] != failed.split('"')[1]


def test_an_svg_without_plotly_ids_is_left_alone(tool):
    assert tool.stable_ids("<svg><text>#1a2b3c</text></svg>") == "<svg><text>#1a2b3c</text></svg>"


def test_a_real_figure_keeps_every_reference_resolved(tool, chromium):
    """The ids in a figure plotly really drew still match their references after the change."""
    figure = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    plotly_json = pio.to_json(figure)
    svg = tool.stable_ids(tool.static(pio.from_json(plotly_json).to_plotly_json()))
    ids = set(re.findall(r'id="([^"]+)"', svg))
    assert {ref for ref in re.findall(r"url\(#([^)]+)\)", svg)} <= ids
