"""Full-page screenshots of the built documentation, taken with headless Chromium, to look at what a reader sees.

Serves the built HTML folder on localhost, measures each page's height in the browser, then takes one PNG per page at
that height::

    python -m sphinx -W -b html docs /tmp/receptive-docs
    python docs/screenshots.py /tmp/receptive-docs --out /tmp/receptive-screenshots

MathJax comes from its CDN, which an offline machine cannot reach; to see the formulas offline, build with
``RECEPTIVE_DOCS_MATHJAX=/_mathjax/tex-mml-chtml.js`` (``docs/conf.py``) and pass a local MathJax 3 ``es5`` folder as
``--mathjax DIR`` (``npm pack mathjax@3`` ships one): it is served at ``/_mathjax/``.

Needs a Chromium binary (Debian's ``chromium``; ``--chromium`` names another).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

#: the pages taken by default: the landing page, a guide page, a findings page, the theory and the API reference
PAGES = (
    "index",
    "guide/coverage",
    "findings/causal",
    "theory",
    "api/index",
    "api/patterns",
    "generated/api/receptive.coverage_by_layer",
)

#: Chromium's largest screenshot side, in pixels; a taller page is cut there
MAX_HEIGHT = 16384

_MEASURE = (
    b"<script>window.addEventListener('load', () => setTimeout(() => document.body.setAttribute("
    b"'data-page-height', document.documentElement.scrollHeight), 1500));</script>"
)


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the site, MathJax under ``/_mathjax/``, and a page that reports its height when asked (``?measure``)."""

    mathjax: Path | None = None

    def translate_path(self, path: str) -> str:
        if self.mathjax is not None and path.startswith("/_mathjax/"):
            return str(self.mathjax / path.split("?")[0].removeprefix("/_mathjax/"))
        return super().translate_path(path)

    def send_head(self):
        if "?measure" not in self.path:
            return super().send_head()
        body = Path(self.translate_path(self.path)).read_bytes().replace(b"</body>", _MEASURE + b"</body>")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, *args) -> None:  # quiet
        pass


def serve(folder: Path, mathjax: Path | None) -> http.server.ThreadingHTTPServer:
    """Serve ``folder`` (and ``mathjax`` under ``/_mathjax/``) on a free localhost port, in a daemon thread."""
    handler = type("Handler", (_Handler,), {"mathjax": mathjax})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def chromium(binary: str, *args: str, timeout: float = 120) -> str:
    """Run headless Chromium with ``args``; return its standard output."""
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=8000"]
    done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done.stdout


def page_height(binary: str, url: str, width: int) -> int:
    """The page's full height in pixels at ``width``, as the browser lays it out."""
    dom = chromium(binary, f"--window-size={width},1000", "--dump-dom", url + "?measure")
    match = re.search(r'data-page-height="(\d+)"', dom)
    return int(match.group(1)) if match else 4000


def screenshot(binary: str, url: str, out: Path, width: int) -> tuple[int, bool]:
    """Write the full-page PNG of ``url`` to ``out``; return its height and whether the page was taller."""
    height = page_height(binary, url, width)
    shown = min(height, MAX_HEIGHT)
    chromium(binary, f"--window-size={width},{shown}", f"--screenshot={out}", url)
    return shown, height > MAX_HEIGHT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", type=Path, help="the built HTML folder (python -m sphinx -b html docs FOLDER)")
    parser.add_argument(
        "--out", type=Path, default=Path("/tmp/receptive-screenshots"), help="folder for the PNGs (%(default)s)"
    )
    parser.add_argument("--pages", default=",".join(PAGES), help="comma-separated page names (default: %(default)s)")
    parser.add_argument("--width", type=int, default=1400, help="window width in pixels (%(default)s)")
    parser.add_argument("--mathjax", type=Path, help="a local MathJax 3 es5 folder, served at /_mathjax/")
    parser.add_argument("--chromium", default="chromium", help="the Chromium binary (%(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not (args.html / "index.html").is_file():
        parser.error(f"html: {args.html} holds no index.html (build the docs first)")
    if args.width < 320:
        parser.error(f"--width: {args.width} is below 320 pixels")
    if args.mathjax is not None and not (args.mathjax / "tex-mml-chtml.js").is_file():
        parser.error(f"--mathjax: {args.mathjax} holds no tex-mml-chtml.js (a MathJax 3 es5 folder)")
    if shutil.which(args.chromium) is None:
        parser.error(f"--chromium: {args.chromium} is not on PATH (apt-get install chromium)")
    pages = [page.strip().removesuffix(".html") for page in args.pages.split(",") if page.strip()]
    missing = [page for page in pages if not (args.html / f"{page}.html").is_file()]
    if missing:
        parser.error(f"--pages: not in the build: {', '.join(missing)}")
    args.out.mkdir(parents=True, exist_ok=True)
    server = serve(args.html.resolve(), args.mathjax.resolve() if args.mathjax else None)
    try:
        for page in pages:
            url = f"http://127.0.0.1:{server.server_address[1]}/{page}.html"
            out = args.out / f"{page.replace('/', '__')}.png"
            height, cut = screenshot(args.chromium, url, out, args.width)
            print(f"{out}  {args.width} x {height}" + (f" (cut at {MAX_HEIGHT} px)" if cut else ""))
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
