"""The report's scripts, compressed so that one offline file stays small.

plotly.js (4.8 MB, maps included) and each figure's JSON are deflated and written as text in
base 85 (`pack`): 1.8 MB for plotly.js. The page's `LOADER` inflates them with the browser's
``DecompressionStream`` (Chromium 103+, Firefox 113+, Safari 16.4+) and draws each figure.
The packed plotly.js is kept in the user's cache folder per plotly version (packing takes 0.8 s).
`unpack` is `pack`'s inverse: what the browser reads.
"""

from __future__ import annotations

import base64
import os
import zlib
from functools import cache
from pathlib import Path

import plotly
import plotly.io
import plotly.offline

__all__ = ["LOADER", "figure_html", "pack", "packed_plotlyjs", "unpack"]

#: Python's base 85 alphabet with ``<`` and ``>`` swapped for ``.`` and ``,``: no packed text can
#: open or close a tag inside the ``<script>`` that holds it.
_SWAP = bytes.maketrans(b"<>", b".,")
_UNSWAP = bytes.maketrans(b".,", b"<>")
ALPHABET = (
    (b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~")
    .translate(_SWAP)
    .decode()
)

#: The figures' plotly config.
CONFIG = {"displaylogo": False, "responsive": True}

#: Inflates plotly.js (``<script id="plotlyjs">``), runs it, then draws each packed figure
#: (``<script type="text/plain" data-plot="ID">``) into its ``<div id="ID">``; before printing,
#: the figures are drawn again to the page's width.
LOADER = """
(async () => {
  const alphabet = "ALPHABET", value = new Uint8Array(128);
  for (let i = 0; i < 85; i++) value[alphabet.charCodeAt(i)] = i;
  const bytes = (text) => {
    const n = text.length, out = new Uint8Array(Math.floor(n / 5) * 4 + Math.max(0, (n % 5) - 1));
    for (let i = 0, o = 0; i < n; i += 5) {
      let v = 0;
      for (let j = i; j < i + 5; j++) v = v * 85 + (j < n ? value[text.charCodeAt(j)] : 84);
      for (let k = 3; k >= 0; k--, v = Math.floor(v / 256)) if (o + k < out.length) out[o + k] = v % 256;
      o += 4;
    }
    return out;
  };
  const inflate = (text) => new Response(new Blob([bytes(text.trim())]).stream()
    .pipeThrough(new DecompressionStream("deflate-raw"))).text();
  const script = document.createElement("script");
  script.textContent = await inflate(document.getElementById("plotlyjs").textContent);
  document.head.appendChild(script);
  for (const node of document.querySelectorAll("script[data-plot]")) {
    const figure = JSON.parse(await inflate(node.textContent));
    await Plotly.newPlot(node.dataset.plot, figure.data, figure.layout, CONFIG);
  }
  const resize = () => document.querySelectorAll(".plotly-graph-div").forEach((div) => Plotly.Plots.resize(div));
  window.addEventListener("beforeprint", resize);  // drawn to the printed page's width
  window.addEventListener("afterprint", resize);
})();
""".replace("ALPHABET", ALPHABET).replace("CONFIG", plotly.io.json.to_json_plotly(CONFIG))


def pack(text: str) -> str:
    """``text`` deflated (raw, level 9) and written in base 85 (`ALPHABET`)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    packed = deflate.compress(text.encode()) + deflate.flush()
    return base64.b85encode(packed).translate(_SWAP).decode()


def unpack(packed: str) -> str:
    """The text `pack` packed."""
    return zlib.decompress(base64.b85decode(packed.strip().encode().translate(_UNSWAP)), -15).decode()  # fmt: skip


@cache
def packed_plotlyjs() -> str:
    """plotly.js, packed: from the cache folder when this plotly version was packed before."""
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolkit"
    path = folder / f"plotly-{plotly.__version__}.js.deflate.b85"
    try:
        return path.read_text()
    except OSError:
        pass
    packed = pack(plotly.offline.get_plotlyjs())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(packed)
        os.replace(temporary, path)
    except OSError:
        pass  # no cache folder: packed again next time
    return packed


def figure_html(fig, div_id: str, height: str = "420px") -> str:
    """The figure's ``<div>`` and its packed JSON, drawn by the `LOADER`."""
    figure = pack(plotly.io.to_json(fig, validate=False))
    return (
        f'<div id="{div_id}" class="plotly-graph-div" style="height:{height}; width:100%;"></div>'
        f'<script type="text/plain" data-plot="{div_id}">{figure}</script>'
    )
